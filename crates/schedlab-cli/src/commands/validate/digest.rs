//! The real runs' digest, DIR/validation-runs.json: what the judge reads
//! of each real run (its figures, the kernel's uptime and the threads' CPU
//! before the start that the simulation with the guest's costs takes, the
//! host's idle CPUs, the guest machine), the guest's calibration, the
//! boots found crashed or disturbed, the kernel file's SHA-256 and the
//! schedlab commit that measured each run. A full report is tens of
//! kilobytes and a validate keeps hundreds of them in DIR/validation/;
//! the digest is what a page needs, small enough to commit beside it
//! (docs/validation-runs.json), so that `validate --reuse-real` judges the
//! page again from a clone, with no kernel and no boot, after a model
//! changes, and a test can check the committed page is the one its runs
//! give.

use super::judge::{Figure, decision_figures, figures};
use super::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The file's name in validate's --out directory.
pub(super) const FILE: &str = "validation-runs.json";

/// The note a real run booted by validate carries: the schedlab commit
/// that measured it (this binary's, from build.rs).
pub(super) const MEASURED_NOTE: &str = "measured by schedlab ";

/// This binary's commit, as the runs it measures name it.
pub(super) fn this_commit() -> String {
    format!("{} ({})", env!("CARGO_PKG_VERSION"), env!("SCHEDLAB_COMMIT"))
}

#[derive(Serialize, Deserialize, Default)]
pub(super) struct Digest {
    /// What the file is, for whoever opens it.
    pub(super) about: String,
    /// Per policy (its model's name), its kernel's runs.
    pub(super) kernels: BTreeMap<String, KernelDigest>,
}

#[derive(Serialize, Deserialize, Default, Clone)]
pub(super) struct KernelDigest {
    /// The kernel's file name, and its SHA-256 when validate had it.
    pub(super) kernel: String,
    pub(super) sha256: Option<String>,
    /// The guest's costs as `schedlab calibrate` measured them (the
    /// median of the boots, every boot under "boots"); null or absent,
    /// validate measures them again (the kernel's runs are kept).
    #[serde(default)]
    pub(super) calibration: serde_json::Value,
    pub(super) crashes: Vec<String>,
    pub(super) disturbed: Vec<String>,
    /// Per run, "EXPERIMENT-N".
    pub(super) runs: BTreeMap<String, RunDigest>,
}

/// What the judge reads of one real run.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub(super) struct RunDigest {
    /// "VERSION (COMMIT)" of the schedlab that booted it; None for runs
    /// kept by a validate that did not record it.
    pub(super) measured_by: Option<String>,
    pub(super) duration_ns: u64,
    /// The run ended before its duration (its makespan is its length).
    pub(super) ended_early: bool,
    pub(super) figures: Vec<Figure>,
    pub(super) uptime_s: Option<f64>,
    /// A gated task thread's CPU time before t0 (us; the median of its
    /// threads). Runs booted before 2026-12-07 counted the threads forked
    /// in the run as well, which made fork-burst's their children's.
    pub(super) cpu_before_start_us: Option<f64>,
    /// A thread forked in the run: its CPU time before its work (us; the
    /// median; runs booted since 2026-12-07).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) forked_cpu_before_start_us: Option<f64>,
    pub(super) idle_cpus: Option<f64>,
    /// The guest machine as the report describes it; None where the report
    /// has no host part.
    pub(super) machine: Option<String>,
    /// The runner's controller when it began creating the task threads:
    /// its CPU time (ms) and its /proc priority (runs kept from before
    /// 2026-11-26 do not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) controller_cpu_ms: Option<f64>,
    /// Of a thread's CPU time before the start, what it had used at the
    /// start gate (us; the median of its threads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) cpu_at_gate_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) controller_stat_priority: Option<f64>,
    /// Where the run traced the whole guest: how often tasks outside the
    /// workload ran (per second) and their mean run (us).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) other_runs_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) other_run_mean_us: Option<f64>,
    /// Of those, the runner's controller's runs (per second) and their
    /// mean (us): an hrtimer's SCHED_FIFO wakeups every 250 ms, where the
    /// kernel's threads wake from the tick (runs booted since 2026-12-07;
    /// no simulation takes them yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) controller_runs_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) controller_run_mean_us: Option<f64>,
    /// Its run at the median (us): the periodic watch, without the
    /// start-up work a run straddling t0 holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) controller_run_p50_us: Option<f64>,
    /// Of those, the runs (per second) of tasks bound to one CPU, where
    /// the rest the scheduler places (runs booted since 2026-12-07; no
    /// simulation takes them yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) other_pinned_runs_per_s: Option<f64>,
    /// From a thread's program end to its last switch (us, the median of
    /// the threads that ended in the run), where the trace saw them exit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) thread_exit_us: Option<f64>,
    /// The CPU clocks of threads that only run beyond what they spun for
    /// (%), and a forking thread's CPU per fork (us): what the machine took
    /// from runs without a switch, and what a fork cost, in this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) cpu_beyond_work_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) fork_cpu_us: Option<f64>,
    /// A thread that only runs and yields: its CPU per sched_yield beyond
    /// its work (us), and the share of its yields it left its CPU at (%;
    /// runs booted since the runner measured them, 2026-11-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) yield_cpu_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) yield_switched_pct: Option<f64>,
    /// A thread that only runs and sleeps: its CPU per timed wakeup beyond
    /// its work (us), and how late the sleeps' timers fired on busy CPUs
    /// at `schedlab_host::tracing::SLEEP_PERCENTILES` (us): what a timed
    /// wakeup cost and how late it came in this run (runs booted since
    /// the runner measured them, 2026-11-27).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) timer_wakeup_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) sleep_timer_late_us: Option<Vec<f64>>,
    /// Of a timed sleep (runs booted since the runner measured it,
    /// 2026-11-28; us, medians from the trace): from its switch back in to
    /// its thread's clock after the return, and from its timer's expiry on
    /// a busy CPU to the sched_waking of its thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) timer_return_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) sleep_timer_to_waking_us: Option<f64>,
    /// A thread that only runs, signals and waits on pipes: its run split
    /// at the wakeup it sends (us: switch-in to the wakeup beyond its work,
    /// the wakeup to its switch-out), and a wakeup to an idle CPU's delay
    /// to the wakee's run (us, the mean), from the trace's sched_waking
    /// (runs booted since 2026-11-27).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) wait_run_to_signal_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) wait_signal_to_switch_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) idle_wakeup_mean_us: Option<f64>,
    /// A wakeup that preempted a busy CPU: its sched_waking to the woken
    /// thread's switch-in there (us, the median; runs booted since
    /// 2026-11-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) preempt_wakeup_us: Option<f64>,
    /// On a MuQSS kernel: how far each CPU's niffies stood ahead of the
    /// first CPU's when the workload started (ms, from the second CPU on;
    /// runs booted since 2026-11-27 with the runner of this field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) niffies_ahead_ms: Option<Vec<f64>>,
    /// How far apart the CPUs' ticks of one jiffy came (us, the median gap
    /// to CPU 0's, from the trace's hrtimer expiries; runs booted since
    /// the runner of this field, 2026-11-27).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) tick_gap_us: Option<f64>,
}

impl RunDigest {
    /// What the judge reads of `r`, a real run of `exp`.
    pub(super) fn of(exp: &Experiment, r: &Report) -> RunDigest {
        let host = r.host.as_ref();
        let note = |prefix: &str| host.and_then(|h| h.notes.iter().find_map(|n| n.strip_prefix(prefix)));
        let figures = if exp.figures.decisions {
            host.and_then(|h| h.decisions.as_ref()).map(decision_figures).unwrap_or_default()
        } else {
            figures(exp, r)
        };
        RunDigest {
            measured_by: note(MEASURED_NOTE).map(str::to_string),
            duration_ns: r.duration_ns,
            ended_early: r.totals.makespan_ns.is_some(),
            figures,
            uptime_s: r.extra_figure(schedlab_host::UPTIME_AT_START),
            cpu_before_start_us: r.extra_figure(schedlab_host::CPU_BEFORE_START_P50),
            forked_cpu_before_start_us: r.extra_figure(schedlab_host::FORKED_CPU_BEFORE_START_P50),
            idle_cpus: note(IDLE_NOTE).and_then(|n| n.parse().ok()),
            machine: host.map(|h| h.machine.clone()),
            controller_cpu_ms: r.extra_figure(schedlab_host::CONTROLLER_CPU_BEFORE_SPAWN),
            cpu_at_gate_us: r.extra_figure(schedlab_host::CPU_AT_GATE_P50),
            controller_stat_priority: r.extra_figure(schedlab_host::CONTROLLER_STAT_PRIORITY),
            other_runs_per_s: r.extra_figure(schedlab_host::OTHER_TASKS_RUNS_PER_S),
            other_run_mean_us: r.extra_figure(schedlab_host::OTHER_TASKS_RUN_MEAN_US),
            controller_runs_per_s: r.extra_figure(schedlab_host::CONTROLLER_RUNS_PER_S),
            controller_run_mean_us: r.extra_figure(schedlab_host::CONTROLLER_RUN_MEAN_US),
            controller_run_p50_us: r.extra_figure(schedlab_host::CONTROLLER_RUN_P50_US),
            other_pinned_runs_per_s: r.extra_figure(schedlab_host::OTHER_TASKS_PINNED_RUNS_PER_S),
            thread_exit_us: r.extra_figure(schedlab_host::THREAD_EXIT_P50),
            cpu_beyond_work_pct: r.extra_figure(schedlab_host::CPU_BEYOND_WORK_PCT),
            fork_cpu_us: r.extra_figure(schedlab_host::FORK_CPU_US),
            yield_cpu_us: r.extra_figure(schedlab_host::YIELD_CPU_US),
            yield_switched_pct: r.extra_figure(schedlab_host::YIELD_SWITCHED_PCT),
            timer_wakeup_us: r.extra_figure(schedlab_host::TIMER_WAKEUP_CPU_US),
            timer_return_us: r.extra_figure(schedlab_host::TIMER_RETURN_US),
            sleep_timer_to_waking_us: r.extra_figure(schedlab_host::SLEEP_TIMER_TO_WAKING_US),
            wait_run_to_signal_us: r.extra_figure(schedlab_host::WAIT_RUN_TO_SIGNAL_US),
            wait_signal_to_switch_us: r.extra_figure(schedlab_host::WAIT_SIGNAL_TO_SWITCH_US),
            idle_wakeup_mean_us: r.extra_figure(schedlab_host::IDLE_WAKEUP_MEAN),
            preempt_wakeup_us: r.extra_figure(schedlab_host::PREEMPT_WAKEUP_P50),
            sleep_timer_late_us: schedlab_host::tracing::SLEEP_PERCENTILES
                .iter()
                .map(|&p| r.extra_figure(&schedlab_host::sleep_timer_late_name(p)))
                .collect(),
            niffies_ahead_ms: (1..r.cpus)
                .map(|c| r.extra_figure(&schedlab_host::niffies_ahead_name(c)))
                .collect::<Option<Vec<f64>>>()
                .filter(|v| !v.is_empty()),
            tick_gap_us: r.extra_figure(schedlab_host::TICK_GAP_P50_US),
        }
    }

    /// Whether it is a run of this length (one that finished early reports
    /// its makespan as its length): what a kept run, report or digest, must
    /// be to stand for a run of `duration`.
    pub(super) fn is_of_length(&self, duration: u64) -> bool {
        self.duration_ns.abs_diff(duration) < duration / 10 || (self.ended_early && self.duration_ns <= duration)
    }
}

impl Digest {
    /// The digest in `out`, if there is one.
    pub(super) fn read(out: &Path) -> Result<Option<Digest>> {
        let path = out.join(FILE);
        if !path.is_file() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let d = serde_json::from_str(&text).with_context(|| {
            format!("{} is not a digest of real runs: remove it (validate then boots the kernels)", path.display())
        })?;
        Ok(Some(d))
    }

    pub(super) fn write(&self, out: &Path) -> Result<()> {
        let path = out.join(FILE);
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    }

    pub(super) fn new(kernels: BTreeMap<String, KernelDigest>) -> Digest {
        Digest {
            about: "The real runs of docs/validation.md as `schedlab validate` judges them: per policy, its kernel \
                    (file and SHA-256), the guest's calibration, the boots found crashed or disturbed, and per run \
                    (EXPERIMENT-N) its figures and what the simulation with the guest's costs takes from it. \
                    `schedlab validate --reuse-real --out DIR` judges the page again from DIR/validation-runs.json \
                    without booting anything (but to calibrate a kernel whose calibration was removed)."
                .into(),
            kernels,
        }
    }
}

/// The SHA-256 of a kernel file, hex.
pub(super) fn sha256(path: &Path) -> Result<String> {
    use sha2::Digest as _;
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(sha2::Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_keeps_what_the_judge_reads_and_reads_back_the_same() {
        let exp = &EXPERIMENTS[0];
        let w = load_workload(&experiment_common(exp, 200_000_000, 1)).unwrap();
        let mut r = simulate(&w, "eevdf").unwrap();
        r.extra.push((schedlab_host::UPTIME_AT_START.into(), 2.5));
        // A MuQSS guest's niffies, CPU by CPU from the second: kept only
        // where every CPU was read.
        assert_eq!(RunDigest::of(exp, &r).niffies_ahead_ms, None);
        for c in 1..r.cpus {
            r.extra.push((schedlab_host::niffies_ahead_name(c), 50.0 + c as f64));
        }
        let d = RunDigest::of(exp, &r);
        assert_eq!(d.niffies_ahead_ms, Some((1..r.cpus).map(|c| 50.0 + c as f64).collect()));
        assert_eq!(d.figures.len(), figures(exp, &r).len());
        assert_eq!(d.uptime_s, Some(2.5));
        assert!(d.is_of_length(200_000_000) && !d.is_of_length(400_000_000));
        let text = serde_json::to_string(&d).unwrap();
        let back: RunDigest = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        // A run's medians from the digest are those from the report.
        let (a, b) = (medians(&[back.figures]), medians(&[figures(exp, &r)]));
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
}
