//! rt-app JSON workloads: the shipped examples read as their TOML twins do,
//! each synchronisation event does what rt-app's does, and bad files get
//! one error with the line.

mod common;

use common::run;
use schedlab_policies::POLICIES;
use schedlab_sim::formats::rtapp::from_rtapp_json;
use schedlab_sim::time::{NSEC_PER_MSEC, NSEC_PER_SEC};
use schedlab_sim::workload::dist::Dist;
use schedlab_sim::{Overrides, Report, Workload};

fn example(name: &str) -> String {
    let path = format!("{}/../../examples/rt-app/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `n` CPUs whose switches, migrations and idle exits cost nothing: a
/// task's CPU time is then its program's runs (each of those costs is
/// charged to the task that pays it, as the kernel charges it), which is
/// what these tests of rt-app's events count, wherever a policy places the
/// tasks.
fn cpus(n: u32) -> Overrides {
    let free = ["context_switch", "migration", "idle_exit"].map(|c| (c.to_string(), Dist::Const(0)));
    Overrides { cpus: Some(n), costs: free.into(), ..Overrides::default() }
}

fn rtapp(text: &str, ov: &Overrides) -> Workload {
    from_rtapp_json(text, "test.json", ov).unwrap_or_else(|e| panic!("{e}"))
}

fn task_cpu(r: &Report, name: &str) -> u64 {
    r.tasks.iter().filter(|t| t.name.starts_with(name)).map(|t| t.cpu_time_ns).sum()
}

#[test]
fn the_json_and_its_toml_twin_give_the_same_report_on_every_policy() {
    let json = from_rtapp_json(&example("pipeline.json"), "pipeline.json", &cpus(2)).unwrap();
    let toml = Workload::from_toml(&example("pipeline.toml"), "pipeline.toml", &cpus(2)).unwrap();
    for p in POLICIES {
        let (a, b) = (run(&json, p.name), run(&toml, p.name));
        let (a_json, b_json) = (serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
        let at = a_json.bytes().zip(b_json.bytes()).position(|(x, y)| x != y);
        assert!(a_json == b_json, "{}: rt-app and TOML reports differ from byte {at:?}", p.name);
        // Something happened: the forked logger ran, the consumers were fed.
        assert!(a.tasks.iter().any(|t| t.name.starts_with("logger") && t.cpu_time_ns >= 10 * NSEC_PER_MSEC));
        assert!(task_cpu(&a, "consumer") > 0, "{}", p.name);
    }
}

#[test]
fn sync_events_behave_as_in_rt_app() {
    let w = rtapp(&example("sync.json"), &cpus(8));
    for sched in ["cfs", "eevdf", "bfs", "pds"] {
        let r = run(&w, sched);
        // Three lockers each wanting 2/3 of a CPU share one mutex: together
        // they run at most one CPU's worth (plus the switch and cache-cold
        // costs charged to them), and close to it.
        let lockers = task_cpu(&r, "locker");
        assert!(lockers <= 2 * NSEC_PER_SEC * 103 / 100, "{sched}: lockers ran {lockers} ns in 2 s under one mutex");
        assert!(lockers > 2 * NSEC_PER_SEC * 8 / 10, "{sched}: the mutex was not handed on ({lockers} ns)");
        // The barrier holds the 1 ms stage to the 5 ms one: one round each.
        let (fast, slow) = (task_cpu(&r, "fast_stage"), task_cpu(&r, "slow_stage"));
        let rounds_fast = fast / NSEC_PER_MSEC;
        let rounds_slow = slow / (5 * NSEC_PER_MSEC);
        assert!(rounds_fast.abs_diff(rounds_slow) <= 1, "{sched}: barrier rounds {rounds_fast} vs {rounds_slow}");
        // Resume wakes the suspended task once per 10 ms alarm: 200 x 100 us.
        let sleeper = task_cpu(&r, "sleeper");
        assert!((19 * NSEC_PER_MSEC..=21 * NSEC_PER_MSEC).contains(&sleeper), "{sched}: sleeper ran {sleeper} ns");
        // One signal per 5 ms, one 300 us run per signal: 400 x 300 us.
        let listener = task_cpu(&r, "listener");
        assert!((118 * NSEC_PER_MSEC..=121 * NSEC_PER_MSEC).contains(&listener), "{sched}: listener {listener} ns");
    }
}

#[test]
fn suspend_and_resume_name_resources_created_on_first_use() {
    // rt-app's browser and camera use cases: tasks suspend on a resource
    // name that is no task's ("Browser"), and some resumes have nobody
    // waiting (a no-op in rt-app). Two waiters on "Sub" run once per resume
    // of "Sub": 5 a round x 100 us each, 3 rounds.
    let text = r#"{ "tasks": {
        "Main": { "loop": 3, "phases": {
            "start": { "loop": 1, "sleep": 4000, "run": 1500, "resume": "Browser", "sleep": 800 },
            "render": { "loop": 5, "resume": "Sub", "run": 300 },
            "stop": { "loop": 1, "resume": "Nobody-waits", "sleep": 50000 } } },
        "Sub1": { "loop": -1, "suspend": "Sub", "run": 100 },
        "Sub2": { "loop": -1, "suspend": "Sub", "run": 100 },
        "Display": { "loop": -1, "suspend": "Browser", "run": 300 }
      }, "global": { "duration": 1 } }"#;
    let w = rtapp(text, &cpus(2));
    let r = run(&w, "cfs");
    // (A migrated task also pays the cache-cold migration cost: 10 us.)
    for sub in ["Sub1", "Sub2"] {
        let ran = task_cpu(&r, sub);
        assert!((15 * 100_000..=15 * 100_000 + 30_000).contains(&ran), "{sub} ran {ran} ns");
    }
    let display = task_cpu(&r, "Display");
    assert!((3 * 300_000..=3 * 300_000 + 30_000).contains(&display), "Display ran {display} ns");
}

#[test]
fn a_signal_nobody_waits_for_is_lost() {
    // The notifier signals before the listener first waits (delay): the
    // condition keeps no token, so the listener sleeps until the next one.
    let text = r#"{ "tasks": {
        "notifier": { "loop": 1, "signal": "c", "sleep": 500000 },
        "listener": { "delay": 1000, "loop": 1, "lock": "m", "wait": { "ref": "c", "mutex": "m" }, "unlock": "m", "run": 1000 }
    }, "global": { "duration": 1 } }"#;
    let r = run(&rtapp(text, &cpus(2)), "eevdf");
    assert_eq!(task_cpu(&r, "listener"), 0, "the listener ran on a signal sent before it waited");
}

#[test]
fn rt_app_timers_keep_their_schedule_or_restart_it() {
    // A 10 ms period; the task runs 15 ms every 4th activation. Absolute
    // timers catch up (no sleep for the missed expiry); relative ones
    // restart the period after the overrun, so they fall behind.
    let text = |mode: &str| {
        format!(
            r#"{{ "tasks": {{ "t": {{ "phases": {{
                "a": {{ "loop": 3, "run": 1000, "timer": {{ "ref": "unique", "period": 10000, "mode": "{mode}" }} }},
                "b": {{ "run": 15000, "timer": {{ "ref": "unique", "period": 10000, "mode": "{mode}" }} }}
            }} }} }}, "global": {{ "duration": 1 }} }}"#
        )
    };
    let absolute = run(&rtapp(&text("absolute"), &cpus(1)), "eevdf");
    let relative = run(&rtapp(&text("relative"), &cpus(1)), "eevdf");
    // Absolute: 4 activations every 40 ms, 18 ms each: 450 ms in 1 s.
    let abs = task_cpu(&absolute, "t");
    assert!((440 * NSEC_PER_MSEC..=460 * NSEC_PER_MSEC).contains(&abs), "absolute {abs}");
    // Relative: the overrun's 5 ms are never made up: 45 ms cycles, 400 ms.
    let rel = task_cpu(&relative, "t");
    assert!((390 * NSEC_PER_MSEC..=410 * NSEC_PER_MSEC).contains(&rel), "relative {rel}");
}

#[test]
fn what_cannot_be_modelled_is_refused_with_the_line() {
    let cases = [
        (r#"{ "tasks": { "t": { "run": 10, "mem": 1000 } } }"#, 1, "mem"),
        ("{\n\"tasks\": {\n \"t\": {\n  \"policy\": \"SCHED_DEADLINE\",\n  \"run\": 10 } } }", 4, "SCHED_DEADLINE"),
        ("{\n\"tasks\": {\n \"t\": {\n  \"util_min\": 100,\n \"run\": 10 } } }", 4, "util_min"),
        ("{\n\"tasks\": {\n \"t\": {\n  \"run\": 10,\n  \"unlock\": \"m\" } } }", 5, "not locked"),
        ("{\n\"tasks\": {\n \"t\": {\n  \"run\": 10,\n  \"fork\": \"nobody\" } } }", 5, "nobody"),
        ("{\n\"tasks\": {\n \"t\": {\n  \"runn\": 10,\n  \"exec\": 5 } } }", 5, "exec"),
        ("{\n\"tasks\": {\n \"t\": {\n  \"cpus\": [5],\n  \"run\": 10 } } }", 4, "--cpus 6"),
        ("{\n\"tasks\": {\n \"t\": {\n  \"run\": 10,\n  \"sleep\": 10,, } } }", 5, "JSON"),
        ("{\n\"tasks\": {\n \"t\": {\n  \"run\": 10 } },\n \"global\": { \"pi_enabled\": true } }", 5, "inheritance"),
        (
            "{\n\"tasks\": { \"t\": { \"run\": 10,\n \"phases\": { \"p\": { \"cpus\": [0], \"run\": 1 } } } } }",
            3,
            "changes \"cpus\"",
        ),
        (
            "{ \"tasks\": { \"t\": { \"instance\": 2, \"timer\": { \"ref\": \"tick\", \"period\": 100 } } } }",
            1,
            "unique",
        ),
        ("{ \"tasks\": { \"t\": { \"sleep\": 10 } }, \"global\": { \"duration\": -1 } }", 1, "--duration"),
        (
            "{ \"tasks\": { \"t\": { \"run\": 10 } },\n \"tasks\": { \"u\": { \"run\": 5 } } }",
            1,
            "the section \"tasks\" appears more than once",
        ),
        // rt-app's old format, as in its doc/examples/merge.
        (
            "{ \"tasks\": {\n \"thread0\": { \"exec\": 5000, \"period\": 5000, \"deadline\": 5000,\n \
             \"lock_order\": [\"m0\"], \"resources\": { \"m0\": { \"duration\": 1000 } } } } }",
            2,
            "\"exec\" is rt-app's old format",
        ),
    ];
    for (text, line, needle) in cases {
        let e = from_rtapp_json(text, "bad.json", &cpus(1)).expect_err(text).to_string();
        assert!(e.starts_with(&format!("bad.json:{line}:")), "wrong line in: {e}");
        assert!(e.contains(needle), "'{needle}' missing from: {e}");
    }
    // Without --cpus the machine comes from the file: its error names the
    // file and the CPU it lists, not an option nobody gave.
    let huge = r#"{ "tasks": { "t": { "cpus": [65536], "run": 10 } } }"#;
    let e = from_rtapp_json(huge, "huge.json", &Overrides::default()).unwrap_err().to_string();
    assert!(e.starts_with("huge.json"), "{e}");
    assert!(e.contains("lists name CPU 65536") && !e.contains("--cpus:"), "{e}");
}

#[test]
fn workgen_style_files_are_read_as_rt_app_reads_them() {
    // Comments, trailing commas and repeated event keys (numbered in order,
    // as workgen does).
    let text = "{\n /* a comment */ \"tasks\": { \"t\": {\n \"loop\": 2, // two rounds\n \"run\": 1000, \"sleep\": 1000, \"run\": 2000, } } }";
    let r = run(&rtapp(text, &cpus(1)), "cfs");
    assert_eq!(task_cpu(&r, "t"), 6 * NSEC_PER_MSEC, "both runs of both rounds, in order");
}

#[test]
fn dl_runtime_on_sched_other_is_eevdf_s_custom_slice() {
    // rt-app's doc/examples/custom-slice.json, its SCHED_DEADLINE thread
    // made SCHED_OTHER: dl-runtime 100000 us is a 100 ms custom slice
    // (clamped there by __setscheduler_params), 200000 us clamped to it.
    let json = r#"{ "tasks": {
        "thread0": { "loop": -1, "run": 20000, "policy": "SCHED_OTHER", "priority": -19, "dl-runtime": 100000 },
        "thread1": { "loop": -1, "run": 20000, "policy": "SCHED_OTHER", "dl-runtime": 50 } },
        "global": { "duration": 2, "calibration": "CPU0", "gnuplot": true } }"#;
    let w = rtapp(json, &cpus(1));
    assert_eq!(w.tasks[0].slice, Some(100 * NSEC_PER_MSEC));
    assert_eq!(w.tasks[1].slice, Some(100_000), "50 us is clamped up to 0.1 ms");
    let deadline =
        json.replace(r#""policy": "SCHED_OTHER", "dl-runtime": 50"#, r#""policy": "SCHED_DEADLINE", "dl-runtime": 50"#);
    let err = from_rtapp_json(&deadline, "cs.json", &cpus(1)).unwrap_err().to_string();
    assert!(err.contains("SCHED_DEADLINE is not modelled"), "{err}");
    // A phase that changes its CPUs is refused before its CPU numbers are
    // checked against the machine: --cpus would not help.
    let phased =
        r#"{ "tasks": { "t": { "phases": { "p1": { "cpus": [7], "run": 10 } } } }, "global": { "duration": 1 } }"#;
    let err = from_rtapp_json(phased, "ph.json", &cpus(1)).unwrap_err().to_string();
    assert!(err.contains("phase \"p1\" changes \"cpus\""), "{err}");
    // Without --cpus the machine has the CPUs the file names.
    assert_eq!(schedlab_sim::formats::rtapp::cpus_named(phased), Some(8));
}

/// A policy that passes everything to `inner` and keeps each wakeup's
/// kind with what the woken task was waiting on.
struct WakeRecorder {
    inner: Box<dyn schedlab_sim::Policy>,
    /// (the task's spec, WF_SYNC, was waiting in a futex)
    wakes: std::rc::Rc<std::cell::RefCell<Vec<(u32, bool, bool)>>>,
}

impl schedlab_sim::Policy for WakeRecorder {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn tunables(&self) -> Vec<schedlab_sim::Tunable> {
        self.inner.tunables()
    }
    fn init(&mut self, sys: &mut schedlab_sim::Sys) {
        self.inner.init(sys)
    }
    fn task_new(&mut self, sys: &mut schedlab_sim::Sys, t: u32, parent: Option<u32>) {
        self.inner.task_new(sys, t, parent)
    }
    fn select_cpu(&mut self, sys: &mut schedlab_sim::Sys, t: u32, prev: u32, kind: schedlab_sim::WakeKind) -> u32 {
        if let schedlab_sim::WakeKind::Wakeup { waker_cpu: Some(_), sync, .. } = kind {
            self.wakes.borrow_mut().push((sys.task(t).spec, sync, sys.task(t).futex_wait));
        }
        self.inner.select_cpu(sys, t, prev, kind)
    }
    fn enqueue(&mut self, sys: &mut schedlab_sim::Sys, cpu: u32, t: u32, how: schedlab_sim::Enqueue) {
        self.inner.enqueue(sys, cpu, t, how)
    }
    fn dequeue(&mut self, sys: &mut schedlab_sim::Sys, cpu: u32, t: u32, why: schedlab_sim::Dequeue) {
        self.inner.dequeue(sys, cpu, t, why)
    }
    fn pick_next(&mut self, sys: &mut schedlab_sim::Sys, cpu: u32) -> Option<u32> {
        self.inner.pick_next(sys, cpu)
    }
    fn put_prev(&mut self, sys: &mut schedlab_sim::Sys, cpu: u32, t: u32, runnable: bool) {
        self.inner.put_prev(sys, cpu, t, runnable)
    }
    fn account(&mut self, sys: &mut schedlab_sim::Sys, cpu: u32, t: u32, delta: u64) {
        self.inner.account(sys, cpu, t, delta)
    }
    fn tick(&mut self, sys: &mut schedlab_sim::Sys, cpu: u32, curr: u32) {
        self.inner.tick(sys, cpu, curr)
    }
    fn wakeup_preempt(&mut self, sys: &mut schedlab_sim::Sys, cpu: u32, curr: u32, woken: u32) -> bool {
        self.inner.wakeup_preempt(sys, cpu, curr, woken)
    }
    fn yield_task(&mut self, sys: &mut schedlab_sim::Sys, cpu: u32, t: u32) {
        self.inner.yield_task(sys, cpu, t)
    }
    fn balance(&mut self, sys: &mut schedlab_sim::Sys, cpu: u32, idle: bool) {
        self.inner.balance(sys, cpu, idle)
    }
    fn newidle_balance(&mut self, sys: &mut schedlab_sim::Sys, cpu: u32) {
        self.inner.newidle_balance(sys, cpu)
    }
    fn timer(&mut self, sys: &mut schedlab_sim::Sys, token: u64) {
        self.inner.timer(sys, token)
    }
}

#[test]
fn futex_wakeups_are_not_sync_and_pipe_wakeups_are() {
    // sync.json: a barrier and a condition (futexes, as pthreads and the
    // host runner have them) beside a mutex handed over as a channel token
    // (a pipe in the host runner). try_to_wake_up gets WF_SYNC from a pipe
    // write, never from FUTEX_WAKE.
    let w = rtapp(&example("sync.json"), &cpus(2));
    let wakes = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let policy = Box::new(WakeRecorder { inner: schedlab_policies::build("eevdf", &w).unwrap(), wakes: wakes.clone() });
    schedlab_sim::Engine::new(&w, policy, schedlab_sim::EngineOptions::default()).run().unwrap();
    let wakes = wakes.borrow();
    let by = |name: &str| wakes.iter().filter(|(s, ..)| w.tasks[*s as usize].name == name).collect::<Vec<_>>();
    for name in ["fast_stage", "listener"] {
        let w = by(name);
        assert!(!w.is_empty(), "{name} was never woken by a task");
        assert!(w.iter().all(|&&(_, sync, futex)| futex && !sync), "{name}: {w:?}");
    }
    let lockers = by("locker");
    assert!(!lockers.is_empty() && lockers.iter().all(|&&(_, sync, futex)| sync && !futex), "{lockers:?}");
}
