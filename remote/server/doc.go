// Package server is `partbench serve`: sessions (weights and KV caches held
// or not per partition's mode table) behind gRPC and the raw-TCP twin, the
// memory budget, queue, auth and TLS, draining, the engines that execute a
// step (ExecEngine through exec/backend's registry, ArithEngine for tests),
// the serving room hosting a batching engine (Generator) without importing
// package serving, and StartInProcess for a server in the caller's process.
//
// It imports wire, never the client (package remote); it must not invent a
// second Program and does not write to disk.
package server
