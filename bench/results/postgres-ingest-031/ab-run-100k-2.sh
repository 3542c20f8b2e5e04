#!/bin/bash
for side in before after; do
  dir=/work/wt-pg; [ $side = before ] && dir=/tmp/pg-before
  out=/tmp/ab/100000-$side-2
  echo "$side 100k-2 start $(date -u +%T) $(cat /proc/loadavg)" >> /tmp/ab/log
  (cd $dir && nice -n 5 npm run bench:perf -- --store postgres --profile hash --sizes 100000 --bulk-batch 0 --out $out > $out.txt 2>&1)
  echo "$side 100k-2 end $(date -u +%T) $(cat /proc/loadavg) rc=$?" >> /tmp/ab/log
done
