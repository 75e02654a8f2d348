package report

import (
	"io"

	"github.com/partbench/partbench/fileio"
)

// WriteFileAtomic writes a file so a reader never sees a partial one,
// without destroying a symlink or a special file at path (see
// fileio.WriteAtomic): what every --output, --trace and results file does.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	return fileio.WriteAtomic(path, write)
}
