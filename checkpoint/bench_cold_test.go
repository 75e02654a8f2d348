package checkpoint

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// evict drops path from the page cache: all clean pages through
// /proc/sys/vm/drop_caches where permitted, else the file's own pages with
// posix_fadvise(POSIX_FADV_DONTNEED). It says which it used.
func evict(b *testing.B, path string) string {
	b.Helper()
	unix.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("1\n"), 0); err == nil {
		return "drop_caches"
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		b.Fatalf("posix_fadvise DONTNEED %s: %v", path, err)
	}
	return "fadvise"
}

// procStatusKB is a field of /proc/self/status in KiB (0 if absent).
func procStatusKB(b *testing.B, field string) int64 {
	b.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkRankSlicesCold measures, in one run and on a cold page cache
// each time (evict), the disk's sequential read of the whole checkpoint and
// a tensor-parallel rank 0 reading its shards through the memory map
// (converted to float32), and reports both bandwidths, their ratio (the
// slice bandwidth counts the bytes of the file the rank needs) and the
// growth of anonymous memory (the rank's float32 buffers) against the
// rank's share of the file converted to float32. Set PARTBENCH_CKPT_BENCH_MB
// (default 64; a multi-GB file for a real measurement) and -benchtime=1x.
func BenchmarkRankSlicesCold(b *testing.B) {
	mb := 64
	if s := os.Getenv("PARTBENCH_CKPT_BENCH_MB"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("PARTBENCH_CKPT_BENCH_MB = %q: must be a positive integer", s)
		}
		mb = v
	}
	path, layers := benchCheckpoint(b, mb)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, tp := range []int{1, 2, 8} {
		b.Run(fmt.Sprintf("tp=%d", tp), func(b *testing.B) {
			buf := make([]byte, 4<<20)
			var seqNS, sliceNS, sliceBytes, anonKB int64
			how := ""
			for i := 0; i < b.N; i++ {
				how = evict(b, path)
				t0 := time.Now()
				r, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf); err != nil {
					b.Fatal(err)
				}
				r.Close()
				seqNS += time.Since(t0).Nanoseconds()

				evict(b, path)
				anon0 := procStatusKB(b, "RssAnon")
				t1 := time.Now()
				f, err := Open(path)
				if err != nil {
					b.Fatal(err)
				}
				dst := map[string][]float32{}
				sliceBytes = 0
				for l := 0; l < layers; l++ {
					p := fmt.Sprintf("model.layers.%d.", l)
					for _, m := range []struct {
						name string
						cols bool
					}{
						{"self_attn.q_proj.weight", false}, {"self_attn.k_proj.weight", false}, {"self_attn.v_proj.weight", false},
						{"self_attn.o_proj.weight", true},
						{"mlp.gate_proj.weight", false}, {"mlp.up_proj.weight", false}, {"mlp.down_proj.weight", true},
					} {
						x, _ := f.Tensor(p + m.name)
						dim := x.Info.Shape[0]
						if m.cols {
							dim = x.Info.Shape[1]
						}
						out := make([]float32, x.Info.Elements()/int64(tp))
						dst[x.Info.Name] = out
						if m.cols {
							err = x.ReadCols(out, 0, dim/int64(tp))
						} else {
							err = x.ReadRows(out, 0, dim/int64(tp))
						}
						if err != nil {
							b.Fatal(err)
						}
						sliceBytes += 2 * int64(len(out))
					}
				}
				sliceNS += time.Since(t1).Nanoseconds()
				anonKB = max(anonKB, procStatusKB(b, "RssAnon")-anon0)
				f.Close()
				for k := range dst {
					delete(dst, k)
				}
			}
			seqBps := float64(st.Size()) * float64(b.N) / (float64(seqNS) / 1e9)
			sliceBps := float64(sliceBytes) * float64(b.N) / (float64(sliceNS) / 1e9)
			b.ReportMetric(seqBps/1e6, "seq-MB/s")
			b.ReportMetric(sliceBps/1e6, "slice-MB/s")
			b.ReportMetric(sliceBps/seqBps, "slice/seq")
			b.ReportMetric(float64(anonKB)*1024/1e6, "anon-MB")
			b.ReportMetric(float64(2*sliceBytes)/1e6, "share-f32-MB")
			b.Logf("file %.0f MB, eviction by %s", float64(st.Size())/1e6, how)
		})
	}
}
