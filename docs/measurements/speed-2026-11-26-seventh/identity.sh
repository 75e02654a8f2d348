#!/bin/bash
# Every model --dry-run output of two partbench binaries, alternated per output,
# compared byte for byte (stdout, stderr, exit status, trace files).
# Usage: identity.sh BASE NEW OUTDIR, from the repository root; the extra
# configs (the 100,000-GPU one and the deep pipelines) are beside this script.
A=$1; B=$2; OUT=$3
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p $OUT/a $OUT/b
n=0; bad=0
run() { # name, args...
  local name=$1; shift
  for side in a b; do
    bin=$A; [ $side = b ] && bin=$B
    tr=""
    chrt --idle 0 nice -n 19 $bin model --dry-run "$@" > $OUT/$side/$name.out 2> $OUT/$side/$name.err; echo $? > $OUT/$side/$name.rc
  done
  n=$((n+1))
  for x in out err rc; do cmp -s $OUT/a/$name.$x $OUT/b/$name.$x || { echo "DIFFER $name.$x"; bad=$((bad+1)); }; done
}
runtrace() { # name, config
  local name=$1; shift
  for side in a b; do
    bin=$A; [ $side = b ] && bin=$B
    chrt --idle 0 nice -n 19 $bin model --dry-run "$@" --trace $OUT/$side/$name.trace.json > $OUT/$side/$name.out 2> $OUT/$side/$name.err; echo $? > $OUT/$side/$name.rc
    sed -i "s#$OUT/$side/##g" $OUT/$side/$name.out $OUT/$side/$name.err
  done
  n=$((n+1))
  for x in out err rc trace.json; do
    if [ -e $OUT/a/$name.$x ] || [ -e $OUT/b/$name.$x ]; then cmp -s $OUT/a/$name.$x $OUT/b/$name.$x || { echo "DIFFER $name.$x"; bad=$((bad+1)); }; fi
  done
}
run default-table
run default-json --format json
run default-table-perrank --per-rank
run default-json-perrank --format json --per-rank
runtrace default-trace
runtrace default-trace-full --trace-full
for f in configs/*.toml configs/test/*.toml $HERE/configs/*.toml; do
  b=$(basename $f .toml); d=$(basename $(dirname $f)); [ "$(dirname $f)" = "$HERE/configs" ] && d=cfg
  k=$d-$b
  run $k-table --config $f
  run $k-json --config $f --format json
  run $k-table-perrank --config $f --per-rank
  run $k-json-perrank --config $f --format json --per-rank
  runtrace $k-trace --config $f
  runtrace $k-tracefull --config $f --trace-full
done
echo "outputs compared: $n commands, differing files: $bad"
