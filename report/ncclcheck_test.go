package report

import (
	"bytes"
	"testing"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/nccl/selftest"
)

func TestNCCLCheckWritesTheStepsReached(t *testing.T) {
	r := selftest.New(1024)
	r.DriverPath, r.CUDAVersion = "/usr/lib/libcuda.so.1", "12.4"
	r.GPU = &selftest.GPU{Ordinal: 0, Name: "H100", ComputeMajor: 9, SMs: 132, TotalMemBytes: 85_520_809_984, L2Bytes: 52_428_800, MaxPersistingL2Bytes: 32_768_000}
	var b bytes.Buffer
	if err := NCCLCheck(&b, r); err != nil {
		t.Fatal(err)
	}
	// 85 520 809 984 B = 85.5 GB; 52 428 800 B = 52.4 MB; 32 768 000 B = 32.8 MB.
	want := "CUDA driver: /usr/lib/libcuda.so.1 (CUDA 12.4)\nGPU 0: H100, sm_90, 132 SMs, 85.5 GB, L2 52.4 MB (max persisting 32.8 MB)\n"
	if b.String() != want {
		t.Errorf("partial result:\n%q\nwant\n%q", b.String(), want)
	}

	r.NCCLVersion, r.NCCLPath = "2.28.3", "/lib/libnccl.so.2"
	r.CommCreateS, r.AllReduceS, r.SendRecvS = 0.25, 0.0015, 0.002
	r.Verified = []string{"all_reduce", "send/recv"}
	r.Counters = &commcount.Snapshot{
		Calls: map[commcount.Op]int64{commcount.AllReduce: 1, commcount.Send: 1, commcount.Recv: 1},
		Bytes: map[commcount.Op]int64{commcount.AllReduce: 4096, commcount.Send: 4096, commcount.Recv: 4096},
	}
	r.OK = true
	b.Reset()
	if err := NCCLCheck(&b, r); err != nil {
		t.Fatal(err)
	}
	// Ops sorted by name; 3 calls in all and no point-to-point peer counted.
	want += "NCCL 2.28.3: /lib/libnccl.so.2\n" +
		"communicator: 1 rank on GPU 0, created in 0.250 s\n" +
		"all_reduce: 1024 × float32 in 1.500 ms\n" +
		"send/recv to self (one group): 1024 × float32 in 2.000 ms\n" +
		"all_reduce: result verified\nsend/recv: result verified\n" +
		"counters:\n" +
		"  all_reduce   1 calls, 4096 payload bytes\n" +
		"  recv         1 calls, 4096 payload bytes\n" +
		"  send         1 calls, 4096 payload bytes\n" +
		"  total: 3 calls, 0 point-to-point messages\n" +
		"nccl-check: ok\n"
	if b.String() != want {
		t.Errorf("whole result:\n%s\nwant\n%s", b.String(), want)
	}
}
