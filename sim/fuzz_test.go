package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/partbench/partbench/configs"
	"github.com/partbench/partbench/partition"
)

// FuzzConfig drives any bytes through the whole estimate path: load (strict
// decode, presets, validation) → plan → estimate → JSON. Every input must
// end in an error or a JSON document; never a panic, and never an error
// from json (a non-finite number) after a successful estimate. Seeds are
// the embedded strategies. Run: go test ./sim -run NONE -fuzz FuzzConfig.
func FuzzConfig(f *testing.F) {
	err := fs.WalkDir(configs.Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(p, "/") && !strings.HasPrefix(p, "test/") {
			return err // strategies only: top level and test/
		}
		data, err := fs.ReadFile(configs.Files, p)
		if err == nil {
			f.Add(data)
		}
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("\"\\"))
	f.Add([]byte("[topology.inter_node]\nlatency_s = nan\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := configs.Parse(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		plan, err := partition.NewPlan(cfg)
		if err != nil {
			return
		}
		// The fewest decode steps the timeline allows keeps each input fast.
		e, err := EstimatePlan(plan, Options{DecodeSteps: 3})
		var tooLarge *TooLargeError
		if errors.As(err, &tooLarge) {
			return
		}
		if err != nil {
			t.Fatalf("a validated config fails its estimate: %v", err)
		}
		if _, err := json.Marshal(e); err != nil {
			t.Fatalf("estimate does not encode: %v", err)
		}
	})
}
