package cpu

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Describe names the device for results files: the host CPU model.
func (c *Compute) Describe() string {
	gemm, _ := GEMM()
	return fmt.Sprintf("cpu: %s (%s, %d logical CPUs), float32, GEMM: %s", cpuModel(), runtime.GOARCH, runtime.NumCPU(), gemm)
}

// cpuModel reads the model name from /proc/cpuinfo ("unknown" elsewhere).
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
