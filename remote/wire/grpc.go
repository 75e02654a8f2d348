package wire

import (
	"context"
	"crypto/x509"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// GRPCPrefixBytes is gRPC's per-message framing: a compressed flag and a
// 4-byte length (gRPC over HTTP/2 protocol, "Length-Prefixed-Message").
const GRPCPrefixBytes = 5

// DisconnectBound is how long after a client vanishes without closing its
// connection (a killed host, a cut cable) the server notices and frees its
// sessions: keepalive ping interval + ping timeout. A client process that is
// killed closes its socket and is noticed at once.
const DisconnectBound = KeepaliveTime + KeepaliveTimeout

// HTTP/2 flow-control windows and socket buffers of both ends: a window
// of a few chunks lets a weight stream run without waiting for window
// updates (a fixed window turns off gRPC's bandwidth-delay estimation).
const (
	WindowBytes   = 16 << 20
	IOBufferBytes = 256 << 10
)

const (
	KeepaliveTime    = 20 * time.Second
	KeepaliveTimeout = 10 * time.Second
)

// LoadPool reads a --tls-ca file (a small regular file of PEM certificates).
func LoadPool(file string) (*x509.CertPool, error) {
	pemData, err := ReadSmallFile("--tls-ca", file, MaxPEMFileBytes)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", file)
	}
	return pool, nil
}

// MetadataWithToken adds the bearer token to a call's outgoing metadata.
func MetadataWithToken(ctx context.Context, tok string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
}

// SessionStreamHeader is the response-header key with which a server
// accepts a Session stream (sent before it reads a frame), and the
// trailer key with which it says why it refused one.
const SessionStreamHeader = "partbench-session-stream"

// SessionStreamLimited is SessionStreamHeader's trailer value on a Session
// stream refused (ResourceExhausted) because its connection holds as many
// open as the server allows: the client steps that session over Step
// calls. Any other refusal of the stream (the memory budget, the token)
// has no such trailer and is the step's error.
const SessionStreamLimited = "limit"

// SessionStreamLimitedBefore begins the message of the stream-limit refusal
// of servers built before SessionStreamLimited: they send no trailer, and a
// refusal with this message (ResourceExhausted) is theirs.
const SessionStreamLimitedBefore = "session stream: this connection has "

// StatusTrailer is the trailer key with which a server gives the status
// it meant when it ended a stream by cancelling it (a receive past the read
// timeout, a session freed while its stream waited): gRPC then sends
// Canceled from the cancelled receive itself, so the status the client
// should see travels here, "<code> <message>".
const StatusTrailer = "partbench-status-bin"

// StatusTrailerMD is err's status as a StatusTrailer trailer.
func StatusTrailerMD(err error) metadata.MD {
	st := status.Convert(err)
	return metadata.Pairs(StatusTrailer, strconv.Itoa(int(st.Code()))+" "+st.Message())
}

// StatusFromTrailer is the status a StatusTrailer in md gives; nil when md
// has none (or one that does not parse).
func StatusFromTrailer(md metadata.MD) error {
	v := md.Get(StatusTrailer)
	if len(v) != 1 {
		return nil
	}
	code, msg, ok := strings.Cut(v[0], " ")
	n, err := strconv.Atoi(code)
	if !ok || err != nil || n <= 0 || n > int(codes.Unauthenticated) {
		return nil
	}
	return status.Error(codes.Code(n), msg)
}
