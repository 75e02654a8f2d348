//go:build linux

package checkpoint

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// evict drops path from the page cache: the file's own pages with
// posix_fadvise(POSIX_FADV_DONTNEED) (other jobs' caches are left alone),
// checked with mincore; where pages stay resident, all clean pages through
// /proc/sys/vm/drop_caches if permitted. It says which it used and the
// share of the file still resident afterwards.
func evict(b *testing.B, path string) (string, float64) {
	b.Helper()
	unix.Sync()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		b.Fatalf("posix_fadvise DONTNEED %s: %v", path, err)
	}
	if r := resident(b, f); r == 0 {
		return "fadvise", 0
	}
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("1\n"), 0); err == nil {
		return "drop_caches", resident(b, f)
	}
	return "fadvise", resident(b, f)
}

// resident is the share of f's pages in the page cache (mincore).
func resident(b *testing.B, f *os.File) float64 {
	b.Helper()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return 0
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Munmap(m)
	page := int64(os.Getpagesize())
	vec := make([]byte, (st.Size()+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		b.Fatalf("mincore %s: %v", f.Name(), e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return float64(n) / float64(len(vec))
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
// rank's share of the file converted to float32, and the bytes the kernel
// brought into the page cache for the slices (mincore) with the ratio they
// bound slice/seq to. Set PARTBENCH_CKPT_BENCH_MB
// (default 64; a multi-GB file for a real measurement) and -benchtime=1x.
func BenchmarkRankSlicesCold(b *testing.B) {
	path, layers, size := benchFile(b)
	for _, tp := range []int{1, 2, 8} {
		b.Run(fmt.Sprintf("tp=%d", tp), func(b *testing.B) {
			buf := make([]byte, 4<<20)
			var seqNS, sliceNS, sliceBytes, anonKB int64
			how, left, cachedFrac := "", 0.0, 0.0
			for i := 0; i < b.N; i++ {
				how, left = evict(b, path)
				t0 := time.Now()
				readSequential(b, path, buf)
				seqNS += time.Since(t0).Nanoseconds()

				if h, l := evict(b, path); h != how || l > left {
					how, left = h, l
				}
				anon0 := procStatusKB(b, "RssAnon")
				t1 := time.Now()
				f, err := Open(path)
				if err != nil {
					b.Fatal(err)
				}
				// fresh buffers every iteration: their growth is what the rank holds
				sliceBytes = readRankShards(b, f, layers, tp, map[string][]float32{})
				sliceNS += time.Since(t1).Nanoseconds()
				anonKB = max(anonKB, procStatusKB(b, "RssAnon")-anon0)
				if fd, err := os.Open(path); err == nil { // what the kernel read in for the slices
					cachedFrac = max(cachedFrac, resident(b, fd))
					fd.Close()
				}
				f.Close()
			}
			seqBps := float64(size) * float64(b.N) / (float64(seqNS) / 1e9)
			sliceBps := float64(sliceBytes) * float64(b.N) / (float64(sliceNS) / 1e9)
			b.ReportMetric(seqBps/1e6, "seq-MB/s")
			b.ReportMetric(sliceBps/1e6, "slice-MB/s")
			b.ReportMetric(sliceBps/seqBps, "slice/seq")
			b.ReportMetric(float64(anonKB)*1024/1e6, "anon-MB")
			b.ReportMetric(float64(2*sliceBytes)/1e6, "share-f32-MB")
			b.ReportMetric(left, "resident-after-evict")
			// The kernel read at least the pages holding the slices: at
			// the sequential rate, slice/seq cannot exceed the slices'
			// bytes over the bytes read in (columns of short rows share
			// their pages with the other ranks' columns).
			b.ReportMetric(float64(sliceBytes)/(cachedFrac*float64(size)), "bound-slice/seq")
			b.ReportMetric(cachedFrac*float64(size)/1e6, "read-in-MB")
			b.Logf("file %.0f MB, eviction by %s, %.4f of its pages resident after", float64(size)/1e6, how, left)
		})
	}
}
