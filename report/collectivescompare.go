package report

// partbench collectives --measured FILE: a real nccl-tests run beside the
// model of the same collective, sizes and rank count on a topology preset.

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/nccltests"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/stats"
	"github.com/partbench/partbench/topology"
)

// CollectivesCompareSchema names the JSON layout of collectives --measured.
const CollectivesCompareSchema = "partbench.collectives-compare/v1"

// CollectiveCompareRow is one size: nccl-tests' out-of-place figures and
// the model's.
type CollectiveCompareRow struct {
	SizeBytes              int64   `json:"size_bytes"`
	Count                  int64   `json:"count"`
	MeasuredTimeS          float64 `json:"measured_time_s"`
	MeasuredBusBWBytesPerS float64 `json:"measured_busbw_bytes_per_s"`
	Algo                   string  `json:"algo"`
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

// CompareCollectiveRun models out's collective on the first out.NRanks()
// ranks of sys for every size of out, with opt, and holds it against out's
// out-of-place figures.
func CompareCollectiveRun(out *nccltests.Output, sys topology.System, opt sim.CollectiveOptions) (CollectiveCompare, error) {
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

type collectivesCompareDoc struct {
	Schema string              `json:"schema"`
	Files  []CollectiveCompare `json:"files"`
	Fit    *sim.CollectiveFit  `json:"fit,omitempty"`
}

// WriteCollectivesCompare writes the comparisons in format: table and
// markdown a header and a grid per file, csv one row per size of every file,
// json every file under partbench.collectives-compare/v1. fit, when not
// nil, is the system's constants fitted to the files: json carries it, table
// and markdown end with it as a [topology.collectives] section, csv refuses it.
func WriteCollectivesCompare(w io.Writer, format string, cs []CollectiveCompare, fit *sim.CollectiveFit) error {
	switch format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(collectivesCompareDoc{Schema: CollectivesCompareSchema, Files: cs, Fit: fit})
	case FormatCSV:
		if fit != nil {
			return fmt.Errorf("--fit with --format csv: the fit is no row of sizes; use table, markdown or json")
		}
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"file", "op", "ranks", "size_bytes", "measured_time_us", "measured_busbw_gb_per_s",
			"algo", "proto", "modeled_time_us", "modeled_busbw_gb_per_s", "busbw_error_pct"})
		for _, c := range cs {
			for _, r := range c.Rows {
				e := ""
				if r.BusBWRelErr != nil {
					e = strconv.FormatFloat(100**r.BusBWRelErr, 'f', 2, 64)
				}
				_ = cw.Write([]string{c.File, string(c.Op), strconv.Itoa(c.Ranks), strconv.FormatInt(r.SizeBytes, 10),
					strconv.FormatFloat(r.MeasuredTimeS*1e6, 'f', 2, 64), strconv.FormatFloat(r.MeasuredBusBWBytesPerS/1e9, 'f', 2, 64),
					r.NCCLAlgo, r.Proto, strconv.FormatFloat(r.ModeledTimeS*1e6, 'f', 2, 64), strconv.FormatFloat(r.ModeledBusBWBytesPerS/1e9, 'f', 2, 64), e})
			}
		}
		cw.Flush()
		return cw.Error()
	}
	for i, c := range cs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		head := compareHeader(c)
		if format == FormatMarkdown {
			fmt.Fprintf(w, "### %s\n\n", head[0])
			for _, l := range head[1:] {
				fmt.Fprintf(w, "- %s\n", l)
			}
			fmt.Fprintln(w)
		} else {
			for _, l := range head {
				fmt.Fprintf(w, "# %s\n", l)
			}
		}
		g := Grid{Header: []string{"size (B)", "measured time (µs)", "measured busbw (GB/s)", "model algo/proto", "model time (µs)", "model busbw (GB/s)", "busbw error " + stats.ErrorDefinition + " (%)"}}
		for _, r := range c.Rows {
			e := "—"
			if r.BusBWRelErr != nil {
				e = fmt.Sprintf("%+.1f", 100**r.BusBWRelErr)
			}
			g.Rows = append(g.Rows, []string{strconv.FormatInt(r.SizeBytes, 10), strings.TrimSpace(ncclTime(r.MeasuredTimeS * 1e6)),
				fmt.Sprintf("%.2f", r.MeasuredBusBWBytesPerS/1e9), r.NCCLAlgo + "/" + r.Proto, strings.TrimSpace(ncclTime(r.ModeledTimeS * 1e6)),
				fmt.Sprintf("%.2f", r.ModeledBusBWBytesPerS/1e9), e})
		}
		g.Notes = []string{compareSummary(c)}
		if err := WriteGrids(w, format, g); err != nil {
			return err
		}
	}
	if fit != nil {
		return writeCollectiveFit(w, format, fit)
	}
	return nil
}

// writeCollectiveFit prints a fit's errors and its constants as the
// [topology.collectives] section a config or topology file takes.
func writeCollectiveFit(w io.Writer, format string, fit *sim.CollectiveFit) error {
	lines := []string{
		fmt.Sprintf("collective constants fitted to %d sizes ≥ 1 MiB: max |error| %.1f %% → %.1f %%, median %.1f %% → %.1f %%",
			fit.Points, 100*fit.Before.Max, 100*fit.After.Max, 100*fit.Before.Median, 100*fit.After.Median),
		"to use them, put this section in the config's [topology] (model, run, search read it):",
	}
	tw := &topology.TOMLWriter{}
	tw.Table("topology.collectives", "")
	for _, k := range fit.Tuning.Keys() {
		var v any = *k.Val
		if strings.HasSuffix(k.Key, "_bytes") && *k.Val == math.Trunc(*k.Val) && math.Abs(*k.Val) < 1<<53 {
			v = int64(*k.Val) // a byte count reads as one: 33554432, not 3.3554432e+07
		}
		tw.KV(k.Key, v, "")
	}
	tw.KV("source", fit.Tuning.Source, "")
	if format == FormatMarkdown {
		_, err := fmt.Fprintf(w, "\n### Fit\n\n- %s\n- %s\n\n```toml\n%s```\n", lines[0], lines[1], tw.String())
		return err
	}
	_, err := fmt.Fprintf(w, "\n# %s\n# %s\n%s", lines[0], lines[1], tw.String())
	return err
}

// compareHeader is the lines above a file's grid: the title first.
func compareHeader(c CollectiveCompare) []string {
	versions := "nccl-tests version not printed"
	if c.TestsVersion != "" {
		versions = "nccl-tests " + c.TestsVersion + ", NCCL " + c.NCCLVersion
	}
	hosts := fmt.Sprintf("%d host", len(c.Hosts))
	if len(c.Hosts) != 1 {
		hosts += "s"
	}
	if len(c.Hosts) > 0 && len(c.Hosts) <= 4 {
		hosts += " (" + strings.Join(c.Hosts, ", ") + ")"
	}
	gpus := "GPU not printed"
	if len(c.GPUs) > 0 {
		gpus = strings.Join(c.GPUs, ", ")
	}
	lines := []string{
		fmt.Sprintf("%s: %s, %d ranks, %s (%s)", c.File, c.Binary, c.Ranks, c.Type, versions),
		fmt.Sprintf("measured on %d× %s on %s; modeled on %s (%s), ranks 0..%d", c.Ranks, gpus, hosts, c.Topology, c.GPU, c.Ranks-1),
		"measured: out-of-place time and busbw; error = (modeled − measured) / measured busbw; GB/s = 1e9 B/s",
	}
	if c.CUDAGraph {
		lines = append(lines, "CUDA graphs: yes (graph ≥ 1): the measured times carry no per-iteration host launch, as the model's")
	} else {
		lines = append(lines, fmt.Sprintf("CUDA graphs: no (graph: 0): the modeled times add nccl-tests' host launch, %.1f µs per iteration for %d GPU(s) per thread, hidden as the GPU time grows (docs/costmodel.md)",
			1e6*sim.NCCLTestsTiming{GPUsPerThread: c.GPUsPerThread}.HostS(), max(c.GPUsPerThread, 1)))
	}
	return lines
}

func compareSummary(c CollectiveCompare) string {
	if c.MedianAbsRelErr == nil {
		return "no size ≥ 1 MiB with a measured busbw: no median |error| (docs/validation.md's bar is every point ≥ 1 MiB within 15 %)"
	}
	return fmt.Sprintf("sizes ≥ 1 MiB: %d points, median |error| %.1f %%, %d beyond 15 %% (docs/validation.md's bar)",
		c.BarPoints, 100**c.MedianAbsRelErr, c.BeyondBar)
}
