//go:build cgo && linux

package dl

/*
#include <signal.h>
#include <stddef.h>

// Adds SA_ONSTACK to every installed handler that lacks it: a C library
// that installs (or saves and restores) a handler without it makes the Go
// runtime abort when that signal lands on a Go thread ("non-Go code set up
// signal handler without SA_ONSTACK flag"). Returns how many were changed.
static int pb_fix_sigonstack(void) {
	int fixed = 0;
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP) {
			continue;
		}
		struct sigaction sa;
		if (sigaction(sig, NULL, &sa) != 0) {
			continue;
		}
		if ((sa.sa_flags & SA_SIGINFO) == 0 && (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN)) {
			continue;
		}
		if (sa.sa_flags & SA_ONSTACK) {
			continue;
		}
		sa.sa_flags |= SA_ONSTACK;
		if (sigaction(sig, &sa, NULL) == 0) {
			fixed++;
		}
	}
	return fixed;
}
*/
import "C"

// FixSignalStacks adds SA_ONSTACK to every installed signal handler that
// lacks it and says how many it changed. The GPU libraries partbench loads
// (the CUDA driver, cuBLAS, NVRTC, NCCL) may install handlers as they load
// or initialise; one without SA_ONSTACK turns a SIGTERM that reaches a Go
// thread into a runtime abort instead of a drain (seen on an H200 with
// `serve --backend cuda`). Open calls it after every load; the backends
// call it again after initialising a device.
func FixSignalStacks() int { return int(C.pb_fix_sigonstack()) }
