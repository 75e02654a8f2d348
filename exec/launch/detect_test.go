package launch

import (
	"strings"
	"testing"
)

func envOf(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want Env
	}{
		{"none", nil, Env{Rank: 0, Size: 1, LocalRank: 0, LocalSize: 1, Source: SourceSingle, RendezvousAddr: DefaultRendezvousAddr}},
		{"openmpi", []string{"OMPI_COMM_WORLD_RANK", "11", "OMPI_COMM_WORLD_SIZE", "16",
			"OMPI_COMM_WORLD_LOCAL_RANK", "3", "OMPI_COMM_WORLD_LOCAL_SIZE", "8"},
			Env{Rank: 11, Size: 16, LocalRank: 3, LocalSize: 8, Source: SourceOpenMPI, RendezvousAddr: DefaultRendezvousAddr}},
		// Open MPI wins over Slurm variables inherited from the allocation.
		{"openmpi over slurm", []string{"SLURM_PROCID", "0", "SLURM_NTASKS", "1",
			"OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2"},
			// no local variables: assumed one node, local = global
			Env{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Source: SourceOpenMPI, RendezvousAddr: DefaultRendezvousAddr}},
		{"pmi", []string{"PMI_RANK", "5", "PMI_SIZE", "8", "MPI_LOCALRANKID", "1", "MPI_LOCALNRANKS", "4",
			"RANK", "0", "WORLD_SIZE", "1"},
			Env{Rank: 5, Size: 8, LocalRank: 1, LocalSize: 4, Source: SourcePMI, RendezvousAddr: DefaultRendezvousAddr}},
		{"slurm simple", []string{"SLURM_PROCID", "9", "SLURM_NTASKS", "16", "SLURM_LOCALID", "1", "SLURM_NTASKS_PER_NODE", "8"},
			Env{Rank: 9, Size: 16, LocalRank: 1, LocalSize: 8, Source: SourceSlurm, RendezvousAddr: DefaultRendezvousAddr}},
		// 2(x3),1 expands to 2,2,2,1 tasks on nodes 0..3; node 3 has 1 task.
		{"slurm tasks per node", []string{"SLURM_PROCID", "6", "SLURM_NTASKS", "7", "SLURM_LOCALID", "0",
			"SLURM_NTASKS_PER_NODE", "2(x3),1", "SLURM_TASKS_PER_NODE", "2(x3),1", "SLURM_NODEID", "3"},
			Env{Rank: 6, Size: 7, LocalRank: 0, LocalSize: 1, Source: SourceSlurm, RendezvousAddr: DefaultRendezvousAddr}},
		{"slurm nprocs alias", []string{"SLURM_PROCID", "2", "SLURM_NPROCS", "4", "SLURM_LOCALID", "2"},
			Env{Rank: 2, Size: 4, LocalRank: 2, LocalSize: 4, Source: SourceSlurm, RendezvousAddr: DefaultRendezvousAddr}},
		// no local rank: blocks of LOCAL_WORLD_SIZE, 11 mod 8 = 3
		{"local rank from blocks", []string{"RANK", "11", "WORLD_SIZE", "16", "LOCAL_WORLD_SIZE", "8"},
			Env{Rank: 11, Size: 16, LocalRank: 3, LocalSize: 8, Source: SourceRankEnv, RendezvousAddr: DefaultRendezvousAddr}},
		{"rank env with master", []string{"RANK", "3", "WORLD_SIZE", "4", "LOCAL_RANK", "3", "LOCAL_WORLD_SIZE", "4",
			"MASTER_ADDR", "node0", "MASTER_PORT", "4000"},
			Env{Rank: 3, Size: 4, LocalRank: 3, LocalSize: 4, Source: SourceRankEnv, RendezvousAddr: "node0:4000", RendezvousFromEnv: true}},
		{"master addr only", []string{"MASTER_ADDR", "10.0.0.1"},
			Env{Size: 1, LocalSize: 1, Source: SourceSingle, RendezvousAddr: "10.0.0.1:29517", RendezvousFromEnv: true}},
		{"ipv6 master", []string{"MASTER_ADDR", "fe80::1", "MASTER_PORT", "5"},
			Env{Size: 1, LocalSize: 1, Source: SourceSingle, RendezvousAddr: "[fe80::1]:5", RendezvousFromEnv: true}},
		{"empty values ignored", []string{"OMPI_COMM_WORLD_RANK", "", "RANK", "1", "WORLD_SIZE", "2"},
			Env{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Source: SourceRankEnv, RendezvousAddr: DefaultRendezvousAddr}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Detect(envOf(tc.env...))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestDetectErrors(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string // the message must name the variable and the value
	}{
		{[]string{"OMPI_COMM_WORLD_RANK", "x", "OMPI_COMM_WORLD_SIZE", "4"}, `OMPI_COMM_WORLD_RANK="x" is not an integer`},
		{[]string{"OMPI_COMM_WORLD_RANK", "4", "OMPI_COMM_WORLD_SIZE", "4"}, "OMPI_COMM_WORLD_RANK=4 is not below OMPI_COMM_WORLD_SIZE=4"},
		{[]string{"PMI_RANK", "1"}, "PMI_RANK=1 is set but PMI_SIZE is not"},
		{[]string{"RANK", "0", "WORLD_SIZE", "0"}, "WORLD_SIZE=0 must be at least 1"},
		{[]string{"RANK", "-1", "WORLD_SIZE", "2"}, "RANK=-1 must be at least 0"},
		{[]string{"RANK", "1", "WORLD_SIZE", "4", "LOCAL_RANK", "2", "LOCAL_WORLD_SIZE", "2"}, "LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2"},
		{[]string{"RANK", "1", "WORLD_SIZE", "2", "LOCAL_WORLD_SIZE", "4"}, "LOCAL_WORLD_SIZE=4 is above WORLD_SIZE=2"},
		{[]string{"SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_TASKS_PER_NODE", "2(x"}, `SLURM_TASKS_PER_NODE="2(x"`},
		{[]string{"SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_TASKS_PER_NODE", "1(x2)", "SLURM_NODEID", "2"}, "SLURM_NODEID=2 is outside"},
		{[]string{"MASTER_PORT", "http"}, `MASTER_PORT="http" is not a port number`},
		{[]string{"MASTER_PORT", "70000"}, `MASTER_PORT="70000"`},
	} {
		_, err := Detect(envOf(tc.env...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("env %v: got %v, want an error containing %q", tc.env, err, tc.want)
		}
	}
}
