package resume

import (
	"slices"
	"strings"
	"testing"

	"github.com/partbench/partbench/remote"
)

func TestParseLayers(t *testing.T) {
	got, err := ParseLayers("--layers", "1, 10,20")
	if err != nil || !slices.Equal(got, []int{1, 10, 20}) {
		t.Errorf("got %v, %v; want [1 10 20]", got, err)
	}
	for _, bad := range []string{"0", "x", "1,,2", "-3"} {
		if _, err := ParseLayers("--layers", bad); err == nil || !strings.HasPrefix(err.Error(), "--layers: ") {
			t.Errorf("%q: err = %v, want one naming --layers", bad, err)
		}
	}
}

func TestPrepareRefuses(t *testing.T) {
	for _, c := range []struct {
		o    MeasureOptions
		want string
	}{
		{MeasureOptions{Backend: "tpu"}, `--backend "tpu": must be cpu or cuda`},
		{MeasureOptions{Backend: "cpu", Layers: "1", Strategies: "recompute,bogus"}, `--strategies: "bogus"`},
		{MeasureOptions{Backend: "cpu", Layers: "1", Strategies: "stateful"}, "needs a server"},
		{MeasureOptions{Backend: "cpu", Layers: "1", Strategies: "offload", Link: "loopback", Config: "llama2-13b-2k"}, "float32"},
	} {
		if _, err := Prepare(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.o, err, c.want)
		}
	}
}

// A spawned server serves the backend resume runs on; a named server and
// the CPU backend are left as they are.
func TestServerFor(t *testing.T) {
	for _, c := range []struct {
		o    MeasureOptions
		want []string
	}{
		{MeasureOptions{Backend: "cuda", Conn: remote.ConnectOptions{Spawn: true, SpawnArgs: []string{"--memory-budget", "1"}}}, []string{"--memory-budget", "1", "--backend", "cuda"}},
		{MeasureOptions{Backend: "cpu", Conn: remote.ConnectOptions{Spawn: true}}, nil},
		{MeasureOptions{Backend: "cuda", Conn: remote.ConnectOptions{Server: "h:1"}}, nil},
	} {
		if got := serverFor(c.o).SpawnArgs; !slices.Equal(got, c.want) {
			t.Errorf("%+v: spawn args %q, want %q", c.o, got, c.want)
		}
	}
	o := MeasureOptions{Backend: "cuda", Conn: remote.ConnectOptions{Spawn: true, SpawnArgs: []string{"a"}}}
	serverFor(o)
	if len(o.Conn.SpawnArgs) != 1 {
		t.Error("serverFor changed its argument's spawn args")
	}
}
