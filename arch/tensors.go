package arch

// TensorSpec is one parameter tensor a description implies, in the
// checkpoint's own layout (SeparateQKV linears are [out, in]; FusedQKV
// Conv1D weights are [in, out]).
type TensorSpec struct {
	Name string
	// Alt is another name transformers has saved the same tensor under
	// (GPT-2 checkpoints saved from GPT2Model lack the "transformer." prefix).
	Alt   string
	Shape []int64
}

// Elements is the product of the shape.
func (s TensorSpec) Elements() int64 {
	n := int64(1)
	for _, d := range s.Shape {
		n *= d
	}
	return n
}

// spec is a TensorSpec of name and shape.
func spec(name string, shape ...int) TensorSpec {
	s := TensorSpec{Name: name, Shape: make([]int64, len(shape))}
	for i, d := range shape {
		s.Shape[i] = int64(d)
	}
	return s
}

// Tensors lists every parameter tensor of d's checkpoint, in model order,
// with the names its family's checkpoints use.
func (d *Description) Tensors() []TensorSpec { return layoutTensors(d) }

// IsBuffer reports whether a checkpoint tensor is a known non-parameter
// buffer of d's family.
func (d *Description) IsBuffer(name string) bool { return d.Family.IsBuffer(name) }

// ParamCount counts d's parameters in closed form from its features alone
// (tied weights once): it does not read the family's tensor list, so each
// checks the other.
func (d *Description) ParamCount() int64 {
	h, v, f, l := int64(d.Hidden), int64(d.Vocab), int64(d.FFN), int64(d.Layers)
	q, kv := int64(d.Heads*d.HeadDim), int64(d.KVHeads*d.HeadDim)
	ups := int64(1)
	if d.GatedMLP {
		ups = 2 // gate and up
	}
	layer := h*(q+2*kv) + q*h + ups*h*f + f*h + 2*d.Norm.Params(h)
	if d.Bias {
		layer += (q + 2*kv) + h + ups*f + h // qkv, o, up, down outputs
	}
	n := v*h + l*layer + d.Norm.Params(h) // embedding, layers, final norm
	if d.LearnedPositions {
		n += int64(d.MaxPositions) * h
	}
	if !d.TieWordEmbeddings {
		n += v * h
	}
	return n
}
