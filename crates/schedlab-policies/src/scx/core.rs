//! The sched_ext core of Linux 6.12.117 (kernel/sched/ext.c) around a
//! scheduler's [`ScxOps`]: its DSQs, the direct dispatch, balance_one's
//! dispatch loop, pick_task_scx, put_prev_task_scx and the tick, behind the
//! engine's [`Policy`] hooks.
//!
//! A CPU that switches away from a runnable task puts it back into its DSQ
//! one context switch after its dispatch, not at the same instant: in
//! __schedule, balance_scx's dispatch runs first and put_prev_task_scx's
//! ops.enqueue only after pick_task_scx, each DSQ under its own lock, so
//! another CPU dispatching in between finds the task in no DSQ. Measured
//! in the scx-6.12 guest with scx_bpfland (tools/validation/
//! scx-dispatch-window.c, kprobes on balance_scx and
//! scx_bpf_dispatch_vtime): the insert came 25-92 us after the dispatch
//! (p10-p90), against a tick 1-79 us apart on the two CPUs, and a second
//! CPU dispatching before the first CPU's insert found a task 28 times in
//! 288, after it 82 in 101. The engine's switch cost stands for that time
//! (the guest's 18 us, 2 us by default: shorter than the 41-60 us the
//! guest took at the median, see docs/schedulers.md).

use super::{
    Ctx, DEQ_SLEEP, Dsq, ENQ_HEAD, ENQ_PREEMPT, ENQ_WAKEUP, SLICE_DFL, Scx, ScxOps, WAKE_FORK, WAKE_SYNC, WAKE_TTWU,
};
use crate::weights::nice_to_weight;
use schedlab_sim::{CpuId, Dequeue, Enqueue, Nanos, Policy, Sys, TaskId, TaskState, Tunable, WakeKind, Workload};
use std::collections::{BTreeMap, BTreeSet};

/// SCX_DSP_MAX_LOOPS: ops.dispatch calls in one balance that produce
/// tasks none of which lands in the local DSQ, before the CPU gives up
/// and kicks itself.
const DSP_MAX_LOOPS: u32 = 32;

/// Where arrivals at the tail and inserts at the head of a FIFO DSQ are
/// numbered from, so both fit one ordered set.
const SEQ_BASE: u64 = 1 << 62;

/// What the scheduler asked for a task: a DSQ, a slice and, for a
/// vtime-ordered DSQ, the task's dsq_vtime.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Insert {
    pub dsq: Dsq,
    pub slice: u64,
    pub vtime: Option<u64>,
    pub flags: u64,
}

/// A queue the core keeps: the global DSQ, a scheduler's own, or a CPU's
/// local DSQ. Ordered by (dsq_vtime, arrival) when vtime-ordered, by
/// arrival (head inserts before every arrival) when FIFO.
#[derive(Default)]
pub(crate) struct Queue {
    set: BTreeSet<(u64, u64, TaskId)>,
    by_vtime: bool,
}

impl Queue {
    pub fn len(&self) -> usize {
        self.set.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = (TaskId, Option<u64>)> + '_ {
        self.set.iter().map(|&(k, _, t)| (t, self.by_vtime.then_some(k)))
    }
}

/// Which queue a task waits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum QueueRef {
    Local(CpuId),
    Global,
    User(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// Not waiting: sleeping, new, or running.
    Off,
    /// In a DSQ, under this key and arrival number.
    Queued(QueueRef, u64, u64),
    /// Enqueued and inserted nowhere: in the scheduler's custody.
    Held,
    /// Put back by a CPU that switched to another task, its ops.enqueue
    /// still to come (the core's timer with this number).
    Returning(u32),
}

/// Timer tokens of the core itself (the put-back of a task); the others
/// are the scheduler's own ([`ScxOps::timer`]).
const CORE_TIMER: u64 = 1 << 63;

/// p->scx of a task.
#[derive(Clone)]
pub(crate) struct TaskScx {
    pub slice: u64,
    pub dsq_vtime: u64,
    pub weight: u64,
    /// A direct dispatch asked for in select_cpu or enqueue.
    pub ddsp: Option<Insert>,
    place: Place,
    /// The CPU counted in `away` while it waits outside a local DSQ.
    away_cpu: CpuId,
}

pub(crate) struct State {
    pub tasks: Vec<TaskScx>,
    pub user: BTreeMap<u64, Queue>,
    global: Queue,
    local: Vec<Queue>,
    /// The task each CPU runs for the scheduler.
    pub curr: Vec<Option<TaskId>>,
    /// Runnable tasks whose runqueue is this CPU's but that wait outside
    /// its local DSQ (in the global DSQ, a scheduler's DSQ, or custody):
    /// what the engine may see this CPU idle beside.
    away: Vec<u32>,
    seq: u64,
    /// The task select_cpu or enqueue is placing.
    pub placing: Option<TaskId>,
    /// The CPU in balance_one: an insert into its local DSQ needs no resched.
    in_balance: Option<CpuId>,
    pub dispatch_buf: Vec<(TaskId, Insert)>,
    /// cpumask_any_and_distribute's memory of its last pick.
    last_pick: CpuId,
    smt: bool,
}

impl State {
    pub fn queue(&self, dsq: Dsq, local_of: CpuId) -> Option<&Queue> {
        match dsq {
            Dsq::Local => self.local.get(local_of as usize),
            Dsq::LocalOn(c) => self.local.get(c as usize),
            Dsq::Global => Some(&self.global),
            Dsq::User(id) => self.user.get(&id),
        }
    }

    fn queue_mut(&mut self, q: QueueRef) -> &mut Queue {
        match q {
            QueueRef::Local(c) => &mut self.local[c as usize],
            QueueRef::Global => &mut self.global,
            QueueRef::User(id) => self.user.get_mut(&id).expect("checked when inserted"),
        }
    }

    fn set_place(&mut self, sys: &Sys, t: TaskId, place: Place) {
        let away = |p: Place| {
            matches!(p, Place::Held | Place::Returning(_) | Place::Queued(QueueRef::Global | QueueRef::User(_), _, _))
        };
        let task = &mut self.tasks[t as usize];
        if away(task.place) {
            self.away[task.away_cpu as usize] -= 1;
        }
        if away(place) {
            task.away_cpu = sys.task(t).cpu;
            self.away[task.away_cpu as usize] += 1;
        }
        task.place = place;
    }

    /// dispatch_dequeue: out of whatever DSQ holds it, or out of custody.
    fn unqueue(&mut self, sys: &Sys, t: TaskId) {
        if let Place::Queued(q, key, seq) = self.tasks[t as usize].place {
            self.queue_mut(q).set.remove(&(key, seq, t));
        }
        self.set_place(sys, t, Place::Off);
    }

    /// Files `t` in queue `q`: by `vtime` or FIFO (at the head with ENQ_HEAD).
    fn file(&mut self, sys: &Sys, t: TaskId, q: QueueRef, vtime: Option<u64>, flags: u64) -> Result<(), String> {
        self.seq += 1;
        let queue = self.queue_mut(q);
        if !queue.set.is_empty() && queue.by_vtime != vtime.is_some() {
            return Err(format!(
                "{q:?} already holds {} tasks: one DSQ takes either kind of insert at a time",
                if queue.by_vtime { "vtime-ordered" } else { "FIFO" }
            ));
        }
        queue.by_vtime = vtime.is_some();
        let key = vtime.unwrap_or(0);
        let seq = if vtime.is_none() && flags & ENQ_HEAD != 0 { SEQ_BASE - self.seq } else { SEQ_BASE + self.seq };
        self.queue_mut(q).set.insert((key, seq, t));
        self.set_place(sys, t, Place::Queued(q, key, seq));
        Ok(())
    }
}

/// An idle CPU for sched_ext's idle mask: nothing runs or waits there.
pub(crate) fn idle(sys: &Sys, cpu: CpuId) -> bool {
    sys.idle(cpu) && sys.cpus[cpu as usize].curr.is_none()
}

fn core_idle(sys: &Sys, cpu: CpuId) -> bool {
    sys.topology.siblings(cpu).all(|c| idle(sys, c))
}

fn nr_allowed(sys: &Sys, t: TaskId) -> u32 {
    sys.task(t).affinity.as_ref().map_or(sys.nr_cpus, |a| a.count())
}

/// scx_pick_idle_cpu.
pub(crate) fn pick_idle(sys: &Sys, st: &mut State, t: TaskId, whole_core: bool) -> Option<CpuId> {
    let n = sys.nr_cpus;
    let order = (1..=n).map(|i| (st.last_pick + i) % n);
    let mut found = None;
    if st.smt {
        found = order.clone().find(|&c| sys.allowed(t, c) && core_idle(sys, c));
        if found.is_none() && whole_core {
            return None;
        }
    }
    let found = found.or_else(|| order.clone().find(|&c| sys.allowed(t, c) && idle(sys, c)));
    if let Some(c) = found {
        st.last_pick = c;
    }
    found
}

/// scx_select_cpu_dfl: the CPU found idle (or the waker's, for a
/// synchronous wakeup), None when there is none.
pub(crate) fn select_cpu_dfl(
    sys: &Sys,
    st: &mut State,
    t: TaskId,
    prev: CpuId,
    this: CpuId,
    sync: bool,
) -> Option<CpuId> {
    let any_idle = (0..sys.nr_cpus).any(|c| idle(sys, c));
    if sync && nr_allowed(sys, t) > 1 && any_idle && st.local[this as usize].len() == 0 && sys.allowed(t, this) {
        return Some(this);
    }
    if nr_allowed(sys, t) == 1 {
        return idle(sys, prev).then_some(prev);
    }
    if st.smt {
        if core_idle(sys, prev) {
            return Some(prev);
        }
        if let Some(c) = pick_idle(sys, st, t, true) {
            return Some(c);
        }
    }
    if idle(sys, prev) {
        return Some(prev);
    }
    pick_idle(sys, st, t, false)
}

/// consume_dispatch_q: the first task of `dsq` that may run on `cpu`
/// moves to its local DSQ.
pub(crate) fn move_to_local(sys: &mut Sys, st: &mut State, dsq: Dsq, cpu: CpuId) -> bool {
    let Some(q) = st.queue(dsq, cpu) else {
        sys.fail(format!("dsq_move_to_local({dsq:?}): no such DSQ (create it in init)"));
        return false;
    };
    let Some((t, _)) = q.iter().find(|&(t, _)| sys.allowed(t, cpu)) else {
        return false;
    };
    st.unqueue(sys, t);
    to_local(sys, st, t, cpu, 0);
    true
}

/// A task into `cpu`'s local DSQ, moved to that CPU, and
/// local_dsq_post_enq: a CPU not in balance is rescheduled when idle, or
/// when the insert preempts.
fn to_local(sys: &mut Sys, st: &mut State, t: TaskId, cpu: CpuId, flags: u64) {
    if sys.task(t).cpu != cpu {
        sys.migrate(t, cpu);
    }
    st.file(sys, t, QueueRef::Local(cpu), None, flags).expect("local DSQs are FIFO");
    if st.in_balance == Some(cpu) {
        return;
    }
    let mut preempt = false;
    if flags & ENQ_PREEMPT != 0
        && let Some(curr) = st.curr[cpu as usize].filter(|&c| c != t)
    {
        st.tasks[curr as usize].slice = 0;
        preempt = true;
    }
    if preempt || sys.cpus[cpu as usize].curr.is_none() {
        sys.resched(cpu);
    }
}

/// dispatch_enqueue and dispatch_to_local_dsq: the task into the DSQ the
/// scheduler named, with its slice (0 keeps what it has, at least 1 ns).
fn dispatch(sys: &mut Sys, st: &mut State, t: TaskId, ins: Insert, local_of: CpuId) {
    let task = &mut st.tasks[t as usize];
    task.slice = if ins.slice > 0 { ins.slice } else { task.slice.max(1) };
    if let Some(v) = ins.vtime {
        task.dsq_vtime = v;
    }
    let q = match ins.dsq {
        Dsq::Local | Dsq::LocalOn(_) => {
            let cpu = if let Dsq::LocalOn(c) = ins.dsq { c } else { local_of };
            if cpu >= sys.nr_cpus {
                sys.fail(format!(
                    "task {t} dispatched to the local DSQ of CPU {cpu}: the machine has {} CPUs",
                    sys.nr_cpus
                ));
                QueueRef::Global
            } else if sys.allowed(t, cpu) {
                return to_local(sys, st, t, cpu, ins.flags);
            } else {
                // A local DSQ the task may not run on: the global DSQ.
                QueueRef::Global
            }
        }
        Dsq::Global => QueueRef::Global,
        Dsq::User(id) if st.user.contains_key(&id) => QueueRef::User(id),
        Dsq::User(id) => {
            sys.fail(format!(
                "task {t} dispatched to DSQ {id}, which does not exist: create it with create_dsq in init"
            ));
            QueueRef::Global
        }
    };
    if let Err(e) = st.file(sys, t, q, ins.vtime, ins.flags) {
        sys.fail(format!("task {t} dispatched with{} a vtime: {e}", if ins.vtime.is_some() { "" } else { "out" }));
        st.file(sys, t, QueueRef::Global, None, 0).expect("the global DSQ is FIFO");
    }
}

/// A sched_ext scheduler's callbacks on the core of sched_ext, as a
/// policy of the engine.
pub struct ScxCore<O: ScxOps> {
    ops: O,
    st: State,
    /// How long after its CPU's dispatch a task switched away from reaches
    /// ops.enqueue: the machine's context switch.
    put_back_delay: Nanos,
    /// Numbers the put-backs, so a timer of one that was overtaken (the
    /// task dequeued, or put back again) is told from the current one.
    put_backs: u32,
    /// Per CPU, the tasks it put back whose ops.enqueue is still to come:
    /// the CPU's own next schedule comes after its put_prev_task_scx in
    /// the kernel, so it completes them first.
    returning: Vec<Vec<(TaskId, u32)>>,
}

impl<O: ScxOps> ScxCore<O> {
    pub fn new(w: &Workload, ops: O) -> ScxCore<O> {
        let n = w.nr_cpus() as usize;
        let st = State {
            tasks: Vec::with_capacity(w.initial_tasks() as usize),
            user: BTreeMap::new(),
            global: Queue::default(),
            local: (0..n).map(|_| Queue::default()).collect(),
            curr: vec![None; n],
            away: vec![0; n],
            seq: 0,
            placing: None,
            in_balance: None,
            dispatch_buf: Vec::new(),
            last_pick: 0,
            smt: w.machine.topology.threads_per_core > 1,
        };
        ScxCore {
            ops,
            st,
            put_back_delay: w.machine.costs.context_switch,
            put_backs: 0,
            returning: vec![Vec::new(); n],
        }
    }

    pub fn ops(&self) -> &O {
        &self.ops
    }

    /// Calls into the scheduler as a callback on `cpu` would, with the
    /// kfuncs: for unit tests of a scheduler's own arithmetic, on a
    /// [`Sys::detached`].
    pub fn call_ops<R>(&mut self, sys: &mut Sys, cpu: CpuId, f: impl FnOnce(&mut O, &mut Scx) -> R) -> R {
        self.call(sys, cpu, Ctx::Other, f)
    }

    /// do_enqueue_task: the direct dispatch asked for, or ops.enqueue;
    /// inserted nowhere, the task is in the scheduler's custody.
    fn do_enqueue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, flags: u64) {
        if self.st.tasks[t as usize].ddsp.is_none() {
            self.st.placing = Some(t);
            self.call(sys, cpu, Ctx::Enqueue, |ops, scx| ops.enqueue(scx, t, flags));
            self.st.placing = None;
        }
        match self.st.tasks[t as usize].ddsp.take() {
            Some(ins) => dispatch(sys, &mut self.st, t, ins, sys.task(t).cpu),
            None => self.st.set_place(sys, t, Place::Held),
        }
    }

    /// The ops.enqueue of put-back `number` of task `t`, unless it was
    /// overtaken (the task dequeued, or put back again).
    fn complete_put_back(&mut self, sys: &mut Sys, t: TaskId, number: u32) {
        let cpu = sys.task(t).cpu;
        self.returning[cpu as usize].retain(|&(r, n)| (r, n) != (t, number));
        if self.st.tasks.get(t as usize).is_some_and(|task| task.place == Place::Returning(number)) {
            self.st.set_place(sys, t, Place::Off);
            self.do_enqueue(sys, cpu, t, 0);
        }
    }

    /// A callback on `this_cpu` in context `ctx`, with the kfuncs.
    fn call<R>(&mut self, sys: &mut Sys, this_cpu: CpuId, ctx: Ctx, f: impl FnOnce(&mut O, &mut Scx) -> R) -> R {
        let mut scx = Scx { sys, st: &mut self.st, this_cpu, local_of: this_cpu, ctx };
        f(&mut self.ops, &mut scx)
    }

    /// finish_dispatch of each insert ops.dispatch made: tasks still in
    /// custody go where it said; the others had left it and are dropped.
    fn flush_dispatch(&mut self, sys: &mut Sys, cpu: CpuId) {
        for (t, ins) in std::mem::take(&mut self.st.dispatch_buf) {
            if self.st.tasks[t as usize].place == Place::Held {
                self.st.set_place(sys, t, Place::Off);
                dispatch(sys, &mut self.st, t, ins, cpu);
            }
        }
    }

    /// balance_one without the keep-prev test: fills the local DSQ from
    /// the global DSQ or ops.dispatch.
    fn balance(&mut self, sys: &mut Sys, cpu: CpuId, prev: Option<TaskId>) {
        self.st.in_balance = Some(cpu);
        let filled = |st: &State| st.local[cpu as usize].len() > 0;
        if !move_to_local(sys, &mut self.st, Dsq::Global, cpu) {
            let mut loops = 0;
            loop {
                self.st.dispatch_buf.clear();
                self.call(sys, cpu, Ctx::Dispatch, |ops, scx| ops.dispatch(scx, cpu, prev));
                let produced = self.st.dispatch_buf.len();
                self.flush_dispatch(sys, cpu);
                if filled(&self.st) || move_to_local(sys, &mut self.st, Dsq::Global, cpu) || produced == 0 {
                    break;
                }
                loops += 1;
                if loops == DSP_MAX_LOOPS {
                    sys.resched(cpu);
                    break;
                }
            }
        }
        self.st.in_balance = None;
    }

    /// put_prev_task_scx for a task still runnable: ops.stopping, then the
    /// head of the local DSQ with slice left, else ops.enqueue again, at
    /// once or, for a CPU that has switched to another task, when its
    /// switch is done (the module's doc says why).
    fn put_prev_runnable(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, switched: bool) {
        self.call(sys, cpu, Ctx::Other, |ops, scx| ops.stopping(scx, t, true));
        if self.st.tasks[t as usize].slice > 0 {
            self.st.file(sys, t, QueueRef::Local(cpu), None, ENQ_HEAD).expect("local DSQs are FIFO");
        } else if switched && self.put_back_delay > 0 {
            self.put_backs = self.put_backs.wrapping_add(1) & 0x7fff_ffff;
            self.st.set_place(sys, t, Place::Returning(self.put_backs));
            self.returning[cpu as usize].push((t, self.put_backs));
            sys.arm_timer(sys.now + self.put_back_delay, CORE_TIMER | u64::from(self.put_backs) << 32 | u64::from(t));
        } else {
            self.do_enqueue(sys, cpu, t, 0);
        }
    }
}

impl<O: ScxOps> Policy for ScxCore<O> {
    fn name(&self) -> &'static str {
        self.ops.name()
    }

    fn tunables(&self) -> Vec<Tunable> {
        self.ops.tunables()
    }

    fn init(&mut self, sys: &mut Sys) {
        self.call(sys, 0, Ctx::Other, |ops, scx| ops.init(scx));
    }

    fn task_new(&mut self, sys: &mut Sys, t: TaskId, _parent: Option<TaskId>) {
        let weight = ((nice_to_weight(sys.task(t).nice) * 100 + 512) / 1024).max(1);
        let task = TaskScx { slice: SLICE_DFL, dsq_vtime: 0, weight, ddsp: None, place: Place::Off, away_cpu: 0 };
        if self.st.tasks.len() <= t as usize {
            self.st.tasks.resize(t as usize + 1, task.clone());
        }
        self.st.tasks[t as usize] = task;
        let cpu = sys.task(t).cpu;
        self.call(sys, cpu, Ctx::Other, |ops, scx| ops.enable(scx, t));
    }

    fn select_cpu(&mut self, sys: &mut Sys, t: TaskId, prev: CpuId, kind: WakeKind) -> CpuId {
        // select_task_rq asks the class only for a task that may run on
        // more than one CPU.
        let first_allowed = |sys: &Sys| (0..sys.nr_cpus).find(|&c| sys.allowed(t, c)).unwrap_or(prev);
        if nr_allowed(sys, t) == 1 {
            return first_allowed(sys);
        }
        let (this, flags) = match kind {
            WakeKind::Wakeup { waker_cpu, sync, .. } => {
                (waker_cpu.unwrap_or(prev), WAKE_TTWU | if sync { WAKE_SYNC } else { 0 })
            }
            WakeKind::New => (sys.task(t).parent.map_or(prev, |p| sys.task(p).cpu), WAKE_FORK),
        };
        let prev = if sys.allowed(t, prev) {
            prev
        } else if sys.allowed(t, this) {
            this
        } else {
            first_allowed(sys)
        };
        self.st.placing = Some(t);
        let cpu = self.call(sys, this, Ctx::SelectCpu, |ops, scx| {
            scx.local_of = prev;
            ops.select_cpu(scx, t, prev, flags)
        });
        self.st.placing = None;
        if cpu >= sys.nr_cpus {
            sys.fail(format!("select_cpu returned CPU {cpu} for task {t}: the machine has {} CPUs", sys.nr_cpus));
            return prev;
        }
        // select_fallback_rq for a CPU the task may not use.
        if sys.allowed(t, cpu) { cpu } else { first_allowed(sys) }
    }

    fn enqueue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, how: Enqueue) {
        let flags = if how == Enqueue::Wakeup { ENQ_WAKEUP } else { 0 };
        if how != Enqueue::Migrate {
            self.call(sys, cpu, Ctx::Other, |ops, scx| ops.runnable(scx, t, flags));
        }
        self.do_enqueue(sys, cpu, t, flags);
    }

    fn dequeue(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, _why: Dequeue) {
        // An exiting task is dequeued for sleep too (TASK_DEAD).
        if self.st.tasks[t as usize].place == Place::Held {
            self.call(sys, cpu, Ctx::Other, |ops, scx| ops.dequeue(scx, t, DEQ_SLEEP));
        }
        // Running <-> stopping stays within runnable <-> quiescent: a
        // running task going to sleep stops first.
        if self.st.curr[cpu as usize] == Some(t) {
            self.call(sys, cpu, Ctx::Other, |ops, scx| ops.stopping(scx, t, false));
        }
        self.call(sys, cpu, Ctx::Other, |ops, scx| ops.quiescent(scx, t, DEQ_SLEEP));
        self.st.unqueue(sys, t);
        self.st.tasks[t as usize].ddsp = None;
    }

    fn pick_next(&mut self, sys: &mut Sys, cpu: CpuId) -> Option<TaskId> {
        let c = cpu as usize;
        // A task this CPU put back is in its DSQ before the CPU schedules
        // again (its next task blocked or was preempted within the window).
        for (t, number) in std::mem::take(&mut self.returning[c]) {
            self.complete_put_back(sys, t, number);
        }
        let prev = self.st.curr[c].take();
        let prev_queued = prev.filter(|&p| sys.task(p).state == TaskState::Runnable);
        // balance_one: a runnable prev with slice left keeps the CPU;
        // else the local DSQ, the global DSQ, ops.dispatch; with nothing
        // found a runnable prev keeps it (no SCX_OPS_ENQ_LAST).
        let mut keep = prev_queued.filter(|&p| self.st.tasks[p as usize].slice > 0);
        if keep.is_none() && self.st.local[c].len() == 0 {
            self.balance(sys, cpu, prev);
            if self.st.local[c].len() == 0 {
                keep = prev_queued;
            }
        }
        // pick_task_scx: prev kept, or the head of the local DSQ; a zero
        // slice is refilled with SCX_SLICE_DFL.
        let next = match keep {
            Some(p) => p,
            None => {
                let (t, _) = self.st.local[c].iter().next()?;
                self.st.unqueue(sys, t);
                if let Some(p) = prev_queued {
                    self.put_prev_runnable(sys, cpu, p, true);
                }
                self.call(sys, cpu, Ctx::Other, |ops, scx| ops.running(scx, t));
                t
            }
        };
        let task = &mut self.st.tasks[next as usize];
        if task.slice == 0 {
            task.slice = SLICE_DFL;
        }
        self.st.curr[c] = Some(next);
        Some(next)
    }

    fn put_prev(&mut self, sys: &mut Sys, cpu: CpuId, t: TaskId, runnable: bool) {
        // A higher class takes the CPU.
        self.st.curr[cpu as usize] = None;
        if runnable {
            self.put_prev_runnable(sys, cpu, t, false);
        }
    }

    fn account(&mut self, _sys: &mut Sys, _cpu: CpuId, t: TaskId, delta: Nanos) {
        let task = &mut self.st.tasks[t as usize];
        task.slice = task.slice.saturating_sub(delta);
    }

    fn tick(&mut self, sys: &mut Sys, cpu: CpuId, curr: TaskId) {
        self.call(sys, cpu, Ctx::Other, |ops, scx| ops.tick(scx, curr));
        if self.st.tasks[curr as usize].slice == 0 {
            sys.resched(cpu);
        }
    }

    fn yield_task(&mut self, _sys: &mut Sys, _cpu: CpuId, t: TaskId) {
        // yield_task_scx without ops.yield: the slice ends.
        self.st.tasks[t as usize].slice = 0;
    }

    fn held_back(&self, _sys: &Sys, cpu: CpuId) -> u32 {
        self.st.away[cpu as usize]
    }

    fn timer(&mut self, sys: &mut Sys, token: u64) {
        if token & CORE_TIMER == 0 {
            self.call(sys, 0, Ctx::Other, |ops, scx| ops.timer(scx, token));
            return;
        }
        let t = (token & 0xffff_ffff) as TaskId;
        let number = ((token & !CORE_TIMER) >> 32) as u32;
        self.complete_put_back(sys, t, number);
    }

    fn unsupported(&self, sys: &Sys) -> Vec<String> {
        self.ops.unsupported(sys)
    }

    fn check_invariants(&self, sys: &Sys) -> Result<(), String> {
        let name = self.ops.name();
        let mut away = vec![0u32; self.st.away.len()];
        for (t, task) in self.st.tasks.iter().enumerate() {
            let state = sys.tasks[t].state;
            match task.place {
                Place::Off => {}
                Place::Queued(QueueRef::Local(c), ..) if c != sys.tasks[t].cpu => {
                    return Err(format!("{name}: task {t} in CPU {c}'s local DSQ is on CPU {}", sys.tasks[t].cpu));
                }
                _ if state != TaskState::Runnable => {
                    return Err(format!("{name}: task {t} waits in {:?} while {state:?}", task.place));
                }
                Place::Queued(QueueRef::Local(_), ..) => {}
                _ => away[task.away_cpu as usize] += 1,
            }
        }
        if away != self.st.away {
            return Err(format!("{name}: tasks waiting outside local DSQs {away:?}, counted {:?}", self.st.away));
        }
        for (cpu, c) in self.st.curr.iter().enumerate() {
            if let Some(t) = c
                && sys.cpus[cpu].curr == Some(*t)
                && self.st.tasks[*t as usize].place != Place::Off
            {
                return Err(format!("{name}: task {t} runs on CPU {cpu} while queued"));
            }
        }
        Ok(())
    }
}
