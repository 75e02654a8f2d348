// Package shards reads one rank's shards of a model (model.Shard) from a
// Hugging Face checkpoint as a model.Source: the executors' bridge between
// the safetensors reader (package checkpoint) and the model definition.
//
// It must not decide partitionings or run models; model, partition and sim
// must not import it, so they do not link the safetensors reader.
package shards
