"""What a Python policy's hook costs: a round robin in Python on
thread-test (256 spinners on one CPU, 200 s simulated), its hook calls
counted, against the same run on the built-in eevdf (the engine alone).

    pip install ./python
    python examples/python/policy_hook_cost.py
"""

import time

import schedlab

CALLS = 0


class CountedRoundRobin(schedlab.Policy):
    name = "pyrr"

    def __init__(self, cpus, tick_ns):
        super().__init__(cpus, tick_ns)
        self.queues = [[] for _ in range(cpus)]
        self.curr = [None] * cpus

    def enqueue(self, sys, cpu, task, how):
        global CALLS
        CALLS += 1
        self.queues[cpu].append(task)

    def dequeue(self, sys, cpu, task, why):
        global CALLS
        CALLS += 1
        if self.curr[cpu] == task:
            self.curr[cpu] = None
        else:
            self.queues[cpu].remove(task)

    def pick(self, sys, cpu):
        global CALLS
        CALLS += 1
        prev, self.curr[cpu] = self.curr[cpu], None
        if prev is not None and sys.state(prev) == "runnable":
            self.queues[cpu].append(prev)
        if self.queues[cpu]:
            self.curr[cpu] = self.queues[cpu].pop(0)
        return self.curr[cpu]

    def tick(self, sys, cpu, task):
        global CALLS
        CALLS += 1
        sys.resched(cpu)


def timed(sched):
    """The fastest of three runs, wall seconds, and the report."""
    global CALLS
    best = None
    for _ in range(3):
        CALLS = 0
        start = time.perf_counter()
        r = schedlab.run("thread-test", sched=sched, duration="200s", params={"threads": 256})
        wall = time.perf_counter() - start
        best = min(best or (wall, r), (wall, r), key=lambda x: x[0])
    return best


def main():
    py_wall, py = timed(CountedRoundRobin)
    calls = CALLS
    rust_wall, rust = timed("eevdf")
    print(f"python round robin: {py.totals['events']} events, {calls} hook calls, {py_wall * 1e3:.1f} ms")
    print(f"eevdf (built-in):   {rust.totals['events']} events, {rust_wall * 1e3:.1f} ms")
    print(f"per event: {py_wall / py.totals['events'] * 1e9:.0f} ns in Python against {rust_wall / rust.totals['events'] * 1e9:.0f} ns built in")
    print(f"per hook call: {(py_wall - rust_wall * py.totals['events'] / rust.totals['events']) / calls * 1e9:.0f} ns over the engine's own cost")


if __name__ == "__main__":
    main()
