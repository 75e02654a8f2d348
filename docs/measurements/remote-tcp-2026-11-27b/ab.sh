#!/bin/bash
# Alternates builds run by run, one process per run: BenchmarkStatefulStepProcess
# (remote/bench_test.go), 3000 steps per transport ($BENCHTIME steps if set).
# Usage: ab.sh ROUNDS OUTFILE PLACEMENT VARIANT...
#   PLACEMENT: unpinned | pinned (taskset -c r%2: client and both children on
#              one vCPU) | neighbour (unpinned, with ./neighbour, a CPU-bound
#              process, running beside each run; its rate is appended as nb=)
#   VARIANT:   NAME:BINARY[:ENV=VALUE] (the environment of that run)
# Each output line: ROUND NAME load=LOAD1 HH:MM:SS PLACEMENT [nb=ITERS/S] <benchmark line>
rounds=$1; out=$2; place=$3; shift 3
here=$(cd "$(dirname "$0")" && pwd)
for r in $(seq 1 $rounds); do
  for v in "$@"; do
    IFS=: read -r name bin envset <<<"$v"
    load=$(cut -d' ' -f1 /proc/loadavg)
    pre=(); [ -n "$envset" ] && pre=(env "$envset")
    [ $place = pinned ] && pre=(taskset -c $((r % 2)) "${pre[@]}")
    nbf=
    if [ $place = neighbour ]; then
      nbf=$(mktemp); /tmp/tcp10/neighbour >"$nbf" & nbpid=$!
    fi
    res=$("${pre[@]}" $bin -test.run '^$' -test.bench "${BENCH:-StatefulStepProcess}" -test.benchtime ${BENCHTIME:-3000x} 2>&1 | grep '^BenchmarkStatefulStepProcess')
    tag="$place"
    if [ -n "$nbf" ]; then
      kill $nbpid; wait $nbpid
      tag="$place nb=$(cut -d' ' -f4 "$nbf")"; rm -f "$nbf"
    fi
    echo "$res" | sed "s|^|$r $name load=$load $(date -u +%H:%M:%S) $tag |" >> $out
  done
done
