#!/bin/bash
# probe.sh beside 4 busy loops at idle priority (the other engineers' builds under chrt --idle, emulated)
pids=()
for i in 1 2 3 4; do chrt --idle 0 bash -c 'while :; do :; done' & pids+=($!); done
/tmp/cpuwait-probe/probe.sh "$@"
for p in "${pids[@]}"; do kill $p; done
