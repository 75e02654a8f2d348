// Package shmcomm is the shared-memory transport of partbench's CPU
// communicator: a file mapped by the two ranks of a pair on one host, holding
// one single-producer single-consumer byte ring per direction (head and tail
// moved with sync/atomic), framed messages over the rings — whole (TrySend,
// Poll), streamed (SendFrame), or pipelined from and into the caller's
// float32s (PushOut, PollInto: a ring collective's step) — and a wait that
// spins by policy (Spin), then sleeps on one futex word per side with a
// bounded timeout. The spin policy (ParseSpin, Spin's Budget and Record) is
// shared with remote/wire's raw-TCP reads, which spin by it before they
// sleep in the network poller.
//
// It must not decide which ranks use it, detect a dead peer or know what the
// messages hold: exec/tcpcomm chooses the transport per pair, keeps the TCP
// connection that reports a lost peer, and owns the channels and collectives.
package shmcomm
