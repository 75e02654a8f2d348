package calib

import (
	pcuda "github.com/partbench/partbench/exec/cuda"
)

// The op-time table holds the GPU before each timed op through the
// Compute's stream, found by a type assertion (deviceStream) now that calib
// no longer names exec/cuda's Compute: this test file (test files may import
// a backend) keeps the GPU backend's Compute inside that interface, so a
// change to its Stream method fails the build instead of silently timing
// the table without a hold.
var _ deviceStream = (*pcuda.Compute)(nil)
