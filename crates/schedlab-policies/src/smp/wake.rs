//! Wakeup and fork placement: select_task_rq_fair's wake_wide,
//! wake_affine, select_idle_sibling (with SIS_UTIL's scan depth) and
//! sched_balance_find_dst_cpu for new tasks.

use super::*;

/// What select_task_rq_fair keeps in task_struct between wakeups.
#[derive(Clone, Copy, Debug)]
pub struct WakeeState {
    /// The task this one last woke, and how often it has woken another
    /// than the last (halved once a second): wake_wide's sign of a waker
    /// serving many.
    pub(super) last_wakee: TaskId,
    pub(super) wakee_flips: u32,
    pub(super) wakee_flip_decay_at: Nanos,
    /// The CPU the task was on before its last wakeup.
    pub(super) recent_used_cpu: CpuId,
}

impl WakeeState {
    /// A task that has woken nobody yet.
    pub(super) const NEW: WakeeState =
        WakeeState { last_wakee: TaskId::MAX, wakee_flips: 0, wakee_flip_decay_at: 0, recent_used_cpu: 0 };
}

/// The per-task wakeup state of every task, by task id.
#[derive(Default)]
pub struct Wakees {
    pub(super) tasks: Vec<WakeeState>,
}

impl Wakees {
    /// Sized once for the tasks the workload starts with.
    pub fn with_capacity(tasks: usize) -> Wakees {
        Wakees { tasks: Vec::with_capacity(tasks) }
    }

    /// A new task: wake_up_new_task sets recent_used_cpu to the CPU the
    /// task was created on, before its first CPU is chosen.
    pub fn task_new(&mut self, sys: &Sys, t: TaskId) {
        if self.tasks.len() <= t as usize {
            self.tasks.resize(t as usize + 1, WakeeState::NEW);
        }
        self.tasks[t as usize].recent_used_cpu = sys.task(t).cpu;
    }

    /// record_wakee, run by the waker.
    pub(super) fn record(&mut self, now: Nanos, waker: TaskId, wakee: TaskId) {
        let w = &mut self.tasks[waker as usize];
        if now > w.wakee_flip_decay_at + 1_000_000_000 {
            w.wakee_flips >>= 1;
            w.wakee_flip_decay_at = now;
        }
        if w.last_wakee != wakee {
            w.last_wakee = wakee;
            w.wakee_flips += 1;
        }
    }

    /// wake_wide: a one-to-many pattern (the one of the pair that switches
    /// partners more does so at least llc_size times as often as the other,
    /// which does so at least llc_size times), which wake_affine would pile
    /// onto the waker's LLC.
    pub(super) fn wide(&self, waker: TaskId, wakee: TaskId, llc_size: u32) -> bool {
        let (a, b) = (self.tasks[waker as usize].wakee_flips, self.tasks[wakee as usize].wakee_flips);
        let (master, slave) = if a < b { (b, a) } else { (a, b) };
        !(slave < llc_size || master < slave.saturating_mul(llc_size))
    }
}

/// select_task_rq_fair for the shared per-CPU-runqueue policies. `lb`
/// gives the SIS_UTIL scan depth of the LLCs.
pub fn select_task_rq(
    sys: &Sys,
    q: &impl LbQueues,
    wakees: &mut Wakees,
    lb: &Balancer,
    t: TaskId,
    prev: CpuId,
    kind: WakeKind,
) -> CpuId {
    if let Some(aff) = &sys.task(t).affinity
        && aff.count() == 1
    {
        return aff.first().expect("non-empty");
    }
    let prev = if sys.allowed(t, prev) { prev } else { first_allowed(sys, t) };
    match kind {
        WakeKind::New => find_idlest_cpu(sys, q, t, prev),
        WakeKind::Wakeup { waker, waker_cpu, sync } => {
            let mut target = prev;
            let mut want_affine = waker_cpu.is_some();
            if let (Some(w), Some(this)) = (waker, waker_cpu) {
                wakees.record(sys.now, w, t);
                want_affine = !wakees.wide(w, t, sys.topology.llc_cpus(this).len() as u32);
            }
            if want_affine
                && let Some(this) = waker_cpu
                && this != prev
                && sys.allowed(t, this)
            {
                target = wake_affine(sys, q, t, this, prev, sync);
            }
            select_idle_sibling(sys, wakees, lb, t, prev, target)
        }
    }
}

pub(super) fn first_allowed(sys: &Sys, t: TaskId) -> CpuId {
    sys.task(t).affinity.as_ref().and_then(|a| a.first()).unwrap_or(0)
}

/// wake_affine_idle, then wake_affine_weight.
pub(super) fn wake_affine(sys: &Sys, q: &impl LbQueues, t: TaskId, this: CpuId, prev: CpuId, sync: bool) -> CpuId {
    if sys.idle(this) && sys.topology.share_cache(this, prev) {
        return if sys.idle(prev) { prev } else { this };
    }
    if sync && sys.cpus[this as usize].nr_running == 1 {
        return this;
    }
    if sys.idle(prev) {
        return prev;
    }
    let task_load = q.task_load(sys, t);
    let mut this_eff = q.cpu_load(sys, this);
    if sync {
        // The waker is about to sleep: its load leaves this CPU.
        let cur = sys.cpus[this as usize].curr.map_or(0.0, |c| q.task_load(sys, c));
        this_eff = (this_eff - cur).max(0.0);
    }
    this_eff += task_load;
    // prev_eff_load scaled by 100 + (imbalance_pct - 100) / 2 (sd imbalance 117).
    let prev_eff = (q.cpu_load(sys, prev) - task_load).max(0.0) * (100.0 + 17.0 / 2.0);
    if this_eff * 100.0 < prev_eff { this } else { prev }
}

pub(super) fn select_idle_sibling(
    sys: &Sys,
    wakees: &mut Wakees,
    lb: &Balancer,
    t: TaskId,
    prev: CpuId,
    target: CpuId,
) -> CpuId {
    if sys.idle(target) && sys.allowed(t, target) {
        return target;
    }
    if prev != target && sys.topology.share_cache(prev, target) && sys.idle(prev) && sys.allowed(t, prev) {
        return prev;
    }
    let recent = std::mem::replace(&mut wakees.tasks[t as usize].recent_used_cpu, prev);
    if recent != prev
        && recent != target
        && sys.topology.share_cache(recent, target)
        && sys.idle(recent)
        && sys.allowed(t, recent)
    {
        return recent;
    }
    // Nothing idle found: the target, if the task may run there.
    let fallback = if sys.allowed(t, target) { target } else { prev };
    let llc = sys.topology.llc_cpus(target);
    if llc.len() == 1 {
        // No LLC domain (sd_llc is NULL): nothing to scan.
        return fallback;
    }
    let n = llc.len() as CpuId;
    // for_each_cpu_wrap(cpu, sd span & p->cpus_ptr, target + 1).
    let ring_pos = |c: CpuId| (c - llc.start + n - (target - llc.start + 1) % n) % n;
    let ring = || (1..=n).map(|i| llc.start + (target - llc.start + i) % n).filter(|&c| sys.allowed(t, c));
    let smt = sys.topology.threads_per_core > 1;
    let has_idle_core = smt && sys.llc_has_idle_core(target);
    if smt && !has_idle_core && sys.topology.share_cache(prev, target) {
        // select_idle_smt: an idle sibling of prev, before select_idle_cpu
        // and whatever SIS_UTIL allows it.
        if let Some(c) = sys.topology.siblings(prev).find(|&s| s != prev && sys.idle(s) && sys.allowed(t, s)) {
            return c;
        }
    }
    // SIS_UTIL: select_idle_cpu does not scan an LLC busy enough to leave
    // no depth, for idle cores or CPUs.
    let depth = lb.idle_scan_depth(sys, target) as usize;
    if depth == 0 {
        return fallback;
    }
    if has_idle_core {
        // select_idle_core for each core once, at the first of its CPUs the
        // ring reaches; no depth limit. The first idle CPU of a busy core
        // met on the way is the answer if no core is idle after all.
        let mut idle_cpu = None;
        for c in ring() {
            let core = sys.topology.siblings(c);
            if core.clone().any(|s| s != c && sys.allowed(t, s) && ring_pos(s) < ring_pos(c)) {
                continue;
            }
            if core.clone().all(|s| sys.idle(s)) {
                return c;
            }
            if idle_cpu.is_none() {
                idle_cpu = core.clone().find(|&s| sys.idle(s) && sys.allowed(t, s));
            }
        }
        if let Some(c) = idle_cpu {
            return c;
        }
    } else if sys.llc_has_idle_cpu(target)
        && let Some(c) = ring().take(depth).find(|&c| sys.idle(c))
    {
        return c;
    }
    fallback
}

/// sched_balance_find_dst_cpu, flattened: the allowed CPU with the fewest
/// runnable tasks, then the least load, then the nearest to the parent
/// (the first in CPU order on a full tie).
///
/// It runs at every fork and visits every CPU, as the kernel's group walk
/// does, so it narrows in passes: the runnable counts alone first, the load
/// (which decays PELT to now) only on the CPUs with the fewest, the
/// distance only on those that tie on load too.
pub(super) fn find_idlest_cpu(sys: &Sys, q: &impl LbQueues, t: TaskId, prev: CpuId) -> CpuId {
    let affinity = sys.task(t).affinity.as_ref();
    let allowed = |c: CpuId| affinity.is_none_or(|a| a.contains(c));
    let nr = |c: CpuId| sys.cpus[c as usize].nr_running;
    let Some(fewest) = (0..sys.nr_cpus).filter(|&c| allowed(c)).map(nr).min() else {
        return prev;
    };
    let distance = sys.topology.distance_from(prev);
    let mut best = prev;
    let mut best_key = (f64::MAX, u32::MAX);
    for c in (0..sys.nr_cpus).filter(|&c| nr(c) == fewest && allowed(c)) {
        let load = q.cpu_load(sys, c);
        if load > best_key.0 {
            continue;
        }
        let key = (load, distance(c));
        if key.0 < best_key.0 || key.1 < best_key.1 {
            best = c;
            best_key = key;
        }
    }
    best
}
