//go:build !cgo

package nvmldiscover

import "github.com/partbench/partbench/topology"

// DiscoverLocal cannot read NVML in a build without cgo (go-nvml needs it);
// the error matches topology.ErrNoGPU.
func DiscoverLocal() (*topology.Machine, error) {
	return nil, topology.NoGPU("partbench was built without cgo, so NVML cannot be loaded")
}
