// Package rendezvous is partbench's control plane: a small TCP service on
// rank 0 that every rank joins before a run. It checks that all ranks were
// started for the same world size and the same config, carries small
// collectives (the data plane's addresses, the NCCL unique id, the final
// measurements), and watches every rank with heartbeats for the whole run so
// that a lost rank aborts all the others within a stated bound.
//
// It must not carry tensors (that is the data plane: exec/tcpcomm or NCCL)
// or know what the ranks compute.
package rendezvous
