"""A scheduler of one's own in 40 lines, beside eevdf and bmq: a policy
that runs the task with the least CPU time so far (a "fair" policy with
no weights, no slices but the tick), on a sleeper beside hogs.

    pip install ./python matplotlib
    python examples/python/own_policy.py [-o own-policy.png]
"""

import argparse

import schedlab


class LeastRuntime(schedlab.Policy):
    """Per-CPU queues; at every tick and wakeup the task that has had the
    least CPU runs; an idle CPU takes a waiting task from the longest queue."""

    name = "least"

    def __init__(self, cpus, tick_ns):
        super().__init__(cpus, tick_ns)
        self.queues = [set() for _ in range(cpus)]

    def enqueue(self, sys, cpu, task, how):
        self.queues[cpu].add(task)

    def dequeue(self, sys, cpu, task, why):
        self.queues[cpu].discard(task)

    def pick(self, sys, cpu):
        # The running task stays in its queue, so it competes too.
        return min(self.queues[cpu], key=lambda t: (sys.runtime(t), t), default=None)

    def tick(self, sys, cpu, task):
        if len(self.queues[cpu]) > 1:
            sys.resched(cpu)

    def wakeup_preempt(self, sys, cpu, curr, woken):
        return sys.runtime(woken) < sys.runtime(curr)

    def newidle_balance(self, sys, cpu):
        busiest = max(range(self.cpus), key=lambda c: len(self.queues[c]))
        waiting = [t for t in self.queues[busiest] if sys.state(t) == "runnable" and sys.allowed(t, cpu)]
        if busiest != cpu and waiting:
            sys.migrate(waiting[0], cpu)
            self.queues[busiest].discard(waiting[0])
            self.queues[cpu].add(waiting[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default="own-policy.png")
    args = ap.parse_args()
    reports = schedlab.compare("sleeper-hog", sched=["eevdf", "bmq", LeastRuntime], duration="2s")
    tasks = reports.to_pandas(tasks=True)
    print(tasks.pivot(index="task", columns="scheduler", values="cpu_share_pct").round(1).to_string())
    print(reports.to_pandas()[["scheduler", "context_switches_per_sec", "runtime_per_switch_p50_ns"]].to_string())

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = reports.to_pandas()
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    a.bar(summary["scheduler"], summary["context_switches_per_sec"])
    a.set_title("context switches/s")
    sleeper = tasks[tasks["task"] == "sleeper"]
    b.bar(sleeper["scheduler"], sleeper["cpu_share_pct"])
    b.axhline(25, color="grey", linestyle="--", label="what it asks for")
    b.set_title("the sleeper's CPU share, %")
    b.legend()
    fig.tight_layout()
    fig.savefig(args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
