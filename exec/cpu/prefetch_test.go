package cpu

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// prefetching is a Source with Prefetch (as checkpoint/shards.Source): it
// records the list it was given and what was asked after it, and serves
// the seeded model's tensors.
type prefetching struct {
	gen    model.Source
	listed []partition.TensorShard
	asked  int // Tensor calls after Prefetch
	err    error
}

func (p *prefetching) Prefetch(ts []partition.TensorShard) error {
	p.listed = slices.Clone(ts)
	return p.err
}

func (p *prefetching) Tensor(layer int, name string) (*model.Tensor, error) {
	if p.listed != nil {
		p.asked++
	}
	return p.gen.Tensor(layer, name)
}

// TestCheckpointPrefetchCalled: a rank whose Source can prefetch is given
// its whole list (plan.Tensors) once, before any tensor is asked for, and
// then asks for each listed tensor; a Prefetch error fails NewWith naming
// the rank.
func TestCheckpointPrefetchCalled(t *testing.T) {
	cfg, err := configs.Load("test/tp2pp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for rank := range plan.Ranks {
		src := &prefetching{gen: plan.Generator(rank)}
		c, err := NewWith(plan, rank, Options{Weights: func(model.Shard) (model.Source, error) { return src, nil }})
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		want := plan.Tensors(rank)
		if !slices.Equal(src.listed, want) || src.asked != len(want) {
			t.Fatalf("rank %d: prefetched %v then asked %d tensors, want %v then %d", rank, src.listed, src.asked, want, len(want))
		}
	}
	src := &prefetching{gen: plan.Generator(1), err: errors.New("reading 7 tensors of the rank: boom")}
	_, err = NewWith(plan, 1, Options{Weights: func(model.Shard) (model.Source, error) { return src, nil }})
	if err == nil || !strings.Contains(err.Error(), "rank 1") || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("Prefetch error: %v", err)
	}
}
