package wire

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestStatusTrailer: a status put into the trailer comes back with its
// code and message (spaces and non-ASCII included: the key is binary);
// a trailer without it, or one that does not parse, gives nil.
func TestStatusTrailer(t *testing.T) {
	in := status.Error(codes.NotFound, "session 0123abcd…: freed (closed, idle longer than 5m0s)")
	got := StatusFromTrailer(StatusTrailerMD(in))
	if status.Code(got) != codes.NotFound || status.Convert(got).Message() != status.Convert(in).Message() {
		t.Errorf("round trip of %v: %v", in, got)
	}
	for _, md := range []metadata.MD{
		nil,
		metadata.Pairs("other", "5 x"),
		metadata.Pairs(StatusTrailer, "x no code"),
		metadata.Pairs(StatusTrailer, "0 OK is no error"),
		metadata.Pairs(StatusTrailer, "17 beyond the codes"),
		metadata.Pairs(StatusTrailer, "5"),
	} {
		if err := StatusFromTrailer(md); err != nil {
			t.Errorf("trailer %v: %v, want nil", md, err)
		}
	}
}
