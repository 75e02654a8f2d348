package calib

import (
	"errors"
	"fmt"

	"github.com/partbench/partbench/exec/backend"
	"github.com/partbench/partbench/nccl"
)

// ncclLatency times a one-float32 all_reduce, in place, on a one-rank
// NCCL communicator on the calibrator's GPU, calls queued back to back on
// its stream: seconds per call, one per repeat. Where libnccl does not
// load, why says so (and nothing is timed); a failure after it loaded is
// an error.
func ncclLatency(gc backend.Calibrator, minS float64, repeats int) (ts []float64, why string, err error) {
	lib, err := nccl.Load()
	if err != nil {
		return nil, err.Error(), nil
	}
	// The library stays loaded: NCCL's threads and CUDA state are not
	// meant to be unloaded (exec/ncclcomm keeps it for the process too).
	id, err := lib.GetUniqueID()
	if err != nil {
		return nil, "", fmt.Errorf("NCCL latency: %w", err)
	}
	var comm *nccl.Comm
	if err := gc.Do(func() error {
		var err error
		comm, err = lib.CommInitRank(1, id, 0)
		return err
	}); err != nil {
		return nil, "", fmt.Errorf("NCCL latency: one-rank communicator: %w", err)
	}
	buf, err := gc.Alloc(4)
	if err != nil {
		return nil, "", errors.Join(err, gc.Do(comm.Destroy))
	}
	stream := gc.Stream().Handle()
	ts, _, err = gc.Timed(minS, repeats, func() error {
		return comm.AllReduce(uintptr(buf), uintptr(buf), 1, nccl.Float32, nccl.Sum, stream)
	})
	err = errors.Join(err, gc.Free(buf), gc.Do(comm.Destroy))
	if err != nil {
		return nil, "", fmt.Errorf("NCCL latency: %w", err)
	}
	return ts, "", nil
}
