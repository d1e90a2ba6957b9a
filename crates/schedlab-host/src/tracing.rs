//! Exact per-switch data from the kernel: a private tracefs instance
//! (`instances/schedlab-PID`, so a user's own tracing is left alone) with
//! sched_switch, sched_wakeup(_new) and sched_migrate_task enabled for this
//! process's threads only, on the CLOCK_MONOTONIC trace clock. The instance
//! is removed when the run ends, however it ends.
//!
//! Where the kernel has them, timer:hrtimer_start and
//! timer:hrtimer_expire_entry are traced too, for one figure of the
//! machine rather than the workload: how late the kernel's hrtimers fired
//! (the tick, the hrtick that ends a PDS or EEVDF slice, the threads'
//! sleeps). In a virtual machine whose host did not run a vCPU on time
//! they fire late and every slice they end runs longer, which no figure of
//! the scheduler should be blamed for.

use schedlab_sim::Nanos;
use schedlab_sim::formats::ftrace::{self, SchedEvent};
use std::collections::HashMap;
use std::path::PathBuf;

pub struct Tracer {
    dir: PathBuf,
    nr_cpus: usize,
    /// The events enabled, as paths under events/.
    events: Vec<String>,
}

/// An event's path under events/: a bare name is a sched event.
fn event_path(ev: &str) -> String {
    if ev.contains('/') { ev.to_string() } else { format!("sched/{ev}") }
}

/// sched_waking, printed on the waker's CPU, says when a thread's signal
/// woke another: the split of a pipe hop's CPU before and after it.
const EVENTS: [&str; 5] = ["sched_switch", "sched_waking", "sched_wakeup", "sched_wakeup_new", "sched_migrate_task"];
/// A recorded program (`schedlab record`, a real program in a guest or on
/// this machine) adds sched_waking, printed in the waker's context (how a
/// replay learns who woke whom), the process events (fork makes a child
/// part of the program that forked it: hackbench's and make's processes;
/// exec renames a task, `sh` becoming `gzip`) and the hrtimer events that
/// say when a sleep was due (cyclictest's latency). Traced with
/// record-tgid, so each line names its process.
pub const PROGRAM_EVENTS: [&str; 10] = [
    "sched_switch",
    "sched_waking",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_migrate_task",
    "sched_process_fork",
    "sched_process_exec",
    "sched_process_exit",
    "timer/hrtimer_start",
    "timer/hrtimer_expire_entry",
];
/// The hrtimer events of [`TimerLateness`], traced where the kernel has
/// both.
const TIMER_EVENTS: [&str; 2] = ["timer/hrtimer_start", "timer/hrtimer_expire_entry"];
/// Per-CPU ring buffer size in KiB.
const BUFFER_KB: u32 = 16384;

/// Instances of run PID are `instances/schedlab-PID`.
const INSTANCE_PREFIX: &str = "schedlab-";

/// Where tracefs is, or why it cannot be used: not mounted, or mounted
/// where this user may not look (tracefs is 0700, root's).
fn tracefs_root() -> Result<PathBuf, String> {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let mut candidates: Vec<PathBuf> = mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 3 && f[2] == "tracefs").then(|| PathBuf::from(f[1]))
        })
        .collect();
    candidates.push(PathBuf::from("/sys/kernel/debug/tracing"));
    let mut denied = None;
    for root in candidates {
        match std::fs::metadata(root.join("instances")) {
            Ok(m) if m.is_dir() => return Ok(root),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => denied = Some(root),
            _ => {}
        }
    }
    Err(match denied {
        Some(root) => format!("tracefs at {} is not accessible to this user: run as root", root.display()),
        None => "tracefs is not mounted (as root: mount -t tracefs nodev /sys/kernel/tracing)".into(),
    })
}

/// Removes the trace instances of runs whose process is gone: once its
/// owner has died an instance's pid filter is empty and it would go on
/// recording (or holding buffers for) the whole machine.
pub fn remove_stale() -> Vec<String> {
    let Ok(root) = tracefs_root() else { return Vec::new() };
    let mut said = Vec::new();
    for (dir, pid) in crate::signals::stale_entries(&root.join("instances"), INSTANCE_PREFIX) {
        let _ = std::fs::write(dir.join("tracing_on"), "0");
        if std::fs::remove_dir(&dir).is_ok() {
            said.push(format!(
                "removed trace instance {}, left by schedlab run {pid}, which was killed",
                dir.display()
            ));
        }
    }
    said
}

/// Why the first of `events` (names under events/, a bare name being a
/// sched event) cannot be traced on this kernel, if one cannot: asked for
/// by name, a missing one is an error, not a run without it.
pub fn missing_event(events: &[String]) -> Option<String> {
    let root = tracefs_root().ok()?;
    events.iter().find_map(|ev| {
        let dir = root.join("events").join(event_path(ev));
        (!dir.is_dir()).then(|| {
            format!(
                "this kernel has no trace event {ev} (no {}): {} lists those it has",
                dir.display(),
                root.join("available_events").display()
            )
        })
    })
}

impl Tracer {
    /// Sets up the instance (tracing still off) for this process's threads,
    /// or for every task with `whole_machine`, with the `extra` events the
    /// user asked for (which [`missing_event`] has found there), or says
    /// why it cannot.
    pub fn new(nr_cpus: usize, whole_machine: bool, extra: &[String]) -> Result<Tracer, String> {
        let root = tracefs_root()?;
        let mut events = EVENTS.to_vec();
        if TIMER_EVENTS.iter().all(|e| root.join("events").join(e).is_dir()) {
            events.extend(TIMER_EVENTS);
        }
        for ev in extra {
            if !events.contains(&ev.as_str()) {
                events.push(ev);
            }
        }
        Tracer::with_events(nr_cpus, &events, "exact per-switch data", !whole_machine)
    }

    /// Sets up the instance for `events` (sched_switch, or a path under
    /// events/ such as timer/hrtimer_expire_entry): of this thread and every thread
    /// or process it creates from now on (`follow_self`), or of the whole
    /// machine, as `trace-cmd record -e sched` records.
    pub fn with_events(nr_cpus: usize, events: &[&str], what: &str, follow_self: bool) -> Result<Tracer, String> {
        let root = tracefs_root()?;
        let dir = root.join("instances").join(format!("{INSTANCE_PREFIX}{}", crate::signals::run_name()));
        std::fs::create_dir(&dir)
            .map_err(|e| format!("cannot create tracefs instance {} ({e}); run as root for {what}", dir.display()))?;
        let t = Tracer { dir, nr_cpus, events: events.iter().map(|e| event_path(e)).collect() };
        let set = |file: &str, value: &str| {
            std::fs::write(t.dir.join(file), value).map_err(|e| format!("tracefs {file}: {e}"))
        };
        set("tracing_on", "0")?;
        set("trace_clock", "mono")?;
        set("buffer_size_kb", &BUFFER_KB.to_string())?;
        if follow_self {
            set("options/event-fork", "1")?;
            // The thread that will create the task threads; event-fork adds
            // every thread it (and they) create.
            set("set_event_pid", &crate::sys::gettid().to_string())?;
        }
        for ev in &t.events {
            set(&format!("events/{ev}/enable"), "1")?;
        }
        Ok(t)
    }

    /// A trace of a recorded program and everything else the machine runs:
    /// [`PROGRAM_EVENTS`] with record-tgid, which heads each line with its
    /// task's process (what `record` and a guest's programs trace).
    pub fn for_programs(nr_cpus: usize, what: &str) -> Result<Tracer, String> {
        let t = Tracer::with_events(nr_cpus, &PROGRAM_EVENTS, what, false)?;
        t.set_option("record-tgid", true)?;
        Ok(t)
    }

    /// Sets one of the instance's trace options (options/NAME), e.g.
    /// record-tgid, which heads each line with its task's thread group.
    fn set_option(&self, name: &str, on: bool) -> Result<(), String> {
        std::fs::write(self.dir.join("options").join(name), if on { "1" } else { "0" })
            .map_err(|e| format!("tracefs option {name}: {e}"))
    }

    pub fn set_on(&self, on: bool) {
        let _ = std::fs::write(self.dir.join("tracing_on"), if on { "1" } else { "0" });
    }

    /// The recorded events, how many the ring buffers dropped, and how
    /// late the hrtimers that expired in [from, to] fired (and how far apart
    /// the ticks, of `tick_period`, came). With `keep_text`, the trace as
    /// tracefs printed it too.
    pub fn collect(
        &self,
        from: Nanos,
        to: Nanos,
        tick_period: Option<Nanos>,
        keep_text: bool,
    ) -> Result<Collected, String> {
        let (text, overrun) = self.text()?;
        Ok(Collected {
            events: ftrace::parse(&text)?,
            overrun,
            timers: timer_lateness(&text, from, to, tick_period),
            text: keep_text.then_some(text),
        })
    }

    /// The trace as tracefs prints it, and how many events were dropped.
    pub fn text(&self) -> Result<(String, u64), String> {
        self.set_on(false);
        // A task names itself with any bytes (prctl PR_SET_NAME): a comm
        // that is not UTF-8 must not cost the whole trace.
        let bytes = std::fs::read(self.dir.join("trace")).map_err(|e| format!("reading the trace: {e}"))?;
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        let mut overrun = 0;
        for cpu in 0..self.nr_cpus {
            if let Ok(stats) = std::fs::read_to_string(self.dir.join(format!("per_cpu/cpu{cpu}/stats"))) {
                overrun += stats
                    .lines()
                    .find_map(|l| l.strip_prefix("overrun:"))
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
        Ok((text, overrun))
    }
}

/// What a run's trace holds.
pub struct Collected {
    pub events: Vec<SchedEvent>,
    pub overrun: u64,
    pub timers: Option<TimerLateness>,
    /// The trace as tracefs printed it, when asked for.
    pub text: Option<String>,
}

/// How late the kernel's hrtimers fired: for each expiry, `now` of
/// hrtimer_expire_entry past the `expires` its hrtimer_start set (zero
/// where it fired early, within its slack).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimerLateness {
    pub median: Nanos,
    pub p90: Nanos,
    pub samples: usize,
    /// How far apart the CPUs' ticks of one jiffy came, at the median
    /// ([`tick_gap`]), where the trace has enough of them.
    pub tick_gap: Option<Nanos>,
    /// The lateness of the sleeps' timers that fired on a busy CPU, at
    /// [`SLEEP_PERCENTILES`]: a timer's delivery alone, which a
    /// simulation draws as its `timer_latency` (an idle CPU's exit is its
    /// `idle_exit`). None below [`SLEEP_SAMPLES_MIN`] of them.
    pub busy_sleeps: Option<[Nanos; SLEEP_PERCENTILES.len()]>,
    /// Of those, from the expiry to the sched_waking of the task that had
    /// armed it, at the median: the expiry handler's own time, which the
    /// lateness above stops short of and a simulation's wakeup starts
    /// after (12 us in a TCG guest, where the switch that follows is timed
    /// from the sched_waking). None below [`SLEEP_SAMPLES_MIN`].
    pub busy_sleep_to_waking: Option<Nanos>,
}

/// Fewer expiries than this say nothing of a run's timers.
pub const TIMER_SAMPLES_MIN: usize = 20;

/// The percentiles of [`TimerLateness::busy_sleeps`]: the tail as well as
/// the middle, since a timer a period late costs its thread the period
/// (cyclictest's missed expiries).
pub const SLEEP_PERCENTILES: [f64; 10] = [0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 100.0];

/// Fewer busy sleeps than this give no 99th percentile.
pub const SLEEP_SAMPLES_MIN: usize = 200;

/// The lateness of the hrtimers that expired in [from, to] (the clock of
/// their base, CLOCK_MONOTONIC for all but a few), each paired with the
/// hrtimer_start that armed it; `None` below [`TIMER_SAMPLES_MIN`] pairs.
///
/// The instance records events only in the context of the workload's
/// threads (set_event_pid), so a CPU's own timers (the tick, the hrtick)
/// are stopped, re-armed and fired unseen while it idles: a tick armed
/// before its CPU went idle and seen to expire after it would pair with a
/// stale start, whole ticks "late" (`schedlab host lat-ctx` on a quiet
/// machine: 32 ms at the 90th percentile). Such pairs are dropped; a
/// sleep's timer, armed by its own thread each time, is kept across its
/// CPU's idle time. A sleep's timer is one whose function is
/// hrtimer_wakeup or, where the kernel prints functions as addresses (the
/// guest kernels), one whose expiry wakes the task that armed it.
pub fn timer_lateness(text: &str, from: Nanos, to: Nanos, tick_period: Option<Nanos>) -> Option<TimerLateness> {
    let value = |fields: &str, key: &str| -> Option<u64> {
        fields.split_whitespace().find_map(|f| f.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
    };
    // A kernel whose pointer hashing is not ready prints every pointer as
    // (____ptrval____): no two timers are told apart.
    let pointer = |fields: &str| -> Option<String> {
        fields
            .split_whitespace()
            .find_map(|f| f.strip_prefix("hrtimer=").filter(|p| !p.contains("ptrval")).map(str::to_string))
    };
    // The CPU and pid of a trace line: "comm-pid [NNN] flags ts: ...".
    let cpu_of = |head: &str| -> Option<usize> {
        let open = head.find('[')?;
        head[open + 1..].split(']').next()?.trim().parse().ok()
    };
    let pid_of = |head: &str| -> Option<u64> {
        let open = head.find('[')?;
        head[..open].trim_end().rsplit_once('-')?.1.parse().ok()
    };
    /// An expiry whose kind the next line on its CPU settles.
    struct Expiry {
        late: Nanos,
        /// The expiry's `now`.
        fired: Nanos,
        armer: Option<u64>,
        named_sleep: bool,
        /// Its CPU has not idled since the timer was armed.
        same_busy_stretch: bool,
        /// It interrupted a task, not the idle loop.
        on_busy_cpu: bool,
    }
    let mut idled: Vec<u64> = Vec::new();
    let mut armed: HashMap<String, (Nanos, usize, u64, Option<u64>)> = HashMap::new();
    // Every expiry in [from, to], by its function: (cpu, now).
    let mut fired: HashMap<String, Vec<(u32, Nanos)>> = HashMap::new();
    let mut pending: HashMap<usize, Expiry> = HashMap::new();
    let mut late = Vec::new();
    let mut busy_sleeps = Vec::new();
    let mut to_waking = Vec::new();
    // `woke`: the task and time of the sched_waking that followed the
    // expiry on its CPU, if one did.
    let mut settle = |e: Expiry, woke: Option<(u64, Nanos)>, late: &mut Vec<Nanos>, busy_sleeps: &mut Vec<Nanos>| {
        let woke_armer = woke.filter(|&(pid, _)| e.armer == Some(pid));
        let a_sleep = e.named_sleep || woke_armer.is_some();
        if a_sleep || e.same_busy_stretch {
            late.push(e.late);
        }
        if a_sleep && e.on_busy_cpu {
            busy_sleeps.push(e.late);
            if let Some((_, at)) = woke_armer.or(woke.filter(|_| e.named_sleep)) {
                to_waking.push(at.saturating_sub(e.fired));
            }
        }
    };
    // The time of a trace line: the last field of its head.
    let ts_of = |head: &str| schedlab_sim::formats::ftrace::parse_ts(head.rsplit(' ').next()?).ok();
    for line in text.lines() {
        let Some((head, rest)) = line.split_once(": ") else { continue };
        let Some(cpu) = cpu_of(head) else { continue };
        let Some((event, fields)) = rest.split_once(": ") else { continue };
        if let Some(e) = pending.remove(&cpu) {
            let woke = matches!(event, "sched_waking" | "sched_wakeup")
                .then(|| Some((value(fields, "pid")?, ts_of(head)?)))
                .flatten();
            settle(e, woke, &mut late, &mut busy_sleeps);
        }
        match event {
            "sched_switch" if fields.split_whitespace().any(|f| f == "next_pid=0") => {
                if idled.len() <= cpu {
                    idled.resize(cpu + 1, 0);
                }
                idled[cpu] += 1;
            }
            "hrtimer_start" => {
                if let (Some(p), Some(expires)) = (pointer(fields), value(fields, "expires")) {
                    armed.insert(p, (expires, cpu, idled.get(cpu).copied().unwrap_or(0), pid_of(head)));
                }
            }
            "hrtimer_expire_entry" => {
                if let (Some(function), Some(now)) = (
                    fields.split_whitespace().find_map(|f| f.strip_prefix("function=")),
                    value(fields, "now").filter(|now| (from..=to).contains(now)),
                ) {
                    fired.entry(function.to_string()).or_default().push((cpu as u32, now));
                }
                if let (Some(p), Some(now)) = (pointer(fields), value(fields, "now"))
                    && let Some((expires, armed_on, idled_at_start, armer)) = armed.remove(&p)
                    && (from..=to).contains(&now)
                {
                    pending.insert(
                        cpu,
                        Expiry {
                            late: now.saturating_sub(expires),
                            fired: now,
                            armer,
                            named_sleep: fields.contains("function=hrtimer_wakeup"),
                            same_busy_stretch: idled.get(armed_on).copied().unwrap_or(0) == idled_at_start,
                            on_busy_cpu: pid_of(head).is_some_and(|pid| pid != 0),
                        },
                    );
                }
            }
            _ => {}
        }
    }
    for (_, e) in pending.drain() {
        settle(e, None, &mut late, &mut busy_sleeps);
    }
    if late.len() < TIMER_SAMPLES_MIN {
        return None;
    }
    to_waking.sort_unstable();
    late.sort_unstable();
    busy_sleeps.sort_unstable();
    let at = |v: &[Nanos], q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    Some(TimerLateness {
        median: at(&late, 0.5),
        p90: at(&late, 0.9),
        samples: late.len(),
        tick_gap: tick_period.and_then(|period| tick_gap(&fired, period)),
        busy_sleeps: (busy_sleeps.len() >= SLEEP_SAMPLES_MIN)
            .then(|| SLEEP_PERCENTILES.map(|p| at(&busy_sleeps, p / 100.0))),
        busy_sleep_to_waking: (to_waking.len() >= SLEEP_SAMPLES_MIN).then(|| at(&to_waking, 0.5)),
    })
}

/// The tick hrtimer's expiries among `fired` (each function's (cpu, now)),
/// ticking every `period`: tick_sched_timer (tick_nohz_handler since 6.9)
/// where the kernel names functions, and otherwise the function that fires
/// on the most CPUs with the most expiries a period apart (the guest
/// kernels print addresses; a sleeper's timer fires on one CPU, or at its
/// own period).
pub(crate) fn tick_expiries(fired: &HashMap<String, Vec<(u32, Nanos)>>, period: Nanos) -> Option<&[(u32, Nanos)]> {
    let regular = |expiries: &[(u32, Nanos)]| -> (usize, usize) {
        let mut cpus: Vec<u32> = expiries.iter().map(|&(c, _)| c).collect();
        cpus.sort_unstable();
        cpus.dedup();
        // Consecutive expiries on one CPU a period apart (within a tenth).
        let mut on_period = 0;
        for &cpu in &cpus {
            let mut at: Vec<Nanos> = expiries.iter().filter(|&&(c, _)| c == cpu).map(|&(_, t)| t).collect();
            at.sort_unstable();
            on_period += at.windows(2).filter(|w| (w[1] - w[0]).abs_diff(period) < period / 10).count();
        }
        (cpus.len(), on_period)
    };
    let named = fired.iter().find(|(f, _)| matches!(f.as_str(), "tick_sched_timer" | "tick_nohz_handler"));
    named.or_else(|| fired.iter().max_by_key(|(f, e)| (regular(e), f.as_str()))).map(|(_, e)| e.as_slice())
}

/// The median gap between the CPUs' ticks of one jiffy (of `period`), from
/// the tick's expiries among `fired` (`tick_expiries`). Only busy CPUs
/// tick (NO_HZ), so a jiffy counts where CPU 0 and another both did.
pub fn tick_gap(fired: &HashMap<String, Vec<(u32, Nanos)>>, period: Nanos) -> Option<Nanos> {
    let gap = crate::calibrate::gaps_between_cpus(tick_expiries(fired, period)?, period).ok()?;
    Some(gap.median)
}

impl Drop for Tracer {
    fn drop(&mut self) {
        self.set_on(false);
        for ev in &self.events {
            let _ = std::fs::write(self.dir.join(format!("events/{ev}/enable")), "0");
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tick_is_told_from_other_timers_by_its_period_on_every_cpu() {
        let period = 4_000_000;
        let mut fired: HashMap<String, Vec<(u32, Nanos)>> = HashMap::new();
        // An unnamed tick (an address) on 2 CPUs, CPU 1's 0-29 us after
        // CPU 0's; a sleeper's timer firing more often, at 1 ms, on CPU 1;
        // another on both CPUs at an irregular interval.
        for i in 0..50u64 {
            fired.entry("0xffffffff81234560".into()).or_default().push((0, i * period));
            fired.entry("0xffffffff81234560".into()).or_default().push((1, i * period + (i % 30) * 1_000));
            fired.entry("0xffffffff8199aa00".into()).or_default().push((i as u32 % 2, i * 7_777_777));
        }
        for i in 0..200u64 {
            fired.entry("0xffffffff81100000".into()).or_default().push((1, i * 1_000_000 + 500_000));
        }
        assert_eq!(tick_gap(&fired, period), Some(12_000));
        // A named tick wins whatever fires most.
        fired.insert(
            "tick_nohz_handler".into(),
            (0..40u64).flat_map(|i| [(0, i * period), (1, i * period + 2_000)]).collect(),
        );
        assert_eq!(tick_gap(&fired, period), Some(2_000));
    }

    #[test]
    fn timer_lateness_pairs_each_expiry_with_the_start_that_armed_it() {
        let mut text = String::from("# tracer: nop\n");
        // 30 ticks 4 ms apart, each firing 50 us late but the last four
        // (900 us); an expiry of a timer armed before the trace began.
        for i in 0..30u64 {
            let expires = 1_000_000_000 + i * 4_000_000;
            let late = if i >= 26 { 900_000 } else { 50_000 };
            text += &format!(
                "  hog-1 [000] d.h1. 1.0: hrtimer_start: hrtimer=00000000deadbeef function=tick_nohz_handler \
                 expires={expires} softexpires={expires} mode=ABS|PINNED|HARD\n"
            );
            text += &format!(
                "  hog-1 [000] d.h1. 1.0: hrtimer_expire_entry: hrtimer=00000000deadbeef now={} \
                 function=tick_nohz_handler/0x0\n",
                expires + late
            );
        }
        text += "  hog-1 [001] d.h1. 1.0: hrtimer_expire_entry: hrtimer=00000000cafe now=1000000000 function=x\n";
        let all = timer_lateness(&text, 0, u64::MAX, None).unwrap();
        assert_eq!(
            all,
            TimerLateness {
                median: 50_000,
                p90: 900_000,
                samples: 30,
                busy_sleeps: None,
                tick_gap: None,
                busy_sleep_to_waking: None
            }
        );
        // Only the expiries inside the run's window count, and 19 say nothing.
        assert_eq!(timer_lateness(&text, 1_000_000_000, 1_000_000_000 + 18 * 4_000_000 + 50_000, None), None);
        let late_half = timer_lateness(&text, 1_000_000_000 + 6 * 4_000_000, u64::MAX, None).unwrap();
        assert_eq!((late_half.samples, late_half.p90), (24, 900_000));
    }

    #[test]
    fn a_tick_seen_across_its_cpus_idle_time_is_not_paired() {
        // 25 ticks on CPU 0, each armed by the workload's thread, after
        // which the CPU idles (the tick is stopped and restarted unseen)
        // and the next tick seen fires 8 ms after the stale start; and 25
        // sleeps on CPU 1 across its idle time, each 30 us late.
        let mut text = String::from("# tracer: nop\n");
        for i in 0..25u64 {
            let t = 1_000_000_000 + i * 20_000_000;
            text += &format!(
                "  ping-1 [000] d.h1. 1.0: hrtimer_start: hrtimer=00000000deadbeef function=tick_nohz_handler \
                 expires={} softexpires={} mode=ABS|PINNED|HARD\n",
                t + 4_000_000,
                t + 4_000_000
            );
            text += "  ping-1 [000] d..2. 1.0: sched_switch: prev_comm=ping prev_pid=1 prev_prio=120 prev_state=S \
                     ==> next_comm=swapper/0 next_pid=0 next_prio=120\n";
            text += &format!(
                "  ping-1 [000] d.h1. 1.0: hrtimer_expire_entry: hrtimer=00000000deadbeef now={} \
                 function=tick_nohz_handler\n",
                t + 12_000_000
            );
            text += &format!(
                "  sleeper-2 [001] d..1. 1.0: hrtimer_start: hrtimer=00000000cafe function=hrtimer_wakeup \
                 expires={t} softexpires={t} mode=REL\n"
            );
            text += "  sleeper-2 [001] d..2. 1.0: sched_switch: prev_comm=sleeper prev_pid=2 prev_prio=120 \
                     prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n";
            text += &format!(
                "  hog-3 [001] d.h1. 1.0: hrtimer_expire_entry: hrtimer=00000000cafe now={} function=hrtimer_wakeup\n",
                t + 30_000
            );
        }
        let l = timer_lateness(&text, 0, u64::MAX, None).unwrap();
        assert_eq!(
            l,
            TimerLateness {
                median: 30_000,
                p90: 30_000,
                samples: 25,
                busy_sleeps: None,
                tick_gap: None,
                busy_sleep_to_waking: None
            }
        );
    }

    #[test]
    fn a_sleeps_timer_is_told_by_the_wakeup_of_its_armer_and_its_busy_lateness_kept_as_quantiles() {
        // A guest prints timer functions as addresses. 250 sleeps of a
        // cyclic thread whose expiries interrupt a hog, 50 us late but the
        // last five (2 ms); 30 ticks it arms too, which wake nobody and
        // fire 8 ms "late" across an idle stretch; 10 sleeps that fire
        // on an idle CPU, 70 us late: not a busy CPU's delivery.
        let mut text = String::from("# tracer: nop\n");
        for i in 0..250u64 {
            let expires = 1_000_000_000 + i * 1_000_000;
            let late = if i >= 245 { 2_000_000 } else { 50_000 };
            text += &format!(
                "  sl-cyclic-41 [000] d.... 1.0: hrtimer_start: hrtimer=00000000a1 function=0xffffffff810ac831 \
                 expires={expires} softexpires={expires} mode=ABS was_armed=0\n\
                 sl-hog-7 [000] d.h.. 1.0: hrtimer_expire_entry: hrtimer=00000000a1 function=0xffffffff810ac831 now={}\n\
                 sl-hog-7 [000] dNh.. {}.{:06}: sched_wakeup: comm=sl-cyclic pid=41 prio=120 target_cpu=000\n",
                expires + late,
                (expires + late + 12_000) / 1_000_000_000,
                (expires + late + 12_000) % 1_000_000_000 / 1_000
            );
        }
        for i in 0..30u64 {
            let expires = 2_000_000_000 + i * 4_000_000;
            text += &format!(
                "  sl-cyclic-41 [001] d.... 1.0: hrtimer_start: hrtimer=00000000b2 function=0xffffffff810b82cf \
                 expires={expires} softexpires={expires} mode=ABS\n\
                 sl-cyclic-41 [001] d.... 1.0: sched_switch: prev_comm=sl-cyclic prev_pid=41 prev_prio=120 \
                 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n\
                 <idle>-0 [001] d.h.. 1.0: hrtimer_expire_entry: hrtimer=00000000b2 function=0xffffffff810b82cf now={}\n",
                expires + 8_000_000
            );
        }
        for i in 0..10u64 {
            let expires = 3_000_000_000 + i * 1_000_000;
            text += &format!(
                "  sl-cyclic-41 [001] d.... 1.0: hrtimer_start: hrtimer=00000000a1 function=0xffffffff810ac831 \
                 expires={expires} softexpires={expires} mode=ABS\n\
                 <idle>-0 [001] d.h.. 1.0: hrtimer_expire_entry: hrtimer=00000000a1 function=0xffffffff810ac831 now={}\n\
                 <idle>-0 [001] dNh.. 1.0: sched_wakeup: comm=sl-cyclic pid=41 prio=120 target_cpu=001\n",
                expires + 70_000
            );
        }
        let l = timer_lateness(&text, 0, u64::MAX, None).unwrap();
        assert_eq!(l.samples, 260, "the ticks seen across an idle stretch are dropped, every sleep kept");
        let q = l.busy_sleeps.expect("250 busy sleeps");
        let at = |p: f64| q[SLEEP_PERCENTILES.iter().position(|&x| x == p).unwrap()];
        assert_eq!((at(0.0), at(50.0), at(95.0)), (50_000, 50_000, 50_000));
        assert_eq!((at(99.0), at(100.0)), (2_000_000, 2_000_000));
        // Each woke its thread 12 us after it fired (the trace's us).
        assert_eq!(l.busy_sleep_to_waking, Some(12_000));
        // Pointers printed before the kernel could hash them pair nothing.
        let unhashed = text.replace("00000000a1", "(____ptrval____)").replace("00000000b2", "(____ptrval____)");
        assert_eq!(timer_lateness(&unhashed, 0, u64::MAX, None), None);
        // Without the wakeups a sleep is not told from a tick.
        let unnamed: String = text.lines().filter(|l| !l.contains("sched_wakeup")).map(|l| format!("{l}\n")).collect();
        assert_eq!(timer_lateness(&unnamed, 0, u64::MAX, None).unwrap().busy_sleeps, None);
    }
}
