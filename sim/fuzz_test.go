package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// FuzzConfig drives any bytes through the whole estimate path: load (strict
// decode, presets, validation) → plan → estimate → JSON. Every input must
// end in an error or a JSON document; never a panic, and never an error
// from json (a non-finite number) after a successful estimate. Seeds are
// the embedded strategies. Run: go test ./sim -run NONE -fuzz FuzzConfig.
func FuzzConfig(f *testing.F) {
	err := fs.WalkDir(configs.Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(p, "/") && !strings.HasPrefix(p, "test/") {
			return err // strategies only: top level and test/
		}
		data, err := fs.ReadFile(configs.Files, p)
		if err == nil {
			f.Add(data)
		}
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("\"\\"))
	f.Add([]byte("[topology.inter_node]\nlatency_s = nan\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := configs.Parse(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		plan, err := partition.NewPlan(cfg)
		if err != nil {
			return
		}
		// The fewest decode steps the timeline allows, and plans of at most
		// fuzzMaxOps simulated ops (counted from the shape, before any
		// Program is built), keep each input within milliseconds: a mutated
		// preset of up to MaxTimelineOps ops took seconds each and stalled
		// the fuzzer. Larger plans take the same code paths, more often.
		opts := Options{DecodeSteps: 3}
		if shapeOps(plan.OneReplica(), opts) > fuzzMaxOps {
			return
		}
		e, err := EstimatePlan(plan, opts)
		var tooLarge *TooLargeError
		if errors.As(err, &tooLarge) {
			return
		}
		if err != nil {
			t.Fatalf("a validated config fails its estimate: %v", err)
		}
		if _, err := json.Marshal(e); err != nil {
			t.Fatalf("estimate does not encode: %v", err)
		}
	})
}

// fuzzMaxOps bounds the ops (over every rank) of a plan FuzzConfig
// estimates. Counted at three decode steps, the embedded strategies have
// 100 to 1,940 ops (estimated in under 10 ms each), but for tp8pp2-tiny
// (12,656; 44 ms) and tp8pp2 (50,624; 0.55 s on the busy 2-core VM): those
// two, and mutations of them, are parsed and planned but not estimated, so
// the fuzzer does not stall for seconds minimizing them. TP > 1 per-stage
// simulation is still reached through tp2pp2-tiny, tp4-tiny and tp2-dp2-tiny.
const fuzzMaxOps = 4_000

// shapeOps is the ops of every rank of plan (an upper bound of what the
// timeline simulates), from partition.OpCount, counted until they pass
// fuzzMaxOps.
func shapeOps(plan *partition.Plan, opts Options) int {
	ops := 0
	for r := range plan.Ranks {
		ops = partition.SatAdd(ops, partition.SatAdd(plan.OpCount(r, partition.Prefill),
			partition.SatMul(opts.DecodeSteps, plan.OpCount(r, partition.Decode))))
		if ops > fuzzMaxOps {
			break
		}
	}
	return ops
}
