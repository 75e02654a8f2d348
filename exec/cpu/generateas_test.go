package cpu_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/checkpoint/checkpointtest"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/backend"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/exec/localcomm"
)

// In one process GenerateAs is Generate: llama-tiny under TP 2 decodes
// transformers' greedy ids (reference.json). As rank 1 of a launched job
// whose rank 0 never comes, the join times out and the error names rank 1.
func TestGenerateAs(t *testing.T) {
	dir := checkpointtest.Dir(t, "llama-tiny")
	ref := checkpointtest.ReadReference(t, dir)
	cfg := hfConfig(t, dir, 2, 1, 1, nil)
	o := pexec.GenerateRankOptions{NewTokens: len(ref.GreedyIDs[0]), NewCompute: hfCompute(t, dir), NewComm: backend.TCPComm,
		Env: launch.Env{Size: 1, LocalSize: 1, Source: launch.SourceSingle}}
	res, err := pexec.GenerateAs(context.Background(), cfg, ref.PromptIDs, o, localcomm.Comms)
	if err != nil || res == nil || !reflect.DeepEqual(res.GreedyIDs, ref.GreedyIDs) {
		t.Fatalf("in process: %v, %+v, want greedy ids %v", err, res, ref.GreedyIDs)
	}
	o.Env = launch.Env{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Source: launch.SourceRankEnv, RendezvousAddr: "127.0.0.1:1"}
	o.JoinTimeout = 300 * time.Millisecond
	if _, err := pexec.GenerateAs(context.Background(), cfg, ref.PromptIDs, o, localcomm.Comms); err == nil || !strings.HasPrefix(err.Error(), "rank 1: ") {
		t.Errorf("rank 1 alone: %v, want an error naming rank 1", err)
	}
}
