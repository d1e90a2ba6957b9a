//! `schedlab calibrate`: the costs the simulator charges (a workload's
//! `[machine] costs`) measured on this machine's kernel, so that a
//! simulation and `schedlab host` of the same workload start from the same
//! floor. The simulator's defaults (2 us per switch, 5 us to wake an idle
//! CPU) are bare-metal figures; a VM or a traced kernel pays several times
//! that, and its wakeup latencies sit that much higher from the start.
//!
//! Three measurements, each the median of batches so that a stray
//! interruption moves nothing:
//! - context_switch: two threads on one CPU pass a token through a pair of
//!   pipes (lmbench's `lat_ctx -s 0 2` on one CPU); a hop is the write, the
//!   switch and the read's return, which is what a blocking switch costs.
//! - idle_exit: a thread on one CPU writes a timestamp into a pipe that a
//!   thread blocked on another CPU, idle for 50 us, reads. The simulator
//!   charges idle_exit + context_switch for that wakeup, so idle_exit is
//!   the median latency less the context switch. Wakeups after 1 ms and
//!   10 ms of idle are measured and shown too: deeper idle states (or, in
//!   a VM, the host descheduling a halted vCPU once KVM's halt polling
//!   gives up) cost more, and the simulator's one figure cannot follow.
//!   The same wakeups also give wake_remote: the writer's own CPU time per
//!   write that wakes the reader on the other, idle CPU, less what the
//!   same write costs it when nobody waits (the sending side of a
//!   cross-CPU wakeup: the wakeup's IPI, which TCG emulates). And the
//!   reader's own CPU from one wakeup to the next (switched in from the
//!   idle task, its reply waking the writer's idle CPU), which is shown,
//!   not charged: what it holds beyond context_switch and wake_remote is
//!   not yet told apart.
//! - syscall: sched_yield with nothing else runnable on the CPU.
//! - timer_wakeup and timer_latency: a thread alone on a CPU sleeps to an
//!   absolute time 200 us ahead, as the host runner's sleeps and timers
//!   do (timer slack 1 ns). timer_wakeup is the thread's own CPU time per
//!   sleep (the call, the wakeup's return), which the simulator charges
//!   to a task woken by a timer; timer_latency is how late it woke less
//!   what the simulator already charges for waking an idle CPU.
//! - fork and thread_start: a thread created as the host runner creates
//!   one (128 KiB stack, named, timer slack set): the parent's CPU time
//!   per creation and the child's CPU time when its work would begin.
//! - tick_jitter: how late the tick arrives after its jiffy boundary, from
//!   the tick's own hrtimer expiries (timer:hrtimer_expire_entry of
//!   tick_sched_timer, tick_nohz_handler since 6.9, in a tracefs instance;
//!   where the kernel prints no symbol names, the timer that fired most)
//!   while every CPU spins, each CPU on its own grid; twice the median,
//!   since the simulator draws each tick's delay uniformly from 0 to this
//!   figure. Needs tracefs (root); without it, or where the tick is a
//!   tenth of a period late at the median (a TCG guest, at times: no grid
//!   a jitter could describe), left at its default.
//! - tick_spread: how far apart the CPUs' ticks of one jiffy come, from the
//!   same expiries: the gap from each tick of every CPU but the first to
//!   the first CPU's nearest (within half a period, so grid or none). A TCG
//!   guest's ticks are 60-90 us late at the median but 10-20 us apart,
//!   and which CPU ticks, balances and dispatches first, and by how much,
//!   is the gap's. The simulator draws each CPU's part uniformly from 0 to
//!   tick_spread, two of which differ by tick_spread (1 - 1/sqrt 2) at the
//!   median: tick_spread is the measured median gap times 2 + sqrt 2.
//!
//! The migration cost (cold caches after a move) depends on the task's
//! working set, not the machine alone, and is left at its default.

use crate::HostError;
use crate::sys::{self, Pipe};
use schedlab_sim::Nanos;
use std::collections::HashMap;

/// What `calibrate` found, in the units `[machine] costs` takes.
#[derive(Clone, Debug)]
pub struct Calibration {
    /// CPUs this process may use.
    pub cpus_allowed: usize,
    /// CPU the single-CPU measurements ran on, and the idle CPU woken.
    pub cpu: usize,
    pub other_cpu: Option<usize>,
    pub context_switch: Nanos,
    /// Median wakeup latency onto an idle CPU (None on a one-CPU machine).
    pub idle_wakeup: Option<Nanos>,
    /// The waker's CPU time per write that wakes a thread on another, idle
    /// CPU, beyond the same write's when nobody waits (None on one CPU).
    pub wake_remote: Option<Nanos>,
    /// The woken reader's CPU time from one wakeup to the next in the same
    /// test (None on one CPU).
    pub reader_cycle_cpu: Option<Nanos>,
    /// Wakeup latency onto a CPU idle for longer (idle length, latency):
    /// deeper idle states cost more to leave, which one figure cannot say.
    pub deep_idle: Vec<(Nanos, Nanos)>,
    pub syscall: Nanos,
    /// CPU time a thread uses per timed sleep, and the median of how late
    /// it woke (both alone on `cpu`).
    pub timer_cpu: Nanos,
    pub timer_late: Nanos,
    /// CPU time of the creating thread per thread created, and of the new
    /// thread before its work.
    pub fork_parent: Nanos,
    pub fork_child: Nanos,
    /// The tick's lateness after its jiffy boundary, or why it was not
    /// measured.
    pub tick: Result<TickLateness, String>,
    /// How far apart the CPUs' ticks of one jiffy came, or why it was not
    /// measured.
    pub tick_gap: Result<TickLateness, String>,
    /// Round trips, wakeups and yields measured.
    pub samples: (u32, u32, u32),
    /// CPU time other processes took on the CPUs measured, in % of their
    /// time: the figures are this kernel's floor only when it is near 0.
    pub other_load_pct: f64,
}

/// Tick arrivals after their jiffy boundary.
#[derive(Clone, Debug)]
pub struct TickLateness {
    pub median: Nanos,
    pub p95: Nanos,
    pub max: Nanos,
    pub samples: usize,
}

impl TickLateness {
    /// The simulator's tick_jitter: it draws each tick's delay uniformly
    /// from 0 to this, so twice the median gives the measured median. (A
    /// TCG guest's lateness has a long tail, p95 2 ms against a 50 us
    /// median: a uniform as wide as the tail would misplace most ticks.)
    pub fn jitter(&self) -> Nanos {
        2 * self.median
    }

    /// The simulator's tick_spread, for gaps between CPUs: each CPU's part
    /// is a uniform draw up to it, and two such differ by this times
    /// 1 - 1/sqrt 2 at the median.
    pub fn spread(&self) -> Nanos {
        tick_spread_of_gap(self.median)
    }
}

/// The simulator's tick_spread whose two uniform draws differ by `gap` at
/// the median: gap / (1 - 1/sqrt 2).
pub fn tick_spread_of_gap(gap: Nanos) -> Nanos {
    (gap as f64 * (2.0 + std::f64::consts::SQRT_2)).round() as Nanos
}

impl Calibration {
    /// The simulator charges idle_exit + context_switch for a wakeup onto
    /// an idle CPU, so idle_exit is the measured wakeup less the switch.
    pub fn idle_exit(&self) -> Option<Nanos> {
        self.idle_wakeup.map(|w| w.saturating_sub(self.context_switch))
    }

    /// How late a timer fires beyond what the simulator charges anyway for
    /// waking the idle CPU its thread sleeps on (idle exit and switch).
    pub fn timer_latency(&self) -> Nanos {
        self.timer_late.saturating_sub(self.idle_wakeup.unwrap_or(self.context_switch))
    }

    /// The measured costs under the names `[machine] costs` gives them.
    pub fn costs(&self) -> Vec<(&'static str, Nanos)> {
        let mut costs = vec![("context_switch", self.context_switch)];
        costs.extend(self.idle_exit().map(|idle| ("idle_exit", idle)));
        costs.extend(self.wake_remote.map(|w| ("wake_remote", w)));
        costs.push(("syscall", self.syscall));
        costs.push(("fork", self.fork_parent));
        costs.push(("thread_start", self.fork_child));
        costs.push(("timer_wakeup", self.timer_cpu));
        costs.push(("timer_latency", self.timer_latency()));
        if let Ok(tick) = &self.tick {
            costs.push(("tick_jitter", tick.jitter()));
        }
        if let Ok(gap) = &self.tick_gap {
            costs.push(("tick_spread", gap.spread()));
        }
        costs
    }

    /// The `--cost` flags that give a simulation these costs.
    pub fn cost_flags(&self) -> String {
        self.costs().iter().map(|(name, v)| format!("--cost {name}={v}ns")).collect::<Vec<_>>().join(" ")
    }

    /// The same as a workload file's `[machine]` line.
    pub fn toml(&self) -> String {
        let items: Vec<String> = self.costs().iter().map(|(name, v)| format!("{name} = \"{v}ns\"")).collect();
        format!("costs = {{ {} }}", items.join(", "))
    }
}

const BATCHES: u32 = 9;
/// How long the woken CPU has been idle in the idle_exit measurement: a
/// busy machine's CPUs idle briefly between wakeups.
pub const SHALLOW_IDLE: Nanos = 50_000;
/// Longer idle periods whose wakeups are measured too.
pub const DEEP_IDLE: [Nanos; 2] = [1_000_000, 10_000_000];

/// Measures this machine's costs with `scale` x the default sample counts
/// (20,000 round trips, 2,000 idle wakeups, 200,000 yields at 1.0).
pub fn calibrate(scale: f64) -> Result<Calibration, HostError> {
    if !(scale > 0.0 && scale <= 100.0) {
        return Err(HostError::Setup(format!("sample scale {scale} is out of range: give 0.01 to 100")));
    }
    let count = |n: f64| ((n * scale) as u32 / BATCHES).max(1) * BATCHES;
    let allowed = sys::allowed_cpus();
    let Some(&cpu) = allowed.first() else {
        return Err(HostError::Setup("this process may run on no CPU (sched_getaffinity)".into()));
    };
    let other_cpu = allowed.get(1).copied();
    let (trips, wakeups, yields) = (count(20_000.0), count(2_000.0), count(200_000.0));
    let used: Vec<usize> = std::iter::once(cpu).chain(other_cpu).collect();
    let busy = || -> (u64, std::time::Instant) {
        let stat = sys::cpu_times();
        let jiffy = 1_000_000_000 / sys::user_hz();
        let machine: u64 = used.iter().map(|&c| stat.get(c).map_or(0, |s| s.0) * jiffy).sum();
        // MuQSS counts a busy CPU's time twice in /proc/stat.
        let machine = if sys::is_muqss() { machine / 2 } else { machine };
        (machine.saturating_sub(sys::process_cpu_time()), std::time::Instant::now())
    };
    let (other0, t0) = busy();
    let context_switch = ping_pong(cpu, trips)?;
    let syscall = yield_cost(cpu, yields)?;
    let (timer_cpu, timer_late) = timer_sleep(cpu, count(2_000.0))?;
    let (fork_parent, fork_child) = thread_creation(cpu, count(500.0))?;
    let (tick, tick_gap) = tick_lateness(&allowed);
    let (idle_wakeup, wake_remote, reader_cycle_cpu, deep_idle) = match other_cpu {
        Some(other) => {
            let shallow = idle_wakeup(cpu, other, wakeups, SHALLOW_IDLE)?;
            let mut deep = Vec::new();
            for gap in DEEP_IDLE {
                // About a tenth of a second of samples at each length.
                let n = ((100 * 1_000_000 / gap) as f64 * scale).clamp(10.0, 1000.0) as u32;
                deep.push((gap, idle_wakeup(cpu, other, n, gap)?.latency));
            }
            let plain = plain_write_cpu(cpu, wakeups)?;
            let wake_remote = shallow.writer_cpu.saturating_sub(plain);
            (Some(shallow.latency), Some(wake_remote), Some(shallow.reader_cycle_cpu), deep)
        }
        None => (None, None, None, Vec::new()),
    };
    let (other1, t1) = busy();
    let span = (t1 - t0).as_nanos() as f64 * used.len() as f64;
    let other_load_pct = other1.saturating_sub(other0) as f64 / span.max(1.0) * 100.0;
    Ok(Calibration {
        other_load_pct,
        cpus_allowed: allowed.len(),
        cpu,
        other_cpu,
        context_switch,
        idle_wakeup,
        wake_remote,
        reader_cycle_cpu,
        deep_idle,
        syscall,
        timer_cpu,
        timer_late,
        fork_parent,
        fork_child,
        tick,
        tick_gap,
        samples: (trips, if other_cpu.is_some() { wakeups } else { 0 }, yields),
    })
}

/// How far ahead each timed sleep is set: longer than a wakeup takes, so
/// the CPU is idle when the timer fires, as a sleeping task's often is.
const TIMER_AHEAD: Nanos = 200_000;

/// Per timed sleep of a thread alone on `cpu`: its CPU time, and the median
/// of how late it woke.
fn timer_sleep(cpu: usize, sleeps: u32) -> Result<(Nanos, Nanos), HostError> {
    std::thread::scope(|s| {
        s.spawn(|| {
            pin(cpu)?;
            sys::set_min_timer_slack();
            let mut late = Vec::with_capacity(sleeps as usize);
            let mut cpu_per_sleep = Vec::with_capacity(BATCHES as usize);
            let per_batch = (sleeps / BATCHES).max(1);
            // One batch more first, to settle; not kept.
            for batch in 0..=BATCHES {
                let cpu0 = sys::thread_cpu_time();
                for _ in 0..per_batch {
                    let target = sys::now() + TIMER_AHEAD;
                    sys::sleep_until(target);
                    if batch > 0 {
                        late.push(sys::now().saturating_sub(target));
                    }
                }
                if batch > 0 {
                    cpu_per_sleep.push((sys::thread_cpu_time() - cpu0) / u64::from(per_batch));
                }
            }
            Ok((median(cpu_per_sleep), median(late)))
        })
        .join()
        .expect("timer thread does not panic")
    })
}

/// Per thread created as the host runner creates its tasks' threads: the
/// creator's CPU time, and the new thread's own when its work would start.
fn thread_creation(cpu: usize, threads: u32) -> Result<(Nanos, Nanos), HostError> {
    std::thread::scope(|s| {
        s.spawn(|| {
            pin(cpu)?;
            let mut parent = Vec::with_capacity(threads as usize);
            let mut child = Vec::with_capacity(threads as usize);
            // As the runner does: on a stack mapped beforehand (see `stacks`).
            let mut stack =
                Some(crate::Stack::map().map_err(|e| HostError::Setup(format!("cannot map a stack: {e}")))?);
            for i in 0..=threads {
                let (tx, rx) = std::sync::mpsc::sync_channel(1);
                let cpu0 = sys::thread_cpu_time();
                let thread = crate::TaskThread::spawn(
                    stack.take().expect("each thread's stack comes back at its join"),
                    Box::new(move || {
                        sys::set_thread_name("sl-calibrate");
                        sys::set_min_timer_slack();
                        let _ = tx.send(sys::thread_cpu_time());
                    }),
                )
                .map_err(|(_, e)| HostError::Setup(format!("cannot create a thread: {e}")))?;
                let spent = sys::thread_cpu_time() - cpu0;
                stack = Some(thread.join());
                let started =
                    rx.recv().map_err(|_| HostError::Setup("a calibration thread ended without its clock".into()))?;
                // The first thread pays for the allocator's first arena.
                if i > 0 {
                    parent.push(spent);
                    child.push(started);
                }
            }
            Ok((median(parent), median(child)))
        })
        .join()
        .expect("creating thread does not panic")
    })
}

/// How long every CPU spins while the tick's expiries are traced.
const TICK_TRACE: std::time::Duration = std::time::Duration::from_millis(1000);

/// The tick's lateness on the CPUs in `cpus`, each kept busy so that its
/// tick runs (an idle NO_HZ CPU stops it), from the tick hrtimer's
/// expiries: each is `now` of hrtimer_expire_entry, whose distance past the
/// common jiffy grid is the lateness; and the gaps between the CPUs' ticks.
fn tick_lateness(cpus: &[usize]) -> (Result<TickLateness, String>, Result<TickLateness, String>) {
    match tick_expiries(cpus) {
        Ok((expiries, period)) => (lateness_on_grid(&expiries, period), gaps_between_cpus(&expiries, period)),
        Err(why) => (Err(why.clone()), Err(why)),
    }
}

/// (cpu, now) of each expiry of the tick's hrtimer while every CPU of
/// `cpus` spins, and the tick's period.
fn tick_expiries(cpus: &[usize]) -> Result<(Vec<(u32, Nanos)>, Nanos), String> {
    let hz = crate::info::read().hz.ok_or("the kernel's HZ is not known")?;
    let tracer = crate::tracing::Tracer::with_events(
        cpus.iter().max().map_or(1, |&c| c + 1),
        &["timer/hrtimer_expire_entry"],
        "the tick's lateness",
        false,
    )?;
    // Ctrl-C while the instance traces must still remove it (the tracer's
    // drop), not leave 32 MB of buffer per CPU tracing.
    let signals = crate::signals::StopSignals::install();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for &cpu in cpus {
            let stop = &stop;
            s.spawn(move || {
                if pin(cpu).is_ok() {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                }
            });
        }
        tracer.set_on(true);
        let until = std::time::Instant::now() + TICK_TRACE;
        while std::time::Instant::now() < until && crate::signals::received().is_none() {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        tracer.set_on(false);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    if let Some(sig) = crate::signals::received() {
        drop(tracer);
        drop(signals);
        // Dies by the signal as it would have, its tracefs instance gone.
        // SAFETY: the default disposition is back; raising it ends the process.
        unsafe { libc::raise(sig) };
        return Err(format!("interrupted by {}", crate::signals::name(sig)));
    }
    drop(signals);
    let (text, _) = tracer.text()?;
    // Each expiry by its function: (cpu, now).
    let mut fired: HashMap<String, Vec<(u32, Nanos)>> = HashMap::new();
    for l in text.lines() {
        let (mut cpu, mut function, mut now) = (None, None, None);
        for f in l.split_whitespace() {
            if let Some(v) = f.strip_prefix("function=") {
                function = Some(v);
            } else if let Some(v) = f.strip_prefix("now=") {
                now = v.parse().ok();
            } else if cpu.is_none()
                && let Some(v) = f.strip_prefix('[').and_then(|v| v.strip_suffix(']'))
            {
                cpu = v.parse().ok();
            }
        }
        if let (Some(cpu), Some(function), Some(now)) = (cpu, function, now) {
            fired.entry(function.to_string()).or_default().push((cpu, now));
        }
    }
    let period = 1_000_000_000 / u64::from(hz);
    let expiries = crate::tracing::tick_expiries(&fired, period).map(<[_]>::to_vec).unwrap_or_default();
    Ok((expiries, period))
}

/// The lateness of the tick past its jiffy grid, where it keeps one.
fn lateness_on_grid(expiries: &[(u32, Nanos)], period: Nanos) -> Result<TickLateness, String> {
    let late = lateness_from_expiries(expiries, period)
        .ok_or_else(|| format!("only {} tick expiries were traced", expiries.len()))?;
    // The simulator's ticks sit on the jiffy grid with a small delay; a
    // tick that is a tenth of a period late at the median keeps no grid (an
    // emulated timer reprogrammed from late expiries), which no jitter
    // figure describes.
    if late.median > period / 10 {
        return Err(format!(
            "the tick keeps no jiffy grid here: {} ticks came {:.0} us late at the median, {:.0} us at the 95th \
             percentile, of a {:.0} us period",
            late.samples,
            late.median as f64 / 1e3,
            late.p95 as f64 / 1e3,
            period as f64 / 1e3
        ));
    }
    Ok(late)
}

/// The gap from each tick of every CPU but the first to the first CPU's
/// nearest, within half a period (the same jiffy's), grid or none.
pub(crate) fn gaps_between_cpus(expiries: &[(u32, Nanos)], period: Nanos) -> Result<TickLateness, String> {
    let Some(first) = expiries.iter().map(|&(cpu, _)| cpu).min() else {
        return Err("no tick expiries were traced".into());
    };
    let mut base: Vec<Nanos> = expiries.iter().filter(|&&(cpu, _)| cpu == first).map(|&(_, at)| at).collect();
    base.sort_unstable();
    let mut gaps: Vec<Nanos> = expiries
        .iter()
        .filter(|&&(cpu, _)| cpu != first)
        .filter_map(|&(_, at)| {
            let i = base.partition_point(|&b| b < at);
            let nearest = [i.checked_sub(1), Some(i)]
                .into_iter()
                .flatten()
                .filter_map(|j| base.get(j))
                .map(|&b| b.abs_diff(at))
                .min()?;
            (nearest < period / 2).then_some(nearest)
        })
        .collect();
    if gaps.len() < 20 {
        return Err(format!("only {} ticks of other CPUs came within half a period of CPU {first}'s", gaps.len()));
    }
    gaps.sort_unstable();
    let at = |q: f64| gaps[((gaps.len() - 1) as f64 * q).round() as usize];
    Ok(TickLateness { median: at(0.5), p95: at(0.95), max: at(1.0), samples: gaps.len() })
}

/// Lateness of each expiry (cpu, time) past a grid of period `tick` whose
/// phase is unknown and may differ from CPU to CPU: each CPU's grid starts
/// after the widest gap between its expiries' positions in the period
/// (circularly), so that a tick that came early on the grid cannot be
/// mistaken for one a whole period late.
fn lateness_from_expiries(expiries: &[(u32, Nanos)], tick: Nanos) -> Option<TickLateness> {
    if expiries.len() < 20 || tick == 0 {
        return None;
    }
    let mut by_cpu: HashMap<u32, Vec<Nanos>> = HashMap::new();
    for &(cpu, at) in expiries {
        by_cpu.entry(cpu).or_default().push(at % tick);
    }
    let mut late = Vec::with_capacity(expiries.len());
    for mut pos in by_cpu.into_values() {
        pos.sort_unstable();
        let (mut start, mut widest) = (pos[0], pos[0] + tick - pos[pos.len() - 1]);
        for w in pos.windows(2) {
            if w[1] - w[0] > widest {
                (start, widest) = (w[1], w[1] - w[0]);
            }
        }
        late.extend(pos.iter().map(|&p| (p + tick - start) % tick));
    }
    late.sort_unstable();
    let at = |q: f64| late[((late.len() - 1) as f64 * q).round() as usize];
    Some(TickLateness { median: at(0.5), p95: at(0.95), max: at(1.0), samples: late.len() })
}

/// The middle value (the upper of the two middles), 0 for none.
pub(crate) fn median(mut v: Vec<Nanos>) -> Nanos {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// The median of samples taken in a row, less their first tenth, which
/// warms caches and settles the threads.
fn median_after_warmup(samples: &[Nanos]) -> Nanos {
    median(samples[samples.len() / 10..].to_vec())
}

/// Median over BATCHES batches of the time per call of `op`, `calls` calls
/// in all; one batch more runs first to warm caches and settle the
/// threads, and is not kept.
fn per_call(calls: u32, mut op: impl FnMut(u32) -> Result<(), HostError>) -> Result<Nanos, HostError> {
    let per_batch = calls / BATCHES;
    let mut times = Vec::with_capacity(BATCHES as usize);
    for batch in 0..=BATCHES {
        let start = sys::now();
        for i in 0..per_batch {
            op(i)?;
        }
        if batch > 0 {
            times.push((sys::now() - start) / u64::from(per_batch));
        }
    }
    Ok(median(times))
}

fn pin(cpu: usize) -> Result<(), HostError> {
    sys::set_affinity(sys::gettid(), &[cpu]).map_err(HostError::Setup)
}

fn pipe() -> Result<Pipe, HostError> {
    Pipe::new().map_err(|e| HostError::Setup(format!("cannot create a pipe: {e}")))
}

/// Per hop of a token passed between two threads on `cpu`.
fn ping_pong(cpu: usize, trips: u32) -> Result<Nanos, HostError> {
    let (there, back) = (pipe()?, pipe()?);
    std::thread::scope(|s| {
        let echo = s.spawn(|| -> Result<(), HostError> {
            pin(cpu)?;
            while let Some(v) = there.recv() {
                if v == crate::STOP || !back.send(v) {
                    break;
                }
            }
            Ok(())
        });
        // A round trip is two hops.
        let timed = pin(cpu).and_then(|()| {
            per_call(trips, |i| {
                if there.send(u64::from(i)) && back.recv().is_some() {
                    Ok(())
                } else {
                    Err(HostError::Setup("the echo thread stopped".into()))
                }
            })
            .map(|trip| trip / 2)
        });
        there.send(crate::STOP);
        echo.join().expect("echo thread does not panic")?;
        timed
    })
}

/// Per sched_yield of a thread alone on `cpu`.
fn yield_cost(cpu: usize, yields: u32) -> Result<Nanos, HostError> {
    std::thread::scope(|s| {
        s.spawn(|| {
            pin(cpu)?;
            per_call(yields, |_| {
                sys::sched_yield();
                Ok(())
            })
        })
        .join()
        .expect("yield thread does not panic")
    })
}

/// Wakeups of a reader blocked on an idle CPU, by a write on another.
struct IdleWakeup {
    /// Median latency from the write to the reader running.
    latency: Nanos,
    /// Median CPU time of the writing thread in the write.
    writer_cpu: Nanos,
    /// Median CPU time of the reader from one wakeup to the next.
    reader_cycle_cpu: Nanos,
}

/// Median CPU time of a thread on `cpu` in a write to a pipe nobody waits
/// on (the wakeup's write, less the wakeup).
fn plain_write_cpu(cpu: usize, writes: u32) -> Result<Nanos, HostError> {
    let p = pipe()?;
    std::thread::scope(|s| {
        s.spawn(|| {
            pin(cpu)?;
            let mut took = Vec::with_capacity(writes as usize);
            for i in 0..writes {
                let before = sys::thread_cpu_time();
                let sent = p.send(u64::from(i));
                took.push(sys::thread_cpu_time().saturating_sub(before));
                if !sent || p.recv().is_none() {
                    return Err(HostError::Setup("a pipe to itself failed".into()));
                }
            }
            Ok(median_after_warmup(&took))
        })
        .join()
        .expect("write thread does not panic")
    })
}

/// Wakeups from a write on `cpu` of the reader blocked on idle `other`,
/// `gap` after its previous wakeup (the writer sleeps that long between
/// samples, and `other` is idle all that time).
fn idle_wakeup(cpu: usize, other: usize, wakeups: u32, gap: Nanos) -> Result<IdleWakeup, HostError> {
    let (there, back) = (pipe()?, pipe()?);
    std::thread::scope(|s| {
        let reader = s.spawn(|| -> Result<(Vec<Nanos>, Vec<Nanos>), HostError> {
            pin(other)?;
            let mut lat = Vec::with_capacity(wakeups as usize);
            let mut cycles = Vec::with_capacity(wakeups as usize);
            let mut cpu_at_last_wake = None;
            while let Some(sent) = there.recv() {
                let woke = sys::now();
                let cpu_now = sys::thread_cpu_time();
                if sent == crate::STOP {
                    break;
                }
                // Its CPU from one wakeup to the next: the switch in from
                // the idle task, the read's return, the reply that wakes
                // the writer's idle CPU, the next read until it blocks.
                if let Some(last) = cpu_at_last_wake {
                    cycles.push(cpu_now.saturating_sub(last));
                }
                cpu_at_last_wake = Some(cpu_now);
                lat.push(woke.saturating_sub(sent));
                back.send(0);
            }
            Ok((lat, cycles))
        });
        let writer = (|| {
            pin(cpu)?;
            sys::set_min_timer_slack();
            let mut cpu_in_write = Vec::with_capacity(wakeups as usize);
            for _ in 0..wakeups {
                sys::sleep_until(sys::now() + gap);
                let before = sys::thread_cpu_time();
                let sent = there.send(sys::now());
                cpu_in_write.push(sys::thread_cpu_time().saturating_sub(before));
                if !sent || back.recv().is_none() {
                    return Err(HostError::Setup("the reader thread stopped".into()));
                }
            }
            Ok(cpu_in_write)
        })();
        there.send(crate::STOP);
        let (lat, cycles) = reader.join().expect("reader thread does not panic")?;
        let cpu_in_write = writer?;
        Ok(IdleWakeup {
            latency: median_after_warmup(&lat),
            writer_cpu: median_after_warmup(&cpu_in_write),
            reader_cycle_cpu: median_after_warmup(&cycles),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_come_out_as_flags_and_toml_the_simulator_reads() {
        let c = Calibration {
            cpus_allowed: 2,
            other_load_pct: 0.0,
            cpu: 0,
            other_cpu: Some(1),
            context_switch: 4_100,
            idle_wakeup: Some(12_000),
            wake_remote: Some(3_000),
            reader_cycle_cpu: Some(9_000),
            deep_idle: vec![(1_000_000, 25_000)],
            syscall: 350,
            timer_cpu: 1_500,
            timer_late: 60_000,
            fork_parent: 20_000,
            fork_child: 9_000,
            tick: Ok(TickLateness { median: 1_000, p95: 3_000, max: 9_000, samples: 500 }),
            tick_gap: Ok(TickLateness { median: 1_000, p95: 2_000, max: 5_000, samples: 250 }),
            samples: (9, 9, 9),
        };
        assert_eq!(c.idle_exit(), Some(7_900));
        // Late by 60 us, of which the wakeup of an idle CPU is 12 us.
        assert_eq!(c.timer_latency(), 48_000);
        assert_eq!(
            c.cost_flags(),
            "--cost context_switch=4100ns --cost idle_exit=7900ns --cost wake_remote=3000ns --cost syscall=350ns \
             --cost fork=20000ns --cost thread_start=9000ns --cost timer_wakeup=1500ns --cost timer_latency=48000ns --cost tick_jitter=2000ns \
             --cost tick_spread=3414ns"
        );
        let text = format!(
            "duration = \"1s\"\n[machine]\n{}\n[[task]]\nname = \"t\"\nprogram = [ {{ run = \"1ms\" }} ]\n",
            c.toml()
        );
        let w = schedlab_sim::Workload::from_toml(&text, "calibrated.toml", &Default::default()).unwrap();
        assert_eq!(w.machine.costs.context_switch, 4_100);
        assert_eq!(w.machine.costs.idle_exit, 7_900);
        assert_eq!(w.machine.costs.wake_remote, 3_000);
        assert_eq!(w.machine.costs.syscall, 350);
        assert_eq!(w.machine.costs.fork, 20_000);
        assert_eq!(w.machine.costs.thread_start, 9_000);
        assert_eq!(w.machine.costs.timer_wakeup, 1_500);
        assert_eq!(w.machine.costs.timer_latency, schedlab_sim::workload::dist::Dist::Const(48_000));
        assert_eq!(w.machine.costs.tick_jitter, 2_000);
        assert_eq!(w.machine.costs.tick_spread, Some(3_414));
    }

    #[test]
    fn tick_lateness_is_measured_from_the_grid_whatever_its_phase() {
        let tick = 4_000_000;
        // A grid at 3.999 ms into the period: lateness 0..=19 us, some of
        // the expiries wrapping past the period's end.
        let mut expiries: Vec<(u32, Nanos)> =
            (0..100u64).map(|i| (0, i * tick + 3_999_000 + (i % 20) * 1_000)).collect();
        // CPU 1 on a grid of its own, half a period away, 1 us late each time.
        expiries.extend((0..100u64).map(|i| (1, i * tick + 2_000_000 + 1_000)));
        let l = lateness_from_expiries(&expiries, tick).unwrap();
        assert_eq!(l.max, 19_000);
        assert_eq!(l.median, 0);
        assert_eq!(l.p95, 17_000);
        assert_eq!(l.samples, 200);
        assert!(lateness_from_expiries(&expiries[..5], tick).is_none());
    }

    #[test]
    fn the_cpus_ticks_are_measured_apart_with_or_without_a_grid() {
        let tick = 4_000_000;
        // Both CPUs drift by 37 us a period (no grid); CPU 1 comes 0-19 us
        // after CPU 0, but for one tick it lost.
        let drift = |i: u64| i * (tick + 37_000);
        let mut expiries: Vec<(u32, Nanos)> = (0..100u64).map(|i| (0, drift(i))).collect();
        expiries.extend((0..100u64).filter(|&i| i != 50).map(|i| (1, drift(i) + (i % 20) * 1_000)));
        assert!(lateness_on_grid(&expiries, tick).unwrap_err().starts_with("the tick keeps no jiffy grid"));
        let gap = gaps_between_cpus(&expiries, tick).unwrap();
        assert_eq!((gap.samples, gap.median, gap.max), (99, 9_000, 19_000));
        assert_eq!(gap.spread(), 30_728);
        // One CPU alone has no gaps to measure.
        assert!(gaps_between_cpus(&expiries[..100], tick).unwrap_err().starts_with("only 0 ticks"));
    }

    #[test]
    fn a_silly_sample_scale_is_refused() {
        assert!(calibrate(0.0).is_err());
        assert!(calibrate(f64::NAN).is_err());
    }
}
