package wire

import (
	"encoding/binary"
	"math"

	"github.com/partbench/partbench/partition"
)

// PhasePause runs a stateful session's prefill up to and including layer
// Step (1-based) and keeps the hidden state x on the device; its request is
// the prefill's (the prompt's token ids), its reply carries nothing.
const PhasePause partition.Phase = "pause"

// PhaseResume adds the request's modification to the kept hidden state and
// runs the rest of the paused prefill; its reply is the prefill's.
const PhaseResume partition.Phase = "resume"

// ResumeDelta names a resume request's modification: float32 [hidden],
// added to every row of the paused hidden state. A resume without it
// continues unmodified.
const ResumeDelta = "resume.delta"

// DeltaTensor is the request tensor of a modification (nil: none).
func DeltaTensor(delta []float32) []Tensor {
	if len(delta) == 0 {
		return nil
	}
	d := make([]byte, 4*len(delta))
	for i, v := range delta {
		binary.LittleEndian.PutUint32(d[4*i:], math.Float32bits(v))
	}
	return []Tensor{{Name: ResumeDelta, ElemBytes: 4, Shape: []int64{int64(len(delta))}, Data: d}}
}

// Float32s reads little-endian float32s (a ResumeDelta's data).
func Float32s(d []byte) []float32 {
	out := make([]float32, len(d)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:]))
	}
	return out
}
