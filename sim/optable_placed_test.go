package sim

import (
	"math"
	"reflect"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// placedOpTimes divides a compute entry measured with more ranks than the
// host's cores by ranks/cores and leaves the rest alone: on 2 cores a gemm
// measured by 4 processes at once, 6 µs (4–8 µs), is 6/(4/2) = 3 µs
// (2–4 µs); one measured by 2 (not more than the cores) and the
// communication and wait entries keep their times; without host cores
// nothing changes. The profile's own slice is not written.
func TestPlacedOpTimes(t *testing.T) {
	e := func(kind string, ranks int, ts, lo, hi float64) configs.OpTime {
		return configs.OpTime{Kind: kind, Shape: "s", Size: 4, TimeS: ts, TimeMinS: lo, TimeMaxS: hi, Samples: 5, Ranks: ranks}
	}
	in := []configs.OpTime{
		e("gemm", 4, 6e-6, 4e-6, 8e-6),
		e("gemm", 2, 6e-6, 4e-6, 8e-6),
		e("all_reduce", 4, 6e-6, 4e-6, 8e-6),
		e(configs.CoreWaitKind, 4, 6e-6, 4e-6, 8e-6),
		e("attention", 16, 16e-6, 8e-6, 32e-6), // 16/2 = 8: 2 µs (1–4 µs)
	}
	orig := append([]configs.OpTime(nil), in...)
	got := placedOpTimes(configs.Hardware{OpTimes: in, HostCores: 2})
	want := append([]configs.OpTime(nil), in...)
	want[0].TimeS, want[0].TimeMinS, want[0].TimeMaxS = 3e-6, 2e-6, 4e-6
	want[4].TimeS, want[4].TimeMinS, want[4].TimeMaxS = 2e-6, 1e-6, 4e-6
	if !reflect.DeepEqual(got, want) {
		t.Errorf("2 cores:\ngot  %+v\nwant %+v", got, want)
	}
	if !reflect.DeepEqual(in, orig) {
		t.Errorf("the profile's table was written: %+v", in)
	}
	if got := placedOpTimes(configs.Hardware{OpTimes: in}); !reflect.DeepEqual(got, orig) {
		t.Errorf("no host cores: %+v, want the table as is", got)
	}
}

// A table measured by 4 processes at once on 2 cores whose every compute
// entry is twice the time measured alone — exactly the fair share of the
// cores, 4/2 = 2, nothing more — prices tp2-dp2-tiny (4 ranks, all
// computing at once) the same as the table measured alone: the timeline
// stretches both by the same b/C. One 3× the time alone (1.5× the fair
// share: the processes' contention beyond it) makes TTFT and TPOT longer.
// (Without a calibration nothing changes: TestEstimatesGolden.)
func TestEstimateOpTimesAtPlacement(t *testing.T) {
	cfg0, err := configs.Load("test/tp2-dp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	plan0, err := partition.NewPlan(cfg0)
	if err != nil {
		t.Fatal(err)
	}
	// Every compute op of every rank's Programs, 10–30 µs by its position.
	table := func(ranks int, scale float64) []configs.OpTime {
		seen := map[[4]any]bool{}
		var out []configs.OpTime
		for r := range plan0.Ranks {
			for _, ph := range []partition.Phase{partition.Prefill, partition.Decode} {
				for i, op := range plan0.Program(r, ph).Ops {
					if !isCompute(op.Kind) {
						continue
					}
					kind, shape, size, context := OpKey(&op)
					k := [4]any{kind, shape, size, context}
					if seen[k] {
						continue
					}
					seen[k] = true
					ts := scale * float64(10+10*(i%3)) * 1e-6
					out = append(out, configs.OpTime{Kind: kind, Shape: shape, Size: size, Context: context, TimeS: ts, TimeMinS: ts, TimeMaxS: ts, Samples: 1, Ranks: ranks})
				}
			}
		}
		return out
	}
	est := func(cores int, ts []configs.OpTime) *Estimate {
		t.Helper()
		cfg, _ := configs.Load("test/tp2-dp2-tiny")
		cfg.Hardware.HostCores, cfg.Hardware.OpTimes = cores, ts
		plan, err := partition.NewPlan(cfg)
		if err != nil {
			t.Fatal(err)
		}
		e, err := EstimatePlan(plan, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	alone, fair, more := est(2, table(1, 1)), est(2, table(4, 2)), est(2, table(4, 3))
	if alone.Ranks[0].TableOps == 0 {
		t.Fatal("the table priced no op")
	}
	if !nearlyEqual(fair.Prefill.TTFTS, alone.Prefill.TTFTS) || !nearlyEqual(fair.Decode.TPOTS, alone.Decode.TPOTS) {
		t.Errorf("measured at 4 at the fair share: TTFT %g, TPOT %g; alone: %g, %g (want equal)", fair.Prefill.TTFTS, fair.Decode.TPOTS, alone.Prefill.TTFTS, alone.Decode.TPOTS)
	}
	if !(more.Prefill.TTFTS > alone.Prefill.TTFTS*1.01) || !(more.Decode.TPOTS > alone.Decode.TPOTS*1.01) {
		t.Errorf("measured at 4, 1.5× the fair share: TTFT %g, TPOT %g; alone: %g, %g (want both longer)", more.Prefill.TTFTS, more.Decode.TPOTS, alone.Prefill.TTFTS, alone.Decode.TPOTS)
	}
}

func nearlyEqual(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }
