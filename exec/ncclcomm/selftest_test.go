package ncclcomm

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/partbench/partbench/cgo/cuda/cudatest"
	"github.com/partbench/partbench/exec/ncclcomm/nccltest"
)

// On the fake driver and the fake NCCL every step runs. The fake copies
// an all-reduce over one rank (verified) but moves no data for a send to
// self (nccl/testdata/fakenccl.c), so the read-back of the received buffer
// must be caught as differing: 1024 zeros where 0.5, 1.5, … were sent.
func TestSelfTestOnFakes(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	nccltest.Setenv(t)
	res, err := SelfTest(context.Background(), SelfTestOptions{Count: 1024, Timeout: 30 * time.Second})
	if err == nil || err.Error() != "nccl-check: send/recv: 1024 of 1024 elements differ; element 0 is 0, want 0.5" {
		t.Fatalf("err = %v, want the send/recv read-back to differ on the fake", err)
	}
	if res.OK || res.GPU == nil || res.DriverPath == "" || res.NCCLPath == "" || res.CommCreateS < 0 || res.AllReduceS < 0 || res.SendRecvS < 0 || res.Counters != nil {
		t.Errorf("result %+v", res)
	}
	if strings.Join(res.Verified, ",") != "all_reduce" {
		t.Errorf("verified %v, want all_reduce only", res.Verified)
	}
}

// Without NCCL the test fails on one line naming what was searched, and the
// result keeps the steps that passed (the driver and the GPU).
func TestSelfTestWithoutNCCL(t *testing.T) {
	cudatest.Build(t).Setenv(t)
	t.Setenv("PARTBENCH_NCCL_LIB", t.TempDir()+"/libnccl.so.2")
	res, err := SelfTest(context.Background(), SelfTestOptions{Count: 16, Timeout: 30 * time.Second})
	if err == nil || !strings.HasPrefix(err.Error(), "nccl-check: no NCCL:") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v, want one line starting nccl-check: no NCCL:", err)
	}
	if res.DriverPath == "" || res.GPU == nil || res.NCCLPath != "" || res.CommCreateS >= 0 || res.OK {
		t.Errorf("partial result %+v", res)
	}
	if _, err := SelfTest(context.Background(), SelfTestOptions{Count: 0}); err == nil || !strings.Contains(err.Error(), "--count must be positive") {
		t.Errorf("count 0: %v", err)
	}
}
