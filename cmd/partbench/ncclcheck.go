package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/cgo/dl"
	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/nccl"
)

type ncclCheckOptions struct {
	device  int
	count   int
	timeout time.Duration
}

func newNCCLCheckCmd() *cobra.Command {
	o := &ncclCheckOptions{}
	cmd := &cobra.Command{
		Use:   "nccl-check [--device N] [--count N]",
		Short: "Load the CUDA driver and NCCL, and run an all-reduce and a send/recv on one GPU",
		Long: `Load libcuda and NCCL the way a run does (PARTBENCH_CUDA_LIB, PARTBENCH_NCCL_LIB,
LD_LIBRARY_PATH, CUDA_HOME, the system loader, Python wheels), print where each
was found and its version, create a one-rank NCCL communicator on the GPU, and
run on a small device buffer of float32 an all-reduce (which over one rank
copies its input) and a send/recv to itself in one group. Both results are
read back and compared; the communicator's counters are printed.

Without a driver or NCCL it fails with one line naming every place searched.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.device, "device", 0, "GPU ordinal")
	f.IntVar(&o.count, "count", 1<<20, "float32 elements per buffer")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "limit for the whole check")
	return cmd
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

func (o *ncclCheckOptions) run(ctx context.Context, w io.Writer) error {
	if o.count < 1 {
		return fmt.Errorf("nccl-check: --count must be positive")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	drv, err := cuda.Load()
	if err != nil {
		return notFound("CUDA driver", err)
	}
	defer drv.Close()
	fmt.Fprintf(w, "CUDA driver: %s (CUDA %s)\n", drv.Path(), drv.VersionString())
	dev, err := drv.Device(o.device)
	if err != nil {
		return fmt.Errorf("nccl-check: %w", err)
	}
	info, err := dev.Info()
	if err != nil {
		return fmt.Errorf("nccl-check: %w", err)
	}
	fmt.Fprintf(w, "GPU %d: %s, sm_%d%d, %d SMs, %.1f GB, L2 %.1f MB (max persisting %.1f MB)\n",
		info.Ordinal, info.Name, info.ComputeMajor, info.ComputeMinor, info.SMs,
		float64(info.TotalMemBytes)/1e9, float64(info.L2Bytes)/1e6, float64(info.MaxPersistingL2Bytes)/1e6)

	lib, err := nccl.Load()
	if err != nil {
		return notFound("NCCL", err)
	}
	defer lib.Close()
	v, err := lib.Version()
	if err != nil {
		return fmt.Errorf("nccl-check: %w", err)
	}
	fmt.Fprintf(w, "NCCL %s: %s\n", v, lib.Path())

	pctx, err := dev.PrimaryContext()
	if err != nil {
		return fmt.Errorf("nccl-check: %w", err)
	}
	defer pctx.Release()
	unpin, err := pctx.Pin()
	if err != nil {
		return fmt.Errorf("nccl-check: %w", err)
	}
	defer unpin()
	return o.exchange(ctx, w, drv, pctx, lib)
}

// exchange runs the all-reduce and the send/recv; the goroutine is pinned
// with the context current.
func (o *ncclCheckOptions) exchange(ctx context.Context, w io.Writer, drv *cuda.Driver, pctx *cuda.Context, lib *nccl.Lib) error {
	stream, err := drv.NewStream(cuda.StreamNonBlocking)
	if err != nil {
		return fmt.Errorf("nccl-check: %w", err)
	}
	defer stream.Destroy()
	bytes := int64(o.count) * 4
	var bufs [3]cuda.DevicePtr // send, all-reduce result, received
	for i := range bufs {
		if bufs[i], err = drv.MemAlloc(bytes); err != nil {
			return fmt.Errorf("nccl-check: %w", err)
		}
		defer drv.MemFree(bufs[i])
	}
	want := make([]float32, o.count)
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
	fmt.Fprintf(w, "communicator: 1 rank on GPU %d, created in %.3f s\n", pctx.Device().Ordinal, time.Since(start).Seconds())
	watch := comm.Watch(ctx, 100*time.Millisecond)
	s := stream.Handle()

	start = time.Now()
	if err := comm.AllReduce(uintptr(bufs[0]), uintptr(bufs[1]), o.count, nccl.Float32, nccl.Sum, s); err != nil {
		return fmt.Errorf("nccl-check: %w", err)
	}
	if err := stream.Synchronize(); err != nil {
		return fmt.Errorf("nccl-check: all_reduce: %w", err)
	}
	fmt.Fprintf(w, "all_reduce: %d × float32 in %.3f ms\n", o.count, time.Since(start).Seconds()*1e3)

	start = time.Now()
	if err := lib.GroupStart(); err != nil {
		return fmt.Errorf("nccl-check: %w", err)
	}
	sendErr := comm.Send(uintptr(bufs[0]), o.count, nccl.Float32, 0, s)
	recvErr := comm.Recv(uintptr(bufs[2]), o.count, nccl.Float32, 0, s)
	if err := lib.GroupEnd(); err != nil {
		return fmt.Errorf("nccl-check: %w", err)
	}
	if sendErr != nil || recvErr != nil {
		return fmt.Errorf("nccl-check: send/recv: %v; %v", sendErr, recvErr)
	}
	if err := stream.Synchronize(); err != nil {
		return fmt.Errorf("nccl-check: send/recv: %w", err)
	}
	fmt.Fprintf(w, "send/recv to self (one group): %d × float32 in %.3f ms\n", o.count, time.Since(start).Seconds()*1e3)

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
		got := make([]float32, o.count)
		if err := stream.CopyDtoHAsync(cuda.Bytes(got), c.p); err != nil {
			return fmt.Errorf("nccl-check: %w", err)
		}
		if err := verify(got, want); err != nil {
			return fmt.Errorf("nccl-check: %s: %w", c.name, err)
		}
		fmt.Fprintf(w, "%s: result verified\n", c.name)
	}
	printCounters(w, comm.Counter().Snapshot())
	fmt.Fprintln(w, "nccl-check: ok")
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

// printCounters prints what the binding counted, under the commcount
// definitions.
func printCounters(w io.Writer, s commcount.Snapshot) {
	ops := make([]string, 0, len(s.Calls))
	for op := range s.Calls {
		ops = append(ops, string(op))
	}
	sort.Strings(ops)
	fmt.Fprintln(w, "counters:")
	for _, op := range ops {
		fmt.Fprintf(w, "  %-12s %d calls, %d payload bytes\n", op, s.Calls[commcount.Op(op)], s.Bytes[commcount.Op(op)])
	}
	peers := make([]int, 0, len(s.Peers))
	for p := range s.Peers {
		peers = append(peers, p)
	}
	sort.Ints(peers)
	for _, p := range peers {
		fmt.Fprintf(w, "  to rank %d:  %d messages, %d wire bytes\n", p, s.Peers[p].Messages, s.Peers[p].WireBytes)
	}
	fmt.Fprintf(w, "  total: %d calls, %d point-to-point messages\n", s.TotalCalls(), s.Messages())
}
