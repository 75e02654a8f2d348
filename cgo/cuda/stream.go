package cuda

import (
	"fmt"
)

// Stream is a CUstream of the context that was current when it was made.
type Stream struct {
	d *Driver
	h uintptr
}

// Handle is the CUstream, for libraries that take one (cuBLAS, NCCL).
func (s Stream) Handle() uintptr { return s.h }

// NewStream creates a stream in the current context (cuStreamCreate).
// StreamNonBlocking keeps it from synchronizing with the legacy default
// stream, which stream capture needs when other threads use that stream.
func (d *Driver) NewStream(flags StreamFlags) (Stream, error) {
	h, r := d.c.streamCreate(uint32(flags))
	if r != Success {
		return Stream{}, d.fail("cuStreamCreate", r)
	}
	return Stream{d: d, h: h}, nil
}

// Synchronize waits for the stream's work (cuStreamSynchronize); it
// reports an error of any kernel that ran on it.
func (s Stream) Synchronize() error {
	if r := s.d.c.streamSynchronize(s.h); r != Success {
		return s.d.fail("cuStreamSynchronize", r)
	}
	return nil
}

// Destroy destroys the stream once its work is done (cuStreamDestroy_v2).
func (s Stream) Destroy() error {
	if r := s.d.c.streamDestroy(s.h); r != Success {
		return s.d.fail("cuStreamDestroy_v2", r)
	}
	return nil
}

// CopyHtoDAsync queues a copy of src to dst on the stream
// (cuMemcpyHtoDAsync_v2). From pageable memory (any Go slice) the driver
// has staged src by the time the call returns; src may be reused then.
func (s Stream) CopyHtoDAsync(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	if r := s.d.c.memcpyHtoDAsync(dst, hostPtr(src), int64(len(src)), s.h); r != Success {
		return s.d.fail("cuMemcpyHtoDAsync_v2", r)
	}
	return nil
}

// CopyDtoHAsync queues a copy of len(dst) bytes at src into dst
// (cuMemcpyDtoHAsync_v2). Into pageable memory (any Go slice) the call
// returns only when the copy is done.
func (s Stream) CopyDtoHAsync(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	if r := s.d.c.memcpyDtoHAsync(hostPtr(dst), src, int64(len(dst)), s.h); r != Success {
		return s.d.fail("cuMemcpyDtoHAsync_v2", r)
	}
	return nil
}

// CopyDtoDAsync queues a device-to-device copy of bytes (cuMemcpyDtoDAsync_v2).
func (s Stream) CopyDtoDAsync(dst, src DevicePtr, bytes int64) error {
	if bytes == 0 {
		return nil
	}
	if r := s.d.c.memcpyDtoDAsync(dst, src, bytes, s.h); r != Success {
		return s.d.fail("cuMemcpyDtoDAsync_v2", r)
	}
	return nil
}

// MemsetD8Async queues setting n bytes at dst to v (cuMemsetD8Async).
func (s Stream) MemsetD8Async(dst DevicePtr, v byte, n int64) error {
	if r := s.d.c.memsetD8Async(dst, v, n, s.h); r != Success {
		return s.d.fail("cuMemsetD8Async", r)
	}
	return nil
}

// MemsetD32Async queues setting n 32-bit words at dst (4-byte aligned) to
// v (cuMemsetD32Async). Outside a graph it is how partbench hands a small
// per-step value (a cache position) to kernels captured in one.
func (s Stream) MemsetD32Async(dst DevicePtr, v uint32, n int64) error {
	if r := s.d.c.memsetD32Async(dst, v, n, s.h); r != Success {
		return s.d.fail("cuMemsetD32Async", r)
	}
	return nil
}

// Event is a CUevent.
type Event struct {
	d *Driver
	h uintptr
}

// NewEvent creates an event in the current context (cuEventCreate).
func (d *Driver) NewEvent(flags EventFlags) (Event, error) {
	h, r := d.c.eventCreate(uint32(flags))
	if r != Success {
		return Event{}, d.fail("cuEventCreate", r)
	}
	return Event{d: d, h: h}, nil
}

// Record queues the event on the stream (cuEventRecord).
func (e Event) Record(s Stream) error {
	if r := e.d.c.eventRecord(e.h, s.h); r != Success {
		return e.d.fail("cuEventRecord", r)
	}
	return nil
}

// Synchronize waits until the event's recorded work is done (cuEventSynchronize).
func (e Event) Synchronize() error {
	if r := e.d.c.eventSynchronize(e.h); r != Success {
		return e.d.fail("cuEventSynchronize", r)
	}
	return nil
}

// Done reports whether the event's recorded work is complete (cuEventQuery),
// without waiting.
func (e Event) Done() (bool, error) {
	switch r := e.d.c.eventQuery(e.h); r {
	case Success:
		return true, nil
	case ErrNotReady:
		return false, nil
	default:
		return false, e.d.fail("cuEventQuery", r)
	}
}

// ElapsedMS is the time in milliseconds between start and end, both
// recorded and complete (cuEventElapsedTime_v2 when the driver has it,
// else cuEventElapsedTime; resolution about 0.5 µs).
func ElapsedMS(start, end Event) (float32, error) {
	ms, r := start.d.c.eventElapsedTime(start.h, end.h)
	if r != Success {
		call := "cuEventElapsedTime"
		if start.d.c.hasElapsedV2() {
			call += "_v2"
		}
		return 0, start.d.fail(call, r)
	}
	return ms, nil
}

// Destroy destroys the event (cuEventDestroy_v2).
func (e Event) Destroy() error {
	if r := e.d.c.eventDestroy(e.h); r != Success {
		return e.d.fail("cuEventDestroy_v2", r)
	}
	return nil
}

// Module is a loaded CUmodule.
type Module struct {
	d *Driver
	h uintptr
}

// LoadModule loads a PTX text (NUL-terminated, as NVRTC returns it) or a
// cubin into the current context (cuModuleLoadData; PTX is compiled by the
// driver's JIT, which must be at least as new as the PTX).
func (d *Driver) LoadModule(image []byte) (Module, error) {
	h, r := d.c.moduleLoadData(image)
	if r != Success {
		return Module{}, d.fail("cuModuleLoadData", r)
	}
	return Module{d: d, h: h}, nil
}

// Function looks up a kernel by its (extern "C") name (cuModuleGetFunction).
func (m Module) Function(name string) (Function, error) {
	h, r := m.d.c.moduleGetFunction(m.h, name)
	if r != Success {
		return Function{}, m.d.fail(fmt.Sprintf("cuModuleGetFunction(%q)", name), r)
	}
	return Function{d: m.d, h: h, name: name}, nil
}

// Unload unloads the module (cuModuleUnload).
func (m Module) Unload() error {
	if r := m.d.c.moduleUnload(m.h); r != Success {
		return m.d.fail("cuModuleUnload", r)
	}
	return nil
}

// Function is a CUfunction.
type Function struct {
	d    *Driver
	h    uintptr
	name string
}

// Name is the kernel's name.
func (f Function) Name() string { return f.name }

// Valid reports whether f was looked up.
func (f Function) Valid() bool { return f.d != nil && f.h != 0 }

// Launch queues the kernel on the stream (cuLaunchKernel) with its
// parameters packed as cuLaunchKernel's kernelParams (see Arg).
func (f Function) Launch(grid, block Dim3, sharedBytes int, s Stream, args ...Arg) error {
	if len(args) > MaxArgs {
		return fmt.Errorf("cuda: launch %s: %d parameters, at most %d", f.name, len(args), MaxArgs)
	}
	if grid.X == 0 || grid.Y == 0 || grid.Z == 0 || block.X == 0 || block.Y == 0 || block.Z == 0 {
		return fmt.Errorf("cuda: launch %s: empty grid %v or block %v", f.name, grid, block)
	}
	if r := f.d.c.launch(f.h, grid, block, uint32(sharedBytes), s.h, args); r != Success {
		return f.d.fail("cuLaunchKernel("+f.name+")", r)
	}
	return nil
}

// Graph is a captured CUgraph.
type Graph struct {
	d *Driver
	h uintptr
}

// GraphExec is an instantiated CUgraphExec.
type GraphExec struct {
	d *Driver
	h uintptr
}

// BeginCapture starts recording the stream's work into a graph
// (cuStreamBeginCapture_v2) instead of running it. With CaptureThreadLocal
// the capturing thread may not make unsafe calls (allocations, legacy
// stream copies) until EndCapture, while other threads still may; the
// goroutine must stay pinned to its thread until EndCapture.
func (s Stream) BeginCapture(mode CaptureMode) error {
	if !s.d.c.hasGraphs() {
		return ErrNoGraphs
	}
	if r := s.d.c.streamBeginCapture(s.h, mode); r != Success {
		return s.d.fail("cuStreamBeginCapture_v2", r)
	}
	return nil
}

// EndCapture ends the capture and returns the graph (cuStreamEndCapture).
// A capture invalidated by an error in between fails here.
func (s Stream) EndCapture() (Graph, error) {
	if !s.d.c.hasGraphs() {
		return Graph{}, ErrNoGraphs
	}
	g, r := s.d.c.streamEndCapture(s.h)
	if r != Success {
		if g != 0 {
			s.d.c.graphDestroy(g)
		}
		return Graph{}, s.d.fail("cuStreamEndCapture", r)
	}
	return Graph{d: s.d, h: g}, nil
}

// Instantiate makes an executable graph (cuGraphInstantiateWithFlags, flags 0).
func (g Graph) Instantiate() (GraphExec, error) {
	e, r := g.d.c.graphInstantiate(g.h, 0)
	if r != Success {
		return GraphExec{}, g.d.fail("cuGraphInstantiateWithFlags", r)
	}
	return GraphExec{d: g.d, h: e}, nil
}

// Destroy destroys the graph (cuGraphDestroy); instantiated copies stay valid.
func (g Graph) Destroy() error {
	if r := g.d.c.graphDestroy(g.h); r != Success {
		return g.d.fail("cuGraphDestroy", r)
	}
	return nil
}

// Launch queues the whole graph on the stream (cuGraphLaunch): one host
// call for what were many launches.
func (e GraphExec) Launch(s Stream) error {
	if r := e.d.c.graphLaunch(e.h, s.h); r != Success {
		return e.d.fail("cuGraphLaunch", r)
	}
	return nil
}

// Destroy destroys the executable graph (cuGraphExecDestroy).
func (e GraphExec) Destroy() error {
	if r := e.d.c.graphExecDestroy(e.h); r != Success {
		return e.d.fail("cuGraphExecDestroy", r)
	}
	return nil
}
