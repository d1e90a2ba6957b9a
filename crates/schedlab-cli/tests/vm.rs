//! `schedlab vm` for real: a guest kernel of ../shared/kernels booted under
//! QEMU (TCG, which works on every machine of this kind), a figure checked
//! from inside it, and nothing left behind after SIGTERM or SIGKILL.
//!
//! Needs qemu-system-x86_64 and the shared kernels. Where either is
//! missing the tests say so and skip, except under CI (CI=true), where
//! .ci/run installs QEMU and a skip would hide a broken runner: there they
//! fail. A test whose figure depends on a free host CPU measures the host
//! first and skips with the figure when it is busy.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

// Guests compete for the two host CPUs: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn schedlab() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_schedlab"));
    // Where --kernel all, kernel names and --scx look (the tests run in the
    // crate's directory, not the repository's).
    cmd.env("SCHEDLAB_KERNELS", Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/kernels"));
    cmd
}

/// Says that a test skips, where `cargo test` shows it without
/// --nocapture: the test harness captures the print macros, not writes to
/// the stderr handle itself.
fn skip(why: &str) {
    say("SKIPPED", why);
}

fn say(tag: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{tag} {}: {why}", std::thread::current().name().unwrap_or("a test"));
}

/// Skips (returns None) with a message, or fails under CI.
fn required<T>(thing: Option<T>, what: &str) -> Option<T> {
    if thing.is_none() {
        if std::env::var_os("CI").is_some() {
            panic!("CI must run the vm tests, but {what}");
        }
        skip(what);
    }
    thing
}

/// The host CPUs that something other than this test's children used
/// while `run` ran (busy time from /proc/stat less the CPU time of the
/// children it waited for, qemu's included), on average over the run; a
/// guest's tick rate holds only while its vCPUs have the host's CPUs.
fn others_during<T>(run: impl FnOnce() -> T) -> (T, f64) {
    let busy = || schedlab_host::info::machine_cpu_ticks().0;
    fn children_cpu_ns() -> u64 {
        // SAFETY: getrusage writes the struct it is given.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
        let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
        (us(ru.ru_utime) + us(ru.ru_stime)) * 1000
    }
    // SAFETY: sysconf has no side effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let (b0, c0, t0) = (busy(), children_cpu_ns(), Instant::now());
    let out = run();
    let (b1, c1) = (busy(), children_cpu_ns());
    let host_ns = (b1 - b0) * 1_000_000_000 / hz;
    let others = host_ns.saturating_sub(c1 - c0) as f64 / t0.elapsed().as_nanos().max(1) as f64;
    (out, others)
}

/// Runs a `schedlab vm` command, booting again when the guest kernel
/// crashed or hung before its init, up to `BOOTS` times: TCG guests oops
/// now and then (an int3 in swapper seen once in CI), and MuQSS 0.205
/// booted with rqshare=mc leaves its second CPU without ticks (an RCU
/// stall before init) in 3 of 16 boots here, against none of 8 without it
/// (it frees the shared CPU's runqueue lock while locked at boot, "FIXME
/// freeing locked spinlock" in share_and_free_rq). Neither is what these
/// tests check, and `validate` boots again the same way. The last failure
/// is returned.
fn vm_output(args: &[&str], kernel: &Path) -> Output {
    const BOOTS: usize = 4;
    // --kernel right after the command: after a `--` it would be a
    // program's argument.
    let run = || schedlab().args(&args[..1]).arg("--kernel").arg(kernel).args(&args[1..]).output().unwrap();
    let mut out = run();
    for _ in 1..BOOTS {
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.success() || !(err.contains("the kernel crashed") || err.contains("did not reach its init")) {
            break;
        }
        say("BOOTED AGAIN", &format!("the guest kernel failed:\n{err}"));
        out = run();
    }
    out
}

/// Whether 1.5 host CPUs are idle, as a guest's two vCPUs need for its
/// tick rate to hold; skips with the figure when not.
fn host_is_quiet() -> bool {
    let idle = schedlab_host::info::idle_cpus(Duration::from_millis(500));
    if idle < 1.5 {
        skip(&format!("the host has {idle:.2} idle CPUs, 1.5 are needed for a guest tick rate to hold"));
    }
    idle >= 1.5
}

/// Other processes' CPUs during a guest's run above which its figures are
/// not the kernel's.
const OTHERS_LIMIT: f64 = 0.25;

/// Why a guest's run measured its host, if it did: other processes took
/// the host's CPUs during it, or its timers fired late (the host ran its
/// vCPUs late, which 0.18 host CPUs of others in short bursts do too).
fn host_disturbed(real: &serde_json::Value, others: f64) -> Option<String> {
    let extra =
        |name: &str| real["extra"].as_array().and_then(|e| e.iter().find(|x| x[0] == name).and_then(|x| x[1].as_f64()));
    let late = extra(schedlab_host::TIMER_LATE_P90);
    // A busy vCPU its host did not run for a jiffy skips the tick, and a
    // hog's turn ends at a tick: validate boots such a run again.
    let ticks = extra(schedlab_host::TICKS_DELIVERED);
    if others > OTHERS_LIMIT {
        Some(format!("other processes took {others:.2} host CPUs during the guest's run"))
    } else if let Some(t) = ticks.filter(|&t| t < schedlab_host::TICKS_DELIVERED_MIN_PCT) {
        Some(format!("the guest's busy CPUs took {t:.1}% of their timer ticks"))
    } else {
        late.filter(|&l| l > schedlab_host::TIMER_LATE_P90_LIMIT_US)
            .map(|l| format!("the guest's timers fired {l:.0} us late at the 90th percentile"))
    }
}

/// The switches/s that validate's committed boots of `experiment` gave
/// under `policy`'s kernel (docs/validation-runs.json), widened by the
/// 10% validate allows a rate: the band a fresh boot of the same kernel
/// is expected in.
fn committed_switches(policy: &str, experiment: &str) -> (f64, f64) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/validation-runs.json");
    let digest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let runs = digest["kernels"][policy]["runs"].as_object().unwrap();
    let seen: Vec<f64> = runs
        .iter()
        .filter(|(name, _)| name.rsplit_once('-').is_some_and(|(e, n)| e == experiment && n.parse::<u32>().is_ok()))
        .flat_map(|(_, run)| run["figures"].as_array().unwrap().iter())
        .filter(|f| f["key"] == "switches")
        .map(|f| f["value"].as_f64().unwrap())
        .collect();
    assert!(seen.len() >= 3, "{policy} {experiment}: {} boots in the digest", seen.len());
    let (lo, hi) = seen.iter().fold((f64::MAX, 0f64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    (lo / 1.1, hi * 1.1)
}

fn kernel(name: &str) -> Option<PathBuf> {
    let qemu = std::env::var_os("PATH")
        .and_then(|p| std::env::split_paths(&p).find(|d| d.join("qemu-system-x86_64").is_file()));
    required(qemu, "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)")?;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/kernels").join(format!("{name}.bzImage"));
    required(path.is_file().then_some(path), &format!("../shared/kernels/{name}.bzImage is not there"))
}

fn json(out: &Output) -> serde_json::Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "schedlab vm failed:\n{stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not a JSON report ({e}):\n{stderr}"))
}

fn temp_dirs_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("schedlab-vm-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

/// Processes (QEMU) whose command line names a temporary directory of run `pid`.
fn processes_of(pid: u32) -> Vec<String> {
    let needle = format!("schedlab-vm-{pid}-");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&needle) && !c.contains("schedlab-vm-test"))
        .collect()
}

/// Starts a long vm run and waits until its guest is up; the caller
/// signals and waits for it.
#[allow(clippy::zombie_processes)]
fn start_long_run(kernel: &Path) -> std::process::Child {
    let mut child = schedlab()
        .args(["vm", "thread-test", "--duration", "120s", "--accel", "tcg", "--kernel"])
        .arg(kernel)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        let up = temp_dirs_of(child.id())
            .iter()
            .any(|d| std::fs::read_to_string(d.join("console.log")).is_ok_and(|c| c.contains("schedlab-guest: up")));
        if up {
            return child;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the guest did not come up in 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_with_timeout(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(start.elapsed() < limit, "schedlab did not exit within {limit:?} of the signal");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn eevdf_kernel_switches_at_every_tick_in_the_guest() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(k) = kernel("eevdf-6.12") else { return };
    // The spinning vCPU needs a host CPU to itself: a vCPU thread that
    // loses it loses guest ticks, and with them switches.
    if !host_is_quiet() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace_out = dir.path().join("guest.trace");
    let (out, others) = others_during(|| {
        vm_output(
            &[
                "vm",
                "thread-test",
                "--param",
                "threads=16",
                "--duration",
                "2s",
                "--accel",
                "tcg",
                "--json",
                "--trace-out",
                trace_out.to_str().unwrap(),
            ],
            &k,
        )
    });
    let r = json(&out);
    // The guest's trace of every task came back: the report's switches
    // are counted from it, inside the run's window, so it holds at least
    // as many of the spinners' switches.
    let trace = std::fs::read_to_string(&trace_out).unwrap();
    let spinner_switches = trace.lines().filter(|l| l.contains("sched_switch: prev_comm=sl-spinner")).count();
    let switches = r["totals"]["context_switches"].as_u64().unwrap();
    assert!(
        spinner_switches as u64 >= switches && switches > 0,
        "{spinner_switches} in the trace, {switches} reported"
    );
    assert!(trace.contains("prev_comm=kworker") || trace.contains("prev_comm=rcu"), "the kernel's own threads too");
    assert_eq!(r["source"], "vm");
    assert_eq!(r["scheduler"], "eevdf-6.12 (vm)");
    let host = &r["host"];
    assert!(host["kernel_release"].as_str().unwrap().starts_with("6.12."), "{host}");
    assert!(host["machine"].as_str().unwrap().starts_with("QEMU TCG, 2 vCPUs"), "{host}");
    // guest.config has HZ=250; the guest has no config file, so this is
    // the runner's measurement of jiffies in the guest.
    assert_eq!(r["hz"], 250);
    let tasks = r["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 16);
    // 16 spinners on CPU 0: EEVDF's 1.4 ms base slice (0.7 ms x 2 for two
    // CPUs) ends only at a tick, so each tick switches: 250/s, 4 ms runs.
    let rate = r["totals"]["context_switches_per_sec"].as_f64().unwrap();
    if let Some(why) = host_disturbed(&r, others).filter(|_| !(225.0..=275.0).contains(&rate)) {
        skip(&format!("{why} ({rate:.0} switches/s)"));
        return;
    }
    assert!((225.0..=275.0).contains(&rate), "{rate:.0} switches/s, expected 250 +- 10%");
    let p50 = r["runtime_per_switch"]["p50"].as_u64().unwrap();
    assert!((3_600_000..=4_400_000).contains(&p50), "run per switch p50 {p50} ns, expected one 4 ms tick");
    for t in tasks {
        let share = t["cpu_share_pct"].as_f64().unwrap();
        assert!((share - 6.25).abs() < 1.5, "{} got {share:.2}% of CPU 0, expected 1/16", t["name"]);
    }
}

/// A scenario in the guest kernel `kernel` (with `boot` parameters) and
/// simulated on `sched`, with why the guest's run measured its host if it
/// did; None when the kernel is missing or the host is busy (skipped).
fn real_and_simulated(
    kernel_name: &str,
    boot: &[&str],
    sched: &str,
    scenario: &[&str],
) -> Option<(serde_json::Value, serde_json::Value, Option<String>)> {
    let k = kernel(kernel_name)?;
    if !host_is_quiet() {
        return None;
    }
    let mut args = vec!["vm", "--duration", "3s", "--accel", "tcg", "--json"];
    for b in boot {
        args.extend(["--boot-arg", b]);
    }
    args.extend(scenario);
    let (out, others) = others_during(|| vm_output(&args, &k));
    let real = json(&out);
    assert_eq!(real["scheduler"], format!("{kernel_name} (vm)"));
    let sim = schedlab().args(["run", "--duration", "3s", "--sched", sched, "--json"]).args(scenario).output().unwrap();
    let disturbed = host_disturbed(&real, others);
    Some((real, json(&sim), disturbed))
}

/// Asserts `real` within `tolerance` of `sim`, or skips when the guest's
/// run measured its host.
fn check_close(what: &str, real: f64, sim: f64, tolerance: f64, disturbed: &Option<String>) {
    let agrees = (real - sim).abs() <= tolerance;
    if let Some(why) = disturbed.as_ref().filter(|_| !agrees) {
        skip(&format!("{why} ({what}: {real:.1})"));
        return;
    }
    assert!(agrees, "{what}: real {real:.2} against {sim:.2} simulated (tolerance {tolerance:.2})");
}

#[test]
fn cacule_kernel_switches_two_hogs_every_other_tick() {
    // CacULE 6.1's characteristic decision: a waiting hog overtakes the
    // running one only after 6 ms of waiting (its cache and starvation
    // scores against the runner's), so two hogs on a CPU alternate every
    // other 4 ms tick: 125 switches/s, 8 ms runs. The 5.14 model, without
    // those scores, switched at every tick (250/s).
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some((real, sim, disturbed)) =
        real_and_simulated("cacule-6.1", &[], "cacule", &["thread-test", "--param", "threads=2"])
    else {
        return;
    };
    let rate = |r: &serde_json::Value| r["totals"]["context_switches_per_sec"].as_f64().unwrap();
    assert!((120.0..=130.0).contains(&rate(&sim)), "simulated {:.0}/s", rate(&sim));
    check_close("switches/s", rate(&real), rate(&sim), rate(&sim) * 0.10, &disturbed);
}

#[test]
fn tt_kernel_starves_a_yield_loop_beside_a_hog() {
    // TT 6.1: yield_task_fair runs detect_type on the marked vruntime, which
    // makes the yielder BATCH (+19) until it runs again, so its TT vruntime
    // grows ~1.9 ms a yield and the hog wins the HRRN pick: the yielder gets
    // a few percent, in the kernel and in the model (50% before the model
    // ran that detection). The shares themselves are not compared: the
    // yielder's share is its run over the hog's, and the kernel runs the
    // hog for two ticks a turn where the model runs it for one (validate's
    // tt yield-hog rows, unexplained), so an equal share would be two
    // errors cancelling; the real share moves with the emulation's cost of
    // a yield too (2.2-3.2% in quiet boots of one day).
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some((real, sim, disturbed)) = real_and_simulated("tt-6.1", &[], "tt", &["yield-hog"]) else { return };
    let share = |r: &serde_json::Value| {
        r["specs"].as_array().unwrap().iter().find(|s| s["name"] == "yielder").unwrap()["cpu_share_avg_pct"]
            .as_f64()
            .unwrap()
    };
    let starved = 0.5..5.0;
    let (sim_share, real_share) = (share(&sim), share(&real));
    assert!(starved.contains(&sim_share), "simulated yielder share {sim_share:.2}%: TT should starve it, not stop it");
    if let Some(why) = disturbed.filter(|_| !starved.contains(&real_share)) {
        skip(&format!("{why} (yielder {real_share:.1}%)"));
        return;
    }
    assert!(starved.contains(&real_share), "real yielder share {real_share:.2}%: TT should starve it, not stop it");
}

#[test]
fn muqss_kernel_runs_rr_interval_slices_with_a_shared_runqueue() {
    // MuQSS 0.205 booted with rqshare=mc, the model's default: 16 spinners
    // on CPU 0 each run a 6 ms rr_interval slice (hrexpiry), 163 switches/s.
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some((real, sim, disturbed)) =
        real_and_simulated("muqss-5.10", &["rqshare=mc"], "muqss", &["thread-test", "--param", "threads=16"])
    else {
        return;
    };
    let rate = |r: &serde_json::Value| r["totals"]["context_switches_per_sec"].as_f64().unwrap();
    check_close("switches/s", rate(&real), rate(&sim), rate(&sim) * 0.10, &disturbed);
    // The runner corrects MuQSS's CPU accounting: the spinners' times add up
    // to the time there was, not 7-15% more.
    let cpu: f64 = real["tasks"].as_array().unwrap().iter().map(|t| t["cpu_time_ns"].as_f64().unwrap()).sum();
    let duration = real["duration_ns"].as_f64().unwrap();
    assert!(cpu <= duration * 1.02, "task CPU {cpu:.0} ns over {duration:.0} ns of one CPU");
    // The runner read how far CPU 1's niffies stood from CPU 0's at the
    // start (from /proc's task_prio, within about 250 ms either way): in
    // the boots of 2026-11-27, 50-95 ms ahead.
    let extra = real["extra"].as_array().unwrap();
    let ahead = extra.iter().find(|e| e[0] == "niffies_ahead_cpu1_ms").map(|e| e[1].as_f64().unwrap());
    assert!(ahead.is_some_and(|a| a.abs() < 260.0), "niffies read: {ahead:?} in {extra:?}");
}

#[test]
fn sigterm_stops_the_guest_and_removes_its_files() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(k) = kernel("eevdf-6.12") else { return };
    let mut child = start_long_run(&k);
    let pid = child.id();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let status = wait_with_timeout(&mut child, Duration::from_secs(20));
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "exit as killed by SIGTERM:\n{stderr}");
    assert!(stderr.contains("interrupted by SIGTERM"), "{stderr}");
    assert!(temp_dirs_of(pid).is_empty(), "temporary files left: {:?}", temp_dirs_of(pid));
    assert!(processes_of(pid).is_empty(), "QEMU left running: {:?}", processes_of(pid));
}

#[test]
fn sigkill_takes_qemu_along_and_the_next_run_removes_the_files() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(k) = kernel("eevdf-6.12") else { return };
    let mut child = start_long_run(&k);
    let pid = child.id();
    child.kill().unwrap();
    child.wait().unwrap();
    // PR_SET_PDEATHSIG: QEMU dies with its parent.
    let start = Instant::now();
    while !processes_of(pid).is_empty() {
        assert!(start.elapsed() < Duration::from_secs(10), "QEMU outlived SIGKILL: {:?}", processes_of(pid));
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = temp_dirs_of(pid);
    assert_eq!(left.len(), 1, "a SIGKILLed run cannot remove its directory");
    // The sweep runs before the guest boots: a run whose kernel crashed
    // has done it, and its message is what is checked.
    let out = schedlab()
        .args(["vm", "thread-test", "--duration", "100ms", "--accel", "tcg", "--kernel"])
        .arg(&k)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let crashed = stderr.contains("the kernel crashed") || stderr.contains("did not reach its init");
    assert!(out.status.success() || crashed, "{stderr}");
    assert!(stderr.contains(&format!("left by schedlab vm run {pid}, which was killed")), "{stderr}");
    assert!(!left[0].exists(), "{} still there", left[0].display());
}

#[test]
fn bad_kernels_and_simulator_flags_get_one_clear_error() {
    let not_a_kernel = std::env::temp_dir().join(format!("schedlab-vm-test-{}.bin", std::process::id()));
    std::fs::write(&not_a_kernel, vec![0u8; 4096]).unwrap();
    let cases: [(Vec<&str>, &str); 4] = [
        (vec!["--kernel", not_a_kernel.to_str().unwrap()], "is not an x86 bzImage"),
        (vec!["--kernel", "/nonexistent/bzImage"], "cannot open the kernel /nonexistent/bzImage"),
        (vec!["--kernel", not_a_kernel.to_str().unwrap(), "--set", "base_slice_ns=3000000"], "runs with its own"),
        (vec!["--kernel", not_a_kernel.to_str().unwrap(), "--memory", "1T"], "in M or G"),
    ];
    for (args, needle) in cases {
        let out = schedlab().args(["vm", "thread-test", "--duration", "1s"]).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(err.contains(needle), "{args:?}: stderr lacks '{needle}':\n{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // Without QEMU on PATH the error names the package.
    let out = schedlab()
        .args(["vm", "thread-test", "--kernel", not_a_kernel.to_str().unwrap()])
        .env("PATH", "")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("apt-get install qemu-system-x86"));
    let _ = std::fs::remove_file(&not_a_kernel);
}

/// `schedlab validate --quick` on two kernels of different schedulers: every
/// figure within its tolerance or explained by the guest's measured costs.
/// This is the suite that says whether a model still agrees with its
/// kernel; that it can say no is shown by planting a change in the model
/// (eevdf's base slice at 6 ms instead of 0.70 ms x 2) and re-judging the
/// same real runs, which must fail on the figures the slice decides.
#[test]
fn validate_quick_agrees_with_the_eevdf_and_pds_kernels() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(k) = kernel("eevdf-6.12") else { return };
    let idle = schedlab_host::info::idle_cpus(Duration::from_millis(500));
    if idle < 1.5 {
        skip(&format!("the host has {idle:.2} idle CPUs, 1.5 are needed for the guests' tick rates to hold"));
        return;
    }
    let out_dir = std::env::temp_dir().join(format!("schedlab-validate-test-{}", std::process::id()));
    let (out, others) = others_during(|| {
        schedlab()
            .args(["validate", "--quick", "--sched", "eevdf,pds", "--accel", "tcg", "--kernels"])
            .arg(k.parent().unwrap())
            .arg("--out")
            .arg(&out_dir)
            .output()
            .unwrap()
    });
    let page = std::fs::read_to_string(out_dir.join("validation.md")).unwrap_or_default();
    let planted = schedlab()
        .args(["validate", "--quick", "--sched", "eevdf", "--reuse-real", "--set", "base_slice_ns=6000000"])
        .arg("--kernels")
        .arg(k.parent().unwrap())
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    let planted_page = std::fs::read_to_string(out_dir.join("validation.md")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&out_dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // validate waits for a quiet host before each guest and records what
    // it found: a run that had to start on a busy host says nothing.
    let least_idle = page
        .lines()
        .filter_map(|l| l.split("Host CPUs idle before the real runs: at least ").nth(1))
        .filter_map(|rest| rest.split_whitespace().next()?.trim_end_matches('.').parse::<f64>().ok())
        .fold(f64::INFINITY, f64::min);
    if !out.status.success() && least_idle < 1.5 {
        skip(&format!("a guest started with only {least_idle:.2} host CPUs idle, 1.5 are needed:\n{stderr}"));
        return;
    }
    // validate boots a run again when the host took the guest's CPUs or
    // the guest lost ticks, and gives up after three such boots in a row.
    if !out.status.success() && stderr.contains("validate needs a quiet host") {
        skip(&format!("the host disturbed three boots of one run in a row:\n{stderr}"));
        return;
    }
    if !out.status.success() && others > OTHERS_LIMIT {
        skip(&format!("other processes took {others:.2} host CPUs during the guests' runs:\n{stderr}"));
        return;
    }
    assert!(out.status.success(), "validate failed:\n{stderr}\n{page}");
    assert!(page.contains("## eevdf: Linux 6.12.117") && page.contains("## pds: Project C v6.12-r1"), "{page}");
    assert!(!page.contains("unexplained**"), "{page}");
    // The guest's costs were measured and used.
    assert!(
        page.contains("The guest's costs (`schedlab calibrate` in boots of this kernel): context_switch"),
        "{page}"
    );
    let planted_err = String::from_utf8_lossy(&planted.stderr);
    assert!(!planted.status.success(), "a 6 ms base slice passed validation:\n{planted_err}\n{planted_page}");
    assert!(planted_err.contains("eevdf thread-test-16 switches/s"), "{planted_err}");
    assert!(planted_page.contains("--set base_slice_ns=6000000"), "{planted_page}");
}

#[test]
fn validate_refuses_what_it_cannot_check() {
    let out = schedlab().args(["validate", "--sched", "bfs", "--out", "/nonexistent-dir"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bfs has no bootable kernel"), "{out:?}");
    let out = schedlab().args(["validate", "--kernels", "/nonexistent-dir", "--out", "/tmp"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("no guest kernel found in /nonexistent-dir"), "{out:?}");
    let out = schedlab().args(["validate", "--runs", "0"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("give from 1 to 20 runs"), "{out:?}");
}

/// A program of this machine for the real-program tests: CI installs
/// Debian's stress-ng and rt-tests, so there a missing one fails.
fn tool(name: &str) -> Option<PathBuf> {
    let found =
        std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(name)).find(|p| p.is_file()));
    required(found, &format!("{name} is not installed (apt-get install stress-ng rt-tests)"))
}

/// How many times a trace's sched_waking names thread `tid`, and how many
/// of those found it on a CPU (switched in and not yet out).
fn wakings_of(trace: &str, tid: &str) -> (u64, u64) {
    let (prev, next, woken) = (format!("prev_pid={tid} "), format!("next_pid={tid} "), format!(" pid={tid} "));
    let (mut on_cpu, mut wakings, mut while_running) = (false, 0, 0);
    for line in trace.lines() {
        if line.contains("sched_switch:") {
            on_cpu = (on_cpu && !line.contains(&prev)) || line.contains(&next);
        } else if line.contains("sched_waking:") && line.contains(&woken) {
            wakings += 1;
            while_running += u64::from(on_cpu);
        }
    }
    (wakings, while_running)
}

/// The longest time thread `tid` stayed on a CPU after a wakeup in a
/// trace, in us: a SCHED_FIFO cyclictest thread reads the clock and sleeps
/// again within tens of us of the switch-in its timer's wakeup brings,
/// unless its vCPU stopped meanwhile. (Its first run, set-up, follows
/// sched_wakeup_new and is not counted.)
fn longest_on_cpu_us(trace: &str, tid: &str) -> f64 {
    let (prev, next, woken) = (format!("prev_pid={tid} "), format!("next_pid={tid} "), format!(" pid={tid} "));
    let (mut was_woken, mut since, mut longest) = (false, None, 0f64);
    for line in trace.lines() {
        if line.contains("sched_waking:") && line.contains(&woken) {
            was_woken = true;
            continue;
        }
        let Some(at) = line.find(": sched_switch:") else { continue };
        let Some(t) = line[..at].split_whitespace().last().and_then(|t| t.parse::<f64>().ok()) else { continue };
        if line.contains(&prev)
            && let Some(from) = since.take()
        {
            longest = longest.max((t - from) * 1e6);
        }
        if line.contains(&next) && std::mem::take(&mut was_woken) {
            since = Some(t);
        }
    }
    longest
}

/// cyclictest's own summary line of thread 0: (cycles, avg us, max us).
fn cyclictest_summary(stdout: &str) -> Option<(u64, f64, f64)> {
    let line = stdout.lines().find(|l| l.trim_start().starts_with("T: 0"))?;
    let after = |key: &str| -> Option<f64> { line.split(key).nth(1)?.split_whitespace().next()?.parse().ok() };
    Some((after("C:")? as u64, after("Avg:")?, after("Max:")?))
}

/// Real cyclictest beside real stress-ng in the eevdf-6.12 kernel: the
/// report, made from the guest's trace, must agree with what cyclictest
/// itself measured of its thread. cyclictest's latency runs from the time
/// it asked to wake (its timer's softexpires) to its read of the clock
/// after returning to user space; the trace's from the same time to the
/// switch onto the CPU. So the trace's is the smaller, by the return to
/// user space (about 25 us under TCG): cyclictest's average must lie from
/// the trace's (less 1 us: it prints whole us) to 1.25x it plus 50 us, its
/// maximum within 10% plus 100 us of the trace's. Every cycle is one
/// sched_waking of its thread in the kept trace; the report counts those
/// that found it asleep: a cycle whose time had passed before the thread
/// got off its CPU (after a cycle late by nearly the interval, or a vCPU
/// the host stopped, which a CI machine does) wakes it while it runs, and
/// that is not a wakeup that waited (10 of 2,000 in one run here, 25 in
/// one in CI).
#[test]
fn real_cyclictest_beside_stress_ng_agrees_with_its_own_figures() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(k) = kernel("eevdf-6.12") else { return };
    if tool("cyclictest").is_none() || tool("stress-ng").is_none() || !host_is_quiet() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let trace_out = dir.path().join("guest.trace");
    let args = [
        "vm",
        "--cpus",
        "2",
        "--accel",
        "tcg",
        "--json",
        "--trace-out",
        trace_out.to_str().unwrap(),
        "--",
        "cyclictest",
        "-t1",
        "-p80",
        "-i1000",
        "-l2000",
        "-q",
        "+",
        "stress-ng",
        "--cpu",
        "4",
        "--timeout",
        "60",
    ];
    let (out, others) = others_during(|| vm_output(&args, &k));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}:\n{err}", out.status);
    let r = json(&out);
    assert_eq!(r["scheduler"], "eevdf-6.12 (vm)");
    // Under --json the programs' output goes to stderr.
    let (cycles, avg_us, max_us) = cyclictest_summary(&err).unwrap_or_else(|| panic!("no cyclictest summary:\n{err}"));
    assert_eq!(cycles, 2000);
    let specs = r["specs"].as_array().unwrap();
    let spec = |name: &str| specs.iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("no {name}: {specs:?}"));
    assert_eq!(spec("stress-ng-cpu")["tasks"], 4, "stress-ng's four workers, by name");
    // The thread that measured: the cyclictest task with the most wakeups.
    let tasks = r["tasks"].as_array().unwrap();
    let measuring = tasks
        .iter()
        .filter(|t| t["name"].as_str().unwrap().starts_with("cyclictest-"))
        .max_by_key(|t| t["wakeups"].as_u64().unwrap())
        .unwrap();
    let wakeups = measuring["wakeups"].as_u64().unwrap();
    let trace_avg = measuring["wakeup_latency_avg_ns"].as_f64().unwrap() / 1e3;
    let trace_max = measuring["wakeup_latency_max_ns"].as_f64().unwrap() / 1e3;
    let tid = measuring["name"].as_str().unwrap().rsplit('-').next().unwrap();
    let trace = std::fs::read_to_string(&trace_out).unwrap();
    let (wakings, while_running) = wakings_of(&trace, tid);
    // One more or less in each: the whole trace may hold a waking of the
    // thread's first sleep before the report's window or miss its last.
    let agrees = wakings.abs_diff(cycles) <= 1
        && wakeups.abs_diff(wakings - while_running) <= 1
        && (trace_avg - 1.0..=trace_avg * 1.25 + 50.0).contains(&avg_us)
        && (max_us - trace_max).abs() <= 0.1 * max_us + 100.0;
    let figures = format!(
        "cyclictest: {cycles} cycles, avg {avg_us} us, max {max_us} us; trace: {wakings} wakings of its thread, \
         {while_running} while it ran; report: {wakeups} wakeups, avg {trace_avg:.1} us, max {trace_max:.1} us"
    );
    // cyclictest reads its clock after the switch-in the trace times: a
    // vCPU its host stopped between the two adds to cyclictest's maximum
    // alone (11.0 ms against the trace's 6.0 once in CI, with 0.25 host
    // CPUs of others or less on average), and shows as the thread's
    // longest stay on its CPU.
    let on_cpu = longest_on_cpu_us(&trace, tid);
    let stalled = (max_us - trace_max > 0.1 * max_us + 100.0 && on_cpu >= max_us - trace_max)
        .then(|| format!("its thread stayed {on_cpu:.0} us on its CPU in one cycle (a vCPU its host stopped)"));
    if let Some(why) = host_disturbed(&r, others).or(stalled).filter(|_| !agrees) {
        skip(&format!("{why} ({figures})"));
        return;
    }
    assert!(agrees, "{figures}");
    say("MEASURED", &format!("{figures}; its longest stay on a CPU {on_cpu:.0} us"));
}

/// A new task's first wakeup on a guest with an idle vCPU: under TCG here
/// 0.3-1.2 ms (eight boots of stress-ng --cpu 2 on eevdf-6.12); a hundred
/// times that is a vCPU its host did not run.
const STALLED_START_MS: f64 = 100.0;

/// The first check: stress-ng's workers by name with their shares;
/// and a program that never ends is stopped at --timeout with what was
/// measured until then, and the run exits 124 as timeout(1) does.
#[test]
fn stress_ng_workers_by_name_and_a_program_stopped_at_its_timeout() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(k) = kernel("eevdf-6.12") else { return };
    if tool("stress-ng").is_none() || !host_is_quiet() {
        return;
    }
    let (out, others) = others_during(|| {
        vm_output(
            &["vm", "--cpus", "2", "--accel", "tcg", "--json", "--", "stress-ng", "--cpu", "2", "--timeout", "3"],
            &k,
        )
    });
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}:\n{err}", out.status);
    let r = json(&out);
    let workers: Vec<&serde_json::Value> = r["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"].as_str().unwrap().starts_with("stress-ng-cpu-"))
        .collect();
    assert_eq!(workers.len(), 2, "{}", r["tasks"]);
    // Two hogs on two CPUs: each nearly a whole CPU, and the run is
    // stress-ng's 3 s.
    let shares: Vec<f64> = workers.iter().map(|t| t["cpu_share_pct"].as_f64().unwrap()).collect();
    let makespan = r["totals"]["makespan_ns"].as_f64().unwrap() / 1e9;
    let agrees = shares.iter().all(|&s| s >= 90.0) && (3.0..3.6).contains(&makespan);
    let ms = |t: &serde_json::Value, key: &str| t[key].as_f64().unwrap_or(0.0) / 1e6;
    // What a worker's life held besides running and waiting for a CPU:
    // its sleeps (stress-ng's usleep(0) at its start, tens of us here).
    let asleep_ms = |t: &serde_json::Value| {
        let life = ms(t, "cpu_time_ns") * 100.0 / t["cpu_share_pct"].as_f64().unwrap().max(1e-9);
        (life - ms(t, "cpu_time_ns") - ms(t, "run_delay_ns")).max(0.0)
    };
    let extra = |name: &str| {
        r["extra"]
            .as_array()
            .and_then(|e| e.iter().find(|x| x[0] == name))
            .map_or(0.0, |x| x[1].as_f64().unwrap_or(0.0))
    };
    let figures = format!(
        "shares {shares:?}, makespan {makespan:.2} s; workers' CPU, run delay, asleep, longest wakeup, voluntary \
         switches: {}; the guest's other processes {:.1}%, the host's {:.2} CPUs",
        workers
            .iter()
            .map(|t| format!(
                "{:.0}/{:.1}/{:.1}/{:.1} ms/{}",
                ms(t, "cpu_time_ns"),
                ms(t, "run_delay_ns"),
                asleep_ms(t),
                ms(t, "wakeup_latency_max_ns"),
                t["voluntary_switches"]
            ))
            .collect::<Vec<_>>()
            .join(", "),
        extra("other_processes_cpu_pct"),
        extra("host_other_processes_cpus"),
    );
    // A worker wakes once, at its start; on a guest with a CPU to spare
    // that wakeup waits for the vCPU to be run by its host, so one that
    // waited a tenth of a second measured the host, not the kernel.
    let stalled = workers.iter().map(|t| ms(t, "wakeup_latency_max_ns")).fold(0f64, f64::max);
    let host = host_disturbed(&r, others).or_else(|| {
        (stalled > STALLED_START_MS).then(|| format!("a worker's start waited {stalled:.0} ms for its vCPU"))
    });
    // The kernel's part whatever stress-ng did: a runnable worker has a
    // CPU, since there is one for each.
    let waited = workers.iter().any(|t| ms(t, "run_delay_ns") >= 0.05 * ms(t, "cpu_time_ns"));
    // A worker that slept a tenth of the run (once in CI: 501 ms of its
    // 3,149, its run delay 4.5 ms) was not the hog the shares check: what
    // it slept on was stress-ng's, not the scheduler's.
    let slept = workers.iter().map(|t| asleep_ms(t)).fold(0f64, f64::max);
    let not_hogs = (slept > 0.1 * makespan * 1e3).then(|| format!("a worker slept {slept:.0} ms of the run"));
    match host.or(not_hogs.filter(|_| !waited)).filter(|_| waited || !agrees) {
        Some(why) => skip(&format!("{why} ({figures})")),
        None => {
            assert!(!waited && agrees, "{figures}");
            say("MEASURED", &figures);
        }
    }

    let out = vm_output(
        &["vm", "--cpus", "1", "--accel", "tcg", "--timeout", "2s", "--json", "--", "stress-ng", "--cpu", "1"],
        &k,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(124), "{err}");
    assert!(err.contains("stopped at --timeout"), "{err}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the report, though the run failed");
    let secs = r["duration_ns"].as_f64().unwrap() / 1e9;
    assert!((1.9..2.5).contains(&secs), "the report covers the {secs:.2} s until the timeout");
    assert!(r["tasks"].as_array().unwrap().iter().any(|t| t["name"].as_str().unwrap().starts_with("stress-ng-cpu-")));
}

/// hackbench's default socket mode in a guest without networking: its exit
/// status is schedlab's, and the error says why and what to use instead.
#[test]
fn a_program_that_needs_a_network_is_told_why_it_failed() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(k) = kernel("eevdf-6.12") else { return };
    if tool("hackbench").is_none() {
        return;
    }
    let out = vm_output(&["vm", "--cpus", "2", "--accel", "tcg", "--", "hackbench", "-l", "10"], &k);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no networking") && err.contains("hackbench -p"), "{err}");
}

/// What is wrong with a program is said before anything boots.
#[test]
fn bad_programs_get_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("job.py");
    std::fs::write(&script, "#!/opt/no/python9\nprint(1)\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = dir.path().join("data.txt");
    std::fs::write(&data, "x").unwrap();
    let (script, data) = (script.to_str().unwrap(), data.to_str().unwrap());
    let kernel = "/nonexistent/bzImage";
    let cases: [(Vec<&str>, &str); 10] = [
        (vec!["vm", "--kernel", kernel, "--", "no-such-program-schedlab"], "is not on PATH"),
        (vec!["vm", "--kernel", kernel, "--", script], "is a script for /opt/no/python9, which this machine lacks"),
        (vec!["vm", "--kernel", kernel, "--", data], "is not executable"),
        (vec!["vm", "--kernel", kernel, "--include", "/no/such/dir", "--", "ls"], "--include /no/such/dir"),
        (vec!["vm", "--kernel", kernel, "--duration", "2s", "--", "ls"], "a real program runs as it is"),
        (vec!["vm", "--kernel", kernel, "thread-test", "--", "ls"], "not both"),
        (vec!["vm", "--kernel", kernel, "thread-test", "--include", "/tmp"], "a workload's threads read none"),
        (vec!["vm", "--kernel", kernel, "thread-test", "--no-trace", "--trace-out", "x"], "drop one"),
        (vec!["vm", "--kernel", kernel], "give a workload"),
        (vec!["compare", "--", "ls"], "a real program runs in real kernels"),
    ];
    for (args, needle) in cases {
        let out = schedlab().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(err.contains(needle), "{args:?}: stderr lacks '{needle}':\n{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
}

/// sched_ext in the scx-6.12 kernel: scx_bpfland attaches, the report says
/// it ran (its ops name and version, how it ended), and its decision
/// differs from the kernel's own EEVDF in the same kernel. Three hogs on
/// two CPUs: EEVDF keeps two on one CPU and one on the other, switching at
/// most once a tick on the shared one (250/s; the base slice is below the
/// tick) and moving a hog about 7 times a second. bpfland feeds both CPUs
/// from one shared DSQ, so at a tick either CPU may take the waiting hog
/// and the hog it preempted goes to the other: 180-220 migrations/s in
/// validate's boots, 196-224/s in 3 s boots of 2026-12-07, against EEVDF's
/// 7/s (10x is asked). It switches faster too, by less: 277-338/s over
/// validate's boots, those of 2026-12-07 and CI's, against EEVDF's
/// 196-250/s, the closest pair 1.11x (1.05x is asked; 1.15x was asked
/// until a CI run gave 277 against 243). EEVDF's switches are asked to be
/// those of validate's own boots of the experiment
/// (docs/validation-runs.json) within validate's tolerance for a rate.
/// A scheduler that does not exist is refused before anything boots.
#[test]
fn bpfland_attaches_in_the_scx_kernel_and_moves_and_switches_more_than_its_eevdf() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(k) = kernel("scx-6.12") else { return };
    let scx = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/kernels/scx/scx_bpfland");
    if required(scx.is_file().then_some(()), "../shared/kernels/scx/scx_bpfland is not there").is_none() {
        return;
    }
    let out = schedlab()
        .args(["vm", "--kernel"])
        .arg(&k)
        .args(["smp-fairness", "--duration", "1s", "--scx", "nosuch"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("no sched_ext scheduler 'nosuch'") && err.contains("bpfland"),
        "{err}"
    );
    if !host_is_quiet() {
        return;
    }
    let args =
        ["vm", "smp-fairness", "--cpus", "2", "--param", "hogs=3", "--duration", "3s", "--accel", "tcg", "--json"];
    let ((eevdf, bpfland), others) = others_during(|| {
        let eevdf = vm_output(&args, &k);
        let mut with = args.to_vec();
        with.extend(["--scx", "bpfland"]);
        (eevdf, vm_output(&with, &k))
    });
    let (eevdf, bpfland) = (json(&eevdf), json(&bpfland));
    assert_eq!(bpfland["scheduler"], "scx-6.12+bpfland (vm)");
    let notes = bpfland["host"]["notes"].to_string();
    assert!(notes.contains("sched_ext scheduler bpfland_1.1.4") && notes.contains("EXIT: unregistered"), "{notes}");
    let rate = |r: &serde_json::Value| r["totals"]["context_switches_per_sec"].as_f64().unwrap();
    let moves = |r: &serde_json::Value| {
        r["totals"]["migrations"].as_f64().unwrap() / (r["duration_ns"].as_f64().unwrap() / 1e9)
    };
    let (e, b) = (rate(&eevdf), rate(&bpfland));
    let (em, bm) = (moves(&eevdf), moves(&bpfland));
    let (lo, hi) = committed_switches("eevdf", "smp-fairness");
    let agrees = (lo..=hi).contains(&e) && b >= 1.05 * e && bm >= 10.0 * em.max(1.0);
    let disturbed = host_disturbed(&eevdf, others).or_else(|| host_disturbed(&bpfland, others));
    let figures = format!("eevdf {e:.0} switches/s, {em:.0} migrations/s; bpfland {b:.0}/s, {bm:.0}/s");
    if let Some(why) = disturbed.filter(|_| !agrees) {
        skip(&format!("{why} ({figures})"));
        return;
    }
    assert!(
        agrees,
        "{figures}: eevdf's switches {lo:.0}-{hi:.0}/s, bpfland's 1.05x eevdf's or more and its migrations 10x \
         eevdf's or more expected"
    );
    say("MEASURED", &format!("3 hogs on 2 CPUs: {figures}"));
}
