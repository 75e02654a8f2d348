package topology_test

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/partbench/partbench/topology/topologytest"
)

// GPU.Validate puts a field's path together only when the field is out of
// range. Every numeric field of a valid GPU, set out of range (NaN for a
// float, −1 for an integer: below every lower bound, which are ≥ 0), must
// still be named in the error by its path and the value it got, as
// InRange writes it ("hardware.<toml name>: must be … (got <value>)"), and
// the valid GPU must pass.
func TestGPUValidateNamesTheFieldOutOfRange(t *testing.T) {
	ok := topologytest.H100SXM()
	if err := ok.Validate("hardware"); err != nil {
		t.Fatalf("valid GPU: %v", err)
	}
	typ := reflect.TypeOf(ok)
	checked := 0
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if tag == "" {
			continue
		}
		g := ok
		v := reflect.ValueOf(&g).Elem().Field(i)
		var got string
		switch v.Kind() {
		case reflect.Float64:
			v.SetFloat(math.NaN())
			got = "(got NaN)"
		case reflect.Int, reflect.Int64:
			v.SetInt(-1)
			got = "-1"
		default:
			continue
		}
		err := g.Validate("hardware")
		if err == nil {
			t.Errorf("%s = %s: no error", tag, got)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "hardware."+tag+":") || !strings.Contains(msg, got) {
			t.Errorf("%s out of range: error %q does not name the field and its value", tag, msg)
		}
		checked++
	}
	if checked < 20 {
		t.Fatalf("%d numeric fields checked: too few", checked)
	}
}
