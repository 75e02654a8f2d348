package tcpcomm

import "runtime"

// runtimeMem is the process's cumulative heap allocation.
type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.total = s.TotalAlloc
}
