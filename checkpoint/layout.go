package checkpoint

import (
	"fmt"

	"github.com/partbench/partbench/arch"
)

// TensorSpec is one parameter tensor a config implies, in the checkpoint's
// own layout (arch.TensorSpec).
type TensorSpec = arch.TensorSpec

// ExpectedTensors lists every parameter tensor of c, in model order, with
// the names its family's checkpoints use (arch.Description.Tensors).
func ExpectedTensors(c *Config) []TensorSpec { return c.Tensors() }

// Check verifies w against c: every expected tensor is present with the
// config's shape and a float dtype, and no other tensor is present besides
// known non-parameter buffers. It returns the parameter count it read.
func Check(c *Config, w *Weights) (int64, error) {
	used := map[string]bool{}
	var n int64
	for _, s := range ExpectedTensors(c) {
		t, err := w.Expect(s)
		if err != nil {
			return 0, fmt.Errorf("%s (config %s): %w", c.Architecture, c.Source, err)
		}
		used[t.Info.Name] = true
		n += t.Info.Elements()
	}
	for _, name := range w.Names() {
		if used[name] || c.IsBuffer(name) {
			continue
		}
		t, _ := w.Tensor(name)
		return 0, fmt.Errorf("%s: unexpected tensor %q: not a parameter of %s as configured by %s", t.File, name, c.Architecture, c.Source)
	}
	return n, nil
}

// Verify reads dir's config.json and weights and checks one against the
// other; it returns the config and the parameter count of the checkpoint.
func Verify(dir string) (*Config, int64, error) {
	c, err := ReadConfig(dir)
	if err != nil {
		return nil, 0, err
	}
	w, err := OpenWeights(dir)
	if err != nil {
		return nil, 0, err
	}
	defer w.Close()
	n, err := Check(c, w)
	if err != nil {
		return nil, 0, err
	}
	return c, n, nil
}
