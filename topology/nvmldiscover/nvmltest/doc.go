// Package nvmltest holds NVML fakes of the machines topologytest describes
// (DGXH100NVML, H200NodeNVML, PCIeBox8NVML, NoNVML, NoGPUs), built on
// go-nvml's generated mocks, for tests of nvmldiscover and of the topo command.
//
// It must not be imported by non-test code; only cgo builds have it.
package nvmltest
