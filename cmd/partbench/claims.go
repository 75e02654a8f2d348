package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/partbench/partbench/cliflag"

	"github.com/partbench/partbench/claims"
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
			f, err := claims.Load(args[0])
			if err != nil {
				return err
			}
			js, err := claims.JudgeAll(args[0], f, sim.Options{Collectives: collectiveOptionsFromEnv()})
			if err != nil {
				return err
			}
			if err := report.Claims(cmd.OutOrStdout(), format, version, f.Title, f.Source, js); err != nil {
				return err
			}
			if j := claims.FirstInconsistent(js); strict && j != nil {
				return &exitError{code: 3, err: fmt.Errorf("--strict: claim on line %d (%s) is %s", j.Line, j.Metric, j.Verdict)}
			}
			return nil
		},
	}
	cliflag.Format(cmd.Flags(), &format, cliflag.TableFormats...)
	cmd.Flags().BoolVar(&strict, "strict", false, "exit with status 3 when any claim is not consistent")
	return cmd
}
