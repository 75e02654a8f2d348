package commcount

import (
	"fmt"
	"strings"
)

// Algorithm names how a collective or a point-to-point message is carried,
// as the collective model reports it (sim.CollectiveEstimate.Algo) and as
// calibration files record it. It is a string: JSON and TOML carry the bare
// name. ParseAlgorithm is the one way from text to an Algorithm.
type Algorithm string

const (
	// NCCL's algorithms the model has (NCCL_ALGO names in lower case).
	AlgoRing Algorithm = "ring"
	AlgoTree Algorithm = "tree"
	AlgoNVLS Algorithm = "nvls"
	// AlgoHierarchical is partbench's name for NCCL's NVLSTree: a reduction
	// inside each node, a tree or ring across nodes.
	AlgoHierarchical Algorithm = "hierarchical"
	// AlgoP2P is one point-to-point message (send/recv).
	AlgoP2P Algorithm = "p2p"
	// AlgoOneShot and AlgoTwoShot are the custom all-reduce kernels of the
	// serving runtimes (vLLM, TensorRT-LLM) over NVLink peer memory.
	AlgoOneShot Algorithm = "oneshot"
	AlgoTwoShot Algorithm = "twoshot"
	// AlgoNone: nothing moves (one rank, or no bytes).
	AlgoNone Algorithm = "none"
)

// Algorithms lists every Algorithm, in the order error messages name them.
var Algorithms = []Algorithm{AlgoRing, AlgoTree, AlgoNVLS, AlgoHierarchical, AlgoP2P, AlgoOneShot, AlgoTwoShot, AlgoNone}

// algorithmAliases are other spellings ParseAlgorithm takes: NCCL's name
// for the hierarchical algorithm.
var algorithmAliases = map[string]Algorithm{"nvlstree": AlgoHierarchical}

// ParseAlgorithm reads an algorithm name, case-insensitively, with NCCL's
// "nvlstree" for AlgoHierarchical. Any other name is an error that quotes
// it and lists the names allowed; callers add the flag, file or field.
func ParseAlgorithm(s string) (Algorithm, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for _, a := range Algorithms {
		if string(a) == t {
			return a, nil
		}
	}
	if a, ok := algorithmAliases[t]; ok {
		return a, nil
	}
	return "", fmt.Errorf("unknown collective algorithm %q (allowed: %s, or nvlstree for hierarchical)", s, algorithmList())
}

func algorithmList() string {
	s := make([]string, len(Algorithms))
	for i, a := range Algorithms {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}

// UnmarshalText makes decoders (TOML, JSON) refuse an unknown algorithm;
// an empty value stays empty (a field that was not set). The encoding is
// unchanged: Algorithm has no MarshalText and encodes as its string.
func (a *Algorithm) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*a = ""
		return nil
	}
	v, err := ParseAlgorithm(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}
