package wire

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/partbench/partbench/partition"
)

// ModelWeights are the plan's seeded model weights (the ones a stateful
// session generates on the server) as the payload tensors naive and kv
// sessions ship: partition's RemoteWeights order, names and shapes, float32
// little-endian row-major [k][n].
func ModelWeights(plan *partition.Plan) ([]Tensor, error) {
	ws, err := plan.RemoteWeights()
	if err != nil {
		return nil, err
	}
	if plan.DTypeBytes != 4 {
		return nil, fmt.Errorf("model weights: config %s has dtype %s; the payload is float32 (set model.dtype = \"fp32\")", plan.Config.Name, plan.Model.DType)
	}
	gen := plan.Generator(0)
	out := make([]Tensor, 0, len(ws))
	for _, w := range ws {
		layer, name := WeightKey(w)
		t, err := gen.Tensor(layer, name)
		if err != nil {
			return nil, fmt.Errorf("model weights: %s: %w", w.Name, err)
		}
		if int64(4*len(t.Data)) != w.Bytes {
			return nil, fmt.Errorf("model weights: %s is [%d, %d] float32, the payload says %d B", w.Name, t.K, t.N, w.Bytes)
		}
		d := make([]byte, w.Bytes)
		for i, v := range t.Data {
			binary.LittleEndian.PutUint32(d[4*i:], math.Float32bits(v))
		}
		out = append(out, Tensor{Name: w.Name, ElemBytes: w.ElemBytes, Shape: w.Shape, Data: d})
	}
	return out, nil
}

// WeightKey is the (layer, op tensor) of a payload weight name.
func WeightKey(t partition.RemoteTensor) (int, string) {
	if t.Layer < 0 {
		return -1, t.Name
	}
	return t.Layer, t.Name[len(fmt.Sprintf("L%02d.", t.Layer)):]
}
