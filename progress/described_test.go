package progress

import (
	"strings"
	"testing"
	"time"
)

// TestDescribedLines: a resumed run starting at step 3 of 5. The first call
// sets the clock's origin and counts one step; 10 s later step 4 is the
// second, so a step takes 10 s / 2 = 5 s and the one left is ETA 5s.
func TestDescribedLines(t *testing.T) {
	var b strings.Builder
	clock := time.Unix(0, 0)
	p := describedLines(&b, func() time.Time { return clock })
	p(3, 5, "a")
	clock = clock.Add(10 * time.Second)
	p(4, 5, "b")
	want := "[3/5] a (ETA 0s)\n[4/5] b (ETA 5s)\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
