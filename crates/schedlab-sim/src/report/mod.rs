//! The one report both simulated and real runs fill: per-task CPU time and
//! share, wakeup latency and run-time-per-switch histograms, context
//! switches, migrations, per-CPU busy time and the totals people quote.
//! The JSON form is versioned by [`SCHEMA_VERSION`].

pub mod decisions;
pub mod recorded;
pub mod timeline;

use crate::time::Nanos;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Bumped whenever a field of the JSON report changes meaning or goes away.
pub const SCHEMA_VERSION: u32 = 1;

/// The extra figure of the share of the CPUs (%) tasks outside the
/// workload took: a simulation's background tasks, or the other tasks of a
/// real run traced whole.
pub const OTHER_TASKS_CPU_PCT: &str = "other_tasks_cpu_pct";

/// A latency or duration histogram: HDR (2 significant digits) for
/// percentiles, and exact power-of-two buckets as bpftrace's hist() prints.
///
/// An HDR histogram over 1 ns .. 2^40 ns is about 36 KiB, and a report keeps
/// two per task entry: a replayed trace of 26,000 pids, each its own entry,
/// took gigabytes across ten schedulers. So the first SMALL values are kept
/// as they are and poured into an HDR histogram only past that; percentiles
/// are computed through the same HDR either way, so reports do not change.
#[derive(Clone, Debug)]
pub struct Hist {
    store: Store,
    log2: [u64; 64],
    sum: u128,
    /// Exact extremes: HDR reports them only to its precision.
    min: u64,
    max: u64,
}

#[derive(Clone, Debug)]
enum Store {
    Small(Vec<u64>),
    Hdr(Box<Histogram<u64>>),
}

/// Values kept as they are before a histogram is made.
const SMALL: usize = 256;

fn new_hdr() -> Box<Histogram<u64>> {
    // 1 ns to about 18 minutes, 2 significant digits.
    Box::new(Histogram::new_with_bounds(1, 1 << 40, 2).expect("valid HDR bounds"))
}

impl Store {
    fn hdr_of(values: &[u64]) -> Box<Histogram<u64>> {
        let mut h = new_hdr();
        for &v in values {
            h.saturating_record(v);
        }
        h
    }

    fn record(&mut self, value: u64) {
        match self {
            Store::Small(values) if values.len() < SMALL => values.push(value),
            Store::Small(values) => {
                let mut h = Store::hdr_of(values);
                h.saturating_record(value);
                *self = Store::Hdr(h);
            }
            Store::Hdr(h) => h.saturating_record(value),
        }
    }

    fn add(&mut self, other: &Store) {
        match other {
            Store::Small(values) => values.iter().for_each(|&v| self.record(v)),
            Store::Hdr(theirs) => {
                if let Store::Small(values) = self {
                    *self = Store::Hdr(Store::hdr_of(values));
                }
                if let Store::Hdr(mine) = self {
                    // Same precision and bounds: adding cannot fail.
                    let _ = mine.add(&**theirs);
                }
            }
        }
    }

    fn len(&self) -> u64 {
        match self {
            Store::Small(values) => values.len() as u64,
            Store::Hdr(h) => h.len(),
        }
    }
}

impl Default for Hist {
    fn default() -> Hist {
        Hist { store: Store::Small(Vec::new()), log2: [0; 64], sum: 0, min: u64::MAX, max: 0 }
    }
}

impl Hist {
    pub fn record(&mut self, value: u64) {
        self.store.record(value);
        self.log2[log2_bucket(value)] += 1;
        self.sum += value as u128;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    pub fn count(&self) -> u64 {
        self.store.len()
    }

    pub fn merge(&mut self, other: &Hist) {
        self.store.add(&other.store);
        for (a, b) in self.log2.iter_mut().zip(other.log2.iter()) {
            *a += b;
        }
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub fn summary(&self) -> HistSummary {
        let n = self.count();
        let buckets = self
            .log2
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, &count)| {
                let (lo, hi) = bucket_bounds(i);
                Log2Bucket { lo, hi, count }
            })
            .collect();
        if n == 0 {
            return HistSummary { buckets, ..HistSummary::default() };
        }
        // hdrhistogram reports a bucket's upper edge, which can pass the
        // exact extremes kept beside it.
        let small;
        let hdr = match &self.store {
            Store::Hdr(h) => h,
            Store::Small(values) => {
                small = Store::hdr_of(values);
                &small
            }
        };
        let q = |p: f64| hdr.value_at_quantile(p).clamp(self.min, self.max);
        HistSummary {
            count: n,
            min: self.min,
            mean: (self.sum / n as u128) as u64,
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p999: q(0.999),
            max: self.max,
            buckets,
        }
    }
}

/// Bucket 0 holds 0; bucket i > 0 holds [2^(i-1), 2^i).
fn log2_bucket(v: u64) -> usize {
    (64 - v.leading_zeros() as usize).min(63)
}

fn bucket_bounds(i: usize) -> (u64, u64) {
    if i == 0 { (0, 1) } else { (1u64 << (i - 1), 1u64 << i) }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Log2Bucket {
    pub lo: u64,
    pub hi: u64,
    pub count: u64,
}

/// Histogram summary in nanoseconds.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct HistSummary {
    pub count: u64,
    pub min: u64,
    pub mean: u64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub buckets: Vec<Log2Bucket>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct TaskReport {
    pub name: String,
    /// Index of the \[\[task\]\] entry it came from.
    pub spec: u32,
    pub cpu_time_ns: Nanos,
    /// CPU time over the time the task existed, in percent of one CPU, as
    /// `top` shows %CPU.
    pub cpu_share_pct: f64,
    /// Time runnable but not running (schedstat run_delay).
    pub run_delay_ns: Nanos,
    pub wakeups: u64,
    pub wakeup_latency_avg_ns: Option<Nanos>,
    pub wakeup_latency_max_ns: Option<Nanos>,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    pub migrations: u64,
    pub exited_at_ns: Option<Nanos>,
}

/// Per \[\[task\]\] entry: the tasks it made, taken together.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct SpecReport {
    pub name: String,
    pub tasks: u64,
    pub cpu_share_min_pct: f64,
    pub cpu_share_avg_pct: f64,
    pub cpu_share_max_pct: f64,
    /// Jain's index over the CPU time of this entry's tasks that lived the
    /// whole run (None with fewer than two): fairness among like tasks.
    #[serde(default)]
    pub jain_fairness: Option<f64>,
    pub wakeup_latency: HistSummary,
    pub runtime_per_switch: HistSummary,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CpuReport {
    pub cpu: u32,
    pub busy_ns: Nanos,
    pub idle_ns: Nanos,
    /// Part of busy time spent switching that no task was charged for:
    /// switches to tasks woken by their timer, whose `timer_wakeup` cost
    /// holds the switch (every other switch is charged to the task
    /// switched in, as the kernel charges it).
    pub switch_overhead_ns: Nanos,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Totals {
    pub context_switches: u64,
    pub context_switches_per_sec: f64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    pub migrations: u64,
    /// Jain's index over the CPU time of the tasks that lived the whole run:
    /// 1.0 when all got the same, 1/n when one got everything.
    pub jain_fairness: f64,
    /// The lowest per-entry Jain index (entries with two or more tasks
    /// alive the whole run): fairness among tasks of one kind, which the
    /// index over all tasks mixes with their kinds' different demands.
    #[serde(default)]
    pub jain_fairness_min_spec: Option<f64>,
    /// CPU time the task programs asked for and got (their `run` ops).
    pub work_done_ns: Nanos,
    /// Completed `run` ops per second of wall time.
    pub throughput_runs_per_sec: f64,
    /// When the last task exited, if every task did.
    pub makespan_ns: Option<Nanos>,
    pub busy_ns: Nanos,
    pub idle_ns: Nanos,
    pub utilization_pct: f64,
    /// Engine events processed (simulated runs only).
    pub events: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Report {
    pub schema_version: u32,
    /// "simulated" or "host".
    pub source: String,
    pub scheduler: String,
    pub workload: String,
    pub seed: u64,
    pub cpus: u32,
    pub hz: u32,
    /// Wall time the report covers.
    pub duration_ns: Nanos,
    pub tunables: Vec<(String, i64)>,
    pub totals: Totals,
    pub wakeup_latency: HistSummary,
    pub runtime_per_switch: HistSummary,
    pub specs: Vec<SpecReport>,
    pub tasks: Vec<TaskReport>,
    pub per_cpu: Vec<CpuReport>,
    /// Policy-specific figures (e.g. time throttled by cpu.max).
    pub extra: Vec<(String, f64)>,
    /// Metrics the source could not measure (host runs without tracefs).
    pub absent: Vec<String>,
    /// What the real machine was, for host runs.
    pub host: Option<HostInfo>,
}

/// The kernel a host run measured, and what it could and could not use.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct HostInfo {
    pub kernel_release: String,
    /// Where that kernel ran: "this machine", or the virtual machine it was
    /// booted in (accelerator, vCPUs, kernel image).
    #[serde(default)]
    pub machine: String,
    pub hz: Option<u32>,
    pub preempt: Option<String>,
    /// The clock the kernel keeps time with (current_clocksource): a TSC
    /// found unstable at boot leaves a slow, coarse one (hpet, acpi_pm)
    /// behind every timer and clock read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clocksource: Option<String>,
    /// "tracefs instance" or why not.
    pub tracing: String,
    /// "cgroup v1 cpu controller", "cgroup v2" or why not.
    pub cgroups: String,
    pub notes: Vec<String>,
    /// Placement decisions counted from the trace (runs with tracefs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decisions: Option<crate::report::decisions::Decisions>,
}

/// One task's raw figures, from which [`assemble`] builds the report.
#[derive(Clone, Debug, Default)]
pub struct TaskRaw {
    pub name: String,
    pub spec: u32,
    pub cpu_time: Nanos,
    pub created: Nanos,
    pub exited: Option<Nanos>,
    pub run_delay: Nanos,
    pub wakeups: u64,
    pub lat_sum: Nanos,
    pub lat_max: Nanos,
    pub voluntary: u64,
    pub involuntary: u64,
    pub migrations: u64,
    pub work: Nanos,
    pub runs: u64,
}

/// What a run counted itself, beside its task rows.
#[derive(Clone, Debug)]
pub struct RunCounts {
    /// When the run's window ended.
    pub stop: Nanos,
    /// Whether every task exited (then `stop` is the makespan).
    pub finished: bool,
    pub context_switches: u64,
    pub migrations: u64,
    pub events: u64,
}

/// Builds a report: task rows, per-spec aggregates and totals, the same way
/// for simulated and real runs. `head` gives what a run knows of itself
/// (source, scheduler, workload, seed, cpus, hz, tunables, per-CPU time,
/// extra figures, what it could not measure, the host); the rest is
/// derived here. `spec_names[i]` names spec i, whose histograms are
/// `spec_lat[i]` and `spec_rps[i]`.
pub fn assemble(
    head: Report,
    counts: RunCounts,
    raw: Vec<TaskRaw>,
    spec_names: &[String],
    spec_lat: &[Hist],
    spec_rps: &[Hist],
) -> Report {
    let stop = counts.stop;
    let secs = stop.max(1) as f64 / 1e9;
    let (mut vol, mut invol, mut work, mut runs) = (0, 0, 0, 0);
    let mut full_life = Vec::new();
    let mut full_life_of_spec = Vec::with_capacity(raw.len());
    let mut tasks = Vec::with_capacity(raw.len());
    for t in raw {
        let life = t.exited.unwrap_or(stop).saturating_sub(t.created).max(1);
        vol += t.voluntary;
        invol += t.involuntary;
        work += t.work;
        runs += t.runs;
        let whole_run = t.created == 0 && t.exited.is_none();
        if whole_run {
            full_life.push(t.cpu_time as f64);
        }
        full_life_of_spec.push(whole_run);
        tasks.push(TaskReport {
            name: t.name,
            spec: t.spec,
            cpu_time_ns: t.cpu_time,
            cpu_share_pct: t.cpu_time as f64 * 100.0 / life as f64,
            run_delay_ns: t.run_delay,
            wakeups: t.wakeups,
            wakeup_latency_avg_ns: (t.wakeups > 0).then(|| t.lat_sum / t.wakeups.max(1)),
            wakeup_latency_max_ns: (t.wakeups > 0).then_some(t.lat_max),
            voluntary_switches: t.voluntary,
            involuntary_switches: t.involuntary,
            migrations: t.migrations,
            exited_at_ns: t.exited,
        });
    }
    let mut all_lat = Hist::default();
    let mut all_rps = Hist::default();
    let mut specs = Vec::new();
    // Each spec's tasks, in task order, found in one pass: a replayed trace
    // has a spec per PID, and a scan of every task per spec was quadratic
    // (60,000 PIDs: 21 s).
    let mut of_spec: Vec<Vec<usize>> = vec![Vec::new(); spec_names.len()];
    for (j, t) in tasks.iter().enumerate() {
        if let Some(v) = of_spec.get_mut(t.spec as usize) {
            v.push(j);
        }
    }
    for (i, name) in spec_names.iter().enumerate() {
        all_lat.merge(&spec_lat[i]);
        all_rps.merge(&spec_rps[i]);
        let shares: Vec<f64> = of_spec[i].iter().map(|&j| tasks[j].cpu_share_pct).collect();
        if shares.is_empty() {
            continue;
        }
        let whole: Vec<f64> =
            of_spec[i].iter().filter(|&&j| full_life_of_spec[j]).map(|&j| tasks[j].cpu_time_ns as f64).collect();
        specs.push(SpecReport {
            jain_fairness: (whole.len() >= 2).then(|| jain_index(&whole)),
            name: name.clone(),
            tasks: shares.len() as u64,
            cpu_share_min_pct: shares.iter().cloned().fold(f64::INFINITY, f64::min),
            cpu_share_avg_pct: shares.iter().sum::<f64>() / shares.len() as f64,
            cpu_share_max_pct: shares.iter().cloned().fold(0.0, f64::max),
            wakeup_latency: spec_lat[i].summary(),
            runtime_per_switch: spec_rps[i].summary(),
        });
    }
    let busy: Nanos = head.per_cpu.iter().map(|c| c.busy_ns).sum();
    let idle: Nanos = head.per_cpu.iter().map(|c| c.idle_ns).sum();
    let mut tunables = head.tunables.clone();
    tunables.sort();
    Report {
        schema_version: SCHEMA_VERSION,
        duration_ns: stop,
        tunables,
        totals: Totals {
            context_switches: counts.context_switches,
            context_switches_per_sec: counts.context_switches as f64 / secs,
            voluntary_switches: vol,
            involuntary_switches: invol,
            migrations: counts.migrations,
            jain_fairness: jain_index(&full_life),
            jain_fairness_min_spec: specs.iter().filter_map(|s| s.jain_fairness).min_by(f64::total_cmp),
            work_done_ns: work,
            throughput_runs_per_sec: runs as f64 / secs,
            makespan_ns: counts.finished.then_some(stop),
            busy_ns: busy,
            idle_ns: idle,
            utilization_pct: busy as f64 * 100.0 / (stop.max(1) as f64 * head.cpus.max(1) as f64),
            events: counts.events,
        },
        wakeup_latency: all_lat.summary(),
        runtime_per_switch: all_rps.summary(),
        specs,
        tasks,
        ..head
    }
}

/// Columns of the CSV summary (one row per report), in order. The CSV
/// carries the same `schema_version` as the JSON; docs/report-schema.md
/// describes both.
pub const SUMMARY_COLUMNS: &[&str] = &[
    "schema_version",
    "source",
    "scheduler",
    "workload",
    "seed",
    "cpus",
    "hz",
    "duration_ns",
    "context_switches",
    "context_switches_per_sec",
    "voluntary_switches",
    "involuntary_switches",
    "migrations",
    "jain_fairness",
    "cpu_share_min_pct",
    "cpu_share_avg_pct",
    "cpu_share_max_pct",
    "work_done_ns",
    "throughput_runs_per_sec",
    "makespan_ns",
    "busy_ns",
    "idle_ns",
    "utilization_pct",
    "events",
    "wakeup_count",
    "wakeup_min_ns",
    "wakeup_mean_ns",
    "wakeup_p50_ns",
    "wakeup_p90_ns",
    "wakeup_p99_ns",
    "wakeup_p999_ns",
    "wakeup_max_ns",
    "runtime_per_switch_count",
    "runtime_per_switch_min_ns",
    "runtime_per_switch_mean_ns",
    "runtime_per_switch_p50_ns",
    "runtime_per_switch_p90_ns",
    "runtime_per_switch_p99_ns",
    "runtime_per_switch_p999_ns",
    "runtime_per_switch_max_ns",
    "jain_fairness_min_spec",
];

/// Columns of the per-task CSV (one row per task per report).
pub const TASK_COLUMNS: &[&str] = &[
    "schema_version",
    "source",
    "scheduler",
    "workload",
    "task",
    "spec",
    "cpu_time_ns",
    "cpu_share_pct",
    "run_delay_ns",
    "wakeups",
    "wakeup_latency_avg_ns",
    "wakeup_latency_max_ns",
    "voluntary_switches",
    "involuntary_switches",
    "migrations",
    "exited_at_ns",
];

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

fn hist_cells(h: &HistSummary, out: &mut Vec<String>) {
    out.push(h.count.to_string());
    // An empty histogram has no extremes or percentiles: empty cells, not zeros.
    for v in [h.min, h.mean, h.p50, h.p90, h.p99, h.p999, h.max] {
        out.push(if h.count == 0 { String::new() } else { v.to_string() });
    }
}

impl Report {
    /// The `extra` figure called `name`, if the run has it.
    pub fn extra_figure(&self, name: &str) -> Option<f64> {
        self.extra.iter().find(|(n, _)| n == name).map(|e| e.1)
    }

    /// (min, avg, max) of the tasks' CPU share in percent of one CPU.
    pub fn share_range(&self) -> Option<(f64, f64, f64)> {
        if self.tasks.is_empty() {
            return None;
        }
        let shares = self.tasks.iter().map(|t| t.cpu_share_pct);
        let min = shares.clone().fold(f64::INFINITY, f64::min);
        let max = shares.clone().fold(0.0, f64::max);
        Some((min, shares.sum::<f64>() / self.tasks.len() as f64, max))
    }

    /// This report as one record of [`SUMMARY_COLUMNS`].
    pub fn summary_record(&self) -> Vec<String> {
        let t = &self.totals;
        let share = self.share_range();
        let mut out = vec![
            self.schema_version.to_string(),
            self.source.clone(),
            self.scheduler.clone(),
            self.workload.clone(),
            self.seed.to_string(),
            self.cpus.to_string(),
            self.hz.to_string(),
            self.duration_ns.to_string(),
            t.context_switches.to_string(),
            t.context_switches_per_sec.to_string(),
            t.voluntary_switches.to_string(),
            t.involuntary_switches.to_string(),
            t.migrations.to_string(),
            t.jain_fairness.to_string(),
            opt(share.map(|s| s.0)),
            opt(share.map(|s| s.1)),
            opt(share.map(|s| s.2)),
            t.work_done_ns.to_string(),
            t.throughput_runs_per_sec.to_string(),
            opt(t.makespan_ns),
            t.busy_ns.to_string(),
            t.idle_ns.to_string(),
            t.utilization_pct.to_string(),
            t.events.to_string(),
        ];
        hist_cells(&self.wakeup_latency, &mut out);
        hist_cells(&self.runtime_per_switch, &mut out);
        out.push(opt(t.jain_fairness_min_spec));
        debug_assert_eq!(out.len(), SUMMARY_COLUMNS.len());
        out
    }

    /// A numeric summary column by name (see [`SUMMARY_COLUMNS`]); `None`
    /// when the column is not numeric or has no value in this report.
    pub fn metric(&self, column: &str) -> Option<f64> {
        let i = SUMMARY_COLUMNS.iter().position(|c| *c == column)?;
        self.summary_record()[i].parse().ok()
    }

    /// The tasks as records of [`TASK_COLUMNS`].
    pub fn task_records(&self) -> Vec<Vec<String>> {
        self.tasks
            .iter()
            .map(|t| {
                vec![
                    self.schema_version.to_string(),
                    self.source.clone(),
                    self.scheduler.clone(),
                    self.workload.clone(),
                    t.name.clone(),
                    t.spec.to_string(),
                    t.cpu_time_ns.to_string(),
                    t.cpu_share_pct.to_string(),
                    t.run_delay_ns.to_string(),
                    t.wakeups.to_string(),
                    opt(t.wakeup_latency_avg_ns),
                    opt(t.wakeup_latency_max_ns),
                    t.voluntary_switches.to_string(),
                    t.involuntary_switches.to_string(),
                    t.migrations.to_string(),
                    opt(t.exited_at_ns),
                ]
            })
            .collect()
    }
}

/// Names of the numeric summary columns, for error messages.
pub fn numeric_columns() -> Vec<&'static str> {
    SUMMARY_COLUMNS.iter().copied().filter(|c| !matches!(*c, "source" | "scheduler" | "workload")).collect()
}

/// Jain's fairness index: (sum x)^2 / (n * sum x^2).
pub fn jain_index(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let sum: f64 = values.iter().sum();
    let sq: f64 = values.iter().map(|v| v * v).sum();
    if n == 0.0 || sq == 0.0 { 1.0 } else { sum * sum / (n * sq) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_buckets_are_exact() {
        let mut h = Hist::default();
        for v in [0, 1, 2, 3, 4, 1000, 1023, 1024] {
            h.record(v);
        }
        let s = h.summary();
        let find = |lo| s.buckets.iter().find(|b| b.lo == lo).map(|b| b.count);
        assert_eq!(find(0), Some(1));
        assert_eq!(find(1), Some(1));
        assert_eq!(find(2), Some(2));
        assert_eq!(find(512), Some(2));
        assert_eq!(find(1024), Some(1));
        assert_eq!(s.count, 8);
        assert_eq!(s.max, 1024);
    }

    /// The first values are kept raw and poured into HDR only past SMALL:
    /// every path (raw, converted, merged from raw or from HDR) must give
    /// the percentiles one HDR histogram of all the values gives.
    #[test]
    fn small_and_hdr_histograms_agree() {
        let values: Vec<u64> = (0..3000u64).map(|i| (i * 7919) % 5_000_003 + i % 13).collect();
        let mut reference = Store::hdr_of(&values);
        reference.saturating_record(0);
        let mut whole = Hist::default();
        for &v in &values {
            whole.record(v);
        }
        let mut merged = Hist::default();
        for chunk in values.chunks(100) {
            let mut part = Hist::default();
            chunk.iter().for_each(|&v| part.record(v));
            merged.merge(&part);
        }
        let mut into_small = Hist::default();
        into_small.record(0);
        into_small.merge(&whole);
        whole.record(0);
        merged.record(0);
        assert!(matches!(whole.store, Store::Hdr(_)) && matches!(merged.store, Store::Hdr(_)));
        for h in [&whole, &merged, &into_small] {
            let s = h.summary();
            assert_eq!(s.count, values.len() as u64 + 1);
            for (p, got) in [(0.5, s.p50), (0.9, s.p90), (0.99, s.p99), (0.999, s.p999)] {
                assert_eq!(got, reference.value_at_quantile(p).clamp(0, s.max), "p{p}");
            }
        }
        let mut few = Hist::default();
        [5u64, 50, 500].iter().for_each(|&v| few.record(v));
        assert!(matches!(few.store, Store::Small(ref v) if v.len() == 3), "a few values stay raw");
        assert_eq!(few.summary().p50, Store::hdr_of(&[5, 50, 500]).value_at_quantile(0.5));
    }

    #[test]
    fn jain_bounds() {
        assert!((jain_index(&[1.0, 1.0, 1.0]) - 1.0).abs() < 1e-12);
        assert!((jain_index(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
    }
}
