//go:build cgo

package cuda

import (
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/cgo/dl"
)

// loadFake builds the fakes and binds the driver through LoadFrom.
func loadFake(t *testing.T, defines ...string) (*Driver, cudatest.Libs) {
	t.Helper()
	libs := cudatest.Build(t, defines...)
	lib, err := dl.Open(libs.Driver, dl.Now|dl.Local)
	if err != nil {
		t.Fatal(err)
	}
	d, err := LoadFrom(lib)
	if err != nil {
		lib.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, libs
}

// trace is what the fake driver recorded of its last call.
func trace(d *Driver) string { return d.ErrorString(Result(cudatest.Trace)) }

// pinned retains device 0's primary context and pins the test's goroutine
// with it current, for the rest of the test.
func pinned(t *testing.T, d *Driver) *Context {
	t.Helper()
	dev, err := d.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := dev.PrimaryContext()
	if err != nil {
		t.Fatal(err)
	}
	unpin, err := ctx.Pin()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unpin()
		ctx.Release()
	})
	return ctx
}
