package sim

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// cpuTime is the process's user + system CPU time so far. On a shared,
// loaded machine wall time per op swings with other jobs; the CPU the
// benchmark itself spends (GC included) is steadier, so the benchmarks
// here report both (cpu-ns/op beside ns/op).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per op since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkSearchScale searches SyntheticSearchSpec at several GPU counts
// and reports candidates per second: the per-candidate cost should not grow
// with the GPU count (docs/measurements/speed.md).
func BenchmarkSearchScale(b *testing.B) {
	for _, gpus := range []int{16, 1024, 4096, 16384} {
		b.Run(fmt.Sprintf("gpus=%d", gpus), func(b *testing.B) {
			spec := syntheticSpec(b, gpus)
			var n, fit int
			b.ResetTimer()
			cpu := cpuTime(b)
			for i := 0; i < b.N; i++ {
				r, err := Search(spec)
				if err != nil {
					b.Fatal(err)
				}
				n += r.Enumerated
				fit += r.Enumerated - r.PrunedMemory
			}
			reportCPU(b, cpu)
			b.ReportMetric(float64(n)/(cpuTime(b)-cpu).Seconds(), "candidates/cpu-s")
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "candidates/s")
			b.ReportMetric(float64(n)/float64(b.N), "candidates/op")
			b.ReportMetric(float64(fit)/float64(b.N), "fit/op")
		})
	}
}

// BenchmarkSearchFitScale is BenchmarkSearchScale's model with a workload
// small enough (batch 16, context 512) that candidates fit at 16 GPUs as
// well as at 16,384: at both ends most candidates are priced by Quick, so
// the rates compare like work (BenchmarkSearchScale's 16-GPU search is all
// memory-fit refusals). fit/op counts the candidates that fit.
func BenchmarkSearchFitScale(b *testing.B) {
	for _, gpus := range []int{16, 16384} {
		b.Run(fmt.Sprintf("gpus=%d", gpus), func(b *testing.B) {
			spec := syntheticSpec(b, gpus)
			spec.Config.Workload.Batch, spec.Config.Workload.Context = 16, 512
			var n, fit int
			b.ResetTimer()
			cpu := cpuTime(b)
			for i := 0; i < b.N; i++ {
				r, err := Search(spec)
				if err != nil {
					b.Fatal(err)
				}
				n += r.Enumerated
				fit += r.Enumerated - r.PrunedMemory
			}
			reportCPU(b, cpu)
			b.ReportMetric(float64(n)/(cpuTime(b)-cpu).Seconds(), "candidates/cpu-s")
			b.ReportMetric(float64(n)/float64(b.N), "candidates/op")
			b.ReportMetric(float64(fit)/float64(b.N), "fit/op")
		})
	}
}

// BenchmarkSearchFull is `partbench search` on 4,096 GPUs: the closed-form
// search and the default full re-run of its top 10.
func BenchmarkSearchFull(b *testing.B) {
	spec := syntheticSpec(b, 4096)
	cpu := cpuTime(b)
	for i := 0; i < b.N; i++ {
		r, err := Search(spec)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Refine(spec, 10, Options{}, nil); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkSearchFullCommand is BenchmarkSearchFull with the spec
// RunSearch gives `partbench search`: its re-runs leave out the GPU's range
// ends, which the search's output does not show (SearchSpec.NoFullRange),
// and compute only what it shows of them (SearchSpec.SummaryOnly).
func BenchmarkSearchFullCommand(b *testing.B) {
	spec := syntheticSpec(b, 4096)
	spec.NoFullRange, spec.SummaryOnly = true, true
	cpu := cpuTime(b)
	for i := 0; i < b.N; i++ {
		r, err := Search(spec)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Refine(spec, 10, Options{}, nil); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

// largeDryRunConfig is the largest dry run the limits allow in GPUs: 1,000
// layers of the seed model widened to 100 heads, TP 100 × PP 1,000 =
// 100,000 GPUs on 1,000 nodes of 100, one micro-batch of 2 sequences.
const largeDryRunConfig = `version = 1
name = "dense1000-tp100pp1000"
[model]
preset = "seed-dense16"
layers = 1000
heads = 100
kv_heads = 100
ffn = 16000
[workload]
batch = 2
context = 10000
output_tokens = 128
phases = ["prefill", "decode"]
[parallel]
tp = 100
pp = 1000
microbatches = 1
[hardware]
preset = "h100-sxm"
[topology]
preset = "dgx-h100x2"
nodes = 1000
gpus_per_node = 100
`

// BenchmarkDryRun is `model --dry-run`'s work (plan and estimate, no
// rendering: EstimateConfig's, the plan without its rank list) on the
// seed's 16 GPUs and on 100,000.
func BenchmarkDryRun(b *testing.B) {
	for _, c := range []struct{ name, config string }{{"gpus=16", "tp8pp2"}, {"gpus=100000", ""}} {
		b.Run(c.name, func(b *testing.B) {
			var cfg *configs.Config
			var err error
			if c.config != "" {
				cfg, err = configs.Load(c.config)
			} else {
				cfg, err = configs.Parse(strings.NewReader(largeDryRunConfig), "large")
			}
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			cpu := cpuTime(b)
			for i := 0; i < b.N; i++ {
				p, err := partition.NewPlanStages(cfg)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := EstimatePlan(p, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkEstimate is one full estimate (three timeline runs: nominal and
// both range ends) of a built plan, with the steady state extrapolated and,
// as the reference, every decode step simulated (timeline_steady.go):
// tp8pp2 is the figure compared with other tools' estimates in
// docs/measurements/speed.md.
func BenchmarkEstimate(b *testing.B) {
	for _, c := range []struct{ name, config string }{{"tp8pp2", "tp8pp2"}, {"gpus=100000", ""}} {
		var cfg *configs.Config
		var err error
		if c.config != "" {
			cfg, err = configs.Load(c.config)
		} else {
			cfg, err = configs.Parse(strings.NewReader(largeDryRunConfig), "large")
		}
		if err != nil {
			b.Fatal(err)
		}
		p, err := partition.NewPlan(cfg)
		if err != nil {
			b.Fatal(err)
		}
		for _, stepwise := range []bool{false, true} {
			name := c.name + "/steady"
			if stepwise {
				name = c.name + "/stepwise"
			}
			b.Run(name, func(b *testing.B) {
				cpu := cpuTime(b)
				for i := 0; i < b.N; i++ {
					if _, err := EstimatePlan(p, Options{stepwise: stepwise}); err != nil {
						b.Fatal(err)
					}
				}
				reportCPU(b, cpu)
			})
		}
	}
}

// BenchmarkEstimateChunked is one full estimate of a plan whose prefill
// runs in many chunks (timeline_chunks.go): the 4,096-GPU search's re-run
// candidate tp128pp16dp2-m8-ends-1 (64 chunks of 60 tokens, 16 stages, 8
// micro-batches; as Refine runs it for `partbench search`: no range ends,
// 12 decode steps), and the search's synthetic model cut to 8 layers and
// batch 64 at TP 8 × PP 4 with 4 micro-batches and a prefill chunk of 8
// tokens (480 chunks; nominal run and both range ends).
func BenchmarkEstimateChunked(b *testing.B) {
	spec := syntheticSpec(b, 4096)
	// Both ends one layer lighter than the even 8 (as the search's ends-1).
	cand := Candidate{TP: 128, PP: 16, DP: 2, Microbatches: 8, Variant: VariantEnds,
		StageLayers: append(append([]int{7}, evenSplit(128-14, 14)...), 7)}
	big, err := partition.NewPlan(spec.CandidateConfig(cand))
	if err != nil {
		b.Fatal(err)
	}
	big.System.GPU.Ranges = topology.ParamRanges{}
	small, err := SyntheticSearchSpec(32)
	if err != nil {
		b.Fatal(err)
	}
	c := small.CandidateConfig(Candidate{TP: 8, PP: 4, DP: 1, Microbatches: 4, Variant: VariantEven})
	c.Model.Layers, c.Workload.Batch, c.Parallel.PrefillChunk = 8, 64, 8
	p480, err := partition.NewPlan(c)
	if err != nil {
		b.Fatal(err)
	}
	for _, x := range []struct {
		name  string
		plan  *partition.Plan
		steps int
	}{{fmt.Sprintf("search-rerun-%dchunks", big.PrefillChunks), big, SearchDecodeSteps}, {fmt.Sprintf("synthetic-%dchunks", p480.PrefillChunks), p480, 0}} {
		b.Run(x.name, func(b *testing.B) {
			cpu := cpuTime(b)
			for i := 0; i < b.N; i++ {
				if _, err := EstimatePlan(x.plan, Options{DecodeSteps: x.steps}); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkSearchQuick is the closed-form part of BenchmarkSearchScale's
// 16,384-GPU search alone: every candidate that fits, planned before the
// timer starts, priced in search order through a fresh QuickCache per op
// (proxies, stage shapes, collectives: what the 16-GPU search, where
// nothing fits, never does).
func BenchmarkSearchQuick(b *testing.B) {
	spec := syntheticSpec(b, 16384)
	var plans []*partition.Plan
	pl := partition.NewPlanner()
	cands, _ := spec.Enumerate()
	maps := layerMaps{}
	for _, c := range cands {
		cfg := spec.baseConfig()
		spec.setLayout(cfg, c, maps.of(c))
		if p, err := pl.Stages(cfg); err == nil {
			plans = append(plans, p)
		}
	}
	b.ResetTimer()
	cpu := cpuTime(b)
	for i := 0; i < b.N; i++ {
		c := NewQuickCache(spec.Collectives)
		for _, p := range plans {
			if _, err := c.Quick(p); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportCPU(b, cpu)
	b.ReportMetric(float64(len(plans)), "plans/op")
}

// BenchmarkSearchFullCommandWhole is BenchmarkSearchFullCommand with each
// re-run's whole Estimate kept (SummaryOnly unset): what the summary saves.
func BenchmarkSearchFullCommandWhole(b *testing.B) {
	spec := syntheticSpec(b, 4096)
	spec.NoFullRange = true
	cpu := cpuTime(b)
	for i := 0; i < b.N; i++ {
		r, err := Search(spec)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Refine(spec, 10, Options{}, nil); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}
