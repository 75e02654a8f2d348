package backend

import (
	"errors"
	"strings"
	"testing"

	"github.com/partbench/partbench/model"
)

type fakeProber struct{ closed bool }

func (p *fakeProber) Reuse(bytes int64) (L2Reuse, error) { return L2Reuse{Bytes: bytes}, nil }
func (p *fakeProber) Close() error                       { p.closed = true; return nil }

// A part only some backends have is reached by naming the backend; one that
// lacks it is refused, naming those that have it.
func TestOptionalPartsThroughTheRegistry(t *testing.T) {
	fp := &fakeProber{}
	withProbe := fake("gpu", true, nil)
	withProbe.L2Probe = func(o L2ProbeOptions) (L2Prober, error) { return fp, nil }
	down := fake("down", false, errors.New("no device here"))
	down.L2Probe = withProbe.L2Probe
	feeds := fake("host", false, nil)
	var fed *model.Inputs
	feeds.Inputs = func(in *model.Inputs) NewComputeFunc { fed = in; return nil }
	r := &Registry{}
	for _, b := range []Backend{withProbe, down, feeds} {
		if err := r.Register(b); err != nil {
			t.Fatal(err)
		}
	}

	for _, c := range []struct {
		name, backend, want string
		l2                  bool
	}{
		{"no inputs", "gpu", "backend gpu cannot feed given token ids (backends that can: host)", false},
		{"unknown for inputs", "tpu", `--backend: must be gpu, down, host or auto (got "tpu")`, false},
		{"no probe", "host", "backend host has no device L2 probe (backends with one: gpu, down)", true},
		{"probe cannot run", "down", "backend down cannot run here: no device here", true},
		{"unknown for probe", "tpu", `--backend: must be gpu, down, host or auto (got "tpu")`, true},
	} {
		var err error
		if c.l2 {
			_, err = r.L2Probe(c.backend, L2ProbeOptions{})
		} else {
			_, err = r.InputsCompute(c.backend, &model.Inputs{})
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}

	in := &model.Inputs{Greedy: true}
	if _, err := r.InputsCompute("host", in); err != nil || fed != in {
		t.Errorf("host's Inputs: err %v, given %p, want %p", err, fed, in)
	}
	p, err := r.L2Probe("gpu", L2ProbeOptions{})
	if err != nil || p != fp {
		t.Fatalf("gpu's probe: %v, %v", p, err)
	}
	if m, _ := p.Reuse(4096); m.Bytes != 4096 {
		t.Errorf("probe reuse %+v", m)
	}
}

// The default registry: the CPU backend feeds token ids, the GPU backend
// has the L2 probe.
func TestDefaultOptionalParts(t *testing.T) {
	r := Default()
	if nc, err := r.InputsCompute("cpu", &model.Inputs{}); err != nil || nc == nil {
		t.Errorf("cpu inputs: %v", err)
	}
	if _, err := r.InputsCompute("cuda", &model.Inputs{}); err == nil || err.Error() != "backend cuda cannot feed given token ids (backends that can: cpu)" {
		t.Errorf("cuda inputs: %v", err)
	}
	if _, err := r.L2Probe("cpu", L2ProbeOptions{}); err == nil || err.Error() != "backend cpu has no device L2 probe (backends with one: cuda)" {
		t.Errorf("cpu probe: %v", err)
	}
	if avail := r.Available("cuda"); avail != nil {
		_, err := r.L2Probe("cuda", L2ProbeOptions{})
		if err == nil || !strings.HasPrefix(err.Error(), "backend cuda cannot run here: ") {
			t.Errorf("cuda probe without a GPU: %v", err)
		}
	}
}
