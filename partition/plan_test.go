package partition

import (
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/topology"
)

func plan(t *testing.T, name string) *Plan {
	t.Helper()
	c, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSeedMemoryPerGPU(t *testing.T) {
	tp, lw := plan(t, "tp8pp2"), plan(t, "layerwise16")
	// Matrices per GPU. tp8pp2: 8 layers × 268,435,456 matrix params / 8 ranks
	// = 268,435,456 params; layerwise16: 1 layer × 268,435,456. Both 536,870,912 B.
	// Norm vectors are replicated on every TP rank: tp8pp2 holds 8 layers × 8,192,
	// layerwise16 1 × 8,192. Totals:
	//   tp8pp2      536,870,912 + 8 × 8,192 × 2 = 537,001,984 B
	//   layerwise16 536,870,912 + 1 × 8,192 × 2 = 536,887,296 B (the seed layer exactly)
	for _, tc := range []struct {
		p    *Plan
		want int64
	}{{tp, 537_001_984}, {lw, 536_887_296}} {
		for _, r := range tc.p.Ranks {
			if r.Memory.LayerWeightBytes != tc.want || r.Memory.EmbeddingBytes != 0 {
				t.Fatalf("%s rank %d: layer weights %d (+%d embedding), want %d", tc.p.Config.Name, r.Rank,
					r.Memory.LayerWeightBytes, r.Memory.EmbeddingBytes, tc.want)
			}
			// KV: tp8pp2 holds 8 layers × 1/8 of the heads, layerwise16 1 layer × all
			// heads: both one layer's worth, 20,971,520,000 B.
			if r.Memory.KVCacheBytes != 20_971_520_000 {
				t.Fatalf("%s rank %d: KV %d, want 20,971,520,000", tc.p.Config.Name, r.Rank, r.Memory.KVCacheBytes)
			}
			if r.Memory.TotalBytes > r.Memory.CapacityBytes {
				t.Fatalf("%s rank %d does not fit: %+v", tc.p.Config.Name, r.Rank, r.Memory)
			}
		}
	}
	// The sharded matrices alone are the same on both: 536,870,912 B.
	lp := Layer(tp.Model)
	if got := 8 * lp.Matrices() / 8 * 2; got != 536_870_912 {
		t.Fatalf("tp8pp2 matrix bytes %d", got)
	}
	if tp.Size() != 16 || lw.Size() != 16 || len(lw.StageLayers) != 16 || len(tp.StageLayers[1]) != 8 || tp.StageLayers[1][0] != 8 {
		t.Fatalf("layouts: tp %v lw %v", tp.StageLayers, lw.StageLayers)
	}
}

func TestEmbeddingsOnFirstAndLastStage(t *testing.T) {
	c, _ := configs.Load("tp8pp2")
	c.Model.Embeddings, c.Model.LMHead = true, true
	p, err := NewPlan(c)
	if err != nil {
		t.Fatal(err)
	}
	// Vocab padded to 50,264 = 8 × 6,283. Stage 0 ranks: embedding shard
	// 6,283 × 4,096 × 2 B = 51,470,336 B. Stage 1 ranks: final norm 4,096 × 2 +
	// head shard 4,096 × 6,283 × 2 = 8,192 + 51,470,336 = 51,478,528 B.
	for _, r := range p.Ranks {
		want := int64(51_470_336)
		if r.Stage == 1 {
			want = 51_478_528
		}
		if r.Memory.EmbeddingBytes != want {
			t.Errorf("rank %d stage %d: embedding bytes %d, want %d", r.Rank, r.Stage, r.Memory.EmbeddingBytes, want)
		}
	}
	// Under TP the embedding adds one all-reduce and the head one all-gather
	// per micro-batch: 32 + 2 = 34 logical collectives in decode.
	if got := p.Comm(Decode).CollectiveCallsPerMicrobatch; got != 34 {
		t.Errorf("collectives with embeddings: %d, want 34", got)
	}
}

func TestSeedCommunicationCounts(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		collectives, sends   int
		tokenSends           int
		callsRank0, msgRank0 int64
	}{
		// tp8pp2: 2 all-reduces × 16 layers = 32 logical collectives; 1 boundary
		// transfer; 1 token return. Rank 0 in one decode step: 8 micro-batches ×
		// (8 layers × 2 all-reduces + 1 send + 1 token recv) = 8 × 18 = 144 calls;
		// messages: 8 × (16 all-reduces × 2·7 + 1 send) = 8 × 225 = 1,800.
		{"tp8pp2", 32, 1, 1, 144, 1800},
		// layerwise16: no collectives, 15 boundary transfers, 1 token return.
		// Rank 0 per decode step (1 micro-batch): 1 token recv + 1 send = 2 calls, 1 message.
		{"layerwise16", 0, 15, 1, 2, 1},
	} {
		p := plan(t, tc.name)
		for _, ph := range []Phase{Prefill, Decode} {
			s := p.Comm(ph)
			if s.CollectiveCallsPerMicrobatch != tc.collectives || s.P2PSendsPerMicrobatch != tc.sends || s.TokenSendsPerMicrobatch != tc.tokenSends {
				t.Errorf("%s %s: %d collectives, %d sends, %d token sends per micro-batch; want %d, %d, %d", tc.name, ph,
					s.CollectiveCallsPerMicrobatch, s.P2PSendsPerMicrobatch, s.TokenSendsPerMicrobatch, tc.collectives, tc.sends, tc.tokenSends)
			}
		}
		d := p.Comm(Decode)
		if d.CallsPerRank.At(0) != tc.callsRank0 || d.MessagesPerRank.At(0) != tc.msgRank0 {
			t.Errorf("%s decode rank 0: %d calls %d messages, want %d and %d", tc.name, d.CallsPerRank.At(0), d.MessagesPerRank.At(0), tc.callsRank0, tc.msgRank0)
		}
	}
}

func TestDecodeBytesByLink(t *testing.T) {
	// layerwise16 on two DGX nodes, one decode step, micro-batch of 128 tokens:
	// each boundary sends 128 × 4,096 × 2 B = 1,048,576 B. Boundaries 0→1 … 6→7
	// and 8→9 … 14→15 are NVLink (14), 7→8 crosses nodes; the token return
	// 15→0 (128 × 4 B = 512 B) crosses nodes too.
	p := plan(t, "layerwise16")
	s := p.Comm(Decode)
	if got := s.BytesByLink[topology.NVLink]; got != 14*1_048_576 {
		t.Errorf("nvlink bytes %d, want %d", got, 14*1_048_576)
	}
	if got := s.BytesByLink[topology.Network]; got != 1_048_576+512 {
		t.Errorf("network bytes %d, want %d", got, 1_048_576+512)
	}
	// tp8pp2: per micro-batch of 16 tokens, each all-reduce is 16 × 4,096 × 2 =
	// 131,072 B; ring wire per rank 2·7/8 of it = 229,376 B; 16 ranks × 8 layers ×
	// 2 all-reduces × 8 micro-batches → 16 × 16 × 8 × 229,376 = 469,762,048 B on
	// NVLink. Boundary: 8 ranks × 8 micro-batches × 131,072 B = 8,388,608 B and
	// token returns 8 × 8 × 16 × 4 = 4,096 B on the network.
	p = plan(t, "tp8pp2")
	s = p.Comm(Decode)
	if got := s.BytesByLink[topology.NVLink]; got != 469_762_048 {
		t.Errorf("tp8pp2 nvlink bytes %d, want 469,762,048", got)
	}
	if got := s.BytesByLink[topology.Network]; got != 8_388_608+4_096 {
		t.Errorf("tp8pp2 network bytes %d, want %d", got, 8_388_608+4_096)
	}
}

func TestWeightsConservedAcrossPartitionings(t *testing.T) {
	// Summed over ranks, layer matrices are the model's exactly once; norms are
	// counted once per TP rank.
	for _, name := range []string{"tp8pp2", "layerwise16", "test/tp2pp2-tiny", "test/pp4-tiny", "test/layermap-tiny", "test/tp4-tiny"} {
		p := plan(t, name)
		lp := Layer(p.Model)
		var got int64
		for _, r := range p.Ranks {
			got += r.Memory.LayerWeightBytes
		}
		want := (int64(p.Model.Layers)*lp.Matrices() + int64(p.Model.Layers)*lp.Norms*int64(p.TP)) * int64(p.DTypeBytes)
		if got != want {
			t.Errorf("%s: layer weights over ranks %d, want %d", name, got, want)
		}
		var kv int64
		for _, r := range p.Ranks {
			kv += r.Memory.KVCacheBytes
		}
		if want := int64(p.Model.Layers) * KVBytesPerLayer(p.Model, p.Config.Workload.Batch, p.Config.Workload.Context); kv != want {
			t.Errorf("%s: KV over ranks %d, want %d", name, kv, want)
		}
	}
}

func TestFLOPsConservedAcrossPartitionings(t *testing.T) {
	// Layer FLOPs of one decode step, summed over ranks, do not depend on the partitioning.
	sum := func(p *Plan) (f int64) {
		for r := range p.Ranks {
			for _, op := range p.Program(r, Decode).Ops {
				if op.Layer >= 0 && (op.Kind == Gemm || op.Kind == Attention) {
					f += op.FLOPs
				}
			}
		}
		return f
	}
	a, b := sum(plan(t, "tp8pp2")), sum(plan(t, "layerwise16"))
	// One decode step of the seed: GEMMs 2 × 128 tokens × 268,435,456 matrix params × 16
	// layers = 1,099,511,627,776; attention 4 × (32 × 128) × 128 seqs × 9,937 keys (past
	// 9,936 + itself) × 16 layers = 2,097,152 × 9,937 × 16 = 333,430,390,784. Sum 1,432,942,018,560.
	if a != b || a != 1_432_942_018_560 {
		t.Fatalf("decode FLOPs tp8pp2 %d layerwise16 %d, want both 1,432,942,018,560", a, b)
	}
}

func TestPlanThatDoesNotFitNamesTheRank(t *testing.T) {
	c, _ := configs.Load("layerwise16")
	c.Workload.Batch = 1024 // KV alone: 1024 × 10,000 × 16,384 B = 167.8 GB per rank
	_, err := NewPlan(c)
	if err == nil || !strings.Contains(err.Error(), "does not fit: rank") || !strings.Contains(err.Error(), "usable HBM is 83.37 GB") {
		t.Fatalf("want a does-not-fit error naming the rank and capacity, got %v", err)
	}
}

func TestPrefillChunkedWhenActivationsDoNotFit(t *testing.T) {
	// layerwise16 prefills 128 sequences at once: a whole 9,872-token prompt
	// needs 1,263,616 tokens × (3·4096 + 2·16384 + 2·4096) × 2 B ≈ 134 GB of
	// activations, so the plan halves the chunk until it fits.
	p := plan(t, "layerwise16")
	if p.PrefillChunk >= 9872 || p.PrefillChunks < 2 || p.PrefillChunk*p.PrefillChunks < 9872 {
		t.Fatalf("prefill chunk %d × %d", p.PrefillChunk, p.PrefillChunks)
	}
	for _, r := range p.Ranks {
		if r.Memory.TotalBytes > r.Memory.CapacityBytes {
			t.Fatalf("rank %d over capacity after chunking", r.Rank)
		}
	}
	// tp8pp2's micro-batch of 16 fits unchunked.
	if q := plan(t, "tp8pp2"); q.PrefillChunks != 1 {
		t.Fatalf("tp8pp2 chunked into %d", q.PrefillChunks)
	}
}

func TestCountsMatchRingFormula(t *testing.T) {
	// tp2pp2-tiny decode, rank 0 (stage 0, tp 0): per micro-batch of 2
	// sequences, embed all-reduce + 4 layers × 2 all-reduces = 9 all-reduces of
	// 2 × 64 fp32 = 512 B; ring of 2: 2 messages of 256 B each to rank 1.
	// Plus 1 token recv (2 × 4 B) and 1 activation send to rank 2 (512 B).
	// Two micro-batches: 18 all-reduces, 2 sends, 2 recvs.
	p := plan(t, "test/tp2pp2-tiny")
	s := p.Counts(p.Program(0, Decode))
	if s.Calls["all_reduce"] != 18 || s.Bytes["all_reduce"] != 18*512 || s.Calls["send"] != 2 || s.Calls["recv"] != 2 || s.Bytes["recv"] != 16 {
		t.Fatalf("calls %v bytes %v", s.Calls, s.Bytes)
	}
	if s.Peers[1].Messages != 36 || s.Peers[1].WireBytes != 36*256 || s.Peers[2].Messages != 2 || s.Peers[2].WireBytes != 1024 {
		t.Fatalf("peers %v", s.Peers)
	}
}

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		want string
	}{{1, "GPU", "1 GPU"}, {16, "GPU", "16 GPUs"}, {1, "micro-batch", "1 micro-batch"}, {4, "micro-batch", "4 micro-batches"}, {0, "GPU", "0 GPUs"}} {
		if got := plural(c.n, c.noun); got != c.want {
			t.Errorf("plural(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}
