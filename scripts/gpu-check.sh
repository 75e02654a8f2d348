#!/usr/bin/env bash
# gpu-check.sh OUTDIR [STEP...] — what a session with a GPU runs first.
#
# Run it from a folder holding the partbench binary (./partbench, or set
# PARTBENCH=/path/to/partbench) and configs/. It writes every step's output
# to OUTDIR/<step>.log, one line per step to OUTDIR/steps.tsv (step, exit
# status, seconds, what ran), and a summary to OUTDIR/summary.txt. A failing
# step is recorded and the script goes on; it exits 1 when any step failed.
#
# Steps (default: all, in this order; name some to run only those):
#   system    nvidia-smi, the GPU's details, libraries the loader sees, environment
#   nccl      partbench nccl-check: libcuda and NCCL load, a 1-rank all-reduce and send/recv
#   tests     every *.test binary here (go test -c of ./cgo/cuda, ./exec/cuda and ./topology), its
#             RealGPU tests: kernels, graphs and cuBLAS on the device, and the GPU held
#             against the CPU reference on every test partitioning in fp32, fp16, bf16
#   check     partbench run --check --backend cuda on the tiny test configs (fp32 as
#             configured, then fp16 when the build has --dtype)
#   single    a measured run of the seed model on one GPU (OUTDIR/single-gpu-seed.toml)
#   emulate   every rank of TP=8×PP=2 and of layer-wise 16 played in turn on this GPU,
#             at a reduced workload (run --emulate-ranks)
#   sanitize  compute-sanitizer memcheck, then racecheck, over exec-cuda.test's kernel tests on
#             their test shapes (every kernel against float64, the 16-bit stores, the tiny
#             fp16 checks; SANITIZE_RUN, a -test.run pattern) and hostemu.test's tensor-core
#             tests, each run limited to SANITIZE_TIMEOUT seconds (240); skipped, saying so,
#             without compute-sanitizer
#   torch     the single-GPU seed config run by partbench and, on the same shapes, by
#             PyTorch (torch_baseline.py: eager SDPA prefill, eager and CUDA-graph decode);
#             one table, OUTDIR/torch-vs-partbench.md (needs python3 with torch)
#
# Each step runs under `timeout` (STEP_TIMEOUT seconds, default 300). A device
# session limits one command to 10 minutes: run the steps in two calls, e.g.
#   scripts/gpu-check.sh out system nccl tests check  and then  scripts/gpu-check.sh out single emulate
set -u

if [ $# -lt 1 ]; then
	echo "usage: $0 OUTDIR [system|nccl|tests|check|single|emulate|sanitize|torch ...]" >&2
	exit 2
fi
out=$1
shift
steps=${*:-system nccl tests check single emulate sanitize torch}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
pb=${PARTBENCH:-./partbench}
limit=${STEP_TIMEOUT:-300}
failed=0
[ -f "$out/steps.tsv" ] || printf 'step\tstatus\tseconds\tcommand\n' >"$out/steps.tsv"

# step NAME CMD... runs CMD with its output in OUTDIR/NAME.log and records it.
step() {
	local name=$1
	shift
	local log="$out/$name.log" start end rc
	echo "== $name: $*" | tee -a "$out/summary.txt"
	start=$(date +%s%N)
	{
		echo "\$ $*"
		timeout --kill-after=10 "$limit" "$@"
	} >"$log" 2>&1
	rc=$?
	end=$(date +%s%N)
	[ $rc -eq 124 ] && echo "(timed out after $limit s)" >>"$log"
	printf '%s\t%d\t%s\t%s\n' "$name" "$rc" "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')" "$*" >>"$out/steps.tsv"
	tail -n 3 "$log" | sed 's/^/   /' | tee -a "$out/summary.txt"
	if [ $rc -ne 0 ]; then
		failed=1
		echo "   -> exit status $rc" | tee -a "$out/summary.txt"
	fi
	return 0
}

# has_flag SUBCOMMAND FLAG: whether this build's subcommand knows the flag.
has_flag() { "$pb" "$1" --help 2>/dev/null | grep -q -- "$2"; }

# note NAME TEXT records a step that was skipped, and why.
note() {
	printf '%s\tskipped\t0\t%s\n' "$1" "$2" >>"$out/steps.tsv"
	echo "== $1: skipped: $2" | tee -a "$out/summary.txt"
}

write_configs() {
	# Same model as the seed experiment, workloads cut so each run takes minutes.
	local common='
[hardware]
preset = "h100-sxm"

[run]
warmup = 1
iterations = 3
seed = 1'
	cat >"$out/single-gpu-seed.toml" <<EOF
# One GPU runs the whole seed model (16 layers, fp16).
version = 1
name = "single-gpu-seed"
description = "seed-dense16 on one GPU (TP=1 x PP=1), batch 16, 2048-token context"

[model]
preset = "seed-dense16"

[workload]
batch = 16
context = 2048
output_tokens = 32
phases = ["prefill", "decode"]

[parallel]
tp = 1
pp = 1
microbatches = 1

[topology]
name = "one-gpu"
nodes = 1
gpus_per_node = 1

[topology.intra_node]
class = "nvlink"
name = "none (one GPU)"
bytes_per_s = 450e9
latency_s = 1.0e-6

[topology.inter_node]
class = "network"
name = "none (one node)"
bytes_per_s = 50e9
latency_s = 5.0e-6
$common
EOF
	for s in "tp8pp2:8:2:8" "layerwise16:1:16:1"; do
		IFS=: read -r name tp pp mbs <<<"$s"
		cat >"$out/$name-small.toml" <<EOF
# $name at a reduced workload, for rank emulation on one GPU.
version = 1
name = "$name-small"

[model]
preset = "seed-dense16"

[workload]
batch = 16
context = 2048
output_tokens = 32
phases = ["prefill", "decode"]

[parallel]
tp = $tp
pp = $pp
microbatches = $mbs

[topology]
preset = "dgx-h100x2"
$common
EOF
	done
}

for s in $steps; do
	case $s in
	system)
		if command -v nvidia-smi >/dev/null; then
			step nvidia-smi nvidia-smi
			step nvidia-smi-query nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit,pcie.link.gen.max --format=csv
			step nvidia-smi-topo nvidia-smi topo -m
		else
			note nvidia-smi "no nvidia-smi on PATH"
		fi
		step libraries sh -c 'ldconfig -p | grep -E "libcuda\.so|libnccl|libcublas|libnvrtc" ; ls -l /usr/local/cuda*/lib64/libcublas* /usr/local/cuda*/lib64/libnvrtc* 2>/dev/null; true'
		step environment sh -c 'uname -a; cat /etc/os-release 2>/dev/null | head -2; ldd --version 2>&1 | head -1; env | grep -E "^(CUDA|NCCL|PARTBENCH|LD_LIBRARY_PATH|NVIDIA)" | sort; true'
		step version "$pb" --version
		;;
	nccl)
		if "$pb" nccl-check --help >/dev/null 2>&1; then
			step nccl-check "$pb" nccl-check
		else
			note nccl-check "this build has no nccl-check subcommand"
		fi
		;;
	tests)
		found=0
		for f in ./*.test; do
			[ -x "$f" ] || continue
			found=1
			step "tests-$(basename "$f" .test)" "$f" -test.run RealGPU -test.v -test.timeout "${limit}s"
			skipped=$(grep -c -- '--- SKIP' "$out/tests-$(basename "$f" .test).log")
			[ "$skipped" -eq 0 ] || echo "   ($skipped tests skipped: see the log)" | tee -a "$out/summary.txt"
		done
		[ $found -eq 1 ] || note tests "no *.test binaries here (go test -c -o exec-cuda.test ./exec/cuda)"
		;;
	check)
		for c in tp2pp2-tiny single-tiny tp4-tiny pp4-tiny layerwise16-tiny tp8pp2-tiny layermap-tiny tp2-dp2-tiny; do
			step "check-$c" "$pb" run --check --backend cuda --config "test/$c"
		done
		if has_flag run --dtype; then
			for c in tp2pp2-tiny tp8pp2-tiny; do
				step "check-$c-fp16" "$pb" run --check --backend cuda --dtype fp16 --config "test/$c"
				step "check-$c-bf16" "$pb" run --check --backend cuda --dtype bf16 --config "test/$c"
			done
		else
			note check-fp16 "this build's run has no --dtype flag: the check ran in the configs' fp32"
		fi
		;;
	single)
		write_configs
		step single-gpu-seed "$pb" run --nproc 1 --backend cuda --config "$out/single-gpu-seed.toml" \
			--output-dir "$out/single-gpu-seed" --format markdown --per-rank
		step single-gpu-tiny "$pb" run --nproc 1 --backend cuda --config test/single-tiny \
			--output-dir "$out/single-gpu-tiny" --format markdown
		;;
	emulate)
		write_configs
		if has_flag run --emulate-ranks; then
			step emulate-tp8pp2 "$pb" run --emulate-ranks 16 --backend cuda --config "$out/tp8pp2-small.toml" \
				--warmup 1 --iterations 2 --format markdown
			step emulate-layerwise16 "$pb" run --emulate-ranks 16 --backend cuda --config "$out/layerwise16-small.toml" \
				--warmup 1 --iterations 2 --format markdown
		else
			note emulate "this build's run has no --emulate-ranks flag"
		fi
		;;
	sanitize)
		san=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || true)}
		for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
			[ -n "$san" ] && break
			[ -n "$d" ] && [ -x "$d/bin/compute-sanitizer" ] && san=$d/bin/compute-sanitizer
		done
		if [ -z "$san" ]; then
			note sanitize "no compute-sanitizer on PATH, in \$CUDA_HOME/bin or /usr/local/cuda/bin (set COMPUTE_SANITIZER)"
		elif [ ! -x ./exec-cuda.test ]; then
			note sanitize "no exec-cuda.test here (go test -c -o exec-cuda.test ./exec/cuda)"
		else
			run=${SANITIZE_RUN:-TestRealGPUKernelsAgainstFloat64|TestRealGPURounding|TestRealGPUCheck/fp16/(single|tp2pp2)-tiny}
			saved=$limit
			limit=${SANITIZE_TIMEOUT:-240}
			for tool in memcheck racecheck; do
				step "sanitize-$tool" "$san" --tool "$tool" --error-exitcode 1 --target-processes all \
					./exec-cuda.test -test.run "$run" -test.v -test.timeout "${limit}s"
				if [ -x ./hostemu.test ]; then
					step "sanitize-$tool-tc" "$san" --tool "$tool" --error-exitcode 1 --target-processes all \
						./hostemu.test -test.run RealGPU -test.v -test.timeout "${limit}s"
				fi
			done
			limit=$saved
		fi
		;;
	torch)
		write_configs
		py=${PYTHON:-python3}
		if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
			note torch "$py has no torch with CUDA (pip install torch, or set PYTHON)"
		else
			step torch-partbench "$pb" run --nproc 1 --backend cuda --config "$out/single-gpu-seed.toml" \
				--output-dir "$out/torch-partbench" --format markdown
			step torch-baseline sh -c "\"$py\" \"$here/torch_baseline.py\" --results \"$out/torch-partbench/results.json\" --warmup 1 --iterations 3 >\"$out/torch.jsonl\""
			step torch-table sh -c "\"$py\" \"$here/baseline_table.py\" \"$out/torch-partbench/results.json\" \"$out/torch.jsonl\" >\"$out/torch-vs-partbench.md\" && cat \"$out/torch-vs-partbench.md\""
		fi
		;;
	*)
		note "$s" "unknown step"
		;;
	esac
done

echo "results in $out (steps.tsv, summary.txt, one log per step)"
exit $failed
