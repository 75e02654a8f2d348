package model

import "fmt"

// Buf identifies one of a micro-batch's buffers in a Program (an op's In
// and Out). The zero value is no buffer.
type Buf uint8

// The buffers of a micro-batch.
const (
	NoBuf  Buf = iota
	X          // the residual stream [rows][hidden]
	H          // normalized [rows][hidden]
	QKV        // [rows][(heads + 2·kv_heads)·head_dim] on the rank
	AO         // attention output [rows][heads·head_dim]
	Y          // a projection's output [rows][hidden]
	U          // up (and gate) [rows][up width]
	A          // activated [rows][act width]
	Logits     // the rank's LM head shard [seqs][vocab shard]
	Tokens     // token ids, float32 [rows]
	numBufs
)

// gathered marks the region an all-gather whose In and Out are the same
// buffer writes to (Gathered).
const gathered Buf = 0x80

var bufNames = [numBufs]string{"", "x", "h", "qkv", "ao", "y", "u", "a", "logits", "tokens"}

// Buffers lists every buffer of a micro-batch, in order.
func Buffers() []Buf {
	out := make([]Buf, 0, numBufs-1)
	for b := X; b < numBufs; b++ {
		out = append(out, b)
	}
	return out
}

// Gathered is the region an all-gather of b into itself writes, laid out
// [group rank][rows][shard], so the part being sent is never overwritten:
// Logits.Gathered() is "logits.gathered".
func (b Buf) Gathered() Buf { return b | gathered }

// String is the buffer's name in the Program ("x", "qkv", "logits.gathered").
func (b Buf) String() string {
	base := b &^ gathered
	name := fmt.Sprintf("buf(%d)", uint8(base))
	if base < numBufs && (base != NoBuf || b == NoBuf) {
		name = bufNames[base]
	}
	if b&gathered != 0 {
		name += ".gathered"
	}
	return name
}

// MarshalText writes the name, so a Program's JSON says "in": "x".
func (b Buf) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText reads a name String writes.
func (b *Buf) UnmarshalText(text []byte) error {
	s := string(text)
	for c := NoBuf; c < numBufs; c++ {
		if s == c.String() {
			*b = c
			return nil
		}
		if c != NoBuf && s == c.Gathered().String() {
			*b = c.Gathered()
			return nil
		}
	}
	return fmt.Errorf("model: unknown buffer %q", s)
}
