//go:build linux

package checkpointtest

import (
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Evict drops path from the page cache for a cold-cache benchmark: the
// file's own pages with posix_fadvise(POSIX_FADV_DONTNEED) (other jobs'
// caches are left alone), checked with mincore; where pages stay resident,
// all clean pages through /proc/sys/vm/drop_caches if permitted. It says
// which it used and the share of the file still resident afterwards.
func Evict(tb testing.TB, path string) (string, float64) {
	tb.Helper()
	unix.Sync()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		tb.Fatalf("posix_fadvise DONTNEED %s: %v", path, err)
	}
	if r := Resident(tb, f); r == 0 {
		return "fadvise", 0
	}
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("1\n"), 0); err == nil {
		return "drop_caches", Resident(tb, f)
	}
	return "fadvise", Resident(tb, f)
}

// Resident is the share of f's pages in the page cache (mincore).
func Resident(tb testing.TB, f *os.File) float64 {
	tb.Helper()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return 0
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		tb.Fatal(err)
	}
	defer unix.Munmap(m)
	page := int64(os.Getpagesize())
	vec := make([]byte, (st.Size()+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		tb.Fatalf("mincore %s: %v", f.Name(), e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return float64(n) / float64(len(vec))
}
