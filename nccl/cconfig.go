//go:build cgo

package nccl

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"math"
	"unsafe"
)

// Facts from the public nccl.h.
const (
	apiMagic    = 0xcafebeef    // NCCL_API_MAGIC
	configUndef = math.MinInt32 // NCCL_CONFIG_UNDEF_INT (INT_MIN)
	// configLayout is the NCCL_VERSION_CODE whose ncclConfig_t starts with
	// pbConfig's fields; the library fills every later field with its default.
	configLayout = 21700
)

// cConfig fills the C struct; the caller frees netName.
func cConfig(cfg Config) C.pbConfig {
	undef := func(v int) C.int {
		if v == 0 {
			return configUndef
		}
		return C.int(v)
	}
	c := C.pbConfig{
		magic:          apiMagic,
		version:        configLayout,
		blocking:       configUndef,
		cgaClusterSize: undef(cfg.CGAClusterSize),
		minCTAs:        undef(cfg.MinCTAs),
		maxCTAs:        undef(cfg.MaxCTAs),
	}
	c.size = C.size_t(unsafe.Sizeof(c))
	if cfg.NonBlocking {
		c.blocking = 0
	}
	if cfg.NetName != "" {
		c.netName = C.CString(cfg.NetName)
	}
	return c
}

// boundaryLayout is what cgo (Go's view) and the C compiler each see of
// the structs that cross into NCCL, for the layout test.
type boundaryLayout struct {
	uniqueIDGo, uniqueIDC uintptr
	configGo, configC     uintptr
	configFields          []fieldOffset
}

type fieldOffset struct {
	name     string
	goOffset uintptr
	cOffset  uintptr
}

func layout() boundaryLayout {
	var c C.pbConfig
	var id C.pbUniqueId
	names := []string{"size", "magic", "version", "blocking", "cgaClusterSize", "minCTAs", "maxCTAs", "netName"}
	goOff := []uintptr{
		unsafe.Offsetof(c.size), unsafe.Offsetof(c.magic), unsafe.Offsetof(c.version),
		unsafe.Offsetof(c.blocking), unsafe.Offsetof(c.cgaClusterSize), unsafe.Offsetof(c.minCTAs),
		unsafe.Offsetof(c.maxCTAs), unsafe.Offsetof(c.netName),
	}
	l := boundaryLayout{
		uniqueIDGo: unsafe.Sizeof(id), uniqueIDC: uintptr(C.pb_sizeof_unique_id()),
		configGo: unsafe.Sizeof(c), configC: uintptr(C.pb_sizeof_config()),
	}
	for i, n := range names {
		l.configFields = append(l.configFields, fieldOffset{n, goOff[i], uintptr(C.pb_offsetof_config(C.int(i)))})
	}
	return l
}
