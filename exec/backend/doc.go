// Package backend is the registry of partbench's run backends: each is
// registered with a name, a probe (can it run here?) and a factory of the
// per-rank Compute and Comm constructors; "auto" picks by a stated policy.
// Default wires the CPU backend (exec/cpu + exec/tcpcomm) and the GPU backend
// (exec/cuda + exec/ncclcomm).
//
// Outside exec/ it is the only way to a backend (imports_test.go, calib
// included): parts only some backends have (Backend.Inputs, Backend.L2Probe,
// and calibrate's Backend.Calibrator and Backend.Untimed) are reached by name
// and refused by name where a backend lacks them.
//
// It must not run anything itself (exec runs the Program), and no backend it
// holds may import another.
package backend
