package tracestats

import (
	"math"
	"strings"
	"testing"
)

// A run's trace as `run --trace` writes it, by hand: a measured and a
// modeled process, complete events and one begin/end pair.
const handTrace = `{"traceEvents":[
 {"name":"process_name","ph":"M","pid":1,"args":{"name":"tiny (measured)"}},
 {"name":"process_name","ph":"M","pid":2,"args":{"name":"tiny (modeled)"}},
 {"name":"thread_name","ph":"M","pid":1,"tid":0,"args":{"name":"rank 0"}},
 {"name":"l0.qkv","cat":"gemm","ph":"X","ts":0,"dur":100,"pid":1,"tid":0,"args":{"phase":"prefill"}},
 {"name":"l0.qkv","cat":"gemm","ph":"X","ts":200,"dur":300,"pid":1,"tid":0,"args":{"phase":"decode"}},
 {"name":"l0.attn","cat":"attention","ph":"X","ts":600,"dur":50,"pid":1,"tid":0,"args":{"phase":"decode"}},
 {"name":"l0.qkv","cat":"gemm","ph":"X","ts":0,"dur":200,"pid":1,"tid":1,"args":{"phase":"prefill"}},
 {"name":"l0.attn","cat":"attention","ph":"B","ts":1000,"pid":1,"tid":1,"args":{"phase":"decode"}},
 {"name":"l0.attn","ph":"E","ts":1070,"pid":1,"tid":1},
 {"name":"message","cat":"flow","ph":"s","ts":5,"pid":1,"tid":0,"id":7},
 {"name":"l0.qkv","cat":"gemm","ph":"X","ts":0,"dur":150,"pid":2,"tid":0,"args":{"phase":"prefill"}},
 {"name":"l0.attn","cat":"attention","ph":"X","ts":150,"dur":40,"pid":2,"tid":0,"args":{"phase":"decode"}}
],"displayTimeUnit":"ms"}`

func read(t *testing.T, s string) *Trace {
	t.Helper()
	tr, err := Read(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func find(rows []Row, process string, rank int, phase, op string) *Row {
	for i := range rows {
		r := &rows[i]
		if r.Process == process && r.Rank == rank && r.Phase == phase && r.Op == op {
			return r
		}
	}
	return nil
}

func TestSummarizeByNameByHand(t *testing.T) {
	tr := read(t, handTrace)
	if got := strings.Join(tr.Processes, "|"); got != "tiny (measured)|tiny (modeled)" {
		t.Fatalf("processes %q", got)
	}
	if len(tr.Events) != 7 { // 6 complete events + 1 begin/end pair; metadata and flows are not timed
		t.Fatalf("%d events, want 7", len(tr.Events))
	}
	rows := Summarize(tr, Options{By: ByName})
	// Measured l0.qkv: 100, 300, 200 µs → total 600, mean 200, median 200,
	// min 100, max 300, sample stddev sqrt((100²+0+100²)/2) = 100 µs.
	// Measured op time: 600 + 50 + 70 = 720 µs → 600/720 = 83.33…%.
	q := find(rows, "tiny (measured)", AllRanks, AllPhases, "l0.qkv")
	if q == nil {
		t.Fatalf("no measured l0.qkv row in %+v", rows)
	}
	want := Row{Process: "tiny (measured)", Rank: AllRanks, Op: "l0.qkv", Count: 3, TotalS: 600e-6, Percent: 100 * 600.0 / 720,
		MeanS: 200e-6, MedianS: 200e-6, MinS: 100e-6, MaxS: 300e-6, StdDevS: 100e-6}
	if q.Count != want.Count || !near(q.TotalS, want.TotalS) || !near(q.Percent, want.Percent) || !near(q.MeanS, want.MeanS) ||
		!near(q.MedianS, want.MedianS) || !near(q.MinS, want.MinS) || !near(q.MaxS, want.MaxS) || !near(q.StdDevS, want.StdDevS) {
		t.Errorf("measured l0.qkv\n got %+v\nwant %+v", *q, want)
	}
	// Measured l0.attn: 50 µs (X) and 1070 − 1000 = 70 µs (B/E): mean 60.
	a := find(rows, "tiny (measured)", AllRanks, AllPhases, "l0.attn")
	if a == nil || a.Count != 2 || !near(a.TotalS, 120e-6) || !near(a.MeanS, 60e-6) || !near(a.Percent, 100*120.0/720) {
		t.Errorf("measured l0.attn: %+v", a)
	}
	// Rows of a process are ordered by total, largest first.
	if rows[0].Op != "l0.qkv" || rows[1].Op != "l0.attn" || rows[0].Process != "tiny (measured)" {
		t.Errorf("order: %+v", rows[:2])
	}
	// One instance has no spread.
	m := find(rows, "tiny (modeled)", AllRanks, AllPhases, "l0.attn")
	if m == nil || m.StdDevS != 0 || !near(m.Percent, 100*40.0/190) {
		t.Errorf("modeled l0.attn: %+v", m)
	}
}

func TestSummarizeByKindRankPhase(t *testing.T) {
	rows := Summarize(read(t, handTrace), Options{By: ByKind, PerRank: true, PerPhase: true})
	// Rank 0, decode, measured: gemm 300 µs and attention 50 µs → 85.71…% and 14.28…%.
	g := find(rows, "tiny (measured)", 0, "decode", "gemm")
	at := find(rows, "tiny (measured)", 0, "decode", "attention")
	if g == nil || at == nil || g.Count != 1 || !near(g.TotalS, 300e-6) || !near(g.Percent, 100*300.0/350) || !near(at.Percent, 100*50.0/350) {
		t.Errorf("rank 0 decode: gemm %+v attention %+v", g, at)
	}
	// The end event carries no category: the begin's is kept.
	if r := find(rows, "tiny (measured)", 1, "decode", "attention"); r == nil || !near(r.TotalS, 70e-6) {
		t.Errorf("rank 1 decode attention: %+v", r)
	}
}

func TestPairsErrorSign(t *testing.T) {
	pairs := Pairs(Summarize(read(t, handTrace), Options{By: ByName}))
	if len(pairs) != 2 {
		t.Fatalf("%d pairs, want 2: %+v", len(pairs), pairs)
	}
	// l0.qkv: modeled mean 150 µs, measured 200 → (150 − 200)/200 = −0.25.
	// l0.attn: modeled 40, measured 60 → −1/3. Largest measured total first.
	if p := pairs[0]; p.Op != "l0.qkv" || p.Error == nil || !near(*p.Error, -0.25) {
		t.Errorf("l0.qkv pair %+v", p)
	}
	if p := pairs[1]; p.Op != "l0.attn" || p.Error == nil || !near(*p.Error, -1.0/3) {
		t.Errorf("l0.attn pair %+v", p)
	}
	// A trace of one side only has no pairs.
	only := `[{"name":"a","ph":"X","ts":0,"dur":1,"pid":1,"tid":0}]`
	if p := Pairs(Summarize(read(t, only), Options{By: ByName})); len(p) != 0 {
		t.Errorf("pairs of an unpaired trace: %+v", p)
	}
}

func TestPairsOneSided(t *testing.T) {
	tr := `[{"name":"process_name","ph":"M","pid":1,"args":{"name":"r (measured)"}},
{"name":"process_name","ph":"M","pid":2,"args":{"name":"r (modeled)"}},
{"name":"only_run","ph":"X","ts":0,"dur":10,"pid":1,"tid":0},
{"name":"only_model","ph":"X","ts":0,"dur":5,"pid":2,"tid":0}]`
	pairs := Pairs(Summarize(read(t, tr), Options{By: ByName}))
	if len(pairs) != 2 || pairs[0].Op != "only_run" || pairs[0].Modeled != nil || pairs[0].Error != nil ||
		pairs[1].Op != "only_model" || pairs[1].Measured != nil || pairs[1].Error != nil {
		t.Errorf("one-sided pairs: %+v", pairs)
	}
}

func TestReadRefusals(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"other":1}`, "no \"traceEvents\""},
		{`"x"`, "want an object"},
		{`{"traceEvents":{}}`, "not an array"},
		{`[{"name":"a","ph":"X","ts":0,"pid":1,"tid":0}]`, "without \"dur\""},
		{`[{"name":"a","ph":"X","ts":0,"dur":-1,"pid":1,"tid":0}]`, "not a finite non-negative"},
		{`[{"name":"a","ph":"X","ts":0,"dur":"x","pid":1,"tid":0}]`, "event 0"},
		{``, "not trace-event JSON"},
	} {
		_, err := Read(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Read(%q) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
	if err := (Options{By: "size"}).Check(); err == nil || !strings.Contains(err.Error(), `--by: must be one of name, kind (got "size")`) {
		t.Errorf("Options.Check: %v", err)
	}
}

func TestReadFileRefusesNonRegular(t *testing.T) {
	if _, err := ReadFile("/dev/null", nil); err == nil || !strings.Contains(err.Error(), "trace /dev/null: not a regular file") {
		t.Errorf("ReadFile(/dev/null) = %v", err)
	}
	if _, err := ReadFile("-", strings.NewReader(`[]`)); err != nil {
		t.Errorf("empty array from stdin: %v", err)
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(handTrace))
	f.Add([]byte(`[{"ph":"E","pid":1,"tid":1,"ts":3}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Read(strings.NewReader(string(data)))
		if err != nil {
			return
		}
		for _, r := range Summarize(tr, Options{By: ByName, PerRank: true}) {
			if r.Count < 1 || r.TotalS < 0 || math.IsNaN(r.Percent) || r.MinS > r.MaxS {
				t.Fatalf("bad row %+v", r)
			}
		}
	})
}
