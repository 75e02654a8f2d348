package backend

import (
	"errors"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/launch"
)

func TestSetup(t *testing.T) {
	cfg, err := configs.Load("test/tp2pp2-tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model.DType = "fp16" // the CPU adapts it to fp32, with a note
	s, err := Default().Setup("cpu", cfg, launch.Env{})
	if err != nil || s.Name != "cpu" || s.Plan.Size() != 4 || s.Rank.NewCompute == nil || s.Rank.NewComm == nil || len(s.Notes) != 1 {
		t.Fatalf("cpu: %+v, %v", s, err)
	}
	// Each step's failure comes back as is: an unknown name, a rank whose
	// libraries are missing, a Plan the backend refuses.
	if _, err := Default().Setup("nope", cfg, launch.Env{}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown backend: %v", err)
	}
	var r Registry
	missing := errors.New("libfoo.so: not found")
	_ = r.Register(Backend{Name: "foo", New: func(launch.Env) (Rank, error) { return Rank{}, missing }})
	if _, err := r.Setup("foo", cfg, launch.Env{}); !errors.Is(err, missing) {
		t.Errorf("missing library: %v", err)
	}
	big, _ := configs.Load("tp8pp2")
	if _, err := Default().Setup("cpu", big, launch.Env{}); err == nil || !strings.Contains(err.Error(), "--backend cpu: rank 0 would hold") {
		t.Errorf("seed model on the CPU: %v", err)
	}
}
