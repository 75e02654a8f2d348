package report

// partbench collectives --measured FILE: a real nccl-tests run beside the
// model of the same collective, sizes and rank count on a topology preset.

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/partbench/partbench/compare"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/stats"
	"github.com/partbench/partbench/topology"
)

// CollectivesCompareSchema names the JSON layout of collectives --measured.
const CollectivesCompareSchema = "partbench.collectives-compare/v1"

type collectivesCompareDoc struct {
	Schema string                      `json:"schema"`
	Files  []compare.CollectiveCompare `json:"files"`
	Fit    *sim.CollectiveFit          `json:"fit,omitempty"`
}

// WriteCollectivesCompare writes the comparisons in format: table and
// markdown a header and a grid per file, csv one row per size of every file,
// json every file under partbench.collectives-compare/v1. fit, when not
// nil, is the system's constants fitted to the files: json carries it, table
// and markdown end with it as a [topology.collectives] section, csv refuses it.
func WriteCollectivesCompare(w io.Writer, format string, cs []compare.CollectiveCompare, fit *sim.CollectiveFit) error {
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
func compareHeader(c compare.CollectiveCompare) []string {
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

func compareSummary(c compare.CollectiveCompare) string {
	if c.MedianAbsRelErr == nil {
		return "no size ≥ 1 MiB with a measured busbw: no median |error| (docs/validation.md's bar is every point ≥ 1 MiB within 15 %)"
	}
	return fmt.Sprintf("sizes ≥ 1 MiB: %d points, median |error| %.1f %%, %d beyond 15 %% (docs/validation.md's bar)",
		c.BarPoints, 100**c.MedianAbsRelErr, c.BeyondBar)
}
