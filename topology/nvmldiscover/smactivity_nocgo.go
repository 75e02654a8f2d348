//go:build !cgo

package nvmldiscover

import "errors"

// SMSampler needs cgo (go-nvml); this build has none.
type SMSampler struct{}

// NewSMSampler fails: the binary was built without cgo.
func NewSMSampler(index int) (*SMSampler, error) {
	return nil, errors.New("nvml: this partbench was built without cgo; SM activity needs go-nvml")
}

// GPM is false: nothing is read.
func (s *SMSampler) GPM() bool { return false }

// Close does nothing.
func (s *SMSampler) Close() {}

// StartWindow is never reached (NewSMSampler fails).
func (s *SMSampler) StartWindow() func() (float64, string) {
	return func() (float64, string) { return 0, "" }
}
