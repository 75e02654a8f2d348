// Package suite owns the evaluation matrix: a strict TOML spec of baselines ×
// workloads × (warm-up + measured) runs, the runner that appends every run to
// an fsynced JSON-lines log and resumes from it, and the statistics over it.
//
// It must not draw or format (package report renders results.json, LaTeX,
// PDFs and Markdown) and must not spawn processes (the command gives it
// remote clients); it reads the Program only through partition, sim, remote.
package suite
