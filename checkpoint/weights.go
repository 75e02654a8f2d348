package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/partbench/partbench/arch"
	"github.com/partbench/partbench/fileio"
)

// The file names of the Hugging Face layout.
const (
	SingleFile = "model.safetensors"
	IndexFile  = "model.safetensors.index.json"
	ConfigFile = arch.ConfigFile
)

// MaxIndexBytes bounds model.safetensors.index.json: one line per tensor,
// about 100 KiB for a 70B-parameter Llama.
const MaxIndexBytes = 16 << 20

// Weights is the safetensors weights of one model directory: a single
// model.safetensors, or the shards named by model.safetensors.index.json.
type Weights struct {
	Dir   string
	files []*File
	where map[string]*File // tensor name → the file holding it
}

// index is model.safetensors.index.json; "metadata" (total_size) is not
// checked: transformers versions disagree on what it counts.
type index struct {
	WeightMap map[string]string `json:"weight_map"`
}

// OpenWeights opens the weights in dir. Like transformers, it prefers
// model.safetensors when present and reads the index otherwise. Every shard
// is mapped and validated; every tensor the index names must be in its shard,
// and every tensor of a shard must be in the index.
func OpenWeights(dir string) (*Weights, error) {
	w := &Weights{Dir: dir, where: map[string]*File{}}
	single := filepath.Join(dir, SingleFile)
	if _, err := os.Stat(single); err == nil {
		f, err := Open(single)
		if err != nil {
			return nil, err
		}
		w.files = []*File{f}
		for _, n := range f.Names() {
			w.where[n] = f
		}
		return w, nil
	}
	ipath := filepath.Join(dir, IndexFile)
	data, err := fileio.ReadSmall(ipath, IndexFile, MaxIndexBytes)
	if errors.Is(err, fs.ErrNotExist) {
		hint := ""
		if _, e := os.Stat(filepath.Join(dir, "pytorch_model.bin")); e == nil {
			hint = " (pytorch_model.bin is not read: it is a pickle; convert it to safetensors)"
		}
		return nil, fmt.Errorf("%s: neither %s nor %s%s", dir, SingleFile, IndexFile, hint)
	} else if err != nil {
		return nil, err
	}
	var idx index
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("%s: %w", ipath, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("%s: weight_map is missing or empty", ipath)
	}
	shards := map[string]*File{}
	defer func() {
		if w.files == nil { // failed: unmap what was opened
			for _, f := range shards {
				f.Close()
			}
		}
	}()
	for _, name := range sortedKeys(idx.WeightMap) {
		shard := idx.WeightMap[name]
		if shard == "" || shard != filepath.Base(shard) || shard == "." || shard == ".." || strings.ContainsAny(shard, `/\`) {
			return nil, fmt.Errorf("%s: weight_map[%q] = %q: must be a file name in the same directory", ipath, name, shard)
		}
		f := shards[shard]
		if f == nil {
			if f, err = Open(filepath.Join(dir, shard)); err != nil {
				return nil, fmt.Errorf("%s: weight_map[%q]: %w", ipath, name, err)
			}
			shards[shard] = f
		}
		if _, ok := f.Tensor(name); !ok {
			return nil, fmt.Errorf("%s: tensor %q is mapped to %s, which does not hold it", ipath, name, f.Path())
		}
		w.where[name] = f
	}
	files := make([]*File, 0, len(shards))
	for _, shard := range sortedKeys(shards) {
		f := shards[shard]
		for _, n := range f.Names() {
			if w.where[n] != f {
				return nil, fmt.Errorf("%s: tensor %q is in %s but not mapped to it by %s", dir, n, f.Path(), IndexFile)
			}
		}
		files = append(files, f)
	}
	w.files = files
	return w, nil
}

func sortedKeys[V any](m map[string]V) []string {
	b := make(map[string]bool, len(m))
	for k := range m {
		b[k] = true
	}
	return sortedNames(b)
}

// Close unmaps every file.
func (w *Weights) Close() error {
	var errs []error
	for _, f := range w.files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// ReadDirect opens every file of w that is read with pread a second time,
// for direct I/O (O_DIRECT on Linux), and reports whether any was: its
// large reads then go from the device into the reader's buffers without
// the page cache (no copy of every byte by the kernel, none of the file's
// pages kept). For a file one process reads once, such as a rank's
// pre-sharded file, not for one several ranks read (their reads share
// the cache). Where the system or file system has no direct I/O the reads
// stay as they were.
func (w *Weights) ReadDirect() bool {
	opened := false
	for _, f := range w.files {
		if f.fd != nil && f.direct == nil {
			f.direct = openDirect(f.path)
		}
		opened = opened || f.direct != nil
	}
	return opened
}

// Files lists the mapped files in name order.
func (w *Weights) Files() []*File { return w.files }

// Names lists every tensor, sorted.
func (w *Weights) Names() []string {
	b := make(map[string]bool, len(w.where))
	for k := range w.where {
		b[k] = true
	}
	return sortedNames(b)
}

// Tensor returns a view of the named tensor.
func (w *Weights) Tensor(name string) (Tensor, bool) {
	f, ok := w.where[name]
	if !ok {
		return Tensor{}, false
	}
	return f.Tensor(name)
}

// Expect returns the tensor a spec names (its Name, else its Alt), checking
// its shape and that its dtype converts to float32. Errors name the tensor
// and the file (or the directory, when the tensor is missing).
func (w *Weights) Expect(s TensorSpec) (Tensor, error) {
	t, ok := w.Tensor(s.Name)
	if !ok && s.Alt != "" {
		t, ok = w.Tensor(s.Alt)
	}
	if !ok {
		return Tensor{}, fmt.Errorf("%s: tensor %q is missing from the checkpoint", w.Dir, s.Name)
	}
	if !slices.Equal(t.Info.Shape, s.Shape) {
		return Tensor{}, t.errorf("shape %v, the config needs %v", t.Info.Shape, s.Shape)
	}
	if err := t.checkFloat(); err != nil {
		return Tensor{}, err
	}
	return t, nil
}
