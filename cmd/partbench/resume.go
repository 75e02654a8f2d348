package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/resume"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

func newResumeCmd() *cobra.Command {
	o := &resume.MeasureOptions{}
	var out, format string
	cmd := &cobra.Command{
		Use:   "resume --config FILE --layers 1,10,20 --strategies recompute,offload,stateful [--server ADDR [--token-file T] [--tls-ca CA] | --spawn-server] --output-dir DIR",
		Short: "Pause a prefill after layer N and resume it: recompute, host offload, or a server that kept the state (seed 002)",
		Long: `Each trial runs the prefill up to and including layer N, hands over the hidden state
(--perturb adds a seeded modification to every row), and resumes from layer N+1:
recompute runs layers 1..N again, offload copies the state to host memory and back,
stateful asks the server that kept it. Every resumed output is checked against the
uninterrupted forward with the same modification; a mismatch exits with status 4.
Writes DIR/resume.json (measured and modeled) and DIR/resume.csv.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := resume.Prepare(*o)
			if err != nil {
				return err
			}
			// The model prices the modification the run sends: none without --perturb.
			model, err := sim.EstimateResume(s.Plan, sim.ResumeOptions{Layers: s.Layers, Client: s.Link, NoDelta: !o.Perturb}, sim.Options{Collectives: collectiveOptionsFromEnv()})
			if err != nil {
				return err
			}
			c, err := resume.NewCompute(s, *o)
			if err != nil {
				return fmt.Errorf("resume: %w", err)
			}
			defer c.Close()
			res, err := resume.Measure(cmd.Context(), s, *o, c, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if err := report.WriteResumeFiles(out, &report.ResumeDoc{Version: version, Measured: res, Model: model}); err != nil {
				return err
			}
			stdout := cmd.OutOrStdout()
			if err := report.WriteTables(stdout, format, "resume", version, report.ResumeGrid(res), report.ResumeModelGrid(model)); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s and %s\n", filepath.Join(out, "resume.json"), filepath.Join(out, "resume.csv")) // stdout holds only the tables
			if n := res.Mismatches(); n > 0 {
				return &exitError{code: 4, err: fmt.Errorf("resume: %d resumed outputs differ from the uninterrupted forward with the same modification", n)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Config, "config", "test/llama2-13b-2k-tiny", "config (file or preset; fp32)")
	f.StringVar(&o.Layers, "layers", "1", "pause layers, 1-based, comma-separated")
	f.StringVar(&o.Strategies, "strategies", "recompute,offload,stateful", "strategies: recompute, offload, stateful")
	f.StringVar(&o.Conn.Server, "server", "", "stateful: the server's host:port")
	f.BoolVar(&o.Conn.Spawn, "spawn-server", false, "stateful: start a local 'partbench serve' child on a free loopback port")
	f.StringVar(&o.Conn.Transport, "transport", "grpc", "stateful: grpc or tcp (the raw-TCP twin)")
	f.StringVar(&o.Conn.TokenFile, "token-file", "", "stateful: file holding the server's bearer token (a server off loopback requires one)")
	f.StringVar(&o.Conn.TLSCA, "tls-ca", "", "stateful: PEM CA that signed the server's TLS certificate (turns TLS on, either transport)")
	f.StringVar(&o.Backend, "backend", configs.BackendCPU, "compute backend: cpu, or cuda (GPU 0; offload through pinned host memory; a spawned server serves cuda too)")
	f.StringVar(&o.Link, "remote-link", "loopback", "the modeled stateful request's client link: "+strings.Join(topology.ClientLinkNames(), ", "))
	f.IntVar(&o.Trials, "trials", 5, "measured trials per strategy and layer")
	f.IntVar(&o.Warmup, "warmup", 3, "unmeasured trials first")
	f.BoolVar(&o.Perturb, "perturb", false, "add a seeded modification to the paused hidden state")
	f.Uint64Var(&o.PerturbSeed, "perturb-seed", 1, "seed of --perturb")
	cliflag.OutputDir(f, &out, "results", "directory for resume.json and resume.csv", "out")
	cliflag.Format(f, &format, cliflag.TableFormats...)
	return cmd
}
