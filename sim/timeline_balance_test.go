package sim

import (
	"testing"

	"github.com/partbench/partbench/partition"
)

// balancedByMap is channelsBalanced as it was first written, one map entry
// per channel (src, dst): the independent reference the slice-kept flows
// are held to.
func balancedByMap(s *simulator) bool {
	type flow struct{ sends, bal, carry int }
	chans := map[chanKey]*flow{}
	at := func(k chanKey) *flow {
		if chans[k] == nil {
			chans[k] = &flow{}
		}
		return chans[k]
	}
	for ri, r := range s.ranks {
		rank := s.ids[ri]
		for _, op := range r.dec {
			switch op.Kind {
			case partition.Send:
				at(chanKey{rank, op.Peer}).sends++
				at(chanKey{rank, op.Peer}).bal++
			case partition.Recv:
				at(chanKey{op.Peer, rank}).bal--
			}
		}
		for _, op := range r.pre {
			switch op.Kind {
			case partition.Send:
				at(chanKey{rank, op.Peer}).carry++
			case partition.Recv:
				at(chanKey{op.Peer, rank}).carry--
			}
		}
	}
	for _, f := range chans {
		if f.bal != 0 || f.carry < 0 || f.sends > 0 && f.carry > f.sends {
			return false
		}
	}
	return true
}

// channelsBalanced against the map-keyed reference on small pipelines of
// plan ranks 10, 20, 30 (simulator indices 0, 1, 2; plan ranks 5 and 40
// not simulated), each case's answer also derived by hand:
//   - a pipeline 10→20→30 whose last stage sends the token back to 10 each
//     step, its prefill leaving one message on 30→10: balanced;
//   - the same, prefill leaving two messages on 30→10 (carry 2 > 1 send a
//     step): not;
//   - rank 20 receiving once more a step than 10 sends (bal −1): not;
//   - rank 10 receiving from plan rank 5, which no simulated rank is
//     (bal −1 on 5→10): not;
//   - rank 30 sending in the prefill alone to plan rank 40, not simulated
//     (carry 1, no sends a step, balance 0): balanced;
//   - the same in decode (bal +1 on 30→40): not;
//   - a prefill recv on 10→20 before any send on it (carry −1): not.
func TestChannelsBalancedMatchesMap(t *testing.T) {
	send := func(p int) partition.Op { return partition.Op{Kind: partition.Send, Peer: p} }
	recv := func(p int) partition.Op { return partition.Op{Kind: partition.Recv, Peer: p} }
	gemm := partition.Op{Kind: partition.Gemm}
	type ranks [3]struct{ pre, dec []partition.Op }
	pipe := func() ranks {
		return ranks{
			{pre: []partition.Op{gemm, send(20)}, dec: []partition.Op{recv(30), gemm, send(20)}},
			{pre: []partition.Op{recv(10), gemm, send(30)}, dec: []partition.Op{recv(10), gemm, send(30)}},
			{pre: []partition.Op{recv(20), gemm, send(10)}, dec: []partition.Op{recv(20), gemm, send(10)}},
		}
	}
	for _, c := range []struct {
		name string
		edit func(*ranks)
		want bool
	}{
		{"pipeline", func(*ranks) {}, true},
		{"prefill carries two", func(r *ranks) { r[2].pre = append(r[2].pre, send(10)) }, false},
		{"extra recv", func(r *ranks) { r[1].dec = append(r[1].dec, recv(10)) }, false},
		{"recv from unsimulated", func(r *ranks) { r[0].dec = append(r[0].dec, recv(5)) }, false},
		{"prefill send to unsimulated", func(r *ranks) { r[2].pre = append(r[2].pre, send(40)) }, true},
		{"decode send to unsimulated", func(r *ranks) { r[2].dec = append(r[2].dec, send(40)) }, false},
		{"recv before send", func(r *ranks) { r[1].pre = append([]partition.Op{recv(10)}, r[1].pre...) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := pipe()
			c.edit(&rs)
			s := &simulator{ids: []int{10, 20, 30}, index: make([]int, 41)}
			for i := range s.index {
				s.index[i] = -1
			}
			for ri, r := range rs {
				s.index[s.ids[ri]] = ri
				s.ranks = append(s.ranks, &rankState{pre: r.pre, dec: r.dec})
			}
			got, ref := channelsBalanced(s), balancedByMap(s)
			if got != c.want || ref != c.want {
				t.Fatalf("channelsBalanced %v, map-keyed reference %v, want %v", got, ref, c.want)
			}
		})
	}
}
