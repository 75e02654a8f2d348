package configs

import "fmt"

// Width is one of a model's widths by its config key.
type Width struct {
	Key  string // "heads", "kv_heads", "ffn"
	Size int
}

// TPWidths are the widths tensor parallelism splits across its ranks, and
// so must divide: attention heads, KV heads (the heads when unset) and the
// MLP's ffn. It is the one statement of which tensor-parallel degrees a
// model allows; validation, search and the checkpoint partitionings read it.
func (m Model) TPWidths() []Width {
	kv := m.KVHeads
	if kv == 0 {
		kv = m.Heads
	}
	return []Width{{"heads", m.Heads}, {"kv_heads", kv}, {"ffn", m.FFN}}
}

// TPIndivisible lists the widths of TPWidths that tp does not divide
// (none: tp is a legal tensor-parallel degree for m).
func (m Model) TPIndivisible(tp int) []Width {
	var out []Width
	for _, w := range m.TPWidths() {
		if tp < 1 || w.Size%tp != 0 {
			out = append(out, w)
		}
	}
	return out
}

// String is "heads 40".
func (w Width) String() string { return fmt.Sprintf("%s %d", w.Key, w.Size) }
