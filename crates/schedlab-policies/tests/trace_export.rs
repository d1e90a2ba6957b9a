//! `schedlab trace`'s writers: the ftrace text has the kernel's layout (the
//! same parser reads it and a trace recorded on a real 6.18 kernel) and
//! tells the same story as the report; the Perfetto JSON has a track per
//! CPU whose slices are the runs.

mod common;
use common::*;
use schedlab_sim::formats::ftrace::{self, SchedEventKind};
use schedlab_sim::formats::trace_out::{TraceFormat, TraceWriter};
use schedlab_sim::{Engine, EngineOptions, Report};

const REAL: &str = include_str!("fixtures/real-6.18-sched.trace");

fn traced(sched: &str, format: TraceFormat) -> (Report, String) {
    let ov = schedlab_sim::Overrides {
        cpus: Some(2),
        duration: Some(200_000_000),
        params: [("hogs".to_string(), 3)].into_iter().collect(),
        ..Default::default()
    };
    let w = scenario("smp-fairness", ov);
    let mut buf = Vec::new();
    let report = {
        let mut writer = TraceWriter::new(&w, Box::new(&mut buf), format);
        let policy = schedlab_policies::build(sched, &w).unwrap();
        let r = Engine::new(&w, policy, EngineOptions::default()).with_observer(&mut writer).run().unwrap();
        writer.finish(r.duration_ns).unwrap();
        r
    };
    (report, String::from_utf8(buf).unwrap())
}

/// The fixed-width part of a line: "comm-pid" in 24 columns, the CPU in
/// brackets, five flag characters, the timestamp in seconds.microseconds.
fn layout(line: &str) -> Result<(), String> {
    let b = line.as_bytes();
    if b.get(24) != Some(&b' ') || b.get(25) != Some(&b'[') || b.get(29) != Some(&b']') {
        return Err(format!("brackets not at columns 25/29: {line}"));
    }
    let rest = &line[30..];
    let (flags_ts, _) = rest.split_once(": sched_").ok_or(format!("no event: {line}"))?;
    let mut parts = flags_ts.split_whitespace();
    let flags = parts.next().ok_or("no flags")?;
    let ts = parts.next().ok_or("no timestamp")?;
    if flags.len() != 5 {
        return Err(format!("flags '{flags}' are not 5 characters: {line}"));
    }
    let (s, us) = ts.split_once('.').ok_or("timestamp without a point")?;
    if us.len() != 6 || s.is_empty() || !s.bytes().chain(us.bytes()).all(|c| c.is_ascii_digit()) {
        return Err(format!("timestamp '{ts}' is not SECONDS.MICROSECONDS: {line}"));
    }
    Ok(())
}

#[test]
fn ftrace_text_has_the_kernels_layout() {
    let real: Vec<&str> = REAL.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(real.len(), 12);
    for line in &real {
        layout(line).unwrap();
    }
    assert_eq!(ftrace::parse(REAL).unwrap().len(), 12);
    let (_, ours) = traced("cfs", TraceFormat::Ftrace);
    let lines: Vec<&str> = ours.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(lines.len() > 20, "{} lines", lines.len());
    for line in &lines {
        layout(line).unwrap();
    }
    assert_eq!(ftrace::parse(&ours).unwrap().len(), lines.len(), "every line is a sched event the parser reads");
}

#[test]
fn ftrace_text_tells_the_reports_story() {
    for sched in ["cfs", "eevdf", "bfs"] {
        let (r, text) = traced(sched, TraceFormat::Ftrace);
        let events = ftrace::parse(&text).unwrap();
        let task_switches = events
            .iter()
            .filter(|e| matches!(&e.kind, SchedEventKind::Switch { prev_pid, .. } if *prev_pid != 0))
            .count() as u64;
        assert_eq!(task_switches, r.totals.context_switches, "{sched}");
        let migrations = events.iter().filter(|e| matches!(e.kind, SchedEventKind::Migrate { .. })).count() as u64;
        assert_eq!(migrations, r.totals.migrations, "{sched}");
        // A task only runs on one CPU at a time, and timestamps never go back.
        let mut on: std::collections::HashMap<u32, u32> = Default::default();
        let mut last = 0;
        for e in &events {
            assert!(e.ts >= last, "{sched}: time went back at {}", e.ts);
            last = e.ts;
            if let SchedEventKind::Switch { prev_pid, next_pid, .. } = &e.kind {
                if *prev_pid != 0 {
                    on.remove(prev_pid);
                }
                if *next_pid != 0 {
                    assert!(on.insert(*next_pid, e.cpu).is_none(), "{sched}: pid {next_pid} on two CPUs");
                }
            }
        }
    }
}

#[test]
fn perfetto_json_has_a_track_per_cpu_and_a_slice_per_run() {
    let (r, text) = traced("eevdf", TraceFormat::Perfetto);
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let events = v["traceEvents"].as_array().unwrap();
    let tracks: Vec<&str> =
        events.iter().filter(|e| e["name"] == "thread_name").map(|e| e["args"]["name"].as_str().unwrap()).collect();
    assert_eq!(tracks, ["CPU 0", "CPU 1"]);
    let slices: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    let busy_us: f64 = slices.iter().map(|s| s["dur"].as_f64().unwrap()).sum();
    // Three hogs on two CPUs: the CPUs never idle; slices cover the run.
    let total_us = r.duration_ns as f64 / 1e3 * 2.0;
    assert!((busy_us - total_us).abs() / total_us < 0.01, "slices cover {busy_us} of {total_us} us");
    assert!(slices.iter().all(|s| s["name"] == "hog"));
}
