package cuda

import (
	"errors"
	"math"
	"testing"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/localcomm"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// The Go mirror of the kernels' hash gives the model's prompt tokens and
// synthetic inputs (so the CUDA transliteration of mix and unit has a
// checked original).
func TestHashMirrorsCPU(t *testing.T) {
	for _, seed := range []int64{0, 7, -3, 1 << 40} {
		pb, sb := keyBase(seed, promptTensor), keyBase(seed, syntheticTensor)
		for seq := 0; seq < 9; seq++ {
			for pos := 0; pos < 40; pos += 3 {
				for _, vocab := range []int{96, 50000, 50257} {
					if got, want := promptToken(pb, seq, pos, vocab), model.PromptToken(seed, seq, pos, vocab); got != want {
						t.Fatalf("seed %d seq %d pos %d vocab %d: %d, exec/cpu %d", seed, seq, pos, vocab, got, want)
					}
				}
			}
		}
		for id := 0; id < 50000; id += 4999 {
			for c := 0; c < 64; c += 7 {
				if got, want := syntheticAt(sb, id, c), model.Uniform(seed, -1, syntheticTensor, id, c); got != want {
					t.Fatalf("seed %d token %d column %d: %v, exec/cpu %v", seed, id, c, got, want)
				}
			}
		}
	}
}

// Every binary16 value survives widening and narrowing, and narrowing
// rounds to nearest even at the edges.
func TestF16Conversions(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := f16ToF32(uint16(h))
		if f != f { // NaN: must stay NaN, quiet
			if back := f32ToF16(f); back&0x7c00 != 0x7c00 || back&0x3ff == 0 {
				t.Fatalf("NaN %#04x came back as %#04x", h, back)
			}
			continue
		}
		if back := f32ToF16(f); back != uint16(h) {
			t.Fatalf("%#04x → %v → %#04x", h, f, back)
		}
	}
	cases := []struct {
		f    float32
		want uint16
	}{
		{1, 0x3c00},
		{1 + 1.0/2048, 0x3c00},                  // halfway between 1 and 1+2^−10: to even (1)
		{1 + 3.0/2048, 0x3c02},                  // halfway between 1+2^−10 and 1+2^−9: to even
		{1 + 1.0/2048 + 1e-7, 0x3c01},           // above halfway: up
		{65504, 0x7bff},                         // largest finite
		{65519.99, 0x7bff},                      // below halfway to 65536: down
		{65520, 0x7c00},                         // halfway to the next binade: to even, which is Inf
		{float32(math.Inf(-1)), 0xfc00},         // −Inf
		{5.960464477539063e-08, 0x0001},         // 2^−24, smallest subnormal
		{2.9802322387695312e-08, 0x0000},        // 2^−25: halfway to 0, to even
		{3e-08, 0x0001},                         // just above 2^−25
		{6.097555160522461e-05, 0x03ff},         // largest subnormal
		{float32(math.Copysign(0, -1)), 0x8000}, // −0 keeps its sign
	}
	for _, c := range cases {
		if got := f32ToF16(c.f); got != c.want {
			t.Errorf("f32ToF16(%v) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}

func TestBF16Conversions(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := bf16ToF32(uint16(h))
		if f != f {
			continue
		}
		if back := f32ToBF16(f); back != uint16(h) {
			t.Fatalf("%#04x → %v → %#04x", h, f, back)
		}
	}
	cases := []struct {
		bits uint32
		want uint16
	}{
		{0x3f808000, 0x3f80}, // halfway, even below: down
		{0x3f818000, 0x3f82}, // halfway, odd below: up
		{0x3f808001, 0x3f81}, // above halfway: up
		{0x7f7fffff, 0x7f80}, // rounds up to Inf
		{0x7fc00001, 0x7fc0}, // quiet NaN stays NaN
		{0x7f800001, 0x7fc0}, // signalling NaN becomes quiet
	}
	for _, c := range cases {
		if got := f32ToBF16(math.Float32frombits(c.bits)); got != c.want {
			t.Errorf("f32ToBF16(%#08x) = %#04x, want %#04x", c.bits, got, c.want)
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	v := []float32{0.1, -2.5, 1e5}
	for name, dt := range dtypes {
		got := dt.decode(dt.encode(v))
		for i := range v {
			if got[i] != dt.round(v[i]) {
				t.Errorf("%s: %v → %v", name, v[i], got[i])
			}
		}
	}
	// fp16: 1e5 overflows; bf16 keeps 8 bits of mantissa: 0.1 → 0.10009765625.
	if f := dtypes["fp16"].round(1e5); !math.IsInf(float64(f), 1) {
		t.Errorf("fp16 1e5 = %v", f)
	}
	if f := dtypes["bf16"].round(0.1); f != 0.10009765625 {
		t.Errorf("bf16 0.1 = %v", f)
	}
}

func TestAttentionVec(t *testing.T) {
	// hd/V lanes per key: a power of two ≤ 32; a 16-byte load first, then the widest V.
	for hd, want := range map[int]int{8: 8, 16: 8, 64: 8, 128: 8, 256: 8, 4: 4, 2: 2, 6: 0, 96: 0, 512: 0, 40: 0, 12: 0} {
		if got := attentionVec(hd, 2); got != want {
			t.Errorf("attentionVec(%d, 2 bytes) = %d, want %d", hd, got, want)
		}
	}
	for hd, want := range map[int]int{8: 4, 128: 4, 256: 8, 2: 2} { // fp32: float4 loads where they fit
		if got := attentionVec(hd, 4); got != want {
			t.Errorf("attentionVec(%d, 4 bytes) = %d, want %d", hd, got, want)
		}
	}
}

// CheckOptions builds the reference with the constructor it is given (a
// typed field of exec.CheckOptions, not a convention on the plan's name),
// with fp32's tolerance by default and the given host communicators.
func TestCheckOptionsReference(t *testing.T) {
	plan := tinyPlan(t, "test/tp2pp2-tiny")
	errRef := errors.New("reference constructor")
	opts := CheckOptions(Options{}, func(*partition.Plan, int) (pexec.Compute, error) { return nil, errRef }, localcomm.Comms)
	if _, err := opts.NewReference(plan, 0); !errors.Is(err, errRef) {
		t.Errorf("NewReference: %v, want the given constructor's error", err)
	}
	if opts.Tolerance != pexec.DefaultTolerance {
		t.Errorf("tolerance %g, want fp32's %g", opts.Tolerance, pexec.DefaultTolerance)
	}
	if got := len(opts.NewComms(3)); got != 3 {
		t.Errorf("NewComms(3) made %d communicators", got)
	}
}

// Every decode segment is a maximal run of compute ops.
func TestSegments(t *testing.T) {
	for name, want := range map[string]int{
		// one GPU: the whole step per micro-batch run, no comm in between → 1
		"test/single-tiny": 1,
		// tp2pp2, rank 0 (first stage, 4 layers, 2 micro-batches), per
		// micro-batch: tokens.recv [input] embed.ar [norm qkv attn wo] ar
		// [residual norm up act down] ar [residual norm qkv attn wo] ar …
		// [residual] x.send: 1 + 2 per layer + 1 = 10 segments.
		"test/tp2pp2-tiny": 20,
	} {
		plan := tinyPlan(t, name)
		g := newGraphs(&Compute{plan: plan, rank: plan.Ranks[0]})
		if len(g.segs) != want {
			t.Errorf("%s: %d segments, want %d", name, len(g.segs), want)
		}
		for _, s := range g.segs {
			for _, o := range s.ops {
				for _, op := range plan.Program(0, partition.Decode).Ops {
					if op.Name == o.name && op.Microbatch == o.mb {
						if _, comm := op.Kind.Comm(); comm {
							t.Errorf("%s: communication op %s in segment %d", name, op.Name, s.id)
						}
					}
				}
			}
		}
	}
}
