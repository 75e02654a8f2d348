// Package arch is the model description: the registry of the architecture
// families partbench computes (one file per family: its norm, activation,
// positions, biases, tied head, weight layout, the Hugging Face names it
// accepts and its checkpoint tensor names), the typed element type (DType)
// and a config.json read once into a typed Description.
//
// It must not import configs, partition, model or checkpoint: they import
// it. Adding an architecture is adding a file here that registers a Family,
// and its tests; nothing else branches on an architecture's name.
package arch
