//! A scheduling policy written in Python, behind the engine's `Policy`
//! trait: each hook the Python class defines is called with the GIL taken
//! for the call alone (the engine runs with it released, so other Python
//! threads and the built-in policies' runs go on between hooks); hooks it
//! does not define take the trait's defaults without entering Python.
//!
//! The hooks see the engine through `Sys`, a Python object whose methods
//! read the engine's state and make its requests; it is valid only during
//! the hook it was passed to. A hook that raises, or returns what is not a
//! task or a CPU, ends the run with an error that names it.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::{IntoPyObjectExt, intern};
use schedlab_sim::{CpuId, Dequeue, Enqueue, Nanos, Policy, Sys, TaskId, TaskState, WakeKind, Workload};
use std::sync::atomic::{AtomicPtr, Ordering};

/// The engine's state as a Python hook sees it.
#[pyclass(name = "Sys", module = "schedlab")]
pub struct PySys {
    /// Set for the duration of one hook, null otherwise.
    sys: AtomicPtr<Sys>,
}

impl PySys {
    fn with<T>(&self, f: impl FnOnce(&mut Sys) -> PyResult<T>) -> PyResult<T> {
        let p = self.sys.load(Ordering::SeqCst);
        if p.is_null() {
            return Err(PyRuntimeError::new_err("sys is valid only inside the hook it was passed to"));
        }
        // SAFETY: the pointer is set from a live `&mut Sys` just before a
        // hook is called and cleared when it returns. Meanwhile the engine
        // waits for the hook, and every use, from any Python thread, holds
        // the GIL for the method's length: one at a time.
        f(unsafe { &mut *p })
    }
}

fn task_in(sys: &Sys, t: TaskId) -> PyResult<()> {
    if (t as usize) < sys.tasks.len() {
        Ok(())
    } else {
        Err(pyo3::exceptions::PyIndexError::new_err(format!("no task {t}: the run has {}", sys.tasks.len())))
    }
}

fn cpu_in(sys: &Sys, cpu: CpuId) -> PyResult<()> {
    if cpu < sys.nr_cpus {
        Ok(())
    } else {
        Err(pyo3::exceptions::PyIndexError::new_err(format!("no CPU {cpu}: the machine has {}", sys.nr_cpus)))
    }
}

#[pymethods]
impl PySys {
    /// The simulated time, ns.
    #[getter]
    fn now(&self) -> PyResult<Nanos> {
        self.with(|s| Ok(s.now))
    }
    #[getter]
    fn nr_cpus(&self) -> PyResult<u32> {
        self.with(|s| Ok(s.nr_cpus))
    }
    /// The tick period, ns (1e9 / HZ).
    #[getter]
    fn tick_ns(&self) -> PyResult<Nanos> {
        self.with(|s| Ok(s.tick_ns))
    }
    /// "new", "runnable", "running", "sleeping" or "exited".
    fn state(&self, task: TaskId) -> PyResult<&'static str> {
        self.with(|s| {
            task_in(s, task)?;
            Ok(match s.task(task).state {
                TaskState::New => "new",
                TaskState::Runnable => "runnable",
                TaskState::Running => "running",
                TaskState::Sleeping => "sleeping",
                TaskState::Exited => "exited",
            })
        })
    }
    /// The CPU whose runqueue holds the task (or last held it).
    fn cpu_of(&self, task: TaskId) -> PyResult<CpuId> {
        self.with(|s| task_in(s, task).map(|_| s.task(task).cpu))
    }
    fn nice(&self, task: TaskId) -> PyResult<i32> {
        self.with(|s| task_in(s, task).map(|_| s.task(task).nice))
    }
    /// CPU time the task has received, ns.
    fn runtime(&self, task: TaskId) -> PyResult<Nanos> {
        self.with(|s| task_in(s, task).map(|_| s.task(task).sum_exec))
    }
    fn allowed(&self, task: TaskId, cpu: CpuId) -> PyResult<bool> {
        self.with(|s| {
            task_in(s, task)?;
            Ok(cpu < s.nr_cpus && s.allowed(task, cpu))
        })
    }
    /// No task runs on the CPU and none waits for it.
    fn idle(&self, cpu: CpuId) -> PyResult<bool> {
        self.with(|s| cpu_in(s, cpu).map(|_| s.idle(cpu)))
    }
    /// Runnable tasks on the CPU's runqueue, the running one included.
    fn nr_running(&self, cpu: CpuId) -> PyResult<u32> {
        self.with(|s| cpu_in(s, cpu).map(|_| s.cpus[cpu as usize].nr_running))
    }
    /// The task running on the CPU, or None.
    fn curr(&self, cpu: CpuId) -> PyResult<Option<TaskId>> {
        self.with(|s| cpu_in(s, cpu).map(|_| s.cpus[cpu as usize].curr))
    }
    /// Run `pick` on the CPU as soon as the engine can.
    fn resched(&self, cpu: CpuId) -> PyResult<()> {
        self.with(|s| cpu_in(s, cpu).map(|_| s.resched(cpu)))
    }
    /// Record that a queued task moved to another CPU's runqueue (move it
    /// in your own queues too).
    fn migrate(&self, task: TaskId, cpu: CpuId) -> PyResult<()> {
        self.with(|s| {
            s.migrate(task, cpu);
            Ok(())
        })
    }
    /// Call the policy's `timer(sys, token)` at time `at` (ns).
    fn arm_timer(&self, at: Nanos, token: u64) -> PyResult<()> {
        self.with(|s| {
            s.arm_timer(at, token);
            Ok(())
        })
    }
}

/// Which optional hooks the Python class defines.
#[derive(Default)]
struct Defined {
    task_new: bool,
    select_cpu: bool,
    put_prev: bool,
    account: bool,
    tick: bool,
    wakeup_preempt: bool,
    yield_task: bool,
    balance: bool,
    newidle_balance: bool,
    timer: bool,
}

pub struct PyPolicy {
    obj: Py<PyAny>,
    sys: Py<PySys>,
    name: &'static str,
    defined: Defined,
    /// A hook failed: the run ends after this event, and no other hook is
    /// called meanwhile (a hook must not see the state a failure left).
    failed: std::sync::atomic::AtomicBool,
    /// A KeyboardInterrupt or SystemExit a hook raised, re-raised as it is
    /// when the run ends (not folded into a ValueError).
    pub interrupt: std::sync::Arc<std::sync::Mutex<Option<PyErr>>>,
}

/// Names of Python policies, each kept once for the process (a report
/// holds its scheduler's name as `&'static str`).
pub(crate) fn intern_name(name: &str) -> &'static str {
    static NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.iter().find(|n| **n == name) {
        return n;
    }
    let n: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.push(n);
    n
}

const REQUIRED: [&str; 3] = ["enqueue", "dequeue", "pick"];

impl PyPolicy {
    /// Instantiates `class(cpus, tick_ns)` for one run of `w`.
    pub fn new(py: Python<'_>, class: &Bound<'_, PyAny>, w: &Workload) -> PyResult<PyPolicy> {
        let obj = class.call1((w.nr_cpus(), w.machine.tick_ns()))?;
        let missing: Vec<&str> = REQUIRED.into_iter().filter(|m| !obj.hasattr(*m).unwrap_or(false)).collect();
        if !missing.is_empty() {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "{} does not define {}: a policy needs enqueue, dequeue and pick",
                class.getattr("__name__").map(|n| n.to_string()).unwrap_or_default(),
                missing.join(", ")
            )));
        }
        let name: String = obj.getattr(intern!(py, "name"))?.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err("the policy's `name` is a string, e.g. name = \"rr\"")
        })?;
        schedlab_policies::check_name(&name).map_err(pyo3::exceptions::PyValueError::new_err)?;
        let has = |m: &str| obj.hasattr(m).unwrap_or(false);
        let defined = Defined {
            task_new: has("task_new"),
            select_cpu: has("select_cpu"),
            put_prev: has("put_prev"),
            account: has("account"),
            tick: has("tick"),
            wakeup_preempt: has("wakeup_preempt"),
            yield_task: has("yield_task"),
            balance: has("balance"),
            newidle_balance: has("newidle_balance"),
            timer: has("timer"),
        };
        let sys = Py::new(py, PySys { sys: AtomicPtr::new(std::ptr::null_mut()) })?;
        Ok(PyPolicy {
            obj: obj.unbind(),
            sys,
            name: intern_name(&name),
            defined,
            failed: Default::default(),
            interrupt: Default::default(),
        })
    }

    /// Calls hook `method` with (sys, *args) and reads its result with
    /// `read`, the GIL taken once for both; a Python exception, or a result
    /// `read` refuses, ends the run with the hook's name.
    fn call<A, T>(
        &self,
        sys: &mut Sys,
        method: &str,
        args: A,
        read: impl FnOnce(&Bound<'_, PyAny>) -> Result<T, String>,
    ) -> Option<T>
    where
        A: IntoIterator<Item = Arg>,
    {
        if self.failed.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        Python::attach(|py| {
            let read = call_with(&self.obj, self.sys.bind(py), sys as *mut Sys, method, args, read, &self.interrupt);
            read.map_err(|what| {
                self.failed.store(true, std::sync::atomic::Ordering::Relaxed);
                sys.fail(format!("the Python hook {method} {what}"))
            })
            .ok()
        })
    }
}

/// A Python object through which a hook reaches engine state (`sys`,
/// `scx`) for the length of one call: `slot` points at that state then
/// and is null otherwise.
pub(crate) trait StateView: pyo3::PyClass {
    type State;
    fn slot(&self) -> &AtomicPtr<Self::State>;
}

impl StateView for PySys {
    type State = Sys;
    fn slot(&self) -> &AtomicPtr<Sys> {
        &self.sys
    }
}

/// Calls `obj.method(view, *args)` with `view` pointing at `state` for the
/// call's length (null again after it, however it ended), and reads its
/// result with `read`; an exception is said as [`raised`] says it.
pub(crate) fn call_with<V: StateView, T>(
    obj: &Py<PyAny>,
    view: &Bound<'_, V>,
    state: *mut V::State,
    method: &str,
    args: impl IntoIterator<Item = Arg>,
    read: impl FnOnce(&Bound<'_, PyAny>) -> Result<T, String>,
    interrupt: &std::sync::Mutex<Option<PyErr>>,
) -> Result<T, String> {
    let py = view.py();
    view.borrow().slot().store(state, Ordering::SeqCst);
    let mut items: Vec<Py<PyAny>> = vec![view.clone().into_any().unbind()];
    items.extend(args.into_iter().map(|a| a.into_py(py)));
    let result = PyTuple::new(py, items).and_then(|t| obj.bind(py).call_method1(method, t));
    view.borrow().slot().store(std::ptr::null_mut(), Ordering::SeqCst);
    match result {
        Ok(v) => read(&v),
        Err(e) => Err(raised(py, e, interrupt)),
    }
}

/// What a hook's exception says, "raised ValueError('...')"; a
/// KeyboardInterrupt or SystemExit is kept in `interrupt`, to be raised as
/// it is when the run ends.
fn raised(py: Python<'_>, e: PyErr, interrupt: &std::sync::Mutex<Option<PyErr>>) -> String {
    let what = format!("raised {}", e.value(py).repr().map_or_else(|_| e.to_string(), |r| r.to_string()));
    let stop = e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py)
        || e.is_instance_of::<pyo3::exceptions::PySystemExit>(py);
    if stop && let Ok(mut slot) = interrupt.lock() {
        slot.get_or_insert(e);
    }
    what
}

/// For hooks whose result means nothing.
fn ignored(_: &Bound<'_, PyAny>) -> Result<(), String> {
    Ok(())
}

/// A hook's result as an int (a task or a CPU), None as None.
fn int_or_none(v: &Bound<'_, PyAny>) -> Result<Option<u32>, String> {
    if v.is_none() {
        return Ok(None);
    }
    v.extract::<u32>().map(Some).map_err(|_| {
        format!("returned {}: return an int (or None)", v.repr().map(|r| r.to_string()).unwrap_or_default())
    })
}

fn truth(v: &Bound<'_, PyAny>) -> Result<bool, String> {
    v.is_truthy().map_err(|e| format!("returned what is not true or false: {e}"))
}

/// A hook argument.
pub(crate) enum Arg {
    U(u64),
    Opt(Option<u32>),
    B(bool),
    S(&'static str),
}

impl Arg {
    pub(crate) fn into_py(self, py: Python<'_>) -> Py<PyAny> {
        let v = match self {
            Arg::U(n) => n.into_py_any(py),
            Arg::Opt(n) => n.into_py_any(py),
            Arg::B(b) => b.into_py_any(py),
            Arg::S(s) => s.into_py_any(py),
        };
        v.expect("plain values convert")
    }
}

impl Policy for PyPolicy {
    fn name(&self) -> &'static str {
        self.name
    }

    fn task_new(&mut self, sys: &mut Sys, t: TaskId, parent: Option<TaskId>) {
        if self.defined.task_new {
            self.call(sys, "task_new", [Arg::U(t as u64), Arg::Opt(parent)], ignored);
        }
    }

    fn select_cpu(&mut self, sys: &mut Sys, t: TaskId, prev: CpuId, kind: WakeKind) -> CpuId {
        if !self.defined.select_cpu {
            return schedlab_sim::policy::idle_first(sys, t, prev);
        }
        let new = matches!(kind, WakeKind::New);
        match self.call(sys, "select_cpu", [Arg::U(t as u64), Arg::U(prev as u64), Arg::B(new)], int_or_none) {
            Some(Some(cpu)) => cpu,
            Some(None) => {
                sys.fail("the Python hook select_cpu returned None: return a CPU".into());
                prev
            }
            None => prev,
        }
    }

    fn enqueue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, how: Enqueue) {
        let how = match how {
            Enqueue::New => "new",
            Enqueue::Wakeup => "wakeup",
            Enqueue::Migrate => "migrate",
        };
        self.call(sys, "enqueue", [Arg::U(cpu as u64), Arg::U(t as u64), Arg::S(how)], ignored);
    }

    fn dequeue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, why: Dequeue) {
        let why = match why {
            Dequeue::Sleep => "sleep",
            Dequeue::Exit => "exit",
        };
        self.call(sys, "dequeue", [Arg::U(cpu as u64), Arg::U(t as u64), Arg::S(why)], ignored);
    }

    fn pick_next(&mut self, sys: &mut Sys, cpu: CpuId) -> Option<TaskId> {
        self.call(sys, "pick", [Arg::U(cpu as u64)], int_or_none).flatten()
    }

    fn put_prev(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, runnable: bool) {
        if self.defined.put_prev {
            self.call(sys, "put_prev", [Arg::U(cpu as u64), Arg::U(t as u64), Arg::B(runnable)], ignored);
        } else {
            sys.fail(format!(
                "a real-time task took CPU {cpu} from task {t}: define put_prev(sys, cpu, task, runnable) to put it \
                 back"
            ));
        }
    }

    fn account(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, delta: Nanos) {
        if self.defined.account {
            self.call(sys, "account", [Arg::U(cpu as u64), Arg::U(t as u64), Arg::U(delta)], ignored);
        }
    }

    fn tick(&mut self, sys: &mut Sys, cpu: CpuId, curr: TaskId) {
        if self.defined.tick {
            self.call(sys, "tick", [Arg::U(cpu as u64), Arg::U(curr as u64)], ignored);
        }
    }

    fn wakeup_preempt(&mut self, sys: &mut Sys, cpu: CpuId, curr: TaskId, woken: TaskId) -> bool {
        if !self.defined.wakeup_preempt {
            return false;
        }
        let args = [Arg::U(cpu as u64), Arg::U(curr as u64), Arg::U(woken as u64)];
        self.call(sys, "wakeup_preempt", args, truth).unwrap_or(false)
    }

    fn yield_task(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId) {
        if self.defined.yield_task {
            self.call(sys, "yield_task", [Arg::U(cpu as u64), Arg::U(t as u64)], ignored);
        }
    }

    fn balance(&mut self, sys: &mut Sys, cpu: CpuId, idle: bool) {
        if self.defined.balance {
            self.call(sys, "balance", [Arg::U(cpu as u64), Arg::B(idle)], ignored);
        }
    }

    fn newidle_balance(&mut self, sys: &mut Sys, cpu: CpuId) {
        if self.defined.newidle_balance {
            self.call(sys, "newidle_balance", [Arg::U(cpu as u64)], ignored);
        }
    }

    fn timer(&mut self, sys: &mut Sys, token: u64) {
        if self.defined.timer {
            self.call(sys, "timer", [Arg::U(token)], ignored);
        }
    }
}
