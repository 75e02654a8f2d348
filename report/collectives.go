package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// CollectivesSchema names the JSON layout of partbench collectives.
const CollectivesSchema = "partbench.collectives/v1"

// CollectiveSweep is one op modeled over sizes and group sizes on a system,
// with the nccl-tests arguments it was asked with (printed in the header).
type CollectiveSweep struct {
	Op   commcount.Op
	Sys  topology.System
	Rows []sim.CollectiveRow
	// Redop and Root are nccl-tests' redop and root columns.
	Redop string
	Root  int
	// The nccl-tests arguments: -b, -e, -f, -i, -w, -n.
	MinBytes, MaxBytes, StepFactor, StepBytes int64
	Warmup, Iters                             int
	// Threads (-t), AggIters (-m), Check (-c) and Graph (-G) are printed in
	// nccl-tests' first header line (nThread, agg iters, validation, graph);
	// Echo is a header line of the other arguments taken. Threads 0 is 1.
	Threads, AggIters, Check, Graph int
	Echo                            string
}

type collectivesDoc struct {
	Schema    string              `json:"schema"`
	Op        commcount.Op        `json:"op"`
	Redop     string              `json:"redop"`
	Root      int                 `json:"root"`
	Topology  string              `json:"topology"`
	GPU       string              `json:"gpu"`
	Modeled   bool                `json:"modeled"`
	Rows      []sim.CollectiveRow `json:"rows"`
	SizeUnits string              `json:"size_units"`
}

// Collectives writes a sweep: table is nccl-tests' own layout (one block
// per group size), markdown a grid, csv one row per line, json the rows
// under partbench.collectives/v1.
func Collectives(w io.Writer, format string, s CollectiveSweep) error {
	switch format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		rows := s.Rows
		if rows == nil {
			rows = []sim.CollectiveRow{}
		}
		return enc.Encode(collectivesDoc{Schema: CollectivesSchema, Op: s.Op, Redop: s.Redop, Root: s.Root, Topology: s.Sys.Topology.Name,
			GPU: s.Sys.GPU.Name, Modeled: true, Rows: rows, SizeUnits: "bytes"})
	case FormatCSV:
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"op", "ranks", "size_bytes", "count", "type", "redop", "root", "algo", "proto", "time_us", "algbw_gb_per_s", "busbw_gb_per_s"})
		for _, r := range s.Rows {
			_ = cw.Write([]string{string(s.Op), strconv.Itoa(r.Ranks), strconv.FormatInt(r.SizeBytes, 10), strconv.FormatInt(r.Count, 10),
				r.Type, s.Redop, strconv.Itoa(s.Root), sim.NCCLAlgoName(s.Sys.Topology, r.Algo), r.Proto,
				strconv.FormatFloat(r.TimeS*1e6, 'f', 2, 64),
				strconv.FormatFloat(r.AlgBWBytesPerS/1e9, 'f', 2, 64),
				strconv.FormatFloat(r.BusBWBytesPerS/1e9, 'f', 2, 64)})
		}
		cw.Flush()
		return cw.Error()
	case FormatMarkdown:
		g := Grid{Title: fmt.Sprintf("%s on %s (%s), modeled; GB/s = 1e9 B/s", s.Op, s.Sys.Topology.Name, s.Sys.GPU.Name),
			Header: []string{"ranks", "size (B)", "count (elements)", "type", "redop", "root", "time (µs)", "algbw (GB/s)", "busbw (GB/s)", "algo", "proto"}}
		for _, r := range s.Rows {
			g.Rows = append(g.Rows, []string{strconv.Itoa(r.Ranks), strconv.FormatInt(r.SizeBytes, 10), strconv.FormatInt(r.Count, 10), r.Type, s.Redop,
				strconv.Itoa(s.Root), ncclTime(r.TimeS * 1e6), fmt.Sprintf("%.2f", r.AlgBWBytesPerS/1e9), fmt.Sprintf("%.2f", r.BusBWBytesPerS/1e9),
				sim.NCCLAlgoName(s.Sys.Topology, r.Algo), r.Proto})
		}
		return WriteGrids(w, format, g)
	}
	return ncclTestsLayout(w, s)
}

// ncclTime formats microseconds as nccl-tests does: fewer decimals as the
// time grows, always 7 wide.
func ncclTime(us float64) string {
	switch {
	case us >= 10000:
		return fmt.Sprintf("%7.0f", us)
	case us >= 100:
		return fmt.Sprintf("%7.1f", us)
	}
	return fmt.Sprintf("%7.2f", us)
}

// ncclTestsLayout prints each group size as all_reduce_perf prints a run:
// "#" header lines, one row per size with the out-of-place and in-place
// columns (the same modeled figure twice, #wrong N/A: nothing was checked),
// the algorithm and protocol the model chose after them, and the closing
// "# Avg bus bandwidth" line.
func ncclTestsLayout(w io.Writer, s CollectiveSweep) error {
	var groups []int
	byGroup := map[int][]sim.CollectiveRow{}
	for _, r := range s.Rows {
		if _, ok := byGroup[r.Ranks]; !ok {
			groups = append(groups, r.Ranks)
		}
		byGroup[r.Ranks] = append(byGroup[r.Ranks], r)
	}
	step := fmt.Sprintf("%d(factor)", s.StepFactor)
	if s.StepFactor <= 1 {
		step = fmt.Sprintf("%d(bytes)", s.StepBytes)
	}
	for gi, n := range groups {
		if gi > 0 {
			fmt.Fprintln(w)
		}
		threads, agg := max(s.Threads, 1), max(s.AggIters, 1)
		fmt.Fprintf(w, "# nThread %d nGpus %d minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d agg iters: %d validation: %d graph: %d\n",
			threads, n/threads, s.MinBytes, s.MaxBytes, step, s.Warmup, s.Iters, agg, s.Check, s.Graph)
		fmt.Fprintf(w, "#\n# partbench: %s modeled on %s (%s), no GPU ran: time is the model's, out-of-place = in-place, #wrong N/A\n",
			s.Op, s.Sys.Topology.Name, s.Sys.GPU.Name)
		if s.Echo != "" {
			fmt.Fprintf(w, "# partbench: also given %s (how nccl-tests measures; one collective's device time does not change)\n", s.Echo)
		}
		fmt.Fprintf(w, "#\n# Using devices\n")
		for r := 0; r < n; r++ {
			fmt.Fprintf(w, "#  Rank %2d Group  0 Pid      0 on %10s device %2d [modeled] %s\n", r,
				fmt.Sprintf("node%d", s.Sys.Topology.NodeOf(r)), r%max(s.Sys.Topology.GPUsPerNode, 1), s.Sys.GPU.Name)
		}
		fmt.Fprintf(w, "#\n# %10s  %12s  %8s  %6s  %6s           out-of-place                        in-place\n", "", "", "", "", "")
		fmt.Fprintf(w, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s  %8s  %6s\n",
			"size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", "algo", "proto")
		fmt.Fprintf(w, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n",
			"(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "")
		var sum float64
		for _, r := range byGroup[n] {
			half := fmt.Sprintf("  %7s  %6.2f  %6.2f  %6s", ncclTime(r.TimeS*1e6), r.AlgBWBytesPerS/1e9, r.BusBWBytesPerS/1e9, "N/A")
			fmt.Fprintf(w, "%12d  %12d  %8s  %6s  %6d%s%s  %8s  %6s\n", r.SizeBytes, r.Count, r.Type, s.Redop, s.Root, half, half,
				sim.NCCLAlgoName(s.Sys.Topology, r.Algo), r.Proto)
			sum += r.BusBWBytesPerS / 1e9
		}
		avg := 0.0
		if k := len(byGroup[n]); k > 0 {
			avg = sum / float64(k)
		}
		fmt.Fprintf(w, "# Out of bounds values : N/A (modeled)\n# Avg bus bandwidth    : %.6g \n#\n", avg)
	}
	return nil
}
