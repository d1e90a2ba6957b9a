"""The kernel's own example sched_ext scheduler, scx_simple (Linux 6.12
tools/sched_ext/scx_simple.bpf.c), written in Python on schedlab's
sched_ext core, beside EEVDF and bpfland on a sleeper (1 ms every 10 ms)
beside two hogs on one CPU: one shared DSQ in weighted-vtime order (or
FIFO, scx_simple -f), an idle CPU found at wakeup takes the task at once,
20 ms slices, no preemption. By vtime the sleeper waits for the running
hog's slice; in FIFO order for the other hog's too.

    pip install ./python
    python examples/python/scx_simple.py
"""

import argparse

import schedlab

SHARED_DSQ = 0


class Simple(schedlab.ScxPolicy):
    fifo = False

    def __init__(self, cpus, tick_ns):
        super().__init__(cpus, tick_ns)
        self.vtime_now = 0

    def init(self, scx):
        scx.create_dsq(SHARED_DSQ)

    def enable(self, scx, p):
        scx.set_dsq_vtime(p, self.vtime_now)

    def select_cpu(self, scx, p, prev_cpu, wake_flags):
        cpu, idle = scx.select_cpu_dfl(p, prev_cpu, wake_flags)
        if idle:
            scx.dsq_insert(p, schedlab.SCX_DSQ_LOCAL, schedlab.SCX_SLICE_DFL)
        return cpu

    def enqueue(self, scx, p, enq_flags):
        if self.fifo:
            scx.dsq_insert(p, SHARED_DSQ, schedlab.SCX_SLICE_DFL, enq_flags)
            return
        # A sleeper's budget is limited to one slice.
        vtime = max(scx.dsq_vtime(p), self.vtime_now - schedlab.SCX_SLICE_DFL)
        scx.dsq_insert_vtime(p, SHARED_DSQ, schedlab.SCX_SLICE_DFL, vtime, enq_flags)

    def dispatch(self, scx, cpu, prev):
        scx.dsq_move_to_local(SHARED_DSQ)

    def running(self, scx, p):
        if not self.fifo:
            self.vtime_now = max(self.vtime_now, scx.dsq_vtime(p))

    def stopping(self, scx, p, runnable):
        if not self.fifo:
            used = schedlab.SCX_SLICE_DFL - scx.slice(p)
            scx.set_dsq_vtime(p, scx.dsq_vtime(p) + used * 100 // scx.weight(p))


class SimpleFifo(Simple):
    name = "simple-fifo"
    fifo = True


SLEEPER_AND_HOGS = {
    "name": "sleeper-and-hogs",
    "duration": "4s",
    "machine": {"cpus": 1},
    "task": [
        {"name": "hog", "count": 2, "program": [{"loop": "forever", "body": [{"run": "1s"}]}]},
        {"name": "sleeper", "program": [{"loop": "forever", "body": [{"run": "1ms"}, {"sleep": "9ms"}]}]},
    ],
}


def main():
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    reports = schedlab.compare(SLEEPER_AND_HOGS, sched=["eevdf", "bpfland", Simple, SimpleFifo])
    tasks = reports.to_pandas(tasks=True)
    waits = tasks[tasks.task == "sleeper"].set_index("scheduler")["wakeup_latency_avg_ns"] / 1e3
    print("the sleeper's average wakeup latency, us:")
    print(waits.round(0).to_string())


if __name__ == "__main__":
    main()
