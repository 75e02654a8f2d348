package sim

import (
	"testing"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/topology"
)

// An iteration shaped like the plan's own requests carries exactly the
// bytes RemoteBytesOf gives them, and costs what PriceRemote charges over
// the link: the prefill of the whole batch, and decode step s (past =
// prompt + s). Tolerance: float rounding.
func TestRemoteIterationMatchesPriceRemote(t *testing.T) {
	p := seedPlan(t, "test/single-tiny")
	link, err := topology.ParseClientLink("--remote-link", "25gbe")
	if err != nil {
		t.Fatal(err)
	}
	opts := RemoteOptions{Link: link, RequestOverheadS: 50e-6}
	w := p.Config.Workload
	prompt := w.PromptTokens()
	for _, mode := range partition.RemoteModes {
		m, err := NewRemoteIterationModel(p, mode, opts, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			req   partition.RemoteRequest
			q, pa int
		}{{partition.RemoteRequest{Phase: partition.Prefill}, prompt, 0}, {partition.RemoteRequest{Phase: partition.Decode, Step: 1}, 1, prompt + 1}} {
			var sh IterationShape
			for i := 0; i < w.Batch; i++ {
				sh.Add(tc.q, tc.pa, true)
			}
			want, err := p.RemoteBytesOf(mode, tc.req, partition.RemoteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			up, down := m.Bytes(sh)
			if up != want.Up() || down != want.Down() {
				t.Errorf("%s %s: %d up, %d down; RemoteBytesOf %d, %d", mode, tc.req.Phase, up, down, want.Up(), want.Down())
			}
			compute, err := m.inner.TimeS(sh)
			if err != nil {
				t.Fatal(err)
			}
			est, err := PriceRemote(p, RemoteCompute{PrefillS: compute, DecodeStepS: compute}, opts)
			if err != nil {
				t.Fatal(err)
			}
			me := est.Mode(mode)
			c := me.Prefill
			if tc.req.Phase == partition.Decode {
				// PriceRemote's representative step is the mean one; price step 1 as it does.
				c.TotalS = float64(want.Total())/link.BytesPerS + 2*link.LatencyS + opts.RequestOverheadS + compute
				if mode == partition.RemoteLocal {
					c.TotalS = compute
				}
			}
			got, err := m.TimeS(sh)
			if err != nil {
				t.Fatal(err)
			}
			if relErr(got, c.TotalS) > 1e-12 {
				t.Errorf("%s %s: %.9g s, PriceRemote %.9g s", mode, tc.req.Phase, got, c.TotalS)
			}
		}
	}
}
