#!/bin/bash
# Counts the instructions of one BenchmarkSearchScale search under valgrind's cachegrind, which
# the load of a shared machine does not move: a `go test -c ./sim` binary ($1) at $2 GPUs, run
# with -test.benchtime N1x and N2x ($3, $4), the difference of the two runs over N2 − N1
# searches (set-up and the benchmark's warm-up run cancel). With GOGC=off in the environment
# the count is the search's own code alone, within 0.2 % from run to run; with the collector on it
# also holds the collector's work, which under valgrind follows its timers and varies from run
# to run. Prints: binary, GPUs, instructions, data references, D1 misses and LL misses per search.
bin=${1:?test binary}; g=${2:?GPUs}; n1=${3:-10}; n2=${4:-30}
cd "$(dirname "$0")/../../sim"
for n in $n1 $n2; do
  chrt --idle 0 nice -n 19 valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null $bin -test.run '^$' -test.bench "SearchScale/gpus=$g\$" -test.benchtime ${n}x -test.cpu 1 2>&1 |
    awk -v n=$n '/I   refs/{gsub(",","",$4); i=$4} /D   refs/{gsub(",","",$4); d=$4} /D1  misses/{gsub(",","",$4); d1=$4} /LL misses/{gsub(",","",$4); ll=$4} END{print n, i, d, d1, ll}'
done | awk -v g=$g -v b=$(basename $bin) 'NR==1{n1=$1;i1=$2;d1=$3;m1=$4;l1=$5} NR==2{n=$1-n1; printf "%s gpus=%s per search: Ir %.0f Drefs %.0f D1miss %.0f LLmiss %.0f\n", b, g, ($2-i1)/n, ($3-d1)/n, ($4-m1)/n, ($5-l1)/n}'
