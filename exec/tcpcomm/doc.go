// Package tcpcomm is the data plane of partbench's CPU backend: an exec.Comm
// over TCP between ranks, with point-to-point messages and ring collectives
// that run exactly the chunking of commcount, counted under commcount's
// definitions.
//
// It must not know what the buffers hold or decide when a run is over: the
// rendezvous (exec/rendezvous) carries its addresses and reports lost ranks,
// and the run loop cancels the ctx of pending calls.
package tcpcomm
