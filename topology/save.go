package topology

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// SaveTOML writes the machine as the [hardware] and [topology] sections of a
// partbench config (docs/config.md): [hardware] names the matched preset
// (Machine.HardwarePreset) and overrides its name, memory, SM count and L2
// with what was discovered; [topology] is NodeTopology. Without a preset the
// [hardware] section is written as comments, since the peaks NVML does not
// report would be missing. The sections replace a config's own [hardware]
// and [topology]; TOML forbids a second table of the same name.
func (m *Machine) SaveTOML(w io.Writer) error {
	t, err := m.NodeTopology()
	if err != nil {
		return err
	}
	d := m.GPUs[0]
	var b strings.Builder
	fmt.Fprintf(&b, "# Discovered by partbench topo on %s: %d × %s", oneLine(orUnknown(m.Hostname)), len(m.GPUs), oneLine(d.Name))
	if m.DriverVersion != "" {
		fmt.Fprintf(&b, ", driver %s", m.DriverVersion)
	}
	if v := CUDAVersionString(m.CUDADriverVersion); v != "" {
		fmt.Fprintf(&b, ", CUDA %s", v)
	}
	b.WriteString(".\n# Paste these sections into a strategy config in place of its [hardware] and [topology].\n")

	hw := []kv{
		{"preset", tomlString(m.HardwarePreset), "matched by GPU name; the keys below are what NVML reported"},
		{"name", tomlString(d.Name), ""},
	}
	if d.MemoryBytes > 0 {
		hw = append(hw, kv{"hbm_bytes", strconv.FormatInt(d.MemoryBytes, 10), "total device memory"})
	}
	if d.SMs > 0 {
		hw = append(hw, kv{"sms", strconv.Itoa(d.SMs), "source: " + d.SMsFrom})
	}
	if d.L2Bytes > 0 {
		hw = append(hw, kv{"l2_bytes", strconv.FormatInt(d.L2Bytes, 10), "source: " + d.L2From + " (NVML does not report L2)"})
	}
	b.WriteString("\n")
	if m.HardwarePreset != "" {
		b.WriteString("[hardware]\n")
		writeKVs(&b, "", hw)
	} else {
		fmt.Fprintf(&b, "# [hardware]: no hardware preset matches %s; set preset = \"…\" (partbench presets) and keep these:\n", tomlString(d.Name))
		writeKVs(&b, "# ", hw[1:])
	}

	b.WriteString("\n[topology]\n")
	writeKVs(&b, "", []kv{
		{"name", tomlString(t.Name), ""},
		{"nodes", "1", "NVML sees one machine; raise it and add [topology.inter_node] for more"},
		{"gpus_per_node", strconv.Itoa(t.GPUsPerNode), ""},
	})
	if t.GPUsPerNode > 1 {
		b.WriteString("\n[topology.intra_node]\n")
		writeKVs(&b, "", []kv{
			{"class", tomlString(string(t.Intra.Class)), ""},
			{"name", tomlString(t.Intra.Name), ""},
			{"bytes_per_s", tomlFloat(t.Intra.BytesPerS), m.intraDerivation()},
			{"latency_s", tomlFloat(t.Intra.LatencyS), "assumption, as in the presets"},
			{"nvswitch", strconv.FormatBool(t.Intra.Switch), "NVSwitch with in-switch reduction (NVLink SHARP)"},
		})
	}
	_, err = io.WriteString(w, b.String())
	return err
}

type kv struct{ key, value, comment string }

func writeKVs(b *strings.Builder, prefix string, kvs []kv) {
	for _, p := range kvs {
		line := prefix + p.key + " = " + p.value
		if p.comment != "" {
			line = fmt.Sprintf("%-40s # %s", line, p.comment)
		}
		b.WriteString(line + "\n")
	}
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlFloat writes v so that TOML reads it back as the same float (never as
// an integer).
func tomlFloat(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}

// CUDAVersionString writes NVML's CUDA driver version (1000·major +
// 10·minor) as "major.minor"; "" for 0.
func CUDAVersionString(v int) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

// oneLine drops control characters, so s cannot end a TOML comment early.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

func orUnknown(s string) string {
	if s == "" {
		return "an unnamed host"
	}
	return s
}
