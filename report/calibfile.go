package report

import (
	"fmt"
	"io"

	"github.com/partbench/partbench/configs"
)

// WriteCalibration writes cal to path atomically as TOML, headed by where,
// when and by which version it was measured, and how to load it.
func WriteCalibration(path string, cal *configs.Calibration) error {
	header := []string{fmt.Sprintf("partbench calibration: host %s, backend %s, date %s, partbench version %s",
		cal.Info.Host, cal.Info.Backend, cal.Info.Date, cal.Info.Version),
		"Load it with --calibration FILE (model --dry-run, run, l2); docs/calibration.md says how each figure is fitted."}
	return WriteFileAtomic(path, func(w io.Writer) error { return cal.WriteTOML(w, header) })
}
