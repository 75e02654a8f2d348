package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"

	"github.com/partbench/partbench/calib"
	"github.com/partbench/partbench/compare"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/exec/backend"
	"github.com/partbench/partbench/report"
)

type l2Options struct {
	configs     []string
	calibration string
	measure     bool
	backend     string
	quick       bool
	format      string
}

func newL2Cmd() *cobra.Command {
	o := &l2Options{}
	cmd := &cobra.Command{
		Use:   "l2 [--config FILE]... [--calibration calib.toml] [--measure]",
		Short: "Modeled L2 residency per strategy and rank, and a measured reuse proxy",
		Long: `Print the estimate's L2 figures for each strategy: the usable L2, the reused
working set of every rank (the weights it re-reads each decode step), its modeled
residency, and the whole-layer residency ("does one layer fit in L2").

With --measure (CPU backend) every rank's working set is also read on this machine,
again and again, and compared with a streaming read of as many bytes: the ratio of
the two bandwidths is a counter-free proxy of how much of it the caches hold
(docs/l2.md). With --backend cuda the reads run on GPU 0, with and without a
persisting-L2 access-policy window over the working set (window_bytes_per_s and
window_ratio in the JSON). Give --calibration so the model describes this machine too.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.configs, "config", nil, "strategy config: a TOML file or an embedded preset name (repeatable; default: the seed comparison)")
	f.StringVar(&o.calibration, "calibration", "", "hardware profile from 'partbench calibrate' to model instead of the config's hardware")
	f.BoolVar(&o.measure, "measure", false, "measure every rank's working set on this machine (reuse against streaming)")
	f.StringVar(&o.backend, "backend", configs.BackendCPU, "backend --measure runs on: cpu, or cuda (GPU 0: with and without a persisting-L2 access-policy window)")
	f.BoolVar(&o.quick, "quick", false, "with --measure: fewer repeats and shorter samples")
	cliflag.Format(f, &o.format, cliflag.TableFormats...)
	return cmd
}

func (o *l2Options) run(stdout io.Writer) error {
	if o.measure && o.backend != configs.BackendCUDA {
		if err := calib.CheckProbeBackend(o.backend); err != nil {
			return err
		}
	}
	cfgs, notes, err := configs.LoadCalibrated(o.configs, o.calibration)
	if err != nil {
		return err
	}
	var probe func(int64) calib.Reuse
	probeErr := func() error { return nil }
	if o.measure && o.backend == configs.BackendCUDA {
		var closeProbe func()
		if probe, probeErr, closeProbe, err = cudaL2Probe(backend.Default(), o.quick); err != nil {
			return err
		}
		defer closeProbe()
	} else if o.measure {
		opts := calib.ProbeOptions{}
		if o.quick {
			opts = calib.QuickProbeOptions()
		}
		probe = calib.MemoProbe(opts)
	}
	out, err := compare.L2Strategies(cfgs, notes, o.calibration != "", probe, o.backend)
	if err != nil {
		return err
	}
	if err := probeErr(); err != nil {
		return err
	}
	if o.format == report.FormatJSON {
		return report.L2JSON(stdout, version, out)
	}
	return report.WriteTables(stdout, o.format, "l2", version, report.L2Grids(out, o.measure)...)
}
