package sim

import (
	"fmt"
	"strings"

	"github.com/partbench/partbench/configs"
)

// SearchRequest is a search as `partbench search` asks for it: the config by
// file or preset name, the system overrides, the objective and constraints
// in the units of its flags, and how much of the result to refine.
type SearchRequest struct {
	Config             string // --config
	GPUs               int    // --gpus (0: the topology's)
	Hardware, Topology string // --hardware, --topology presets ("": the config's)
	Nodes              int    // --nodes (0: the topology's)
	Objective          string // --objective
	MaxTPOTms          float64
	MaxTTFTs           float64
	Top                int    // --top rows printed
	Full               int    // --full re-runs through the timeline (-1: Top)
	DecodeSteps        int    // --decode-steps of the full re-run
	MaxMicrobatches    int    // --max-microbatches
	Runtime            string // --runtime profile ("": the config's)
	// Workload replaces the config's batch and lengths (--batch-size,
	// --input-len, --output-len).
	Workload    configs.WorkloadOverrides
	Collectives CollectiveOptions
	// Progress makes a progress callback for a phase ("search", "full
	// timeline"); nil: none.
	Progress func(phase string) func(done, total int)
}

// Check refuses a request its flags cannot mean; each error starts with the
// flag it names.
func (r SearchRequest) Check() error {
	switch {
	case r.Config == "":
		return fmt.Errorf("--config: required: a config file or embedded preset whose model and workload are searched (see 'partbench presets')")
	case r.GPUs < 0:
		return fmt.Errorf("--gpus: must be a positive number of GPUs (got %d)", r.GPUs)
	case r.Nodes < 0:
		return fmt.Errorf("--nodes: must be ≥ 1 (got %d)", r.Nodes)
	case r.Top < 1:
		return fmt.Errorf("--top: must be ≥ 1 (got %d)", r.Top)
	case r.Full < -1:
		return fmt.Errorf("--full: must be ≥ 0 (got %d)", r.Full)
	case r.DecodeSteps < 3:
		return fmt.Errorf("--decode-steps: must be ≥ 3 (got %d)", r.DecodeSteps)
	case r.MaxMicrobatches < 1:
		return fmt.Errorf("--max-microbatches: must be ≥ 1 (got %d)", r.MaxMicrobatches)
	case r.MaxTPOTms < 0:
		return fmt.Errorf("--max-tpot-ms: must be ≥ 0 (got %g)", r.MaxTPOTms)
	case r.MaxTTFTs < 0:
		return fmt.Errorf("--max-ttft-s: must be ≥ 0 (got %g)", r.MaxTTFTs)
	}
	for _, ob := range Objectives {
		if r.Objective == ob {
			return nil
		}
	}
	return fmt.Errorf("--objective: must be one of %s (got %q)", strings.Join(Objectives, ", "), r.Objective)
}

// RunSearch checks r, loads its config, resolves the system, searches, and
// re-runs the top Full candidates (Top when Full is -1) through the full
// timeline. A search that enumerated nothing returns res.Empty(); one that
// enumerated candidates returns the result even when none is feasible, so
// the caller can print why (and then fail with res.Empty()).
func RunSearch(r SearchRequest) (*configs.Config, *SearchResult, error) {
	cfg, spec, err := r.spec()
	if err != nil {
		return nil, nil, err
	}
	progress := func(phase string) func(done, total int) {
		if r.Progress == nil {
			return nil
		}
		return r.Progress(phase)
	}
	spec.Progress = progress("search")
	res, err := Search(spec)
	if err != nil {
		return nil, nil, err
	}
	full := r.Full
	if full < 0 {
		full = r.Top
	}
	if full > 0 {
		opts := Options{DecodeSteps: r.DecodeSteps, Collectives: spec.Collectives}
		if err := res.Refine(spec, full, opts, progress("full timeline")); err != nil {
			return nil, nil, err
		}
	}
	if res.Enumerated == 0 {
		return nil, nil, res.Empty()
	}
	return cfg, res, nil
}

// spec checks r, loads its config, resolves the system and gives the spec
// RunSearch searches (without its progress callback).
func (r SearchRequest) spec() (*configs.Config, SearchSpec, error) {
	if err := r.Check(); err != nil {
		return nil, SearchSpec{}, err
	}
	cfg, err := configs.Load(r.Config)
	if err != nil {
		return nil, SearchSpec{}, fmt.Errorf("--config: %w", err)
	}
	if r.Workload.Batch > 0 {
		cfg.Parallel.Microbatches = 1 // the search picks micro-batch counts itself
	}
	if err := r.Workload.Apply(cfg); err != nil {
		return nil, SearchSpec{}, err
	}
	if err := configs.ApplyRuntimeFlag([]*configs.Config{cfg}, r.Runtime); err != nil {
		return nil, SearchSpec{}, err
	}
	sys, err := configs.SystemOverride{Hardware: r.Hardware, Topology: r.Topology, Nodes: r.Nodes, GPUs: r.GPUs}.Resolve(cfg)
	if err != nil {
		return nil, SearchSpec{}, err
	}
	// A --hardware preset keeps the config's runtime (its host costs).
	sys.GPU = cfg.Runtime.Apply(sys.GPU)
	return cfg, SearchSpec{Config: cfg, System: sys, Objective: r.Objective, MaxTPOTS: r.MaxTPOTms / 1e3, MaxTTFTS: r.MaxTTFTs,
		MaxMicrobatches: r.MaxMicrobatches, Collectives: r.Collectives,
		NoFullRange: true, // the rows show the re-runs' nominal numbers alone
		SummaryOnly: true, // and of each re-run what FromEstimate reads
	}, nil
}
