package ncclcomm

import (
	"fmt"
	"sync"

	"github.com/partbench/partbench/cgo/dl"
	"github.com/partbench/partbench/nccl"
)

// NCCL stays loaded for the life of the process, one binding per library
// file, like exec/cuda's libraries: its proxy and bootstrap threads and its
// CUDA runtime state are not meant to be unloaded and loaded again, and
// every rank of a process (tests run several) shares it. A failed load is
// not remembered, so a later call searches again.
var libs struct {
	sync.Mutex
	byFile map[string]*nccl.Lib
}

// loadLib finds libnccl.so.2 (dl.NCCL) and returns the binding already made
// for that file, or makes and keeps one.
func loadLib() (*nccl.Lib, error) {
	lib, err := dl.Find(dl.NCCL())
	if err != nil {
		return nil, fmt.Errorf("nccl: %w", err)
	}
	libs.Lock()
	defer libs.Unlock()
	if libs.byFile == nil {
		libs.byFile = map[string]*nccl.Lib{}
	}
	if l, ok := libs.byFile[lib.File()]; ok {
		lib.Close() // a second reference to the loaded file
		return l, nil
	}
	l, err := nccl.LoadFrom(lib)
	if err != nil {
		lib.Close()
		return nil, err
	}
	libs.byFile[lib.File()] = l
	return l, nil
}
