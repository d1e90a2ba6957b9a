//! How a figure is read from a report and judged: the figures of each
//! kind (rates, shares, durations, percentages of decisions), the median of
//! several runs with its range, the tolerances, and what became of a
//! figure (within, not compared, explained by the guest's costs, uptime and start,
//! unexplained).

use super::*;
use std::collections::BTreeMap;

/// How a figure is compared.
#[derive(Clone, Copy, PartialEq, Debug, serde::Serialize, serde::Deserialize)]
pub(super) enum Kind {
    /// Events per second or a makespan: within 10%, or within 1/s.
    Rate,
    /// A CPU share in percent: within 3 points.
    Share,
    /// A share of decisions in percent (of `samples` decisions): within 5
    /// points or two binomial standard deviations of the real count.
    Pct,
    /// A duration: within 10% at tick scale; below 250 us on both sides
    /// it is not compared, since TCG's emulated CPU sets the cost of every
    /// switch and wakeup there.
    Time,
}

pub(super) const RATIO_TOLERANCE: f64 = 0.10;

pub(super) const SHARE_POINTS: f64 = 3.0;

pub(super) const RATE_FLOOR: f64 = 1.0;

pub(super) const COST_SCALE_NS: f64 = 250_000.0;

/// A share (or a spread of shares) of tasks that get less than this share
/// is also judged relative to it: 3 points say nothing of a 0.4% task.
pub(super) const SMALL_SHARE_PCT: f64 = 10.0;

pub(super) const SMALL_SHARE_RELATIVE: f64 = 0.25;

pub(super) const PCT_POINTS: f64 = 5.0;

/// Decisions a run on the side that has a percentage, at most, for the
/// other side's having none to agree: n events are known to about
/// sqrt(n), and none is within two of those of n up to 4 (as a rate's
/// counting noise is judged). A forked child that never sleeps makes no
/// wakeup; the one wakeup of a real run's parent at its end is not a
/// placement the simulation lacks.
pub(super) const FEW_DECISIONS: f64 = 4.0;

/// One figure of a run, or the median of several runs'. As the digest
/// keeps it (digest.rs): the range is left out (a run's is its value), as
/// are the defaults of the fields most figures do not use, and a value
/// that is not a number (a percentage of no decisions) is null.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Figure {
    pub(super) key: String,
    pub(super) label: String,
    pub(super) kind: Kind,
    #[serde(with = "nan_as_null")]
    pub(super) value: f64,
    /// The lowest and highest of the runs the median was taken from.
    #[serde(skip, default = "no_range")]
    pub(super) range: (f64, f64),
    /// For a share or a spread of shares: the average share of the tasks it
    /// is about (the median over the runs); 100 for other figures.
    #[serde(default = "whole", skip_serializing_if = "is_whole")]
    pub(super) of_share: f64,
    /// For a percentage of decisions: how many decisions (the median).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) samples: f64,
    /// For a spread of shares: one turn of its tasks (their CPU time per
    /// switch) in points of the run, the finest step a spread can take
    /// (the median); 0 for other figures.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) turn: f64,
}

fn no_range() -> (f64, f64) {
    (f64::NAN, f64::NAN)
}

fn whole() -> f64 {
    100.0
}

fn is_whole(v: &f64) -> bool {
    *v == 100.0
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// JSON has no NaN: a figure of nothing is written as null.
mod nan_as_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_nan() { s.serialize_none() } else { s.serialize_f64(*v) }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}

pub(super) fn figures(exp: &Experiment, r: &Report) -> Vec<Figure> {
    let secs = r.duration_ns.max(1) as f64 / 1e9;
    // The report lists only the entries that made tasks, in entry order:
    // the k-th of them is the k-th entry index its tasks name.
    let mut entries: Vec<u32> = r.tasks.iter().map(|t| t.spec).collect();
    entries.sort_unstable();
    entries.dedup();
    // Each listed entry's CPU time and switches, over its tasks.
    let mut per_entry = vec![(0u64, 0u64); entries.len()];
    for t in &r.tasks {
        if let Ok(k) = entries.binary_search(&t.spec) {
            per_entry[k].0 += t.cpu_time_ns;
            per_entry[k].1 += t.voluntary_switches + t.involuntary_switches;
        }
    }
    let time_and_switches = |k: usize| per_entry.get(k).copied().unwrap_or_default();
    let mut out = Vec::new();
    // A share's figure carries the share of its tasks; others carry 100.
    let mut push = |key: String, label: String, kind, value, of_share, turn| {
        out.push(Figure { key, label, kind, value, range: (value, value), of_share, samples: 0.0, turn })
    };
    push("switches".into(), "switches/s".into(), Kind::Rate, r.totals.context_switches_per_sec, 100.0, 0.0);
    if exp.figures.migrations {
        push("migrations".into(), "migrations/s".into(), Kind::Rate, r.totals.migrations as f64 / secs, 100.0, 0.0);
    }
    if exp.figures.shares {
        for (k, s) in r.specs.iter().enumerate() {
            let share = s.cpu_share_avg_pct;
            push(format!("share:{}", s.name), format!("{} share %", s.name), Kind::Share, share, share, 0.0);
            if s.tasks > 1 {
                let (cpu, switches) = time_and_switches(k);
                let turn = cpu as f64 / switches.max(1) as f64 * 100.0 / r.duration_ns.max(1) as f64;
                push(
                    format!("spread:{}", s.name),
                    format!("{} share max-min", s.name),
                    Kind::Share,
                    s.cpu_share_max_pct - s.cpu_share_min_pct,
                    share,
                    turn,
                );
            }
        }
    }
    // A run-time-per-switch p50 is meaningful where one kind of task runs;
    // beside another kind the histogram has two modes and its median is any
    // value between them, so each kind gets its mean run per switch.
    if r.specs.len() == 1 {
        push("run_p50".into(), "run/switch p50".into(), Kind::Time, r.runtime_per_switch.p50 as f64, 100.0, 0.0);
    } else {
        for (k, s) in r.specs.iter().enumerate() {
            let (cpu, switches) = time_and_switches(k);
            // A kind that got no CPU (switched in as the window closed) has
            // no turn, as one never switched in has none.
            if switches > 0 && cpu > 0 {
                push(
                    format!("run:{}", s.name),
                    format!("{} run/switch", s.name),
                    Kind::Time,
                    cpu as f64 / switches as f64,
                    100.0,
                    0.0,
                );
            }
        }
    }
    if exp.figures.wakeups && r.wakeup_latency.count > 0 {
        push("wake_p50".into(), "wakeup p50".into(), Kind::Time, r.wakeup_latency.p50 as f64, 100.0, 0.0);
    }
    if exp.figures.makespan
        && let Some(m) = r.totals.makespan_ns
    {
        push("makespan".into(), "makespan".into(), Kind::Time, m as f64, 100.0, 0.0);
    }
    out
}

pub(super) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A run's placement decisions as figures.
pub(super) fn decision_figures(d: &Decisions) -> Vec<Figure> {
    d.percentages()
        .into_iter()
        .map(|(key, label, value, of)| Figure {
            key: key.into(),
            label: label.into(),
            kind: Kind::Pct,
            value,
            range: (value, value),
            of_share: 100.0,
            samples: of as f64,
            turn: 0.0,
        })
        .collect()
}

/// Each figure's median over the runs, in the order of the first run.
pub(super) fn medians(runs: &[Vec<Figure>]) -> Vec<Figure> {
    let mut order: Vec<Figure> = Vec::new();
    let mut values: BTreeMap<String, [Vec<f64>; 4]> = BTreeMap::new();
    for run in runs {
        for f in run {
            if !order.iter().any(|o| o.key == f.key) {
                order.push(f.clone());
            }
            let v = values.entry(f.key.clone()).or_default();
            v[0].push(f.value);
            v[1].push(f.of_share);
            v[2].push(f.samples);
            v[3].push(f.turn);
        }
    }
    for f in &mut order {
        let [v, shares, samples, turns] = values.remove(&f.key).unwrap_or_default();
        f.range = v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        f.value = median(v);
        f.of_share = median(shares);
        f.samples = median(samples);
        f.turn = median(turns);
    }
    order
}

#[derive(Debug, PartialEq)]
pub(super) enum Verdict {
    Within,
    /// Both sides are cost-bound durations: under TCG they measure the
    /// emulation, so they are counted apart from the figures compared.
    NotCompared,
    Outside,
}

/// The comparison's text (ratio or difference) and verdict of a simulated
/// figure against the real one; `secs` is the length of a run, for the
/// counting noise of a rate. A figure one side has and the other lacks
/// (a task that never ran, a histogram left empty) is a flag; one neither
/// side has (a task that never ran on either) agrees.
pub(super) fn judge(kind: Kind, sim: Option<&Figure>, real: Option<&Figure>, secs: f64) -> (String, Verdict) {
    let (s, r) = match (sim, real) {
        (Some(s), Some(r)) => (s, r),
        (None, None) => return ("none on either side".into(), Verdict::Within),
        (None, _) => return ("not simulated".into(), Verdict::Outside),
        (_, None) => return ("not in the real runs".into(), Verdict::Outside),
    };
    let (sim, real) = (s.value, r.value);
    match (sim.is_nan(), real.is_nan()) {
        // A percentage of no decisions on either side: nothing to differ.
        (true, true) => return ("none on either side".into(), Verdict::Within),
        (true, false) | (false, true) => {
            let (n, text) = if sim.is_nan() {
                (r.samples, format!("none simulated, {:.0} a real run", r.samples))
            } else {
                (s.samples, format!("{:.0} a simulated run, none real", s.samples))
            };
            return if kind == Kind::Pct && n <= FEW_DECISIONS {
                (text, Verdict::Within)
            } else {
                ("missing on one side".into(), Verdict::Outside)
            };
        }
        (false, false) => {}
    }
    let (text, verdict) = judge_values(kind, s, r, secs);
    // Boots that disagree by more than the tolerance say how far the kernel
    // itself strays from one run to the next (a split of workers set by
    // the order threads passed the start gate, a vCPU its host stopped): a
    // simulated value between the lowest and the highest boot is one the
    // kernel gave, and is not a difference. One boot, or boots that agree,
    // leave the tolerance alone. The simulation's seeds stray the same way
    // (the order in which drawn costs put a fork or a wakeup before or
    // after a tick), and the same holds from its side: a real value
    // between the lowest and the highest seed is one the model gave.
    let (lo, hi) = r.range;
    if verdict == Verdict::Outside && lo < hi && (lo..=hi).contains(&sim) {
        return (format!("{text}, between boots"), Verdict::Within);
    }
    let (slo, shi) = s.range;
    if verdict == Verdict::Outside && slo < shi && (slo..=shi).contains(&r.value) {
        return (format!("{text}, between seeds"), Verdict::Within);
    }
    (text, verdict)
}

/// [`judge`] of two values that both sides have, by the kind's tolerance.
fn judge_values(kind: Kind, s: &Figure, r: &Figure, secs: f64) -> (String, Verdict) {
    let (sim, real) = (s.value, r.value);
    match kind {
        Kind::Share => {
            let d = sim - real;
            // The tasks' share as the kernel gave it sets how small a
            // difference must be for a small task; but a spread of shares
            // moves by whole turns, and where each task gets a few, one
            // turn more or less for one of them is as fine as it can be
            // told (thread-test-1024: a 4 ms turn is 0.13 points of a 3 s
            // run, a quarter of the 0.1% share 0.025).
            let tolerance = if r.of_share < SMALL_SHARE_PCT {
                SHARE_POINTS.min((SMALL_SHARE_RELATIVE * r.of_share).max(r.turn))
            } else {
                SHARE_POINTS
            };
            (format!("{d:+.1} pt"), if d.abs() <= tolerance { Verdict::Within } else { Verdict::Outside })
        }
        Kind::Pct => {
            let d = sim - real;
            let p = real / 100.0;
            let noise = 2.0 * (p * (1.0 - p) / r.samples.max(1.0)).sqrt() * 100.0;
            (format!("{d:+.1} pt"), if d.abs() <= PCT_POINTS.max(noise) { Verdict::Within } else { Verdict::Outside })
        }
        Kind::Time if sim < COST_SCALE_NS && real < COST_SCALE_NS => ("both < 250 us".into(), Verdict::NotCompared),
        Kind::Rate | Kind::Time => {
            if real == 0.0 && sim == 0.0 {
                return ("both 0".into(), Verdict::Within);
            }
            let text = if real > 0.0 { format!("{:.2}", sim / real) } else { "-".into() };
            // A rate counts events: n of them in a run are known to about
            // sqrt(n), so a difference within two of those is not one.
            let noise = 2.0 * (real * secs).sqrt() / secs;
            let close = (kind == Kind::Rate && (sim - real).abs() < RATE_FLOOR.max(noise))
                || (real > 0.0 && (sim / real - 1.0).abs() <= RATIO_TOLERANCE);
            (text, if close { Verdict::Within } else { Verdict::Outside })
        }
    }
}

pub(super) fn show(kind: Kind, v: f64) -> String {
    if v.is_nan() {
        return "-".into();
    }
    match kind {
        Kind::Share | Kind::Pct => format!("{v:.1}"),
        Kind::Time => schedlab_sim::time::format_duration(v as u64),
        Kind::Rate if v >= 100.0 => format!("{v:.0}"),
        Kind::Rate => format!("{v:.1}"),
    }
}

/// What became of a figure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Outcome {
    Within,
    NotCompared,
    /// Outside with the default costs, within with the guest's.
    Explained,
    Unexplained,
}

/// A figure's outcome in `row`: judged with the default costs; a flag is
/// explained when the simulation with the guest's costs is within
/// tolerance (or, cost-bound on both sides, no longer comparable).
pub(super) fn outcome(row: &Row, key: &str) -> Outcome {
    outcome_of(&row.sim, &row.guest, &row.real, row.secs, key)
}

/// A figure's outcome from the figures of both simulations and the real
/// runs, `secs` long.
pub(super) fn outcome_of(sim: &[Figure], guest: &[Figure], real: &[Figure], secs: f64, key: &str) -> Outcome {
    let find = |v: &[Figure]| v.iter().find(|f| f.key == key).cloned();
    let (sim, guest, real) = (find(sim), find(guest), find(real));
    let Some(kind) = sim.as_ref().or(real.as_ref()).map(|f| f.kind) else { return Outcome::Unexplained };
    match judge(kind, sim.as_ref(), real.as_ref(), secs).1 {
        Verdict::Within => Outcome::Within,
        Verdict::NotCompared => Outcome::NotCompared,
        Verdict::Outside => match judge(kind, guest.as_ref(), real.as_ref(), secs).1 {
            Verdict::Within | Verdict::NotCompared => Outcome::Explained,
            Verdict::Outside => Outcome::Unexplained,
        },
    }
}

/// The figures of a row, the simulation's first, then any only the real
/// runs have.
pub(super) fn row_keys(row: &Row) -> Vec<&Figure> {
    figure_keys(&row.sim, &row.real)
}

/// The figures judged of simulated and real ones: the simulation's first,
/// then any only the real runs have.
pub(super) fn figure_keys<'a>(sim: &'a [Figure], real: &'a [Figure]) -> Vec<&'a Figure> {
    let mut keys: Vec<&Figure> = sim.iter().collect();
    keys.extend(real.iter().filter(|r| !sim.iter().any(|s| s.key == r.key)));
    keys
}

/// A figure of `kind` keyed "k", for the tests of the judge and what uses it.
#[cfg(test)]
pub(super) fn fig(kind: Kind, value: f64) -> Figure {
    Figure {
        key: "k".into(),
        label: "k".into(),
        kind,
        value,
        range: (value, value),
        of_share: 100.0,
        samples: 0.0,
        turn: 0.0,
    }
}
