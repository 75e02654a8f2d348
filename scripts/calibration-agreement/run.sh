#!/bin/bash
# The CPU calibration agreement measurement of docs/measurements/cpu-calibration.md: three
# rounds, each calibrating this machine and then running the six test configs with two partbench
# binaries, WORKDIR/before/partbench and WORKDIR/after/partbench, alternating, so both models
# meet the same runs' load; summarize.py WORKDIR tabulates them.
#
# Usage: run.sh WORKDIR [own|shared]
#   own     each binary calibrates (alternating) and prices its runs from its own profile
#   shared  after calibrates once per round and both price from that profile, so the two
#           models differ only in how they price (before must read after's profile)
# With BEFORE_FILTER set (shared mode), before prices from before-N.toml, written by the command
# $BEFORE_FILTER reading after-N.toml on stdin: the profile an older calibrate would have written
# from the same measurements (e.g. strip-nowait.py: without the no-wait entries it dropped).
# With TRACE=1 every run also writes its last iteration's measured timeline beside the model's
# (--trace) to out/VARIANT/CONFIG-ROUND.trace.json, which hops.py decomposes per hop.
# This folder's tp2-tiny.toml and pp2-tiny.toml are copied into WORKDIR.
set -u
W=${1:?usage: run.sh WORKDIR [own|shared]}
MODE=${2:-own}
case $MODE in own|shared) ;; *) echo "run.sh: mode $MODE: want own or shared" >&2; exit 2 ;; esac
for v in before after; do
  [ -x "$W/$v/partbench" ] || { echo "run.sh: $W/$v/partbench: not an executable" >&2; exit 2; }
done
cp "$(dirname "$0")"/tp2-tiny.toml "$(dirname "$0")"/pp2-tiny.toml "$W"/
cd "$W"
: > log.txt
calibrate() { # variant round
  uptime >> log.txt; date -u >> log.txt
  $W/$1/partbench calibrate --out $1-$2.toml --format markdown --op-ranks 1,2,4,16 \
     --op-configs test/single-tiny --op-configs test/tp4-tiny --op-configs test/pp4-tiny \
     --op-configs test/tp2pp2-tiny --op-configs test/tp2-dp2-tiny --op-configs test/layerwise16-tiny \
     --op-configs test/gpt2-tiny --op-configs tp2-tiny.toml --op-configs pp2-tiny.toml > calibrate-$1-$2.md 2>&1
  echo "calibrate $1 $2 rc=$?" >> log.txt
}
for r in 1 2 3; do
  if [ "$MODE" = own ]; then calibrate before $r; fi
  calibrate after $r
  if [ "$MODE" = shared ] && [ -n "${BEFORE_FILTER:-}" ]; then
    $BEFORE_FILTER < after-$r.toml > before-$r.toml || { echo "run.sh: BEFORE_FILTER failed" >&2; exit 2; }
  fi
  for c in "test/single-tiny 1 30" "tp2-tiny.toml 2 30" "pp2-tiny.toml 2 30" "test/tp2pp2-tiny 4 30" \
           "test/tp2-dp2-tiny 4 30" "test/layerwise16-tiny 16 10"; do
    set -- $c
    for v in after before; do
      profile=$v-$r.toml
      [ "$MODE" = shared ] && [ -z "${BEFORE_FILTER:-}" -o $v = after ] && profile=after-$r.toml
      uptime >> log.txt
      trace=()
      [ "${TRACE:-}" = 1 ] && mkdir -p out/$v && trace=(--trace out/$v/$(basename $1 .toml)-$r.trace.json)
      $W/$v/partbench run --nproc-per-node $2 --config $1 --backend cpu --calibration $profile \
          --iterations $3 --warmup 3 --quiet "${trace[@]}" --output-dir out/$v/$(basename $1 .toml)-$r > /dev/null 2>> err.txt
      echo "$v $1 $r rc=$?" >> log.txt
    done
  done
done
uptime >> log.txt
date -u >> log.txt
