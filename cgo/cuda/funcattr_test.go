//go:build cgo

package cuda

import (
	"strings"
	"testing"
)

// TestDynamicSharedMemoryAttribute: a launch above 48 KiB of dynamic
// shared memory is refused until cuFuncSetAttribute raises the function's
// limit; the limit reads back through cuFuncGetAttribute, holds per
// function handle, and cannot be raised past the device's opt-in maximum.
func TestDynamicSharedMemoryAttribute(t *testing.T) {
	d, _ := loadFake(t)
	pinned(t, d)
	m := loadModule(t, d)
	s, err := d.NewStream(StreamNonBlocking)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	f, err := m.Function("trace_i")
	if err != nil {
		t.Fatal(err)
	}
	other, err := m.Function("trace_i")
	if err != nil {
		t.Fatal(err)
	}
	const want = 87040 // flash attention with head dim 128 in fp16: (64 + 4·64)·(128 + 8)·2 bytes
	if v, err := f.Attribute(FuncMaxDynamicSharedBytes); err != nil || v != DefaultDynamicSharedBytes {
		t.Fatalf("default dynamic shared limit %d, %v; want %d", v, err, DefaultDynamicSharedBytes)
	}
	if err := f.Launch(D1(1), D1(128), DefaultDynamicSharedBytes, s, I32(1)); err != nil {
		t.Fatalf("a launch at the default limit: %v", err)
	}
	err = f.Launch(D1(1), D1(128), want, s, I32(1))
	if err == nil || !strings.Contains(err.Error(), "cuLaunchKernel(trace_i)") {
		t.Fatalf("a launch with %d bytes of dynamic shared memory before raising the limit: %v, want a refusal", want, err)
	}
	if err := f.SetAttribute(FuncMaxDynamicSharedBytes, want); err != nil {
		t.Fatal(err)
	}
	if v, err := f.Attribute(FuncMaxDynamicSharedBytes); err != nil || v != want {
		t.Fatalf("raised dynamic shared limit reads %d, %v; want %d", v, err, want)
	}
	if err := f.Launch(D1(1), D1(128), want, s, I32(2)); err != nil {
		t.Fatalf("a launch within the raised limit: %v", err)
	}
	if err := f.Launch(D1(1), D1(128), want+1, s, I32(3)); err == nil {
		t.Fatal("a launch one byte above the raised limit was accepted")
	}
	if err := other.Launch(D1(1), D1(128), want, s, I32(4)); err == nil {
		t.Fatal("another handle of the same kernel launched above 48 KiB without its own attribute")
	}
	err = f.SetAttribute(FuncMaxDynamicSharedBytes, 232448+1) // the fake device's AttrMaxSharedMemoryPerBlockOpt + 1
	if err == nil || !strings.Contains(err.Error(), "cuFuncSetAttribute(trace_i, 8, 232449)") {
		t.Fatalf("raising the limit past the opt-in maximum: %v, want a refusal naming the call", err)
	}
	if v, err := f.Attribute(FuncNumRegs); err != nil || v <= 0 {
		t.Fatalf("registers %d, %v", v, err)
	}
	var zero Function
	if err := zero.SetAttribute(FuncMaxDynamicSharedBytes, want); err == nil {
		t.Fatal("setting an attribute of a function never looked up succeeded")
	}
}
