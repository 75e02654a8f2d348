package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/claims"
	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/report"
	"github.com/partbench/partbench/sim"
)

func newClaimsCmd() *cobra.Command {
	var format string
	var strict bool
	cmd := &cobra.Command{
		Use:   "claims FILE",
		Short: "Judge a document's claimed numbers against the model and physical bounds",
		Long: `Each claim in FILE (TOML; an embedded name such as seed-004 works too) is printed
beside the model's estimate and the physical bound that applies, with a verdict:
consistent, inconsistent with the model (by how much), physically impossible
(which bound, by how much), or contradicted by the document's own numbers.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := report.CheckFormat(format, report.FormatTable, report.FormatMarkdown, report.FormatCSV, report.FormatJSON); err != nil {
				return err
			}
			f, err := loadClaims(args[0])
			if err != nil {
				return err
			}
			est := map[string]*sim.Estimate{}
			for role, name := range f.Strategies {
				cfg, err := configs.Load(name)
				if err != nil {
					return fmt.Errorf("claims %s: strategies.%s: %w", args[0], role, err)
				}
				if est[role], err = estimateConfig(cfg, sim.Options{Collectives: collectiveOptionsFromEnv()}); err != nil {
					return err
				}
			}
			js, err := claims.Judge(f, est)
			if err != nil {
				return err
			}
			if rj, err := judgeResumeClaims(f); err != nil {
				return err
			} else {
				js = append(js, rj...)
			}
			in, err := claims.EstimateRemote(f, sim.Options{Collectives: collectiveOptionsFromEnv()})
			if err != nil {
				return fmt.Errorf("claims %s: %w", args[0], err)
			}
			rj, err := claims.JudgeRemote(f, in)
			if err != nil {
				return err
			}
			js = append(js, rj...)
			if err := report.Claims(cmd.OutOrStdout(), format, version, f.Title, f.Source, js); err != nil {
				return err
			}
			if strict {
				for _, j := range js {
					if j.Verdict != claims.Consistent {
						return &exitError{code: 3, err: fmt.Errorf("--strict: claim on line %d (%s) is %s", j.Line, j.Metric, j.Verdict)}
					}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", report.FormatTable, "output format: table, markdown, csv, json")
	cmd.Flags().BoolVar(&strict, "strict", false, "exit with status 3 when any claim is not consistent")
	return cmd
}

// loadClaims reads a claims file from disk or the embedded configs/claims.
func loadClaims(name string) (*claims.File, error) {
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		short := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(name, "configs/"), "claims/"), ".toml")
		data, err = fs.ReadFile(configs.Files, "claims/"+short+".toml")
		if err != nil {
			return nil, fmt.Errorf("claims %q: no such file, and no embedded claims file of that name (embedded: %s)", name, strings.Join(configs.Presets("claims"), ", "))
		}
	} else if err != nil {
		return nil, err
	}
	return claims.Parse(bytes.NewReader(data), name)
}
