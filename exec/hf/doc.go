// Package hf is the Hugging Face workflow of every backend: it reads a model
// directory once (config.json and the mmapped safetensors), hands each rank
// only its own slices (checkpoint/shards.Source), feeds prompt ids and decodes
// greedily (exec.Generate, exec.GenerateRank), checks partitionings of the
// checkpoint against one rank (exec.Check) and compares a generation with
// transformers' reference.json.
//
// A backend supplies only a Backend: a rank's Compute built from a weight
// source and token ids, and its communicators. hf imports no backend.
package hf
