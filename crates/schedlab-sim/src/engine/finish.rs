//! The end of a run: each CPU's busy and idle time closed at the stop, the
//! policy and pending events freed, and the task rows handed to
//! [`crate::report::assemble`].

use super::Engine;
use crate::policy::{TaskId, TaskState};
use crate::report::{CpuReport, Report, RunCounts, TaskRaw, assemble};
use crate::time::Nanos;

impl Engine<'_> {
    pub(super) fn report(mut self, stop: Nanos, finished: bool) -> Report {
        let w = self.w;
        let mut per_cpu = Vec::new();
        for (cpu, run) in self.cpu_run.iter_mut().enumerate() {
            if let Some(since) = run.idle_since.take() {
                run.idle_ns += stop - since.min(stop);
            }
            if self.sys.cpus[cpu].curr.is_some() {
                run.overhead_ns += run.exec_start.min(stop) - run.switch_at.min(stop);
            }
            per_cpu.push(CpuReport {
                cpu: cpu as u32,
                busy_ns: stop - run.idle_ns,
                idle_ns: run.idle_ns,
                switch_overhead_ns: run.overhead_ns,
            });
        }
        let head = Report {
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
        let counts = RunCounts {
            stop,
            finished,
            context_switches: self.switches,
            migrations: self.sys.migrations,
            events: self.events,
        };
        // The policy's state and the pending events are not part of the
        // report: freed before the task rows are built, they do not add to
        // the run's peak memory (with a million tasks, hundreds of MB).
        let Engine { sys, progs, spec_lat, spec_rps, policy, queue, .. } = self;
        drop(policy);
        drop(queue);
        let raw: Vec<TaskRaw> = sys
            .tasks
            .iter()
            .zip(&progs)
            .enumerate()
            .filter(|(_, (info, _))| info.state != TaskState::New)
            .map(|(t, (info, prog))| {
                let s = &prog.stats;
                let spec = &w.tasks[info.spec as usize];
                TaskRaw {
                    name: spec.task_name(t as TaskId),
                    spec: info.spec,
                    cpu_time: info.sum_exec,
                    created: s.created,
                    exited: s.exited,
                    run_delay: s.run_delay,
                    wakeups: s.wakeups,
                    lat_sum: s.lat_sum,
                    lat_max: s.lat_max,
                    voluntary: s.voluntary,
                    involuntary: s.involuntary,
                    migrations: s.migrations,
                    work: s.work,
                    runs: s.runs_done,
                }
            })
            .collect();
        drop(progs);
        drop(sys);
        let names: Vec<String> = w.tasks.iter().map(|t| t.name.clone()).collect();
        assemble(head, counts, raw, &names, &spec_lat, &spec_rps)
    }
}
