package main

import (
	"strings"
	"testing"
)

// A bad algorithm or protocol is refused naming where it came from: the flag
// when given, else the NCCL variable.
func TestCollectivesOptionsNameTheirSource(t *testing.T) {
	t.Setenv("NCCL_ALGO", "")
	t.Setenv("NCCL_PROTO", "")
	for _, c := range []struct {
		name              string
		envAlgo, envProto string
		a                 collectivesArgs
		want              []string
	}{
		{"flag algo", "", "", collectivesArgs{Algo: "butterfly"}, []string{`--algo "butterfly": unknown collective algorithm "butterfly" (allowed: ring, tree`}},
		{"env algo", "ring,butterfly", "", collectivesArgs{}, []string{`NCCL_ALGO "ring,butterfly": unknown collective algorithm "butterfly"`}},
		{"flag proto", "", "", collectivesArgs{Proto: "LL64"}, []string{`--proto "LL64": unknown protocol "LL64" (known: LL, LL128, Simple)`}},
		{"env proto", "", "ll256", collectivesArgs{}, []string{`NCCL_PROTO "ll256": unknown protocol "ll256"`}},
		// The flag overrides a bad variable, so the variable is not blamed.
		{"flag over env", "butterfly", "", collectivesArgs{Algo: "p2p"}, []string{`--algo "p2p": p2p is not an NCCL algorithm`}},
	} {
		t.Setenv("NCCL_ALGO", c.envAlgo)
		t.Setenv("NCCL_PROTO", c.envProto)
		_, err := c.a.options()
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", c.name, err, w)
			}
		}
	}
	t.Setenv("NCCL_ALGO", "butterfly")
	if opt, err := (&collectivesArgs{Algo: "NVLSTree", Proto: "simple"}).options(); err != nil || opt.Algo != "NVLSTree" || opt.Proto != "simple" {
		t.Errorf("good flags over a bad NCCL_ALGO: %+v, %v", opt, err)
	}
}
