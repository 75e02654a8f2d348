package commcount

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestParseAlgorithm(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Algorithm
	}{
		{"ring", AlgoRing}, {"Ring", AlgoRing}, {" TREE ", AlgoTree}, {"nvls", AlgoNVLS},
		{"hierarchical", AlgoHierarchical}, {"NVLSTree", AlgoHierarchical}, {"p2p", AlgoP2P},
		{"oneshot", AlgoOneShot}, {"twoshot", AlgoTwoShot}, {"none", AlgoNone},
	} {
		got, err := ParseAlgorithm(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseAlgorithm(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	// Every listed algorithm reads back as itself.
	for _, a := range Algorithms {
		if got, err := ParseAlgorithm(string(a)); err != nil || got != a {
			t.Errorf("ParseAlgorithm(%q) = %q, %v", a, got, err)
		}
	}
	for _, bad := range []string{"", "butterfly", "collnet", "ring,tree"} {
		_, err := ParseAlgorithm(bad)
		if err == nil {
			t.Errorf("ParseAlgorithm(%q): no error", bad)
			continue
		}
		want := `unknown collective algorithm "` + bad + `" (allowed: ring, tree, nvls, hierarchical, p2p, oneshot, twoshot, none, or nvlstree for hierarchical)`
		if err.Error() != want {
			t.Errorf("ParseAlgorithm(%q) error\n got %s\nwant %s", bad, err, want)
		}
	}
}

// The encodings are the bare name, as when the field was a string; decoding
// refuses an unknown name and keeps an empty one empty.
func TestAlgorithmEncoding(t *testing.T) {
	type rec struct {
		Algo Algorithm `json:"algo" toml:"algo"`
	}
	j, err := json.Marshal(rec{AlgoHierarchical})
	if err != nil || string(j) != `{"algo":"hierarchical"}` {
		t.Errorf("json: %s, %v", j, err)
	}
	var tb bytes.Buffer
	if err := toml.NewEncoder(&tb).Encode(rec{AlgoNVLS}); err != nil || tb.String() != "algo = \"nvls\"\n" {
		t.Errorf("toml: %q, %v", tb.String(), err)
	}
	var r rec
	if err := json.Unmarshal([]byte(`{"algo":"NVLSTree"}`), &r); err != nil || r.Algo != AlgoHierarchical {
		t.Errorf("json decode NVLSTree: %q, %v", r.Algo, err)
	}
	r = rec{AlgoRing}
	if err := json.Unmarshal([]byte(`{"algo":""}`), &r); err != nil || r.Algo != "" {
		t.Errorf("json decode empty: %q, %v", r.Algo, err)
	}
	if err := json.Unmarshal([]byte(`{"algo":"butterfly"}`), &r); err == nil || !strings.Contains(err.Error(), `unknown collective algorithm "butterfly"`) {
		t.Errorf("json decode butterfly: %v", err)
	}
	if _, err := toml.Decode(`algo = "butterfly"`, &r); err == nil || !strings.Contains(err.Error(), `unknown collective algorithm "butterfly"`) {
		t.Errorf("toml decode butterfly: %v", err)
	}
}
