//! The host runner for real, on small workloads. Each test that needs
//! something the machine may refuse (tracefs, cgroups) says so and skips.

use schedlab_host::{HostError, HostOptions, run};
use schedlab_sim::{Overrides, Workload};

/// Says that a test skips, where `cargo test` shows it without
/// --nocapture: the harness captures the print macros, not writes to the
/// stderr handle itself.
fn skip(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {}: {why}", std::thread::current().name().unwrap_or("a test"));
}

fn workload(text: &str) -> Workload {
    Workload::from_toml(text, "host-test.toml", &Overrides::default()).unwrap()
}

/// Task threads of the runner still alive (they are named "sl-TASK").
fn task_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|e| std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.starts_with("sl-")))
        .count()
}

fn leftovers(kind: &str) -> Vec<String> {
    let pid = std::process::id();
    let mut found = Vec::new();
    for dir in
        ["/sys/kernel/tracing/instances", "/sys/kernel/debug/tracing/instances", "/sys/fs/cgroup/cpu", "/sys/fs/cgroup"]
    {
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name == format!("schedlab-{pid}") || name.starts_with(&format!("schedlab-{pid}-")) {
                    found.push(format!("{kind}: {dir}/{name}"));
                }
            }
        }
    }
    found
}

/// True (and says so) when other processes took more than 10% of the
/// workload's CPUs during the run, by the report's own figure: the
/// assertions after it are about the kernel sharing CPUs among the
/// workload's threads alone, and are not loosened for a busy machine.
fn machine_was_busy(r: &schedlab_sim::Report) -> bool {
    let other = r.extra_figure("other_processes_cpu_pct").unwrap_or(0.0);
    if other > 10.0 {
        skip(&format!("other processes used {other:.1}% of the workload's CPUs during the run (10% allowed)"));
    }
    other > 10.0
}

/// A pid that belonged to a process that has exited.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// The system allocator, counting what threads named `sl-child` allocate
/// or free (the name read with prctl, which allocates nothing).
struct ChildAllocations;

static CHILD_ALLOCATIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn in_a_child() -> bool {
    let mut name = [0u8; 16];
    // SAFETY: PR_GET_NAME writes at most 16 bytes.
    unsafe { libc::prctl(libc::PR_GET_NAME, name.as_mut_ptr() as libc::c_ulong) };
    name.starts_with(b"sl-child")
}

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl std::alloc::GlobalAlloc for ChildAllocations {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if in_a_child() {
            CHILD_ALLOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        // SAFETY: as the caller promised.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        if in_a_child() {
            CHILD_ALLOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        // SAFETY: as the caller promised.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: ChildAllocations = ChildAllocations;

// Tests share the machine: run them one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn spinners_share_one_cpu_and_leave_nothing_behind() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let w = workload(
        r#"
duration = "600ms"
[machine]
cpus = 1
[[task]]
name = "spin"
count = 3
affinity = "0"
program = [ { loop = "forever", body = [ { run = "1s" } ] } ]
"#,
    );
    let out = run(&w, &HostOptions::default()).unwrap();
    let r = &out.report;
    if machine_was_busy(r) {
        return;
    }
    assert_eq!(r.source, "host");
    assert_eq!(r.tasks.len(), 3);
    let total: f64 = r.tasks.iter().map(|t| t.cpu_share_pct).sum();
    assert!((85.0..=101.0).contains(&total), "3 spinners on one CPU used {total:.1}% of it");
    for t in &r.tasks {
        assert!((t.cpu_share_pct - 33.3).abs() < 10.0, "{} got {:.1}%", t.name, t.cpu_share_pct);
    }
    assert!(r.totals.involuntary_switches > 10, "spinners sharing a CPU are preempted");
    // What the runner did before the start is measured, not counted in the run.
    let before = r.extra_figure("thread_cpu_before_start_p50_us");
    assert!(before.is_some_and(|us| us > 0.0), "the threads' CPU time before the start: {before:?}");
    let forked = r.extra_figure("forked_thread_cpu_before_start_p50_us");
    assert_eq!(forked, None, "no thread was forked in the run");
    // Each slept at the gate and until t0, at least; the controller spent
    // CPU creating each.
    let sleeps = r.extra_figure("thread_sleeps_before_start_p50");
    assert!(sleeps.is_some_and(|n| n >= 2.0), "sleeps before the start: {sleeps:?}");
    let per_spawn = r.extra_figure("controller_cpu_per_spawn_us");
    assert!(per_spawn.is_some_and(|us| us > 0.0), "the controller's CPU a thread: {per_spawn:?}");
    let host = r.host.as_ref().expect("host info");
    assert!(!host.kernel_release.is_empty());
    if host.tracing.starts_with("tracefs instance") {
        assert!(r.runtime_per_switch.count > 10, "tracing gives run time per switch");
    } else {
        skip(&format!("the tracing checks: {}", host.tracing));
    }
    assert_eq!(task_threads(), 0, "every task thread is gone");
    assert!(leftovers("left").is_empty(), "{:?}", leftovers("left"));
}

#[test]
fn timers_and_pipes_measure_wakeup_latency() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let w = workload(
        r#"
duration = "500ms"
[machine]
cpus = 1
[[task]]
name = "cyclic"
program = [ { loop = "forever", body = [ { timer = "1ms" }, { run = "20us" } ] } ]
[[task]]
name = "ping"
program = [ { loop = "forever", body = [ { run = "5us" }, { signal = "a" }, { wait = "b" } ] } ]
[[task]]
name = "pong"
program = [ { loop = "forever", body = [ { wait = "a" }, { run = "5us" }, { signal = "b" } ] } ]
"#,
    );
    let r = run(&w, &HostOptions::default()).unwrap().report;
    if machine_was_busy(&r) {
        return;
    }
    let spec = |n: &str| r.specs.iter().find(|s| s.name == n).unwrap();
    let cyc = &spec("cyclic").wakeup_latency;
    assert!((350..=520).contains(&cyc.count), "a 1 ms timer over 500 ms wakes ~500 times: {}", cyc.count);
    assert!(cyc.p50 < 2_000_000, "timer p50 latency {} ns", cyc.p50);
    assert!(spec("pong").wakeup_latency.count > 100, "pipe wakeups are measured");
}

#[test]
fn more_cpus_than_the_machine_is_refused() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let w = workload("[machine]\ncpus = 4096\n[[task]]\nname = \"t\"\nprogram = [ { run = \"1ms\" } ]\n");
    match run(&w, &HostOptions::default()) {
        Err(e @ HostError::TooManyCpus { .. }) => assert!(e.to_string().contains("pass --cpus"), "{e}"),
        other => panic!("expected TooManyCpus, got {:?}", other.map(|r| r.report.scheduler)),
    }
}

#[test]
fn finite_workloads_end_early_with_a_makespan() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let w = workload(
        r#"
duration = "5s"
[machine]
cpus = 1
[[task]]
name = "job"
count = 2
program = [ { run = "30ms" }, { exit = true } ]
"#,
    );
    let r = run(&w, &HostOptions::default()).unwrap().report;
    // Conservation as in a simulation: the CPUs' busy and idle time cover
    // the report's duration exactly (a run that ends early used to report
    // over 200% utilization), and busy is the workload's own CPU time.
    assert_eq!(r.totals.busy_ns + r.totals.idle_ns, r.cpus as u64 * r.duration_ns);
    assert!(r.totals.utilization_pct <= 100.0, "utilization {:.1}%", r.totals.utilization_pct);
    let own: u64 = r.tasks.iter().map(|t| t.cpu_time_ns).sum();
    assert_eq!(r.totals.busy_ns, own.min(r.cpus as u64 * r.duration_ns));
    if machine_was_busy(&r) {
        return;
    }
    let m = r.totals.makespan_ns.expect("both jobs exit");
    assert!((55_000_000..1_000_000_000).contains(&m), "two 30 ms jobs on one CPU: makespan {m}");
}

#[test]
fn group_weights_split_a_cpu_where_cgroups_are_permitted() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let w = workload(
        r#"
duration = "1s"
[machine]
cpus = 1
[[group]]
name = "big"
cpu_weight = 300
[[group]]
name = "small"
cpu_weight = 100
[[task]]
name = "in-big"
count = 2
group = "big"
affinity = "0"
program = [ { loop = "forever", body = [ { run = "1s" } ] } ]
[[task]]
name = "in-small"
count = 2
group = "small"
affinity = "0"
program = [ { loop = "forever", body = [ { run = "1s" } ] } ]
"#,
    );
    let out = run(&w, &HostOptions::default()).unwrap();
    let host = out.report.host.as_ref().unwrap();
    if machine_was_busy(&out.report) {
        return;
    }
    if !host.cgroups.starts_with("cgroup") {
        skip(&format!("cgroups are not usable here: {}", host.cgroups));
        return;
    }
    let big: f64 = out.report.tasks.iter().filter(|t| t.name.starts_with("in-big")).map(|t| t.cpu_share_pct).sum();
    assert!((big - 75.0).abs() < 10.0, "weight 300 vs 100 gave the big group {big:.1}%");
    assert!(leftovers("left").is_empty(), "{:?}", leftovers("left"));
}

#[test]
fn ctrl_c_stops_the_run_cleanly_with_a_partial_report() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let w = workload(
        r#"
duration = "20s"
[machine]
cpus = 1
[[task]]
name = "spin"
count = 2
program = [ { loop = "forever", body = [ { run = "1s" } ] } ]
"#,
    );
    // The runner keeps a SIGINT it finds ignored (a test runner started in
    // the background); Ctrl-C is a terminal's default SIGINT.
    // SAFETY: setting this test process's SIGINT to its default.
    unsafe { libc::signal(libc::SIGINT, libc::SIG_DFL) };
    // SAFETY: pthread_self of this thread, signalled from a helper.
    let me = unsafe { libc::pthread_self() } as usize;
    let kicker = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        // SAFETY: the test thread is alive, blocked in run().
        unsafe { libc::pthread_kill(me as libc::pthread_t, libc::SIGINT) };
    });
    let start = std::time::Instant::now();
    let r = run(&w, &HostOptions::default()).unwrap().report;
    kicker.join().unwrap();
    assert!(start.elapsed().as_secs() < 5, "Ctrl-C ends the run promptly");
    assert!(r.duration_ns < 5_000_000_000, "the report covers the time that ran");
    assert!(r.host.unwrap().notes.iter().any(|n| n.contains("interrupted")));
    assert!(leftovers("left").is_empty());
}

#[test]
fn sched_iso_is_refused_before_any_thread_starts() {
    let w = workload(
        r#"
duration = "100ms"
[machine]
cpus = 1
[[task]]
name = "player"
policy = "iso"
program = [ { run = "1ms" } ]
"#,
    );
    let Err(err) = run(&w, &HostOptions::default()) else {
        panic!("a SCHED_ISO task ran on a kernel without SCHED_ISO");
    };
    assert!(matches!(err, HostError::Attribute { .. }), "{err}");
    assert!(err.to_string().contains("SCHED_ISO") && err.to_string().contains("player"), "{err}");
    assert_eq!(task_threads(), 0);
}

#[test]
fn rt_app_mutex_and_barrier_hold_on_real_threads() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let path = format!("{}/../../examples/rt-app/sync.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let ov = Overrides { cpus: Some(1), duration: Some(1_000_000_000), ..Overrides::default() };
    let w = schedlab_sim::formats::rtapp::from_rtapp_json(&text, &path, &ov).unwrap();
    let opts = HostOptions { tracing: false, groups: false, ..HostOptions::default() };
    let r = run(&w, &opts).unwrap().report;
    let cpu =
        |prefix: &str| -> u64 { r.tasks.iter().filter(|t| t.name.starts_with(prefix)).map(|t| t.cpu_time_ns).sum() };
    // One mutex, three lockers that only run while holding it: never more
    // than the wall time between them.
    assert!(cpu("locker") <= 1_050_000_000, "lockers ran {} ns in 1 s", cpu("locker"));
    assert!(cpu("locker") > 0, "the mutex was never taken");
    // The barrier keeps the 1 ms stage to the 5 ms stage's rounds.
    let (fast, slow) = (cpu("fast_stage") / 1_000_000, cpu("slow_stage") / 5_000_000);
    assert!(fast.abs_diff(slow) <= 2, "barrier rounds {fast} vs {slow}");
    assert_eq!(task_threads(), 0, "task threads left running after the run");
}

#[test]
fn record_then_replay_a_real_command() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // `yes` must get a CPU to itself for its 200 ms to be recorded as such.
    let idle = schedlab_host::info::idle_cpus(std::time::Duration::from_millis(300));
    if idle < 1.0 {
        skip(&format!("{idle:.2} host CPUs idle, 1 needed for yes to run alone"));
        return;
    }
    let cmd: Vec<String> =
        ["sh", "-c", "timeout 0.2 yes > /dev/null; sleep 0.01"].iter().map(|s| s.to_string()).collect();
    let rec = match schedlab_host::record(&cmd) {
        Ok(r) => r,
        Err(HostError::Setup(why)) => {
            skip(&format!("tracefs not usable here: {why}"));
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert!(rec.exit_status.success());
    let (w, recorded) =
        schedlab_sim::formats::replay::workload_from_trace(&rec.text, "live.trace", &Overrides::default()).unwrap();
    // timeout forks and execs yes: the child is named by its comm after
    // exec (sched_process_exec), yes, not by its parent's, timeout.
    let yes = recorded.cpu_time.iter().find(|(n, _)| n.starts_with("yes-"));
    let (name, cpu) = yes.expect("the yes process is in the trace");
    // timeout 0.2 yes spins for about 200 ms.
    assert!((100_000_000..=260_000_000).contains(cpu), "{name} recorded {cpu} ns");
    assert!(w.tasks.iter().any(|t| t.name == *name));
    assert!(leftovers("record").is_empty(), "tracefs instance left behind");
}

#[test]
fn calibration_measures_a_switch_dearer_than_a_yield() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // sched_yield gives the CPU to any other runnable thread: beside a busy
    // process it measures that process's slices, not a syscall (21.6 us
    // against a 5.7 us hop while a build ran). Quiet before and during, or
    // skipped with the figure.
    let idle = schedlab_host::info::idle_cpus(std::time::Duration::from_millis(300));
    if idle < 1.5 {
        skip(&format!("{idle:.2} host CPUs idle before the calibration, 1.5 needed for it to measure this kernel"));
        return;
    }
    let c = match schedlab_host::calibrate::calibrate(0.1) {
        Ok(c) => c,
        Err(HostError::Setup(why)) => {
            skip(&why);
            return;
        }
        Err(e) => panic!("{e}"),
    };
    if c.other_load_pct > 10.0 {
        skip(&format!("other processes took {:.1}% of the calibrated CPUs during it (10% allowed)", c.other_load_pct));
        return;
    }
    // A hop is a write, a switch and a read: more than one cheap syscall,
    // and well under a millisecond on anything that runs Linux.
    assert!((100..1_000_000).contains(&c.context_switch), "context switch {} ns", c.context_switch);
    assert!(c.syscall < c.context_switch, "sched_yield {} ns vs hop {} ns", c.syscall, c.context_switch);
    assert_eq!(c.idle_wakeup.is_some(), c.cpus_allowed > 1, "idle wakeups need a second CPU");
    if let (Some(wakeup), Some(exit)) = (c.idle_wakeup, c.idle_exit()) {
        assert_eq!(exit, wakeup.saturating_sub(c.context_switch), "idle_exit is the wakeup less the switch");
        assert_eq!(c.deep_idle.len(), schedlab_host::calibrate::DEEP_IDLE.len());
    }
    assert_eq!(task_threads(), 0, "calibration threads left running");
}

#[test]
fn more_threads_than_the_machine_allows_are_refused_before_any_starts() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // 20,000 threads used to abort the process at vm.max_map_count.
    let w = workload(
        "duration = \"100ms\"\n[machine]\ncpus = 1\n[[task]]\nname = \"t\"\ncount = 1000000\nprogram = [ { run = \"1ms\" } ]\n",
    );
    let Err(err) = run(&w, &HostOptions::default()) else { panic!("a million threads started") };
    assert!(err.to_string().contains("starts 1000000 threads at once"), "{err}");
    assert!(err.to_string().contains("use fewer tasks"), "{err}");
    assert_eq!(task_threads(), 0);
}

#[test]
fn leftovers_of_a_killed_run_are_removed_by_the_next() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pid = dead_pid();
    let mut planted = Vec::new();
    for root in ["/sys/kernel/tracing/instances", "/sys/fs/cgroup/cpu"] {
        let ns = schedlab_host::signals::pid_namespace();
        let dir = std::path::Path::new(root).join(format!("schedlab-{pid}-ns{ns}"));
        if std::fs::create_dir(&dir).is_ok() {
            planted.push(dir.clone());
            if root.contains("cgroup") {
                // A group of the dead run, inside its directory.
                std::fs::create_dir(dir.join("web")).unwrap();
            }
        }
    }
    if planted.is_empty() {
        skip("neither tracefs nor cgroup v1 cpu is writable here");
        return;
    }
    let w =
        workload("duration = \"50ms\"\n[machine]\ncpus = 1\n[[task]]\nname = \"t\"\nprogram = [ { run = \"1ms\" } ]\n");
    let out = run(&w, &HostOptions::default()).unwrap();
    for dir in &planted {
        assert!(!dir.exists(), "{} is still there", dir.display());
        let said = format!("{}, left by schedlab run {pid}, which was killed", dir.display());
        assert!(out.removed.iter().any(|w| w.contains(&said)), "{:?} lacks '{said}'", out.removed);
    }
}

/// A forked task thread allocates and frees nothing: glibc would give it
/// an arena of its own (an mmap, munmap and mprotect under the process's
/// mmap lock), on which a TCG guest's burst of forks queued where the
/// workload never sleeps (`sys::malloc_settings`).
#[test]
fn forked_threads_allocate_nothing() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let w = workload(
        r#"
duration = "1s"
[machine]
cpus = 1
[[task]]
name = "parent"
program = [ { loop = 40, body = [ { run = "50us" }, { fork = "child" } ] }, { exit = true } ]
[[task]]
name = "child"
template = true
program = [ { run = "1ms" }, { exit = true } ]
"#,
    );
    let before = CHILD_ALLOCATIONS.load(std::sync::atomic::Ordering::Relaxed);
    let r = match run(&w, &HostOptions::default()) {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    };
    let children = r.report.tasks.iter().filter(|t| t.name.starts_with("child")).count();
    assert_eq!(children, 40, "{:?}", r.report.tasks.iter().map(|t| &t.name).collect::<Vec<_>>());
    let allocations = CHILD_ALLOCATIONS.load(std::sync::atomic::Ordering::Relaxed) - before;
    assert_eq!(allocations, 0, "40 forked threads allocated or freed {allocations} times");
    // The start figures of the one gated thread (the parent) and of the
    // forked ones apart: fork-burst's children made the median the
    // parent's before, 86 us where its own clock read 4.4 ms (tt-6.1).
    let figure = |name: &str| r.report.extra_figure(name);
    let (gated, at_gate) = (figure("thread_cpu_before_start_p50_us"), figure("thread_cpu_at_gate_p50_us"));
    assert!(
        gated.zip(at_gate).is_some_and(|(b, g)| g <= b),
        "the parent's clock at the gate {at_gate:?}, at t0 {gated:?}"
    );
    let forked = figure("forked_thread_cpu_before_start_p50_us");
    assert!(forked.is_some_and(|us| us > 0.0), "a forked thread's CPU before its work: {forked:?}");
}
