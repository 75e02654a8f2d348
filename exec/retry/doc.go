// Package retry is partbench's one retry loop: try an operation, wait a
// doubling backoff, try again, until it succeeds, fails for good, the
// context ends or a deadline passes (exec/tcpcomm, exec/rendezvous dial).
//
// It must not know what it retries: no dialing, no logging, no policy on
// which errors are worth retrying beyond Permanent.
package retry
