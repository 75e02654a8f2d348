package calib

import (
	"context"
	"errors"
	"fmt"
	"gonum.org/v1/gonum/optimize"
	"gonum.org/v1/gonum/stat"
	"math"
	"net"
	"sync"
	"time"

	"github.com/partbench/partbench/commcount"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/rendezvous"
	"github.com/partbench/partbench/exec/tcpcomm"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// Communication sample kinds.
const (
	opAllReduce = "all_reduce"
	opSendRecv  = "sendrecv"
	// opAllReducePairs is an all_reduce within pairs {0, 1}, {2, 3}, … of
	// every rank at once — the TP pairs of a 4-rank tiny config
	// (tp2pp2, tp2-dp2) on one host, whose all-reduces overlap — timed on
	// the pair {0, 1}.
	opAllReducePairs = "all_reduce_pairs"
	// opAllReduceBurst is opAllReducePairs with a compute burst before
	// each call on every rank (burst, corewait.go), timing the calls alone:
	// what a pair's all-reduce costs when its partner must first be
	// scheduled (the core-wait loops, measureCoreWaitTimes).
	opAllReduceBurst = "all_reduce_pairs_burst"
	// opAllReduceBurstIdle is opAllReduceBurst on the pair {0, 1} alone
	// while every other rank of the group sleeps in a receive from rank 0
	// (a pipeline's other stages waiting for their micro-batch), which
	// rank 0 sends once the pair is done: what a pair's all-reduce after
	// compute costs with the cores free but the communicator's waits
	// sleeping, as they do where the ranks outnumber the cores
	// (the core wait beside idle ranks, measureCoreWaitTimes).
	opAllReduceBurstIdle = "all_reduce_pair_burst_idle"
	// opAllReduceBlocks is opAllReduceBurst timed per sample as a whole:
	// rank 0 reports each repeat's wall time, bursts and calls together (a
	// block of its pair's cycle), not a time per call (replicaspread.go).
	opAllReduceBlocks = "all_reduce_pairs_blocks"
	// opRing passes one message around every rank of the group, each
	// receiving from the one before it and sending to the one after (a
	// pipeline's hops, one rank runnable at a time), timed per hop
	// (the receive wait, measureCoreWaitTimes).
	opRing = "ring"
	// opSendCall is opSendRecv with rank 0's Send calls timed apart: what
	// a sender spends in its call (the copy into the channel, waking the
	// receiver, and any time off its core that costs it) — sim's send
	// slice (SendCallKind) — beside the one-way time.
	opSendCall = "sendcall"
	// opSendCallAsleep is opSendCall with rank 0 computing a burst
	// (corewait.go) longer than the shared-memory wait's spin before each
	// Send, so rank 1 sleeps in its receive when the message comes: the
	// Send call to a sleeping receiver (SendCallAsleepKind), timed apart
	// from the burst.
	opSendCallAsleep = "sendcall_asleep"
)

// isAllReduce reports whether op runs all_reduce calls (on a group).
func isAllReduce(op string) bool {
	return op == opAllReduce || op == opAllReducePairs || op == opAllReduceBurst || op == opAllReduceBurstIdle || op == opAllReduceBlocks
}

// everyRank is ranks 0 … n−1: the group of a measurement among all n.
func everyRank(n int) []int {
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	return all
}

// pairOf is rank r's pair {2⌊r/2⌋, 2⌊r/2⌋+1}.
func pairOf(r int) []int { return []int{r &^ 1, r | 1} }

// inPairs reports whether op runs within pairs {0, 1}, {2, 3}, … (pairOf).
func inPairs(op string) bool {
	return op == opAllReducePairs || op == opAllReduceBurst || op == opAllReduceBurstIdle || op == opAllReduceBlocks || op == opAllGatherPairs
}

// pingPong reports whether op is a ping-pong between the group's first two
// ranks.
func pingPong(op string) bool {
	return op == opSendRecv || op == opSendCall || op == opSendCallAsleep
}

// sampleRanks is the group size a sample of op over ranks is priced at.
func sampleRanks(op string, ranks []int) int {
	if pingPong(op) || inPairs(op) {
		return 2
	}
	return len(ranks)
}

// DefaultCommSizes are the payloads timed: 4 B to 4 MiB in steps of 4×,
// which covers the tiny configs' messages (hundreds of bytes) and reaches
// sizes where bandwidth dominates.
var DefaultCommSizes = []int64{4, 16, 64, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20}

// QuickCommSizes are the sizes of --quick.
var QuickCommSizes = []int64{16, 256, 4 << 10, 64 << 10, 1 << 20}

// world is n ranks in this process, connected as the CPU backend's ranks
// are: a rendezvous session each over loopback, then a tcpcomm.Comm each.
type world struct {
	sessions []*rendezvous.Session
	comms    []*tcpcomm.Comm
}

func newWorld(ctx context.Context, n int) (*world, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("communication: listen on loopback: %w", err)
	}
	w := &world{sessions: make([]*rendezvous.Session, n), comms: make([]*tcpcomm.Comm, n)}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := rendezvous.Options{Addr: ln.Addr().String(), Rank: r, Size: n, JoinTimeout: 10 * time.Second}
			if r == 0 {
				o.Listener = ln
			}
			if w.sessions[r], errs[r] = rendezvous.Join(ctx, o); errs[r] != nil {
				return
			}
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			w.comms[r], errs[r] = tcpcomm.New(cctx, w.sessions[r], r, n, "127.0.0.1")
		}()
	}
	wg.Wait()
	if n == 1 {
		ln.Close()
	}
	if err := errors.Join(errs...); err != nil {
		w.close()
		return nil, fmt.Errorf("communication: connect %d local ranks: %w", n, err)
	}
	return w, nil
}

func (w *world) close() {
	var wg sync.WaitGroup
	for r := range w.comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if w.comms[r] != nil {
				w.comms[r].Close()
			}
			if w.sessions[r] != nil {
				w.sessions[r].Close()
			}
		}()
	}
	wg.Wait()
}

// stepTimeout bounds one timed sample, so a lost message fails the
// calibration instead of hanging it.
const stepTimeout = time.Minute

// each runs f on the given ranks concurrently and returns their errors
// joined. The first error cancels the others' ctx, so no rank waits forever
// for a peer that gave up.
func (w *world) each(ctx context.Context, ranks []int, f func(ctx context.Context, r int, c *tcpcomm.Comm) error) error {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	errs := make([]error, len(ranks))
	var wg sync.WaitGroup
	for i, r := range ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx, r, w.comms[r]); err != nil {
				errs[i] = fmt.Errorf("rank %d: %w", r, err)
				cancel()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// commBench times one op over one group of ranks (ascending; sendrecv uses
// the first two).
type commBench struct {
	op     string
	ranks  []int
	groups map[int]pexec.Group // all_reduce: each member's group
	// burst is opAllReduceBurst's compute burst (iterations); burstS the
	// wall time the first member's last rankRun spent in its bursts.
	burst  int
	burstS float64
	// lagS is the sum of the pair {0, 1}'s exit lags over the first
	// member's last rankRun of a burst op (exitlag.go); of
	// opSendCallAsleep, the sum of its bursts' wall time (rank 1's waits
	// in its receive), burstS the sum of its Send calls' time.
	lagS float64
}

func (w *world) bench(ctx context.Context, op string, ranks []int) (*commBench, error) {
	b := &commBench{op: op, ranks: ranks, groups: map[int]pexec.Group{}}
	if !usesGroup(op) {
		return b, nil
	}
	var mu sync.Mutex
	err := w.each(ctx, ranks, func(ctx context.Context, r int, c *tcpcomm.Comm) error {
		g, err := c.NewGroup(ctx, b.groupOf(r))
		mu.Lock()
		b.groups[r] = g
		mu.Unlock()
		return err
	})
	return b, err
}

// run makes iters calls of bytes and returns rank 0's (the first member's)
// time per call: after a barrier of the members, back-to-back all_reduce
// calls; or iters ping-pongs between the first two members, half a round
// trip each (one-way time of one message).
func (b *commBench) run(ctx context.Context, w *world, bytes int64, iters int) (float64, error) {
	var elapsed float64
	err := w.each(ctx, b.members(), func(ctx context.Context, r int, c *tcpcomm.Comm) error {
		e, err := b.rankRun(ctx, r, c, b.groups[r], bytes, iters)
		if r == b.ranks[0] {
			elapsed = e
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	return b.perCall(elapsed, iters), nil
}

// groupOf is the all_reduce (or all_gather) group of member r.
func (b *commBench) groupOf(r int) []int {
	if inPairs(b.op) {
		return pairOf(r)
	}
	return b.ranks
}

// members are the ranks taking part: the group, or sendrecv's first two.
func (b *commBench) members() []int {
	if pingPong(b.op) {
		return b.ranks[:2]
	}
	return b.ranks
}

// perCall is the time of one call from rank 0's elapsed time over iters
// (sendrecv: half a round trip).
func (b *commBench) perCall(elapsed float64, iters int) float64 {
	per := elapsed / float64(iters)
	switch {
	case pingPong(b.op):
		per /= 2
	case b.op == opRing:
		per /= float64(len(b.ranks))
	}
	return per
}

// rankRun is member r's part of run, on its own Comm c (and, for
// all_reduce, its group g): the members' barrier, then iters calls. It
// returns the elapsed time of the calls (meaningful on the first member).
func (b *commBench) rankRun(ctx context.Context, r int, c *tcpcomm.Comm, g pexec.Group, bytes int64, iters int) (float64, error) {
	members := b.members()
	buf := pexec.F32(make([]float32, int(max(1, bytes/4))))
	// A barrier over the members, built from point-to-point messages
	// (the Comm's Barrier spans the whole world).
	first := members[0]
	token := pexec.F32(make([]float32, 1))
	if r == first {
		for _, p := range members[1:] {
			if err := c.Recv(ctx, token, p); err != nil {
				return 0, err
			}
		}
		for _, p := range members[1:] {
			if err := c.Send(ctx, token, p); err != nil {
				return 0, err
			}
		}
	} else {
		if err := c.Send(ctx, token, first); err != nil {
			return 0, err
		}
		if err := c.Recv(ctx, token, first); err != nil {
			return 0, err
		}
	}
	// Only the first member records its bursts' time and the pair's exit
	// lags (b is every member's when the ranks are goroutines of one
	// process).
	keepLag := func(bs, lag float64) {
		if r == first {
			b.burstS, b.lagS = bs, lag
		}
	}
	if b.op == opAllReduceBurst {
		// The pair {first, first+1} stamps its calls (exitlag.go); the
		// other pairs burst and exchange alike, unstamped.
		var stamps *pairStamps
		pair := [2]int{first, members[1]}
		if r == pair[0] || r == pair[1] {
			stamps = newPairStamps(iters)
		}
		elapsed, bs, err := burstAllReduce(ctx, g, buf, iters, b.burst, stamps)
		if err != nil {
			return 0, err
		}
		lag, err := gatherExitLag(ctx, c, pair, r, stamps)
		keepLag(bs, lag)
		if err != nil {
			return 0, err
		}
		return elapsed, c.Flush(ctx)
	}
	if b.op == opAllReduceBurstIdle {
		return burstAllReduceBesideIdle(ctx, c, g, buf, members, r, iters, b.burst, keepLag)
	}
	if b.op == opAllReduceBlocks {
		// The block's wall time, bursts and calls: what a sample holds
		// and what the pilot sizes the block from.
		elapsed, bs, err := burstAllReduce(ctx, g, buf, iters, b.burst, nil)
		if err != nil {
			return 0, err
		}
		return elapsed + bs, c.Flush(ctx)
	}
	var burstTotal, waited float64
	defer func() { keepLag(burstTotal, waited) }()
	var send pexec.F32 // an all_gather's own block: buf (the gathered bytes) over the group
	if isAllGather(b.op) {
		send = pexec.F32(make([]float32, max(1, len(buf)/len(b.groupOf(r)))))
	}
	start := time.Now()
	for i := 0; i < iters; i++ {
		switch {
		case isAllReduce(b.op):
			if err := g.AllReduce(ctx, buf); err != nil {
				return 0, err
			}
		case isAllGather(b.op):
			if err := g.AllGather(ctx, send, buf); err != nil {
				return 0, err
			}
		case b.op == opRing:
			bs, err := ringHop(ctx, c, buf, members, r, b.burst)
			if err != nil {
				return 0, err
			}
			burstTotal += bs
		case b.op == opSendCall && r == first:
			t := time.Now()
			if err := c.Send(ctx, buf, members[1]); err != nil {
				return 0, err
			}
			burstTotal += time.Since(t).Seconds()
			if err := c.Recv(ctx, buf, members[1]); err != nil {
				return 0, err
			}
		case b.op == opSendCallAsleep && r == first:
			// The burst, then the Send timed alone: the call's time
			// sums into burstTotal, the bursts' wall time (how long
			// rank 1 waited in its receive) into waited.
			t0 := time.Now()
			burst(b.burst)
			t := time.Now()
			if err := c.Send(ctx, buf, members[1]); err != nil {
				return 0, err
			}
			burstTotal += time.Since(t).Seconds()
			waited += t.Sub(t0).Seconds()
			if err := c.Recv(ctx, buf, members[1]); err != nil {
				return 0, err
			}
		case r == first:
			if err := c.Send(ctx, buf, members[1]); err != nil {
				return 0, err
			}
			if err := c.Recv(ctx, buf, members[1]); err != nil {
				return 0, err
			}
		default:
			if err := c.Recv(ctx, buf, first); err != nil {
				return 0, err
			}
			if err := c.Send(ctx, buf, first); err != nil {
				return 0, err
			}
		}
	}
	elapsed := time.Since(start).Seconds()
	return elapsed, c.Flush(ctx)
}

// itersFor is the number of calls per sample: enough for minDur after a
// pilot call of pilot seconds (2 to 100 000).
func itersFor(pilot float64, minDur time.Duration) int {
	if pilot <= 0 {
		return 2
	}
	return int(math.Min(1e5, math.Max(2, math.Ceil(minDur.Seconds()/pilot))))
}

// timeComm times bytes once per repeat; the number of calls per repeat comes
// from one pilot call, enough to last minDur (2 to 100 000).
func (b *commBench) time(ctx context.Context, w *world, bytes int64, repeats int, minDur time.Duration) ([]float64, error) {
	pilot, err := b.run(ctx, w, bytes, 2)
	if err != nil {
		return nil, err
	}
	iters := itersFor(pilot, minDur)
	ts := make([]float64, repeats)
	for r := range ts {
		if ts[r], err = b.run(ctx, w, bytes, iters); err != nil {
			return nil, err
		}
	}
	return ts, nil
}

// commPoint is one measured time of one op, size and group.
type commPoint struct {
	op    string
	ranks int
	bytes int64
	timeS float64
}

// linkOf is the calibrated link with latency alpha and bandwidth beta.
func linkOf(name string, alpha, beta float64) topology.Link {
	return topology.Link{Class: topology.Network, Name: name, BytesPerS: beta, LatencyS: alpha}
}

// systemOf is n ranks on one node joined by link.
func systemOf(n int, link topology.Link) topology.System {
	return topology.System{Topology: topology.Topology{Name: "calibration", Nodes: 1, GPUsPerNode: n, Intra: link}}
}

// modelComm is what sim's collective model says for a sample, with the
// tuner's free choice of algorithm and protocol (the estimate's default):
// a sendrecv's one-way time, an all_gather's (bytes: the gathered output),
// or an all_reduce's.
func modelComm(p commPoint, link topology.Link) (sim.CollectiveEstimate, error) {
	sys := systemOf(max(p.ranks, 2), link)
	if p.op == opSendRecv {
		return sim.P2P(sys, 0, 1, p.bytes), nil
	}
	op := commcount.AllReduce
	if isAllGather(p.op) {
		op = commcount.AllGather
	}
	return sim.Collective(sys, op, sim.GroupRanks(op, p.ranks), p.bytes, sim.CollectiveOptions{})
}

// fitLink finds the link latency α and bandwidth β for which sim's model of
// every sample (ring/tree all_reduce, p2p sendrecv, with NCCL's protocol
// constants for a network link; the caller leaves out the samples fitsLink
// refuses) best reproduces the measured times: least
// squares of log time, over a 25 × 25 grid of α in 10^-8…10^-2 s and β in
// 10^6…10^12 B/s, refined from the best grid point by gonum's Nelder–Mead
// (optimize.Minimize) inside those bounds.
func fitLink(points []commPoint) (alpha, beta float64, err error) {
	aLo, aHi := math.Log(1e-8), math.Log(1e-2)
	bLo, bHi := math.Log(1e6), math.Log(1e12)
	loss := func(x []float64) float64 {
		if x[0] < aLo || x[0] > aHi || x[1] < bLo || x[1] > bHi {
			return math.Inf(1)
		}
		link := linkOf("fit", math.Exp(x[0]), math.Exp(x[1]))
		var l float64
		for _, p := range points {
			e, err := modelComm(p, link)
			if err != nil || e.TimeS <= 0 {
				return math.Inf(1)
			}
			d := math.Log(e.TimeS) - math.Log(p.timeS)
			l += d * d
		}
		return l
	}
	const n = 25
	best, start := math.Inf(1), []float64{0, 0}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			x := []float64{aLo + (aHi-aLo)*float64(i)/(n-1), bLo + (bHi-bLo)*float64(j)/(n-1)}
			if l := loss(x); l < best {
				best, start = l, x
			}
		}
	}
	if math.IsInf(best, 1) {
		return 0, 0, fmt.Errorf("link fit: the collective model failed on every candidate")
	}
	x := minimize(loss, start, (aHi-aLo)/(n-1))
	return math.Exp(x[0]), math.Exp(x[1]), nil
}

// minimize refines start with gonum's Nelder–Mead simplex (initial size
// step), and returns start itself when the search finds nothing better.
func minimize(f func([]float64) float64, start []float64, step float64) []float64 {
	res, err := optimize.Minimize(optimize.Problem{Func: f}, start,
		&optimize.Settings{FuncEvaluations: 2000, Converger: &optimize.FunctionConverge{Absolute: 1e-14, Iterations: 40}},
		&optimize.NelderMead{SimplexSize: step})
	if res == nil || (err != nil && res.F >= f(start)) || res.F > f(start) {
		return start
	}
	return res.X
}

// lineFit is the line t = a + b·s through (s, t) that minimizes the sum of
// squared relative errors ((a + b·s − t)/t)², so that small sizes count as
// much as large ones: weighted least squares with weights 1/t²
// (gonum's stat.LinearRegression).
func lineFit(s, t []float64) (a, b float64) {
	w := make([]float64, len(t))
	for i := range t {
		w[i] = 1 / (t[i] * t[i])
	}
	return stat.LinearRegression(s, t, w, false)
}
