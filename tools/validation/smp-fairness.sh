#!/bin/bash
# smp-fairness on the real kernel: H hogs on all CPUs for D seconds; per-hog
# CPU share, and total switches and migrations per second, from
# /proc/PID/sched read once at the start and once at the end.
H=${H:-3}; D=${D:-10}
field() { awk -v f="$1" '$1==f{print $3}' "$2"; }
pids=(); for i in $(seq $H); do ./spin & pids+=($!); done
sleep 0.5
declare -A e0 s0 m0
for p in "${pids[@]}"; do e0[$p]=$(field se.sum_exec_runtime /proc/$p/sched); s0[$p]=$(field nr_switches /proc/$p/sched); m0[$p]=$(field se.nr_migrations /proc/$p/sched); done
t0=$(date +%s.%N); sleep $D; t1=$(date +%s.%N)
sw=0; mg=0
for p in "${pids[@]}"; do
  e=$(field se.sum_exec_runtime /proc/$p/sched); s=$(field nr_switches /proc/$p/sched); m=$(field se.nr_migrations /proc/$p/sched)
  echo "hog $p share=$(echo "($e-${e0[$p]})/(($t1-$t0)*10)" | bc -l | cut -c1-5)%"
  sw=$((sw + s - ${s0[$p]})); mg=$((mg + m - ${m0[$p]}))
done
kill "${pids[@]}"; wait 2>/dev/null
echo "switches/s=$(echo "$sw/($t1-$t0)" | bc -l | cut -c1-6) migrations/s=$(echo "$mg/($t1-$t0)" | bc -l | cut -c1-5)"
