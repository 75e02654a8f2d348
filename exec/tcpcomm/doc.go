// Package tcpcomm is the data plane of partbench's CPU backend: an exec.Comm
// between ranks, with point-to-point messages and ring collectives that run
// exactly the chunking of commcount, counted under commcount's definitions.
// Every pair of ranks holds a TCP connection; a pair on one host moves its
// messages through a shared segment (exec/shmcomm) instead, and keeps the
// connection for its goodbye and to learn that the peer is gone
// (Options.Transport: auto, tcp or shm).
//
// It must not know what the buffers hold or decide when a run is over: the
// rendezvous (exec/rendezvous) carries its addresses and reports lost ranks,
// and the run loop cancels the ctx of pending calls.
package tcpcomm
