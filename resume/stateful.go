package resume

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote"
)

// Stateful pauses on a server's stateful session and resumes with one
// request carrying the modification (or nothing).
func Stateful(ctx context.Context, s *remote.Session, layer int, delta []float32) (*Outcome, error) {
	if s.Mode != partition.RemoteStateful {
		return nil, fmt.Errorf("resume: a stateful resume needs a stateful session (this one is %s)", s.Mode)
	}
	if !s.Logits {
		return nil, fmt.Errorf("resume: open the session with logits, so the resumed output can be checked")
	}
	if _, err := s.Pause(ctx, layer, Prompt(s.Plan)); err != nil {
		return nil, fmt.Errorf("pause at layer %d: %w", layer, err)
	}
	r, err := s.Resume(ctx, layer, delta)
	if err != nil {
		return nil, fmt.Errorf("resume at layer %d: %w", layer, err)
	}
	o := &Outcome{Strategy: partition.ResumeStateful, Layer: layer, TimeToOutput: r.Wall,
		// The server's time after the resumed forward began: the tail, the
		// reply's encoding and sending. What is left of the call is the
		// request's way to the server and the restore.
		ResumeLatency: r.Wall - r.Execute - r.Serialize - r.Send,
		NetUpBytes:    r.Bytes.PayloadUp, NetDownBytes: r.Bytes.PayloadDown,
		Restore: r.Import, Compute: r.Execute}
	o.Output = &Output{}
	for _, t := range r.Tensors {
		if t.Name != partition.RemoteLogits {
			continue
		}
		v := int(t.Shape[1])
		vocab := s.Plan.Model.Vocab
		for seq := 0; seq < int(t.Shape[0]); seq++ {
			best, bestV := 0, float32(math.Inf(-1))
			for j := 0; j < vocab; j++ {
				f := math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*(seq*v+j):]))
				o.Output.Logits = append(o.Output.Logits, f)
				if f > bestV {
					best, bestV = j, f
				}
			}
			o.Output.Sampled = append(o.Output.Sampled, best)
		}
	}
	if o.Output.Logits == nil {
		return nil, fmt.Errorf("resume at layer %d: the reply carries no logits", layer)
	}
	return o, nil
}
