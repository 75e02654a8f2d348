//go:build cgo

package cblas

import (
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partbench/partbench/cgo/dl"
)

func load(t *testing.T) *Library {
	t.Helper()
	l, err := Load(Spec())
	if err != nil {
		t.Skipf("no OpenBLAS on this machine (Debian: libopenblas0-pthread; scripts/install-test-deps.sh installs it): %v", err)
	}
	return l
}

// OpenBLAS's sgemm against a float64 product of the same float32 inputs,
// on shapes that are not multiples of any blocking, within k float32
// roundings of the largest partial sum.
func TestSgemmAgainstFloat64(t *testing.T) {
	l := load(t)
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 33, 65}, {64, 192, 128}, {130, 70, 257}} {
		m, n, k := s[0], s[1], s[2]
		a, b, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
		for i := range a {
			a[i] = r.Float32()*2 - 1
		}
		for i := range b {
			b[i] = r.Float32()*2 - 1
		}
		l.Sgemm(m, n, k, a, b, c)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var want, mag float64
				for p := 0; p < k; p++ {
					v := float64(a[i*k+p]) * float64(b[p*n+j])
					want += v
					mag += math.Abs(v)
				}
				if tol := float64(k) * 0x1p-23 * mag; math.Abs(float64(c[i*n+j])-want) > tol+1e-30 {
					t.Fatalf("%v: c[%d,%d] = %g, want %g ± %g", s, i, j, c[i*n+j], want, tol)
				}
			}
		}
	}
	// k = 0 is an empty sum: c is cleared, not left as it was.
	c := []float32{7, 7}
	l.Sgemm(1, 2, 0, nil, nil, c)
	if c[0] != 0 || c[1] != 0 {
		t.Errorf("k = 0: c = %v", c)
	}
	if l.SetThreads(1) && l.Threads() != 1 {
		t.Errorf("threads %d after SetThreads(1)", l.Threads())
	}
}

func TestSgemmRefusesShortSlices(t *testing.T) {
	l := load(t)
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "sgemm 2×2×2 on slices of 3, 4, 4 elements") {
			t.Errorf("recovered %v", r)
		}
	}()
	l.Sgemm(2, 2, 2, make([]float32, 3), make([]float32, 4), make([]float32, 4))
}

// A library that is not there is named with every place searched.
func TestLoadMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libnothing.so")
	t.Setenv("PARTBENCH_BLAS_LIB", missing)
	_, err := Load(Spec())
	if err == nil || !errors.Is(err, dl.ErrNotFound) || !strings.Contains(err.Error(), "OpenBLAS") {
		t.Errorf("Load with PARTBENCH_BLAS_LIB=%s: %v", missing, err)
	}
}
