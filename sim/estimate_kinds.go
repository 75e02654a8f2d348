package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"reflect"
	"sort"
	"strconv"
)

// RankKind is a run of Count consecutive ranks of one stage that an
// estimate describes alike: rank Rank+i (i < Count) sits at TP index
// TPIndex+i and has every other field of the embedded row (its stage,
// layers, memory, L2 residency, busy and idle times, fixed costs, pricing
// counts). A stage whose TP ranks are simulated by one stand-in is one kind
// of TP ranks; where every rank is simulated, each rank is a kind of one.
type RankKind struct {
	RankEstimate
	Count int `json:"count"`
}

// RankRows are an estimate's per-rank rows (replica 0's ranks, in rank
// order), held as rank kinds so that an estimate's work and memory grow with
// the kinds, not the ranks. Readers go through its methods: Kinds for
// figures that are alike within a kind (maxima, minima, the first rank to
// reach one, sums weighted by Count), Row and All where a row per rank is
// really needed (a per-rank table, a document), Rows for a bounded copy.
// Its JSON is the list of every rank's row, as a []RankEstimate's.
type RankRows struct {
	// Kinds are in rank order, each starting where the one before ends
	// (the first at rank 0); nil where the estimate keeps no rows.
	Kinds []RankKind `json:"kinds"`
}

// RanksOf holds rows (in rank order, consecutive from rows[0].Rank) as
// kinds, joining each row to the kind before it where it is that kind's
// next rank: the next rank number and TP index, every other field equal.
// nil gives no rows (JSON null), an empty list an empty one.
func RanksOf(rows []RankEstimate) RankRows {
	if rows == nil {
		return RankRows{}
	}
	out := RankRows{Kinds: make([]RankKind, 0, 1)}
	for _, r := range rows {
		if n := len(out.Kinds); n > 0 && out.Kinds[n-1].next(r) {
			out.Kinds[n-1].Count++
			continue
		}
		out.Kinds = append(out.Kinds, RankKind{RankEstimate: r, Count: 1})
	}
	return out
}

// next says whether r is k's next rank.
func (k *RankKind) next(r RankEstimate) bool {
	if r.Rank != k.Rank+k.Count || r.TPIndex != k.TPIndex+k.Count {
		return false
	}
	a := k.RankEstimate
	a.Rank, a.TPIndex = r.Rank, r.TPIndex
	return reflect.DeepEqual(a, r)
}

// Len is the number of ranks the rows describe.
func (rs RankRows) Len() int {
	n := 0
	for i := range rs.Kinds {
		n += rs.Kinds[i].Count
	}
	return n
}

// At is the i-th rank of k's row.
func (k *RankKind) At(i int) RankEstimate {
	r := k.RankEstimate
	r.Rank += i
	r.TPIndex += i
	return r
}

// Row is the row of rank number r (the rows' ranks are numbered from the
// first kind's Rank up); ok is false for a rank outside them.
func (rs RankRows) Row(r int) (RankEstimate, bool) {
	i := sort.Search(len(rs.Kinds), func(i int) bool { return rs.Kinds[i].Rank+rs.Kinds[i].Count > r })
	if i == len(rs.Kinds) || r < rs.Kinds[i].Rank {
		return RankEstimate{}, false
	}
	return rs.Kinds[i].At(r - rs.Kinds[i].Rank), true
}

// All yields every rank's row in rank order, with its position (0, 1, …).
func (rs RankRows) All() iter.Seq2[int, RankEstimate] {
	return func(yield func(int, RankEstimate) bool) {
		i := 0
		for k := range rs.Kinds {
			for j := 0; j < rs.Kinds[k].Count; j++ {
				if !yield(i, rs.Kinds[k].At(j)) {
					return
				}
				i++
			}
		}
	}
}

// MaxExpandedRows is the most rows Rows copies out.
const MaxExpandedRows = 1 << 20

// Rows copies every rank's row out, in rank order: at most limit rows
// (≤ 0: MaxExpandedRows); more is refused with an error that says how many
// ranks and kinds the rows hold.
func (rs RankRows) Rows(limit int) ([]RankEstimate, error) {
	if limit <= 0 {
		limit = MaxExpandedRows
	}
	n := rs.Len()
	if n > limit {
		return nil, fmt.Errorf("sim: %d per-rank rows (%d rank kinds) exceed the limit of %d rows a copy may hold; read them by kind (RankRows.Kinds) or one at a time (RankRows.All)",
			n, len(rs.Kinds), limit)
	}
	if rs.Kinds == nil {
		return nil, nil
	}
	out := make([]RankEstimate, 0, n)
	for _, r := range rs.All() {
		out = append(out, r)
	}
	return out, nil
}

// MarshalJSON writes every rank's row, as json.Marshal writes a
// []RankEstimate (null where no rows are kept). A kind's row is marshalled
// once; each of its ranks repeats it with its own rank number and TP index.
func (rs RankRows) MarshalJSON() ([]byte, error) {
	if rs.Kinds == nil {
		return []byte("null"), nil
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	first := true
	for k := range rs.Kinds {
		kind := &rs.Kinds[k]
		if kind.Count <= 0 {
			continue
		}
		row := kind.RankEstimate
		row.Rank, row.TPIndex = 0, 0
		b, err := json.Marshal(row)
		if err != nil {
			return nil, err
		}
		// A row starts {"rank":0,"stage":S,"tp_index":0 (RankEstimate's
		// field order); the rest is the kind's, the same for every rank.
		head := `{"rank":0,"stage":` + strconv.Itoa(kind.Stage) + `,"tp_index":0`
		rest, ok := bytes.CutPrefix(b, []byte(head))
		for i := 0; i < kind.Count; i++ {
			if !first {
				buf.WriteByte(',')
			}
			first = false
			if !ok { // not the layout above: each row marshalled whole
				b, err := json.Marshal(kind.At(i))
				if err != nil {
					return nil, err
				}
				buf.Write(b)
				continue
			}
			buf.WriteString(`{"rank":`)
			buf.WriteString(strconv.Itoa(kind.Rank + i))
			buf.WriteString(`,"stage":`)
			buf.WriteString(strconv.Itoa(kind.Stage))
			buf.WriteString(`,"tp_index":`)
			buf.WriteString(strconv.Itoa(kind.TPIndex + i))
			buf.Write(rest)
		}
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads a list of rows (MarshalJSON's) back into kinds.
func (rs *RankRows) UnmarshalJSON(b []byte) error {
	var rows []RankEstimate
	if err := json.Unmarshal(b, &rows); err != nil {
		return err
	}
	*rs = RanksOf(rows)
	return nil
}

// WriteIndentedJSON writes the rows to w as json.Indent, with prefix and
// indent, writes MarshalJSON's output (so as a json.Encoder with
// SetIndent(prefix0, indent) writes them at a depth whose lines begin with
// prefix), without building it: a kind's row is marshalled and indented
// once, and each of its ranks is written from it with its own rank number
// and TP index. It returns the bytes written.
func (rs RankRows) WriteIndentedJSON(w io.Writer, prefix, indent string) (int64, error) {
	var n int64
	write := func(b []byte) error {
		k, err := w.Write(b)
		n += int64(k)
		return err
	}
	if rs.Kinds == nil || rs.Len() == 0 { // null or []
		raw, err := rs.MarshalJSON()
		if err != nil {
			return 0, err
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, raw, prefix, indent); err != nil {
			return 0, err
		}
		return n, write(buf.Bytes())
	}
	in := prefix + indent // a row's lines
	if err := write([]byte("[\n" + in)); err != nil {
		return n, err
	}
	first := true
	var row, line []byte
	for k := range rs.Kinds {
		kind := &rs.Kinds[k]
		if kind.Count <= 0 {
			continue
		}
		r := kind.RankEstimate
		r.Rank, r.TPIndex = 0, 0
		b, err := json.Marshal(r)
		if err != nil {
			return n, err
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, b, in, indent); err != nil {
			return n, err
		}
		// Indented, a row starts {, "rank": 0, "stage": S, "tp_index": 0 on
		// lines of their own (RankEstimate's field order); the rest is the
		// kind's, the same for every rank.
		field := "\n" + in + indent
		head := "{" + field + `"rank": 0,` + field + `"stage": ` + strconv.Itoa(kind.Stage) + "," + field + `"tp_index": 0`
		rest, ok := bytes.CutPrefix(buf.Bytes(), []byte(head))
		for i := 0; i < kind.Count; i++ {
			line = line[:0]
			if !first {
				line = append(line, ",\n"+in...)
			}
			first = false
			if !ok { // not the layout above: each row marshalled whole
				b, err := json.Marshal(kind.At(i))
				if err != nil {
					return n, err
				}
				buf.Reset()
				if err := json.Indent(&buf, b, in, indent); err != nil {
					return n, err
				}
				if err := write(append(line, buf.Bytes()...)); err != nil {
					return n, err
				}
				continue
			}
			row = append(row[:0], "{"+field+`"rank": `...)
			row = strconv.AppendInt(row, int64(kind.Rank+i), 10)
			row = append(row, ","+field+`"stage": `...)
			row = strconv.AppendInt(row, int64(kind.Stage), 10)
			row = append(row, ","+field+`"tp_index": `...)
			row = strconv.AppendInt(row, int64(kind.TPIndex+i), 10)
			line = append(append(line, row...), rest...)
			if err := write(line); err != nil {
				return n, err
			}
		}
	}
	return n, write([]byte("\n" + prefix + "]"))
}
