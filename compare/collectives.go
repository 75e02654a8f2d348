package compare

// partbench collectives --measured FILE: a real nccl-tests run beside the
// model of the same collective, sizes and rank count on a topology preset.

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/nccltests"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/stats"
	"github.com/partbench/partbench/topology"
)

// CollectiveCompareRow is one size: nccl-tests' out-of-place figures and
// the model's.
type CollectiveCompareRow struct {
	SizeBytes              int64               `json:"size_bytes"`
	Count                  int64               `json:"count"`
	MeasuredTimeS          float64             `json:"measured_time_s"`
	MeasuredBusBWBytesPerS float64             `json:"measured_busbw_bytes_per_s"`
	Algo                   commcount.Algorithm `json:"algo"`
	// NCCLAlgo is Algo as NCCL names it (Ring, Tree, NVLS, NVLSTree).
	NCCLAlgo              string  `json:"nccl_algo"`
	Proto                 string  `json:"proto"`
	ModeledTimeS          float64 `json:"modeled_time_s"`
	ModeledBusBWBytesPerS float64 `json:"modeled_busbw_bytes_per_s"`
	// BusBWRelErr is stats.ModelError of busbw, (modeled − measured) /
	// measured; null when the
	// measured busbw is 0 (nccl-tests prints 0.00 below ~10 kB).
	BusBWRelErr *float64 `json:"busbw_rel_err"`
}

// CollectiveCompare is one nccl-tests file against the model.
type CollectiveCompare struct {
	File         string       `json:"file"`
	Binary       string       `json:"binary"`
	TestsVersion string       `json:"nccl_tests_version,omitempty"`
	NCCLVersion  string       `json:"nccl_version,omitempty"`
	Op           commcount.Op `json:"op"`
	Ranks        int          `json:"ranks"`
	Type         string       `json:"type"`
	Hosts        []string     `json:"hosts"`
	GPUs         []string     `json:"gpus"`
	// CUDAGraph is nccl-tests' graph: N > 0 (-G): launches replayed from a
	// CUDA graph rather than issued by the host each iteration.
	CUDAGraph bool `json:"cuda_graph"`
	// GPUsPerThread is nccl-tests' -g: the GPUs one thread launches on.
	GPUsPerThread int `json:"gpus_per_thread"`
	// Topology and GPU are the preset the model ran on.
	Topology string                 `json:"topology"`
	GPU      string                 `json:"gpu"`
	Rows     []CollectiveCompareRow `json:"rows"`
	// Over the sizes ≥ 1 MiB with a measured busbw: how many, the median
	// |error| (null when none) and how many are beyond 15 %.
	BarPoints       int      `json:"points_at_least_1mib"`
	MedianAbsRelErr *float64 `json:"median_abs_busbw_rel_err"`
	BeyondBar       int      `json:"points_beyond_15pct"`
}

// CollectiveRun models out's collective on the first out.NRanks()
// ranks of sys for every size of out, with opt, and holds it against out's
// out-of-place figures.
func CollectiveRun(out *nccltests.Output, sys topology.System, opt sim.CollectiveOptions) (CollectiveCompare, error) {
	c := CollectiveCompare{File: out.Name, Binary: out.Binary, TestsVersion: out.TestsVersion,
		NCCLVersion: nccltests.VersionString(out.LibraryCode), Op: out.Op, Ranks: out.NRanks(),
		Hosts: out.Hosts(), GPUs: out.GPUs(), CUDAGraph: out.Graph > 0, GPUsPerThread: out.NGPUs,
		Topology: sys.Topology.Name, GPU: sys.GPU.Name, Type: out.Rows[0].Type}
	switch {
	case c.Op == "" && out.Binary == "":
		return c, fmt.Errorf("%s: no \"# Collective test starting:\" line: give the collective as the argument (all_reduce, …)", out.Name)
	case c.Op == "":
		return c, fmt.Errorf("%s: %s: the model has %s", out.Name, out.Binary, strings.Join(sortedBinaries(), ", "))
	case c.Ranks < 1:
		return c, fmt.Errorf("%s: no \"#  Rank\" lines and no \"# nThread … nGpus\" line: the rank count is unknown (give -g N)", out.Name)
	case c.Ranks > sys.Topology.Size():
		return c, fmt.Errorf("%s: %d ranks, but topology %q has %d GPUs: choose a --topology with at least %d", out.Name, c.Ranks, sys.Topology.Name, sys.Topology.Size(), c.Ranks)
	case !c.Op.Collective() && c.Ranks < 2:
		return c, fmt.Errorf("%s: %s on %d rank: the model needs 2 (it sends from rank 0 to rank N−1)", out.Name, out.Binary, c.Ranks)
	}
	typeBytes, ok := nccltests.TypeBytes(c.Type)
	if !ok {
		return c, fmt.Errorf("%s:%d: type %q: not an nccl-tests type (int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16, f8e4m3, f8e5m2)", out.Name, out.Rows[0].Line, c.Type)
	}
	sizes := make([]int64, len(out.Rows))
	for i, r := range out.Rows {
		if r.Type != c.Type {
			return c, fmt.Errorf("%s:%d: type %q after %q: one -d type per file", out.Name, r.Line, r.Type, c.Type)
		}
		sizes[i] = r.SizeBytes
	}
	modeled, err := sim.CollectiveSweep(sys, c.Op, []int{c.Ranks}, sizes, c.Type, typeBytes, opt)
	if err != nil {
		return c, fmt.Errorf("%s: %w", out.Name, err)
	}
	// As nccl-tests times it: the host's launch of each iteration (none under -G).
	if modeled, err = sim.AddNCCLTestsLaunch(sys, c.Op, modeled, typeBytes, opt, sim.NCCLTestsTiming{GPUsPerThread: out.NGPUs, Graph: out.Graph > 0}); err != nil {
		return c, fmt.Errorf("%s: %w", out.Name, err)
	}
	var barErrs []float64
	for i, r := range out.Rows {
		m := modeled[i]
		if m.SizeBytes != r.SizeBytes {
			return c, fmt.Errorf("%s:%d: size %d is not a whole number of %s elements on each of %d ranks", out.Name, r.Line, r.SizeBytes, c.Type, c.Ranks)
		}
		row := CollectiveCompareRow{SizeBytes: r.SizeBytes, Count: r.Count,
			MeasuredTimeS: r.OutOfPlace.TimeUS * 1e-6, MeasuredBusBWBytesPerS: r.OutOfPlace.BusBWGBPerS * 1e9,
			Algo: m.Algo, NCCLAlgo: sim.NCCLAlgoName(sys.Topology, m.Algo), Proto: m.Proto, ModeledTimeS: m.TimeS, ModeledBusBWBytesPerS: m.BusBWBytesPerS}
		if row.MeasuredBusBWBytesPerS > 0 {
			e, _ := stats.ModelError(row.ModeledBusBWBytesPerS, row.MeasuredBusBWBytesPerS)
			row.BusBWRelErr = &e
			if r.SizeBytes >= sim.FitMinBytes {
				barErrs = append(barErrs, math.Abs(e))
				if math.Abs(e) > sim.FitBarRelErr {
					c.BeyondBar++
				}
			}
		}
		c.Rows = append(c.Rows, row)
	}
	c.BarPoints = len(barErrs)
	if len(barErrs) > 0 {
		med := sim.SummarizeErrors(barErrs).Median
		c.MedianAbsRelErr = &med
	}
	return c, nil
}

func sortedBinaries() []string {
	var out []string
	for b := range nccltests.Binaries {
		out = append(out, b)
	}
	sort.Strings(out)
	return out
}
