package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/partbench/partbench/compare"
	"github.com/partbench/partbench/fileio"
	"github.com/partbench/partbench/remote"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// Schemas of saved results that plot and compare read.
const (
	// CompareSchema is a list of measured and modeled values of named
	// metrics: what the executor emits for a scatter of measured vs modeled.
	CompareSchema = "partbench.compare/v1"
	// SearchSchema is the output of `partbench search --format json`.
	SearchSchema = "partbench.search/v1"
)

// KnownSchemas lists the schemas ReadDoc accepts.
var KnownSchemas = []string{ModelSchema, SweepSchema, SearchSchema, CompareSchema, RunSchema, RemoteSchema, ComparisonSchema, EmulationSchema}

// CompareDoc pairs measured with modeled values, one row per metric.
type CompareDoc struct {
	Schema  string `json:"schema"`
	Version string `json:"partbench_version,omitempty"`
	Title   string `json:"title,omitempty"`
	// Tolerance is the relative band around measured = modeled that counts
	// as agreement (0.1 = ±10 %); 0 means unstated.
	Tolerance float64 `json:"tolerance,omitempty"`
	// MeasuredLabel and ModeledLabel name the two axes when they are not
	// "measured" and "modeled" (e.g. two estimates held against each other).
	MeasuredLabel string       `json:"measured_label,omitempty"`
	ModeledLabel  string       `json:"modeled_label,omitempty"`
	Rows          []CompareRow `json:"rows"`
}

// CompareRow is one metric measured and modeled, in Unit (s, B, count, …).
type CompareRow struct {
	Metric   string  `json:"metric"`
	Unit     string  `json:"unit,omitempty"`
	Measured float64 `json:"measured"`
	Modeled  float64 `json:"modeled"`
}

// SweepDoc is the document SweepJSON writes.
type SweepDoc struct {
	Schema  string       `json:"schema"`
	Version string       `json:"partbench_version"`
	Key     string       `json:"key"`
	Points  []SweepPoint `json:"points"`
}

// SearchDoc is the document of `partbench search --format json`.
type SearchDoc struct {
	Schema  string `json:"schema"`
	Version string `json:"partbench_version"`
	Source  string `json:"source"`
	*sim.SearchResult
}

// Doc is a saved result of one of the known schemas; exactly one of the
// pointers is set, the one Schema names.
type Doc struct {
	Name    string
	Schema  string
	Model   *ModelDoc
	Sweep   *SweepDoc
	Search  *SearchDoc
	Compare *CompareDoc
	Run     *RunDoc
	Remote  *remote.ResultsFile
	// Comparison is `compare --format json`'s output.
	Comparison *ComparisonDoc
	// Emulation is `run --emulate-ranks`'s results.json.
	Emulation *EmulationDoc
}

// ReadDoc decodes a saved result, dispatching on its "schema" key. name
// labels errors.
func ReadDoc(r io.Reader, name string) (*Doc, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var probe struct {
		Schema *string `json:"schema"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %w", name, err)
	}
	if probe.Schema == nil {
		return nil, fmt.Errorf("%s: not a partbench result: no \"schema\" key (known: %s)", name, strings.Join(KnownSchemas, ", "))
	}
	d := &Doc{Name: name, Schema: *probe.Schema}
	if d.Schema == remote.LegacyResultsSchema { // results.json of an older partbench remote
		d.Schema = RemoteSchema
	}
	var into any
	switch d.Schema {
	case ModelSchema:
		d.Model = &ModelDoc{}
		into = d.Model
	case SweepSchema:
		d.Sweep = &SweepDoc{}
		into = d.Sweep
	case SearchSchema:
		d.Search = &SearchDoc{SearchResult: &sim.SearchResult{}}
		into = d.Search
	case CompareSchema:
		d.Compare = &CompareDoc{}
		into = d.Compare
	case RunSchema:
		d.Run = &RunDoc{}
		into = d.Run
	case RemoteSchema:
		d.Remote = &remote.ResultsFile{}
		into = d.Remote
	case ComparisonSchema:
		d.Comparison = &ComparisonDoc{}
		into = d.Comparison
	case EmulationSchema:
		d.Emulation = &EmulationDoc{}
		into = d.Emulation
	default:
		return nil, fmt.Errorf("%s: unknown schema %q (known: %s)", name, d.Schema, strings.Join(KnownSchemas, ", "))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(into); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", name, d.Schema, err)
	}
	if d.Model != nil && len(d.Model.Strategies) == 0 {
		return nil, fmt.Errorf("%s: %s: no strategies", name, d.Schema)
	}
	if d.Comparison != nil {
		if err := d.Comparison.validate(); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", name, d.Schema, err)
		}
	}
	if d.Emulation != nil && (d.Emulation.Emulated == nil || d.Emulation.Modeled == nil) {
		return nil, fmt.Errorf("%s: %s: needs both \"emulated\" and \"modeled\" estimates", name, d.Schema)
	}
	if d.Remote != nil && len(d.Remote.Aggregates) == 0 {
		return nil, fmt.Errorf("%s: %s: no aggregates (a run with no recorded trials)", name, d.Schema)
	}
	return d, nil
}

// Metric and Record are compare's: a document's comparable values, which
// compare.MatchRecords lines up across files.
type (
	Metric = compare.Metric
	Record = compare.Record
)

// Records lists a document's comparable records.
func Records(d *Doc) []Record {
	var out []Record
	switch {
	case d.Model != nil:
		for _, e := range d.Model.Strategies {
			out = append(out, Record{Key: e.Name, Metrics: estimateMetrics(e)})
		}
	case d.Sweep != nil:
		for _, p := range d.Sweep.Points {
			for _, e := range p.Strategies {
				out = append(out, Record{Key: fmt.Sprintf("%s=%d %s", d.Sweep.Key, p.Value, e.Name), Metrics: []Metric{
					{Name: "ttft_s", Unit: "s", Value: e.Prefill.TTFTS}, {Name: "tpot_s", Unit: "s", Value: e.Decode.TPOTS}, {Name: "tokens_per_s", Unit: "tok/s", Value: e.Decode.TokensPerS},
					{Name: "decode_bubble_fraction", Unit: "fraction", Value: e.Decode.BubbleFraction}, {Name: "l2_weight_residency", Unit: "fraction", Value: e.L2.WeightResidency},
					{Name: "max_total_bytes_per_gpu", Unit: "B", Value: float64(maxRank(e).TotalBytes)},
				}})
			}
		}
	case d.Search != nil:
		for _, r := range d.Search.Rows {
			if r.Quick == nil {
				continue
			}
			ms := []Metric{{Name: "ttft_s", Unit: "s", Value: r.Quick.TTFTS}, {Name: "tpot_s", Unit: "s", Value: r.Quick.TPOTS}, {Name: "tokens_per_s", Unit: "tok/s", Value: r.Quick.TokensPerS},
				{Name: "decode_bubble_fraction", Unit: "fraction", Value: r.Quick.BubbleFraction}, {Name: "max_total_bytes_per_gpu", Unit: "B", Value: float64(r.MemoryBytes)}}
			if r.Full != nil {
				ms = append(ms, Metric{Name: "full_ttft_s", Unit: "s", Value: r.Full.TTFTS}, Metric{Name: "full_tpot_s", Unit: "s", Value: r.Full.TPOTS})
			}
			out = append(out, Record{Key: r.Name(), Metrics: ms})
		}
	case d.Compare != nil:
		for _, r := range d.Compare.Rows {
			out = append(out, Record{Key: r.Metric, Metrics: []Metric{{Name: "measured", Unit: r.Unit, Value: r.Measured}, {Name: "modeled", Unit: r.Unit, Value: r.Modeled}}})
		}
	case d.Run != nil:
		rec := Record{Key: d.Run.Backend}
		if d.Run.Config != nil {
			rec.Key = d.Run.Config.Name + " on " + d.Run.Backend
		}
		for _, r := range d.Run.Comparison {
			rec.Metrics = append(rec.Metrics, Metric{Name: r.Metric + "_measured", Unit: r.Unit, Value: r.Measured.Mean}, Metric{Name: r.Metric + "_modeled", Unit: r.Unit, Value: r.Modeled})
		}
		out = append(out, rec)
	case d.Remote != nil:
		out = remoteRecords(d.Remote)
	case d.Emulation != nil:
		if c, err := CompareFromEmulation(d.Emulation); err == nil {
			rec := Record{Key: d.Emulation.Emulated.Name + " on " + d.Emulation.Backend}
			for _, r := range c.Rows {
				rec.Metrics = append(rec.Metrics, Metric{Name: r.Metric + "_emulated", Unit: r.Unit, Value: r.Measured}, Metric{Name: r.Metric + "_modeled", Unit: r.Unit, Value: r.Modeled})
			}
			out = append(out, rec)
		}
	case d.Comparison != nil:
		for _, r := range d.Comparison.Rows {
			rec := Record{Key: r.Record + " " + r.Metric}
			for i, v := range r.Values {
				if v != nil {
					rec.Metrics = append(rec.Metrics, Metric{Name: fileLabel(d.Comparison.Files[i]), Unit: r.Unit, Value: *v})
				}
			}
			out = append(out, rec)
		}
	}
	return out
}

// estimateMetrics are the headline numbers of one strategy.
func estimateMetrics(e *sim.Estimate) []Metric {
	count := func(n int64) float64 { return float64(n) }
	ms := []Metric{
		{Name: "ttft_s", Unit: "s", Value: e.Prefill.TTFTS},
		{Name: "tpot_s", Unit: "s", Value: e.Decode.TPOTS},
		{Name: "tokens_per_s", Unit: "tok/s", Value: e.Decode.TokensPerS},
		{Name: "prefill_bubble_fraction", Unit: "fraction", Value: e.Prefill.BubbleFraction},
		{Name: "decode_bubble_fraction", Unit: "fraction", Value: e.Decode.BubbleFraction},
		{Name: "max_total_bytes_per_gpu", Unit: "B", Value: float64(maxRank(e).TotalBytes)},
		{Name: "collective_calls_per_microbatch", Unit: "count", Value: count(int64(e.Comm.CollectiveCallsPerMicrobatch))},
		{Name: "p2p_sends_per_microbatch", Unit: "count", Value: count(int64(e.Comm.P2PSendsPerMicrobatch))},
		{Name: "max_calls_per_rank_per_step", Unit: "count", Value: count(e.Comm.MaxCallsPerRankPerStep)},
		{Name: "max_messages_per_rank_per_step", Unit: "count", Value: count(e.Comm.MaxMessagesPerRankPerStep)},
	}
	for _, c := range topology.LinkClasses {
		ms = append(ms, Metric{Name: "bytes_" + string(c), Unit: "B", Value: float64(e.Comm.BytesByLink[c])})
	}
	return ms
}

// Comparison is records of several documents side by side.
type Comparison struct {
	Files  []string
	Schema string
	Rows   []ComparisonRow
	// Unmatched names records found in some files only.
	Unmatched []string
}

// ComparisonRow is one metric of one record in every file, with each later
// file's difference from the first (compare.MatchRecords computes them).
type ComparisonRow = compare.MatchedRow

// RecordsOf checks that docs are at least two of one schema and lists each
// one's name and records, for compare.MatchRecords.
func RecordsOf(docs []*Doc) (files []string, records [][]Record, err error) {
	if len(docs) < 2 {
		return nil, nil, fmt.Errorf("compare: needs at least two files (got %d)", len(docs))
	}
	for _, d := range docs {
		if d.Schema != docs[0].Schema {
			return nil, nil, fmt.Errorf("compare: %s is %s but %s is %s; compare needs files of one schema", docs[0].Name, docs[0].Schema, d.Name, d.Schema)
		}
		files = append(files, d.Name)
		records = append(records, Records(d))
	}
	return files, records, nil
}

// Grid lays out a comparison: one row per record and metric, each file's
// value, and each later file's difference from the first in percent.
func (c *Comparison) Grid() Grid {
	g := Grid{Title: fmt.Sprintf("Comparison (%s), differences relative to %s", c.Schema, c.Files[0]),
		Header: []string{"record", "metric", "unit", c.Files[0]}}
	for _, f := range c.Files[1:] {
		g.Header = append(g.Header, f, "Δ "+f+" (%)")
	}
	for _, r := range c.Rows {
		g.Rows = append(g.Rows, append([]string{r.Key, r.Metric, r.Unit}, rowCells(r)...))
	}
	g.Notes = append(g.Notes, c.Unmatched...)
	return g
}

// rowCells are the row's value in every file, each later one followed by its
// relative difference from the first in percent (signed, "n/a" where none).
func rowCells(r ComparisonRow) []string {
	out := []string{valueString(r.Values[0])}
	for i := 1; i < len(r.Values); i++ {
		d := "n/a"
		if r.RelDiff[i] != nil {
			d = strconv.FormatFloat(100**r.RelDiff[i], 'f', 2, 64)
			if *r.RelDiff[i] > 0 {
				d = "+" + d
			}
		}
		out = append(out, valueString(r.Values[i]), d)
	}
	return out
}

func valueString(v *float64) string {
	if v == nil {
		return "—"
	}
	return strconv.FormatFloat(*v, 'g', 6, 64)
}

// CompareFromRun turns a measured run's comparison rows into a CompareDoc
// (measured mean against modeled).
func CompareFromRun(d *RunDoc) *CompareDoc {
	c := &CompareDoc{Schema: CompareSchema, Version: d.Version, Tolerance: d.Tolerance}
	if d.Config != nil {
		c.Title = "Run: " + d.Config.Name + " on " + d.Backend
		if len(d.Devices) > 0 {
			c.Title += " (" + strings.Join(d.Devices, "; ") + ")"
		}
	}
	for _, r := range d.Comparison {
		c.Rows = append(c.Rows, CompareRow{Metric: r.Metric, Unit: r.Unit, Measured: r.Measured.Mean, Modeled: r.Modeled})
	}
	return c
}

// CompareFromSearch pairs each re-run candidate's closed-form TPOT and TTFT
// (as "modeled") with the full timeline's (as "measured").
func CompareFromSearch(d *SearchDoc) *CompareDoc {
	title := "Search: closed form vs full timeline"
	if d.SearchResult != nil {
		title = fmt.Sprintf("Search of %s on %d GPUs (%s, %s): closed form vs full timeline", d.Model, d.GPUs, d.Topology, d.Hardware)
	}
	c := &CompareDoc{Schema: CompareSchema, Version: d.Version, Title: title,
		MeasuredLabel: "full timeline", ModeledLabel: "closed form"}
	for _, r := range d.Rows {
		if r.Full == nil || r.Quick == nil {
			continue
		}
		c.Rows = append(c.Rows, CompareRow{Metric: r.Name() + " tpot", Unit: "s", Measured: r.Full.TPOTS, Modeled: r.Quick.TPOTS},
			CompareRow{Metric: r.Name() + " ttft", Unit: "s", Measured: r.Full.TTFTS, Modeled: r.Quick.TTFTS})
	}
	return c
}

// units lists the distinct units of a CompareDoc's rows, in order of first use.
func (c *CompareDoc) units() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range c.Rows {
		if !seen[r.Unit] {
			seen[r.Unit] = true
			out = append(out, r.Unit)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i] != "" && out[j] == "" })
	return out
}

// ReadDocFile reads the saved results document at path (ReadDoc); an error
// opening it starts with "compare: ".
func ReadDocFile(path string) (*Doc, error) {
	data, err := fileio.ReadSmall(path, "results file", MaxDocBytes)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	return ReadDoc(bytes.NewReader(data), path)
}

// MaxDocBytes bounds a saved results document read back (compare, plot):
// the largest partbench writes, a search over every strategy, is a few MiB.
const MaxDocBytes = 256 << 20
