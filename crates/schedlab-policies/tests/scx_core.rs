//! The sched_ext core's own decisions, through schedulers written in its
//! shape: what a scheduler with no callbacks does (the global DSQ, 20 ms
//! slices ended at the tick), what the order of a shared DSQ decides
//! (scx_simple, vtime against FIFO), tasks kept in a scheduler's custody
//! and inserted from dispatch, ENQ_PREEMPT, and one clear error for a
//! broken rule.

mod common;

use common::{assert_conservation, workload};
use schedlab_policies::scx::simple::Simple;
use schedlab_policies::scx::{Dsq, ENQ_PREEMPT, SLICE_DFL, Scx, ScxCore, ScxOps};
use schedlab_sim::{CpuId, Engine, EngineOptions, Policy, Report, TaskId, Workload};

fn run(w: &Workload, policy: impl Policy + 'static) -> Result<Report, String> {
    let opts = EngineOptions { check_invariants: true, ..EngineOptions::default() };
    Engine::new(w, Box::new(policy), opts).run().map_err(|e| e.to_string())
}

const HOGS_ON_TWO_CPUS: &str = r#"
duration = "2s"
[machine]
cpus = 2
[[task]]
name = "hog"
count = 3
program = [ { loop = "forever", body = [ { run = "1s" } ] } ]
"#;

/// A sleeper (1 ms of work every 10 ms) beside two hogs on one CPU.
const SLEEPER_AND_HOGS: &str = r#"
duration = "4s"
[machine]
cpus = 1
[[task]]
name = "hog"
count = 2
program = [ { loop = "forever", body = [ { run = "1s" } ] } ]
[[task]]
name = "sleeper"
nice = -1
program = [ { loop = "forever", body = [ { run = "1ms" }, { sleep = "9ms" } ] } ]
"#;

/// A scheduler with no callbacks but its name.
struct Nothing;

impl ScxOps for Nothing {
    fn name(&self) -> &'static str {
        "nothing"
    }
}

#[test]
fn without_callbacks_tasks_share_the_global_dsq_in_twenty_ms_slices() {
    let w = workload(HOGS_ON_TWO_CPUS);
    let r = run(&w, ScxCore::new(&w, Nothing)).unwrap();
    assert_conservation(&r);
    // Every run is one SCX_SLICE_DFL ended at the tick that finds it
    // spent: a run starts just after a tick (by the switch's cost), so
    // five 4 ms ticks leave it microseconds short and the sixth ends it
    // at 24 ms.
    assert_eq!(SLICE_DFL, 20_000_000);
    let p50 = r.runtime_per_switch.p50 as f64;
    assert!((p50 - 24e6).abs() < 0.01 * 24e6, "runs of {p50} ns");
    // Both CPUs' slices end at the same tick. The hog a CPU switches away
    // from reaches the global DSQ a switch (2 us) after that CPU's
    // dispatch, and the other CPU, ticking up to 4 us apart, mostly finds
    // the DSQ empty and keeps its hog: their shares spread.
    let max = r.tasks.iter().map(|t| t.cpu_share_pct).fold(0.0, f64::max);
    let min = r.tasks.iter().map(|t| t.cpu_share_pct).fold(100.0, f64::min);
    assert!(max - min > 4.0, "the hog the second CPU keeps: {min:.1}% to {max:.1}%");
    // Put back at once, the FIFO rotation gives each hog two thirds.
    let at_once = workload(&HOGS_ON_TWO_CPUS.replace("cpus = 2", "cpus = 2\ncosts = { context_switch = \"0ns\" }"));
    let r = run(&at_once, ScxCore::new(&at_once, Nothing)).unwrap();
    assert_conservation(&r);
    for t in &r.tasks {
        assert!((t.cpu_share_pct - 66.7).abs() < 2.0, "{}: {:.1}%", t.name, t.cpu_share_pct);
    }
}

fn sleeper_wait_us(r: &Report) -> f64 {
    let s = r.tasks.iter().find(|t| t.name == "sleeper").unwrap();
    s.wakeup_latency_avg_ns.unwrap() as f64 / 1e3
}

#[test]
fn simple_puts_a_sleeper_ahead_of_the_hogs_and_its_fifo_mode_behind_them() {
    let w = workload(SLEEPER_AND_HOGS);
    let vtime = run(&w, Simple::policy(&w, false)).unwrap();
    let fifo = run(&w, Simple::policy(&w, true)).unwrap();
    assert_conservation(&vtime);
    assert_conservation(&fifo);
    // Neither preempts: the sleeper waits for the running hog's run (24
    // ms, see above) to end, half of one on average. By vtime it then
    // runs before the other hog; in FIFO order it waits for that hog's
    // whole run as well.
    let (v, f) = (sleeper_wait_us(&vtime), sleeper_wait_us(&fifo));
    eprintln!("simple: sleeper waits {v:.0} us by vtime, {f:.0} us in FIFO");
    assert!((8_000.0..18_000.0).contains(&v), "vtime: the sleeper waits {v:.0} us");
    assert!((18_000.0..30_000.0).contains(&(f - v)), "fifo: the sleeper waits {f:.0} us, vtime {v:.0} us");
    assert_eq!((vtime.scheduler.as_str(), fifo.scheduler.as_str()), ("simple", "simple-fifo"));
}

/// Keeps every task in its own FIFO list (custody) and inserts the oldest
/// into the dispatching CPU's local DSQ; `preempt` puts the nice -1 task
/// straight into its CPU's local DSQ with ENQ_PREEMPT instead.
struct Custody {
    held: std::collections::VecDeque<TaskId>,
    preempt: bool,
}

impl ScxOps for Custody {
    fn name(&self) -> &'static str {
        "custody"
    }

    fn select_cpu(&mut self, _scx: &mut Scx, _p: TaskId, prev_cpu: CpuId, _wake_flags: u64) -> CpuId {
        prev_cpu
    }

    fn enqueue(&mut self, scx: &mut Scx, p: TaskId, enq_flags: u64) {
        if self.preempt && scx.task(p).nice == -1 {
            let cpu = scx.task_cpu(p);
            scx.dsq_insert(p, Dsq::LocalOn(cpu), 5_000_000, enq_flags | ENQ_PREEMPT);
        } else {
            self.held.push_back(p);
        }
    }

    fn dequeue(&mut self, _scx: &mut Scx, p: TaskId, _deq_flags: u64) {
        self.held.retain(|&t| t != p);
    }

    fn dispatch(&mut self, scx: &mut Scx, _cpu: CpuId, _prev: Option<TaskId>) {
        if let Some(p) = self.held.pop_front() {
            scx.dsq_insert(p, Dsq::Local, 5_000_000, 0);
        }
    }
}

#[test]
fn tasks_kept_in_custody_run_when_dispatch_inserts_them_and_enq_preempt_takes_the_cpu_at_once() {
    let w = workload(SLEEPER_AND_HOGS);
    let held = run(&w, ScxCore::new(&w, Custody { held: Default::default(), preempt: false })).unwrap();
    assert_conservation(&held);
    // In custody the sleeper queues behind the hogs' 5 ms slices: a FIFO.
    let waited = sleeper_wait_us(&held);
    assert!(waited > 3_000.0, "in custody the sleeper waits {waited:.0} us");
    let shares: Vec<f64> = held.tasks.iter().map(|t| t.cpu_share_pct).collect();
    assert!((shares[0] - shares[1]).abs() < 1.0, "the hogs alternate: {shares:?}");
    // Inserted into its CPU's local DSQ with ENQ_PREEMPT, it ends the
    // running hog's slice and runs at the wakeup.
    let preempting = run(&w, ScxCore::new(&w, Custody { held: Default::default(), preempt: true })).unwrap();
    assert_conservation(&preempting);
    let at_once = sleeper_wait_us(&preempting);
    eprintln!("custody: the sleeper waits {waited:.0} us, with ENQ_PREEMPT {at_once:.0} us; shares {shares:?}");
    assert!(at_once < 100.0, "with ENQ_PREEMPT the sleeper waits {at_once:.0} us");
}

/// Inserts into a DSQ it never created.
struct NoSuchDsq;

impl ScxOps for NoSuchDsq {
    fn name(&self) -> &'static str {
        "no-such-dsq"
    }

    fn enqueue(&mut self, scx: &mut Scx, p: TaskId, enq_flags: u64) {
        scx.dsq_insert(p, Dsq::User(7), SLICE_DFL, enq_flags);
    }
}

/// Orders the global DSQ by vtime, which the kernel refuses.
struct VtimeGlobal;

impl ScxOps for VtimeGlobal {
    fn name(&self) -> &'static str {
        "vtime-global"
    }

    fn enqueue(&mut self, scx: &mut Scx, p: TaskId, enq_flags: u64) {
        scx.dsq_insert_vtime(p, Dsq::Global, SLICE_DFL, 0, enq_flags);
    }
}

#[test]
fn a_broken_rule_ends_the_run_with_what_to_do() {
    let w = workload(SLEEPER_AND_HOGS);
    let e = run(&w, ScxCore::new(&w, NoSuchDsq)).unwrap_err();
    assert!(e.contains("dispatched to DSQ 7, which does not exist: create it with create_dsq in init"), "{e}");
    let e = run(&w, ScxCore::new(&w, VtimeGlobal)).unwrap_err();
    assert!(e.contains("built-in DSQs are FIFO"), "{e}");
}

/// A task put back by a CPU that schedules again before the put-back's
/// window ends (its next task, woken by a timer that paid its own switch,
/// blocked at once) is in the DSQ before that CPU looks: left to the
/// window's end, the encoder's frame threads were inserted into a node DSQ
/// no CPU would look at again, and 2 CPUs ran 1.8% of 120 s.
#[test]
fn a_cpu_that_schedules_again_finds_the_task_it_put_back() {
    let ov = schedlab_sim::Overrides {
        cpus: Some(2),
        params: [("threads".to_string(), 3)].into_iter().collect(),
        ..Default::default()
    };
    let w = common::scenario("encoder", ov);
    let r = common::run_checked(&w, "bpfland");
    assert_conservation(&r);
    let makespan = r.totals.makespan_ns.expect("the encoder finishes") as f64 / 1e9;
    assert!(makespan < 9.0, "makespan {makespan:.3} s");
}
