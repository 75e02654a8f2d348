package dl

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// pythonTimeout bounds each interpreter's answer.
const pythonTimeout = 3 * time.Second

const sitePackagesScript = `import site,sys; print("\n".join(site.getsitepackages()+[site.getusersitepackages()]))`

// DefaultPythonDirs asks every python3 and python on PATH (in PATH order)
// for its site-packages folders and returns them without duplicates. The
// answer is computed once per process; an interpreter that fails or takes
// longer than 3 s is skipped.
func DefaultPythonDirs() []string { return pythonDirsOnce() }

var pythonDirsOnce = sync.OnceValue(func() []string {
	return askPythons(filepath.SplitList(os.Getenv("PATH")), pythonTimeout)
})

// askPythons runs every python3/python found in path dirs.
func askPythons(path []string, timeout time.Duration) []string {
	var out []string
	seenExe, seenDir := map[string]bool{}, map[string]bool{}
	for _, d := range path {
		for _, name := range []string{"python3", "python"} {
			exe := filepath.Join(d, name)
			st, err := os.Stat(exe)
			if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
				continue
			}
			if real, err := filepath.EvalSymlinks(exe); err == nil {
				exe = real
			}
			if seenExe[exe] {
				continue
			}
			seenExe[exe] = true
			for _, dir := range sitePackages(exe, timeout) {
				if !seenDir[dir] {
					seenDir[dir] = true
					out = append(out, dir)
				}
			}
		}
	}
	return out
}

func sitePackages(exe string, timeout time.Duration) []string {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-c", sitePackagesScript)
	cmd.WaitDelay = timeout // a wrapper script's child may hold stdout after the kill
	b, err := cmd.Output()
	if err != nil {
		return nil
	}
	var dirs []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			dirs = append(dirs, l)
		}
	}
	return dirs
}
