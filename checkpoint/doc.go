// Package checkpoint reads Hugging Face model directories: config.json into
// the model description (package arch: Config is arch.Description, the
// family names the tensors), and safetensors weights (single
// file or sharded with model.safetensors.index.json), memory-mapped and
// validated, with per-tensor row and column slices converted to float32,
// read with pread in planned, page-aligned reads (ReadSlices reads a rank's
// whole list of slices at once), each slice converted row-major into its own
// buffer or straight into its place in a caller's tensor (Placement:
// transposed, permuted or beside other slices, in one pass).
//
// It owns the file formats only: it must not decide partitionings, run models
// or import partition, sim or exec; callers ask it for the slices they need.
// Every byte it reads from a file is untrusted input and is validated first.
package checkpoint
