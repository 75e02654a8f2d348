package claims

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/fileio"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// File is a claims TOML file.
type File struct {
	Version   int     `toml:"version"`
	Title     string  `toml:"title"`
	Source    string  `toml:"source"`
	Tolerance float64 `toml:"tolerance"`
	// Link is the client↔server link the remote metrics are priced over
	// (a topology.ClientLinks preset or inline values; default loopback).
	Link string `toml:"link"`
	// Strategies maps the roles claims use ("baseline", "proposed") to configs.
	Strategies map[string]string `toml:"strategies"`
	Claims     []Claim           `toml:"claim"`
}

// Claim is one number a document states.
type Claim struct {
	Metric   string  `toml:"metric" json:"metric"`
	Strategy string  `toml:"strategy" json:"strategy"`
	Value    float64 `toml:"value" json:"value"`
	Unit     string  `toml:"unit" json:"unit"`
	Line     int     `toml:"line" json:"line"`
	Layer    int     `toml:"layer" json:"layer,omitempty"` // resume metrics: the pause layer
	Quote    string  `toml:"quote" json:"quote"`
	// Remote metrics: the mode the number is about, the mode a ratio is
	// taken against (ref), and the phase (prefill, decode: the mean decode
	// step, empty: the whole generation).
	Mode  string `toml:"mode" json:"mode,omitempty"`
	Ref   string `toml:"ref" json:"ref,omitempty"`
	Phase string `toml:"phase" json:"phase,omitempty"`
	// Min and Max state a claimed range ("0.7-0.9x", or "more than" with
	// Min alone); Value is then the range's midpoint (Min without Max).
	Min *float64 `toml:"min" json:"min,omitempty"`
	Max *float64 `toml:"max" json:"max,omitempty"`
}

// Metrics lists what a claim may be about.
var Metrics = map[string]string{
	"tokens_per_s":          "decode throughput over the batch, tok/s",
	"tpot_s":                "time per output token, s",
	"ttft_s":                "time to first token, s",
	"tps_gain":              "throughput of this strategy over the baseline's, minus 1",
	"comm_events_per_batch": "communication events per batch (matched against every named definition)",
	"layer_bytes":           "bytes of one transformer layer's weights",
	"l2_hit_rate":           "share of weight reads served by L2",
	"hbm_traffic_reduction": "HBM bytes per decode step saved against the baseline, fraction",
}

// Parse reads and validates a claims file.
func Parse(r io.Reader, source string) (*File, error) {
	data, err := fileio.ReadBounded(r, source, "claims file", configs.MaxConfigBytes)
	if err != nil {
		return nil, err
	}
	if err := configs.CheckTOMLShape(data, source); err != nil {
		return nil, err
	}
	var f File
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("%s: unknown key %s", source, und[0])
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("%s: version: must be 1 (got %d)", source, f.Version)
	}
	if f.Tolerance == 0 {
		f.Tolerance = 0.25
	}
	if !(f.Tolerance > 0 && f.Tolerance < 10) {
		return nil, fmt.Errorf("%s: tolerance: must be in (0, 10) (got %g)", source, f.Tolerance)
	}
	if f.Strategies["baseline"] == "" {
		return nil, fmt.Errorf("%s: strategies.baseline: must name a config", source)
	}
	for i, c := range f.Claims {
		if _, ok := Metrics[c.Metric]; !ok {
			names := make([]string, 0, len(Metrics))
			for k := range Metrics {
				names = append(names, k)
			}
			return nil, fmt.Errorf("%s: claim[%d].metric: unknown metric %q (known: %s)", source, i, c.Metric, strings.Join(sortStrings(names), ", "))
		}
		if _, ok := f.Strategies[c.Strategy]; !ok {
			return nil, fmt.Errorf("%s: claim[%d].strategy: %q is not in [strategies]", source, i, c.Strategy)
		}
		if math.IsNaN(c.Value) || math.IsInf(c.Value, 0) {
			return nil, fmt.Errorf("%s: claim[%d].value: must be finite", source, i)
		}
		if err := checkRange(&f.Claims[i]); err != nil {
			return nil, fmt.Errorf("%s: claim[%d].%w", source, i, err)
		}
		if err := checkRemote(f.Claims[i]); err != nil {
			return nil, fmt.Errorf("%s: claim[%d].%w", source, i, err)
		}
	}
	if f.Link == "" {
		f.Link = "loopback"
	}
	if _, err := topology.ParseClientLink("link", f.Link); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return &f, nil
}

// Verdicts.
const (
	Consistent   = "consistent"
	Inconsistent = "inconsistent with the model"
	Impossible   = "physically impossible"
	SelfContra   = "contradicts the document's own numbers"
)

// Judgement is one claim held against the model and physics.
type Judgement struct {
	Claim
	Config string `json:"config"`
	// Model is the estimate of the same quantity; Bound the physical limit
	// (BoundKind "max" or "min"; empty when none applies).
	Model     float64 `json:"model"`
	Bound     float64 `json:"bound,omitempty"`
	BoundKind string  `json:"bound_kind,omitempty"`
	BoundName string  `json:"bound_name,omitempty"`
	// Ratio is claimed / model.
	Ratio   float64 `json:"ratio"`
	Verdict string  `json:"verdict"`
	Detail  string  `json:"detail"`
}

// Judge holds every claim of f against the estimates of its strategies
// (keyed by role, as in f.Strategies).
func Judge(f *File, est map[string]*sim.Estimate) ([]Judgement, error) {
	base := est["baseline"]
	var out []Judgement
	for _, c := range f.Claims {
		if IsResumeMetric(c.Metric) || IsRemoteMetric(c.Metric) {
			continue // JudgeResume, JudgeRemote
		}
		e := est[c.Strategy]
		if e == nil {
			return nil, fmt.Errorf("no estimate for strategy %q", c.Strategy)
		}
		j := Judgement{Claim: c, Config: f.Strategies[c.Strategy]}
		judge(&j, e, base, f.Tolerance)
		out = append(out, j)
	}
	return append(out, crossChecks(f, est)...), nil
}

func judge(j *Judgement, e, base *sim.Estimate, tol float64) {
	c := j.Claim
	switch c.Metric {
	case "tokens_per_s":
		j.Model = e.Decode.TokensPerS
		j.Bound, j.BoundKind = float64(e.Batch)/e.Decode.HBMLowerBoundTPOTS, "max"
		j.BoundName = "batch ÷ HBM floor TPOT"
	case "tpot_s":
		j.Model = e.Decode.TPOTS
		j.Bound, j.BoundKind = e.Decode.HBMLowerBoundTPOTS, "min"
		j.BoundName = "HBM floor: KV cache and weights beyond L2 per step ÷ all GPUs' peak HBM bandwidth"
	case "ttft_s":
		j.Model = e.Prefill.TTFTS
	case "tps_gain":
		j.Model = e.Decode.TokensPerS/base.Decode.TokensPerS - 1
		if (j.Model < 0) != (c.Value < 0) {
			j.Detail = fmt.Sprintf("the model has the opposite sign: %s gives %.3g× the baseline's throughput", e.Name, 1+j.Model)
		}
	case "layer_bytes":
		j.Model = float64(e.L2.WholeLayerBytes)
		params := float64(e.L2.WholeLayerBytes) / float64(bytesPerParam(e.DType))
		if math.Abs(c.Value-params)/params < 0.01 {
			j.Detail = fmt.Sprintf("%.4g is the parameter count (%.0f); in %s the layer is %.0f B", c.Value, params, e.DType, j.Model)
		}
	case "l2_hit_rate":
		best := 0.0
		for _, r := range e.Ranks.Kinds { // a kind's ranks share its residency
			best = math.Max(best, r.L2Residency)
		}
		j.Model = best
		j.Bound, j.BoundKind = best, "max"
		j.BoundName = fmt.Sprintf("usable L2 (%.1f MB) ÷ reused weights per GPU (%.1f MB)", float64(e.L2.UsableL2Bytes)/1e6, float64(e.L2.WorkingSetBytes)/1e6)
	case "hbm_traffic_reduction":
		j.Model = 1 - float64(e.Decode.HBMBytesPerStep)/float64(base.Decode.HBMBytesPerStep)
		j.Bound, j.BoundKind = 1-float64(e.Decode.HBMFloorBytesPerStep)/float64(base.Decode.HBMBytesPerStep), "max"
		j.BoundName = "this strategy's HBM floor bytes per step against the baseline's modeled bytes"
	case "comm_events_per_batch":
		judgeEvents(j, e)
		return
	}
	verdict(j, tol)
}

func bytesPerParam(dtype string) int {
	switch dtype {
	case "fp32":
		return 4
	case "fp8":
		return 1
	}
	return 2
}

// verdict: a bound violated is impossible; else within tolerance of the
// model is consistent; else inconsistent by the ratio.
func verdict(j *Judgement, tol float64) {
	if j.Model != 0 {
		j.Ratio = j.Value / j.Model
	}
	switch {
	case j.BoundKind == "max" && j.Value > j.Bound*(1+1e-9):
		j.Verdict = Impossible
		j.add(fmt.Sprintf("%s is at most %.4g; the claim is %.3g× that", j.BoundName, j.Bound, j.Value/j.Bound))
	case j.BoundKind == "min" && j.Value < j.Bound*(1-1e-9):
		j.Verdict = Impossible
		j.add(fmt.Sprintf("%s is at least %.4g; the claim is %.3g× below it", j.BoundName, j.Bound, j.Bound/j.Value))
	case math.Abs(j.Value-j.Model) <= tol*math.Abs(j.Model):
		j.Verdict = Consistent
		j.add(fmt.Sprintf("within ±%.0f %% of the model", 100*tol))
	default:
		j.Verdict = Inconsistent
		j.add(fmt.Sprintf("%.3g× the model's %.4g", j.Ratio, j.Model))
	}
}

func (j *Judgement) add(s string) {
	if j.Detail == "" {
		j.Detail = s
	} else {
		j.Detail += "; " + s
	}
}

// judgeEvents matches a count of "communication events" against every
// definition partbench names; a count that matches none is inconsistent.
func judgeEvents(j *Judgement, e *sim.Estimate) {
	c := e.Comm
	var callsAll, msgsAll int64
	for r := range e.Ranks.Len() {
		callsAll += e.Decode.Comm.CallsPerRank.At(r)
		msgsAll += e.Decode.Comm.MessagesPerRank.At(r)
	}
	defs := []struct {
		name string
		v    float64
	}{
		{"logical collectives + activation sends per micro-batch", float64(c.CollectiveCallsPerMicrobatch + c.P2PSendsPerMicrobatch)},
		{"logical collectives + activation sends per batch", float64((c.CollectiveCallsPerMicrobatch + c.P2PSendsPerMicrobatch) * e.Microbatches)},
		{"logical ops incl. token returns per batch", float64((c.CollectiveCallsPerMicrobatch + c.P2PSendsPerMicrobatch + c.TokenSendsPerMicrobatch) * e.Microbatches)},
		{"NCCL calls of the busiest rank per decode step", float64(c.MaxCallsPerRankPerStep)},
		{"NCCL calls of all ranks per decode step", float64(callsAll)},
		{"p2p messages of the busiest rank per decode step", float64(c.MaxMessagesPerRankPerStep)},
		{"p2p messages of all ranks per decode step", float64(msgsAll)},
	}
	best := 0
	for i, d := range defs {
		if d.v == j.Value {
			j.Model, j.Ratio, j.Verdict = d.v, 1, Consistent
			j.Detail = "equals " + d.name
			return
		}
		if math.Abs(math.Log(d.v/j.Value)) < math.Abs(math.Log(defs[best].v/j.Value)) || defs[best].v == 0 {
			best = i
		}
	}
	j.Model = defs[best].v
	if j.Model != 0 {
		j.Ratio = j.Value / j.Model
	}
	j.Verdict = Inconsistent
	parts := make([]string, len(defs))
	for i, d := range defs {
		parts[i] = fmt.Sprintf("%s %.0f", d.name, d.v)
	}
	j.Detail = "matches no named definition: " + strings.Join(parts, "; ")
}

// crossChecks tests the document against itself: TPS must equal batch ÷
// TPOT for the same strategy, and a stated gain must follow from the stated
// throughputs.
func crossChecks(f *File, est map[string]*sim.Estimate) []Judgement {
	var out []Judgement
	for role := range f.Strategies {
		var tps, tpot *Claim
		for i := range f.Claims {
			c := &f.Claims[i]
			if c.Strategy == role && c.Metric == "tokens_per_s" {
				tps = c
			}
			if c.Strategy == role && c.Metric == "tpot_s" {
				tpot = c
			}
		}
		e := est[role]
		if tps == nil || tpot == nil || e == nil {
			continue
		}
		implied := tps.Value * tpot.Value
		j := Judgement{Claim: Claim{Metric: "tokens_per_s × tpot_s", Strategy: role, Value: implied, Unit: "sequences",
			Line: tps.Line, Quote: tps.Quote}, Config: f.Strategies[role], Model: float64(e.Batch)}
		j.Ratio = implied / float64(e.Batch)
		if math.Abs(implied-float64(e.Batch)) <= f.Tolerance*float64(e.Batch) {
			j.Verdict, j.Detail = Consistent, "TPS × TPOT equals the batch"
		} else {
			j.Verdict = SelfContra
			j.Detail = fmt.Sprintf("TPS × TPOT = %.4g × %.4g s = %.3g sequences decoding at once, but the batch is %d (TPS should be %.4g tok/s for that TPOT)",
				tps.Value, tpot.Value, implied, e.Batch, float64(e.Batch)/tpot.Value)
		}
		out = append(out, j)
	}
	sortJudgements(out)
	return out
}
