package nccltests

// Reading what nccl-tests (≥ 2.x) prints: the "#" header lines, the data
// rows (size count type redop root, then time algbw busbw #wrong out of
// place and in place) and the closing average, in a log that may also hold
// NCCL_DEBUG lines and launcher output.

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/partbench/partbench/commcount"
)

// MaxOutputBytes bounds a file ParseOutput reads: a run of 30 sizes is a few
// kB even with NCCL_DEBUG=INFO on 16 ranks.
const MaxOutputBytes = 16 << 20

// Output is one nccl-tests run as its rank 0 printed it.
type Output struct {
	// Name is the file as given (errors and reports name it).
	Name string
	// TestsVersion is nccl-tests' own version ("2.18.3"); HeadersCode and
	// LibraryCode are NCCL_VERSION_CODE of the headers it was built with
	// and of the library it ran (22902); all zero when the line is absent.
	TestsVersion             string
	HeadersCode, LibraryCode int
	// Binary is the program ("all_reduce_perf"); Op is its collective, ""
	// when the line is absent or the program is one partbench does not
	// model (alltoall_perf, …). sendrecv_perf is commcount.Send.
	Binary string
	Op     commcount.Op
	// NThread and NGPUs are per process (-t, -g); Graph is -G, the CUDA
	// graph launches (0: every iteration was a host launch); Validation
	// is -c. HeaderSeen says whether the "# nThread" line was there.
	NThread, NGPUs, Graph, Validation int
	HeaderSeen                        bool
	// Ranks are the "#  Rank" lines, in rank order (rank 0 lists every
	// process's ranks under MPI).
	Ranks []RankInfo
	Rows  []Row
	// AvgBusBWGBPerS is the closing "# Avg bus bandwidth" (GB/s), NaN when
	// absent.
	AvgBusBWGBPerS float64
}

// RankInfo is one "#  Rank N Group G Pid P on HOST device D [BUS] GPU" line.
type RankInfo struct {
	Rank, Device int
	Host, Bus    string
	GPU          string
}

// Result is one half of a data row: out-of-place or in-place.
type Result struct {
	TimeUS, AlgBWGBPerS, BusBWGBPerS float64
	// Wrong is the #wrong column, −1 for N/A (validation off).
	Wrong int64
}

// Row is one data row of nonzero size.
type Row struct {
	// Line is the row's line number in the file (1-based).
	Line       int
	SizeBytes  int64
	Count      int64
	Type       string
	Redop      string
	Root       int
	OutOfPlace Result
	InPlace    Result
}

// NRanks is the number of ranks in the run: the "#  Rank" lines, or
// nThread × nGpus when the file has none (one process).
func (o *Output) NRanks() int {
	if len(o.Ranks) > 0 {
		return len(o.Ranks)
	}
	return o.NThread * o.NGPUs
}

// Hosts are the distinct host names of the ranks, in rank order.
func (o *Output) Hosts() []string {
	return distinct(o.Ranks, func(r RankInfo) string { return r.Host })
}

// GPUs are the distinct GPU names of the ranks, in rank order.
func (o *Output) GPUs() []string { return distinct(o.Ranks, func(r RankInfo) string { return r.GPU }) }

func distinct(rs []RankInfo, key func(RankInfo) string) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rs {
		if k := key(r); k != "" && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// VersionString spells an NCCL_VERSION_CODE as a version: NCCL's
// NCCL_VERSION(X,Y,Z) is X*10000+Y*100+Z from 2.9 on and X*1000+Y*100+Z
// before, so 22902 is 2.29.2 and 2708 is 2.7.8. Zero is "".
func VersionString(code int) string {
	switch {
	case code <= 0:
		return ""
	case code >= 10000:
		return fmt.Sprintf("%d.%d.%d", code/10000, code/100%100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/1000, code/100%10, code%100)
}

// Binaries maps the nccl-tests programs partbench models to their op.
var Binaries = map[string]commcount.Op{
	"all_reduce_perf":     commcount.AllReduce,
	"all_gather_perf":     commcount.AllGather,
	"reduce_scatter_perf": commcount.ReduceScatter,
	"broadcast_perf":      commcount.Broadcast,
	"reduce_perf":         commcount.Reduce,
	"sendrecv_perf":       commcount.Send,
}

// TypeBytes is the element size of an nccl-tests type name (the type
// column), false for a name it does not print.
func TypeBytes(name string) (int64, bool) {
	switch name {
	case "int8", "uint8", "f8e4m3", "f8e5m2":
		return 1, true
	case "half", "bfloat16":
		return 2, true
	case "int32", "uint32", "float":
		return 4, true
	case "int64", "uint64", "double":
		return 8, true
	}
	return 0, false
}

var (
	reVersion = regexp.MustCompile(`^#\s*nccl-tests version (\S+) nccl-headers=(\d+) nccl-library=(\d+)`)
	reStart   = regexp.MustCompile(`^#\s*Collective test starting:\s*(\S+)`)
	reThreads = regexp.MustCompile(`^#\s*nThread (\d+) nGpus (\d+) `)
	reGraph   = regexp.MustCompile(`\bgraph: (\d+)`)
	reValid   = regexp.MustCompile(`\bvalidation: (\d+)`)
	reRank    = regexp.MustCompile(`^#\s+Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$`)
	reAvg     = regexp.MustCompile(`^#\s*Avg bus bandwidth\s*:\s*(\S+)`)
	// Launcher prefixes: mpirun --tag-output ("[1,0]<stdout>:") and
	// srun --label ("0: ").
	rePrefix = regexp.MustCompile(`^(\[\d+,\d+\]<std(out|err)>:|\s*\d+: )`)
	reDate   = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	reClock  = regexp.MustCompile(`^\d{2}:\d{2}:\d{2}$`)
)

// maxPerProcess bounds nThread and nGpus (a process drives the GPUs of
// one host).
const maxPerProcess = 1024

// rowFields are the columns of a data row, for errors.
var rowFields = []string{"size", "count", "type", "redop", "root",
	"time (out-of-place)", "algbw (out-of-place)", "busbw (out-of-place)", "#wrong (out-of-place)",
	"time (in-place)", "algbw (in-place)", "busbw (in-place)", "#wrong (in-place)"}

// ParseOutput reads nccl-tests' text output from r; name is the file for
// errors. Lines it does not recognise (NCCL INFO/WARN, other "#" lines,
// launcher chatter) are skipped; a line whose first field is an integer is
// a data row and must be whole. Rows of size 0 are dropped. Errors name the
// file, the line, the field and the value.
func ParseOutput(r io.Reader, name string) (*Output, error) {
	o := &Output{Name: name, AvgBusBWGBPerS: math.NaN()}
	lr := &io.LimitedReader{R: r, N: MaxOutputBytes + 1}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 64<<10), MaxOutputBytes+1)
	seenRank := map[int]bool{}
	started := 0
	var prev *Row
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimRight(rePrefix.ReplaceAllString(sc.Text(), ""), "\r")
		trimmed := strings.TrimSpace(text)
		if strings.HasPrefix(trimmed, "#") {
			if m := reStart.FindStringSubmatch(trimmed); m != nil {
				if started++; started > 1 || len(o.Rows) > 0 {
					return nil, fmt.Errorf("%s:%d: a second run starts (%s): give one nccl-tests run per file", name, line, m[1])
				}
				o.Binary = filepath.Base(m[1])
				o.Op = Binaries[o.Binary]
			}
			if err := o.header(trimmed, name, line, seenRank); err != nil {
				return nil, err
			}
			continue
		}
		f := strings.Fields(trimmed)
		if len(f) == 0 {
			continue
		}
		if _, err := strconv.ParseInt(f[0], 10, 64); err != nil {
			continue // not a data row: NCCL INFO, launcher output, …
		}
		row, err := parseRow(f, name, line)
		if err != nil {
			return nil, err
		}
		if row.SizeBytes == 0 {
			continue
		}
		if prev != nil && row.SizeBytes <= prev.SizeBytes {
			return nil, fmt.Errorf("%s:%d: size %d is not above the previous row's %d (line %d): one run of one -d type and one -o op per file, sizes increasing",
				name, line, row.SizeBytes, prev.SizeBytes, prev.Line)
		}
		o.Rows = append(o.Rows, row)
		prev = &o.Rows[len(o.Rows)-1]
	}
	if err := sc.Err(); err != nil {
		if lr.N <= 0 || err == bufio.ErrTooLong {
			return nil, fmt.Errorf("%s: larger than %d MiB; nccl-tests output is a few kB per run: is it the right file?", name, MaxOutputBytes>>20)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if lr.N <= 0 {
		return nil, fmt.Errorf("%s: larger than %d MiB; nccl-tests output is a few kB per run: is it the right file?", name, MaxOutputBytes>>20)
	}
	if len(o.Rows) == 0 {
		return nil, fmt.Errorf("%s: no data rows of nonzero size (size count type redop root time algbw busbw #wrong …): is it nccl-tests output?", name)
	}
	return o, nil
}

// header reads one "#" line into o.
func (o *Output) header(s, name string, line int, seenRank map[int]bool) error {
	atoi := func(field, v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("%s:%d: %s %q: not an integer", name, line, field, v)
		}
		return n, nil
	}
	var err error
	if m := reVersion.FindStringSubmatch(s); m != nil {
		o.TestsVersion = m[1]
		if o.HeadersCode, err = atoi("nccl-headers", m[2]); err != nil {
			return err
		}
		o.LibraryCode, err = atoi("nccl-library", m[3])
		return err
	}
	if m := reThreads.FindStringSubmatch(s); m != nil {
		o.HeaderSeen = true
		if o.NThread, err = atoi("nThread", m[1]); err != nil {
			return err
		}
		if o.NGPUs, err = atoi("nGpus", m[2]); err != nil {
			return err
		}
		if o.NThread > maxPerProcess || o.NGPUs > maxPerProcess {
			return fmt.Errorf("%s:%d: nThread %d, nGpus %d: more than %d per process", name, line, o.NThread, o.NGPUs, maxPerProcess)
		}
		if g := reGraph.FindStringSubmatch(s); g != nil {
			if o.Graph, err = atoi("graph", g[1]); err != nil {
				return err
			}
		}
		if v := reValid.FindStringSubmatch(s); v != nil {
			o.Validation, err = atoi("validation", v[1])
		}
		return err
	}
	if m := reRank.FindStringSubmatch(s); m != nil {
		rank, err := atoi("Rank", m[1])
		if err != nil {
			return err
		}
		dev, err := atoi("device", m[3])
		if err != nil {
			return err
		}
		if !seenRank[rank] {
			seenRank[rank] = true
			o.Ranks = append(o.Ranks, RankInfo{Rank: rank, Device: dev, Host: m[2], Bus: m[4], GPU: strings.TrimSpace(m[5])})
		}
		return nil
	}
	if m := reAvg.FindStringSubmatch(s); m != nil {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("%s:%d: Avg bus bandwidth %q: not a finite number ≥ 0", name, line, m[1])
		}
		o.AvgBusBWGBPerS = v
	}
	return nil
}

// parseRow reads the fields of one data row: 13, or 15 when -R printed
// a timestamp (date and clock) after the in-place half.
func parseRow(f []string, name string, line int) (Row, error) {
	if len(f) == 15 && reDate.MatchString(f[13]) && reClock.MatchString(f[14]) {
		f = f[:13]
	}
	if len(f) != 13 {
		return Row{}, fmt.Errorf("%s:%d: data row has %d fields, want 13 (%s)", name, line, len(f), strings.Join(rowFields, ", "))
	}
	bad := func(i int, why string) error {
		return fmt.Errorf("%s:%d: %s %q: %s", name, line, rowFields[i], f[i], why)
	}
	r := Row{Line: line, Type: f[2], Redop: f[3]}
	var err error
	if r.SizeBytes, err = strconv.ParseInt(f[0], 10, 64); err != nil || r.SizeBytes < 0 {
		return r, bad(0, "not an integer ≥ 0")
	}
	if r.Count, err = strconv.ParseInt(f[1], 10, 64); err != nil || r.Count < 0 {
		return r, bad(1, "not an integer ≥ 0")
	}
	if _, err := strconv.ParseFloat(f[2], 64); err == nil {
		return r, bad(2, "a number where the type name (float, half, …) belongs")
	}
	root, err := strconv.Atoi(f[4])
	if err != nil || root < -1 {
		return r, bad(4, "not an integer ≥ −1")
	}
	r.Root = root
	for half, res := range []*Result{&r.OutOfPlace, &r.InPlace} {
		base := 5 + 4*half
		for j, p := range []*float64{&res.TimeUS, &res.AlgBWGBPerS, &res.BusBWGBPerS} {
			v, err := strconv.ParseFloat(f[base+j], 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return r, bad(base+j, "not a finite number ≥ 0")
			}
			*p = v
		}
		w := f[base+3]
		if w == "N/A" {
			res.Wrong = -1
			continue
		}
		v, err := strconv.ParseFloat(w, 64)
		if err != nil || v < 0 || v != math.Trunc(v) || v > math.MaxInt64/2 {
			return r, bad(base+3, "not a count ≥ 0 or N/A")
		}
		res.Wrong = int64(v)
	}
	return r, nil
}
