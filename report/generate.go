package report

import (
	"encoding/json"
	"io"

	"github.com/partbench/partbench/exec"
)

// GenerateSchema names the JSON layout of `partbench generate`.
const GenerateSchema = "partbench.generate/v1"

// GenerateJSON writes a generation's result, indented, with its schema.
func GenerateJSON(w io.Writer, r exec.GenerateResult) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Schema string `json:"schema"`
		exec.GenerateResult
	}{GenerateSchema, r})
}
