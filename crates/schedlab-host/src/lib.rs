//! The host runner: a workload's task programs as real threads on this
//! machine's kernel, measured into the same [`Report`] the simulator fills.
//!
//! `run` bursts spin until the thread has been on a CPU for the burst (so a
//! burst is CPU time received, as in the simulator; see [`burn`]); sleeps and
//! timers are absolute `clock_nanosleep`s with 1 ns timer slack; channels
//! are pipes whose 8-byte messages carry the sender's timestamp, so a
//! woken reader knows its wakeup latency. Nice, policy, affinity and custom
//! slices go through the real syscalls; groups through the cgroup cpu
//! controller where it can be used per thread. Per-thread CPU time comes
//! from the thread CPU clocks, switches from getrusage(RUSAGE_THREAD),
//! migrations and run delay from /proc; with tracefs, a private instance
//! records sched_switch for exact switch counts and run time per switch.
//! Threads, pipes, cgroups and the trace instance are all gone when `run`
//! returns, after an error or Ctrl-C too.

pub mod calibrate;
mod cgroup;
pub mod info;
pub mod leftovers;
pub mod signals;
mod sync;
mod sys;
mod tracing;

use schedlab_sim::engine::{TaskRng, task_rng};
use schedlab_sim::formats::ftrace::{SchedEvent, SchedEventKind};
use schedlab_sim::report::{CpuReport, HostInfo, ReportFrame, TaskRaw, assemble};
use schedlab_sim::workload::{Op, SchedPolicy};
use schedlab_sim::{Nanos, Report, Workload, report::Hist};
use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error(
        "the workload asks for {want} CPUs but this machine lets schedlab use {have}: pass --cpus {have} or fewer, or use a smaller workload"
    )]
    TooManyCpus { want: u32, have: usize },
    #[error("task '{task}': {message}")]
    Attribute { task: String, message: String },
    #[error("{0}")]
    Setup(String),
    /// A stop signal arrived before the run's window opened: nothing was
    /// measured, and there is no report to print.
    #[error("interrupted by {} before the run started: nothing was measured", signals::name(*.0))]
    Interrupted(libc::c_int),
    /// A stop signal cut the run short after its window opened: what was
    /// measured is reported, and the exit status says it was cut.
    #[error("interrupted by {}: the report covers the run up to the signal", signals::name(*.0))]
    CutShort(libc::c_int),
}

#[derive(Clone, Debug)]
pub struct HostOptions {
    /// Record sched events with tracefs when it is there.
    pub tracing: bool,
    /// Create the workload's cgroups when the machine permits.
    pub groups: bool,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions { tracing: true, groups: true }
    }
}

/// Message a pipe carries to make its reader stop.
const STOP: u64 = u64::MAX;

/// SCHED_FIFO for the calling thread while it lives, SCHED_OTHER after.
struct ControllerPriority;

impl ControllerPriority {
    fn raise() -> Result<ControllerPriority, String> {
        sys::set_policy(0, libc::SCHED_FIFO, 50, "SCHED_FIFO for the controller thread")?;
        Ok(ControllerPriority)
    }
}

impl Drop for ControllerPriority {
    fn drop(&mut self) {
        let _ = sys::set_policy(0, libc::SCHED_OTHER, 0, "SCHED_OTHER");
    }
}

#[derive(Default)]
struct ThreadResult {
    task: u32,
    spec: u32,
    tid: i32,
    created: Nanos,
    exited: Option<Nanos>,
    cpu_time: Nanos,
    voluntary: u64,
    involuntary: u64,
    migrations: Option<u64>,
    run_delay: Option<u64>,
    wakeups: u64,
    lat_sum: Nanos,
    lat_max: Nanos,
    lat: Hist,
    work: Nanos,
    runs: u64,
}

struct Shared {
    w: Workload,
    /// Host CPU of each workload CPU.
    cpu_map: Vec<usize>,
    pipes: Vec<sys::Pipe>,
    conds: Vec<sync::Cond>,
    barriers: Vec<sync::Barrier>,
    stop: AtomicBool,
    t0: AtomicU64,
    end: AtomicU64,
    /// Initial task threads set up and waiting at `go`.
    arrived: AtomicU32,
    go: sys::Gate,
    next_task: AtomicU32,
    /// Task threads that have not finished their program.
    live: AtomicU32,
    spec_instances: Vec<AtomicU32>,
    results: Mutex<Vec<ThreadResult>>,
    errors: Mutex<Vec<HostError>>,
    handles: Mutex<Vec<JoinHandle<()>>>,
    cgroups: Option<cgroup::Cgroups>,
    spins_per_ns: f64,
    /// Threads that may still be created (forks included) before a limit
    /// of the machine, named by `thread_limit`, would make creation fail or
    /// abort the process.
    thread_budget: AtomicU64,
    thread_limit: String,
}

/// Spin iterations per nanosecond, roughly: it only sizes the pieces a
/// burst spins between clock reads.
fn calibrate_spin() -> f64 {
    let mut n = 100_000u64;
    loop {
        let start = sys::now();
        spin(n);
        let took = sys::now() - start;
        if took >= 5_000_000 || n > 1 << 40 {
            return (n as f64 / took.max(1) as f64).max(1e-3);
        }
        n *= 4;
    }
}

/// Length of one spin piece between reads of the clock.
const SPIN_PIECE_NS: f64 = 2_000.0;
/// A gap between two clock reads longer than this was a preemption, not
/// running time.
const PREEMPTED_GAP_NS: u64 = 100_000;

/// Burns `burst` ns of CPU time. The CPU time is measured on the
/// CLOCK_MONOTONIC vDSO (no system call): reading the thread CPU clock
/// would enter the kernel, run update_curr() and end slices at their exact
/// length instead of at the tick, which a real busy loop does not get; and
/// counting iterations drifts with what the SMT sibling does. A gap between
/// reads longer than PREEMPTED_GAP_NS is time the thread was not running.
/// Returns false when the run's end stopped the burst.
fn burn(sh: &Shared, burst: Nanos) -> bool {
    let piece = ((SPIN_PIECE_NS * sh.spins_per_ns) as u64).max(1);
    let mut left = burst as i64;
    let mut last = sys::now();
    while left > 0 {
        spin(piece);
        let now = sys::now();
        let gap = now - last;
        last = now;
        left -= if gap < PREEMPTED_GAP_NS { gap as i64 } else { SPIN_PIECE_NS as i64 };
        if sh.stop.load(Ordering::Relaxed) {
            return false;
        }
    }
    true
}

#[inline(never)]
fn spin(n: u64) {
    for i in 0..n {
        std::hint::black_box(i);
    }
}

fn apply_attributes(sh: &Shared, spec: u32, instance: u32, tid: i32) -> Result<(), String> {
    let s = &sh.w.tasks[spec as usize];
    let cpus: Vec<usize> = match &sh.w.instance_affinity(spec, instance) {
        Some(set) => set.iter().map(|c| sh.cpu_map[c as usize]).collect(),
        None => sh.cpu_map.clone(),
    };
    sys::set_affinity(tid, &cpus)?;
    match s.policy {
        // Explicitly, since a thread inherits its creator's policy, and
        // schedlab itself may run under chrt.
        SchedPolicy::Normal => sys::set_policy(tid, libc::SCHED_OTHER, 0, "SCHED_OTHER")?,
        SchedPolicy::Batch => sys::set_policy(tid, libc::SCHED_BATCH, 0, "SCHED_BATCH")?,
        SchedPolicy::Idle => sys::set_policy(tid, libc::SCHED_IDLE, 0, "SCHED_IDLE")?,
        SchedPolicy::Iso => unreachable!("SCHED_ISO is refused before any thread starts"),
        SchedPolicy::Fifo(p) => sys::set_policy(tid, libc::SCHED_FIFO, p as i32, "SCHED_FIFO")?,
        SchedPolicy::Rr(p) => sys::set_policy(tid, libc::SCHED_RR, p as i32, "SCHED_RR")?,
    }
    if !s.policy.is_rt() && s.policy != SchedPolicy::Idle && s.nice != 0 {
        sys::set_nice(tid, s.nice)?;
    }
    if let Some(slice) = s.slice {
        sys::set_slice(tid, s.nice, slice)?;
    }
    if let Some(cg) = &sh.cgroups {
        cg.attach(s.group, tid)?;
    }
    Ok(())
}

/// Stack of a task thread: the programs recurse nowhere.
pub(crate) const TASK_STACK: usize = 128 * 1024;

fn spawn_task(sh: &Arc<Shared>, spec: u32, at_barrier: bool) -> Result<(), HostError> {
    if sh.thread_budget.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_err() {
        return Err(HostError::Setup(format!(
            "task '{}': no thread created, the machine's limit is reached: {}",
            sh.w.tasks[spec as usize].name, sh.thread_limit
        )));
    }
    let task = sh.next_task.fetch_add(1, Ordering::SeqCst);
    sh.live.fetch_add(1, Ordering::SeqCst);
    let instance = sh.spec_instances[spec as usize].fetch_add(1, Ordering::SeqCst);
    let shared = Arc::clone(sh);
    let name = format!("sl-{}", sh.w.tasks[spec as usize].name);
    let handle = std::thread::Builder::new()
        .stack_size(TASK_STACK)
        .spawn(move || task_thread(shared, task, spec, instance, at_barrier, name))
        .map_err(|e| HostError::Setup(format!("cannot create thread {task}: {e} (raise ulimit -u?)")))?;
    sh.handles.lock().expect("no thread panics holding the lock").push(handle);
    Ok(())
}

fn task_thread(sh: Arc<Shared>, task: u32, spec: u32, instance: u32, at_barrier: bool, name: String) {
    let tid = sys::gettid();
    signals::block_in_this_thread();
    sys::set_thread_name(&name);
    sys::set_min_timer_slack();
    if let Err(message) = apply_attributes(&sh, spec, instance, tid) {
        let task_name = sh.w.tasks[spec as usize].name.clone();
        sh.errors.lock().expect("lock").push(HostError::Attribute { task: task_name, message });
    }
    if at_barrier {
        sh.arrived.fetch_add(1, Ordering::SeqCst);
        sh.go.wait();
    }
    let t0 = sh.t0.load(Ordering::SeqCst);
    if sh.stop.load(Ordering::SeqCst) && t0 == 0 {
        // The run never started (setup failed).
        sh.live.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let mut rng = task_rng(sh.w.seed, task);
    // A task exists from its intended start (t0 plus its start offset; a
    // forked one from now): with thousands of threads on few CPUs, a thread
    // may first get a CPU long after that, which is run delay, not a later
    // birth.
    let start = if at_barrier { t0 + sh.w.tasks[spec as usize].start.sample(&mut rng) } else { sys::now() };
    while sys::now() < start && !sh.stop.load(Ordering::SeqCst) {
        sys::sleep_until(start);
    }
    if sh.stop.load(Ordering::SeqCst) {
        // The run ended before this thread first got a CPU: it existed all
        // along with nothing to show, as a starved task does.
        let created = start.saturating_sub(t0);
        sh.results.lock().expect("lock").push(ThreadResult { task, spec, tid, created, ..ThreadResult::default() });
        sh.live.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let cpu0 = sys::thread_cpu_time();
    let ru0 = sys::thread_rusage();
    let mig0 = sys::task_sched_field(tid, "se.nr_migrations");
    let delay0 = sys::task_run_delay(tid);
    let mut r = ThreadResult { task, spec, tid, created: start.saturating_sub(t0), ..ThreadResult::default() };
    let finished = run_program(&sh, spec, &mut rng, &mut r);
    let end = sh.end.load(Ordering::SeqCst);
    if finished {
        r.exited = Some(sys::now().min(end).saturating_sub(t0));
    }
    r.cpu_time = sys::thread_cpu_time() - cpu0;
    let ru = sys::thread_rusage();
    r.voluntary = ru.voluntary - ru0.voluntary;
    r.involuntary = ru.involuntary - ru0.involuntary;
    r.migrations = sys::task_sched_field(tid, "se.nr_migrations").zip(mig0).map(|(a, b)| a - b);
    r.run_delay = sys::task_run_delay(tid).zip(delay0).map(|(a, b)| a - b);
    sh.results.lock().expect("lock").push(r);
    sh.live.fetch_sub(1, Ordering::SeqCst);
}

fn record_latency(r: &mut ThreadResult, lat: Nanos) {
    r.wakeups += 1;
    r.lat_sum += lat;
    r.lat_max = r.lat_max.max(lat);
    r.lat.record(lat);
}

/// Sleeps to `target`; false when the run ends first.
fn sleep_to(sh: &Shared, target: Nanos, r: &mut ThreadResult) -> bool {
    let end = sh.end.load(Ordering::SeqCst);
    if target >= end {
        sys::sleep_until(end);
        return false;
    }
    while !sys::sleep_until(target) {
        if sh.stop.load(Ordering::SeqCst) {
            return false;
        }
    }
    record_latency(r, sys::now().saturating_sub(target));
    true
}

/// Runs the task's program; true when it ended by itself (exit or end of
/// program), false when the run's end stopped it.
fn run_program(sh: &Arc<Shared>, spec: u32, rng: &mut TaskRng, r: &mut ThreadResult) -> bool {
    let program = &sh.w.tasks[spec as usize].program;
    let mut pc = 0usize;
    let mut loops: Vec<(usize, u64)> = Vec::new();
    let mut timer_next: Vec<Option<Nanos>> = Vec::new();
    let started = sys::now();
    while let Some(op) = program.get(pc) {
        pc += 1;
        if sh.stop.load(Ordering::Relaxed) {
            return false;
        }
        match op {
            Op::Run(d) => {
                let burst = d.sample(rng);
                r.runs += 1;
                if !burn(sh, burst) {
                    return false;
                }
                r.work += burst;
            }
            Op::Sleep(d) => {
                let target = sys::now() + d.sample(rng);
                if !sleep_to(sh, target, r) {
                    return false;
                }
            }
            Op::Timer { period, slot, mode } => {
                let (period, slot) = (*period, *slot as usize);
                if timer_next.len() <= slot {
                    timer_next.resize(slot + 1, None);
                }
                let next = match mode.next_expiry(timer_next[slot], period, started, sys::now()) {
                    Ok(next) => next,
                    Err(last) => {
                        timer_next[slot] = Some(last);
                        continue;
                    }
                };
                timer_next[slot] = Some(next);
                if !sleep_to(sh, next, r) {
                    return false;
                }
            }
            Op::Wait(ch) => {
                let pipe = &sh.pipes[*ch as usize];
                let mut avail: libc::c_int = 0;
                // SAFETY: FIONREAD writes an int.
                unsafe { libc::ioctl(pipe.read, libc::FIONREAD, &mut avail) };
                let blocked = avail < 8;
                match pipe.recv() {
                    Some(STOP) | None => return false,
                    Some(sent) if blocked => record_latency(r, sys::now().saturating_sub(sent)),
                    Some(_) => {}
                }
            }
            Op::Signal(ch) => {
                if !sh.pipes[*ch as usize].send(sys::now()) {
                    return false;
                }
            }
            Op::CondWait { cond, mutex } => {
                let c = &sh.conds[*cond as usize];
                let ticket = c.enter();
                if let Some(m) = mutex
                    && !sh.pipes[*m as usize].send(sys::now())
                {
                    return false;
                }
                match c.wait(ticket, &sh.stop) {
                    Some(lat) => record_latency(r, lat),
                    None => return false,
                }
            }
            Op::CondSignal(c) => sh.conds[*c as usize].signal(),
            Op::CondBroadcast(c) => sh.conds[*c as usize].broadcast(),
            Op::Barrier(b) => {
                if !sh.barriers[*b as usize].arrive(&sh.stop) {
                    return false;
                }
            }
            Op::Yield => sys::sched_yield(),
            Op::Fork(child) => {
                if let Err(e) = spawn_task(sh, *child, false) {
                    sh.errors.lock().expect("lock").push(e);
                }
            }
            Op::Exit => return true,
            Op::LoopStart { count, .. } => loops.push((pc - 1, count.unwrap_or(u64::MAX))),
            Op::LoopEnd { start } => {
                let (_, left) = loops.last_mut().expect("LoopEnd pairs with LoopStart");
                if *left != u64::MAX {
                    *left -= 1;
                }
                if *left == 0 {
                    loops.pop();
                } else {
                    pc = *start as usize + 1;
                }
            }
        }
    }
    true
}

/// What `record` captured.
pub struct Recording {
    /// The trace in tracefs's text layout.
    pub text: String,
    /// Events the ring buffers dropped (a replay of a trace with drops is
    /// missing bursts).
    pub overrun: u64,
    pub exit_status: std::process::ExitStatus,
    /// The stop signal that ended the recording early, passed on to the
    /// command; the trace up to then is kept.
    pub interrupted: Option<libc::c_int>,
    /// Leftovers of killed runs that were removed first.
    pub warnings: Vec<String>,
}

/// How long a command that was passed a stop signal has to exit before
/// it is killed.
const COMMAND_STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs `command` with the machine's sched events recorded through a
/// private tracefs instance: everything that ran, so that a replay has the
/// command's competition too (a filtered trace sees other tasks only when
/// they switch with the command's, and cannot tell how long they ran).
/// A stop signal is passed on to the command; the recording ends with it,
/// and the instance is removed on every path.
pub fn record(command: &[String]) -> Result<Recording, HostError> {
    let _signals = signals::StopSignals::install();
    let (program, args) = command
        .split_first()
        .ok_or_else(|| HostError::Setup("nothing to record: give a command after --, e.g. -- make -j4".into()))?;
    let warnings = leftovers::sweep();
    let nr_cpus = sys::allowed_cpus().len().max(1);
    let tracer = tracing::Tracer::with_events(nr_cpus, &tracing::RECORD_EVENTS, "schedlab record", false)
        .map_err(HostError::Setup)?;
    tracer.set_on(true);
    // The command gets a process group of its own, so that a stop signal
    // reaches everything it started (a shell's children that ignore
    // signals too, at the grace period's end) and nothing of schedlab's:
    // a terminal's Ctrl-C reaches schedlab, which passes it on.
    let mut child = std::process::Command::new(program)
        .args(args)
        .process_group(0)
        .spawn()
        .map_err(|e| HostError::Setup(format!("cannot run '{program}': {e}")))?;
    let group = child.id() as libc::pid_t;
    let mut interrupted = None;
    let mut deadline = None;
    let exit_status = loop {
        if let Some(status) = child.try_wait().map_err(|e| HostError::Setup(format!("waiting for '{program}': {e}")))? {
            // A signal that came as the command ended still ends the
            // recording early, and says so.
            interrupted = interrupted.or_else(signals::received);
            if interrupted.is_some() {
                // SAFETY: the group is the command's own; what is left of
                // it (a background child) goes with it.
                unsafe { libc::killpg(group, libc::SIGKILL) };
            }
            break status;
        }
        if interrupted.is_none()
            && let Some(sig) = signals::received()
        {
            interrupted = Some(sig);
            // SAFETY: signalling the command's own process group, whose
            // leader has not been reaped.
            unsafe { libc::killpg(group, sig) };
            deadline = Some(std::time::Instant::now() + COMMAND_STOP_GRACE);
        }
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            // SAFETY: as above; everything in the group that ignored the
            // signal.
            unsafe { libc::killpg(group, libc::SIGKILL) };
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    tracer.set_on(false);
    let (text, overrun) = tracer.text().map_err(HostError::Setup)?;
    Ok(Recording { text, overrun, exit_status, interrupted, warnings })
}

pub struct HostRun {
    pub report: Report,
    /// Things the user should know: groups or tracing not used, and why.
    pub warnings: Vec<String>,
}

/// Runs the workload on this machine for its duration (or until a stop
/// signal: Ctrl-C, SIGTERM, SIGHUP).
pub fn run(w: &Workload, opts: &HostOptions) -> Result<HostRun, HostError> {
    // From the first line: a signal during setup must still reach the
    // cleanup below rather than kill the process with cgroups and a trace
    // instance in place.
    let _signals = signals::StopSignals::install();
    let allowed = sys::allowed_cpus();
    let want = w.nr_cpus();
    if want as usize > allowed.len() {
        return Err(HostError::TooManyCpus { want, have: allowed.len() });
    }
    if let Some(t) = w.tasks.iter().find(|t| t.policy == SchedPolicy::Iso) {
        return Err(HostError::Attribute {
            task: t.name.clone(),
            message: "policy \"iso\" (SCHED_ISO) exists only in BFS and MuQSS (-ck) kernels and this kernel has \
                      none: run it in the simulation, or use policy \"normal\" on the host"
                .into(),
        });
    }
    let cpu_map: Vec<usize> = allowed[..want as usize].to_vec();
    let kernel = info::read();
    let mut warnings = leftovers::sweep();
    let mut notes = kernel.notes.clone();

    let mut cgroups_state = "the workload has no groups".to_string();
    let cgroups = if w.groups.len() > 1 && opts.groups {
        match cgroup::Cgroups::setup(&w.groups) {
            Ok(cg) => {
                cgroups_state = "cgroup v1 cpu controller (cpu.shares, cpu.cfs_quota_us)".into();
                Some(cg)
            }
            Err(why) => {
                warnings.push(format!("groups: {why}"));
                cgroups_state = why;
                None
            }
        }
    } else {
        if w.groups.len() > 1 {
            cgroups_state = "groups turned off".into();
        }
        None
    };
    let (tracer, tracing_state) = if opts.tracing {
        match tracing::Tracer::new(allowed.len()) {
            Ok(t) => (Some(t), "tracefs instance (sched_switch, sched_wakeup, sched_migrate_task)".to_string()),
            Err(why) => {
                warnings.push(format!("tracing: {why}"));
                (None, why)
            }
        }
    } else {
        (None, "tracing turned off".to_string())
    };

    let pipes = (0..w.channels.len())
        .map(|_| sys::Pipe::new())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| HostError::Setup(format!("cannot create a pipe: {e}")))?;
    for (pipe, chan) in pipes.iter().zip(&w.channels) {
        // A mutex starts unlocked: its one token is in the pipe.
        for _ in 0..chan.initial {
            pipe.send(0);
        }
    }
    let initial: Vec<u32> = w
        .tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.template)
        .flat_map(|(i, t)| std::iter::repeat_n(i as u32, t.count as usize))
        .collect();
    let (capacity, limit) = sys::thread_capacity();
    // The controller and the kernel's own threads need a little room too.
    let headroom = 16;
    if initial.len() as u64 + headroom > capacity {
        return Err(HostError::Setup(format!(
            "the workload starts {} threads at once, but this machine lets schedlab create about {} more: {limit}; \
             use fewer tasks",
            initial.len(),
            capacity.saturating_sub(headroom)
        )));
    }
    let sh = Arc::new(Shared {
        w: w.clone(),
        cpu_map,
        pipes,
        conds: w.conds.iter().map(|_| sync::Cond::default()).collect(),
        barriers: w.barriers.iter().map(|b| sync::Barrier::new(b.users)).collect(),
        stop: AtomicBool::new(false),
        t0: AtomicU64::new(0),
        end: AtomicU64::new(u64::MAX),
        arrived: AtomicU32::new(0),
        go: sys::Gate::default(),
        next_task: AtomicU32::new(0),
        live: AtomicU32::new(0),
        spec_instances: w.tasks.iter().map(|_| AtomicU32::new(0)).collect(),
        results: Mutex::new(Vec::new()),
        errors: Mutex::new(Vec::new()),
        handles: Mutex::new(Vec::new()),
        cgroups,
        spins_per_ns: calibrate_spin(),
        thread_budget: std::sync::atomic::AtomicU64::new(capacity - headroom),
        thread_limit: limit,
    });
    let mut spawned = 0;
    for &spec in &initial {
        if let Err(e) = spawn_task(&sh, spec, true) {
            // Release the threads already waiting, then report.
            sh.stop.store(true, Ordering::SeqCst);
            sh.errors.lock().expect("lock").push(e);
            break;
        }
        spawned += 1;
    }
    // The controller (this thread) ends the run: as an ordinary task among
    // thousands of runnable ones it would wake seconds late, and the run
    // with it. It only sleeps and keeps books, so it runs SCHED_FIFO,
    // raised after the spawning so that no task thread inherits it.
    let _controller = match ControllerPriority::raise() {
        Ok(g) => Some(g),
        Err(why) => {
            warnings.push(format!("controller: {why}; with more runnable tasks than CPUs the run may end late"));
            None
        }
    };
    while sh.arrived.load(Ordering::SeqCst) < spawned {
        sys::sleep_until(sys::now() + 1_000_000);
    }
    let failed = !sh.errors.lock().expect("lock").is_empty();
    if failed {
        sh.stop.store(true, Ordering::SeqCst);
    }
    if let Some(t) = &tracer {
        t.set_on(true);
    }
    // The gate is a futex, and opening it wakes every thread at once: under
    // a policy that lets a woken futex waiter preempt (BORE 6.5.5 gives it a
    // deadline of now) that is a burst of a switch per thread, which no
    // workload asked for and a simulation, whose tasks are runnable at t=0,
    // does not have. So t0 lies ahead of the opening, far enough for every
    // thread to go back to sleep until it: at t0 they all become runnable
    // from their timers together, and the analysis counts from t0.
    let t0 = sys::now() + START_MARGIN_NS + START_MARGIN_PER_THREAD_NS * spawned as u64;
    sh.t0.store(t0, Ordering::SeqCst);
    let end = t0 + w.duration;
    sh.end.store(end, Ordering::SeqCst);
    sh.go.open();
    while sys::now() < t0 && signals::received().is_none() {
        sys::sleep_until(t0);
    }
    let stat0 = sys::cpu_times();
    if !failed {
        // Wake every 250 ms to see whether every task has exited: a finite
        // workload ends there, with its makespan.
        loop {
            let now = sys::now();
            if now >= end || signals::received().is_some() || sh.live.load(Ordering::SeqCst) == 0 {
                break;
            }
            sys::sleep_until(end.min(now + 250_000_000));
        }
    }
    let stat1 = sys::cpu_times();
    let stop = sys::now().min(end);
    sh.stop.store(true, Ordering::SeqCst);
    let nr_threads = sh.handles.lock().expect("lock").len() + 16;
    for p in &sh.pipes {
        p.make_write_nonblocking();
        for _ in 0..nr_threads {
            if !p.send(STOP) {
                break;
            }
        }
    }
    loop {
        let batch: Vec<JoinHandle<()>> = std::mem::take(&mut *sh.handles.lock().expect("lock"));
        if batch.is_empty() {
            break;
        }
        for h in batch {
            let _ = h.join();
        }
    }
    if let Some(e) = sh.errors.lock().expect("lock").drain(..).next() {
        return Err(e);
    }
    if let Some(sig) = signals::received().filter(|_| stop < end) {
        if stop <= t0 {
            return Err(HostError::Interrupted(sig));
        }
        notes.push(format!("interrupted by {} after {:.3} s", signals::name(sig), (stop - t0) as f64 / 1e9));
    }
    let trace = match &tracer {
        Some(t) => match t.collect() {
            Ok((events, overrun)) => {
                if overrun > 0 {
                    notes.push(format!("the trace buffers dropped {overrun} events: switch figures are partial"));
                }
                Some(events)
            }
            Err(e) => {
                warnings.push(format!("tracing: {e}"));
                None
            }
        },
        None => None,
    };
    drop(tracer);

    let results = std::mem::take(&mut *sh.results.lock().expect("lock"));
    let (report, foreign) = build_report(
        &sh,
        results,
        trace.as_deref(),
        t0,
        stop,
        &stat0,
        &stat1,
        HostInfo {
            kernel_release: kernel.release.clone(),
            machine: "this machine".into(),
            hz: kernel.hz,
            preempt: kernel.preempt.clone(),
            clocksource: kernel.clocksource.clone(),
            tracing: tracing_state,
            cgroups: cgroups_state,
            notes,
            decisions: None,
        },
        kernel.tunables.clone(),
    );
    warnings.extend(foreign);
    Ok(HostRun { report, warnings })
}

struct TraceFigures {
    switches: u64,
    /// Involuntary switches of our threads to another process's thread (a
    /// kernel thread, a daemon): preemption the workload did not cause.
    preempted_by_others: u64,
    per_tid: HashMap<i32, (u64, u64, u64)>,
    rps: Vec<Hist>,
    /// Time on a CPU of each of our threads inside [t0, stop].
    on_cpu: HashMap<i32, Nanos>,
}

/// Switches, voluntary/involuntary splits, migrations and run time per
/// switch of our threads, from the trace, inside [t0, stop].
fn analyse_trace(
    events: &[SchedEvent],
    spec_of: &HashMap<i32, u32>,
    nr_specs: usize,
    t0: Nanos,
    stop: Nanos,
) -> TraceFigures {
    let mut f = TraceFigures {
        switches: 0,
        preempted_by_others: 0,
        per_tid: HashMap::new(),
        rps: vec![Hist::default(); nr_specs],
        on_cpu: HashMap::new(),
    };
    let mut running: HashMap<u32, (i32, Nanos)> = HashMap::new();
    let overlap = |since: Nanos, until: Nanos| until.min(stop).saturating_sub(since.max(t0));
    for ev in events {
        let inside = ev.ts >= t0 && ev.ts <= stop;
        match &ev.kind {
            SchedEventKind::Switch { prev_pid, prev_state, next_pid, .. } => {
                let (prev, next) = (*prev_pid as i32, *next_pid as i32);
                let next_ours = spec_of.contains_key(&next);
                if let Some(&spec) = spec_of.get(&prev) {
                    if let Some((tid, since)) = running.remove(&ev.cpu)
                        && tid == prev
                    {
                        *f.on_cpu.entry(tid).or_default() += overlap(since, ev.ts);
                        if inside {
                            f.rps[spec as usize].record(ev.ts - since.max(t0));
                        }
                    }
                    if inside {
                        f.switches += 1;
                        let e = f.per_tid.entry(prev).or_default();
                        if prev_state.starts_with('R') {
                            e.1 += 1;
                            if next != 0 && !next_ours {
                                f.preempted_by_others += 1;
                            }
                        } else {
                            e.0 += 1;
                        }
                    }
                }
                if next_ours {
                    running.insert(ev.cpu, (next, ev.ts));
                } else {
                    running.remove(&ev.cpu);
                }
            }
            SchedEventKind::Migrate { pid, .. } if inside && spec_of.contains_key(&(*pid as i32)) => {
                f.per_tid.entry(*pid as i32).or_default().2 += 1;
            }
            _ => {}
        }
    }
    for (tid, since) in running.into_values() {
        *f.on_cpu.entry(tid).or_default() += overlap(since, stop);
    }
    f
}

/// Time between opening the start gate and t0: enough for every woken
/// thread to reach its sleep until t0, even under TCG (tens of
/// microseconds each).
const START_MARGIN_NS: u64 = 20_000_000;
const START_MARGIN_PER_THREAD_NS: u64 = 100_000;

/// Other processes' share of the workload's CPUs above which a report
/// says that they competed with it.
const FOREIGN_LOAD_WARN_PCT: f64 = 5.0;

/// Per-CPU busy and idle time of the workload's CPUs over `duration`, and
/// the CPU time other processes took on them. As in a simulation, busy is
/// the workload's own threads' CPU time and busy + idle = duration on each
/// CPU; /proc/stat (machine-wide, in jiffies) only says how that time
/// spread over the CPUs, and what it counts beyond the workload's threads
/// is other processes'.
fn cpu_accounting(
    cpu_map: &[usize],
    results: &[ThreadResult],
    stat0: &[(u64, u64)],
    stat1: &[(u64, u64)],
    duration: Nanos,
    stat_count: u64,
) -> (Vec<CpuReport>, Nanos) {
    let jiffy_ns = 1_000_000_000 / sys::user_hz();
    let stat_busy: Vec<u64> = cpu_map
        .iter()
        .map(|&hc| {
            let (b0, _) = stat0.get(hc).copied().unwrap_or_default();
            let (b1, _) = stat1.get(hc).copied().unwrap_or_default();
            b1.saturating_sub(b0) * jiffy_ns / stat_count
        })
        .collect();
    let machine_busy: u64 = stat_busy.iter().sum();
    let own: u64 = results.iter().map(|r| r.cpu_time).sum();
    let own_busy = own.min(duration.saturating_mul(cpu_map.len() as u64));
    let per_cpu = stat_busy
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            let share = if machine_busy == 0 { 1.0 / cpu_map.len() as f64 } else { b as f64 / machine_busy as f64 };
            let busy_ns = ((own_busy as f64 * share) as u64).min(duration);
            CpuReport { cpu: i as u32, busy_ns, idle_ns: duration - busy_ns, switch_overhead_ns: 0 }
        })
        .collect();
    (per_cpu, machine_busy.saturating_sub(own))
}

/// The extra figure of a host report that says whether the kernel got its
/// timer ticks: /proc/stat's busy time on the workload's busy CPUs per
/// second they were not idle, in percent (the least of those CPUs). The
/// kernel counts busy time one tick at a time and idle time from the
/// clock (NO_HZ), so a CPU that lost ticks (a virtual CPU its host did not
/// run for longer than a jiffy: the missed ticks are skipped, not
/// delivered late) counts less busy time than it was busy, and every slice
/// that ends at a tick ran longer.
pub const TICKS_DELIVERED: &str = "ticks_delivered_pct";
/// Below this, the report says that ticks were lost: /proc/stat counts in
/// 10 ms units, 0.3% of a 3 s run.
const TICKS_LOST_WARN_PCT: f64 = 97.0;

/// The TICKS_DELIVERED figure over CPUs busy (not idle) for at least 95%
/// of `window`; None where none was. Only there does a lost tick show: a
/// CPU that idles often stops and restarts its tick (NO_HZ), and its short
/// busy stretches are sampled by ticks unevenly (a cfs-6.1 guest passing a
/// token between two CPUs counted 45% of its busy time in ticks with no
/// tick lost). `stat_count` is how many times the kernel counts a
/// busy CPU's time (2 under MuQSS).
fn ticks_delivered_pct(
    cpu_map: &[usize],
    stat0: &[(u64, u64)],
    stat1: &[(u64, u64)],
    window: Nanos,
    stat_count: u64,
) -> Option<f64> {
    let unit = 1e9 / sys::user_hz() as f64;
    cpu_map
        .iter()
        .filter_map(|&hc| {
            let ((b0, i0), (b1, i1)) = (*stat0.get(hc)?, *stat1.get(hc)?);
            let busy = b1.saturating_sub(b0) as f64 * unit / stat_count as f64;
            let not_idle = window as f64 - i1.saturating_sub(i0) as f64 * unit;
            (not_idle >= window as f64 * 0.95).then(|| (busy * 100.0 / not_idle * 10.0).round() / 10.0)
        })
        .reduce(f64::min)
}

/// The run's report, and the warning that other processes competed with
/// it when they took FOREIGN_LOAD_WARN_PCT or more (also among its notes).
#[allow(clippy::too_many_arguments)]
fn build_report(
    sh: &Shared,
    mut results: Vec<ThreadResult>,
    trace: Option<&[SchedEvent]>,
    t0: Nanos,
    stop: Nanos,
    stat0: &[(u64, u64)],
    stat1: &[(u64, u64)],
    mut host: HostInfo,
    tunables: Vec<(String, i64)>,
) -> (Report, Option<String>) {
    let w = &sh.w;
    results.sort_by_key(|r| r.task);
    let spec_of: HashMap<i32, u32> = results.iter().map(|r| (r.tid, r.spec)).collect();
    let mut figures = trace.map(|ev| analyse_trace(ev, &spec_of, w.tasks.len(), t0, stop));
    if let Some(events) = trace {
        // The LLC of each host CPU the workload runs on.
        let mut llc = vec![None; sh.cpu_map.iter().max().map_or(0, |&c| c + 1)];
        for (i, &hc) in sh.cpu_map.iter().enumerate() {
            llc[hc] = Some(w.machine.topology.llc_of(i as u32));
        }
        let mut counter = schedlab_sim::report::decisions::DecisionCounter::new(llc, t0, stop);
        counter.feed_trace(events, |pid| spec_of.contains_key(&(pid as i32)));
        host.decisions = Some(counter.counts);
    }
    let rusage_switches: u64 = results.iter().map(|r| r.voluntary + r.involuntary).sum();
    if figures.as_ref().is_some_and(|f| f.switches == 0 && rusage_switches > 0) {
        // The trace missed our threads (a filter the kernel did not apply):
        // trust getrusage rather than report no switches.
        figures = None;
    }
    let muqss = sys::is_muqss();
    if muqss && let Some(f) = &figures {
        // MuQSS counts a thread's CPU clock in its niffies, which run at
        // least 2^30 ns per second of jiffies: 7-15% over the time there
        // was. The trace's switches time the runs on the kernel's clock.
        for r in results.iter_mut() {
            r.cpu_time = f.on_cpu.get(&r.tid).copied().unwrap_or(0);
        }
        host.notes.push(
            "task CPU times come from the sched trace: MuQSS's thread CPU clocks count its niffies, which run 7-15% \
             fast"
                .to_string(),
        );
    }
    let mut absent = Vec::new();
    if figures.is_none() {
        absent.push("runtime_per_switch (needs tracefs)".to_string());
    }
    let to_others_pct = figures.as_ref().map(|f| {
        let invol: u64 = f.per_tid.values().map(|e| e.1).sum();
        f.preempted_by_others as f64 * 100.0 / invol.max(1) as f64
    });
    let mut spec_lat = vec![Hist::default(); w.tasks.len()];
    let mut migrations_total = 0;
    let mut switches_total = 0;
    let mut raw = Vec::new();
    for r in &results {
        spec_lat[r.spec as usize].merge(&r.lat);
        let spec = &w.tasks[r.spec as usize];
        let (vol, invol, mig) = match &figures {
            Some(f) => {
                let e = f.per_tid.get(&r.tid).copied().unwrap_or_default();
                (e.0, e.1, e.2)
            }
            None => (r.voluntary, r.involuntary, r.migrations.unwrap_or(0)),
        };
        switches_total += vol + invol;
        migrations_total += mig;
        raw.push(TaskRaw {
            name: if spec.count > 1 || spec.template { format!("{}-{}", spec.name, r.task) } else { spec.name.clone() },
            spec: r.spec,
            cpu_time: r.cpu_time,
            created: r.created,
            exited: r.exited,
            run_delay: r.run_delay.unwrap_or(0),
            wakeups: r.wakeups,
            lat_sum: r.lat_sum,
            lat_max: r.lat_max,
            voluntary: vol,
            involuntary: invol,
            migrations: mig,
            work: r.work,
            runs: r.runs,
        });
    }
    if figures.is_none() && results.iter().any(|r| r.migrations.is_none()) {
        absent.push("migrations (needs tracefs or CONFIG_SCHED_DEBUG's /proc/PID/sched)".to_string());
    }
    if results.iter().any(|r| r.run_delay.is_none()) {
        absent.push("run_delay (needs CONFIG_SCHED_INFO's /proc/PID/schedstat)".to_string());
    }
    let finished = !results.is_empty() && results.iter().all(|r| r.exited.is_some());
    let duration = if finished { results.iter().filter_map(|r| r.exited).max().unwrap_or(0) } else { stop - t0 };
    let stat_count = if muqss {
        // pc_user_time()/pc_system_time() and account_process_tick() both
        // add a busy CPU's time to /proc/stat under MuQSS.
        host.notes.push("/proc/stat's busy time is halved: MuQSS counts a busy CPU's time there twice".to_string());
        2
    } else {
        1
    };
    let (per_cpu, other) = cpu_accounting(&sh.cpu_map, &results, stat0, stat1, duration, stat_count);
    let capacity = (stop - t0).max(1) as f64 * sh.cpu_map.len() as f64;
    let other_pct = other as f64 / capacity * 100.0;
    let foreign = (other_pct >= FOREIGN_LOAD_WARN_PCT).then(|| {
        format!(
            "other processes used {other_pct:.1}% of the workload's CPUs during the run: the figures include \
             their competition"
        )
    });
    host.notes.extend(foreign.clone());
    let ticks_pct = ticks_delivered_pct(&sh.cpu_map, stat0, stat1, stop - t0, stat_count);
    if let Some(pct) = ticks_pct.filter(|&p| p < TICKS_LOST_WARN_PCT) {
        host.notes.push(format!(
            "the busy CPUs took {pct:.1}% of their timer ticks: the kernel lost ticks (a virtual CPU its host did \
             not run for over a jiffy), which lengthens every slice that ends at a tick"
        ));
    }
    let frame = ReportFrame {
        source: "host".into(),
        scheduler: format!("linux {} (this machine)", host.kernel_release),
        workload: w.name.clone(),
        seed: w.seed,
        cpus: w.nr_cpus(),
        hz: host.hz.unwrap_or(0),
        stop: duration,
        finished,
        tunables,
        context_switches: switches_total,
        migrations: migrations_total,
        events: 0,
        per_cpu,
        extra: std::iter::once(("other_processes_cpu_pct", other_pct))
            .chain(to_others_pct.map(|p| ("involuntary_to_other_processes_pct", p)))
            .chain(ticks_pct.map(|p| (TICKS_DELIVERED, p)))
            .map(|(name, pct)| (name.to_string(), (pct * 10.0).round() / 10.0))
            .collect(),
        absent,
        host: Some(host),
    };
    let names: Vec<String> = w.tasks.iter().map(|t| t.name.clone()).collect();
    let spec_rps = figures.map(|f| f.rps).unwrap_or_else(|| vec![Hist::default(); w.tasks.len()]);
    (assemble(frame, raw, &names, &spec_lat, &spec_rps), foreign)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_ticks_show_as_busy_time_not_counted() {
        let hz = sys::user_hz();
        // A 3 s window; CPU 0 busy throughout with 6% of its ticks lost,
        // CPU 1 busy with every tick, CPU 2 idle most of the time.
        let window = 3_000_000_000;
        let stat0 = [(0, 0), (0, 0), (0, 0)];
        let stat1 = [(3 * hz * 94 / 100, 0), (3 * hz, 0), (hz / 10, 3 * hz - hz / 10)];
        let pct = ticks_delivered_pct(&[0, 1, 2], &stat0, &stat1, window, 1).unwrap();
        assert!((pct - 94.0).abs() < 0.5, "{pct}");
        assert_eq!(ticks_delivered_pct(&[1, 2], &stat0, &stat1, window, 1), Some(100.0));
        // An idle CPU says nothing of ticks, nor does one that idles
        // often: passing a token, busy 60% by the clock and 27% by ticks.
        assert_eq!(ticks_delivered_pct(&[2], &stat0, &stat1, window, 1), None);
        let token = [(3 * hz * 27 / 100, 3 * hz * 40 / 100)];
        assert_eq!(ticks_delivered_pct(&[0], &stat0[..1], &token, window, 1), None);
        // MuQSS counts busy time twice.
        let doubled = [(6 * hz, 0)];
        assert_eq!(ticks_delivered_pct(&[0], &stat0[..1], &doubled, window, 2), Some(100.0));
    }
}
