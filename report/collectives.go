package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/partbench/partbench/commcount"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// CollectiveSweep is one op modeled over sizes and group sizes on a system.
type CollectiveSweep struct {
	Op   commcount.Op
	Sys  topology.System
	Rows []sim.CollectiveRow
}

// Collectives writes a sweep as table (nccl-tests' columns), csv or json
// (the rows alone).
func Collectives(w io.Writer, format string, s CollectiveSweep) error {
	switch format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s.Rows)
	case FormatCSV:
		cw := csv.NewWriter(w)
		_ = cw.Write([]string{"ranks", "size_bytes", "count", "type", "redop", "algo", "proto", "time_us", "algbw_gb_per_s", "busbw_gb_per_s"})
		for _, r := range s.Rows {
			_ = cw.Write([]string{strconv.Itoa(r.Ranks), strconv.FormatInt(r.SizeBytes, 10), strconv.FormatInt(r.Count, 10),
				r.Type, r.Redop, r.Algo, r.Proto,
				strconv.FormatFloat(r.TimeS*1e6, 'f', 2, 64),
				strconv.FormatFloat(r.AlgBWBytesPerS/1e9, 'f', 2, 64),
				strconv.FormatFloat(r.BusBWBytesPerS/1e9, 'f', 2, 64)})
		}
		cw.Flush()
		return cw.Error()
	}
	fmt.Fprintf(w, "# %s on %s (%s), modeled; GB/s = 1e9 B/s\n", s.Op, s.Sys.Topology.Name, s.Sys.GPU.Name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ranks\tsize (B)\tcount (elements)\ttype\tredop\talgo\tproto\ttime (us)\talgbw (GB/s)\tbusbw (GB/s)\t")
	for _, r := range s.Rows {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t\n", r.Ranks, r.SizeBytes, r.Count, r.Type, r.Redop,
			r.Algo, r.Proto, r.TimeS*1e6, r.AlgBWBytesPerS/1e9, r.BusBWBytesPerS/1e9)
	}
	return tw.Flush()
}
