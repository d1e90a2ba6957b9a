//! The fair class's face to the engine: the `Policy` hooks, each the
//! kernel's fair_sched_class callback of the same name (enqueue_task_fair,
//! pick_next_task_fair, task_tick_fair, check_preempt_wakeup /
//! wakeup_preempt, yield_task_fair, the balance callbacks), calling into
//! the files of this module and, where their patches hook fair.c, into
//! BORE's, CacULE's and TT's.

use super::*;

impl Policy for Fair {
    fn name(&self) -> &'static str {
        match (self.patch_name(), self.variant) {
            (Some(patch), _) => patch,
            (None, Variant::Cfs) => "cfs",
            (None, Variant::Eevdf) => "eevdf",
        }
    }

    fn tunables(&self) -> Vec<Tunable> {
        let mut all = self.tun.list();
        self.patch_tunables(&mut all);
        all
    }

    fn init(&mut self, sys: &mut Sys) {
        // The cpu.max period timers run for the whole simulation.
        for (g, bw) in self.bw.iter().enumerate() {
            if let Some(bw) = bw {
                sys.arm_timer(bw.period, TIMER_BANDWIDTH | g as u64);
            }
        }
    }

    fn task_new(&mut self, sys: &mut Sys, t: TaskId, parent: Option<TaskId>) {
        let info = sys.task(t);
        let group = self.task_group(sys, t);
        let depth = if self.flat { 0 } else { Self::group_depth(&sys.groups, group) };
        let custom = info.slice;
        let se = self.ents.len() as u32;
        self.ents.push(Ent::new(
            task_weight(sys, t),
            custom.unwrap_or(self.tun.base_slice_ns),
            custom.is_some(),
            self.group_rq(group, info.cpu),
            NONE,
            t,
            depth,
        ));
        if self.per_task.len() <= t as usize {
            self.per_task.resize(t as usize + 1, FairTask { se: NONE, pos: NONE, pelt: Pelt::default() });
        }
        self.per_task[t as usize].se = se;
        self.wakees.task_new(sys, t);
        self.patch_fork(sys, t, parent, se);
    }

    fn select_cpu(&mut self, sys: &mut Sys, t: TaskId, prev: CpuId, kind: WakeKind) -> CpuId {
        // A delayed task is still queued: ttwu_runnable requeues it in place.
        if self.ents[self.per_task[t as usize].se as usize].delayed {
            return prev;
        }
        let kind = self.patch_wake_kind(kind);
        // The wakee state is taken out for the call: the policy itself is
        // the runqueues select_task_rq reads.
        let mut wakees = std::mem::take(&mut self.wakees);
        let lb = self.lb.as_ref().expect("balancer present outside balancing");
        let cpu = select_task_rq(sys, self, &mut wakees, lb, t, prev, kind);
        self.wakees = wakees;
        cpu
    }

    fn enqueue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, how: Enqueue) {
        self.patch_wakeup(sys, t, how);
        self.enqueue_task(sys, cpu, t, how);
        self.patch_rq_changed(sys, cpu);
    }

    fn dequeue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, why: Dequeue) {
        self.patch_dequeue(sys, t, why);
        let se = self.per_task[t as usize].se;
        let rq = self.ents[se as usize].rq;
        self.list_remove(cpu, t);
        if self.variant == Variant::Eevdf
            && why == Dequeue::Sleep
            && self.tun.features.delay_dequeue
            && !self.eligible(rq, se)
        {
            // DELAY_DEQUEUE: stays in the tree, ineligible, until picked.
            if self.tun.features.delay_zero && self.patch_lag_at_delay() {
                self.update_entity_lag(rq, se);
            }
            self.ents[se as usize].delayed = true;
            self.per_task[t as usize].pelt.set(sys.now, 0, self.ents[se as usize].weight);
            return;
        }
        self.dequeue_task_entities(se, true);
        self.pelt_task(sys, t, false);
        self.patch_rq_changed(sys, cpu);
    }

    fn pick_next(&mut self, sys: &mut Sys, cpu: CpuId) -> Option<TaskId> {
        let prev_task = self.running_task(cpu);
        if let Some(p) = prev_task.filter(|&p| sys.task(p).state == TaskState::Runnable) {
            // put_prev_entity of a task still queued runs update_curr.
            self.patch_update_curr(sys, cpu, p);
        }
        if let (Some(p), Some(dst)) = (prev_task, self.push_to[cpu as usize].take()) {
            // Active balance: the stopper pushes the running task away.
            if sys.task(p).state == TaskState::Runnable && sys.allowed(p, dst) {
                self.put_prev_chain(sys, p);
                self.migrate_queued(sys, p, cpu, dst);
            }
        }
        // Without group scheduling (TT, whose Kconfig rules out
        // CGROUP_SCHED) pick_next_task_fair has only its `simple:` path:
        // put_prev_task puts the running task back in the queue first (at
        // the head of TT's list, where a tie in HRRN keeps it), the pick
        // sees no curr, and set_next_entity runs even when it picks the
        // same task again, which starts it a new slice. A tick that asks
        // for a switch while the task still leads by HRRN, or ties, so
        // leaves it running with its slice renewed (tt-6.1 guest, 3 hogs on
        // 2 CPUs, traced with sched_stat_runtime: 182 such picks a second
        // against 70 switches).
        let put_back = self.flat.then_some(prev_task).flatten().filter(|&p| sys.task(p).state == TaskState::Runnable);
        if let Some(p) = put_back {
            self.put_prev_chain(sys, p);
        }
        let next = self.pick_task(sys, cpu);
        let prev_task = self.running_task(cpu);
        if let Some(p) = prev_task.or(put_back) {
            self.patch_picked(p);
        }
        match (prev_task, next) {
            (Some(p), Some(n)) if p == n => {}
            (Some(p), Some(n)) => {
                // put_prev_set_next over the levels where the chains differ.
                let (mut a, mut b) = (self.per_task[p as usize].se, self.per_task[n as usize].se);
                loop {
                    if self.ents[a as usize].rq == self.ents[b as usize].rq {
                        let rq = self.ents[a as usize].rq;
                        if self.rqs[rq as usize].curr == Some(a) {
                            self.put_prev_entity(rq, a);
                            let _ = self.check_runtime(sys, rq);
                        }
                        break;
                    }
                    let (da, db) = (self.ents[a as usize].depth, self.ents[b as usize].depth);
                    if da >= db {
                        let rq = self.ents[a as usize].rq;
                        if self.rqs[rq as usize].curr == Some(a) {
                            self.put_prev_entity(rq, a);
                            let _ = self.check_runtime(sys, rq);
                        }
                        a = self.rqs[rq as usize].se;
                    }
                    if db >= da {
                        b = self.rqs[self.ents[b as usize].rq as usize].se;
                    }
                    if a == NONE || b == NONE {
                        break;
                    }
                }
                self.set_next_chain(self.per_task[n as usize].se);
            }
            (Some(p), None) => self.put_prev_chain(sys, p),
            (None, Some(n)) => self.set_next_chain(self.per_task[n as usize].se),
            (None, None) => {}
        }
        if let Some(n) = next {
            // A throttle found while putting prev back can leave the picked
            // task's hierarchy throttled: pick again.
            if self.throttled_hierarchy(self.ents[self.per_task[n as usize].se as usize].rq) {
                self.put_prev_chain(sys, n);
                return self.pick_next(sys, cpu);
            }
            self.cpu_util[cpu as usize].set(sys.now, 1024, 1);
            self.hrtick_start(sys, cpu, n);
        }
        self.patch_set_next(sys, cpu, next);
        next
    }

    fn put_prev(&mut self, sys: &mut Sys, _cpu: CpuId, t: TaskId, _runnable: bool) {
        self.put_prev_chain(sys, t);
    }

    fn account(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, delta: Nanos) {
        self.patch_before_charge(sys, t, delta);
        let mut se = self.per_task[t as usize].se;
        let mut resched = false;
        loop {
            let rq = self.ents[se as usize].rq;
            let e = &mut self.ents[se as usize];
            e.sum_exec += delta;
            e.vruntime += calc_delta_fair(delta, e.weight) as i64;
            if self.variant == Variant::Eevdf && self.rqs[rq as usize].curr == Some(se) {
                let expired = self.update_deadline(se);
                if self.rqs[rq as usize].nr_queued > 1 && (expired || !self.protect_slice(se)) {
                    resched = true;
                }
            }
            self.update_min_vruntime(rq);
            let g = self.rqs[rq as usize].group as usize;
            if self.bw[g].is_some() {
                self.rqs[rq as usize].runtime_remaining -= delta as i64;
                if self.rqs[rq as usize].runtime_remaining <= 0 {
                    self.assign_runtime(rq);
                    if self.rqs[rq as usize].runtime_remaining <= 0 {
                        resched = true;
                    }
                }
            }
            let up = self.rqs[rq as usize].se;
            if up == NONE {
                break;
            }
            se = up;
        }
        self.patch_charged(sys, cpu, t, delta);
        if resched {
            sys.resched(cpu);
        }
    }

    fn tick(&mut self, sys: &mut Sys, cpu: CpuId, curr: TaskId) {
        if self.variant != Variant::Cfs {
            return;
        }
        self.patch_tick(cpu);
        // entity_tick -> check_preempt_tick at every level.
        let mut se = self.per_task[curr as usize].se;
        loop {
            let rq = self.ents[se as usize].rq;
            if self.rqs[rq as usize].nr_queued > 1 && self.rqs[rq as usize].curr == Some(se) {
                let resched = match self.patch_check_preempt_tick(rq, se, sys.now) {
                    Some(resched) => resched,
                    None => self.check_preempt_tick(rq, se, sys.now),
                };
                if resched {
                    sys.resched(cpu);
                }
            }
            let up = self.rqs[rq as usize].se;
            if up == NONE {
                break;
            }
            se = up;
        }
        // task_tick_fair's update_IS.
        self.patch_rq_changed(sys, cpu);
    }

    fn wakeup_preempt(&mut self, sys: &mut Sys, cpu: CpuId, curr: TaskId, woken: TaskId) -> bool {
        let (cp, wp) = (sys.task(curr).policy, sys.task(woken).policy);
        let pse0 = self.per_task[woken as usize].se;
        if self.throttled_hierarchy(self.ents[pse0 as usize].rq) {
            return false;
        }
        if !self.tun.features.wakeup_preemption {
            return false;
        }
        let curr_idle = cp == SchedPolicy::Idle;
        let woken_idle = wp == SchedPolicy::Idle;
        if curr_idle && !woken_idle {
            return true;
        }
        if curr_idle != woken_idle || !matches!(wp, SchedPolicy::Normal | SchedPolicy::Iso) {
            return false;
        }
        let (se, pse) = self.matching(self.per_task[curr as usize].se, pse0);
        let rq = self.ents[se as usize].rq;
        if let Some(preempt) = self.patch_wakeup_preempt(sys, cpu, curr, se, pse) {
            return preempt;
        }
        match self.variant {
            Variant::Cfs => {
                let scale = self.rqs[rq as usize].nr_queued as u64 >= self.tun.nr_latency();
                if self.tun.features.next_buddy && scale {
                    self.rqs[rq as usize].next = Some(pse);
                }
                if self.wakeup_preempt_entity(se, pse) == 1 {
                    if self.tun.features.last_buddy && scale && self.ents[se as usize].my_rq == NONE {
                        self.rqs[rq as usize].last = Some(se);
                    }
                    return true;
                }
                false
            }
            Variant::Eevdf => {
                if self.rqs[rq as usize].curr != Some(se) {
                    return false;
                }
                let mut preempt_short = false;
                if self.tun.features.preempt_short {
                    let (ps, cs) = (&self.ents[pse as usize], &self.ents[se as usize]);
                    if ps.slice < cs.slice
                        && self.eligible(rq, pse)
                        && (ps.deadline < cs.deadline || !self.eligible(rq, se))
                    {
                        preempt_short = true;
                        // cancel_protect_slice
                        if self.protect_slice(se) {
                            self.ents[se as usize].vprot = self.ents[se as usize].vruntime;
                        }
                    }
                }
                let picked = self.pick_eevdf(rq, !preempt_short);
                picked == Some(pse)
            }
        }
    }

    fn yield_task(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId) {
        if self.patch_yield(sys, cpu, t) {
            return;
        }
        if sys.cpus[cpu as usize].nr_running <= 1 {
            return;
        }
        let se = self.per_task[t as usize].se;
        match self.variant {
            Variant::Cfs => {
                // set_skip_buddy at every level.
                let mut s = se;
                loop {
                    let rq = self.ents[s as usize].rq;
                    self.rqs[rq as usize].skip = Some(s);
                    let up = self.rqs[rq as usize].se;
                    if up == NONE {
                        break;
                    }
                    s = up;
                }
            }
            Variant::Eevdf => {
                // Linux 6.12.117's yield_task_fair: an eligible task
                // forfeits the rest of its request (vruntime jumps to its
                // deadline, update_deadline starts the next one there). An
                // ineligible one keeps both, so that core scheduling's
                // re-picks cannot run its vruntime away. (6.6's version
                // only pushed the deadline out by one slice.)
                let rq = self.ents[se as usize].rq;
                if self.eligible(rq, se) {
                    let e = &mut self.ents[se as usize];
                    e.vruntime = e.deadline;
                    self.update_deadline(se);
                }
            }
        }
    }

    fn balance(&mut self, sys: &mut Sys, cpu: CpuId, _idle: bool) {
        if self.patch_balance(sys, cpu, false) {
            return;
        }
        let mut lb = self.lb.take().expect("balancer present outside balancing");
        lb.tick(sys, self, cpu);
        self.lb = Some(lb);
    }

    fn newidle_balance(&mut self, sys: &mut Sys, cpu: CpuId) {
        if self.patch_balance(sys, cpu, true) {
            return;
        }
        let mut lb = self.lb.take().expect("balancer present outside balancing");
        lb.newidle(sys, self, cpu);
        self.lb = Some(lb);
    }

    /// The tasks of this CPU's throttled cfs_rqs: each throttle took its
    /// h_nr_running out of its (unthrottled) ancestors, so the sum counts
    /// each held task once.
    fn held_back(&self, _sys: &Sys, cpu: CpuId) -> u32 {
        self.bw
            .iter()
            .flatten()
            .flat_map(|bw| bw.throttled.iter())
            .filter(|&&rq| self.rqs[rq as usize].throttled && self.rqs[rq as usize].cpu == cpu)
            .map(|&rq| self.rqs[rq as usize].h_nr_running)
            .sum()
    }

    fn timer(&mut self, sys: &mut Sys, token: u64) {
        if token & TIMER_BANDWIDTH != 0 {
            let g = (token & !TIMER_BANDWIDTH) as usize;
            let Some(bw) = self.bw[g].as_mut() else {
                return;
            };
            // sched_cfs_period_timer: refill, then hand runtime to the
            // throttled cfs_rqs in the order they were throttled.
            bw.pool = bw.quota;
            bw.nr_periods += 1;
            let period = bw.period;
            let throttled = std::mem::take(&mut bw.throttled);
            let mut still = Vec::new();
            for rq in throttled {
                let bw = self.bw[g].as_mut().expect("checked");
                let need = (-self.rqs[rq as usize].runtime_remaining + 1) as u64;
                let give = need.min(bw.pool);
                bw.pool -= give;
                self.rqs[rq as usize].runtime_remaining += give as i64;
                if self.rqs[rq as usize].runtime_remaining > 0 {
                    self.unthrottle(sys, rq);
                } else {
                    still.push(rq);
                }
            }
            self.bw[g].as_mut().expect("checked").throttled.extend(still);
            sys.arm_timer(sys.now + period, token);
            return;
        }
        let cpu = (token >> 32) as CpuId;
        if self.hrtick_epoch[cpu as usize] == token as u32 && sys.cpus[cpu as usize].curr.is_some() {
            sys.resched(cpu);
        }
    }

    fn extra_metrics(&self, sys: &Sys) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        if !self.patch_balancer_metrics(&mut out)
            && let Some(lb) = &self.lb
        {
            out.push(("lb_count".into(), lb.lb_count as f64));
            out.push(("lb_migrations".into(), lb.balanced_moves as f64));
            out.push(("active_balance_pushes".into(), lb.active_moves as f64));
        }
        self.patch_metrics(sys, &mut out);
        for (g, bw) in self.bw.iter().enumerate() {
            if let Some(bw) = bw {
                let name = &sys.groups[g].name;
                let mut throttled = bw.throttled_ns;
                for &rq in &bw.throttled {
                    throttled += sys.now - self.rqs[rq as usize].throttled_at;
                }
                out.push((format!("{name}.nr_periods"), bw.nr_periods as f64));
                out.push((format!("{name}.nr_throttled"), bw.nr_throttled as f64));
                out.push((format!("{name}.throttled_usec"), throttled as f64 / 1e3));
            }
        }
        out
    }

    fn unsupported(&self, sys: &Sys) -> Vec<String> {
        let mut out = crate::common::no_iso(self.name(), sys);
        if self.flat {
            out.extend(crate::common::no_groups(self.name(), sys));
        }
        out
    }

    fn check_invariants(&self, sys: &Sys) -> Result<(), String> {
        if let Some(v) = self.violations.first() {
            return Err(v.clone());
        }
        for (i, r) in self.rqs.iter().enumerate() {
            let members: Vec<usize> =
                self.ents.iter().enumerate().filter(|(_, e)| e.on_rq && e.rq == i as u32).map(|(j, _)| j).collect();
            let load: u64 = members.iter().map(|&j| self.ents[j].weight).sum();
            if load != r.load || members.len() as u32 != r.nr_queued {
                return Err(format!(
                    "cfs_rq {i}: load {} / nr_queued {} but members weigh {load} / count {}",
                    r.load,
                    r.nr_queued,
                    members.len()
                ));
            }
            let in_tree = members.iter().filter(|&&j| r.curr != Some(j as u32)).count();
            if in_tree != r.tree.len() as usize {
                return Err(format!("cfs_rq {i}: tree holds {} of {in_tree} queued entities", r.tree.len()));
            }
            r.tree.check(&self.ents).map_err(|e| format!("cfs_rq {i}: {e}"))?;
            if r.leftmost != r.tree.first_keyed(&self.ents) {
                return Err(format!("cfs_rq {i}: cached leftmost {:?} is not the tree's first", r.leftmost));
            }
            let (mut swv, mut sw) = (0i128, 0i64);
            r.tree.for_each(&self.ents, |s| {
                let e = &self.ents[s as usize];
                swv += (e.vruntime - r.min_vruntime) as i128 * e.weight as i128;
                sw += e.weight as i64;
            });
            if swv != r.sum_wv || sw != r.sum_w {
                return Err(format!("cfs_rq {i}: avg_vruntime sums drifted"));
            }
        }
        for (t, se) in self.per_task.iter().map(|p| p.se).enumerate() {
            if se == NONE {
                continue;
            }
            if sys.task(t as TaskId).policy.is_rt() {
                continue;
            }
            let e = &self.ents[se as usize];
            let state = sys.task(t as TaskId).state;
            let runnable = matches!(state, TaskState::Runnable | TaskState::Running);
            if runnable != (e.on_rq && !e.delayed) {
                return Err(format!("task {t} is {state:?} but its entity on_rq={} delayed={}", e.on_rq, e.delayed));
            }
            if runnable && self.rqs[e.rq as usize].cpu != sys.task(t as TaskId).cpu {
                return Err(format!("task {t} is queued on another CPU's cfs_rq"));
            }
        }
        Ok(())
    }
}

impl Fair {
    fn running_task(&self, cpu: CpuId) -> Option<TaskId> {
        let mut rq = self.root(cpu);
        loop {
            let se = self.rqs[rq as usize].curr?;
            let e = &self.ents[se as usize];
            if e.my_rq == NONE {
                return Some(e.task);
            }
            rq = e.my_rq;
        }
    }

    /// Real-time rescaling check used by tests: the slice CFS gives `t` now.
    pub fn slice_of(&self, t: TaskId) -> u64 {
        self.sched_slice(self.per_task[t as usize].se)
    }
}
