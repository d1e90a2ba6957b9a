//! Exact per-switch data from the kernel: a private tracefs instance
//! (`instances/schedlab-PID`, so a user's own tracing is left alone) with
//! sched_switch, sched_wakeup(_new) and sched_migrate_task enabled for this
//! process's threads only, on the CLOCK_MONOTONIC trace clock. The instance
//! is removed when the run ends, however it ends.

use schedlab_sim::formats::ftrace::{self, SchedEvent};
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

const EVENTS: [&str; 4] = ["sched_switch", "sched_wakeup", "sched_wakeup_new", "sched_migrate_task"];
/// `schedlab record` adds sched_waking, printed in the waker's context
/// (how a replay learns who woke whom), and sched_process_exec, which
/// renames a task (`sh` becoming `gzip`).
pub const RECORD_EVENTS: [&str; 6] =
    ["sched_switch", "sched_waking", "sched_wakeup", "sched_wakeup_new", "sched_migrate_task", "sched_process_exec"];
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

impl Tracer {
    /// Sets up the instance (tracing still off), or says why it cannot.
    pub fn new(nr_cpus: usize) -> Result<Tracer, String> {
        Tracer::with_events(nr_cpus, &EVENTS, "exact per-switch data", true)
    }

    /// Sets up the instance for `events` (sched_switch, or a path under
    /// events/ such as timer/hrtimer_expire_entry): of this thread and every thread
    /// or process it creates from now on (`follow_self`), or of the whole
    /// machine, as `trace-cmd record -e sched` records.
    pub fn with_events(nr_cpus: usize, events: &[&str], what: &str, follow_self: bool) -> Result<Tracer, String> {
        let root = tracefs_root()?;
        let dir = root.join("instances").join(format!("{INSTANCE_PREFIX}{}", std::process::id()));
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

    pub fn set_on(&self, on: bool) {
        let _ = std::fs::write(self.dir.join("tracing_on"), if on { "1" } else { "0" });
    }

    /// The recorded events, and how many the ring buffers dropped.
    pub fn collect(&self) -> Result<(Vec<SchedEvent>, u64), String> {
        let (text, overrun) = self.text()?;
        Ok((ftrace::parse(&text)?, overrun))
    }

    /// The trace as tracefs prints it, and how many events were dropped.
    pub fn text(&self) -> Result<(String, u64), String> {
        self.set_on(false);
        let text = std::fs::read_to_string(self.dir.join("trace")).map_err(|e| format!("reading the trace: {e}"))?;
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

impl Drop for Tracer {
    fn drop(&mut self) {
        self.set_on(false);
        for ev in &self.events {
            let _ = std::fs::write(self.dir.join(format!("events/{ev}/enable")), "0");
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}
