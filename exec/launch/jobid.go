package launch

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// JobIDVar is the variable partbench's own launcher sets in every child, and
// the one a user may set to name a job by hand; it wins over the launchers'.
const JobIDVar = "PARTBENCH_JOB_ID"

// jobIDVars are the variables that name a job, per launcher, most specific
// first. A job's ranks all see the same variables, so any fixed order gives
// them the same identity; the launcher a rank's identity came from is tried
// first, since an mpirun inside a Slurm allocation inherits SLURM_JOB_ID
// from the allocation (two mpirun jobs there share it, not their namespace).
var jobIDVars = map[Source][]string{
	SourceOpenMPI: {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid"},
	SourcePMI:     {"PMIX_NAMESPACE", "PMI_JOBID"},
	SourceSlurm:   {"SLURM_JOB_ID"}, // with SLURM_STEP_ID, see jobID
	SourceRankEnv: {"TORCHELASTIC_RUN_ID"},
}

// jobID returns the job's identity and the variable(s) it came from, or "".
func jobID(src Source, get func(string) (string, bool)) (id, from string) {
	if v, ok := get(JobIDVar); ok {
		return v, JobIDVar
	}
	try := func(s Source) (string, string) {
		for _, name := range jobIDVars[s] {
			v, ok := get(name)
			if !ok {
				continue
			}
			if name == "SLURM_JOB_ID" {
				if step, ok := get("SLURM_STEP_ID"); ok {
					return v + "." + step, "SLURM_JOB_ID.SLURM_STEP_ID"
				}
			}
			return v, name
		}
		return "", ""
	}
	if id, from = try(src); id != "" {
		return id, from
	}
	for _, s := range []Source{SourceOpenMPI, SourcePMI, SourceSlurm, SourceRankEnv} {
		if id, from = try(s); id != "" {
			return id, from
		}
	}
	return "", ""
}

// NewJobID is a random job identity for a launcher that has none.
func NewJobID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported systems
	return "pb-" + strings.ToLower(hex.EncodeToString(b))
}
