// Package report renders results: tables (tablewriter), Markdown, CSV and
// versioned JSON, and later traces and plots. Results arrive as data; report
// only formats them.
//
// It must not compute metrics: every number it prints comes from sim, exec
// or partition.
package report
