package main

import (
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// newProgress returns a progress callback that draws a bar on stderr when
// stderr is a terminal, and nil (stay quiet) otherwise.
func newProgress(what string, total int) func(done, total int) {
	if !term.IsTerminal(int(os.Stderr.Fd())) {
		return nil
	}
	bar := progressbar.NewOptions(total,
		progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish())
	return func(done, _ int) { _ = bar.Set(done) }
}
