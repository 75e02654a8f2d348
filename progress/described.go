package progress

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Described is told after every step: steps done, the total, and a line
// describing the step. On a terminal w it draws a bar with an ETA; on
// anything else it prints "[done/total] line (ETA d)" per step, the ETA
// from the mean time of the steps seen since the first call.
func Described(w io.Writer) func(done, total int, line string) {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		var bar *progressbar.ProgressBar
		return func(done, total int, line string) {
			if bar == nil {
				bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionShowCount(),
					progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
			}
			bar.Describe(line)
			_ = bar.Set(done)
		}
	}
	return describedLines(w, time.Now)
}

// describedLines is Described off a terminal, with its clock.
func describedLines(w io.Writer, now func() time.Time) func(done, total int, line string) {
	start := now()
	first := -1
	return func(done, total int, line string) {
		if first < 0 {
			first, start = done-1, now()
		}
		eta := "?"
		if n := done - first; n > 0 {
			eta = (now().Sub(start) / time.Duration(n) * time.Duration(total-done)).Round(time.Second).String()
		}
		fmt.Fprintf(w, "[%d/%d] %s (ETA %s)\n", done, total, line, eta)
	}
}
