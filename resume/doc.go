// Package resume pauses a prefill pass after layer N, hands over its hidden
// state (modifiable), and resumes it from layer N+1 by recompute, host
// offload or a server that kept the state (seed 002); it times and counts each.
//
// It runs Programs through exec and remote and must not estimate time (sim
// does), render results (report does) or know which backend it drives beyond
// exec.HostX.
package resume
