package sim

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// updateGolden rewrites testdata/estimates.json.gz from the current code:
//
//	go test ./sim -run TestEstimatesGolden -update
//
// Do it only for an intended change of the cost model, never to make a
// speed-up pass.
var updateGolden = flag.Bool("update", false, "rewrite sim/testdata/estimates.json.gz from the current code")

const goldenFile = "testdata/estimates.json.gz"

// goldenCase is one plan whose estimate, plan and communication are kept.
type goldenCase struct {
	name string
	edit func(*configs.Config)
	opts Options
}

func goldenCases() []goldenCase {
	var cs []goldenCase
	for _, n := range configs.Presets("") {
		cs = append(cs, goldenCase{name: n})
	}
	for _, n := range configs.Presets("test") {
		cs = append(cs, goldenCase{name: "test/" + n})
	}
	for _, tc := range perStageCases {
		if tc.edit != nil {
			cs = append(cs, goldenCase{name: tc.name, edit: tc.edit})
		}
	}
	cs = append(cs,
		// TP groups cut by node boundaries: every rank simulated.
		goldenCase{name: "tp8pp2", edit: func(c *configs.Config) {
			c.Parallel.TP, c.Parallel.PP, c.Parallel.Microbatches = 4, 3, 4
			c.Topology.Nodes, c.Topology.GPUsPerNode = 2, 6
		}},
		// Every rank on request, with replicas.
		goldenCase{name: "tp8pp2", edit: func(c *configs.Config) { c.Parallel.DP, c.Topology.Nodes = 2, 4 }, opts: Options{EveryRank: true}},
		// Many stages, replicas and a chunked prefill.
		goldenCase{name: "tp8pp2", edit: func(c *configs.Config) {
			c.Model.Layers, c.Parallel.PP, c.Parallel.Microbatches, c.Parallel.DP = 64, 32, 8, 4
			c.Topology.Nodes = 128
			c.Workload.Batch = 64
		}},
		// TP 1 pipeline of 16 with replicas.
		goldenCase{name: "layerwise16", edit: func(c *configs.Config) { c.Parallel.DP, c.Topology.Nodes = 3, 6 }},
	)
	return cs
}

// goldenRecord is what the guard compares: the estimate, the whole plan's
// ranks (memory included) and its communication summaries and counts.
type goldenRecord struct {
	Label       string                `json:"label"`
	Estimate    *Estimate             `json:"estimate"`
	Ranks       []partition.Rank      `json:"ranks"`
	PrefillComm partition.CommSummary `json:"prefill_comm"`
	DecodeComm  partition.CommSummary `json:"decode_comm"`
	// Counts are rank 0's and the last rank's per phase.
	Counts []any `json:"counts"`
}

type goldenSearch struct {
	GPUs int           `json:"gpus"`
	Rows []SearchRow   `json:"rows"`
	Full []*Estimate   `json:"full"`
	Res  *SearchResult `json:"result"`
}

type goldenAll struct {
	Cases    []goldenRecord `json:"cases"`
	Searches []goldenSearch `json:"searches"`
}

func goldenLabel(i int, c goldenCase, p *partition.Plan) string {
	l := fmt.Sprintf("%d %s", i, c.name)
	if c.edit != nil {
		l += fmt.Sprintf(" (tp %d pp %d dp %d)", p.TP, p.PP, p.DP)
	}
	if c.opts.EveryRank {
		l += " every rank"
	}
	return l
}

func buildGolden(t *testing.T) goldenAll {
	var all goldenAll
	for i, c := range goldenCases() {
		p := planEdited(t, c.name, c.edit)
		e, err := EstimatePlan(p, c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		last := p.Size() - 1
		all.Cases = append(all.Cases, goldenRecord{
			Label: goldenLabel(i, c, p), Estimate: e, Ranks: p.Ranks,
			PrefillComm: p.Comm(partition.Prefill), DecodeComm: p.Comm(partition.Decode),
			Counts: []any{p.Counts(p.Program(0, partition.Prefill)), p.Counts(p.Program(0, partition.Decode)),
				p.Counts(p.Program(last, partition.Prefill)), p.Counts(p.Program(last, partition.Decode))},
		})
	}
	for _, gpus := range []int{64, 512} {
		spec := syntheticSpec(t, gpus)
		if gpus == 64 { // a smaller workload, so candidates fit
			spec.Config.Workload.Batch, spec.Config.Workload.Context = 64, 1024
		}
		r, err := Search(spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Refine(spec, 2, Options{}, nil); err != nil {
			t.Fatal(err)
		}
		g := goldenSearch{GPUs: gpus, Rows: r.Rows}
		for _, row := range r.Rows {
			if row.FullEstimate != nil {
				g.Full = append(g.Full, row.FullEstimate)
			}
		}
		r.ElapsedS, r.CandidatesPerS, r.FullElapsedS = 0, 0, 0
		g.Res = r
		all.Searches = append(all.Searches, g)
	}
	return all
}

// Every preset's estimate, plan, communication and a search's ranking are
// the JSON the code gave when the file was written: changes meant to make
// estimates faster must leave them bit for bit as they were.
func TestEstimatesGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("estimates every preset")
	}
	all := buildGolden(t)
	if *updateGolden {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		enc := json.NewEncoder(zw)
		enc.SetIndent("", " ")
		if err := enc.Encode(all); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(goldenFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenFile, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(goldenFile)
	if err != nil {
		t.Fatalf("%v (write it with -update from a trusted revision)", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Cases    []json.RawMessage `json:"cases"`
		Searches []json.RawMessage `json:"searches"`
	}
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if len(want.Cases) != len(all.Cases) || len(want.Searches) != len(all.Searches) {
		t.Fatalf("%d cases and %d searches, golden file has %d and %d", len(all.Cases), len(all.Searches), len(want.Cases), len(want.Searches))
	}
	same := func(label string, got any, w json.RawMessage) {
		t.Helper()
		var a, b bytes.Buffer
		g, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Compact(&a, g); err != nil {
			t.Fatal(err)
		}
		if err := json.Compact(&b, w); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			x, y := a.Bytes(), b.Bytes()
			i := 0
			for i < len(x) && i < len(y) && x[i] == y[i] {
				i++
			}
			lo := max(0, i-200)
			t.Errorf("%s differs from the golden file at byte %d:\n got …%s…\nwant …%s…", label, i, x[lo:min(len(x), i+200)], y[lo:min(len(y), i+200)])
		}
	}
	for i, c := range all.Cases {
		same(c.Label, c, want.Cases[i])
	}
	for i, s := range all.Searches {
		same(fmt.Sprintf("search on %d GPUs", s.GPUs), s, want.Searches[i])
	}
}
