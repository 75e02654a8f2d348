package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// ComparisonSchema is the JSON form of `partbench compare --format json`:
// the compared files and, per record and metric, every file's value and
// each later file's difference from the first.
const ComparisonSchema = "partbench.comparison/v1"

// ComparisonDoc is the document of ComparisonSchema.
type ComparisonDoc struct {
	Schema  string `json:"schema"`
	Version string `json:"partbench_version,omitempty"`
	// Of is the schema of the compared files.
	Of string `json:"of"`
	// Files are the compared files as given; the first is the baseline.
	Files []string           `json:"files"`
	Rows  []ComparisonDocRow `json:"rows"`
	// Unmatched names records found in some files only.
	Unmatched []string `json:"unmatched,omitempty"`
}

// ComparisonDocRow is one metric of one record in every file. Values[i] is
// file i's value, null where it lacks the record; RelDiff[i] is (Values[i]
// − Values[0]) / Values[0], null for the first file and where undefined.
type ComparisonDocRow struct {
	Record  string     `json:"record"`
	Metric  string     `json:"metric"`
	Unit    string     `json:"unit,omitempty"`
	Values  []*float64 `json:"values"`
	RelDiff []*float64 `json:"rel_diff"`
}

// Doc is the comparison as a ComparisonSchema document.
func (c *Comparison) Doc(version string) *ComparisonDoc {
	d := &ComparisonDoc{Schema: ComparisonSchema, Version: version, Of: c.Schema, Files: c.Files,
		Rows: []ComparisonDocRow{}, Unmatched: c.Unmatched}
	for _, r := range c.Rows {
		d.Rows = append(d.Rows, ComparisonDocRow{Record: r.Key, Metric: r.Metric, Unit: r.Unit, Values: r.Values, RelDiff: r.RelDiff})
	}
	return d
}

// WriteComparisonJSON writes the comparison as an indented ComparisonSchema
// document.
func WriteComparisonJSON(w io.Writer, c *Comparison, version string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(c.Doc(version))
}

// validate checks what ComparisonPlot relies on: two or more files and a
// value per file in every row.
func (d *ComparisonDoc) validate() error {
	if len(d.Files) < 2 {
		return fmt.Errorf("files: a comparison names at least two files (got %d)", len(d.Files))
	}
	for i, r := range d.Rows {
		if len(r.Values) != len(d.Files) {
			return fmt.Errorf("rows[%d] (%s %s): values: %d, one per file wanted (%d files)", i, r.Record, r.Metric, len(r.Values), len(d.Files))
		}
	}
	return nil
}

// ComparisonPlot draws each later file's values (y) against the first
// file's (x), one panel per unit, one series per later file, each point
// labelled with its metric in words (and its record when several are
// compared). The axes name the files by base name.
func ComparisonPlot(d *ComparisonDoc) (*Figure, error) {
	if err := d.validate(); err != nil {
		return nil, err
	}
	names := make([]string, len(d.Files))
	for i, f := range d.Files {
		names[i] = fileLabel(f)
	}
	records := map[string]bool{}
	var units []string
	for _, r := range d.Rows {
		records[r.Record] = true
		if !containsString(units, r.Unit) {
			units = append(units, r.Unit)
		}
	}
	title := fmt.Sprintf("Comparison of %s: %s against %s", orElse(schemaWords[d.Of], "results"), strings.Join(names[1:], ", "), names[0])
	f := &Figure{Title: title, PanelWidth: 4.5 * vg.Inch, Height: 4.5 * vg.Inch}
	if len(units) > 3 {
		f.Cols = min((len(units)+1)/2, 3)
	}
	yName := strings.Join(names[1:], ", ")
	if len(yName) > 30 {
		yName = "later files"
	}
	for _, unit := range units {
		var series []scatterSeries
		var metrics []string
		for fi := 1; fi < len(names); fi++ {
			s := scatterSeries{name: fmt.Sprintf("%s against %s", names[fi], names[0])}
			for _, r := range d.Rows {
				if r.Unit != unit || r.Values[0] == nil || r.Values[fi] == nil {
					continue
				}
				label := plotMetricLabel(r.Metric)
				if len(records) > 1 {
					label = r.Record + " " + label
				}
				s.pts = append(s.pts, plotter.XY{X: *r.Values[0], Y: *r.Values[fi]})
				s.labels = append(s.labels, label)
				if !containsString(metrics, r.Metric) {
					metrics = append(metrics, r.Metric)
				}
			}
			series = append(series, s)
		}
		if len(metrics) == 0 {
			continue // no record in both files has this unit
		}
		p, legend, err := scatterPanel(scatterPanelTitle(unit, metrics), unit, names[0], yName, series, 0)
		if err != nil {
			return nil, err
		}
		if len(legend) > len(f.Legend) {
			f.Legend = legend
		}
		f.Panels = append(f.Panels, p)
	}
	if len(f.Panels) == 0 {
		return nil, fmt.Errorf("comparison: no record has a value in the first file and a later one")
	}
	return f, nil
}

// CompareFromEmulation pairs a rank emulation's emulated numbers (measured
// compute, modeled communication) with the pure model's: TTFT, TPOT, TPS,
// the bubbles and the largest rank's memory.
func CompareFromEmulation(d *EmulationDoc) (*CompareDoc, error) {
	if d.Emulated == nil || d.Modeled == nil {
		return nil, fmt.Errorf("%s: needs both \"emulated\" and \"modeled\" estimates", EmulationSchema)
	}
	e, m := d.Emulated, d.Modeled
	c := &CompareDoc{Schema: CompareSchema, Version: d.Version, MeasuredLabel: "emulated",
		ModeledLabel: "modeled (" + m.Hardware + ")",
		Title:        fmt.Sprintf("Rank emulation: %s, %d ranks played in turn on one %s device, against the model on %s", e.Name, d.Ranks, d.Backend, m.Hardware)}
	var alloc int64
	for _, a := range d.AllocatedBytes {
		alloc = max(alloc, a)
	}
	c.Rows = []CompareRow{
		{Metric: "ttft_s", Unit: "s", Measured: e.Prefill.TTFTS, Modeled: m.Prefill.TTFTS},
		{Metric: "tpot_s", Unit: "s", Measured: e.Decode.TPOTS, Modeled: m.Decode.TPOTS},
		{Metric: "tokens_per_s", Unit: "tok/s", Measured: e.Decode.TokensPerS, Modeled: m.Decode.TokensPerS},
		{Metric: "prefill_bubble_fraction", Unit: "fraction", Measured: e.Prefill.BubbleFraction, Modeled: m.Prefill.BubbleFraction},
		{Metric: "decode_bubble_fraction", Unit: "fraction", Measured: e.Decode.BubbleFraction, Modeled: m.Decode.BubbleFraction},
		{Metric: "max_total_bytes_per_gpu", Unit: "B", Measured: float64(alloc), Modeled: float64(maxRank(m).TotalBytes)},
	}
	return c, nil
}

// schemaWords say what a compared schema holds, for a title.
var schemaWords = map[string]string{
	ModelSchema:      "dry-run estimates",
	SweepSchema:      "sweeps",
	SearchSchema:     "searches",
	CompareSchema:    "measured/modeled pairs",
	RunSchema:        "runs",
	RemoteSchema:     "remote results",
	EmulationSchema:  "rank emulations",
	ComparisonSchema: "comparisons",
}
