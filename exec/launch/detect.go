package launch

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Rendezvous defaults: rank 0's control service listens here unless
// MASTER_ADDR/MASTER_PORT (or the CLI flag) say otherwise.
const (
	DefaultRendezvousHost = "127.0.0.1"
	DefaultRendezvousPort = 29517
	DefaultRendezvousAddr = "127.0.0.1:29517"
)

// Source names the launcher a rank's identity came from.
type Source string

const (
	// SourceSingle: no launcher variables; the process is rank 0 of 1.
	SourceSingle Source = "single"
	// SourceOpenMPI: OMPI_COMM_WORLD_* variables (mpirun).
	SourceOpenMPI Source = "openmpi"
	// SourcePMI: PMI_RANK/PMI_SIZE and MPI_LOCALRANKID/MPI_LOCALNRANKS variables.
	SourcePMI Source = "pmi"
	// SourceSlurm: SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID variables (srun).
	SourceSlurm Source = "slurm"
	// SourceRankEnv: RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE (partbench run
	// --nproc, and launchers that set the same variables).
	SourceRankEnv Source = "env"
)

// Env is one process's place in the run.
type Env struct {
	// Rank and Size are the global rank and the number of ranks the launcher
	// started (which may differ from what the config needs; the rendezvous
	// checks that).
	Rank, Size int
	// LocalRank and LocalSize place the rank on its node (LocalRank picks the
	// GPU). Without a local size from the launcher the ranks are assumed to
	// share one node (LocalSize = Size); without a local rank, to be placed
	// on nodes in blocks (LocalRank = Rank mod LocalSize).
	LocalRank, LocalSize int
	// Source is the launcher the values came from.
	Source Source
	// RendezvousAddr is rank 0's control address, host:port.
	RendezvousAddr string
	// RendezvousFromEnv is true when MASTER_ADDR or MASTER_PORT was set.
	RendezvousFromEnv bool
	// JobID identifies the job every rank of it shares ("" when no launcher
	// names one): PARTBENCH_JOB_ID, else the launcher's own (Open MPI's PMIx
	// namespace or job id, SLURM_JOB_ID.SLURM_STEP_ID, TORCHELASTIC_RUN_ID).
	// The rendezvous refuses a rank of another job.
	JobID string
	// JobIDFrom names the variable JobID came from.
	JobIDFrom string
}

// scheme is one launcher's variable names; detection tries them in order.
type scheme struct {
	source                           Source
	rank, size, localRank, localSize string
	sizeAlt                          string // an older alias of size
}

var schemes = []scheme{
	{source: SourceOpenMPI, rank: "OMPI_COMM_WORLD_RANK", size: "OMPI_COMM_WORLD_SIZE",
		localRank: "OMPI_COMM_WORLD_LOCAL_RANK", localSize: "OMPI_COMM_WORLD_LOCAL_SIZE"},
	{source: SourcePMI, rank: "PMI_RANK", size: "PMI_SIZE",
		localRank: "MPI_LOCALRANKID", localSize: "MPI_LOCALNRANKS"},
	{source: SourceSlurm, rank: "SLURM_PROCID", size: "SLURM_NTASKS", sizeAlt: "SLURM_NPROCS",
		localRank: "SLURM_LOCALID"}, // local size: see slurmLocalSize
	{source: SourceRankEnv, rank: "RANK", size: "WORLD_SIZE",
		localRank: "LOCAL_RANK", localSize: "LOCAL_WORLD_SIZE"},
}

// Detect reads this process's identity from env (os.LookupEnv in a real
// run). Launchers are tried in the order OMPI_*, PMI_*, SLURM_*, RANK/WORLD_SIZE;
// the first whose rank variable is set wins. With none set the process is
// rank 0 of 1. Values that are not integers, or that contradict each other
// (rank ≥ size), are errors naming the variable and its value.
func Detect(env func(string) (string, bool)) (Env, error) {
	get := func(k string) (string, bool) {
		if k == "" {
			return "", false
		}
		v, ok := env(k)
		v = strings.TrimSpace(v)
		return v, ok && v != ""
	}
	e := Env{Size: 1, LocalSize: 1, Source: SourceSingle}
	for _, sc := range schemes {
		if _, ok := get(sc.rank); ok {
			var err error
			if e, err = fromScheme(sc, get); err != nil {
				return Env{}, err
			}
			break
		}
	}
	addr, fromEnv, err := rendezvousAddr(get)
	if err != nil {
		return Env{}, err
	}
	e.RendezvousAddr, e.RendezvousFromEnv = addr, fromEnv
	e.JobID, e.JobIDFrom = jobID(e.Source, get)
	return e, nil
}

// fromScheme reads one launcher's variables (its rank variable is set).
func fromScheme(sc scheme, get func(string) (string, bool)) (Env, error) {
	e := Env{Source: sc.source}
	rv, _ := get(sc.rank)
	rank, err := parseCount(sc.rank, rv, 0)
	if err != nil {
		return Env{}, err
	}
	sizeVar := sc.size
	sv, ok := get(sc.size)
	if !ok && sc.sizeAlt != "" {
		sizeVar = sc.sizeAlt
		sv, ok = get(sc.sizeAlt)
	}
	if !ok {
		return Env{}, fmt.Errorf("launch: %s=%s is set but %s is not", sc.rank, rv, sc.size)
	}
	size, err := parseCount(sizeVar, sv, 1)
	if err != nil {
		return Env{}, err
	}
	if rank >= size {
		return Env{}, fmt.Errorf("launch: %s=%d is not below %s=%d", sc.rank, rank, sizeVar, size)
	}
	e.Rank, e.Size = rank, size

	// local size: the launcher's, else one node
	e.LocalSize = size
	localSizeVar := sc.localSize
	if sc.source == SourceSlurm {
		var n int
		if n, localSizeVar, err = slurmLocalSize(get); err != nil {
			return Env{}, err
		}
		if n > 0 {
			e.LocalSize = n
		}
	} else if v, ok := get(sc.localSize); ok {
		if e.LocalSize, err = parseCount(sc.localSize, v, 1); err != nil {
			return Env{}, err
		}
	}
	if e.LocalSize > size {
		return Env{}, fmt.Errorf("launch: %s=%d is above %s=%d", localSizeVar, e.LocalSize, sizeVar, size)
	}
	// local rank: the launcher's, else ranks placed on nodes in blocks
	e.LocalRank = rank % e.LocalSize
	if v, ok := get(sc.localRank); ok {
		if e.LocalRank, err = parseCount(sc.localRank, v, 0); err != nil {
			return Env{}, err
		}
		if e.LocalRank >= e.LocalSize {
			return Env{}, fmt.Errorf("launch: %s=%d is not below %s=%d", sc.localRank, e.LocalRank, localSizeVar, e.LocalSize)
		}
	}
	return e, nil
}

// slurmLocalSize is the number of tasks on this node: SLURM_NTASKS_PER_NODE
// when it is a plain number, else SLURM_TASKS_PER_NODE ("2(x3),1") indexed
// by SLURM_NODEID. It returns 0 when neither says.
func slurmLocalSize(get func(string) (string, bool)) (int, string, error) {
	if v, ok := get("SLURM_NTASKS_PER_NODE"); ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 1 {
			return n, "SLURM_NTASKS_PER_NODE", nil
		}
	}
	tpn, ok := get("SLURM_TASKS_PER_NODE")
	if !ok {
		return 0, "", nil
	}
	counts, err := expandTasksPerNode(tpn)
	if err != nil {
		return 0, "", err
	}
	node := 0
	if v, ok := get("SLURM_NODEID"); ok {
		if node, err = parseCount("SLURM_NODEID", v, 0); err != nil {
			return 0, "", err
		}
	}
	if node >= len(counts) {
		return 0, "", fmt.Errorf("launch: SLURM_NODEID=%d is outside SLURM_TASKS_PER_NODE=%q (%d nodes)", node, tpn, len(counts))
	}
	return counts[node], "SLURM_TASKS_PER_NODE", nil
}

// expandTasksPerNode expands the compressed list "2(x3),1" to [2 2 2 1].
func expandTasksPerNode(s string) ([]int, error) {
	bad := func() ([]int, error) {
		return nil, fmt.Errorf("launch: SLURM_TASKS_PER_NODE=%q is not a list like 2(x3),1", s)
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, rep := part, "1"
		if i := strings.Index(part, "(x"); i >= 0 {
			if !strings.HasSuffix(part, ")") {
				return bad()
			}
			n, rep = part[:i], part[i+2:len(part)-1]
		}
		v, err1 := strconv.Atoi(n)
		r, err2 := strconv.Atoi(rep)
		if err1 != nil || err2 != nil || v < 1 || r < 1 || r > 1<<20 {
			return bad()
		}
		for ; r > 0; r-- {
			out = append(out, v)
		}
	}
	return out, nil
}

// rendezvousAddr is MASTER_ADDR:MASTER_PORT with the defaults filled in.
func rendezvousAddr(get func(string) (string, bool)) (string, bool, error) {
	host, hostSet := get("MASTER_ADDR")
	if !hostSet {
		host = DefaultRendezvousHost
	}
	port := DefaultRendezvousPort
	pv, portSet := get("MASTER_PORT")
	if portSet {
		p, err := strconv.Atoi(pv)
		if err != nil || p < 1 || p > 65535 {
			return "", false, fmt.Errorf("launch: MASTER_PORT=%q is not a port number (1-65535)", pv)
		}
		port = p
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), hostSet || portSet, nil
}

// parseCount parses a non-negative integer variable that must be at least min.
func parseCount(name, v string, min int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("launch: %s=%q is not an integer", name, v)
	}
	if n < min {
		return 0, fmt.Errorf("launch: %s=%d must be at least %d", name, n, min)
	}
	return n, nil
}
