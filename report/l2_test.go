package report

import "testing"

func TestLayerRange(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{{nil, ""}, {[]int{3}, "3"}, {[]int{0, 1, 2, 3}, "0–3"}, {[]int{0, 1, 3, 5, 6}, "0–1,3,5–6"}} {
		if got := layerRange(c.in); got != c.want {
			t.Errorf("layerRange(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
