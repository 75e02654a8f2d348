package topology

// PairedCPU is where local rank lr of a host's n ranks runs when they are
// bound two to a CPU, as `run --bind-to auto` binds CPU-backend ranks that
// are twice the host's CPUs (exec/launch): the index, among the host's cpus
// CPUs, of the one it shares with one other rank — consecutive local ranks
// together, 2c and 2c+1 on CPU c — so that each tensor-parallel group of
// two shares one CPU and a larger even group spans whole CPUs. tp is the
// size of the job's tensor-parallel groups (consecutive ranks; ≤ 1: none)
// and first the host's first rank. -1 where ranks are not bound so: n is
// not 2·cpus, a group is odd (it would straddle a CPU), the host's ranks do
// not start a group, or lr is not one of them. The binding and sim's
// shared-core stretch (which then counts the ranks computing on a rank's
// own CPU) read the same rule here.
func PairedCPU(lr, n, cpus, tp, first int) int {
	const perCPU = 2
	if cpus < 2 || n != perCPU*cpus || lr < 0 || lr >= n {
		return -1
	}
	if tp > 1 && (tp%perCPU != 0 || first%tp != 0) {
		return -1
	}
	return lr / perCPU
}
