package rendezvous

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// deliver files a collective frame that arrived from rank from.
func (s *Session) deliver(seq uint64, from int, f *frame) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slotLocked(seq)
	if _, dup := sl.frames[from]; dup || sl.closed {
		return
	}
	sl.frames[from] = f
	if len(sl.frames) >= sl.need {
		sl.finish(nil)
	}
}

func (s *Session) slotLocked(seq uint64) *slot {
	sl := s.slots[seq]
	if sl == nil {
		need := 1
		if s.rank == 0 {
			need = s.size - 1
		}
		sl = &slot{need: need, frames: map[int]*frame{}, ready: make(chan struct{})}
		s.slots[seq] = sl
		if need == 0 {
			sl.finish(nil)
		}
	}
	return sl
}

// AllGather returns every rank's payload, by rank.
func (s *Session) AllGather(ctx context.Context, payload []byte) ([][]byte, error) {
	res, err := s.collective(ctx, kAllGather, payload)
	if err != nil {
		return nil, err
	}
	return res.Payloads, nil
}

// Broadcast returns rank 0's payload on every rank (the others' payloads
// are ignored).
func (s *Session) Broadcast(ctx context.Context, payload []byte) ([]byte, error) {
	res, err := s.collective(ctx, kBroadcast, payload)
	if err != nil {
		return nil, err
	}
	if res.Payload == nil {
		return []byte{}, nil
	}
	return res.Payload, nil
}

// Barrier returns when every rank has entered it.
func (s *Session) Barrier(ctx context.Context) error {
	_, err := s.collective(ctx, kBarrier, nil)
	return err
}

// Gather returns every rank's payload, by rank, on rank 0, and nil on the
// others (which return as soon as their payload is sent). A payload may be
// up to about 48 MB.
func (s *Session) Gather(ctx context.Context, payload []byte) ([][]byte, error) {
	res, err := s.collective(ctx, kGather, payload)
	if err != nil || res == nil {
		return nil, err
	}
	return res.Payloads, nil
}

// collective runs collective number s.seq+1 of the given kind.
func (s *Session) collective(ctx context.Context, kind string, payload []byte) (*frame, error) {
	s.collMu.Lock()
	defer s.collMu.Unlock()
	select {
	case <-s.done:
		return nil, s.endErr()
	default:
	}
	s.seq++
	seq := s.seq
	if s.rank != 0 {
		b, err := encode(&frame{Type: tColl, Seq: seq, Kind: kind, Payload: payload})
		if err != nil {
			reason := fmt.Sprintf("rank %d cannot send its %s #%d payload: %v", s.rank, kind, seq, err)
			s.fail(reason, -1)
			return nil, &AbortError{Rank: s.rank, Reason: reason}
		}
		if err := s.conns[0].writeRaw(b, s.o.LostAfter); err != nil {
			s.connLost(s.conns[0], err)
			return nil, s.endErr()
		}
		if kind == kGather {
			return nil, nil
		}
	}
	sl, err := s.wait(ctx, seq, kind)
	if err != nil {
		return nil, err
	}
	if s.rank != 0 {
		res := sl.frames[0]
		if kind == kAllGather && len(res.Payloads) != s.size {
			reason := fmt.Sprintf("protocol error: %s #%d from rank 0 has %d payloads, want %d", kind, seq, len(res.Payloads), s.size)
			s.fail(reason, -1)
			return nil, &AbortError{Rank: s.rank, Reason: reason}
		}
		return res, nil
	}
	// rank 0: check the kinds, assemble, answer
	all := make([][]byte, s.size)
	all[0] = payload
	for r := 1; r < s.size; r++ {
		f := sl.frames[r]
		if f.Kind != kind {
			reason := fmt.Sprintf("collective mismatch: rank %d called %s as collective #%d, rank 0 called %s", r, f.Kind, seq, kind)
			s.fail(reason, -1)
			return nil, &AbortError{Rank: 0, Reason: reason}
		}
		all[r] = f.Payload
	}
	var out *frame
	switch kind {
	case kAllGather:
		out = &frame{Type: tResult, Seq: seq, Payloads: all}
	case kBroadcast:
		out = &frame{Type: tResult, Seq: seq, Payload: payload}
	case kBarrier:
		out = &frame{Type: tResult, Seq: seq}
	case kGather:
		return &frame{Payloads: all}, nil
	}
	if err := s.sendAll(out); err != nil {
		return nil, err
	}
	return &frame{Payloads: all, Payload: payload}, nil
}

// wait waits for collective seq's frames and removes its slot.
func (s *Session) wait(ctx context.Context, seq uint64, kind string) (*slot, error) {
	s.mu.Lock()
	sl := s.slotLocked(seq)
	for r := range s.departed {
		if _, ok := sl.frames[r]; !ok {
			sl.finish(s.departedErr(r, seq))
		}
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.slots, seq)
		s.mu.Unlock()
	}()
	select {
	case <-sl.ready:
	case <-s.done:
		select {
		case <-sl.ready:
		default:
			return nil, s.endErr()
		}
	case <-ctx.Done():
		reason := fmt.Sprintf("rank %d abandoned %s #%d: %v", s.rank, kind, seq, ctx.Err())
		s.fail(reason, -1)
		return nil, fmt.Errorf("rendezvous: %s #%d: %w", kind, seq, ctx.Err())
	}
	if sl.err != nil {
		var ae *AbortError
		if errors.As(sl.err, &ae) {
			s.fail(ae.Reason, -1)
		}
		return nil, sl.err
	}
	return sl, nil
}

// sendAll sends f to every rank still in the session (rank 0 only).
func (s *Session) sendAll(f *frame) error {
	b, err := encode(f)
	if err != nil {
		reason := fmt.Sprintf("rank 0 cannot send %s #%d: %v", f.Kind, f.Seq, err)
		s.fail(reason, -1)
		return &AbortError{Rank: 0, Reason: reason}
	}
	var wg sync.WaitGroup
	for _, c := range s.conns {
		if c == nil || c.bye.isSet() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.writeRaw(b, s.o.LostAfter); err != nil {
				s.connLost(c, err)
			}
		}()
	}
	wg.Wait()
	select {
	case <-s.done:
		return s.endErr()
	default:
	}
	return nil
}
