// Package cliflag holds the conventions every partbench command's flags
// follow: one --format flag and one error message for it, --output for a
// file and --output-dir for a directory, aliases for old or foreign
// spellings (torchrun, nccl-tests), and help that shows each default once.
//
// It must not know any command, read files or print results: it registers
// and checks flags, nothing else.
package cliflag
