// Package topology holds facts about hardware: the GPU's specification, the
// nodes, the links between GPUs, and the path between two ranks. Presets come
// from configs; discovery on a real machine goes through NVML (Discover, in
// cgo builds) into a Machine, which converts to the same Topology and GPU.
//
// It must not estimate time: sim does that from these facts.
package topology
