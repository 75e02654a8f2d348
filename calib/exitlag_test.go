package calib

import (
	"math"
	"testing"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
)

// TestExitLagSum: three calls of a pair, stamps in ns.
//
//	call  partner 0 (arrive, exit)   partner 1 (arrive, exit)   later arrival  later exit  lag
//	1     (1 000, 1 050)             (1 030, 1 040)              1 030          1 050        20
//	2     (2 000, 2 100)             (1 900, 2 130)              2 000          2 130       130
//	3     (3 050, 3 060)             (3 000, 3 055)              3 050          3 060        10
//
// → 160 ns over the sample: the partner behind is 1 in call 1 (it leaves
// first but arrived last: 1 030 → 1 050 is 0's exit), both ways alike.
func TestExitLagSum(t *testing.T) {
	a := &pairStamps{arrive: []int64{1000, 2000, 3050}, exit: []int64{1050, 2100, 3060}}
	b := &pairStamps{arrive: []int64{1030, 1900, 3000}, exit: []int64{1040, 2130, 3055}}
	for _, p := range [][2]*pairStamps{{a, b}, {b, a}} {
		got, err := exitLagSum(p[0], p[1])
		if err != nil || math.Abs(got-160e-9) > 1e-15 {
			t.Errorf("exit lag sum %g s, err %v; want 160 ns", got, err)
		}
	}
	if _, err := exitLagSum(a, &pairStamps{arrive: b.arrive[:2], exit: b.exit[:2]}); err == nil {
		t.Error("3 calls against 2: no error")
	}
	// A later exit before the later arrival is a broken clock, not a lag.
	if _, err := exitLagSum(&pairStamps{arrive: []int64{100}, exit: []int64{90}}, &pairStamps{arrive: []int64{50}, exit: []int64{80}}); err == nil {
		t.Error("exits before the arrivals: no error")
	}
}

// TestEncodeStamps: a stamp is four 16-bit chunks, least significant
// first; 0x0001_0002_0003_0004 = 281 483 566 841 860 ns →
// 4, 3, 2, 1; 65 535 → 65 535, 0, 0, 0. Decoding gives the stamps back,
// and a value no encoder writes is refused.
func TestEncodeStamps(t *testing.T) {
	in := []int64{0x0001_0002_0003_0004, 65535, 0}
	f := encodeStamps(in)
	want := pexec.F32{4, 3, 2, 1, 65535, 0, 0, 0, 0, 0, 0, 0}
	if len(f) != len(want) {
		t.Fatalf("encoded %v, want %v", f, want)
	}
	for i := range want {
		if f[i] != want[i] {
			t.Fatalf("encoded %v, want %v", f, want)
		}
	}
	out, err := decodeStamps(f)
	if err != nil || len(out) != 3 || out[0] != in[0] || out[1] != in[1] || out[2] != in[2] {
		t.Errorf("decoded %v, err %v; want %v", out, err, in)
	}
	// A monotonic clock of a host up for a year: 3.15e16 ns, exact.
	year := int64(31_557_600_000_000_123)
	if out, err := decodeStamps(encodeStamps([]int64{year})); err != nil || out[0] != year {
		t.Errorf("a year's ns: %v, err %v", out, err)
	}
	for _, bad := range []pexec.F32{{1, 2, 3}, {1.5, 0, 0, 0}, {65536, 0, 0, 0}, {-1, 0, 0, 0}} {
		if _, err := decodeStamps(bad); err == nil {
			t.Errorf("%v: decoded without an error", bad)
		}
	}
}

// TestExitLagEntries: two sizes, three repeats, µs per call:
//
//	256 B:   40 60 50  → median 50, min 40, max 60
//	4 KiB:   90 70 0   → median 70, min 0 (kept as 1 ns), max 90
//
// each an entry {core_exit_lag, cores=2, size the bytes, context the
// burst's 25 µs = 25 000 ns, ranks 4, 3 samples}, valid op times.
func TestExitLagEntries(t *testing.T) {
	es, err := exitLagEntries(configs.CoreExitLagKind, [][]float64{us(40, 60, 50), us(90, 70, 0)}, []int64{256, 4096}, 25_000, 4, 2)
	if err != nil || len(es) != 2 {
		t.Fatalf("entries %+v, err %v; want 2", es, err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	for i, w := range []struct {
		size           int64
		med, min, maxS float64
	}{{256, 50e-6, 40e-6, 60e-6}, {4096, 70e-6, 1e-9, 90e-6}} {
		e := es[i]
		if e.Kind != configs.CoreExitLagKind || e.Shape != "cores=2" || e.Size != w.size || e.Context != 25_000 || e.Ranks != 4 || e.Samples != 3 ||
			!near(e.TimeS, w.med) || !near(e.TimeMinS, w.min) || !near(e.TimeMaxS, w.maxS) {
			t.Errorf("entry %d: %+v; want core_exit_lag cores=2 size %d context 25000 ranks 4, %g s (%g–%g)", i, e, w.size, w.med, w.min, w.maxS)
		}
	}
	if err := configs.ValidateOpTimes("op_time", es); err != nil {
		t.Errorf("not valid op times: %v", err)
	}
	if _, err := exitLagEntries(configs.CoreExitLagKind, [][]float64{us(40)}, []int64{256, 4096}, 25_000, 4, 2); err == nil {
		t.Error("1 size of lags for 2 sizes: no error")
	}
}

// TestSplitExitLag: (all_reduce, burst, lag) triples of two repeats →
// (all_reduce, burst) pairs and lags; a count not a multiple of three is
// an error.
func TestSplitExitLag(t *testing.T) {
	ab, lag, err := splitExitLag([][]float64{{1, 2, 3, 4, 5, 6}})
	if err != nil || len(ab) != 1 || len(lag) != 1 {
		t.Fatalf("split: %v %v, err %v", ab, lag, err)
	}
	if a := ab[0]; len(a) != 4 || a[0] != 1 || a[1] != 2 || a[2] != 4 || a[3] != 5 {
		t.Errorf("(all_reduce, burst) %v, want [1 2 4 5]", a)
	}
	if l := lag[0]; len(l) != 2 || l[0] != 3 || l[1] != 6 {
		t.Errorf("lags %v, want [3 6]", l)
	}
	if _, _, err := splitExitLag([][]float64{{1, 2, 3, 4}}); err == nil {
		t.Error("4 times: no error")
	}
}

// TestAddExitLags: the core-wait loop's groups 1–2 with every pair
// computing and 3–4 beside idle ranks (idle 3, ring 5), one repeat at the
// three sizes of CoreWaitSizes, (all_reduce, burst wall) and the exit lag,
// µs:
//
//	group  burst walls (3 sizes)  median  exit lags       entries
//	1      10 12 11               11      50 60 70        core_exit_lag at 11 000 ns
//	2      11 11 11               11      40 40 40        core_exit_lag at 11 001 ns (11 000 taken)
//	3      20 20 20               20      30 30 30        core_exit_lag_idle at 20 000 ns
//	4      30 29 31               30      35 36 37        core_exit_lag_idle at 30 000 ns
//
// → 12 entries, valid op times, and one note per kind.
func TestAddExitLags(t *testing.T) {
	walls := [][]float64{nil, {10, 12, 11}, {11, 11, 11}, {20, 20, 20}, {30, 29, 31}}
	lag := [][]float64{nil, {50, 60, 70}, {40, 40, 40}, {30, 30, 30}, {35, 36, 37}}
	times, lags := make([][][]float64, 5), make([][][]float64, 5)
	for i := 1; i < 5; i++ {
		for s := range CoreWaitSizes {
			times[i] = append(times[i], us(5, walls[i][s]))
			lags[i] = append(lags[i], us(lag[i][s]))
		}
	}
	cal := &configs.Calibration{}
	if err := addExitLags(cal, times, lags, 3, 5, 4, 2, 1); err != nil {
		t.Fatal(err)
	}
	if len(cal.OpTimes) != 12 || len(cal.Info.Notes) != 2 {
		t.Fatalf("%d entries and %d notes, want 12 and 2", len(cal.OpTimes), len(cal.Info.Notes))
	}
	if err := configs.ValidateOpTimes("op_time", cal.OpTimes); err != nil {
		t.Errorf("not valid op times: %v", err)
	}
	type at struct {
		kind    string
		context int64
		size    int64
	}
	got := map[at]float64{}
	for _, e := range cal.OpTimes {
		got[at{e.Kind, e.Context, e.Size}] = e.TimeS
	}
	for _, w := range []struct {
		at
		us float64
	}{
		{at{configs.CoreExitLagKind, 11_000, 256}, 50}, {at{configs.CoreExitLagKind, 11_000, 32768}, 70},
		{at{configs.CoreExitLagKind, 11_001, 4096}, 40},
		{at{configs.CoreExitLagIdleKind, 20_000, 256}, 30}, {at{configs.CoreExitLagIdleKind, 30_000, 4096}, 36},
	} {
		if v, ok := got[w.at]; !ok || math.Abs(v-w.us*1e-6) > 1e-12 {
			t.Errorf("%+v: %g s (present %t), want %g µs", w.at, v, ok, w.us)
		}
	}
}
