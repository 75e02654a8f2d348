package loopback

import (
	"context"
	"fmt"
	"time"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote"
	"github.com/partbench/partbench/remote/server"
	"github.com/partbench/partbench/topology"
)

// OverheadConfig is the config whose stateful decode steps time the
// per-request overhead: the tiny model, 16 B of token ids each way.
const OverheadConfig = "test/single-tiny"

// MeasureRequestOverhead times stateful decode requests of OverheadConfig
// against a server in this process over loopback (transport "grpc" or
// "tcp"), the CPU engine executing, until it has samples of them; each
// sample is what sim.RemoteOptions.RequestOverheadS prices: the client's
// wall time less the engine's execute time, less the payload's transfer
// and one link latency each way at the loopback link's figures
// (topology.ClientLink "loopback"). Sessions are opened and closed as the
// generation length requires.
func MeasureRequestOverhead(ctx context.Context, transport string, samples int) ([]float64, error) {
	if samples < 1 {
		return nil, fmt.Errorf("request overhead: samples must be ≥ 1 (got %d)", samples)
	}
	plan, err := partition.LoadPlan(OverheadConfig)
	if err != nil {
		return nil, err
	}
	link, err := topology.ParseClientLink("link", "loopback")
	if err != nil {
		return nil, err
	}
	if transport != "grpc" && transport != "tcp" {
		return nil, fmt.Errorf("request overhead: transport %q: must be grpc or tcp", transport)
	}
	srv, err := server.StartInProcess(server.ServerConfig{}, server.NewCPUEngine())
	if err != nil {
		return nil, err
	}
	defer srv.Close(5 * time.Second)
	addr, err := srv.Addr(transport)
	if err != nil {
		return nil, err
	}
	c, err := remote.Dial(ctx, remote.ClientConfig{Addr: addr, Transport: transport, CallTimeout: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	prompt := remote.SeededPrompt(plan)
	out := make([]float64, 0, samples)
	for len(out) < samples {
		s, err := c.Open(ctx, plan.Config, partition.RemoteStateful, partition.RemoteOptions{})
		if err != nil {
			return nil, fmt.Errorf("request overhead: %w", err)
		}
		g, err := remote.Generate(ctx, s, nil, prompt)
		if cerr := s.Close(ctx); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("request overhead: %w", err)
		}
		for _, call := range g.Calls {
			if call.Phase != partition.Decode || len(out) == samples {
				continue
			}
			r := call.Result
			bytes := float64(r.Bytes.PayloadUp + r.Bytes.PayloadDown)
			out = append(out, (r.Wall-r.Execute).Seconds()-bytes/link.BytesPerS-2*link.LatencyS)
		}
	}
	return out, nil
}
