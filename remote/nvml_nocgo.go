//go:build !cgo

package remote

import "errors"

// NVMLSampler needs cgo (go-nvml); this build has none.
type NVMLSampler struct{}

// NewNVMLSampler fails: the binary was built without cgo.
func NewNVMLSampler(index int) (*NVMLSampler, error) {
	return nil, errors.New("nvml: this partbench was built without cgo; SM activity needs go-nvml")
}

// Close does nothing.
func (s *NVMLSampler) Close() {}

// Start is never reached (NewNVMLSampler fails).
func (s *NVMLSampler) Start() func() Utilization { return func() Utilization { return Utilization{} } }
