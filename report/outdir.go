package report

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// probeBytes is what the --output-dir probe writes and syncs: enough that a full
// file system refuses it (an empty file needs no data block).
const probeBytes = 4096

// CheckOutDir makes sure results can be written to dir before a run starts:
// it creates dir if missing, then creates, fills, syncs and removes a probe
// file. The error names the flag, the directory and why.
func CheckOutDir(dir string) error {
	if dir == "" {
		return nil
	}
	bad := func(why string, err error) error {
		return fmt.Errorf("--output-dir %s: %s (%v); results could not be saved, so the run does not start", dir, why, err)
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return fmt.Errorf("--output-dir %s: exists and is not a directory; results could not be saved, so the run does not start", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return bad("cannot create the directory", err)
	}
	f, err := os.CreateTemp(dir, ".partbench-probe-*")
	if err != nil {
		return bad("cannot create a file there", err)
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(make([]byte, probeBytes))
	if werr == nil {
		werr = f.Sync()
	}
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr != nil {
		why := "cannot write a file there"
		if errors.Is(werr, syscall.ENOSPC) {
			why = "the file system is full"
		}
		return bad(why, werr)
	}
	if err := os.Remove(f.Name()); err != nil {
		return bad("cannot remove a file there", err)
	}
	return nil
}

// OutFile is one results file: its name in --output-dir and how to write it.
type OutFile struct {
	Name  string
	Write func(io.Writer) error
}

// WriteOutFiles writes every file into dir atomically, each tried even when
// another failed. If one cannot be written, fallback (the results as JSON)
// goes to stdout so the run is not lost, and the error says which files are
// missing, which were written, and where the results went instead.
func WriteOutFiles(dir string, files []OutFile, stdout io.Writer, fallback func(io.Writer) error) error {
	if dir == "" {
		return nil
	}
	var failed error
	mkErr := os.MkdirAll(dir, 0o755)
	if mkErr != nil {
		failed = mkErr
	}
	var missing, written []string
	for _, f := range files {
		if mkErr != nil {
			missing = append(missing, f.Name)
			continue
		}
		// Every file is tried: one that cannot be formatted (a value JSON
		// cannot hold) does not cost the others.
		if err := WriteFileAtomic(filepath.Join(dir, f.Name), f.Write); err != nil {
			if failed == nil {
				failed = err
			}
			missing = append(missing, f.Name)
			continue
		}
		written = append(written, f.Name)
	}
	if failed == nil {
		return nil
	}
	where := "the results are above"
	if fallback != nil {
		if err := fallback(stdout); err != nil {
			if len(written) > 0 {
				return fmt.Errorf("--output-dir %s: cannot write %v (%v), nor print them (%v); %v written", dir, missing, failed, err, written)
			}
			return fmt.Errorf("--output-dir %s: cannot write %v (%v), nor print the results: %w", dir, missing, failed, err)
		}
		where = "the results were printed to standard output as JSON instead"
	}
	return fmt.Errorf("--output-dir %s: cannot write %v (%v); %s", dir, missing, failed, where)
}
