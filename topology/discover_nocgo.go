//go:build !cgo

package topology

// DiscoverLocal cannot read NVML in a build without cgo (go-nvml needs it);
// the error matches ErrNoGPU.
func DiscoverLocal() (*Machine, error) {
	return nil, &noGPUError{cause: "partbench was built without cgo, so NVML cannot be loaded"}
}
