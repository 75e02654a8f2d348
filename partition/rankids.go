package partition

import (
	"sync"
	"sync/atomic"
)

// rankNumbers holds 0, 1, 2, … up to the highest rank a plan has asked
// for. A list, once published, is never written again: a longer one
// replaces it (under mu), so readers load it without a lock, and slices of
// an older list stay valid.
var rankNumbers struct {
	mu   sync.Mutex
	list atomic.Pointer[[]int]
}

// rankIDs is the rank numbers 0 … n−1, ids[i] = i, a prefix of a list
// shared by every caller: read it, never write it. RankAt's TP groups are
// slices of it, so describing a rank allocates nothing.
func rankIDs(n int) []int {
	if l := rankNumbers.list.Load(); l != nil && n <= len(*l) {
		return (*l)[:n:n]
	}
	rankNumbers.mu.Lock()
	defer rankNumbers.mu.Unlock()
	var old []int
	if l := rankNumbers.list.Load(); l != nil {
		old = *l
	}
	if n <= len(old) {
		return old[:n:n]
	}
	// At least twice the old length: O(log n) lists for a plan of n ranks.
	l := make([]int, max(n, 2*len(old), 1024))
	for i := range l {
		l[i] = i
	}
	rankNumbers.list.Store(&l)
	return l[:n:n]
}
