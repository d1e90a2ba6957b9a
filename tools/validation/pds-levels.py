#!/usr/bin/env python3
"""Where a pds-6.12 guest placed its wakeups, against the tasks' PDS levels.

A guest's trace does not print a task's PDS level (sched_switch shows the
static prio), but it shows the hrtick armed at each switch: the
hrtimer_start of function HRTICK just before a sched_switch expires when the
next task's slice runs out, so it gives that task's slice left. From it and
the switches this rebuilds every task's slice as Project C v6.12-r1 keeps it
(4 << 20 ns, used up below RESCHED_NS = 100 << 10 ns, renewed at the hrtick
or at a switch away with it used up), and its deadline, renewed with the
slice to time_edge + SCHED_EDGE_DELTA + (nice + 20) / 2 = edge + 22 for nice
0, time_edge being the clock >> 23. A task's level is max(deadline, edge).

Each wakeup of a task named PREFIX while both CPUs run something is then
classed by the wakee's level against the task running on its target CPU and
on the other CPU ('<' the wakee's is better, '=' the same, '>' worse), and
by what ran next on the target: the wakee at once, preempting ('preempt'),
the wakee after the running task slept, or another task. A strict
comparison of levels (the model before 00cf1da) never puts a wakee on a CPU
at its level while the other CPU's task is worse ('=', '<'); v6.12-r1's
cached preemption mask does, for a CPU that rose to the recorded level.

    python3 tools/validation/pds-levels.py \\
        crates/schedlab-policies/tests/fixtures/guest-pds-6.12-hackbench-pipe.trace.gz hackbench

On that recording (2026-12-07): the armed slice is the rebuilt one -20 to
+24 us from p10 to p90 over 663 switches; 58 wakeups went to a CPU at
the wakee's level while the other's task was worse; a wakee better than its
target's task preempted 211 times of 233. Two CPUs only.
"""
import gzip
import re
import sys
from collections import Counter

HRTICK = "0xffffffff8106a302"  # hrtick's address in the pds-6.12 guest kernel
RESCHED_NS = 100 << 10
SLICE_NS = 4 << 20
DEADLINE_OFFSET = 22  # SCHED_EDGE_DELTA (12) + (nice 0 + 20) / 2
LINE = re.compile(r"^\s*(\S.*?)-(\d+)\s+(?:\(\s*[\d-]+\)\s+)?\[(\d+)\](.{7})?\s+([\d.]+): (\w+): (.*)$")


def events(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        for line in f:
            m = LINE.match(line)
            if m:
                _, _, cpu, _, ts, ev, rest = m.groups()
                yield int(cpu), int(round(float(ts) * 1e9)), ev, dict(re.findall(r"(\w+)=(\S+)", rest))


def edge(t):
    return t >> 23


def main(path, prefix):
    running, since, armed = {}, {}, {}
    left, deadline = {}, {}
    waiting = {}  # target CPU -> (wakee, its level against target's, against the other's)
    outcome = Counter()
    armed_minus_rebuilt = []

    def ran(p, cpu, t):
        left[p] = left.get(p, SLICE_NS) - (t - since[cpu])
        since[cpu] = t
        if left[p] < RESCHED_NS:
            left[p], deadline[p] = SLICE_NS, edge(t) + DEADLINE_OFFSET

    def level(p, t):
        return max(deadline.get(p, edge(t)), edge(t))

    for cpu, t, ev, f in events(path):
        if ev == "hrtimer_start" and f.get("function") == HRTICK:
            armed[cpu] = int(f["expires"]) - t
        elif ev == "hrtimer_expire_entry" and f.get("function") == HRTICK and running.get(cpu):
            ran(running[cpu], cpu, t)
        elif ev == "sched_switch":
            prev, nxt = int(f["prev_pid"]), int(f["next_pid"])
            if prev and cpu in since:
                ran(prev, cpu, t)
            if cpu in waiting:
                wakee, vs_target, vs_other = waiting.pop(cpu)
                if nxt == wakee:
                    next_ran = "preempt" if f["prev_state"].startswith("R") else "wakee after a sleep"
                else:
                    next_ran = "another task"
                outcome[(vs_target, vs_other, f"CPU {cpu}", next_ran)] += 1
            running[cpu], since[cpu] = nxt or None, t
            if nxt and cpu in armed:
                slice_armed = armed.pop(cpu)
                if nxt in left and f["next_comm"].startswith(prefix):
                    armed_minus_rebuilt.append(slice_armed - left[nxt])
                left[nxt] = slice_armed
        elif ev == "sched_wakeup" and f["comm"].startswith(prefix) and running.get(0) and running.get(1):
            wakee, target = int(f["pid"]), int(f["target_cpu"])
            mine = level(wakee, t)

            def against(c):
                theirs = level(running[c], t)
                return "<" if mine < theirs else "=" if mine == theirs else ">"

            waiting[target] = (wakee, against(target), against(1 - target))

    d = sorted(armed_minus_rebuilt)
    if d:
        at = [d[int(len(d) * q)] // 1000 for q in (0.1, 0.5, 0.9)]
        print(f"armed slice - rebuilt slice, us, p10/p50/p90 over {len(d)} switches: {at}")
    print("wakee's level vs target's task, vs the other CPU's task, target, what ran next: count")
    for key, n in sorted(outcome.items()):
        print(" ", *key, n)
    strict_never = sum(n for k, n in outcome.items() if k[0] == "=" and k[1] == "<")
    print(f"placed at its level while the other CPU's task was worse (a strict comparison never): {strict_never}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
