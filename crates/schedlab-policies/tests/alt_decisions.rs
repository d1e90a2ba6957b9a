//! What makes each alternative scheduler that scheduler: BFS/MuQSS deadline
//! preemption, BMQ's sleep boost, PDS's and BFS's nice ratios, Baby's
//! one-tick round robin, BORE's burst penalty, where MuQSS and Project C
//! place a task.

mod common;
use common::*;
use schedlab_sim::report::decisions::DecisionCounter;

const NICE: &str = r#"
duration = "5s"
[machine]
cpus = 1
[[task]]
name = "n0"
program = [ { loop = "forever", body = [ { run = "1s" } ] } ]
[[task]]
name = "n5"
nice = 5
program = [ { loop = "forever", body = [ { run = "1s" } ] } ]
"#;

/// A hog, a task that runs 30 ms between 1 ms sleeps, and a cyclictest-like
/// 1 ms timer thread, on one CPU.
const MIXED: &str = r#"
duration = "5s"
[machine]
cpus = 1
[[task]]
name = "hog"
program = [ { loop = "forever", body = [ { run = "1s" } ] } ]
[[task]]
name = "burster"
program = [ { loop = "forever", body = [ { run = "30ms" }, { sleep = "1ms" } ] } ]
[[task]]
name = "cyclic"
program = [ { loop = "forever", body = [ { timer = "1ms" }, { run = "20us" } ] } ]
"#;

fn cyclic_latency_us(sched: &str) -> f64 {
    let r = run_checked(&workload(MIXED), sched);
    let t = r.tasks.iter().find(|t| t.name == "cyclic").expect("cyclic task");
    t.wakeup_latency_avg_ns.expect("the timer thread woke") as f64 / 1000.0
}

#[test]
fn nice_orders_cpu_share_as_each_scheduler_documents() {
    let w = workload(NICE);
    for (sched, lo, hi) in [
        // BFS/MuQSS: deadline offsets grow 10% a nice level; CPU goes as
        // their square-ish, 1.1^5 = 1.6 in offset, 4:1 in share.
        ("bfs", 2.5, 6.0),
        ("muqss", 2.5, 6.0),
        // PDS: deadlines nice + 20 slices ahead; 20 vs 25 gives about 5:1.
        ("pds", 3.0, 8.0),
        // BORE: both hogs carry the same burst penalty, EEVDF's weights
        // decide (3:1 at nice 5, a little less with the penalty on both).
        ("bore", 1.8, 3.5),
    ] {
        let r = run_checked(&w, sched);
        let ratio = share_of(&r, "n0") / share_of(&r, "n5");
        assert!((lo..=hi).contains(&ratio), "{sched}: nice 0 / nice 5 share ratio {ratio:.2}");
    }
    // BMQ: two nice levels are one queue level apart, and a hog's boost
    // sits at its maximum: the nicer hog never runs while the other can.
    let r = run_checked(&w, "bmq");
    assert!(share_of(&r, "n5") < 1.0, "bmq: nice 5 got {:.1}%", share_of(&r, "n5"));
    // Baby: the waiting task always has the earlier deadline at the next
    // tick, so nice (a +/-0.67 ms deadline offset) does not change shares.
    let r = run_checked(&w, "baby");
    assert!((share_of(&r, "n0") - share_of(&r, "n5")).abs() < 2.0);
}

#[test]
fn deadline_schedulers_let_a_sleeper_preempt_at_once() {
    // The timer thread keeps its early deadline while it sleeps; the hogs
    // renew theirs every slice, so its wakeup preempts (BFS try_preempt,
    // MuQSS, PDS) or it is boosted above them (BMQ).
    for sched in ["bfs", "muqss", "pds", "bmq"] {
        let lat = cyclic_latency_us(sched);
        assert!(lat < 60.0, "{sched}: the timer thread waited {lat:.1} us on average");
    }
}

#[test]
fn baby_runs_the_earliest_deadline_even_when_a_wakeup_asked_for_the_cpu() {
    // Baby preempts for the woken task, then picks the earliest deadline of
    // all: often the hog that waited, so the timer thread waits a tick.
    let lat = cyclic_latency_us("baby");
    assert!(lat > 500.0, "baby: {lat:.1} us");
    // One switch per tick with several hogs: round robin of 4 ms turns.
    let r = run_checked(&scenario("thread-test", Default::default()), "baby");
    let rate = r.totals.context_switches_per_sec;
    assert!((240.0..=260.0).contains(&rate), "baby: {rate:.0} switches/s");
}

#[test]
fn bmq_boosts_a_task_that_sleeps_and_deboosts_a_hog() {
    let r = run_checked(&workload(MIXED), "bmq");
    let get = |k: &str| extra(&r, k).unwrap_or(0.0);
    assert!(get("boosts") >= 12.0, "the timer thread must climb to the top boost: {}", get("boosts"));
    let hog_only = run_checked(&workload(NICE), "bmq");
    let get = |k: &str| extra(&hog_only, k).unwrap_or(0.0);
    assert_eq!(get("boosts"), 0.0, "hogs never sleep, so they are never boosted");
    assert!(get("deboosts") >= 12.0, "each used slice deboosts, up to +12");
}

#[test]
fn bore_penalises_the_longer_burst() {
    // EEVDF splits the CPU evenly between the hog and the 30 ms burster;
    // BORE's penalty grows with burst length, so the hog, which never
    // sleeps, loses weight against the burster.
    let w = workload(MIXED);
    let e = run_checked(&w, "eevdf");
    let b = run_checked(&w, "bore");
    let (he, hb) = (share_of(&e, "hog"), share_of(&b, "hog"));
    assert!((he - share_of(&e, "burster")).abs() < 5.0, "eevdf: hog {he:.1}%");
    assert!(hb + 20.0 < share_of(&b, "burster"), "bore: hog {hb:.1}% vs burster {:.1}%", share_of(&b, "burster"));
}

#[test]
fn bfs_moves_tasks_freely_and_project_c_only_pulls_when_idle() {
    let ov = schedlab_sim::Overrides {
        cpus: Some(2),
        params: [("hogs".to_string(), 3)].into_iter().collect(),
        ..Default::default()
    };
    let w = scenario("smp-fairness", ov);
    // One global queue: every hog gets two thirds of a CPU.
    let r = run_checked(&w, "bfs");
    assert!(r.totals.jain_fairness > 0.99, "bfs: {}", r.totals.jain_fairness);
    // No periodic balancer and nobody goes idle: the hog alone on its CPU
    // keeps it, the other two share one.
    for sched in ["bmq", "pds"] {
        let r = run_checked(&w, sched);
        let max = r.tasks.iter().map(|t| t.cpu_share_pct).fold(0.0, f64::max);
        assert!(max > 95.0, "{sched}: the lone hog got {max:.1}%");
        assert_eq!(r.totals.migrations, 0, "{sched}");
    }
}

/// On one CPU: a spinner, a 1%-duty periodic task (0.1 ms every 10 ms) and
/// a sleeper whose bursts and sleeps vary (20-60 ms asleep, 5-15 ms awake).
const TYPES: &str = r#"
duration = "3s"
[machine]
cpus = 1
[[task]]
name = "spinner"
program = [ { loop = "forever", body = [ { run = "1s" } ] } ]
[[task]]
name = "periodic"
program = [ { loop = "forever", body = [ { timer = "10ms" }, { run = "100us" } ] } ]
[[task]]
name = "irregular"
program = [ { loop = "forever", body = [ { sleep = "uniform(20ms,60ms)" }, { run = "uniform(5ms,15ms)" } ] } ]
"#;

#[test]
fn tt_classifies_tasks_by_behaviour() {
    let r = run_checked(&workload(TYPES), "tt");
    let get = |k: &str| extra(&r, k).unwrap_or(-1.0);
    // The spinner never sleeps: run / (wait + run) = 100% >= 90%.
    assert_eq!(get("tt_tasks_cpu_bound"), 1.0, "{:?}", r.extra);
    // The 1%-duty periodic task waits alike and bursts alike: TT 6.3's
    // is_realtime takes it (is_interactive explicitly leaves regular
    // waiters to it).
    assert_eq!(get("tt_tasks_realtime"), 1.0, "{:?}", r.extra);
    // Sleeping more than it runs, irregularly, in bursts above RT_BURST_MAX
    // (4 ms): interactive.
    assert_eq!(get("tt_tasks_interactive"), 1.0, "{:?}", r.extra);
    // Both latency-sensitive types run ahead of the spinner: their TT
    // vruntime advances at prio -20 / -10 against the spinner's -15, and
    // they have run far less of their lives.
    for name in ["periodic", "irregular"] {
        let t = r.tasks.iter().find(|t| t.name == name).unwrap();
        let lat = t.wakeup_latency_avg_ns.unwrap() as f64 / 1000.0;
        assert!(lat < 2000.0, "tt: {name} waited {lat:.0} us on average");
    }
}

#[test]
fn cacule_runs_the_more_interactive_task_first() {
    // The sleeper's score (it sleeps 4x what it runs) stays far below the
    // hog's, so each wakeup preempts the hog at once, and the tick, which
    // re-picks by score, never takes the CPU back while the sleeper runs.
    let w = workload(
        r#"
duration = "3s"
[machine]
cpus = 1
[[task]]
name = "hog"
program = [ { loop = "forever", body = [ { run = "1s" } ] } ]
[[task]]
name = "sleeper"
program = [ { loop = "forever", body = [ { sleep = "8ms" }, { run = "2ms" } ] } ]
"#,
    );
    let r = run_checked(&w, "cacule");
    let s = r.tasks.iter().find(|t| t.name == "sleeper").unwrap();
    let lat = s.wakeup_latency_avg_ns.unwrap() as f64 / 1000.0;
    assert!(lat < 20.0, "cacule: the sleeper waited {lat:.1} us");
    assert!((19.0..=21.0).contains(&share_of(&r, "sleeper")), "{}", share_of(&r, "sleeper"));
    // CFS gives the same sleeper the same CPU but lets the hog finish its
    // granularity first at times.
    let cfs = run_checked(&w, "cfs");
    let c = cfs.tasks.iter().find(|t| t.name == "sleeper").unwrap();
    assert!(c.wakeup_latency_avg_ns.unwrap() as f64 / 1000.0 >= lat);
}

#[test]
fn cacule_switches_two_hogs_every_other_tick() {
    // CacULE 6.1's cache and starvation scores: a waiting hog goes before
    // the running one (0 + 2m) only once it has waited 6 ms, so at HZ=250
    // two hogs on a CPU alternate every second tick: 8 ms runs, 125
    // switches a second (the 5.14 model, without those scores, switched at
    // every tick the waiter's interactivity score was lower).
    let w = workload(
        r#"
duration = "4s"
[machine]
cpus = 1
hz = 250
[[task]]
name = "hog"
count = 2
program = [ { loop = "forever", body = [ { run = "1s" } ] } ]
"#,
    );
    let r = run_checked(&w, "cacule");
    assert_eq!(r.runtime_per_switch.p50 / 1_000_000, 8, "run/switch p50 {} ns", r.runtime_per_switch.p50);
    let rate = r.totals.context_switches_per_sec;
    assert!((120.0..=130.0).contains(&rate), "{rate:.1} switches/s");
}

#[test]
fn cacule_splits_cgroups_by_their_life_since_boot() {
    // A task group's entity is zeroed memory in CacULE 6.1: its
    // cacule_start_time is the boot, so its interactivity score weighs its
    // weighted run time against the kernel's uptime. Groups of weight 100
    // (two hogs) and 300 (one hog): 2.5 s after boot, as in a guest, the
    // scores are close and the cache and starvation scores even the split
    // (the kernel gives the 300 group 67.4-68.5%, validate's cgroup-split);
    // an hour after boot the group's life is renormalised (halved whenever
    // it passes 11.5 s) and the split is nearer even still; at its own creation it is the
    // weights' 75%.
    let split = |uptime: &str| {
        let text = format!(
            r#"
duration = "3s"
[machine]
cpus = 1
uptime = "{uptime}"
[[group]]
name = "a"
cpu_weight = 100
[[group]]
name = "b"
cpu_weight = 300
[[task]]
name = "a-hog"
count = 2
group = "a"
program = [ {{ loop = "forever", body = [ {{ run = "1s" }} ] }} ]
[[task]]
name = "b-hog"
group = "b"
program = [ {{ loop = "forever", body = [ {{ run = "1s" }} ] }} ]
"#
        );
        let r = run_checked(&workload(&text), "cacule");
        r.tasks.iter().find(|t| t.name == "b-hog").unwrap().cpu_share_pct
    };
    let (fresh, guest, hour) = (split("0s"), split("2.5s"), split("1h"));
    assert!((74.0..=76.0).contains(&fresh), "at the groups' birth: {fresh:.1}%");
    assert!((66.5..=70.0).contains(&guest), "2.5 s after boot: {guest:.1}%");
    assert!(hour < guest - 3.0, "an hour after boot: {hour:.1}%, 2.5 s after: {guest:.1}%");
}

#[test]
fn rdb_pulls_the_waiting_hog_to_the_cpu_running_one() {
    // Three hogs on two CPUs: RDB (no CFS balancer) lets the CPU with one
    // task pull the other's waiting task at its balancing tick (every 5
    // jiffies); the pulled task cannot move again until it has run, so the
    // three take turns and share evenly. Project C, which never moves a
    // running task's neighbour from a busy CPU, leaves 50/50/100.
    let w = workload(
        r#"
duration = "10s"
[machine]
cpus = 2
hz = 250
[[task]]
name = "hog"
count = 3
program = [ { loop = "forever", body = [ { run = "1s" } ] } ]
"#,
    );
    let r = run_checked(&w, "cacule");
    assert_conservation(&r);
    let moves = extra(&r, "rdb_migrations").expect("rdb_migrations");
    assert!(moves > 100.0, "{moves} RDB moves in 10 s");
    assert_eq!(moves as u64, r.totals.migrations, "every migration is RDB's");
    let spec = &r.specs[0];
    assert!(spec.cpu_share_max_pct - spec.cpu_share_min_pct < 5.0, "{spec:?}");
    // With RDB_INTERVAL past the run, nothing balances a busy CPU: one hog
    // keeps a CPU to itself.
    let mut w = w.clone();
    w.tunables.insert("RDB_INTERVAL".into(), 1_000_000);
    let r = run_checked(&w, "cacule");
    let spec = &r.specs[0];
    assert!(spec.cpu_share_max_pct > 95.0, "{spec:?}");
}

#[test]
fn muqss_is_validated_on_its_default_runqueue_sharing() {
    // validate boots muqss-5.10 (built rqshare=none) with the boot
    // parameter that matches the model's default.
    let w = workload(NICE);
    let p = schedlab_policies::build("muqss", &w).unwrap();
    let rqshare = p.tunables().into_iter().find(|t| t.name == "rqshare").expect("rqshare tunable");
    let info = schedlab_policies::POLICIES.iter().find(|p| p.name == "muqss").unwrap();
    let name = schedlab_policies::muqss::Muqss::rqshare_name(rqshare.value);
    assert_eq!(name, "mc");
    assert_eq!(info.boot_args, [format!("rqshare={name}").as_str()]);
}

#[test]
fn muqss_cpus_sharing_a_runqueue_take_from_one_skiplist() {
    // Two tasks pinned to CPU 0 and a hog free to run anywhere, on two
    // CPUs. Sharing one runqueue (mc), CPU 1 takes the free hog whenever
    // it is queued; with a runqueue each (none) the same, by looking at
    // CPU 0's. Either way CPU 1 runs only the free hog, and the pinned
    // two split CPU 0.
    for rqshare in [0, 2] {
        let mut w = workload(
            r#"
duration = "3s"
[machine]
cpus = 2
[[task]]
name = "pinned"
count = 2
affinity = "0"
program = [ { loop = "forever", body = [ { run = "1s" } ] } ]
[[task]]
name = "free"
program = [ { loop = "forever", body = [ { run = "1s" } ] } ]
"#,
        );
        w.tunables.insert("rqshare".into(), rqshare);
        let r = run_checked(&w, "muqss");
        assert_conservation(&r);
        assert!(share_of(&r, "free") > 90.0, "rqshare {rqshare}: free {}", share_of(&r, "free"));
        assert!((45.0..=55.0).contains(&share_of(&r, "pinned")), "rqshare {rqshare}");
    }
}

#[test]
fn muqss_keeps_a_hog_on_the_cpu_whose_niffies_lag() {
    // 3 hogs on 2 CPUs sharing a runqueue (muqss-5.10, rqshare=mc: 163
    // switches/s, 0.5-4 migrations/s in the guests). Each CPU stamps
    // deadlines on its own niffies; the CPU that does not keep jiffies
    // sometimes reads two at once at its tick and gains a jiffy, so its
    // deadlines fall later and later behind the timekeeper's. The hog on
    // the timekeeping CPU then renews a deadline earlier than the queued
    // hog's at every expiry and keeps its CPU; the other two share the
    // other CPU, one 6.29 ms slice each. With jiffies read alike on every
    // CPU (or one clock for all) the three take turns on both: 318
    // switches/s and 317 migrations/s. The hogs start apart, so that no
    // two slices end at one instant (where a nanosecond decides).
    let w = workload(
        r#"
duration = "5s"
[machine]
cpus = 2
[[task]]
name = "a"
program = [ { loop = "forever", body = [ { run = "1s" } ] } ]
[[task]]
name = "b"
program = [ { sleep = "1500us" }, { loop = "forever", body = [ { run = "1s" } ] } ]
[[task]]
name = "c"
program = [ { sleep = "3700us" }, { loop = "forever", body = [ { run = "1s" } ] } ]
"#,
    );
    let r = run_checked(&w, "muqss");
    assert_conservation(&r);
    let shares: Vec<f64> = r.tasks.iter().map(|t| t.cpu_share_pct).collect();
    let kept = shares.iter().filter(|&&s| s > 97.0).count();
    let halves = shares.iter().filter(|&&s| (45.0..=55.0).contains(&s)).count();
    assert_eq!((kept, halves), (1, 2), "shares {shares:?}");
    let migrations = r.totals.migrations as f64 * 1e9 / r.duration_ns as f64;
    let switches = r.totals.context_switches_per_sec;
    assert!(migrations < 5.0, "{migrations:.1} migrations/s");
    assert!((150.0..=180.0).contains(&switches), "{switches:.0} switches/s");
}

#[test]
fn cacule_and_tt_order_nice_levels() {
    let w = workload(NICE);
    // CacULE: vruntime is weighted, so a nice-5 hog's score rises 3x
    // faster; the scores balance near 1.75:1 (integer ratios blur it).
    let r = run_checked(&w, "cacule");
    let ratio = share_of(&r, "n0") / share_of(&r, "n5");
    assert!((1.3..=3.5).contains(&ratio), "cacule: {ratio:.2}");
    // TT: both hogs are CPU_BOUND, whose TT vruntime advances at prio -15
    // whatever their nice. CFS's weighted slice gives the nice-0 hog longer
    // turns, but the HRRN pick then gives the nice-5 hog more of them until
    // their TT vruntimes match: nice stops mattering.
    let r = run_checked(&w, "tt");
    let ratio = share_of(&r, "n0") / share_of(&r, "n5");
    assert!((0.8..=1.25).contains(&ratio), "tt: {ratio:.2}");
}

#[test]
fn sched_iso_runs_ahead_of_normal_tasks_up_to_sched_iso_cpu() {
    // A SCHED_ISO hog beside a normal hog on one CPU for 20 s: ISO_PRIO
    // runs it alone until its ISO time passes 70% (then it runs as normal
    // until it is back under 90% of that), so it gets somewhat above 70%.
    let w = workload(
        r#"
duration = "20s"
[machine]
cpus = 1
[[task]]
name = "iso"
policy = "iso"
program = [ { loop = "forever", body = [ { run = "1s" } ] } ]
[[task]]
name = "normal"
program = [ { loop = "forever", body = [ { run = "1s" } ] } ]
"#,
    );
    for sched in ["bfs", "muqss"] {
        let r = run_checked(&w, sched);
        let iso = share_of(&r, "iso");
        assert!((70.0..=90.0).contains(&iso), "{sched}: the ISO hog got {iso:.1}%");
        assert!(r.absent.is_empty(), "{sched}: {:?}", r.absent);
    }
    // With sched_iso_cpu = 0 the first ISO tick makes it refractory: the
    // two hogs share as normal tasks.
    let mut none = w.clone();
    none.tunables.insert("sched_iso_cpu".into(), 0);
    for sched in ["bfs", "muqss"] {
        let r = run_checked(&none, sched);
        assert!((share_of(&r, "iso") - 50.0).abs() < 3.0, "{sched}: {:.1}%", share_of(&r, "iso"));
    }
    // Everyone else runs SCHED_ISO as SCHED_NORMAL and says so.
    let r = run_checked(&w, "cfs");
    assert!((share_of(&r, "iso") - 50.0).abs() < 2.0);
    assert!(r.absent.iter().any(|a| a.contains("SCHED_ISO")), "{:?}", r.absent);
}

#[test]
fn tt_charges_a_yielder_at_each_update_curr_so_the_hog_keeps_its_turns() {
    // TT 6.1's update_curr adds a BATCH task's +1.9 ms at every call, and a
    // yield makes two (sched_yield's, then put_prev_entity's): the yielder's
    // response ratio outgrows the hog's, so at the hog's first tick it
    // stays behind, and the hog often runs on to the end of its 6 ms CFS
    // slice (the second tick). Charged once a yield, the yielder stayed
    // ahead and took the CPU back at every tick: 3.9 ms hog runs, 500
    // switches/s; the tt-6.1 kernel runs the hog 7.5 ms a turn.
    let ov = schedlab_sim::Overrides { duration: Some(3_000_000_000), ..Default::default() };
    let w = scenario("yield-hog", ov);
    let r = run_checked(&w, "tt");
    let hog = r.specs.iter().find(|s| s.name == "hog").unwrap();
    let run_ms = hog.runtime_per_switch.mean as f64 / 1e6;
    assert!((5.0..8.0).contains(&run_ms), "tt: the hog ran {run_ms:.2} ms a turn");
    assert!(share_of(&r, "yielder") < 3.0, "tt: yielder {:.2}%", share_of(&r, "yielder"));
}

#[test]
fn tt_picks_with_its_running_task_back_in_the_list_and_compares_the_tick_unsigned() {
    // Without group scheduling pick_next_task_fair puts the running task
    // back at the head of TT's list before it picks: a tick that asks for a
    // switch while that task leads or ties by HRRN leaves it running with a
    // new slice, and check_preempt_tick's `s64 delta > unsigned long` ends
    // a run whose task does not lead by HRRN whatever the vruntimes. The
    // tt-6.1 guest (docs/validation.md): 3 hogs on 2 CPUs switch 66-78
    // times a second, 8.1 ms a run at the median; 2 hogs and a nice 5 hog
    // on one CPU run 4.7-5.0 ms a turn in 3 s. Picked with the running task
    // apart, ties went to the queued task: 90% of runs ended at the first
    // tick (about 250 switches/s); compared signed, the nice 0 hogs ran
    // two ticks (8 ms).
    let ov = |secs: u64, params: &[(&str, i64)]| schedlab_sim::Overrides {
        duration: Some(secs * 1_000_000_000),
        cpus: Some(2),
        params: params.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        ..Default::default()
    };
    let r = run_checked(&scenario("smp-fairness", ov(10, &[("hogs", 3)])), "tt");
    let rate = r.totals.context_switches_per_sec;
    assert!((70.0..=95.0).contains(&rate), "tt: 3 hogs on 2 CPUs switch {rate:.1} times a second");
    let p50_ms = r.runtime_per_switch.p50 as f64 / 1e6;
    assert!((7.5..=8.5).contains(&p50_ms), "tt: their median run is {p50_ms:.2} ms");
    let r = run_checked(&scenario("nice-hog", ov(3, &[])), "tt");
    let hog = r.specs.iter().find(|s| s.name == "hog").unwrap();
    let run_ms = hog.runtime_per_switch.mean as f64 / 1e6;
    assert!((4.2..=5.8).contains(&run_ms), "tt: a nice 0 hog ran {run_ms:.2} ms a turn");
}

#[test]
fn bfs_and_muqss_count_slices_in_their_1024_ns_microseconds() {
    // timeslice() is MS_TO_US(rr_interval) = 6144 "us", counted down by
    // NS_TO_US(ns) = ns >> 10: a 6 ms rr_interval lasts 6.291456 ms, which
    // MuQSS's hrexpiry ends exactly (US_TO_NS). Counted in true
    // microseconds it was 6.144 ms; muqss-5.10 runs 6.46-6.52 ms (docs/validation.md).
    let r = run_checked(&scenario("thread-test", Default::default()), "muqss");
    let p50_us = r.specs[0].runtime_per_switch.p50 / 1000;
    assert!((6_280..=6_310).contains(&p50_us), "muqss: spinners ran {p50_us} us a turn");
}

#[test]
fn bfs_yield_only_reschedules() {
    // sys_sched_yield in v0.512 requeues the yielder with its deadline and
    // calls schedule(): it runs on while that deadline is the earliest, so
    // a 100 us run + yield loop keeps its whole slices beside a hog (the
    // model used to expire the slice at each yield: 1.3% for the yielder).
    let r = run_checked(&scenario("yield-hog", Default::default()), "bfs");
    let y = share_of(&r, "yielder");
    assert!(y > 30.0, "bfs: the yielder got {y:.1}%");
    let run_ms = r.specs.iter().find(|s| s.name == "yielder").unwrap().runtime_per_switch.mean as f64 / 1e6;
    assert!(run_ms > 5.0, "bfs: the yielder ran {run_ms:.2} ms a turn");
}

#[test]
fn bfs_wakeup_preempts_the_nearest_cpu_it_can() {
    // try_preempt walks the woken task's rq_order (its own CPU first) and
    // preempts the first CPU whose task has a later deadline; a timer
    // thread beside one hog per CPU thus stays where it was (the model
    // used to take the CPU running the latest deadline: 371 moves in 2 s).
    let w = workload(
        r#"
duration = "2s"
[machine]
cpus = 4
[[task]]
name = "hog"
count = 4
program = [ { loop = "forever", body = [ { run = "1s" } ] } ]
[[task]]
name = "cyclic"
program = [ { loop = "forever", body = [ { timer = "1ms" }, { run = "20us" } ] } ]
"#,
    );
    let r = run_checked(&w, "bfs");
    let c = r.tasks.iter().find(|t| t.name == "cyclic").unwrap();
    assert!(c.wakeups > 1900, "{} wakeups", c.wakeups);
    assert!(
        c.migrations * 50 < c.wakeups,
        "bfs: the timer thread moved {} times in {} wakeups",
        c.migrations,
        c.wakeups
    );
}

#[test]
fn bfs_and_muqss_split_the_parents_slice_with_each_child() {
    // wake_up_new_task halves the forking task's slice and gives the other
    // half (and its deadline) to the child; under RESCHED_US the parent
    // gives up the CPU. A parent forking every 50 us thus runs well under a
    // slice a turn (muqss-5.10: 0.76 ms at the median); with a full slice
    // for every child it ran 3.9-5 ms.
    let w = scenario("fork-burst", Default::default());
    for sched in ["bfs", "muqss"] {
        let r = run_checked(&w, sched);
        let parent = r.specs.iter().find(|s| s.name == "parent").unwrap();
        let p50 = parent.runtime_per_switch.p50 as f64 / 1e6;
        assert!(p50 < 1.0, "{sched}: the parent ran {p50:.2} ms a turn");
        assert_eq!(
            r.tasks.iter().filter(|t| t.exited_at_ns.is_some()).count(),
            201,
            "{sched}: every task ran to its end"
        );
    }
}

/// Two tasks that sleep and wake out of step on four idle CPUs.
const OUT_OF_STEP: &str = r#"
duration = "2s"
[machine]
cpus = 4
[[task]]
name = "a"
program = [ { loop = "forever", body = [ { run = "2ms" }, { sleep = "2ms" } ] } ]
[[task]]
name = "b"
program = [ { loop = "forever", body = [ { run = "1ms" }, { sleep = "2500us" } ] } ]
"#;

#[test]
fn project_c_wakes_a_task_on_the_lowest_numbered_idle_cpu_not_its_own() {
    // v6.12-r1's best_mask_cpu has no level of the task's CPU alone: a waking
    // task takes the lowest-numbered idle CPU of its LLC. Whenever one task
    // sleeps through the other's wakeup, that one moves to CPU 0, and the
    // first finds CPU 0 taken at its own wakeup and moves too. CFS keeps a
    // task on its previous CPU while that CPU is idle, and here it always is.
    let w = workload(OUT_OF_STEP);
    let cfs = run_checked(&w, "cfs");
    assert_eq!(cfs.totals.migrations, 0, "cfs");
    for sched in ["bmq", "pds"] {
        let r = run_checked(&w, sched);
        let wakeups: u64 = r.tasks.iter().map(|t| t.wakeups).sum();
        assert!(r.totals.migrations * 10 > wakeups, "{sched}: {} migrations in {wakeups} wakeups", r.totals.migrations);
        // Nothing ever runs above CPU 1: two tasks, the lowest idle CPUs.
        assert!(r.per_cpu.iter().skip(2).all(|c| c.busy_ns == 0), "{sched}: {:?}", r.per_cpu);
    }
}

#[test]
fn muqss_queues_a_new_task_where_it_was_forked_and_an_idle_cpu_takes_it() {
    // wake_up_new_task has no select_best_rq: the child is queued on the
    // forking CPU (the trace's placement) and the idle CPU kicked for it
    // takes it from there, a move the trace shows as a migration. BFS has
    // one queue and no placement; Project C selects the idle CPU itself.
    let w = workload(
        r#"
duration = "1s"
[machine]
cpus = 2
[[task]]
name = "parent"
program = [ { loop = 20, body = [ { run = "10ms" }, { fork = "child" } ] }, { loop = "forever", body = [ { run = "1s" } ] } ]
[[task]]
name = "child"
template = true
program = [ { run = "2ms" }, { exit = true } ]
"#,
    );
    let decisions = |sched: &str| {
        let mut counter = DecisionCounter::new(vec![Some(0); 2], 0, u64::MAX);
        let r = schedlab_policies::simulate_observed(&w, sched, &mut counter).unwrap();
        assert_conservation(&r);
        counter.counts
    };
    // 21 new tasks: the parent, placed on an idle CPU at the start, and
    // its 20 children.
    let muqss = decisions("muqss");
    assert_eq!((muqss.forks, muqss.forks_to_idle), (21, 1), "muqss: {muqss:?}");
    assert_eq!((muqss.balance_moves, muqss.balance_to_idle), (20, 20), "muqss: {muqss:?}");
    let bmq = decisions("bmq");
    assert_eq!((bmq.forks, bmq.forks_to_idle, bmq.balance_moves), (21, 21, 0), "bmq: {bmq:?}");
}

/// scx_bpfland: no wakeup preempts a running task, so a 1 ms timer thread
/// beside a hog on one CPU waits for the hog's slice to end at the next
/// tick (eevdf's PREEMPT_SHORT and cfs's wakeup preemption run it at once);
/// and a task that woke often gets an earlier deadline than a hog, so once
/// the tick ends the hog's slice it runs before the hog again.
#[test]
fn bpfland_never_preempts_on_wakeup_and_slices_end_at_the_tick() {
    let bpfland = cyclic_latency_us("bpfland");
    let eevdf = cyclic_latency_us("eevdf");
    assert!(bpfland > 1000.0 && bpfland < 4100.0, "bpfland waits for the tick: {bpfland:.1} us");
    assert!(eevdf < 100.0, "eevdf preempts: {eevdf:.1} us");
    // 3 hogs on 2 CPUs: each tick ends a 1 ms slice on both CPUs and the
    // shared queue holds the third hog, but the hog a CPU switches away
    // from reaches the queue only when that CPU's switch is done: the
    // other CPU, ticking less than a switch later, finds the queue empty
    // and keeps its hog. Put back at once, both CPUs switch at every tick
    // (500/s); with a switch longer than the ticks' whole jitter, only
    // one does (250/s); with this hardware's (2 us against 4 us) the gap
    // exceeds the switch at a quarter of the ticks. eevdf: 3 ms base
    // slices, a switch at every other tick.
    let hogs = |costs: &str| hogs(2, 3, costs);
    let switches = |costs: &str| {
        let r = run_checked(&hogs(costs), "bpfland");
        assert_conservation(&r);
        r.totals.context_switches_per_sec
    };
    let at_once = switches("context_switch = \"0ns\"");
    assert!((at_once - 500.0).abs() < 5.0, "put back at once: {at_once}");
    let one_cpu = switches("context_switch = \"10us\", tick_jitter = \"4us\"");
    assert!((one_cpu - 250.0).abs() < 3.0, "a switch longer than the jitter: {one_cpu}");
    // Ticks late by up to 200 us each on its own come apart by more than
    // the switch at most ticks; late together (tick_spread 4 us), as a TCG
    // guest's are, they do not.
    let apart = switches("context_switch = \"10us\", tick_jitter = \"200us\"");
    assert!(apart > 440.0, "ticks late on their own: {apart}");
    let together = switches("context_switch = \"10us\", tick_jitter = \"200us\", tick_spread = \"4us\"");
    assert!((together - 250.0).abs() < 3.0, "ticks late together: {together}");
    let w = hogs("");
    let some = switches("");
    assert!(some > 270.0 && some < 350.0, "a 2 us switch against a 4 us jitter: {some}");
    let eevdf = run_checked(&w, "eevdf").totals.context_switches_per_sec;
    assert!(eevdf < 300.0, "eevdf switches less: {eevdf}");
}

/// Each task's first turn (switch-in to its first switch-out), by task id.
#[derive(Default)]
struct FirstTurns {
    running: std::collections::HashMap<u32, u64>,
    first: std::collections::BTreeMap<u32, u64>,
}

impl schedlab_sim::Observer for FirstTurns {
    fn event(&mut self, now: u64, _: &schedlab_sim::Sys, ev: schedlab_sim::TraceEvent) {
        if let schedlab_sim::TraceEvent::Switch { prev, next, .. } = ev {
            if let Some(p) = prev
                && let Some(since) = self.running.remove(&p)
            {
                self.first.entry(p).or_insert(now - since);
            }
            if let Some(n) = next
                && !self.first.contains_key(&n)
            {
                self.running.insert(n, now);
            }
        }
    }
}

#[test]
fn project_c_halves_a_forkers_slice_as_its_last_tick_left_it() {
    // sched_fork halves rq->curr->time_slice without update_curr: a task
    // that forks five times, 200 us apart, within one tick gives its
    // children 2, 1, 0.5, 0.25 and 0.125 ms of the 4 ms slice it was last
    // charged at, not halves of what it has left (2.0, 0.87 and 0.35 ms,
    // then a full slice and the forker rescheduled). The runner's controller forks so in the
    // guests, whose 1024 spinners' first turns are 2.1, 1.0, 0.5 and 0.2 ms.
    let w = workload(
        r#"
duration = "200ms"
[machine]
cpus = 1
[[task]]
name = "forker"
program = [ { loop = 5, body = [ { run = "200us" }, { fork = "child" } ] }, { sleep = "1s" } ]
[[task]]
name = "child"
template = true
program = [ { run = "10ms" }, { exit = true } ]
"#,
    );
    for sched in ["bmq", "pds"] {
        let mut turns = FirstTurns::default();
        schedlab_policies::simulate_observed(&w, sched, &mut turns).unwrap();
        // Task 0 is the forker; 1..=5 its children, in order.
        let children: Vec<u64> = (1..=5).map(|t| turns.first[&t] / 1000).collect();
        let slice_ns: u64 = 4 << 20;
        let want: Vec<u64> = (1..=5).map(|k| (slice_ns >> k) / 1000).collect();
        for (got, want) in children.iter().zip(&want) {
            assert!(got.abs_diff(*want) <= 2, "{sched}: children's first turns {children:?} us, want {want:?}");
        }
    }
}

#[test]
fn project_c_and_muqss_end_a_slice_when_their_hrtick_fires_late() {
    // Two hogs on one CPU: Project C ends each 4 ms slice (4 << 20 ns) and
    // MuQSS each 6.29 ms one (rr_interval 6 ms as 6144 of its 1024 ns
    // microseconds) at an hrtimer between ticks. An hrtimer fires late by the machine's timer
    // latency, as a task's sleep does (a pds-6.12 TCG guest's hrtick: 41 us
    // at the median, 90 us at the 90th percentile); a turn is that much
    // longer. 0 by default: the slice exactly.
    for (sched, slice_ns) in [("pds", 4 << 20), ("bmq", 4 << 20), ("muqss", 6144 * 1024)] {
        let turn = |costs: &str| {
            let r = run_checked(&hogs(1, 2, &format!("context_switch = \"0ns\", {costs}")), sched);
            assert_conservation(&r);
            r.runtime_per_switch.p50
        };
        let exact = turn("timer_latency = \"0ns\"");
        let late = turn("timer_latency = \"300us\"");
        // The histogram's p50 is a bucket's upper edge (within 1/64).
        let within = |got: u64, want: u64| (got as f64 - want as f64).abs() <= want as f64 / 32.0;
        assert!(within(exact, slice_ns), "{sched}: turns of {exact} ns with an exact hrtick, slice {slice_ns}");
        assert!(within(late, slice_ns + 300_000), "{sched}: turns of {late} ns with the hrtick 300 us late");
    }
}

/// `count` hogs that never sleep, on `cpus` CPUs with these costs, for 2 s.
fn hogs(cpus: u32, count: u32, costs: &str) -> schedlab_sim::Workload {
    workload(&format!(
        r#"
duration = "2s"
[machine]
cpus = {cpus}
costs = {{ {costs} }}
[[task]]
name = "hog"
count = {count}
program = [ {{ loop = "forever", body = [ {{ run = "1s" }} ] }} ]
"#
    ))
}
