package checkpoint

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// benchShapes are the layer shapes PARTBENCH_CKPT_BENCH_SHAPE chooses
// from: "small" (the default: hidden 1024, ffn 2816; the row-parallel
// tensors' rows are 2 KiB and 5.5 KiB) and "llama7b" (Llama 2 7B's hidden
// 4096 and ffn 11008: rows of 8 KiB and 21.5 KiB, a TP-8 rank's columns
// 1 KiB and 2.7 KiB of each).
var benchShapes = map[string][2]int{"small": {1024, 2816}, "llama7b": {4096, 11008}}

// benchCheckpoint writes a Llama-shaped BF16 checkpoint of about mb MiB
// (hidden h, ffn ffn, as many layers as fit) and returns its path and the
// layer count.
func benchCheckpoint(b *testing.B, mb, h, ffn int) (string, int) {
	b.Helper()
	layerBytes := 2 * (4*h*h + 3*h*ffn)
	layers := max(1, mb<<20/layerBytes)
	var ts []rawTensorData
	pattern := make([]byte, 2*h*ffn) // the largest tensor's bytes; every tensor is a prefix
	for i := range pattern {
		pattern[i] = byte(i*7 + 3)
	}
	fill := func(n int) []byte { return pattern[:2*n] }
	for l := 0; l < layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		for _, m := range []struct {
			name       string
			rows, cols int
		}{
			{"self_attn.q_proj.weight", h, h}, {"self_attn.k_proj.weight", h, h}, {"self_attn.v_proj.weight", h, h},
			{"self_attn.o_proj.weight", h, h},
			{"mlp.gate_proj.weight", ffn, h}, {"mlp.up_proj.weight", ffn, h}, {"mlp.down_proj.weight", h, ffn},
		} {
			ts = append(ts, rawTensorData{p + m.name, BF16, []int64{int64(m.rows), int64(m.cols)}, fill(m.rows * m.cols)})
		}
	}
	path := filepath.Join(b.TempDir(), SingleFile)
	w, err := os.Create(path) // written tensor by tensor: the file may be larger than memory allows twice
	if err != nil {
		b.Fatal(err)
	}
	if _, err := w.Write(safetensorsHeader(b, ts)); err != nil {
		b.Fatal(err)
	}
	for _, x := range ts {
		if _, err := w.Write(x.data); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return path, layers
}

// benchFile is the benchmarks' checkpoint: PARTBENCH_CKPT_BENCH_MB
// megabytes (default 64) of bf16 Llama-shaped layers of the shape
// PARTBENCH_CKPT_BENCH_SHAPE names (benchShapes; default small); its path,
// layer count and size in bytes.
func benchFile(b *testing.B) (string, int, int64) {
	b.Helper()
	mb := 64
	if s := os.Getenv("PARTBENCH_CKPT_BENCH_MB"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("PARTBENCH_CKPT_BENCH_MB = %q: must be a positive integer", s)
		}
		mb = v
	}
	shape := "small"
	if s := os.Getenv("PARTBENCH_CKPT_BENCH_SHAPE"); s != "" {
		shape = s
	}
	hf, ok := benchShapes[shape]
	if !ok {
		b.Fatalf("PARTBENCH_CKPT_BENCH_SHAPE = %q: allowed are small and llama7b", shape)
	}
	path, layers := benchCheckpoint(b, mb, hf[0], hf[1])
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return path, layers, st.Size()
}

// readSequential reads the whole file at path through buf, as a plain copy.
func readSequential(b *testing.B, path string, buf []byte) {
	b.Helper()
	r, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf); err != nil {
		b.Fatal(err)
	}
}

// rankSlices is tensor-parallel rank 0's shards of every layer of f
// (column-parallel weights by rows, row-parallel by columns), into dst's
// buffers (made, and written once so that their pages are in memory, when
// missing).
func rankSlices(f *File, layers, tp int, dst map[string][]float32) []Slice {
	var out []Slice
	for l := 0; l < layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		for _, m := range []struct {
			name string
			cols bool // row-parallel: the rank's input columns
		}{
			{"self_attn.q_proj.weight", false}, {"self_attn.k_proj.weight", false}, {"self_attn.v_proj.weight", false},
			{"self_attn.o_proj.weight", true},
			{"mlp.gate_proj.weight", false}, {"mlp.up_proj.weight", false}, {"mlp.down_proj.weight", true},
		} {
			x, _ := f.Tensor(p + m.name)
			dim := x.Info.Shape[0]
			if m.cols {
				dim = x.Info.Shape[1]
			}
			buf := dst[x.Info.Name]
			if buf == nil {
				buf = make([]float32, x.Info.Elements()/int64(tp))
				for i := range buf {
					buf[i] = -1
				}
				dst[x.Info.Name] = buf
			}
			out = append(out, Slice{Tensor: x, Cols: m.cols, Lo: 0, Hi: dim / int64(tp), Dst: buf})
		}
	}
	return out
}

// sliceBytes is the bytes of the file the slices cover.
func sliceBytes(s []Slice) int64 {
	var n int64
	for _, x := range s {
		n += int64(len(x.Dst)) * x.Tensor.Info.DType.Size()
	}
	return n
}

// readRankShards reads tensor-parallel rank 0's shards (rankSlices) tensor
// by tensor, each with ReadRows or ReadCols, and returns the bytes of the
// file they cover.
func readRankShards(b *testing.B, f *File, layers, tp int, dst map[string][]float32) int64 {
	b.Helper()
	s := rankSlices(f, layers, tp, dst)
	for _, x := range s {
		if err := x.read(); err != nil {
			b.Fatal(err)
		}
	}
	return sliceBytes(s)
}

// BenchmarkRankSlices compares, in one run, a tensor-parallel rank reading
// its shards (column-parallel weights by rows, row-parallel by columns,
// converted to float32) with a plain sequential read of the whole file, and
// reports both bandwidths in bytes of the file per second and their ratio.
// The file is in the page cache after the first iteration: this measures the
// reader's overhead; cold-cache numbers need a multi-GB checkpoint and a
// dropped cache (PARTBENCH_CKPT_BENCH_MB sets the size, default 64).
func BenchmarkRankSlices(b *testing.B) {
	path, layers, size := benchFile(b)
	for _, tp := range []int{1, 2, 8} {
		b.Run(fmt.Sprintf("tp=%d", tp), func(b *testing.B) {
			f, err := Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := make([]byte, 4<<20)
			dst := map[string][]float32{} // the rank's weight buffers, filled in place
			var seqNS, sliceNS, sliceBytes int64
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				readSequential(b, path, buf)
				t1 := time.Now()
				sliceBytes = readRankShards(b, f, layers, tp, dst)
				t2 := time.Now()
				seqNS += t1.Sub(t0).Nanoseconds()
				sliceNS += t2.Sub(t1).Nanoseconds()
			}
			seqBps := float64(size) * float64(b.N) / (float64(seqNS) / 1e9)
			sliceBps := float64(sliceBytes) * float64(b.N) / (float64(sliceNS) / 1e9)
			b.ReportMetric(seqBps/1e6, "seq-MB/s")
			b.ReportMetric(sliceBps/1e6, "slice-MB/s")
			b.ReportMetric(sliceBps/seqBps, "slice/seq")
		})
	}
}
