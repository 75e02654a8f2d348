package commcount

import "sync/atomic"

// Transfer counts one direction pair of a client↔server exchange (remote
// execution), under these definitions:
//   - payload bytes are tensor and token bytes (what partition's remote
//     payload lists): never headers, session ids or framing;
//   - wire bytes are every byte of every message the transport writes,
//     payload included, plus its framing (gRPC: the 5-byte message prefix;
//     raw TCP: the 4-byte length prefix); HTTP/2 and TLS framing are below
//     the message layer and counted apart, at the socket;
//   - a message is one framed protobuf message.
//
// Up is client → server, Down server → client. Safe for concurrent use.
type Transfer struct {
	PayloadUp, PayloadDown   atomic.Int64
	WireUp, WireDown         atomic.Int64
	MessagesUp, MessagesDown atomic.Int64
}

// TransferSnapshot is an immutable copy of a Transfer.
type TransferSnapshot struct {
	PayloadUp    int64 `json:"payload_up_bytes"`
	PayloadDown  int64 `json:"payload_down_bytes"`
	WireUp       int64 `json:"wire_up_bytes"`
	WireDown     int64 `json:"wire_down_bytes"`
	MessagesUp   int64 `json:"messages_up"`
	MessagesDown int64 `json:"messages_down"`
}

// Up records one message client → server.
func (t *Transfer) Up(payload, wire int64) {
	t.PayloadUp.Add(payload)
	t.WireUp.Add(wire)
	t.MessagesUp.Add(1)
}

// Down records one message server → client.
func (t *Transfer) Down(payload, wire int64) {
	t.PayloadDown.Add(payload)
	t.WireDown.Add(wire)
	t.MessagesDown.Add(1)
}

// Snapshot copies the counts.
func (t *Transfer) Snapshot() TransferSnapshot {
	return TransferSnapshot{PayloadUp: t.PayloadUp.Load(), PayloadDown: t.PayloadDown.Load(),
		WireUp: t.WireUp.Load(), WireDown: t.WireDown.Load(),
		MessagesUp: t.MessagesUp.Load(), MessagesDown: t.MessagesDown.Load()}
}

// Add sums two snapshots.
func (s TransferSnapshot) Add(o TransferSnapshot) TransferSnapshot {
	return TransferSnapshot{s.PayloadUp + o.PayloadUp, s.PayloadDown + o.PayloadDown, s.WireUp + o.WireUp,
		s.WireDown + o.WireDown, s.MessagesUp + o.MessagesUp, s.MessagesDown + o.MessagesDown}
}
