//! The README's sample outputs are what schedlab prints today: every code
//! block that starts with one `$ schedlab ...` line is run and its output
//! compared line by line (simulations are deterministic). A block with more
//! than one command line, or none, is prose and not checked.

use std::process::Command;

#[test]
fn readme_samples_are_what_schedlab_prints() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let mut blocks = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in readme.lines() {
        match (&mut current, line.starts_with("```")) {
            (None, true) => current = Some(Vec::new()),
            (Some(_), true) => blocks.push(current.take().expect("open block")),
            (Some(b), false) => b.push(line),
            (None, false) => {}
        }
    }
    let mut checked = 0;
    for block in blocks {
        let commands = block.iter().filter(|l| l.starts_with("$ ")).count();
        let Some(cmd) = block.first().and_then(|l| l.strip_prefix("$ schedlab ")) else { continue };
        if commands != 1 {
            continue;
        }
        let out = Command::new(env!("CARGO_BIN_EXE_schedlab")).args(cmd.split_whitespace()).output().unwrap();
        assert!(out.status.success(), "README: `schedlab {cmd}` failed: {}", String::from_utf8_lossy(&out.stderr));
        let printed = String::from_utf8_lossy(&out.stdout);
        let printed: Vec<&str> = printed.lines().map(str::trim_end).collect();
        let shown: Vec<&str> = block[1..].iter().map(|l| l.trim_end()).collect();
        for (i, (want, got)) in shown.iter().zip(&printed).enumerate() {
            assert_eq!(
                want,
                got,
                "README sample of `schedlab {cmd}` is stale at its line {}: run python3 tools/readme-samples.py",
                i + 1
            );
        }
        assert_eq!(shown.len(), printed.len(), "README sample of `schedlab {cmd}` has a different number of lines");
        checked += 1;
    }
    assert!(checked >= 2, "the README's samples were not found ({checked} checked)");
}

/// The Performance section's table of `schedlab bench`: its wall-clock
/// columns are this machine's, but the event counts of mixed-64 (1 s, seed
/// 1) are the simulation's and must be today's, as `run` gives them.
#[test]
fn readme_bench_table_counts_today_s_events() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let rows: Vec<(&str, u64)> = readme
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("mixed-64: 64 CPUs, 2,000 tasks")?;
            let mut cols = rest.split_whitespace();
            Some((cols.next()?, cols.next()?.parse().ok()?))
        })
        .collect();
    assert!(rows.len() >= 10, "the README's bench table was not found ({} mixed-64 rows)", rows.len());
    for (sched, events) in rows {
        let out = Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args(["run", "mixed-64", "--duration", "1s", "--json", "--sched", sched])
            .output()
            .unwrap();
        assert!(out.status.success(), "{sched}: {}", String::from_utf8_lossy(&out.stderr));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            report["totals"]["events"].as_u64(),
            Some(events),
            "README's bench table is stale for {sched} on mixed-64: run `schedlab bench` and copy its table"
        );
    }
}
