// Package launchflags reads torchrun's launch flags for partbench run's
// built-in launcher (--nnodes, --node-rank, --master-addr/--master-port,
// --rdzv-endpoint) into exec/launch's SpawnOptions and a rank's place, and
// shortens the errors of ranks other than 0 to one line.
//
// It must not start processes or touch the network beyond picking a free
// port for node 0: exec/launch spawns, exec/rendezvous connects.
package launchflags
