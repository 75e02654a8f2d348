package checkpoint

import (
	"encoding/json"
	"fmt"

	"github.com/partbench/partbench/fileio"
)

// MaxIDsFileBytes bounds --ids-file: 16 MiB of JSON is over two million
// token ids, far more prompt than any model here holds in context.
const MaxIDsFileBytes = 16 << 20

// ReadPromptIDs reads a prompts file as `partbench generate --ids-file`
// takes it: a JSON list of token-id lists, at least one. Errors name the
// --ids-file flag and the file.
func ReadPromptIDs(path string) ([][]int, error) {
	data, err := fileio.ReadSmall(path, "--ids-file", MaxIDsFileBytes)
	if err != nil {
		return nil, err
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
