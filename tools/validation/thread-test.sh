#!/bin/bash
# thread-test on the real kernel: N spinners pinned to CPU 1; this script
# and its readers stay on CPU 0 so they do not preempt the spinners.
D=${D:-5}
count() { awk '/nonvoluntary_ctxt_switches/{s+=$2} END{print s}' "$@" 2>/dev/null; }
for N in ${NS:-1 2 4 8 16 64 256 1024 4096}; do
  pids=()
  for i in $(seq $N); do taskset -c 1 ./spin & pids+=($!); done
  files=(); for p in "${pids[@]}"; do files+=(/proc/$p/status); done
  sleep 1
  s0=$(count "${files[@]}"); t0=$(date +%s.%N)
  sleep $D
  s1=$(count "${files[@]}"); t1=$(date +%s.%N)
  kill "${pids[@]}"; wait 2>/dev/null
  echo "N=$N switches/s=$(echo "($s1-$s0)/($t1-$t0)" | bc -l | cut -d. -f1)"
done
