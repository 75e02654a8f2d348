// Package configs owns the TOML schema of a partbench run: model, workload,
// parallel layout, hardware, topology and run settings. It decodes strictly
// (unknown keys are errors with their path), resolves embedded presets, and
// validates every field with a message that names it and the allowed range.
// A model's architecture is a family of package arch; a model directory's
// config.json is read once, into arch.Description, and kept by the Model.
//
// It must not know about GPUs beyond the data that describes them, nor
// import checkpoint, model or partition.
package configs
