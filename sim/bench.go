package sim

import (
	"fmt"
	"time"
)

// BenchRun is one timed run of the search benchmark.
type BenchRun struct {
	Enumerated, Feasible, PrunedMemory int
	ElapsedS                           float64
	// Best names the top candidate ("" when none is feasible).
	Best string
}

// BenchSearch times runs searches of SyntheticSearchSpec(gpus), the search
// `partbench bench` reports; runs must be ≥ 1 and gpus a multiple of 8 in
// [8, 32768] (errors name --runs and --gpus).
func BenchSearch(gpus, runs int) (SearchSpec, []BenchRun, error) {
	if runs < 1 {
		return SearchSpec{}, nil, fmt.Errorf("--runs: must be ≥ 1 (got %d)", runs)
	}
	if gpus < 8 || gpus%8 != 0 || gpus > 8*4096 {
		return SearchSpec{}, nil, fmt.Errorf("--gpus: must be a multiple of 8 in [8, 32768] (got %d)", gpus)
	}
	spec, err := SyntheticSearchSpec(gpus)
	if err != nil {
		return SearchSpec{}, nil, err
	}
	var out []BenchRun
	for i := 1; i <= runs; i++ {
		start := time.Now()
		res, err := Search(spec)
		if err != nil {
			return SearchSpec{}, nil, err
		}
		r := BenchRun{Enumerated: res.Enumerated, Feasible: res.Feasible, PrunedMemory: res.PrunedMemory, ElapsedS: time.Since(start).Seconds()}
		if len(res.Rows) > 0 && res.Rows[0].Rank == 1 {
			r.Best = res.Rows[0].Name()
		}
		out = append(out, r)
	}
	return spec, out, nil
}
