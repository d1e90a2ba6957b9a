//! The end of a run: each CPU's busy and idle time closed at the stop, the
//! policy and pending events freed, and the task rows handed to
//! [`crate::report::assemble`]; a run measured from a later time than its
//! start (window.rs) reports what came after it, its times counted from it.
//! The machine's own tasks (`TaskSpec::background`) are left out of it:
//! they took CPUs, which the other tasks' figures show, but their switches,
//! migrations, latencies and rows are not the workload's. Their CPU time
//! stays in the CPUs' busy time (the simulated machine was busy) and is
//! the figure `other_tasks_cpu_pct`, as a real run traced whole reports
//! what the machine ran besides the workload.

use super::Engine;
use crate::policy::{TaskId, TaskState};
use crate::report::{CpuReport, Report, RunCounts, TaskRaw, assemble};
use crate::time::Nanos;

impl Engine<'_> {
    pub(super) fn report(mut self, stop: Nanos, finished: bool) -> Report {
        let w = self.w;
        let base = self.baseline.take();
        let from = base.as_ref().map_or(0, |b| b.at);
        let mut per_cpu = Vec::new();
        for (cpu, run) in self.cpu_run.iter().enumerate() {
            let (idle_before, overhead_before) = base.as_ref().map_or((0, 0), |b| (b.idle[cpu], b.overhead[cpu]));
            let idle_ns = run.idle_at(stop) - idle_before;
            per_cpu.push(CpuReport {
                cpu: cpu as u32,
                busy_ns: (stop - from) - idle_ns,
                idle_ns,
                switch_overhead_ns: run.overhead_at(self.sys.cpus[cpu].curr.is_some(), stop) - overhead_before,
            });
        }
        let mut head = Report {
            source: "simulated".into(),
            scheduler: self.policy.name().into(),
            workload: w.name.clone(),
            seed: w.seed,
            cpus: self.sys.nr_cpus,
            hz: w.machine.hz,
            tunables: self.policy.tunables().into_iter().map(|t| (t.name.to_string(), t.value)).collect(),
            per_cpu,
            extra: self.policy.extra_metrics(&self.sys),
            absent: self.policy.unsupported(&self.sys),
            host: None,
            ..Report::default()
        };
        let (mut background_switches, mut background_migrations, mut background_cpu) = (0, 0, 0);
        for (t, (info, prog)) in self.sys.tasks.iter().zip(&self.progs).enumerate() {
            if w.tasks[info.spec as usize].background {
                let (exec0, s0) = base.as_ref().map(|b| b.task(t as TaskId)).unwrap_or_default();
                let s = &prog.stats;
                background_cpu += info.sum_exec - exec0;
                background_switches += (s.voluntary + s.involuntary) - (s0.voluntary + s0.involuntary);
                background_migrations += s.migrations - s0.migrations;
            }
        }
        if w.tasks.iter().any(|t| t.background) {
            let capacity = (stop - from).max(1) as f64 * self.sys.nr_cpus as f64;
            head.extra.push((crate::report::OTHER_TASKS_CPU_PCT.into(), background_cpu as f64 * 100.0 / capacity));
        }
        let counts = RunCounts {
            stop: stop - from,
            finished,
            context_switches: self.switches - base.as_ref().map_or(0, |b| b.switches) - background_switches,
            migrations: self.sys.migrations - base.as_ref().map_or(0, |b| b.migrations) - background_migrations,
            events: self.events - base.as_ref().map_or(0, |b| b.events),
        };
        // The policy's state and the pending events are not part of the
        // report: freed before the task rows are built, they do not add to
        // the run's peak memory (with a million tasks, hundreds of MB).
        let Engine { sys, progs, mut spec_lat, mut spec_rps, policy, queue, .. } = self;
        for (spec, _) in w.tasks.iter().enumerate().filter(|(_, s)| s.background) {
            spec_lat[spec] = Default::default();
            spec_rps[spec] = Default::default();
        }
        drop(policy);
        drop(queue);
        let raw: Vec<TaskRaw> = sys
            .tasks
            .iter()
            .zip(&progs)
            .enumerate()
            // A task gone before the window opened is not in its report.
            .filter(|(_, (info, prog))| info.state != TaskState::New && prog.stats.exited.is_none_or(|e| e > from))
            .filter(|(_, (info, _))| !w.tasks[info.spec as usize].background)
            .map(|(t, (info, prog))| {
                let s = &prog.stats;
                let (exec0, s0) = base.as_ref().map(|b| b.task(t as TaskId)).unwrap_or_default();
                let spec = &w.tasks[info.spec as usize];
                TaskRaw {
                    name: spec.task_name(t as TaskId),
                    spec: info.spec,
                    cpu_time: info.sum_exec - exec0,
                    created: s.created.saturating_sub(from),
                    exited: s.exited.map(|e| e - from),
                    // A wait is counted when it ends (as schedstat's
                    // run_delay): one that spans the window's start and
                    // outlasts the run is in neither count.
                    run_delay: s.run_delay.saturating_sub(s0.run_delay),
                    wakeups: s.wakeups - s0.wakeups,
                    lat_sum: s.lat_sum - s0.lat_sum,
                    lat_max: s.lat_max,
                    voluntary: s.voluntary - s0.voluntary,
                    involuntary: s.involuntary - s0.involuntary,
                    migrations: s.migrations - s0.migrations,
                    work: s.work - s0.work,
                    runs: s.runs_done - s0.runs_done,
                }
            })
            .collect();
        drop(progs);
        drop(sys);
        let names: Vec<String> = w.tasks.iter().map(|t| t.name.clone()).collect();
        assemble(head, counts, raw, &names, &spec_lat, &spec_rps)
    }
}
