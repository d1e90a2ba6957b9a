//! The `schedlab` binary as a user meets it: the main job works, bad input
//! gets one clear error and a non-zero exit, never a panic.

use std::process::{Command, Output};

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

fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("schedlab-cli-test-{}", std::process::id()));
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
    fails_with(&["run", "no-such-workload"], "no file and no built-in scenario named 'no-such-workload'");
    fails_with(&["run", "thread-test", "--sched", "bfs2"], "unknown scheduler 'bfs2': choose one of cfs, eevdf");
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

    let bad =
        temp_file("bad.toml", "[machine]\ncpus = 2\n\n[[task]]\nname = \"x\"\nprogram = [ { run = \"3 parsecs\" } ]\n");
    fails_with(&["run", bad.to_str().unwrap()], "bad.toml:6: task 'x': unknown time unit");
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
