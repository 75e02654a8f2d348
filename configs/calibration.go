package configs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/topology"
)

// Calibration is a hardware profile measured on one machine by
// `partbench calibrate`: a [hardware] section in the schema of the hardware
// presets, a [topology] section whose intra-node link is the path the ranks
// used, and the evidence behind every figure (spreads over repeats, the
// per-shape GEMM table, the cache curve and the communication samples).
type Calibration struct {
	Hardware topology.GPU      `toml:"hardware"`
	Topology topology.Topology `toml:"topology"`
	// Spread holds min/median/max over repeats of every measured figure, keyed
	// by the figure's name (see SpreadKeys).
	Spread map[string]Spread `toml:"spread"`
	Info   CalibrationInfo   `toml:"calibration"`
	GEMM   []GEMMSample      `toml:"gemm"`
	Cache  []CacheSample     `toml:"cache"`
	Comm   []CommSample      `toml:"comm"`
	Ops    []OpSample        `toml:"op"`
	// OpTimes is the op-time table sim prices ops from (Apply copies it into
	// the config's hardware).
	OpTimes []OpTime `toml:"op_time"`
	// Remote is the per-request overhead of partbench's remote server on
	// this host (nil in calibrations that did not measure it).
	Remote *RemoteCalibration `toml:"remote"`
	// Engine is the host cost of the GPU serving engine's launches
	// (calibration_engine.go; nil in calibrations that did not measure it).
	Engine *EngineCalibration `toml:"engine"`

	// Source is the file it was loaded from.
	Source string `toml:"-"`
	// Comments, keyed like Spread or by a hardware/topology key
	// ("hardware.sms", "topology.intra_node.latency_s"), are written after the
	// key's value by WriteTOML; they are not read back.
	Comments map[string]string `toml:"-"`
}

// CalibrationInfo says where and how a calibration was measured.
type CalibrationInfo struct {
	Host    string `toml:"host"`
	CPU     string `toml:"cpu"`
	Cores   int    `toml:"cores"`
	Backend string `toml:"backend"`
	// Date is RFC 3339.
	Date    string `toml:"date"`
	Version string `toml:"version"`
	// Device and Driver name the GPU a cuda calibration measured and the
	// CUDA driver (empty on the CPU).
	Device string `toml:"device,omitempty"`
	Driver string `toml:"driver,omitempty"`
	// OpTimeDType is the element type a GPU calibration's op times were
	// measured in ("" on the CPU, whose backend computes every dtype in
	// float32): Apply leaves them out of a config in another dtype.
	OpTimeDType string `toml:"op_time_dtype,omitempty"`
	// OpTimeProcesses says the compute op times at more than one rank were
	// measured by that many process ranks at once, as a run's local ranks
	// share the host (false: goroutines of one process, a profile of an
	// older partbench): Apply then prices compute at the config's ranks
	// per host from them.
	OpTimeProcesses bool `toml:"op_time_processes,omitempty"`
	// Ranks is how many ranks the communication figures were measured among.
	Ranks   int  `toml:"ranks"`
	Repeats int  `toml:"repeats"`
	Quick   bool `toml:"quick"`
	// Notes are caveats found while measuring.
	Notes []string `toml:"notes"`
	// LoadAverage is the machine's 1-minute load average (/proc/loadavg)
	// when the calibration started and when it ended: figures measured on
	// a busy machine describe that load, not the machine.
	LoadAverage []float64 `toml:"load_average,omitempty"`
	// Warnings are what makes this calibration doubtful (a busy machine, an
	// op check beyond 1.5×); calibrate prints them on stderr too.
	Warnings []string `toml:"warnings,omitempty"`
}

// RemoteCalibration is what a remote request costs besides the link and
// the compute (sim.RemoteOptions.RequestOverheadS), measured as stateful
// decode steps of Config over loopback on Transport: wall − execute −
// payload / loopback bandwidth − 2 × loopback latency, the median.
type RemoteCalibration struct {
	RequestOverheadS float64 `toml:"request_overhead_s"`
	Transport        string  `toml:"transport"`
	Config           string  `toml:"config"`
	Samples          int     `toml:"samples"`
}

// Spread is the minimum, median and maximum of a figure over N repeats.
type Spread struct {
	Min    float64 `toml:"min"`
	Median float64 `toml:"median"`
	Max    float64 `toml:"max"`
	N      int     `toml:"n"`
}

// GEMMSample is one GEMM shape of a Program, timed through the CPU backend's
// sgemm. M, N, K are the Program's shape; MeasuredM and MeasuredN the shape
// actually timed (smaller when the Program's would exceed the time or memory
// budget).
type GEMMSample struct {
	Source string `toml:"source"`
	// DType is the element type a GPU calibration timed the shape in (""
	// on the CPU, which computes in float32).
	DType       string  `toml:"dtype,omitempty"`
	M           int     `toml:"m"`
	N           int     `toml:"n"`
	K           int     `toml:"k"`
	MeasuredM   int     `toml:"measured_m"`
	MeasuredN   int     `toml:"measured_n"`
	FLOPs       int64   `toml:"flops"`
	TimeMinS    float64 `toml:"time_min_s"`
	TimeMedianS float64 `toml:"time_median_s"`
	TimeMaxS    float64 `toml:"time_max_s"`
	FLOPsPerS   float64 `toml:"flops_per_s"`
	// ModelTimeS is the roofline time of the measured shape with the
	// calibrated figures.
	ModelTimeS float64 `toml:"model_time_s"`
}

// CacheSample is one point of the working-set curve: the read bandwidth of a
// buffer of Bytes read again and again.
type CacheSample struct {
	Bytes           int64   `toml:"bytes"`
	BytesPerSMin    float64 `toml:"bytes_per_s_min"`
	BytesPerSMedian float64 `toml:"bytes_per_s_median"`
	BytesPerSMax    float64 `toml:"bytes_per_s_max"`
	ReuseOverStream float64 `toml:"reuse_over_stream"`
}

// CommSample is one communication size: all_reduce or all_gather over
// Ranks ranks (all_gather: Bytes the gathered output), or sendrecv (one-way
// time of a ping-pong between two ranks); CommOps lists the ops.
type CommSample struct {
	Op          string  `toml:"op"`
	Ranks       int     `toml:"ranks"`
	Bytes       int64   `toml:"bytes"`
	TimeMinS    float64 `toml:"time_min_s"`
	TimeMedianS float64 `toml:"time_median_s"`
	TimeMaxS    float64 `toml:"time_max_s"`
	// ModelTimeS, Algo and Proto are the collective model's answer with the
	// calibrated link.
	ModelTimeS float64             `toml:"model_time_s"`
	Algo       commcount.Algorithm `toml:"algo"`
	Proto      string              `toml:"proto"`
}

// OpSample is the time of every op of one kind in one phase of a one-rank
// config's Programs: measured through the CPU backend (sum of per-op
// medians) and modeled with the calibrated profile.
type OpSample struct {
	Config    string  `toml:"config"`
	Phase     string  `toml:"phase"`
	Kind      string  `toml:"kind"`
	Calls     int     `toml:"calls"`
	MeasuredS float64 `toml:"measured_s"`
	ModelS    float64 `toml:"model_s"`
}

// CPUSpreadKeys are the figures a CPU calibration measures, each with a
// spread; CUDASpreadKeys a GPU calibration's (nccl_all_reduce_s only where
// libnccl loads); SpreadKeys every figure a file may hold.
var (
	CPUSpreadKeys = []string{
		"fp32_flops_per_s", "hbm_bytes_per_s", "l2_bytes", "l2_bytes_per_s", "kernel_launch_s",
		"link_bytes_per_s", "link_latency_s", "remote_request_overhead_s",
	}
	CUDASpreadKeys = []string{
		"fp32_flops_per_s", "fp16_flops_per_s", "bf16_flops_per_s", "hbm_bytes_per_s", "hbm_copy_bytes_per_s",
		"l2_bytes", "l2_bytes_per_s", "kernel_launch_s", "graph_launch_s", "graph_kernel_s", "nccl_all_reduce_s", "step_overhead_s",
		"graph_op_saved_s", "host_op_s",
	}
	SpreadKeys = append(slices.Clone(CPUSpreadKeys),
		"fp16_flops_per_s", "bf16_flops_per_s", "hbm_copy_bytes_per_s", "graph_launch_s", "graph_kernel_s", "nccl_all_reduce_s", "step_overhead_s", "graph_op_saved_s", "host_op_s")
)

// Calibration backends.
const (
	BackendCPU  = "cpu"
	BackendCUDA = "cuda"
)

// LoadCalibration reads a calibration file strictly (unknown keys are errors
// naming their path) and validates it.
func LoadCalibration(path string) (*Calibration, error) {
	data, err := readFile(path, "calibration")
	if err != nil {
		return nil, err
	}
	return ParseCalibration(bytes.NewReader(data), path)
}

// ParseCalibration decodes and validates a calibration; source names the
// input in errors.
func ParseCalibration(r io.Reader, source string) (*Calibration, error) {
	data, err := readBounded(r, source, "calibration")
	if err != nil {
		return nil, err
	}
	var c Calibration
	if _, err := decodeStrict(data, &c, source); err != nil {
		return nil, err
	}
	c.Source = source
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return &c, nil
}

// Validate checks the hardware and topology as a config's are checked, and
// every spread.
func (c *Calibration) Validate() error {
	var errs []error
	if err := c.Hardware.Validate("hardware"); err != nil {
		errs = append(errs, err)
	}
	if err := c.Topology.Validate("topology"); err != nil {
		errs = append(errs, err)
	}
	switch c.Info.Backend {
	case BackendCPU, BackendCUDA:
	default:
		errs = append(errs, fmt.Errorf("calibration.backend: must be %q or %q (got %q)", BackendCPU, BackendCUDA, c.Info.Backend))
	}
	if c.Info.Ranks != c.Topology.Size() {
		errs = append(errs, fmt.Errorf("calibration.ranks: must equal topology nodes × gpus_per_node = %d (got %d)", c.Topology.Size(), c.Info.Ranks))
	}
	if r := c.Remote; r != nil {
		if !(r.RequestOverheadS >= 0 && r.RequestOverheadS <= 1) {
			errs = append(errs, fmt.Errorf("remote.request_overhead_s: must be in [0, 1] seconds (got %g)", r.RequestOverheadS))
		}
		if r.Transport != "grpc" && r.Transport != "tcp" {
			errs = append(errs, fmt.Errorf("remote.transport: must be \"grpc\" or \"tcp\" (got %q)", r.Transport))
		}
		if r.Samples < 1 {
			errs = append(errs, fmt.Errorf("remote.samples: must be ≥ 1 (got %d)", r.Samples))
		}
	}
	if c.Engine != nil {
		errs = append(errs, c.Engine.validate()...)
	}
	if err := ValidateOpTimes("op_time", c.OpTimes); err != nil {
		errs = append(errs, err)
	}
	if err := validateComm(c.Comm); err != nil {
		errs = append(errs, err)
	}
	known := map[string]bool{}
	for _, k := range SpreadKeys {
		known[k] = true
	}
	keys := make([]string, 0, len(c.Spread))
	for k := range c.Spread {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := c.Spread[k]
		switch {
		case !known[k]:
			errs = append(errs, fmt.Errorf("spread.%s: unknown figure (known: %s)", k, strings.Join(SpreadKeys, ", ")))
		case !(s.Min <= s.Median && s.Median <= s.Max) || math.IsInf(s.Min, 0) || math.IsInf(s.Max, 0):
			errs = append(errs, fmt.Errorf("spread.%s: must have finite min ≤ median ≤ max (got %g, %g, %g)", k, s.Min, s.Median, s.Max))
		case s.N < 1:
			errs = append(errs, fmt.Errorf("spread.%s.n: must be ≥ 1 (got %d)", k, s.N))
		}
	}
	return errors.Join(errs...)
}

// Ranks is the number of ranks the link figures were measured among.
func (c *Calibration) Ranks() int { return c.Topology.Size() }

// Apply replaces cfg's hardware with the calibrated profile and its links
// with the calibrated link, keeping cfg's nodes × gpus_per_node. It returns
// notes on what was replaced and where figures are extrapolated. The caller
// validates cfg afterwards (a dtype the profile lacks fails there).
func (c *Calibration) Apply(cfg *Config) []string {
	var notes []string
	src := c.Source
	if src == "" {
		src = "calibration"
	}
	notes = append(notes, fmt.Sprintf("hardware %q replaced by the calibrated profile %q (%s, measured %s)", cfg.Hardware.Name, c.Hardware.Name, src, c.Info.Date))
	cfg.Hardware.Preset = ""
	cfg.Hardware.GPU = c.Hardware
	cfg.Hardware.CalibratedBackend = c.Info.Backend
	perHost := cfg.Topology.Size()
	if n := cfg.Topology.Nodes; n > 1 {
		perHost = (perHost + n - 1) / n
	}
	ranks := cfg.Parallel.TP * max(1, cfg.Parallel.PP) * max(1, cfg.Parallel.DP)
	perHost = min(perHost, max(1, ranks))
	concurrent := ConcurrentRanks(cfg, perHost)
	if c.Info.Backend == BackendCUDA {
		// Each rank computes on its own GPU: one GPU's op times hold for
		// every rank, however many compute at once.
		concurrent = 1
	}
	if c.Info.Backend == BackendCPU && c.Info.Cores > 0 && len(c.OpTimes) > 0 {
		// sim shares the host's cores among the ranks computing at each
		// moment (sim/optable_share.go): compute is priced from the op
		// times measured with the config's ranks per host computing at
		// once as processes (sim divides them by the stretch they were
		// measured at), else from those measured alone.
		cfg.Hardware.HostCores, concurrent = c.Info.Cores, 1
		// Every rank on the calibrated host's cores, as the stretch and the
		// core wait count them (a CPU run's local ranks, whatever nodes the
		// config's topology names).
		if perHost != ranks {
			notes = append(notes, fmt.Sprintf("the config's %d ranks are priced on the calibrated host's %d cores, all local ranks (its topology puts %d on a host)", max(1, ranks), c.Info.Cores, perHost))
			perHost = max(1, ranks)
		}
		if perHost > 1 {
			if c.Info.OpTimeProcesses && hasComputeAt(c.OpTimes, perHost) {
				concurrent = perHost
				notes = append(notes, fmt.Sprintf("compute ops are priced from the op times measured with %d processes computing at once on the host's %d cores (the config's ranks per host)", perHost, c.Info.Cores))
			} else {
				notes = append(notes, fmt.Sprintf("note: the profile has no compute op times measured by %d processes at once (the config's ranks per host): compute ops are priced from those measured alone (calibrate with --op-ranks including %d)", perHost, perHost))
			}
		}
		if perHost > c.Info.Cores {
			notes = append(notes, fmt.Sprintf("the %d ranks per host share its %d cores: compute ops are stretched where more ranks compute at once than there are cores", perHost, c.Info.Cores))
		}
	}
	opTimes := withoutLargerGroups(c.OpTimes, max(1, ranks))
	if d := c.Info.OpTimeDType; d != "" && d != cfg.Model.DType && len(opTimes) > 0 {
		// A GPU computes each dtype at its own rate: times measured in
		// another dtype would misprice every op.
		notes = append(notes, fmt.Sprintf("the profile's %d op times were measured in %s, the config computes in %s: the roofline prices its ops (calibrate with --op-configs naming a config in %s)",
			len(opTimes), d, cfg.Model.DType, cfg.Model.DType))
		opTimes = nil
	}
	times, off := OpTimesFor(opTimes, concurrent, perHost)
	if ranks <= 1 { // a one-rank config communicates nothing: its placement of links does not matter
		off = slices.DeleteFunc(off, func(w string) bool { return IsCommKind(strings.Fields(w)[0]) })
	}
	// The executor's gap between ops is a rank's own loop, measured alone: any placement.
	off = slices.DeleteFunc(off, func(w string) bool { return strings.Fields(w)[0] == OpGapKind })
	if c.Info.Backend == BackendCPU && c.Info.Cores > 0 && len(c.OpTimes) > 0 {
		var waitNotes []string
		times, waitNotes = keepCoreWait(times, opTimes, max(1, ranks), c.Info.Cores)
		off = slices.DeleteFunc(off, func(w string) bool { return isWaitKind(strings.Fields(w)[0]) })
		notes = append(notes, waitNotes...)
		notes = append(notes, replicaSpreadNotes(times, cfg.Parallel.DP, max(1, ranks), c.Info.Cores)...)
		var turnNotes []string
		times, turnNotes = keepTurns(times, opTimes, max(1, ranks), c.Info.Cores)
		off = slices.DeleteFunc(off, func(w string) bool { return IsTurnsKind(strings.Fields(w)[0]) })
		notes = append(notes, turnNotes...)
	}
	cfg.Hardware.OpTimes = times
	if len(times) > 0 {
		notes = append(notes, fmt.Sprintf("%d measured op times (%s) price the ops whose shapes they cover — compute measured with %d rank(s) computing at once (of %d per host), communication among %d — the roofline prices the rest",
			len(times), opTimeKinds(times), concurrent, perHost, perHost))
		if len(off) > 0 {
			notes = append(notes, fmt.Sprintf("warning: the profile has no op times measured at this config's placement (%d computing at once, %d ranks per host) for %s: shared cores are priced at another placement (calibrate with --op-ranks %d,%d)",
				concurrent, perHost, strings.Join(off, ", "), concurrent, perHost))
		}
	}

	measured := c.Ranks()
	if measured < 2 {
		return append(notes, fmt.Sprintf("the calibration measured no link (%d rank): topology %q keeps its links", measured, cfg.Topology.Name))
	}
	link := c.Topology.Intra
	cfg.Topology.Preset = ""
	cfg.Topology.Intra = link
	if c.Topology.Nodes > 1 {
		cfg.Topology.Inter = c.Topology.Inter
	} else {
		cfg.Topology.Inter = link
	}
	want := cfg.Topology.Size()
	switch {
	case measured < want:
		notes = append(notes, fmt.Sprintf("the calibration measured %d ranks, the config has %d: its link (%s, %.3g B/s, %.3g s) is applied to both intra- and inter-node links and extrapolated to %d ranks",
			measured, want, link.Name, link.BytesPerS, link.LatencyS, want))
	case c.Topology.Nodes == 1 && cfg.Topology.Nodes > 1:
		notes = append(notes, fmt.Sprintf("the calibration measured one host: its link (%s) stands for the config's inter-node link too", link.Name))
	default:
		notes = append(notes, fmt.Sprintf("topology %q links replaced by the calibrated link (%s, %.3g B/s, %.3g s)", cfg.Topology.Name, link.Name, link.BytesPerS, link.LatencyS))
	}
	return notes
}

// WriteTOML writes the calibration in the schema LoadCalibration reads,
// after the header lines (each written as a comment). Figures keep full
// precision, so a written calibration loads back equal.
func (c *Calibration) WriteTOML(w io.Writer, header []string) error {
	tw := &topology.TOMLWriter{}
	tw.Comment(header...)
	g := c.Hardware
	tw.Table("hardware", "")
	for _, f := range []struct {
		key   string
		value any
	}{
		{"name", g.Name},
		{"fp32_flops_per_s", g.FP32FLOPsPerS},
		{"fp16_flops_per_s", g.FP16FLOPsPerS},
		{"bf16_flops_per_s", g.BF16FLOPsPerS},
		{"fp8_flops_per_s", g.FP8FLOPsPerS},
		{"hbm_bytes", g.HBMBytes},
		{"hbm_reserved_bytes", g.HBMReservedBytes},
		{"hbm_bytes_per_s", g.HBMBytesPerS},
		{"l2_bytes", g.L2Bytes},
		{"l2_usable_fraction", g.L2UsableFraction},
		{"l2_bytes_per_s", g.L2BytesPerS},
		{"sms", g.SMs},
		{"shared_mem_per_sm_bytes", g.SharedMemPerSM},
		{"kernel_launch_s", g.KernelLaunchS},
		{"compute_efficiency", g.ComputeEfficiency},
		{"hbm_efficiency", g.HBMEfficiency},
		{"gemm_tile_m", g.GemmTileM},
		{"gemm_tile_n", g.GemmTileN},
		{"gemm_min_tile_m", g.GemmMinTileM},
		{"step_overhead_s", g.StepOverheadS},
		{"cuda_graphs", g.CUDAGraphs},
		{"graph_launch_s", g.GraphLaunchS},
		{"graph_kernel_s", g.GraphKernelS},
		{"graph_op_saved_s", g.GraphOpSavedS},
		{"host_op_s", g.HostOpS},
		{"step_per_seq_s", g.StepPerSeqS},
		{"step_per_token_s", g.StepPerTokenS},
		{"all_reduce", g.AllReduce},
		{"custom_all_reduce_max_bytes", g.CustomAllReduceMaxBytes},
		{"custom_all_reduce_fixed_s", g.CustomAllReduceFixedS},
	} {
		tw.KV(f.key, f.value, c.Comments["hardware."+f.key])
	}
	tw.Raw(tw.Prefix + "ranges = " + g.Ranges.Inline() + "\n")

	t := c.Topology
	tw.Table("topology", "")
	tw.KV("name", t.Name, c.Comments["topology.name"])
	tw.KV("nodes", t.Nodes, c.Comments["topology.nodes"])
	tw.KV("gpus_per_node", t.GPUsPerNode, c.Comments["topology.gpus_per_node"])
	for _, l := range []struct {
		key  string
		link topology.Link
		used bool
	}{{"intra_node", t.Intra, t.GPUsPerNode > 1 || t.Intra != (topology.Link{})}, {"inter_node", t.Inter, t.Nodes > 1 || t.Inter != (topology.Link{})}} {
		if !l.used {
			continue
		}
		sec := "topology." + l.key + "."
		tw.Table("topology."+l.key, "")
		tw.KV("class", l.link.Class, c.Comments[sec+"class"])
		tw.KV("name", l.link.Name, c.Comments[sec+"name"])
		tw.KV("bytes_per_s", l.link.BytesPerS, c.Comments[sec+"bytes_per_s"])
		tw.KV("latency_s", l.link.LatencyS, c.Comments[sec+"latency_s"])
		tw.KV("nvswitch", l.link.Switch, c.Comments[sec+"nvswitch"])
	}

	keys := make([]string, 0, len(c.Spread))
	for k := range c.Spread {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return spreadOrder(keys[i]) < spreadOrder(keys[j]) })
	for _, k := range keys {
		s := c.Spread[k]
		tw.Table("spread."+k, c.Comments["spread."+k])
		tw.KV("min", s.Min, "")
		tw.KV("median", s.Median, "")
		tw.KV("max", s.Max, "")
		tw.KV("n", s.N, "")
	}

	in := c.Info
	tw.Table("calibration", "")
	for _, f := range []struct {
		key   string
		value any
	}{
		{"host", in.Host}, {"cpu", in.CPU}, {"cores", in.Cores}, {"backend", in.Backend}, {"date", in.Date},
		{"version", in.Version}, {"ranks", in.Ranks}, {"repeats", in.Repeats}, {"quick", in.Quick},
		{"device", in.Device}, {"driver", in.Driver}, {"op_time_dtype", in.OpTimeDType}, {"op_time_processes", in.OpTimeProcesses},
	} {
		if b, ok := f.value.(bool); ok && !b && f.key == "op_time_processes" {
			continue // goroutines, or one rank
		}
		if s, ok := f.value.(string); ok && s == "" && (f.key == "device" || f.key == "driver" || f.key == "op_time_dtype") {
			continue // a CPU calibration's
		}
		tw.KV(f.key, f.value, c.Comments["calibration."+f.key])
	}
	if len(in.Notes) > 0 {
		tw.KV("notes", in.Notes, "")
	}
	if len(in.LoadAverage) > 0 {
		tw.KV("load_average", in.LoadAverage, "1-minute load average at the start and the end")
	}
	if len(in.Warnings) > 0 {
		tw.KV("warnings", in.Warnings, "")
	}
	if r := c.Remote; r != nil {
		tw.Table("remote", c.Comments["remote"])
		kvs(tw, "request_overhead_s", r.RequestOverheadS, "transport", r.Transport, "config", r.Config, "samples", r.Samples)
	}
	if c.Engine != nil {
		c.Engine.write(tw, c.Comments["engine"])
	}

	if len(c.GEMM) > 0 {
		tw.Raw("\n")
		if c.Info.Backend == BackendCUDA {
			tw.Comment("GEMM shapes of the Programs and a small-M sweep, timed through cublasGemmEx (the GPU backend's call) per dtype.")
		} else {
			tw.Comment("GEMM shapes of the Programs, timed through blas32.Gemm (the CPU backend's call).")
		}
	}
	for _, s := range c.GEMM {
		tw.ArrayTable("gemm")
		kvs(tw, "source", s.Source)
		if s.DType != "" {
			kvs(tw, "dtype", s.DType)
		}
		kvs(tw, "m", s.M, "n", s.N, "k", s.K, "measured_m", s.MeasuredM, "measured_n", s.MeasuredN, "flops", s.FLOPs,
			"time_min_s", s.TimeMinS, "time_median_s", s.TimeMedianS, "time_max_s", s.TimeMaxS, "flops_per_s", s.FLOPsPerS, "model_time_s", s.ModelTimeS)
	}
	if len(c.Cache) > 0 {
		tw.Raw("\n")
		tw.Comment("Working-set curve: read bandwidth of a buffer read again and again.")
	}
	for _, s := range c.Cache {
		tw.ArrayTable("cache")
		kvs(tw, "bytes", s.Bytes, "bytes_per_s_min", s.BytesPerSMin, "bytes_per_s_median", s.BytesPerSMedian, "bytes_per_s_max", s.BytesPerSMax,
			"reuse_over_stream", s.ReuseOverStream)
	}
	if len(c.Comm) > 0 {
		tw.Raw("\n")
		tw.Comment("Communication samples and the collective model's time with the calibrated link.")
	}
	for _, s := range c.Comm {
		tw.ArrayTable("comm")
		kvs(tw, "op", s.Op, "ranks", s.Ranks, "bytes", s.Bytes, "time_min_s", s.TimeMinS, "time_median_s", s.TimeMedianS, "time_max_s", s.TimeMaxS,
			"model_time_s", s.ModelTimeS, "algo", string(s.Algo), "proto", s.Proto)
	}
	if len(c.Ops) > 0 {
		tw.Raw("\n")
		tw.Comment("Compute ops of a one-rank config, per phase and kind: measured through the CPU backend and modeled.")
	}
	for _, s := range c.Ops {
		tw.ArrayTable("op")
		kvs(tw, "config", s.Config, "phase", s.Phase, "kind", s.Kind, "calls", s.Calls, "measured_s", s.MeasuredS, "model_s", s.ModelS)
	}
	if len(c.OpTimes) > 0 {
		tw.Raw("\n")
		tw.Comment("Op-time table: each op kind timed at the Programs' shapes (size: rows, or bytes for communication; context: attention's positions).")
	}
	for _, s := range c.OpTimes {
		tw.ArrayTable("op_time")
		kvs(tw, "kind", s.Kind, "shape", s.Shape, "size", s.Size, "context", s.Context, "time_s", s.TimeS, "time_min_s", s.TimeMinS, "time_max_s", s.TimeMaxS,
			"samples", s.Samples, "ranks", s.Ranks)
	}
	_, err := io.WriteString(w, tw.String())
	return err
}

// opTimeKinds lists the kinds of ts once each, in order of first entry.
func opTimeKinds(ts []OpTime) string {
	seen := map[string]bool{}
	var ks []string
	for _, t := range ts {
		if !seen[t.Kind] {
			seen[t.Kind] = true
			ks = append(ks, t.Kind)
		}
	}
	return strings.Join(ks, ", ")
}

// kvs writes key, value pairs without comments.
func kvs(tw *topology.TOMLWriter, pairs ...any) {
	for i := 0; i+1 < len(pairs); i += 2 {
		tw.KV(pairs[i].(string), pairs[i+1], "")
	}
}

func spreadOrder(k string) int {
	for i, s := range SpreadKeys {
		if s == k {
			return i
		}
	}
	return len(SpreadKeys)
}

// RequestOverhead is the remote per-request overhead a dry run prices:
// given (set), the flag's value; else the one the calibration file at path
// measured; else 0.
func RequestOverhead(given float64, set bool, path string) (float64, error) {
	if set || path == "" {
		return given, nil
	}
	cal, err := LoadCalibration(path)
	if err != nil {
		return 0, fmt.Errorf("--calibration: %w", err)
	}
	if cal.Remote == nil {
		return given, nil
	}
	return cal.Remote.RequestOverheadS, nil
}
