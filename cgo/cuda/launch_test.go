//go:build cgo

package cuda

import (
	"errors"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
)

func loadModule(t *testing.T, d *Driver) Module {
	t.Helper()
	m, err := d.LoadModule([]byte("FAKE PTX test\x00"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Unload() })
	return m
}

// Every parameter type crosses in its own 8-byte slot and the fake reads
// it back with the size its C type has.
func TestLaunchPacksArguments(t *testing.T) {
	d, _ := loadFake(t)
	pinned(t, d)
	m := loadModule(t, d)
	s, err := d.NewStream(StreamNonBlocking)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	f, err := m.Function("trace_p_i_u_f_d_l")
	if err != nil {
		t.Fatal(err)
	}
	err = f.Launch(Dim3{3, 2, 1}, D1(128), 4096, s,
		Ptr(0xdeadbeef00), I32(-3), U32(4000000000), F32(1.5), F64(-2.25), I64(-1<<40))
	if err != nil {
		t.Fatal(err)
	}
	want := "cuLaunchKernel(trace_p_i_u_f_d_l, grid=(3,2,1), block=(128,1,1), shared=4096, " +
		"args=[0xdeadbeef00, -3, 4000000000, 1.5, -2.25, -1099511627776])"
	if got := trace(d); got != want {
		t.Errorf("fake saw %q\nwant      %q", got, want)
	}
}

func TestLaunchRunsAndFails(t *testing.T) {
	d, _ := loadFake(t)
	pinned(t, d)
	m := loadModule(t, d)
	s, _ := d.NewStream(StreamNonBlocking)
	defer s.Destroy()
	p, err := d.MemAlloc(16 * 4)
	if err != nil {
		t.Fatal(err)
	}
	defer d.MemFree(p)
	fill, err := m.Function("fill_p_u_i")
	if err != nil {
		t.Fatal(err)
	}
	if err := fill.Launch(D1(1), D1(32), 0, s, Ptr(p.Add(8)), U32(77), I32(3)); err != nil {
		t.Fatal(err)
	}
	got := make([]uint32, 16)
	if err := s.CopyDtoHAsync(Bytes(got), p); err != nil {
		t.Fatal(err)
	}
	if got[1] == 77 || got[2] != 77 || got[4] != 77 || got[5] == 77 {
		t.Errorf("fill at offset 8 wrote %v", got[:6])
	}

	fail, _ := m.Function("fail")
	if err := fail.Launch(D1(1), D1(1), 0, s); err != nil {
		t.Fatal(err)
	}
	err = s.Synchronize()
	if !errors.Is(err, ErrLaunchFailed) || !strings.Contains(err.Error(), "cuStreamSynchronize") ||
		!strings.Contains(err.Error(), "fake: unspecified launch failure") {
		t.Errorf("Synchronize after a failing kernel: err = %v", err)
	}

	if _, err := m.Function("missing"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("missing kernel: err = %v", err)
	}
	if _, err := d.LoadModule([]byte("not an image\x00")); !errors.Is(err, ErrInvalidImage) {
		t.Errorf("bad image: err = %v", err)
	}
	if _, err := d.LoadModule(nil); !errors.Is(err, ErrInvalidImage) {
		t.Errorf("empty image: err = %v", err)
	}
	many := make([]Arg, MaxArgs+1)
	if err := fill.Launch(D1(1), D1(1), 0, s, many...); err == nil {
		t.Error("33 parameters accepted")
	}
	if err := fill.Launch(D1(0), D1(1), 0, s); err == nil {
		t.Error("empty grid accepted")
	}
}

// During a capture nothing runs; launching the instantiated graph runs it.
func TestGraphCapture(t *testing.T) {
	d, _ := loadFake(t)
	if !d.HasGraphs() {
		t.Fatal("fake has graphs")
	}
	pinned(t, d)
	m := loadModule(t, d)
	s, _ := d.NewStream(StreamNonBlocking)
	defer s.Destroy()
	p, _ := d.MemAlloc(8)
	defer d.MemFree(p)
	fill, _ := m.Function("fill_p_u_i")
	read := func() uint32 {
		v := make([]uint32, 1)
		if err := d.CopyDtoH(Bytes(v), p); err != nil {
			t.Fatal(err)
		}
		return v[0]
	}
	if err := s.BeginCapture(CaptureThreadLocal); err != nil {
		t.Fatal(err)
	}
	if got := trace(d); got != "cuStreamBeginCapture_v2(mode=1)" {
		t.Errorf("fake saw %q", got)
	}
	for _, v := range []uint32{5, 6} {
		if err := fill.Launch(D1(1), D1(1), 0, s, Ptr(p), U32(v), I32(1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.MemsetD32Async(p, 1, 1); !errors.Is(err, ErrStreamCaptureUnsupp) {
		t.Errorf("memset during capture: err = %v (the fake refuses it)", err)
	}
	before := read()
	g, err := s.EndCapture()
	if err != nil {
		t.Fatal(err)
	}
	e, err := g.Instantiate()
	if err != nil {
		t.Fatal(err)
	}
	if got := trace(d); got != "cuGraphInstantiateWithFlags(nodes=2)" {
		t.Errorf("fake saw %q", got)
	}
	g.Destroy()
	if before == 6 {
		t.Error("a captured kernel ran during capture")
	}
	if err := e.Launch(s); err != nil {
		t.Fatal(err)
	}
	if v := read(); v != 6 {
		t.Errorf("after graph launch: %d, want 6", v)
	}
	if c := d.ErrorName(Result(cudatest.Trace)); c != "launches=0 graphLaunches=1 captured=2 hostAllocs=0 hostFrees=0 syncs=0" {
		t.Errorf("fake counters %q", c)
	}
	if err := e.Destroy(); err != nil {
		t.Error(err)
	}
}

func TestNoGraphsOnOldDriver(t *testing.T) {
	d, _ := loadFake(t, "FAKE_OLD")
	if d.HasGraphs() {
		t.Error("HasGraphs on a driver without cuGraphInstantiateWithFlags")
	}
	pinned(t, d)
	s, _ := d.NewStream(StreamNonBlocking)
	defer s.Destroy()
	if err := s.BeginCapture(CaptureThreadLocal); !errors.Is(err, ErrNoGraphs) {
		t.Errorf("BeginCapture: err = %v, want ErrNoGraphs", err)
	}
}
