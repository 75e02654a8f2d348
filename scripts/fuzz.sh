#!/usr/bin/env bash
# Runs every Go fuzz target in the repository for a bounded time each.
#   FUZZTIME=20s scripts/fuzz.sh          (default 20s per target)
#   FUZZTIME=5m  scripts/fuzz.sh ./exec/...  (only these packages)
# Targets are found with `go test -list '^Fuzz'`; a failing input is kept by
# Go under the package's testdata/fuzz/FuzzX/ — commit it with the fix.
# FUZZMINIMIZETIME (default 1s) bounds the minimizing of each new input: Go
# minimizes every input that adds coverage, for up to 60 s by default, and
# counts none of those runs, so a target whose inputs are kilobytes
# (FuzzHeader: 18 inputs in 20 s) spent its whole budget minimizing one.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20s}
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-1s}
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)

n=0
failed=()
for pkg in $($GO list "${pkgs[@]}"); do
	targets=$($GO test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true)
	for target in $targets; do
		n=$((n + 1))
		echo "== $pkg $target ($FUZZTIME)"
		# Go's fuzzing coordinator (before go1.27, golang/go#75804) can fail a
		# target with a bare "context deadline exceeded" as -fuzztime ends: a
		# race between the deadline and its own cancellation, with nothing
		# found and no input written. Such a run is tried again, up to twice;
		# a failure that wrote an input, or any other failure, counts at once.
		for try in 1 2 3; do
			log=$(mktemp)
			if $GO test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" "$pkg" 2>&1 | tee "$log"; then
				rm -f "$log"
				break
			fi
			if [ "$try" -lt 3 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written to' "$log"; then
				echo "== $pkg $target: the coordinator's deadline race (no input written): once more"
				rm -f "$log"
				continue
			fi
			rm -f "$log"
			failed+=("$pkg $target")
			break
		done
	done
done
echo "fuzz: $n target(s), ${#failed[@]} failed"
if [ ${#failed[@]} -gt 0 ]; then
	printf '  %s\n' "${failed[@]}"
	exit 1
fi
