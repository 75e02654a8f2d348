package compare

import (
	"fmt"
	"strings"
	"time"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/hoststat"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/sim"
)

// RunSchema names the JSON layout of a measured run (docs/json-schema.md).
const RunSchema = "partbench.run/v1"

// RunDoc is everything a measured run produced, enough to reproduce it.
type RunDoc struct {
	Schema   string   `json:"schema"`
	Version  string   `json:"partbench_version"`
	Backend  string   `json:"backend"`
	Launcher string   `json:"launcher"`
	Hosts    []string `json:"hosts"`
	// Devices lists each distinct device and data plane the ranks used.
	Devices     []string          `json:"devices"`
	StartedAt   string            `json:"started_at"`
	ElapsedS    float64           `json:"elapsed_s"`
	Config      *configs.Config   `json:"config"`
	ConfigHash  string            `json:"config_hash"`
	Tolerance   float64           `json:"tolerance"`
	Measurement *exec.Measurement `json:"measurement"`
	Estimate    *sim.Estimate     `json:"estimate"`
	Comparison  []Row             `json:"comparison"`
	Problems    []string          `json:"problems"`
	Notes       []string          `json:"notes"`

	// OpCheck is measured against modeled time per phase and op kind
	// (opcheck.go).
	OpCheck []OpCheckRow `json:"op_check,omitempty"`
	// Memory is each rank's memory itemized against the model's (memory.go).
	Memory []RankMemory `json:"memory,omitempty"`
	// HostState is each host's load and CPU time over the measured
	// iterations, from its lowest rank (absent where no rank could read it).
	HostState []HostState `json:"host_state,omitempty"`
}

// HostState is one host's state over a run's measured iterations.
type HostState struct {
	Host string `json:"host"`
	hoststat.Window
}

// hostStates are the hosts' states, one per host from its lowest rank
// that recorded one, and the notes stating them.
func hostStates(results []exec.RankResult) ([]HostState, []string) {
	var out []HostState
	var notes []string
	seen := map[string]bool{}
	for _, res := range results {
		if res.HostState == nil || seen[res.Host] {
			continue
		}
		seen[res.Host] = true
		out = append(out, HostState{Host: res.Host, Window: *res.HostState})
		notes = append(notes, fmt.Sprintf("host %s over the measured iterations: %s", res.Host, res.HostState))
		if res.HostState.Stolen() {
			notes = append(notes, fmt.Sprintf("host %s: the hypervisor gave %.1f %% of its CPUs' time to other guests during the measured iterations; the measured times include the waits, the model does not", res.Host, 100*res.HostState.StealFraction))
		}
	}
	return out, notes
}

// Run is what rank 0 holds once every rank has reported.
type Run struct {
	// Plan is the plan every rank ran (built once, by the caller).
	Plan *partition.Plan
	// Backend and Launcher name the compute backend and the launcher.
	Backend, Launcher string
	// Version is partbench's, written into the document.
	Version string
	// Results are every rank's measurements (index = rank).
	Results []exec.RankResult
	// Tolerance is the relative error above which a timed row is flagged.
	Tolerance float64
	// Started is when the run began; the document's elapsed time ends now.
	Started time.Time
	// Collectives are the collective model's options for the estimate.
	Collectives sim.CollectiveOptions
	// EveryRank simulates every rank, not one per stage (a trace draws each).
	EveryRank bool
	// Unbound says the ranks were left to the scheduler (`--bind-to none`):
	// the estimate counts shared cores host-wide (sim.Options.Unbound).
	Unbound bool
}

// NewRunDoc aggregates the ranks' results and holds them against the
// estimate of the same Plan.
func NewRunDoc(r Run) (*RunDoc, error) {
	plan, cfg := r.Plan, r.Plan.Config
	est, err := sim.EstimatePlan(plan, sim.Options{Collectives: r.Collectives, EveryRank: r.EveryRank, Unbound: r.Unbound})
	if err != nil {
		return nil, err
	}
	m, err := exec.Aggregate(r.Results, cfg.Workload.Batch, cfg.Run.Warmup)
	if err != nil {
		return nil, err
	}
	rows, problems := Compare(m, est, plan, r.Tolerance)
	seen := map[string]bool{}
	var hostList, devices []string
	for _, res := range r.Results {
		if !seen["host:"+res.Host] {
			seen["host:"+res.Host] = true
			hostList = append(hostList, res.Host)
		}
		if d := res.Device + "; " + res.DataPlane; !seen["dev:"+d] {
			seen["dev:"+d] = true
			devices = append(devices, d)
		}
	}
	doc := &RunDoc{Schema: RunSchema, Version: r.Version, Backend: r.Backend, Launcher: r.Launcher, Hosts: hostList, Devices: devices,
		StartedAt: r.Started.UTC().Format(time.RFC3339), ElapsedS: time.Since(r.Started).Seconds(), Config: cfg, ConfigHash: cfg.Hash(),
		Tolerance: r.Tolerance, Measurement: m, Estimate: est, Comparison: rows, Problems: problems, OpCheck: OpCheck(m, est),
		Memory: ItemizeRunMemory(r.Plan, r.Results)}
	var hostNotes []string
	doc.HostState, hostNotes = hostStates(r.Results)
	if m.TimeBase.OneStart { // how the iterations were timed (exec.TimeBase)
		doc.Notes = append(doc.Notes, m.TimeBase.Note)
	}
	if n := ReplicaSpreadNote(m, est, plan.DP); n != "" {
		doc.Notes = append(doc.Notes, n)
	}
	if n := HostWaitNote(est, plan); n != "" {
		doc.Notes = append(doc.Notes, n)
	}
	doc.Notes = append(doc.Notes, hostNotes...)
	doc.Notes = append(doc.Notes, gcNotes(r.Results)...)
	uncalibratedCPU := r.Backend == "cpu" && !strings.HasPrefix(est.Hardware, "cpu")
	doc.Notes = append(doc.Notes, linkProbeNotes(r.Results, doc.OpCheck, sim.NewOpTable(cfg.Hardware.OpTimes), !uncalibratedCPU)...)
	if uncalibratedCPU {
		doc.Notes = append(doc.Notes, fmt.Sprintf("times are modeled for %s but measured on the CPU backend: their errors measure the hardware difference, not the model (use --calibration from 'partbench calibrate'); counts and bytes must match exactly", est.Hardware))
	}
	return doc, nil
}

// Strict is strict mode's verdict on a document: nil when no row is
// flagged, else an error naming the rows outside the tolerance.
func Strict(doc *RunDoc) error {
	if out := Outside(doc.Comparison); len(out) > 0 {
		return fmt.Errorf("outside ±%.0f %%: %s", 100*doc.Tolerance, strings.Join(out, ", "))
	}
	return nil
}

// DefaultTolerance is the relative error above which a timed metric is
// flagged, for run and for plots of saved results that carry none.
const DefaultTolerance = 0.15

// VerdictError is how a run ends when it did not pass: counted
// communication that differs from the Program (exit status 4, a bug,
// never noise), or with strict, a timed metric outside the tolerance (3).
type VerdictError struct {
	Code int
	Err  error
}

func (e *VerdictError) Error() string { return e.Err.Error() }
func (e *VerdictError) Unwrap() error { return e.Err }

// ExitCode is the process's exit status for this verdict.
func (e *VerdictError) ExitCode() int { return e.Code }

// Verdict is nil when doc's counts equal the Program's and (with strict)
// every timed metric is inside the tolerance; else a *VerdictError.
func Verdict(doc *RunDoc, strict bool) error {
	if err := Problems(doc.Problems); err != nil {
		return &VerdictError{Code: 4, Err: err}
	}
	if strict {
		if err := Strict(doc); err != nil {
			return &VerdictError{Code: 3, Err: fmt.Errorf("--strict: %w", err)}
		}
	}
	return nil
}

// ReplicaSpreadNote says, for a run with data-parallel replicas, how far
// the later replica's TTFT (the TTFT row: the last sequence's first token)
// sits above each replica's own, at their medians, and how the model e
// priced it: one replica's TTFT times the profile's replica spread, or one
// replica's alone. "" without replicas.
func ReplicaSpreadNote(m *exec.Measurement, e *sim.Estimate, dp int) string {
	if m.TTFTReplica == nil || m.TTFTReplica.P50 <= 0 {
		return ""
	}
	later, own := m.TTFT.P50, m.TTFTReplica.P50
	priced := "the model prices one replica (the profile has no replica spread at this placement), so the replicas' spread is no part of it"
	if one := e.Prefill.ReplicaTTFTS; one > 0 {
		priced = fmt.Sprintf("the model prices it as one replica's (%.4g ms) times the profile's replica spread (×%.3f)", one*1e3, e.Prefill.TTFTS/one)
	}
	return fmt.Sprintf("TTFT is the later of %d replicas each iteration: p50 %.4g ms, %+.1f %% against each replica's own (p50 %.4g ms, row ttft_replica); %s", dp, later*1e3, (later/own-1)*100, own*1e3, priced)
}

// HostWaitNote says how much of the modeled TTFT is the prefill's ops
// waiting for the host to queue them (the profile's host_op_s: an eager
// pass of ops shorter than that runs at the host's pace), where any is;
// "" otherwise.
func HostWaitNote(e *sim.Estimate, plan *partition.Plan) string {
	if e == nil || plan == nil || !(e.Prefill.HostWaitS > 0) || !(e.Prefill.TTFTS > 0) {
		return ""
	}
	return fmt.Sprintf("the model's prefill waits %.3f ms of its %.3f ms TTFT for the host to queue its ops (host_op_s %.2f µs an op, from the calibration; the most of any rank): ops shorter than that run at the host's pace",
		e.Prefill.HostWaitS*1e3, e.Prefill.TTFTS*1e3, plan.System.GPU.HostOpS*1e6)
}

// gcNotes is the run's note of its ranks' collector pace
// (exec.RankResult.GC): the lowest rank's, with how many ranks paced
// theirs (each by its own live heap); none where no rank did.
func gcNotes(results []exec.RankResult) []string {
	paced, first := 0, ""
	for _, res := range results {
		if res.GC == "" {
			continue
		}
		if paced++; first == "" {
			first = fmt.Sprintf("rank %d: %s", res.Rank, res.GC)
		}
	}
	if paced > 1 {
		first += fmt.Sprintf(" (%d ranks paced their collector, each by its own live heap)", paced)
	}
	if first == "" {
		return nil
	}
	return []string{first}
}
