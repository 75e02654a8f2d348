package configs

import (
	"fmt"
	"math"
	"slices"
)

// CoreWaitKind is the op-time kind of the partners' scheduling delay: the
// wait per message step of a collective or a receive when a host runs more
// ranks than it has cores (measured by calibrate at Ranks ranks per host;
// sim charges it, docs/costmodel.md "Shared cores: the partners' scheduling
// delay"). Its shape is CoreWaitShape, its size 1.
const CoreWaitKind = "core_wait"

// RecvWaitKind is the op-time kind of a blocking receive's wait at a
// pipeline hop when a host runs more ranks than it has cores: a message
// passed around all Ranks ranks, each computing a burst before passing it
// on, takes this much longer per hop than the burst and the one-way time
// between two (the send entry). Shape CoreWaitShape, size the burst's wall
// time in ns (1 in profiles of an older partbench: one burst).
const RecvWaitKind = "recv_wait"

// CoreWaitIdleKind is the op-time kind of the partners' scheduling delay
// beside idle ranks: the wait per message step of a pair's all_reduce after
// a compute burst while the host's other Ranks − 2 ranks sleep in a
// receive (a pipeline's other stages waiting), against the pair's
// back-to-back time with every pair at once (the op-time table's entry).
// Where the ranks outnumber the cores the communicator's waits do not spin,
// so each message step wakes a sleeping partner even with cores free. Shape
// CoreWaitShape, size the burst's wall time in ns; sim charges it to a
// collective whose members computed alone (docs/costmodel.md, "Shared
// cores: a collective beside idle ranks").
const CoreWaitIdleKind = "core_wait_idle"

// CoreStretchKind is the op-time kind of the shared-core stretch of a
// short compute burst: a burst that takes Size ns alone (one process, the
// host otherwise idle) took TimeS of wall time on each of Ranks ranks
// computing bursts and exchanging all_reduces on the host's cores (the
// core-wait loop, calib/corewait.go). Shape CoreWaitShape. sim stretches
// a rank's compute by it instead of the fair share b/cores where the
// profile has it (docs/costmodel.md, "Op times at the job's placement").
const CoreStretchKind = "core_stretch"

// CoreExitLagKind is the op-time kind of a pair's all_reduce as the
// partner behind meets it on a host of more ranks than cores: from the
// later of the two partners' arrivals to the later of their exits, both
// stamped on the host's one monotonic clock, per call (the mean over a
// sample's calls, the median over repeats), after each partner computed a
// burst while every other pair of the host's Ranks ranks computed bursts
// and ran all_reduces too (calibrate's core-wait loop). Shape
// CoreWaitShape, size the all_reduce's bytes, context the burst's wall
// time in ns. sim charges a 2-rank all_reduce this time from its last
// arrival in place of its back-to-back time and the core wait
// (docs/costmodel.md, "Shared cores: the partner behind").
const CoreExitLagKind = "core_exit_lag"

// CoreExitLagIdleKind is CoreExitLagKind with the host's other Ranks − 2
// ranks asleep in a receive (a pipeline's other stages waiting) instead of
// computing.
const CoreExitLagIdleKind = "core_exit_lag_idle"

// SendCallKind is the op-time kind of a send's own time: what the sender
// spends inside its Send call for a message of Size bytes between two of
// Ranks ranks on the host (shape "ranks=2", as the send entry), measured
// in the same ping-pong as the send entry's one-way time. sim prices a
// send's slice by it where the profile has it; the message's arrival
// stays at the one-way time.
const SendCallKind = "send_call"

// ReplicaSpreadKind is the op-time kind of the spread of data-parallel
// replicas on a host whose cores their ranks share: a job's TTFT is the
// later of its R replicas' each iteration (the last sequence's first
// token), and independent replicas meet the host's other work apart. Each
// of Ranks ranks computing bursts and exchanging all_reduces in pairs (the
// core-wait loop), the pair {0, 1} timed in consecutive blocks of its cycle
// whose median wall time is Size ns; TimeS is the blocks' 0.5^(1/R)
// quantile over their median — the median of the later of R independent
// blocks, over one's — a ratio ≥ 1, with R the entry's Context. Shape
// CoreWaitShape. sim multiplies a data-parallel plan's TTFT by it at its
// replicas and its TTFT (docs/costmodel.md, "Shared cores: the later of
// the replicas").
const ReplicaSpreadKind = "replica_spread"

// SendCallAsleepKind is SendCallKind to a receiver asleep in its receive:
// the same ping-pong, but the sender computes a burst longer than the
// shared-memory wait's spin before each Send, so the receiver has given up
// spinning and sleeps on its futex when the message comes, and the Send
// call wakes it (a system call; on a VM, waking a halted vCPU) — as a
// pipeline stage's Send does, its receiver having waited the stage's whole
// compute. Shape "ranks=2", size the message's bytes, Ranks the ranks on
// the host, as SendCallKind. sim prices a send by it where its receiver
// has waited in the receive longer than the spin when the message leaves,
// by SendCallKind otherwise (sim.ReceiverSpinS); a profile without it
// prices every send by SendCallKind.
const SendCallAsleepKind = "send_call_asleep"

// SendCallAsleepCrossKind is SendCallAsleepKind between two ranks on
// different CPUs where the host's ranks are bound two to a CPU (Ranks =
// twice its CPUs, `run --bind-to auto`; topology.PairedCPU): the ping-pong
// of ranks 0 and 2, whose receiver's CPU runs nothing else while it sleeps,
// where SendCallAsleepKind's pair 0 and 1 shares one CPU and its Send wakes
// the receiver onto the sender's own CPU. A pipeline's hop between stages
// of two ranks (tp2pp2 on 2 CPUs: 0 → 2, 1 → 3) crosses CPUs; sim prices
// such a send by it where the profile has it, by SendCallAsleepKind
// otherwise. Shape, size and Ranks as SendCallAsleepKind.
const SendCallAsleepCrossKind = "send_call_asleep_cross"

// CoreWaitShape is the shape of a core-wait entry: the host's cores.
func CoreWaitShape(cores int) string { return fmt.Sprintf("cores=%d", cores) }

// keepCoreWait replaces the core-wait and receive-wait entries in times (picked by
// OpTimesFor) with those of all measured at exactly ranks ranks on a host
// of cores cores — ranks being every rank of the config, the ranks the
// shared-core stretch counts on the host's cores (sim/optable_share.go) —
// and says so in a note; measured at another count, the wait is dropped
// with a warning: it depends on how many ranks share the cores.
func keepCoreWait(times, all []OpTime, ranks, cores int) ([]OpTime, []string) {
	out := slices.DeleteFunc(slices.Clone(times), func(t OpTime) bool { return isWaitKind(t.Kind) })
	var measured []int
	kept := false
	for _, t := range all {
		if !isWaitKind(t.Kind) || t.Shape != CoreWaitShape(cores) {
			continue
		}
		if t.Ranks == ranks && ranks >= cores && ranks >= 2 {
			out, kept = append(out, t), true
		} else if !slices.Contains(measured, t.Ranks) {
			measured = append(measured, t.Ranks)
		}
	}
	slices.Sort(measured)
	var notes []string
	switch {
	case kept && ranks == cores:
		notes = append(notes, fmt.Sprintf("the config's %d ranks fill the host's %d cores: collectives are charged the wait for a partner woken after its compute and blocking receives the receive wait, as measured at %d ranks", ranks, cores, ranks))
	case kept:
		notes = append(notes, fmt.Sprintf("the config's %d ranks outnumber the host's %d cores: collectives are charged the partners' scheduling delay and blocking receives the receive wait, as measured at %d ranks", ranks, cores, ranks))
	case ranks > cores && len(measured) > 0:
		notes = append(notes, fmt.Sprintf("warning: the config's %d ranks outnumber the host's %d cores but the profile's core wait was measured at %v ranks, not %d: it is not used, and collectives are priced as if every partner were on a core (calibrate with --op-ranks including %d)", ranks, cores, measured, ranks, ranks))
	case ranks > cores:
		notes = append(notes, fmt.Sprintf("the config's %d ranks outnumber the host's %d cores and the profile has no core wait: collectives are priced as if every partner were on a core", ranks, cores))
	}
	return out, notes
}

// isWaitKind reports whether kind is a shared-core wait, stretch, exit
// lag or spread (core_wait, core_wait_idle, recv_wait, recv_wait_turns,
// turn_off, core_stretch, core_exit_lag, core_exit_lag_idle,
// replica_spread): measured at one rank count, kept only at it.
func isWaitKind(kind string) bool {
	switch kind {
	case CoreWaitKind, CoreWaitIdleKind, RecvWaitKind, RecvWaitTurnsKind, TurnOffKind, CoreStretchKind, CoreExitLagKind, CoreExitLagIdleKind, ReplicaSpreadKind:
		return true
	}
	return false
}

// OpGapKind is the op-time kind of the executor's own time between two ops
// of a pass: what a run spends per op outside the op timers (the loop, the
// per-op timer's clock reads and its bookkeeping), measured by running one
// rank's decode Program through the executor as a run does (shape
// OpGapShape, size 1, ranks 1). sim adds it to every compute op it prices
// from the table; the op check takes it out again, as the runs' op timers
// do not hold it.
const OpGapKind = "op_gap"

// OpGapShape is the shape of the op-gap entry.
const OpGapShape = "host"

// RecvWaitTurnsKind is RecvWaitKind measured between the turns of the op
// table taken in turns (calib/turnhop.go): the hop from a rank's Send
// call's start to the next rank's return from its receive, after a pass
// of real ops of Size ns, less the one-way time of a small message among
// Ranks ranks (shape CoreWaitShape). sim prices a blocked receive from it
// where the receiving rank computed alone and from RecvWaitKind where
// every rank computed (sim.recvWaitS).
const RecvWaitTurnsKind = "recv_wait_turns"

// replicaSpreadNotes says how a config of dp replicas (ranks ranks on a
// host of cores cores) has its TTFT priced: as the later of its replicas,
// from the replica_spread entries kept in times (at exactly ranks ranks),
// or as one replica's where there are none.
func replicaSpreadNotes(times []OpTime, dp, ranks, cores int) []string {
	if dp <= 1 {
		return nil
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, t := range times {
		if t.Kind == ReplicaSpreadKind && t.Context == int64(dp) {
			lo, hi = math.Min(lo, t.TimeS), math.Max(hi, t.TimeS)
		}
	}
	if hi < lo {
		if ranks >= cores && ranks >= 4 {
			return []string{fmt.Sprintf("the profile has no replica spread for %d replicas at %d ranks: TTFT is priced as one replica's, not the later of %d (calibrate with --op-ranks including %d)", dp, ranks, dp, ranks)}
		}
		return nil
	}
	return []string{fmt.Sprintf("TTFT is priced as the later of the config's %d replicas: one replica's times the replica spread measured at %d ranks (×%.3f to ×%.3f over the measured block lengths)", dp, ranks, lo, hi)}
}
