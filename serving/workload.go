package serving

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Request is one request of a workload: when it arrives, its prompt and how
// many tokens it generates.
type Request struct {
	ID        int     `json:"id"`
	ArrivalS  float64 `json:"arrival_s"`
	InputLen  int     `json:"input_len"`
	OutputLen int     `json:"output_len"`
}

// Arrival processes.
const (
	ArrivalPoisson = "poisson" // exponential gaps: gamma with shape 1
	ArrivalGamma   = "gamma"   // gamma gaps of shape Burstiness, mean 1/rate
	ArrivalFixed   = "fixed"   // a gap of exactly 1/rate
)

// Arrivals says when requests arrive. RequestRate +Inf sends every request
// at time 0 (vLLM's --request-rate inf).
type Arrivals struct {
	Process     string
	RequestRate float64 // requests per second
	// Burstiness is the gamma shape (vLLM's --burstiness): 1 is Poisson,
	// below 1 burstier, above 1 more regular. The mean gap stays 1/rate.
	Burstiness float64
}

// Validate names the flag and the allowed values of a wrong field.
func (a Arrivals) Validate() error {
	switch a.Process {
	case ArrivalPoisson, ArrivalGamma, ArrivalFixed:
	default:
		return fmt.Errorf("--arrival: must be one of poisson, gamma, fixed (got %q)", a.Process)
	}
	if !(a.RequestRate > 0) {
		return fmt.Errorf("--request-rate: must be > 0 requests/s or inf (got %g)", a.RequestRate)
	}
	if a.Process == ArrivalGamma && !(a.Burstiness > 0 && !math.IsInf(a.Burstiness, 0)) {
		return fmt.Errorf("--burstiness: must be a finite number > 0 (got %g)", a.Burstiness)
	}
	return nil
}

// Times returns n arrival times from rng, the first at 0: vLLM's
// benchmark_serving sends a request, then sleeps one gap before the next.
func (a Arrivals) Times(n int, rng *rand.Rand) []float64 {
	out := make([]float64, n)
	if math.IsInf(a.RequestRate, 1) {
		return out
	}
	mean := 1 / a.RequestRate
	shape := 1.0
	if a.Process == ArrivalGamma {
		shape = a.Burstiness
	}
	t := 0.0
	for i := range out {
		out[i] = t
		switch a.Process {
		case ArrivalFixed:
			t += mean
		default:
			t += gamma(rng, shape) * mean / shape // scale θ = mean/shape: mean shape·θ = 1/rate
		}
	}
	return out
}

// gamma draws Gamma(shape, 1) by Marsaglia and Tsang ("A simple method for
// generating gamma variables", ACM TOMS 26(3), 2000), with the boost
// U^(1/shape) for shape < 1; shape 1 is an exponential draw.
func gamma(rng *rand.Rand, shape float64) float64 {
	if shape == 1 {
		return rng.ExpFloat64()
	}
	if shape < 1 {
		return gamma(rng, shape+1) * math.Pow(rng.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// Lengths draws prompt and output lengths as vLLM's random dataset does:
// uniform integers in [len·(1−ratio), len·(1+ratio)] (--random-input-len,
// --random-output-len, --random-range-ratio; ratio 0 is a fixed length).
type Lengths struct {
	InputLen, OutputLen int
	RangeRatio          float64
}

// Validate names the flag and the allowed values of a wrong field.
func (l Lengths) Validate() error {
	if l.InputLen < 1 {
		return fmt.Errorf("--random-input-len: must be ≥ 1 token (got %d)", l.InputLen)
	}
	if l.OutputLen < 1 {
		return fmt.Errorf("--random-output-len: must be ≥ 1 token (got %d)", l.OutputLen)
	}
	if !(l.RangeRatio >= 0 && l.RangeRatio < 1) {
		return fmt.Errorf("--random-range-ratio: must be in [0, 1) (got %g)", l.RangeRatio)
	}
	return nil
}

// uniformLen draws from [⌊n(1−r)⌋, ⌊n(1+r)⌋], at least 1.
func uniformLen(n int, r float64, rng *rand.Rand) int {
	lo, hi := int(float64(n)*(1-r)), int(float64(n)*(1+r))
	lo = max(lo, 1)
	hi = max(hi, lo)
	return lo + rng.IntN(hi-lo+1)
}

// Spec is a generated workload: NumPrompts requests whose lengths come from
// Lengths, or from Dataset when it is not empty (sampled with replacement
// only when it holds fewer entries than NumPrompts), at Arrivals.
type Spec struct {
	NumPrompts int
	Arrivals   Arrivals
	Lengths    Lengths
	Dataset    []LenPair
	Seed       uint64
}

// LenPair is one dataset entry's prompt and output length in tokens.
type LenPair struct{ InputLen, OutputLen int }

// MaxNumPrompts bounds --num-prompts (each request keeps a few hundred
// bytes of state through a run).
const MaxNumPrompts = 10_000_000

// Generate draws the workload; the same Spec gives the same requests.
func Generate(s Spec) ([]Request, error) {
	if s.NumPrompts < 1 || s.NumPrompts > MaxNumPrompts {
		return nil, fmt.Errorf("--num-prompts: must be in [1, %d] (got %d)", MaxNumPrompts, s.NumPrompts)
	}
	if err := s.Arrivals.Validate(); err != nil {
		return nil, err
	}
	if len(s.Dataset) == 0 {
		if err := s.Lengths.Validate(); err != nil {
			return nil, err
		}
	}
	// Separate streams: lengths do not shift when the arrival process changes.
	lenRNG := rand.New(rand.NewPCG(s.Seed, 0x6c656e73))
	arrRNG := rand.New(rand.NewPCG(s.Seed, 0x61727276))
	times := s.Arrivals.Times(s.NumPrompts, arrRNG)
	reqs := make([]Request, s.NumPrompts)
	var order []int
	if n := len(s.Dataset); n > 0 {
		order = lenRNG.Perm(n)
	}
	for i := range reqs {
		r := Request{ID: i, ArrivalS: times[i]}
		if len(order) > 0 {
			d := s.Dataset[order[i%len(order)]]
			r.InputLen, r.OutputLen = d.InputLen, d.OutputLen
		} else {
			r.InputLen = uniformLen(s.Lengths.InputLen, s.Lengths.RangeRatio, lenRNG)
			r.OutputLen = uniformLen(s.Lengths.OutputLen, s.Lengths.RangeRatio, lenRNG)
		}
		reqs[i] = r
	}
	return reqs, nil
}
