package topology

import (
	"fmt"
	"io"
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
	head := fmt.Sprintf("Discovered by partbench topo on %s: %d × %s", OneLine(orUnknown(m.Hostname)), len(m.GPUs), OneLine(d.Name))
	if m.DriverVersion != "" {
		head += fmt.Sprintf(", driver %s", m.DriverVersion)
	}
	if v := CUDAVersionString(m.CUDADriverVersion); v != "" {
		head += fmt.Sprintf(", CUDA %s", v)
	}
	tw := &TOMLWriter{CommentColumn: 40}
	tw.Comment(head+".", "Paste these sections into a strategy config in place of its [hardware] and [topology].")

	type kv struct {
		key     string
		value   any
		comment string
	}
	hw := []kv{
		{"preset", m.HardwarePreset, "matched by GPU name; the keys below are what NVML reported"},
		{"name", d.Name, ""},
	}
	if d.MemoryBytes > 0 {
		hw = append(hw, kv{"hbm_bytes", d.MemoryBytes, "total device memory"})
	}
	if d.SMs > 0 {
		hw = append(hw, kv{"sms", d.SMs, "source: " + d.SMsFrom})
	}
	if d.L2Bytes > 0 {
		hw = append(hw, kv{"l2_bytes", d.L2Bytes, "source: " + d.L2From + " (NVML does not report L2)"})
	}
	if m.HardwarePreset != "" {
		tw.Table("hardware", "")
	} else {
		tw.Raw(fmt.Sprintf("\n# [hardware]: no hardware preset matches %s; set preset = \"…\" (partbench presets) and keep these:\n", tomlString(d.Name)))
		hw = hw[1:]
		tw.Prefix = "# "
	}
	for _, p := range hw {
		tw.KV(p.key, p.value, p.comment)
	}
	tw.Prefix = ""

	tw.Table("topology", "")
	tw.KV("name", t.Name, "")
	tw.KV("nodes", 1, "NVML sees one machine; raise it and add [topology.inter_node] for more")
	tw.KV("gpus_per_node", t.GPUsPerNode, "")
	if t.GPUsPerNode > 1 {
		tw.Table("topology.intra_node", "")
		tw.KV("class", t.Intra.Class, "")
		tw.KV("name", t.Intra.Name, "")
		tw.KV("bytes_per_s", t.Intra.BytesPerS, m.intraDerivation())
		tw.KV("latency_s", t.Intra.LatencyS, "assumption, as in the presets")
		tw.KV("nvswitch", t.Intra.Switch, "NVSwitch with in-switch reduction (NVLink SHARP)")
	}
	_, err = io.WriteString(w, tw.String())
	return err
}

// CUDAVersionString writes NVML's CUDA driver version (1000·major +
// 10·minor) as "major.minor"; "" for 0.
func CUDAVersionString(v int) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

func orUnknown(s string) string {
	if s == "" {
		return "an unnamed host"
	}
	return s
}
