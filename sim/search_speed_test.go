package sim

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"slices"
	"sort"
	"testing"
)

// sortRows sorts positions and then moves the rows; sorting the rows
// themselves with sort.SliceStable and the same comparator (what it did
// before) must give the same order, row for row, for every objective —
// with ties at every key, unknown statuses, rows without an estimate and
// NaN objectives, where only the same sequence of comparisons gives the
// same answer (sortRows then sorts every position as before), and with
// rows as Search makes them (every feasible and violating row estimated,
// no NaN: sortRows then sorts only those and leaves the rest in
// enumeration order), all of one class or mixed.
func TestSortRowsByPositionIsSortingRows(t *testing.T) {
	rng := rand.New(rand.NewSource(29))
	for _, clean := range []bool{false, true} {
		statuses := []string{StatusFeasible, StatusViolates, StatusDoesNotFit, "unknown"}
		vals := []float64{1, 2, 3, math.NaN()}
		if clean {
			statuses, vals = statuses[:3], vals[:3]
		}
		for _, n := range []int{0, 1, 2, 19, 20, 21, 287, 1400} {
			for _, obj := range []string{ObjectiveTPS, ObjectiveTPOT, ObjectiveTTFT} {
				for _, only := range []int{-1, 0, 2} { // every status mixed, or one alone
					rows := make([]SearchRow, n)
					for i := range rows {
						r := &rows[i]
						r.index, r.Status = i, statuses[rng.Intn(len(statuses))]
						if only >= 0 {
							r.Status = statuses[only]
						}
						r.MemoryBytes = int64(rng.Intn(3))
						if r.Status != StatusDoesNotFit && (clean || rng.Intn(8) > 0) {
							r.Quick = &QuickEstimate{TPOTS: vals[rng.Intn(len(vals))], TTFTS: vals[rng.Intn(len(vals))], TokensPerS: vals[rng.Intn(len(vals))]}
						}
					}
					if got := sortedHead(rows, obj, make([]int32, n)) >= 0; clean && !got {
						t.Fatalf("%d rows as Search makes them, objective %s: not sorted as such", n, obj)
					}
					want := append([]SearchRow(nil), rows...)
					sort.SliceStable(want, func(i, j int) bool { return rowLess(&want[i], &want[j], obj) })
					sortRows(rows, obj)
					for i := range rows {
						if rows[i].index != want[i].index || rows[i].Quick != want[i].Quick {
							t.Fatalf("%d rows (clean %v, status %d), objective %s: position %d holds row %d, sorting rows puts row %d there", n, clean, only, obj, i, rows[i].index, want[i].index)
						}
					}
				}
			}
		}
	}
}

// Search takes each candidate's layer map from layerMaps, remembered per
// (pipeline depth, variant): every candidate of searches over models whose
// layers do and do not divide evenly, with and without embeddings, must
// get its own LayerMap.
func TestLayerMapsAreEachCandidatesOwn(t *testing.T) {
	for _, c := range []struct {
		gpus, layers int
		ends         bool
	}{{64, 128, true}, {64, 30, false}, {48, 7, true}, {16384, 128, true}} {
		spec, err := SyntheticSearchSpec(c.gpus)
		if err != nil {
			t.Fatal(err)
		}
		spec.Config.Model.Layers = c.layers
		spec.Config.Model.Embeddings, spec.Config.Model.LMHead = c.ends, c.ends
		cands, _ := spec.Enumerate()
		maps, shared := layerMaps{}, 0
		for _, cand := range cands {
			got, want := maps.of(cand), cand.LayerMap()
			if !slices.Equal(got, want) || (got == nil) != (want == nil) {
				t.Fatalf("%d layers on %d GPUs, %s: layer map %v, its own %v", c.layers, c.gpus, cand.Name(), got, want)
			}
			if len(maps) > 0 && got != nil {
				shared++
			}
		}
		if c.gpus == 16384 && shared == 0 {
			t.Fatalf("%d GPUs: no candidate has a layer map to share", c.gpus)
		}
	}
}

// RunSearch sets NoFullRange: Refine's re-runs leave out the GPU's range
// ends. Everything a search reports (the result's JSON: rows, full
// columns, TPOT differences, decode steps, timeline counts) must be the
// same with and without them, and each re-run's whole estimate the same
// but for its Range, which is then the nominal value — on a search whose
// GPU has ranges, so the ends differ from the nominal value otherwise.
func TestSearchNoFullRangeKeepsWhatSearchReports(t *testing.T) {
	spec := syntheticSpec(t, 64)
	spec.Config.Workload.Batch, spec.Config.Workload.Context = 64, 1024 // so candidates fit
	run := func(noRange bool) *SearchResult {
		sp := spec
		sp.NoFullRange = noRange
		r, err := Search(sp)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Refine(sp, 4, Options{}, nil); err != nil {
			t.Fatal(err)
		}
		r.ElapsedS, r.CandidatesPerS, r.FullElapsedS = 0, 0, 0
		return r
	}
	with, without := run(false), run(true)
	a, err := json.Marshal(with)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(without)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("the search's JSON differs without the re-runs' range ends")
	}
	n := 0
	for i := range with.Rows {
		fw, fo := with.Rows[i].FullEstimate, without.Rows[i].FullEstimate
		if fw == nil {
			continue
		}
		if fw.Range.TPOTS.Min == fw.Range.TPOTS.Max {
			t.Fatalf("%s: the range ends are the nominal TPOT: nothing to leave out", with.Rows[i].Name())
		}
		nominal := Range{TTFTS: Spread{fo.Prefill.TTFTS, fo.Prefill.TTFTS, fo.Prefill.TTFTS},
			TPOTS:      Spread{fo.Decode.TPOTS, fo.Decode.TPOTS, fo.Decode.TPOTS},
			TokensPerS: Spread{fo.Decode.TokensPerS, fo.Decode.TokensPerS, fo.Decode.TokensPerS}}
		if fo.Range != nominal {
			t.Fatalf("%s: Range %+v without the ends, want the nominal %+v", with.Rows[i].Name(), fo.Range, nominal)
		}
		c := *fo
		c.Range = fw.Range
		x, err := json.Marshal(fw)
		if err != nil {
			t.Fatal(err)
		}
		y, err := json.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			t.Fatalf("%s: the full estimate differs beyond its Range", with.Rows[i].Name())
		}
		n++
	}
	if n < 4 {
		t.Fatalf("%d re-runs compared, want 4", n)
	}
}
