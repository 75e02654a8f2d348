package sim

import (
	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/topology"
)

// Custom all-reduce of inference runtimes (topology.GPU.AllReduce "custom"):
// vLLM's custom_all_reduce and TensorRT-LLM's AllReduce plugin register each
// rank's buffer with its NVLink peers (CUDA IPC) and reduce with loads from
// peer memory instead of NCCL's ring or tree, for messages up to a
// workspace size within one node (vLLM's design note,
// https://github.com/vllm-project/vllm/files/13574639/Latency-optimal.allreduce.and.cuda.graph.optimization.pdf):
//
//	one-shot: every rank reads the n−1 peers' whole buffers and sums them:
//	          L + (n−1)·S / B
//	two-shot: a reduce-scatter then an all-gather over peer memory, each
//	          moving (n−1)/n·S per rank: 2L + 2·(n−1)/n·S / B
//
// with L the kernel's fixed cost (launch and the peer-flag barrier,
// CustomAllReduceFixedS) and B the NVLink bandwidth one GPU receives at
// (NCCL's usable fraction of the line rate). The engines pick one-shot for
// small messages and two-shot above (vLLM: below 512 KiB on ≤ 4 GPUs,
// 256 KiB on 8); partbench takes the faster of the two and of NCCL, which
// is that choice up to the crossover (commcount.AlgoOneShot and
// commcount.AlgoTwoShot).
//
// ProtoCustom is the protocol column of a custom all-reduce.
const ProtoCustom = "custom"

// customAllReduceMaxRanks is the largest group the custom kernels take:
// vLLM's custom_all_reduce.py supports world sizes 2, 4, 6 and 8
// (_SUPPORTED_WORLD_SIZES) and falls back to NCCL beyond; TensorRT-LLM's
// kernels are likewise written for up to 8 peers in one node.
const customAllReduceMaxRanks = 8

// customAllReduce models the custom kernel for an all-reduce of bytes over
// ranks; ok is false where the runtime would not use it (another op, NCCL
// runtime, a message over the workspace, a group across nodes, off NVLink
// or of more than customAllReduceMaxRanks GPUs).
func customAllReduce(sys topology.System, op commcount.Op, ranks []int, bytes int64) (CollectiveEstimate, bool) {
	g := sys.GPU
	if op != commcount.AllReduce || g.AllReduce != topology.AllReduceCustom || bytes <= 0 || bytes > g.CustomAllReduceMaxBytes || len(ranks) < 2 {
		return CollectiveEstimate{}, false
	}
	grp := analyze(sys.Topology, ranks)
	if grp.hasInter || grp.link != topology.NVLink || grp.n > customAllReduceMaxRanks {
		return CollectiveEstimate{}, false
	}
	n, s := float64(grp.n), float64(bytes)
	bw := usableBW(sys.Topology.Intra)
	l := g.CustomAllReduceFixedS + sys.Topology.Intra.LatencyS
	est := CollectiveEstimate{Op: op, Bytes: bytes, Ranks: grp.n, Link: grp.link, Proto: ProtoCustom}
	oneLat, oneBW := l, (n-1)*s/bw
	twoLat, twoBW := 2*l, 2*(n-1)/n*s/bw
	est.Algo, est.LatencyTermS, est.BandwidthTermS = commcount.AlgoOneShot, oneLat, oneBW
	if twoLat+twoBW < oneLat+oneBW {
		est.Algo, est.LatencyTermS, est.BandwidthTermS = commcount.AlgoTwoShot, twoLat, twoBW
	}
	est.TimeS = est.LatencyTermS + est.BandwidthTermS
	est.LatencyBound = est.LatencyTermS > est.BandwidthTermS
	est.fillBW()
	return est, true
}

// programCollective prices a Program's collective as the runtime runs it:
// NCCL's fastest choice (Collective), or the runtime's custom all-reduce
// where it applies and is faster.
func programCollective(sys topology.System, op commcount.Op, ranks []int, bytes int64, opt CollectiveOptions) (CollectiveEstimate, error) {
	est, err := Collective(sys, op, ranks, bytes, opt)
	if err != nil {
		return est, err
	}
	return preferCustom(sys, op, ranks, bytes, est), nil
}

// preferCustom is programCollective's choice given NCCL's estimate: the
// runtime's custom all-reduce where it applies and is faster, else est.
func preferCustom(sys topology.System, op commcount.Op, ranks []int, bytes int64, est CollectiveEstimate) CollectiveEstimate {
	if c, ok := customAllReduce(sys, op, ranks, bytes); ok && c.TimeS < est.TimeS {
		return c
	}
	return est
}
