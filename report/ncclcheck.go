package report

import (
	"fmt"
	"io"
	"sort"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/nccl/selftest"
)

// NCCLCheck writes what the NCCL self-test found, one line per step that
// was reached, then the binding's counters and "ok" when every step passed.
func NCCLCheck(w io.Writer, r *selftest.Result) error {
	if r.DriverPath != "" {
		fmt.Fprintf(w, "CUDA driver: %s (CUDA %s)\n", r.DriverPath, r.CUDAVersion)
	}
	if g := r.GPU; g != nil {
		fmt.Fprintf(w, "GPU %d: %s, sm_%d%d, %d SMs, %.1f GB, L2 %.1f MB (max persisting %.1f MB)\n",
			g.Ordinal, g.Name, g.ComputeMajor, g.ComputeMinor, g.SMs,
			float64(g.TotalMemBytes)/1e9, float64(g.L2Bytes)/1e6, float64(g.MaxPersistingL2Bytes)/1e6)
	}
	if r.NCCLPath != "" {
		fmt.Fprintf(w, "NCCL %s: %s\n", r.NCCLVersion, r.NCCLPath)
	}
	if r.CommCreateS >= 0 {
		fmt.Fprintf(w, "communicator: 1 rank on GPU %d, created in %.3f s\n", r.CommDevice, r.CommCreateS)
	}
	if r.AllReduceS >= 0 {
		fmt.Fprintf(w, "all_reduce: %d × float32 in %.3f ms\n", r.Count, r.AllReduceS*1e3)
	}
	if r.SendRecvS >= 0 {
		fmt.Fprintf(w, "send/recv to self (one group): %d × float32 in %.3f ms\n", r.Count, r.SendRecvS*1e3)
	}
	for _, v := range r.Verified {
		fmt.Fprintf(w, "%s: result verified\n", v)
	}
	if r.Counters != nil {
		counters(w, *r.Counters)
	}
	if r.OK {
		_, err := fmt.Fprintln(w, "nccl-check: ok")
		return err
	}
	return nil
}

// counters writes what a binding counted, under the commcount definitions.
func counters(w io.Writer, s commcount.Snapshot) {
	ops := make([]string, 0, len(s.Calls))
	for op := range s.Calls {
		ops = append(ops, string(op))
	}
	sort.Strings(ops)
	fmt.Fprintln(w, "counters:")
	for _, op := range ops {
		fmt.Fprintf(w, "  %-12s %d calls, %d payload bytes\n", op, s.Calls[commcount.Op(op)], s.Bytes[commcount.Op(op)])
	}
	peers := make([]int, 0, len(s.Peers))
	for p := range s.Peers {
		peers = append(peers, p)
	}
	sort.Ints(peers)
	for _, p := range peers {
		fmt.Fprintf(w, "  to rank %d:  %d messages, %d wire bytes\n", p, s.Peers[p].Messages, s.Peers[p].WireBytes)
	}
	fmt.Fprintf(w, "  total: %d calls, %d point-to-point messages\n", s.TotalCalls(), s.Messages())
}
