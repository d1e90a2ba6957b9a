//! A sched_ext scheduler written in Python (`schedlab.ScxPolicy`): the
//! callbacks the class defines (select_cpu, enqueue, dispatch, runnable,
//! running, stopping, quiescent, dequeue, tick, enable, init, timer) run
//! on schedlab's sched_ext core (`schedlab_policies::scx`), which provides
//! the DSQs and does what Linux 6.12's ext.c does around them; callbacks
//! left out do what the kernel does without them. Each gets `scx`, the
//! kfuncs and task fields as a Python object valid during that call.

use crate::policy::{Arg, StateView, call_with, intern_name};
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use schedlab_policies::scx::{self, Dsq, Scx, ScxCore, ScxOps};
use schedlab_sim::{CpuId, Nanos, TaskId, TaskState, Workload};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, Mutex};

/// The kfuncs as a callback sees them.
#[pyclass(name = "Scx", module = "schedlab")]
pub struct PyScx {
    /// Set for the duration of one callback, null otherwise.
    scx: AtomicPtr<Scx<'static>>,
}

impl StateView for PyScx {
    type State = Scx<'static>;
    fn slot(&self) -> &AtomicPtr<Scx<'static>> {
        &self.scx
    }
}

impl PyScx {
    fn with<T>(&self, f: impl FnOnce(&mut Scx) -> PyResult<T>) -> PyResult<T> {
        let p = self.scx.load(Ordering::SeqCst);
        if p.is_null() {
            return Err(PyRuntimeError::new_err("scx is valid only inside the callback it was passed to"));
        }
        // SAFETY: set from a live `&mut Scx` just before a callback is
        // called and cleared when it returns. Meanwhile the engine waits for
        // the callback, and every use, from any Python thread, holds the
        // GIL for the method's length: one at a time.
        f(unsafe { &mut *p })
    }

    fn task<T>(&self, p: TaskId, f: impl FnOnce(&mut Scx) -> T) -> PyResult<T> {
        self.with(|s| {
            if (p as usize) < s.sys().tasks.len() {
                Ok(f(s))
            } else {
                Err(PyIndexError::new_err(format!("no task {p}: the run has {}", s.sys().tasks.len())))
            }
        })
    }

    fn cpu<T>(&self, cpu: CpuId, f: impl FnOnce(&mut Scx) -> T) -> PyResult<T> {
        self.with(|s| {
            if cpu < s.nr_cpus() {
                Ok(f(s))
            } else {
                Err(PyIndexError::new_err(format!("no CPU {cpu}: the machine has {}", s.nr_cpus())))
            }
        })
    }
}

fn dsq(id: u64) -> PyResult<Dsq> {
    Dsq::from_id(id).map_err(PyValueError::new_err)
}

#[pymethods]
impl PyScx {
    /// The simulated time, ns (scx_bpf_now).
    #[getter]
    fn now(&self) -> PyResult<Nanos> {
        self.with(|s| Ok(s.now()))
    }
    #[getter]
    fn nr_cpus(&self) -> PyResult<u32> {
        self.with(|s| Ok(s.nr_cpus()))
    }
    /// The CPU this callback runs on (bpf_get_smp_processor_id()).
    #[getter]
    fn this_cpu(&self) -> PyResult<CpuId> {
        self.with(|s| Ok(s.this_cpu()))
    }
    /// The CPU the task is on or was last on (scx_bpf_task_cpu).
    fn task_cpu(&self, p: TaskId) -> PyResult<CpuId> {
        self.task(p, |s| s.task_cpu(p))
    }
    fn nice(&self, p: TaskId) -> PyResult<i32> {
        self.task(p, |s| s.task(p).nice)
    }
    /// CPU time the task has received, ns.
    fn runtime(&self, p: TaskId) -> PyResult<Nanos> {
        self.task(p, |s| s.task(p).sum_exec)
    }
    /// "new", "runnable", "running", "sleeping" or "exited".
    fn state(&self, p: TaskId) -> PyResult<&'static str> {
        self.task(p, |s| match s.task(p).state {
            TaskState::New => "new",
            TaskState::Runnable => "runnable",
            TaskState::Running => "running",
            TaskState::Sleeping => "sleeping",
            TaskState::Exited => "exited",
        })
    }
    fn allowed(&self, p: TaskId, cpu: CpuId) -> PyResult<bool> {
        self.task(p, |s| cpu < s.nr_cpus() && s.allowed(p, cpu))
    }
    /// p->nr_cpus_allowed.
    fn nr_cpus_allowed(&self, p: TaskId) -> PyResult<u32> {
        self.task(p, |s| s.nr_cpus_allowed(p))
    }
    /// p->scx.slice, ns left.
    fn slice(&self, p: TaskId) -> PyResult<u64> {
        self.task(p, |s| s.slice(p))
    }
    fn set_slice(&self, p: TaskId, slice: u64) -> PyResult<()> {
        self.task(p, |s| s.set_slice(p, slice))
    }
    /// p->scx.dsq_vtime.
    fn dsq_vtime(&self, p: TaskId) -> PyResult<u64> {
        self.task(p, |s| s.dsq_vtime(p))
    }
    fn set_dsq_vtime(&self, p: TaskId, vtime: u64) -> PyResult<()> {
        self.task(p, |s| s.set_dsq_vtime(p, vtime))
    }
    /// p->scx.weight: nice 0 is 100.
    fn weight(&self, p: TaskId) -> PyResult<u64> {
        self.task(p, |s| s.weight(p))
    }
    /// scx_bpf_create_dsq(id): a DSQ of one's own, id below 2**63.
    fn create_dsq(&self, id: u64) -> PyResult<()> {
        self.with(|s| {
            s.create_dsq(id);
            Ok(())
        })
    }
    /// scx_bpf_dsq_insert(p, dsq, slice, enq_flags): from select_cpu or
    /// enqueue the task being placed, from dispatch a task in custody.
    #[pyo3(signature = (p, dsq_id, slice, enq_flags = 0))]
    fn dsq_insert(&self, p: TaskId, dsq_id: u64, slice: u64, enq_flags: u64) -> PyResult<()> {
        let d = dsq(dsq_id)?;
        self.task(p, |s| s.dsq_insert(p, d, slice, enq_flags))
    }
    /// scx_bpf_dsq_insert_vtime(p, dsq, slice, vtime, enq_flags), into a
    /// DSQ of one's own.
    #[pyo3(signature = (p, dsq_id, slice, vtime, enq_flags = 0))]
    fn dsq_insert_vtime(&self, p: TaskId, dsq_id: u64, slice: u64, vtime: u64, enq_flags: u64) -> PyResult<()> {
        let d = dsq(dsq_id)?;
        self.task(p, |s| s.dsq_insert_vtime(p, d, slice, vtime, enq_flags))
    }
    /// scx_bpf_dsq_move_to_local(dsq), from dispatch: True when a task moved.
    fn dsq_move_to_local(&self, dsq_id: u64) -> PyResult<bool> {
        let d = dsq(dsq_id)?;
        self.with(|s| Ok(s.dsq_move_to_local(d)))
    }
    /// scx_bpf_dsq_nr_queued(dsq).
    fn dsq_nr_queued(&self, dsq_id: u64) -> PyResult<u32> {
        let d = dsq(dsq_id)?;
        self.with(|s| Ok(s.dsq_nr_queued(d)))
    }
    /// The first task of a DSQ and its dsq_vtime (None for a FIFO DSQ),
    /// or None when it is empty.
    fn dsq_first(&self, dsq_id: u64) -> PyResult<Option<(TaskId, Option<u64>)>> {
        let d = dsq(dsq_id)?;
        self.with(|s| Ok(s.dsq_first(d)))
    }
    /// The tasks of a DSQ in the order they would be consumed.
    fn dsq_tasks(&self, dsq_id: u64) -> PyResult<Vec<TaskId>> {
        let d = dsq(dsq_id)?;
        self.with(|s| Ok(s.dsq_tasks(d).into_iter().map(|(t, _)| t).collect()))
    }
    /// scx_bpf_kick_cpu(cpu, flags): KICK_IDLE, KICK_PREEMPT.
    #[pyo3(signature = (cpu, flags = 0))]
    fn kick_cpu(&self, cpu: CpuId, flags: u64) -> PyResult<()> {
        self.cpu(cpu, |s| s.kick_cpu(cpu, flags))
    }
    /// Whether nothing runs or waits on the CPU.
    fn cpu_idle(&self, cpu: CpuId) -> PyResult<bool> {
        self.cpu(cpu, |s| s.cpu_idle(cpu))
    }
    /// scx_bpf_pick_idle_cpu(p, flags): an idle CPU the task may use, or None.
    #[pyo3(signature = (p, whole_core = false))]
    fn pick_idle_cpu(&self, p: TaskId, whole_core: bool) -> PyResult<Option<CpuId>> {
        self.task(p, |s| s.pick_idle_cpu(p, whole_core))
    }
    /// scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags) -> (cpu, is_idle).
    fn select_cpu_dfl(&self, p: TaskId, prev_cpu: CpuId, wake_flags: u64) -> PyResult<(CpuId, bool)> {
        self.task(p, |s| s.select_cpu_dfl(p, prev_cpu, wake_flags))
    }
    /// Call the scheduler's timer(scx, token) at time `at` (ns).
    fn arm_timer(&self, at: Nanos, token: u64) -> PyResult<()> {
        self.with(|s| {
            s.arm_timer(at, token);
            Ok(())
        })
    }
}

/// The callbacks a class may define.
const CALLBACKS: [&str; 12] = [
    "init",
    "enable",
    "select_cpu",
    "enqueue",
    "dequeue",
    "dispatch",
    "tick",
    "runnable",
    "running",
    "stopping",
    "quiescent",
    "timer",
];

pub struct PyScxOps {
    obj: Py<PyAny>,
    scx: Py<PyScx>,
    name: &'static str,
    defined: [bool; CALLBACKS.len()],
    failed: AtomicBool,
    pub interrupt: Arc<Mutex<Option<PyErr>>>,
}

impl PyScxOps {
    /// `class(cpus, tick_ns)` on the sched_ext core, for one run of `w`.
    pub fn policy(py: Python<'_>, class: &Bound<'_, PyAny>, w: &Workload) -> PyResult<ScxCore<PyScxOps>> {
        let obj = class.call1((w.nr_cpus(), w.machine.tick_ns()))?;
        let name: String = obj
            .getattr(intern!(py, "name"))?
            .extract()
            .map_err(|_| pyo3::exceptions::PyTypeError::new_err("the scheduler's `name` is a string"))?;
        schedlab_policies::check_name(&name).map_err(PyValueError::new_err)?;
        // Only what the subclass defines is called: ScxPolicy's own
        // attributes are not callbacks.
        let defined = CALLBACKS.map(|m| obj.hasattr(m).unwrap_or(false));
        let scx = Py::new(py, PyScx { scx: AtomicPtr::new(std::ptr::null_mut()) })?;
        let ops = PyScxOps {
            obj: obj.unbind(),
            scx,
            name: intern_name(&name),
            defined,
            failed: AtomicBool::new(false),
            interrupt: Default::default(),
        };
        Ok(ScxCore::new(w, ops))
    }

    fn defines(&self, m: &str) -> bool {
        CALLBACKS.iter().position(|c| *c == m).is_some_and(|i| self.defined[i])
    }

    /// Calls callback `method` with (scx, *args), its result read by
    /// `read`; an exception or a result `read` refuses ends the run.
    fn call<T>(
        &self,
        scx: &mut Scx,
        method: &str,
        args: Vec<Arg>,
        read: impl FnOnce(&Bound<'_, PyAny>) -> Result<T, String>,
    ) -> Option<T> {
        if self.failed.load(Ordering::Relaxed) {
            return None;
        }
        Python::attach(|py| {
            let state = (scx as *mut Scx).cast();
            let read = call_with(&self.obj, self.scx.bind(py), state, method, args, read, &self.interrupt);
            read.map_err(|what| {
                self.failed.store(true, Ordering::Relaxed);
                scx.fail(format!("the Python callback {method} {what}"))
            })
            .ok()
        })
    }

    fn notify(&self, scx: &mut Scx, method: &str, args: Vec<Arg>) {
        if self.defines(method) {
            self.call(scx, method, args, |_| Ok(()));
        }
    }
}

impl ScxOps for PyScxOps {
    fn name(&self) -> &'static str {
        self.name
    }

    fn init(&mut self, scx: &mut Scx) {
        self.notify(scx, "init", vec![]);
    }

    fn enable(&mut self, scx: &mut Scx, p: TaskId) {
        self.notify(scx, "enable", vec![Arg::U(p as u64)]);
    }

    fn select_cpu(&mut self, scx: &mut Scx, p: TaskId, prev_cpu: CpuId, wake_flags: u64) -> CpuId {
        if !self.defines("select_cpu") {
            let (cpu, idle) = scx.select_cpu_dfl(p, prev_cpu, wake_flags);
            if idle {
                scx.dsq_insert(p, Dsq::Local, scx::SLICE_DFL, 0);
            }
            return cpu;
        }
        let args = vec![Arg::U(p as u64), Arg::U(prev_cpu as u64), Arg::U(wake_flags)];
        let cpu = self.call(scx, "select_cpu", args, |v| {
            v.extract::<u32>().map_err(|_| {
                format!("returned {}: return a CPU (an int)", v.repr().map(|r| r.to_string()).unwrap_or_default())
            })
        });
        cpu.unwrap_or(prev_cpu)
    }

    fn enqueue(&mut self, scx: &mut Scx, p: TaskId, enq_flags: u64) {
        if self.defines("enqueue") {
            self.call(scx, "enqueue", vec![Arg::U(p as u64), Arg::U(enq_flags)], |_| Ok(()));
        } else {
            scx.dsq_insert(p, Dsq::Global, scx::SLICE_DFL, enq_flags);
        }
    }

    fn dequeue(&mut self, scx: &mut Scx, p: TaskId, deq_flags: u64) {
        self.notify(scx, "dequeue", vec![Arg::U(p as u64), Arg::U(deq_flags)]);
    }

    fn dispatch(&mut self, scx: &mut Scx, cpu: CpuId, prev: Option<TaskId>) {
        self.notify(scx, "dispatch", vec![Arg::U(cpu as u64), Arg::Opt(prev)]);
    }

    fn tick(&mut self, scx: &mut Scx, p: TaskId) {
        self.notify(scx, "tick", vec![Arg::U(p as u64)]);
    }

    fn runnable(&mut self, scx: &mut Scx, p: TaskId, enq_flags: u64) {
        self.notify(scx, "runnable", vec![Arg::U(p as u64), Arg::U(enq_flags)]);
    }

    fn running(&mut self, scx: &mut Scx, p: TaskId) {
        self.notify(scx, "running", vec![Arg::U(p as u64)]);
    }

    fn stopping(&mut self, scx: &mut Scx, p: TaskId, runnable: bool) {
        self.notify(scx, "stopping", vec![Arg::U(p as u64), Arg::B(runnable)]);
    }

    fn quiescent(&mut self, scx: &mut Scx, p: TaskId, deq_flags: u64) {
        self.notify(scx, "quiescent", vec![Arg::U(p as u64), Arg::U(deq_flags)]);
    }

    fn timer(&mut self, scx: &mut Scx, token: u64) {
        self.notify(scx, "timer", vec![Arg::U(token)]);
    }
}

/// The kernel's constants a scheduler uses, as the module's attributes.
pub fn add_constants(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("SCX_SLICE_DFL", scx::SLICE_DFL)?;
    m.add("SCX_DSQ_GLOBAL", scx::DSQ_GLOBAL)?;
    m.add("SCX_DSQ_LOCAL", scx::DSQ_LOCAL)?;
    m.add("SCX_DSQ_LOCAL_ON", scx::DSQ_FLAG_BUILTIN | scx::DSQ_FLAG_LOCAL_ON)?;
    m.add("SCX_ENQ_WAKEUP", scx::ENQ_WAKEUP)?;
    m.add("SCX_ENQ_HEAD", scx::ENQ_HEAD)?;
    m.add("SCX_ENQ_PREEMPT", scx::ENQ_PREEMPT)?;
    m.add("SCX_DEQ_SLEEP", scx::DEQ_SLEEP)?;
    m.add("SCX_KICK_IDLE", scx::KICK_IDLE)?;
    m.add("SCX_KICK_PREEMPT", scx::KICK_PREEMPT)?;
    m.add("SCX_WAKE_FORK", scx::WAKE_FORK)?;
    m.add("SCX_WAKE_TTWU", scx::WAKE_TTWU)?;
    m.add("SCX_WAKE_SYNC", scx::WAKE_SYNC)?;
    Ok(())
}
