//! Policies written outside the workspace (examples/own-policies, a crate
//! of its own that depends on schedlab's) get the whole command line:
//! built here as a user would build them, run by `compare` beside eevdf
//! and bmq, and held to their characteristic decisions: round robin's
//! equal slices of the stated length, counted in ticks as SCHED_RR counts
//! them; scx_simple on the sched_ext core, SCX_SLICE_DFL runs ended at
//! the tick.

use std::path::Path;
use std::process::Command;

#[test]
fn policies_of_ones_own_run_beside_the_built_in_ones() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // The workspace's own target directory: the example builds schedlab's
    // crates itself (as a crate of its own, with its own profile and
    // features), but the build scripts and proc macros (syn, serde's and
    // clap's derives, prost's) are the workspace's: 29-32 s, not 43.
    let target = root.join("target");
    let built = Command::new(env!("CARGO"))
        // --locked: the test never rewrites the example's tracked lock file.
        .args(["build", "--quiet", "--locked", "--manifest-path"])
        .arg(root.join("examples/own-policies/Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "the example did not build (after a dependency change, update its lock file: cargo update --workspace \
         --manifest-path examples/own-policies/Cargo.toml):\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let exe = target.join("debug/schedlab-own-policies");
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
    // scx_simple, written in sched_ext's shape: the 8 spinners of CPU 0
    // never wake, so each run is one 20 ms SCX_SLICE_DFL, ended by the
    // sixth 4 ms tick after it began just past one (24 ms).
    let simple = compare("simple,simple-fifo", &[]);
    for r in &simple {
        assert!((p50(r) - 24e6).abs() < 0.01 * 24e6, "{} runs {} ns at the median", r["scheduler"], p50(r));
    }
    // It is listed with its tunable, and a bad value of it gets its range.
    let list = Command::new(&exe).arg("list").output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(list.contains("rr       round robin") && list.contains("rr_slice_ns"), "{list}");
    let bad =
        Command::new(&exe).args(["run", "thread-test", "--sched", "rr", "--set", "rr_slice_ns=1"]).output().unwrap();
    assert!(String::from_utf8_lossy(&bad.stderr).contains("rr_slice_ns = 1 is out of range for rr: use 100000..="));
}
