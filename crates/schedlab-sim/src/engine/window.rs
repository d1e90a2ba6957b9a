//! A run measured from a later time than its start (`Workload::measure_from`):
//! at that time the engine notes every count so far, and the report holds
//! only what came after, as a real runner's report holds only what its
//! threads did after its t0. Noting changes nothing the policy sees: the
//! running tasks' time is read as update_curr would charge it, not charged,
//! so a run with a window schedules exactly as one without.

use super::{CpuRun, Engine, Prog, TaskStats};
use crate::policy::{TaskId, TaskState};
use crate::report::Hist;
use crate::time::Nanos;

/// The counts at the window's start, subtracted at the end.
pub(super) struct Baseline {
    pub(super) at: Nanos,
    pub(super) switches: u64,
    pub(super) migrations: u64,
    pub(super) events: u64,
    /// Per CPU: idle time and switch overhead before `at`.
    pub(super) idle: Vec<Nanos>,
    pub(super) overhead: Vec<Nanos>,
    /// Per task that existed at `at`: its CPU time and counters then.
    pub(super) tasks: Vec<(Nanos, TaskStats)>,
}

impl Baseline {
    /// What task `t` had at the window's start (nothing if created since).
    pub(super) fn task(&self, t: TaskId) -> (Nanos, TaskStats) {
        self.tasks.get(t as usize).cloned().unwrap_or_default()
    }
}

impl Engine<'_> {
    pub(super) fn begin_window(&mut self) {
        let now = self.sys.now;
        let mut idle = Vec::with_capacity(self.cpu_run.len());
        let mut overhead = Vec::with_capacity(self.cpu_run.len());
        for (cpu, run) in self.cpu_run.iter().enumerate() {
            idle.push(run.idle_ns + run.idle_since.map_or(0, |s| now.saturating_sub(s)));
            // The switch to the current task is the CPU's overhead when
            // the task did not pay for it; it is added when the task leaves.
            let running = self.sys.cpus[cpu].curr.is_some();
            overhead.push(run.overhead_ns + if running { run.exec_start.min(now) - run.switch_at.min(now) } else { 0 });
        }
        let mut tasks = Vec::with_capacity(self.progs.len());
        for (t, prog) in self.progs.iter().enumerate() {
            let info = &self.sys.tasks[t];
            let mut stats = prog.stats.clone();
            let mut sum_exec = info.sum_exec;
            match info.state {
                TaskState::Running => {
                    let (ran, work) = uncharged(&self.cpu_run[info.cpu as usize], prog, now);
                    sum_exec += ran;
                    stats.work += work;
                }
                TaskState::Runnable => stats.run_delay += now.saturating_sub(prog.runnable_since),
                _ => {}
            }
            tasks.push((sum_exec, stats));
        }
        // Maxima and histograms cannot be subtracted: they start again.
        for prog in &mut self.progs {
            prog.stats.lat_max = 0;
        }
        self.spec_lat.iter_mut().for_each(|h| *h = Hist::default());
        self.spec_rps.iter_mut().for_each(|h| *h = Hist::default());
        self.baseline = Some(Baseline {
            at: now,
            switches: self.switches,
            migrations: self.sys.migrations,
            events: self.events,
            idle,
            overhead,
            tasks,
        });
    }
}

/// The CPU time a running task has had since its last charge, and the
/// part of it that was asked-for work: what `Engine::sync` would add.
fn uncharged(run: &CpuRun, prog: &Prog, now: Nanos) -> (Nanos, Nanos) {
    let from = run.last_sync.max(run.exec_start);
    let ran = now.saturating_sub(from);
    let done = ran.min(prog.remaining);
    (ran, done - done.min(prog.penalty))
}
