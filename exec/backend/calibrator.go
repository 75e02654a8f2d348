package backend

import (
	"fmt"
	"time"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/exec"
	pcuda "github.com/partbench/partbench/exec/cuda"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/partition"
)

// The device parts of `calibrate` (Backend.Calibrator, Backend.Untimed):
// the GPU backend's building blocks timed on its own stream, and a Compute
// of the backend that times no op itself, so the calibration's own marks
// time the op-time table. Like the other optional parts they are reached by
// naming the backend, and refused by name where it lacks them.

// CalibratorOptions are a device calibrator's options (exec/cuda's).
type CalibratorOptions = pcuda.CalibrateOptions

// Calibrator times a backend's device building blocks on one stream of its
// device (exec/cuda's Calibrator): reads of a working set through the L2,
// device copies, GEMMs through the backend's call, kernel and graph
// launches, and any work a caller queues on Stream inside Do (Timed). Close
// frees it.
type Calibrator interface {
	// Info is the calibrated device.
	Info() cuda.DeviceInfo
	// Driver is the driver's version and the path it was loaded from.
	Driver() (version, path string)
	// Stream is the stream samples are queued on.
	Stream() cuda.Stream
	// Do runs fn pinned to an OS thread with the device's context current.
	Do(fn func() error) error
	// MemInfo is the device's free and total memory in bytes.
	MemInfo() (free, total int64, err error)
	// Timed is repeats samples of fn of about minS of device time each:
	// device and host seconds per call, one per repeat.
	Timed(minS float64, repeats int, fn func() error) (deviceS, hostS []float64, err error)
	// Alloc and Free hold device memory for work a caller queues.
	Alloc(bytes int64) (cuda.DevicePtr, error)
	Free(ps ...cuda.DevicePtr) error
	// Read is the read bandwidth of a working set of bytes, per repeat.
	Read(bytes int64, minS float64, repeats int) ([]float64, error)
	// Copy is the device-to-device copy bandwidth of bytes, per repeat.
	Copy(bytes int64, minS float64, repeats int) ([]float64, error)
	// GEMM is the device seconds of out[m, n] = x[m, k] @ w[k, n] in dtype,
	// per repeat.
	GEMM(dtype string, m, n, k int, minS float64, repeats int) ([]float64, error)
	// Launch is an empty kernel's device and host seconds, launched one by
	// one, per repeat.
	Launch(calls, repeats int) (deviceS, hostS []float64, err error)
	// GraphLaunch is the device seconds per kernel inside a graph of
	// kernels empty kernels and the host seconds of one launch of it, per
	// repeat.
	GraphLaunch(kernels, calls, repeats int) (kernelS, launchS []float64, err error)
	// Hold queues on stream work that keeps the device busy for d.
	Hold(stream cuda.Stream, d time.Duration) error
	Close() error
}

var _ Calibrator = (*pcuda.Calibrator)(nil)

// Calibrator opens the device calibrator of the backend named name. A
// backend without one is refused, naming those that have one; the
// backend's own errors are returned as they are (they name the driver or
// library that was searched for and not found).
func (r *Registry) Calibrator(name string, o CalibratorOptions) (Calibrator, error) {
	b, ok := r.lookup(name)
	if !ok {
		return nil, r.unknown(name)
	}
	if b.Calibrator == nil {
		return nil, fmt.Errorf("backend %s has no device calibrator (backends with one: %s)", name, r.with(func(b Backend) bool { return b.Calibrator != nil }))
	}
	return b.Calibrator(o)
}

// UntimedCompute returns the constructor of the backend named name's
// Compute on the device of env that communicates with no other rank and
// times no op (no device marks around each op: its OpTimes are empty), for
// a caller that times the ops itself. A backend without Backend.Untimed is
// refused, naming those that have it; its errors name the flag.
func (r *Registry) UntimedCompute(name string, env launch.Env) (NewComputeFunc, error) {
	b, ok := r.lookup(name)
	if !ok {
		return nil, r.unknown(name)
	}
	if b.Untimed == nil {
		return nil, fmt.Errorf("backend %s has no untimed Compute (backends with one: %s)", name, r.with(func(b Backend) bool { return b.Untimed != nil }))
	}
	nc, err := b.Untimed(env)
	if err != nil {
		return nil, fmt.Errorf("--backend %s: %w", name, err)
	}
	return nc, nil
}

// cudaCalibrator is exec/cuda's Calibrator.
func cudaCalibrator(o CalibratorOptions) (Calibrator, error) {
	c, err := pcuda.NewCalibrator(o)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return c, nil
}

// cudaUntimed returns the constructor of a GPU Compute on env's local GPU
// without op timing (and without decode graphs); like cudaDevice it needs
// the CUDA driver and a GPU, never NCCL.
func cudaUntimed(env launch.Env) (NewComputeFunc, error) {
	if err := cudaAvailable(); err != nil {
		return nil, fmt.Errorf("the GPU backend needs the CUDA driver and a GPU: %w", err)
	}
	return func(plan *partition.Plan, rank int) (exec.Compute, error) {
		return pcuda.New(plan, rank, pcuda.Options{Device: env.LocalRank, NoTiming: true})
	}, nil
}
