package calib

import (
	"bytes"
	"context"
	_ "embed" // seed4-1gpu.toml
	"fmt"
	"math"
	"os"
	"time"

	"github.com/partbench/partbench/cgo/cuda"
	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/backend"
	execlaunch "github.com/partbench/partbench/exec/launch" // "launch" is a local name below
	"github.com/partbench/partbench/hoststat"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// SeedOneGPU names the embedded config of the seed layers at 4 layers on
// one GPU (seed4-1gpu.toml, the single-GPU run of scripts/gpu-check.sh):
// the default shapes of the GPU calibration's GEMMs and op-time table.
const SeedOneGPU = "seed4-1gpu"

//go:embed seed4-1gpu.toml
var seedOneGPUConfig []byte

// loadConfig is configs.Load, and the embedded SeedOneGPU.
func loadConfig(name string) (*configs.Config, error) {
	if name == SeedOneGPU {
		if _, err := os.Stat(name); err != nil { // a file of that name wins
			return configs.Parse(bytes.NewReader(seedOneGPUConfig), SeedOneGPU)
		}
	}
	return configs.Load(name)
}

// The GPU calibration's defaults.
var (
	// DefaultCUDAShapeConfigs are the configs whose GEMM shapes the GPU
	// calibration times: the one-GPU seed run and the seed's two
	// strategies.
	DefaultCUDAShapeConfigs = []string{SeedOneGPU, "tp8pp2", "layerwise16"}
	// DefaultCUDAOpConfigs are the configs whose compute ops are timed into
	// the op-time table through the GPU backend.
	DefaultCUDAOpConfigs = []string{SeedOneGPU}
	// CUDAGEMMDTypes are the dtypes the GEMMs are timed in, one FLOP rate
	// each.
	CUDAGEMMDTypes = []string{"fp16", "bf16", "fp32"}
	// SmallMs are the rows of the small-M sweep (decode batches), timed at
	// every distinct (N, K) of the shape configs in their own dtype.
	SmallMs = []int{1, 2, 4, 8, 16, 32, 64, 128, 256}
)

// GPU sweep sizes.
const (
	// cudaCurveMinBytes and cudaCurveTopBytes bound the L2 curve's working
	// sets (1 MiB to 1 GiB: from well inside any GPU's L2 to 20× an H100's).
	cudaCurveMinBytes = 1 << 20
	cudaCurveTopBytes = 1 << 30
	// cudaCopyBytes is the device-to-device copy timed for the copy
	// bandwidth: 256 MiB each way, 5× an H100's L2.
	cudaCopyBytes = 256 << 20
	// cudaLaunchCalls is the empty kernels per launch sample, and
	// cudaGraphKernels the kernels of the timed graph (as many as a
	// seed-layer decode step launches, in round numbers).
	// cudaGEMMFLOPBudget and cudaGEMMWeightCapBytes bound one timed GEMM
	// (gemmShape.clip): 2^40 FLOPs (about 2 ms in fp16 and 20 ms in fp32 on
	// an H100) and 1 GiB of weights counted at 4 bytes, so the largest
	// prefill shapes (layerwise16's 315,904 rows) are cut in M, never
	// below 128 rows, and every output fits beside the others.
	cudaGEMMFLOPBudget     = 1 << 40
	cudaGEMMWeightCapBytes = 1 << 30
	cudaLaunchCalls        = 1000
	cudaGraphKernels       = 100
	cudaGraphCalls         = 100
)

// cudaCurveSizes are the GPU curve's working sets: cudaCurveMinBytes ×
// 2^(k/2) (quick: 2^k) up to top.
func cudaCurveSizes(top int64, quick bool) []int64 {
	step := 0.5
	if quick {
		step = 1
	}
	var out []int64
	for k := 0; ; k++ {
		s := int64(float64(cudaCurveMinBytes)*math.Pow(2, float64(k)*step)) &^ 127
		if s > top {
			break
		}
		out = append(out, s)
	}
	return out
}

func (o *Options) cudaDefaults() error {
	switch {
	case o.Ranks == 0:
		o.Ranks = 1
	case o.Ranks != 1:
		return fmt.Errorf("--nproc: the GPU calibration measures one GPU (one rank, no link between GPUs; got %d)", o.Ranks)
	}
	if o.Device < 0 {
		return fmt.Errorf("--device: must be a GPU ordinal ≥ 0 (got %d)", o.Device)
	}
	if err := o.sampleDefaults(time.Millisecond); err != nil {
		return err
	}
	if len(o.Configs) == 0 {
		o.Configs = DefaultCUDAShapeConfigs
	}
	if len(o.OpConfigs) == 0 {
		o.OpConfigs = DefaultCUDAOpConfigs
	}
	if o.MaxWorkingSetBytes == 0 {
		o.MaxWorkingSetBytes = cudaCurveTopBytes
	}
	if n := len(cudaCurveSizes(o.MaxWorkingSetBytes, o.Quick)); n < streamPoints+2 {
		return fmt.Errorf("max working set: must give at least %d working sets from %d B (got %d B: %d)", streamPoints+2, cudaCurveMinBytes, o.MaxWorkingSetBytes, n)
	}
	if o.GEMMFLOPBudget == 0 {
		o.GEMMFLOPBudget = cudaGEMMFLOPBudget
	}
	if o.GEMMWeightCapBytes == 0 {
		o.GEMMWeightCapBytes = cudaGEMMWeightCapBytes
	}
	if len(o.OpRanks) == 0 {
		o.OpRanks = []int{1}
	}
	if len(o.OpRanks) != 1 || o.OpRanks[0] != 1 {
		return fmt.Errorf("--op-ranks: the GPU calibration times ops with the GPU to one rank: must be 1 (got %v)", o.OpRanks)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// runCUDA measures one GPU through the registered GPU backend's device
// calibrator (exec/backend's Registry.Calibrator): the L2 curve and HBM
// bandwidth (Calibrator.Read), device copies, GEMMs over the
// Programs' shapes per dtype and a small-M sweep (cuBLAS, the backend's
// call), kernel and graph launches, one-rank NCCL all_reduce latency when
// libnccl loads, and the op-time table of the op configs' Programs through
// the GPU backend's own Compute, timed by its device clock.
func runCUDA(ctx context.Context, o Options, h host) (*configs.Calibration, error) {
	shapes, err := programShapes(o.Configs)
	if err != nil {
		return nil, err
	}
	for i := range shapes {
		shapes[i].clip(o.GEMMFLOPBudget, o.GEMMWeightCapBytes)
	}
	mShapes, err := smallMShapes(o.Configs)
	if err != nil {
		return nil, err
	}
	plans, err := opPlans(o.OpConfigs)
	if err != nil {
		return nil, fmt.Errorf("op times: %w", err)
	}
	opRanks := 0 // the ranks whose ops are timed: each stage's first
	for _, p := range plans {
		opRanks += len(stageRanks(p))
		if d := plans[0].Model.DType; p.Model.DType != d {
			return nil, fmt.Errorf("--op-configs: %s computes in %s, %s in %s; the op times of one calibration are of one dtype", p.Config.Name, p.Model.DType, plans[0].Config.Name, d)
		}
	}
	sizes := cudaCurveSizes(o.MaxWorkingSetBytes, o.Quick)

	cal := &configs.Calibration{
		Spread:   map[string]configs.Spread{},
		Comments: map[string]string{},
		Info: configs.CalibrationInfo{Host: h.name, CPU: h.cpu, Cores: h.cores, Backend: configs.BackendCUDA,
			Date: o.Now().UTC().Format(time.RFC3339), Version: o.Version, Ranks: 1, Repeats: o.Repeats, Quick: o.Quick},
	}
	hostStart, hostOK := hoststat.Read()
	gc, err := Registry().Calibrator(configs.BackendCUDA, backend.CalibratorOptions{Device: o.Device})
	if err != nil {
		return nil, err
	}
	defer gc.Close()
	info := gc.Info()
	ver, path := gc.Driver()
	cal.Info.Device = fmt.Sprintf("%s (sm_%d%d, %d SMs, GPU %d)", info.Name, info.ComputeMajor, info.ComputeMinor, info.SMs, info.Ordinal)
	cal.Info.Driver = fmt.Sprintf("CUDA driver %s (%s)", ver, path)

	total := len(sizes) + 1 + len(CUDAGEMMDTypes)*len(shapes) + len(mShapes) + 1 + 1 + opRanks + 1
	done := 0
	step := func() error {
		done++
		if o.Progress != nil {
			o.Progress(done, total)
		}
		return ctx.Err()
	}
	minS := o.MinSample.Seconds()

	// 1. The L2 curve; its largest working sets give HBM's bandwidth.
	curve := make([]curveRepeat, o.Repeats)
	for r := range curve {
		curve[r] = make(curveRepeat, len(sizes))
	}
	for i, s := range sizes {
		bws, err := gc.Read(s, minS, o.Repeats)
		if err != nil {
			return nil, fmt.Errorf("L2 curve, %d B: %w", s, err)
		}
		for r, bw := range bws {
			curve[r][i] = bw
		}
		if err := step(); err != nil {
			return nil, err
		}
	}
	mem := cacheSpreads(sizes, curve, cal)

	// 2. Device-to-device copies.
	copies, err := gc.Copy(cudaCopyBytes, minS, o.Repeats)
	if err != nil {
		return nil, fmt.Errorf("copy bandwidth: %w", err)
	}
	cal.Spread["hbm_copy_bytes_per_s"] = spreadOf(copies)
	if err := step(); err != nil {
		return nil, err
	}

	// 3. GEMMs: the Programs' shapes in every dtype, F fitted per repeat.
	flops := map[string]float64{}
	for _, dt := range CUDAGEMMDTypes {
		ds := withElem(shapes, dt)
		times := make([][]float64, len(ds))
		for i, s := range ds {
			if times[i], err = gc.GEMM(dt, s.mm, s.mn, s.k, minS, o.Repeats); err != nil {
				return nil, fmt.Errorf("GEMM %s %d×%d×%d (%s): %w", dt, s.mm, s.mn, s.k, s.source, err)
			}
			if err := step(); err != nil {
				return nil, err
			}
		}
		f, fs := fitRepeats(ds, times, mem, o.Repeats, cal, dt)
		flops[dt] = f
		cal.Spread[dt+"_flops_per_s"] = spreadOf(fs)
		for i, s := range ds {
			cal.GEMM = append(cal.GEMM, gemmSample(s, dt, times[i], f, mem))
		}
	}
	// The small-M sweep in each shape's own dtype, against that dtype's F.
	for _, s := range mShapes {
		ts, err := gc.GEMM(s.dtype, s.mm, s.mn, s.k, minS, o.Repeats)
		if err != nil {
			return nil, fmt.Errorf("GEMM %s %d×%d×%d (%s): %w", s.dtype, s.mm, s.mn, s.k, s.source, err)
		}
		cal.GEMM = append(cal.GEMM, gemmSample(s.gemmShape, s.dtype, ts, flops[s.dtype], mem))
		if err := step(); err != nil {
			return nil, err
		}
	}

	// 4. Launches: empty kernels one by one, and from a graph.
	devL, hostL, err := gc.Launch(cudaLaunchCalls, o.Repeats)
	if err != nil {
		return nil, fmt.Errorf("kernel launch: %w", err)
	}
	launch := make([]float64, len(devL))
	for i := range devL {
		launch[i] = max(devL[i], hostL[i]) // whichever side is slower paces kernels launched one by one
	}
	cal.Spread["kernel_launch_s"] = spreadOf(launch)
	graphKernel, graphLaunch, err := gc.GraphLaunch(cudaGraphKernels, cudaGraphCalls, o.Repeats)
	if err != nil {
		return nil, fmt.Errorf("graph launch: %w", err)
	}
	cal.Spread["graph_kernel_s"] = spreadOf(graphKernel)
	cal.Spread["graph_launch_s"] = spreadOf(graphLaunch)
	note(cal, "kernel launch: an empty kernel takes %.3g s of device time back to back and %.3g s of host time to enqueue (medians); kernel_launch_s is the larger, per repeat",
		medianOf(devL), medianOf(hostL))
	if err := step(); err != nil {
		return nil, err
	}

	// 5. One-rank NCCL all_reduce, when libnccl loads.
	if lat, why, err := ncclLatency(gc, minS, o.Repeats); err != nil {
		return nil, err
	} else if why != "" {
		note(cal, "one-rank NCCL all_reduce latency skipped: %s", why)
	} else {
		cal.Spread["nccl_all_reduce_s"] = spreadOf(lat)
	}
	if err := step(); err != nil {
		return nil, err
	}

	free, totalMem, err := gc.MemInfo()
	if err != nil {
		return nil, err
	}
	cal.Hardware = topology.GPU{
		Name:          info.Name,
		FP32FLOPsPerS: flops["fp32"], FP16FLOPsPerS: flops["fp16"], BF16FLOPsPerS: flops["bf16"],
		HBMBytes: totalMem, HBMReservedBytes: max(0, min(totalMem-free, totalMem-1)), HBMBytesPerS: mem.streamBytesPerS,
		L2Bytes: int64(mem.l2Bytes), L2UsableFraction: 1, L2BytesPerS: mem.l2BytesPerS,
		SMs: info.SMs, SharedMemPerSM: info.SharedPerSMBytes,
		KernelLaunchS:     spreadOf(launch).Median,
		ComputeEfficiency: 1, HBMEfficiency: 1,
		CUDAGraphs:   true,
		GraphLaunchS: spreadOf(graphLaunch).Median, GraphKernelS: spreadOf(graphKernel).Median,
	}
	cal.Topology = topology.Topology{Name: "one-gpu", Nodes: 1, GPUsPerNode: 1}
	cudaComments(cal, info, o, len(shapes), len(mShapes), sizes)
	if err := cal.Validate(); err != nil {
		return nil, fmt.Errorf("calibration: measured figures are not a valid profile: %w", err)
	}

	// 6. The op-time table through the GPU backend's own compute path: its
	// untimed Compute (Registry.UntimedCompute), the table's marks time the
	// ops.
	newCompute := o.NewCompute
	if newCompute == nil {
		nc, err := Registry().UntimedCompute(configs.BackendCUDA, execlaunch.Env{LocalRank: o.Device})
		if err != nil {
			return nil, fmt.Errorf("op times: %w", err)
		}
		newCompute = nc
	}
	hold := func(c pexec.Compute, d time.Duration) error {
		dc, ok := c.(deviceStream)
		if !ok {
			return nil // a Compute with no stream (a test's): timed without a hold
		}
		return gc.Hold(dc.Stream(), d)
	}
	// A config of several ranks is timed one rank per stage, on this one
	// GPU: each rank's compute as it runs on a GPU of its own (and as
	// `run --emulate-ranks` plays the ranks in turn on one device); its
	// communication is not timed here.
	ts, err := measureOpTimesBlocks(ctx, plans, 1, opIterationsPerRepeat*o.Repeats, blockOpts{ranks: stageRanks}, newCompute, hold, step)
	if err != nil {
		return nil, err
	}
	cal.OpTimes = ts
	if len(plans) > 0 {
		cal.Info.OpTimeDType = plans[0].Model.DType
	}

	// 7. The decode graph against the table, and the host's share of a
	// decode step: every op config run as a run runs it (decode graphs),
	// each step timed on the device and on the host against its ops'
	// times in the table.
	if err := graphStepFigures(ctx, o, plans, hold, cal); err != nil {
		return nil, err
	}
	measureEngineLaunch(ctx, o, cal) // cudaengine.go: the serving engine's host cost per launch
	if err := step(); err != nil {
		return nil, err
	}
	if err := cal.Validate(); err != nil {
		return nil, fmt.Errorf("calibration: measured figures are not a valid profile: %w", err)
	}
	if err := configs.ValidateOpTimes("op_time", cal.OpTimes); err != nil {
		return nil, fmt.Errorf("calibration: measured op times: %w", err)
	}
	judgeCalibration(cal, hostWindow(cal, hostStart, hostOK))
	return cal, nil
}

// deviceStream is a Compute that queues its ops on a device stream (the GPU
// backend's): the op-time table holds the device on that stream before each
// timed op (Calibrator.Hold).
type deviceStream interface {
	Stream() cuda.Stream
}

// cacheSpreads fills the curve samples and the memory figures' spreads
// from the repeats of the curve and returns the medians (the CPU's
// measureCache and the GPU's calibration alike).
func cacheSpreads(sizes []int64, curve []curveRepeat, cal *configs.Calibration) memFigures {
	var streams, l2bws []float64
	var l2s []int64
	for r, bw := range curve {
		stream, l2, l2bw, err := cacheFigures(sizes, bw)
		if err != nil {
			note(cal, "repeat %d: %v", r, err)
		}
		streams, l2s, l2bws = append(streams, stream), append(l2s, l2), append(l2bws, l2bw)
	}
	for i, s := range sizes {
		var bws []float64
		for r := range curve {
			bws = append(bws, curve[r][i])
		}
		sp := spreadOf(bws)
		cal.Cache = append(cal.Cache, configs.CacheSample{Bytes: s, BytesPerSMin: sp.Min, BytesPerSMedian: sp.Median, BytesPerSMax: sp.Max,
			ReuseOverStream: sp.Median / medianOf(streams)})
	}
	l2Spread := make([]float64, len(l2s))
	for i, v := range l2s {
		l2Spread[i] = float64(v)
	}
	cal.Spread["hbm_bytes_per_s"] = spreadOf(streams)
	cal.Spread["l2_bytes"] = spreadOf(l2Spread)
	cal.Spread["l2_bytes_per_s"] = spreadOf(l2bws)
	return memFigures{streamBytesPerS: medianOf(streams), l2Bytes: float64(lowerMedianInt(l2s)), l2BytesPerS: medianOf(l2bws)}
}

// elemBytes are the GPU backend's element sizes by dtype.
var elemBytes = map[string]int{"fp16": 2, "bf16": 2, "fp32": 4}

// withElem is shapes in dtype's element size.
func withElem(shapes []gemmShape, dtype string) []gemmShape {
	out := make([]gemmShape, len(shapes))
	for i, s := range shapes {
		s.elem = elemBytes[dtype]
		out[i] = s
	}
	return out
}

// fitRepeats fits F per repeat (the median per-shape rate where the memory
// terms alone reach the times, with a note) and returns the median and
// the per-repeat values.
func fitRepeats(shapes []gemmShape, times [][]float64, mem memFigures, repeats int, cal *configs.Calibration, dtype string) (float64, []float64) {
	var fs []float64
	for r := 0; r < repeats; r++ {
		t := make([]float64, len(shapes))
		for i := range shapes {
			t[i] = times[i][r]
		}
		f, ok := fitFLOPs(shapes, t, mem)
		if !ok {
			var rates []float64
			for i, s := range shapes {
				rates = append(rates, s.flops()/t[i])
			}
			f = medianOf(rates)
			note(cal, "repeat %d: the memory terms alone reach the measured %s GEMM times; %s_flops_per_s is the median per-shape rate instead of a fit", r, dtype, dtype)
		}
		fs = append(fs, f)
	}
	return medianOf(fs), fs
}

// gemmSample is one timed shape's row of the file.
func gemmSample(s gemmShape, dtype string, times []float64, flops float64, mem memFigures) configs.GEMMSample {
	sp := spreadOf(times)
	return configs.GEMMSample{Source: s.source, DType: dtype, M: s.m, N: s.n, K: s.k, MeasuredM: s.mm, MeasuredN: s.mn,
		FLOPs: int64(s.flops()), TimeMinS: sp.Min, TimeMedianS: sp.Median, TimeMaxS: sp.Max,
		FLOPsPerS: s.flops() / sp.Median, ModelTimeS: rooflineS(s, flops, mem)}
}

// smallMShape is one (M, N, K) of the small-M sweep, in its config's dtype.
type smallMShape struct {
	gemmShape
	dtype string
}

// smallMShapes are SmallMs at every distinct (N, K, dtype) of the
// configs' Programs' GEMMs, in order of first appearance.
func smallMShapes(names []string) ([]smallMShape, error) {
	type key struct {
		n, k  int
		dtype string
	}
	seen := map[key]bool{}
	var out []smallMShape
	for _, name := range names {
		cfg, err := loadConfig(name)
		if err != nil {
			return nil, err
		}
		dt := cfg.Model.DType
		if _, ok := elemBytes[dt]; !ok {
			continue // a dtype the GPU backend does not compute in
		}
		shapes, err := programShapes([]string{name})
		if err != nil {
			return nil, err
		}
		for _, s := range shapes {
			k := key{s.n, s.k, dt}
			if seen[k] {
				continue
			}
			seen[k] = true
			for _, m := range SmallMs {
				out = append(out, smallMShape{gemmShape{source: fmt.Sprintf("small-M sweep, n and k of %s", s.source),
					m: m, n: s.n, k: s.k, mm: m, mn: s.n, elem: elemBytes[dt]}, dt})
			}
		}
	}
	return out, nil
}

// cudaComments says, beside every figure of the written file, where it
// came from.
func cudaComments(cal *configs.Calibration, info cuda.DeviceInfo, o Options, shapes, small int, sizes []int64) {
	c := cal.Comments
	c["hardware.name"] = "the CUDA driver's device name"
	for _, dt := range CUDAGEMMDTypes {
		c["hardware."+dt+"_flops_per_s"] = fmt.Sprintf("measured: cublasGemmEx (the GPU backend's call, fp32 accumulation) in %s over %d GEMM shapes of %v; roofline fit per repeat, median", dt, shapes, o.Configs)
	}
	c["hardware.fp8_flops_per_s"] = "not measured: the GPU backend computes in fp16, bf16 or fp32"
	c["hardware.hbm_bytes"] = "the device's memory (cuMemGetInfo)"
	c["hardware.hbm_reserved_bytes"] = "memory not free when calibrated (cuMemGetInfo: total − free)"
	n := len(cal.Cache)
	c["hardware.hbm_bytes_per_s"] = fmt.Sprintf("measured: pb_cal_read of working sets of %d to %d B (the curve's %d largest) read back to back, median", cal.Cache[n-streamPoints].Bytes, cal.Cache[n-1].Bytes, streamPoints)
	c["hardware.l2_bytes"] = fmt.Sprintf("measured: largest working set of the curve still read ≥ %.2f× faster than HBM, median (the device reports %d B)", reusePays, info.L2Bytes)
	c["hardware.l2_usable_fraction"] = "all of it"
	c["hardware.l2_bytes_per_s"] = "measured: median read bandwidth of working sets in (l2_bytes/4, l2_bytes]"
	c["hardware.sms"] = "the device's multiprocessors"
	c["hardware.shared_mem_per_sm_bytes"] = "the device's shared memory per multiprocessor"
	c["hardware.kernel_launch_s"] = fmt.Sprintf("measured: %d empty kernels launched one by one, per kernel the larger of device and host time, median", cudaLaunchCalls)
	c["hardware.compute_efficiency"] = "1: the FLOP rates are achieved rates"
	c["hardware.hbm_efficiency"] = "1: hbm_bytes_per_s is an achieved rate"
	c["hardware.cuda_graphs"] = "the GPU backend runs decode steps as CUDA graphs"
	c["hardware.graph_launch_s"] = fmt.Sprintf("measured: host time of one launch of a graph of %d empty kernels, median", cudaGraphKernels)
	c["hardware.graph_kernel_s"] = "measured: device time per kernel inside that graph, median"
	c["topology.name"] = "one GPU: no link measured"
	c["spread.fp32_flops_per_s"] = "the fit of each repeat"
	c["spread.fp16_flops_per_s"] = "the fit of each repeat"
	c["spread.bf16_flops_per_s"] = "the fit of each repeat"
	c["spread.hbm_bytes_per_s"] = "each repeat's streaming points"
	c["spread.hbm_copy_bytes_per_s"] = fmt.Sprintf("each repeat: cuMemcpyDtoDAsync of %d B, read + write bytes per second", cudaCopyBytes)
	c["spread.l2_bytes"] = "each repeat's curve"
	c["spread.l2_bytes_per_s"] = "each repeat's curve"
	c["spread.kernel_launch_s"] = "each repeat"
	c["spread.graph_launch_s"] = "each repeat"
	c["spread.graph_kernel_s"] = "each repeat"
	c["spread.nccl_all_reduce_s"] = "each repeat: one float32 all_reduce in place on a one-rank communicator, back to back on the stream"
	note(cal, "GPU calibration sweeps: L2 curve %d working sets from %d to %d B; GEMMs %d shapes × %d dtypes and a small-M sweep of %d; %d repeats of samples of at least %v each", len(sizes), sizes[0], sizes[len(sizes)-1], shapes, len(CUDAGEMMDTypes), small, o.Repeats, o.MinSample)
}

// graphStepFigures measures every op config's decode steps run through a
// GPU Compute with decode graphs, as a run makes it (measureGraphSteps),
// and sets from them graph_op_saved_s — what a decode graph saves per op
// against the op-time table — and step_overhead_s, the host's share of a
// step: each the median over the configs' figures (a config's figure the
// median over its iterations), step_overhead_s 0 where negative. Each
// config's figures are in the notes, their spread in [spread] (over the
// configs for graph_op_saved_s, over every config's iterations for
// step_overhead_s). A config with no decode step is left out, with a note.
func graphStepFigures(ctx context.Context, o Options, plans []*partition.Plan, hold Hold, cal *configs.Calibration) error {
	table := sim.NewOpTable(cal.OpTimes)
	var saved, over, hostOp []float64 // saved: one per config; over, hostOp: every config's iterations
	var names []string
	for _, plan := range plans {
		name := plan.Config.Name
		if plan.Config.Workload.OutputTokens < 2 {
			note(cal, "decode graph: %s has no decode step: not measured", name)
			continue
		}
		if n := len(plan.Ranks); n > 1 {
			note(cal, "decode graph: %s has %d ranks, whose decode steps wait on each other's communication: not measured (its ops are in the op-time table)", name, n)
			continue
		}
		c, err := deviceCompute(configs.BackendCUDA, o.Device, plan, 0) // the registered GPU backend's: decode graphs, as a run
		if err != nil {
			return fmt.Errorf("decode graph steps: %w", err)
		}
		start := time.Now()
		gs, err := measureGraphSteps(ctx, plan, c, table, cal.Hardware.GraphLaunchS, stepIterations, hold,
			func() time.Duration { return time.Since(start) })
		if cerr := c.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if gs.missing > 0 {
			note(cal, "decode graph: %d op(s) of a %s decode step have no op time (their device time read 0): they count 0 and nothing is taken off them", gs.missing, name)
		}
		names = append(names, name)
		over = append(over, gs.over...)
		hostOp = append(hostOp, gs.hostOp...)
		if len(gs.hostOp) > 0 {
			hs := spreadOf(gs.hostOp)
			note(cal, "eager prefill: %s: the host queued one compute op in %.3g s (iterations %.3g to %.3g s)", name, hs.Median, hs.Min, hs.Max)
		}
		ov := spreadOf(gs.over)
		if len(gs.saved) == 0 {
			note(cal, "decode graph: %s: no device clock or no decode op in the table, graph_op_saved_s not measured; the host's share of a step %.3g s (iterations %.3g to %.3g s)", name, ov.Median, ov.Min, ov.Max)
			continue
		}
		sv := spreadOf(gs.saved)
		saved = append(saved, sv.Median)
		note(cal, "decode graph: %s: a step's %d ops in the table sum to %.4g s more than the step as one graph, %.3g s per op (iterations %.3g to %.3g s); the host's share of a step %.3g s (iterations %.3g to %.3g s)",
			name, gs.ops, sv.Median*float64(gs.ops), sv.Median, sv.Min, sv.Max, ov.Median, ov.Min, ov.Max)
	}
	if len(over) == 0 {
		note(cal, "step_overhead_s not measured: no op config has a decode step")
		return nil
	}
	if len(hostOp) > 0 {
		hs := spreadOf(hostOp)
		cal.Spread["host_op_s"] = hs
		cal.Hardware.HostOpS = min(max(0, hs.Median), topology.MaxKernelLaunch)
		cal.Comments["hardware.host_op_s"] = fmt.Sprintf("measured: the prefill of %v queued op by op through the executor's own loop with a run's bookkeeping of each op, the host's time from its first op's launch to its last's return over its compute ops, median; sim starts a pass's i-th op of an eager pass no earlier than i × this after the pass's start", names)
		cal.Comments["spread.host_op_s"] = "every op config's iterations"
	}
	sp := spreadOf(over)
	cal.Spread["step_overhead_s"] = sp
	cal.Hardware.StepOverheadS = max(0, sp.Median)
	cal.Comments["hardware.step_overhead_s"] = fmt.Sprintf("measured: %v run as a run runs them (decode graphs, a sync after each pass), a decode step's wall time less its ops as the graph runs them (the step held and timed on the device) and one graph launch, median (0 when negative)", names)
	cal.Comments["spread.step_overhead_s"] = "each op config's iterations, each the median over its decode steps"
	if sp.Median < 0 {
		note(cal, "step_overhead_s: the decode steps of %v ran %.3g s faster on the host than on the device less a graph launch: 0 is used", names, -sp.Median)
	}
	if len(saved) > 0 {
		ss := spreadOf(saved)
		cal.Spread["graph_op_saved_s"] = ss
		cal.Hardware.GraphOpSavedS = min(max(0, ss.Median), topology.MaxKernelLaunch)
		cal.Comments["hardware.graph_op_saved_s"] = fmt.Sprintf("measured: each decode step of %v held on the device and timed as one graph against its ops' times in the op-time table, (table − graph) / ops, median over the configs (each the median of its iterations); sim takes it off each decode op the table prices", names)
		cal.Comments["spread.graph_op_saved_s"] = "each op config's figure (notes)"
		if ss.Median < 0 {
			note(cal, "graph_op_saved_s: the decode graphs took %.3g s per op longer than the table's ops: 0 is used", -ss.Median)
		}
	}
	return nil
}
