// Package topologytest holds canned hardware for tests that must run without
// a GPU: ready topology.System values (DGXH100, H200Node, PCIeBox8). NVML
// fakes of the same machines are in topology/nvmldiscover/nvmltest, so that
// this package, like topology, links neither go-nvml nor cgo.
//
// It must not be imported by non-test code, and must not import configs
// (whose tests may use it); a test here holds its values equal to the presets.
package topologytest
