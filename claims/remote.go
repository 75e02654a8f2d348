package claims

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// Seeds 000, 001 and 003's metrics: a model driven locally or through a
// server in one of the remote modes (partition.RemoteMode). claim.mode names
// the mode, claim.ref the mode a ratio is taken against, claim.phase the
// request: prefill, decode (the mean decode step) or empty (the whole
// generation: the prefill and every decode step; the session open, kv
// mode's one-time weight upload, is not counted: the seeds leave the
// connection out of their per-run figures).
func init() {
	Metrics["params"] = "parameters of the strategy's model"
	Metrics["weight_bytes"] = "bytes of the weights (what naive mode ships on every request)"
	Metrics["remote_bytes"] = "payload bytes of claim.mode over claim.phase"
	Metrics["remote_latency_s"] = "latency of claim.mode over claim.phase, s"
	Metrics["remote_tokens_per_s"] = "generated tokens over the generation's latency in claim.mode, tok/s"
	Metrics["remote_speedup"] = "latency of claim.ref over claim.mode's"
	Metrics["remote_traffic_reduction"] = "payload bytes of claim.ref over claim.mode's"
	Metrics["remote_gpu_util"] = "share of claim.mode's latency the GPU computes, fraction"
	Metrics["remote_gpu_util_ratio"] = "claim.mode's GPU share over claim.ref's"
}

// IsRemoteMetric reports whether JudgeRemote judges metric.
func IsRemoteMetric(metric string) bool {
	return metric == "params" || metric == "weight_bytes" || strings.HasPrefix(metric, "remote_")
}

func needsRef(metric string) bool {
	return metric == "remote_speedup" || metric == "remote_traffic_reduction" || metric == "remote_gpu_util_ratio"
}

// checkRange fills a range claim's value (the midpoint, or min alone).
func checkRange(c *Claim) error {
	if c.Min == nil {
		if c.Max != nil {
			return errors.New("max: a range needs min too (use min = 0 for \"at most\")")
		}
		return nil
	}
	lo := *c.Min
	if math.IsNaN(lo) || math.IsInf(lo, 0) {
		return errors.New("min: must be finite")
	}
	c.Value = lo
	if c.Max != nil {
		hi := *c.Max
		if math.IsNaN(hi) || math.IsInf(hi, 0) || hi < lo {
			return fmt.Errorf("max: must be finite and at least min %g (got %g)", lo, hi)
		}
		c.Value = (lo + hi) / 2
	}
	return nil
}

// checkRemote validates a remote claim's mode, ref and phase.
func checkRemote(c Claim) error {
	if !IsRemoteMetric(c.Metric) {
		if c.Mode != "" || c.Ref != "" || c.Phase != "" {
			return fmt.Errorf("mode: metric %s takes no mode, ref or phase", c.Metric)
		}
		return nil
	}
	if c.Metric == "params" || c.Metric == "weight_bytes" {
		return nil
	}
	if _, err := partition.ParseRemoteMode(c.Mode); err != nil {
		return fmt.Errorf("mode: %w", err)
	}
	if needsRef(c.Metric) {
		if _, err := partition.ParseRemoteMode(c.Ref); err != nil {
			return fmt.Errorf("ref: metric %s is a ratio against another mode: %w", c.Metric, err)
		}
		if c.Ref == c.Mode {
			return fmt.Errorf("ref: must differ from mode %q", c.Mode)
		}
		if c.Metric == "remote_traffic_reduction" && c.Mode == string(partition.RemoteLocal) {
			return errors.New("mode: local moves no bytes: a traffic reduction needs a remote mode")
		}
	} else if c.Ref != "" {
		return fmt.Errorf("ref: metric %s is not a ratio (got ref %q)", c.Metric, c.Ref)
	}
	switch c.Phase {
	case "", string(partition.Prefill), string(partition.Decode):
	default:
		return fmt.Errorf("phase: must be prefill, decode or empty for the whole generation (got %q)", c.Phase)
	}
	if c.Metric == "remote_tokens_per_s" && c.Phase != "" {
		return errors.New("phase: tokens per second are over the whole generation: leave phase empty")
	}
	return nil
}

// RemoteInput is one strategy's plan, its estimate and its remote modes
// priced over the file's link.
type RemoteInput struct {
	Plan   *partition.Plan
	Est    *sim.Estimate
	Remote *sim.RemoteEstimate
}

// EstimateRemote prices the remote modes of every strategy a remote claim
// of f names, over f.Link, with sim (nil when f has no remote claim).
func EstimateRemote(f *File, simOpts sim.Options) (map[string]*RemoteInput, error) {
	link, err := topology.ParseClientLink("link", f.Link)
	if err != nil {
		return nil, err
	}
	out := map[string]*RemoteInput{}
	for _, c := range f.Claims {
		if !IsRemoteMetric(c.Metric) || out[c.Strategy] != nil {
			continue
		}
		plan, err := partition.LoadPlan(f.Strategies[c.Strategy])
		if err != nil {
			return nil, fmt.Errorf("strategies.%s: %w", c.Strategy, err)
		}
		in := &RemoteInput{Plan: plan}
		if in.Est, err = sim.EstimatePlan(plan, simOpts); err != nil {
			return nil, err
		}
		if in.Remote, err = sim.PriceRemote(plan, sim.RemoteCompute{PrefillS: in.Est.Prefill.TTFTS, DecodeStepS: in.Est.Decode.TPOTS},
			sim.RemoteOptions{Link: link}); err != nil {
			return nil, fmt.Errorf("strategies.%s: %w", c.Strategy, err)
		}
		out[c.Strategy] = in
	}
	return out, nil
}

// phaseCost is one mode over one phase: latency, payload bytes, device
// time, requests, and the floors: the link's (bytes ÷ bandwidth + one
// latency each way per request) and the HBM floor of the decode steps.
type phaseCost struct {
	S, Bytes, ComputeS, Requests float64
	LinkFloorS, HBMFloorS        float64
}

func (in *RemoteInput) cost(mode, phase string) (phaseCost, error) {
	m := in.Remote.Mode(partition.RemoteMode(mode))
	if m == nil {
		return phaseCost{}, fmt.Errorf("no modeled remote mode %q", mode)
	}
	steps := float64(in.Plan.DecodeSteps())
	link := in.Remote.Link
	pre := m.Prefill
	var c phaseCost
	switch phase {
	case string(partition.Prefill):
		c = phaseCost{S: pre.TotalS, Bytes: float64(pre.Bytes.Total()), ComputeS: pre.ComputeS, Requests: 1}
	case string(partition.Decode), "":
		if steps == 0 {
			return c, fmt.Errorf("config %s generates one token: no decode step", in.Plan.Config.Name)
		}
		decS := m.GenerationS - m.OpenS - pre.TotalS
		decB := float64(m.GenerationBytes - m.OpenBytes - pre.Bytes.Total())
		c = phaseCost{S: decS, Bytes: decB, ComputeS: steps * in.Remote.Compute.DecodeStepS, Requests: steps,
			HBMFloorS: steps * in.Est.Decode.HBMLowerBoundTPOTS}
		if phase == "" {
			c.S += pre.TotalS
			c.Bytes += float64(pre.Bytes.Total())
			c.ComputeS += pre.ComputeS
			c.Requests++
		} else {
			c.S, c.Bytes, c.ComputeS, c.HBMFloorS, c.Requests = c.S/steps, c.Bytes/steps, c.ComputeS/steps, c.HBMFloorS/steps, 1
		}
	}
	if mode != string(partition.RemoteLocal) {
		c.LinkFloorS = c.Bytes/link.BytesPerS + 2*link.LatencyS*c.Requests
	}
	return c, nil
}

func phaseName(phase string) string {
	switch phase {
	case "":
		return "the generation"
	case string(partition.Decode):
		return "a decode step"
	}
	return "the prefill"
}

// JudgeRemote holds f's remote claims against the modeled modes (in, keyed
// by role) and their bounds: a remote mode does the local device work plus
// the link, so it is at most 1× local's speed; latency is at least the HBM
// floor of the decode steps plus the link floor; a GPU share is at most 1.
// Then it checks the document's remote figures against each other.
func JudgeRemote(f *File, in map[string]*RemoteInput) ([]Judgement, error) {
	var out []Judgement
	for _, c := range f.Claims {
		if !IsRemoteMetric(c.Metric) {
			continue
		}
		r := in[c.Strategy]
		if r == nil {
			return nil, fmt.Errorf("claims: no remote estimate for strategy %q", c.Strategy)
		}
		j := Judgement{Claim: c, Config: f.Strategies[c.Strategy]}
		if err := judgeRemote(&j, f, r); err != nil {
			return nil, fmt.Errorf("claims: line %d (%s): %w", c.Line, c.Metric, err)
		}
		out = append(out, j)
	}
	return append(out, crossRemote(f, in)...), nil
}

func judgeRemote(j *Judgement, f *File, r *RemoteInput) error {
	c := j.Claim
	plan := r.Plan
	switch c.Metric {
	case "params":
		j.Model = float64(partition.ParamsTotal(plan.Model))
		j.add(fmt.Sprintf("model %s has %.0f parameters", plan.Model.Name, j.Model))
		return finish(j, f.Tolerance)
	case "weight_bytes":
		params := partition.ParamsTotal(plan.Model)
		j.Model = float64(params) * float64(plan.DTypeBytes)
		ws, err := plan.RemoteWeights()
		if err != nil {
			return err
		}
		var shipped int64
		for _, w := range ws {
			shipped += w.Bytes
		}
		j.add(fmt.Sprintf("%d parameters × %d B (%s); naive mode's request carries %d B of weight tensors", params, plan.DTypeBytes, plan.Model.DType, shipped))
		return finish(j, f.Tolerance)
	}
	m, err := r.cost(c.Mode, c.Phase)
	if err != nil {
		return err
	}
	var ref phaseCost
	if c.Ref != "" {
		if ref, err = r.cost(c.Ref, c.Phase); err != nil {
			return err
		}
	}
	tokens := float64(plan.Config.Workload.Batch * plan.Config.Workload.OutputTokens)
	switch c.Metric {
	case "remote_bytes":
		j.Model = m.Bytes
		if m.Bytes == 0 {
			j.add("mode local crosses no network")
		} else {
			j.add(fmt.Sprintf("%s in mode %s: %.0f B of payload", phaseName(c.Phase), c.Mode, m.Bytes))
		}
	case "remote_latency_s":
		j.Model = m.S
		j.Bound, j.BoundKind = m.HBMFloorS+m.LinkFloorS, "min"
		j.BoundName = "HBM floor of the decode steps plus the link floor (bytes ÷ bandwidth, one latency each way per request)"
		if c.Phase == "" && c.Mode == string(partition.RemoteLocal) && c.Value > 2*m.S {
			j.add(hostBound(c.Value, tokens, r))
		}
	case "remote_tokens_per_s":
		j.Model = tokens / m.S
		j.Bound, j.BoundKind = float64(plan.Config.Workload.Batch)/r.Est.Decode.HBMLowerBoundTPOTS, "max"
		j.BoundName = "batch ÷ HBM floor TPOT"
	case "remote_speedup":
		j.Model = ref.S / m.S
		if c.Ref == string(partition.RemoteLocal) {
			j.Bound, j.BoundKind = 1, "max"
			j.BoundName = "the speedup of a remote mode over local (it does local's device work plus the link)"
			if extra := ref.S/c.Value - m.S; c.Min == nil && extra > 0 {
				j.add(fmt.Sprintf("it needs %.3g ms per request beyond the model's link and compute", 1e3*extra/m.Requests))
			}
			if c.Value > 1 {
				if loc := claimed(f, c.Strategy, "remote_latency_s", c.Ref, c.Phase); loc != nil && loc.Value > 2*ref.S {
					j.add("the local baseline is host-bound, the only way a remote path beats it: " + hostBound(loc.Value, tokens, r))
				}
			}
		}
	case "remote_traffic_reduction":
		j.Model = ref.Bytes / m.Bytes
		j.add(fmt.Sprintf("%s: %.0f B in mode %s, %.0f B in mode %s", phaseName(c.Phase), ref.Bytes, c.Ref, m.Bytes, c.Mode))
	case "remote_gpu_util":
		j.Model = m.ComputeS / m.S
		j.Bound, j.BoundKind, j.BoundName = 1, "max", "a share of the whole"
	case "remote_gpu_util_ratio":
		j.Model = (m.ComputeS / m.S) / (ref.ComputeS / ref.S)
		j.add(fmt.Sprintf("GPU share %.3g in mode %s, %.3g in mode %s", m.ComputeS/m.S, c.Mode, ref.ComputeS/ref.S, c.Ref))
	}
	return finish(j, f.Tolerance)
}

// hostBound says how far a measured local generation is above the GPU's
// model and floor.
func hostBound(measured, tokens float64, r *RemoteInput) string {
	tpot, floor := r.Est.Decode.TPOTS, r.Est.Decode.HBMLowerBoundTPOTS
	return fmt.Sprintf("%.4g s for %.0f tokens is %.3g ms per token, %.3g× the model's TPOT of %.3g ms (kernels plus per-step host cost) and %.3g× the HBM floor of %.3g ns (bytes beyond L2 per step ÷ HBM bandwidth)",
		measured, tokens, 1e3*measured/tokens, measured/tokens/tpot, 1e3*tpot, measured/tokens/floor, 1e9*floor)
}

// finish gives the verdict: a point claim by verdict, a range claim by
// whether the model lies in it (the document's range, not widened) and
// whether the whole range is past the bound.
func finish(j *Judgement, tol float64) error {
	if j.Min == nil {
		if j.Model == 0 && j.Value != 0 {
			j.Verdict = Inconsistent
			j.add(fmt.Sprintf("the model's is 0, the claim %.4g", j.Value))
			return nil
		}
		if j.Model == 0 && j.Value == 0 {
			j.Verdict = Consistent
			j.add("both are 0")
			return nil
		}
		if j.Metric == "remote_speedup" && !(j.BoundKind == "max" && j.Value > j.Bound) {
			// A speedup is judged as its gain (speedup − 1): ±25 % of a ratio
			// near 1 would accept any small gain or loss.
			j.Ratio = j.Value / j.Model
			if math.Abs((j.Value-1)-(j.Model-1)) <= tol*math.Abs(j.Model-1) {
				j.Verdict = Consistent
				j.add(fmt.Sprintf("a %.3g %% gain, within ±%.0f %% of the model's %.3g %%", 100*(j.Value-1), 100*tol, 100*(j.Model-1)))
			} else {
				j.Verdict = Inconsistent
				j.add(fmt.Sprintf("a %.3g %% gain against the model's %.3g %%", 100*(j.Value-1), 100*(j.Model-1)))
			}
			return nil
		}
		verdict(j, tol)
		return nil
	}
	lo, hi := *j.Min, math.Inf(1)
	if j.Max != nil {
		hi = *j.Max
	}
	if j.Model != 0 {
		j.Ratio = j.Value / j.Model
	}
	rng := fmt.Sprintf("at least %.4g", lo)
	if j.Max != nil {
		rng = fmt.Sprintf("%.4g–%.4g", lo, hi)
	}
	switch {
	case j.BoundKind == "max" && lo > j.Bound*(1+1e-9):
		j.Verdict = Impossible
		j.add(fmt.Sprintf("%s is at most %.4g; the claimed range %s lies above it", j.BoundName, j.Bound, rng))
	case j.BoundKind == "min" && hi < j.Bound*(1-1e-9):
		j.Verdict = Impossible
		j.add(fmt.Sprintf("%s is at least %.4g; the claimed range %s lies below it", j.BoundName, j.Bound, rng))
	case j.Model >= lo && j.Model <= hi:
		j.Verdict = Consistent
		j.add(fmt.Sprintf("the model's %.4g is in the claimed range %s", j.Model, rng))
	default:
		j.Verdict = Inconsistent
		near := lo
		if j.Model > hi {
			near = hi
		}
		j.add(fmt.Sprintf("the model's %.4g is outside the claimed range %s (%.3g× its nearer end)", j.Model, rng, j.Model/near))
	}
	return nil
}

// claimed finds a point claim of metric for strategy, mode and phase.
func claimed(f *File, strategy, metric, mode, phase string) *Claim {
	for i := range f.Claims {
		c := &f.Claims[i]
		if c.Metric == metric && c.Strategy == strategy && c.Mode == mode && c.Phase == phase && c.Min == nil {
			return c
		}
	}
	return nil
}

// crossRemote checks the document's remote numbers against each other:
// tokens per second × latency must be the generated tokens; a speedup
// between two modes whose latencies it states must follow from them
// (compared as gains, speedup − 1, since "3 % improvement" states the gain);
// a claimed speedup range against naive must overlap what its ranges
// against local imply (A/local ÷ naive/local).
func crossRemote(f *File, in map[string]*RemoteInput) []Judgement {
	var out []Judgement
	for _, c := range f.Claims {
		r := in[c.Strategy]
		if r == nil || c.Min != nil && c.Metric != "remote_speedup" {
			continue
		}
		switch {
		case c.Metric == "remote_tokens_per_s" && c.Min == nil:
			lat := claimed(f, c.Strategy, "remote_latency_s", c.Mode, "")
			if lat == nil {
				continue
			}
			w := r.Plan.Config.Workload
			tokens := float64(w.Batch * w.OutputTokens)
			implied := c.Value * lat.Value
			j := Judgement{Claim: Claim{Metric: "remote_tokens_per_s × remote_latency_s", Strategy: c.Strategy, Mode: c.Mode,
				Value: implied, Unit: "tokens", Line: c.Line, Quote: c.Quote}, Config: f.Strategies[c.Strategy], Model: tokens, Ratio: implied / tokens}
			if math.Abs(implied-tokens) <= f.Tolerance*tokens {
				j.Verdict, j.Detail = Consistent, fmt.Sprintf("%.4g tok/s × %.4g s = %.4g: the %.0f generated tokens", c.Value, lat.Value, implied, tokens)
			} else {
				j.Verdict = SelfContra
				j.Detail = fmt.Sprintf("%.4g tok/s × %.4g s = %.4g tokens, but the generation makes %.0f", c.Value, lat.Value, implied, tokens)
			}
			out = append(out, j)
		case c.Metric == "remote_speedup" && c.Min == nil:
			a, b := claimed(f, c.Strategy, "remote_latency_s", c.Ref, c.Phase), claimed(f, c.Strategy, "remote_latency_s", c.Mode, c.Phase)
			if a == nil || b == nil {
				continue
			}
			implied := a.Value / b.Value
			j := Judgement{Claim: c, Config: f.Strategies[c.Strategy], Model: implied, Ratio: c.Value / implied}
			j.Metric = "remote_speedup (implied)"
			if math.Abs((c.Value-1)-(implied-1)) <= f.Tolerance*math.Abs(implied-1) {
				j.Verdict = Consistent
				j.Detail = fmt.Sprintf("the stated latencies give %.4g s ÷ %.4g s = %.4g×", a.Value, b.Value, implied)
			} else {
				j.Verdict = SelfContra
				j.Detail = fmt.Sprintf("the stated latencies give %.4g s ÷ %.4g s = %.4g× (a %.3g %% gain), not %.4g× (%.3g %%)",
					a.Value, b.Value, implied, 100*(implied-1), c.Value, 100*(c.Value-1))
			}
			out = append(out, j)
		case c.Metric == "remote_speedup" && c.Ref == string(partition.RemoteNaive) && c.Max != nil:
			var mine, naive *Claim
			for i := range f.Claims {
				o := &f.Claims[i]
				if o.Metric == "remote_speedup" && o.Strategy == c.Strategy && o.Phase == c.Phase && o.Ref == string(partition.RemoteLocal) && o.Max != nil {
					switch o.Mode {
					case c.Mode:
						mine = o
					case string(partition.RemoteNaive):
						naive = o
					}
				}
			}
			if mine == nil || naive == nil || *naive.Min <= 0 {
				continue
			}
			lo, hi := *mine.Min / *naive.Max, *mine.Max / *naive.Min
			j := Judgement{Claim: c, Config: f.Strategies[c.Strategy], Model: (lo + hi) / 2}
			j.Metric = "remote_speedup (implied)"
			j.Ratio = c.Value / j.Model
			what := fmt.Sprintf("its ranges against local (lines %d, %d) give %.4g–%.4g ÷ %.4g–%.4g = %.3g–%.3g×",
				mine.Line, naive.Line, *mine.Min, *mine.Max, *naive.Min, *naive.Max, lo, hi)
			if *c.Max >= lo && *c.Min <= hi {
				j.Verdict, j.Detail = Consistent, what+fmt.Sprintf(", which overlaps the claimed %.4g–%.4g×", *c.Min, *c.Max)
			} else {
				j.Verdict, j.Detail = SelfContra, what+fmt.Sprintf(", which the claimed %.4g–%.4g× does not meet", *c.Min, *c.Max)
			}
			out = append(out, j)
		}
	}
	return out
}
