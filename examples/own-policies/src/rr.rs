//! Round robin as a schedlab policy: one FIFO queue per CPU, a slice of
//! `rr_slice_ns` (4 ms) counted in ticks as SCHED_RR counts its time_slice,
//! no preemption at wakeup, and a CPU about to idle takes a waiting task
//! from the longest queue.

use schedlab_policies::{TunableSpec, apply_tunables, list_tunables, value_of};
use schedlab_sim::{CpuId, Dequeue, Enqueue, Nanos, Policy, Sys, TaskId, TaskState, Tunable, Workload};
use std::collections::VecDeque;

pub struct RoundRobin {
    tunables: [TunableSpec; 1],
    queues: Vec<VecDeque<TaskId>>,
    /// The running task of each CPU, kept out of its queue while it runs.
    curr: Vec<Option<TaskId>>,
    /// Ticks it has run since it was picked.
    ticks: Vec<u64>,
}

impl RoundRobin {
    pub fn new(w: &Workload) -> Result<RoundRobin, String> {
        let slice = TunableSpec { name: "rr_slice_ns", value: 4_000_000, min: 100_000, max: 1 << 30, help: "slice" };
        let mut tunables = [slice];
        apply_tunables("rr", &mut tunables, &w.tunables)?;
        let cpus = w.nr_cpus() as usize;
        Ok(RoundRobin { tunables, queues: vec![VecDeque::new(); cpus], curr: vec![None; cpus], ticks: vec![0; cpus] })
    }
}

impl Policy for RoundRobin {
    fn name(&self) -> &'static str {
        "rr"
    }

    fn tunables(&self) -> Vec<Tunable> {
        list_tunables(&self.tunables)
    }

    fn enqueue(&mut self, _sys: &mut Sys, cpu: CpuId, t: TaskId, _how: Enqueue) {
        self.queues[cpu as usize].push_back(t);
    }

    fn dequeue(&mut self, _sys: &mut Sys, cpu: CpuId, t: TaskId, _why: Dequeue) {
        if self.curr[cpu as usize] == Some(t) {
            self.curr[cpu as usize] = None;
        } else {
            self.queues[cpu as usize].retain(|&q| q != t);
        }
    }

    fn pick_next(&mut self, sys: &mut Sys, cpu: CpuId) -> Option<TaskId> {
        let c = cpu as usize;
        // The task that ran goes to the back of the line if it still can run.
        if let Some(prev) = self.curr[c].take().filter(|&p| sys.task(p).state == TaskState::Runnable) {
            self.queues[c].push_back(prev);
        }
        let next = self.queues[c].pop_front()?;
        self.curr[c] = Some(next);
        self.ticks[c] = 0;
        Some(next)
    }

    fn put_prev(&mut self, _sys: &mut Sys, cpu: CpuId, t: TaskId, runnable: bool) {
        // A real-time task took the CPU: keep the place in line.
        self.curr[cpu as usize] = None;
        if runnable {
            self.queues[cpu as usize].push_front(t);
        }
    }

    fn tick(&mut self, sys: &mut Sys, cpu: CpuId, _curr: TaskId) {
        self.ticks[cpu as usize] += 1;
        let slice = (value_of(&self.tunables, "rr_slice_ns") as Nanos).div_ceil(sys.tick_ns);
        if self.ticks[cpu as usize] >= slice {
            sys.resched(cpu);
        }
    }

    fn newidle_balance(&mut self, sys: &mut Sys, cpu: CpuId) {
        let busiest = (0..self.queues.len()).max_by_key(|&q| self.queues[q].len());
        let Some(from) = busiest.filter(|&q| q != cpu as usize) else { return };
        if let Some(i) = self.queues[from].iter().rposition(|&t| sys.allowed(t, cpu)) {
            let t = self.queues[from].remove(i).expect("found at i");
            sys.migrate(t, cpu);
            self.queues[cpu as usize].push_back(t);
        }
    }
}
