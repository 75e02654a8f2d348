//go:build cgo

package nccl

import (
	"testing"
	"unsafe"
)

func TestBoundaryLayout(t *testing.T) {
	l := layout()
	// ncclUniqueId: char internal[NCCL_UNIQUE_ID_BYTES = 128].
	if s := unsafe.Sizeof(UniqueID{}); s != 128 || l.uniqueIDGo != 128 || l.uniqueIDC != 128 {
		t.Errorf("unique id: Go %d, cgo %d, C %d bytes; want 128", s, l.uniqueIDGo, l.uniqueIDC)
	}
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("ncclConfig_t offsets below are for LP64 platforms")
	}
	// ncclConfig_t prefix, LP64: size_t size @0; unsigned magic @8,
	// version @12; int blocking @16, cgaClusterSize @20, minCTAs @24,
	// maxCTAs @28; const char* netName @32 (8-aligned); sizeof 40.
	want := map[string]uintptr{"size": 0, "magic": 8, "version": 12, "blocking": 16,
		"cgaClusterSize": 20, "minCTAs": 24, "maxCTAs": 28, "netName": 32}
	if l.configGo != 40 || l.configC != 40 {
		t.Errorf("config: cgo %d, C %d bytes; want 40", l.configGo, l.configC)
	}
	if len(l.configFields) != len(want) {
		t.Fatalf("%d config fields, want %d", len(l.configFields), len(want))
	}
	for _, f := range l.configFields {
		if f.goOffset != want[f.name] || f.cOffset != want[f.name] {
			t.Errorf("config.%s: cgo offset %d, C offset %d; want %d", f.name, f.goOffset, f.cOffset, want[f.name])
		}
	}
}
