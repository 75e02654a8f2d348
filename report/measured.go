package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// ModelMeasuredSchema is the JSON document of `model --measured`.
const ModelMeasuredSchema = "partbench.model-measured/v1"

type modelMeasuredDoc struct {
	Schema  string              `json:"schema"`
	File    string              `json:"file"`
	Compare sim.MeasuredCompare `json:"compare"`
	Fit     *sim.RuntimeFit     `json:"fit,omitempty"`
}

// measuredUnits is how each metric is printed: its column label and scale.
var measuredUnits = map[string]struct {
	label string
	scale float64
}{
	"ttft_s": {"TTFT (ms)", 1e3}, "tpot_s": {"TPOT (ms)", 1e3}, "e2e_s": {"E2E (ms)", 1e3}, "tokens_per_s": {"tok/s", 1},
}

// WriteModelMeasured writes measured points beside the model: one row per
// metric of each point with its error ((modeled − measured) / measured) and
// the term that dominates the modeled number. fit, when not nil, is the
// runtime fitted to the file: json carries it, table and markdown end with
// it as TOML, csv refuses it.
func WriteModelMeasured(w io.Writer, format, file string, c sim.MeasuredCompare, fit *sim.RuntimeFit) error {
	switch format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(modelMeasuredDoc{Schema: ModelMeasuredSchema, File: file, Compare: c, Fit: fit})
	case FormatCSV:
		if fit != nil {
			return fmt.Errorf("--fit with --format csv: the fit is no row of points; use table, markdown or json")
		}
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"source", "batch", "input", "output", "metric", "measured", "modeled", "error_pct", "term", "term_share"})
		f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
		for _, r := range c.Rows {
			_ = cw.Write([]string{r.Source, strconv.Itoa(r.Batch), strconv.Itoa(r.Input), strconv.Itoa(r.Output), r.Metric,
				f(r.Measured), f(r.Modeled), strconv.FormatFloat(100*r.RelErr, 'f', 2, 64), r.Term, f(r.TermShare)})
		}
		cw.Flush()
		return cw.Error()
	}
	rt := "the hardware's own fixed costs (no runtime)"
	if c.Runtime != "" {
		rt = "runtime " + c.Runtime
	}
	g := Grid{Title: fmt.Sprintf("%s beside the model (%s, %s)", file, c.Config, rt),
		Header: []string{"point", "batch", "input", "output", "metric", "measured", "modeled", "error (%)", "dominant term"}}
	for _, r := range c.Rows {
		u := measuredUnits[r.Metric]
		g.Rows = append(g.Rows, []string{r.Source, itoa(r.Batch), itoa(r.Input), itoa(r.Output), u.label,
			fmt.Sprintf("%.3f", r.Measured*u.scale), fmt.Sprintf("%.3f", r.Modeled*u.scale), fmt.Sprintf("%+.1f", 100*r.RelErr),
			fmt.Sprintf("%s (%.0f %%)", r.Term, 100*r.TermShare)})
	}
	g.Notes = []string{fmt.Sprintf("error = (modeled − measured) / measured; median |error| %.1f %%, max %.1f %% over %d values",
		100*c.Errors.Median, 100*c.Errors.Max, len(c.Rows))}
	if err := WriteGrids(w, format, g); err != nil {
		return err
	}
	if fit == nil {
		return nil
	}
	lines := []string{
		fmt.Sprintf("runtime fitted to %d values (%s): median |error| %.1f %% → %.1f %%, max %.1f %% → %.1f %%",
			fit.Rows, strings.Join(fit.Fitted, ", "), 100*fit.Before.Median, 100*fit.After.Median, 100*fit.Before.Max, 100*fit.After.Max),
		"to use it, put these sections in the config (model and search read them):",
	}
	r := fit.Runtime
	tw := &topology.TOMLWriter{}
	tw.Table("runtime", "")
	tw.KV("name", r.Name, "")
	tw.KV("engine", r.Engine, "")
	tw.KV("step_overhead_s", r.StepOverheadS, "")
	tw.KV("step_per_seq_s", r.StepPerSeqS, "")
	tw.KV("step_per_token_s", r.StepPerTokenS, "")
	tw.KV("kernel_launch_s", r.KernelLaunchS, "")
	tw.KV("cuda_graphs", r.CUDAGraphs, "")
	tw.KV("graph_launch_s", r.GraphLaunchS, "")
	tw.KV("graph_kernel_s", r.GraphKernelS, "")
	tw.KV("all_reduce", r.AllReduce, "")
	if r.AllReduce == topology.AllReduceCustom {
		tw.KV("custom_all_reduce_max_bytes", r.CustomAllReduceMaxBytes, "")
		tw.KV("custom_all_reduce_fixed_s", r.CustomAllReduceFixedS, "")
	}
	tw.Table("hardware", "")
	tw.KV("compute_efficiency", fit.ComputeEfficiency, "")
	if format == FormatMarkdown {
		_, err := fmt.Fprintf(w, "\n### Fit\n\n- %s\n- %s\n\n```toml\n%s```\n", lines[0], lines[1], tw.String())
		return err
	}
	_, err := fmt.Fprintf(w, "\n# %s\n# %s\n%s", lines[0], lines[1], tw.String())
	return err
}
