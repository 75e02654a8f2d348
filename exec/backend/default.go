package backend

import (
	"context"
	"fmt"
	"os"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/cgo/dl"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	pcuda "github.com/partbench/partbench/exec/cuda"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/localcomm"
	"github.com/partbench/partbench/exec/ncclcomm"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/exec/tcpcomm"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// CPUMaxRankBytes is the most memory one rank of the CPU backend may hold:
// it is for small models (configs/test), not for the seed's.
const CPUMaxRankBytes = 8 << 30

// Default is the registry partbench runs with: the GPU backend first (the
// one "auto" chooses when a CUDA driver sees a GPU), then the CPU backend
// (chosen by name only for runs, and the reference of every check).
func Default() *Registry {
	return &Registry{backends: []Backend{CUDA(), CPU()}}
}

// CPU is exec/cpu (float32, gonum BLAS) with the TCP communicator.
func CPU() Backend {
	return Backend{
		Name:      configs.BackendCPU,
		Reference: true,
		Adapt: func(cfg *configs.Config) []string {
			if cfg.Model.DType == "fp32" {
				return nil
			}
			note := fmt.Sprintf("the CPU backend computes in fp32: the config's %s is run (and modeled) as fp32", cfg.Model.DType)
			cfg.Model.DType = "fp32"
			return []string{note}
		},
		Admit: func(plan *partition.Plan) error {
			for _, r := range plan.Ranks {
				if r.Memory.TotalBytes > CPUMaxRankBytes {
					return fmt.Errorf("--backend cpu: rank %d would hold %.1f GB (weights, KV cache, activations); the CPU backend is for small models — use a test config (configs/test/) or a GPU backend",
						r.Rank, float64(r.Memory.TotalBytes)/1e9)
				}
			}
			return nil
		},
		New: func(launch.Env) (Rank, error) {
			return Rank{
				NewCompute: newCPUCompute,
				NewComm:    TCPComm,
			}, nil
		},
		Check: func(string) exec.CheckOptions {
			return exec.CheckOptions{NewCompute: newCPUCompute, NewComms: localcomm.Comms}
		},
		Checkpoint: cpuCheckpoint, // checkpoint.go
		Inputs: func(in *model.Inputs) NewComputeFunc {
			return func(p *partition.Plan, rank int) (exec.Compute, error) {
				return cpu.NewWith(p, rank, cpu.Options{Inputs: in})
			}
		},
	}
}

// TCPComm is the CPU backend's communicator: rank's exec/tcpcomm endpoint
// among the plan's ranks, its addresses exchanged through sess.
func TCPComm(ctx context.Context, sess *rendezvous.Session, p *partition.Plan, rank int, _ exec.Compute) (exec.Comm, error) {
	return tcpcomm.New(ctx, sess, rank, p.Size(), "")
}

// TCPCommWith is TCPComm with the transport of same-host pairs chosen
// (`partbench run --transport`): shared memory, TCP, or auto.
func TCPCommWith(t tcpcomm.Transport) NewCommFunc {
	return func(ctx context.Context, sess *rendezvous.Session, p *partition.Plan, rank int, _ exec.Compute) (exec.Comm, error) {
		return tcpcomm.NewWith(ctx, sess, rank, p.Size(), tcpcomm.Options{Transport: t})
	}
}

func newCPUCompute(p *partition.Plan, rank int) (exec.Compute, error) { return cpu.New(p, rank) }

// CUDA is exec/cuda on the rank's local GPU, with decode graphs, and the
// NCCL communicator (exec/ncclcomm) queued on that Compute's stream.
func CUDA() Backend {
	return Backend{
		Name:   configs.BackendCUDA,
		Auto:   true,
		Probe:  cudaAvailable,
		Adapt:  cudaRuntime,
		New:    cudaRank,
		Device: cudaDevice,
		Check:  cudaCheckOptions,
		// checkpoint.go
		Checkpoint: cudaCheckpoint,
		L2Probe:    cudaL2Probe,
		// calibrator.go
		Calibrator: cudaCalibrator,
		Untimed:    cudaUntimed,
		Launches:   cudaLaunchCounter, // launches.go
	}
}

// cudaL2Probe is exec/cuda's L2Probe on o.Device.
func cudaL2Probe(o L2ProbeOptions) (L2Prober, error) {
	p, err := pcuda.NewL2Probe(o)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// CUDARuntime is the runtime profile (configs/runtime) that prices exec/cuda's
// own host costs: a run on the GPU backend is modeled with it unless the
// config names a [runtime] or a calibration replaced the hardware.
const CUDARuntime = "partbench-cuda"

// cudaRuntime puts CUDARuntime on a config that names no runtime and still
// has a hardware preset: the preset's host costs are another engine's (the
// step overhead of the NeMo runtime the presets were fitted with), not those
// of the executor that runs here.
func cudaRuntime(cfg *configs.Config) []string {
	if cfg.Runtime.Set() || cfg.Hardware.Preset == "" {
		return nil
	}
	r, err := configs.LoadRuntime(CUDARuntime)
	if err == nil {
		err = cfg.SetRuntime(r)
	}
	if err != nil {
		return []string{fmt.Sprintf("the %s runtime profile could not be applied (%v): the model keeps the hardware preset's host costs", CUDARuntime, err)}
	}
	return []string{fmt.Sprintf("host costs are modeled with the %s runtime profile (exec/cuda's own: %s step overhead, CUDA graphs %t); a [runtime] in the config or --calibration replaces it",
		CUDARuntime, fmtSeconds(r.StepOverheadS), r.CUDAGraphs)}
}

// fmtSeconds writes a short duration in ms or µs.
func fmtSeconds(s float64) string {
	if s >= 1e-3 {
		return fmt.Sprintf("%.3g ms", s*1e3)
	}
	return fmt.Sprintf("%.3g µs", s*1e6)
}

// cudaRank returns the GPU backend's constructors for the rank of env. It
// fails at once, before any rank joins, when NCCL cannot be found.
func cudaRank(env launch.Env) (Rank, error) {
	lib, err := dl.Find(dl.NCCL())
	if err != nil {
		return Rank{}, fmt.Errorf("the GPU backend communicates with NCCL: %w", err)
	}
	lib.Close() // exec/ncclcomm loads it for the process
	return Rank{
		NewCompute: func(plan *partition.Plan, rank int) (exec.Compute, error) {
			return pcuda.New(plan, rank, pcuda.Options{Device: env.LocalRank, Graphs: true})
		},
		NewComm: func(ctx context.Context, sess *rendezvous.Session, plan *partition.Plan, rank int, c exec.Compute) (exec.Comm, error) {
			gc, ok := c.(*pcuda.Compute)
			if !ok {
				return nil, fmt.Errorf("the NCCL communicator needs the GPU backend's Compute (got %T)", c)
			}
			return ncclcomm.New(ctx, sess, plan, rank, gc)
		},
	}, nil
}

// cudaDevice returns the constructor of a GPU Compute on env's local GPU
// that communicates with no other rank: it needs the CUDA driver and a GPU
// (cudaAvailable, whose error names the driver searched for), never NCCL.
func cudaDevice(env launch.Env) (NewComputeFunc, error) {
	if err := cudaAvailable(); err != nil {
		return nil, fmt.Errorf("the GPU backend needs the CUDA driver and a GPU: %w", err)
	}
	return func(plan *partition.Plan, rank int) (exec.Compute, error) {
		return pcuda.New(plan, rank, pcuda.Options{Device: env.LocalRank, Graphs: true})
	}, nil
}

// cudaCheckOptions are exec.Check's options on the GPU: the partitioned
// plan on GPU 0 in dtype ("" or fp32: exec.Check's fp32 plans; fp16, bf16),
// every rank in this process through exec/localcomm staged via the host,
// against exec/cpu, with cuda.Tolerance(dtype).
func cudaCheckOptions(dtype string) exec.CheckOptions {
	ref := func(p *partition.Plan, rank int) (exec.Compute, error) { return cpu.New(p, rank) }
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
