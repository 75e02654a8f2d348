package nccl

import (
	"errors"
	"fmt"
	"testing"
)

func TestResultErrorWithoutLibrary(t *testing.T) {
	// Every name of ncclResult_t 0..8, in the public header's order.
	names := []string{"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
		"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress", "ncclTimeout"}
	for i, n := range names {
		if got := Result(i).Name(); got != n {
			t.Errorf("Result(%d).Name() = %q, want %q", i, got, n)
		}
	}
	if got, want := InvalidUsage.Error(), "ncclInvalidUsage (5): invalid usage (wrong call order or mismatched calls across ranks)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got := Result(42).Error(); got != "unknown nccl result 42" {
		t.Errorf("Result(42).Error() = %q", got)
	}
	err := fmt.Errorf("step 3: %w", callError("ncclSend", RemoteError, "peer gone\n"))
	if !errors.Is(err, RemoteError) || err.Error() != "step 3: nccl: ncclSend: ncclRemoteError (6): a remote rank failed or the network between ranks broke; last error: peer gone" {
		t.Errorf("wrapped error = %q", err)
	}
}

func TestParseVersion(t *testing.T) {
	cases := []struct {
		code int
		want string
	}{
		{22703, "2.27.3"}, // 2·10000 + 27·100 + 3
		{21903, "2.19.3"},
		{20905, "2.9.5"}, // first release with the new encoding
		{2804, "2.8.4"},  // 2·1000 + 8·100 + 4
		{2708, "2.7.8"},
	}
	for _, c := range cases {
		if got := ParseVersion(c.code).String(); got != c.want {
			t.Errorf("ParseVersion(%d) = %s, want %s", c.code, got, c.want)
		}
	}
	v := ParseVersion(21700)
	if !v.AtLeast(2, 17, 0) || v.AtLeast(2, 17, 1) || !v.AtLeast(2, 9, 9) || v.AtLeast(3, 0, 0) {
		t.Errorf("AtLeast wrong for %s", v)
	}
}

func TestDataTypes(t *testing.T) {
	// ncclDataType_t values and element sizes from the public header.
	sizes := map[DataType]int{Int8: 1, Uint8: 1, Int32: 4, Uint32: 4, Int64: 8, Uint64: 8,
		Float16: 2, Float32: 4, Float64: 8, Bfloat16: 2, Float8e4m3: 1, Float8e5m2: 1}
	for dt, s := range sizes {
		if dt.Size() != s {
			t.Errorf("%s.Size() = %d, want %d", dt, dt.Size(), s)
		}
	}
	if Float16 != 6 || Float32 != 7 || Float64 != 8 || Bfloat16 != 9 || Avg != 4 {
		t.Error("enum values drifted from nccl.h")
	}
	if DataType(12).Size() != 0 || DataType(-1).known() {
		t.Error("unknown data types accepted")
	}
}
