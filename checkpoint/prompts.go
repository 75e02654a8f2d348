package checkpoint

import (
	"encoding/json"
	"fmt"
	"os"
)

// ReadPromptIDs reads a prompts file as `partbench generate --ids-file`
// takes it: a JSON list of token-id lists, at least one. Errors name the
// --ids-file flag and the file.
func ReadPromptIDs(path string) ([][]int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--ids-file: %w", err)
	}
	var prompts [][]int
	if err := json.Unmarshal(data, &prompts); err != nil {
		return nil, fmt.Errorf("--ids-file %s: want a JSON list of token-id lists: %w", path, err)
	}
	if len(prompts) == 0 {
		return nil, fmt.Errorf("--ids-file %s holds no prompts", path)
	}
	return prompts, nil
}
