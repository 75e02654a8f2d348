package partition

import (
	"strings"
	"testing"
)

// TestRemoteModeTable checks the table's own consistency: names and wire
// numbers unique, RemoteModes in table order, every row parses, and the
// rules of a row agree with its Served flag.
func TestRemoteModeTable(t *testing.T) {
	rows := RemoteModeRows()
	if len(rows) != len(RemoteModes) {
		t.Fatalf("RemoteModes has %d modes, the table %d rows", len(RemoteModes), len(rows))
	}
	names, wires := map[RemoteMode]bool{}, map[int32]bool{}
	for i, r := range rows {
		if RemoteModes[i] != r.Mode {
			t.Errorf("RemoteModes[%d] = %s, table row %d is %s", i, RemoteModes[i], i, r.Mode)
		}
		if names[r.Mode] || wires[r.Wire] {
			t.Errorf("row %s (wire %d): name or wire number repeated", r.Mode, r.Wire)
		}
		names[r.Mode], wires[r.Wire] = true, true
		if r.Wire <= 0 {
			t.Errorf("row %s: wire %d; 0 is remotepb's MODE_UNSPECIFIED", r.Mode, r.Wire)
		}
		if m, err := ParseRemoteMode(string(r.Mode)); err != nil || m != r.Mode {
			t.Errorf("ParseRemoteMode(%q) = %q, %v", r.Mode, m, err)
		}
		if got, ok := r.Mode.Row(); !ok || got != r {
			t.Errorf("%s.Row() = %+v, %v; want %+v", r.Mode, got, ok, r)
		}
		if got, ok := RemoteModeOfWire(r.Wire); !ok || got != r {
			t.Errorf("RemoteModeOfWire(%d) = %+v, %v; want %+v", r.Wire, got, ok, r)
		}
		inProcess := r.Weights == WeightsInProcess || r.KV == KVInProcess
		if inProcess == r.Served {
			t.Errorf("row %s: served %v with weights rule %d and KV rule %d (in-process rules belong to unserved modes)", r.Mode, r.Served, r.Weights, r.KV)
		}
	}
	if _, ok := RemoteMode("remote").Row(); ok {
		t.Error(`RemoteMode("remote").Row() found a row`)
	}
	if _, ok := RemoteModeOfWire(0); ok {
		t.Error("RemoteModeOfWire(0) found a row; 0 is unspecified")
	}
	// The error lists the modes as it always has.
	_, err := ParseRemoteMode("remote")
	if want := `remote mode "remote": must be one of local, naive, kv, stateful`; err == nil || err.Error() != want {
		t.Errorf("ParseRemoteMode(remote) = %v, want %q", err, want)
	}
}

// TestRemoteModeRowsPayload holds each row's rules against the payload
// partition builds for it, on test/single-tiny's decode step 0 (numbers by
// hand in remote_test.go's comment): a row that ships weights each request
// adds 1,233,152 B up; one that ships KV adds 8,192 × 20 = 163,840 B up and
// 8,192 × 21 = 172,032 B down; a served row always adds 16 B of token ids
// up and 16 B of sampled tokens down; a row that ships weights at open
// uploads 1,233,152 B once.
func TestRemoteModeRowsPayload(t *testing.T) {
	p := singlePlan(t, "test/single-tiny")
	const weights, kvUp, kvDown, ids, sampled = 1_233_152, 163_840, 172_032, 16, 16
	for _, r := range RemoteModeRows() {
		var want RemoteBytes
		var open int64
		if r.Served {
			want.UpTokens, want.DownOutputs = ids, sampled
		}
		if r.ShipsWeightsEachRequest() {
			want.UpWeights = weights
		}
		if r.ShipsKV() {
			want.UpKV, want.DownKV = kvUp, kvDown
		}
		if r.ShipsWeightsAtOpen() {
			open = weights
		}
		got, err := p.RemoteBytesOf(r.Mode, RemoteRequest{Phase: Decode, Step: 0}, RemoteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s decode step 0: %+v, the row's rule gives %+v", r.Mode, got, want)
		}
		gotOpen, err := p.RemoteOpenBytes(r.Mode)
		if err != nil {
			t.Fatal(err)
		}
		if gotOpen != open {
			t.Errorf("%s open: %d B, the row's rule gives %d B", r.Mode, gotOpen, open)
		}
	}
	if _, err := p.RemoteBytesOf("remote", RemoteRequest{Phase: Prefill}, RemoteOptions{}); err == nil || !strings.Contains(err.Error(), "must be one of") {
		t.Errorf("unknown mode: %v", err)
	}
}

// TestRemoteIterationBytesMatchPayload holds the row's per-iteration rule
// (what sim prices serving iterations with) against RemotePayloadOf, the
// per-request rule, on every request of test/single-tiny, with sampled
// tokens and with logits: a request of the plan is an iteration of batch
// sequences, batch × q new tokens and batch × past cached ones.
func TestRemoteIterationBytesMatchPayload(t *testing.T) {
	p := singlePlan(t, "test/single-tiny")
	w := p.Config.Workload
	batch, prompt := int64(w.Batch), int64(w.PromptTokens())
	reqs := []RemoteRequest{{Phase: Prefill}}
	for s := 0; s < p.DecodeSteps(); s++ {
		reqs = append(reqs, RemoteRequest{Phase: Decode, Step: s})
	}
	for _, logits := range []bool{false, true} {
		opts := RemoteOptions{Logits: logits}
		u, err := p.RemoteUnitBytes(opts)
		if err != nil {
			t.Fatal(err)
		}
		// By hand (remote_test.go): 1,233,152 B of weights; KV of one
		// token 8 layers × 256 B = 2,048 B; 4 B ids; per sequence 4 B
		// sampled or 96 × 4 B = 384 B of logits.
		want := RemoteUnitBytes{Weights: 1_233_152, KVPerToken: 2_048, TokenID: 4, OutputPerSample: 4}
		if logits {
			want.OutputPerSample = 384
		}
		if u != want {
			t.Fatalf("logits %v: unit bytes %+v, want %+v", logits, u, want)
		}
		for _, r := range RemoteModeRows() {
			for _, req := range reqs {
				past, q := int64(0), prompt
				if req.Phase == Decode {
					past, q = prompt+int64(req.Step), 1
				}
				b, err := p.RemoteBytesOf(r.Mode, req, opts)
				if err != nil {
					t.Fatal(err)
				}
				up, down := r.IterationBytes(u, batch*past, batch*q, batch)
				if up != b.Up() || down != b.Down() {
					t.Errorf("%s %s step %d logits %v: iteration rule %d up %d down, payload %d up %d down",
						r.Mode, req.Phase, req.Step, logits, up, down, b.Up(), b.Down())
				}
			}
		}
	}
}
