//! What a task's program does: each op (run, sleep, timer, wait and
//! signal on channels, condition variables, barriers, yield, fork, exit,
//! loops) as the engine carries it out on the task's CPU, and how a task
//! blocks and exits.

use super::*;

impl<'w> Engine<'w> {
    /// Interpret the running task's program until it needs CPU time, blocks
    /// or exits.
    pub(super) fn advance(&mut self, cpu: CpuId, t: TaskId) {
        let spec = &self.w.tasks[self.sys.tasks[t as usize].spec as usize];
        let program = &spec.program;
        let now = self.sys.now;
        let mut steps = 0u64;
        loop {
            steps += 1;
            if steps > self.opts.runaway_limit {
                self.error = Some(SimError::Runaway { task: spec.name.clone(), limit: self.opts.runaway_limit });
                return;
            }
            let prog = &mut self.progs[t as usize];
            if prog.wakes_owed > 0 {
                // The op that woke another CPU returns only after sending
                // the IPI. (An op that blocks right after its wakeup, a
                // condition wait releasing its mutex, pays at its next run.)
                let owed = std::mem::take(&mut prog.wakes_owed);
                self.run_cost(cpu, t, owed);
                return;
            }
            let Some(op) = program.get(prog.pc as usize) else {
                self.exit_op(cpu, t);
                return;
            };
            prog.pc += 1;
            match op {
                Op::Run(d) => {
                    let rng = &mut prog.rng;
                    let burst = d.sample(rng);
                    if burst == 0 {
                        continue;
                    }
                    // What the machine takes from a run without a switch
                    // is paid inside it.
                    let stretch = self.w.machine.costs.stretch(burst);
                    prog.remaining += burst.saturating_add(stretch);
                    prog.penalty += stretch;
                    prog.stats.runs_done += 1;
                    let at = now + prog.remaining;
                    let epoch = self.cpu_run[cpu as usize].epoch;
                    self.push(at, Kind::BurstEnd(cpu, epoch));
                    return;
                }
                Op::Sleep(d) => {
                    let rng = &mut prog.rng;
                    let len = d.sample(rng);
                    self.block(cpu, t, Some(now + len), false);
                    return;
                }
                Op::Timer { period, slot, mode } => {
                    if self.timer_op(cpu, t, *period, *slot as usize, *mode) {
                        return;
                    }
                }
                Op::Wait(ch) => {
                    let chan = &mut self.chans[*ch as usize];
                    if chan.tokens > 0 {
                        chan.tokens -= 1;
                        continue;
                    }
                    chan.waiters.push_back(t);
                    self.block(cpu, t, None, false);
                    return;
                }
                Op::Signal(ch) => self.signal(t, *ch),
                Op::CondWait { cond, mutex } => {
                    if let Some(m) = mutex {
                        self.signal(t, *m);
                    }
                    self.conds[*cond as usize].push_back(t);
                    self.block(cpu, t, None, true);
                    return;
                }
                Op::CondSignal(c) => self.cond_wake(t, *c, false),
                Op::CondBroadcast(c) => self.cond_wake(t, *c, true),
                Op::Barrier(b) => {
                    if self.barrier_op(cpu, t, *b) {
                        return;
                    }
                }
                Op::Yield => {
                    self.yield_op(cpu, t);
                    return;
                }
                Op::Fork(spec_id) => {
                    if self.fork_op(cpu, t, *spec_id) {
                        return;
                    }
                }
                Op::Exit => {
                    prog.pc -= 1;
                    self.exit_op(cpu, t);
                    return;
                }
                Op::LoopStart { count, end } => {
                    match count {
                        Some(n) => prog.loops.push((prog.pc - 1, *n)),
                        None => prog.loops.push((prog.pc - 1, u64::MAX)),
                    }
                    let _ = end;
                }
                Op::LoopEnd { start } => {
                    let (s, left) = prog.loops.last_mut().expect("LoopEnd pairs with LoopStart");
                    debug_assert_eq!(*s, *start);
                    if *left != u64::MAX {
                        *left -= 1;
                    }
                    if *left == 0 {
                        prog.loops.pop();
                    } else {
                        prog.pc = *start + 1;
                    }
                }
            }
        }
    }

    /// A timer op: sleeps until the next expiry, or (rt-app's rule for a
    /// missed one) goes on at once. Whether the task stopped.
    pub(super) fn timer_op(&mut self, cpu: CpuId, t: TaskId, period: Nanos, slot: usize, mode: TimerMode) -> bool {
        let now = self.sys.now;
        let prog = &mut self.progs[t as usize];
        if prog.timer_next.len() <= slot {
            prog.timer_next.resize(slot + 1, None);
        }
        let started = prog.stats.created;
        let next = match mode.next_expiry(prog.timer_next[slot], period, started, 0, now) {
            Ok(next) => next,
            Err(last) => {
                // rt-app does not sleep for a missed expiry.
                prog.timer_next[slot] = Some(last);
                return false;
            }
        };
        prog.timer_next[slot] = Some(next);
        self.block(cpu, t, Some(next), false);
        true
    }

    /// A barrier op: waits for the other users, or, the last to arrive,
    /// releases them and goes on. Whether the task stopped.
    pub(super) fn barrier_op(&mut self, cpu: CpuId, t: TaskId, b: BarrierId) -> bool {
        let barrier = &mut self.barriers[b as usize];
        if barrier.waiting.len() as u32 + 1 < barrier.users {
            barrier.waiting.push(t);
            self.block(cpu, t, None, true);
            return true;
        }
        for w in std::mem::take(&mut barrier.waiting) {
            self.wake(w, Some(t), false);
        }
        false
    }

    /// sched_yield: the syscall's cost on the CPU, and the class decides
    /// where the task goes in its queue.
    pub(super) fn yield_op(&mut self, cpu: CpuId, t: TaskId) {
        self.progs[t as usize].remaining = self.w.machine.costs.syscall.max(1);
        if self.is_rt(t) {
            self.rt.requeue_tail(cpu, t);
        } else {
            self.policy.yield_task(&mut self.sys, cpu, t);
        }
        let at = self.sys.now + self.progs[t as usize].remaining;
        let epoch = self.cpu_run[cpu as usize].epoch;
        self.push(at, Kind::BurstEnd(cpu, epoch));
        self.sys.resched(cpu);
    }

    /// The running task spends `cost` of CPU time that is no work of its
    /// program, then its program goes on where it stands.
    fn run_cost(&mut self, cpu: CpuId, t: TaskId, cost: Nanos) {
        let prog = &mut self.progs[t as usize];
        prog.remaining += cost;
        prog.penalty += cost;
        let at = self.sys.now + prog.remaining;
        let epoch = self.cpu_run[cpu as usize].epoch;
        self.push(at, Kind::BurstEnd(cpu, epoch));
    }

    /// A fork op: clone()'s cost in the parent first (the op is taken again
    /// once it is paid), then the child, woken as a new task. Whether the
    /// parent stopped.
    pub(super) fn fork_op(&mut self, cpu: CpuId, t: TaskId, spec_id: TaskSpecId) -> bool {
        let clone_cost = self.w.machine.costs.fork;
        let prog = &mut self.progs[t as usize];
        if clone_cost > 0 && !prog.fork_paid {
            // clone() runs in the parent before the child is
            // runnable: pay for it, then take this step again.
            prog.fork_paid = true;
            prog.pc -= 1;
            self.run_cost(cpu, t, clone_cost);
            return true;
        }
        prog.fork_paid = false;
        if self.sys.tasks.len() as u64 >= self.opts.task_limit {
            let task = self.w.tasks[self.sys.tasks[t as usize].spec as usize].name.clone();
            self.error = Some(SimError::TooManyTasks { task, limit: self.opts.task_limit });
            return true;
        }
        let child = self.create_task(spec_id, Some(t));
        self.wake(child, Some(t), true);
        false
    }

    pub(super) fn signal(&mut self, waker: TaskId, ch: ChanId) {
        let chan = &mut self.chans[ch as usize];
        match chan.waiters.pop_front() {
            Some(t) => {
                // The read's return, beyond the switch to its reader; the
                // write's return in its writer, paid before it goes on as
                // an IPI's sending is.
                let costs = &self.w.machine.costs;
                let (cost, back) = (costs.wait_wakeup, costs.signal_return);
                if cost > 0 {
                    let prog = &mut self.progs[t as usize];
                    prog.remaining += cost;
                    prog.penalty += cost;
                }
                self.progs[waker as usize].wakes_owed += back;
                self.wake(t, Some(waker), false)
            }
            None => chan.tokens += 1,
        }
    }

    pub(super) fn cond_wake(&mut self, waker: TaskId, c: CondId, all: bool) {
        let n = if all { self.conds[c as usize].len() } else { 1 };
        for _ in 0..n {
            match self.conds[c as usize].pop_front() {
                Some(w) => self.wake(w, Some(waker), false),
                None => break,
            }
        }
    }

    /// Puts `t` to sleep until `until` or a wakeup; `futex` says it waits
    /// on a condition or a barrier, which the host runner does in a futex
    /// (a channel `wait` is a pipe read, a sleep or timer an hrtimer).
    pub(super) fn block(&mut self, cpu: CpuId, t: TaskId, until: Option<Nanos>, futex: bool) {
        let now = self.sys.now;
        self.dequeue_running(cpu, t, Dequeue::Sleep);
        let info = &mut self.sys.tasks[t as usize];
        info.state = TaskState::Sleeping;
        info.slept_at = now;
        info.futex_wait = futex;
        let prog = &mut self.progs[t as usize];
        prog.sleep_epoch = prog.sleep_epoch.wrapping_add(1);
        if let Some(at) = until {
            let epoch = prog.sleep_epoch;
            let late = self.w.machine.costs.timer_latency.sample(&mut prog.rng);
            prog.timer_due = at;
            self.push(at + late, Kind::Wake(t, epoch));
        }
        self.take_sent_preemptions(cpu);
        self.schedule(cpu);
    }

    /// The end of a program: the thread's exit costs CPU time on its CPU
    /// first (the end is reached again once it is paid), then it exits.
    fn exit_op(&mut self, cpu: CpuId, t: TaskId) {
        let cost = self.w.machine.costs.thread_exit;
        let prog = &mut self.progs[t as usize];
        if cost > 0 && !prog.exit_paid {
            prog.exit_paid = true;
            self.run_cost(cpu, t, cost);
            return;
        }
        self.exit(cpu, t);
    }

    pub(super) fn exit(&mut self, cpu: CpuId, t: TaskId) {
        self.dequeue_running(cpu, t, Dequeue::Exit);
        self.sys.tasks[t as usize].state = TaskState::Exited;
        self.progs[t as usize].stats.exited = Some(self.sys.now);
        if self.ends_the_run(t) {
            self.alive -= 1;
            self.last_exit = self.sys.now;
        }
        self.take_sent_preemptions(cpu);
        self.schedule(cpu);
    }
}
