#!/usr/bin/env bash
# gpu-check.sh [--dry-run] OUTDIR [STEP...] — what a session with a GPU runs first, in ONE call.
#
# Run it from a folder holding the partbench binary (./partbench, or set
# PARTBENCH=/path/to/partbench), the *.test binaries and configs/ (`make
# gpu-check` builds that folder here: nothing is built on the GPU machine).
# Every step runs under its own time limit, cut to what is left of the whole
# call's budget (TOTAL_BUDGET seconds, default 540: a device call allows 10
# minutes); a step that fails or times out is recorded and the others run.
#
# It writes, into OUTDIR:
#   report.md    the device, driver, CUDA, NCCL and library versions at the top, then
#                every step (status, seconds, limit, command) and its last lines
#   steps.json   the same as data (schema partbench.gpu-check/v1)
#   steps.tsv    one line per step; <step>.log, each step's whole output; the
#                results files the steps write (results.json, resume.json, …)
# and exits 1 when any step failed (0 when all passed or were skipped with a reason).
#
# Steps (default: all, in this order; name some to run only those), with their
# limits in seconds:
#   system     30   nvidia-smi, the GPU's details, libraries the loader sees, environment
#   nccl       30   partbench nccl-check: libcuda and NCCL load, a 1-rank all-reduce and send/recv
#   tests     240   every *.test binary here, its RealGPU tests (kernels, graphs, cuBLAS, the
#                   GPU against the CPU reference on every test partitioning, fp32/fp16/bf16)
#   check      60   run --check --backend cuda on the tiny test configs, fp32, fp16 and bf16
#   single     60   the seed shapes at 4 layers on one GPU, weights generated on the device
#   torch      60   the same config in PyTorch (eager SDPA prefill, eager and CUDA-graph
#                   decode, one layer's attention under each SDPA backend) beside
#                   partbench's run and its trace: OUTDIR/torch-vs-partbench.md
#   batch1     45   the seed shapes at 4 layers, batch 1, context 2048 (the HBM-bound
#                   decode), partbench and PyTorch: OUTDIR/torch-vs-partbench-b1.md
#   without    30   the seed runs at batch 16 and 1 with the fused residual+norm and the
#                   one-launch split-KV turned off (PARTBENCH_CUDA_WITHOUT), and with the
#                   small-M GEMV off (PARTBENCH_GEMV=off), for their gain
#   startup    60   the 16-layer seed model on one GPU, one iteration: start-up is
#                   elapsed minus the iteration (OUTDIR/startup.txt)
#   emulate    45   one-rank emulation beside the real one-rank run, and tp8pp2 emulated
#   calibrate  60   calibrate --backend cuda --quick, the model priced with it beside the
#                   seed4 run priced with it
#   agreement  90   the calibrated model against runs it was calibrated for, on this GPU: a
#                   calibration whose op table holds tp8pp2-seed4's shapes (timed one rank
#                   per stage) beside tp8pp2 emulated, and one of the six tiny test configs
#                   beside each (single-tiny run on the GPU, the others emulated); the
#                   model's errors in one table: OUTDIR/agreement.md
#   l2         30   l2 --measure --backend cuda on the seed strategies
#   generate   60   generate --backend cuda --reference and run --check --model-dir on the
#                   Hugging Face fixtures, fp32/fp16/bf16; TP 2 from partbench shard's files
#   resume     30   resume --backend cuda: recompute, offload, stateful
#   serve      45   serve --backend cuda with remote --mode all and its SM activity
#   serving    40   the continuous-batching engine in `serve --backend cuda` under load,
#                   over gRPC and raw TCP (serving --spawn-server), measured beside modeled;
#                   under Nsight Systems too where the host has nsys (its API summaries)
#   transport  40   the CPU backend on this host's idle cores: pp2-tiny (TTFT from one
#                   start), single-tiny on one rank, tensor-parallel on 2 ranks over TCP
#                   and over shared memory (TPOT)
#   sanitize   90   compute-sanitizer memcheck and racecheck over the kernel tests
#   host       90   what a many-core host decides and the 2-core CI machine cannot: the
#                   remote stateful step's overhead beside its echo floor across processes,
#                   both transports, raw TCP's reads polling (auto: adaptive on >= 4 CPUs)
#                   and not (PARTBENCH_TCP_POLL=off), five runs each; then checkpoint slices
#                   on a cold cache against the file's sequential read (TP 1/2/8) on this
#                   host's disk (host/*.test, built by make gpu-check; HOST_CKPT_MB sets
#                   the file's size, default 1024)
#
# The seed configs name the hardware preset of the host's GPU (h200-sxm on an
# H200, else h100-sxm; HARDWARE_PRESET=NAME overrides), so the uncalibrated
# model prices the card the runs use.
#
# With ARCHIVE=FILE set, OUTDIR is also written as one gzip tar to FILE at the
# end (a device call brings back a limited number of files: OUTDIR's 140 would
# be cut; see docs/gpu.md, "First steps on a GPU").
#
# --dry-run (what `make test` runs, against the fake libraries or none): runs
# no GPU step, but checks that every partbench subcommand and flag the steps
# use exists in this binary and that every config they name loads, so the
# script cannot drift from the CLI while no GPU is at hand.
set -u

dry=0
if [ "${1:-}" = "--dry-run" ]; then
	dry=1
	shift
fi
if [ $# -lt 1 ]; then
	echo "usage: $0 [--dry-run] OUTDIR [system|nccl|tests|check|single|torch|batch1|without|startup|emulate|serving|calibrate|agreement|l2|generate|resume|serve|transport|sanitize|host ...]" >&2
	exit 2
fi
out=$1
shift
all_steps="system nccl tests check single torch batch1 without startup emulate calibrate agreement l2 generate resume serve serving transport sanitize host"
steps=${*:-$all_steps}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
pb=${PARTBENCH:-./partbench}
budget=${TOTAL_BUDGET:-540}
started=$(date +%s)
failed=0
printf 'step\tstatus\tseconds\tlimit\tcommand\n' >"$out/steps.tsv"
: >"$out/summary.txt"

# limit_of STEP: the step's own limit in seconds.
limit_of() {
	case $1 in
	system | nccl | l2 | resume) echo 30 ;;
	calibrate | generate) echo 60 ;;
	tests) echo 240 ;;
	check | single | torch) echo 60 ;;
	emulate | serve | batch1) echo 45 ;;
	serving | transport) echo 40 ;;
	without) echo 30 ;;
	startup) echo 60 ;;
	sanitize | host | agreement) echo 90 ;;
	*) echo 30 ;;
	esac
}

# left: seconds of the whole call's budget still unspent.
left() { echo $((budget - ($(date +%s) - started))); }

# json_escape TEXT: TEXT as a JSON string body.
json_escape() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\t/\\t/g' | tr -d '\n\r'; }

# run NAME CMD... runs CMD with its output in OUTDIR/NAME.log under the
# current step's limit (cut to the budget left) and records it.
run() {
	local name=$1
	shift
	local log="$out/$name.log" start end rc lim
	lim=$step_limit
	if [ "$(left)" -lt "$lim" ]; then lim=$(left); fi
	if [ "$lim" -lt 5 ]; then
		skip "$name" "the call's budget of ${budget} s is spent"
		return 0
	fi
	echo "== $name: $*" | tee -a "$out/summary.txt"
	start=$(date +%s%N)
	{
		echo "\$ $*"
		timeout --kill-after=5 "$lim" "$@"
	} >"$log" 2>&1
	rc=$?
	end=$(date +%s%N)
	[ $rc -eq 124 ] && echo "(timed out after $lim s)" >>"$log"
	printf '%s\t%d\t%s\t%s\t%s\n' "$name" "$rc" "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')" "$lim" "$*" >>"$out/steps.tsv"
	tail -n 3 "$log" | sed 's/^/   /' | tee -a "$out/summary.txt"
	if [ $rc -ne 0 ]; then
		failed=1
		echo "   -> exit status $rc" | tee -a "$out/summary.txt"
	fi
	return 0
}

# skip NAME WHY records a step that did not run, and why.
skip() {
	printf '%s\tskipped\t0\t0\t%s\n' "$1" "$2" >>"$out/steps.tsv"
	echo "== $1: skipped: $2" | tee -a "$out/summary.txt"
}

# has_flag SUBCOMMAND FLAG: whether this build's subcommand knows the flag.
has_flag() { "$pb" $1 --help 2>/dev/null | grep -q -- "$2"; }

# pbrun NAME ARGS...: a partbench step; in --dry-run, checks instead that
# the subcommand and every --flag it passes exist and records it as checked.
pbrun() {
	local name=$1
	shift
	if [ $dry -eq 1 ]; then
		local sub=$1 a missing=""
		[ "$sub" = "trace" ] && sub="trace $2" # a two-word subcommand
		case $sub in
		run | model | nccl-check | calibrate | l2 | generate | shard | resume | serve | remote | serving | "trace stats") ;;
		*) missing="subcommand $sub" ;;
		esac
		local help
		# shellcheck disable=SC2086 # $sub is one or two words
		help=$("$pb" $sub --help 2>&1) || missing="$missing subcommand $sub (no help)"
		for a in "$@"; do
			case $a in
			--*)
				a=${a%%=*}
				printf '%s\n' "$help" | grep -q -- " $a " || printf '%s\n' "$help" | grep -q -- " $a\$" || missing="$missing $a"
				;;
			esac
		done
		if [ -n "$missing" ]; then
			printf '%s\t1\t0\t0\t%s (dry run: missing%s)\n' "$name" "$pb $*" "$missing" >>"$out/steps.tsv"
			echo "== $name: dry run: $pb $* — missing:$missing" | tee -a "$out/summary.txt"
			failed=1
		else
			printf '%s\tchecked\t0\t0\t%s\n' "$name" "$pb $*" >>"$out/steps.tsv"
		fi
		return 0
	fi
	run "$name" "$pb" "$@"
}

# config_ok NAME FILE: in --dry-run, the config must load (model --dry-run).
config_ok() {
	[ $dry -eq 1 ] || return 0
	if ! "$pb" model --dry-run --config "$2" >"$out/$1.log" 2>&1; then
		printf '%s\t1\t0\t0\t%s (dry run: the config does not load)\n' "$1" "$2" >>"$out/steps.tsv"
		echo "== $1: dry run: config $2 does not load: $(tail -n 1 "$out/$1.log")" | tee -a "$out/summary.txt"
		failed=1
	fi
}

# device_preset: the hardware preset of the GPU this host has, so that the
# uncalibrated model prices the card the runs use (H200 → h200-sxm; anything
# else, or no nvidia-smi as in a dry run, h100-sxm); HARDWARE_PRESET overrides.
device_preset() {
	if [ -n "${HARDWARE_PRESET:-}" ]; then
		echo "$HARDWARE_PRESET"
		return
	fi
	case $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) in
	*H200*) echo h200-sxm ;;
	*) echo h100-sxm ;;
	esac
}

# tiny_config NAME: the test config to load: tp2-tiny and pp2-tiny are
# the CPU agreement's files (scripts/calibration-agreement, copied beside
# this script by make gpu-check), the others embedded.
tiny_config() {
	case $1 in
	tp2-tiny | pp2-tiny) echo "$here/calibration-agreement/$1.toml" ;;
	*) echo "test/$1" ;;
	esac
}

# tiny_ranks NAME: the ranks of a tiny test config.
tiny_ranks() {
	case $1 in
	tp2-tiny | pp2-tiny) echo 2 ;;
	layerwise16-tiny) echo 16 ;;
	*) echo 4 ;;
	esac
}

write_configs() {
	# The seed model's layer shapes at 4 layers (a figure that scales by
	# layer is scaled back in the report), so each run takes seconds.
	local common="
[hardware]
preset = \"$(device_preset)\"
"'

[run]
warmup = 1
iterations = 3
seed = 1'
	cat >"$out/seed4-1gpu.toml" <<EOF
# The seed layers (hidden 4096, 32 heads of 128) at 4 layers on one GPU, fp16.
version = 1
name = "seed4-1gpu"

[model]
preset = "seed-dense16"
layers = 4

[workload]
batch = 16
context = 2048
output_tokens = 16

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
	cat >"$out/tp8pp2-seed4.toml" <<EOF
# TP=8 x PP=2 over the seed layers at 4 layers, for rank emulation on one GPU.
version = 1
name = "tp8pp2-seed4"

[model]
preset = "seed-dense16"
layers = 4

[workload]
batch = 16
context = 2048
output_tokens = 16

[parallel]
tp = 8
pp = 2
microbatches = 8

[topology]
preset = "dgx-h100x2"
$common
EOF
	sed -e 's/^name = "seed4-1gpu"/name = "seed4-b1"/' -e 's/^batch = 16/batch = 1/' \
		-e 's/^# The seed layers.*/# The seed layers at 4 layers on one GPU, batch 1: the HBM-bound decode./' \
		"$out/seed4-1gpu.toml" >"$out/seed4-b1.toml"
	sed -e 's/^name = "seed4-1gpu"/name = "seed16-1gpu"/' -e 's/^layers = 4/layers = 16/' \
		-e 's/^warmup = 1/warmup = 0/' -e 's/^iterations = 3/iterations = 1/' \
		-e 's/^# The seed layers.*/# The 16-layer seed model on one GPU, one iteration: its start-up time./' \
		"$out/seed4-1gpu.toml" >"$out/seed16-1gpu.toml"
	config_ok config-seed4 "$out/seed4-1gpu.toml"
	config_ok config-seed4-b1 "$out/seed4-b1.toml"
	config_ok config-seed16 "$out/seed16-1gpu.toml"
	config_ok config-tp8pp2-seed4 "$out/tp8pp2-seed4.toml"
}

for s in $steps; do
	step_limit=$(limit_of "$s")
	case $s in
	system)
		if [ $dry -eq 1 ]; then
			skip system "dry run"
			continue
		fi
		if command -v nvidia-smi >/dev/null; then
			run nvidia-smi nvidia-smi
			run nvidia-smi-query nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit,pcie.link.gen.max --format=csv
			run nvidia-smi-topo nvidia-smi topo -m
		else
			skip nvidia-smi "no nvidia-smi on PATH"
		fi
		run libraries sh -c 'ldconfig -p | grep -E "libcuda\.so|libnccl|libcublas|libnvrtc" ; ls -l /usr/local/cuda*/lib64/libcublas* /usr/local/cuda*/lib64/libnvrtc* 2>/dev/null; true'
		run environment sh -c 'uname -a; cat /etc/os-release 2>/dev/null | head -2; ldd --version 2>&1 | head -1; env | grep -E "^(CUDA|NCCL|PARTBENCH|LD_LIBRARY_PATH|NVIDIA)" | sort; true'
		run version "$pb" --version
		;;
	nccl)
		pbrun nccl-check nccl-check
		;;
	tests)
		if [ $dry -eq 1 ]; then
			skip tests "dry run"
			continue
		fi
		found=0
		for f in ./*.test; do
			[ -x "$f" ] || continue
			found=1
			run "tests-$(basename "$f" .test)" "$f" -test.run RealGPU -test.v -test.timeout "${step_limit}s"
		done
		[ $found -eq 1 ] || skip tests "no *.test binaries here (make gpu-check builds them)"
		;;
	check)
		for c in single-tiny tp2pp2-tiny tp8pp2-tiny layerwise16-tiny tp2-dp2-tiny gpt2-tiny; do
			pbrun "check-$c" run --check --backend cuda --config "test/$c"
		done
		if [ $dry -eq 1 ] || has_flag run --dtype; then
			for c in tp2pp2-tiny tp8pp2-tiny gpt2-tiny; do
				pbrun "check-$c-fp16" run --check --backend cuda --dtype fp16 --config "test/$c"
				pbrun "check-$c-bf16" run --check --backend cuda --dtype bf16 --config "test/$c"
			done
		else
			skip check-16bit "this build's run has no --dtype flag"
		fi
		# gpt2-tiny's biased GEMMs on each path: cuBLASLt's epilogues (the
		# default above), GemmEx + the fused bias+GELU kernel, unfused
		if [ $dry -eq 0 ]; then
			for w in cublaslt cublaslt,bias-act; do
				run "check-gpt2-tiny-fp16-without-${w%%,*}${w#cublaslt}" env PARTBENCH_CUDA_WITHOUT="$w" "$pb" run --check --backend cuda \
					--dtype fp16 --config test/gpt2-tiny
			done
		fi
		;;
	transport)
		# The CPU backend's ranks on this host's idle cores: one rank, then
		# tensor-parallel over 2 ranks through TCP and through shared memory,
		# three rounds (the TPOT rows of each run's table; its p50 column).
		sed -e 's/^tp = 4/tp = 2/' -e 's/gpus_per_node = 4/gpus_per_node = 2/' -e 's/^name = "tp4-tiny"/name = "tp2-tiny"/' \
			configs/test/tp4-tiny.toml >"$out/tp2-tiny.toml" 2>/dev/null || cp "$here/../configs/test/tp4-tiny.toml" "$out/tp2-tiny.toml"
		sed -e 's/^tp = 2/tp = 1/' -e 's/gpus_per_node = 4/gpus_per_node = 2/' -e 's/^name = "tp2pp2-tiny"/name = "pp2-tiny"/' \
			configs/test/tp2pp2-tiny.toml >"$out/pp2-tiny.toml" 2>/dev/null || cp "$here/../configs/test/tp2pp2-tiny.toml" "$out/pp2-tiny.toml"
		for i in 1 2 3; do
			pbrun "cpu-pp2-tiny-$i" run --backend cpu --nproc-per-node 2 --config "$out/pp2-tiny.toml" --iterations 30 --output-dir "$out/cpu-pp2-tiny-$i" --quiet
			pbrun "cpu-single-tiny-$i" run --backend cpu --nproc-per-node 1 --config test/single-tiny --iterations 30 --output-dir "" --quiet
			for tr in tcp shm; do
				pbrun "cpu-tp2-$tr-$i" run --backend cpu --nproc-per-node 2 --config "$out/tp2-tiny.toml" --iterations 30 \
					--transport "$tr" --output-dir "" --quiet
			done
		done
		;;
	single)
		write_configs
		# Start-up time is the run's wall time before its first warm-up
		# (results.json: elapsed and the first iteration's start).
		pbrun single-seed4 run --nproc-per-node 1 --backend cuda --config "$out/seed4-1gpu.toml" \
			--output-dir "$out/single-seed4" --format markdown --per-rank --trace "$out/single-seed4.trace.json"
		if [ $dry -eq 1 ] || [ -f "$out/single-seed4.trace.json" ]; then
			pbrun trace-stats-seed4 trace stats "$out/single-seed4.trace.json" --by kind --per-phase
		fi
		pbrun single-tiny run --nproc-per-node 1 --backend cuda --config test/single-tiny --output-dir "$out/single-tiny" --format markdown
		;;
	torch)
		write_configs
		py=${PYTHON:-python3}
		if [ $dry -eq 1 ]; then
			presets=$here/configs/model
			[ -d "$presets" ] || presets=$here/../configs/model
			run torch-shapes "$py" "$here/torch_baseline.py" --config "$out/seed4-1gpu.toml" --presets "$presets" --dry-run
		elif ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
			skip torch "$py has no torch with CUDA (set PYTHON)"
		elif [ ! -f "$out/single-seed4/results.json" ]; then
			skip torch "no single-seed4 results to compare with (run the single step first)"
		else
			run torch-baseline sh -c "\"$py\" \"$here/torch_baseline.py\" --results \"$out/single-seed4/results.json\" --warmup 1 --iterations 3 >\"$out/torch.jsonl\""
			run torch-table sh -c "\"$py\" \"$here/baseline_table.py\" \"$out/single-seed4/results.json\" \"$out/torch.jsonl\" \"$out/single-seed4.trace.json\" >\"$out/torch-vs-partbench.md\" && cat \"$out/torch-vs-partbench.md\""
		fi
		;;
	batch1)
		write_configs
		pbrun single-seed4-b1 run --nproc-per-node 1 --backend cuda --config "$out/seed4-b1.toml" \
			--output-dir "$out/single-seed4-b1" --format markdown --trace "$out/single-seed4-b1.trace.json"
		py=${PYTHON:-python3}
		if [ $dry -eq 1 ]; then
			continue
		elif ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
			skip torch-b1 "$py has no torch with CUDA (set PYTHON)"
		elif [ ! -f "$out/single-seed4-b1/results.json" ]; then
			skip torch-b1 "no single-seed4-b1 results to compare with"
		else
			run torch-baseline-b1 sh -c "\"$py\" \"$here/torch_baseline.py\" --results \"$out/single-seed4-b1/results.json\" --warmup 1 --iterations 3 >\"$out/torch-b1.jsonl\""
			run torch-table-b1 sh -c "\"$py\" \"$here/baseline_table.py\" \"$out/single-seed4-b1/results.json\" \"$out/torch-b1.jsonl\" \"$out/single-seed4-b1.trace.json\" >\"$out/torch-vs-partbench-b1.md\" && cat \"$out/torch-vs-partbench-b1.md\""
		fi
		;;
	without)
		write_configs
		for c in seed4-1gpu seed4-b1; do
			if [ $dry -eq 1 ]; then
				pbrun "without-$c" run --nproc-per-node 1 --backend cuda --config "$out/$c.toml" --output-dir "$out/without-$c" --format markdown
			else
				run "without-$c" env PARTBENCH_CUDA_WITHOUT=fused-norm,splitkv-one-launch "$pb" run --nproc-per-node 1 --backend cuda \
					--config "$out/$c.toml" --output-dir "$out/without-$c" --format markdown
				# the decode GEMMs on cuBLAS alone (the default chooses the
				# small-M GEMV per shape where the setup timed it faster)
				run "gemv-off-$c" env PARTBENCH_GEMV=off "$pb" run --nproc-per-node 1 --backend cuda \
					--config "$out/$c.toml" --output-dir "$out/gemv-off-$c" --format markdown
			fi
		done
		;;
	startup)
		write_configs
		pbrun startup-seed16 run --nproc-per-node 1 --backend cuda --config "$out/seed16-1gpu.toml" \
			--output-dir "$out/startup-seed16" --format markdown
		if [ $dry -eq 0 ] && [ -f "$out/startup-seed16/results.json" ]; then
			# start-up = the run's wall time less its iterations (TTFT + decode steps x TPOT
			# each): warm-up and measured, and the op check's unmeasured one where it ran
			run startup-figure sh -c "\"${PYTHON:-python3}\" -c 'import json,sys; d=json.load(open(sys.argv[1])); m=d[\"measurement\"]; it=m[\"ttft_s\"][\"p50\"]+m[\"decode_steps_per_iteration\"]*m[\"tpot_s\"][\"p50\"]; n=m[\"warmup\"]+m[\"iterations\"]+(1 if any(r.get(\"check_spans\") for r in m[\"ranks\"]) else 0); print(\"16-layer seed model: elapsed %.2f s, %d iterations of %.2f s, start-up %.2f s\" % (d[\"elapsed_s\"], n, it, d[\"elapsed_s\"]-n*it))' \"$out/startup-seed16/results.json\" | tee \"$out/startup.txt\""
		fi
		;;
	emulate)
		write_configs
		pbrun emulate-1rank run --emulate-ranks 1 --backend cuda --config "$out/seed4-1gpu.toml" --warmup 1 --iterations 2 \
			--output-dir "$out/emulate-1rank" --format markdown
		pbrun emulate-tp8pp2 run --emulate-ranks 16 --backend cuda --config "$out/tp8pp2-seed4.toml" --warmup 1 --iterations 2 \
			--output-dir "$out/emulate-tp8pp2" --format markdown
		;;
	calibrate)
		write_configs
		# the op-time table of both batch sizes the checks run (batch 1's
		# decode rows, 1, lie outside batch 16's table)
		pbrun calibrate-cuda calibrate --backend cuda --quick --op-configs seed4-1gpu --op-configs "$out/seed4-b1.toml" \
			--output "$out/calib-cuda.toml" --format markdown
		if [ $dry -eq 1 ] || [ -f "$out/calib-cuda.toml" ]; then
			# the model priced with this GPU's calibration, beside a run that prices it so
			pbrun model-calibrated model --dry-run --calibration "$out/calib-cuda.toml" --config "$out/seed4-1gpu.toml" --format markdown
			pbrun single-seed4-cal run --nproc-per-node 1 --backend cuda --config "$out/seed4-1gpu.toml" \
				--calibration "$out/calib-cuda.toml" --output-dir "$out/single-seed4-cal" --format markdown --per-rank
			# batch 1 and the emulated tp8pp2 against the same calibration
			pbrun single-seed4-b1-cal run --nproc-per-node 1 --backend cuda --config "$out/seed4-b1.toml" \
				--calibration "$out/calib-cuda.toml" --output-dir "$out/single-seed4-b1-cal" --format markdown
			pbrun emulate-tp8pp2-cal run --emulate-ranks 16 --backend cuda --config "$out/tp8pp2-seed4.toml" --warmup 1 --iterations 2 \
				--calibration "$out/calib-cuda.toml" --output-dir "$out/emulate-tp8pp2-cal" --format markdown
		fi
		;;
	agreement)
		write_configs
		# tp8pp2's own shapes in the op table (one rank per stage), then
		# the emulated run priced with it: the model on measured shapes
		pbrun calibrate-agree calibrate --backend cuda --quick --op-configs seed4-1gpu --op-configs "$out/tp8pp2-seed4.toml" \
			--output "$out/calib-agree.toml" --format markdown
		if [ $dry -eq 1 ] || [ -f "$out/calib-agree.toml" ]; then
			pbrun agree-tp8pp2 run --emulate-ranks 16 --backend cuda --config "$out/tp8pp2-seed4.toml" --warmup 1 --iterations 3 \
				--calibration "$out/calib-agree.toml" --output-dir "$out/agree-tp8pp2" --format markdown
		fi
		# the six tiny test configs (fp32) in one table, each beside its
		# model: single-tiny run on the GPU, the others' ranks emulated
		tiny="single-tiny tp2-tiny pp2-tiny tp2pp2-tiny layerwise16-tiny tp2-dp2-tiny" args=""
		for c in $tiny; do args="$args --op-configs $(tiny_config "$c")"; done
		# shellcheck disable=SC2086 # $args is flags and names without spaces
		pbrun calibrate-tiny calibrate --backend cuda --quick $args --output "$out/calib-tiny.toml" --format markdown
		if [ $dry -eq 1 ] || [ -f "$out/calib-tiny.toml" ]; then
			pbrun agree-single-tiny run --nproc-per-node 1 --backend cuda --config test/single-tiny --iterations 5 \
				--calibration "$out/calib-tiny.toml" --output-dir "$out/agree-single-tiny" --format markdown --per-rank
			for c in $tiny; do
				[ "$c" = single-tiny ] && continue
				pbrun "agree-$c" run --emulate-ranks "$(tiny_ranks "$c")" --backend cuda --config "$(tiny_config "$c")" --iterations 5 \
					--calibration "$out/calib-tiny.toml" --output-dir "$out/agree-$c" --format markdown
			done
		fi
		# every config's model error in one table: OUTDIR/agreement.md
		py=${PYTHON:-python3}
		if [ $dry -eq 1 ]; then
			run agreement-table-parses "$py" -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "$here/gpu_agreement_table.py"
		else
			run agreement-table sh -c "\"$py\" \"$here/gpu_agreement_table.py\" \"$out\" >\"$out/agreement.md\" && cat \"$out/agreement.md\""
		fi
		;;
	l2)
		pbrun l2-measure l2 --measure --quick --backend cuda --config tp8pp2 --config layerwise16 --format markdown
		;;
	generate)
		# each fixture in each dtype against transformers' reference.json
		# (greedy ids and the logits at every prompt position), then the
		# checkpoint's partitionings against one rank
		for f in llama-tiny gpt2-tiny; do
			[ $dry -eq 1 ] || [ -f "checkpoint/testdata/$f/reference.json" ] || {
				skip "generate-$f" "no checkpoint/testdata/$f here (make gpu-check copies it)"
				continue
			}
			for d in fp32 fp16 bf16; do
				pbrun "generate-$f-$d" generate --backend cuda --dtype "$d" --model-dir "checkpoint/testdata/$f" \
					--reference "checkpoint/testdata/$f/reference.json" --new-tokens 8
				pbrun "check-modeldir-$f-$d" run --check --backend cuda --dtype "$d" --model-dir "checkpoint/testdata/$f"
			done
			# a 64 KiB read-ahead window (several windows a rank) against the same reference
			pbrun "generate-$f-window64k" generate --backend cuda --dtype fp16 --host-window 64K \
				--model-dir "checkpoint/testdata/$f" --reference "checkpoint/testdata/$f/reference.json" --new-tokens 8
			# pre-sharded files (partbench shard) of a copy, read by every rank
			# of TP 2 in bf16 against the same reference
			[ $dry -eq 1 ] || { rm -rf "$out/sharded-$f" && cp -r "checkpoint/testdata/$f" "$out/sharded-$f"; }
			pbrun "shard-$f" shard --model-dir "$out/sharded-$f" --tp 2
			pbrun "generate-$f-sharded" generate --backend cuda --dtype bf16 --tp 2 --model-dir "$out/sharded-$f" \
				--reference "checkpoint/testdata/$f/reference.json" --new-tokens 8
		done
		;;
	resume)
		pbrun resume-cuda resume --backend cuda --layers 1,2 --spawn-server --trials 3 --warmup 1 --output-dir "$out/resume"
		;;
	serve)
		# serve --backend cuda in the background on a loopback port, every
		# remote mode against it (its results carry the GPU's SM activity).
		port=${SERVE_PORT:-50517}
		if [ $dry -eq 1 ]; then
			pbrun serve-cuda serve --backend cuda --listen "127.0.0.1:$port"
			pbrun remote-cuda remote --config test/single-tiny --server "127.0.0.1:$port" --mode all --trials 3 --warmup 1 --output-dir "$out/remote"
			continue
		fi
		"$pb" serve --backend cuda --listen "127.0.0.1:$port" >"$out/serve-cuda.log" 2>&1 &
		server=$!
		for _ in $(seq 50); do
			grep -q -i "listening\|serving" "$out/serve-cuda.log" 2>/dev/null && break
			kill -0 "$server" 2>/dev/null || break
			sleep 0.2
		done
		if kill -0 "$server" 2>/dev/null; then
			pbrun remote-cuda remote --config test/single-tiny --server "127.0.0.1:$port" --mode all --trials 3 --warmup 1 --output-dir "$out/remote"
			kill -TERM "$server" 2>/dev/null
			wait "$server" 2>/dev/null
		else
			printf 'serve-cuda\t1\t0\t0\t%s serve --backend cuda (exited at start)\n' "$pb" >>"$out/steps.tsv"
			echo "== serve-cuda: exited at start: $(tail -n 2 "$out/serve-cuda.log")" | tee -a "$out/summary.txt"
			failed=1
		fi
		;;
	serving)
		for tr in grpc tcp; do
			pbrun "serving-$tr" serving --spawn-server --transport "$tr" --backend cuda --config test/single-tiny \
				--request-rate 200 --num-prompts 200 --random-input-len 64 --random-output-len 32 \
				--max-num-seqs 16 --max-num-batched-tokens 256 --engine-context 128 --format markdown
		done
		# The same load modeled with this device's calibration (the calibrate
		# step's profile) instead of the config's hardware.
		if [ $dry -eq 1 ] || [ -f "$out/calib-cuda.toml" ]; then
			pbrun serving-grpc-cal serving --spawn-server --transport grpc --backend cuda --config test/single-tiny \
				--calibration "$out/calib-cuda.toml" \
				--request-rate 200 --num-prompts 200 --random-input-len 64 --random-output-len 32 \
				--max-num-seqs 16 --max-num-batched-tokens 256 --engine-context 128 --format markdown
		else
			skip serving-grpc-cal "no calibration (the calibrate step did not write one)"
		fi
		# Where the engine's host time per iteration goes: the same load,
		# fewer requests, under Nsight Systems where the device host has it
		# (the CUDA API summary counts and times every cuLaunchKernel of the
		# served engine, a child process nsys follows). Only the printed
		# summaries are kept: the report file is too large to bring back.
		nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | tail -n 1)
		if [ $dry -eq 0 ] && [ -n "$nsys" ]; then
			run serving-nsys "$nsys" profile --trace=cuda,osrt --stats=true --force-overwrite=true \
				--output "$out/serving-nsys" "$pb" serving --spawn-server --transport tcp --backend cuda \
				--config test/single-tiny --request-rate 200 --num-prompts 40 --random-input-len 64 \
				--random-output-len 32 --max-num-seqs 16 --max-num-batched-tokens 256 --engine-context 128
			rm -f "$out"/serving-nsys*.nsys-rep "$out"/serving-nsys*.sqlite
		else
			skip serving-nsys "no nsys on this host (PATH, /usr/local/cuda/bin, /opt/nvidia/nsight-systems), or a dry run"
		fi
		;;
	sanitize)
		if [ $dry -eq 1 ]; then
			skip sanitize "dry run"
			continue
		fi
		san=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || true)}
		for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
			[ -n "$san" ] && break
			[ -n "$d" ] && [ -x "$d/bin/compute-sanitizer" ] && san=$d/bin/compute-sanitizer
		done
		if [ -z "$san" ]; then
			skip sanitize "no compute-sanitizer on PATH, in \$CUDA_HOME/bin or /usr/local/cuda/bin (set COMPUTE_SANITIZER)"
		elif [ ! -x ./exec-cuda.test ]; then
			skip sanitize "no exec-cuda.test here (make gpu-check builds it)"
		else
			pattern=${SANITIZE_RUN:-TestRealGPUKernelsAgainstFloat64|TestRealGPURounding}
			step_limit=$((step_limit / 2))
			for tool in memcheck racecheck; do
				run "sanitize-$tool" "$san" --tool "$tool" --error-exitcode 1 --target-processes all \
					./exec-cuda.test -test.run "$pattern" -test.v -test.timeout "${step_limit}s"
			done
		fi
		;;
	host)
		if [ $dry -eq 1 ]; then
			skip host "dry run"
			continue
		fi
		if [ -x ./host/remote.test ]; then
			# Alternate the two read policies run by run, so both see the host alike.
			for i in 1 2 3 4 5; do
				run "host-remote-auto-$i" ./host/remote.test -test.run '^$' -test.bench '^BenchmarkStatefulStepProcess$' -test.benchtime 3000x
				run "host-remote-off-$i" env PARTBENCH_TCP_POLL=off ./host/remote.test -test.run '^$' -test.bench '^BenchmarkStatefulStepProcess$' -test.benchtime 3000x
			done
		else
			skip host-remote "no host/remote.test here (make gpu-check builds it)"
		fi
		if [ -x ./host/shards.test ]; then
			# The file goes beside this script (the disk the checkpoint would be
			# read from), not to /tmp, which may be memory.
			ck="$here/host-ckpt-$$"
			mkdir -p "$ck" && run host-ckpt-disk sh -c "df -hT '$ck'; cat /proc/cpuinfo | grep -c ^processor; nproc"
			run host-ckpt env PARTBENCH_SHARDS_BENCH_MB="${HOST_CKPT_MB:-1024}" PARTBENCH_SHARDS_BENCH_DIR="$ck" \
				./host/shards.test -test.run '^$' -test.bench '^BenchmarkRankLoadShardedCold$' -test.benchtime 3x
			rm -rf "$ck"
		else
			skip host-ckpt "no host/shards.test here (make gpu-check builds it)"
		fi
		;;
	*)
		skip "$s" "unknown step"
		;;
	esac
done

# report.md: versions first, then every step; steps.json the same as data.
{
	echo "# partbench gpu-check"
	echo
	if [ $dry -eq 1 ]; then
		echo "Dry run: no GPU step ran; every partbench command and config the steps use was checked against $("$pb" --version 2>/dev/null)."
	else
		echo "| what | version |"
		echo "|---|---|"
		echo "| device | $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1) |"
		echo "| driver | $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1) |"
		echo "| CUDA (driver) | $(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -1) |"
		echo "| NCCL | $(grep -h -o -E 'NCCL [0-9.]+[^ ]*' "$out/nccl-check.log" 2>/dev/null | head -1) |"
		echo "| cuBLAS, NVRTC | $(grep -h -o -E 'lib(cublas|nvrtc)[^ ]*\.so\.[0-9.]+' "$out/libraries.log" 2>/dev/null | sort -u | tr '\n' ' ') |"
		echo "| torch | $(${PYTHON:-python3} -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>/dev/null) |"
		echo "| partbench | $("$pb" --version 2>/dev/null) |"
	fi
	echo
	echo "Budget ${budget} s, spent $(($(date +%s) - started)) s."
	echo
	echo "| step | status | seconds | limit | command |"
	echo "|---|---|---|---|---|"
	tail -n +2 "$out/steps.tsv" | awk -F'\t' '{ printf "| %s | %s | %s | %s | `%s` |\n", $1, $2, $3, $4, $5 }'
	for f in "$out"/*.log; do
		[ -f "$f" ] || continue
		echo
		echo "## $(basename "$f" .log)"
		echo
		echo '```'
		tail -n 15 "$f"
		echo '```'
	done
} >"$out/report.md"
{
	printf '{"schema":"partbench.gpu-check/v1","dry_run":%s,"budget_s":%d,"spent_s":%d,"steps":[' \
		"$([ $dry -eq 1 ] && echo true || echo false)" "$budget" "$(($(date +%s) - started))"
	first=1
	while IFS=$'\t' read -r name status secs lim cmd; do
		[ $first -eq 1 ] || printf ','
		first=0
		printf '{"step":"%s","status":"%s","seconds":%s,"limit_s":%s,"command":"%s"}' \
			"$(json_escape "$name")" "$(json_escape "$status")" "${secs:-0}" "${lim:-0}" "$(json_escape "$cmd")"
	done < <(tail -n +2 "$out/steps.tsv")
	printf ']}\n'
} >"$out/steps.json"

echo "results in $out (report.md, steps.json, steps.tsv, one log per step)"
# ARCHIVE=FILE: OUTDIR also as one gzip tar, for a caller that brings back only
# a few files (a device call returns a limited number: keep OUTDIR outside what
# it returns, and FILE and report.md inside it).
if [ -n "${ARCHIVE:-}" ]; then
	if tar -czf "$ARCHIVE" -C "$(dirname "$out")" "$(basename "$out")"; then
		echo "archive: $ARCHIVE"
	else
		echo "archive: $ARCHIVE could not be written" >&2
		failed=1
	fi
fi
exit $failed
