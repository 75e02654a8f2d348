//go:build cgo

package cuda

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/checkpoint/checkpointtest"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/exec/hf"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/localcomm"
)

// fixtureDir is the Hugging Face fixture fx: checkpoint/testdata/fx under
// the working directory where it is there (scripts/gpu-check.sh runs the
// test binary in a folder that holds a copy, away from the sources), else
// the sources' own (checkpointtest.Dir).
func fixtureDir(t *testing.T, fx string) string {
	t.Helper()
	if d, err := filepath.Abs(filepath.Join("checkpoint", "testdata", fx)); err == nil {
		if st, err := os.Stat(filepath.Join(d, "config.json")); err == nil && st.Mode().IsRegular() {
			return d
		}
	}
	return checkpointtest.Dir(t, fx)
}

// The Hugging Face fixtures on the GPU against transformers' reference.json
// (docs/numerics.md, "Checkpoints against transformers"): in fp32, fp16
// and bf16, one rank, tp2, pp2 and tp2 × pp2 (every rank on this GPU,
// staged through the host), the logits at every prompt position within
// ReferenceTolerance and each greedy id equal unless the GPU's own logits
// of the two are within twice it (teacher-forced on the reference's ids);
// and the free-running greedy generation equal to the reference's up to
// its first near-tie (GreedySettled).
func TestRealGPUCheckpointFixtures(t *testing.T) {
	realGPU(t)
	for _, fx := range []string{"llama-tiny", "gpt2-tiny"} {
		dir := fixtureDir(t, fx)
		ref, err := hf.ReadReference(filepath.Join(dir, "reference.json"))
		if err != nil {
			t.Fatal(err)
		}
		m := openModel(t, dir)
		for _, dt := range []string{"fp32", "fp16", "bf16"} {
			b := Checkpoint(Options{DType: dt}, localcomm.Comms, nil)
			for _, p := range [][3]int{{1, 1, 1}, {2, 1, 1}, {1, 2, 2}, {2, 2, 2}} {
				t.Run(fmt.Sprintf("%s/%s/tp%dpp%d", fx, dt, p[0], p[1]), func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					g := hf.Generation{Dir: dir, Prompts: ref.PromptIDs, NewTokens: len(ref.GreedyIDs[0]), TP: p[0], PP: p[1], Microbatches: p[2],
						Env: launch.Env{Source: launch.SourceSingle}}
					rc, err := m.CompareReference(ctx, g, b, fx+"/reference.json", ref, b.ReferenceTolerance)
					if err != nil {
						t.Fatal(err)
					}
					t.Logf("max |Δ logit| %.3g (relative %.3g, tolerance %g), greedy mismatches %d of %d (near-ties allowed)",
						rc.MaxAbsErr, rc.MaxRelErr, rc.Tolerance, len(rc.GreedyMismatches), rc.GreedyCompared)
					if err := rc.Err(); err != nil {
						t.Error(err)
					}
					cfg, err := g.Config()
					if err != nil {
						t.Fatal(err)
					}
					res, err := m.Generate(ctx, cfg, g, b)
					if err != nil {
						t.Fatal(err)
					}
					// The free-running greedy decode reproduces the ids no
					// near-tie decided (exec.ReferenceCheck.GreedySettled).
					for s := range ref.GreedyIDs {
						n := rc.GreedySettled[s]
						if !slices.Equal(res.GreedyIDs[s][:n], ref.GreedyIDs[s][:n]) {
							t.Errorf("sequence %d: greedy %v, transformers %v (the first %d settled)", s, res.GreedyIDs[s], ref.GreedyIDs[s], n)
						}
					}
					t.Logf("greedy settled %v of %d", rc.GreedySettled, len(ref.GreedyIDs[0]))
				})
			}
		}
	}
}

// run --check --model-dir on the GPU: every partitioning of at most 4
// ranks the fixtures allow, and the GPU's single rank, against exec/cpu's
// single rank with the checkpoint's weights, in each element type.
func TestRealGPUCheckModelDir(t *testing.T) {
	realGPU(t)
	refB := cpu.Checkpoint(nil)
	for _, fx := range []string{"llama-tiny", "gpt2-tiny"} {
		for _, dt := range []string{"fp32", "fp16", "bf16"} {
			t.Run(fx+"/"+dt, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				run := configs.ModelDirRun{Dir: fixtureDir(t, fx), Batch: 2, Context: 16, OutputTokens: 4, DType: "fp32"}
				res, err := hf.CheckModelDir(ctx, run, 4, hf.CheckOptions{Backend: Checkpoint(Options{DType: dt}, localcomm.Comms, nil), Reference: &refB})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range res {
					t.Logf("%s: max rel %.3g (tolerance %g), argmax mismatches %d of %d", r.Config, r.MaxRelErr, r.Tolerance, len(r.ArgmaxMismatches), r.ArgmaxCompared)
					if err := r.Err(); err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
}

// On the GPU, the host-weights load in windows of 64 KiB of float32 (the
// fixtures' ranks in 8–14 windows, llama-tiny's embedding and LM head alone)
// puts on the device, byte for byte, what the load in one window of the
// default 1 GiB puts there: both fixtures, TP 1 and 2, fp32 and bf16. It
// logs each load's time.
func TestRealGPUCheckpointWindows(t *testing.T) {
	realGPU(t)
	for _, fx := range []string{"llama-tiny", "gpt2-tiny"} {
		dir := fixtureDir(t, fx)
		m := openModel(t, dir)
		for _, tp := range []int{1, 2} {
			plan := hfPlan(t, dir, tp, 1)
			for rank := range plan.Ranks {
				for _, dt := range []string{"fp32", "bf16"} {
					what := fmt.Sprintf("%s tp%d rank %d %s", fx, tp, rank, dt)
					t0 := time.Now()
					small, err := New(plan, rank, Options{DType: dt, Weights: m.Shards, HostWindowBytes: 64 << 10})
					if err != nil {
						t.Fatalf("%s, 64 KiB windows: %v", what, err)
					}
					t1 := time.Now()
					whole, err := New(plan, rank, Options{DType: dt, Weights: m.Shards})
					if err != nil {
						small.Close()
						t.Fatalf("%s, one window: %v", what, err)
					}
					t.Logf("%s: New in 64 KiB windows %v, in one window %v (%s)", what, t1.Sub(t0), time.Since(t1), small.WeightSource())
					if strings.Contains(small.WeightSource(), "read in 1 windows") || !strings.Contains(whole.WeightSource(), "read in 1 windows") {
						t.Errorf("%s: %q and %q: want several windows, then one", what, small.WeightSource(), whole.WeightSource())
					}
					for _, ts := range plan.Tensors(rank) {
						if a, b := deviceBytes(t, small, ts.Layer, ts.Name), deviceBytes(t, whole, ts.Layer, ts.Name); !slices.Equal(a, b) {
							t.Errorf("%s: %s of layer %d differs between 64 KiB windows and one window", what, ts.Name, ts.Layer)
						}
					}
					small.Close()
					whole.Close()
				}
			}
		}
	}
}
