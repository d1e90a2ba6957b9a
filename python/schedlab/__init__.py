"""schedlab from Python: one workload on every CPU scheduler, side by side.

The simulations are schedlab's own (the Rust crates, through
``schedlab._native``); this module gives them a Python shape::

    import schedlab
    r = schedlab.run("thread-test", sched="eevdf", duration="1s", params={"threads": 16})
    r.totals["context_switches_per_sec"]
    reports = schedlab.compare("jitter-under-load", sched=["cfs", "eevdf", "bmq"])
    reports.to_pandas()                 # one row per run, the CLI's CSV columns
    reports.to_pandas(tasks=True)       # one row per task
    frame = schedlab.sweep("thread-test", {"threads": "1,2,4,...,64"}, backend="ray")

A workload is what ``schedlab`` takes on the command line (a TOML or rt-app
JSON path, a built-in scenario, a tool's command line such as
``"stress-ng --cpu 4"``) or a dict in the TOML file's shape. Options are
the CLI's: ``cpus``, ``duration`` (with its unit: "2s", "500ms"), ``seed``,
``params`` (--param), ``set`` (--set, tunables), ``cost`` (--cost).
Errors raise ValueError with the CLI's message. Simulations release the
GIL, so Python threads run them in parallel; ``compare`` and ``sweep``
use every core by themselves.

A policy of your own is a subclass of ``schedlab.Policy`` passed where a
name goes (``sched=MyPolicy`` or ``sched=["eevdf", MyPolicy]``); see its
docstring and docs/writing-a-policy.md. A sched_ext scheduler's logic is a
subclass of ``schedlab.ScxPolicy`` (select_cpu, enqueue, dispatch, ...,
with DSQs), passed the same way.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from . import _native

__all__ = ["Policy", "ScxPolicy", "Report", "Reports", "run", "compare", "sweep", "vm", "schedulers", "SUMMARY_COLUMNS", "TASK_COLUMNS"]
__version__ = _native.__version__

SUMMARY_COLUMNS: list = list(_native.summary_columns())
TASK_COLUMNS: list = list(_native.task_columns())

Workload = Union[str, Mapping[str, Any]]


class Policy:
    """A scheduling policy written in Python, run by the simulator's engine
    beside the built-in ones: ``schedlab.run(w, sched=MyPolicy)``,
    ``schedlab.compare(w, sched=["eevdf", MyPolicy])``.

    schedlab makes one instance per run, ``MyPolicy(cpus, tick_ns)``, and
    calls its hooks with ``sys``, the engine's state during that call
    (``sys.now``, ``sys.nr_cpus``, ``sys.tick_ns``, ``sys.state(task)``,
    ``sys.cpu_of(task)``, ``sys.nice(task)``, ``sys.runtime(task)``,
    ``sys.allowed(task, cpu)``, ``sys.idle(cpu)``, ``sys.nr_running(cpu)``,
    ``sys.curr(cpu)``; requests ``sys.resched(cpu)``, ``sys.migrate(task,
    cpu)``, ``sys.arm_timer(at_ns, token)``). Tasks and CPUs are ints.

    Required hooks:

    - ``enqueue(sys, cpu, task, how)``: the task joins the CPU's runqueue
      (how: "new", "wakeup", "migrate");
    - ``dequeue(sys, cpu, task, why)``: it leaves ("sleep", "exit"); it may
      be the running task;
    - ``pick(sys, cpu)``: the task to run next, or None. The task that ran
      is still current while you choose; if it was preempted its state is
      "runnable" and you put it back in your queue yourself.

    Optional hooks (left out, the engine's defaults apply without a call
    into Python): ``select_cpu(sys, task, prev, new) -> cpu`` (default:
    prev if idle, else the next idle CPU), ``tick(sys, cpu, task)``,
    ``account(sys, cpu, task, delta_ns)``, ``wakeup_preempt(sys, cpu, curr,
    woken) -> bool`` (default False), ``yield_task(sys, cpu, task)``,
    ``balance(sys, cpu, idle)``, ``newidle_balance(sys, cpu)``,
    ``task_new(sys, task, parent)``, ``timer(sys, token)``,
    ``put_prev(sys, cpu, task, runnable)`` (needed only beside real-time
    tasks). Every pick and placement is checked: one the engine cannot
    run, an idle CPU with tasks waiting, or a hook that raises ends the run
    with ValueError naming the hook or the rule, the CPU, the task and the
    time.
    """

    #: The name reports and tables use (default: the class name, lowercased).
    name: str = ""

    def __init__(self, cpus: int, tick_ns: int):
        self.cpus = cpus
        self.tick_ns = tick_ns

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls.__dict__.get("name"):
            cls.name = cls.__name__.lower()


class ScxPolicy(Policy):
    """A sched_ext scheduler written in Python, in the shape of a BPF
    scheduler's ``struct sched_ext_ops``, run on schedlab's sched_ext core
    (Linux 6.12's ext.c: local, global and one's own DSQs, direct
    dispatch, the dispatch loop, slices charged and ended at the tick, no
    wakeup preemption). Pass the class where a name goes, as a Policy.

    Callbacks, all optional (left out, the kernel's default applies); each
    gets ``scx`` first, then what the kernel passes:

    - ``init(scx)``: create DSQs (``scx.create_dsq(id)``);
    - ``enable(scx, p)``: a task joins;
    - ``select_cpu(scx, p, prev_cpu, wake_flags) -> cpu`` (default: an
      idle CPU by ``scx.select_cpu_dfl``, the task inserted into its local
      DSQ); inserting ``p`` here is a direct dispatch;
    - ``enqueue(scx, p, enq_flags)`` (default: the global DSQ); insert it
      into a DSQ, or keep it and insert it later from dispatch;
    - ``dequeue(scx, p, deq_flags)``: a task kept in custody leaves;
    - ``dispatch(scx, cpu, prev)``: the CPU's local DSQ is empty:
      ``scx.dsq_move_to_local(dsq)`` or insert kept tasks;
    - ``runnable(scx, p, enq_flags)``, ``running(scx, p)``,
      ``stopping(scx, p, runnable)``, ``quiescent(scx, p, deq_flags)``,
      ``tick(scx, p)``, ``timer(scx, token)``.

    ``scx`` has the kfuncs: ``dsq_insert(p, dsq, slice, enq_flags=0)``,
    ``dsq_insert_vtime(p, dsq, slice, vtime, enq_flags=0)``,
    ``dsq_move_to_local(dsq)``, ``dsq_nr_queued(dsq)``, ``dsq_first(dsq)``,
    ``dsq_tasks(dsq)``, ``kick_cpu(cpu, flags=0)``, ``select_cpu_dfl(p,
    prev, wake_flags)``, ``pick_idle_cpu(p, whole_core=False)``,
    ``cpu_idle(cpu)``, ``arm_timer(at_ns, token)``; the task fields
    ``slice(p)``/``set_slice``, ``dsq_vtime(p)``/``set_dsq_vtime``,
    ``weight(p)`` (nice 0 = 100), ``nice(p)``, ``task_cpu(p)``,
    ``nr_cpus_allowed(p)``, ``allowed(p, cpu)``, ``state(p)``,
    ``runtime(p)``; and ``now``, ``nr_cpus``, ``this_cpu``. DSQ ids are the
    kernel's: one's own below 2**63, ``SCX_DSQ_GLOBAL``, ``SCX_DSQ_LOCAL``,
    ``SCX_DSQ_LOCAL_ON | cpu``; flags ``SCX_ENQ_*``, ``SCX_KICK_*``,
    ``SCX_WAKE_*``; ``SCX_SLICE_DFL`` (20 ms). examples/python/scx_simple.py
    is the kernel's scx_simple in 40 lines.
    """

    _sched_ext = True


SCX_SLICE_DFL: int = _native.SCX_SLICE_DFL
SCX_DSQ_GLOBAL: int = _native.SCX_DSQ_GLOBAL
SCX_DSQ_LOCAL: int = _native.SCX_DSQ_LOCAL
SCX_DSQ_LOCAL_ON: int = _native.SCX_DSQ_LOCAL_ON
SCX_ENQ_WAKEUP: int = _native.SCX_ENQ_WAKEUP
SCX_ENQ_HEAD: int = _native.SCX_ENQ_HEAD
SCX_ENQ_PREEMPT: int = _native.SCX_ENQ_PREEMPT
SCX_DEQ_SLEEP: int = _native.SCX_DEQ_SLEEP
SCX_KICK_IDLE: int = _native.SCX_KICK_IDLE
SCX_KICK_PREEMPT: int = _native.SCX_KICK_PREEMPT
SCX_WAKE_FORK: int = _native.SCX_WAKE_FORK
SCX_WAKE_TTWU: int = _native.SCX_WAKE_TTWU
SCX_WAKE_SYNC: int = _native.SCX_WAKE_SYNC


def schedulers() -> list:
    """The schedulers schedlab simulates, as ``schedlab list`` names them."""
    return list(_native.schedulers())


def _number(cell: str) -> Any:
    """A CSV cell as the number it holds, None when empty, else the text."""
    if cell == "":
        return None
    try:
        return int(cell)
    except ValueError:
        try:
            return float(cell)
        except ValueError:
            return cell


class Report:
    """One run's report: the JSON ``schedlab run --json`` prints, as a dict
    (``report.data``) with its top-level fields as attributes, plus the
    CSV summary row and per-task rows."""

    def __init__(self, report_json: str, summary: Sequence[str], tasks: Sequence[Sequence[str]]):
        self.data: dict = json.loads(report_json)
        self.summary: dict = {c: _number(v) for c, v in zip(SUMMARY_COLUMNS, summary)}
        self.task_rows: list = [{c: _number(v) for c, v in zip(TASK_COLUMNS, row)} for row in tasks]

    def __getattr__(self, name: str) -> Any:
        try:
            return self.data[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:
        t = self.data["totals"]
        return (
            f"<Report {self.data['scheduler']} on {self.data['workload']}: "
            f"{t['context_switches_per_sec']:.0f} switches/s, {len(self.data['tasks'])} tasks>"
        )

    def to_dict(self) -> dict:
        return self.data

    def to_pandas(self, tasks: bool = False):
        return Reports([self]).to_pandas(tasks=tasks)

    def to_polars(self, tasks: bool = False):
        return Reports([self]).to_polars(tasks=tasks)


class Reports(list):
    """Several reports (``compare``), with frames of them all."""

    def rows(self, tasks: bool = False) -> list:
        if tasks:
            return [row for r in self for row in r.task_rows]
        return [r.summary for r in self]

    def to_pandas(self, tasks: bool = False):
        """One row per run (the CLI's CSV columns), or per task."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("to_pandas needs pandas: pip install pandas") from None
        return pd.DataFrame(self.rows(tasks), columns=TASK_COLUMNS if tasks else SUMMARY_COLUMNS)

    def to_polars(self, tasks: bool = False):
        try:
            import polars as pl
        except ImportError:
            raise ImportError("to_polars needs polars: pip install polars") from None
        return pl.DataFrame(self.rows(tasks), infer_schema_length=None)


def _spec(workload: Workload) -> tuple:
    if isinstance(workload, str):
        return workload, False
    if isinstance(workload, Mapping):
        return json.dumps(workload), True
    raise TypeError(f"a workload is a path, a scenario name, a command line or a dict, not {type(workload).__name__}")


_OPTIONS = ("cpus", "duration", "seed", "params", "set", "cost")


def _overrides(**options) -> str:
    unknown = sorted(k for k in options if k not in _OPTIONS)
    if unknown:
        raise TypeError(f"unknown option {', '.join(unknown)}: the options are {', '.join(_OPTIONS)}")
    ov: dict = {}
    for key in ("cpus", "seed"):
        if isinstance(options.get(key), (bool, float)):
            raise ValueError(f"{key} = {options[key]!r} is not a whole number")
    # A bare number would be nanoseconds (duration=5 ran 5 ns and reported
    # zeros): ask for the unit, as the CLI does.
    durations = [("duration", options.get("duration"))] + [(f"cost {k}", v) for k, v in (options.get("cost") or {}).items()]
    for key, value in durations:
        if isinstance(value, (int, float)):
            raise ValueError(f"{key} = {value!r} has no unit: write e.g. '{value}s' or '{value}ms'")
    for key in ("cpus", "duration", "seed"):
        if options.get(key) is not None:
            ov[key] = options[key]
    for key in ("params", "set", "cost"):
        if options.get(key):
            ov[key] = dict(options[key])
    return json.dumps(ov)


def _is_policy_class(s: Any) -> bool:
    return isinstance(s, type) and issubclass(s, Policy)


def _sched_list(sched: Union[None, str, type, Iterable[Union[str, type]]]) -> list:
    if sched is None:
        return schedulers()
    if isinstance(sched, str):
        return [s for s in sched.split(",") if s]
    if _is_policy_class(sched):
        return [sched]
    if isinstance(sched, Policy):
        raise TypeError(f"pass the class {type(sched).__name__}, not an instance: schedlab makes one per run")
    names = list(sched) if isinstance(sched, Iterable) else None
    if names is None or not all(isinstance(s, str) or _is_policy_class(s) for s in names):
        raise TypeError(
            f"sched is a name, a comma list, a schedlab.Policy subclass or a list of those (e.g. 'cfs,eevdf'), "
            f"not {sched!r}"
        )
    return names


def _run_jobs(jobs: list, threads: int, summary_only: bool = False) -> list:
    """Runs (spec, inline, sched, overrides) jobs: built-in names on every
    core at once, Python policies one after another (their hooks take the
    GIL); results in job order (only the summary records when
    ``summary_only``)."""
    builtin = [j for j in jobs if isinstance(j[2], str)]
    done = iter(_native.run_batch(builtin, threads, summary_only) if builtin else [])
    return [next(done) if isinstance(j[2], str) else _native.run_policy(*j, summary_only) for j in jobs]


def run(workload: Workload, sched: Union[str, type] = "eevdf", **options) -> Report:
    """``schedlab run``: the workload on one simulated scheduler (a name,
    or a ``schedlab.Policy`` subclass)."""
    spec, inline = _spec(workload)
    one = sched
    if not isinstance(sched, str):
        listed = _sched_list(sched)
        if len(listed) != 1:
            raise ValueError(f"run takes one scheduler, not {len(listed)}: use compare for several")
        (one,) = listed
    ((report, summary, tasks),) = _run_jobs([(spec, inline, one, _overrides(**options))], 1)
    return Report(report, summary, tasks)


def compare(workload: Workload, sched: Union[None, str, Iterable[str]] = None, **options) -> Reports:
    """``schedlab compare``: the workload on several schedulers (default:
    all), in parallel on every core."""
    spec, inline = _spec(workload)
    ov = _overrides(**options)
    jobs = [(spec, inline, s, ov) for s in _sched_list(sched)]
    return Reports(Report(*r) for r in _run_jobs(jobs, 0))


def _cli() -> str:
    import os
    import shutil

    cli = os.environ.get("SCHEDLAB_BIN") or shutil.which("schedlab")
    if not cli:
        raise RuntimeError(
            "real-kernel runs boot the schedlab binary as the guest's init: "
            "cargo install --path crates/schedlab-cli, or set SCHEDLAB_BIN"
        )
    return cli


def _vm_report(workload: Workload, kernel: str, label: Optional[str], accel: str, memory: str, overrides: str) -> tuple:
    """Runs ``schedlab vm`` and returns (report JSON, summary, tasks)."""
    import subprocess
    import tempfile

    ov = json.loads(overrides)
    spec, inline = _spec(workload)
    with tempfile.TemporaryDirectory(prefix="schedlab-py-") as tmp:
        if inline:
            path = f"{tmp}/workload.toml"
            with open(path, "w") as f:
                f.write(_native.dict_to_toml(spec))
            spec = path
        cmd = [_cli(), "vm", spec, "--kernel", kernel, "--accel", accel, "--memory", memory, "--json"]
        for key, flag in (("cpus", "--cpus"), ("seed", "--seed")):
            if key in ov:
                cmd += [flag, str(ov[key])]
        if "duration" in ov:
            d = ov["duration"]
            cmd += ["--duration", d if isinstance(d, str) else f"{d}ns"]
        for name, value in ov.get("params", {}).items():
            cmd += ["--param", f"{name}={value}"]
        if ov.get("set") or ov.get("cost"):
            raise ValueError("set and cost change the simulator; a real kernel runs with its own tunables and costs")
        out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        lines = [line for line in out.stderr.splitlines() if line.startswith("schedlab:")]
        raise RuntimeError(lines[-1] if lines else out.stderr.strip() or f"schedlab vm exited {out.returncode}")
    data = json.loads(out.stdout)
    if label:
        data["scheduler"] = f"{label} (vm)"
    report = json.dumps(data)
    summary, tasks = _native.records(report)
    return report, summary, tasks


def vm(workload: Workload, kernel: str, accel: str = "auto", memory: str = "1G", label: Optional[str] = None, **options) -> Report:
    """``schedlab vm``: the workload as real threads in ``kernel`` (a
    bzImage) booted under QEMU; needs the schedlab binary (on PATH or
    SCHEDLAB_BIN) and qemu-system-x86_64. Failures raise RuntimeError with
    schedlab's message."""
    return Report(*_vm_report(workload, kernel, label, accel, memory, _overrides(**options)))


def _grid_values(values: Union[str, Iterable[Any]]) -> str:
    if isinstance(values, str):
        return values
    return ",".join(str(v) for v in values)


def _run_job_on_ray(job):
    """A Ray task: one simulated run, on one CPU of whichever node Ray
    chose, or a real-kernel run (a job with a kernel) on as many."""
    if len(job) == 6:
        workload, kernel, label, accel, memory, ov = job
        return _vm_report(workload, kernel, label, accel, memory, ov)[1]
    ((_, summary, _),) = _run_jobs([job], 1, summary_only=True)
    return summary


def sweep(
    workload: Workload,
    grid: Mapping[str, Union[str, Iterable[Any]]],
    sched: Union[None, str, type, Iterable[Union[str, type]]] = None,
    backend: str = "local",
    jobs: int = 0,
    retries: int = 2,
    progress: Optional[bool] = None,
    kernels: Optional[Mapping[str, str]] = None,
    accel: str = "auto",
    **options,
):
    """``schedlab sweep``: every combination of ``grid``'s values (the
    first name outermost, schedulers innermost), as a pandas frame with a
    column per grid name and the CLI's CSV columns.

    ``grid`` maps names to values as ``--vary`` takes them: cpus, seed,
    duration, a [params] name (or ``tasks``), or a tunable; values a list
    or ``"1,2,4,...,64"``. ``backend="local"`` runs on this machine's cores
    (``jobs`` threads, 0 for all); ``backend="ray"`` submits one Ray task
    per run to the cluster ``ray.init()`` connected to (a local one if
    none), each retried ``retries`` times if its worker dies. Both give the
    same rows: the runs are deterministic and gathered in grid order.

    ``kernels`` (name: bzImage) adds a real-kernel row per kernel at every
    point, ``schedlab vm`` under QEMU (``accel``). Locally they run one at a
    time after the simulations; on Ray each is a task needing as many CPUs
    as its guest has vCPUs, so the cluster runs as many guests at once as
    it has CPUs for.
    """
    spec, inline = _spec(workload)
    if not isinstance(grid, Mapping):
        raise TypeError(f"grid maps names to values, e.g. {{'threads': '1,2,4'}}, not {grid!r}")
    base = _overrides(**options)
    vary = [(name, _grid_values(values)) for name, values in grid.items()]
    points = _native.grid(spec, inline, base, vary)
    names = _sched_list(sched) + [f"{k} (vm)" for k in (kernels or {})]
    job_list = []
    for _, ov, _ in points:
        job_list += [(spec, inline, s, ov) for s in _sched_list(sched)]
        job_list += [(workload, path, k, accel, "1G", ov) for k, path in (kernels or {}).items()]
    if progress is None:
        progress = sys.stderr.isatty()
    started = time.monotonic()
    if backend == "local":
        simulated = iter(_run_jobs([j for j in job_list if len(j) == 4], jobs, summary_only=True))
        summaries = [next(simulated)[1] if len(j) == 4 else _vm_report(*j)[1] for j in job_list]
    elif backend == "ray":
        cpus = [p[2] for p in points for _ in names]
        summaries = _sweep_on_ray(job_list, cpus, retries, progress)
    else:
        raise ValueError(f"unknown backend '{backend}': use 'local' or 'ray'")
    if progress:
        print(f"schedlab: sweep: {len(job_list)} runs in {time.monotonic() - started:.2f} s on {backend}", file=sys.stderr)
    # A column per grid name, but cpus and seed are report columns already.
    extra = [name for name, _ in vary if name not in SUMMARY_COLUMNS]
    rows = []
    for k, summary in enumerate(summaries):
        values = points[k // len(names)][0]
        row = {name: v for (name, _), v in zip(vary, values) if name in extra}
        row.update({c: _number(cell) for c, cell in zip(SUMMARY_COLUMNS, summary)})
        rows.append(row)
    try:
        import pandas as pd
    except ImportError:
        return rows
    return pd.DataFrame(rows, columns=extra + SUMMARY_COLUMNS)


def _sweep_on_ray(job_list: list, cpus: list, retries: int, progress: bool) -> list:
    try:
        import ray
    except ImportError:
        raise ImportError("backend='ray' needs Ray: pip install ray") from None
    if not ray.is_initialized():
        ray.init()
    task = ray.remote(max_retries=retries)(_run_job_on_ray)
    # A simulation takes one CPU; a guest as many as it has vCPUs.
    refs = [task.options(num_cpus=1 if len(job) == 4 else n).remote(job) for job, n in zip(job_list, cpus)]
    pending, done = list(refs), 0
    while pending:
        ready, pending = ray.wait(pending, num_returns=min(len(pending), max(1, len(refs) // 20)))
        done += len(ready)
        if progress:
            print(f"\rschedlab: sweep on Ray: {done}/{len(refs)} runs", end="", file=sys.stderr)
    if progress:
        print(file=sys.stderr)
    try:
        return ray.get(refs)
    except ray.exceptions.RayTaskError as e:
        cause = getattr(e, "cause", None) or e
        raise (cause if isinstance(cause, (ValueError, RuntimeError)) else ValueError(str(cause))) from None
