package configs

import "github.com/partbench/partbench/topology"

// SchemaVersion is the config schema this build reads.
const SchemaVersion = 1

// Config is one strategy to estimate or run: a model, a workload, a parallel
// layout, and the hardware it runs on.
type Config struct {
	Version     int      `toml:"version" json:"version"`
	Name        string   `toml:"name" json:"name"`
	Description string   `toml:"description" json:"description,omitempty"`
	Model       Model    `toml:"model" json:"model"`
	Workload    Workload `toml:"workload" json:"workload"`
	Parallel    Parallel `toml:"parallel" json:"parallel"`
	Hardware    Hardware `toml:"hardware" json:"hardware"`
	Topology    Topology `toml:"topology" json:"topology"`
	Run         Run      `toml:"run" json:"run"`
	// Runtime is the engine's host costs and all-reduce (runtime.go); unset:
	// the hardware's own fixed-cost keys.
	Runtime Runtime `toml:"runtime" json:"runtime"`
	Source  string  `toml:"-" json:"source"` // file or preset it came from
}

// Model is a dense decoder-only transformer.
type Model struct {
	Preset   string `toml:"preset" json:"preset,omitempty"`
	Name     string `toml:"name" json:"name"`
	Layers   int    `toml:"layers" json:"layers"`
	Hidden   int    `toml:"hidden" json:"hidden"`
	Heads    int    `toml:"heads" json:"heads"`
	KVHeads  int    `toml:"kv_heads" json:"kv_heads"` // 0 in a file means "= heads"
	HeadDim  int    `toml:"head_dim" json:"head_dim"`
	FFN      int    `toml:"ffn" json:"ffn"`
	GatedMLP bool   `toml:"gated_mlp" json:"gated_mlp"` // 3 matrices (gate, up, down) instead of 2
	Vocab    int    `toml:"vocab" json:"vocab"`
	// Embeddings and LMHead say whether the token embedding (first stage) and
	// the output projection (last stage) are part of the run.
	Embeddings bool   `toml:"embeddings" json:"embeddings"`
	LMHead     bool   `toml:"lm_head" json:"lm_head"`
	DType      string `toml:"dtype" json:"dtype"` // fp16, bf16, fp32, fp8
	// ModelArch selects the architecture (arch.go); zero values: Llama-style.
	ModelArch
}

// Workload is what the model serves.
type Workload struct {
	// Batch is the number of sequences decoded together.
	Batch int `toml:"batch" json:"batch"`
	// Context is the sequence length the KV cache holds: prompt + output tokens.
	Context int `toml:"context" json:"context"`
	// OutputTokens is the number of tokens generated per sequence; the prompt
	// is Context − OutputTokens tokens.
	OutputTokens int `toml:"output_tokens" json:"output_tokens"`
	// Phases to estimate or run: "prefill", "decode".
	Phases []string `toml:"phases" json:"phases"`
}

// Parallel is the partitioning.
type Parallel struct {
	TP int `toml:"tp" json:"tp"`
	PP int `toml:"pp" json:"pp"`
	// DP is the number of replicas of the TP×PP group (data parallelism):
	// tp × pp × dp = GPUs. Each replica serves workload.batch sequences on
	// its own, so the deployment serves dp × batch; 0 in a file means 1.
	DP int `toml:"dp" json:"dp"`
	// Microbatches splits the batch for the pipeline; must divide batch.
	Microbatches int `toml:"microbatches" json:"microbatches"`
	// LayerMap optionally gives the stage of each layer (len = layers,
	// non-decreasing, every stage used); empty means even split.
	LayerMap []int `toml:"layer_map" json:"layer_map,omitempty"`
	// Schedule: "fill-drain" or "1f1b". Inference has no backward pass, so
	// 1F1B runs the same forward stream as fill-drain; both are accepted.
	Schedule string `toml:"schedule" json:"schedule"`
	// PrefillChunk is the prompt tokens per sequence processed per prefill
	// pass; 0 means the whole prompt, chunked only if activations would not fit.
	PrefillChunk int `toml:"prefill_chunk" json:"prefill_chunk"`
	// PassBuffers is how a rank's micro-batches hold their activation
	// buffers: "shared" (empty means shared: one allocation of each, as a
	// rank runs its passes one after another; the token ids stay each
	// micro-batch's own) or "per-microbatch" (every micro-batch its own,
	// for an engine that copies rows between micro-batches' buffers).
	PassBuffers string `toml:"pass_buffers" json:"pass_buffers,omitempty"`
}

// The values of Parallel.PassBuffers.
const (
	PassBuffersShared        = "shared"
	PassBuffersPerMicrobatch = "per-microbatch"
)

// Ranks is the job's size, tp × pp × dp (dp 0 in a file counts 1): what a
// launcher and the rendezvous check before any Plan is built.
func (p Parallel) Ranks() int { return p.TP * p.PP * max(p.DP, 1) }

// Hardware names a GPU preset and/or overrides its fields inline.
type Hardware struct {
	Preset string `toml:"preset" json:"preset,omitempty"`
	topology.GPU
	// OpTimes is the measured op-time table of a calibrated profile
	// (calibration_optable.go); sim prices an op from it where it has the
	// op's shape, by roofline elsewhere.
	OpTimes []OpTime `toml:"op_time" json:"op_time,omitempty"`
	// HostCores is the cores a CPU host's ranks share (0: each rank has its
	// own device); sim stretches compute ops when more ranks compute at
	// once than there are cores.
	HostCores int `toml:"host_cores" json:"host_cores,omitempty"`
	// CalibratedBackend is the backend a calibration applied to this
	// config was measured on ("cpu", "cuda"; "": none applied): a run on
	// another backend prices another machine, and says so.
	CalibratedBackend string `toml:"-" json:"calibrated_backend,omitempty"`
}

// Topology names a topology preset and/or overrides its fields inline.
type Topology struct {
	Preset string `toml:"preset" json:"preset,omitempty"`
	topology.Topology
}

// Run holds the measurement protocol.
type Run struct {
	Warmup     int   `toml:"warmup" json:"warmup"`
	Iterations int   `toml:"iterations" json:"iterations"`
	Seed       int64 `toml:"seed" json:"seed"`
}

// PromptTokens is the prompt length per sequence.
func (w Workload) PromptTokens() int { return w.Context - w.OutputTokens }

// HasPhase reports whether the workload includes a phase.
func (w Workload) HasPhase(p string) bool {
	for _, q := range w.Phases {
		if q == p {
			return true
		}
	}
	return false
}
