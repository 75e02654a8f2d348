package cuda

import (
	"math"
)

// A Go model of the tensor-core attention kernels in flash.cu and
// splitkv.cu: the same tiles in the same order, the same rounding points,
// fp32 everywhere else. It is what the kernels are held against on CPUs
// (the host-emulation harness runs flash.cu and compares it with these
// functions), and it is itself tested against exec/cpu's attention.
//
// Layouts are the backend's: qkv rows [seq][j] of [q hl·hd | k kvl·hd |
// v kvl·hd] (q already rotated), the KV cache [seq][pos][kvl·hd] for
// sequences seq0…, ao rows [seq][j] of [hl·hd].

// attnGeom is one attention call as the kernels see it: seqs sequences
// (the first is seq0 in the cache) of q new tokens after past cached ones,
// hl query heads and kvl key/value heads of hd, a cache of context
// positions per sequence.
type attnGeom struct {
	seq0, seqs, q, past int
	hl, kvl, hd         int
	context             int
	bidir               bool // every query sees all past+q positions
}

// keys is the number of cache positions the call reads: past+q.
func (g attnGeom) keys() int { return g.past + g.q }

// scaleLog2 is 1/√hd·log2(e): the kernels score in base 2 (exp2f), which
// is softmax with the usual 1/√hd scale.
func (g attnGeom) scaleLog2() float32 {
	return float32(1 / math.Sqrt(float64(g.hd)) * math.Log2E)
}

// flashTiles are the prefill kernel's tiles: br queries per block (16 per
// warp), bc keys per K/V tile.
type flashTiles struct{ br, bc int }

// mmaK is the reduction length of one mma.sync m16n8k16. The model takes
// each mma as d = c + Σ of its 16 products, the products exact and the
// sum in float64 rounded once to fp32: the documented bound on what the
// tensor core's fp32 accumulation does, and what the host-emulation
// harness computes.
const mmaK = 16

// mma16 is one mma's contribution to the accumulator c: c + Σ a[e]·b[e].
func mma16(c float32, a, b []float32) float32 {
	s := float64(c)
	for e := range a {
		s += float64(a[e]) * float64(b[e])
	}
	return float32(s)
}

// flashBug plants a defect in the model for the tests that prove they
// catch one: "rescale" drops the correction of the running sum and
// accumulator when the running max grows, "mask" lets a query see the
// key after it. Empty in every real use.
var flashBug string

// flashPrefillModel writes to ao the attention of every query of g,
// computed as the prefill kernel computes it: query tiles of t.br rows,
// key tiles of t.bc positions in increasing order, causal tiles past a
// query tile's last position skipped whole (never read), the tiles that
// reach past the first query's position masked per element (and the last
// tile masked past keys()). Per row it keeps the running max m (base-2
// scores), the running sum l of the unrounded p = 2^(s−m), and the fp32
// accumulator o; a new tile's max m' rescales l and o by 2^(m−m'), then
// adds p rounded to the storage type (round) times V. Query head h reads
// key/value head h/(hl/kvl). The output is o/l rounded by round.
func flashPrefillModel(g attnGeom, t flashTiles, round func(float32) float32, qkv, kc, vc, ao []float32) {
	hd, row, kvw := g.hd, (g.hl+2*g.kvl)*g.hd, g.kvl*g.hd
	group := g.hl / g.kvl
	sl2 := g.scaleLog2()
	n := g.keys()
	s := make([]float32, t.bc)
	p := make([]float32, t.bc)
	o := make([]float32, hd)
	for i := 0; i < g.seqs; i++ {
		cache := (g.seq0 + i) * g.context * kvw
		for h := 0; h < g.hl; h++ {
			kvh := h / group
			for j0 := 0; j0 < g.q; j0 += t.br {
				last := min(j0+t.br, g.q) - 1 // the tile's last real query
				end := n                      // keys the tile reads: [0, end)
				if !g.bidir {
					end = g.past + last + 1
				}
				for j := j0; j <= last; j++ {
					qv := qkv[(i*g.q+j)*row+h*hd:][:hd]
					pos := g.past + j
					m, l := float32(math.Inf(-1)), float32(0)
					clear(o)
					for k0 := 0; k0 < end; k0 += t.bc {
						// Scores of the tile, base 2, masked to −∞.
						mt := m
						for c := range t.bc {
							key := k0 + c
							visible := key < n && (g.bidir || key <= pos)
							if flashBug == "mask" && key == pos+1 && key < n {
								visible = true
							}
							if !visible {
								s[c] = float32(math.Inf(-1))
								continue
							}
							kv := kc[cache+key*kvw+kvh*hd:][:hd]
							var acc float32
							for d := 0; d < hd; d += mmaK {
								acc = mma16(acc, qv[d:d+mmaK], kv[d:d+mmaK])
							}
							s[c] = acc * sl2
							mt = max(mt, s[c])
						}
						// A row whose every key so far is masked keeps m = −∞;
						// subtracting 0 instead keeps p = 0 (not NaN).
						ms := mt
						if math.IsInf(float64(mt), -1) {
							ms = 0
						}
						corr := float32(math.Exp2(float64(m - ms)))
						if flashBug == "rescale" {
							corr = 1
						}
						var ls float32
						for c := range t.bc {
							p[c] = float32(math.Exp2(float64(s[c] - ms)))
							ls += p[c]
							p[c] = round(p[c]) // P enters the PV mma in the storage type
						}
						l = l*corr + ls
						for d := range o {
							o[d] *= corr
						}
						for c0 := 0; c0 < t.bc; c0 += mmaK {
							if k0+c0 >= n {
								break // keys past the cache's end weigh 0 (and may not exist)
							}
							for d := range o {
								acc := float64(o[d])
								for c := c0; c < c0+mmaK && k0+c < n; c++ {
									acc += float64(p[c]) * float64(vc[cache+(k0+c)*kvw+kvh*hd+d])
								}
								o[d] = float32(acc)
							}
						}
						m = mt
					}
					inv := 1 / l
					out := ao[(i*g.q+j)*g.hl*hd+h*hd:][:hd]
					for d := range out {
						out[d] = round(o[d] * inv)
					}
				}
			}
		}
	}
}
