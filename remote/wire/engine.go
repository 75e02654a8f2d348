package wire

import (
	pb "github.com/partbench/partbench/remote/remotepb"

	"context"
	"fmt"
	"time"

	"github.com/partbench/partbench/partition"
)

// PhaseLoad is the request that uploads a kv-mode session's weights once.
const PhaseLoad partition.Phase = "load"

// Tensor is one named payload; Data holds exactly ElemBytes × ∏Shape bytes.
type Tensor struct {
	Name      string
	ElemBytes int
	Shape     []int64
	Data      []byte
}

// Bytes is the tensor's declared size.
func (t Tensor) Bytes() int64 {
	n := int64(t.ElemBytes)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// StepInput is one request as the engine sees it.
type StepInput struct {
	Phase   partition.Phase
	Step    int
	Tensors []Tensor
}

// StepOutput is the engine's reply and the device time it took.
type StepOutput struct {
	Tensors []Tensor
	Execute time.Duration
	// Import is the time spent installing the request's state (weights, KV
	// cache) on the device; Serialize the time spent reading the reply's
	// state back and encoding it. Zero for engines that do not measure them.
	Import, Serialize time.Duration
}

// Engine runs a model for the server. SessionBytes must be known before
// anything is allocated, so the server can refuse a session that does not
// fit its memory budget.
type Engine interface {
	SessionBytes(plan *partition.Plan, mode partition.RemoteMode) (int64, error)
	OpenSession(plan *partition.Plan, mode partition.RemoteMode, opts partition.RemoteOptions) (EngineSession, error)
}

// EngineSession is one client's model state on the server. The server
// calls Step for one request at a time per session. Step must not keep a
// request's tensor data after it returns (the server reuses the buffers
// for the session's next request): it copies what it keeps.
type EngineSession interface {
	Step(ctx context.Context, in *StepInput) (*StepOutput, error)
	Close()
}

// tensorsOf checks a declared payload: each tensor's bytes match its shape.
func CheckTensor(name string, elem int, shape []int64, bytes int64) error {
	n := int64(elem)
	if elem <= 0 || elem > 16 {
		return fmt.Errorf("tensor %q: elem_bytes %d must be in [1, 16]", name, elem)
	}
	for _, d := range shape {
		if d < 0 || (d > 0 && n > (1<<62)/d) {
			return fmt.Errorf("tensor %q: shape %v out of range", name, shape)
		}
		n *= d
	}
	if n != bytes {
		return fmt.Errorf("tensor %q: shape %v × %d B = %d B, header says %d", name, shape, elem, n, bytes)
	}
	return nil
}

// RequestChecker is an EngineSession that knows the payload a request must
// carry: the server asks it before receiving (or allocating for) any data.
// in's tensors have no Data yet.
type RequestChecker interface {
	CheckRequest(in *StepInput, declared []*pb.TensorInfo) error
}
