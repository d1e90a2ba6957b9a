//! Terminal output: the comparison table, a run's summary, and histograms
//! in bpftrace's hist() layout.

pub(crate) mod html;
pub(crate) mod svg;

use schedlab_sim::Report;
use schedlab_sim::report::{HistSummary, HostInfo};
use schedlab_sim::time::format_duration;
use std::fmt::Write;

/// Nanoseconds as microseconds with one decimal, the unit of latency columns.
pub fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e3)
}

/// One line per task of a run: CPU share and time, switches, migrations.
pub fn task_lines(r: &Report) -> String {
    let mut out = String::new();
    for t in &r.tasks {
        let _ = writeln!(
            out,
            "{:<24} {:>7.2}% cpu {:>10} vol {:>7} invol {:>7} migr {:>5}",
            t.name,
            t.cpu_share_pct,
            format_duration(t.cpu_time_ns),
            t.voluntary_switches,
            t.involuntary_switches,
            t.migrations
        );
    }
    out
}

/// One row per report: the numbers people quote for schedulers.
pub fn comparison_table(reports: &[Report]) -> String {
    let mut out = table_rows(reports);
    let common = shared_notes(reports);
    for r in reports.iter().filter(|r| r.host.is_some()) {
        let h = r.host.as_ref().expect("filtered");
        let _ = writeln!(
            out,
            "\n{}: linux {} on {}, HZ={}, preemption {}; tracing: {}; groups: {}",
            r.scheduler,
            h.kernel_release,
            h.machine,
            h.hz.map_or("unknown".into(), |v| v.to_string()),
            h.preempt.as_deref().unwrap_or("unknown"),
            h.tracing,
            h.cgroups
        );
        for n in h.notes.iter().filter(|n| !common.contains(n)) {
            let _ = writeln!(out, "  note: {n}");
        }
    }
    if !common.is_empty() {
        let _ = writeln!(out, "\nevery real row:");
        for n in &common {
            let _ = writeln!(out, "  note: {n}");
        }
    }
    out
}

/// The notes every real row of a comparison carries, when it has two or
/// more: said once instead of once a row.
pub fn shared_notes(reports: &[Report]) -> Vec<String> {
    let hosts: Vec<&HostInfo> = reports.iter().filter_map(|r| r.host.as_ref()).collect();
    if hosts.len() < 2 {
        return Vec::new();
    }
    hosts[0].notes.iter().filter(|n| hosts[1..].iter().all(|h| h.notes.contains(n))).cloned().collect()
}

fn table_rows(reports: &[Report]) -> String {
    let headers = [
        "scheduler",
        "ctxsw/s",
        "invol/s",
        "migr/s",
        "share min/avg/max %",
        "jain/kind",
        "wake avg us",
        "wake p99 us",
        "wake max us",
        "run/switch p50",
        "runs/s",
        "makespan",
    ];
    let mut rows: Vec<Vec<String>> = Vec::new();
    for r in reports {
        let secs = r.duration_ns.max(1) as f64 / 1e9;
        let t = &r.totals;
        let w = &r.wakeup_latency;
        let wake = |v: u64| if w.count == 0 { "-".to_string() } else { us(v) };
        rows.push(vec![
            r.scheduler.clone(),
            format!("{:.0}", t.context_switches_per_sec),
            format!("{:.0}", t.involuntary_switches as f64 / secs),
            format!("{:.1}", t.migrations as f64 / secs),
            r.share_range().map_or("-".into(), |(min, avg, max)| format!("{min:.1}/{avg:.1}/{max:.1}")),
            t.jain_fairness_min_spec.map_or("-".into(), |j| format!("{j:.3}")),
            wake(w.mean),
            wake(w.p99),
            wake(w.max),
            if r.runtime_per_switch.count == 0 { "-".into() } else { format_duration(r.runtime_per_switch.p50) },
            format!("{:.0}", t.throughput_runs_per_sec),
            t.makespan_ns.map_or("-".into(), format_duration),
        ]);
    }
    table(&headers, &rows)
}

fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    // A cell past MAX_WIDTH (a task name of a generated workload) is printed
    // whole without stretching its column: padding that wide is useless,
    // and format! refuses widths over u16::MAX.
    const MAX_WIDTH: usize = 64;
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count().min(MAX_WIDTH));
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| if i == 0 { format!("{c:<w$}") } else { format!("{c:>w$}") })
            .collect();
        let _ = writeln!(out, "{}", parts.join("  ").trim_end());
    };
    line(headers.to_vec(), &mut out);
    let _ = writeln!(out, "{}", widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  "));
    for row in rows {
        line(row.iter().map(String::as_str).collect(), &mut out);
    }
    out
}

fn si(v: u64) -> String {
    const UNITS: [(u64, &str); 4] = [(1 << 40, "T"), (1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")];
    for (scale, unit) in UNITS {
        if v >= scale && v.is_multiple_of(scale) {
            return format!("{}{unit}", v / scale);
        }
    }
    v.to_string()
}

/// A histogram as bpftrace prints `hist()`: `[lo, hi)  count |@@@@|`.
pub fn log2_hist(name: &str, h: &HistSummary) -> String {
    let mut out = format!("@{name}:\n");
    if h.buckets.is_empty() {
        out.push_str("(no samples)\n");
        return out;
    }
    let max = h.buckets.iter().map(|b| b.count).max().unwrap_or(1).max(1);
    let first = h.buckets.first().map_or(0, |b| b.lo);
    let last = h.buckets.last().map_or(0, |b| b.lo);
    let mut lo = first;
    loop {
        let count = h.buckets.iter().find(|b| b.lo == lo).map_or(0, |b| b.count);
        let label = if lo == 0 {
            "[0]".to_string()
        } else if lo == 1 {
            "[1]".to_string()
        } else {
            format!("[{}, {})", si(lo), si(lo * 2))
        };
        let bar = "@".repeat((count * 52).div_ceil(max) as usize);
        let _ = writeln!(out, "{label:<20}{count:>8} |{bar:<52}|");
        if lo >= last {
            break;
        }
        lo = if lo == 0 { 1 } else { lo * 2 };
    }
    if name == "runtime_per_switch_ns" && first == 0 {
        out.push_str(ZERO_RUNS);
    }
    out
}

/// What the [0] bucket of run time per switch is: runs that ended at the
/// instant they began. A task switched in and away again at the same
/// nanosecond, either switched away during its switch-in cost (a wakeup
/// preempting it) or given the CPU only to block at once (its next op a
/// sleep or timer). Most come from events at the same instant: the
/// simulator's ticks and a workload's timers share the phase 0, so a
/// 1 ms timer fires on every 4th tick (at HZ=250) just as the tick
/// switched tasks.
pub const ZERO_RUNS: &str = "[0]: switched away at the instant it was switched in (preempted during the switch-in, \
                             or blocked at once); mostly a timer firing on the very tick that switched tasks\n";

/// `schedlab run`'s human-readable report.
pub fn run_summary(r: &Report, show_hist: bool) -> String {
    let mut out = String::new();
    let t = &r.totals;
    let secs = r.duration_ns.max(1) as f64 / 1e9;
    let _ = writeln!(
        out,
        "{} on {}: {} CPUs, HZ={}, {} {}{}",
        r.scheduler,
        r.workload,
        r.cpus,
        r.hz,
        format_duration(r.duration_ns),
        if r.source == "simulated" { "simulated" } else { "measured" },
        // A real program's report has no seed (it is 0, which no workload
        // has by default).
        if r.source == "simulated" || r.seed != 0 { format!(", seed {}", r.seed) } else { String::new() }
    );
    let _ = writeln!(
        out,
        "context switches {} ({:.0}/s: {} voluntary, {} involuntary), migrations {} ({:.1}/s)",
        t.context_switches,
        t.context_switches_per_sec,
        t.voluntary_switches,
        t.involuntary_switches,
        t.migrations,
        t.migrations as f64 / secs
    );
    let _ = writeln!(
        out,
        "utilization {:.1}%, Jain fairness {} among tasks of one kind ({:.4} over all), {:.0} runs/s{}",
        t.utilization_pct,
        t.jain_fairness_min_spec.map_or("-".into(), |j| format!("{j:.4}")),
        t.jain_fairness,
        t.throughput_runs_per_sec,
        t.makespan_ns.map_or(String::new(), |m| format!(", makespan {}", format_duration(m)))
    );
    for (k, v) in &r.extra {
        let _ = writeln!(out, "{k}: {v}");
    }
    if let Some(h) = &r.host {
        let hz = h.hz.map_or("unknown".to_string(), |hz| hz.to_string());
        let preempt = h.preempt.as_deref().unwrap_or("unknown");
        let clock = h.clocksource.as_deref().map_or(String::new(), |c| format!(", clocksource {c}"));
        let _ = writeln!(out, "kernel {} on {}: HZ={hz}, preemption {preempt}{clock}", h.kernel_release, h.machine);
        let _ = writeln!(out, "tracing: {}\ngroups: {}", h.tracing, h.cgroups);
        for n in &h.notes {
            let _ = writeln!(out, "note: {n}");
        }
    }
    if !r.tunables.is_empty() && r.source != "simulated" {
        let t: Vec<String> = r.tunables.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(out, "tunables read: {}", t.join(" "));
    }
    for a in &r.absent {
        let _ = writeln!(out, "absent: {a}");
    }
    let _ = writeln!(out);
    let headers =
        ["task", "n", "%CPU min/avg/max", "jain", "wake avg us", "wake p99 us", "wake max us", "run/switch p50"];
    let rows: Vec<Vec<String>> = r
        .specs
        .iter()
        .map(|s| {
            let w = &s.wakeup_latency;
            let wake = |v: u64| if w.count == 0 { "-".to_string() } else { us(v) };
            vec![
                s.name.clone(),
                s.tasks.to_string(),
                format!("{:.1}/{:.1}/{:.1}", s.cpu_share_min_pct, s.cpu_share_avg_pct, s.cpu_share_max_pct),
                s.jain_fairness.map_or("-".into(), |j| format!("{j:.3}")),
                wake(w.mean),
                wake(w.p99),
                wake(w.max),
                if s.runtime_per_switch.count == 0 { "-".into() } else { format_duration(s.runtime_per_switch.p50) },
            ]
        })
        .collect();
    out.push_str(&table(&headers, &rows));
    if show_hist {
        out.push('\n');
        out.push_str(&log2_hist("wakeup_latency_ns", &r.wakeup_latency));
        out.push('\n');
        out.push_str(&log2_hist("runtime_per_switch_ns", &r.runtime_per_switch));
    }
    out
}

/// What a per-task table shows of each task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerTask {
    /// CPU time in ms (replay: the recording's row and each model's).
    CpuTimeMs,
    /// CPU share in % of one CPU over the task's life (compare).
    SharePct,
}

/// One row per task (the first report's), one column per report.
pub fn task_table(reports: &[Report], what: PerTask) -> String {
    let mut headers = vec!["task"];
    headers.extend(reports.iter().map(|r| r.scheduler.as_str()));
    let names: Vec<String> = reports.first().map_or(Vec::new(), |r| r.tasks.iter().map(|t| t.name.clone()).collect());
    let rows: Vec<Vec<String>> = names
        .into_iter()
        .map(|name| {
            let mut row = vec![name.clone()];
            for r in reports {
                row.push(match r.tasks.iter().find(|t| t.name == name) {
                    None => "-".into(),
                    Some(t) if what == PerTask::CpuTimeMs => format!("{:.2}", t.cpu_time_ns as f64 / 1e6),
                    Some(t) => format!("{:.2}", t.cpu_share_pct),
                });
            }
            row
        })
        .collect();
    table(&headers, &rows)
}
