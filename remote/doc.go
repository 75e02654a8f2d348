// Package remote is partbench's remote execution: a GPU server holding
// sessions (weights and KV caches, per mode) behind gRPC and a raw-TCP twin of
// the same protocol, a client for both, and byte counts taken in the transport;
// beside the sessions it may host a serving engine (Generator: Generate calls
// streaming each token, servingroom.go) without importing package serving.
//
// It executes through the wire.Engine interface and must not invent a second
// Program: what each mode ships is partition's RemotePayloadOf; it reaches a
// backend only through exec/backend's registry (server.BackendEngine), never by
// importing one, and does not write to disk.
package remote
