#!/usr/bin/env python3
"""Runs each built-in scenario that fits this machine on the simulated EEVDF
and on the real kernel (`schedlab compare --host`), and prints a markdown
table of each metric with its error. Usage:

    cargo build --release
    python3 tools/validation/host-vs-sim.py > /tmp/tables.md
"""
import json
import subprocess
import sys

SCHEDLAB = "target/release/schedlab"

# (scenario, extra arguments sizing it to a 2-CPU machine)
CASES = [
    ("thread-test", ["--param", "threads=16", "--duration", "5s"]),
    ("thread-test", ["--param", "threads=1024", "--duration", "5s"]),
    ("smp-fairness", ["--cpus", "2", "--param", "hogs=3", "--duration", "10s"]),
    ("jitter-under-load", ["--cpus", "2", "--param", "workers=6", "--duration", "5s"]),
    ("lat-ctx", ["--duration", "2s"]),
    ("group-isolation", ["--cpus", "2", "--duration", "5s"]),
    ("group-isolation-flat", ["--cpus", "2", "--duration", "5s"]),
]


def run(scenario, extra):
    out = subprocess.run(
        [SCHEDLAB, "compare", scenario, "--sched", "eevdf", "--host", "--json", *extra],
        check=True, capture_output=True, text=True,
    )
    sim, host = json.loads(out.stdout)
    return sim, host


def per_sec(r, field):
    return r["totals"][field] / (r["duration_ns"] / 1e9)


def rel(sim, real):
    if real == 0:
        return "-" if sim == 0 else "n/a"
    return f"{(sim - real) / real * 100:+.0f}%"


def main():
    print("| scenario | metric | real kernel | simulated eevdf | error |")
    print("|---|---|---:|---:|---:|")
    for scenario, extra in CASES:
        sim, host = run(scenario, extra)
        label = f"`{scenario} {' '.join(a for a in extra if not a.startswith('--duration'))}`".replace("  ", " ")
        rows = []
        for name, field in [("switches/s", "context_switches"), ("involuntary/s", "involuntary_switches"),
                            ("migrations/s", "migrations")]:
            a, b = per_sec(host, field), per_sec(sim, field)
            rows.append((name, f"{a:.0f}" if a >= 10 else f"{a:.1f}", f"{b:.0f}" if b >= 10 else f"{b:.1f}", rel(b, a)))
        for spec_h in host["specs"]:
            spec_s = next(s for s in sim["specs"] if s["name"] == spec_h["name"])
            a, b = spec_h["cpu_share_avg_pct"], spec_s["cpu_share_avg_pct"]
            rows.append((f"{spec_h['name']} %CPU avg (min-max)",
                         f"{a:.1f} ({spec_h['cpu_share_min_pct']:.1f}-{spec_h['cpu_share_max_pct']:.1f})",
                         f"{b:.1f} ({spec_s['cpu_share_min_pct']:.1f}-{spec_s['cpu_share_max_pct']:.1f})",
                         f"{b - a:+.1f} pp"))
            lh, ls = spec_h["wakeup_latency"], spec_s["wakeup_latency"]
            if lh["count"] > 0:
                rows.append((f"{spec_h['name']} wakeup avg / p99 us",
                             f"{lh['mean'] / 1e3:.1f} / {lh['p99'] / 1e3:.1f}",
                             f"{ls['mean'] / 1e3:.1f} / {ls['p99'] / 1e3:.1f}", rel(ls["mean"], lh["mean"])))
        rh, rs = host["runtime_per_switch"], sim["runtime_per_switch"]
        if rh["count"] > 0:
            rows.append(("run time per switch p50 us", f"{rh['p50'] / 1e3:.0f}", f"{rs['p50'] / 1e3:.0f}",
                         rel(rs["p50"], rh["p50"])))
        for i, (name, a, b, err) in enumerate(rows):
            print(f"| {label if i == 0 else ''} | {name} | {a} | {b} | {err} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
