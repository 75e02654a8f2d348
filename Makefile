# partbench — build, test, run.
GO      ?= go
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
# go-nvml's header marks NVML calls partbench never makes as deprecated; keep cgo builds quiet.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

.PHONY: build test test-fast test-go deps-test kernel-check run vet fuzz gpu-check clean

## build: the partbench binary in bin/
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/partbench ./cmd/partbench

## run: the main job, the embedded seed comparison (tp8pp2 vs layerwise16)
run:
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/partbench model --dry-run

## test: everything CI runs (installs Open MPI and pdflatex first when missing, and Debian's
## NVRTC into the cache; the kernel gate then requires NVRTC, the LaTeX tests pdflatex)
test: export PARTBENCH_REQUIRE_NVRTC = 1
test: export PARTBENCH_REQUIRE_LATEX = 1
test: deps-test kernel-check test-go

## test-fast: a developer's loop: vet, then every package's tests without -race, -short
## (skips the end-to-end runs under mpirun, the documented-commands run and other minute-long tests)
test-fast:
	$(GO) vet ./...
	$(GO) test -short -timeout 10m ./...

deps-test:
	@bash scripts/install-test-deps.sh

## kernel-check: NVRTC compiles every kernel file (fp32, fp16, bf16; sm_80, sm_90, and sm_90a
## where a file uses Hopper-only instructions) with ptxas -v and prints registers, shared
## memory and spills per architecture; the host-emulation harness runs every kernel against
## float64 references. PARTBENCH_REQUIRE_NVRTC=1 makes a missing NVRTC a failure (docs/gpu.md).
KERNEL_TESTS := TestKernelCheck|TestKernelCheckSm90a|TestPtxasAndPTXParsers|TestSpillAllowlist|HostEmulat|Emulated$$|EmulatedPlantedBugs|SourceCompiles|TestPrelude|TestASan|TestRewriteExternShared|TestSource|TestExpand|TestRealNVRTC|KernelEmulated|KernelsEmulated|KernelEmulatedPlantedBugs
kernel-check:
	@PARTBENCH_KERNEL_CHECK=1 bash -o pipefail -c '$(GO) test -count=1 -timeout 30m -v -run "$(KERNEL_TESTS)" ./cgo/cuda ./exec/cuda ./exec/cuda/hostemu ./exec/cuda/kernels \
		| grep -v -E "^=== (RUN|PAUSE|CONT|NAME)"'

test-go:
	$(GO) vet ./...
	$(GO) test -race -timeout 20m ./...
	CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/partbench

vet:
	$(GO) vet ./...

## fuzz: every Fuzz target for FUZZTIME each (default 20s): FUZZTIME=5m make fuzz
fuzz:
	GO=$(GO) bash scripts/fuzz.sh

## gpu-check: everything a GPU machine needs in one folder (binary, test binaries, configs, script);
## there, in one device call: cd gpu-check && ./gpu-check.sh OUTDIR (docs/gpu.md)
gpu-check:
	rm -rf gpu-check && mkdir -p gpu-check
	$(GO) build -ldflags "$(LDFLAGS) -s -w" -o gpu-check/partbench ./cmd/partbench
	$(GO) test -c -ldflags "-s -w" -o gpu-check/cgo-cuda.test ./cgo/cuda
	$(GO) test -c -ldflags "-s -w" -o gpu-check/exec-cuda.test ./exec/cuda
	$(GO) test -c -ldflags "-s -w" -o gpu-check/hostemu.test ./exec/cuda/hostemu
	$(GO) test -c -ldflags "-s -w" -o gpu-check/topology.test ./topology
	$(GO) test -c -ldflags "-s -w" -o gpu-check/host/remote.test ./remote
	$(GO) test -c -ldflags "-s -w" -o gpu-check/host/shards.test ./checkpoint/shards
	cp -r configs gpu-check/configs && find gpu-check/configs -name "*.go" -delete
	mkdir -p gpu-check/checkpoint && cp -r checkpoint/testdata gpu-check/checkpoint/testdata
	cp scripts/gpu-check.sh scripts/torch_baseline.py scripts/baseline_table.py scripts/gpu_agreement_table.py gpu-check/
	mkdir -p gpu-check/calibration-agreement && cp scripts/calibration-agreement/*.toml gpu-check/calibration-agreement/
	tar -czf gpu-check.tgz gpu-check
	@echo "gpu-check/ and gpu-check.tgz (the same, a third the size): carry one to a GPU machine and run ./gpu-check.sh OUTDIR there"

clean:
	rm -rf bin dist gpu-check gpu-check.tgz
