// Package calib measures the machine partbench runs on and turns the
// measurements into a hardware profile (configs.Calibration) that the model
// loads in place of a preset: GEMM throughput through the CPU backend's own
// sgemm call over the Programs' shapes, streaming and cached read bandwidth,
// the per-op overhead of exec/cpu, and the latency and bandwidth of the link
// the ranks use (exec/tcpcomm over loopback), each with its spread over repeats.
// With Backend "cuda" it measures one GPU instead through exec/cuda's
// Calibrator (cuBLAS GEMMs per dtype, the L2 curve and HBM, launches and
// graphs, a one-rank NCCL all_reduce) and times the op-time table through
// the GPU backend's own Compute on its device clock (cuda.go).
//
// It must not print or decide formats (cmd/partbench does), and it must not
// model time itself: the figures are fitted so that sim's formulas reproduce
// the measurements.
package calib
