package configs

import (
	"reflect"
	"strings"
	"testing"
)

// A profile with all_gather link samples and op-time entries loads back
// as written; each bad value is refused with the file, the field, the
// value and what is allowed; a profile without any all_gather (as every
// calibrate before it wrote) loads as before.
func TestCalibrationAllGather(t *testing.T) {
	want := sampleCalibration()
	want.Comm = append(want.Comm,
		CommSample{Op: "all_gather", Ranks: 4, Bytes: 1536, TimeMinS: 2e-5, TimeMedianS: 3e-5, TimeMaxS: 4e-5, ModelTimeS: 3e-5, Algo: "ring", Proto: "LL"},
		CommSample{Op: "all_gather_pairs", Ranks: 2, Bytes: 768, TimeMinS: 2e-7, TimeMedianS: 3e-7, TimeMaxS: 4e-7, ModelTimeS: 1.5e-5, Algo: "ring", Proto: "LL"})
	want.OpTimes = append(sampleOpTimes(),
		OpTime{Kind: "all_gather", Shape: "ranks=2", Size: 768, TimeS: 3e-7, TimeMinS: 2e-7, TimeMaxS: 4e-7, Samples: 5, Ranks: 2})
	got, err := LoadCalibration(writeCalibration(t, want))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Comm, want.Comm) || !reflect.DeepEqual(got.OpTimes, want.OpTimes) {
		t.Errorf("round trip changed the all_gather:\ngot  %+v\n     %+v\nwant %+v\n     %+v", got.Comm, got.OpTimes, want.Comm, want.OpTimes)
	}

	old := sampleCalibration() // all_reduce samples and entries only
	old.OpTimes = sampleOpTimes()
	if _, err := LoadCalibration(writeCalibration(t, old)); err != nil {
		t.Errorf("a profile without all_gather: %v", err)
	}

	for _, c := range []struct {
		name string
		edit func(c *Calibration)
		want string
	}{
		{"unknown op", func(c *Calibration) { c.Comm[0].Op = "allgather" },
			`comm[0].op: must be one of all_reduce, all_reduce_pairs, all_gather, all_gather_pairs, sendrecv (got "allgather")`},
		{"a pair's op over 4", func(c *Calibration) { c.Comm[2].Ranks = 4 },
			"comm[2].ranks: all_gather_pairs runs between 2 ranks: must be 2 (got 4)"},
		{"a group of one", func(c *Calibration) { c.Comm[1].Ranks = 1 },
			"comm[1].ranks: all_gather over a group: must be ≥ 2 (got 1)"},
		{"blocks of unequal size", func(c *Calibration) { c.Comm[1].Bytes = 1538 },
			"comm[1].bytes: an all_gather over 4 ranks gathers 4 equal blocks: must be a multiple of 4 (got 1538)"},
		{"median below min", func(c *Calibration) { c.Comm[1].TimeMedianS = 1e-5 },
			"comm[1]: must have positive, finite times, time_min_s ≤ time_median_s ≤ time_max_s (got 2e-05, 1e-05, 4e-05)"},
		{"entry over one rank", func(c *Calibration) { c.OpTimes[4].Shape = "ranks=1" },
			`op_time[4].shape: the shape of all_gather entries must be "ranks=N", N ≥ 2 the ranks of the group (got "ranks=1")`},
		{"entry of another shape", func(c *Calibration) { c.OpTimes[4].Shape = "width=64" },
			`op_time[4].shape: the shape of all_gather entries must be "ranks=N"`},
		{"entry of unequal blocks", func(c *Calibration) { c.OpTimes[4].Size = 767 },
			"op_time[4].size: an all_gather over 2 ranks gathers 2 equal blocks: must be a multiple of 2 bytes (got 767)"},
		{"a send over 4", func(c *Calibration) { c.OpTimes[4].Kind, c.OpTimes[4].Shape = "send", "ranks=4" },
			`op_time[4].shape: the shape of send entries must be "ranks=2" (got "ranks=4")`},
	} {
		bad := sampleCalibration()
		bad.Comm, bad.OpTimes = append([]CommSample(nil), want.Comm...), append([]OpTime(nil), want.OpTimes...)
		c.edit(bad)
		_, err := LoadCalibration(writeCalibration(t, bad))
		if err == nil || !strings.Contains(err.Error(), "calib.toml: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want the file and %q", c.name, err, c.want)
		}
	}
}
