package main

import (
	"fmt"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/backend"
)

// gpuDriverRefusal is the refusal of `command --backend cuda` for a GPU
// path partbench does not have yet. The driver is checked first, as `run
// --backend cuda` checks it: without the CUDA driver (or a GPU it sees)
// the error names the driver searched for and how to point at it; with
// one, the error says honestly that the path is not written, and what it
// lacks.
func gpuDriverRefusal(reg *backend.Registry, command, missing string) error {
	if err := reg.Available(configs.BackendCUDA); err != nil {
		return fmt.Errorf("%s --backend cuda: the GPU backend cannot run here: %w", command, err)
	}
	return fmt.Errorf("%s --backend cuda: loaded the CUDA driver and found a GPU; `%s --backend cuda` is not written yet: %s", command, command, missing)
}

// The GPU paths not written yet, in the words of the refusal.
const (
	generateCUDAMissing = "the GPU backend does not read checkpoints or prompt ids (the Hugging Face generate/check workflow runs on exec/cpu); --backend cpu decodes the checkpoint"
)
