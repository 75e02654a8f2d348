package exec_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/partbench/partbench/model"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/partbench/partbench/configs"
	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/exec/localcomm"
	"github.com/partbench/partbench/partition"
)

func loadPlan(t *testing.T, name string) *partition.Plan {
	t.Helper()
	cfg, err := configs.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func TestInterpGroupKeyAndPast(t *testing.T) {
	if got := pexec.GroupKey([]int{8, 9, 10}); got != "8,9,10" {
		t.Fatalf("GroupKey = %q", got)
	}
	if pexec.GatheredBuffer(model.Logits).String() != "logits.gathered" {
		t.Fatal("gathered buffer name")
	}
	// single-tiny with 8-token chunks: prompt 20 in chunks at 0, 8, 16;
	// decode step 1 (0-based) sees the prompt and one generated token: 21.
	cfg, _ := configs.Load("test/single-tiny")
	cfg.Parallel.PrefillChunk = 8
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pre := pexec.Past(plan, partition.Prefill, 0)
	if got := pre(&partition.Op{Chunk: 2}); got != 16 {
		t.Fatalf("prefill chunk 2 past %d, want 16", got)
	}
	if got := pexec.Past(plan, partition.Decode, 1)(&partition.Op{Past: 22}); got != 21 {
		t.Fatalf("decode step 1 past %d, want 21", got)
	}
}

// recordingComm records the groups a rank creates.
type recordingComm struct {
	*localcomm.Comm
	groups [][]int
}

func (r *recordingComm) NewGroup(ctx context.Context, ranks []int) (pexec.Group, error) {
	r.groups = append(r.groups, slices.Clone(ranks))
	return r.Comm.NewGroup(ctx, ranks)
}

func TestInterpNewGroups(t *testing.T) {
	for _, tc := range []struct {
		name string
		rank int
		want [][]int
	}{
		{"test/tp2pp2-tiny", 2, [][]int{{2, 3}}}, // stage 1's TP group, once
		{"test/tp8pp2-tiny", 9, [][]int{{8, 9, 10, 11, 12, 13, 14, 15}}},
		{"test/pp4-tiny", 1, nil}, // no collectives
	} {
		plan := loadPlan(t, tc.name)
		rc := &recordingComm{Comm: localcomm.New(plan.Size())[tc.rank]}
		groups, err := pexec.NewGroups(context.Background(), rc, plan, tc.rank)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(rc.groups) != fmt.Sprint(tc.want) || len(groups) != len(tc.want) {
			t.Fatalf("%s rank %d created %v (%d in the map), want %v", tc.name, tc.rank, rc.groups, len(groups), tc.want)
		}
		for _, g := range tc.want {
			if groups[pexec.GroupKey(g)] == nil {
				t.Fatalf("no group under key %q", pexec.GroupKey(g))
			}
		}
	}
}

// spyCompute records Buffer requests and can fail one op.
type spyCompute struct {
	*cpu.Compute
	mu     sync.Mutex
	bufs   []string
	failOn string
}

var errInjected = errors.New("injected")

func (s *spyCompute) Buffer(name model.Buf, mb, elems int) (pexec.Buffer, error) {
	s.mu.Lock()
	s.bufs = append(s.bufs, fmt.Sprintf("%s/%d/%d", name, mb, elems))
	s.mu.Unlock()
	return s.Compute.Buffer(name, mb, elems)
}

func (s *spyCompute) Exec(ctx context.Context, op *partition.Op, past int) error {
	if op.Name == s.failOn {
		return errInjected
	}
	return s.Compute.Exec(ctx, op, past)
}

// runAll runs one phase of plan on every rank with localcomm.
func runAll(t *testing.T, plan *partition.Plan, computes []pexec.Compute) []error {
	t.Helper()
	comms := localcomm.New(plan.Size())
	errs := make([]error, plan.Size())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for r := range comms {
		wg.Go(func() {
			groups, err := pexec.NewGroups(ctx, comms[r], plan, r)
			if err == nil {
				err = pexec.RunProgram(ctx, plan.Program(r, partition.Prefill), computes[r], comms[r], groups, pexec.Past(plan, partition.Prefill, 0))
			}
			if errs[r] = err; err != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	return errs
}

// TestInterpBuffers: on tp4-tiny (4 sequences, padded vocab 96, hidden 64,
// prompt 20) rank 0 all-reduces "y" of 80·64 elements, and the logits
// all-gather sends the first 4·96/4 = 96 elements of "logits" and receives
// 384 into "logits.gathered".
func TestInterpBuffers(t *testing.T) {
	plan := loadPlan(t, "test/tp4-tiny")
	computes := make([]pexec.Compute, 4)
	var spy *spyCompute
	for r := range computes {
		c, err := cpu.New(plan, r)
		if err != nil {
			t.Fatal(err)
		}
		computes[r] = c
		if r == 0 {
			spy = &spyCompute{Compute: c}
			computes[r] = spy
		}
	}
	if err := errors.Join(runAll(t, plan, computes)...); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"y/0/5120", "logits/0/96", "logits.gathered/0/384"} {
		if !slices.Contains(spy.bufs, want) {
			t.Fatalf("rank 0 never asked for %s; asked %v", want, spy.bufs)
		}
	}
}

func TestInterpErrorsNameRankOpMicrobatch(t *testing.T) {
	plan := loadPlan(t, "test/tp2pp2-tiny")
	computes := make([]pexec.Compute, 4)
	for r := range computes {
		c, err := cpu.New(plan, r)
		if err != nil {
			t.Fatal(err)
		}
		computes[r] = c
	}
	computes[2] = &spyCompute{Compute: computes[2].(*cpu.Compute), failOn: "L05.attn"}
	errs := runAll(t, plan, computes)
	if !errors.Is(errs[2], errInjected) {
		t.Fatalf("rank 2: %v", errs[2])
	}
	if want := "rank 2 prefill op L05.attn (micro-batch 0, chunk 0): injected"; errs[2].Error() != want {
		t.Fatalf("error %q, want %q", errs[2], want)
	}
	// The failure cancels the others instead of hanging them.
	for r, err := range errs {
		if r != 2 && err != nil && !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "injected") {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}
