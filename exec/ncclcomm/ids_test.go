package ncclcomm

import (
	"context"
	"encoding/json"
	"github.com/partbench/partbench/model"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/localcomm"
	"github.com/partbench/partbench/partition"
)

func loadPlan(t *testing.T, name, dtype string) *partition.Plan {
	t.Helper()
	cfg, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	if dtype != "" {
		cfg.Model.DType = dtype
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

var testConfigs = []string{"test/single-tiny", "test/tp2pp2-tiny", "test/tp4-tiny", "test/pp4-tiny",
	"test/layermap-tiny", "test/layerwise16-tiny", "test/tp8pp2-tiny"}

// PlanGroups names exactly the groups exec.NewGroups creates, over all
// ranks, for every test partitioning.
func TestPlanGroupsAreNewGroups(t *testing.T) {
	for _, name := range testConfigs {
		plan := loadPlan(t, name, "")
		want := map[string]bool{}
		comms := localcomm.Comms(plan.Size())
		for r := range plan.Ranks {
			groups, err := pexec.NewGroups(context.Background(), comms[r], plan, r)
			if err != nil {
				t.Fatal(err)
			}
			for k, g := range groups {
				want[k] = true
				if got := PlanGroups(plan)[k]; !slices.Equal(got, g.Ranks()) {
					t.Errorf("%s: group %s: PlanGroups has ranks %v, NewGroups %v", name, k, got, g.Ranks())
				}
			}
		}
		got := slices.Sorted(maps.Keys(PlanGroups(plan)))
		if w := slices.Sorted(maps.Keys(want)); !slices.Equal(got, w) {
			t.Errorf("%s: PlanGroups %v, NewGroups %v", name, got, w)
		}
	}
	// By hand: TP=2 × PP=2 has one group per stage; TP=4 one; PP=4 none.
	for name, want := range map[string][]string{
		"test/tp2pp2-tiny": {"0,1", "2,3"}, "test/tp4-tiny": {"0,1,2,3"}, "test/pp4-tiny": {},
	} {
		if got := slices.Sorted(maps.Keys(PlanGroups(loadPlan(t, name, "")))); !slices.Equal(got, want) {
			t.Errorf("%s: groups %v, want %v", name, got, want)
		}
	}
}

// broadcastFunc is a Broadcaster made of a function.
type broadcastFunc func(ctx context.Context, payload []byte) ([]byte, error)

func (f broadcastFunc) Broadcast(ctx context.Context, p []byte) ([]byte, error) { return f(ctx, p) }

// A rank whose NCCL differs from rank 0's refuses the ids, naming both.
func TestShareIDsVersionMismatch(t *testing.T) {
	id := make([]byte, 128)
	sent, err := json.Marshal(&idSet{Version: "2.21.5", World: id, Barrier: id, Groups: map[string][]byte{"0,1": id}})
	if err != nil {
		t.Fatal(err)
	}
	b := broadcastFunc(func(context.Context, []byte) ([]byte, error) { return sent, nil })
	groups := map[string][]int{"0,1": {0, 1}}
	if _, err := shareIDs(context.Background(), b, 1, nil, "2.21.5", groups); err != nil {
		t.Fatalf("same version: %v", err)
	}
	_, err = shareIDs(context.Background(), b, 1, nil, "2.18.1", groups)
	if err == nil || !strings.Contains(err.Error(), "rank 0 runs NCCL 2.21.5, this rank 2.18.1") {
		t.Errorf("version mismatch: %v", err)
	}
	_, err = shareIDs(context.Background(), b, 1, nil, "2.21.5", map[string][]int{"2,3": {2, 3}})
	if err == nil || !strings.Contains(err.Error(), "no id for group 2,3") {
		t.Errorf("missing group id: %v", err)
	}
}

// A Send is fused with the Recv after it exactly where the Program has
// nothing between them. tp2pp2-tiny (2 micro-batches of 2 sequences,
// hidden 64, prompt 20 in one chunk): rank 0 (stage 0) sends x after each
// micro-batch's pass; in prefill micro-batch 0's send is followed by
// micro-batch 1's input op, micro-batch 1's by decode's first op, the
// tokens' Recv; in decode each send is followed by the next tokens' Recv.
// Rank 2 (stage 1) sends tokens, each followed by the next x Recv.
func TestFusedSends(t *testing.T) {
	plan := loadPlan(t, "test/tp2pp2-tiny", "fp16")
	const pre, dec = 2 * 20 * 64, 2 * 64 // rows × hidden of a micro-batch's pass
	want := map[int]map[sendKey]bool{
		0: {{model.X, 1, 2, pre}: true, {model.X, 0, 2, dec}: true, {model.X, 1, 2, dec}: true},
		1: {{model.X, 1, 3, pre}: true, {model.X, 0, 3, dec}: true, {model.X, 1, 3, dec}: true},
		2: {{model.Tokens, 0, 0, 2}: true, {model.Tokens, 1, 0, 2}: true},
		3: {{model.Tokens, 0, 1, 2}: true, {model.Tokens, 1, 1, 2}: true},
	}
	for r, w := range want {
		if got := fusedSends(plan, r); !maps.Equal(got, w) {
			t.Errorf("rank %d: fused %v, want %v", r, got, w)
		}
	}
}
