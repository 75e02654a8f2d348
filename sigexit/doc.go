// Package sigexit runs a command under SIGINT/SIGTERM and turns its outcome
// into a process exit code: the command's own (ExitCoder, else 1 for an
// error, 0), or 128+signal once a signal arrived, within a stated bound.
//
// It must not know any command, flag or output format: it owns the context,
// the signal and the exit code, nothing else.
package sigexit
