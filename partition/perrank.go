package partition

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"
)

// PerRank is one count per rank of a plan, held by runs of consecutive
// ranks with the same count: a stage's ranks make the same calls and
// messages (Plan.CommOf), so 100,000 ranks in 1,000 stages are 1,000 runs
// or fewer. Its JSON is every rank's count in rank order, a []int64's
// (null for the zero PerRank, where a []int64 would be nil).
type PerRank struct {
	runs []rankRun // ascending, covering ranks 0 … n−1, neighbours' counts differ
	n    int
	made bool // false: the zero PerRank, JSON null
}

// rankRun is ranks first … first+n−1, each with count v.
type rankRun struct {
	first, n int
	v        int64
}

// PerRankOf is the counts v (v[r] is rank r's), nil for nil.
func PerRankOf(v []int64) PerRank {
	if v == nil {
		return PerRank{}
	}
	var b perRankBuilder
	for r, x := range v {
		b.add(r, 1, x)
	}
	return b.done(len(v))
}

// perRankBuilder gathers runs in any order (done sorts and joins them).
type perRankBuilder struct{ runs []rankRun }

func (b *perRankBuilder) add(first, n int, v int64) {
	if n > 0 {
		b.runs = append(b.runs, rankRun{first, n, v})
	}
}

// done is the counts of ranks 0 … n−1: the runs added (disjoint), 0 where
// none was.
func (b *perRankBuilder) done(n int) PerRank {
	sort.Slice(b.runs, func(i, j int) bool { return b.runs[i].first < b.runs[j].first })
	out := PerRank{n: n, made: true}
	next := 0
	put := func(r rankRun) {
		if k := len(out.runs); k > 0 && out.runs[k-1].v == r.v {
			out.runs[k-1].n += r.n
			return
		}
		out.runs = append(out.runs, r)
	}
	for _, r := range b.runs {
		if r.first > next {
			put(rankRun{next, r.first - next, 0})
		}
		put(r)
		next = r.first + r.n
	}
	if next < n {
		put(rankRun{next, n - next, 0})
	}
	return out
}

// Len is the number of ranks.
func (c PerRank) Len() int { return c.n }

// At is rank r's count (0 ≤ r < Len()).
func (c PerRank) At(r int) int64 {
	i := sort.Search(len(c.runs), func(i int) bool { return c.runs[i].first+c.runs[i].n > r })
	if r < 0 || i == len(c.runs) {
		panic("partition: rank " + strconv.Itoa(r) + " out of range [0, " + strconv.Itoa(c.n) + ")")
	}
	return c.runs[i].v
}

// Max is the largest count, at least 0.
func (c PerRank) Max() int64 {
	var m int64
	for _, r := range c.runs {
		m = max(m, r.v)
	}
	return m
}

// Values is every rank's count in rank order (nil for the zero PerRank).
func (c PerRank) Values() []int64 {
	if !c.made {
		return nil
	}
	out := make([]int64, 0, c.n)
	for _, r := range c.runs {
		for range r.n {
			out = append(out, r.v)
		}
	}
	return out
}

// Repeat is the counts repeated d times one after the other: d replicas'
// ranks, each replica's as this one's.
func (c PerRank) Repeat(d int) PerRank {
	if !c.made {
		return PerRank{}
	}
	var b perRankBuilder
	for k := range d {
		for _, r := range c.runs {
			b.add(k*c.n+r.first, r.n, r.v)
		}
	}
	return b.done(d * c.n)
}

// MarshalJSON writes every rank's count, as json.Marshal writes a []int64.
func (c PerRank) MarshalJSON() ([]byte, error) {
	if !c.made {
		return []byte("null"), nil
	}
	b := make([]byte, 0, 2+3*c.n)
	b = append(b, '[')
	first := true
	for _, r := range c.runs {
		var one []byte
		one = strconv.AppendInt(one, r.v, 10)
		for range r.n {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, one...)
		}
	}
	return append(b, ']'), nil
}

// UnmarshalJSON reads a list of counts (MarshalJSON's).
func (c *PerRank) UnmarshalJSON(b []byte) error {
	var v []int64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = PerRankOf(v)
	return nil
}

// Equal says whether c and o hold the same counts.
func (c PerRank) Equal(o PerRank) bool {
	return c.n == o.n && c.made == o.made && slices.Equal(c.runs, o.runs)
}
