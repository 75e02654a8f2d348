// Package remote is the client room of partbench's remote execution: a
// client of `partbench serve` over gRPC and the raw-TCP twin (sessions,
// steps, byte counts taken in the transport, pause and resume), the serving
// room's Generate client, spawning and connecting to a server, and the trials
// driver (trials, results, partbench remote's Measure).
//
// The rooms: remote/wire (protocol types, framing, the step contract,
// mode ↔ enum through partition's mode table), remote/server (the server,
// its engines, the serving room, serve), this package, and remote/loopback
// (a server and a client in one process). This package and the server import
// wire and never each other (rooms_test.go). It must not invent a second
// Program: what each mode ships is partition's RemotePayloadOf; it does not
// write to disk except results files.
package remote
