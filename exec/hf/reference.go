package hf

import (
	"context"
	"encoding/json"
	"fmt"

	pexec "github.com/partbench/partbench/exec"
	"github.com/partbench/partbench/exec/launch"
	"github.com/partbench/partbench/fileio"
)

// MaxReferenceBytes bounds a reference.json: logits of a few prompts (the
// fixtures' are about 100 KB; two prompts of 8 positions over a 128k
// vocabulary, at about 10 bytes a logit, are about 20 MB).
const MaxReferenceBytes = 64 << 20

// ReadReference reads and validates a reference.json (prompt_ids, logits
// at every prompt position, greedy_ids).
func ReadReference(path string) (*pexec.Reference, error) {
	data, err := fileio.ReadSmall(path, "reference", MaxReferenceBytes)
	if err != nil {
		return nil, err
	}
	var ref pexec.Reference
	if err := json.Unmarshal(data, &ref); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := ref.Validate(path); err != nil {
		return nil, err
	}
	return &ref, nil
}

// CompareReference runs ref's prompts, each followed by its greedy ids but
// the last, one position per pass on g's partitioning and backend b, and
// compares with ref (exec.CompareReference) within tol. src names the
// reference in the result. Every rank runs in this process.
func (m *Model) CompareReference(ctx context.Context, g Generation, b Backend, src string, ref *pexec.Reference, tol float64) (pexec.ReferenceCheck, error) {
	g.Prompts, g.Stepwise = ref.ForcedPrompts(), true
	g.Env = launch.Env{Source: launch.SourceSingle}
	// The config asks for two new tokens, the fewest a config validates
	// with; exec.Generate plans the stepwise run for one (its workload is
	// the prompts' and NewTokens', not the config's).
	g.NewTokens = 2
	cfg, err := g.Config()
	if err != nil {
		return pexec.ReferenceCheck{}, err
	}
	g.NewTokens = 1
	res, err := m.Generate(ctx, cfg, g, b)
	if err != nil {
		return pexec.ReferenceCheck{}, err
	}
	return pexec.CompareReference(src, ref, *res, tol), nil
}
