#!/bin/bash
# A/B alternating: after (this branch), before (main), at the size given.
size=$1; shift
for pass in "$@"; do
  for side in after before; do
    dir=/work/wt-pg; [ $side = before ] && dir=/tmp/pg-before
    out=/tmp/ab/$size-$side-$pass
    echo "$side $pass start $(date -u +%T) $(cat /proc/loadavg)" >> /tmp/ab/log
    (cd $dir && nice -n 5 npm run bench:perf -- --store postgres --profile hash --sizes $size --bulk-batch 0 --out $out > $out.txt 2>&1)
    echo "$side $pass end $(date -u +%T) $(cat /proc/loadavg) rc=$?" >> /tmp/ab/log
  done
done
