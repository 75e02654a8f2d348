package partition

import (
	"fmt"
	"sync"
	"testing"
)

// A layer's ops carry the names spelled out here by hand, in pass order:
// tp8pp2's stage 1 runs layers 8–15 under TP = 8, so its decode step of
// micro-batch 0 starts with the recv of stage 0's hidden states, then layer
// 8's twelve ops (two all-reduces: TP > 1), …, layer 15's, then the final
// ops of the last stage (no LM head in tp8pp2: sample, then the tokens'
// send back to stage 0).
func TestLayerOpNamesInProgram(t *testing.T) {
	p := plan(t, "tp8pp2")
	prog := p.Program(p.RankOf(1, 3), Decode)
	want := []string{"x.recv"}
	for l := 8; l < 16; l++ {
		for _, op := range []string{"attn_norm", "wqkv", "attn", "wo", "attn.ar", "attn_residual",
			"mlp_norm", "w_up", "act", "w_down", "mlp.ar", "mlp_residual"} {
			want = append(want, fmt.Sprintf("L%02d.%s", l, op))
		}
	}
	want = append(want, "sample", "tokens.send")
	var got []string
	for _, op := range prog.Ops {
		if op.Microbatch == 0 {
			got = append(got, op.Name)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("micro-batch 0's decode step has %d ops, want %d: %q", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("op %d is %q, want %q (all: %q)", i, got[i], want[i], got)
		}
	}
}

// The shared names of a layer are the names put together afresh, whatever
// order layers are first asked for (one far beyond the first table's 64,
// then small ones, then one beyond the grown table) and from many
// goroutines at once; a layer's names are one value, the same every time.
func TestLayerOpNamesOfAnyLayer(t *testing.T) {
	layers := []int{0, 1, 9, 10, 99, 100, 63, 64, 1000, 5, 4095, 2, 130}
	var wg sync.WaitGroup
	got := make([][]*layerOpNames, 8)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range layers {
				l := layers[(i+g)%len(layers)]
				got[g] = append(got[g], layerOpNamesOf(l))
			}
		}()
	}
	wg.Wait()
	for g := range got {
		for i, n := range got[g] {
			l := layers[(i+g)%len(layers)]
			if want := newLayerOpNames(l); *n != *want {
				t.Fatalf("layer %d: names %+v, want %+v", l, *n, *want)
			}
			if again := layerOpNamesOf(l); again != n {
				t.Fatalf("layer %d: a second table entry %p after %p", l, again, n)
			}
		}
	}
	// layerName's width: two digits at least, more when the index has them.
	for l, want := range map[int]string{0: "L00.wqkv", 7: "L07.wqkv", 42: "L42.wqkv", 130: "L130.wqkv", 4095: "L4095.wqkv"} {
		if got := layerOpNamesOf(l).wqkv; got != want {
			t.Errorf("layer %d: %q, want %q", l, got, want)
		}
	}
}
