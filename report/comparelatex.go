package report

import (
	"fmt"
	"path/filepath"
	"strings"
)

// metricLabels say compare's metric keys in words for a paper's table;
// keys not listed are shown with spaces for underscores.
var metricLabels = map[string]string{
	"ttft_s":                          "TTFT",
	"tpot_s":                          "TPOT",
	"tokens_per_s":                    "TPS",
	"full_ttft_s":                     "TTFT (timeline)",
	"full_tpot_s":                     "TPOT (timeline)",
	"prefill_bubble_fraction":         "prefill bubble",
	"decode_bubble_fraction":          "decode bubble",
	"l2_weight_residency":             "L2 residency",
	"max_total_bytes_per_gpu":         "memory per GPU (max)",
	"collective_calls_per_microbatch": "collectives per µbatch",
	"p2p_sends_per_microbatch":        "p2p sends per µbatch",
	"max_calls_per_rank_per_step":     "NCCL calls per rank-step",
	"max_messages_per_rank_per_step":  "p2p messages per rank-step",
	"bytes_nvlink":                    "NVLink bytes",
	"bytes_pcie":                      "PCIe bytes",
	"bytes_network":                   "network bytes",
	"net_bytes_per_trial":             "network bytes per trial",
	"model_bytes_per_trial":           "modeled bytes per trial",
	"net_bytes_per_request":           "network bytes per request",
	"latency_mean_s":                  "latency (mean)",
	"latency_p50_s":                   "latency (median)",
	"latency_p95_s":                   "latency (p95)",
	"latency_per_request_s":           "latency per request",
	"avg_util":                        "utilization",
	"execute_s":                       "execute",
	"overhead_s":                      "framework overhead",
	"gap_bytes_ratio":                 "bytes ratio",
	"gap_latency_ratio":               "latency ratio",
	"measured":                        "measured",
	"modeled":                         "modeled",
}

// MetricLabel is a metric key in words (metricLabels, else the key with
// spaces for underscores and a run's _measured/_modeled said as such).
func MetricLabel(key string) string {
	if l, ok := metricLabels[key]; ok {
		return l
	}
	for _, side := range []string{"measured", "modeled", "emulated"} {
		if base, ok := strings.CutSuffix(key, "_"+side); ok {
			return MetricLabel(base) + " (" + side + ")"
		}
	}
	return strings.ReplaceAll(key, "_", " ")
}

// fileLabel is how a table names a compared file: its base name without
// ".json" (a caption or column head carries no directory).
func fileLabel(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".json")
}

// LaTeXGrid is the comparison for a paper: metrics in words, files by base
// name, units in the metric's cell, and a caption that names what is
// compared without paths.
func (c *Comparison) LaTeXGrid() Grid {
	names := make([]string, len(c.Files))
	for i, f := range c.Files {
		names[i] = fileLabel(f)
	}
	g := Grid{Title: fmt.Sprintf("%s against %s: values and relative differences (Δ, %%)", strings.Join(names[1:], ", "), names[0]),
		Header: []string{"record", "metric", names[0]}}
	for _, n := range names[1:] {
		g.Header = append(g.Header, n, "Δ (%)")
	}
	for _, r := range c.Rows {
		metric := MetricLabel(r.Metric)
		if r.Unit != "" && r.Unit != "count" && r.Unit != "fraction" && r.Unit != "ratio" {
			metric += " (" + r.Unit + ")"
		}
		g.Rows = append(g.Rows, append([]string{r.Key, metric}, rowCells(r)...))
	}
	for _, n := range c.Unmatched {
		for i, f := range c.Files {
			n = strings.ReplaceAll(n, f, names[i])
		}
		g.Notes = append(g.Notes, n)
	}
	return g
}
