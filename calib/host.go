package calib

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// host is what the operating system says about the machine.
type host struct {
	name     string
	cpu      string // /proc/cpuinfo "model name"
	cores    int    // logical CPUs this process may use
	memBytes int64  // MemTotal
	memAvail int64  // MemAvailable
	l1dBytes int64  // 0 when sysfs does not say
	llcBytes int64  // largest cache sysfs lists; 0 when it does not say
}

func readHost() (host, error) {
	h := host{cores: runtime.NumCPU(), cpu: runtime.GOARCH}
	h.name, _ = os.Hostname()
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				h.cpu = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return h, fmt.Errorf("read host memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "MemTotal:":
			h.memBytes = kb << 10
		case "MemAvailable:":
			h.memAvail = kb << 10
		}
	}
	if h.memBytes <= 0 {
		return h, fmt.Errorf("read host memory: /proc/meminfo has no MemTotal")
	}
	if h.memAvail <= 0 || h.memAvail > h.memBytes {
		h.memAvail = h.memBytes
	}
	h.l1dBytes, h.llcBytes = sysfsCaches("/sys/devices/system/cpu/cpu0/cache")
	return h, nil
}

// sysfsCaches reads cpu0's L1 data cache and largest cache from sysfs
// (index*/level, type, size as "48K"); zeros where it has none.
func sysfsCaches(dir string) (l1d, llc int64) {
	idx, _ := filepath.Glob(filepath.Join(dir, "index*"))
	for _, d := range idx {
		read := func(name string) string {
			b, _ := os.ReadFile(filepath.Join(d, name))
			return strings.TrimSpace(string(b))
		}
		size := parseCacheSize(read("size"))
		if size <= 0 {
			continue
		}
		if read("level") == "1" && read("type") == "Data" {
			l1d = size
		}
		if t := read("type"); t == "Unified" || t == "Data" {
			llc = max(llc, size)
		}
	}
	return l1d, llc
}

// parseCacheSize reads sysfs sizes: "48K", "1024K", "32M", or bytes.
func parseCacheSize(s string) int64 {
	mul := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mul, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mul, s = 1<<20, strings.TrimSuffix(s, "M")
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0
	}
	return v * mul
}
