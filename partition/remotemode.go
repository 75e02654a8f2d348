package partition

import (
	"fmt"
	"strings"
)

// RemoteMode is how a client without the model's device drives a server
// that has it (seeds 000 and 001). Every mode computes the same function;
// they differ in which state crosses the network on each request.
type RemoteMode string

const (
	// RemoteLocal runs in the client's own process: no network bytes.
	RemoteLocal RemoteMode = "local"
	// RemoteNaive is a stateless server: each request carries every weight
	// and the KV cache up to the step; the reply carries the updated KV cache
	// and the outputs.
	RemoteNaive RemoteMode = "naive"
	// RemoteKV keeps the weights on the server (sent once, at session open);
	// the KV cache still travels both ways on every request.
	RemoteKV RemoteMode = "kv"
	// RemoteStateful keeps weights and KV cache in a server session: token
	// ids go, sampled tokens (or logits) come back.
	RemoteStateful RemoteMode = "stateful"
)

// RemoteModes lists the modes in report order (the mode table's order).
var RemoteModes = remoteModeNames()

// RemoteWeightsRule says where a remote mode's weights are on each request.
type RemoteWeightsRule int

const (
	// WeightsInProcess: the client's own process holds them (no server).
	WeightsInProcess RemoteWeightsRule = iota
	// WeightsEachRequest: every request carries every weight up; the
	// server keeps none between requests.
	WeightsEachRequest
	// WeightsAtOpen: the client uploads every weight once, after opening
	// the session (a load request); the server keeps them for the session.
	WeightsAtOpen
	// WeightsOnServer: the server makes or loads its own weights; none
	// travel.
	WeightsOnServer
)

// RemoteKVRule says where a remote mode's KV cache is between requests.
type RemoteKVRule int

const (
	// KVInProcess: the client's own process keeps it (no server).
	KVInProcess RemoteKVRule = iota
	// KVTravels: each request carries the cache of its past tokens up and
	// its reply the cache of past + new tokens down; the server keeps none.
	KVTravels
	// KVOnServer: the server session keeps it; only token ids go up and
	// sampled tokens (or logits) come down.
	KVOnServer
)

// RemoteModeRow is everything a remote mode means, in one place: its name
// and wire enum, what travels on each request (the payload rule that
// RemotePayloadOf and RemoteOpenBytes apply), what the server keeps (the
// state its engines hold), and how sim prices it (Served: a request costs
// its payload over the link, one link latency each way and the request
// overhead, besides the compute; WeightsAtOpen adds one upload at open).
// Every tokens-in / outputs-out payload is common to all served modes.
type RemoteModeRow struct {
	Mode RemoteMode
	// Wire is the mode's number in remotepb.Mode (remote/remotepb/remote.proto).
	Wire int32
	// Served runs the mode on a server over the link; false runs it in the
	// client's own process (no payload, no link terms).
	Served  bool
	Weights RemoteWeightsRule
	KV      RemoteKVRule
}

// remoteModeTable lists the modes in report order. A new mode is a row
// here and a value of remotepb.Mode; an engine learns a new state rule only
// when the row's combination of Weights and KV is new.
var remoteModeTable = []RemoteModeRow{
	{Mode: RemoteLocal, Wire: 1, Served: false, Weights: WeightsInProcess, KV: KVInProcess},
	{Mode: RemoteNaive, Wire: 2, Served: true, Weights: WeightsEachRequest, KV: KVTravels},
	{Mode: RemoteKV, Wire: 3, Served: true, Weights: WeightsAtOpen, KV: KVTravels},
	{Mode: RemoteStateful, Wire: 4, Served: true, Weights: WeightsOnServer, KV: KVOnServer},
}

// RemoteModeRows returns a copy of the mode table, in report order.
func RemoteModeRows() []RemoteModeRow { return append([]RemoteModeRow(nil), remoteModeTable...) }

func remoteModeNames() []RemoteMode {
	out := make([]RemoteMode, len(remoteModeTable))
	for i, r := range remoteModeTable {
		out[i] = r.Mode
	}
	return out
}

// Row is the mode's row of the table; ok is false for a name not in it.
func (m RemoteMode) Row() (row RemoteModeRow, ok bool) {
	for _, r := range remoteModeTable {
		if r.Mode == m {
			return r, true
		}
	}
	return RemoteModeRow{Mode: m}, false
}

// row is Row without the flag, for modes already checked.
func (m RemoteMode) row() RemoteModeRow { r, _ := m.Row(); return r }

// Served says whether the mode runs on a server (every mode but local).
func (m RemoteMode) Served() bool { return m.row().Served }

// RemoteModeOfWire is the mode whose Wire is n.
func RemoteModeOfWire(n int32) (RemoteModeRow, bool) {
	for _, r := range remoteModeTable {
		if r.Wire == n {
			return r, true
		}
	}
	return RemoteModeRow{}, false
}

// ShipsWeightsEachRequest: every request carries every weight up.
func (r RemoteModeRow) ShipsWeightsEachRequest() bool { return r.Weights == WeightsEachRequest }

// ShipsWeightsAtOpen: the weights are uploaded once, at session open.
func (r RemoteModeRow) ShipsWeightsAtOpen() bool { return r.Weights == WeightsAtOpen }

// ShipsKV: the KV cache travels up and down on every request.
func (r RemoteModeRow) ShipsKV() bool { return r.KV == KVTravels }

// KeepsWeights: the session holds weights between requests (loaded at open
// or made by the server), so a step before they are there is refused.
func (r RemoteModeRow) KeepsWeights() bool {
	return r.Weights == WeightsAtOpen || r.Weights == WeightsOnServer || r.Weights == WeightsInProcess
}

// KeepsKV: the session holds the KV cache between requests, so decode steps
// must come in order.
func (r RemoteModeRow) KeepsKV() bool { return r.KV == KVOnServer || r.KV == KVInProcess }

func remoteModeList() string {
	names := make([]string, len(remoteModeTable))
	for i, r := range remoteModeTable {
		names[i] = string(r.Mode)
	}
	return strings.Join(names, ", ")
}

func unknownRemoteMode(s string) error {
	return fmt.Errorf("remote mode %q: must be one of %s", s, remoteModeList())
}

// RemoteUnitBytes are a plan's payload sizes per unit, from partition's own
// payload of the plan's prefill (RemoteBytesOf divided by its tokens and
// sequences): every weight, the KV cache of one token (all layers), one
// token id, and one sequence's output (a sampled token or its logits).
type RemoteUnitBytes struct {
	Weights, KVPerToken, TokenID, OutputPerSample int64
}

// RemoteUnitBytes reads the unit sizes from the payload of a prefill
// request of a mode that ships weights and KV cache with it (naive).
func (p *Plan) RemoteUnitBytes(opts RemoteOptions) (RemoteUnitBytes, error) {
	var every RemoteMode
	for _, r := range remoteModeTable {
		if r.ShipsWeightsEachRequest() && r.ShipsKV() {
			every = r.Mode
			break
		}
	}
	b, err := p.RemoteBytesOf(every, RemoteRequest{Phase: Prefill}, opts)
	if err != nil {
		return RemoteUnitBytes{}, err
	}
	w := p.Config.Workload
	tokens := int64(w.Batch) * int64(w.PromptTokens())
	return RemoteUnitBytes{Weights: b.UpWeights, KVPerToken: b.DownKV / tokens, TokenID: b.UpTokens / tokens,
		OutputPerSample: b.DownOutputs / int64(w.Batch)}, nil
}

// IterationBytes is the payload of one request of the row's mode that
// carries tokens new tokens, past cached tokens (Σ over its sequences) and
// samples sequences that produce an output, as RemotePayloadOf's rule:
// token ids up and outputs down when served; every weight up when the mode
// ships them each request; the KV cache of the past tokens up and of past +
// new tokens down when it ships KV.
func (r RemoteModeRow) IterationBytes(u RemoteUnitBytes, past, tokens, samples int64) (up, down int64) {
	if !r.Served {
		return 0, 0
	}
	up, down = tokens*u.TokenID, samples*u.OutputPerSample
	if r.ShipsWeightsEachRequest() {
		up += u.Weights
	}
	if r.ShipsKV() {
		up += past * u.KVPerToken
		down += (past + tokens) * u.KVPerToken
	}
	return up, down
}
