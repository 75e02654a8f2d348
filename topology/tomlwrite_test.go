package topology_test

import (
	"math"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/partbench/partbench/topology"
)

// The one writer's values read back equal through the TOML decoder configs
// uses, floats included (integral, tiny, huge, denormal, nan, ±inf), and its
// comments are kept in the text.
func TestTOMLWriterRoundTrip(t *testing.T) {
	floats := []float64{3, 0.1, 1e-300, 5e-324, 1.7976931348623157e308, -2.5e9, 450e9, math.Inf(1), math.Inf(-1), math.NaN()}
	strs := []string{"plain", `quote " and \ backslash`, "tab\tnewline\ncontrol\x01", "ünïcödé ×"}
	tw := &topology.TOMLWriter{}
	tw.Comment("header line", "second\nline")
	tw.Table("t", "table comment")
	for i, f := range floats {
		tw.KV("f"+string(rune('a'+i)), f, "")
	}
	for i, s := range strs {
		tw.KV("s"+string(rune('a'+i)), s, "comment "+string(rune('a'+i)))
	}
	tw.KV("i", int64(85520809984), "")
	tw.KV("b", true, "")
	tw.KV("list", strs, "")
	out := tw.String()

	var got struct {
		T map[string]any `toml:"t"`
	}
	if _, err := toml.Decode(out, &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for i, f := range floats {
		v, ok := got.T["f"+string(rune('a'+i))].(float64)
		if !ok || !(v == f || math.IsNaN(f) && math.IsNaN(v)) {
			t.Errorf("float %g read back as %#v", f, got.T["f"+string(rune('a'+i))])
		}
	}
	for i, s := range strs {
		if v := got.T["s"+string(rune('a'+i))]; v != s {
			t.Errorf("string %q read back as %q", s, v)
		}
	}
	if got.T["i"] != int64(85520809984) || got.T["b"] != true {
		t.Errorf("int %v bool %v", got.T["i"], got.T["b"])
	}
	if l, _ := got.T["list"].([]any); len(l) != len(strs) || l[2] != strs[2] {
		t.Errorf("list %v", got.T["list"])
	}
	for _, c := range []string{"# header line\n", "# second line\n", "[t]  # table comment\n", "  # comment d\n"} {
		if !strings.Contains(out, c) {
			t.Errorf("comment %q lost:\n%s", c, out)
		}
	}
	// Integral floats stay floats: "3.0", never "3".
	if !strings.Contains(out, "fa = 3.0\n") {
		t.Errorf("3.0 written as an integer:\n%s", out)
	}
}
