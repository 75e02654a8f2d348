package main

import (
	"context"
	"fmt"
	"os"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/cgo/dl"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	pcuda "github.com/partbench/partbench/exec/cuda"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/localcomm"
	"github.com/partbench/partbench/exec/ncclcomm"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/partition"
)

// cudaBackend returns exec.Run's constructors for the GPU backend: an
// exec/cuda Compute on GPU env.LocalRank with decode graphs, and an NCCL
// communicator (exec/ncclcomm) queued on that Compute's stream. It fails at
// once, before any rank joins, when NCCL cannot be found.
func cudaBackend(env launch.Env) (newCompute func(*partition.Plan, int) (pexec.Compute, error),
	newComm func(context.Context, *rendezvous.Session, *partition.Plan, int, pexec.Compute) (pexec.Comm, error), err error) {
	lib, err := dl.Find(dl.NCCL())
	if err != nil {
		return nil, nil, fmt.Errorf("the GPU backend communicates with NCCL: %w", err)
	}
	lib.Close() // exec/ncclcomm loads it for the process
	newCompute = func(plan *partition.Plan, rank int) (pexec.Compute, error) {
		return pcuda.New(plan, rank, pcuda.Options{Device: env.LocalRank, Graphs: true})
	}
	newComm = func(ctx context.Context, sess *rendezvous.Session, plan *partition.Plan, rank int, c pexec.Compute) (pexec.Comm, error) {
		gc, ok := c.(*pcuda.Compute)
		if !ok {
			return nil, fmt.Errorf("the NCCL communicator needs the GPU backend's Compute (got %T)", c)
		}
		return ncclcomm.New(ctx, sess, plan, rank, gc)
	}
	return newCompute, newComm, nil
}

// cudaCheckOptions are exec.Check's options on the GPU: the partitioned
// plan on GPU 0 in dtype ("" or fp32: exec.Check's fp32 plans; fp16, bf16),
// every rank in this process through exec/localcomm staged via the host,
// against exec/cpu, with cuda.Tolerance(dtype).
func cudaCheckOptions(dtype string) pexec.CheckOptions {
	ref := func(p *partition.Plan, rank int) (pexec.Compute, error) { return cpu.New(p, rank) }
	return pcuda.CheckOptions(pcuda.Options{DType: dtype}, ref, localcomm.Comms)
}

// cudaAvailable reports why the GPU backend cannot run here, or nil: the
// CUDA driver must load (cuInit succeeds) and see at least one GPU.
func cudaAvailable() error {
	drv, err := cuda.Load()
	if err != nil {
		return err
	}
	// The driver stays loaded: once initialized it is not unloaded (exec/cuda
	// keeps its own binding for the process too).
	n, err := drv.DeviceCount()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("cuda: the CUDA driver %s sees no GPU (CUDA_VISIBLE_DEVICES=%q)", drv.Path(), os.Getenv("CUDA_VISIBLE_DEVICES"))
	}
	return nil
}
