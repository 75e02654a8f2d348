package exec

import (
	"context"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// Compute runs one rank's compute ops (every partition.Kind that is not
// communication) and owns the rank's weights, KV cache and buffers.
type Compute interface {
	// Exec runs op for micro-batch op.Microbatch. past is the number of tokens
	// of the op's sequences already in the KV cache (exec passes the real
	// position of each decode step; the Program's op.Past is the estimate's).
	Exec(ctx context.Context, op *partition.Op, past int) error
	// Buffer returns micro-batch mb's buffer b (an op's In or Out, or
	// GatheredBuffer of one) viewed as elems elements, for a communication op.
	Buffer(b model.Buf, mb, elems int) (Buffer, error)
	// Sync waits until queued work is done (a no-op on the CPU).
	Sync(ctx context.Context) error
	// AllocatedBytes is the memory the backend holds (weights, KV, buffers).
	AllocatedBytes() int64
	// Close releases everything.
	Close() error
}

// DeviceClock is a Compute whose work runs on a device queue (a GPU
// stream), so the host's clock around Exec measures queueing, not work.
// exec.Run marks before and after each traced op and reads the marks back
// after the iteration, with no host synchronization inside a step.
type DeviceClock interface {
	// Mark records a timestamp on the queue, after the work queued so far,
	// without waiting for it.
	Mark() error
	// Marks waits for the queued work and returns the device time of every
	// mark since the last call, in seconds from the first, in order, and
	// forgets them. A mark that could not be timed (made while the queue
	// was being captured into a graph) is NaN.
	Marks() ([]float64, error)
}

// GraphLauncher is a Compute that launches runs of consecutive compute
// ops as one device graph (exec/cuda's decode segments), so marks on its
// queue around the ops inside a graph cannot tell them apart.
type GraphLauncher interface {
	// LastGraph says how the op of the last Exec ran: 0 on its own (or
	// recorded into a graph being captured); n > 0 when it launched a graph
	// that runs it and the next n−1 compute ops of its Program; −1 when an
	// earlier op's graph ran it (its Exec queued nothing).
	LastGraph() int
	// SuspendGraphs runs every op on its own while on (called between
	// steps), so marks can time each op of a step that otherwise runs as
	// graphs.
	SuspendGraphs(on bool) error
}

// OpLabeler is a Compute that runs some ops in more than one way (a kernel
// chosen by shape) and says which: OpLabel(op) is appended to the op's
// name in traces (" [flash d128 b64]"), "" for the default way.
type OpLabeler interface {
	OpLabel(op *partition.Op) string
}

// Allocation kinds: what a backend's memory holds, for AllocatedByKind.
const (
	AllocWeights   = "weights"   // the rank's weight shards
	AllocKV        = "kv_cache"  // the KV cache of the rank's layers
	AllocBuffers   = "buffers"   // per-micro-batch activations, logits, tokens, positions, outputs
	AllocWorkspace = "workspace" // library workspaces, flags, prompt ids: fixed per rank
)

// AllocationItemizer is a Compute that says what its AllocatedBytes hold:
// bytes by kind (the Alloc* names), summing to AllocatedBytes.
type AllocationItemizer interface {
	AllocatedByKind() map[string]int64
}

// DeviceMemory is a Compute whose memory is a device's, read from the
// driver (cuMemGetInfo), so the memory it does not allocate itself (kernel
// modules, library handles, a communicator's buffers, allocator rounding)
// can be itemized beside what it does.
type DeviceMemory interface {
	// DeviceUsedBytes is the device memory in use now (total − free).
	DeviceUsedBytes() (int64, error)
	// SetupMemory is what the backend measured around its own setup:
	// MemoryMeasure's BeforeSetupBytes, AfterSetupBytes and
	// LibraryWorkspaceBytes (false where the driver could not say).
	SetupMemory() (MemoryMeasure, bool)
}

// Buffer is a backend's array of elements (host memory for exec/cpu, device
// memory for exec/cuda). A Comm only accepts the Buffer type of the Compute it
// was paired with.
type Buffer interface {
	// Len is the number of elements.
	Len() int
	// Bytes is the size of the payload in bytes (Len × element size).
	Bytes() int64
}

// Comm is the data plane between ranks. Calls on one Comm are made from one
// goroutine, in Program order; every member of a group makes its collective
// calls in the same order (as with NCCL).
type Comm interface {
	// Rank and Size are this rank's global identity.
	Rank() int
	Size() int
	// NewGroup creates a communicator over the given global ranks (ascending;
	// must contain Rank()). Every member calls it, in the same order, with the
	// same ranks. A group of one rank is valid and moves no data.
	NewGroup(ctx context.Context, ranks []int) (Group, error)
	// Send posts buf to peer. It may return before the peer has received it
	// (the buffer must not be reused until Flush or the next call that
	// synchronizes); messages between a pair arrive in the order they were sent.
	Send(ctx context.Context, buf Buffer, peer int) error
	// Recv fills buf with the next message from peer; its size must match.
	Recv(ctx context.Context, buf Buffer, peer int) error
	// Flush waits until every posted Send has left this rank.
	Flush(ctx context.Context) error
	// Barrier returns when every rank has entered it.
	Barrier(ctx context.Context) error
	// Counter is where every call above is counted (commcount definitions).
	Counter() *commcount.Counter
	// Close releases the communicator; pending calls fail.
	Close() error
}

// Group is a communicator over a subset of ranks (a tensor-parallel group).
type Group interface {
	// Ranks are the members' global ranks, ascending.
	Ranks() []int
	// AllReduce sums buf element-wise over the members, in place.
	AllReduce(ctx context.Context, buf Buffer) error
	// AllGather concatenates every member's send buffer, in rank order, into recv
	// (recv.Len() == len(Ranks()) × send.Len()).
	AllGather(ctx context.Context, send, recv Buffer) error
}

// F32 is a host buffer of float32 elements (the CPU backend's Buffer).
type F32 []float32

// Len is the number of elements.
func (b F32) Len() int { return len(b) }

// Bytes is 4 × Len.
func (b F32) Bytes() int64 { return int64(4 * len(b)) }

// Prefix is the first n elements.
func (b F32) Prefix(n int) F32 { return b[:n] }

var _ Buffer = F32(nil)
