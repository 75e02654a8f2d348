package progress

import (
	"strings"
	"testing"
	"time"
)

// Plain lines come at most every interval, and once at the end.
func TestLines(t *testing.T) {
	var b strings.Builder
	clock := time.Unix(0, 0)
	f := newLines(&b, "tp2pp2 iterations", func() time.Time { return clock }, 5*time.Second)
	for done := 1; done <= 10; done++ {
		clock = clock.Add(2 * time.Second) // 2 s per iteration: lines at 6 s (3/10), 12 s (6/10), 18 s (9/10), and 10/10
		f(done, 10)
	}
	want := "partbench: tp2pp2 iterations 3/10 (30%), 6s elapsed\n" +
		"partbench: tp2pp2 iterations 6/10 (60%), 12s elapsed\n" +
		"partbench: tp2pp2 iterations 9/10 (90%), 18s elapsed\n" +
		"partbench: tp2pp2 iterations 10/10 (100%), 20s elapsed\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	var q strings.Builder
	New(&q, false, false, "x")(1, 1)
	if q.Len() != 0 {
		t.Errorf("not a terminal and not plain: printed %q", q.String())
	}
}
