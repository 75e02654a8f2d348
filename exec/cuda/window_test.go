//go:build cgo

package cuda

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/checkpoint/checkpointtest"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// windowWatch is a checkpoint Source (checkpoint/shards.Source, with
// Prefetch) that records what the host-weights load asks of it.
type windowWatch struct {
	model.Source
	pre     prefetcher
	lists   [][]partition.TensorShard // each Prefetch's list
	pending map[partition.TensorShard]bool
	early   []string // a window read before the last one was all taken
	unasked []string // a tensor taken that no Prefetch listed
}

func (w *windowWatch) Prefetch(list []partition.TensorShard) error {
	if len(w.pending) > 0 {
		w.early = append(w.early, fmt.Sprintf("window %d read with %d tensors of the last still held", len(w.lists), len(w.pending)))
	}
	w.lists = append(w.lists, append([]partition.TensorShard(nil), list...))
	for _, ts := range list {
		w.pending[ts] = true
	}
	return w.pre.Prefetch(list)
}

func (w *windowWatch) Tensor(layer int, name string) (*model.Tensor, error) {
	t, err := w.Source.Tensor(layer, name)
	if err == nil {
		k := partition.TensorShard{Layer: layer, Name: name, K: t.K, N: t.N}
		if !w.pending[k] {
			w.unasked = append(w.unasked, fmt.Sprintf("%s of layer %d", name, layer))
		}
		delete(w.pending, k)
	}
	return t, err
}

// TestCheckpointWindowsOnFakes: with a window of 64 KiB of float32, the
// host-weights load of every rank of TP 1 and TP 2 plans of both fixtures
// reads the rank's list as consecutive windows, in order, each within the
// budget unless it is one tensor larger than it (llama-tiny's embedding
// and LM head at TP 1: [512, 64] float32 is 128 KiB), the next window only
// after every tensor of the last was taken; it holds at most two windows
// (the peak is at most 2 · max(64 KiB, the largest tensor) and at least the
// largest window); and the device holds, byte for byte, what the load
// tensor by tensor (a Source without Prefetch, the default window) puts
// there, in fp16 and fp32.
func TestCheckpointWindowsOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	const budget = 64 << 10
	for _, fx := range []string{"llama-tiny", "gpt2-tiny"} {
		dir := checkpointtest.Dir(t, fx)
		m := openModel(t, dir)
		for _, tp := range []int{1, 2} {
			plan := hfPlan(t, dir, tp, 1)
			for rank := range plan.Ranks {
				for _, dt := range []string{"fp16", "fp32"} {
					what := fmt.Sprintf("%s tp%d rank %d %s", fx, tp, rank, dt)
					var watch *windowWatch
					watched := func(s model.Shard) (model.Source, error) {
						src, err := m.Shards(s)
						if err != nil {
							return nil, err
						}
						watch = &windowWatch{Source: src, pre: src.(prefetcher), pending: map[partition.TensorShard]bool{}}
						return watch, nil
					}
					c := fakeCompute(t, plan, rank, Options{DType: dt, Weights: watched, HostWindowBytes: budget})
					// Tensor by tensor: the Source's Prefetch hidden.
					alone := func(s model.Shard) (model.Source, error) {
						src, err := m.Shards(s)
						return struct{ model.Source }{src}, err
					}
					one := fakeCompute(t, plan, rank, Options{DType: dt, Weights: alone})

					list := plan.Tensors(rank)
					var got []partition.TensorShard
					var largest, largestWindow int64
					for i, l := range watch.lists {
						b := shardF32Bytes(l)
						if b > budget && len(l) > 1 {
							t.Errorf("%s: window %d holds %d tensors of %d B of float32, over the %d B budget", what, i, len(l), b, budget)
						}
						largestWindow = max(largestWindow, b)
						got = append(got, l...)
					}
					for _, ts := range list {
						largest = max(largest, shardF32Bytes([]partition.TensorShard{ts}))
					}
					if len(got) != len(list) {
						t.Fatalf("%s: the windows list %d tensors, the rank holds %d", what, len(got), len(list))
					}
					for i := range list {
						if got[i] != list[i] {
							t.Fatalf("%s: window tensor %d is %v, the rank's list has %v", what, i, got[i], list[i])
						}
					}
					// The fixtures' ranks are 0.3–1.5 MB of float32: several windows.
					if len(watch.lists) < 4 {
						t.Errorf("%s: %d windows of %d B: the budget did not cut the list", what, len(watch.lists), budget)
					}
					if len(watch.early) > 0 || len(watch.unasked) > 0 || len(watch.pending) > 0 {
						t.Errorf("%s: read ahead %v, taken unlisted %v, left %d", what, watch.early, watch.unasked, len(watch.pending))
					}
					if bound := 2 * max(budget, largest); c.hostPeakBytes > bound || c.hostPeakBytes < largestWindow {
						t.Errorf("%s: held at most %d B of float32, want between the largest window's %d and 2 · max(budget, largest tensor) = %d",
							what, c.hostPeakBytes, largestWindow, bound)
					}
					if want := fmt.Sprintf("read in %d windows of at most %d B", len(watch.lists), budget); !strings.Contains(c.WeightSource(), want) {
						t.Errorf("%s: weight source %q does not say %q", what, c.WeightSource(), want)
					}
					for _, ts := range list {
						if a, b := deviceBytes(t, c, ts.Layer, ts.Name), deviceBytes(t, one, ts.Layer, ts.Name); !bytes.Equal(a, b) {
							t.Fatalf("%s: %s of layer %d differs from the tensor-by-tensor load's", what, ts.Name, ts.Layer)
						}
					}
				}
			}
		}
	}
}

// hostWindows by hand, budget 64 B of float32 (16 values): shards of 4, 4,
// 8, 20, 2, 2 and 16 values (16, 16, 32, 80, 8, 8, 64 B) make windows
// {4, 4, 8} (64 B: the budget exactly), {20} (80 B, over the budget: alone),
// {2, 2} (16 B; the next 64 B would pass 64) and {16}.
func TestHostWindowsByHand(t *testing.T) {
	var list []partition.TensorShard
	for i, n := range []int{4, 4, 8, 20, 2, 2, 16} {
		list = append(list, partition.TensorShard{Layer: i, Name: "w", K: 1, N: n})
	}
	got := hostWindows(list, 64)
	want := [][]int{{0, 1, 2}, {3}, {4, 5}, {6}}
	if len(got) != len(want) {
		t.Fatalf("%d windows %v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		if len(got[i]) != len(w) {
			t.Fatalf("window %d is %v, want layers %v", i, got[i], w)
		}
		for j, l := range w {
			if got[i][j].Layer != l {
				t.Fatalf("window %d is %v, want layers %v", i, got[i], w)
			}
		}
	}
	if got := hostWindows(nil, 64); len(got) != 0 {
		t.Errorf("no shards: %d windows", len(got))
	}
}

// encodeParallel writes the same bytes as encodeInto on one goroutine for
// fp32, fp16 and bf16, on a vector of 3·2^20 + 17 values (three blocks
// and a remainder, on four goroutines) holding ±0, subnormals, values that
// round to even, overflow to infinity, infinities and a NaN among
// pseudo-random ones; and a vector under one block is encoded alone.
func TestEncodeParallelMatchesSerial(t *testing.T) {
	old := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(old)
	for _, n := range []int{3<<20 + 17, 1000} {
		v := make([]float32, n)
		x := uint32(7)
		for i := range v {
			x = x*1664525 + 1013904223
			v[i] = math.Float32frombits(x)
		}
		special := []float32{0, float32(math.Copysign(0, -1)), 1e-40, -3e-45, 1 + 1.0/2048, 65520, 1e30,
			float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
		for i, f := range special {
			v[(i*7919)%n] = f
		}
		for _, name := range []string{"fp32", "fp16", "bf16"} {
			d := dtypes[name]
			want, got := make([]byte, n*d.bytes), make([]byte, n*d.bytes)
			d.encodeInto(want, v)
			d.encodeParallel(got, v)
			if !bytes.Equal(got, want) {
				i := 0
				for i < len(got) && got[i] == want[i] {
					i++
				}
				t.Fatalf("%s, %d values: byte %d (value %d) is %#x, one goroutine wrote %#x", name, n, i, i/d.bytes, got[i], want[i])
			}
		}
	}
}
