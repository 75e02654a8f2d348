package cuda

import (
	_ "embed" // gemv.cu
	"fmt"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/partbench/partbench/cgo/cuda"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/partition"
)

// gemvSource is the small-M GEMV of decode GEMMs (gemv.cu), compiled in
// the backend's second module.
//
//go:embed gemv.cu
var gemvSource string

// Launch shape and limits of gemv.cu.
const (
	gemvThreads = 256 // GEMV_THREADS
	gemvKLanes  = 32  // GEMV_KL: k-lanes per block
	gemvTileN   = 64  // GEMV_TILE_N: output columns per block
	gemvXS      = 4096
	// gemvMaxM is the most rows of x a GEMV takes (pb_gemv_m8); a GEMM of
	// more rows runs on cuBLAS. At M rows the kernel does M fp32
	// multiply-adds per weight element on the CUDA cores: at M = 16 and an
	// H200's 4.8 TB/s that is 2.4·10¹² elements/s × 16 × 2 = 77 TFLOP/s,
	// beyond its ≈ 67 TFLOP/s of fp32, so the weights could not stream at
	// the HBM rate; cuBLAS's tensor cores take such rows at the same time
	// as one.
	gemvMaxM = 8
	// gemvBlocksPerSM is GEMV_MIN_BLOCKS in 16-bit types (at most 128
	// registers per thread); gemvWaves the waves of blocks the split of K
	// aims at, so that the last wave's tail is a small part of the launch.
	gemvBlocksPerSM = 2
	gemvWaves       = 2
)

// gemvSig is pb_gemv_mMM's parameter list: x, w, ws, out, count, M, K, N, chunk.
const gemvSig = "pppppiiii"

// gemvVariants are the MM of the pb_gemv_mMM entry points.
var gemvVariants = []int{1, 2, 4, 8}

// gemvKernelName is the entry point for up to mm rows.
func gemvKernelName(mm int) string { return fmt.Sprintf("pb_gemv_m%d", mm) }

// gemvGroupFloats is GEMV_GROUP_FLOATS(mm): staged x per group of 8 rows.
func gemvGroupFloats(mm int) int { return 8*mm + 4 }

// gemvPlan is one GEMV launch: the entry point's MM, the grid (tiles of
// gemvTileN columns × splits of K) and the rows per split.
type gemvPlan struct {
	mm, tiles, splits, chunk int
}

// wsBytes is the fp32 partials of a split launch of m rows and n columns
// (0 unsplit).
func (p gemvPlan) wsBytes(m, n int) int64 {
	if p.splits <= 1 {
		return 0
	}
	return int64(p.splits) * int64(m) * int64(n) * 4
}

// gemvPlanFor plans out[m][n] = x[m][k]·w[k][n] on sms SMs, or says why
// the GEMV cannot take it. The K split aims at gemvWaves waves of
// gemvBlocksPerSM blocks per SM over the column tiles, gives every k-lane
// at least one group of 8 rows, and keeps each split's x within the
// block's staging (GEMV_XS floats): splits = ⌈waves·blocks·SMs / tiles⌉,
// at most K/256, at least ⌈K / maxChunk⌉; chunk = ⌈K/splits⌉ rounded up
// to 8, and splits recounted from it (none empty).
func gemvPlanFor(sms, m, k, n int) (gemvPlan, error) {
	if m < 1 || m > gemvMaxM {
		return gemvPlan{}, fmt.Errorf("M %d outside [1, %d]", m, gemvMaxM)
	}
	if k <= 0 || n <= 0 || k%8 != 0 || n%8 != 0 {
		return gemvPlan{}, fmt.Errorf("K %d and N %d must be positive multiples of 8", k, n)
	}
	mm := gemvVariants[len(gemvVariants)-1]
	for _, v := range gemvVariants {
		if v >= m {
			mm = v
			break
		}
	}
	tiles := (n + gemvTileN - 1) / gemvTileN
	maxChunk := gemvXS / gemvGroupFloats(mm) * 8
	want := gemvWaves * gemvBlocksPerSM * max(sms, 1)
	s := (want + tiles - 1) / tiles
	s = min(s, max(1, k/(gemvKLanes*8)))
	s = max(s, (k+maxChunk-1)/maxChunk)
	chunk := ((k+s-1)/s + 7) / 8 * 8
	s = (k + chunk - 1) / chunk
	return gemvPlan{mm: mm, tiles: tiles, splits: s, chunk: chunk}, nil
}

// gemvEnv forces the GEMV on or off for every GEMM it can take ("auto",
// the default: the faster of the GEMV and cuBLAS, timed per shape at
// setup).
const gemvEnv = "PARTBENCH_GEMV"

// gemvModes are $PARTBENCH_GEMV's values; gemvModeKey carries the chosen
// one in the Without set from New to initGemv (parseWithout).
var gemvModes = []string{"auto", "on", "off"}

const gemvModeKey = "gemv="

// gemvModeFromEnv reads $PARTBENCH_GEMV into set, refusing a value it
// does not know.
func gemvModeFromEnv(set map[string]bool) error {
	v := strings.TrimSpace(os.Getenv(gemvEnv))
	if v == "" {
		v = "auto"
	}
	for _, m := range gemvModes {
		if m == v {
			set[gemvModeKey+v] = true
			return nil
		}
	}
	return fmt.Errorf("cuda: %s=%q: not one of %s", gemvEnv, v, strings.Join(gemvModes, ", "))
}

// gemvModeOf is the mode the Without set carries ("auto" when none).
func gemvModeOf(without map[string]bool) string {
	for _, m := range gemvModes {
		if without[gemvModeKey+m] {
			return m
		}
	}
	return "auto"
}

// gemvShape is a GEMM's shape: M rows of x, K, N.
type gemvShape struct{ m, k, n int }

// gemvChoice is what runs a shape, and the setup's timing behind it.
type gemvChoice struct {
	plan gemvPlan
	use  bool
	// gemvS and blasS are the device seconds per call measured at setup
	// (the least of gemvTimingRepeats samples); 0 when not timed.
	gemvS, blasS float64
}

// gemvState is the GEMV's kernels, the choice per shape and the
// workspace of the split launches.
type gemvState struct {
	mode    string
	why     string // why the GEMV runs nowhere ("": it may)
	shapes  map[gemvShape]*gemvChoice
	ws      cuda.DevicePtr
	wsBytes int64
	count   cuda.DevicePtr // int32 per column tile, 0 between launches
	countN  int
}

// Timing at setup: gemvTimingWarmup untimed calls of each, then
// gemvTimingRepeats samples of gemvTimingCalls calls each, alternating.
const (
	gemvTimingWarmup  = 2
	gemvTimingCalls   = 5
	gemvTimingRepeats = 3
)

// initGemv looks up the GEMV kernels and chooses, per distinct GEMM shape
// of the rank's Programs that the GEMV can take, the GEMV or cuBLAS:
// forced by $PARTBENCH_GEMV=on|off, else timed (auto). It runs after the
// weights and buffers exist: the timing runs on the op's own weight and
// buffers. The workspace is allocated for the shapes the GEMV runs only.
func (c *Compute) initGemv() error {
	g := &c.gemv
	g.mode = gemvModeOf(c.without)
	if g.mode == "off" {
		g.why = "off (" + gemvEnv + ")"
		return nil
	}
	for _, mm := range gemvVariants {
		if err := c.extraKernel(gemvKernelName(mm), gemvSig); err != nil {
			g.why = err.Error()
			return nil
		}
	}
	g.shapes = map[gemvShape]*gemvChoice{}
	var ops []*partition.Op // one per shape, in Program order
	for _, phase := range []partition.Phase{partition.Prefill, partition.Decode} {
		prog := c.plan.Program(c.rank.Rank, phase)
		for i := range prog.Ops {
			op := &prog.Ops[i]
			if op.Kind != partition.Gemm {
				continue
			}
			sh := gemvShape{op.Rows, op.K, op.N}
			if _, seen := g.shapes[sh]; seen {
				continue
			}
			p, err := gemvPlanFor(c.info.SMs, sh.m, sh.k, sh.n)
			if err != nil {
				continue
			}
			g.shapes[sh] = &gemvChoice{plan: p, use: g.mode == "on"}
			ops = append(ops, op)
		}
	}
	if len(ops) == 0 {
		return nil
	}
	if g.mode == "auto" {
		if err := c.timeGemvShapes(ops); err != nil {
			return err
		}
	}
	return c.allocGemv()
}

// gemvNeeds is the workspace bytes and counts of the shapes for which
// pick holds.
func (g *gemvState) gemvNeeds(pick func(*gemvChoice) bool) (ws int64, counts int) {
	for sh, ch := range g.shapes {
		if pick(ch) && ch.plan.splits > 1 {
			ws = max(ws, ch.plan.wsBytes(sh.m, sh.n))
			counts = max(counts, ch.plan.tiles)
		}
	}
	return ws, counts
}

// allocGemv allocates the workspace and the zeroed counts of the shapes
// the GEMV runs.
func (c *Compute) allocGemv() error {
	g := &c.gemv
	ws, counts := g.gemvNeeds(func(ch *gemvChoice) bool { return ch.use })
	if ws == 0 {
		return nil
	}
	var err error
	if g.ws, err = c.alloc(pexec.AllocWorkspace, ws); err != nil {
		return err
	}
	if g.count, err = c.alloc(pexec.AllocWorkspace, int64(4*counts)); err != nil {
		return err
	}
	g.wsBytes, g.countN = ws, counts
	return c.stream.MemsetD8Async(g.count, 0, int64(4*counts))
}

// timeGemvShapes times the GEMV and cuBLAS on each op's shape (its weight,
// its input and output buffers; the input zeroed) and keeps the faster,
// cuBLAS on a tie. The workspace for the timing is allocated and freed
// here.
func (c *Compute) timeGemvShapes(ops []*partition.Op) error {
	g := &c.gemv
	ws, counts := g.gemvNeeds(func(*gemvChoice) bool { return true })
	var tmp []cuda.DevicePtr
	defer func() {
		for _, p := range tmp {
			_ = c.drv.MemFree(p)
		}
	}()
	if ws > 0 {
		wp, err := c.drv.MemAlloc(ws)
		if err != nil {
			return err
		}
		tmp = append(tmp, wp)
		cp, err := c.drv.MemAlloc(int64(4 * counts))
		if err != nil {
			return err
		}
		tmp = append(tmp, cp)
		if err := c.stream.MemsetD8Async(cp, 0, int64(4*counts)); err != nil {
			return err
		}
		g.ws, g.wsBytes, g.count, g.countN = wp, ws, cp, counts
		defer func() { g.ws, g.wsBytes, g.count, g.countN = 0, 0, 0, 0 }()
	}
	var ev [2]cuda.Event
	for i := range ev {
		e, err := c.drv.NewEvent(cuda.EventDefault)
		if err != nil {
			return err
		}
		defer e.Destroy()
		ev[i] = e
	}
	for _, op := range ops {
		ch := g.shapes[gemvShape{op.Rows, op.K, op.N}]
		if err := c.timeGemv(op, ch, ev); err != nil {
			return fmt.Errorf("timing the GEMV of %s (M %d K %d N %d): %w", op.Name, op.Rows, op.K, op.N, err)
		}
	}
	return c.stream.Synchronize() // before the workspace is freed
}

// timeGemv fills ch's timings and choice from op's weight and buffers.
func (c *Compute) timeGemv(op *partition.Op, ch *gemvChoice, ev [2]cuda.Event) error {
	w, err := c.frame.Weight(op)
	if err != nil {
		return err
	}
	in, err := c.frame.Buffer(op.In, op.Microbatch, op.Rows*op.K)
	if err != nil {
		return err
	}
	out, err := c.frame.Buffer(op.Out, op.Microbatch, op.Rows*op.N)
	if err != nil {
		return err
	}
	if err := c.stream.MemsetD8Async(in.p, 0, int64(op.Rows*op.K*c.dt.bytes)); err != nil {
		return err
	}
	blas := func() error {
		return c.handle.GemmEx(cuda.RowMajorGemm(op.Rows, op.N, op.K, in.p, w.p, out.p, c.dt.blas))
	}
	gemv := func() error { return c.gemvLaunch(ch.plan, op.Rows, op.K, op.N, in.p, w.p, out.p, false) }
	sample := func(fn func() error) (float64, error) {
		if err := ev[0].Record(c.stream); err != nil {
			return 0, err
		}
		for range gemvTimingCalls {
			if err := fn(); err != nil {
				return 0, err
			}
		}
		if err := ev[1].Record(c.stream); err != nil {
			return 0, err
		}
		if err := ev[1].Synchronize(); err != nil {
			return 0, err
		}
		ms, err := cuda.ElapsedMS(ev[0], ev[1])
		if err != nil {
			return 0, err
		}
		return float64(ms) / 1e3 / gemvTimingCalls, nil
	}
	for range gemvTimingWarmup {
		if err := blas(); err != nil {
			return err
		}
		if err := gemv(); err != nil {
			return err
		}
	}
	ch.blasS, ch.gemvS = math.Inf(1), math.Inf(1)
	for range gemvTimingRepeats {
		b, err := sample(blas)
		if err != nil {
			return err
		}
		v, err := sample(gemv)
		if err != nil {
			return err
		}
		ch.blasS, ch.gemvS = min(ch.blasS, b), min(ch.gemvS, v)
	}
	ch.use = gemvFaster(ch.gemvS, ch.blasS)
	return nil
}

// gemvFaster is the setup's choice: the GEMV only where it was timed
// faster than cuBLAS (a tie keeps cuBLAS).
func gemvFaster(gemvS, blasS float64) bool { return gemvS < blasS }

// gemvLaunch queues pb_gemv_mMM for out[m][n] = x[m][k]·w[k][n] with plan
// p on the stream. counted launches go through launchShared (the op's
// launch, nothing while replaying); the setup's timing launches directly.
func (c *Compute) gemvLaunch(p gemvPlan, m, k, n int, x, w, out cuda.DevicePtr, counted bool) error {
	g := &c.gemv
	if need := p.wsBytes(m, n); need > g.wsBytes || (p.splits > 1 && p.tiles > g.countN) {
		return fmt.Errorf("cuda: GEMV M %d K %d N %d in %d splits needs %d bytes of workspace and %d counts, %d and %d were allocated",
			m, k, n, p.splits, need, p.tiles, g.wsBytes, g.countN)
	}
	name := gemvKernelName(p.mm)
	a := c.newArgs().p(x).p(w).p(g.ws).p(out).p(g.count).i(m).i(k).i(n).i(p.chunk)
	grid := cuda.Dim3{X: uint32(p.tiles), Y: uint32(p.splits), Z: 1}
	if counted {
		return c.launchShared(name, grid, cuda.D1(gemvThreads), 0, a)
	}
	kn, ok := c.k[name]
	if !ok {
		return fmt.Errorf("cuda: kernel %s is not loaded", name)
	}
	if err := kn.check(a); err != nil {
		return err
	}
	return kn.fn.Launch(grid, cuda.D1(gemvThreads), 0, c.stream, a.vals[:a.n]...)
}

// gemvChoiceOf is op's choice where the GEMV runs it, else nil.
func (c *Compute) gemvChoiceOf(op *partition.Op) *gemvChoice {
	if op.Kind != partition.Gemm || c.gemv.shapes == nil {
		return nil
	}
	if ch := c.gemv.shapes[gemvShape{op.Rows, op.K, op.N}]; ch != nil && ch.use {
		return ch
	}
	return nil
}

// gemvGemm runs op's product (without its bias) on the GEMV where the
// setup chose it for op's shape, and reports whether it did.
func (c *Compute) gemvGemm(op *partition.Op, in, out dbuf, w *dtensor) (bool, error) {
	ch := c.gemvChoiceOf(op)
	if ch == nil || w.p%16 != 0 {
		return false, nil
	}
	return true, c.gemvLaunch(ch.plan, op.Rows, op.K, op.N, in.p, w.p, out.p, true)
}

// gemvTag is the timing entry's tag of a GEMM the GEMV runs: " [gemv S=4]"
// ("" where cuBLAS runs it).
func (c *Compute) gemvTag(op *partition.Op) string {
	if ch := c.gemvChoiceOf(op); ch != nil {
		return fmt.Sprintf(" [gemv S=%d]", ch.plan.splits)
	}
	return ""
}

// describeGemv is Describe's account of the GEMV: the mode and, per shape
// it could take, what runs it and the setup's times.
func (c *Compute) describeGemv() string {
	g := &c.gemv
	if g.why != "" {
		return "gemv " + g.why
	}
	if len(g.shapes) == 0 {
		return "gemv " + g.mode + " (no GEMM of M ≤ 8)"
	}
	shapes := make([]gemvShape, 0, len(g.shapes))
	for sh := range g.shapes {
		shapes = append(shapes, sh)
	}
	sort.Slice(shapes, func(i, j int) bool {
		a, b := shapes[i], shapes[j]
		if a.m != b.m {
			return a.m < b.m
		}
		if a.k != b.k {
			return a.k < b.k
		}
		return a.n < b.n
	})
	var parts []string
	for _, sh := range shapes {
		ch := g.shapes[sh]
		who := "cublas"
		if ch.use {
			who = fmt.Sprintf("gemv S=%d", ch.plan.splits)
		}
		s := fmt.Sprintf("M%d K%d N%d %s", sh.m, sh.k, sh.n, who)
		if ch.blasS > 0 || ch.gemvS > 0 {
			s += fmt.Sprintf(" (gemv %.1f µs, cublas %.1f µs)", ch.gemvS*1e6, ch.blasS*1e6)
		}
		parts = append(parts, s)
	}
	return "gemv " + g.mode + ": " + strings.Join(parts, "; ")
}
