//! What the SMP code in [`crate::smp`] asks of the fair class: PELT load
//! and utilization of tasks and CPUs, the per-CPU list of tasks the
//! balancer walks (cfs_tasks, most recently run first), and moving a
//! queued task between CPUs (detach_task/attach_task).

use super::*;

impl Fair {
    pub(super) fn pelt_task(&mut self, sys: &Sys, t: TaskId, runnable: bool) {
        // A task's sum counts its runnable time; its weight applies when
        // the average is read (se_weight in ___update_load_avg).
        let weight = self.ents[self.per_task[t as usize].se as usize].weight;
        self.per_task[t as usize].pelt.set(sys.now, u64::from(runnable), weight);
        self.pelt_root(sys, sys.task(t).cpu);
    }

    pub(super) fn pelt_root(&mut self, sys: &Sys, cpu: CpuId) {
        let load = self.rqs[self.root(cpu) as usize].load;
        self.cpu_load[cpu as usize].set(sys.now, load, 1);
    }

    pub(super) fn list_add(&mut self, cpu: CpuId, t: TaskId) {
        if self.per_task[t as usize].pos != NONE {
            return;
        }
        let l = &mut self.cpu_tasks[cpu as usize];
        self.per_task[t as usize].pos = l.len() as u32;
        l.push(t);
    }

    pub(super) fn list_remove(&mut self, cpu: CpuId, t: TaskId) {
        let p = self.per_task[t as usize].pos;
        if p == NONE {
            return;
        }
        let l = &mut self.cpu_tasks[cpu as usize];
        l.swap_remove(p as usize);
        if let Some(&moved) = l.get(p as usize) {
            self.per_task[moved as usize].pos = p;
        }
        self.per_task[t as usize].pos = NONE;
    }

    pub(super) fn migrate_queued(&mut self, sys: &mut Sys, t: TaskId, from: CpuId, to: CpuId) {
        self.move_queued(sys, t, from, to);
        sys.resched(to);
    }

    /// detach_task + attach_task without the preemption check.
    pub(super) fn move_queued(&mut self, sys: &mut Sys, t: TaskId, from: CpuId, to: CpuId) {
        let se = self.per_task[t as usize].se;
        self.list_remove(from, t);
        self.pelt_task(sys, t, false);
        self.dequeue_task_entities(se, false);
        self.pelt_root(sys, from);
        sys.migrate(t, to);
        self.enqueue_task(sys, to, t, Enqueue::Migrate);
    }
}

impl LbQueues for Fair {
    fn candidates(&self, sys: &Sys, cpu: CpuId, max: usize, out: &mut Vec<TaskId>) {
        let running = sys.cpus[cpu as usize].curr;
        let kept = self.patch_kept_on(cpu);
        out.extend(self.cpu_tasks[cpu as usize].iter().copied().filter(|&t| {
            Some(t) != running
                && Some(t) != kept
                && sys.task(t).state == TaskState::Runnable
                && !self.throttled_hierarchy(self.ents[self.per_task[t as usize].se as usize].rq)
        }));
        // The kernel's MRU list gives the tail in O(max); here the `max`
        // least recently run are selected, then only they are sorted.
        let lru = |&t: &TaskId| (sys.task(t).last_ran, t);
        if out.len() > max {
            out.select_nth_unstable_by_key(max, lru);
            out.truncate(max);
        }
        out.sort_by_key(lru);
    }

    fn task_load(&self, sys: &Sys, t: TaskId) -> f64 {
        let mut load = self.per_task[t as usize].pelt.avg(sys.now) as f64;
        let mut rq = self.ents[self.per_task[t as usize].se as usize].rq;
        while let Some(parent) = self.parent_rq(rq) {
            let gse = self.rqs[rq as usize].se;
            load = load * self.ents[gse as usize].weight as f64 / self.rqs[rq as usize].load.max(1) as f64;
            rq = parent;
        }
        load
    }

    fn cpu_load(&self, sys: &Sys, cpu: CpuId) -> f64 {
        self.cpu_load[cpu as usize].avg(sys.now) as f64
    }

    fn cpu_util(&self, sys: &Sys, cpu: CpuId) -> f64 {
        self.cpu_util[cpu as usize].avg(sys.now) as f64
    }

    /// The root's h_nr_running, which rq->nr_running follows for this
    /// class: throttle_cfs_rq subtracts a throttled group's tasks (6.18's
    /// task-based throttling dequeues them), while DELAY_DEQUEUE'd tasks
    /// stay counted until really dequeued (h_nr_queued since 6.13). The
    /// engine's count is neither: it knows no throttling and counts a
    /// delayed task as asleep.
    fn cpu_nr(&self, _sys: &Sys, cpu: CpuId) -> u32 {
        self.rqs[self.root(cpu) as usize].h_nr_running
    }

    fn move_task(&mut self, sys: &mut Sys, t: TaskId, from: CpuId, to: CpuId) {
        self.migrate_queued(sys, t, from, to);
    }

    fn request_push(&mut self, sys: &mut Sys, from: CpuId, to: CpuId) -> bool {
        let Some(curr) = sys.cpus[from as usize].curr else {
            return false;
        };
        if sys.task(curr).policy.is_rt() || !sys.allowed(curr, to) || self.cpu_nr(sys, from) < 2 {
            return false;
        }
        self.push_to[from as usize] = Some(to);
        sys.resched(from);
        true
    }
}
