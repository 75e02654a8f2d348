// Package wire is what the remote server and its client share: the payload
// types (Tensor, StepInput, StepOutput), the step contract every engine
// implements (Engine, EngineSession), the phases, the raw-TCP and gRPC
// framing and limits, and the mode ↔ remotepb.Mode mapping read from
// partition's mode table.
//
// It imports no other remote room and holds no session, socket or engine of
// its own.
package wire
