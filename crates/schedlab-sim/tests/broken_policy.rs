//! A policy that breaks the engine's rules ends the run with an error
//! naming what it did and when, instead of a panic or a silently wrong
//! report: the checks every pick and placement passes (on for every
//! policy, built-in or a user's; a few loads per decision).

use schedlab_sim::{
    CpuId, Dequeue, Engine, EngineOptions, Enqueue, Overrides, Policy, SimError, Sys, TaskId, WakeKind, Workload,
};

/// One FIFO per CPU (the running task first, never preempted), with one
/// fault chosen by the test.
struct Faulty {
    queues: Vec<Vec<TaskId>>,
    fault: Fault,
    enqueued: u32,
}

#[derive(Clone, Copy)]
enum Fault {
    /// Forgets the third task it is given.
    LosesATask,
    /// Places every task on CPU 7 of a 2-CPU machine.
    PlacesOnAMissingCpu,
    /// Does not take a task that sleeps out of its queue.
    KeepsASleeper,
    /// CPU 1, with nothing of its own, runs what CPU 0 queued without
    /// moving it there.
    TakesAnotherCpusTask,
}

impl Policy for Faulty {
    fn name(&self) -> &'static str {
        "faulty"
    }
    fn select_cpu(&mut self, _sys: &mut Sys, t: TaskId, _prev: CpuId, _kind: WakeKind) -> CpuId {
        match self.fault {
            Fault::PlacesOnAMissingCpu => 7,
            Fault::TakesAnotherCpusTask => t % 2,
            _ => 0,
        }
    }
    fn enqueue(&mut self, _sys: &mut Sys, cpu: CpuId, t: TaskId, _how: Enqueue) {
        self.enqueued += 1;
        if !(matches!(self.fault, Fault::LosesATask) && self.enqueued == 3) {
            self.queues[cpu as usize].push(t);
        }
    }
    fn dequeue(&mut self, _sys: &mut Sys, cpu: CpuId, t: TaskId, _why: Dequeue) {
        if !matches!(self.fault, Fault::KeepsASleeper) {
            self.queues[cpu as usize].retain(|&q| q != t);
        }
    }
    fn pick_next(&mut self, _sys: &mut Sys, cpu: CpuId) -> Option<TaskId> {
        match self.queues[cpu as usize].first() {
            None if matches!(self.fault, Fault::TakesAnotherCpusTask) => self.queues[0].last().copied(),
            first => first.copied(),
        }
    }
    fn put_prev(&mut self, _sys: &mut Sys, _cpu: CpuId, _t: TaskId, _runnable: bool) {}
}

/// The run's error with `fault`: three tasks that run 1 ms and sleep 2 ms
/// on a 2-CPU machine.
fn broken(fault: Fault) -> String {
    let w = Workload::from_toml(
        "duration = \"1s\"\n[machine]\ncpus = 2\n[[task]]\nname = \"worker\"\ncount = 3\n\
         program = [ { loop = \"forever\", body = [ { run = \"1ms\" }, { sleep = \"2ms\" } ] } ]\n",
        "three-workers",
        &Overrides::default(),
    )
    .unwrap();
    let policy = Faulty { queues: vec![Vec::new(); 2], fault, enqueued: 0 };
    match Engine::new(&w, Box::new(policy), EngineOptions::default()).run() {
        Err(e @ SimError::PolicyBroke { .. }) => e.to_string(),
        Err(e) => panic!("another error: {e}"),
        Ok(_) => panic!("the broken policy ran to the end"),
    }
}

#[test]
fn a_lost_task_is_found_when_its_cpu_goes_idle() {
    let e = broken(Fault::LosesATask);
    assert!(e.starts_with("policy 'faulty' at "), "{e}");
    assert!(e.contains("CPU 0 went idle with 1 runnable task(s) on its runqueue, task 2 (worker) among them"), "{e}");
}

#[test]
fn a_placement_on_a_missing_cpu_is_refused() {
    let e = broken(Fault::PlacesOnAMissingCpu);
    assert!(
        e.contains("policy 'faulty' at 0ns: select_cpu placed task 0 (worker) on CPU 7, which does not exist"),
        "{e}"
    );
}

#[test]
fn picking_a_sleeping_task_is_refused() {
    let e = broken(Fault::KeepsASleeper);
    assert!(e.contains("CPU 0 picked task 0 (worker), which is Sleeping, not runnable"), "{e}");
}

#[test]
fn running_another_cpus_task_without_moving_it_is_refused() {
    let e = broken(Fault::TakesAnotherCpusTask);
    assert!(
        e.contains("CPU 1 picked task 2 (worker), which is queued on CPU 0: move it with sys.migrate first")
            || e.contains("CPU 1 picked task 2 (worker), which runs on CPU 0"),
        "{e}"
    );
}
