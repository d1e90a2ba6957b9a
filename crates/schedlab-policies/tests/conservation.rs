//! Every policy on every built-in scenario: invariants after every event,
//! conservation of CPU time, no task lost, and determinism.

mod common;
use common::*;
use schedlab_policies::POLICIES;
use schedlab_sim::{Overrides, time::NSEC_PER_MSEC};
use std::collections::BTreeMap;

fn short(params: &[(&str, i64)]) -> Overrides {
    Overrides {
        duration: Some(300 * NSEC_PER_MSEC),
        params: params.iter().map(|(k, v)| (k.to_string(), *v)).collect::<BTreeMap<_, _>>(),
        ..Overrides::default()
    }
}

#[test]
fn small_scenarios_keep_every_invariant() {
    let cases = [
        ("thread-test", short(&[("threads", 5)])),
        ("smp-fairness", short(&[("hogs", 10)])),
        ("jitter-under-load", short(&[("workers", 24)])),
        ("lat-ctx", short(&[])),
        ("container-quota", Overrides { cpus: Some(4), ..short(&[]) }),
    ];
    for (name, ov) in cases {
        let w = scenario(name, ov);
        for p in POLICIES {
            let r = run_checked(&w, p.name);
            assert_conservation(&r);
            assert_eq!(r.tasks.len() as u64, w.initial_tasks(), "{name}/{}: tasks lost", p.name);
        }
    }
}

#[test]
fn large_scenarios_conserve_time() {
    for name in ["group-isolation", "group-isolation-flat", "mixed-64"] {
        let w = scenario(name, short(&[]));
        for p in POLICIES {
            let r = run(&w, p.name);
            assert_conservation(&r);
            assert_eq!(r.tasks.len() as u64, w.initial_tasks(), "{name}/{}: tasks lost", p.name);
        }
    }
}

#[test]
fn same_seed_same_report_other_seed_other_report() {
    let ov = |seed| Overrides { seed: Some(seed), cpus: Some(8), ..short(&[]) };
    for p in POLICIES {
        let a = serde_json::to_string(&run(&scenario("mixed-64", ov(7)), p.name)).unwrap();
        let b = serde_json::to_string(&run(&scenario("mixed-64", ov(7)), p.name)).unwrap();
        let c = serde_json::to_string(&run(&scenario("mixed-64", ov(8)), p.name)).unwrap();
        assert_eq!(a, b, "{}: same seed gave different reports", p.name);
        assert_ne!(a, c, "{}: the seed changed nothing", p.name);
    }
}

#[test]
fn forks_and_exits_are_accounted_and_give_a_makespan() {
    let w = workload(
        r#"
[machine]
cpus = 4
[[task]]
name = "make"
program = [ { loop = 20, body = [ { fork = "cc" }, { run = "100us" } ] }, { sleep = "1ms" } ]
[[task]]
name = "cc"
template = true
program = [ { run = "uniform(1ms,5ms)" }, { exit = true } ]
"#,
    );
    for p in POLICIES {
        let r = run_checked(&w, p.name);
        assert_conservation(&r);
        assert_eq!(r.tasks.len(), 21, "{}: every fork shows in the report", p.name);
        assert!(r.tasks.iter().all(|t| t.exited_at_ns.is_some()), "{}: every task exits", p.name);
        let m = r.totals.makespan_ns.expect("finite workload has a makespan");
        // 20 jobs of 1-5 ms on 4 CPUs: at least 5 ms, well under the 1 s limit.
        assert!(m > 5 * NSEC_PER_MSEC && m < 100 * NSEC_PER_MSEC, "{}: makespan {m}", p.name);
    }
}

#[test]
fn a_thread_pays_its_exit_on_its_cpu_before_it_is_gone() {
    // Two jobs of 10 ms on one CPU, each paying 2 ms to exit (a TCG
    // guest's thread exit is 0.1 ms; 2 ms makes it plain): the second
    // job gets the CPU only after the first has paid, so the run ends at
    // 24 ms, not 20, and the exits are CPU time, not work.
    let text = |exit: &str| {
        format!(
            r#"
[machine]
cpus = 1
costs = {{ context_switch = "0us", idle_exit = "0us", thread_exit = "{exit}" }}
[[task]]
name = "job"
count = 2
program = [ {{ run = "10ms" }}, {{ exit = true }} ]
"#
        )
    };
    for p in POLICIES {
        let r = run_checked(&workload(&text("2ms")), p.name);
        assert_conservation(&r);
        assert_eq!(r.totals.makespan_ns, Some(24 * NSEC_PER_MSEC), "{}", p.name);
        assert_eq!(r.totals.work_done_ns, 20 * NSEC_PER_MSEC, "{}: the exits did no work", p.name);
        for t in &r.tasks {
            assert_eq!(t.cpu_time_ns, 12 * NSEC_PER_MSEC, "{}: {} ran its work and its exit", p.name, t.name);
        }
        // A program that ends without an exit op pays the same.
        let no_exit_op = text("2ms").replace(", { exit = true }", "");
        assert!(!no_exit_op.contains("exit = true"));
        let r = run_checked(&workload(&no_exit_op), p.name);
        assert_eq!(r.totals.makespan_ns, Some(24 * NSEC_PER_MSEC), "{}: no exit op", p.name);
        let r = run_checked(&workload(&text("0us")), p.name);
        assert_eq!(r.totals.makespan_ns, Some(20 * NSEC_PER_MSEC), "{}: no exit cost", p.name);
    }
}

#[test]
fn a_run_stretched_by_the_machine_takes_longer_and_does_the_same_work() {
    // Two jobs of 10 ms on one CPU with 100 us a millisecond taken from
    // every run (a guest whose vCPU its host did not always run): each
    // takes 11 ms of CPU for its 10 ms of work, the pair 22 ms.
    let text = r#"
[machine]
cpus = 1
costs = { context_switch = "0us", idle_exit = "0us", run_stretch = "100us" }
[[task]]
name = "job"
count = 2
program = [ { loop = 4, body = [ { run = "2500us" } ] }, { exit = true } ]
"#;
    for p in POLICIES {
        let r = run_checked(&workload(text), p.name);
        assert_conservation(&r);
        assert_eq!(r.totals.makespan_ns, Some(22 * NSEC_PER_MSEC), "{}", p.name);
        assert_eq!(r.totals.work_done_ns, 20 * NSEC_PER_MSEC, "{}: the stretch did no work", p.name);
        for t in &r.tasks {
            assert_eq!(t.cpu_time_ns, 11 * NSEC_PER_MSEC, "{}: {}", p.name, t.name);
        }
    }
}

#[test]
fn a_timer_is_as_late_as_its_machines_distribution_draws_and_a_missed_expiry_is_skipped() {
    // One cyclictest thread at 1 ms alone on a CPU, its timers 20 us late
    // but one in ten 3.5 ms late (a guest's vCPU its host did not run):
    // the late ones skip three expiries each, so it wakes about
    // 1000 / (0.9 + 0.1 * 4) = 769 times a second, where a timer always
    // 20 us late wakes it 1000 times; the latency counts from the expiry.
    let text = |late: &str| {
        format!(
            r#"
duration = "4s"
[machine]
cpus = 1
costs = {{ context_switch = "0us", idle_exit = "0us", timer_latency = "{late}" }}
[[task]]
name = "cyclic"
program = [ {{ loop = "forever", body = [ {{ timer = "1ms" }}, {{ run = "10us" }} ] }} ]
"#
        )
    };
    let steady = workload(&text("20us"));
    let late = workload(&text("quantiles(p0=20us,p90=20us,p90.01=3.5ms,p100=3.5ms)"));
    for p in POLICIES {
        let r = run_checked(&steady, p.name);
        assert_conservation(&r);
        let l = &r.specs[0].wakeup_latency;
        assert!((3_990..=4_000).contains(&l.count) && l.max < 100_000, "{}: {l:?}", p.name);
        let r = run_checked(&late, p.name);
        assert_conservation(&r);
        let l = &r.specs[0].wakeup_latency;
        assert!((2_900..=3_250).contains(&l.count), "{}: {} wakeups in 4 s", p.name, l.count);
        let over_3ms: u64 = l.buckets.iter().filter(|b| b.lo >= 2_000_000).map(|b| b.count).sum();
        let share = over_3ms as f64 / l.count as f64;
        assert!((0.08..=0.12).contains(&share), "{}: {over_3ms} of {} wakeups late", p.name, l.count);
        assert!(l.p50 < 100_000, "{}: median {}", p.name, l.p50);
        assert_eq!(run_checked(&late, p.name), r, "{}: the same seed draws the same lateness", p.name);
    }
}

#[test]
fn a_timed_wakeup_is_seen_after_its_return_which_costs_no_more_cpu() {
    // A 1 ms cyclic thread alone on a CPU, its timers 20 us late, each
    // wakeup 50 us of its CPU: with timer_return = 30 us of that 50 after
    // the switch, its thread sees each wakeup 50 us late instead of 20,
    // and its CPU time is the same.
    let text = |ret: &str| {
        format!(
            r#"
duration = "1s"
[machine]
cpus = 1
costs = {{ context_switch = "0us", idle_exit = "0us", timer_latency = "20us", timer_wakeup = "50us", timer_return = "{ret}" }}
[[task]]
name = "cyclic"
program = [ {{ loop = "forever", body = [ {{ timer = "1ms" }}, {{ run = "10us" }} ] }} ]
"#
        )
    };
    for p in POLICIES {
        let at_switch = run_checked(&workload(&text("0us")), p.name);
        let returned = run_checked(&workload(&text("30us")), p.name);
        assert_conservation(&returned);
        let (a, b) = (&at_switch.tasks[0], &returned.tasks[0]);
        assert_eq!(a.wakeup_latency_max_ns, Some(20_000), "{}", p.name);
        assert_eq!(b.wakeup_latency_max_ns, Some(50_000), "{}", p.name);
        assert_eq!(b.wakeup_latency_avg_ns, Some(50_000), "{}", p.name);
        assert_eq!((a.cpu_time_ns, a.wakeups), (b.cpu_time_ns, b.wakeups), "{}", p.name);
    }
    // More than the wakeup's CPU is not a part of it.
    let capped = run_checked(&workload(&text("80us")), "cfs");
    assert_eq!(capped.tasks[0].wakeup_latency_max_ns, Some(70_000));
}

#[test]
fn a_wakeup_by_interrupt_preempts_after_wake_preempt_and_one_from_beside_it_at_once() {
    // A FIFO task beside a hog on CPU 0, woken 100 times a second by its
    // timer, by a writer on CPU 1 (an IPI) or by a writer on CPU 0 (from
    // its system call): with wake_preempt = 80 us the first two switch 80
    // us after the wakeup, the hog running meanwhile, the third at once.
    let text = |waker: &str, cost: &str| {
        let reader = match waker {
            "timer" => r#"[ { timer = "10ms" }, { run = "1ms" } ]"#,
            _ => r#"[ { wait = "ch" }, { run = "1ms" } ]"#,
        };
        let writer = match waker {
            "timer" => String::new(),
            cpu => format!(
                "[[task]]\nname = \"writer\"\naffinity = \"{cpu}\"\nprogram = [ {{ loop = \"forever\", body = [ {{ timer = \"10ms\" }}, {{ signal = \"ch\" }}, {{ run = \"200us\" }} ] }} ]\n"
            ),
        };
        format!(
            r#"
duration = "2s"
[machine]
cpus = 2
costs = {{ context_switch = "0us", idle_exit = "0us", wake_preempt = "{cost}" }}
[[task]]
name = "hog"
affinity = "0"
program = [ {{ loop = "forever", body = [ {{ run = "1s" }} ] }} ]
[[task]]
name = "rt"
affinity = "0"
policy = "fifo"
rt_priority = 50
program = [ {{ loop = "forever", body = {reader} }} ]
{writer}"#
        )
    };
    for p in POLICIES {
        for (waker, delayed) in [("timer", true), ("1", true), ("0", false)] {
            let r = run_checked(&workload(&text(waker, "80us")), p.name);
            assert_conservation(&r);
            let rt = r.specs.iter().find(|s| s.name == "rt").unwrap();
            let l = &rt.wakeup_latency;
            assert!(l.count >= 150, "{} {waker}: {} wakeups", p.name, l.count);
            if delayed {
                assert!((79_000..=82_000).contains(&l.p50) && l.max <= 82_000, "{} {waker}: {l:?}", p.name);
            } else {
                assert!(l.max <= 1_000, "{} {waker}: {l:?}", p.name);
            }
            // The hog keeps the CPU while the interrupt returns: it gets
            // what the RT task leaves, the 80 us included.
            let none = run_checked(&workload(&text(waker, "0us")), p.name);
            let hog = |r: &schedlab_sim::Report| r.tasks.iter().find(|t| t.name == "hog").unwrap().cpu_time_ns;
            let rt_cpu = |r: &schedlab_sim::Report| r.tasks.iter().find(|t| t.name == "rt").unwrap().cpu_time_ns;
            assert!(rt_cpu(&r).abs_diff(rt_cpu(&none)) <= 2_000_000, "{} {waker}: the RT task's CPU", p.name);
            assert!(hog(&r).abs_diff(hog(&none)) <= 2_000_000, "{} {waker}: the hog's CPU", p.name);
            assert!(
                l.count.abs_diff(none.specs.iter().find(|s| s.name == "rt").unwrap().wakeup_latency.count) <= 1,
                "{} {waker}: as many wakeups",
                p.name
            );
        }
    }
}

#[test]
fn a_pipe_readers_wakeup_costs_its_reader_what_the_machine_says() {
    // lat_ctx on two CPUs: each hop is the reader's switch (10 us), its
    // read's return (wait_wakeup, 29 us) and its 1 us of work before it
    // writes, the IPI to the other, idle CPU (20 us) and the writer's 15 us
    // after it (wake_remote, beside the next hop): 60 us a hop, every hop
    // a switch, each task on a CPU 55 us of the 120 us of two hops.
    let text = r#"
duration = "1200ms"
[machine]
cpus = 2
costs = { context_switch = "10us", idle_exit = "20us", wake_remote = "15us", wait_wakeup = "29us" }
[[task]]
name = "ping"
affinity = "0"
program = [ { loop = "forever", body = [ { run = "1us" }, { signal = "to-pong" }, { wait = "to-ping" } ] } ]
[[task]]
name = "pong"
affinity = "1"
program = [ { loop = "forever", body = [ { wait = "to-pong" }, { run = "1us" }, { signal = "to-ping" } ] } ]
"#;
    for p in POLICIES {
        let r = run_checked(&workload(text), p.name);
        assert_conservation(&r);
        let rate = r.totals.context_switches_per_sec;
        assert!((16_500.0..=16_700.0).contains(&rate), "{}: {rate} switches/s, 16,667 a 60 us hop", p.name);
        for t in &r.tasks {
            let share = t.cpu_time_ns as f64 / r.duration_ns as f64;
            assert!((0.45..=0.47).contains(&share), "{}: {} on a CPU {share:.3} of the run", p.name, t.name);
        }
    }
}

#[test]
fn a_pipe_writer_pays_its_writes_return_where_its_reader_shares_its_cpu() {
    // lat_ctx with both tasks on one CPU (bpfland's guests): a switch costs
    // 10 us, a read's return 5 us, each run 1 us, and a write that woke
    // its reader 20 us after the wakeup (signal_return) before the writer
    // goes on; wake_remote is not paid, no other CPU being woken. The CPU
    // is busy with exactly those. Where no wakeup preempts, a hop is 36 us
    // (27,778 switches a second; 16 us and 62,500 without the write's
    // return); where the reader preempts its writer, the writer finds the
    // next token already written and does not block, so hops differ but
    // the sum holds.
    let text = r#"
duration = "1200ms"
[machine]
cpus = 1
costs = { context_switch = "10us", wake_remote = "50us", wait_wakeup = "5us", signal_return = "20us" }
[[task]]
name = "ping"
program = [ { loop = "forever", body = [ { run = "1us" }, { signal = "to-pong" }, { wait = "to-ping" } ] } ]
[[task]]
name = "pong"
program = [ { loop = "forever", body = [ { wait = "to-pong" }, { run = "1us" }, { signal = "to-ping" } ] } ]
"#;
    for p in POLICIES {
        let r = run_checked(&workload(text), p.name);
        assert_conservation(&r);
        let wakeups: u64 = r.tasks.iter().map(|t| t.wakeups).sum();
        let paid = r.totals.context_switches * 10_000 + wakeups * 25_000 + r.totals.work_done_ns;
        let busy = r.totals.busy_ns;
        assert!(
            paid.abs_diff(busy) <= 100_000,
            "{}: busy {busy} ns, paid {paid} ns ({} switches, {wakeups} wakeups, {} ns of work)",
            p.name,
            r.totals.context_switches,
            r.totals.work_done_ns
        );
        if r.totals.involuntary_switches == 0 {
            let rate = r.totals.context_switches_per_sec;
            assert!((27_600.0..=27_900.0).contains(&rate), "{}: {rate} switches/s, 27,778 a 36 us hop", p.name);
        }
    }
}

#[test]
fn the_machines_own_tasks_take_cpu_but_stay_out_of_the_report() {
    // Two jobs of 20 ms on one CPU beside a background task that runs 1
    // ms in every 4 (the machine's own work, as validate adds a guest's).
    let mut w = workload(
        r#"
[machine]
cpus = 1
[[task]]
name = "job"
count = 2
program = [ { run = "20ms" }, { exit = true } ]
[[task]]
name = "kthread"
program = [ { loop = "forever", body = [ { sleep = "3ms" }, { run = "1ms" } ] } ]
"#,
    );
    w.tasks[1].background = true;
    for p in POLICIES {
        let r = run_checked(&w, p.name);
        assert_eq!(r.tasks.len(), 2, "{}: only the jobs are in the report", p.name);
        assert!(r.specs.iter().all(|s| s.name == "job"), "{}: {:?}", p.name, r.specs);
        // The run ends when the jobs do, though the background task loops
        // forever; its CPU time made them later than 40 ms.
        let m = r.totals.makespan_ns.unwrap_or_else(|| panic!("{}: no makespan", p.name));
        assert!(m > 45 * NSEC_PER_MSEC && m < 70 * NSEC_PER_MSEC, "{}: makespan {m}", p.name);
        // busy + idle = time; the jobs' time, the switches' and the
        // background's make the busy time.
        assert_eq!(r.totals.busy_ns + r.totals.idle_ns, r.duration_ns, "{}", p.name);
        let jobs: u64 = r.tasks.iter().map(|t| t.cpu_time_ns).sum();
        let overhead: u64 = r.per_cpu.iter().map(|c| c.switch_overhead_ns).sum();
        let other = extra(&r, schedlab_sim::report::OTHER_TASKS_CPU_PCT).expect("the background's share") / 100.0
            * r.duration_ns as f64;
        let accounted = jobs as f64 + overhead as f64 + other;
        assert!(
            (accounted - r.totals.busy_ns as f64).abs() < 1000.0,
            "{}: {accounted} of {}",
            p.name,
            r.totals.busy_ns
        );
        assert!(other > 5e6, "{}: the background ran {other} ns", p.name);
        // Switches and migrations are the jobs' own.
        let switches: u64 = r.tasks.iter().map(|t| t.voluntary_switches + t.involuntary_switches).sum();
        assert_eq!(switches, r.totals.context_switches, "{}", p.name);
    }
}

#[test]
fn a_fork_loop_ends_at_the_task_limit_with_an_error() {
    // Children that never exit: without a bound the run grows until memory
    // runs out.
    let w = workload(
        r#"
duration = "10s"
[machine]
cpus = 2
[[task]]
name = "forker"
program = [ { loop = "forever", body = [ { fork = "child" }, { run = "10us" } ] } ]
[[task]]
name = "child"
template = true
program = [ { loop = "forever", body = [ { sleep = "1s" } ] } ]
"#,
    );
    for p in POLICIES {
        let policy = schedlab_policies::build(p.name, &w).unwrap();
        let opts = schedlab_sim::EngineOptions { task_limit: 500, ..Default::default() };
        let err = schedlab_sim::Engine::new(&w, policy, opts).run().unwrap_err().to_string();
        assert!(err.contains("task 'forker' forked the 500th task"), "{}: {err}", p.name);
    }
}

/// Counts the switches of a whole run from a time on, as the engine counts
/// them (a task leaving its CPU).
struct SwitchesFrom {
    from: u64,
    switches: u64,
}

impl schedlab_sim::Observer for SwitchesFrom {
    fn event(&mut self, now: u64, _: &schedlab_sim::Sys, ev: schedlab_sim::TraceEvent) {
        if let schedlab_sim::TraceEvent::Switch { prev: Some(_), .. } = ev
            && now >= self.from
        {
            self.switches += 1;
        }
    }
}

#[test]
fn a_late_window_counts_what_follows_it_and_changes_no_decision() {
    let from = 120 * NSEC_PER_MSEC;
    let whole = scenario("mixed-64", Overrides { cpus: Some(4), ..short(&[]) });
    let mut late = whole.clone();
    late.measure_from = from;
    for p in POLICIES {
        let mut after = SwitchesFrom { from, switches: 0 };
        let all = schedlab_policies::simulate_observed(&whole, p.name, &mut after).unwrap();
        let r = run_checked(&late, p.name);
        assert_conservation(&r);
        assert_eq!(r.duration_ns, all.duration_ns - from, "{}: the window's length", p.name);
        assert_eq!(r.totals.context_switches, after.switches, "{}: switches after {from} ns", p.name);
        assert!(r.totals.context_switches < all.totals.context_switches, "{}: nothing before the window", p.name);
        assert_eq!(r.tasks.len(), all.tasks.len(), "{}: every task lives on", p.name);
        for (a, b) in r.tasks.iter().zip(&all.tasks) {
            assert!(a.cpu_time_ns <= b.cpu_time_ns, "{}: {} ran more in part of the run", p.name, a.name);
        }
    }
}

#[test]
fn a_late_window_leaves_out_the_tasks_gone_before_it() {
    let mut w = workload(
        r#"
duration = "1s"
[machine]
cpus = 2
[[task]]
name = "make"
program = [ { loop = 10, body = [ { fork = "cc" }, { run = "1ms" } ] }, { sleep = "20ms" }, { loop = 10, body = [ { fork = "cc" }, { run = "1ms" } ] }, { exit = true } ]
[[task]]
name = "cc"
template = true
program = [ { run = "2ms" }, { exit = true } ]
"#,
    );
    w.measure_from = 25 * NSEC_PER_MSEC;
    for p in POLICIES {
        let r = run_checked(&w, p.name);
        assert_conservation(&r);
        let cc = r.tasks.iter().filter(|t| t.name.starts_with("cc-")).count();
        // The first ten jobs are done within 12 ms on two CPUs; the second
        // ten are forked from 30 ms on.
        assert_eq!(cc, 10, "{}: the jobs done before the window are not in its report", p.name);
        let m = r.totals.makespan_ns.expect("every task exits");
        assert!(m > 5 * NSEC_PER_MSEC && m < 30 * NSEC_PER_MSEC, "{}: makespan {m} counted from the window", p.name);
        assert!(r.tasks.iter().all(|t| t.exited_at_ns.is_some_and(|e| e <= m)), "{}: exits in window time", p.name);
    }
}

#[test]
fn the_waker_pays_wake_remote_for_each_wakeup_of_another_idle_cpu() {
    // A writer on CPU 0 wakes a reader pinned to CPU 1 (idle between its
    // wakeups) once a cycle, and a reader pinned beside it on CPU 0 once a
    // cycle: only the first wakeup costs the writer wake_remote.
    let text = |reader_cpu: u32| {
        format!(
            r#"
duration = "1s"
[machine]
cpus = 2
costs = {{ context_switch = "0us", idle_exit = "0us", wake_remote = "50us", syscall = "0us" }}
[[task]]
name = "writer"
affinity = "0"
program = [ {{ loop = "forever", body = [ {{ run = "1ms" }}, {{ signal = "c" }}, {{ sleep = "1ms" }} ] }} ]
[[task]]
name = "reader"
affinity = "{reader_cpu}"
program = [ {{ loop = "forever", body = [ {{ wait = "c" }}, {{ run = "100us" }} ] }} ]
"#
        )
    };
    for p in POLICIES {
        for (reader_cpu, per_cycle) in [(1, 1_050_000), (0, 1_000_000)] {
            let r = run_checked(&workload(&text(reader_cpu)), p.name);
            assert_conservation(&r);
            let writer = r.tasks.iter().find(|t| t.name == "writer").unwrap();
            let reader = r.tasks.iter().find(|t| t.name == "reader").unwrap();
            // The last cycle may be cut by the run's end.
            let per_wakeup = writer.cpu_time_ns as f64 / reader.wakeups as f64;
            assert!(
                (per_wakeup - per_cycle as f64).abs() < 0.01 * per_cycle as f64,
                "{}: reader on CPU {reader_cpu}: the writer used {per_wakeup:.0} ns a wakeup, not {per_cycle}",
                p.name
            );
        }
    }
}
