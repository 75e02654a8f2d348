// Package launch tells a partbench process who it is and starts local ranks.
//
// Detect reads the rank, world size, local rank and rendezvous address from
// the variables a launcher sets (OMPI_*, PMI_*, SLURM_*, or RANK/WORLD_SIZE
// under mpirun, srun and partbench's own launcher). Spawn is that launcher,
// behind partbench run --nproc N: it starts N copies of a command with those
// variables set, forwards signals, and never leaves a rank behind.
//
// It must not talk to other ranks (that is exec/rendezvous) or know what a
// rank computes.
package launch
