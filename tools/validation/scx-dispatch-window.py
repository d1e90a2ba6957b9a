#!/usr/bin/env python3
"""Reads the trace scx-dispatch-window.c prints and says, for each tick of
a spinner's CPU, how long the CPU took from the tick to its dispatch
(balance_scx), to the put-back of the task it preempted
(put_prev_task_scx) and to that task's insert into the node DSQ
(scx_bpf_dispatch_vtime), how far apart the two CPUs' ticks came, and
which CPUs switched spinners at each pair of ticks.

    python3 tools/validation/scx-dispatch-window.py window.txt
"""
import re
import statistics
import sys

LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+):\s+(\w+):\s*(.*)$")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")


def main(path):
    events = []
    for line in open(path):
        m = LINE.match(line)
        if m:
            comm, pid, cpu, ts, ev, rest = m.groups()
            events.append((float(ts) * 1e6, int(cpu), ev, comm, rest))
    spin = "scx-dispatch-wi"
    # A tick's episode on its CPU: every event up to the next tick there.
    episodes = {0: [], 1: []}
    for e in events:
        t, cpu, ev, comm, rest = e
        if cpu not in episodes:
            continue
        if ev == "tick":
            episodes[cpu].append({"tick": t, "comm": comm, "ev": []})
        elif episodes[cpu]:
            episodes[cpu][-1]["ev"].append(e)
    def summarize(ep):
        s = {"tick": ep["tick"], "spinner": ep["comm"] == spin}
        for t, cpu, ev, comm, rest in ep["ev"]:
            if ev == "bal" and "bal" not in s:
                s["bal"] = t
            if ev == "consumed" and "consumed" not in s:
                s["consumed"] = (t, rest.endswith("ret=1"))
            if ev == "put" and "put" not in s:
                s["put"] = t
            if ev == "insert" and "insert" not in s and "put" in s:
                s["insert"] = t
            if ev == "sched_switch" and "switch" not in s:
                s["switch"] = (t, spin in rest.split("==>")[0] and spin in rest.split("==>")[1])
        return s
    eps = {c: [summarize(e) for e in episodes[c]] for c in episodes}
    for c in eps:
        sp = [e for e in eps[c] if e["spinner"]]
        to_bal = [e["bal"] - e["tick"] for e in sp if "bal" in e]
        to_put = [e["put"] - e["tick"] for e in sp if "put" in e]
        to_ins = [e["insert"] - e["tick"] for e in sp if "insert" in e]
        bal_put = [e["put"] - e["bal"] for e in sp if "put" in e and "bal" in e]
        bal_ins = [e["insert"] - e["bal"] for e in sp if "insert" in e and "bal" in e]
        print(f"cpu{c}: {len(sp)} ticks of a spinner; {len(to_bal)} reached a dispatch, {len(to_put)} a put-back")
        for name, xs in [("tick->dispatch", to_bal), ("tick->put_prev", to_put), ("tick->insert", to_ins),
                         ("dispatch->put_prev", bal_put), ("dispatch->insert", bal_ins)]:
            if xs:
                print(f"  {name:20} p10 {pct(xs,10):7.1f}  p50 {pct(xs,50):7.1f}  p90 {pct(xs,90):7.1f} us  (n={len(xs)})")
    # Pair each CPU 0 tick with the nearest CPU 1 tick within half a period.
    pairs = []
    j = 0
    t1 = eps[1]
    for a in eps[0]:
        while j + 1 < len(t1) and abs(t1[j + 1]["tick"] - a["tick"]) <= abs(t1[j]["tick"] - a["tick"]):
            j += 1
        if t1 and abs(t1[j]["tick"] - a["tick"]) < 2000:
            pairs.append((a, t1[j]))
    both_spin = [(a, b) for a, b in pairs if a["spinner"] and b["spinner"]]
    gaps = [abs(a["tick"] - b["tick"]) for a, b in both_spin]
    print(f"{len(both_spin)} tick pairs with a spinner on both CPUs; gap p10 {pct(gaps,10):.1f} p50 {pct(gaps,50):.1f} p90 {pct(gaps,90):.1f} us")
    outcome = {}
    for a, b in both_spin:
        first, second = (a, b) if a["tick"] <= b["tick"] else (b, a)
        sw = lambda e: bool(e.get("switch") and e["switch"][1] and e["switch"][0] - e["tick"] < 1500)
        key = {(True, True): "both", (True, False): "first only", (False, True): "second only", (False, False): "neither"}[(sw(first), sw(second))]
        outcome.setdefault(key, []).append((first, second))
    for k, v in sorted(outcome.items()):
        print(f"  {k:12} {len(v)}")
    # For the second CPU: did its dispatch come before the first CPU's insert?
    rows = []
    for a, b in both_spin:
        first, second = (a, b) if a["tick"] <= b["tick"] else (b, a)
        if "insert" in first and "bal" in second:
            ahead = second["bal"] - first["insert"]
            found = second.get("consumed", (0, None))[1]
            rows.append((ahead, found))
    early = [r for r in rows if r[0] < 0]
    late = [r for r in rows if r[0] >= 0]
    print(f"second CPU's dispatch before the first's insert: {len(early)} (found a task {sum(1 for r in early if r[1])}); after: {len(late)} (found {sum(1 for r in late if r[1])})")


main(sys.argv[1])
