package shards

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/checkpoint"
	"github.com/partbench/partbench/checkpoint/checkpointtest"
	"github.com/partbench/partbench/partition"
)

// writableCopy is a copy of fixture directory dir's files (config.json and
// the weights) in a temporary directory, for tests that write beside them.
func writableCopy(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.IsDir() {
			continue
		}
		src, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.Create(filepath.Join(out, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			t.Fatal(err)
		}
		src.Close()
		if err := dst.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// writeAll writes every TP index's pre-sharded file of plan into dir.
func writeAll(t *testing.T, dir string, w *checkpoint.Weights, hf *checkpoint.Config, plan *partition.Plan) {
	t.Helper()
	for i := 0; i < plan.TP; i++ {
		path, n, err := WriteSharded(dir, w, hf, plan.Shard(i), StageTensors(plan, i))
		if err != nil {
			t.Fatalf("TP index %d: %v", i, err)
		}
		if st, err := os.Stat(path); err != nil || st.Size() != n {
			t.Fatalf("TP index %d: %s: %v, size %v, WriteSharded said %d", i, path, err, st, n)
		}
	}
}

// TestShardedMatchesSource: every tensor of every rank of TP 1, 2 and 4
// (GPT-2) and TP 2 × PP 2 plans of both fixtures, with their weights in
// F32, BF16 and F16, read from the pre-sharded files WriteSharded wrote
// (alone, and after a Prefetch of the rank's list reversed with a repeat)
// equals bit for bit the same tensor read from the checkpoint by a Source
// (whose values exec/hf's tests compare with transformers'). Each file's
// data section is its tensors' elements in the checkpoint's element type:
// 2 bytes an element for BF16 and F16, 4 for F32.
func TestShardedMatchesSource(t *testing.T) {
	for fx, degrees := range map[string][][2]int{
		"llama-tiny": {{1, 1}, {2, 1}, {2, 2}},
		"gpt2-tiny":  {{1, 1}, {2, 1}, {4, 1}, {2, 2}},
	} {
		for _, dt := range []checkpoint.DType{checkpoint.F32, checkpoint.BF16, checkpoint.F16} {
			dir := writableCopy(t, fixtureAs(t, checkpointtest.Dir(t, fx), dt))
			hf, w := openDir(t, dir)
			for _, d := range degrees {
				plan := planOf(t, dir, d[0], d[1])
				writeAll(t, dir, w, hf, plan)
				for rank := range plan.Ranks {
					what := fmt.Sprintf("%s %s tp%d pp%d rank %d", fx, dt, d[0], d[1], rank)
					shard := plan.Shard(plan.Ranks[rank].TPIndex)
					list := plan.Tensors(rank)
					pre, err := OpenSharded(dir, w, shard)
					if err != nil || pre == nil {
						t.Fatalf("%s: OpenSharded: %v, %v", what, pre, err)
					}
					var elems int64
					for _, info := range pre.w.Files()[0].Header().Tensors {
						elems += info.Elements()
					}
					if got, want := pre.w.Files()[0].Header().DataBytes, elems*dt.Size(); got != want {
						t.Fatalf("%s: data section %d bytes, want %d (%d elements of %s)", what, got, want, elems, dt)
					}
					rev := slices.Clone(list)
					slices.Reverse(rev)
					if err := pre.Prefetch(append(rev, list[0])); err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					alone, err := OpenSharded(dir, w, shard)
					if err != nil {
						t.Fatal(err)
					}
					ref := New(w, hf, shard)
					for _, ts := range list {
						want, err := ref.Tensor(ts.Layer, ts.Name)
						if err != nil {
							t.Fatalf("%s: checkpoint %s of layer %d: %v", what, ts.Name, ts.Layer, err)
						}
						for way, s := range map[string]*Sharded{"prefetched": pre, "alone": alone} {
							got, err := s.Tensor(ts.Layer, ts.Name)
							if err != nil {
								t.Fatalf("%s: %s %s of layer %d: %v", what, way, ts.Name, ts.Layer, err)
							}
							if got.K != want.K || got.N != want.N {
								t.Fatalf("%s: %s %s of layer %d is [%d, %d], the checkpoint's [%d, %d]", what, way, ts.Name, ts.Layer, got.K, got.N, want.K, want.N)
							}
							for i := range want.Data {
								if math.Float32bits(got.Data[i]) != math.Float32bits(want.Data[i]) {
									t.Fatalf("%s: %s %s of layer %d element %d: %v, the checkpoint's %v", what, way, ts.Name, ts.Layer, i, got.Data[i], want.Data[i])
								}
							}
						}
					}
					if len(pre.fetched) != 0 {
						t.Fatalf("%s: %d tensors still held", what, len(pre.fetched))
					}
					pre.Close()
					alone.Close()
				}
			}
		}
	}
}

// TestShardedRefused: no file is no Sharded and no error; a file is
// refused once the checkpoint's file changes (its time), when it was
// written for another shard, and a tensor it was not written with is an
// error naming it; a write that fails leaves neither the file nor its
// partial copy.
func TestShardedRefused(t *testing.T) {
	dir := writableCopy(t, checkpointtest.Dir(t, "gpt2-tiny"))
	hf, w := openDir(t, dir)
	plan := planOf(t, dir, 2, 2)
	if s, err := OpenSharded(dir, w, plan.Shard(0)); s != nil || err != nil {
		t.Fatalf("no file: %v, %v", s, err)
	}
	// Stage 0's tensors only: stage 1's are not in the file.
	if _, _, err := WriteSharded(dir, w, hf, plan.Shard(0), plan.Tensors(plan.RankOf(0, 0))); err != nil {
		t.Fatal(err)
	}
	s, err := OpenSharded(dir, w, plan.Shard(0))
	if err != nil || s == nil {
		t.Fatalf("%v, %v", s, err)
	}
	last := plan.Tensors(plan.RankOf(1, 0))
	_, err = s.Tensor(last[len(last)-1].Layer, last[len(last)-1].Name)
	if err == nil || !strings.Contains(err.Error(), "not written for this partitioning's stages") {
		t.Fatalf("a tensor not written: %v", err)
	}
	s.Close()
	// The file of TP index 1 where TP index 0's should be.
	if _, _, err := WriteSharded(dir, w, hf, plan.Shard(1), StageTensors(plan, 1)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(ShardPath(dir, plan.Shard(1)), ShardPath(dir, plan.Shard(0))); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSharded(dir, w, plan.Shard(0)); err == nil || !strings.Contains(err.Error(), "written for shard") {
		t.Fatalf("another shard's file: %v", err)
	}
	// The checkpoint rewritten (its time moved): refused, naming the fix.
	writeAll(t, dir, w, hf, plan)
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, checkpoint.SingleFile), later, later); err != nil {
		t.Fatal(err)
	}
	_, err = OpenSharded(dir, w, plan.Shard(0))
	if err == nil || !strings.Contains(err.Error(), "other checkpoint files") || !strings.Contains(err.Error(), ShardsDir) {
		t.Fatalf("a changed checkpoint: %v", err)
	}
	// A failed write: a tensor GPT-2 does not have.
	fresh := writableCopy(t, checkpointtest.Dir(t, "gpt2-tiny"))
	hf2, w2 := openDir(t, fresh)
	bad := append(StageTensors(plan, 0), partition.TensorShard{Layer: 0, Name: "w_gate"})
	if _, _, err := WriteSharded(fresh, w2, hf2, plan.Shard(0), bad); err == nil || !strings.Contains(err.Error(), "w_gate") {
		t.Fatalf("a tensor the family lacks: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(fresh, ShardsDir, "*", "*"))
	if len(left) != 0 {
		t.Fatalf("a failed write left %v", left)
	}
}

// TestEncodeExact: every binary16 bit pattern widened to float32 narrows
// back to itself (NaN payloads and subnormals included); values the
// narrow types do not hold are errors, not rounded.
func TestEncodeExact(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		v := checkpoint.F16ToFloat32(uint16(h))
		got, ok := toF16(v)
		if !ok || got != uint16(h) {
			t.Fatalf("%#04x: %v narrows to %#04x, %v", h, v, got, ok)
		}
	}
	for _, v := range []float32{1 + 1.0/(1<<20), 70000, 1e-9, 3e-8} {
		if _, err := encode(nil, []float32{v}, checkpoint.F16); err == nil {
			t.Errorf("F16 %v: no error", v)
		}
	}
	if _, err := encode(nil, []float32{1 + 1.0/(1<<20)}, checkpoint.BF16); err == nil {
		t.Error("BF16 1+2^-20: no error")
	}
	b, err := encode(nil, []float32{1.5, -2}, checkpoint.BF16)
	// 1.5 = 0x3FC00000 → 0x3FC0; −2 = 0xC0000000 → 0xC000 (little-endian).
	if err != nil || !slices.Equal(b, []byte{0xc0, 0x3f, 0x00, 0xc0}) {
		t.Errorf("BF16 1.5, −2: % x, %v", b, err)
	}
}
