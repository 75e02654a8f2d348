package report

import "github.com/partbench/partbench/compare"

// Compare lines up saved documents the way partbench compare does: report
// lists each one's records, compare matches them.
func Compare(docs []*Doc) (*Comparison, error) {
	files, recs, err := RecordsOf(docs)
	if err != nil {
		return nil, err
	}
	rows, unmatched := compare.MatchRecords(files, recs)
	return &Comparison{Files: files, Schema: docs[0].Schema, Rows: rows, Unmatched: unmatched}, nil
}

func ptr(v float64) *float64 { return &v }

// relDiff is (b − a)/a for the tests' hand-built comparisons (nil where a
// value is missing or a is 0).
func relDiff(a, b *float64) *float64 {
	if a == nil || b == nil || *a == 0 {
		return nil
	}
	d := (*b - *a) / *a
	return &d
}
