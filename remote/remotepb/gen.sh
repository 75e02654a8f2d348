#!/usr/bin/env bash
# Regenerates remote.pb.go and remote_grpc.pb.go from remote.proto with the
# pinned generators (see README.md). Run from this directory: go generate.
set -euo pipefail
cd "$(dirname "$0")"
bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
GOBIN="$bin" go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
GOBIN="$bin" go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
want="libprotoc 3.21.12"
got="$(protoc --version)"
if [ "$got" != "$want" ]; then
  echo "gen.sh: protoc is '$got', want '$want' (Debian bookworm: apt-get install protobuf-compiler=3.21.12-3+deb12u1)" >&2
  exit 1
fi
protoc --plugin=protoc-gen-go="$bin/protoc-gen-go" --plugin=protoc-gen-go-grpc="$bin/protoc-gen-go-grpc" \
  --go_out=. --go_opt=paths=source_relative \
  --go-grpc_out=. --go-grpc_opt=paths=source_relative \
  remote.proto
