package configs

import "testing"

func TestTPIndivisible(t *testing.T) {
	// Llama-2-13B-like: 40 heads, 40 KV heads (unset: the heads), ffn 13824.
	m := Model{Heads: 40, FFN: 13824}
	for _, c := range []struct {
		tp   int
		want string
	}{{1, ""}, {2, ""}, {8, ""}, {4, ""}, {16, "heads 40, kv_heads 40"}, {3, "heads 40, kv_heads 40"}, {5, "ffn 13824"}, {0, "heads 40, kv_heads 40, ffn 13824"}} {
		got := ""
		for i, w := range m.TPIndivisible(c.tp) {
			if i > 0 {
				got += ", "
			}
			got += w.String()
		}
		if got != c.want {
			t.Errorf("tp %d: %q, want %q", c.tp, got, c.want)
		}
	}
	// 13824 = 2^9 · 27: tp 5 divides 40 heads but not 13824.
	if m.TPWidths()[1].Size != 40 {
		t.Errorf("kv_heads default %d, want the heads 40", m.TPWidths()[1].Size)
	}
}
