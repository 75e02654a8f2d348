//go:build linux

package shards

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/partbench/partbench/checkpoint"
	"github.com/partbench/partbench/checkpoint/checkpointtest"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/stats"
)

// benchDir writes a Llama-shaped BF16 checkpoint directory of about mb MiB:
// hidden 1024 (16 heads of 64, as many KV heads), ffn 2816, vocabulary
// 32000, an untied LM head, and as many layers as fit beside the embedding
// and LM head (at least one). It returns the directory and the file's size.
// With PARTBENCH_SHARDS_BENCH_DIR set, the directory is that one, written
// there only when it holds no weights yet (so that several test binaries,
// the code before and after a change, read the same file in turn).
func benchDir(b *testing.B, mb int) (string, int64) {
	b.Helper()
	if d := os.Getenv("PARTBENCH_SHARDS_BENCH_DIR"); d != "" {
		if st, err := os.Stat(filepath.Join(d, checkpoint.SingleFile)); err == nil {
			return d, st.Size()
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatalf("PARTBENCH_SHARDS_BENCH_DIR = %q: %v", d, err)
		}
		return writeBenchDir(b, d, mb)
	}
	return writeBenchDir(b, b.TempDir(), mb)
}

// writeBenchDir writes benchDir's checkpoint into dir.
func writeBenchDir(b *testing.B, dir string, mb int) (string, int64) {
	b.Helper()
	const h, ffn, vocab = 1024, 2816, 32000
	layerBytes := 2 * (4*h*h + 3*h*ffn + 2*h)
	layers := max(1, (mb<<20-2*2*vocab*h)/layerBytes)
	type raw struct {
		name  string
		shape []int64
	}
	ts := []raw{{"model.embed_tokens.weight", []int64{vocab, h}}}
	for l := 0; l < layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		ts = append(ts, raw{p + "input_layernorm.weight", []int64{h}},
			raw{p + "self_attn.q_proj.weight", []int64{h, h}}, raw{p + "self_attn.k_proj.weight", []int64{h, h}},
			raw{p + "self_attn.v_proj.weight", []int64{h, h}}, raw{p + "self_attn.o_proj.weight", []int64{h, h}},
			raw{p + "post_attention_layernorm.weight", []int64{h}},
			raw{p + "mlp.gate_proj.weight", []int64{ffn, h}}, raw{p + "mlp.up_proj.weight", []int64{ffn, h}},
			raw{p + "mlp.down_proj.weight", []int64{h, ffn}})
	}
	ts = append(ts, raw{"model.norm.weight", []int64{h}}, raw{"lm_head.weight", []int64{vocab, h}})
	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var off int64
	for _, t := range ts {
		n := int64(2)
		for _, d := range t.shape {
			n *= d
		}
		hdr[t.name] = map[string]any{"dtype": "BF16", "shape": t.shape, "data_offsets": []int64{off, off + n}}
		off += n
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		b.Fatal(err)
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	cfg := map[string]any{
		"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama", "hidden_act": "silu",
		"hidden_size": h, "intermediate_size": ffn, "num_attention_heads": h / 64, "num_key_value_heads": h / 64,
		"head_dim": 64, "num_hidden_layers": layers, "vocab_size": vocab, "max_position_embeddings": 4096,
		"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
	}
	cj, err := json.Marshal(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, checkpoint.ConfigFile), cj, 0o644); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, checkpoint.SingleFile)
	w, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	// BF16 values near ±1 (exponent 0x3f), in a pattern, written in 1 MiB blocks.
	block := make([]byte, 1<<20)
	for i := 0; i < len(block); i += 2 {
		block[i], block[i+1] = byte(i*7+3), 0x3f|byte(i&0x80)
	}
	write := func(p []byte) {
		if _, err := w.Write(p); err != nil {
			b.Fatal(err)
		}
	}
	write(binary.LittleEndian.AppendUint64(nil, uint64(len(js))))
	write(js)
	for left := off; left > 0; left -= int64(len(block)) {
		write(block[:min(left, int64(len(block)))])
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return dir, 8 + int64(len(js)) + off
}

// BenchmarkRankLoadCold measures, on a cold page cache each time
// (checkpointtest.Evict), tensor-parallel rank 0 of a TP-2 and a TP-8 plan
// loading every tensor it holds through Source (open the weights, read,
// convert and lay out as the executors get them) two ways, as pairs in
// alternating order: "tensor", each tensor read alone (Tensor), and
// "prefetch", the whole list with one Prefetch and then Tensor. Each pair
// is preceded by a sequential read of the whole file after its own
// eviction. It reports per way the median over the pairs of the rank's
// checkpoint bytes per second (MB/s) and of those over the file's
// sequential rate (slice/seq), and the median over the pairs of the tensor
// time over the prefetch time (prefetch-speedup), and per way the median
// CPU time (user + system) of a load (cpu-s). Set
// PARTBENCH_SHARDS_BENCH_MB (default 256) for the file's size.
func BenchmarkRankLoadCold(b *testing.B) {
	dir, size := benchDir(b, benchMB(b))
	path := filepath.Join(dir, checkpoint.SingleFile)
	hf, err := checkpoint.ReadConfig(dir)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 4<<20)
	for _, tp := range []int{2, 8} {
		b.Run(fmt.Sprintf("tp=%d", tp), func(b *testing.B) {
			r := newBenchRank(b, dir, hf, tp)
			rankBytes := r.bytes
			load := func(prefetch bool) float64 {
				checkpointtest.Evict(b, path)
				t0 := time.Now()
				w := r.load(b, prefetch)
				dt := time.Since(t0).Seconds()
				w.Close()
				return dt
			}
			seqRead := func() float64 { return coldSequentialRead(b, path, buf) }
			var speedup []float64
			rate, cpu := [2][]float64{}, [2][]float64{}
			vsSeq := [2][]float64{}
			for i := 0; i < b.N; i++ {
				seq := seqRead()
				var dt [2]float64
				for k := range 2 {
					k := (k + i) % 2 // each way takes each place in turn
					c0 := cpuSeconds(b)
					dt[k] = load(k == 1)
					cpu[k] = append(cpu[k], cpuSeconds(b)-c0)
					rate[k] = append(rate[k], float64(rankBytes)/dt[k]/1e6)
					vsSeq[k] = append(vsSeq[k], float64(rankBytes)/dt[k]/(float64(size)/seq))
				}
				speedup = append(speedup, dt[0]/dt[1])
				if testing.Verbose() {
					fmt.Printf("pair tp=%d iteration %d: seq %.0f MB/s, tensor %.0f MB/s, prefetch %.0f MB/s, tensor/prefetch time %.3f\n",
						tp, i, float64(size)/seq/1e6, rate[0][i], rate[1][i], dt[0]/dt[1])
				}
			}
			for k, name := range []string{"tensor", "prefetch"} {
				b.ReportMetric(stats.Median(rate[k]), name+"-MB/s")
				b.ReportMetric(stats.Median(vsSeq[k]), name+"-slice/seq")
				b.ReportMetric(stats.Median(cpu[k]), name+"-cpu-s")
			}
			b.ReportMetric(stats.Median(speedup), "prefetch-speedup")
			b.ReportMetric(float64(rankBytes)/1e6, "rank-MB")
			b.ReportMetric(float64(size)/1e6, "file-MB")
		})
	}
}

// coldSequentialRead is the seconds one stream takes to read the whole file
// at path through buf after evicting it: the baseline of the cold
// benchmarks.
func coldSequentialRead(b *testing.B, path string, buf []byte) float64 {
	checkpointtest.Evict(b, path)
	t0 := time.Now()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0).Seconds()
}

// benchMB is PARTBENCH_SHARDS_BENCH_MB (default 256).
func benchMB(b *testing.B) int {
	mb := 256
	if s := os.Getenv("PARTBENCH_SHARDS_BENCH_MB"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("PARTBENCH_SHARDS_BENCH_MB = %q: must be a positive integer", s)
		}
		mb = v
	}
	return mb
}

// BenchmarkRankLoadWarm is tensor-parallel rank 0 of TP-1, TP-2 and TP-8
// plans loading every tensor it holds through Source with one Prefetch (as
// exec/cpu does) from a file already in the page cache: the CPU side of a
// rank's load alone (open, plan, pread from the cache, convert, lay out),
// per op, with the rank's checkpoint bytes per second (MB/s) and the
// process's CPU time (user + system) per op, which other jobs on the
// machine change less than the wall time.
func BenchmarkRankLoadWarm(b *testing.B) {
	dir, _ := benchDir(b, benchMB(b))
	hf, err := checkpoint.ReadConfig(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, tp := range []int{1, 2, 8} {
		b.Run(fmt.Sprintf("tp=%d", tp), func(b *testing.B) {
			r := newBenchRank(b, dir, hf, tp)
			rankBytes := r.bytes
			load := func() { r.load(b, true).Close() }
			load() // the file's pages into the cache
			b.SetBytes(rankBytes)
			b.ResetTimer()
			cpu0 := cpuSeconds(b)
			for range b.N {
				load()
			}
			b.ReportMetric((cpuSeconds(b)-cpu0)/float64(b.N), "cpu-s/op")
		})
	}
}

// cpuSeconds is the process's user + system CPU time so far.
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// benchRank is tensor-parallel rank 0 of a TP-tp plan of the benchmark's
// checkpoint directory.
type benchRank struct {
	dir   string
	hf    *checkpoint.Config
	list  []partition.TensorShard
	shard model.Shard
	bytes int64 // bf16 bytes of the checkpoint the rank holds
}

func newBenchRank(b *testing.B, dir string, hf *checkpoint.Config, tp int) benchRank {
	plan := planOf(b, dir, tp, 1)
	r := benchRank{dir: dir, hf: hf, list: plan.Tensors(0), shard: plan.Shard(plan.Ranks[0].TPIndex)}
	for _, ts := range r.list {
		r.bytes += 2 * int64(ts.K) * int64(ts.N)
	}
	return r
}

// writeSharded writes the rank's pre-sharded file (WriteSharded) from the
// benchmark's checkpoint and returns its path.
func (r benchRank) writeSharded(b *testing.B) string {
	w, err := checkpoint.OpenWeights(r.dir)
	if err != nil {
		b.Fatal(err)
	}
	path, _, err := WriteSharded(r.dir, w, r.hf, r.shard, r.list)
	w.Close()
	if err != nil {
		b.Fatal(err)
	}
	return path
}

// load opens the weights and reads every tensor of the rank through a
// Source, with one Prefetch of the whole list first or tensor by tensor,
// as the executors do; the caller closes the weights it returns.
func (r benchRank) load(b *testing.B, prefetch bool) *checkpoint.Weights {
	w, err := checkpoint.OpenWeights(r.dir)
	if err != nil {
		b.Fatal(err)
	}
	s := New(w, r.hf, r.shard)
	if prefetch {
		if err := s.Prefetch(r.list); err != nil {
			b.Fatal(err)
		}
	}
	for _, ts := range r.list {
		if _, err := s.Tensor(ts.Layer, ts.Name); err != nil {
			b.Fatal(err)
		}
	}
	return w
}

// BenchmarkRankLoadShardedCold measures, on a cold page cache each time
// (checkpointtest.Evict of the file read), tensor-parallel rank 0 of TP-1,
// TP-2 and TP-8 plans loading every tensor it holds two ways, as pairs in
// alternating order: "checkpoint", through Source with one Prefetch from
// the Hugging Face file (as exec/cpu does), and "sharded", through Sharded
// with one Prefetch from the rank's pre-sharded file (WriteSharded, written
// once before the pairs, not timed). Each pair is preceded by three
// sequential reads of the whole checkpoint file, each after its own
// eviction, in rotating order: "seq-cache" through the page cache,
// "seq-direct" with direct I/O, one 4 MiB read at a time, and "seq-directq"
// with direct I/O and checkpoint.ReadsInFlight() reads in flight, the queue
// depth the sharded load itself keeps (coldSequentialReadDirect; none where
// the file system refuses it). A pair's baseline is the fastest of the
// three: the file's best sequential read on this disk at that moment, and
// never one shallower than the load's own. After the pair's loads, a cold
// direct read of the rank's own pre-sharded file, one stream ("own-direct"),
// gives a diagnostic beside the baseline: the sharded load's rate over its
// own file's (sharded-slice/own, median and lowest), which the host's cache
// below a virtual disk moves less than it moves the ratio to another file
// read three times a pair. It reports per
// way the median over the pairs of the rank's bytes (in the checkpoint's
// BF16) per second (MB/s) and of that over the pair's baseline
// (slice/seq), with the lowest and highest pair (slice/seq-min, -max), the
// median CPU time of a load (cpu-s), and the median, lowest and highest
// rate of each sequential read (seq-directq's as "seq-directqN" for
// depth N). PARTBENCH_SHARDS_BENCH_MB sets the file's size (default 256).
func BenchmarkRankLoadShardedCold(b *testing.B) {
	dir, size := benchDir(b, benchMB(b))
	path := filepath.Join(dir, checkpoint.SingleFile)
	hf, err := checkpoint.ReadConfig(dir)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 4<<20)
	depth := checkpoint.ReadsInFlight()
	for _, tp := range []int{1, 2, 8} {
		b.Run(fmt.Sprintf("tp=%d", tp), func(b *testing.B) {
			r := newBenchRank(b, dir, hf, tp)
			shardPath := r.writeSharded(b)
			loadSharded := func() { loadShardedRank(b, dir, r.shard, r.list) }
			st, err := os.Stat(shardPath)
			if err != nil {
				b.Fatal(err)
			}
			rate, vsSeq, cpu := [2][]float64{}, [2][]float64{}, [2][]float64{}
			var seqCache, seqDirect, seqDirectQ []float64 // MB/s
			var vsOwn []float64                           // sharded load over its own file's direct read
			for i := 0; i < b.N; i++ {
				var cacheS, directS, directQS float64
				direct, directQ := false, false
				for k := range 3 {
					switch (k + i) % 3 {
					case 0:
						cacheS = coldSequentialRead(b, path, buf)
					case 1:
						directS, direct = coldSequentialReadDirect(b, path, 1)
					default:
						directQS, directQ = coldSequentialReadDirect(b, path, depth)
					}
				}
				seqCache = append(seqCache, float64(size)/cacheS/1e6)
				best := cacheS
				if direct {
					seqDirect = append(seqDirect, float64(size)/directS/1e6)
					best = min(best, directS)
				}
				if directQ {
					seqDirectQ = append(seqDirectQ, float64(size)/directQS/1e6)
					best = min(best, directQS)
				}
				for k := range 2 {
					k := (k + i) % 2 // each way takes each place in turn
					c0 := cpuSeconds(b)
					var dt float64
					if k == 0 {
						checkpointtest.Evict(b, path)
						t0 := time.Now()
						r.load(b, true).Close()
						dt = time.Since(t0).Seconds()
					} else {
						checkpointtest.Evict(b, shardPath)
						t0 := time.Now()
						loadSharded()
						dt = time.Since(t0).Seconds()
					}
					cpu[k] = append(cpu[k], cpuSeconds(b)-c0)
					rate[k] = append(rate[k], float64(r.bytes)/dt/1e6)
					vsSeq[k] = append(vsSeq[k], float64(r.bytes)/dt/(float64(size)/best))
				}
				own := "refused"
				if ownS, ok := coldSequentialReadDirect(b, shardPath, 1); ok { // after the loads: never warms the host's cache for them
					vsOwn = append(vsOwn, rate[1][i]/(float64(st.Size())/ownS/1e6))
					own = fmt.Sprintf("%.0f MB/s (%.2f)", float64(st.Size())/ownS/1e6, vsOwn[len(vsOwn)-1])
				}
				if testing.Verbose() {
					d, dq := "refused", "refused"
					if direct {
						d = fmt.Sprintf("%.0f MB/s", seqDirect[len(seqDirect)-1])
					}
					if directQ {
						dq = fmt.Sprintf("%.0f MB/s", seqDirectQ[len(seqDirectQ)-1])
					}
					fmt.Printf("pair tp=%d iteration %d: seq-cache %.0f MB/s, seq-direct %s, seq-directq%d %s, checkpoint %.0f MB/s (%.2f), sharded %.0f MB/s (%.2f), own-direct %s\n",
						tp, i, seqCache[i], d, depth, dq, rate[0][i], vsSeq[0][i], rate[1][i], vsSeq[1][i], own)
				}
			}
			for k, name := range []string{"checkpoint", "sharded"} {
				b.ReportMetric(stats.Median(rate[k]), name+"-MB/s")
				b.ReportMetric(stats.Median(vsSeq[k]), name+"-slice/seq")
				b.ReportMetric(slices.Min(vsSeq[k]), name+"-slice/seq-min")
				b.ReportMetric(slices.Max(vsSeq[k]), name+"-slice/seq-max")
				b.ReportMetric(stats.Median(cpu[k]), name+"-cpu-s")
			}
			b.ReportMetric(stats.Median(seqCache), "seq-cache-MB/s")
			b.ReportMetric(slices.Min(seqCache), "seq-cache-min-MB/s")
			b.ReportMetric(slices.Max(seqCache), "seq-cache-max-MB/s")
			if len(seqDirect) > 0 {
				b.ReportMetric(stats.Median(seqDirect), "seq-direct-MB/s")
				b.ReportMetric(slices.Min(seqDirect), "seq-direct-min-MB/s")
				b.ReportMetric(slices.Max(seqDirect), "seq-direct-max-MB/s")
			}
			if len(seqDirectQ) > 0 {
				q := fmt.Sprintf("seq-directq%d", depth)
				b.ReportMetric(stats.Median(seqDirectQ), q+"-MB/s")
				b.ReportMetric(slices.Min(seqDirectQ), q+"-min-MB/s")
				b.ReportMetric(slices.Max(seqDirectQ), q+"-max-MB/s")
			}
			if len(vsOwn) > 0 {
				b.ReportMetric(stats.Median(vsOwn), "sharded-slice/own")
				b.ReportMetric(slices.Min(vsOwn), "sharded-slice/own-min")
			}
			b.ReportMetric(float64(r.bytes)/1e6, "rank-MB")
			b.ReportMetric(float64(size)/1e6, "file-MB")
		})
	}
}

// coldSequentialReadDirect is the seconds depth streams take to read the
// whole file at path with direct I/O (O_DIRECT) after evicting it, taking
// its 4 MiB blocks in order, each into a page-aligned buffer of its own (as
// ReadSlices's readers do; depth 1 is one stream front to back), and
// whether they could: false where the open or a read is refused (EINVAL: a
// file system without direct I/O), and the baseline is then the others.
func coldSequentialReadDirect(b *testing.B, path string, depth int) (float64, bool) {
	const block = 4 << 20
	checkpointtest.Evict(b, path)
	bufs := make([][]byte, depth)
	for k := range bufs {
		bufs[k] = alignedBuffer(block)
	}
	t0 := time.Now()
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	errs := make(chan error, depth)
	for k := range depth {
		go func() {
			for {
				off := (next.Add(1) - 1) * block
				if off >= st.Size() {
					errs <- nil
					return
				}
				if _, err := f.ReadAt(bufs[k], off); err != nil && !errors.Is(err, io.EOF) {
					errs <- fmt.Errorf("direct read at %d: %w", off, err)
					return
				}
			}
		}()
	}
	var first error
	for range depth {
		if err := <-errs; err != nil && first == nil {
			first = err
			next.Store(st.Size()) // the others stop at their next block
		}
	}
	if first != nil {
		if errors.Is(first, syscall.EINVAL) {
			return 0, false
		}
		b.Fatalf("%s: %v", path, first)
	}
	return time.Since(t0).Seconds(), true
}

// alignedBuffer is n bytes starting on a page, as direct reads want.
func alignedBuffer(n int) []byte {
	page := os.Getpagesize()
	b := make([]byte, n+page)
	o := (page - int(uintptr(unsafe.Pointer(&b[0])))%page) % page
	return b[o : o+n : o+n]
}

// BenchmarkShardedLoadCold is the sharded load of BenchmarkRankLoadShardedCold
// alone (no sequential reads, WriteSharded once before the timer, the file
// evicted and the previous load's memory returned to the system with
// debug.FreeOSMemory, with the timer stopped, so that each load writes
// fresh memory as a process's one load does): tensor-parallel rank 0 of TP-1, TP-2 and
// TP-8 plans reading every tensor it holds through Sharded with one
// Prefetch from its pre-sharded file. Per load it reports the process's
// user and system CPU seconds and its minor page faults (first touches of
// fresh memory: the float32 tensors, 4 KiB or 2 MiB a fault), so that a
// profile (-cpuprofile) of this benchmark is the load's own: its samples
// carry the label load=sharded (go tool pprof -tagfocus load=sharded).
func BenchmarkShardedLoadCold(b *testing.B) {
	dir, _ := benchDir(b, benchMB(b))
	hf, err := checkpoint.ReadConfig(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, tp := range []int{1, 2, 8} {
		b.Run(fmt.Sprintf("tp=%d", tp), func(b *testing.B) {
			r := newBenchRank(b, dir, hf, tp)
			shardPath := r.writeSharded(b)
			var user, sys, flt float64
			b.SetBytes(r.bytes)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				checkpointtest.Evict(b, shardPath)
				debug.FreeOSMemory() // the last load's tensors back to the system: a fresh process's first load
				ru0 := rusage(b)
				b.StartTimer()
				pprof.Do(context.Background(), pprof.Labels("load", "sharded"), func(context.Context) {
					loadShardedRank(b, dir, r.shard, r.list)
				})
				b.StopTimer()
				ru := rusage(b)
				user += float64(ru.Utime.Nano()-ru0.Utime.Nano()) / 1e9
				sys += float64(ru.Stime.Nano()-ru0.Stime.Nano()) / 1e9
				flt += float64(ru.Minflt - ru0.Minflt)
				b.StartTimer()
			}
			b.ReportMetric(user/float64(b.N), "user-s/op")
			b.ReportMetric(sys/float64(b.N), "sys-s/op")
			b.ReportMetric(flt/float64(b.N), "minflt/op")
		})
	}
}

// rusage is the process's resource usage so far.
func rusage(b *testing.B) syscall.Rusage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru
}

// loadShardedRank loads every tensor of list from shard's pre-sharded file
// in dir, as a rank does: open, one Prefetch, each tensor, close.
func loadShardedRank(b *testing.B, dir string, shard model.Shard, list []partition.TensorShard) {
	b.Helper()
	w, err := checkpoint.OpenWeights(dir)
	if err != nil {
		b.Fatal(err)
	}
	s, err := OpenSharded(dir, w, shard)
	if err != nil || s == nil {
		b.Fatalf("%v, %v", s, err)
	}
	if err := s.Prefetch(list); err != nil {
		b.Fatal(err)
	}
	for _, ts := range list {
		if _, err := s.Tensor(ts.Layer, ts.Name); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	w.Close()
}
