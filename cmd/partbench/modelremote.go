package main

import (
	"cmp"
	"fmt"
	"github.com/partbench/partbench/report"
	"io"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
	"github.com/partbench/partbench/resume"
	"github.com/partbench/partbench/sim"
	"github.com/partbench/partbench/topology"
)

// modelRemote is model --dry-run --remote-link: every mode of each config
// planned, estimated with opts and priced over the client link linkSpec
// (mode, unless "all", highlighted), in format table or markdown.
func modelRemote(w io.Writer, format string, cfgs []*configs.Config, linkSpec, mode string, overheadS float64, opts sim.Options) error {
	if format != report.FormatTable && format != report.FormatMarkdown {
		return fmt.Errorf("--remote-link: --format must be table or markdown (got %q)", format)
	}
	link, err := topology.ParseClientLink("--remote-link", linkSpec)
	if err != nil {
		return err
	}
	var highlight partition.RemoteMode
	if mode != "" && mode != "all" {
		if highlight, err = partition.ParseRemoteMode(mode); err != nil {
			return fmt.Errorf("--mode: %w (or all)", err)
		}
	}
	for i, cfg := range cfgs {
		plan, err := partition.NewPlan(cfg)
		if err != nil {
			return err
		}
		e, err := sim.EstimateRemote(plan, sim.RemoteOptions{Link: link, RequestOverheadS: overheadS}, opts)
		if err != nil {
			return fmt.Errorf("config %s: %w", cfg.Name, err)
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s over %s (%s)\n\n", cfg.Name, link.Name, link.Source)
		if err := report.WriteGrids(w, format, report.RemoteEstimateGrids(e, highlight)...); err != nil {
			return err
		}
	}
	return nil
}

// modelResume is model --dry-run --resume-layers: each config planned and
// its pause and resume at layers modeled with opts over the client link
// linkSpec (default loopback), in format table or markdown.
func modelResume(w io.Writer, format string, cfgs []*configs.Config, layers, linkSpec string, overheadS float64, opts sim.Options) error {
	if format != report.FormatTable && format != report.FormatMarkdown {
		return fmt.Errorf("--resume-layers: --format must be table or markdown (got %q)", format)
	}
	ls, err := resume.ParseLayers("--resume-layers", layers)
	if err != nil {
		return err
	}
	link, err := topology.ParseClientLink("--remote-link", cmp.Or(linkSpec, "loopback"))
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
