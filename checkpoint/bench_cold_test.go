//go:build linux

package checkpoint

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partbench/partbench/checkpoint/checkpointtest"
	"github.com/partbench/partbench/stats"
)

// evict and resident are checkpointtest's Evict and Resident.
func evict(b *testing.B, path string) (string, float64) { return checkpointtest.Evict(b, path) }
func resident(b *testing.B, f *os.File) float64         { return checkpointtest.Resident(b, f) }

// coldReaders are the ways a rank reads its slices that
// BenchmarkRankSlicesCold compares: tensor by tensor (ReadRows / ReadCols,
// each tensor's reads planned alone), and the whole list at once
// (ReadSlices) with the default gap read through, the same with its reads
// advised to the kernel readAheadBytes ahead, with no gap read (only the
// slices' own pages, a request per row where a column run is not next to
// the next row's) and with every gap read (each tensor's whole span, in as
// few requests as reads allow).
var coldReaders = []coldReader{
	{"tensor", func(b *testing.B, f *File, s []Slice) {
		for _, x := range s {
			if err := x.read(); err != nil {
				b.Fatal(err)
			}
		}
	}},
	{"batch", func(b *testing.B, f *File, s []Slice) {
		if err := ReadSlices(s); err != nil {
			b.Fatal(err)
		}
	}},
	{"gap0", func(b *testing.B, f *File, s []Slice) {
		if err := readSlices(s, ioPlan{gap: 0, maxRead: parallelMinBytes, inFlight: ReadsInFlight()}); err != nil {
			b.Fatal(err)
		}
	}},
	{"ahead", func(b *testing.B, f *File, s []Slice) {
		p := defaultPlan()
		p.ahead = readAheadBytes
		if err := readSlices(s, p); err != nil {
			b.Fatal(err)
		}
	}},
	{"span", func(b *testing.B, f *File, s []Slice) {
		if err := readSlices(s, ioPlan{gap: 1 << 40, maxRead: parallelMinBytes, inFlight: ReadsInFlight()}); err != nil {
			b.Fatal(err)
		}
	}},
}

// readParallel reads the whole file at path as ReadSlices reads its ranges
// (readahead off, reads of parallelMinBytes front to back, ReadsInFlight at
// once) without converting: the disk's rate for the whole file when it is
// given several requests at a time, where readSequential gives it one.
func readParallel(b *testing.B, path string) {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	adviseExplicit(f)
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < ReadsInFlight(); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, parallelMinBytes)
			for {
				off := (next.Add(1) - 1) * parallelMinBytes
				if off >= st.Size() {
					return
				}
				n := min(parallelMinBytes, st.Size()-off)
				if _, err := f.ReadAt(buf[:n], off); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

type coldReader struct {
	name string
	read func(b *testing.B, f *File, s []Slice)
}

// neededBytes is the bytes of the pages holding the slices' runs: what the
// kernel must read from disk for them, whatever the reader.
func neededBytes(s []Slice, size int64) int64 {
	page := int64(os.Getpagesize())
	need := make([]bool, (size+page-1)/page)
	mark := func(lo, hi int64) {
		for p := lo / page; p <= (hi-1)/page; p++ {
			need[p] = true
		}
	}
	for _, x := range s {
		t := x.Tensor
		es := t.Info.DType.Size()
		if !x.Cols {
			cols := int64(1)
			if len(t.Info.Shape) == 2 {
				cols = t.Info.Shape[1]
			}
			if n := int64(len(x.Dst)) * es; n > 0 {
				mark(t.off+x.Lo*cols*es, t.off+x.Lo*cols*es+n)
			}
			continue
		}
		cols, w := t.Info.Shape[1], x.Hi-x.Lo
		for r := int64(0); w > 0 && r < t.Info.Shape[0]; r++ {
			lo := t.off + (r*cols+x.Lo)*es
			mark(lo, lo+w*es)
		}
	}
	n := int64(0)
	for _, v := range need {
		if v {
			n++
		}
	}
	return min(n*page, size)
}

// BenchmarkRankSlicesCold measures, on a cold page cache each time (evict),
// the disk's sequential read of the whole checkpoint and a tensor-parallel
// rank 0 reading its shards (converted to float32) by each of coldReaders,
// as pairs: every iteration reads, for each reader, the file sequentially
// (one stream, then several reads in flight) and then the rank's slices,
// evicting before each, so that the two of a
// pair see the disk in the same state (the disk is shared and its rate
// moves several-fold between minutes). Per reader it reports the median
// over the pairs of:
//
//   - slice/seq: the slices' bytes per second over the file's;
//   - vs-need: the time to read sequentially, at the pair's rate, the bytes
//     of the pages holding the slices (need-MB, what any reader must bring
//     in) over the reader's time: 1 is the disk-bound ideal for this layout
//     and TP degree, whose slice/seq is bound-slice/seq = slice bytes /
//     needed bytes;
//   - slice/pseq and vs-need-p: the same against the file read with several
//     reads in flight (readParallel, timed in the same pair after its own
//     eviction), which the disk serves faster than one stream;
//
// and read-in-MB, what the kernel brought in for the reader (mincore after
// it), and the lowest and highest slice/seq of the pairs; with -test.v it
// prints every pair. Set PARTBENCH_CKPT_BENCH_MB (default 64; a multi-GB
// file for a real measurement), PARTBENCH_CKPT_BENCH_SHAPE (small or
// llama7b) and PARTBENCH_CKPT_BENCH_READERS (a comma-separated list of
// coldReaders' names; default tensor,batch). Go runs one iteration before
// the -benchtime ones: its pairs are printed but not in the figures.
func BenchmarkRankSlicesCold(b *testing.B) {
	path, layers, size := benchFile(b)
	readers := coldReaders[:2] // tensor and batch
	if v := os.Getenv("PARTBENCH_CKPT_BENCH_READERS"); v != "" {
		readers = nil
		for _, name := range strings.Split(v, ",") {
			i := slices.IndexFunc(coldReaders, func(r coldReader) bool { return r.name == name })
			if i < 0 {
				b.Fatalf("PARTBENCH_CKPT_BENCH_READERS = %q: reader %q unknown (allowed: tensor, batch, ahead, gap0, span)", v, name)
			}
			readers = append(readers, coldReaders[i])
		}
	}
	for _, tp := range []int{1, 2, 8} {
		b.Run(fmt.Sprintf("tp=%d", tp), func(b *testing.B) {
			open := func() *File {
				f, err := Open(path)
				if err != nil {
					b.Fatal(err)
				}
				return f
			}
			buf := make([]byte, 4<<20)
			dst := map[string][]float32{} // the rank's buffers, in memory before any timing
			f := open()
			s := rankSlices(f, layers, tp, dst)
			sliceN, needN := sliceBytes(s), neededBytes(s, size)
			f.Close() // its mapping would keep the header's page in the cache
			ratios := make([][]float64, len(readers))
			vsNeed := make([][]float64, len(readers))
			ratiosP := make([][]float64, len(readers))
			vsNeedP := make([][]float64, len(readers))
			readIn := make([]float64, len(readers))
			how, left := "", 0.0
			for i := 0; i < b.N; i++ {
				for k := range readers {
					k := (k + i) % len(readers) // each reader takes each place in turn
					if h, l := evict(b, path); how == "" || h != how || l > left {
						how, left = h, l
					}
					t0 := time.Now()
					readSequential(b, path, buf)
					seq := time.Since(t0).Seconds()

					if h, l := evict(b, path); h != how || l > left {
						how, left = h, l
					}
					t0 = time.Now()
					readParallel(b, path)
					pseq := time.Since(t0).Seconds()

					if h, l := evict(b, path); h != how || l > left {
						how, left = h, l
					}
					t1 := time.Now()
					f := open()
					readers[k].read(b, f, rankSlices(f, layers, tp, dst))
					slice := time.Since(t1).Seconds()
					f.Close()
					if fd, err := os.Open(path); err == nil { // what the kernel read in for the slices
						readIn[k] = max(readIn[k], resident(b, fd)*float64(size))
						fd.Close()
					}
					seqBps := float64(size) / seq
					r := float64(sliceN) / slice / seqBps
					v := float64(needN) / seqBps / slice
					pseqBps := float64(size) / pseq
					rp, vp := float64(sliceN)/slice/pseqBps, float64(needN)/pseqBps/slice
					ratios[k] = append(ratios[k], r)
					vsNeed[k] = append(vsNeed[k], v)
					ratiosP[k] = append(ratiosP[k], rp)
					vsNeedP[k] = append(vsNeedP[k], vp)
					if testing.Verbose() { // every pair (b.Logf keeps only a benchmark's first lines)
						fmt.Printf("pair tp=%d N=%d iteration %d %s: seq %.0f MB/s, pseq %.0f MB/s, slices %.0f MB/s, slice/seq %.3f, vs-need %.3f, slice/pseq %.3f, vs-need-p %.3f\n",
							tp, b.N, i, readers[k].name, seqBps/1e6, pseqBps/1e6, float64(sliceN)/slice/1e6, r, v, rp, vp)
					}
				}
			}
			for k, rd := range readers {
				b.ReportMetric(stats.Median(ratios[k]), rd.name+"-slice/seq")
				b.ReportMetric(slices.Min(ratios[k]), rd.name+"-slice/seq-min")
				b.ReportMetric(slices.Max(ratios[k]), rd.name+"-slice/seq-max")
				b.ReportMetric(stats.Median(vsNeed[k]), rd.name+"-vs-need")
				b.ReportMetric(stats.Median(ratiosP[k]), rd.name+"-slice/pseq")
				b.ReportMetric(stats.Median(vsNeedP[k]), rd.name+"-vs-need-p")
				b.ReportMetric(readIn[k]/1e6, rd.name+"-read-in-MB")
			}
			b.ReportMetric(float64(sliceN)/float64(needN), "bound-slice/seq")
			b.ReportMetric(float64(needN)/1e6, "need-MB")
			b.ReportMetric(float64(sliceN)/1e6, "slice-MB")
			b.ReportMetric(left, "resident-after-evict")
			b.Logf("file %.0f MB, %d layers, eviction by %s, %.4f of its pages resident after", float64(size)/1e6, layers, how, left)
		})
	}
}
