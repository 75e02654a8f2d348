#!/usr/bin/env bash
# spin-check.sh BIN_BEFORE BIN_AFTER OUTDIR [ROUNDS]
#
# Times the tiny configs' per-token time with two partbench binaries,
# alternately in one series (before/after order swapped every round), at
# ordinary priority: 1 rank (test/single-tiny), TP 2 over shared memory (a
# TP-2 copy of test/tp4-tiny: no 2-rank TP config is shipped), TP 4 and
# TP 2 × PP 2 over shared memory (4 ranks), ROUNDS rounds (default 7) of
# `partbench run --backend cpu --iterations 30 --format json`. Each run's
# results go to OUTDIR/runs/, the load average before it to
# OUTDIR/runs.tsv, and the summary table (median, min–max over the rounds
# of each run's TPOT p50, TPOT mean and TTFT p50; every run's TPOT p50; the
# ratio to one rank of the same binary) to standard output and
# OUTDIR/summary.md. With SPIN_CHECK_WAITLOG=1 each run also writes its
# shared-memory wait log (PARTBENCH_SHM_WAITLOG; binaries without it ignore
# it) to OUTDIR/waitlog/RUN/, summarised by scripts/spin-check/waitlog.py.
set -euo pipefail

if [ $# -lt 3 ]; then
	echo "usage: $0 BIN_BEFORE BIN_AFTER OUTDIR [ROUNDS]" >&2
	exit 2
fi
before=$(realpath "$1")
after=$(realpath "$2")
out=$3
rounds=${4:-7}
for b in "$before" "$after"; do
	if [ ! -x "$b" ]; then
		echo "$0: $b is not an executable partbench binary" >&2
		exit 2
	fi
done
case $rounds in
'' | *[!0-9]*)
	echo "$0: ROUNDS: $rounds is not a whole number (want 1 or more)" >&2
	exit 2
	;;
esac
if [ "$rounds" -lt 1 ]; then
	echo "$0: ROUNDS: $rounds (want 1 or more)" >&2
	exit 2
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/runs"
out=$(realpath "$out")
sed -e 's/^tp = 4/tp = 2/' -e 's/gpus_per_node = 4/gpus_per_node = 2/' \
	"$repo/configs/test/tp4-tiny.toml" >"$out/tp2-tiny.toml"

# case name, ranks, config
cases=(
	"1rank 1 test/single-tiny"
	"tp2-shm 2 $out/tp2-tiny.toml"
	"tp4-shm 4 test/tp4-tiny"
	"tp2pp2-shm 4 test/tp2pp2-tiny"
)

printf 'round\tcase\tbinary\tload1\tstatus\n' >"$out/runs.tsv"
for ((r = 1; r <= rounds; r++)); do
	if ((r % 2)); then order="before after"; else order="after before"; fi
	for c in "${cases[@]}"; do
		read -r name ranks config <<<"$c"
		for which in $order; do
			bin=$before
			[ "$which" = after ] && bin=$after
			run="$name-$which-$r"
			load=$(cut -d' ' -f1 /proc/loadavg)
			env=()
			if [ "${SPIN_CHECK_WAITLOG:-}" = 1 ] && [ "$ranks" -gt 1 ]; then
				mkdir -p "$out/waitlog/$run"
				env=(PARTBENCH_SHM_WAITLOG="$out/waitlog/$run")
			fi
			status=ok
			if ! env "${env[@]}" timeout 120 "$bin" run --backend cpu --nproc-per-node "$ranks" \
				--config "$config" --iterations 30 --transport shm --output-dir "" \
				--quiet --format json >"$out/runs/$run.json" 2>"$out/runs/$run.err"; then
				status=failed
				echo "$0: $run failed (see $out/runs/$run.err)" >&2
			fi
			printf '%d\t%s\t%s\t%s\t%s\n' "$r" "$name" "$which" "$load" "$status" >>"$out/runs.tsv"
		done
	done
done
python3 "$repo/scripts/spin-check/summary.py" "$out" | tee "$out/summary.md"
