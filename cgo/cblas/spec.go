package cblas

import "github.com/partbench/partbench/cgo/dl"

// Spec is OpenBLAS (the pthread or serial build Debian installs as
// libopenblas.so.0); PARTBENCH_BLAS_LIB names another CBLAS library (a file
// or a folder holding one of the sonames), searched alone.
func Spec() dl.Spec {
	return dl.Spec{
		Name:    "OpenBLAS",
		Sonames: []string{"libopenblas.so.0", "libopenblas.so"},
		EnvVar:  "PARTBENCH_BLAS_LIB",
	}
}
