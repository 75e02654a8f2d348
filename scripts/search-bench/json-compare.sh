#!/bin/bash
# Compares `partbench search --format json` of two partbench binaries ($1 before, $2 after), elapsed
# fields zeroed and keys sorted, with their exit status and standard error (times masked).
A=$1; B=$2; OUT=${OUT:-$(mktemp -d)}; mkdir -p $OUT; rm -f $OUT/*
cases=(
 "tp8pp2-16|--config tp8pp2"
 "tp8pp2-1024|--config tp8pp2 --nodes 128 --full 3"
 "tp8pp2-4096|--config tp8pp2 --nodes 512"
 "tp8pp2-16384|--config tp8pp2 --nodes 2048 --full 3"
 "llama2-512|--config llama2-13b-2k --topology dgx-h100x2 --nodes 64 --full 2"
 "nofit|--config tp8pp2 --nodes 128 --batch-size 100000"
)
for c in "${cases[@]}"; do
  name=${c%%|*}; args=${c#*|}
  for bin in $A $B; do
    tag=$(basename $bin)
    chrt --idle 0 nice -n 19 $bin search $args --format json > $OUT/$name.$tag.json 2> $OUT/$name.$tag.err; echo $? > $OUT/$name.$tag.rc
    python3 - $OUT/$name.$tag.json <<'PY'
import json,sys
p=sys.argv[1]
try:
    d=json.load(open(p))
except Exception as e:
    sys.exit(0)
def z(o):
    if isinstance(o,dict):
        for k in list(o):
            if k in ('elapsed_s','full_elapsed_s','candidates_per_s'): o[k]=0
            else: z(o[k])
    elif isinstance(o,list):
        for x in o: z(x)
z(d)
open(p+'.norm','w').write(json.dumps(d,sort_keys=True,indent=1))
PY
  done
  ta=$(basename $A); tb=$(basename $B)
  same=yes
  cmp -s $OUT/$name.$ta.json.norm $OUT/$name.$tb.json.norm || same=NO
  cmp -s $OUT/$name.$ta.rc $OUT/$name.$tb.rc || same=NO
  # stderr: drop timing words
  sed -E 's/[0-9.]+ ?(ms|s|µs)\b/T/g; s/[0-9,]+ candidates\/s/N candidates\/s/g' $OUT/$name.$ta.err > $OUT/e1; sed -E 's/[0-9.]+ ?(ms|s|µs)\b/T/g; s/[0-9,]+ candidates\/s/N candidates\/s/g' $OUT/$name.$tb.err > $OUT/e2
  cmp -s $OUT/e1 $OUT/e2 || same="$same (stderr differs)"
  echo "$name rc=$(cat $OUT/$name.$ta.rc)/$(cat $OUT/$name.$tb.rc) json=$(wc -c < $OUT/$name.$ta.json.norm 2>/dev/null) bytes identical=$same"
done
