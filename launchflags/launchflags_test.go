package launchflags

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/partbench/partbench/exec/launch"
)

func parse(t *testing.T, args ...string) (*Nodes, *pflag.FlagSet) {
	t.Helper()
	n := &Nodes{}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	n.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return n, fs
}

func TestPlace(t *testing.T) {
	n, _ := parse(t, "--nnodes", "3", "--node-rank", "2")
	// The launcher of node 2 gives its second child RANK=1 of 4: globally
	// 2·4 + 1 = 9 of 3·4 = 12.
	got := n.Place(launch.Env{Rank: 1, Size: 4, LocalRank: 1, LocalSize: 4, Source: launch.SourceRankEnv})
	if got.Rank != 9 || got.Size != 12 || got.LocalRank != 1 {
		t.Errorf("Place = %+v, want rank 9 of 12", got)
	}
	// torchrun already says the global place (WORLD_SIZE > LOCAL_WORLD_SIZE): unchanged.
	tr := launch.Env{Rank: 5, Size: 8, LocalRank: 1, LocalSize: 4, Source: launch.SourceRankEnv}
	if got := n.Place(tr); got != tr {
		t.Errorf("torchrun env changed: %+v", got)
	}
}

func TestSpawnOptions(t *testing.T) {
	n, fs := parse(t, "--nnodes", "2", "--node-rank", "1", "--master-addr", "10.0.0.1", "--master-port", "1234")
	o, err := n.SpawnOptions(fs, 4, "", io.Discard)
	if err != nil || o.MasterAddr != "10.0.0.1" || o.MasterPort != 1234 || o.NProc != 4 || o.JobID != "pb-rdzv-10.0.0.1:1234" {
		t.Errorf("SpawnOptions = %+v, %v", o, err)
	}
	if got := strings.Join(n.ChildArgs(), " "); got != "--nnodes 2 --node-rank 1" {
		t.Errorf("ChildArgs = %q", got)
	}
	// Node 0 with port 0 picks one and prints it.
	n, fs = parse(t, "--nnodes", "2", "--master-port", "0")
	var b strings.Builder
	o, err = n.SpawnOptions(fs, 2, "", &b)
	if err != nil || o.MasterPort == 0 || !strings.Contains(b.String(), "--rdzv-endpoint 127.0.0.1:") {
		t.Errorf("port 0 on node 0: %+v %v %q", o, err, b.String())
	}
	for _, c := range []struct {
		args     []string
		endpoint string
		want     string
	}{
		{[]string{"--nnodes", "2", "--node-rank", "2", "--master-port", "5"}, "", "--node-rank: must be in [0, 2)"},
		{[]string{"--nnodes", "2", "--node-rank", "1", "--master-port", "0"}, "", "only node 0 picks the port"},
		{[]string{"--nnodes", "2"}, "", "give node 0's port"},
		{[]string{"--nnodes", "2", "--master-port", "5"}, "h:6", "give it or --master-addr/--master-port, not both"},
		{[]string{"--nnodes", "2"}, "nohost", "not host:port"},
	} {
		n, fs := parse(t, c.args...)
		if _, err := n.SpawnOptions(fs, 2, c.endpoint, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %q: %v, want %q", c.args, c.endpoint, err, c.want)
		}
	}
}

func TestRankError(t *testing.T) {
	list := errors.New("dl: libcuda.so.1 not found; searched, in order:\n  LD_LIBRARY_PATH: unset\n  /usr/lib: no such file")
	if got := RankError(3, false, list).Error(); strings.Contains(got, "\n") || !strings.HasPrefix(got, "rank 3: dl: libcuda.so.1 not found; searched, in order (rank 0 prints") {
		t.Errorf("rank 3: %q", got)
	}
	if got := RankError(0, false, list).Error(); strings.Count(got, "\n") != 2 {
		t.Errorf("rank 0 lost the search list: %q", got)
	}
	if got := RankError(3, true, list); !errors.Is(got, list) {
		t.Errorf("--verbose: %v does not wrap the full error", got)
	}
}

func TestSpawnOneNode(t *testing.T) {
	for _, c := range []struct {
		args []string
		rdzv string
		host string
		port int
		err  string
	}{
		{nil, "", "", 0, ""},                           // Spawn picks host and port
		{nil, "10.0.0.1:29500", "10.0.0.1", 29500, ""}, // --rendezvous
		{[]string{"--master-port", "29501"}, "", launch.DefaultRendezvousHost, 29501, ""},       // torchrun's flags on one node
		{[]string{"--master-addr", "h", "--master-port", "1"}, "10.0.0.1:2", "10.0.0.1", 2, ""}, // --rendezvous wins
		{nil, "h:0", "", 0, `--rendezvous "h:0": port 0 would let rank 0 pick a port the other 3 ranks cannot know`},
	} {
		n, fs := parse(t, c.args...)
		got, err := n.Spawn(fs, 4, c.rdzv, io.Discard)
		if c.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("%v %q: %v, want %q", c.args, c.rdzv, err, c.err)
			}
			continue
		}
		if err != nil || got.NProc != 4 || got.MasterAddr != c.host || got.MasterPort != c.port {
			t.Errorf("%v %q: %+v %v, want %s:%d", c.args, c.rdzv, got, err, c.host, c.port)
		}
	}
	// Two nodes: SpawnOptions' answer.
	n, fs := parse(t, "--nnodes", "2", "--node-rank", "1", "--master-addr", "h", "--master-port", "7")
	got, err := n.Spawn(fs, 2, "", io.Discard)
	want, werr := n.SpawnOptions(fs, 2, "", io.Discard)
	if err != nil || werr != nil || got.MasterAddr != want.MasterAddr || got.MasterPort != want.MasterPort || got.NProc != want.NProc {
		t.Errorf("two nodes: %+v %v, want %+v %v", got, err, want, werr)
	}
}

func TestForwardRoundTrips(t *testing.T) {
	type vals struct {
		config  string
		tol     float64
		iters   int
		strict  bool
		timeout time.Duration
		nproc   int
	}
	flags := func(v *vals) *pflag.FlagSet {
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		fs.StringVar(&v.config, "config", "", "")
		fs.Float64Var(&v.tol, "tolerance", 0.25, "")
		fs.IntVar(&v.iters, "iterations", -1, "")
		fs.BoolVar(&v.strict, "strict", false, "")
		fs.DurationVar(&v.timeout, "join-timeout", time.Minute, "")
		fs.IntVar(&v.nproc, "nproc", 0, "")
		return fs
	}
	var in vals
	fs := flags(&in)
	if err := fs.Parse([]string{"--config", "a b.toml", "--tolerance", "0.1", "--strict", "--join-timeout", "90s", "--nproc", "4"}); err != nil {
		t.Fatal(err)
	}
	args := Forward(fs, "nproc")
	if want := []string{"--config=a b.toml", "--join-timeout=1m30s", "--strict=true", "--tolerance=0.1"}; !slices.Equal(args, want) {
		t.Fatalf("Forward = %q, want %q", args, want)
	}
	// A rank parsing them holds the launcher's values; unset and skipped
	// flags keep their defaults.
	var out vals
	if err := flags(&out).Parse(args); err != nil {
		t.Fatal(err)
	}
	want := in
	want.nproc = 0
	if out != want {
		t.Errorf("rank parsed %+v, want %+v", out, want)
	}
}

func TestCheckLaunchFlags(t *testing.T) {
	newSet := func() *pflag.FlagSet {
		f := pflag.NewFlagSet("t", pflag.ContinueOnError)
		var n Nodes
		n.AddFlags(f)
		var d time.Duration
		f.DurationVar(&d, "join-timeout", time.Minute, "")
		return f
	}
	for _, c := range []struct {
		args []string
		want string // "" : accepted
	}{
		{nil, ""},
		{[]string{"--join-timeout", "90s", "--master-addr", "node-0.cluster", "--rdzv-id", "job-42"}, ""},
		{[]string{"--master-addr", "10.0.0.1"}, ""},
		{[]string{"--master-addr", "::1"}, ""},
		{[]string{"--join-timeout", "0s"}, "--join-timeout: must be in (0s, 24h0m0s] (got 0s)"},
		{[]string{"--join-timeout", "-5s"}, "--join-timeout: must be in (0s, 24h0m0s] (got -5s)"},
		{[]string{"--join-timeout", "25h"}, "(got 25h0m0s)"},
		{[]string{"--master-addr", "bad host"}, `--master-addr "bad host": not a host name or IP address (' ' in "bad host")`},
		{[]string{"--master-addr", ""}, `--master-addr "": empty`},
		{[]string{"--master-addr", "-x.org"}, `not a host name or IP address (label "-x")`},
		{[]string{"--rdzv-id", ""}, "--rdzv-id: must not be empty"},
		{[]string{"--rdzv-id", "a\nb"}, `--rdzv-id "a\nb": no spaces or control characters`},
		{[]string{"--rdzv-id", strings.Repeat("x", 129)}, "--rdzv-id: at most 128 bytes (got 129)"},
	} {
		f := newSet()
		if err := f.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		err := Check(f)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: err = %v, want %q", c.args, err, c.want)
		}
	}
}
