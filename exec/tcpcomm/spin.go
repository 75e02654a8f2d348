package tcpcomm

import (
	"encoding/hex"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/partbench/partbench/exec/shmcomm"
)

// SpinEnv sets how the shared-memory waits of a Comm whose Options do not
// say spin before they sleep on the futex: auto (the default: off where
// the host's ranks outnumber the CPUs they may run on, adaptive
// otherwise), off, adaptive or always, the last two optionally with a
// spin's length (adaptive:50us).
const SpinEnv = "PARTBENCH_SHM_SPIN"

// cpuMask is the set of CPUs this process may run on (its affinity mask
// where the platform has one, else runtime.NumCPU CPUs), as hex of a
// little-endian bitmap: bit i of byte i/8 is CPU i.
func cpuMask() string {
	cpus := usableCPUs()
	if len(cpus) == 0 {
		return ""
	}
	b := make([]byte, cpus[len(cpus)-1]/8+1)
	for _, c := range cpus {
		b[c/8] |= 1 << (c % 8)
	}
	return hex.EncodeToString(b)
}

// hostCPUs is the number of CPUs in the union of masks ("" or a bad mask
// counts as this process's runtime.NumCPU CPUs from 0).
func hostCPUs(masks []string) int {
	var union []byte
	for _, m := range masks {
		b, err := hex.DecodeString(m)
		if err != nil || len(b) == 0 {
			b = make([]byte, (runtime.NumCPU()+7)/8)
			for c := 0; c < runtime.NumCPU(); c++ {
				b[c/8] |= 1 << (c % 8)
			}
		}
		if len(b) > len(union) {
			union = append(union, make([]byte, len(b)-len(union))...)
		}
		for i, x := range b {
			union[i] |= x
		}
	}
	n := 0
	for _, x := range union {
		n += bits.OnesCount8(x)
	}
	return n
}

// spinPolicy decides the shared-memory waits' spin from the choice and the
// placement: ranks on this host and the CPUs they may run on together.
// Under auto a host whose ranks outnumber its CPUs does not spin (a
// spinning rank takes the CPU its partner needs); otherwise the spin is
// adaptive. why says how it was decided.
func spinPolicy(c shmcomm.SpinChoice, ranksOnHost, cpus int) (mode shmcomm.SpinMode, length time.Duration, why string) {
	if !c.Auto {
		return c.Mode, c.Length, fmt.Sprintf("%s %s", SpinEnv, c.Mode)
	}
	if ranksOnHost > cpus {
		return shmcomm.SpinOff, 0, fmt.Sprintf("auto: %d ranks on this host, %d CPUs to run on", ranksOnHost, cpus)
	}
	return shmcomm.SpinAdaptive, 0, fmt.Sprintf("auto: %d ranks on this host, %d CPUs to run on", ranksOnHost, cpus)
}

// resolveSpin reads Options.Spin, else SpinEnv.
func (o *Options) resolveSpin() (shmcomm.SpinChoice, error) {
	if o.Spin != "" {
		return shmcomm.ParseSpin("tcpcomm: Options.Spin", o.Spin)
	}
	if v, ok := os.LookupEnv(SpinEnv); ok {
		c, err := shmcomm.ParseSpin(SpinEnv, v)
		if err != nil {
			return c, fmt.Errorf("tcpcomm: %w", err)
		}
		return c, nil
	}
	return shmcomm.SpinChoice{Auto: true}, nil
}

// firstCPUs is CPUs 0 to n−1.
func firstCPUs(n int) []int {
	cpus := make([]int, n)
	for i := range cpus {
		cpus[i] = i
	}
	return cpus
}

// WaitLogEnv names a folder where each rank writes the log of its
// shared-memory waits when its communicator closes, one file per peer
// (waits-rR-pQ.tsv: shmcomm.WriteLog's columns), for a study of the spin
// policy; unset, nothing is kept.
const WaitLogEnv = "PARTBENCH_SHM_WAITLOG"

// waitLogMax bounds a link's log (a 30-iteration tiny run waits about
// 10^4 times per link).
const waitLogMax = 1 << 18

// waitLogDir is WaitLogEnv's folder ("" when unset), refused unless it is
// an existing folder.
func waitLogDir() (string, error) {
	dir := os.Getenv(WaitLogEnv)
	if dir == "" {
		return "", nil
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("tcpcomm: %s=%q: not an existing folder (want one for the wait logs, or unset it)", WaitLogEnv, dir)
	}
	return dir, nil
}

// writeWaitLogs writes every shared-memory peer's wait log into dir.
func (c *Comm) writeWaitLogs(dir string) error {
	for _, p := range c.peers {
		if p == nil || p.shm == nil {
			continue
		}
		recs, dropped := p.shm.Spin.Log()
		name := filepath.Join(dir, fmt.Sprintf("waits-r%d-p%d.tsv", c.rank, p.rank))
		f, err := os.Create(name)
		if err != nil {
			return fmt.Errorf("tcpcomm: %s: %w", WaitLogEnv, err)
		}
		err = shmcomm.WriteLog(f, recs)
		if err == nil && dropped > 0 {
			_, err = fmt.Fprintf(f, "# %d waits past the first %d not kept\n", dropped, waitLogMax)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("tcpcomm: %s: %s: %w", WaitLogEnv, name, err)
		}
	}
	return nil
}
