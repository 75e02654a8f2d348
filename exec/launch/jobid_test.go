package launch

import "testing"

func TestJobID(t *testing.T) {
	for _, tc := range []struct {
		env        map[string]string
		id, source string
	}{
		// mpirun (Open MPI 4.1 sets both; the PMIx namespace comes first)
		{map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2", "PMIX_NAMESPACE": "188743681", "OMPI_MCA_ess_base_jobid": "188743681"}, "188743681", "PMIX_NAMESPACE"},
		{map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_MCA_orte_ess_jobid": "42"}, "42", "OMPI_MCA_orte_ess_jobid"},
		// mpirun inside a Slurm allocation: the mpirun job, not the allocation
		{map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2", "PMIX_NAMESPACE": "77", "SLURM_JOB_ID": "9", "SLURM_STEP_ID": "0"}, "77", "PMIX_NAMESPACE"},
		// srun: job and step
		{map[string]string{"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_JOB_ID": "9", "SLURM_STEP_ID": "3"}, "9.3", "SLURM_JOB_ID.SLURM_STEP_ID"},
		{map[string]string{"RANK": "0", "WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "abc"}, "abc", "TORCHELASTIC_RUN_ID"},
		// partbench's own (or a user's) wins over every launcher's
		{map[string]string{"RANK": "0", "WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "abc", JobIDVar: "pb-1"}, "pb-1", JobIDVar},
		// hand-started ranks name no job
		{map[string]string{"RANK": "0", "WORLD_SIZE": "2"}, "", ""},
	} {
		e, err := Detect(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
		if err != nil {
			t.Fatal(err)
		}
		if e.JobID != tc.id || e.JobIDFrom != tc.source {
			t.Errorf("%v: job %q from %q, want %q from %q", tc.env, e.JobID, e.JobIDFrom, tc.id, tc.source)
		}
	}
	if a, b := NewJobID(), NewJobID(); a == b || len(a) != len("pb-")+12 {
		t.Errorf("NewJobID: %q, %q", a, b)
	}
}
