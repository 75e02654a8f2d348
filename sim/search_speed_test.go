package sim

import (
	"math"
	"math/rand"
	"slices"
	"sort"
	"testing"
)

// sortRows sorts positions and then moves the rows; sorting the rows
// themselves with the same comparator (what it did before) must give the
// same order, row for row, for every objective — with ties at every key,
// unknown statuses, rows without an estimate and NaN objectives, where
// only the same sequence of comparisons gives the same answer.
func TestSortRowsByPositionIsSortingRows(t *testing.T) {
	rng := rand.New(rand.NewSource(29))
	statuses := []string{StatusFeasible, StatusViolates, StatusDoesNotFit, "unknown"}
	vals := []float64{1, 2, 3, math.NaN()}
	for _, n := range []int{0, 1, 2, 19, 20, 21, 287, 1400} {
		for _, obj := range []string{ObjectiveTPS, ObjectiveTPOT, ObjectiveTTFT} {
			rows := make([]SearchRow, n)
			for i := range rows {
				r := &rows[i]
				r.index, r.Status = i, statuses[rng.Intn(len(statuses))]
				r.MemoryBytes = int64(rng.Intn(3))
				if r.Status != StatusDoesNotFit && rng.Intn(8) > 0 {
					r.Quick = &QuickEstimate{TPOTS: vals[rng.Intn(4)], TTFTS: vals[rng.Intn(4)], TokensPerS: vals[rng.Intn(4)]}
				}
			}
			want := append([]SearchRow(nil), rows...)
			sort.SliceStable(want, func(i, j int) bool { return rowLess(&want[i], &want[j], obj) })
			sortRows(rows, obj)
			for i := range rows {
				if rows[i].index != want[i].index {
					t.Fatalf("%d rows, objective %s: position %d holds row %d, sorting rows puts row %d there", n, obj, i, rows[i].index, want[i].index)
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
