package configs

import (
	"fmt"
	"testing"
)

// errText is an error's message, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// ValidateLayout must say exactly what Validate says for every parallel
// section hung on a config Validate accepted: nil where Validate accepts,
// Validate's whole message where it refuses. The sections below include every
// check of the parallel section failing alone and several failing together,
// and valid layouts the fast path must pass. tp8pp2's model (seed-dense16)
// has 16 layers, 32 heads and KV heads, ffn 14336 (so tp 3 and 5 divide
// neither heads nor ffn), on 2 nodes of 8 GPUs; its batch is 128.
func TestValidateLayoutSaysWhatValidateSays(t *testing.T) {
	base, err := Load("tp8pp2")
	if err != nil {
		t.Fatal(err)
	}
	if err := base.Validate(); err != nil {
		t.Fatalf("tp8pp2 must be valid: %v", err)
	}
	even := func(layers, pp int) []int {
		m := make([]int, layers)
		for l := range m {
			m[l] = l * pp / layers
		}
		return m
	}
	var sections []Parallel
	for _, tp := range []int{-1, 0, 1, 2, 3, 4, 5, 8, 16, MaxTP + 1} {
		for _, pp := range []int{0, 1, 2, 4, 16, 17, MaxLayers + 1} {
			for _, dp := range []int{-1, 0, 1, 2, 3} {
				for _, mb := range []int{0, 1, 3, 8, 128, MaxMicrobatches + 1} {
					sections = append(sections, Parallel{TP: tp, PP: pp, DP: dp, Microbatches: mb, Schedule: "fill-drain"})
				}
			}
		}
	}
	ok := Parallel{TP: 8, PP: 2, DP: 1, Microbatches: 8, Schedule: "fill-drain"}
	with := func(f func(p *Parallel)) Parallel { p := ok; f(&p); return p }
	sections = append(sections,
		ok,
		with(func(p *Parallel) { p.Schedule = "1f1b" }),
		with(func(p *Parallel) { p.Schedule = "zigzag" }),
		with(func(p *Parallel) { p.PrefillChunk = -1 }),
		with(func(p *Parallel) { p.PrefillChunk = 9872 }),        // the whole prompt: allowed
		with(func(p *Parallel) { p.PrefillChunk = 9873 }),        // one past the prompt
		with(func(p *Parallel) { p.LayerMap = even(16, 2) }),     // valid map
		with(func(p *Parallel) { p.LayerMap = even(15, 2) }),     // a layer short
		with(func(p *Parallel) { p.LayerMap = even(16, 3) }),     // three stages for pp 2
		with(func(p *Parallel) { p.LayerMap = make([]int, 16) }), // one stage for pp 2
		with(func(p *Parallel) { p.LayerMap = append([]int{1}, even(15, 2)...) }),
		with(func(p *Parallel) { p.PP, p.DP, p.LayerMap = 1, 2, make([]int, 16) }),
		with(func(p *Parallel) { p.TP, p.PP, p.DP = 2, 1, 8 }), // replicas of 2 GPUs in nodes of 8
		with(func(p *Parallel) { p.TP, p.PP, p.DP = 3, 1, 5 }), // 15 GPUs, tp 3 divides nothing
		with(func(p *Parallel) { p.TP, p.PP, p.DP = 4, 2, 3 }), // 24 GPUs on 16
	)
	accepted, refused := 0, 0
	for _, par := range sections {
		c := *base
		c.Name = fmt.Sprintf("tp%dpp%ddp%d-m%d", par.TP, par.PP, par.DP, par.Microbatches)
		c.Parallel = par
		want, got := errText(c.Validate()), errText(c.ValidateLayout())
		if got != want {
			t.Errorf("%+v: ValidateLayout says %q, Validate %q", par, got, want)
		}
		if want == "" {
			accepted++
		} else {
			refused++
		}
	}
	// Both outcomes must be exercised, or the comparison proves little:
	// tp ∈ {1, 2, 4, 8, 16} × pp × dp with tp·pp·dp = 16 and an aligned,
	// in-range micro-batch count are accepted, as are 5 of the edited ones.
	if accepted < 10 || refused < 100 {
		t.Fatalf("%d accepted and %d refused: the sections do not exercise both paths", accepted, refused)
	}
}
