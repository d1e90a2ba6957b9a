//! A policy written outside the workspace (examples/policy-rr, a crate of
//! its own that depends on schedlab's) gets the whole command line: built
//! here as a user would build it, run by `compare` beside eevdf and bmq,
//! and held to its characteristic decision: equal slices of the stated
//! length, counted in ticks as SCHED_RR counts them.

use std::path::Path;
use std::process::Command;

#[test]
fn a_round_robin_crate_runs_beside_the_built_in_policies() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = root.join("target/policy-rr");
    let built = Command::new(env!("CARGO"))
        // --locked: the test never rewrites the example's tracked lock file.
        .args(["build", "--quiet", "--locked", "--manifest-path"])
        .arg(root.join("examples/policy-rr/Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "the example did not build (after a dependency change, update its lock file: cargo update --workspace \
         --manifest-path examples/policy-rr/Cargo.toml):\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let exe = target.join("debug/schedlab-policy-rr");
    let compare = |sched: &str, extra: &[&str]| -> Vec<serde_json::Value> {
        let out = Command::new(&exe)
            .args(["compare", "thread-test", "--sched", sched, "--duration", "2s", "--json"])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let reports = compare("rr,eevdf,bmq", &[]);
    let names: Vec<&str> = reports.iter().map(|r| r["scheduler"].as_str().unwrap()).collect();
    assert_eq!(names, ["rr", "eevdf", "bmq"]);
    let p50 = |r: &serde_json::Value| r["runtime_per_switch"]["p50"].as_f64().unwrap();
    let shares = |r: &serde_json::Value| -> Vec<f64> {
        r["tasks"].as_array().unwrap().iter().map(|t| t["cpu_share_pct"].as_f64().unwrap()).collect()
    };
    // 8 spinners on CPU 0 at HZ=250: every run is one 4 ms slice (less the
    // 2 us switch), and the spinners share the CPU equally.
    assert!((p50(&reports[0]) - 4e6).abs() < 0.01 * 4e6, "rr runs {} ns at the median", p50(&reports[0]));
    let s = shares(&reports[0]);
    assert!(s.iter().all(|&x| (x - 12.5).abs() < 0.5), "rr shares {s:?}");
    // The tunable is the user's: 12 ms is three ticks.
    let longer = compare("rr", &["--set", "rr_slice_ns=12000000"]);
    assert!((p50(&longer[0]) - 12e6).abs() < 0.01 * 12e6, "rr at 12 ms runs {} ns", p50(&longer[0]));
    // It is listed with its tunable, and a bad value of it gets its range.
    let list = Command::new(&exe).arg("list").output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(list.contains("rr       round robin") && list.contains("rr_slice_ns"), "{list}");
    let bad =
        Command::new(&exe).args(["run", "thread-test", "--sched", "rr", "--set", "rr_slice_ns=1"]).output().unwrap();
    assert!(String::from_utf8_lossy(&bad.stderr).contains("rr_slice_ns = 1 is out of range for rr: use 100000..="));
}
