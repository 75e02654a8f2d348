package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"time"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/fileio"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote"
	"github.com/partbench/partbench/remote/wire"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// Dialer gives the runner a connected client for a remote baseline's server
// (the command spawns 'partbench serve' children; tests serve in process).
type Dialer func(ctx context.Context, b Baseline) (*remote.Client, error)

// Progress is told after every run: runs done (skipped ones included), the
// total, and a line describing the run.
type Progress func(done, total int, line string)

// Options choose how a suite runs.
type Options struct {
	Spec *Spec
	Dir  string
	// Resume continues dir/runs.jsonl; without it a non-empty log is refused.
	Resume bool
	// Engine runs local baselines in this process.
	Engine wire.Engine
	Dial   Dialer
	// Progress may be nil.
	Progress Progress
	// Backend names the engine's device in records.
	Backend string
	// newComms connects a partitioned cell's ranks (nil: exec/localcomm);
	// tests give a miscounting one.
	newComms func(int) []pexec.Comm
}

// Outcome is what a suite did.
type Outcome struct {
	Total, Skipped, Ran int
	// SkippedCells are cells complete before this invocation.
	SkippedCells int
	// Mismatches counts runs whose payload bytes differ from the model's.
	Mismatches int
}

// Run runs every cell's missing runs, appending each to dir/runs.jsonl as
// it finishes. A resumed suite redoes a partial cell's warm-up (a fresh
// process is cold) and continues its measured runs at the next index.
func Run(ctx context.Context, o Options) (*Outcome, error) {
	s := o.Spec
	log, prev, err := OpenLog(o.Dir, !o.Resume)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	hash := s.Hash()
	done := map[string]int{}
	for _, r := range prev {
		if r.SpecHash != hash {
			return nil, fmt.Errorf("%s: run of spec %s (hash %s) differs from spec %s (hash %s): resume only the same spec, or choose another --output-dir",
				filepath.Join(o.Dir, RunsFile), r.Spec, r.SpecHash, s.Name, hash)
		}
		if !r.Warmup {
			done[r.Cell]++
		}
	}
	if err := writeSpec(o.Dir, s); err != nil {
		return nil, err
	}
	link, err := topology.ParseClientLink("link", s.Link)
	if err != nil {
		return nil, err
	}
	if err := writeModeled(o.Dir, s, link); err != nil {
		return nil, err
	}
	cells := s.RunCells()
	out := &Outcome{Total: len(cells) * (s.Warmup + s.Runs)}
	clients := map[string]*remote.Client{}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	n := 0
	for _, cell := range cells {
		have := done[cell.ID()]
		if have >= s.Runs {
			out.SkippedCells++
			out.Skipped += s.Warmup + s.Runs
			n += s.Warmup + s.Runs
			continue
		}
		cfg, err := cell.Config(s)
		if err != nil {
			return out, err
		}
		plan, err := partition.NewPlan(cfg)
		if err != nil {
			return out, fmt.Errorf("cell %s: %w", cell.ID(), err)
		}
		var modeled float64
		var runOnce func() (Record, error)
		if cell.Baseline.Partitioned() {
			if modeled, _, _, err = partitionedModel(plan, cell.Workload.Kind); err != nil {
				return out, fmt.Errorf("cell %s: %w", cell.ID(), err)
			}
			runOnce = func() (Record, error) {
				run, util, err := partitionedRun(ctx, plan, o.newComms)
				if err != nil {
					return Record{}, err
				}
				return partitionedRecord(s, hash, cell, plan, run, util), nil
			}
		} else {
			mode, _ := partition.ParseRemoteMode(cell.Baseline.Mode)
			if modeled, err = modeledLatency(plan, cell, mode, link); err != nil {
				return out, fmt.Errorf("cell %s: %w", cell.ID(), err)
			}
			topts := remote.TrialOptions{Config: cfg, Modes: []partition.RemoteMode{mode}, Trials: 1, Link: link, Engine: o.Engine}
			if mode.Served() {
				key := cell.Baseline.Server + "/" + cell.Baseline.Transport
				if clients[key] == nil {
					if o.Dial == nil {
						return out, fmt.Errorf("cell %s: mode %s needs a server and none was given", cell.ID(), mode)
					}
					if clients[key], err = o.Dial(ctx, cell.Baseline); err != nil {
						return out, fmt.Errorf("cell %s: %w", cell.ID(), err)
					}
				}
				topts.Client = clients[key]
			}
			runOnce = func() (Record, error) {
				tr, err := remote.RunTrials(ctx, topts)
				if err != nil {
					return Record{}, err
				}
				return recordOf(s, hash, cell, tr, plan.DecodeSteps()), nil
			}
		}
		out.Skipped += have
		n += have
		for i := -s.Warmup; i < s.Runs-have; i++ {
			warm := i < 0
			idx := have + i
			if warm {
				idx = i + s.Warmup
			}
			t0 := time.Now()
			rec, err := runOnce()
			if err != nil {
				return out, fmt.Errorf("cell %s run %d: %w", cell.ID(), idx, err)
			}
			rec.Run, rec.Warmup, rec.ModeledS = idx, warm, modeled
			rec.Backend, rec.Time = o.Backend, t0.UTC().Format(time.RFC3339Nano)
			if err := log.Append(rec); err != nil {
				return out, err
			}
			if len(rec.Mismatches) > 0 {
				out.Mismatches++
			}
			out.Ran++
			n++
			if o.Progress != nil {
				what := "run"
				if warm {
					what = "warm-up"
				}
				o.Progress(n, out.Total, fmt.Sprintf("%s %s %d: %.4g ms, %.0f B", cell.ID(), what, idx, rec.LatencyS*1e3, rec.NetBytes))
			}
		}
	}
	return out, nil
}

// recordOf sums one generation's rows into the cell's headline.
func recordOf(s *Spec, hash string, cell Cell, tr *remote.Trials, steps int) Record {
	r := Record{Spec: s.Name, SpecHash: hash, Cell: cell.ID(), Baseline: cell.Baseline.Name, Workload: cell.Workload.Name,
		Kind: cell.Workload.Kind, Mode: cell.Baseline.Mode, Transport: cell.Baseline.Transport, DecodeSteps: steps, Mismatches: tr.Mismatches}
	var span float64
	var pre, dec, all remote.Row
	for _, row := range tr.Rows {
		switch row.Phase {
		case partition.Prefill:
			r.PrefillS, pre = row.LatencyS, row
		case partition.Decode:
			r.DecodeS, dec = row.LatencyS, row
		default:
			r.LoadS = row.LatencyS
		}
		all.LatencyS += row.LatencyS
		all.NetBytes += row.NetBytes
		all.WantBytes += row.WantBytes
		all.WireBytes += row.WireBytes
		r.Util += row.AvgSM * row.LatencyS
		span += row.LatencyS
		if row.UtilSrc != "" {
			r.UtilSource = row.UtilSrc
		}
	}
	if span > 0 {
		r.Util /= span
	}
	r.TotalBytes = all.NetBytes
	head, per := all, 1.0
	switch cell.Workload.Kind {
	case KindDecode:
		head, per = dec, float64(max(steps, 1))
	case KindPrefill, KindEncoder, KindMicrobench:
		head = pre
	}
	r.LatencyS = head.LatencyS / per
	r.NetBytes = float64(head.NetBytes) / per
	r.ModelBytes = float64(head.WantBytes) / per
	r.WireBytes = float64(head.WireBytes) / per
	return r
}

// modeledLatency is sim's estimate of the cell's headline: the mean decode
// step (the generation's decode requests over their number), the prefill
// request, or the whole generation.
func modeledLatency(plan *partition.Plan, cell Cell, mode partition.RemoteMode, link topology.ClientLink) (float64, error) {
	e, err := sim.EstimateRemote(plan, sim.RemoteOptions{Link: link}, sim.Options{})
	if err != nil {
		return 0, err
	}
	m := e.Mode(mode)
	switch cell.Workload.Kind {
	case KindDecode:
		steps := plan.DecodeSteps()
		return (m.GenerationS - m.OpenS - m.Prefill.TotalS) / float64(max(steps, 1)), nil
	case KindSmoke:
		return m.GenerationS, nil
	default:
		return m.Prefill.TotalS, nil
	}
}

// SpecSchema names the layout of spec.json, the spec a suite ran.
const SpecSchema = "partbench.suite-spec/v1"

func writeSpec(dir string, s *Spec) error {
	b, err := json.MarshalIndent(struct {
		Schema string `json:"schema"`
		*Spec
	}{SpecSchema, s}, "", "  ")
	if err != nil {
		return err
	}
	return fileio.WriteAtomic(filepath.Join(dir, SpecFile), func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

// ReadSpec reads the spec a suite directory was run with.
func ReadSpec(dir string) (*Spec, error) {
	b, err := fileio.ReadSmall(filepath.Join(dir, SpecFile), "suite spec", MaxSpecJSONBytes)
	if err != nil {
		return nil, fmt.Errorf("suite directory %s: %w (was it written by partbench suite?)", dir, err)
	}
	var doc struct {
		Schema string `json:"schema"`
		Spec
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, SpecFile), err)
	}
	if doc.Schema != "" && doc.Schema != SpecSchema { // "": written before the schema was recorded
		return nil, fmt.Errorf("%s: schema %q: this partbench reads %s", filepath.Join(dir, SpecFile), doc.Schema, SpecSchema)
	}
	s := doc.Spec
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, SpecFile), err)
	}
	return &s, nil
}

// EstimateDuration is the model's time for the whole matrix: every run's
// generation (session open, prefill, every decode step) on Spec.Hardware
// over Spec.Link. A CPU backend takes far longer; the figure is the floor.
func EstimateDuration(s *Spec) (time.Duration, error) {
	link, err := topology.ParseClientLink("link", s.Link)
	if err != nil {
		return 0, err
	}
	var total float64
	for _, w := range s.Workloads {
		if s.ModelOnly(w) {
			continue
		}
		cfg, err := w.Config(s)
		if err != nil {
			return 0, err
		}
		plan, err := partition.NewPlan(cfg)
		if err != nil {
			return 0, err
		}
		e, err := sim.EstimateRemote(plan, sim.RemoteOptions{Link: link}, sim.Options{})
		if err != nil {
			return 0, err
		}
		for _, b := range s.Baselines {
			gen := 0.0
			if b.Partitioned() {
				pc, err := w.PartitionedConfig(s, b)
				if err != nil {
					return 0, err
				}
				pp, err := partition.NewPlan(pc)
				if err != nil {
					return 0, err
				}
				if _, _, gen, err = partitionedModel(pp, w.Kind); err != nil {
					return 0, err
				}
			} else {
				m, _ := partition.ParseRemoteMode(b.Mode)
				gen = e.Mode(m).GenerationS
			}
			total += float64(s.Warmup+s.Runs) * gen
		}
	}
	return time.Duration(total * float64(time.Second)), nil
}

// ModeledFile holds the model-only cells' figures.
const ModeledFile = "modeled.json"

// ModeledCell is one model-only cell: the model's headline latency (as
// modeledLatency) and payload bytes of that headline, with no runs.
type ModeledCell struct {
	Cell     string  `json:"cell"`
	Baseline string  `json:"baseline"`
	Workload string  `json:"workload"`
	Kind     string  `json:"kind"`
	Mode     string  `json:"mode"`
	ModeledS float64 `json:"modeled_s"`
	Bytes    float64 `json:"modeled_bytes"`
	Reason   string  `json:"reason"`
}

// Modeled prices every model-only cell of s over link.
func Modeled(s *Spec, link topology.ClientLink) ([]ModeledCell, error) {
	out := []ModeledCell{}
	for _, c := range s.Cells() {
		if !s.ModelOnly(c.Workload) {
			continue
		}
		cfg, err := c.Config(s)
		if err != nil {
			return nil, err
		}
		plan, err := partition.NewPlan(cfg)
		if err != nil {
			return nil, fmt.Errorf("cell %s: %w", c.ID(), err)
		}
		var lat, bytes float64
		if c.Baseline.Partitioned() {
			if lat, bytes, _, err = partitionedModel(plan, c.Workload.Kind); err != nil {
				return nil, fmt.Errorf("cell %s: %w", c.ID(), err)
			}
		} else if lat, bytes, err = remoteModeled(plan, c, link); err != nil {
			return nil, err
		}
		out = append(out, ModeledCell{Cell: c.ID(), Baseline: c.Baseline.Name, Workload: c.Workload.Name, Kind: c.Workload.Kind,
			Mode: c.Baseline.RecordMode(), ModeledS: lat, Bytes: bytes,
			Reason: "model_only_cpu: the cpu backend cannot run this workload in a suite's time; run the spec with backend = \"cuda\" to measure it"})
	}
	return out, nil
}

// remoteModeled is a remote-mode cell's modeled headline latency and
// payload bytes.
func remoteModeled(plan *partition.Plan, c Cell, link topology.ClientLink) (lat, bytes float64, err error) {
	mode, _ := partition.ParseRemoteMode(c.Baseline.Mode)
	if lat, err = modeledLatency(plan, c, mode, link); err != nil {
		return 0, 0, fmt.Errorf("cell %s: %w", c.ID(), err)
	}
	e, err := sim.EstimateRemote(plan, sim.RemoteOptions{Link: link}, sim.Options{})
	if err != nil {
		return 0, 0, err
	}
	m := e.Mode(mode)
	switch c.Workload.Kind {
	case KindDecode:
		bytes = float64(m.GenerationBytes-m.OpenBytes-m.Prefill.Bytes.Total()) / float64(max(plan.DecodeSteps(), 1))
	case KindSmoke:
		bytes = float64(m.GenerationBytes)
	default:
		bytes = float64(m.Prefill.Bytes.Total())
	}
	return lat, bytes, nil
}

// writeModeled writes dir/modeled.json (an empty list when no cell is
// model-only), atomically.
func writeModeled(dir string, s *Spec, link topology.ClientLink) error {
	cells, err := Modeled(s, link)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(cells, "", "  ")
	if err != nil {
		return err
	}
	return fileio.WriteAtomic(filepath.Join(dir, ModeledFile), func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}
