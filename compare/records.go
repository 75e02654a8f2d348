package compare

import (
	"fmt"
	"strings"

	"github.com/partbench/partbench/stats"
)

// Metric is one named value of a record.
type Metric struct {
	Name  string
	Unit  string
	Value float64
}

// Record is one comparable thing in a saved document (a strategy, a sweep
// point, a candidate, a run) with its metrics in a fixed order.
type Record struct {
	Key     string
	Metrics []Metric
}

// MatchedRow is one metric of one record in every file. Values[i] is nil
// where file i lacks the record; RelDiff[i] is (Values[i] − Values[0]) /
// Values[0] for i ≥ 1, nil where undefined (a missing value, or a baseline of
// 0 with a non-zero value).
type MatchedRow struct {
	Key, Metric, Unit string
	Values            []*float64
	RelDiff           []*float64
}

// MatchRecords matches records by key across files (records[i] are file
// i's), the first file being the baseline: one row per record and metric in
// the order they first appear, and, for each record some file lacks, a line
// naming the files without it.
func MatchRecords(files []string, records [][]Record) (rows []MatchedRow, unmatched []string) {
	byFile := make([]map[string]Record, len(records))
	var order []string
	seen := map[string]bool{}
	for i, recs := range records {
		byFile[i] = map[string]Record{}
		for _, r := range recs {
			byFile[i][r.Key] = r
			if !seen[r.Key] {
				seen[r.Key] = true
				order = append(order, r.Key)
			}
		}
	}
	for _, key := range order {
		var missing []string
		var base Record
		for i := range records {
			r, ok := byFile[i][key]
			if !ok {
				missing = append(missing, files[i])
			} else if base.Key == "" {
				base = r
			}
		}
		if len(missing) > 0 {
			unmatched = append(unmatched, fmt.Sprintf("%s: not in %s", key, strings.Join(missing, ", ")))
		}
		for mi, m := range base.Metrics {
			row := MatchedRow{Key: key, Metric: m.Name, Unit: m.Unit, Values: make([]*float64, len(records)), RelDiff: make([]*float64, len(records))}
			for i := range records {
				if r, ok := byFile[i][key]; ok {
					if v, ok := metricValue(r, m.Name, mi); ok {
						row.Values[i] = &v
					}
				}
			}
			for i := 1; i < len(records); i++ {
				row.RelDiff[i] = relDiff(row.Values[0], row.Values[i])
			}
			rows = append(rows, row)
		}
	}
	return rows, unmatched
}

// metricValue finds a metric by name, trying its usual position first.
func metricValue(r Record, name string, hint int) (float64, bool) {
	if hint < len(r.Metrics) && r.Metrics[hint].Name == name {
		return r.Metrics[hint].Value, true
	}
	for _, m := range r.Metrics {
		if m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}

// relDiff is stats.RelDiff of b from a, (b − a)/a; nil when either is
// missing or a is 0 and b is not.
func relDiff(a, b *float64) *float64 {
	if a == nil || b == nil {
		return nil
	}
	d, ok := stats.RelDiff(*a, *b)
	if !ok {
		return nil
	}
	return &d
}
