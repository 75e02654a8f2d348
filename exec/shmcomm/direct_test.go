package shmcomm

import (
	"math"
	mrand "math/rand"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPushOutPollIntoPipelines: a message of 10,001 elements (40,004 B)
// goes through a 4,096 B ring from the sender's elements straight into the
// receiver's, added element by element; the sums are those of adding a
// copied message (dst[i] + x[i] in float32, checked bit for bit). Messages
// on another channel before and after it, and a second message on the same
// channel after it, are delivered whole, in order.
func TestPushOutPollIntoPipelines(t *testing.T) {
	a, b, err := NewLinkPair(MinRingBytes)
	if err != nil {
		t.Fatal(err)
	}
	rng := mrand.New(mrand.NewSource(3))
	vals := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = rng.Float32()*2 - 1
		}
		return v
	}
	src, dst := vals(10_001), vals(10_001)
	want := make([]float32, len(dst))
	for i := range want {
		want[i] = dst[i] + src[i]
	}
	before, after, second := vals(700), vals(3), vals(5)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // sender: another channel, the big one, the same channel again, another
		defer wg.Done()
		var w Waiter
		for _, o := range []*Out{{Ch: 9, Data: before}, {Ch: 4, Data: src}, {Ch: 4, Data: second}, {Ch: 9, Data: after}} {
			for !o.Done() {
				if a.PushOut(o) {
					w.Reset()
					continue
				}
				need := o.Need()
				a.WaitFor(&w, false, need, nil)
			}
		}
	}()
	type msg struct {
		ch uint64
		b  []byte
	}
	var got []msg
	deliver := func(ch uint64, m []byte) { got = append(got, msg{ch, m}) }
	in := In{Ch: 4, Dst: dst, Add: true}
	var w Waiter
	for !in.Landed() {
		if in.Delivered() {
			t.Fatal("the message of the right length was delivered instead of landing")
		}
		if p, err := b.PollInto(1<<30, &in, deliver); err != nil {
			t.Fatal(err)
		} else if p {
			w.Reset()
			continue
		}
		b.WaitFor(&w, true, 0, nil)
	}
	for len(got) < 3 {
		if p, err := b.Poll(1<<30, deliver); err != nil {
			t.Fatal(err)
		} else if !p {
			b.WaitFor(&w, true, 0, nil)
		}
	}
	wg.Wait()
	for i := range want {
		if math.Float32bits(dst[i]) != math.Float32bits(want[i]) {
			t.Fatalf("element %d: %v, want %v", i, dst[i], want[i])
		}
	}
	if len(got) != 3 || got[0].ch != 9 || len(got[0].b) != 4*700 || got[1].ch != 4 || len(got[1].b) != 4*5 || got[2].ch != 9 || len(got[2].b) != 4*3 {
		t.Fatalf("delivered %d messages, want channels 9 (700 elements), 4 (5), 9 (3) in order", len(got))
	}
	for i, v := range second {
		if x := math.Float32frombits(uint32(got[1].b[4*i]) | uint32(got[1].b[4*i+1])<<8 | uint32(got[1].b[4*i+2])<<16 | uint32(got[1].b[4*i+3])<<24); x != v {
			t.Fatalf("second message, element %d: %v, want %v", i, x, v)
		}
	}
}

// TestPollIntoDeliversOtherLengthsAndBegunMessages: the next message on the
// channel goes to deliver, not into Dst, when its length is not Dst's or
// when an earlier Poll had already begun reading it; Dst is left as it was.
func TestPollIntoDeliversOtherLengthsAndBegunMessages(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int  // elements sent
		begun  bool // an earlier Poll reads part of it first
		landed bool
	}{
		{"same length", 8, false, true},
		{"other length", 9, false, false},
		{"begun by Poll", 2000, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, err := NewLinkPair(MinRingBytes)
			if err != nil {
				t.Fatal(err)
			}
			o := &Out{Ch: 4, Data: make([]float32, tc.n)}
			for i := range o.Data {
				o.Data[i] = float32(i + 1)
			}
			var delivered [][]byte
			deliver := func(_ uint64, m []byte) { delivered = append(delivered, m) }
			a.PushOut(o) // 4,096 B: all of 8 or 9 elements, part of 2,000
			if tc.begun {
				if _, err := b.Poll(1<<30, deliver); err != nil {
					t.Fatal(err)
				}
			}
			dst := make([]float32, 8)
			in := In{Ch: 4, Dst: dst}
			for !in.Landed() && len(delivered) == 0 {
				a.PushOut(o)
				if _, err := b.PollInto(1<<30, &in, deliver); err != nil {
					t.Fatal(err)
				}
			}
			if in.Landed() != tc.landed || in.Delivered() == tc.landed {
				t.Fatalf("landed %v, delivered %v; want landed %v", in.Landed(), in.Delivered(), tc.landed)
			}
			if tc.landed {
				if dst[7] != 8 {
					t.Fatalf("dst %v, want 1…8", dst)
				}
			} else if dst[0] != 0 || len(delivered) != 1 || len(delivered[0]) != 4*tc.n {
				t.Fatalf("dst %v, %d delivered; want dst untouched and the message delivered", dst, len(delivered))
			}
		})
	}
}

// TestAbandonDropsTheRest: a message abandoned half-landed is dropped as it
// arrives, and the message after it is received whole.
func TestAbandonDropsTheRest(t *testing.T) {
	a, b, err := NewLinkPair(MinRingBytes)
	if err != nil {
		t.Fatal(err)
	}
	big := &Out{Ch: 4, Data: make([]float32, 3000)} // 12,000 B: three ring-fulls
	next := &Out{Ch: 5, Data: []float32{7, 8}}
	in := In{Ch: 4, Dst: make([]float32, 3000)}
	var delivered [][]byte
	deliver := func(_ uint64, m []byte) { delivered = append(delivered, m) }
	a.PushOut(big)
	if _, err := b.PollInto(1<<30, &in, deliver); err != nil {
		t.Fatal(err)
	}
	if !b.Abandon() {
		t.Fatal("Abandon of a half-landed message reported nothing cut")
	}
	if b.Abandon() {
		t.Fatal("a second Abandon reported a message cut")
	}
	for i := 0; i < 100 && len(delivered) == 0; i++ {
		if !big.Done() {
			a.PushOut(big)
		} else if !next.Done() {
			a.PushOut(next)
		}
		if _, err := b.Poll(1<<30, deliver); err != nil {
			t.Fatal(err)
		}
	}
	if len(delivered) != 1 || len(delivered[0]) != 8 || delivered[0][0] != 0 || delivered[0][2] != 0xe0 {
		t.Fatalf("after the abandoned message, %d delivered (%v), want the 2-element one", len(delivered), delivered)
	}
}

// TestSpinModes: one wait step with nothing ready looks at its condition
// 256 times while it spins and once before it sleeps, so SpinOff looks
// once and SpinAlways 256 times on every wait (the adaptive policy's
// decisions: TestAdaptiveSpinFollowsMissedSpins and TestProbeWindows).
func TestSpinModes(t *testing.T) {
	var seq, waiters uint32
	looks := func(s *Spin) int {
		n := 0
		w := Waiter{Spin: s, Sleep: time.Microsecond}
		w.wait(&seq, &waiters, nil, func() bool { n++; return false })
		for time.Since(w.start) <= w.budget { // let the spin run out, as a missed one does
			time.Sleep(w.budget)
		}
		w.Reset()
		return n
	}
	var off, always Spin
	off.Configure(SpinOff, 0)
	always.Configure(SpinAlways, time.Millisecond)
	for i := 0; i < 10; i++ {
		if n := looks(&off); n != 1 {
			t.Fatalf("off, wait %d: %d looks, want 1", i, n)
		}
		if n := looks(&always); n != 256 {
			t.Fatalf("always, wait %d: %d looks, want 256", i, n)
		}
	}
}

// TestProbeWindows: the probe windows are the first millisecond of every
// 16 ms of Unix time, whatever the process (so two ranks probe together).
func TestProbeWindows(t *testing.T) {
	for _, tc := range []struct {
		sec, nsec int64
		want      bool
	}{
		{0, 0, true},                      // window 0 begins
		{0, 999_999, true},                // its last ns
		{0, 1_000_000, false},             // 1 ms: past it
		{0, 15_999_999, false},            // the ns before window 1
		{0, 16_000_000, true},             // window 1: 16 ms
		{0, 17_000_000, false},            //
		{1, 8_000_000, true},              // 1,008 ms = 63·16 ms
		{1, 0, false},                     // 1,000 ms = 62.5·16 ms
		{1_700_000_000, 500_000, true},    // 1.7e12 ms = 1.0625e11·16 ms
		{1_700_000_000, 1_500_000, false}, // 1.5 ms past it
	} {
		if got := probing(time.Unix(tc.sec, tc.nsec)); got != tc.want {
			t.Errorf("Unix(%d, %d): probing %v, want %v", tc.sec, tc.nsec, got, tc.want)
		}
	}
}

// TestAdaptiveSpinFollowsMissedSpins: the share of missed spins moves an
// eighth of the way to 1024 (missed) or 0 (met) per spin, in integers
// truncated toward zero; the adaptive policy spins while it is below 512,
// and otherwise only in a probe window.
func TestAdaptiveSpinFollowsMissedSpins(t *testing.T) {
	inWindow := time.Unix(0, 500_000)  // probing
	outside := time.Unix(0, 5_000_000) // not
	var s Spin
	s.Configure(SpinAdaptive, 0)
	// missed from 0: +(1024−x)/8 each: 128, 240, 338, 423, 498, 563
	for i, want := range []int64{128, 240, 338, 423, 498, 563} {
		if b := s.budget(outside); b != SpinFor {
			t.Fatalf("before missed spin %d (share %d): spin %v, want %v", i+1, s.missed.Load(), b, SpinFor)
		}
		s.record(false)
		if got := s.missed.Load(); got != want {
			t.Fatalf("after missed spin %d: share %d, want %d", i+1, got, want)
		}
	}
	if b := s.budget(outside); b != 0 {
		t.Errorf("share 563, outside a window: spin %v, want none", b)
	}
	if b := s.budget(inWindow); b != SpinFor {
		t.Errorf("share 563, in a window: spin %v, want %v", b, SpinFor)
	}
	s.record(true) // 563 − 563/8 = 563 − 70 = 493
	if got := s.missed.Load(); got != 493 {
		t.Fatalf("after a met spin: share %d, want 493", got)
	}
	if b := s.budget(outside); b != SpinFor {
		t.Errorf("share 493, outside a window: spin %v, want %v", b, SpinFor)
	}
	// a chosen length is the spin's length in and outside windows
	s.Configure(SpinAdaptive, 50*time.Microsecond)
	if b := s.budget(outside); b != 50*time.Microsecond {
		t.Errorf("adaptive:50us, share 493: spin %v, want 50µs", b)
	}
	// the other modes ignore the share and the windows
	for _, tc := range []struct {
		mode SpinMode
		want time.Duration
	}{{SpinOff, 0}, {SpinAlways, SpinFor}} {
		s.Configure(tc.mode, 0)
		for _, missed := range []int64{0, 1024} {
			s.missed.Store(missed)
			for _, now := range []time.Time{inWindow, outside} {
				if b := s.budget(now); b != tc.want {
					t.Errorf("%v, share %d, %v: spin %v, want %v", tc.mode, missed, now, b, tc.want)
				}
			}
		}
	}
}

// TestProbesLeaveTheSleepingMode plays two ranks of a pair that exchange
// every 10 µs from share 1024 (both asleep): an exchange where both spin is
// met on both sides; where one spins alone, its spin is missed (its peer's
// futex wake-up is longer than the spin, as measured on a quiet 2-vCPU VM).
// Both probe in the window at 0–1 ms, so exchange 0 is met on both sides and
// the shares fall 1024, 896, 784, 686, 601, 526, 461: from exchange 6 on
// they spin outside windows too, and still do at 2 ms. If spins are missed
// even when both spin (a loaded host), the shares stay at 1024 and neither
// spins outside the windows.
func TestProbesLeaveTheSleepingMode(t *testing.T) {
	play := func(bothMet bool) (spinsAt2ms [2]bool, firstFree int) {
		var a, b Spin
		a.missed.Store(1024)
		b.missed.Store(1024)
		firstFree = -1
		for i := 0; i < 200; i++ { // 0 to 1.99 ms
			now := time.Unix(0, int64(i)*10_000)
			sa, sb := a.budget(now) > 0, b.budget(now) > 0
			if sa {
				a.record(sb && bothMet)
			}
			if sb {
				b.record(sa && bothMet)
			}
			if firstFree < 0 && a.missed.Load() < 512 && b.missed.Load() < 512 {
				firstFree = i
			}
		}
		at := time.Unix(0, 2_000_000)
		return [2]bool{a.budget(at) > 0, b.budget(at) > 0}, firstFree
	}
	if spins, free := play(true); spins != [2]bool{true, true} || free != 5 {
		t.Errorf("quiet host: spinning at 2 ms %v, shares below 512 after exchange %d; want both, after exchange 5 (the 6th met spin)", spins, free)
	}
	if spins, free := play(false); spins != [2]bool{false, false} || free != -1 {
		t.Errorf("loaded host: spinning at 2 ms %v, shares below 512 after exchange %d; want neither, never", spins, free)
	}
}

// TestWaitLogKeepsTheFirstWaits: a Spin keeping a log of 2 waits keeps the
// first two of three (each sleeping once: SpinOff, nothing ready), drops
// the third, and WriteLog writes a header and one line per wait.
func TestWaitLogKeepsTheFirstWaits(t *testing.T) {
	var seq, waiters uint32
	var s Spin
	s.Configure(SpinOff, 0)
	s.KeepLog(2)
	for i := 0; i < 3; i++ {
		w := Waiter{Spin: &s, Sleep: time.Microsecond}
		w.wait(&seq, &waiters, nil, func() bool { return false })
		w.Reset()
	}
	recs, dropped := s.Log()
	if len(recs) != 2 || dropped != 1 {
		t.Fatalf("%d records, %d dropped; want 2, 1", len(recs), dropped)
	}
	for i, r := range recs {
		if r.Budget != 0 || r.Sleeps != 1 || r.Met || r.Missed != 0 || r.Wait <= 0 || r.Start.IsZero() {
			t.Errorf("record %d: %+v, want no spin, 1 sleep, not met, share 0, a duration and a start", i, r)
		}
	}
	var b strings.Builder
	if err := WriteLog(&b, recs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || lines[0] != "start_unix_ns\twait_ns\tbudget_ns\tsleeps\tmet\tmissed" || !strings.HasSuffix(lines[1], "\t0\t1\t0\t0") {
		t.Errorf("WriteLog:\n%s", b.String())
	}
}
