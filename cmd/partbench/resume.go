package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"

	"github.com/partbench/partbench/claims"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/cpu"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/remote"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/resume"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

type resumeOptions struct {
	config, layers, strategies, server, transport, backend, out, format, link string
	spawn, perturb                                                            bool
	perturbSeed                                                               uint64
	trials, warmup                                                            int
}

func newResumeCmd() *cobra.Command {
	o := &resumeOptions{}
	cmd := &cobra.Command{
		Use:   "resume --config FILE --layers 1,10,20 --strategies recompute,offload,stateful [--server ADDR | --spawn-server] --output-dir DIR",
		Short: "Pause a prefill after layer N and resume it: recompute, host offload, or a server that kept the state (seed 002)",
		Long: `Each trial runs the prefill up to and including layer N, hands over the hidden state
(--perturb adds a seeded modification to every row), and resumes from layer N+1:
recompute runs layers 1..N again, offload copies the state to host memory and back,
stateful asks the server that kept it. Every resumed output is checked against the
uninterrupted forward with the same modification; a mismatch exits with status 4.
Writes DIR/resume.json (measured and modeled) and DIR/resume.csv.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "test/llama2-13b-2k-tiny", "config (file or preset; fp32 for the CPU backend)")
	f.StringVar(&o.layers, "layers", "1", "pause layers, 1-based, comma-separated")
	f.StringVar(&o.strategies, "strategies", "recompute,offload,stateful", "strategies: recompute, offload, stateful")
	f.StringVar(&o.server, "server", "", "stateful: the server's host:port")
	f.BoolVar(&o.spawn, "spawn-server", false, "stateful: start a local 'partbench serve' child on a free loopback port")
	f.StringVar(&o.transport, "transport", "grpc", "stateful: grpc or tcp (the raw-TCP twin)")
	f.StringVar(&o.backend, "backend", configs.BackendCPU, "compute backend: cpu")
	f.StringVar(&o.link, "remote-link", "loopback", "the modeled stateful request's client link: "+strings.Join(topology.ClientLinkNames(), ", "))
	f.IntVar(&o.trials, "trials", 5, "measured trials per strategy and layer")
	f.IntVar(&o.warmup, "warmup", 3, "unmeasured trials first")
	f.BoolVar(&o.perturb, "perturb", false, "add a seeded modification to the paused hidden state")
	f.Uint64Var(&o.perturbSeed, "perturb-seed", 1, "seed of --perturb")
	cliflag.OutputDir(f, &o.out, "results", "directory for resume.json and resume.csv", "out")
	cliflag.Format(f, &o.format, cliflag.TableFormats...)
	return cmd
}

// parseLayers reads a comma-separated list of positive layers.
func parseLayers(flag, s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive layer number (e.g. 1,10,20)", flag, p)
		}
		out = append(out, n)
	}
	return out, nil
}

func (o *resumeOptions) run(ctx context.Context, stdout, stderr io.Writer) error {
	if o.backend != configs.BackendCPU {
		return fmt.Errorf("--backend %s: pause and resume run on the cpu backend only; on a GPU the hidden state is device memory and the offload's pinned copy (cuMemHostAlloc, cuMemcpyDtoH/HtoD) is not built", o.backend)
	}
	layers, err := parseLayers("--layers", o.layers)
	if err != nil {
		return err
	}
	sts := strings.Split(o.strategies, ",")
	stateful := false
	for _, st := range sts {
		if !contains(partition.ResumeStrategies, st) {
			return fmt.Errorf("--strategies: %q: must be one of %s", st, strings.Join(partition.ResumeStrategies, ", "))
		}
		stateful = stateful || st == partition.ResumeStateful
	}
	if o.server != "" && o.spawn {
		return fmt.Errorf("resume: give --server or --spawn-server, not both")
	}
	if stateful && o.server == "" && !o.spawn {
		return fmt.Errorf("resume: --strategies stateful needs a server: --server HOST:PORT or --spawn-server")
	}
	link, err := topology.ParseClientLink("--remote-link", o.link)
	if err != nil {
		return err
	}
	cfg, err := configs.Load(o.config)
	if err != nil {
		return err
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		return err
	}
	if plan.DTypeBytes != 4 {
		return fmt.Errorf("--config %s: model.dtype is %s; the cpu backend's pause and resume are float32 (use test/llama2-13b-2k-tiny, or a copy with model.dtype = \"fp32\"); `partbench model --dry-run --resume-layers` models the full shape", cfg.Name, plan.Model.DType)
	}
	model, err := sim.EstimateResume(plan, sim.ResumeOptions{Layers: layers, Client: link}, sim.Options{Collectives: collectiveOptionsFromEnv()})
	if err != nil {
		return err
	}
	c, err := cpu.New(plan, 0)
	if err != nil {
		return err
	}
	defer c.Close()
	ro := resume.Options{Layers: layers, Strategies: sts, Trials: o.trials, Warmup: o.warmup, Addr: o.server}
	if ro.Local, err = resume.NewLocal(plan, c); err != nil {
		return err
	}
	if o.perturb {
		ro.Delta = resume.Perturb(o.perturbSeed, plan.Model.Hidden, 0.1)
	}
	if stateful {
		if o.spawn {
			child, a, err := remote.SpawnServer(o.transport, stderr)
			if err != nil {
				return fmt.Errorf("--spawn-server: %w", err)
			}
			defer child.Stop(stderr)
			ro.Addr = a
		}
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		cl, err := remote.Dial(dctx, remote.ClientConfig{Addr: ro.Addr, Transport: o.transport})
		cancel()
		if err != nil {
			return fmt.Errorf("--server %s: %w", ro.Addr, err)
		}
		defer cl.Close()
		if ro.Session, err = cl.Open(ctx, cfg, partition.RemoteStateful, partition.RemoteOptions{Logits: true}); err != nil {
			return fmt.Errorf("--server %s: %w", ro.Addr, err)
		}
	}
	res, err := resume.Run(ctx, plan, ro)
	if err != nil {
		return err
	}
	doc := &report.ResumeDoc{Version: version, Measured: res, Model: model}
	if err := report.WriteResumeFiles(o.out, doc); err != nil {
		return err
	}
	if err := report.WriteTables(stdout, o.format, "resume", version, report.ResumeGrid(res), report.ResumeModelGrid(model)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s/resume.json and %s/resume.csv\n", o.out, o.out)
	if n := res.Mismatches(); n > 0 {
		return &exitError{code: 4, err: fmt.Errorf("resume: %d resumed outputs differ from the uninterrupted forward with the same modification", n)}
	}
	return nil
}

// modelResume is model --dry-run --resume-layers.
func modelResume(w io.Writer, format string, cfgs []*configs.Config, layers, linkSpec string, overheadS float64, opts sim.Options) error {
	if format != report.FormatTable && format != report.FormatMarkdown {
		return fmt.Errorf("--resume-layers: --format must be table or markdown (got %q)", format)
	}
	ls, err := parseLayers("--resume-layers", layers)
	if err != nil {
		return err
	}
	link, err := topology.ParseClientLink("--remote-link", orDefault(linkSpec, "loopback"))
	if err != nil {
		return err
	}
	for i, cfg := range cfgs {
		plan, err := partition.NewPlan(cfg)
		if err != nil {
			return err
		}
		e, err := sim.EstimateResume(plan, sim.ResumeOptions{Layers: ls, Client: link, RequestOverheadS: overheadS}, opts)
		if err != nil {
			return fmt.Errorf("config %s: %w", cfg.Name, err)
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := report.WriteGrids(w, format, report.ResumeModelGrid(e)); err != nil {
			return err
		}
	}
	return nil
}

// judgeResumeClaims judges f's resume claims (seed 002) against the
// modeled resume of its baseline config over the loopback link.
func judgeResumeClaims(f *claims.File) ([]claims.Judgement, error) {
	has := false
	for _, c := range f.Claims {
		has = has || claims.IsResumeMetric(c.Metric)
	}
	if !has {
		return nil, nil
	}
	cfg, err := configs.Load(f.Strategies["baseline"])
	if err != nil {
		return nil, err
	}
	plan, err := partition.NewPlan(cfg)
	if err != nil {
		return nil, err
	}
	link, err := topology.ParseClientLink("link", "loopback")
	if err != nil {
		return nil, err
	}
	e, err := sim.EstimateResume(plan, sim.ResumeOptions{Layers: claims.ResumeLayers(f), Client: link}, sim.Options{Collectives: collectiveOptionsFromEnv()})
	if err != nil {
		return nil, err
	}
	return claims.JudgeResume(f, e)
}
