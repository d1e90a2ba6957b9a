//! The `schedlab` binary as a user meets it: the main job works, bad input
//! gets one clear error and a non-zero exit, never a panic.

use std::process::{Command, Output};

/// Says that a test skips, where `cargo test` shows it without
/// --nocapture (the harness captures the print macros, not writes to the
/// stderr handle itself) and tools/test.sh counts it.
fn skip(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {}: {why}", std::thread::current().name().unwrap_or("a test"));
}

fn schedlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schedlab")).args(args).output().expect("the binary runs")
}

fn fails_with(args: &[&str], needle: &str) {
    let out = schedlab(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} should fail");
    assert!(err.contains(needle), "{args:?}: stderr lacks '{needle}':\n{err}");
    assert!(!err.contains("panicked"), "{args:?} panicked:\n{err}");
    // One error line; clap adds its "try '--help'" hint to usage errors.
    let lines = err.lines().filter(|l| !l.trim().is_empty() && !l.starts_with("For more information")).count();
    assert_eq!(lines, 1, "{args:?}: one error line, got:\n{err}");
}

/// Test inputs go under cargo's target/tmp (CARGO_TARGET_TMPDIR), which the
/// build owns: the tests run in parallel and share them, so no one test may
/// remove them, and in /tmp they were left behind by every run.
fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-inputs");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn compare_on_a_builtin_scenario_prints_every_scheduler() {
    let out = schedlab(&["compare", "thread-test", "--duration", "200ms"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for name in ["cfs", "eevdf"] {
        assert!(text.lines().any(|l| l.starts_with(name)), "no row for {name}:\n{text}");
    }
}

#[test]
fn json_reports_carry_the_schema_version() {
    let out = schedlab(&["run", "lat-ctx", "--duration", "50ms", "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["scheduler"], "eevdf");
    assert!(v["totals"]["context_switches"].as_u64().unwrap() > 100);
}

#[test]
fn histograms_print_in_bpftrace_layout() {
    let out = schedlab(&["run", "jitter-under-load", "--duration", "100ms", "--hist"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("@wakeup_latency_ns:"), "{text}");
    assert!(text.lines().any(|l| l.starts_with('[') && l.contains('|') && l.contains('@')), "{text}");
}

#[test]
fn bad_input_gets_one_clear_error() {
    fails_with(&["run", "no-such-workload"], "no file, built-in scenario or tool command named 'no-such-workload'");
    fails_with(
        &["run", "thread-test", "--sched", "bfs2"],
        "unknown scheduler 'bfs2' (did you mean 'bfs'?): choose one of cfs, eevdf",
    );
    fails_with(&["compare", "thread-test", "--sched", "cfs,nope"], "unknown scheduler 'nope'");
    fails_with(&["run", "thread-test", "--set", "bogus_ns=1"], "unknown tunable 'bogus_ns'");
    fails_with(&["run", "thread-test", "--param", "thraeds=4"], "no parameter named 'thraeds'");
    fails_with(&["run", "thread-test", "--cpus", "0"], "schedlab simulates 1 to 4096 CPUs");
    let pinned =
        temp_file("pinned.toml", "[[task]]\nname = \"p\"\naffinity = \"2\"\nprogram = [ { run = \"1ms\" } ]\n");
    fails_with(
        &["run", pinned.to_str().unwrap(), "--cpus", "2"],
        "CPU 2 in '2' does not exist: the machine has CPUs 0-1",
    );
    fails_with(&["run", "thread-test", "--set", "base_slice_ns"], "is not NAME=VALUE");
    fails_with(
        &["run", "thread-test", "--cost", "idle=3us"],
        "--cost: unknown cost 'idle': use one of context_switch, migration, idle_exit",
    );
    fails_with(&["run", "thread-test", "--cost", "idle_exit=3"], "'3' has no time unit: write e.g. idle_exit=8us");
    fails_with(&["run", "thread-test", "--cost", "migration=2h"], "cost migration = 7200.000s is more than a second");
    fails_with(&["host", "thread-test", "--cost", "idle_exit=3us"], "--cost sets what the simulator charges");
    // A trace event's name becomes a path under the tracefs instance.
    fails_with(&["host", "thread-test", "--trace-event", "../../tracing_on"], "is not a trace event's name");
    fails_with(&["vm", "thread-test", "--trace-event", "sched/"], "is not a trace event's name");

    let bad =
        temp_file("bad.toml", "[machine]\ncpus = 2\n\n[[task]]\nname = \"x\"\nprogram = [ { run = \"3 parsecs\" } ]\n");
    fails_with(&["run", bad.to_str().unwrap()], "bad.toml:6: task 'x': unknown time unit");
    // A file's costs pass the checks --cost does: a distribution was taken
    // as its mean before.
    let costs = temp_file(
        "costs.toml",
        "[machine]\ncpus = 1\n[machine.costs]\ntimer_wakeup = \"exp(50us)\"\n\n[[task]]\nname = \"x\"\nprogram = [ { run = \"1ms\" } ]\n",
    );
    fails_with(
        &["run", costs.to_str().unwrap()],
        "costs.toml:4: cost timer_wakeup takes one duration, not exp(50.0us)",
    );
    let broken = temp_file("broken.toml", "[machine\ncpus = 2\n");
    fails_with(&["run", broken.to_str().unwrap()], "broken.toml:1:");
}

#[test]
fn list_names_schedulers_tunables_and_scenarios() {
    let out = schedlab(&["list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in ["eevdf", "base_slice_ns", "sched_latency_ns", "RUN_TO_PARITY", "thread-test", "container-quota"] {
        assert!(text.contains(needle), "list lacks {needle}");
    }
}

#[test]
fn csv_has_one_row_per_run_and_conserves_cpu_time() {
    let out = schedlab(&["compare", "smp-fairness", "--duration", "200ms", "--sched", "cfs,eevdf,bfs", "--csv"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut reader = csv::Reader::from_reader(out.stdout.as_slice());
    let headers = reader.headers().expect("a header row").clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.expect("a well-formed row")).collect();
    let scheds: Vec<&str> = rows.iter().map(|r| &r[col("scheduler")]).collect();
    assert_eq!(scheds, ["cfs", "eevdf", "bfs"]);
    for r in &rows {
        assert_eq!(&r[col("schema_version")], "1");
        assert_eq!(r.len(), headers.len());
        let n = |c: &str| r[col(c)].parse::<f64>().unwrap_or_else(|_| panic!("{c} is not a number: {:?}", &r[col(c)]));
        assert_eq!(n("busy_ns") + n("idle_ns"), n("cpus") * n("duration_ns"), "busy + idle = CPUs x wall time");
        // No task sleeps: the wakeup histogram is empty and its cells too.
        assert_eq!(&r[col("wakeup_count")], "0");
        assert_eq!(&r[col("wakeup_p99_ns")], "");
    }

    let out = schedlab(&["run", "smp-fairness", "--duration", "200ms", "--sched", "cfs", "--csv", "--tasks"]);
    let mut reader = csv::Reader::from_reader(out.stdout.as_slice());
    let share = reader.headers().expect("header").iter().position(|h| h == "cpu_share_pct").expect("share column");
    let shares: Vec<f64> = reader.records().map(|r| r.expect("row")[share].parse().expect("a number")).collect();
    assert_eq!(shares.len(), 10, "one row per hog");
    let total: f64 = shares.iter().sum();
    assert!((total - 800.0).abs() < 1.0, "10 hogs on 8 CPUs share 800% of one CPU, got {total}");
}

#[test]
fn sweep_writes_a_csv_row_per_point_and_scheduler_and_a_plot() {
    let plot = temp_file("sweep.svg", "");
    let out = schedlab(&[
        "sweep",
        "thread-test",
        "--vary",
        "tasks=1,2,...,4",
        "--sched",
        "cfs,bfs",
        "--duration",
        "200ms",
        "--plot",
        plot.to_str().expect("utf-8 path"),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // Piped: no progress bar, only the closing summary lines.
    assert!(!err.contains('\r') && !err.contains("elapsed"), "progress bar drawn into a pipe: {err}");
    let mut reader = csv::Reader::from_reader(out.stdout.as_slice());
    let headers = reader.headers().expect("header").clone();
    assert_eq!(&headers[0], "tasks");
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.expect("row")).collect();
    let got: Vec<(String, String)> = rows.iter().map(|r| (r[0].to_string(), r[3].to_string())).collect();
    let want: Vec<(String, String)> =
        [1, 2, 4].iter().flat_map(|n| ["cfs", "bfs"].map(|s| (n.to_string(), s.to_string()))).collect();
    assert_eq!(got, want);
    // One spinner never switches; two or more on one CPU do.
    let switches = headers.iter().position(|h| h == "context_switches").expect("column");
    assert_eq!(&rows[0][switches], "0");
    assert!(rows[2][switches].parse::<u64>().expect("number") > 0);
    let svg = std::fs::read_to_string(&plot).expect("plot written");
    assert!(svg.starts_with("<svg") && svg.contains("polyline") && svg.contains(">bfs</text>"), "{svg}");

    fails_with(&["sweep", "thread-test", "--vary", "threads=1,x"], "'x' is not an integer");
    fails_with(&["sweep", "thread-test", "--vary", "threads=1,2", "--metric", "nope"], "--metric nope");
    fails_with(&["sweep", "smp-fairness", "--vary", "cpus=0,2"], "above zero");
    // Varying what is a report column already (seed) writes it once.
    let out = schedlab(&["sweep", "thread-test", "--vary", "seed=1,2", "--sched", "cfs", "--duration", "50ms"]);
    let mut reader = csv::Reader::from_reader(out.stdout.as_slice());
    let headers = reader.headers().expect("header").clone();
    assert_eq!(headers.iter().filter(|h| *h == "seed").count(), 1, "{headers:?}");
    let seed = headers.iter().position(|h| h == "seed").expect("column");
    let seeds: Vec<String> = reader.records().map(|r| r.expect("row")[seed].to_string()).collect();
    assert_eq!(seeds, ["1", "2"]);
}

#[test]
fn experiments_write_every_section_with_its_plots_and_are_deterministic() {
    let base = std::env::temp_dir().join(format!("schedlab-experiments-{}", std::process::id()));
    let mut docs = Vec::new();
    for run in ["a", "b"] {
        let dir = base.join(run);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let out = schedlab(&["experiments", "--quick", "--out", dir.to_str().expect("utf-8 path")]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let md = std::fs::read_to_string(dir.join("experiments.md")).expect("experiments.md written");
        for section in [
            "## Do more threads mean more context switches?",
            "## 10 hogs on 8 CPUs",
            "## Wakeup latency under load",
            "## lat_ctx",
            "## Throughput: a parallel build and a frame-parallel encoder",
        ] {
            assert!(md.contains(section), "missing section {section}");
        }
        assert!(md.contains("| cfs-5.12 |") || md.contains("| threads | cfs-5.12 |"), "CFS 5.12 column missing");
        for name in ["cfs", "eevdf", "bfs", "muqss", "bmq", "pds", "bore", "cacule", "tt", "baby"] {
            assert!(md.contains(&format!("| {name} |")), "{name} has no row");
        }
        // Every plot the page shows exists.
        for link in md.split("](experiments/").skip(1) {
            let file = link.split(')').next().expect("closing parenthesis");
            let svg = std::fs::read_to_string(dir.join("experiments").join(file)).expect("linked plot exists");
            assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"), "{file} is not an SVG");
        }
        docs.push(md);
    }
    assert_eq!(docs[0], docs[1], "same command, same page");
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn a_cost_from_the_command_line_changes_the_simulation() {
    // lat_ctx on 2 CPUs: each hop is a wakeup onto the idle CPU, so the
    // rate follows 1 / (work + idle_exit + context_switch).
    let rate = |extra: &[&str]| -> f64 {
        let mut args = vec!["run", "lat-ctx", "--sched", "cfs", "--json", "--duration", "200ms"];
        args.extend_from_slice(extra);
        let out = schedlab(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        r["totals"]["context_switches_per_sec"].as_f64().unwrap()
    };
    let default = rate(&[]);
    let slow = rate(&["--cost", "context_switch=10us", "--cost", "idle_exit=19us"]);
    assert!((default - 125_000.0).abs() < 1_000.0, "default costs: {default}/s");
    assert!((slow - 1e6 / 30.0).abs() < 1_000.0, "1 + 19 + 10 us per hop: {slow}/s");
}

/// Inputs from a fault campaign that overflowed, panicked or were silently
/// misread; each now gets one clear error (or, where the input is fine, a
/// run that does not panic).
#[test]
fn hostile_numbers_and_names_are_refused_not_wrapped() {
    // A u32 tunable given 2^32 used to truncate to 0; i64::MAX panicked in
    // clamp (min > max) once a task slept.
    fails_with(
        &["run", "lat-ctx", "--sched", "cfs", "--set", "nr_migrate=4294967296"],
        "nr_migrate = 4294967296 is out of range for cfs: use 1..=4294967295",
    );
    fails_with(
        &["run", "lat-ctx", "--set", "base_slice_ns=9223372036854775807"],
        "is out of range for eevdf: use 1..=4294967295",
    );
    fails_with(&["run", "thread-test", "--duration", "5"], "'5' has no unit");
    fails_with(&["run", "thread-test", "--duration", "0s"], "a run must last more than zero");
    fails_with(&["run", "thread-test", "--duration", "100h"], "78-hour horizon");
    let escape = temp_file(
        "escape.toml",
        "[machine]\ncpus = 1\n[[group]]\nname = \"../../../tmp/x\"\n[[task]]\nname = \"t\"\ngroup = \"../../../tmp/x\"\nprogram = [ { run = \"1ms\" } ]\n",
    );
    fails_with(&["run", escape.to_str().unwrap()], "it names a cgroup directory");
    let rtapp = |name: &str, body: &str| temp_file(name, &format!("{{ \"tasks\": {{ \"t\": {body} }} }}"));
    let wraps = rtapp("wraps.json", "{ \"run\": 18446744073709552, \"sleep\": 1000 }");
    fails_with(&["run", wraps.to_str().unwrap()], "beyond the simulator's 78-hour horizon");
    let negative = rtapp("negative.json", "{ \"run\": -1000 }");
    fails_with(&["run", negative.to_str().unwrap()], "-1000 is negative");
    let dotdot = rtapp("dotdot.json", "{ \"taskgroup\": \"/a/../../etc\", \"run\": 1000 }");
    fails_with(&["run", dotdot.to_str().unwrap()], "it names a cgroup directory");
    // A trace naming CPU 2^31-1 used to allocate 16 GiB before any check.
    let trace = temp_file(
        "far-cpu.trace",
        "  a-1 [2147483647] d..2. 1.000000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120\n",
    );
    fails_with(&["replay", trace.to_str().unwrap()], "replays machines of up to 4096 CPUs");
}

#[test]
fn a_long_task_name_and_a_closed_pipe_do_not_panic() {
    let name = "x".repeat(70_000);
    let long = temp_file(
        "long-name.toml",
        &format!(
            "duration = \"10ms\"\n[machine]\ncpus = 1\n[[task]]\nname = \"{name}\"\nprogram = [ {{ run = \"1ms\" }} ]\n"
        ),
    );
    let out = schedlab(&["run", long.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // `schedlab ... | head -c 1`: the reader goes away; schedlab ends by
    // SIGPIPE as other tools do, not with a panic (exit 101).
    let mut child = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["compare", "mixed-64", "--duration", "100ms", "--json", "--tasks"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 1];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "ended by SIGPIPE: {:?}", out.status);
}

#[test]
fn record_checks_its_output_first_and_keeps_the_trace_on_sigterm() {
    // -o in a directory that does not exist: refused before the command runs.
    let marker = std::env::temp_dir().join(format!("schedlab-record-ran-{}", std::process::id()));
    let out = schedlab(&["record", "-o", "/nonexistent/dir/x.trace", "--", "touch", marker.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot create /nonexistent/dir/x.trace"));
    assert!(!marker.exists(), "the command ran although its trace could not be written");

    if !std::fs::read_to_string("/proc/mounts").unwrap_or_default().contains(" tracefs ") {
        skip("tracefs is not mounted");
        return;
    }
    let trace = std::env::temp_dir().join(format!("schedlab-record-{}.trace", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["record", "-o", trace.to_str().unwrap(), "--", "sleep", "30"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > std::time::Duration::from_secs(15) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("record did not stop within 15 s of SIGTERM");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    if err.contains("run as root") {
        skip(&err);
        return;
    }
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{err}");
    assert!(err.contains("stopped by SIGTERM"), "{err}");
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(text.contains("sched_switch"), "the trace up to the signal is written");
    // The run's instance is schedlab-PID-nsINODE.
    let prefix = format!("schedlab-{}-", child.id());
    let left: Vec<String> = std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?} left tracing the machine");
    let _ = std::fs::remove_file(&trace);
}

#[test]
fn the_classic_tools_command_lines_are_workloads() {
    // jitterdebugger's experiment in one line: cyclictest beside stress-ng.
    let out = schedlab(&[
        "run",
        "cyclictest --smp -i 1000 + stress-ng --cpu 6",
        "--cpus",
        "2",
        "--duration",
        "500ms",
        "--sched",
        "cfs",
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let spec = |name: &str| r["specs"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap().clone();
    assert_eq!(spec("cyclictest")["tasks"], 2, "--smp: one thread per CPU");
    assert_eq!(spec("stress-ng-cpu")["tasks"], 6);
    // 1 ms timers for 0.5 s on each of 2 threads.
    let wakeups = spec("cyclictest")["wakeup_latency"]["count"].as_u64().unwrap();
    assert!((900..=1000).contains(&wakeups), "{wakeups} cyclictest wakeups");
    // hackbench ends by itself: its figure is the makespan.
    let out = schedlab(&["run", "hackbench -g 1 -f 4 -l 20", "--cpus", "2", "--json"]);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(r["totals"]["makespan_ns"].as_u64().is_some_and(|m| m > 0), "{}", r["totals"]);
    fails_with(&["run", "stress-ng --vm 2"], "'--vm' is not a flag schedlab models");
    fails_with(&["run", "nosuchtool -x"], "or a command of stress-ng, cyclictest");
}

/// A command whose SIGINT is the default one, as a terminal's foreground
/// job has it: a runner that started the tests in the background (SIGINT
/// ignored, which schedlab keeps as it found it) must not change what
/// these tests see.
fn with_default_sigint(mut c: Command) -> Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: signal() is async-signal-safe.
    unsafe {
        c.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    c
}

/// `host` signalled with SIGINT at `after`: its exit status and output.
fn host_interrupted(after: std::time::Duration) -> (std::process::ExitStatus, String, String) {
    let child = with_default_sigint(Command::new(env!("CARGO_BIN_EXE_schedlab")))
        .args(["host", "cgroup-split", "--duration", "3s", "--no-trace"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    (out.status, String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn host_stopped_by_a_signal_says_so_in_its_exit_status() {
    use std::os::unix::process::ExitStatusExt;
    // Before the window opens: nothing measured, no report (it printed an
    // 18446744073 s run and exited 0). A signal that lands before the
    // handlers are installed kills it outright, which says as much.
    let (status, stdout, stderr) = host_interrupted(std::time::Duration::from_millis(10));
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stdout.contains("measured"), "a report of nothing was printed:\n{stdout}");
    match status.code() {
        Some(code) => {
            assert_eq!(code, 128 + libc::SIGINT, "{stderr}");
            assert!(stderr.contains("before the run started: nothing was measured"), "{stderr}");
        }
        None => assert_eq!(status.signal(), Some(libc::SIGINT)),
    }
    // Mid-run: the report up to the signal, and exit 130.
    let (status, stdout, stderr) = host_interrupted(std::time::Duration::from_millis(1500));
    assert_eq!(status.code(), Some(128 + libc::SIGINT), "{stderr}");
    assert!(stderr.contains("the report covers the run up to the signal"), "{stderr}");
    assert!(stdout.contains("interrupted by SIGINT"), "{stdout}");
}

/// Processes whose command line contains `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).replace('\0', " ").contains(needle))
        })
        .collect()
}

#[test]
fn record_stops_everything_the_command_started() {
    if !std::fs::read_to_string("/proc/mounts").unwrap_or_default().contains(" tracefs ") {
        skip("tracefs is not mounted");
        return;
    }
    let trace = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("group-{}.trace", std::process::id()));
    // A shell that ignores the stop signals, and a child that inherits that:
    // only the grace period's SIGKILL to the whole group ends them.
    let naptime = format!("3{}.5", std::process::id() % 1000);
    let script = format!("trap '' INT TERM HUP; sleep {naptime}");
    let child = with_default_sigint(Command::new(env!("CARGO_BIN_EXE_schedlab")))
        .args(["record", "-o", trace.to_str().unwrap(), "--", "sh", "-c", &script])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let sleeping = processes_with(&format!("sleep {naptime}"));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let _ = std::fs::remove_file(&trace);
    if err.contains("run as root") {
        skip(&err);
        return;
    }
    assert!(!sleeping.is_empty(), "the command's child never started: {err}");
    assert_eq!(out.status.code(), Some(128 + libc::SIGINT), "{err}");
    assert!(err.contains("stopped by SIGINT"), "{err}");
    let left = processes_with(&format!("sleep {naptime}"));
    assert!(left.is_empty(), "record left the command's child running: {left:?}");
}

#[test]
fn run_writes_an_html_page_of_its_one_scheduler() {
    let page = temp_file("run.html", "");
    let out = schedlab(&[
        "run",
        "sleeper-hog",
        "--sched",
        "bmq",
        "--duration",
        "1s",
        "--html",
        page.to_str().expect("utf-8"),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(&page).expect("page written");
    assert!(html.contains("bmq on sleeper-hog: 2 CPUs, HZ=250, 1.000s simulated, seed 1"), "heading missing");
    assert!(html.contains("<svg") && html.contains("CPU timeline"), "plots missing");
    // The text report is printed as without --html.
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("bmq on sleeper-hog"));
    fails_with(
        &["run", "sleeper-hog", "--html", "/nonexistent-dir/x.html"],
        "--html /nonexistent-dir/x.html: the directory /nonexistent-dir does not exist",
    );
}

#[test]
fn help_names_what_each_command_takes_and_writes() {
    let replay = String::from_utf8_lossy(&schedlab(&["replay", "--help"]).stdout).to_string();
    assert!(replay.contains("Usage: schedlab replay [OPTIONS] <TRACE>"), "{replay}");
    assert!(replay.contains("<TRACE>  The recorded trace: tracefs text"), "{replay}");
    let top = String::from_utf8_lossy(&schedlab(&["--help"]).stdout).to_string();
    assert!(!top.contains("write docs/experiments.md"), "{top}");
    assert!(top.contains("write experiments.md with its plots (in ./schedlab-experiments, or --out)"), "{top}");
    // A Chrome/Perfetto JSON trace is named, with what replay takes instead.
    let json = temp_file("trace.json", "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n]}\n");
    fails_with(&["replay", json.to_str().expect("utf-8")], "this is a Chrome/Perfetto JSON trace");
}

#[test]
fn list_shows_each_scenarios_parameters() {
    let list = String::from_utf8_lossy(&schedlab(&["list"]).stdout).to_string();
    let after = |name: &str| {
        list.lines().skip_while(|l| !l.starts_with(&format!("  {name} "))).nth(1).unwrap_or("").to_string()
    };
    assert!(after("thread-test").trim() == "parameters (--param NAME=N), by default: threads=8", "{list}");
    assert!(after("make-j").contains("jobs=8"), "{list}");
}

#[test]
fn a_program_on_this_machine_counts_the_processes_it_forks() {
    if !std::fs::read_to_string("/proc/mounts").unwrap_or_default().contains(" tracefs ") {
        skip("tracefs is not mounted");
        return;
    }
    // Three forked shells that spin, as hackbench's and make's children
    // do: the recording follows the forks, so their CPU is the program's,
    // not "other processes".
    let script = "for k in 1 2 3; do (i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done) & done; wait";
    let out = schedlab(&["compare", "--host", "--json", "--", "sh", "-c", script]);
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("run as root") {
        skip(&err);
        return;
    }
    assert!(out.status.success(), "{err}");
    let reports: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let tasks = reports[0]["tasks"].as_array().expect("tasks");
    let spinners: Vec<u64> =
        tasks.iter().skip(1).filter_map(|t| t["cpu_time_ns"].as_u64()).filter(|&ns| ns > 10_000_000).collect();
    assert_eq!(tasks.len(), 4, "the shell and its three children: {tasks:#?}");
    assert_eq!(spinners.len(), 3, "each child spun for its own CPU time: {tasks:#?}");
    assert_eq!(reports[0]["specs"][0]["tasks"], 4, "grouped under the shell's process: {}", reports[0]["specs"]);
}

#[test]
fn replay_reads_a_perf_data_file_through_perf_script() {
    let perf_runs = Command::new("perf").arg("version").output().is_ok_and(|o| o.status.success());
    if !perf_runs {
        // CI installs Debian's linux-perf (.ci/run).
        assert!(std::env::var_os("CI").is_none(), "CI must run the perf.data test, but perf is not installed");
        skip("perf is not installed (apt install linux-perf)");
        return;
    }
    let data =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("replay-{}.perf.data", std::process::id()));
    let events =
        "sched:sched_switch,sched:sched_waking,sched:sched_wakeup,sched:sched_wakeup_new,sched:sched_migrate_task";
    // Two shells that spin, one a child of the other; they print their
    // PIDs, since the whole machine is recorded (another `sh` may spin
    // beside them).
    let script = "(i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done) & echo $$ $!; i=0; \
                  while [ $i -lt 20000 ]; do i=$((i+1)); done; wait";
    let rec = Command::new("perf")
        .args(["record", "-q", "-a", "-e", events, "-o", data.to_str().unwrap(), "--", "sh", "-c", script])
        .output()
        .unwrap();
    if !rec.status.success() {
        let err = String::from_utf8_lossy(&rec.stderr).to_string();
        let _ = std::fs::remove_file(&data);
        // perf_event_paranoid or a container without the tracepoints.
        assert!(std::env::var_os("CI").is_none(), "CI must run the perf.data test, but perf record failed: {err}");
        skip(&format!("perf record cannot record sched tracepoints here: {err}"));
        return;
    }
    let out = schedlab(&["replay", data.to_str().unwrap(), "--sched", "eevdf", "--json"]);
    let _ = std::fs::remove_file(&data);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let reports: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(reports[0]["source"], "recorded", "the recording's own row first");
    let ours: Vec<String> =
        String::from_utf8_lossy(&rec.stdout).split_whitespace().map(|p| format!("sh-{p}")).collect();
    assert_eq!(ours.len(), 2, "the script printed its two PIDs: {}", String::from_utf8_lossy(&rec.stdout));
    let shells: Vec<u64> = reports[0]["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .filter(|t| t["name"].as_str().is_some_and(|n| ours.iter().any(|o| o == n)))
        .filter_map(|t| t["cpu_time_ns"].as_u64())
        .filter(|&ns| ns > 5_000_000)
        .collect();
    assert_eq!(shells.len(), 2, "both spinning shells, with their CPU time: {}", reports[0]["tasks"]);
    assert_eq!(reports[1]["scheduler"], "eevdf");
}

#[test]
fn a_binary_file_that_is_not_a_trace_is_named_with_what_replay_takes() {
    let elf = temp_file("not-a-trace.bin", "");
    std::fs::write(&elf, b"\x7fELF\x02\x01\x01\0\0\0\0\0").unwrap();
    fails_with(&["replay", elf.to_str().unwrap()], "is a binary file, not a trace replay reads");
    let pf = temp_file("x.perfetto-trace", "");
    std::fs::write(&pf, b"\x0a\x10\x00\x01\x02").unwrap();
    fails_with(&["replay", pf.to_str().unwrap()], "traceconv systrace");
}

#[test]
fn a_trace_whose_task_names_are_not_utf8_replays_and_a_workload_says_where() {
    // prctl(PR_SET_NAME) takes any bytes, and tracefs prints them as they
    // are: one such task must not cost the trace.
    let mut t = b"# tracer: nop\n".to_vec();
    for (ts, (prev, prev_pid, state), (next, next_pid)) in [
        ("1.000000", (&b"swapper/0"[..], 0, "R"), (&b"sp\xffn"[..], 10)),
        ("1.004000", (&b"sp\xffn"[..], 10, "S"), (&b"swapper/0"[..], 0)),
        ("1.006000", (&b"swapper/0"[..], 0, "R"), (&b"sp\xffn"[..], 10)),
        ("1.010000", (&b"sp\xffn"[..], 10, "R"), (&b"swapper/0"[..], 0)),
    ] {
        t.extend_from_slice(b"  x-1 [000] d..2. ");
        t.extend_from_slice(format!("{ts}: sched_switch: prev_comm=").as_bytes());
        t.extend_from_slice(prev);
        t.extend_from_slice(format!(" prev_pid={prev_pid} prev_prio=120 prev_state={state} ==> next_comm=").as_bytes());
        t.extend_from_slice(next);
        t.extend_from_slice(format!(" next_pid={next_pid} next_prio=120\n").as_bytes());
        if ts == "1.004000" {
            t.extend_from_slice(
                b"  <idle>-0 [000] d.h2. 1.005990: sched_waking: comm=sp\xffn pid=10 prio=120 target_cpu=000\n",
            );
        }
    }
    let trace = temp_file("not-utf8.trace", "");
    std::fs::write(&trace, &t).unwrap();
    let out = schedlab(&["replay", trace.to_str().unwrap(), "--sched", "eevdf", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reports: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(reports[0]["tasks"][0]["name"], "sp\u{fffd}n-10", "named lossily: {}", reports[0]["tasks"]);
    // A workload file is text the user wrote: refused with where it breaks.
    let toml = temp_file("not-utf8.toml", "");
    std::fs::write(&toml, b"name = \"x\"\nduration = \"1s\"\ndescription = \"\xff\"\n").unwrap();
    fails_with(&["run", toml.to_str().unwrap()], "is not UTF-8 text (line 3, byte");
}

#[test]
fn a_misspelt_name_gets_the_nearest_one() {
    fails_with(&["run", "sleeper-hog", "--sched", "eevfd"], "unknown scheduler 'eevfd' (did you mean 'eevdf'?)");
    fails_with(&["run", "smp-fairnes"], "named 'smp-fairnes' (did you mean 'smp-fairness'?)");
    fails_with(
        &["run", "sleeper-hog", "--sched", "eevdf", "--set", "base_slice=3000000"],
        "unknown tunable 'base_slice' for eevdf (did you mean 'base_slice_ns'?): known are",
    );
    // A trace written by a command that fails leaves nothing behind.
    let out = temp_file("kept.trace", "kept");
    fails_with(&["trace", "sleeper-hog", "--sched", "nosuch", "-o", out.to_str().unwrap()], "unknown scheduler");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "kept", "the old file is untouched");
    fails_with(&["trace", "sleeper-hog", "--sched", "cfs", "-o", "/dev/full"], "/dev/full");
}

#[test]
fn a_real_kernels_help_offers_no_simulator_flags_and_a_seed_series_counts_by_one() {
    let vm = String::from_utf8_lossy(&schedlab(&["vm", "--help"]).stdout).to_string();
    assert!(vm.contains("--kernel") && !vm.contains("--set") && !vm.contains("--cost"), "{vm}");
    let host = String::from_utf8_lossy(&schedlab(&["host", "--help"]).stdout).to_string();
    assert!(host.contains("--duration") && !host.contains("--cost"), "{host}");
    let out = schedlab(&["sweep", "sleeper-hog", "--vary", "seed=1,2,...,16", "--sched", "cfs", "--duration", "100ms"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = String::from_utf8_lossy(&out.stdout).lines().count();
    assert_eq!(rows, 1 + 16, "a header and 16 seeds");
}

#[test]
fn an_output_that_cannot_be_written_is_refused_before_the_work() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let d = dir.to_str().unwrap();
    fails_with(&["compare", "sleeper-hog", "--html", d], "--html");
    fails_with(&["run", "sleeper-hog", "--html", "/nonexistent-dir/x.html"], "does not exist");
    // The check's own message: refused before any of the 200 runs.
    fails_with(&["sweep", "sleeper-hog", "--vary", "seed=1,2,...,200", "-o", d], "is a directory: give a file's path");
}

#[test]
fn a_killed_recorder_takes_its_command_along() {
    if !std::fs::read_to_string("/proc/mounts").unwrap_or_default().contains(" tracefs ") {
        skip("tracefs is not mounted");
        return;
    }
    let trace = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("killed-{}.trace", std::process::id()));
    let naptime = format!("4{}.5", std::process::id() % 1000);
    let mut child = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["record", "-o", trace.to_str().unwrap(), "--", "sleep", &naptime])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut started = false;
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        if !processes_with(&format!("sleep {naptime}")).is_empty() {
            started = true;
            break;
        }
    }
    child.kill().unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("run as root") {
        skip(&err);
        return;
    }
    assert!(started, "the command never started: {err}");
    let mut left = processes_with(&format!("sleep {naptime}"));
    for _ in 0..20 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        left = processes_with(&format!("sleep {naptime}"));
    }
    assert!(left.is_empty(), "SIGKILL of record left its command running: {left:?}");
    assert!(!trace.exists(), "no trace is claimed for a killed recording");
}

#[test]
fn a_signal_ignored_at_start_stays_ignored() {
    use std::os::unix::process::CommandExt;
    // `nohup schedlab host ...`: the terminal's SIGHUP must not end it.
    let mut c = Command::new(env!("CARGO_BIN_EXE_schedlab"));
    c.args(["host", "sleeper-hog", "--duration", "1s", "--no-trace", "--no-groups"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // SAFETY: signal() is async-signal-safe.
    unsafe {
        c.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let child = c.spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "SIGHUP was ignored at start: {err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("interrupted"), "{err}");
}

#[test]
fn a_perfetto_protobuf_trace_decodes_with_perfettos_own_protos() {
    // Perfetto's descriptors from its PyPI package (CI installs it): an
    // independent reader of the bytes schedlab writes.
    if !perfetto_protos() {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let proto = dir.join(format!("pf-{}.perfetto-trace", std::process::id()));
    let text = dir.join(format!("pf-{}.trace", std::process::id()));
    for out in [&proto, &text] {
        let o =
            schedlab(&["trace", "sleeper-hog", "--sched", "cfs", "--duration", "200ms", "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let script = "import sys\nfrom perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb\n\
        t = pb.Trace(); t.ParseFromString(open(sys.argv[1], 'rb').read())\n\
        names = {th.tid: th.name for p in t.packet if p.HasField('process_tree') for th in p.process_tree.threads}\n\
        print('threads', sorted(names.items()))\n\
        for p in t.packet:\n\
        \x20   for e in p.ftrace_events.event:\n\
        \x20       if e.WhichOneof('event') == 'sched_switch':\n\
        \x20           s = e.sched_switch\n\
        \x20           print(p.ftrace_events.cpu, e.timestamp // 1000, s.prev_pid, s.next_pid)\n";
    let out = Command::new("python3").args(["-c", script, proto.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let decoded = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(decoded.starts_with("threads [(1000, 'sleeper'), (1001, 'hog')]"), "{decoded}");
    // The same switches, in the same order, as the ftrace text of the run.
    let field =
        |l: &str, k: &str| l.split(k).nth(1).and_then(|r| r.split_whitespace().next()).unwrap_or("").to_string();
    let from_text: Vec<String> = std::fs::read_to_string(&text)
        .unwrap()
        .lines()
        .filter(|l| l.contains("sched_switch:"))
        .map(|l| {
            let cpu: u32 = field(l, "[").trim_end_matches(']').parse().unwrap();
            let ts = l.split(": sched_switch").next().unwrap().rsplit(' ').next().unwrap().replace('.', "");
            format!("{cpu} {} {} {}", ts.trim_start_matches('0'), field(l, "prev_pid="), field(l, "next_pid="))
        })
        .collect();
    let from_proto: Vec<String> = decoded
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            format!("{} {} {} {}", f[0], f[1], f[2], f[3])
        })
        .collect();
    let _ = (std::fs::remove_file(&proto), std::fs::remove_file(&text));
    assert!(from_text.len() > 20, "{from_text:?}");
    assert_eq!(from_proto, from_text);
}

#[test]
fn replay_reads_a_perfetto_trace_of_compact_sched_bundles() {
    if !perfetto_protos() {
        return;
    }
    // What Perfetto's traced records by default: compact_sched, written by
    // Perfetto's own protos. CPU 0 runs A 1-5 ms, B 5-9 ms (A preempted),
    // A 9-13 ms (B asleep), then idles; B is woken at 12 ms.
    let trace = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cs-{}.pftrace", std::process::id()));
    let script = "import sys\nfrom perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb\n\
        t = pb.Trace(); p = t.packet.add(); p.trusted_packet_sequence_id = 1\n\
        b = p.ftrace_events; b.cpu = 0; c = b.compact_sched\n\
        c.intern_table.extend(['A', 'B', 'swapper/0'])\n\
        base = 5_000_000_000; ms = 1_000_000\n\
        ts = [base + 1*ms, base + 5*ms, base + 9*ms, base + 13*ms]\n\
        c.switch_timestamp.extend([ts[0]] + [ts[i] - ts[i-1] for i in range(1, 4)])\n\
        c.switch_prev_state.extend([0, 256, 1, 1])\n\
        c.switch_next_pid.extend([10, 11, 10, 0])\n\
        c.switch_next_prio.extend([120, 120, 120, 120])\n\
        c.switch_next_comm_index.extend([0, 1, 0, 2])\n\
        c.waking_timestamp.append(base + 12*ms); c.waking_pid.append(11); c.waking_target_cpu.append(0)\n\
        c.waking_prio.append(120); c.waking_comm_index.append(1); c.waking_common_flags.append(1)\n\
        open(sys.argv[1], 'wb').write(t.SerializeToString())\n";
    let out = Command::new("python3").args(["-c", script, trace.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = schedlab(&["replay", trace.to_str().unwrap(), "--sched", "cfs", "--json"]);
    let _ = std::fs::remove_file(&trace);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reports: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let cpu = |name: &str| {
        reports[0]["tasks"].as_array().unwrap().iter().find(|t| t["name"] == name).map(|t| t["cpu_time_ns"].clone())
    };
    assert_eq!(cpu("A-10"), Some(serde_json::json!(8_000_000)), "{}", reports[0]["tasks"]);
    assert_eq!(cpu("B-11"), Some(serde_json::json!(4_000_000)), "{}", reports[0]["tasks"]);
    assert_eq!(reports[0]["totals"]["involuntary_switches"], 1, "A's preemption (R+), from its state bits");
}

/// Whether python3 has Perfetto's published protos (its PyPI package, which
/// CI installs); says why a test skips when not, and fails under CI.
fn perfetto_protos() -> bool {
    let probe =
        Command::new("python3").args(["-c", "from perfetto.protos.perfetto.trace import perfetto_trace_pb2"]).output();
    if probe.as_ref().is_ok_and(|o| o.status.success()) {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "CI must run the Perfetto tests: pip install perfetto");
    skip("python3's perfetto package is not installed (pip install perfetto)");
    false
}

/// Whether Debian's trace-cmd runs here (CI installs it); says why a test
/// skips when not, and fails under CI.
fn trace_cmd() -> bool {
    // It exits 255 on --version; that it starts is what counts.
    if Command::new("trace-cmd").arg("--version").output().is_ok() {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "CI must run the trace.dat tests: apt install trace-cmd");
    skip("trace-cmd is not installed (apt install trace-cmd)");
    false
}

#[test]
fn compare_says_which_schedulers_ignored_the_groups() {
    let out = schedlab(&["compare", "group-isolation", "--sched", "eevdf,bmq", "--duration", "200ms"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("absent: cgroups (cpu.weight, cpu.max): bmq has no group scheduling"), "{text}");
    assert!(!text.contains("eevdf has no group scheduling"), "{text}");
}

#[test]
fn a_tunable_can_be_set_for_one_scheduler_of_a_compare() {
    let p99 = |extra: &[&str]| -> Vec<u64> {
        let mut args = vec!["compare", "sleeper-hog", "--sched", "cfs,eevdf", "--duration", "1s", "--json"];
        args.extend_from_slice(extra);
        let out = schedlab(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        r.as_array().unwrap().iter().map(|x| x["wakeup_latency"]["p99"].as_u64().unwrap()).collect()
    };
    let plain = p99(&[]);
    let scoped = p99(&["--set", "eevdf:base_slice_ns=10000000"]);
    assert_eq!(scoped[0], plain[0], "cfs keeps its own");
    assert!(scoped[1] > plain[1], "eevdf's longer slice delays the sleeper: {plain:?} -> {scoped:?}");
    fails_with(
        &["compare", "sleeper-hog", "--sched", "cfs,eevdf", "--set", "bmq:x=1"],
        "bmq is not among the schedulers run",
    );
    // One scheduler's commands read the scope as compare does.
    fails_with(&["run", "sleeper-hog", "--sched", "cfs", "--set", "eevdf:base_slice_ns=1"], "eevdf is not among");
    let trace = temp_file("scoped.trace", "");
    let out = schedlab(&[
        "trace",
        "sleeper-hog",
        "--sched",
        "eevdf",
        "--set",
        "eevdf:base_slice_ns=10000000",
        "--duration",
        "100ms",
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn host_keeps_its_trace_where_trace_out_says_and_counts_run_delay_from_it() {
    if !std::fs::read_to_string("/proc/mounts").unwrap_or_default().contains(" tracefs ") {
        skip("tracefs is not mounted");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("host.trace");
    let out = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["host", "sleeper-hog", "--duration", "300ms", "--no-groups", "--json", "--trace-out"])
        .arg(&out_file)
        .args(["--trace-event", "sched_stat_runtime"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("run as root") {
        skip(&err);
        return;
    }
    assert!(out.status.success(), "{err}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The report's switches were counted from the trace kept: it holds
    // every one of them.
    let trace = std::fs::read_to_string(&out_file).unwrap();
    let ours = trace.lines().filter(|l| l.contains("sched_switch: prev_comm=sl-")).count() as u64;
    let switches = r["totals"]["context_switches"].as_u64().unwrap();
    assert!(ours >= switches && switches > 0, "{ours} of the workload's switches in the trace, {switches} reported");
    // The sleeper and the hog share one CPU: the hog waits while the
    // sleeper runs, which the trace counts as its run delay.
    assert!(r["absent"].as_array().unwrap().iter().all(|a| !a.as_str().unwrap().contains("run_delay")), "{r}");
    let hog = r["tasks"].as_array().unwrap().iter().find(|t| t["name"] == "hog").unwrap();
    assert!(hog["run_delay_ns"].as_u64().unwrap() > 0, "{hog}");
    // The event asked for is in the trace beside the sched events (CFS's
    // update_curr of the hog), and one the kernel lacks is an error.
    assert!(trace.lines().any(|l| l.contains("sched_stat_runtime: comm=sl-hog")), "no sched_stat_runtime of the hog");
    let out = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["host", "sleeper-hog", "--duration", "100ms", "--trace-event", "sched/no_such_event"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("this kernel has no trace event sched/no_such_event"), "{err}");
    // --no-trace and --trace-out contradict each other.
    let out = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["host", "sleeper-hog", "--no-trace", "--trace-out"])
        .arg(&out_file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("drop one"), "{err}");
}

#[test]
fn a_run_in_another_pid_namespace_does_not_claim_a_trace_it_could_not_read() {
    if !std::fs::read_to_string("/proc/mounts").unwrap_or_default().contains(" tracefs ") {
        skip("tracefs is not mounted");
        return;
    }
    let out = Command::new("unshare")
        .args(["-pf", "--mount-proc", env!("CARGO_BIN_EXE_schedlab")])
        .args(["host", "sleeper-hog", "--duration", "300ms", "--no-groups"])
        .output();
    let out = match out {
        Ok(o) if !String::from_utf8_lossy(&o.stderr).contains("unshare failed") => o,
        Ok(o) => {
            skip(&format!("unshare cannot make a PID namespace here: {}", String::from_utf8_lossy(&o.stderr).trim()));
            return;
        }
        Err(e) => {
            skip(&format!("unshare cannot run: {e}"));
            return;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("run as root") {
        skip(&err);
        return;
    }
    assert!(out.status.success(), "{err}");
    // tracefs prints the kernel's PIDs, not the namespace's: the figures
    // come from getrusage, and the report says so.
    assert!(text.contains("tracing: none: the tracefs instance"), "{text}");
    assert!(text.contains("context switches"), "{text}");
}

/// docs/validation.md is what its committed real runs give: `validate
/// --reuse-real` judges the page again from docs/validation-runs.json alone
/// (no kernel, no boot: --kernels names no directory), and a page edited
/// by hand, a digest out of step with it, or a model changed without the
/// page written again shows as a difference here.
#[test]
fn the_committed_validation_page_is_what_its_committed_runs_give() {
    let (dir, out) = validate_committed(&[], &["validation.md", "validation-runs.json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    let page = std::fs::read_to_string(dir.path().join("validation.md")).unwrap();
    let committed = std::fs::read_to_string(docs.join("validation.md")).unwrap();
    if page != committed {
        let first = page.lines().zip(committed.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "docs/validation.md differs from the page its runs give at line {}:\n  committed: {}\n  judged now: {}\n\
             (write it again: schedlab validate --reuse-real --out docs)\n{err}",
            first + 1,
            committed.lines().nth(first).unwrap_or("(end)"),
            page.lines().nth(first).unwrap_or("(end)")
        );
    }
    // The digest written again is the committed one.
    let digest = std::fs::read_to_string(dir.path().join("validation-runs.json")).unwrap();
    assert!(digest == std::fs::read_to_string(docs.join("validation-runs.json")).unwrap());
}

#[test]
fn validate_writes_each_simulation_with_its_kernels_costs_as_a_trace() {
    let traces = tempfile::tempdir().unwrap();
    let dir = traces.path().join("sims");
    let (_out_dir, out) = validate_committed(
        &["--sched", "cfs", "--trace-sims", dir.to_str().unwrap()],
        &["validation.md", "validation-runs.json"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    // Three seeds of each experiment, the decision counts' included, and
    // only the kernel's own model (not the others held against it).
    assert!(names.iter().all(|n| n.starts_with("cfs-") && n.ends_with(".txt")), "{names:?}");
    for exp in ["fork-burst", "fork-burst-4", "make-j4", "lat-ctx"] {
        for seed in 1..=3 {
            assert!(names.contains(&format!("cfs-{exp}-{seed}.txt")), "no cfs-{exp}-{seed}.txt in {names:?}");
        }
    }
    // ftrace text as tracefs prints it: the children's forks, their
    // switches and the balancer's moves, on the guest's 4 CPUs for
    // fork-burst-4.
    let text = std::fs::read_to_string(dir.join("cfs-fork-burst-4-1.txt")).unwrap();
    assert!(text.starts_with("# tracer: nop"), "{}", &text[..200.min(text.len())]);
    assert_eq!(text.matches("sched_wakeup_new: comm=child").count(), 200);
    assert!(text.contains("sched_migrate_task: comm=child"));
    assert!(text.contains("[003]"));
}

/// `validate --reuse-real ARGS` in a temporary directory holding copies of
/// `docs_files` of docs/, with no kernel (--kernels names no directory):
/// the directory and what validate did, which must not have panicked or
/// booted anything.
fn validate_committed(args: &[&str], docs_files: &[&str]) -> (tempfile::TempDir, Output) {
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    let dir = tempfile::tempdir().unwrap();
    for file in docs_files {
        std::fs::copy(docs.join(file), dir.path().join(file)).unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["validate", "--reuse-real", "--kernels", "/nonexistent-kernels"])
        .args(args)
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked") && !err.contains("booting"), "{err}");
    assert!(!err.contains(" run 1/"), "validate booted a kernel instead of reading the digest:\n{err}");
    (dir, out)
}

/// What `validate` fails on, one item a line.
fn validate_failures(args: &[&str]) -> std::collections::BTreeSet<String> {
    let (_dir, out) = validate_committed(args, &["validation-runs.json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let fails: std::collections::BTreeSet<String> =
        err.lines().filter_map(|l| l.strip_prefix("schedlab: validate: fails: ")).map(str::to_string).collect();
    assert_eq!(out.status.success(), fails.is_empty(), "{err}");
    fails
}

/// Each model's characteristic knob, changed in its simulations only (the
/// kernels' runs are the committed ones): `validate --quick` must fail on
/// something it did not fail on before, or it cannot tell that model's
/// scheduler from one tuned differently. The values are changes a tuner
/// makes: a longer base slice still below the tick, a coarser granularity,
/// a doubled rr_interval or burst penalty, a halved interactivity factor,
/// BMQ's older boost range, PDS's 4 ms deadline unit, a 5 ms bpfland slice.
#[test]
fn validate_quick_fails_on_a_planted_change_of_each_models_knob() {
    const PLANTS: &[(&str, &str)] = &[
        ("cfs", "cfs:sched_min_granularity_ns=6000000"),
        ("eevdf", "eevdf:base_slice_ns=3900000"),
        ("bore", "bore:sched_burst_penalty_scale=3072"),
        ("muqss", "muqss:rr_interval=12"),
        ("bmq", "bmq:max_priority_adj=7"),
        ("pds", "pds:deadline_shift=22"),
        ("cacule", "cacule:sched_interactivity_factor=32768"),
        ("tt", "tt:sched_tt_cpu_bound_prio=0"),
        ("bpfland", "bpfland:slice_us=5000"),
    ];
    for (sched, plant) in PLANTS {
        let baseline = validate_failures(&["--quick", "--sched", sched]);
        let planted = validate_failures(&["--quick", "--sched", sched, "--set", plant]);
        let new: Vec<&String> = planted.difference(&baseline).collect();
        assert!(!new.is_empty(), "--set {plant} passed where the model without it passes:\n{planted:#?}");
    }
}

#[test]
fn leftovers_removed_are_said_even_when_the_run_then_fails() {
    // A vm run's temporary directory, marked as a killed run's (PID
    // 4000002 is above any pid_max): `record` sweeps it first, then fails
    // on its command; the removal must be said all the same.
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("sweep-{}", std::process::id()));
    let ns = std::fs::read_link("/proc/self/ns/pid").unwrap().to_string_lossy().into_owned();
    let ns: String = ns.chars().filter(char::is_ascii_digit).collect();
    let left = tmp.join(format!("schedlab-vm-4000002-ns{ns}-x1"));
    std::fs::create_dir_all(&left).unwrap();
    std::fs::write(left.join(".schedlab-vm-run"), "4000002").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["record", "-o", tmp.join("x.trace").to_str().unwrap(), "--", "/nonexistent/program"])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("left by schedlab vm run 4000002, which was killed"), "{err}");
    assert!(!left.exists());
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn inputs_too_big_for_their_run_are_refused_before_reading() {
    // Over the workload bound: refused by size, whatever memory is free.
    let huge = temp_file("huge.toml", &format!("# {}\nname = \"x\"\n", "x".repeat(17 << 20)));
    fails_with(&["run", huge.to_str().unwrap()], "schedlab reads workload files of at most 16 MiB");
    let _ = std::fs::remove_file(&huge);
    // Within it, but under `ulimit -v` its run does not fit: one message
    // that names the bound, not an aborted allocation.
    let mut toml = String::from("name = \"big\"\nduration = \"10ms\"\n");
    for i in 0.. {
        if toml.len() > 10 << 20 {
            break;
        }
        toml.push_str(&format!("[[task]]\nname = \"t{i}\"\nprogram = [ {{ run = \"1ms\" }} ]\n"));
    }
    let big = temp_file("big-10m.toml", &toml);
    let out = Command::new("bash")
        .args(["-c", "ulimit -v 600000 && exec \"$0\" run \"$1\""])
        .arg(env!("CARGO_BIN_EXE_schedlab"))
        .arg(&big)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&big);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("needs about 800 MiB of memory") && err.contains("under ulimit -v"), "{err}");
    assert!(!err.contains("memory allocation"), "{err}");
}

#[test]
fn a_trace_dat_reads_in_trace_cmd_as_the_run_s_ftrace_text() {
    // trace-cmd (Debian's, which CI installs) is the independent reader:
    // `trace-cmd report` decodes the file's pages with the formats in it.
    if !trace_cmd() {
        return;
    }
    // Three hogs on two CPUs: switches, wakeups and the balancer's
    // migrations. A napper: gaps of more than 2^27 ns, the page's
    // time_delta, which a time-extend record carries.
    let hogs = ["smp-fairness", "--cpus", "2", "--param", "hogs=3", "--duration", "3s"];
    let napper = temp_file(
        "napper.toml",
        "name = \"napper\"\nduration = \"3s\"\n[machine]\ncpus = 1\n[[task]]\nname = \"napper\"\n\
         program = [ { loop = \"forever\", body = [ { run = \"1ms\" }, { sleep = \"700ms\" } ] } ]\n",
    );
    trace_dat_matches_text(&hogs, |switches, migrations| switches > 300 && migrations > 5);
    trace_dat_matches_text(&[napper.to_str().unwrap()], |switches, _| switches == 10);
}

/// `schedlab trace WORKLOAD` written as trace.dat and as ftrace text:
/// trace-cmd's reading of the first is the second, event for event.
fn trace_dat_matches_text(workload: &[&str], enough: impl Fn(usize, usize) -> bool) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dat = dir.join(format!("td-{}-{}.dat", std::process::id(), workload[0].len()));
    let text = dir.join(format!("td-{}-{}.trace", std::process::id(), workload[0].len()));
    for out in [&dat, &text] {
        let args = [&["trace"][..], workload, &["--sched", "cfs", "-o", out.to_str().unwrap()]].concat();
        let o = schedlab(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    // -R: the fields as recorded (prev_state a number), -t: nanoseconds.
    let report = Command::new("trace-cmd").args(["report", "-R", "-t", "-i", dat.to_str().unwrap()]).output().unwrap();
    let _ = std::fs::remove_file(&dat);
    assert!(report.status.success(), "trace-cmd report: {}", String::from_utf8_lossy(&report.stderr));
    let decoded = String::from_utf8_lossy(&report.stdout).to_string();
    let written = std::fs::read_to_string(&text).unwrap();
    let _ = std::fs::remove_file(&text);
    // Every event as (time in us, CPU, event, its pids and CPUs, its
    // state as the text prints it), sorted: trace-cmd merges the CPUs'
    // pages by time, the text is in the simulation's order.
    let events = |t: &str| {
        let mut v: Vec<String> = t
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains(": sched_"))
            .map(|l| {
                let cpu: u32 = l.split('[').nth(1).unwrap().split(']').next().unwrap().parse().unwrap();
                let (head, fields) = l.split_once(": sched_").unwrap();
                let ts = head.rsplit(' ').next().unwrap().trim_end_matches(':');
                let (secs, frac) = ts.split_once('.').unwrap();
                let (event, fields) = fields.split_once(':').unwrap();
                let mut kept = vec![format!("{secs}.{}", &frac[..6]), cpu.to_string(), event.to_string()];
                for kv in fields.split_whitespace() {
                    match kv.split_once('=') {
                        Some((k, v)) if k.ends_with("pid") || k.ends_with("cpu") || k.ends_with("prio") => {
                            kept.push(format!("{k}={}", v.parse::<i64>().unwrap()))
                        }
                        Some(("prev_state", v)) => kept.push(
                            match v {
                                "0" | "R" => "R",
                                "256" | "R+" => "R+",
                                "1" | "S" => "S",
                                "16" | "X" => "X",
                                other => panic!("prev_state={other}"),
                            }
                            .to_string(),
                        ),
                        _ => {}
                    }
                }
                kept.join(" ")
            })
            .collect();
        v.sort();
        v
    };
    let (from_dat, from_text) = (events(&decoded), events(&written));
    let count = |event: &str| from_text.iter().filter(|e| e.split(' ').nth(2) == Some(event)).count();
    assert!(enough(count("switch"), count("migrate_task")), "{from_text:?}");
    assert_eq!(from_dat.len(), from_text.len());
    for (d, t) in from_dat.iter().zip(&from_text) {
        assert_eq!(d, t, "trace-cmd's reading of the trace.dat differs from the ftrace text");
    }
}

#[test]
fn replay_reads_a_trace_dat_recorded_by_trace_cmd_in_a_real_kernel() {
    // tools/fixtures/record-trace-dat.sh: trace-cmd 3.1 record (version 6)
    // of three spinning shells on 2 vCPUs of the eevdf-6.12 guest; replay
    // reads it through `trace-cmd report` (CI installs trace-cmd).
    if !trace_cmd() {
        return;
    }
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../schedlab-policies/tests/fixtures/trace-cmd-3.1-record-eevdf-6.12-spinners.dat"
    );
    let out = schedlab(&["replay", fixture, "--sched", "eevdf", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reports: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(reports[0]["source"], "recorded");
    // The recording: 912 switches among the tasks, 881 of them preemptions
    // of the three shells (each spun 2.37-2.44 s, preempted 285-304 times
    // at the ticks of a 250 Hz kernel).
    assert_eq!(reports[0]["totals"]["context_switches"], 912, "{}", reports[0]["totals"]);
    assert_eq!(reports[0]["totals"]["involuntary_switches"], 881);
    let shells: Vec<(u64, u64)> = reports[0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with("sh-")))
        .map(|t| (t["cpu_time_ns"].as_u64().unwrap(), t["involuntary_switches"].as_u64().unwrap()))
        .collect();
    assert_eq!(shells.len(), 3, "{}", reports[0]["tasks"]);
    for (cpu, preempted) in shells {
        assert!((2_300_000_000..2_500_000_000).contains(&cpu) && (280..310).contains(&preempted), "{cpu} {preempted}");
    }
    assert_eq!(reports[1]["scheduler"], "eevdf");
}

#[test]
fn replay_tasks_prints_each_tasks_cpu_time_in_ms_as_its_report_has_it() {
    // The guest's hackbench recording beside its model: the table's title
    // says ms, and each cell is that report's cpu_time_ns (until this test
    // it printed each task's share in % under that title).
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../schedlab-policies/tests/fixtures/guest-eevdf-6.12-hackbench-pipe.trace.gz"
    );
    let text = |args: &[&str]| {
        let out = schedlab(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let table = text(&["replay", fixture, "--tasks", "--sched", "eevdf"]);
    let reports: serde_json::Value =
        serde_json::from_str(&text(&["replay", fixture, "--tasks", "--sched", "eevdf", "--json"])).unwrap();
    assert!(table.contains("CPU time per task, ms"), "{table}");
    let mut checked = 0;
    for (column, report) in reports.as_array().unwrap().iter().enumerate() {
        for t in report["tasks"].as_array().unwrap() {
            let name = t["name"].as_str().unwrap();
            if !name.starts_with("hackbench-") {
                continue;
            }
            let row =
                table.lines().find(|l| l.split_whitespace().next() == Some(name)).unwrap_or_else(|| panic!("{name}"));
            let cell: f64 = row.split_whitespace().nth(1 + column).unwrap().parse().unwrap();
            let ms = t["cpu_time_ns"].as_f64().unwrap() / 1e6;
            assert!((cell - ms).abs() < 0.006, "{name}, column {column}: {cell} printed, {ms} ms in the report");
            checked += 1;
        }
    }
    assert!(checked >= 40, "the recording's and the model's 21 hackbench tasks: {checked} checked");
}
