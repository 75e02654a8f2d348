// Package tracestats summarises a Chrome/Perfetto trace the way
// `nsys stats` summarises a report: time by op name or kind (total, share,
// count, mean, median, min, max, standard deviation), per process, and
// optionally per rank and phase; where a trace holds a measured and a
// modeled timeline of the same run, it pairs them op by op.
//
// It owns reading trace-event JSON (streamed, bounded) and the summary
// arithmetic. It must not print: report renders what it returns.
package tracestats
