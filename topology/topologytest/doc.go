// Package topologytest holds canned hardware for tests that must run without
// a GPU: ready topology.System values (DGXH100, H200Node, PCIeBox8) and, in
// cgo builds, NVML fakes of the same machines (DGXH100NVML, H200NodeNVML,
// PCIeBox8NVML, NoNVML, NoGPUs) for topology.Discover.
//
// It must not be imported by non-test code, and must not import configs
// (whose tests may use it); a test here holds its values equal to the presets.
package topologytest
