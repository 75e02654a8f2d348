package sim

import (
	"math"
	"testing"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/topology"
	"github.com/partbench/partbench/topology/topologytest"
)

func withRuntime(t *testing.T, name string, edit func(*configs.Runtime)) func(*configs.Config) {
	t.Helper()
	r, err := configs.LoadRuntime(name)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&r)
	}
	return func(c *configs.Config) {
		c.Runtime = r
		c.Hardware.GPU = r.Apply(c.Hardware.GPU)
	}
}

// The nemo runtime is the hardware presets' own numbers: the estimate is
// the same, bit for bit, with it or without a runtime.
func TestNemoRuntimeLeavesTheEstimate(t *testing.T) {
	plain := estimate(t, "test/tp2pp2-tiny", nil)
	nemo := estimate(t, "test/tp2pp2-tiny", withRuntime(t, "nemo", nil))
	if plain.Decode.TPOTS != nemo.Decode.TPOTS || plain.Prefill.TTFTS != nemo.Prefill.TTFTS || plain.Range != nemo.Range {
		t.Errorf("nemo moved the estimate: TPOT %g → %g s, TTFT %g → %g s", plain.Decode.TPOTS, nemo.Decode.TPOTS, plain.Prefill.TTFTS, nemo.Prefill.TTFTS)
	}
	if nemo.Runtime != "nemo" || plain.Runtime != "" {
		t.Errorf("runtime names %q, %q", nemo.Runtime, plain.Runtime)
	}
}

// single-tiny: batch 4, prompt 20 tokens, one rank, 8 layers of 10
// kernels + input + final norm + LM head + sample = 84 kernels per pass.
// A runtime of 1 ms per step, 10 µs per sequence, 1 µs per token and 5 µs
// per kernel, ungraphed:
//
//	decode:  84 × 5 µs = 420 µs launch; host 1 ms + 4 × 10 µs + 4 tokens × 1 µs = 1.044 ms
//	prefill: 84 × 5 µs = 420 µs launch; host 1 ms + 4 × 10 µs + 80 tokens × 1 µs = 1.120 ms
func TestHostCostsPerSequenceAndTokenHandDerived(t *testing.T) {
	e := estimate(t, "test/single-tiny", withRuntime(t, "nemo", func(r *configs.Runtime) {
		r.Name, r.StepOverheadS, r.StepPerSeqS, r.StepPerTokenS, r.KernelLaunchS = "hand", 1e-3, 10e-6, 1e-6, 5e-6
	}))
	r := rankRow(t, e, 0)
	for _, c := range []struct {
		name string
		f    FixedCosts
		host float64
	}{{"decode", r.DecodeFixed, 1.044e-3}, {"prefill", r.PrefillFixed, 1.120e-3}} {
		f := c.f
		if f.Kernels != 84 || math.Abs(f.LaunchS-420e-6) > 1e-12 || math.Abs(f.HostS-c.host) > 1e-12 ||
			math.Abs(f.StepOverheadS-1e-3) > 1e-12 || math.Abs(f.HostPerSeqS-40e-6) > 1e-12 || math.Abs(f.TotalS-(420e-6+c.host)) > 1e-12 {
			t.Errorf("%s: %+v, want 84 kernels, 420 µs launch, host %g s", c.name, f, c.host)
		}
	}
	// The timeline charges them: doubling the per-sequence cost moves TPOT
	// by exactly 4 sequences × 10 µs.
	e2 := estimate(t, "test/single-tiny", withRuntime(t, "nemo", func(r *configs.Runtime) {
		r.Name, r.StepOverheadS, r.StepPerSeqS, r.StepPerTokenS, r.KernelLaunchS = "hand", 1e-3, 20e-6, 1e-6, 5e-6
	}))
	if d := e2.Decode.TPOTS - e.Decode.TPOTS; math.Abs(d-40e-6) > 1e-9 {
		t.Errorf("TPOT moved by %g s, want 40 µs", d)
	}
}

// Custom all-reduce on one 8-GPU H100 node (NVLink 450 GB/s per direction,
// NCCL's usable fraction 20.6/25 → B = 370.8 GB/s; link latency 1 µs) with
// a fixed 4 µs per shot, so L = 5 µs:
//
//	256 KiB: one-shot 5 µs + 7 × 262144 B / B = 5 + 4.949 = 9.949 µs;
//	         two-shot 10 µs + 2 × 7/8 × 262144 / B = 11.237 µs → one-shot
//	4 MiB:   one-shot 5 + 79.18 = 84.18 µs; two-shot 10 + 19.80 = 29.80 µs → two-shot
func TestCustomAllReduceHandDerived(t *testing.T) {
	sys := topologytest.DGXH100(2)
	sys.GPU.AllReduce, sys.GPU.CustomAllReduceMaxBytes, sys.GPU.CustomAllReduceFixedS = topology.AllReduceCustom, 8<<20, 4e-6
	node := []int{0, 1, 2, 3, 4, 5, 6, 7}
	const bw = 450e9 * 20.6 / 25
	for _, c := range []struct {
		bytes int64
		algo  commcount.Algorithm
		timeS float64
	}{
		{256 << 10, commcount.AlgoOneShot, 5e-6 + 7*262144/bw},
		{4 << 20, commcount.AlgoTwoShot, 10e-6 + 2*7.0/8*4194304/bw},
	} {
		e, ok := customAllReduce(sys, commcount.AllReduce, node, c.bytes)
		if !ok || e.Algo != c.algo || math.Abs(e.TimeS-c.timeS) > 1e-12 || e.Proto != ProtoCustom {
			t.Errorf("%d B: %+v (ok %v), want %s in %g s", c.bytes, e, ok, c.algo, c.timeS)
		}
		// The runtime takes it where it beats NCCL's choice.
		nccl, err := Collective(sys, commcount.AllReduce, node, c.bytes, CollectiveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := programCollective(sys, commcount.AllReduce, node, c.bytes, CollectiveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := math.Min(nccl.TimeS, e.TimeS); got.TimeS != want {
			t.Errorf("%d B: program all-reduce %g s, want min(NCCL %g, custom %g)", c.bytes, got.TimeS, nccl.TimeS, e.TimeS)
		}
	}
	// Where the runtime would not use it: over the workspace, across nodes,
	// another op, an NCCL runtime.
	across := []int{0, 8}
	nvl16 := sys // one 16-GPU NVLink domain: too many peers for the custom kernels
	nvl16.Topology.Nodes, nvl16.Topology.GPUsPerNode = 1, 16
	for _, c := range []struct {
		name  string
		sys   topology.System
		op    commcount.Op
		ranks []int
		bytes int64
	}{
		{"over the workspace", sys, commcount.AllReduce, node, 8<<20 + 1},
		{"across nodes", sys, commcount.AllReduce, across, 1 << 10},
		{"all_gather", sys, commcount.AllGather, node, 1 << 10},
		{"nccl runtime", topologytest.DGXH100(2), commcount.AllReduce, node, 1 << 10},
		{"more than 8 GPUs", nvl16, commcount.AllReduce, firstRanks(16), 1 << 10},
	} {
		if e, ok := customAllReduce(c.sys, c.op, c.ranks, c.bytes); ok {
			t.Errorf("%s: custom all-reduce used: %+v", c.name, e)
		}
	}
}

// On tp4-tiny (one node, TP 4, all-reduces of a few KiB), the
// vLLM runtime's custom all-reduce is what the timeline prices.
func TestRuntimeAllReduceReachesTheEstimate(t *testing.T) {
	e := estimate(t, "test/tp4-tiny", withRuntime(t, "vllm", nil))
	found := false
	for _, u := range e.Collectives {
		if u.Op == string(commcount.AllReduce) {
			found = true
			if u.Algo != commcount.AlgoOneShot {
				t.Errorf("%s %d B: %s/%s, want the custom one-shot", u.Name, u.Bytes, u.Algo, u.Proto)
			}
		}
	}
	if !found {
		t.Fatal("no all-reduce in the estimate")
	}
}
