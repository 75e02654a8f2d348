package nccl

import "fmt"

// DataType is an ncclDataType_t.
type DataType int32

// ncclDataType_t values from the public nccl.h.
const (
	Int8       DataType = 0
	Uint8      DataType = 1
	Int32      DataType = 2
	Uint32     DataType = 3
	Int64      DataType = 4
	Uint64     DataType = 5
	Float16    DataType = 6
	Float32    DataType = 7
	Float64    DataType = 8
	Bfloat16   DataType = 9
	Float8e4m3 DataType = 10 // NCCL ≥ 2.24 on sm_90 and newer
	Float8e5m2 DataType = 11
)

var dataTypes = [...]struct {
	name  string
	bytes int
}{
	Int8: {"int8", 1}, Uint8: {"uint8", 1}, Int32: {"int32", 4}, Uint32: {"uint32", 4},
	Int64: {"int64", 8}, Uint64: {"uint64", 8}, Float16: {"float16", 2}, Float32: {"float32", 4},
	Float64: {"float64", 8}, Bfloat16: {"bfloat16", 2}, Float8e4m3: {"float8e4m3", 1}, Float8e5m2: {"float8e5m2", 1},
}

func (d DataType) known() bool { return d >= 0 && int(d) < len(dataTypes) }

// Size is the element size in bytes (0 for an unknown type).
func (d DataType) Size() int {
	if !d.known() {
		return 0
	}
	return dataTypes[d].bytes
}

func (d DataType) String() string {
	if !d.known() {
		return fmt.Sprintf("DataType(%d)", int32(d))
	}
	return dataTypes[d].name
}

// RedOp is a built-in ncclRedOp_t.
type RedOp int32

// ncclRedOp_t values from the public nccl.h.
const (
	Sum  RedOp = 0
	Prod RedOp = 1
	Max  RedOp = 2
	Min  RedOp = 3
	Avg  RedOp = 4 // NCCL ≥ 2.10
)

var redOps = [...]string{Sum: "sum", Prod: "prod", Max: "max", Min: "min", Avg: "avg"}

func (o RedOp) String() string {
	if o < 0 || int(o) >= len(redOps) {
		return fmt.Sprintf("RedOp(%d)", int32(o))
	}
	return redOps[o]
}

// UniqueID is an ncclUniqueId: 128 opaque bytes made by one rank
// (GetUniqueID) and handed to every rank of the communicator.
type UniqueID [128]byte

// Version is the library's version.
type Version struct {
	Major, Minor, Patch int
	Code                int // as ncclGetVersion returns it
}

// ParseVersion decodes an NCCL_VERSION_CODE: major·10000 + minor·100 + patch
// since 2.9 (2.27.3 → 22703), major·1000 + minor·100 + patch before
// (2.8.4 → 2804).
func ParseVersion(code int) Version {
	v := Version{Code: code}
	if code >= 10000 {
		v.Major, v.Minor, v.Patch = code/10000, code%10000/100, code%100
	} else {
		v.Major, v.Minor, v.Patch = code/1000, code%1000/100, code%100
	}
	return v
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// AtLeast reports whether v ≥ major.minor.patch.
func (v Version) AtLeast(major, minor, patch int) bool {
	if v.Major != major {
		return v.Major > major
	}
	if v.Minor != minor {
		return v.Minor > minor
	}
	return v.Patch >= patch
}
