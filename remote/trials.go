package remote

import (
	"context"
	"fmt"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote/wire"
	"github.com/partbench/partbench/stats"
	"github.com/partbench/partbench/topology"
)

// wire.PhaseLoad's row name in results: kv mode's one-time weight upload.

// Row is one trial's phase of one mode: seed 000's columns (trial, phase,
// mode, latency_s, wall_s, net_bytes, avg_sm) and the breakdown. Times are
// seconds summed over the phase's requests.
type Row struct {
	Trial     int                  `json:"trial"`
	Phase     partition.Phase      `json:"phase"`
	Mode      partition.RemoteMode `json:"mode"`
	Requests  int                  `json:"requests"`
	LatencyS  float64              `json:"latency_s"` // the client's calls, end to end
	WallS     float64              `json:"wall_s"`    // the phase with the client's own serialize and deserialize
	NetBytes  int64                `json:"net_bytes"` // payload, both directions, counted in the client's transport
	WantBytes int64                `json:"model_bytes"`
	WireBytes int64                `json:"wire_bytes"`
	AvgSM     float64              `json:"avg_sm"` // device utilization over the server's span, time-weighted
	UtilSrc   string               `json:"util_source"`
	Tokens    int                  `json:"tokens"`
	TokensPS  float64              `json:"tokens_per_s"`
	Breakdown
}

// Breakdown is where a phase's time went, in seconds. OverheadS = LatencyS −
// ExecuteS − payload bytes / link bandwidth (seed 002's decomposition).
type Breakdown struct {
	ClientSerializeS   float64 `json:"client_serialize_s"`
	ClientToServerS    float64 `json:"client_to_server_s"`
	QueueWaitS         float64 `json:"server_queue_s"`
	ServerImportS      float64 `json:"server_import_s"`
	ExecuteS           float64 `json:"server_execute_s"`
	ServerSerializeS   float64 `json:"server_serialize_s"`
	ServerToClientS    float64 `json:"server_to_client_s"`
	ClientDeserializeS float64 `json:"client_deserialize_s"`
	OverheadS          float64 `json:"overhead_s"`
}

// Trials is what RunTrials measured.
type Trials struct {
	Config string              `json:"config"`
	Link   topology.ClientLink `json:"link"`
	Warmup int                 `json:"warmup"`
	Rows   []Row               `json:"-"`
	// Mismatches name every request whose payload bytes differ from
	// partition.RemoteBytesOf (a non-empty list fails the run).
	Mismatches []string `json:"mismatches,omitempty"`
	// Tokens are each mode's generated tokens of the last trial.
	Tokens map[partition.RemoteMode][][]uint32 `json:"-"`
}

// TrialOptions choose what RunTrials runs.
type TrialOptions struct {
	Config *configs.Config
	Modes  []partition.RemoteMode
	Trials int
	Warmup int
	// Client serves naive, kv and stateful; wire.Engine runs local mode in process.
	Client *Client
	Engine wire.Engine
	// Link prices payload bytes in the overhead (loopback by default).
	Link topology.ClientLink
}

// RunTrials runs Warmup + Trials generations per mode (a fresh session
// each) and returns a row per trial and phase (warm-up trials are not
// recorded). Payload bytes of every request, warm-up included, are checked
// against partition.RemoteBytesOf.
func RunTrials(ctx context.Context, o TrialOptions) (*Trials, error) {
	if o.Trials < 1 || o.Warmup < 0 {
		return nil, fmt.Errorf("remote: trials %d, warmup %d: need trials ≥ 1 and warmup ≥ 0", o.Trials, o.Warmup)
	}
	plan, err := partition.NewPlan(o.Config)
	if err != nil {
		return nil, err
	}
	if o.Link.BytesPerS == 0 {
		if o.Link, err = topology.ParseClientLink("link", "loopback"); err != nil {
			return nil, err
		}
	}
	weights, err := wire.ModelWeights(plan)
	if err != nil {
		return nil, err
	}
	prompt := SeededPrompt(plan)
	res := &Trials{Config: o.Config.Name, Link: o.Link, Warmup: o.Warmup, Tokens: map[partition.RemoteMode][][]uint32{}}
	for _, mode := range o.Modes {
		for trial := -o.Warmup; trial < o.Trials; trial++ {
			var g *Generation
			var err error
			if !mode.Served() {
				if o.Engine == nil {
					return nil, fmt.Errorf("remote: local mode needs an engine in the client's process")
				}
				g, err = GenerateLocal(ctx, o.Engine, plan, prompt)
			} else {
				if o.Client == nil {
					return nil, fmt.Errorf("remote: mode %s needs a server (--server or --spawn-server)", mode)
				}
				var s *Session
				if s, err = o.Client.Open(ctx, o.Config, mode, partition.RemoteOptions{}); err != nil {
					return nil, fmt.Errorf("%s: open: %w", mode, err)
				}
				g, err = Generate(ctx, s, weights, prompt)
				if cerr := s.Close(ctx); err == nil && cerr != nil {
					err = cerr
				}
			}
			if err != nil {
				return nil, fmt.Errorf("%s trial %d: %w", mode, trial, err)
			}
			rows, bad := rowsOf(plan, mode, g, o.Link)
			res.Mismatches = append(res.Mismatches, bad...)
			res.Tokens[mode] = g.Tokens
			if trial < 0 {
				continue
			}
			for i := range rows {
				rows[i].Trial = trial
			}
			res.Rows = append(res.Rows, rows...)
		}
	}
	return res, nil
}

func secs(d time.Duration) float64 { return d.Seconds() }

// rowsOf sums a generation's calls by phase and checks their bytes.
func rowsOf(plan *partition.Plan, mode partition.RemoteMode, g *Generation, link topology.ClientLink) ([]Row, []string) {
	var bad []string
	batch := plan.Config.Workload.Batch
	rows := map[partition.Phase]*Row{}
	var order []partition.Phase
	weight := map[partition.Phase]float64{}
	add := func(phase partition.Phase) *Row {
		if r, ok := rows[phase]; ok {
			return r
		}
		r := &Row{Phase: phase, Mode: mode}
		rows[phase] = r
		order = append(order, phase)
		return r
	}
	calls := g.Calls
	if g.Load != nil {
		calls = append([]Call{*g.Load}, calls...)
	}
	for _, c := range calls {
		r := add(c.Phase)
		res := c.Result
		var want partition.RemoteBytes
		var err error
		if c.Phase == wire.PhaseLoad {
			want.UpWeights, err = plan.RemoteOpenBytes(mode)
		} else {
			want, err = plan.RemoteBytesOf(mode, partition.RemoteRequest{Phase: c.Phase, Step: c.Step}, partition.RemoteOptions{})
		}
		if err != nil {
			bad = append(bad, err.Error())
		}
		got := res.Bytes.PayloadUp + res.Bytes.PayloadDown
		if res.Bytes.PayloadUp != want.Up() || res.Bytes.PayloadDown != want.Down() {
			bad = append(bad, fmt.Sprintf("%s %s step %d: payload up %d B, down %d B; the model says up %d B, down %d B",
				mode, c.Phase, c.Step, res.Bytes.PayloadUp, res.Bytes.PayloadDown, want.Up(), want.Down()))
		}
		r.Requests++
		r.NetBytes += got
		r.WantBytes += want.Total()
		r.WireBytes += res.Bytes.WireUp + res.Bytes.WireDown
		r.LatencyS += secs(res.Wall)
		r.WallS += secs(res.Wall + c.Serialize + c.Deserialize)
		r.ClientSerializeS += secs(c.Serialize)
		r.ClientDeserializeS += secs(c.Deserialize)
		r.QueueWaitS += secs(res.QueueWait)
		r.ClientToServerS += secs(res.Receive)
		r.ServerImportS += secs(res.Import)
		r.ExecuteS += secs(res.Execute)
		r.ServerSerializeS += secs(res.Serialize)
		r.ServerToClientS += secs(res.Send)
		r.AvgSM += res.Util.Fraction * secs(res.Span)
		weight[c.Phase] += secs(res.Span)
		if res.Util.Source != "" {
			r.UtilSrc = res.Util.Source
		}
		switch c.Phase {
		case partition.Prefill:
			r.Tokens += batch * plan.Config.Workload.PromptTokens()
		case partition.Decode:
			r.Tokens += batch
		}
	}
	out := make([]Row, 0, len(order))
	for _, ph := range order {
		r := rows[ph]
		if w := weight[ph]; w > 0 {
			r.AvgSM /= w
		}
		r.OverheadS = r.LatencyS - r.ExecuteS - float64(r.NetBytes)/link.BytesPerS
		if r.LatencyS > 0 {
			r.TokensPS = float64(r.Tokens) / r.LatencyS
		}
		out = append(out, *r)
	}
	return out, bad
}

// Aggregate is one mode's phase over the recorded trials.
type Aggregate struct {
	Mode       partition.RemoteMode `json:"mode"`
	Phase      partition.Phase      `json:"phase"`
	Trials     int                  `json:"trials"`
	Requests   int                  `json:"requests_per_trial"`
	NetBytes   int64                `json:"net_bytes_per_trial"`
	ModelBytes int64                `json:"model_bytes_per_trial"`
	LatencyS   stats.Summary        `json:"latency_s"`
	WallS      stats.Summary        `json:"wall_s"`
	TokensPS   stats.Summary        `json:"tokens_per_s"`
	AvgSM      stats.Summary        `json:"avg_sm"`
	UtilSource string               `json:"util_source"`
	Breakdown  Breakdown            `json:"breakdown_mean"`
}

// Aggregates summarize the rows per mode and phase, in row order.
func (t *Trials) Aggregates() []Aggregate {
	type key struct {
		m partition.RemoteMode
		p partition.Phase
	}
	var order []key
	groups := map[key][]Row{}
	for _, r := range t.Rows {
		k := key{r.Mode, r.Phase}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var out []Aggregate
	for _, k := range order {
		rs := groups[k]
		col := func(f func(Row) float64) []float64 {
			v := make([]float64, len(rs))
			for i, r := range rs {
				v[i] = f(r)
			}
			return v
		}
		// Breakdown components are differences (overhead can be negative):
		// their mean is Summarize's on the linear scale.
		mean := func(f func(Row) float64) float64 { return stats.Summarize(col(f), stats.Linear).Mean }
		a := Aggregate{Mode: k.m, Phase: k.p, Trials: len(rs), Requests: rs[0].Requests, NetBytes: rs[0].NetBytes, ModelBytes: rs[0].WantBytes,
			LatencyS: stats.Summarize(col(func(r Row) float64 { return r.LatencyS }), stats.Positive),
			WallS:    stats.Summarize(col(func(r Row) float64 { return r.WallS }), stats.Positive),
			TokensPS: stats.Summarize(col(func(r Row) float64 { return r.TokensPS }), stats.Positive),
			AvgSM:    stats.Summarize(col(func(r Row) float64 { return r.AvgSM }), stats.Fraction), UtilSource: rs[0].UtilSrc}
		a.Breakdown = Breakdown{
			ClientSerializeS:   mean(func(r Row) float64 { return r.ClientSerializeS }),
			ClientToServerS:    mean(func(r Row) float64 { return r.ClientToServerS }),
			QueueWaitS:         mean(func(r Row) float64 { return r.QueueWaitS }),
			ServerImportS:      mean(func(r Row) float64 { return r.ServerImportS }),
			ExecuteS:           mean(func(r Row) float64 { return r.ExecuteS }),
			ServerSerializeS:   mean(func(r Row) float64 { return r.ServerSerializeS }),
			ServerToClientS:    mean(func(r Row) float64 { return r.ServerToClientS }),
			ClientDeserializeS: mean(func(r Row) float64 { return r.ClientDeserializeS }),
			OverheadS:          mean(func(r Row) float64 { return r.OverheadS }),
		}
		out = append(out, a)
	}
	return out
}
