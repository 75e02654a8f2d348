package backend

import (
	"context"
	"fmt"
	"slices"

	"github.com/partbench/partbench/cgo/dl"
	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	pcuda "github.com/partbench/partbench/exec/cuda"
	"github.com/partbench/partbench/exec/hf"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/localcomm"
	"github.com/partbench/partbench/exec/ncclcomm"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/partition"
)

// CheckpointOptions are a checkpoint workflow's backend options, each
// from the command's flag of the same name.
type CheckpointOptions struct {
	// DType is the element type computed in ("": the backend's default).
	DType string
	// HostWindowBytes bounds the float32 bytes of checkpoint tensors the
	// GPU backend reads ahead of their upload (0: its default, 1 GiB; the
	// host holds at most two windows). The CPU backend, which holds every
	// weight in host memory, refuses it.
	HostWindowBytes int64
}

// cpuCheckpoint is exec/cpu's part of the Hugging Face workflow: float32,
// in process over exec/localcomm, launched over TCP.
func cpuCheckpoint(o CheckpointOptions, _ launch.Env) (hf.Backend, error) {
	if o.DType != "" && o.DType != "fp32" {
		return hf.Backend{}, fmt.Errorf("--dtype %q: the CPU backend computes in float32 (allowed: fp32; --backend cuda computes in fp16 and bf16)", o.DType)
	}
	if o.HostWindowBytes != 0 {
		return hf.Backend{}, fmt.Errorf("--host-window %d: only with --backend cuda (the CPU backend holds every weight in host memory, with no upload to window)", o.HostWindowBytes)
	}
	return cpu.Checkpoint(TCPComm), nil
}

// cudaDTypes are the element types the GPU backend computes in.
var cudaDTypes = []string{"fp32", "fp16", "bf16"}

// cudaCheckpoint is exec/cuda's part of the Hugging Face workflow on env's
// local GPU: in one process every rank on that GPU, staged via the host
// through exec/localcomm (the CUDA driver and a GPU needed, never NCCL);
// launched, NCCL on each rank's stream.
func cudaCheckpoint(o CheckpointOptions, env launch.Env) (hf.Backend, error) {
	dtype := o.DType
	if dtype == "" {
		dtype = "fp32"
	}
	if !slices.Contains(cudaDTypes, dtype) {
		return hf.Backend{}, fmt.Errorf("--dtype %q: the GPU backend computes in fp32, fp16 or bf16", dtype)
	}
	if o.HostWindowBytes < 0 {
		return hf.Backend{}, fmt.Errorf("--host-window %d: must be positive (bytes of float32 tensors read ahead; 0: %d)", o.HostWindowBytes, pcuda.DefaultHostWindowBytes)
	}
	if err := cudaAvailable(); err != nil {
		return hf.Backend{}, fmt.Errorf("the GPU backend cannot run here: %w", err)
	}
	var newComm hf.NewCommFunc
	if env.Source != launch.SourceSingle {
		lib, err := dl.Find(dl.NCCL())
		if err != nil {
			return hf.Backend{}, fmt.Errorf("launched ranks of the GPU backend communicate with NCCL: %w", err)
		}
		lib.Close() // exec/ncclcomm loads it for the process
		newComm = ncclComm
	}
	return pcuda.Checkpoint(pcuda.Options{Device: env.LocalRank, DType: dtype, HostWindowBytes: o.HostWindowBytes}, localcomm.Comms, newComm), nil
}

// ncclComm is rank's NCCL communicator on its GPU Compute's stream.
var ncclComm hf.NewCommFunc = func(ctx context.Context, sess *rendezvous.Session, plan *partition.Plan, rank int, c exec.Compute) (exec.Comm, error) {
	gc, ok := c.(*pcuda.Compute)
	if !ok {
		return nil, fmt.Errorf("the NCCL communicator needs the GPU backend's Compute (got %T)", c)
	}
	return ncclcomm.New(ctx, sess, plan, rank, gc)
}
