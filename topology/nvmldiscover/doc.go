// Package nvmldiscover reads this machine's GPUs, NVLinks and PCIe paths
// through NVML (go-nvml, libnvidia-ml.so.1 opened at run time) into a
// topology.Machine, and samples a GPU's SM activity over a window (SMSampler,
// what a GPU server reports per request). It is the only package that imports
// go-nvml.
//
// It must not be imported by configs, partition, sim or report, which stay
// free of go-nvml and cgo (the test in topology/purity_test.go holds that).
package nvmldiscover
