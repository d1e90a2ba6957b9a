//! A run measured from a later time than its start (`Workload::measure_from`):
//! at that time the engine notes every count so far, and the report holds
//! only what came after, as a real runner's report holds only what its
//! threads did after its t0. Noting changes nothing the policy sees: the
//! running tasks' time is read as update_curr would charge it, not charged,
//! so a run with a window schedules exactly as one without.

use super::{Engine, TaskStats, Uncharged};
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
            idle.push(run.idle_at(now));
            overhead.push(run.overhead_at(self.sys.cpus[cpu].curr.is_some(), now));
        }
        let mut tasks = Vec::with_capacity(self.progs.len());
        for (t, prog) in self.progs.iter().enumerate() {
            let info = &self.sys.tasks[t];
            let mut stats = prog.stats.clone();
            let mut sum_exec = info.sum_exec;
            match info.state {
                TaskState::Running => {
                    let c = Uncharged::of(&self.cpu_run[info.cpu as usize], prog, now);
                    sum_exec += c.ran;
                    stats.work += c.work();
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
