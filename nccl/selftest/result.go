package selftest

import "github.com/partbench/partbench/commcount"

// Result is filled step by step: after a failure it holds every step that
// passed (zero values, or negative times, are steps not reached).
type Result struct {
	// Count is the float32 elements per buffer.
	Count int `json:"count"`
	// DriverPath and CUDAVersion: the CUDA driver loaded.
	DriverPath  string `json:"driver_path,omitempty"`
	CUDAVersion string `json:"cuda_version,omitempty"`
	// GPU is the device's facts.
	GPU *GPU `json:"gpu,omitempty"`
	// NCCLVersion and NCCLPath: the NCCL library loaded.
	NCCLVersion string `json:"nccl_version,omitempty"`
	NCCLPath    string `json:"nccl_path,omitempty"`
	// CommDevice is the GPU of the one-rank communicator; CommCreateS how
	// long creating it took (< 0: not created).
	CommDevice  int     `json:"comm_device"`
	CommCreateS float64 `json:"comm_create_s"`
	// AllReduceS and SendRecvS are the calls' times (< 0: not run).
	AllReduceS float64 `json:"all_reduce_s"`
	SendRecvS  float64 `json:"send_recv_s"`
	// Verified names the results read back and found equal to the input.
	Verified []string `json:"verified,omitempty"`
	// Counters is what the binding counted (nil: not reached).
	Counters *commcount.Snapshot `json:"counters,omitempty"`
	// OK is set when every step passed.
	OK bool `json:"ok"`
}

// GPU is what the test reports of the device.
type GPU struct {
	Ordinal              int    `json:"ordinal"`
	Name                 string `json:"name"`
	ComputeMajor         int    `json:"compute_major"`
	ComputeMinor         int    `json:"compute_minor"`
	SMs                  int    `json:"sms"`
	TotalMemBytes        int64  `json:"total_mem_bytes"`
	L2Bytes              int64  `json:"l2_bytes"`
	MaxPersistingL2Bytes int64  `json:"max_persisting_l2_bytes"`
}

// New is a Result of count elements with no step reached.
func New(count int) *Result {
	return &Result{Count: count, CommCreateS: -1, AllReduceS: -1, SendRecvS: -1}
}
