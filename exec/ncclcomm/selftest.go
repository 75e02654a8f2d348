package ncclcomm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/cgo/dl"
	"github.com/partbench/partbench/nccl"
	"github.com/partbench/partbench/nccl/selftest"
)

// SelfTestOptions configure SelfTest.
type SelfTestOptions struct {
	// Device is the GPU ordinal.
	Device int
	// Count is the float32 elements per buffer (≥ 1).
	Count int
	// Timeout bounds the whole test (0: none beyond ctx).
	Timeout time.Duration
}

// SelfTest loads the CUDA driver and NCCL the way a run does, creates a
// one-rank NCCL communicator on the GPU, and runs on float32 device buffers
// an all-reduce (which over one rank copies its input) and a send/recv to
// itself in one group; both results are read back and compared with the
// input. Errors name the step; a missing library's error is one line naming
// every place searched.
func SelfTest(ctx context.Context, o SelfTestOptions) (*selftest.Result, error) {
	res := selftest.New(o.Count)
	if o.Count < 1 {
		return res, fmt.Errorf("nccl-check: --count must be positive")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}

	drv, err := cuda.Load()
	if err != nil {
		return res, notFound("CUDA driver", err)
	}
	defer drv.Close()
	res.DriverPath, res.CUDAVersion = drv.Path(), drv.VersionString()
	dev, err := drv.Device(o.Device)
	if err != nil {
		return res, fmt.Errorf("nccl-check: %w", err)
	}
	info, err := dev.Info()
	if err != nil {
		return res, fmt.Errorf("nccl-check: %w", err)
	}
	res.GPU = &selftest.GPU{Ordinal: info.Ordinal, Name: info.Name, ComputeMajor: info.ComputeMajor, ComputeMinor: info.ComputeMinor,
		SMs: info.SMs, TotalMemBytes: info.TotalMemBytes, L2Bytes: info.L2Bytes, MaxPersistingL2Bytes: info.MaxPersistingL2Bytes}

	lib, err := nccl.Load()
	if err != nil {
		return res, notFound("NCCL", err)
	}
	defer lib.Close()
	v, err := lib.Version()
	if err != nil {
		return res, fmt.Errorf("nccl-check: %w", err)
	}
	res.NCCLVersion, res.NCCLPath = v.String(), lib.Path()

	pctx, err := dev.PrimaryContext()
	if err != nil {
		return res, fmt.Errorf("nccl-check: %w", err)
	}
	defer pctx.Release()
	unpin, err := pctx.Pin()
	if err != nil {
		return res, fmt.Errorf("nccl-check: %w", err)
	}
	defer unpin()
	return res, exchange(ctx, res, o.Count, drv, pctx, lib)
}

// notFound says which library is missing, on one line with every place
// dl searched.
func notFound(what string, err error) error {
	var nf *dl.NotFoundError
	if errors.As(err, &nf) {
		err = nf
	}
	return oneLine(fmt.Errorf("nccl-check: no %s: %w", what, err))
}

// oneLine folds a multi-line error (dl's list of places searched) into one
// line.
func oneLine(err error) error {
	lines := strings.Split(err.Error(), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	if len(lines) == 1 {
		return err
	}
	return fmt.Errorf("%s %s", lines[0], strings.Join(lines[1:], "; "))
}

// exchange runs the all-reduce and the send/recv; the goroutine is pinned
// with the context current.
func exchange(ctx context.Context, res *selftest.Result, count int, drv *cuda.Driver, pctx *cuda.Context, lib *nccl.Lib) error {
	stream, err := drv.NewStream(cuda.StreamNonBlocking)
	if err != nil {
		return fmt.Errorf("nccl-check: %w", err)
	}
	defer stream.Destroy()
	bytes := int64(count) * 4
	var bufs [3]cuda.DevicePtr // send, all-reduce result, received
	for i := range bufs {
		if bufs[i], err = drv.MemAlloc(bytes); err != nil {
			return fmt.Errorf("nccl-check: %w", err)
		}
		defer drv.MemFree(bufs[i])
	}
	want := make([]float32, count)
	for i := range want {
		want[i] = float32(i%1000) + 0.5
	}
	if err := stream.CopyHtoDAsync(bufs[0], cuda.Bytes(want)); err != nil {
		return fmt.Errorf("nccl-check: %w", err)
	}
	for _, p := range bufs[1:] {
		if err := stream.MemsetD8Async(p, 0, bytes); err != nil {
			return fmt.Errorf("nccl-check: %w", err)
		}
	}
	if err := stream.Synchronize(); err != nil {
		return fmt.Errorf("nccl-check: %w", err)
	}

	id, err := lib.GetUniqueID()
	if err != nil {
		return fmt.Errorf("nccl-check: %w", err)
	}
	start := time.Now()
	comm, err := lib.CommInitRank(1, id, 0, nccl.WithThreadSetup(pctx.SetCurrent), nccl.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("nccl-check: %w", err)
	}
	defer comm.Destroy()
	res.CommDevice, res.CommCreateS = pctx.Device().Ordinal, time.Since(start).Seconds()
	watch := comm.Watch(ctx, 100*time.Millisecond)
	s := stream.Handle()

	start = time.Now()
	if err := comm.AllReduce(uintptr(bufs[0]), uintptr(bufs[1]), count, nccl.Float32, nccl.Sum, s); err != nil {
		return fmt.Errorf("nccl-check: %w", err)
	}
	if err := stream.Synchronize(); err != nil {
		return fmt.Errorf("nccl-check: all_reduce: %w", err)
	}
	res.AllReduceS = time.Since(start).Seconds()

	start = time.Now()
	if err := lib.GroupStart(); err != nil {
		return fmt.Errorf("nccl-check: %w", err)
	}
	sendErr := comm.Send(uintptr(bufs[0]), count, nccl.Float32, 0, s)
	recvErr := comm.Recv(uintptr(bufs[2]), count, nccl.Float32, 0, s)
	if err := lib.GroupEnd(); err != nil {
		return fmt.Errorf("nccl-check: %w", err)
	}
	if sendErr != nil || recvErr != nil {
		return fmt.Errorf("nccl-check: send/recv: %v; %v", sendErr, recvErr)
	}
	if err := stream.Synchronize(); err != nil {
		return fmt.Errorf("nccl-check: send/recv: %w", err)
	}
	res.SendRecvS = time.Since(start).Seconds()

	select {
	case err := <-watch:
		if err != nil {
			return fmt.Errorf("nccl-check: %w", err)
		}
	default:
	}
	for _, c := range []struct {
		name string
		p    cuda.DevicePtr
	}{{"all_reduce", bufs[1]}, {"send/recv", bufs[2]}} {
		got := make([]float32, count)
		if err := stream.CopyDtoHAsync(cuda.Bytes(got), c.p); err != nil {
			return fmt.Errorf("nccl-check: %w", err)
		}
		if err := verify(got, want); err != nil {
			return fmt.Errorf("nccl-check: %s: %w", c.name, err)
		}
		res.Verified = append(res.Verified, c.name)
	}
	snap := comm.Counter().Snapshot()
	res.Counters = &snap
	res.OK = true
	return nil
}

func verify(got, want []float32) error {
	bad := 0
	first := -1
	for i := range want {
		if got[i] != want[i] && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i]))) {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d elements differ; element %d is %v, want %v", bad, len(want), first, got[first], want[first])
	}
	return nil
}
