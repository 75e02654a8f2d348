package remote

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/partbench/partbench/partition"
)

// CSVHeader is results.csv's columns: seed 000's, then the byte counts and
// the breakdown.
var CSVHeader = []string{"trial", "phase", "mode", "latency_s", "wall_s", "net_bytes", "avg_sm",
	"requests", "model_bytes", "wire_bytes", "tokens_per_s", "util_source",
	"client_serialize_s", "client_to_server_s", "server_queue_s", "server_import_s", "server_execute_s",
	"server_serialize_s", "server_to_client_s", "client_deserialize_s", "overhead_s"}

func g(v float64) string { return strconv.FormatFloat(v, 'g', 9, 64) }

// CSVRecord is one row's fields in CSVHeader order.
func (r Row) CSVRecord() []string {
	b := r.Breakdown
	return []string{strconv.Itoa(r.Trial), string(r.Phase), string(r.Mode), g(r.LatencyS), g(r.WallS),
		strconv.FormatInt(r.NetBytes, 10), g(r.AvgSM), strconv.Itoa(r.Requests), strconv.FormatInt(r.WantBytes, 10),
		strconv.FormatInt(r.WireBytes, 10), g(r.TokensPS), r.UtilSrc,
		g(b.ClientSerializeS), g(b.ClientToServerS), g(b.QueueWaitS), g(b.ServerImportS), g(b.ExecuteS),
		g(b.ServerSerializeS), g(b.ServerToClientS), g(b.ClientDeserializeS), g(b.OverheadS)}
}

// ResultsFile is results.json.
type ResultsFile struct {
	Schema     string      `json:"schema"`
	Config     string      `json:"config"`
	Server     string      `json:"server,omitempty"`
	Transport  string      `json:"transport,omitempty"`
	Device     string      `json:"device,omitempty"`
	Trials     *Trials     `json:"run"`
	Aggregates []Aggregate `json:"aggregates"`
	// GapBytesRatio and GapLatencyRatio are naive / stateful per decode
	// request, measured (0 when either mode did not run).
	GapBytesRatio   float64  `json:"gap_bytes_ratio"`
	GapLatencyRatio float64  `json:"gap_latency_ratio"`
	Mismatches      []string `json:"mismatches,omitempty"`
	// Notes say how the client process was set up (its collector's pace).
	Notes []string `json:"notes,omitempty"`
}

// ResultsSchema names results.json's layout, spelled as every other
// partbench schema; LegacyResultsSchema is the spelling of files written
// before, which readers accept as the same layout.
const (
	ResultsSchema       = "partbench.remote/v1"
	LegacyResultsSchema = "partbench.remote.v1"
)

// NewResultsFile aggregates t.
func NewResultsFile(t *Trials) *ResultsFile {
	f := &ResultsFile{Schema: ResultsSchema, Config: t.Config, Trials: t, Aggregates: t.Aggregates(), Mismatches: t.Mismatches}
	var naive, stateful *Aggregate
	for i, a := range f.Aggregates {
		if a.Phase != partition.Decode {
			continue
		}
		switch a.Mode {
		case partition.RemoteNaive:
			naive = &f.Aggregates[i]
		case partition.RemoteStateful:
			stateful = &f.Aggregates[i]
		}
	}
	if naive != nil && stateful != nil && stateful.NetBytes > 0 && stateful.LatencyS.Mean > 0 {
		f.GapBytesRatio = float64(naive.NetBytes) / float64(stateful.NetBytes)
		f.GapLatencyRatio = naive.LatencyS.Mean / stateful.LatencyS.Mean
	}
	return f
}

// Write writes results.csv and results.json into dir (created if missing).
func (f *ResultsFile) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--output-dir %s: %w", dir, err)
	}
	cf, err := os.Create(filepath.Join(dir, "results.csv"))
	if err != nil {
		return err
	}
	w := csv.NewWriter(cf)
	w.Write(CSVHeader)
	for _, r := range f.Trials.Rows {
		w.Write(r.CSVRecord())
	}
	w.Flush()
	if err := w.Error(); err != nil {
		cf.Close()
		return fmt.Errorf("results.csv: %w", err)
	}
	if err := cf.Close(); err != nil {
		return err
	}
	js, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644)
}
