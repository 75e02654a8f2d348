// Package gcpace paces the Go garbage collector of a process whose
// latency is measured — a remote server, the client timing it — so that
// collections come about once per Headroom bytes allocated beyond the
// live heap instead of every time the heap doubles.
//
// A process whose live heap is a few MiB (a server whose model state is
// small, a load generator) collects every few MiB of allocation at the
// default pace (GOGC=100); a gRPC step allocates tens of KiB, so a
// collection lands every few hundred steps, and on a 2-core host the
// steps that meet one make the tail: BenchmarkStatefulStepProcess over
// gRPC measured p99/p50 2.8–6.1 at the default pace and 2.1–2.6 with
// GOGC=400 on both ends (docs/measurements/remote-loopback.md, seventh
// session). A process with a large live heap (weights) keeps the default
// pace: its collections are rare already.
package gcpace

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// Headroom is the allocation between collections that Apply aims for.
const Headroom = 64 << 20

// minHeap is the Go runtime's heap target floor at GOGC=100 (4 MiB,
// scaled by GOGC/100): the percent Apply sets is capped so that this
// floor stays within Headroom.
const minHeap = 4 << 20

// Percent is the GOGC value that gives headroom bytes of allocation
// between collections over a live heap of live bytes: 100·headroom/live,
// at least 100 (the default) and at most 100·headroom/4 MiB (where the
// runtime's own floor, 4 MiB·GOGC/100, would pass headroom).
func Percent(live, headroom int64) int {
	hi := int(headroom * 100 / minHeap)
	if live <= 0 {
		return max(100, hi)
	}
	return max(100, min(hi, int(headroom*100/live)))
}

// Apply sets the collector's pace for a process about to be measured,
// after its set-up (weights allocated): it collects once to read the live
// heap and sets GOGC to Percent(live, headroom) — Headroom, or less where
// the process has a memory budget to keep. A GOGC in the environment is
// left as it is. It returns a note for the process's report.
func Apply(headroom int64) string {
	if v, ok := os.LookupEnv("GOGC"); ok {
		return fmt.Sprintf("Go collector: GOGC=%s from the environment", v)
	}
	runtime.GC()
	live := liveHeap()
	p := Percent(live, headroom)
	debug.SetGCPercent(p)
	return fmt.Sprintf("Go collector: GOGC=%d (a collection per about %d MiB allocated beyond the %.1f MiB live heap; GOGC in the environment overrides)", p, headroom>>20, float64(live)/(1<<20))
}

// liveHeap is the heap the last collection found live (0 where the runtime
// does not say).
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}
