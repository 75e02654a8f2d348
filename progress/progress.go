package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Interval is how often Lines prints when stderr is not a terminal.
const Interval = 5 * time.Second

// Func is told how much of the total is done.
type Func func(done, total int)

// Bar draws a bar on stderr once the total is known, only on a terminal;
// elsewhere it is silent.
func Bar(what string) Func { return New(os.Stderr, term.IsTerminal(int(os.Stderr.Fd())), false, what) }

// Lines is Bar on a terminal and, elsewhere (mpirun's pipes, a CI log), one
// plain line every Interval and one at the end.
func Lines(what string) Func { return New(os.Stderr, term.IsTerminal(int(os.Stderr.Fd())), true, what) }

// New is the callback Bar and Lines make, for w: a bar when terminal, plain
// lines when plain, nothing otherwise.
func New(w io.Writer, terminal, plain bool, what string) Func {
	switch {
	case terminal:
		var bar *progressbar.ProgressBar
		return func(done, total int) {
			if bar == nil {
				bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
					progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
			}
			_ = bar.Set(done)
		}
	case plain:
		return newLines(w, what, time.Now, Interval)
	}
	return func(int, int) {}
}

// newLines prints "what: done/total (p%), Ns elapsed" when every has
// passed since the last line, and when done reaches total.
func newLines(w io.Writer, what string, now func() time.Time, every time.Duration) Func {
	var mu sync.Mutex
	start := now()
	last := start
	return func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		t := now()
		if t.Sub(last) < every && done < total {
			return
		}
		last = t
		pct := 0.0
		if total > 0 {
			pct = 100 * float64(done) / float64(total)
		}
		fmt.Fprintf(w, "partbench: %s %d/%d (%.0f%%), %.0fs elapsed\n", what, done, total, pct, t.Sub(start).Seconds())
	}
}
