package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"gonum.org/v1/gonum/graph/encoding/dot"
	"gonum.org/v1/gonum/graph/simple"

	"github.com/partbench/partbench/topology/topologytest"
)

func TestGridFormats(t *testing.T) {
	g := Grid{Title: "T", Header: []string{"a (ms)", "b"}, Rows: [][]string{{"1", "x,y"}, {"2", "z"}}, Notes: []string{"note"}}
	var tb, md, cs bytes.Buffer
	if err := WriteGrids(&tb, FormatTable, g); err != nil {
		t.Fatal(err)
	}
	// Headers keep their case and units (no auto-upper-casing).
	if !strings.Contains(tb.String(), "a (ms)") || !strings.Contains(tb.String(), "* note") {
		t.Fatalf("table:\n%s", tb.String())
	}
	if err := WriteGrids(&md, FormatMarkdown, g); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "### T") || !strings.Contains(md.String(), "| a (ms) |") || !strings.Contains(md.String(), "- note") {
		t.Fatalf("markdown:\n%s", md.String())
	}
	if err := WriteCSV(&cs, g); err != nil {
		t.Fatal(err)
	}
	if cs.String() != "a (ms),b\n1,\"x,y\"\n2,z\n" {
		t.Fatalf("csv %q", cs.String())
	}
	if err := CheckFormat("yaml", FormatTable, FormatCSV); err == nil || !strings.Contains(err.Error(), "table, csv") {
		t.Fatalf("format check: %v", err)
	}
}

func TestChromeTraceFlowsAndTracks(t *testing.T) {
	spans := []Span{
		{Process: "p", Rank: 0, Name: "x.send", Cat: "send", StartS: 1e-3, DurS: 1e-6, Flow: 7},
		{Process: "p", Rank: 1, Name: "x.recv", Cat: "recv", StartS: 0, DurS: 2e-3, Flow: 7},
		{Process: "q", Rank: 0, Name: "L00.wqkv", Cat: "gemm", StartS: 0, DurS: 1e-3, Args: map[string]any{"m": 16}},
	}
	var b bytes.Buffer
	if err := ChromeTrace(&b, spans); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var starts, finishes, complete, meta int
	for _, e := range doc.TraceEvents {
		switch e["ph"] {
		case "s":
			starts++
			if e["ts"].(float64) != 1000 {
				t.Errorf("flow start at %v µs, want 1000 (the send)", e["ts"])
			}
		case "f":
			finishes++
			if e["ts"].(float64) != 2000 || e["bp"] != "e" {
				t.Errorf("flow end %v", e)
			}
		case "X":
			complete++
		case "M":
			meta++
		}
	}
	// Two processes (2 names), three rank tracks (name + sort index each).
	if starts != 1 || finishes != 1 || complete != 3 || meta != 2+3*2 {
		t.Fatalf("events: %d s, %d f, %d X, %d M", starts, finishes, complete, meta)
	}
	// Metadata first, so viewers name tracks before drawing them.
	if doc.TraceEvents[0]["ph"] != "M" {
		t.Fatal("metadata not first")
	}
}

// A table wider than the terminal drops its rightmost columns and says so;
// the first column stays.
func TestFittedDropsColumns(t *testing.T) {
	g := Grid{Header: []string{"strategy", "a", "bbbbbbbbbb", "c"}, Rows: [][]string{{"tp8pp2", "1", "2", "3"}}}
	// Widths: strategy 8, a 1, bbbbbbbbbb 10, c 1 → 1 + (8+3) + (1+3) + (10+3) + (1+3) = 33.
	if got := tableWidth(g, 4); got != 33 {
		t.Fatalf("tableWidth = %d, want 33", got)
	}
	var b strings.Builder
	if err := WriteGrids(Fitted{Writer: &b, Cols: 20}, FormatTable, g); err != nil {
		t.Fatal(err)
	}
	// 20 columns hold strategy and a (1 + 11 + 4 = 16), not bbbbbbbbbb (29).
	out := b.String()
	if !strings.Contains(out, "│ strategy │ a │") || strings.Contains(out, "bbbbbbbbbb │") || !strings.Contains(out, "2 more columns (bbbbbbbbbb, c) do not fit 20 columns: --wide") {
		t.Errorf("fitted table:\n%s", out)
	}
	b.Reset()
	if err := WriteGrids(&b, FormatTable, g); err != nil || !strings.Contains(b.String(), "bbbbbbbbbb") {
		t.Errorf("unfitted table lost a column: %v\n%s", err, b.String())
	}
}

func TestLaTeXNumber(t *testing.T) {
	for in, want := range map[string]string{
		"2.99192e+10": `$2.992\times10^{10}$`, // 4 significant figures, power of ten
		"0.000857826": `$8.578\times10^{-4}$`,
		"-3.5e-05":    `$-3.500\times10^{-5}$`, // a true minus inside math
		"6932.45":     "6932",                  // 4 significant figures: 10^3 needs no decimals
		"0.336867":    "0.3369",
		"441344":      "441344",   // an integer below 10^6 as written
		"-12.5":       "$-$12.50", // 4 significant figures, true minus
		"+0.00":       "$+$0.00",
		"9.99999e+06": `$1.000\times10^{7}$`, // rounding carries into the exponent
	} {
		if got, ok := LaTeXNumber(in); !ok || got != want {
			t.Errorf("LaTeXNumber(%q) = %q, want %q", in, got, want)
		}
	}
	if _, ok := LaTeXNumber("tp8pp2"); ok {
		t.Error("a name is not a number")
	}
}

// The DOT drawing parses back (gonum's decoder) into the same nodes and links.
func TestTopoDOTParses(t *testing.T) {
	g := topologytest.DGXH100(2).Topology.Graph()
	var b strings.Builder
	if err := TopoDOT(&b, g); err != nil {
		t.Fatal(err)
	}
	back := simple.NewUndirectedGraph()
	if err := dot.Unmarshal([]byte(b.String()), back); err != nil {
		t.Fatalf("unmarshal: %v\n%s", err, b.String())
	}
	// Besides the topology: one invisible node linked to each of the two
	// nodes' NVSwitches, which keeps node 0 left of node 1.
	if n, e := back.Nodes().Len(), back.Edges().Len(); n != len(g.Nodes)+1 || e != len(g.Edges)+2 {
		t.Errorf("parsed %d nodes, %d links; drew %d, %d (+1 node and +2 links that order the groups)", n, e, len(g.Nodes), len(g.Edges))
	}
}

// A sweep of one strategy has no ranking to show: no "best TPS" column, no
// note about the ranking; with two the column is there.
func TestSweepGridOneStrategy(t *testing.T) {
	one := tinyEstimates(t, "test/single-tiny")
	two := tinyEstimates(t, "test/single-tiny", "test/tp2pp2-tiny")
	g := SweepGrid("hidden", []SweepPoint{{Value: 64, Strategies: one}})
	if g.Header[len(g.Header)-1] == "best TPS" || len(g.Rows[0]) != len(g.Header) || len(g.Notes) != 0 {
		t.Errorf("one strategy: header %v, row %v, notes %v", g.Header, g.Rows[0], g.Notes)
	}
	g = SweepGrid("hidden", []SweepPoint{{Value: 64, Strategies: two}})
	if g.Header[len(g.Header)-1] != "best TPS" || len(g.Rows[0]) != len(g.Header) {
		t.Errorf("two strategies: header %v, row %v", g.Header, g.Rows[0])
	}
}

// The emulation table names the modeled hardware and shows a tiny config's
// memory in MB, not as 0.000 GB.
func TestEmulationGridNamesHardwareAndScalesMemory(t *testing.T) {
	e := tinyEstimates(t, "test/tp2pp2-tiny")[0]
	g := EmulationGrid("cpu", e, e, []int64{515_000})
	if !strings.Contains(g.Header[2], e.Hardware) || e.Hardware == "" {
		t.Errorf("modeled column %q does not name %q", g.Header[2], e.Hardware)
	}
	last := g.Rows[len(g.Rows)-1]
	if last[0] != "memory per GPU, largest rank (MB)" || last[1] != "0.515" {
		t.Errorf("memory row %v, want MB and 0.515", last)
	}
}
