package serving

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseRates reads --request-rate: a comma list of requests/s, "inf" for
// all at once.
func ParseRates(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.ParseFloat(f, 64)
		if strings.EqualFold(f, "inf") {
			v, err = math.Inf(1), nil
		}
		if err != nil || !(v > 0) {
			return nil, fmt.Errorf("--request-rate: %q: each must be a number of requests/s > 0, or inf", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// Point is one request rate's run.
type Point struct {
	RequestRate float64 // offered, requests/s (+Inf: all at once)
	Metrics     Metrics
	// GoodFraction is the completed requests that meet the SLO, over all
	// requests (NaN without an SLO).
	GoodFraction float64
	MeetsSLO     bool
	// Requests is every request's timeline in the run.
	Requests []RequestResult
}

// Sweep is a latency–throughput curve: one run per request rate.
type Sweep struct {
	Points []Point
	SLO    Goodput
	// Attainment is the fraction of requests that must meet the SLO for a
	// rate to count as sustained (--slo-attainment).
	Attainment float64
	// BestRate is the highest swept rate that meets the SLO (NaN: none, or
	// no SLO). Knee is the lowest swept rate whose achieved request
	// throughput falls under KneeFraction of the offered rate (the queue
	// grows from there; NaN: none does).
	BestRate float64
	Knee     float64
}

// KneeFraction: past the knee the replica completes less than this share
// of what is offered.
const KneeFraction = 0.9

// RunSweep simulates the workload at each rate (the same seed, so the
// lengths are the same at every rate) and finds the best rate and the knee.
func RunSweep(rates []float64, spec Spec, cfg Config, cost Coster, ps []float64, slo Goodput, attainment float64) (*Sweep, error) {
	if !(attainment > 0 && attainment <= 1) {
		return nil, fmt.Errorf("--slo-attainment: must be in (0, 1] (got %g)", attainment)
	}
	sw := &Sweep{SLO: slo, Attainment: attainment, BestRate: math.NaN(), Knee: math.NaN()}
	for _, rate := range rates {
		s := spec
		s.Arrivals.RequestRate = rate
		reqs, err := Generate(s)
		if err != nil {
			return nil, err
		}
		res, err := Simulate(reqs, cfg, cost)
		if err != nil {
			return nil, err
		}
		sw.Points = append(sw.Points, pointOf(rate, res, ps, slo, attainment))
	}
	sw.finish()
	return sw, nil
}

// RunTrace simulates a trace as the sweep's single point (rate: the
// trace's mean, requests over its span; +Inf for a trace at one instant).
func RunTrace(reqs []Request, cfg Config, cost Coster, ps []float64, slo Goodput, attainment float64) (*Sweep, error) {
	if !(attainment > 0 && attainment <= 1) {
		return nil, fmt.Errorf("--slo-attainment: must be in (0, 1] (got %g)", attainment)
	}
	res, err := Simulate(reqs, cfg, cost)
	if err != nil {
		return nil, err
	}
	rate := math.Inf(1)
	if span := reqs[len(reqs)-1].ArrivalS - reqs[0].ArrivalS; span > 0 {
		rate = float64(len(reqs)-1) / span
	}
	sw := &Sweep{SLO: slo, Attainment: attainment, BestRate: math.NaN(), Knee: math.NaN(),
		Points: []Point{pointOf(rate, res, ps, slo, attainment)}}
	sw.finish()
	return sw, nil
}

func pointOf(rate float64, res *Result, ps []float64, slo Goodput, attainment float64) Point {
	m := Summarize(res, ps, slo)
	p := Point{RequestRate: rate, Metrics: m, GoodFraction: math.NaN(), Requests: res.Requests}
	if slo.Set() && len(res.Requests) > 0 {
		p.GoodFraction = m.RequestGoodput * m.DurationS / float64(len(res.Requests))
		p.MeetsSLO = p.GoodFraction >= attainment
	}
	return p
}

func (sw *Sweep) finish() {
	for _, p := range sw.Points {
		if p.MeetsSLO && (math.IsNaN(sw.BestRate) || p.RequestRate > sw.BestRate) {
			sw.BestRate = p.RequestRate
		}
		if !math.IsInf(p.RequestRate, 1) && p.Metrics.RequestThroughput < KneeFraction*p.RequestRate &&
			(math.IsNaN(sw.Knee) || p.RequestRate < sw.Knee) {
			sw.Knee = p.RequestRate
		}
	}
}
