package configs

import (
	"strings"
	"testing"
)

func TestParseSweep(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  string
	}{
		{"hidden=1024:8192", []int{1024, 2048, 4096, 8192}, ""},
		{"batch=8:20:+4", []int{8, 12, 16, 20}, ""},
		{"microbatches=1,3,9", []int{1, 3, 9}, ""},
		{"hidden=8192:1024", nil, "HI must be an integer ≥ LO"},
		{"speed=1:2", nil, "unknown key"},
		{"batch=a,b", nil, "not a positive integer"},
		{"batch", nil, "missing KEY="},
		{"batch=1:4:2", nil, "STEP must be written +N"},
	} {
		_, got, err := ParseSweep(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%s: %v %v", tc.in, got, err)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: %v, want %v", tc.in, got, tc.want)
			}
		}
	}
}
