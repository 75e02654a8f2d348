package nccl

import (
	"context"
	"fmt"

	"github.com/partbench/partbench/commcount"
)

// Config is what partbench sets through ncclCommInitRankConfig. Zero values
// leave the library's default.
type Config struct {
	// NonBlocking makes calls return before they complete (ncclInProgress):
	// CommInitRank waits for the communicator itself, bounded by
	// WithContext; collectives and GroupEnd need (*Comm).Wait.
	NonBlocking bool
	// CGAClusterSize, MinCTAs, MaxCTAs and NetName need NCCL ≥ 2.17.
	CGAClusterSize int
	MinCTAs        int
	MaxCTAs        int
	NetName        string
}

func (c Config) needs217() bool {
	return c.CGAClusterSize != 0 || c.MinCTAs != 0 || c.MaxCTAs != 0 || c.NetName != ""
}

// Option adjusts CommInitRank.
type Option func(*commOptions)

type commOptions struct {
	ranks   []int
	counter *commcount.Counter
	config  *Config
	setup   func() error
	ctx     context.Context
}

// WithGlobalRanks names the global rank of each communicator position
// (ranks[p] is the rank at position p), so counters record messages to
// global ranks. Without it, positions are the global ranks.
func WithGlobalRanks(ranks []int) Option {
	return func(o *commOptions) { o.ranks = append([]int(nil), ranks...) }
}

// WithCounter counts this communicator's calls in c (shared by all of a
// rank's communicators). Without it, the Comm has a counter of its own.
func WithCounter(c *commcount.Counter) Option { return func(o *commOptions) { o.counter = c } }

// WithConfig creates the communicator with ncclCommInitRankConfig, which
// must be in the library (NCCL ≥ 2.14).
func WithConfig(c Config) Option { return func(o *commOptions) { o.config = &c } }

// WithThreadSetup runs fn on the OS thread that then calls
// ncclCommInitRank, before it; that is where the rank's CUDA device must be
// made current, since NCCL binds the communicator to the calling thread's
// device.
func WithThreadSetup(fn func() error) Option { return func(o *commOptions) { o.setup = fn } }

// WithContext bounds the wait for a non-blocking communicator: when ctx is
// done first, the communicator is aborted and CommInitRank fails. A
// blocking ncclCommInitRank cannot be interrupted from Go.
func WithContext(ctx context.Context) Option { return func(o *commOptions) { o.ctx = ctx } }

func (o *commOptions) check(nranks, rank int) error {
	if nranks < 1 || rank < 0 || rank >= nranks {
		return fmt.Errorf("nccl: rank %d of %d ranks is out of range", rank, nranks)
	}
	if o.ranks == nil {
		o.ranks = make([]int, nranks)
		for i := range o.ranks {
			o.ranks[i] = i
		}
	}
	if len(o.ranks) != nranks {
		return fmt.Errorf("nccl: %d global ranks given for a communicator of %d", len(o.ranks), nranks)
	}
	seen := map[int]bool{}
	for p, g := range o.ranks {
		if g < 0 || seen[g] {
			return fmt.Errorf("nccl: global rank %d at position %d is negative or repeated", g, p)
		}
		seen[g] = true
	}
	if o.counter == nil {
		o.counter = commcount.New()
	}
	if o.ctx == nil {
		o.ctx = context.Background()
	}
	return nil
}
