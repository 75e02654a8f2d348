//go:build !linux

package launch

import "errors"

// UsableCPUs: no affinity mask is read on this system.
func UsableCPUs() ([]int, error) {
	return nil, errors.New("binding to CPUs is implemented on Linux only")
}

func pinThreads([]int) error {
	return errors.New("binding to CPUs is implemented on Linux only")
}
