package serving

import (
	"context"
	"fmt"
	"time"

	"github.com/partbench/partbench/remote"
	pb "github.com/partbench/partbench/remote/remotepb"
	"github.com/partbench/partbench/remote/server"
)

// The load generator over partbench serve's own transports (gRPC or raw
// TCP): the same arrivals, concurrency and client-side timing as Load, with
// Generate calls instead of HTTP completions.

var _ server.Generator = (*EngineServer)(nil)

// RemoteTarget is a partbench serve that hosts a serving engine.
type RemoteTarget struct {
	Client *remote.GenerateClient
	// RequestTimeout fails a request that has not finished in this time.
	RequestTimeout time.Duration
}

// LoadRemote sends reqs to the target at their arrival times (under
// maxConcurrency, as Load) as Generate calls of InputLen prompt tokens and
// OutputLen output tokens, and times every token at the client as it
// arrives. A request the server refuses (with its status), cut off, or not
// finished within RequestTimeout is failed and counted, with the reason.
func LoadRemote(ctx context.Context, reqs []Request, t RemoteTarget, maxConcurrency int) (*Result, error) {
	if t.Client == nil {
		return nil, fmt.Errorf("--server: no connection")
	}
	if t.RequestTimeout <= 0 {
		t.RequestTimeout = 10 * time.Minute
	}
	return loadWith(ctx, reqs, maxConcurrency, func(ctx context.Context, q Request, now func() float64, rr *RequestResult, gaps *[]float64) error {
		ctx, cancel := context.WithTimeout(ctx, t.RequestTimeout)
		defer cancel()
		tokens, last := 0, 0.0
		err := t.Client.Generate(ctx, &pb.GenerateRequest{PromptLen: int32(q.InputLen), MaxTokens: int32(q.OutputLen)}, func(*pb.GenerateToken) {
			tm := now()
			if tokens == 0 {
				rr.FirstTokenS = tm
			} else {
				*gaps = append(*gaps, tm-last)
			}
			last = tm
			tokens++
		})
		if err != nil {
			return fmt.Errorf("after %d of %d tokens: %w", tokens, q.OutputLen, err)
		}
		if tokens != q.OutputLen {
			return fmt.Errorf("%d tokens streamed, %d asked", tokens, q.OutputLen)
		}
		return nil
	})
}
