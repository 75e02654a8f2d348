package report

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/partbench/partbench/topology"
)

// topoGPUProbePreset is the topology preset named when only the GPU half of
// the preset resolver is wanted (the spec of a discovered machine's hardware preset).
const topoGPUProbePreset = "dgx-h100x2"

// TopoRequest is what `partbench topo` shows: a topology preset on a
// hardware preset, or (Preset "") the machine Discover reads.
type TopoRequest struct {
	Preset   string
	Hardware string
	// HardwareSet: --hardware was given; for a discovered machine it
	// replaces the preset matched by GPU name.
	HardwareSet bool
	// Save, when set, is the file the [hardware] and [topology] config
	// sections are written to.
	Save string
	// Discover reads this machine (its topology.ErrNoGPU is returned as is).
	Discover func() (*topology.Machine, error)
	// Resolve turns a hardware and a topology preset into a System; nil: no
	// preset resolver (a preset cannot be shown).
	Resolve func(hardware, topology string) (topology.System, error)
}

// ShowTopo writes r's view to w in format and, with r.Save, its config
// sections to that file: the two presets by name, or the discovered
// machine's measured sections. Nothing is saved when discovery fails.
func ShowTopo(w io.Writer, format, version string, r TopoRequest) error {
	var v TopoView
	var saved []byte
	if r.Preset != "" {
		if r.Resolve == nil {
			return errors.New("topo --topology: no preset resolver in this build")
		}
		sys, err := r.Resolve(r.Hardware, r.Preset)
		if err != nil {
			return err
		}
		v = TopoPresetView(r.Preset, r.Hardware, sys)
		saved = []byte(fmt.Sprintf("[hardware]\npreset = %q\n\n[topology]\npreset = %q\n", r.Hardware, r.Preset))
	} else {
		m, err := r.Discover()
		if err != nil {
			return err
		}
		if r.HardwareSet {
			m.HardwarePreset = r.Hardware
		}
		v = TopoMachineView(m, r.gpuLookup())
		if r.Save != "" {
			var b strings.Builder
			if err := m.SaveTOML(&b); err != nil {
				return fmt.Errorf("--save: %w", err)
			}
			saved = []byte(b.String())
		}
	}
	if r.Save != "" {
		if err := os.WriteFile(r.Save, saved, 0o644); err != nil {
			return fmt.Errorf("--save: %w", err)
		}
	}
	return Topo(w, format, version, v)
}

// gpuLookup resolves a hardware preset through the preset resolver; nil
// when there is none.
func (r TopoRequest) gpuLookup() topology.GPULookup {
	if r.Resolve == nil {
		return nil
	}
	return func(preset string) (topology.GPU, error) {
		s, err := r.Resolve(preset, topoGPUProbePreset)
		return s.GPU, err
	}
}
