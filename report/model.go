package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// ModelSchema names the JSON layout of `partbench model --dry-run`
// (documented in docs/json-schema.md).
const ModelSchema = "partbench.model/v1"

// ModelDoc is the JSON document of a dry run.
type ModelDoc struct {
	Schema     string          `json:"schema"`
	Version    string          `json:"partbench_version"`
	Strategies []*sim.Estimate `json:"strategies"`
	// Comparison holds each strategy's ratio to the first one.
	Comparison []Ratio `json:"comparison,omitempty"`
}

// Ratio compares one metric of a strategy with the baseline (the first).
type Ratio struct {
	Metric   string  `json:"metric"`
	Strategy string  `json:"strategy"`
	Baseline string  `json:"baseline"`
	Value    float64 `json:"value"`
	Base     float64 `json:"baseline_value"`
	// Ratio is Value / Base; absent when the baseline is 0.
	Ratio *float64 `json:"ratio,omitempty"`
}

// ratioMetrics are the headline metrics compared with the baseline: the
// JSON key, the words and unit a table shows, and how a value is printed.
var ratioMetrics = []struct {
	name, label string
	format      func(float64) string
	get         func(*sim.Estimate) float64
}{
	{"ttft_s", "TTFT (s)", sec, func(e *sim.Estimate) float64 { return e.Prefill.TTFTS }},
	{"tpot_s", "TPOT (ms)", ms, func(e *sim.Estimate) float64 { return e.Decode.TPOTS }},
	{"tokens_per_s", "TPS (tok/s)", num, func(e *sim.Estimate) float64 { return e.Decode.TokensPerS }},
	{"decode_bubble_fraction", "decode bubble (%)", pct, func(e *sim.Estimate) float64 { return e.Decode.BubbleFraction }},
	{"max_total_bytes_per_gpu", "memory per GPU, largest rank (GB)", func(v float64) string { return gbs(int64(v)) }, func(e *sim.Estimate) float64 { return float64(maxRank(e).TotalBytes) }},
	{"collective_calls_per_microbatch", "collective calls per micro-batch", num, func(e *sim.Estimate) float64 { return float64(e.Comm.CollectiveCallsPerMicrobatch) }},
	{"p2p_sends_per_microbatch", "p2p sends per micro-batch", num, func(e *sim.Estimate) float64 { return float64(e.Comm.P2PSendsPerMicrobatch) }},
}

// Comparisons lists the headline metrics of every strategy against the first.
func Comparisons(es []*sim.Estimate) []Ratio {
	if len(es) < 2 {
		return nil
	}
	base := es[0]
	var out []Ratio
	for _, e := range es[1:] {
		for _, m := range ratioMetrics {
			v, b := m.get(e), m.get(base)
			r := Ratio{Metric: m.name, Strategy: e.Name, Baseline: base.Name, Value: v, Base: b}
			if b != 0 {
				q := v / b
				r.Ratio = &q
			}
			out = append(out, r)
		}
	}
	return out
}

// ModelJSON writes the dry-run document. The strategies' per-rank rows
// (100,000 on the largest dry run) are streamed rather than built and
// re-indented whole: the document is encoded with each strategy's rows
// left out ("ranks": null, a strategy's field on a line of its own at its
// depth), and each of those is written with the rows
// (sim.RankRows.WriteIndentedJSON), to the same bytes as the document
// encoded whole (TestModelJSONStreamsRows).
func ModelJSON(w io.Writer, version string, es []*sim.Estimate) error {
	doc := ModelDoc{Schema: ModelSchema, Version: version, Strategies: es, Comparison: Comparisons(es)}
	var stripped []*sim.Estimate // null where es is
	if es != nil {
		stripped = make([]*sim.Estimate, len(es))
	}
	var rows []sim.RankRows // of each strategy that is not nil, in order
	for i, e := range es {
		stripped[i] = e
		if e != nil {
			c := *e
			c.Ranks = sim.RankRows{}
			stripped[i] = &c
			rows = append(rows, e.Ranks)
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	d := doc
	d.Strategies = stripped
	if err := enc.Encode(d); err != nil {
		return err
	}
	const depth = "      " // a strategy's fields: the document's strategies[i]
	marker := []byte("\n" + depth + `"ranks": null`)
	text := buf.Bytes()
	if bytes.Count(text, marker) != len(rows) { // not the layout above: encoded whole
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	for _, r := range rows {
		i := bytes.Index(text, marker)
		if _, err := bw.Write(text[:i+len(marker)-len("null")]); err != nil {
			return err
		}
		if _, err := r.WriteIndentedJSON(bw, depth, "  "); err != nil {
			return err
		}
		text = text[i+len(marker):]
	}
	if _, err := bw.Write(text); err != nil {
		return err
	}
	return bw.Flush()
}

// maxRank is the first rank holding the most memory (a kind's first rank
// is the first of its ranks; all hold the same).
func maxRank(e *sim.Estimate) sim.RankEstimate {
	var best sim.RankEstimate
	for i, k := range e.Ranks.Kinds {
		if i == 0 || k.TotalBytes > best.TotalBytes {
			best = k.RankEstimate
		}
	}
	return best
}

// Number formats.
func ms(s float64) string  { return strconv.FormatFloat(s*1e3, 'f', 3, 64) }
func sec(s float64) string { return strconv.FormatFloat(s, 'f', 3, 64) }
func us(s float64) string  { return strconv.FormatFloat(s*1e6, 'f', 1, 64) }
func gbs(b int64) string   { return strconv.FormatFloat(float64(b)/1e9, 'f', 3, 64) }
func pct(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) }
func num(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
func itoa[T ~int | ~int64](v T) string {
	return strconv.FormatInt(int64(v), 10)
}

// ModelGrids lays out a dry run as tables: summary per strategy and phase,
// memory, communication, collectives, comparison, and (perRank) every rank.
func ModelGrids(es []*sim.Estimate, perRank bool) []Grid {
	summary := Grid{Title: "Estimate (partbench model --dry-run)", Header: []string{
		"strategy", "phase", "GPUs", "TP", "PP", "µbatches", "TTFT (s)", "TPOT (ms)", "TPS (tok/s)",
		"HBM floor TPOT (ms)", "bubble (%)", "bottleneck"}}
	mem := Grid{Title: "Memory per GPU (largest rank; GB = 1e9 B)", Header: []string{
		"strategy", "weights (GB)", "KV cache (GB)", "activations (GB)", "total (GB)", "usable HBM (GB)",
		"reused weights (MB)", "usable L2 (MB)", "L2 residency (%)", "whole-layer L2 residency (%)"}}
	comm := Grid{Title: "Communication (logical ops per micro-batch; calls and messages per rank; bytes per phase)", Header: []string{
		"strategy", "phase", "collectives/µbatch", "p2p sends/µbatch", "token sends/µbatch",
		"NCCL calls/rank (max)", "p2p messages/rank (max)", "NVLink (GB)", "PCIe (GB)", "network (GB)"}}
	coll := Grid{Title: "Collectives as modeled (one per kind and size)", Header: []string{
		"strategy", "phase", "name", "op", "ranks", "size (B)", "count/rank", "algo", "proto", "link", "time (µs)"}}
	var notes []string
	for _, e := range es {
		floor := ms(e.Decode.HBMLowerBoundTPOTS)
		summary.Rows = append(summary.Rows,
			[]string{e.Name, "prefill", itoa(e.GPUs), itoa(e.TP), itoa(e.PP), itoa(e.Microbatches),
				sec(e.Prefill.TTFTS), "", "", "", pct(e.Prefill.BubbleFraction), string(e.Prefill.Bottleneck)},
			[]string{e.Name, "decode", itoa(e.GPUs), itoa(e.TP), itoa(e.PP), itoa(e.Microbatches),
				"", ms(e.Decode.TPOTS), num(e.Decode.TokensPerS), floor, pct(e.Decode.BubbleFraction), string(e.Decode.Bottleneck)})
		r := maxRank(e)
		mem.Rows = append(mem.Rows, []string{e.Name, gbs(r.WeightBytes), gbs(r.KVCacheBytes), gbs(r.ActivationBytes),
			gbs(r.TotalBytes), gbs(r.CapacityBytes), strconv.FormatFloat(float64(e.L2.WorkingSetBytes)/1e6, 'f', 1, 64),
			strconv.FormatFloat(float64(e.L2.UsableL2Bytes)/1e6, 'f', 1, 64), pct(e.L2.WeightResidency), pct(e.L2.WholeLayerResidency)})
		for _, ph := range []struct {
			name string
			pe   sim.PhaseEstimate
		}{{"prefill", e.Prefill}, {"decode step", e.Decode}} {
			c := ph.pe.Comm
			comm.Rows = append(comm.Rows, []string{e.Name, ph.name, itoa(c.CollectiveCallsPerMicrobatch), itoa(c.P2PSendsPerMicrobatch),
				itoa(c.TokenSendsPerMicrobatch), itoa(c.CallsPerRank.Max()), itoa(c.MessagesPerRank.Max()),
				gbs(c.BytesByLink[topology.NVLink]), gbs(c.BytesByLink[topology.PCIe]), gbs(c.BytesByLink[topology.Network])})
		}
		for _, u := range e.Collectives {
			coll.Rows = append(coll.Rows, []string{e.Name, string(u.Phase), u.Name, u.Op, itoa(u.Ranks), itoa(u.Bytes), itoa(u.Count),
				string(u.Algo), u.Proto, string(u.Link), us(u.TimeS)})
		}
		if rg := rangeNote(e); rg != "" {
			notes = append(notes, e.Name+": "+rg)
		}
		for _, n := range e.Notes {
			notes = append(notes, e.Name+": "+n)
		}
	}
	summary.Notes = notes
	grids := []Grid{summary, mem, comm}
	if len(coll.Rows) > 0 {
		grids = append(grids, coll)
	}
	if rs := Comparisons(es); len(rs) > 0 {
		cmp := Grid{Title: fmt.Sprintf("Relative to %s", es[0].Name), Header: []string{"metric", "strategy", "value", es[0].Name, "ratio"}}
		for i, r := range rs {
			m := ratioMetrics[i%len(ratioMetrics)]
			cmp.Rows = append(cmp.Rows, []string{m.label, r.Strategy, m.format(r.Value), m.format(r.Base), ratioString(r.Ratio)})
		}
		grids = append(grids, cmp)
	}
	if perRank {
		for _, e := range es {
			grids = append(grids, rankGrid(e))
		}
	}
	return grids
}

func rankGrid(e *sim.Estimate) Grid {
	steps := steadySteps(e)
	g := Grid{Title: "Per rank: " + e.Name, Header: []string{"rank", "stage", "tp", "layers", "weights (GB)", "KV cache (GB)",
		"activations (GB)", "total (GB)", "L2 residency (%)", "prefill busy (s)", "prefill idle (s)",
		fmt.Sprintf("decode busy (ms, %d steps)", steps), fmt.Sprintf("decode idle (ms, %d steps)", steps),
		"NCCL calls/step", "p2p msgs/step", "decode fixed (ms)", "decode host (ms)"}}
	worst, found := sim.RankEstimate{}, false
	for _, r := range e.Ranks.All() {
		if !found || r.DecodeFixed.TotalS > worst.DecodeFixed.TotalS {
			worst, found = r, true
		}
		layers := ""
		if len(r.Layers) > 0 {
			layers = fmt.Sprintf("%d–%d", r.Layers[0], r.Layers[len(r.Layers)-1])
		}
		g.Rows = append(g.Rows, []string{itoa(r.Rank), itoa(r.Stage), itoa(r.TPIndex), layers, gbs(r.WeightBytes), gbs(r.KVCacheBytes),
			gbs(r.ActivationBytes), gbs(r.TotalBytes), pct(r.L2Residency), sec(r.PrefillBusyS), sec(r.PrefillIdleS),
			ms(r.DecodeBusyS), ms(r.DecodeIdleS), itoa(e.Decode.Comm.CallsPerRank.At(r.Rank)), itoa(e.Decode.Comm.MessagesPerRank.At(r.Rank)),
			ms(r.DecodeFixed.TotalS), ms(r.DecodeFixed.HostS)})
	}
	if found {
		g.Notes = append(g.Notes, fixedNote(e, worst))
	}
	pricingColumn(&g, e)
	if e.DP > 1 {
		g.Notes = append(g.Notes, fmt.Sprintf("rows are replica 0's ranks; the other %d replicas hold and do the same", e.DP-1))
	}
	return g
}

// fixedNote spells out a rank's fixed cost per decode step, the part of
// TPOT no faster kernel removes (docs/costmodel.md, "Fixed costs").
func fixedNote(e *sim.Estimate, r sim.RankEstimate) string {
	f := r.DecodeFixed
	launch := "launch"
	if f.GraphLaunchS > 0 {
		launch = "in-graph gap"
	}
	share := ""
	if e.Decode.TPOTS > 0 {
		share = fmt.Sprintf(", %s %% of TPOT %s ms", pct(f.TotalS/e.Decode.TPOTS), ms(e.Decode.TPOTS))
	}
	host := fmt.Sprintf("host step overhead (scheduling, sampling) %s ms", ms(f.StepOverheadS))
	if f.HostPerSeqS > 0 || f.HostPerTokenS > 0 {
		host = fmt.Sprintf("host %s ms (step %s + per sequence %s + per token %s)", ms(f.HostS), ms(f.StepOverheadS), ms(f.HostPerSeqS), ms(f.HostPerTokenS))
	}
	if e.Runtime != "" {
		host += " from runtime " + e.Runtime
	}
	return fmt.Sprintf("fixed cost per decode step, rank %d (the largest): %d kernels × %s µs %s = %s ms + graph launch %s ms + %s = %s ms%s; prefill %s ms",
		r.Rank, f.Kernels, us(f.LaunchS/float64(max(f.Kernels, 1))), launch, ms(f.LaunchS), ms(f.GraphLaunchS), host, ms(f.TotalS), share, ms(r.PrefillFixed.TotalS))
}

// ModelCSV writes one row per strategy and phase, with perRank one row per
// rank (phase "rank": memory, stage, layers, busy and idle times, fixed
// costs), and one row per modeled collective (phase "collective"), in one
// table with a fixed header: everything the table and markdown forms show.
func ModelCSV(w io.Writer, es []*sim.Estimate, perRank bool) error {
	g := Grid{Header: []string{"strategy", "phase", "rank", "gpus", "tp", "pp", "microbatches", "ttft_s", "tpot_s", "tokens_per_s",
		"hbm_lower_bound_tpot_s", "bubble_fraction", "bottleneck", "weights_bytes", "kv_cache_bytes", "activation_bytes", "total_bytes",
		"capacity_bytes", "l2_residency", "collective_calls_per_microbatch", "p2p_sends_per_microbatch", "token_sends_per_microbatch",
		"max_calls_per_rank", "max_messages_per_rank", "nvlink_bytes", "pcie_bytes", "network_bytes",
		// rank rows (phase "rank"): what the per-rank table shows
		"stage", "tp_index", "first_layer", "last_layer", "prefill_busy_s", "prefill_idle_s", "decode_busy_s", "decode_idle_s",
		"decode_window_steps", "decode_fixed_s", "prefill_fixed_s",
		// collective rows (phase "collective"): the collectives table
		"collective_phase", "collective_name", "collective_op", "collective_ranks", "collective_bytes", "collective_count_per_rank",
		"algo", "proto", "link", "collective_time_s"}}
	col := map[string]int{}
	for i, h := range g.Header {
		col[h] = i
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
	for _, e := range es {
		r := maxRank(e)
		for _, ph := range []struct {
			name string
			pe   sim.PhaseEstimate
		}{{"prefill", e.Prefill}, {"decode", e.Decode}} {
			c := ph.pe.Comm
			ttft, tpot, tps, floor := "", "", "", ""
			if ph.name == "prefill" {
				ttft = f(ph.pe.TTFTS)
			} else {
				tpot, tps, floor = f(ph.pe.TPOTS), f(ph.pe.TokensPerS), f(ph.pe.HBMLowerBoundTPOTS)
			}
			row := make([]string, len(g.Header))
			copy(row, []string{e.Name, ph.name, "", itoa(e.GPUs), itoa(e.TP), itoa(e.PP), itoa(e.Microbatches), ttft, tpot, tps,
				floor, f(ph.pe.BubbleFraction), string(ph.pe.Bottleneck), itoa(r.WeightBytes), itoa(r.KVCacheBytes), itoa(r.ActivationBytes),
				itoa(r.TotalBytes), itoa(r.CapacityBytes), f(e.L2.WeightResidency), itoa(c.CollectiveCallsPerMicrobatch), itoa(c.P2PSendsPerMicrobatch),
				itoa(c.TokenSendsPerMicrobatch), itoa(c.CallsPerRank.Max()), itoa(c.MessagesPerRank.Max()),
				itoa(c.BytesByLink[topology.NVLink]), itoa(c.BytesByLink[topology.PCIe]), itoa(c.BytesByLink[topology.Network])})
			g.Rows = append(g.Rows, row)
		}
		if perRank {
			steps := itoa(steadySteps(e))
			for _, r := range e.Ranks.All() {
				row := make([]string, len(g.Header))
				set := func(k, v string) { row[col[k]] = v }
				row[0], row[1], row[2], row[3], row[4], row[5], row[6] = e.Name, "rank", itoa(r.Rank), itoa(e.GPUs), itoa(e.TP), itoa(e.PP), itoa(e.Microbatches)
				row[13], row[14], row[15], row[16], row[17], row[18] = itoa(r.WeightBytes), itoa(r.KVCacheBytes), itoa(r.ActivationBytes), itoa(r.TotalBytes), itoa(r.CapacityBytes), f(r.L2Residency)
				row[22], row[23] = itoa(e.Decode.Comm.CallsPerRank.At(r.Rank)), itoa(e.Decode.Comm.MessagesPerRank.At(r.Rank))
				set("stage", itoa(r.Stage))
				set("tp_index", itoa(r.TPIndex))
				if len(r.Layers) > 0 {
					set("first_layer", itoa(r.Layers[0]))
					set("last_layer", itoa(r.Layers[len(r.Layers)-1]))
				}
				set("prefill_busy_s", f(r.PrefillBusyS))
				set("prefill_idle_s", f(r.PrefillIdleS))
				set("decode_busy_s", f(r.DecodeBusyS))
				set("decode_idle_s", f(r.DecodeIdleS))
				set("decode_window_steps", steps)
				set("decode_fixed_s", f(r.DecodeFixed.TotalS))
				set("prefill_fixed_s", f(r.PrefillFixed.TotalS))
				g.Rows = append(g.Rows, row)
			}
		}
		for _, u := range e.Collectives {
			row := make([]string, len(g.Header))
			row[0], row[1] = e.Name, "collective"
			for k, v := range map[string]string{"collective_phase": string(u.Phase), "collective_name": u.Name, "collective_op": u.Op,
				"collective_ranks": itoa(u.Ranks), "collective_bytes": itoa(u.Bytes), "collective_count_per_rank": itoa(u.Count),
				"algo": string(u.Algo), "proto": u.Proto, "link": string(u.Link), "collective_time_s": f(u.TimeS)} {
				row[col[k]] = v
			}
			g.Rows = append(g.Rows, row)
		}
	}
	return WriteCSV(w, g)
}

func ratioString(r *float64) string {
	if r == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*r, 'f', 3, 64)
}

// Model writes estimates in format: json (with partbench's version), csv,
// or grids (table, markdown); perRank adds a row per rank.
func Model(w io.Writer, format, version string, es []*sim.Estimate, perRank bool) error {
	switch format {
	case FormatJSON:
		return ModelJSON(w, version, es)
	case FormatCSV:
		return ModelCSV(w, es, perRank)
	}
	return WriteGrids(w, format, ModelGrids(es, perRank)...)
}

// rangeNote is an estimate's uncertainty (JSON range): min / median / max
// of TTFT, TPOT and TPS over the GPU's stated parameter ranges, or "" when
// the GPU states none.
func rangeNote(e *sim.Estimate) string {
	r := e.Range
	if r.TTFTS.Min == r.TTFTS.Max && r.TPOTS.Min == r.TPOTS.Max && r.TokensPerS.Min == r.TokensPerS.Max {
		return ""
	}
	return fmt.Sprintf("range over the stated parameter ranges (min / median / max): TTFT %s / %s / %s s, TPOT %s / %s / %s ms, TPS %s / %s / %s tok/s",
		sec(r.TTFTS.Min), sec(r.TTFTS.Median), sec(r.TTFTS.Max), ms(r.TPOTS.Min), ms(r.TPOTS.Median), ms(r.TPOTS.Max),
		num(r.TokensPerS.Min), num(r.TokensPerS.Median), num(r.TokensPerS.Max))
}

// steadySteps is how many decode steps the per-rank decode busy and idle
// times cover: sim measures them over the steady-state window from step
// n/2 to step n−1 of the n simulated steps (sim.EstimatePlan).
func steadySteps(e *sim.Estimate) int {
	if e.Timeline == nil {
		return 0
	}
	n := 0
	for _, sl := range e.Timeline.All() {
		n = max(n, sl.Step+1)
	}
	return n - 1 - n/2
}
