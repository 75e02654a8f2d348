package launch

import (
	"errors"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// UsableCPUs are the CPUs this process may run on: its affinity mask.
func UsableCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var cpus []int
	for c := 0; c < len(set)*8*int(unsafe.Sizeof(set[0])); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// pinThreads sets the affinity of every thread of this process to cpus. A
// thread takes its creator's affinity, so once every thread listed is
// pinned, so are the threads they start; the list is read again until a
// reading finds no thread not yet pinned (one started by a thread before
// that thread was pinned).
func pinThreads(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	pinned := map[int]bool{}
	for range 100 {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		fresh := false
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || pinned[tid] {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
				return err
			}
			pinned[tid], fresh = true, true
		}
		if !fresh {
			return nil
		}
	}
	return errors.New("threads kept starting while they were being bound")
}
