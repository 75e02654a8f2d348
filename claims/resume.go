package claims

import (
	"fmt"
	"math"
	"strings"

	"github.com/partbench/partbench/sim"
)

// Seed 002's metrics: a pause after layer N (claim.layer) and its resume.
func init() {
	Metrics["resume_recompute_s"] = "resume by recomputing layers 1..layer, s"
	Metrics["resume_offload_s"] = "resume from host memory over PCIe, s"
	Metrics["resume_stateful_s"] = "resume on a server that kept the state, s"
	Metrics["resume_framework_s"] = "the stateful resume's RPC framework share, s"
	Metrics["resume_framework_fraction"] = "the stateful resume's RPC framework share, fraction"
	Metrics["resume_projected_framework_s"] = "a projected framework cost with another transport, s"
	Metrics["resume_projected_s"] = "a projected stateful resume with another transport, s"
	Metrics["resume_activation_bytes"] = "bytes of the paused hidden state"
}

// IsResumeMetric reports whether JudgeResume judges metric.
func IsResumeMetric(metric string) bool { return strings.HasPrefix(metric, "resume_") }

// ResumeLayers are the pause layers f's resume claims name.
func ResumeLayers(f *File) []int {
	var out []int
	seen := map[int]bool{}
	for _, c := range f.Claims {
		if IsResumeMetric(c.Metric) && c.Layer > 0 && !seen[c.Layer] {
			seen[c.Layer] = true
			out = append(out, c.Layer)
		}
	}
	if len(out) == 0 {
		out = []int{1}
	}
	return out
}

// JudgeResume holds f's resume claims against the modeled resume e (of
// f.Strategies[baseline]) and its floors: the compute floor of layers 1..N,
// the PCIe floor of the activation, the client link's floor for the
// modification; then checks the document's stateful figures against each other.
func JudgeResume(f *File, e *sim.ResumeEstimate) ([]Judgement, error) {
	point := func(n int) (sim.ResumePoint, error) {
		for _, p := range e.Points {
			if p.Layer == n {
				return p, nil
			}
		}
		return sim.ResumePoint{}, fmt.Errorf("claims: no modeled resume at layer %d (model %d layers)", n, e.Layers)
	}
	vals := map[string]float64{}
	var out []Judgement
	for _, c := range f.Claims {
		if !IsResumeMetric(c.Metric) {
			continue
		}
		vals[c.Metric] = c.Value
		j := Judgement{Claim: c, Config: f.Strategies[c.Strategy]}
		p, err := point(max(c.Layer, 1))
		if err != nil {
			return nil, err
		}
		stateful := p.StatefulS
		switch c.Metric {
		case "resume_recompute_s":
			j.Model, j.Bound, j.BoundKind = p.RecomputeS, p.ComputeFloorS, "min"
			j.BoundName = fmt.Sprintf("compute floor: FLOPs of layers 1..%d at the dense peak", p.Layer)
		case "resume_offload_s":
			j.Model, j.Bound, j.BoundKind = p.OffloadS, e.PCIeFloorS, "min"
			j.BoundName = fmt.Sprintf("PCIe floor: %d B of activation at %.3g GB/s", e.ActivationBytes, e.HostLink.BytesPerS/1e9)
			if c.Value > 1.5*e.PCIeFloorS {
				j.add(fmt.Sprintf("not the speed of light: %.3g× the PCIe floor of %.3g ms", c.Value/e.PCIeFloorS, 1e3*e.PCIeFloorS))
			}
		case "resume_stateful_s", "resume_projected_s":
			j.Model, j.Bound, j.BoundKind = stateful, e.StatefulTransferS, "min"
			j.BoundName = "the modification over the client link plus its latency"
		case "resume_framework_s", "resume_projected_framework_s":
			j.Model = e.StatefulOverheadS
			j.add("the model's framework term is --remote-overhead (0 unless calibrated)")
		case "resume_framework_fraction":
			j.Model = e.StatefulOverheadS / stateful
			j.Bound, j.BoundKind, j.BoundName = 1, "max", "a share of the whole"
		case "resume_activation_bytes":
			j.Model = float64(e.ActivationBytes)
			j.add(fmt.Sprintf("rows × hidden × dtype = %d B", e.ActivationBytes))
		}
		verdict(&j, f.Tolerance)
		out = append(out, j)
	}
	// The document's own arithmetic: total − framework + projected framework
	// must give the projected total.
	st, fw, pfw, pr := vals["resume_stateful_s"], vals["resume_framework_s"], vals["resume_projected_framework_s"], vals["resume_projected_s"]
	if st > 0 && fw > 0 && pfw > 0 && pr > 0 {
		implied := st - fw + pfw
		j := Judgement{Claim: Claim{Metric: "resume_projected_s (implied)", Strategy: "baseline", Value: pr, Unit: "s"},
			Config: f.Strategies["baseline"], Model: implied, Ratio: pr / implied}
		for _, c := range f.Claims {
			if c.Metric == "resume_projected_s" {
				j.Line, j.Quote = c.Line, c.Quote
			}
		}
		if math.Abs(pr-implied) <= f.Tolerance*implied {
			j.Verdict, j.Detail = Consistent, "total − framework + projected framework gives the projected total"
		} else {
			j.Verdict = SelfContra
			j.Detail = fmt.Sprintf("%.3g s − %.3g s framework + %.3g s projected framework = %.3g s, not the projected %.3g s", st, fw, pfw, implied, pr)
		}
		out = append(out, j)
	}
	if fw > 0 && st > 0 {
		if fr, ok := vals["resume_framework_fraction"]; ok {
			implied := fw / st
			j := Judgement{Claim: Claim{Metric: "resume_framework_fraction (implied)", Strategy: "baseline", Value: fr, Unit: "fraction"},
				Config: f.Strategies["baseline"], Model: implied, Ratio: fr / implied}
			for _, c := range f.Claims {
				if c.Metric == "resume_framework_fraction" {
					j.Line, j.Quote = c.Line, c.Quote
				}
			}
			if math.Abs(fr-implied) <= f.Tolerance*implied {
				j.Verdict, j.Detail = Consistent, fmt.Sprintf("framework ÷ total = %.3g s ÷ %.3g s = %.2f", fw, st, implied)
			} else {
				j.Verdict = SelfContra
				j.Detail = fmt.Sprintf("framework ÷ total = %.2f, not %.2f", implied, fr)
			}
			out = append(out, j)
		}
	}
	return out, nil
}
