// Package remotepb is the generated protobuf and gRPC code of remote.proto,
// the partbench remote-execution protocol. It owns nothing hand-written but
// this file; it must not be edited by hand: change remote.proto and run
// go generate ./remote/remotepb (README.md names the pinned generators).
package remotepb

//go:generate bash gen.sh
