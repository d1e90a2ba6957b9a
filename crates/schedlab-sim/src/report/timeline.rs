//! Which task ran on which CPU during a window of a simulated run: an
//! [`Observer`] that keeps the run segments, for timeline plots.

use crate::engine::{Observer, TraceEvent};
use crate::policy::{Sys, TaskId};
use crate::time::Nanos;
use crate::workload::Workload;
use std::collections::BTreeMap;

/// A task running on a CPU from `start` to `end`, clipped to the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub cpu: u32,
    pub task: TaskId,
    pub start: Nanos,
    pub end: Nanos,
}

/// The schedule of a window `from..to`, what a [`Timeline`] collects.
#[derive(Clone, Debug, Default)]
pub struct Schedule {
    pub from: Nanos,
    pub to: Nanos,
    pub segments: Vec<Segment>,
    /// Names of the tasks that appear in `segments`, as reports name them.
    pub names: BTreeMap<TaskId, String>,
}

pub struct Timeline<'w> {
    w: &'w Workload,
    running: Vec<Option<(TaskId, Nanos)>>,
    schedule: Schedule,
}

impl<'w> Timeline<'w> {
    pub fn new(w: &'w Workload, from: Nanos, to: Nanos) -> Timeline<'w> {
        Timeline {
            w,
            running: vec![None; w.nr_cpus() as usize],
            schedule: Schedule { from, to, ..Schedule::default() },
        }
    }

    fn close(&mut self, cpu: u32, now: Nanos) {
        if let Some((task, since)) = self.running[cpu as usize].take() {
            let s = &mut self.schedule;
            let (start, end) = (since.max(s.from), now.min(s.to));
            if start < end {
                s.segments.push(Segment { cpu, task, start, end });
            }
        }
    }

    /// Ends what is still running when the run stopped at `stop`, and
    /// hands over the window's schedule.
    pub fn finish(mut self, stop: Nanos) -> Schedule {
        for cpu in 0..self.running.len() as u32 {
            self.close(cpu, stop);
        }
        self.schedule.to = self.schedule.to.min(stop);
        self.schedule
    }
}

impl Observer for Timeline<'_> {
    fn event(&mut self, now: Nanos, sys: &Sys, ev: TraceEvent) {
        if let TraceEvent::Switch { cpu, next, .. } = ev {
            if now > self.schedule.to {
                return;
            }
            self.close(cpu, now);
            if let Some(t) = next {
                self.running[cpu as usize] = Some((t, now));
                if now < self.schedule.to {
                    let spec = &self.w.tasks[sys.task(t).spec as usize];
                    self.schedule.names.entry(t).or_insert_with(|| spec.task_name(t));
                }
            }
        }
    }
}
