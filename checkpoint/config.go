package checkpoint

import "github.com/partbench/partbench/arch"

// Config is a Hugging Face config.json in partbench's own terms: the model
// description of package arch (its family, shape and options).
type Config = arch.Description

// MaxConfigJSONBytes bounds a model directory's config.json.
const MaxConfigJSONBytes = arch.MaxConfigJSONBytes

// ReadConfig reads config.json from a model directory (or the file itself)
// into the model description (arch.ReadConfig).
func ReadConfig(path string) (*Config, error) { return arch.ReadConfig(path) }

// ParseConfig reads a config.json's bytes (arch.ParseConfig); src names it
// in errors.
func ParseConfig(data []byte, src string) (*Config, error) { return arch.ParseConfig(data, src) }
