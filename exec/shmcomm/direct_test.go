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
// once, SpinAlways 256 times on every wait, and SpinAdaptive stops
// spinning after missed spins (its average drops below half within 8 of
// them) except one wait in ProbeEvery.
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
	var off, always, adaptive Spin
	off.Configure(SpinOff, 0)
	always.Configure(SpinAlways, time.Millisecond)
	adaptive.Configure(SpinAdaptive, time.Millisecond)
	if n := looks(&off); n != 1 {
		t.Errorf("off: %d looks, want 1", n)
	}
	spun := 0
	for i := 0; i < 40; i++ {
		if n := looks(&always); n != 256 {
			t.Fatalf("always, wait %d: %d looks, want 256", i, n)
		}
		if looks(&adaptive) == 256 {
			spun++
		}
	}
	// adaptive: the first ~6 waits spin (missed share 0 → 1024·(1−(7/8)^k)
	// passes 512 at k = 6), then one in 16 of the remaining 34: 2–3 more
	if spun < 6 || spun > 12 {
		t.Errorf("adaptive: %d of 40 missed waits spun, want 6 to 12", spun)
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
