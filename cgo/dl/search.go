package dl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotFound is wrapped by every *NotFoundError.
var ErrNotFound = errors.New("dl: library not found")

// Searcher finds libraries. The zero value reads the process environment
// and asks the Python interpreters on PATH (once per process).
type Searcher struct {
	// Getenv reads an environment variable; nil means os.Getenv.
	Getenv func(string) string
	// PythonDirs lists site-packages folders; nil means DefaultPythonDirs.
	// It is called only when every earlier place missed.
	PythonDirs func() []string
}

// Find searches with the zero Searcher.
func Find(spec Spec) (*Library, error) { return Searcher{}.Find(spec) }

// Attempt is one place Find looked and what it found there.
type Attempt struct {
	Place  string // "LD_LIBRARY_PATH", "$CUDA_HOME/lib64", "system loader", …
	Target string // the folder or soname tried ("" when the place was unset)
	Result string // why it did not do
}

// NotFoundError lists every place searched, in order.
type NotFoundError struct {
	Spec     Spec
	Attempts []Attempt
}

func (e *NotFoundError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dl: %s (%s) not found; searched, in order:", e.Spec.Name, strings.Join(e.Spec.Sonames, ", "))
	for _, a := range e.Attempts {
		if a.Target == "" {
			fmt.Fprintf(&b, "\n  %s: %s", a.Place, a.Result)
		} else {
			fmt.Fprintf(&b, "\n  %s %s: %s", a.Place, a.Target, a.Result)
		}
	}
	fmt.Fprintf(&b, "\nto use a library elsewhere, set %s=/path/to/%s or add its folder to LD_LIBRARY_PATH",
		e.Spec.EnvVar, e.Spec.Sonames[0])
	return b.String()
}

func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// Find returns the first of spec's libraries that opens, searching:
//  1. the file or folder in $EnvVar (when set, the only place searched);
//  2. each folder of LD_LIBRARY_PATH;
//  3. $CUDA_HOME and $CUDA_PATH, each with /lib64 and /lib;
//  4. the system loader (dlopen of the bare soname: ld.so.cache, /etc/ld.so.conf);
//  5. each of spec.CacheDirs below partbench's cache folder (CacheRoot);
//  6. each Python site-packages folder joined with each of spec.WheelDirs.
//
// In every folder the sonames are tried in order. A miss returns a
// *NotFoundError naming every place searched.
func (s Searcher) Find(spec Spec) (*Library, error) {
	if len(spec.Sonames) == 0 {
		return nil, fmt.Errorf("dl: spec %q names no soname", spec.Name)
	}
	if !cgoEnabled {
		return nil, fmt.Errorf("dl: cannot load %s (%s): %w", spec.Name, spec.Sonames[0], ErrNoCgo)
	}
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := getenv(spec.EnvVar); v != "" {
		return s.fromEnv(spec, v)
	}
	f := finder{spec: spec, seen: map[string]bool{}}
	f.unset("$"+spec.EnvVar, "not set")
	if lib := f.dirs("LD_LIBRARY_PATH", filepath.SplitList(getenv("LD_LIBRARY_PATH"))); lib != nil {
		return lib, nil
	}
	for _, home := range []string{"CUDA_HOME", "CUDA_PATH"} {
		root := getenv(home)
		if root == "" {
			f.unset("$"+home, "not set")
			continue
		}
		for _, sub := range []string{"lib64", "lib"} {
			if lib := f.dir("$"+home+"/"+sub, filepath.Join(root, sub)); lib != nil {
				return lib, nil
			}
		}
	}
	for _, so := range spec.Sonames {
		lib, err := Open(so, Now|Local)
		if err == nil {
			return lib, nil
		}
		f.tried("system loader", so, unwrapOpen(err))
	}
	if len(spec.CacheDirs) > 0 {
		root := CacheRoot(getenv)
		if root == "" {
			f.unset("partbench cache", "neither $PARTBENCH_CACHE nor $HOME is set")
		}
		for _, d := range spec.CacheDirs {
			if root == "" {
				break
			}
			if lib := f.dir("partbench cache", filepath.Join(root, d)); lib != nil {
				return lib, nil
			}
		}
	}
	if lib := f.wheels(s.pythonDirs()); lib != nil {
		return lib, nil
	}
	return nil, &NotFoundError{Spec: spec, Attempts: f.attempts}
}

// CacheRoot is partbench's cache folder: $PARTBENCH_CACHE, else
// $HOME/.cache/partbench ("" when neither is set). getenv nil means
// os.Getenv.
func CacheRoot(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := getenv("PARTBENCH_CACHE"); v != "" {
		return v
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".cache", "partbench")
	}
	return ""
}

func (s Searcher) pythonDirs() []string {
	if s.PythonDirs != nil {
		return s.PythonDirs()
	}
	return DefaultPythonDirs()
}

// fromEnv opens the override: a file, or a folder holding one of the sonames.
func (s Searcher) fromEnv(spec Spec, v string) (*Library, error) {
	place := "$" + spec.EnvVar
	if st, err := os.Stat(v); err == nil && st.IsDir() {
		f := finder{spec: spec, seen: map[string]bool{}}
		if lib := f.dir(place, v); lib != nil {
			return lib, nil
		}
		return nil, &NotFoundError{Spec: spec, Attempts: f.attempts}
	}
	lib, err := Open(v, Now|Local)
	if err != nil {
		return nil, &NotFoundError{Spec: spec, Attempts: []Attempt{{Place: place, Target: v, Result: unwrapOpen(err)}}}
	}
	return lib, nil
}

// unwrapOpen drops Open's "dl: open PATH: " prefix, which the attempt line repeats.
func unwrapOpen(err error) string {
	if u := errors.Unwrap(err); u != nil {
		return u.Error()
	}
	return err.Error()
}
