//! The real runner's start, simulated. `schedlab host` (what `schedlab vm`
//! runs in the guest) does not find its tasks runnable at t=0 as a
//! simulation does: its controller creates each task thread (clone), the
//! thread sets its attributes and waits at a gate; once all are there the
//! gate opens, and each thread touches its stack and reads its starting
//! counts before it sleeps until t0, 20 ms plus 1 ms a thread after the
//! opening; the report counts from t0 (schedlab-host's lib.rs and
//! threads.rs). What a thread spends before t0 comes out of the slice it
//! holds at t0: MuQSS and Project C give a forked child half of its
//! forker's remaining slice, and a thread of 1024 gets about three turns in
//! a 3 s window, so its first, short one weighs in the figures. The real
//! reports give that CPU time (`thread_cpu_before_start_p50_us`); the
//! simulation with the guest's costs starts its tasks this way with it.
//!
//! The controller itself has run before it creates the threads (the
//! runner's set-up and its spin calibration: 1.0-1.7 s under TCG), and a
//! thread is created with what the scheduler made of that: Project C's BMQ
//! deboosts a task at every slice it uses up, and a forked task starts
//! with its parent's boost_prio. The guests' controllers showed /proc
//! priority 44 at that moment in all 51 bmq-6.12 runs (32 + nice 0 +
//! boost_prio 12, the most deboosted), so their threads started behind
//! every hog of nice 0, and a nice 5 one never ran. Where the reports give
//! that CPU time (`controller_cpu_before_spawn_ms`), the simulated
//! controller runs it first; where they give a thread's CPU at the gate
//! (`thread_cpu_at_gate_p50_us`), the thread spends that much before the
//! gate and the rest after it, as the real one did (a slice that runs out
//! before the gate's sleep leaves the thread a level lower than one that
//! runs out after it). The controller opens the gate once every thread is
//! there, so each of them sleeps at it.

use schedlab_sim::time::Nanos;
use schedlab_sim::workload::dist::Dist;
use schedlab_sim::workload::{Barrier, Op, SchedPolicy, TaskSpec, TimerMode, Workload};

/// schedlab-host's START_MARGIN_NS and START_MARGIN_PER_THREAD_NS: t0 lies
/// this far past the gate's opening.
const MARGIN_NS: Nanos = 20_000_000;
const MARGIN_PER_THREAD_NS: Nanos = 1_000_000;

/// Name of the simulated controller, which is no task of the workload.
const CONTROLLER: &str = "schedlab-runner";

/// `w` started as the runner starts it, its controller running
/// `controller_cpu` before it creates the threads, each thread spending
/// `before_start` of CPU time (its start-up cost included) before t0,
/// `at_gate` of it before the gate (all of it after, where not measured),
/// and measured from
/// t0 for `w`'s duration. None for a workload whose tasks do not all start
/// at once (the runner delays those past t0; no experiment has them).
pub(super) fn runner_start(
    w: &Workload,
    before_start: Nanos,
    at_gate: Option<Nanos>,
    controller_cpu: Nanos,
) -> Option<Workload> {
    if w.tasks.iter().any(|t| !t.template && t.start != Dist::Const(0)) {
        return None;
    }
    let mut out = w.clone();
    let threads: u64 = w.tasks.iter().filter(|t| !t.template).map(|t| t.count as u64).sum();
    let gate = out.barriers.len() as u32;
    out.barriers.push(Barrier { name: format!("{CONTROLLER}-gate"), users: threads as u32 + 1 });
    let costs = &w.machine.costs;
    // The gate opens when the controller has created every thread; t0 is
    // fixed ahead of time, so it is placed past the latest the creating
    // can take (every clone and thread start one after the other on one
    // CPU, twice over), and the threads sleep a little longer than the
    // runner's margin before it.
    let creating = 2 * threads * (costs.fork + costs.thread_start + 10_000);
    let t0 = controller_cpu + creating + MARGIN_NS + MARGIN_PER_THREAD_NS * threads;
    // The thread's own work, less the start-up the engine charges: before
    // the gate (its attributes) and after it (its stack and counts).
    let own_work = before_start.saturating_sub(costs.thread_start);
    let before_gate = at_gate.map_or(0, |g| g.min(before_start).saturating_sub(costs.thread_start));
    let after_gate = own_work - before_gate.min(own_work);
    // Each is a CPU clock's reading, which holds what the machine took
    // from the run (`run_stretch`) already.
    let measured = |ns: Nanos| Op::Run(Dist::Const(costs.unstretched(ns)));
    let mut controller = Vec::new();
    if controller_cpu > 0 {
        controller.push(measured(controller_cpu));
    }
    for (id, spec) in out.tasks.iter_mut().enumerate() {
        if spec.template {
            continue;
        }
        let start = controller.len() as u32;
        controller.push(Op::LoopStart { count: Some(spec.count as u64), end: start + 2 });
        controller.push(Op::Fork(id as u32));
        controller.push(Op::LoopEnd { start });
        spec.template = true;
        let slot = spec
            .program
            .iter()
            .filter_map(|op| if let Op::Timer { slot, .. } = op { Some(slot + 1) } else { None })
            .max();
        let mut program = Vec::new();
        if before_gate > 0 {
            program.push(measured(before_gate));
        }
        program.push(Op::Barrier(gate));
        if after_gate > 0 {
            program.push(measured(after_gate));
        }
        program.push(Op::Timer { period: t0, slot: slot.unwrap_or(0), mode: TimerMode::At });
        let shift = program.len() as u32;
        program.extend(spec.program.iter().map(|op| match *op {
            Op::LoopStart { count, end } => Op::LoopStart { count, end: end + shift },
            Op::LoopEnd { start } => Op::LoopEnd { start: start + shift },
            ref op => op.clone(),
        }));
        spec.program = program;
    }
    // The controller opens the gate once every thread is there (it polls
    // their count every millisecond), so every thread sleeps at the gate,
    // the last one too: it waits out the creating before it arrives.
    controller.push(Op::Sleep(Dist::Const(creating)));
    controller.push(Op::Barrier(gate));
    controller.push(Op::Exit);
    out.tasks.push(TaskSpec {
        name: CONTROLLER.into(),
        count: 1,
        nice: 0,
        policy: SchedPolicy::Normal,
        affinity: None,
        per_cpu: false,
        group: 0,
        slice: None,
        start: Dist::Const(0),
        template: false,
        forked_once: false,
        background: false,
        program: controller,
    });
    out.duration = t0 + w.duration;
    out.measure_from = t0;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::validate::experiments::{EXPERIMENTS, SEC, experiment_common};
    use crate::simulate::{load_workload, simulate};

    #[test]
    fn every_experiment_starts_as_the_runner_does_and_reports_the_same_tasks() {
        for e in EXPERIMENTS {
            let w = load_workload(&experiment_common(e, SEC, 1)).unwrap();
            let started = runner_start(&w, 500_000, None, 0).unwrap_or_else(|| panic!("{}: not startable", e.id));
            let (plain, r) = (simulate(&w, "cfs").unwrap(), simulate(&started, "cfs").unwrap());
            if plain.totals.makespan_ns.is_none() {
                assert_eq!(r.duration_ns, SEC, "{}: measured for the experiment's duration", e.id);
            }
            let names =
                |r: &schedlab_sim::Report| r.specs.iter().map(|s| (s.name.clone(), s.tasks)).collect::<Vec<_>>();
            assert_eq!(names(&r), names(&plain), "{}: the controller is gone before t0", e.id);
        }
    }

    #[test]
    fn muqss_threads_forked_by_the_runner_start_with_short_turns() {
        // thread-test-1024 under MuQSS: 6.29 ms turns when every spinner
        // starts runnable; forked, each holds half of its creator's slice
        // less its start-up work at t0 (the guests: 2.6-2.8 ms at the
        // median, with 0.9-1.3 ms of CPU before the start).
        let exp = EXPERIMENTS.iter().find(|e| e.id == "thread-test-1024").unwrap();
        let w = load_workload(&experiment_common(exp, 3 * SEC, 1)).unwrap();
        let plain = simulate(&w, "muqss").unwrap();
        let forked = simulate(&runner_start(&w, 1_053_000, None, 0).unwrap(), "muqss").unwrap();
        let spinners = |r: &schedlab_sim::Report| r.specs.iter().find(|s| s.name == "spinner").unwrap().tasks;
        assert_eq!(spinners(&forked), 1024);
        assert!(
            forked.runtime_per_switch.p50 < plain.runtime_per_switch.p50 * 9 / 10,
            "forked p50 {} ns against {} ns",
            forked.runtime_per_switch.p50,
            plain.runtime_per_switch.p50
        );
    }

    #[test]
    fn bmq_threads_forked_by_a_deboosted_controller_start_behind_the_hog() {
        // nice-sleepers under BMQ: started fresh, every sleeper gets the
        // 25% it asks for; forked by a controller that ran 1.1 s first (the
        // guests' 1.0-1.7 s, /proc priority 44: boost_prio +12), the nice 5
        // and nice 10 sleepers start a level behind the nice 0 hog and
        // never run, as in all three bmq-6.12 boots (0.0%).
        let exp = EXPERIMENTS.iter().find(|e| e.id == "nice-sleepers").unwrap();
        let w = load_workload(&experiment_common(exp, 3 * SEC, 1)).unwrap();
        let share =
            |r: &schedlab_sim::Report, name: &str| r.specs.iter().find(|s| s.name == name).unwrap().cpu_share_avg_pct;
        let fresh = simulate(&runner_start(&w, 4_000_000, Some(3_000_000), 0).unwrap(), "bmq").unwrap();
        let forked = simulate(&runner_start(&w, 4_000_000, Some(3_000_000), 1_100_000_000).unwrap(), "bmq").unwrap();
        for sleeper in ["nice5-sleeper", "nice10-sleeper"] {
            assert!(share(&fresh, sleeper) > 20.0, "{sleeper} started fresh: {:.1}%", share(&fresh, sleeper));
            assert_eq!(share(&forked, sleeper), 0.0, "{sleeper} forked by the deboosted controller");
        }
        assert!((share(&forked, "hog") - 75.0).abs() < 1.0, "the hog: {:.1}%", share(&forked, "hog"));
    }
}
