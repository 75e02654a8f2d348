package sim

import (
	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/topology"
)

// The parameters of the collective cost model, each with its public source.
// docs/collectives.md derives every formula that uses them.
//
// Most numbers are the defaults of NCCL's own tuning model
// (NVIDIA/nccl, src/graph/tuning.cc, ncclTunerConstantsDefaults and
// ncclTopoTuneModel; src/graph/topo.h and src/graph/topo.cc for link speeds).
// They are facts read from that file (latencies in microseconds, bandwidth
// ratios), not NCCL's code: the formulas here are partbench's own, stated in
// terms of the topology's per-GPU bandwidth and link latency.

// Protocol names, spelled as NCCL_PROTO spells them.
const (
	ProtoLL     = "LL"
	ProtoLL128  = "LL128"
	ProtoSimple = "Simple"
)

// Protocols lists the protocols in NCCL's order.
var Protocols = []string{ProtoLL, ProtoLL128, ProtoSimple}

// Protocol usable-bandwidth fractions on a ring (fraction of the link
// bandwidth the protocol's payload gets).
//
//   - LL: every 8-byte store carries 4 bytes of data and a 4-byte flag, so at
//     most half the bandwidth carries payload. tuning.cc: ring LL busBw ×0.5.
//   - LL128: each 128-byte line carries 120 bytes of data and an 8-byte flag
//     (120/128 = 0.9375); tuning.cc uses 0.92 for rings ("0.92 /*120.0/128.0*/").
//   - Simple: plain stores with a separate flag per chunk; full bandwidth
//     (tuning.cc applies no factor to ring Simple).
const (
	ringFracLL     = 0.5
	ringFracLL128  = 0.92
	ringFracSimple = 1.0
)

// Tree all-reduce fractions (tuning.cc, ncclTopoTuneModel): every tree
// all-reduce gets ×0.92; LL trees then ×1/3.8 (instead of the ring's 0.5);
// LL128 trees ×120/128 across nodes and ×7/9 inside one node.
const (
	treeFracAllReduce   = 0.92
	treeFracLL          = 1.0 / 3.8
	treeFracLL128Inter  = 120.0 / 128.0
	treeFracLL128Intra  = 7.0 / 9.0
	treeFracSimpleExtra = 1.0
)

// nvlsEfficiency is NCCL's NVLink SHARP efficiency factor for Hopper
// (tuning.cc: nvlsEfficiency[] = {0, 0, 0.85 /*Hopper*/, 0.74 /*Blackwell*/}).
// It multiplies the usable NVLink bandwidth for traffic through the switch's
// multicast/reduction engine. Checked against published runs: 8×H100 NVLS
// all-reduce reaches algbw ≈ 273–275 GB/s (NVIDIA/nccl-tests#212, NVIDIA/nccl#1455);
// the model gives 450·0.824·0.85·8/9 = 280 GB/s.
const nvlsEfficiency = 0.85

// Usable fraction of a link's line rate (per direction) that NCCL's data path
// reaches with the Simple protocol.
//
//   - NVLink: NCCL models one NVLink 4 link as 20.6 GB/s (topo.h SM90_NVLINK_BW)
//     against a 25 GB/s line rate per direction (900 GB/s / 18 links / 2), i.e.
//     0.824; H100 × 18 links → 370.8 GB/s, matching the "effective NVLink
//     bandwidth of 370GB/s" NCCL's maintainer quotes (NVIDIA/nccl-tests#212) and
//     ring busbw 365–370 GB/s measured on 8×H100 (NVIDIA/nccl#1455).
//   - PCIe: NCCL counts 240 ×100 Mb/s per Gen5 lane, i.e. 16 lanes·240/80 =
//     48 GB/s for Gen5 x16 against 64 GB/s nominal (topo.cc kvDictPciGen, the
//     same 0.75 for every generation; topo.h PCI_BW 12 GB/s for Gen3 x16).
//   - Network: NCCL's fastest Hopper inter-node search speed is 48 GB/s per
//     400 Gb/s NIC (search.cc sm90SpeedArrayInter[0] = 48.0), and NCCL's
//     maintainers expect "46-48GB/s per NIC" on NDR (NVIDIA/nccl-tests#290);
//     48/50 = 0.96.
const (
	nvlinkUsableFraction  = 20.6 / 25.0
	pcieUsableFraction    = 0.75
	networkUsableFraction = 48.0 / 50.0
)

// usableFraction is the Simple-protocol fraction of a link class's line rate.
func usableFraction(c topology.LinkClass) float64 {
	switch c {
	case topology.NVLink:
		return nvlinkUsableFraction
	case topology.PCIe:
		return pcieUsableFraction
	case topology.Network:
		return networkUsableFraction
	}
	return 1
}

// usableBW is the bandwidth NCCL's Simple protocol reaches on one link.
func usableBW(l topology.Link) float64 { return l.BytesPerS * usableFraction(l.Class) }

// Base latencies in microseconds: the fixed per-call cost of an algorithm and
// protocol, independent of the number of ranks (tuning.cc baseLatencies:
// Tree {6.8, 14.0, 8.4}, Ring {6.6, 14.0, 8.4}, NVLS and NVLSTree 0).
var baseLatencyUS = map[commcount.Algorithm]map[string]float64{
	commcount.AlgoRing: {ProtoLL: 6.6, ProtoLL128: 14.0, ProtoSimple: 8.4},
	commcount.AlgoTree: {ProtoLL: 6.8, ProtoLL128: 14.0, ProtoSimple: 8.4},
	commcount.AlgoNVLS: {ProtoSimple: 0},
	// hierarchical is modeled as NCCL's NVLSTree (base 0) on NVLS nodes and
	// as two ring stages elsewhere (ring base) — see hierarchical().
}

// ncclHopLatencyUS is NCCL's per-hop ("hardware") latency in microseconds by
// link class, algorithm and protocol (tuning.cc hwLatencies). NVLSTree has
// only Simple; its network value is the hierarchical entry. NCCL's NVLink NVLS
// entry (25 µs, the whole in-switch operation) is replaced by nvlsOverheadS,
// which grows with the group; its network NVLS entry (18 µs) is for NVLS with
// IB SHARP/CollNet, which the model does not have.
var ncclHopLatencyUS = map[topology.LinkClass]map[commcount.Algorithm]map[string]float64{
	topology.NVLink: {
		commcount.AlgoTree: {ProtoLL: 0.6, ProtoLL128: 1.25, ProtoSimple: 4.0},
		commcount.AlgoRing: {ProtoLL: 0.6, ProtoLL128: 1.9, ProtoSimple: 3.4},
	},
	topology.PCIe: {
		commcount.AlgoTree: {ProtoLL: 1.0, ProtoLL128: 1.9, ProtoSimple: 4.0},
		commcount.AlgoRing: {ProtoLL: 1.0, ProtoLL128: 2.5, ProtoSimple: 5.7},
	},
	topology.Network: {
		commcount.AlgoTree:         {ProtoLL: 5.0, ProtoLL128: 8.5, ProtoSimple: 14},
		commcount.AlgoRing:         {ProtoLL: 2.7, ProtoLL128: 4.0, ProtoSimple: 14.0},
		commcount.AlgoHierarchical: {ProtoSimple: 20.9}, // NCCL's NVLSTree
	},
}

// ncclWireLatencyUS is the part of NCCL's per-hop latency that is the link
// itself: the ring LL value, since an LL hop is one 8-byte store with its flag
// and nothing else (NVLink 0.6, PCIe 1.0, network 2.7 µs).
func ncclWireLatencyUS(c topology.LinkClass) float64 {
	return ncclHopLatencyUS[c][commcount.AlgoRing][ProtoLL]
}

// protoHopOverheadS is the protocol's per-hop overhead on a link class: NCCL's
// per-hop latency minus the wire part. The model adds it to the topology's own
// link latency (Link.LatencyS), so a topology with faster or slower links
// shifts every protocol by the same amount.
func protoHopOverheadS(c topology.LinkClass, algo commcount.Algorithm, proto string) float64 {
	if c == topology.Local {
		return 0
	}
	v, ok := ncclHopLatencyUS[c][algo][proto]
	if !ok {
		// PCIe has no NVLS entries; no other combination is asked for.
		v = ncclHopLatencyUS[c][commcount.AlgoRing][proto]
	}
	o := v - ncclWireLatencyUS(c)
	if o < 0 {
		o = 0
	}
	return o * 1e-6
}

// netPostOverheadS is the cost of posting one network operation from the
// proxy thread (tuning.cc getNetOverhead: 1 µs on Intel CPUs, 2 µs on AMD;
// ×3 for Simple). On a ring that spans nodes every step waits for it, so an
// intra-node step costs at least this much.
func netPostOverheadS(proto string) float64 {
	if proto == ProtoSimple {
		return 3e-6
	}
	return 1e-6
}

// p2pLLThresholdBytes: NCCL sends a point-to-point message with LL when it is
// at most this many bytes per channel (enqueue.cc NCCL_P2P_LL_THRESHOLD
// default 16384); the model assumes one channel per peer.
const p2pLLThresholdBytes = 16384

// ringFraction is the protocol's bandwidth fraction on a ring.
func ringFraction(proto string) float64 {
	switch proto {
	case ProtoLL:
		return ringFracLL
	case ProtoLL128:
		return ringFracLL128
	}
	return ringFracSimple
}

// treeFraction is the protocol's bandwidth fraction on a tree all-reduce.
func treeFraction(proto string, multiNode bool) float64 {
	f := treeFracAllReduce
	switch proto {
	case ProtoLL:
		f *= treeFracLL
	case ProtoLL128:
		if multiNode {
			f *= treeFracLL128Inter
		} else {
			f *= treeFracLL128Intra
		}
	default:
		f *= treeFracSimpleExtra
	}
	return f
}

// The pipeline ramp (docs/collectives.md, "Ramp"): between latency-bound and
// bandwidth-bound sizes NCCL runs fewer channels and smaller chunks, so the
// time grows faster than a fixed latency plus S over the peak bandwidth. The
// model adds R·S/(S + S½) to the latency term: zero for tiny messages,
// saturating at R once S ≫ S½ (the pipeline's fill and drain at full chunk
// size). Simple (ring, tree, NVLS and the stages of hierarchical) and the
// fine-grained LL/LL128 protocols have their own pair. Fitted together with
// the NVLS overhead below on two thirds of the points ≥ 1 MiB of three
// published H100 tables (8-GPU NVLS all_reduce, 4-GPU all_reduce and ring
// all_gather); docs/validation.md lists the fit and held-out points, the
// errors, and the tables that were held back blind.
type rampParams struct{ maxS, halfBytes float64 }

// at is the ramp term at s bytes.
func (r rampParams) at(s float64) float64 {
	if s <= 0 {
		return 0
	}
	return r.maxS * s / (s + r.halfBytes)
}

// collectiveParams are the fitted constants of the collective model: the
// defaults below, or a system's own (topology.CollectiveTuning).
type collectiveParams struct {
	rampSimple, rampLL      rampParams
	nvlsBaseS, nvlsPerRankS float64
}

// The NVLS overhead of one in-switch operation among k GPUs, beyond the link
// latency: base + perRank·k. NCCL's tuner uses one constant (25 µs on NVLink,
// hwLatencies) for every group size, but every step of an NVLS collective
// waits for all k GPUs to signal through the multicast object, and the
// published tables agree: the 1 MiB all_reduce takes 38.7 µs on 8 H100s and
// 27.0 µs on 4 (docs/validation.md). Fitted with the ramp (grid 0–20 µs ×
// 0–3.5 µs per GPU): 6.5 + 3·k µs, i.e. 30.5 µs for 8 GPUs (NCCL: 24.4
// beyond its 0.6 µs wire part) and 18.5 µs for 4.
var defaultCollectiveParams = collectiveParams{
	rampSimple:   rampParams{80e-6, 32 << 20},
	rampLL:       rampParams{20e-6, 1 << 20},
	nvlsBaseS:    6.5e-6,
	nvlsPerRankS: 3.0e-6,
}

// collectiveParamsOf is the system's tuning where it has a whole one, else
// the defaults. A config's topology has been validated when it was loaded
// (ranges and missing keys name their path there); this runs on every
// collective, so it only checks the keys are there.
func collectiveParamsOf(t topology.Topology) collectiveParams {
	c := t.Collectives
	if !c.Complete() {
		return defaultCollectiveParams
	}
	return collectiveParams{
		rampSimple:   rampParams{*c.RampSimpleS, *c.RampSimpleHalfBytes},
		rampLL:       rampParams{*c.RampLLS, *c.RampLLHalfBytes},
		nvlsBaseS:    *c.NVLSBaseS,
		nvlsPerRankS: *c.NVLSPerRankS,
	}
}

// tuning writes p as a topology section.
func (p collectiveParams) tuning(source string) topology.CollectiveTuning {
	f := func(v float64) *float64 { return &v }
	return topology.CollectiveTuning{
		RampSimpleS: f(p.rampSimple.maxS), RampSimpleHalfBytes: f(p.rampSimple.halfBytes),
		RampLLS: f(p.rampLL.maxS), RampLLHalfBytes: f(p.rampLL.halfBytes),
		NVLSBaseS: f(p.nvlsBaseS), NVLSPerRankS: f(p.nvlsPerRankS), Source: source,
	}
}

// DefaultCollectiveTuning is the model's own constants as a topology
// section (what a system without one gets).
func DefaultCollectiveTuning() topology.CollectiveTuning {
	return defaultCollectiveParams.tuning("partbench defaults (docs/validation.md)")
}

// nvlsOverheadS is the NVLS overhead among k GPUs, in seconds.
func (p collectiveParams) nvlsOverheadS(k int) float64 {
	return p.nvlsBaseS + p.nvlsPerRankS*float64(k)
}

// rampS is the ramp term for a protocol at s bytes.
func (p collectiveParams) rampS(proto string, s float64) float64 {
	if proto == ProtoLL || proto == ProtoLL128 {
		return p.rampLL.at(s)
	}
	return p.rampSimple.at(s)
}
