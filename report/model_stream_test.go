package report

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/partbench/partbench/sim"
)

// TestModelJSONStreamsRows holds ModelJSON, which streams each strategy's
// per-rank rows, to the document encoded whole by encoding/json (the
// writer it replaces), byte for byte: presets with one kind per stage
// (tp8pp2, test/tp2pp2-tiny), with replicas (test/tp2-dp2-tiny), one rank per stage (layerwise16),
// several strategies, a strategy without rows (Ranks null)
// and one with an empty list ([]).
func TestModelJSONStreamsRows(t *testing.T) {
	es := tinyEstimates(t, "tp8pp2", "layerwise16", "test/tp2pp2-tiny", "test/tp2-dp2-tiny")
	noRows := *es[2]
	noRows.Ranks = sim.RankRows{}
	empty := *es[3]
	empty.Ranks = sim.RankRows{Kinds: []sim.RankKind{}}
	for _, c := range []struct {
		name string
		es   []*sim.Estimate
	}{
		{"one", es[:1]},
		{"all", es},
		{"rows null and empty", []*sim.Estimate{&noRows, &empty, es[0]}},
		{"none", nil},
	} {
		var got, want bytes.Buffer
		if err := ModelJSON(&got, "test", c.es); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(ModelDoc{Schema: ModelSchema, Version: "test", Strategies: c.es, Comparison: Comparisons(c.es)}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			i := 0
			for i < min(got.Len(), want.Len()) && got.Bytes()[i] == want.Bytes()[i] {
				i++
			}
			t.Errorf("%s: %d bytes, encoded whole %d; first difference at byte %d: %q against %q", c.name, got.Len(), want.Len(), i,
				got.Bytes()[max(0, i-40):min(got.Len(), i+40)], want.Bytes()[max(0, i-40):min(want.Len(), i+40)])
		}
	}
}
