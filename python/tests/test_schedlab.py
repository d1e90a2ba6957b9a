"""schedlab from Python: the same reports as the CLI, errors as ValueError,
the GIL released while simulating, and sweeps that give the same rows on
every backend (Ray's included, on a local cluster)."""

import json
import os
import shutil
import subprocess
import threading

import pytest

import schedlab


def test_run_gives_the_report_the_cli_prints():
    r = schedlab.run("thread-test", sched="eevdf", duration="1s", params={"threads": 16})
    assert r.scheduler == "eevdf" and len(r.tasks) == 16
    # EEVDF on one CPU at HZ=250 switches at every tick.
    assert 240 <= r.totals["context_switches_per_sec"] <= 260
    cli = os.environ.get("SCHEDLAB_BIN") or shutil.which("schedlab")
    assert cli or not os.environ.get("CI"), "CI must compare with the CLI: set SCHEDLAB_BIN"
    if cli:
        out = subprocess.run(
            [cli, "run", "thread-test", "--sched", "eevdf", "--duration", "1s", "--param", "threads=16", "--json"],
            capture_output=True, text=True, check=True,
        )
        assert json.loads(out.stdout) == r.data, "the CLI and Python runs differ"


def test_compare_frames_have_the_csv_columns_and_conserve_cpu_time():
    reports = schedlab.compare("smp-fairness", sched=["cfs", "eevdf", "bmq"], cpus=2, params={"hogs": 3}, duration="2s")
    df = reports.to_pandas()
    assert list(df.columns) == schedlab.SUMMARY_COLUMNS
    assert list(df["scheduler"]) == ["cfs", "eevdf", "bmq"]
    assert ((df["busy_ns"] + df["idle_ns"]) == df["cpus"] * df["duration_ns"]).all()
    tasks = reports.to_pandas(tasks=True)
    assert len(tasks) == 9 and list(tasks.columns) == schedlab.TASK_COLUMNS
    # BMQ leaves one hog a CPU of its own: the characteristic split.
    bmq = tasks[tasks["scheduler"] == "bmq"]["cpu_share_pct"].sort_values().tolist()
    assert bmq[-1] > 95 and bmq[0] < 55


def test_a_dict_is_a_workload_and_bad_input_raises_value_error():
    w = {
        "duration": "500ms",
        "machine": {"cpus": 1},
        "task": [{"name": "spin", "count": 2, "program": [{"loop": "forever", "body": [{"run": "1s"}]}]}],
    }
    r = schedlab.run(w, sched="cfs")
    assert [round(t["cpu_share_pct"]) for t in r.tasks] == [50, 50]
    for call, message in [
        (lambda: schedlab.run("thread-test", sched="nope"), "unknown scheduler 'nope'"),
        (lambda: schedlab.run("thread-test", duration="5"), "has no unit"),
        (lambda: schedlab.run("no-such-scenario"), "no file, built-in scenario or tool command"),
        (lambda: schedlab.run("thread-test", params={"thraeds": 4}), "no parameter named 'thraeds'"),
        (lambda: schedlab.run({"task": [{"name": "x"}]}), "dict"),
        (lambda: schedlab.sweep("thread-test", {"threads": "1,x"}), "'x' is not an integer"),
        # A bare number would be nanoseconds: 5 ran 5 ns and reported zeros.
        (lambda: schedlab.run("thread-test", duration=5), "has no unit"),
        # A duration or a flag is not a CPU count (3us ran 3,000 CPUs).
        (lambda: schedlab.run("thread-test", cpus="3us"), "is not a whole number"),
        (lambda: schedlab.run("thread-test", cpus=True), "is not a whole number"),
    ]:
        with pytest.raises(ValueError, match=message):
            call()
    with pytest.raises(TypeError):
        schedlab.run(42)
    with pytest.raises(TypeError, match="the options are cpus, duration, seed, params, set, cost"):
        schedlab.run("thread-test", durations="1s")
    with pytest.raises(TypeError, match="sched is a name"):
        schedlab.compare("thread-test", sched=True)
    with pytest.raises(TypeError, match="grid maps names to values"):
        schedlab.sweep("thread-test", None)
    with pytest.raises(ValueError, match="is not a whole number"):
        schedlab.run("thread-test", cpus=float("inf"))


def test_simulations_release_the_gil():
    # While two threads simulate, a third keeps counting: it could not if
    # the simulations held the GIL.
    ticks, done = [0], threading.Event()

    def count():
        while not done.is_set():
            ticks[0] += 1

    counter = threading.Thread(target=count)
    counter.start()
    before = ticks[0]
    sims = [threading.Thread(target=schedlab.run, args=("mixed-64",), kwargs={"duration": "300ms"}) for _ in range(2)]
    for s in sims:
        s.start()
    during = []
    while any(s.is_alive() for s in sims):
        during.append(ticks[0])
        sims[0].join(0.05)
    done.set()
    counter.join()
    assert len(during) >= 2 and during[-1] > during[0] > before - 1, "the counter stalled while simulating"


def test_sweep_rows_follow_the_grid_order():
    df = schedlab.sweep("thread-test", {"threads": "1,2,4", "cpus": [1, 2]}, sched="cfs,eevdf", duration="500ms")
    assert df.columns[0] == "threads" and list(df.columns).count("cpus") == 1
    assert list(zip(df["threads"], df["cpus"], df["scheduler"]))[:4] == [
        (1, 1, "cfs"), (1, 1, "eevdf"), (1, 2, "cfs"), (1, 2, "eevdf")
    ]
    assert len(df) == 3 * 2 * 2


def test_sweep_on_ray_equals_the_local_one_row_for_row():
    if os.environ.get("CI"):
        import ray  # .ci/run installs Ray: under CI a skip would hide that it could not
    else:
        ray = pytest.importorskip("ray", reason="Ray is not installed (pip install ray)")
    grid = {"threads": "1,2,4,...,64", "seed": [1, 2]}
    local = schedlab.sweep("thread-test", grid, sched=["cfs", "eevdf", "bmq"], duration="500ms")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = schedlab.sweep("thread-test", grid, sched=["cfs", "eevdf", "bmq"], duration="500ms", backend="ray")
    finally:
        ray.shutdown()
    assert len(local) == 7 * 2 * 3
    assert local.equals(remote), "Ray's rows differ from the local ones"


def _kernel(name):
    """A shared guest kernel and QEMU, or a skip (a failure under CI)."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "kernels", f"{name}.bzImage")
    missing = None
    if not shutil.which("qemu-system-x86_64"):
        missing = "qemu-system-x86_64 is not installed"
    elif not os.path.isfile(path):
        missing = f"{path} is not there"
    elif not (os.environ.get("SCHEDLAB_BIN") or shutil.which("schedlab")):
        missing = "no schedlab binary (SCHEDLAB_BIN)"
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the real-kernel test, but {missing}")
        pytest.skip(missing)
    return os.path.abspath(path)


def test_real_kernel_rows_join_a_sweep_on_ray():
    kernel = _kernel("eevdf-6.12")
    ray = pytest.importorskip("ray")
    r = schedlab.vm({"duration": "500ms", "machine": {"cpus": 1},
                     "task": [{"name": "spin", "count": 2, "program": [{"loop": "forever", "body": [{"run": "1s"}]}]}]},
                    kernel=kernel, accel="tcg", label="eevdf")
    assert r.source == "vm" and r.scheduler == "eevdf (vm)" and r.host["kernel_release"].startswith("6.12")
    assert r.summary["source"] == "vm" and len(r.task_rows) == 2
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        df = schedlab.sweep("thread-test", {"threads": [2, 4]}, sched="eevdf", kernels={"eevdf": kernel},
                            accel="tcg", backend="ray", duration="500ms")
    finally:
        ray.shutdown()
    assert list(df["scheduler"]) == ["eevdf", "eevdf (vm)", "eevdf", "eevdf (vm)"]
    assert list(df["source"]) == ["simulated", "vm"] * 2
    assert list(df["threads"]) == [2, 2, 4, 4]


class RoundRobin(schedlab.Policy):
    """Per-CPU FIFO queues and a slice of `slice_ticks` ticks."""

    name = "pyrr"
    slice_ticks = 1

    def __init__(self, cpus, tick_ns):
        super().__init__(cpus, tick_ns)
        self.queues = [[] for _ in range(cpus)]
        self.curr = [None] * cpus
        self.ticks = [0] * cpus

    def enqueue(self, sys, cpu, task, how):
        self.queues[cpu].append(task)

    def dequeue(self, sys, cpu, task, why):
        if self.curr[cpu] == task:
            self.curr[cpu] = None
        else:
            self.queues[cpu].remove(task)

    def pick(self, sys, cpu):
        prev, self.curr[cpu] = self.curr[cpu], None
        if prev is not None and sys.state(prev) == "runnable":
            self.queues[cpu].append(prev)
        if not self.queues[cpu]:
            return None
        self.curr[cpu], self.ticks[cpu] = self.queues[cpu].pop(0), 0
        return self.curr[cpu]

    def tick(self, sys, cpu, task):
        self.ticks[cpu] += 1
        if self.ticks[cpu] >= self.slice_ticks:
            sys.resched(cpu)


class ThreeTickRoundRobin(RoundRobin):
    name = "pyrr3"
    slice_ticks = 3


def test_a_python_policy_runs_beside_the_built_in_ones():
    reports = schedlab.compare("thread-test", sched=["eevdf", RoundRobin, "bmq"], duration="2s")
    assert [r.scheduler for r in reports] == ["eevdf", "pyrr", "bmq"]
    rr = reports[1]
    # Its characteristic decision: 8 spinners on CPU 0 each run one 4 ms
    # tick per switch (less the 2 us switch) and share the CPU equally.
    assert abs(rr.runtime_per_switch["p50"] - 4e6) < 0.01 * 4e6, rr.runtime_per_switch
    shares = [t["cpu_share_pct"] for t in rr.tasks]
    assert all(abs(s - 12.5) < 0.5 for s in shares), shares
    assert abs(schedlab.run("thread-test", sched=ThreeTickRoundRobin, duration="2s").runtime_per_switch["p50"] - 12e6) < 0.12e6
    # Same seed, same report.
    assert schedlab.run("thread-test", sched=RoundRobin, duration="1s").data == schedlab.run(
        "thread-test", sched=RoundRobin, duration="1s"
    ).data
    # The same frames as the built-in ones.
    assert list(reports.to_pandas()["scheduler"])[1] == "pyrr"


def test_a_python_policy_that_breaks_a_rule_gets_the_rule():
    class Forgetful(RoundRobin):
        """Never takes a sleeping task out of its queue."""

        def dequeue(self, sys, cpu, task, why):
            if self.curr[cpu] == task:
                self.curr[cpu] = None

        def pick(self, sys, cpu):
            self.curr[cpu] = None
            return self.queues[cpu][0] if self.queues[cpu] else None

    class Raises(RoundRobin):
        def tick(self, sys, cpu, task):
            raise KeyError("no such queue")

    class Wrong(RoundRobin):
        def select_cpu(self, sys, task, prev, new):
            return "cpu0"

    sleeper = "sleeper-hog"
    with pytest.raises(ValueError, match=r"forgetful: policy 'forgetful' at .*: CPU 0 picked task \d \(\w+\), which is Sleeping, not runnable"):
        schedlab.run(sleeper, sched=Forgetful)
    with pytest.raises(ValueError, match=r"the Python hook tick raised KeyError\('no such queue'\)"):
        schedlab.run(sleeper, sched=Raises)
    with pytest.raises(ValueError, match=r"the Python hook select_cpu returned 'cpu0': return an int"):
        schedlab.run(sleeper, sched=Wrong)
    with pytest.raises(TypeError, match="does not define pick"):
        schedlab.run(sleeper, sched=type("NoPick", (schedlab.Policy,), {"enqueue": None, "dequeue": None}))
    with pytest.raises(TypeError, match="pass the class RoundRobin, not an instance"):
        schedlab.compare(sleeper, sched=RoundRobin(2, 4_000_000))
    with pytest.raises(ValueError, match="set= names tunables of the built-in policies"):
        schedlab.run(sleeper, sched=RoundRobin, set={"base_slice_ns": 3_000_000})


def test_ctrl_c_in_a_hook_is_a_keyboard_interrupt_and_no_hook_runs_after_it():
    calls = []

    class Interrupted(RoundRobin):
        def tick(self, sys, cpu, task):
            calls.append("tick")
            raise KeyboardInterrupt

        def account(self, sys, cpu, task, delta):
            calls.append("account")

    with pytest.raises(KeyboardInterrupt):
        schedlab.run("sleeper-hog", sched=Interrupted)
    # Not a ValueError that `except ValueError` would swallow, and nothing
    # was called after the interrupted hook.
    assert calls.count("tick") == 1
    assert calls[-1] == "tick", calls[-3:]


def test_a_sweep_keeps_one_summary_row_per_run_not_every_report():
    # 1,300 runs of thread-test with 256 threads held 798 MB as full
    # reports and 79 MB as summary rows (ru_maxrss).
    job = ("thread-test", False, "eevdf", '{"duration": 100000000}')
    ((report, summary, tasks),) = schedlab._native.run_batch([job], 1, True)
    assert report == "" and tasks == [] and summary[schedlab.SUMMARY_COLUMNS.index("scheduler")] == "eevdf"
    ((report, _, tasks),) = schedlab._native.run_batch([job], 1)
    assert report and len(tasks) == 8

    # A Python policy's runs too: 0.67 MB a run was kept as its report.
    class Fifo(schedlab.Policy):
        def __init__(self, cpus, tick_ns):
            super().__init__(cpus, tick_ns)
            self.queues = {}

        def enqueue(self, sys, cpu, task, how):
            self.queues.setdefault(cpu, []).append(task)

        def dequeue(self, sys, cpu, task, why):
            self.queues[cpu].remove(task)

        def pick(self, sys, cpu):
            return (self.queues.get(cpu) or [None])[0]

    ((report, summary, tasks),) = schedlab._run_jobs([job[:2] + (Fifo,) + job[3:]], 1, summary_only=True)
    assert report == "" and tasks == [] and summary[schedlab.SUMMARY_COLUMNS.index("scheduler")] == "fifo"


def _scx_simple_example():
    """examples/python/scx_simple.py as a module: its scheduler and workload."""
    import importlib.util

    path = os.path.join(os.path.dirname(__file__), "../../examples/python/scx_simple.py")
    spec = importlib.util.spec_from_file_location("scx_simple", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


SCX_SIMPLE = _scx_simple_example()
# A sleeper (1 ms every 10 ms) beside two hogs on one CPU.
SLEEPER_AND_HOGS = SCX_SIMPLE.SLEEPER_AND_HOGS


def _sleeper_wait_us(report):
    return next(t for t in report.tasks if t["name"] == "sleeper")["wakeup_latency_avg_ns"] / 1e3


def test_a_sched_ext_scheduler_without_callbacks_runs_the_kernels_defaults():
    class Nothing(schedlab.ScxPolicy):
        pass

    r = schedlab.run("smp-fairness", sched=Nothing, cpus=2, params={"hogs": 3}, duration="2s")
    # The global DSQ in 20 ms slices, ended at the sixth tick after a run
    # began just past one: 24 ms runs.
    assert schedlab.SCX_SLICE_DFL == 20_000_000
    assert abs(r.data["runtime_per_switch"]["p50"] - 24e6) < 0.01 * 24e6
    # Both CPUs' slices end at one tick, and the hog a CPU switches away
    # from reaches the DSQ a switch after its dispatch: the other CPU,
    # ticking within that, mostly keeps its own hog, and the shares spread.
    shares = [t["cpu_share_pct"] for t in r.tasks]
    assert max(shares) - min(shares) > 4.0, shares
    # Put back at once, the FIFO rotation gives each hog two thirds.
    at_once = schedlab.run("smp-fairness", sched=Nothing, cpus=2, params={"hogs": 3}, duration="2s",
                           cost={"context_switch": "0ns"})
    assert all(abs(t["cpu_share_pct"] - 66.7) < 2.0 for t in at_once.tasks)


def test_scx_simple_in_python_orders_its_dsq_by_vtime_or_fifo():
    vtime, fifo = schedlab.compare(SLEEPER_AND_HOGS, sched=[SCX_SIMPLE.Simple, SCX_SIMPLE.SimpleFifo])
    assert (vtime.scheduler, fifo.scheduler) == ("simple", "simple-fifo")
    # Neither preempts: the sleeper waits for the running hog's 24 ms run
    # to end; by vtime it then goes before the other hog, in FIFO order
    # after it. The Rust scx_simple (crates/schedlab-policies/tests/
    # scx_core.rs) gives the same figures, 13,915 and 35,264 us.
    v, f = _sleeper_wait_us(vtime), _sleeper_wait_us(fifo)
    assert 8_000 < v < 18_000, v
    assert 18_000 < f - v < 30_000, (v, f)


def test_a_sched_ext_scheduler_that_breaks_a_rule_gets_the_rule():
    class NoSuchDsq(schedlab.ScxPolicy):
        def enqueue(self, scx, p, enq_flags):
            scx.dsq_insert(p, 7, schedlab.SCX_SLICE_DFL, enq_flags)

    with pytest.raises(ValueError, match="dispatched to DSQ 7, which does not exist: create it with create_dsq"):
        schedlab.run(SLEEPER_AND_HOGS, sched=NoSuchDsq)

    class BadId(schedlab.ScxPolicy):
        def enqueue(self, scx, p, enq_flags):
            scx.dsq_insert(p, schedlab.SCX_DSQ_LOCAL + 5, schedlab.SCX_SLICE_DFL, enq_flags)

    with pytest.raises(ValueError, match="is no DSQ"):
        schedlab.run(SLEEPER_AND_HOGS, sched=BadId)


def test_sys_and_scx_kept_past_their_call_raise_runtime_error_in_any_thread():
    kept = {}

    class Keeper(schedlab.Policy):
        def __init__(self, cpus, tick_ns):
            super().__init__(cpus, tick_ns)
            self.queue = []

        def enqueue(self, sys, cpu, task, how):
            kept["sys"] = sys
            self.queue.append(task)

        def dequeue(self, sys, cpu, task, why):
            self.queue.remove(task)

        def pick(self, sys, cpu):
            return self.queue[0] if self.queue else None

    class ScxKeeper(schedlab.ScxPolicy):
        def enable(self, scx, p):
            kept["scx"] = scx

    schedlab.run("thread-test", sched=Keeper, duration="100ms", params={"threads": 2})
    schedlab.run("thread-test", sched=ScxKeeper, duration="100ms", params={"threads": 2})
    errors = []

    def use():
        for name, read in (("sys", lambda: kept["sys"].now), ("scx", lambda: kept["scx"].now)):
            try:
                read()
            except Exception as e:  # noqa: BLE001 - the kind is what is checked
                errors.append((name, type(e).__name__, str(e)))

    use()
    t = threading.Thread(target=use)
    t.start()
    t.join()
    assert [e[:2] for e in errors] == [("sys", "RuntimeError"), ("scx", "RuntimeError")] * 2, errors
    assert all("valid only inside" in e[2] for e in errors), errors
