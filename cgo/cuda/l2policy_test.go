//go:build cgo

package cuda

import (
	"errors"
	"fmt"
	"testing"
	"unsafe"
)

// CUaccessPolicyWindow as Go lays it out and as the C compiler lays out
// cuda.h's declaration (void*, size_t, float, two 4-byte enums: offsets
// 0, 8, 16, 20, 24; 28 bytes padded to the pointer's 8 = 32), and
// CUstreamAttrValue's 64 bytes (CUDA 12's char pad[64]).
func TestAccessPolicyWindowLayout(t *testing.T) {
	c := cLayout()
	var w AccessPolicyWindow
	for _, k := range []struct {
		name        string
		goV, cV, by uintptr
	}{
		{"sizeof", unsafe.Sizeof(w), c.apwSize, 32},
		{"base_ptr", unsafe.Offsetof(w.BasePtr), c.apwBase, 0},
		{"num_bytes", unsafe.Offsetof(w.NumBytes), c.apwBytes, 8},
		{"hitRatio", unsafe.Offsetof(w.HitRatio), c.apwHitRatio, 16},
		{"hitProp", unsafe.Offsetof(w.HitProp), c.apwHitProp, 20},
		{"missProp", unsafe.Offsetof(w.MissProp), c.apwMissProp, 24},
	} {
		if k.goV != k.by || k.cV != k.by {
			t.Errorf("CUaccessPolicyWindow %s: Go %d, C %d; cuda.h's layout gives %d", k.name, k.goV, k.cV, k.by)
		}
	}
	if c.streamAttrValue != 64 {
		t.Errorf("CUstreamAttrValue is %d bytes in the shim, 64 in cuda.h", c.streamAttrValue)
	}
	// cuda.h's enum values.
	if LimitPersistingL2CacheSize != 6 || AccessNormal != 0 || AccessStreaming != 1 || AccessPersisting != 2 ||
		StreamAttrAccessPolicyWindow != 1 || AttrMaxAccessPolicyWindowSize != 109 {
		t.Error("a CUlimit, CUaccessProperty, stream attribute or device attribute value differs from cuda.h")
	}
}

// Each field of the window crosses to the driver in its place (the fake's
// trace reads cuda.h's struct from the 64-byte value), the persisting set-
// aside is capped at the device's maximum and read back, and what the
// driver refuses is refused.
func TestAccessPolicyWindowOnFake(t *testing.T) {
	d, _ := loadFake(t)
	pinned(t, d)
	if !d.HasL2Policy() {
		t.Fatal("the fake driver's persisting-L2 controls were not bound")
	}
	if err := d.SetLimit(LimitPersistingL2CacheSize, 30<<20); err != nil {
		t.Fatal(err)
	}
	if tr := trace(d); tr != "cuCtxSetLimit(limit=6, value=31457280)" {
		t.Errorf("trace %q", tr)
	}
	if v, err := d.Limit(LimitPersistingL2CacheSize); err != nil || v != 30<<20 {
		t.Errorf("limit read back %d, %v; want %d", v, err, 30<<20)
	}
	// The fake's maximum persisting L2 is 75 MiB (attribute 108: 78,643,200 B).
	if err := d.SetLimit(LimitPersistingL2CacheSize, 1<<30); err != nil {
		t.Fatal(err)
	}
	if v, _ := d.Limit(LimitPersistingL2CacheSize); v != 78643200 {
		t.Errorf("a 1 GiB set-aside reads back %d, want the cap 78643200", v)
	}
	st, err := d.NewStream(StreamNonBlocking)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Destroy()
	w := AccessPolicyWindow{BasePtr: 0x7f0012345600, NumBytes: 24 << 20, HitRatio: 0.75, HitProp: AccessPersisting, MissProp: AccessStreaming}
	if err := st.SetAccessPolicyWindow(w); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("cuStreamSetAttribute(attr=1, base=0x7f0012345600, bytes=%d, hitRatio=0.75, hitProp=2, missProp=1)", 24<<20)
	if tr := trace(d); tr != want {
		t.Errorf("trace %q\nwant  %q", tr, want)
	}
	if err := d.ResetPersistingL2(); err != nil {
		t.Error(err)
	}
	for _, bad := range []AccessPolicyWindow{
		{NumBytes: 1 << 30, HitRatio: 1, HitProp: AccessPersisting},                             // over attribute 109: the driver refuses
		{NumBytes: 1 << 20, HitRatio: 1.5, HitProp: AccessPersisting},                           // refused before the call
		{NumBytes: 1 << 20, HitRatio: 1, HitProp: AccessPersisting, MissProp: AccessPersisting}, // refused before the call
	} {
		if err := st.SetAccessPolicyWindow(bad); err == nil {
			t.Errorf("window %+v accepted", bad)
		}
	}
	if err := d.SetLimit(LimitPersistingL2CacheSize, -1); err == nil {
		t.Error("a negative limit was accepted")
	}
}

// A driver without the controls says so; nothing is called.
func TestNoL2Policy(t *testing.T) {
	d, _ := loadFake(t, "FAKE_NO_L2")
	pinned(t, d)
	if d.HasL2Policy() {
		t.Fatal("a driver without cuCtxSetLimit reports the controls")
	}
	st, err := d.NewStream(StreamNonBlocking)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Destroy()
	if err := d.SetLimit(LimitPersistingL2CacheSize, 1); !errors.Is(err, ErrNoL2Policy) {
		t.Errorf("SetLimit: %v", err)
	}
	if err := st.SetAccessPolicyWindow(AccessPolicyWindow{}); !errors.Is(err, ErrNoL2Policy) {
		t.Errorf("SetAccessPolicyWindow: %v", err)
	}
}
