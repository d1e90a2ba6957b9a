//! The workload as threads: each task a thread that sets its attributes
//! (nice, policy, affinity, custom slice, cgroup) and runs its program
//! (`run` bursts that spin until the thread has had the burst's CPU time,
//! absolute `clock_nanosleep` sleeps and timers, pipes for channels whose
//! messages carry the sender's timestamp), the shared state they start and
//! stop by, and the controller's raised priority.

use crate::*;
use schedlab_sim::engine::{TaskRng, task_rng};
use schedlab_sim::workload::{Op, SchedPolicy};
use schedlab_sim::{Nanos, Workload, report::Hist};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Message a pipe carries to make its reader stop.
pub(crate) const STOP: u64 = u64::MAX;

/// SCHED_FIFO for the calling thread while it lives, SCHED_OTHER after.
pub(crate) struct ControllerPriority;

impl ControllerPriority {
    pub(crate) fn raise() -> Result<ControllerPriority, String> {
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
pub(crate) struct ThreadResult {
    pub(crate) task: u32,
    pub(crate) spec: u32,
    pub(crate) tid: i32,
    pub(crate) created: Nanos,
    pub(crate) exited: Option<Nanos>,
    pub(crate) cpu_time: Nanos,
    pub(crate) voluntary: u64,
    pub(crate) involuntary: u64,
    pub(crate) migrations: Option<u64>,
    pub(crate) run_delay: Option<u64>,
    pub(crate) wakeups: u64,
    pub(crate) lat_sum: Nanos,
    pub(crate) lat_max: Nanos,
    pub(crate) lat: Hist,
    pub(crate) work: Nanos,
    pub(crate) runs: u64,
    /// CPU time its run ops spun for, the one the run's end cut included:
    /// what its CPU clock is held against (`cpu_beyond_work_pct`).
    pub(crate) burnt: Nanos,
    /// Threads it forked.
    pub(crate) forks: u64,
    /// Times it called sched_yield.
    pub(crate) yields: u64,
    /// Whether it waited at the start gate (a thread the controller
    /// created before t0), not forked by another in the run.
    pub(crate) gated: bool,
    /// CPU time the thread used before its start (creating it, setting its
    /// attributes, its starting counts): under MuQSS and Project C a forked
    /// thread spends it from the half slice it inherited.
    pub(crate) cpu_before_start: Nanos,
    /// Of that, what it had used when it arrived at the start gate (its
    /// creation and attributes; the rest is its stack and counts after).
    pub(crate) cpu_at_gate: Nanos,
    /// A thread released by the start gate: how many times it went to
    /// sleep before t0 (its voluntary switches then: the gate, the sleep to
    /// t0 and any wait of its creation). BMQ boosts a task at each.
    pub(crate) sleeps_before_start: Option<u64>,
    /// Its timed sleeps that slept, as many as the room its controller
    /// made ([`sleep_stamps_room`]): its clock before the call and after
    /// the return, which the trace's switches split into the call, the
    /// sleep and the return (`timer_return_us`).
    pub(crate) sleeps: Vec<(Nanos, Nanos)>,
}

/// Sleeps a thread keeps the clock of at most: cyclictest's 1,000 a
/// second on a 3 s run, with room.
const SLEEP_STAMPS_MAX: usize = 4096;
/// And all threads together (16 MiB): a median needs far fewer.
const SLEEP_STAMPS_TOTAL: usize = 1 << 20;

/// Whether `op` sleeps to a time or for a while (on a timer).
pub(crate) fn timed_sleep(op: &Op) -> bool {
    matches!(op, Op::Sleep(_) | Op::Timer { .. })
}

/// The room for its sleeps' clocks a thread of each spec gets: none where
/// its program does not sleep. Made by whoever creates the thread, since
/// a task thread that allocates gets an arena of glibc's, mapped in the
/// run; reckoned once, not at every fork.
fn sleep_stamps_room(w: &Workload) -> Vec<usize> {
    let sleeps = |program: &[Op]| program.iter().any(timed_sleep);
    let sleepers: usize = w.tasks.iter().filter(|t| sleeps(&t.program)).map(|t| t.count.max(1) as usize).sum();
    let room = (SLEEP_STAMPS_TOTAL / sleepers.max(1)).min(SLEEP_STAMPS_MAX);
    w.tasks.iter().map(|t| if sleeps(&t.program) { room } else { 0 }).collect()
}

/// Where one task thread leaves its result.
pub(crate) type ResultSlot = Arc<Mutex<Option<ThreadResult>>>;

pub(crate) struct Shared {
    pub(crate) w: Workload,
    /// Host CPU of each workload CPU.
    pub(crate) cpu_map: Vec<usize>,
    pub(crate) pipes: Vec<sys::Pipe>,
    pub(crate) conds: Vec<sync::Cond>,
    pub(crate) barriers: Vec<sync::Barrier>,
    pub(crate) stop: AtomicBool,
    pub(crate) t0: AtomicU64,
    pub(crate) end: AtomicU64,
    /// Initial task threads set up and waiting at `go`.
    pub(crate) arrived: AtomicU32,
    pub(crate) go: sys::Gate,
    pub(crate) next_task: AtomicU32,
    /// Task threads that have not finished their program.
    pub(crate) live: AtomicU32,
    pub(crate) spec_instances: Vec<AtomicU32>,
    /// Per spec, how many sleeps' clocks a thread of it keeps.
    pub(crate) sleep_room: Vec<usize>,
    /// Each task thread's result, one slot a thread: a thread fills only
    /// its own, so that exiting threads never wait on one another for a
    /// shared list (fork-burst's 200 children did, 43 futex waits in a
    /// traced boot on 4 vCPUs).
    pub(crate) results: Mutex<Vec<ResultSlot>>,
    pub(crate) errors: Mutex<Vec<HostError>>,
    pub(crate) handles: Mutex<Vec<TaskThread>>,
    pub(crate) stacks: StackPool,
    pub(crate) cgroups: Option<cgroup::Cgroups>,
    pub(crate) spins_per_ns: f64,
    /// Threads that may still be created (forks included) before a limit
    /// of the machine, named by `thread_limit`, would make creation fail or
    /// abort the process.
    pub(crate) thread_budget: AtomicU64,
    pub(crate) thread_limit: String,
    /// The controller's CPU time when it began creating the task threads,
    /// and the priority /proc gave it then (task_prio(): Project C's BMQ
    /// adds the boost_prio its threads inherit). What it ran before a
    /// simulation's start deboosts BMQ's forker as it did the real one.
    pub(crate) controller_cpu_before_spawn: Nanos,
    pub(crate) controller_stat_priority: Option<i64>,
    /// The controller's CPU time per task thread it created, from the
    /// first creation to the last (ns; 0 until they are all created): a
    /// clone and what the runner does around it. Project C and MuQSS
    /// halve the forker's slice at each clone, so what it spends between
    /// two is what decides the halves its threads start with.
    pub(crate) controller_cpu_per_spawn: AtomicU64,
    /// The controller's thread id, which the trace names it by.
    pub(crate) controller_tid: i32,
    /// A sched trace records the run: it counts each thread's migrations
    /// and run delay, and the threads read nothing from /proc.
    pub(crate) traced: bool,
}

/// Spin iterations per nanosecond, roughly: it only sizes the pieces a
/// burst spins between clock reads.
pub(crate) fn calibrate_spin() -> f64 {
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
pub(crate) const SPIN_PIECE_NS: f64 = 2_000.0;

/// A gap between two clock reads longer than this was a preemption, not
/// running time.
pub(crate) const PREEMPTED_GAP_NS: u64 = 100_000;

/// Burns `burst` ns of CPU time. The CPU time is measured on the
/// CLOCK_MONOTONIC vDSO (no system call): reading the thread CPU clock
/// would enter the kernel, run update_curr() and end slices at their exact
/// length instead of at the tick, which a real busy loop does not get; and
/// counting iterations drifts with what the SMT sibling does. A gap between
/// reads longer than PREEMPTED_GAP_NS is time the thread was not running.
/// Returns how much of the burst it spun: all of it, unless the run's end
/// stopped it.
pub(crate) fn burn(sh: &Shared, burst: Nanos) -> Nanos {
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
            return burst.saturating_sub(left.max(0) as u64);
        }
    }
    burst
}

/// The thread's migrations and run delay so far, where the kernel shows them.
fn sched_counts(tid: i32) -> (Option<u64>, Option<u64>) {
    (sys::task_sched_field(tid, "se.nr_migrations"), sys::task_run_delay(tid))
}

#[inline(never)]
pub(crate) fn spin(n: u64) {
    for i in 0..n {
        std::hint::black_box(i);
    }
}

/// Where an instance of `spec` may run, as the kernel takes it; made by
/// the thread that creates it, so that the new thread allocates nothing.
pub(crate) fn affinity_of(sh: &Shared, spec: u32, instance: u32) -> (libc::cpu_set_t, bool) {
    match &sh.w.instance_affinity(spec, instance) {
        Some(set) => (sys::cpu_set(set.iter().map(|c| sh.cpu_map[c as usize])), true),
        None => (sys::cpu_set(sh.cpu_map.iter().copied()), false),
    }
}

pub(crate) fn apply_attributes(sh: &Shared, spec: u32, affinity: &libc::cpu_set_t, tid: i32) -> Result<(), String> {
    let s = &sh.w.tasks[spec as usize];
    sys::set_affinity_set(tid, affinity)?;
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

pub(crate) fn spawn_task(sh: &Arc<Shared>, spec: u32, at_barrier: bool) -> Result<(), HostError> {
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
    // Everything the thread owns is made here and freed by whoever joins
    // it: a thread that neither mallocs nor frees gets no arena of glibc's
    // (see `sys::malloc_settings`), so its life takes no mmap lock but its
    // exit's.
    let name = format!("sl-{}", sh.w.tasks[spec as usize].name);
    let (affinity, pinned) = affinity_of(sh, spec, instance);
    let slot = ResultSlot::default();
    sh.results.lock().expect("no thread panics holding the lock").push(Arc::clone(&slot));
    let created_failed =
        |e: std::io::Error| HostError::Setup(format!("cannot create thread {task}: {e} (raise ulimit -u?)"));
    let stack = sh.stacks.take(&sh.handles).map_err(created_failed)?;
    let sleeps = Vec::with_capacity(sh.sleep_room[spec as usize]);
    let mut result = Some(ThreadResult { task, spec, sleeps, ..ThreadResult::default() });
    let start = TaskStart { spec, at_barrier, affinity, pinned };
    let thread = TaskThread::spawn(
        stack,
        Box::new(move || {
            if let Some(r) = result.take() {
                task_thread(&shared, &start, &name, &slot, r);
            }
        }),
    )
    .map_err(|(stack, e)| {
        sh.stacks.put(stack);
        created_failed(e)
    })?;
    sh.handles.lock().expect("no thread panics holding the lock").push(thread);
    Ok(())
}

/// What a task thread is, besides its result and name.
pub(crate) struct TaskStart {
    spec: u32,
    at_barrier: bool,
    affinity: libc::cpu_set_t,
    /// Whether its affinity is its own (not the run's CPUs).
    pinned: bool,
}

pub(crate) fn task_thread(sh: &Arc<Shared>, start_as: &TaskStart, name: &str, slot: &ResultSlot, mut r: ThreadResult) {
    let &TaskStart { spec, at_barrier, ref affinity, pinned } = start_as;
    let task = r.task;
    let tid = sys::gettid();
    signals::block_in_this_thread();
    sys::set_thread_name(name);
    sys::set_min_timer_slack();
    if let Err(message) = apply_attributes(sh, spec, affinity, tid) {
        let task_name = sh.w.tasks[spec as usize].name.clone();
        sh.errors.lock().expect("lock").push(HostError::Attribute { task: task_name, message });
    }
    let mut cpu_at_gate = sys::thread_cpu_time();
    if at_barrier {
        // Its arena (glibc's, made at a thread's first malloc) before t0:
        // a thread that forks or counts wakeups allocates in the run.
        drop(std::hint::black_box(Vec::<u8>::with_capacity(64)));
        // Read after the arena, which a TCG guest's first thread took
        // about 3 ms for (tt-6.1 fork-burst: 4.4 ms before t0, 0.5 ms of
        // it after the gate in the trace).
        cpu_at_gate = sys::thread_cpu_time();
        sh.arrived.fetch_add(1, Ordering::SeqCst);
        sh.go.wait();
    }
    let t0 = sh.t0.load(Ordering::SeqCst);
    if sh.stop.load(Ordering::SeqCst) && t0 == 0 {
        // The run never started (setup failed).
        sh.live.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    // At t0 every thread released by the gate wakes at once. A /proc read
    // then walks paths and takes buffers from the allocator's shared
    // arenas: with 1024 spinners on one CPU, each blocked 2-4 times in the
    // window (muqss-5.10: 2,440 voluntary switches of 3,192, run p50 56
    // us). So a gated thread reads its starting counts before it sleeps to
    // t0 (its stack was touched when it was mapped, see `stacks`); its run
    // delay then also counts the wait from t0 to its first run, which is
    // the workload's. A forked thread starts at once, as before.
    r.gated = at_barrier;
    let early = (at_barrier && !sh.traced).then(|| sched_counts(tid));
    let cpu_before_start = sys::thread_cpu_time();
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
        r.tid = tid;
        r.created = start.saturating_sub(t0);
        r.cpu_before_start = cpu_before_start;
        r.cpu_at_gate = cpu_at_gate;
        *slot.lock().expect("lock") = Some(r);
        sh.live.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    // A thread forked in the run starts from zero: the kernel zeroes both
    // counts at fork (sched_fork) and places the new thread without
    // counting a migration (wake_up_new_task), and its wait for its first
    // run is the workload's run delay. Read from /proc here instead, inside
    // its measured time, the two files cost a TCG guest's short-lived
    // threads about a millisecond and a few waits each (fork-burst's
    // children of 4 ms: 4.7-8.4 ms of CPU and 1-3 voluntary switches).
    // Only a pinned thread's migrations are read: its affinity may have
    // moved it. Under a trace nothing is read, at the start or at the end.
    let (mig0, delay0) = if sh.traced {
        (None, None)
    } else {
        early
            .unwrap_or_else(|| (if pinned { sys::task_sched_field(tid, "se.nr_migrations") } else { Some(0) }, Some(0)))
    };
    let cpu0 = sys::thread_cpu_time();
    let ru0 = sys::thread_rusage();
    r.sleeps_before_start = at_barrier.then_some(ru0.voluntary);
    r.tid = tid;
    r.created = start.saturating_sub(t0);
    r.cpu_before_start = cpu_before_start;
    r.cpu_at_gate = cpu_at_gate;
    let finished = run_program(sh, spec, &mut rng, &mut r);
    let end = sh.end.load(Ordering::SeqCst);
    if finished {
        r.exited = Some(sys::now().min(end).saturating_sub(t0));
    }
    r.cpu_time = sys::thread_cpu_time() - cpu0;
    let ru = sys::thread_rusage();
    r.voluntary = ru.voluntary - ru0.voluntary;
    r.involuntary = ru.involuntary - ru0.involuntary;
    // Read at the end of a forked thread's program, the two files were
    // most of the 1 ms a fork-burst child of 4 ms spent beyond its work in
    // a TCG guest (5.05 ms on a CPU at the median, from the guest's trace),
    // inside the run; the trace counts both where there is one.
    let (mig1, delay1) = if sh.traced { (None, None) } else { sched_counts(tid) };
    r.migrations = mig1.zip(mig0).map(|(a, b)| a - b);
    r.run_delay = delay1.zip(delay0).map(|(a, b)| a - b);
    *slot.lock().expect("lock") = Some(r);
    sh.live.fetch_sub(1, Ordering::SeqCst);
}

pub(crate) fn record_latency(r: &mut ThreadResult, lat: Nanos) {
    r.wakeups += 1;
    r.lat_sum += lat;
    r.lat_max = r.lat_max.max(lat);
    r.lat.record(lat);
}

/// Sleeps to `target`; false when the run ends first.
pub(crate) fn sleep_to(sh: &Shared, target: Nanos, r: &mut ThreadResult) -> bool {
    let end = sh.end.load(Ordering::SeqCst);
    if target >= end {
        sys::sleep_until(end);
        return false;
    }
    let called = sys::now();
    while !sys::sleep_until(target) {
        if sh.stop.load(Ordering::SeqCst) {
            return false;
        }
    }
    let returned = sys::now();
    record_latency(r, returned.saturating_sub(target));
    // Within the room made for them: the thread allocates nothing.
    if called < target && r.sleeps.len() < r.sleeps.capacity() {
        r.sleeps.push((called, returned));
    }
    true
}

/// Runs the task's program; true when it ended by itself (exit or end of
/// program), false when the run's end stopped it.
pub(crate) fn run_program(sh: &Arc<Shared>, spec: u32, rng: &mut TaskRng, r: &mut ThreadResult) -> bool {
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
                let done = burn(sh, burst);
                r.burnt += done;
                if done < burst {
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
                let t0 = sh.t0.load(Ordering::SeqCst);
                let next = match mode.next_expiry(timer_next[slot], period, started, t0, sys::now()) {
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
            Op::Yield => {
                r.yields += 1;
                sys::sched_yield();
            }
            Op::Fork(child) => {
                r.forks += 1;
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

/// The channels' pipes and the initial tasks' threads, each waiting at the
/// start gate; how many were spawned (fewer when one failed, whose error
/// is in `errors` and which has set `stop`).
pub(crate) fn start_threads(
    w: &Workload,
    cpu_map: Vec<usize>,
    cgroups: Option<cgroup::Cgroups>,
    traced: bool,
) -> Result<(Arc<Shared>, u32), HostError> {
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
    let stacks_wanted = (initial.len() + if w.forks() { FORK_RESERVE } else { 0 }).min((capacity - headroom) as usize);
    sys::malloc_settings();
    let stacks = StackPool::with(stacks_wanted)
        .map_err(|e| HostError::Setup(format!("cannot map {stacks_wanted} thread stacks: {e}")))?;
    let spins_per_ns = calibrate_spin();
    let controller_cpu_before_spawn = sys::thread_cpu_time();
    let controller_stat_priority = sys::stat_priority();
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
        sleep_room: sleep_stamps_room(w),
        results: Mutex::new(Vec::with_capacity(stacks_wanted)),
        errors: Mutex::new(Vec::new()),
        handles: Mutex::new(Vec::with_capacity(stacks_wanted)),
        stacks,
        cgroups,
        spins_per_ns,
        thread_budget: std::sync::atomic::AtomicU64::new(capacity - headroom),
        thread_limit: limit,
        controller_cpu_before_spawn,
        controller_stat_priority,
        controller_cpu_per_spawn: AtomicU64::new(0),
        controller_tid: sys::gettid(),
        traced,
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
    if spawned > 0 {
        let per_spawn = sys::thread_cpu_time().saturating_sub(controller_cpu_before_spawn) / spawned as u64;
        sh.controller_cpu_per_spawn.store(per_spawn, Ordering::SeqCst);
    }
    Ok((sh, spawned))
}

/// Stops every task thread: the stop flag, a STOP message in every pipe a
/// thread may wait on, and a join of every thread (threads forked during
/// the run included).
pub(crate) fn stop_threads(sh: &Shared) {
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
        let batch: Vec<TaskThread> = std::mem::take(&mut *sh.handles.lock().expect("lock"));
        if batch.is_empty() {
            break;
        }
        for h in batch {
            sh.stacks.put(h.join());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sleepers_get_room_for_their_sleeps_and_all_of_them_share_a_bound() {
        let w = |sleepers: u32| {
            Workload::from_toml(
                &format!(
                    r#"
[[task]]
name = "hog"
program = [ {{ run = "1s" }} ]
[[task]]
name = "sleeper"
count = {sleepers}
program = [ {{ loop = "forever", body = [ {{ run = "1ms" }}, {{ sleep = "1ms" }} ] }} ]
"#
                ),
                "t.toml",
                &Default::default(),
            )
            .unwrap()
        };
        let few = sleep_stamps_room(&w(3));
        assert_eq!(few[0], 0, "a hog never sleeps");
        assert_eq!(few[1], SLEEP_STAMPS_MAX);
        assert_eq!(sleep_stamps_room(&w(1024))[1], SLEEP_STAMPS_TOTAL / 1024);
    }
}
