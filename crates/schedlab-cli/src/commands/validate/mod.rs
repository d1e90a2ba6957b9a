//! `schedlab validate`: every simulated policy that has a bootable kernel,
//! run beside that kernel under QEMU (the vm runner) on a fixed set of
//! experiments, written as a Markdown page of simulated against real
//! figures.
//!
//! Each figure (switches/s, per-task share, run time per switch, wakeup
//! latency, migrations/s, makespan) is the median of several runs on each
//! side: seeds 1..=runs for the simulation, as many boots of the kernel for
//! the real side. Every experiment is simulated twice: with the default
//! costs (this hardware's) and with the guest's own, measured by
//! `schedlab calibrate` in boots of the same kernel, its uptime, and its
//! tasks started as the runner starts them ([`start`]). A figure outside
//! its tolerance is flagged; it is explained only when the simulation with
//! the guest's costs brings it within tolerance, a figure the page shows.
//! Anything else is unexplained: a defect of the model, or an open
//! difference whose known facts and band (open.toml, one exact entry per
//! figure, with the values it was measured at) are printed beside it.
//! `validate` exits non-zero on an unexplained figure that is not open or
//! has left its band, on an open entry whose figure moved out of its band
//! or does not exist, and when another model matches a kernel's
//! discriminating figures better than its own ([`matrix`]): so it passes
//! while nothing moved, and a model drifting from its kernel, or a note
//! outliving its difference, is caught.
//!
//! The real runs it judged are written beside the page as a digest
//! ([`digest`], docs/validation-runs.json in the repository), from which
//! `--reuse-real` judges the page again without a kernel.
//!
//! Which kernel a policy is checked against is `PolicyInfo::kernel`; the
//! kernels are ../shared/kernels/NAME.bzImage unless --kernels says where.
//!
//! `--tools` holds the presets against the real tools instead ([`tools`]).
//!
//! The files: [`experiments`] what runs, [`judge`] how a figure is read and
//! judged, [`matrix`] every model against every kernel, [`digest`] the
//! real runs as kept, open.toml (read by [`open`]) what is known of each open
//! difference, [`guest`] the real side (calibration, kept runs, disturbed
//! boots), [`start`] the runner's start simulated, [`page`] the Markdown;
//! this file runs them.

mod background;
mod digest;
mod experiments;
mod guest;
mod judge;
mod matrix;
mod open;
mod page;
mod start;
mod tools;

use crate::args::HostArgs;
use crate::commands::vm::{self, VmArgs};
use crate::simulate::{load_workload, simulate, simulate_observed, simulate_to_ftrace};
use anyhow::{Context, Result, bail};
use digest::{Digest, KernelDigest, RunDigest};
use experiments::*;
use guest::*;
use judge::*;
use rayon::prelude::*;
use schedlab_host::tracing::SLEEP_PERCENTILES;
use schedlab_policies::PolicyInfo;
use schedlab_sim::report::decisions::{DecisionCounter, Decisions};
use schedlab_sim::workload::dist::Dist;
use schedlab_sim::{Report, Workload};
use std::path::PathBuf;
use std::time::Instant;

pub struct Options {
    pub out: PathBuf,
    pub kernels: PathBuf,
    pub quick: bool,
    pub runs: Option<usize>,
    pub sched: Vec<String>,
    /// Tunables changed in the simulations only: what the kernels' figures
    /// say of a change (a planted one must fail).
    pub set: Vec<(String, i64)>,
    pub accel: schedlab_vm::Accel,
    /// Read the real runs kept by an earlier validate in `out` instead of
    /// booting the kernels again.
    pub reuse: bool,
    /// Hold the presets against the real tools they imitate ([`tools`])
    /// instead of running the experiments.
    pub tools: bool,
    /// Where to write each simulation with its own kernel's costs as
    /// ftrace text, to hold beside that kernel's trace.
    pub trace_sims: Option<PathBuf>,
}

pub fn default_out() -> PathBuf {
    PathBuf::from("schedlab-validation")
}

pub fn default_kernels() -> PathBuf {
    PathBuf::from("../shared/kernels")
}

/// One policy's results: per experiment, simulated and real figures.
struct Checked {
    policy: &'static PolicyInfo,
    kernel_file: PathBuf,
    /// Per experiment and run length: figures simulated with the default
    /// costs and with the guest's, and the real ones.
    rows: Vec<Row>,
    /// The guest's costs as `--cost` takes them, and what calibrate said
    /// of the figures behind them.
    guest_costs: Vec<(String, u64)>,
    guest_notes: String,
    /// Host CPUs idle before the real runs, the lowest seen, and how many
    /// of the runs recorded it (runs kept by older versions did not).
    idle_min: f64,
    idle_runs: usize,
    real_runs: usize,
    /// The guest machine as the real runs' reports describe it.
    machine: String,
    /// Boots in which the kernel crashed (each booted again), as kept in
    /// POLICY-crashes.txt: "EXPERIMENT run N: first line of the oops".
    crashes: Vec<String>,
    /// Boots whose figures were not the kernel's (see [`disturbance`]),
    /// each booted again, as kept in POLICY-disturbed.txt.
    disturbed: Vec<String>,
    /// The kernel file's SHA-256 (None when only its digest is here), the
    /// guest's calibration and each real run as the judge read them: the
    /// digest's part of this policy.
    sha256: Option<String>,
    calibration: serde_json::Value,
    runs: std::collections::BTreeMap<String, RunDigest>,
}

impl Checked {
    fn digest(&self) -> KernelDigest {
        KernelDigest {
            kernel: self.kernel_file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            sha256: self.sha256.clone(),
            calibration: self.calibration.clone(),
            crashes: self.crashes.clone(),
            disturbed: self.disturbed.clone(),
            runs: self.runs.clone(),
        }
    }
}

struct Row {
    exp: &'static Experiment,
    sim: Vec<Figure>,
    guest: Vec<Figure>,
    real: Vec<Figure>,
    secs: f64,
    /// What the simulation with the guest's costs took from the real runs
    /// besides the costs ([`Guest`]), to simulate other models as it.
    start: Start,
}

/// The placement decisions of `w` simulated under `sched`.
fn simulate_decisions(w: &Workload, sched: &str) -> Result<Decisions> {
    let t = &w.machine.topology;
    let llc = (0..w.nr_cpus()).map(|c| Some(t.llc_of(c))).collect();
    let mut counter = DecisionCounter::for_workload(llc, 0, u64::MAX, w);
    simulate_observed(w, sched, &mut counter)?;
    Ok(counter.counts)
}

/// OUT/validation, where the real runs' reports are kept; created here,
/// and removed again when the run ends if it made it and left it empty (a
/// validate that reused every run from the digest writes nothing there).
fn data_dir(out: &std::path::Path) -> Result<(std::path::PathBuf, RemoveIfEmpty)> {
    let data = out.join("validation");
    let made = !data.is_dir();
    std::fs::create_dir_all(&data)
        .with_context(|| format!("cannot create {}: check the directory is writable", data.display()))?;
    Ok((data.clone(), RemoveIfEmpty(made.then_some(data))))
}

/// A directory this run made, removed when dropped if still empty.
struct RemoveIfEmpty(Option<std::path::PathBuf>);

impl Drop for RemoveIfEmpty {
    fn drop(&mut self) {
        if let Some(dir) = &self.0 {
            // remove_dir refuses a directory that holds anything.
            let _ = std::fs::remove_dir(dir);
        }
    }
}

pub fn run(opts: Options) -> Result<()> {
    if opts.tools {
        return tools::run(&opts);
    }
    let runs = opts.runs.unwrap_or(if opts.quick { 1 } else { 3 });
    if !(1..=20).contains(&runs) {
        bail!("--runs {runs}: give from 1 to 20 runs per figure");
    }
    if let Some(dir) = &opts.trace_sims {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--trace-sims {}: cannot make that directory", dir.display()))?;
    }
    // What an earlier validate kept of its real runs, where their reports
    // are not (a clone of the repository: docs/validation-runs.json).
    let kept = if opts.reuse { Digest::read(&opts.out)? } else { None };
    let policies = choose_policies(&opts, kept.as_ref())?;
    let experiments: Vec<&Experiment> = EXPERIMENTS.iter().filter(|e| !opts.quick || e.quick).collect();
    let (data, _data_dir) = data_dir(&opts.out)?;
    let started = Instant::now();
    let mut checked = Vec::new();
    for (policy, kernel_file) in policies {
        let kept = kept.as_ref().and_then(|d| d.kernels.get(policy.name));
        let mut kernel = Kernel::new(&opts, &data, policy, kernel_file, kept)?;
        // The decisions need guests of more vCPUs than the host has CPUs,
        // and several runs: not part of --quick.
        let decision_experiments = DECISION_EXPERIMENTS.iter().filter(|_| !opts.quick);
        for exp in experiments.iter().copied().chain(decision_experiments) {
            let row = kernel.experiment(&opts, exp, runs, started)?;
            kernel.c.rows.push(row);
        }
        checked.push(kernel.c);
    }

    let matrix = cross_model(&opts, runs, &checked)?;
    let (text, tallies, unexplained) = page::page(&opts, runs, &checked, &matrix);
    for (name, t) in tallies {
        eprintln!(
            "schedlab: validate: {name}: {} of {} figures within tolerance, {} explained by the guest's costs, uptime and start, {} not \
             compared, {} unexplained",
            t.within, t.figures, t.explained, t.not_compared, t.unexplained
        );
    }
    let stale = stale_open_entries(&checked);
    let md = opts.out.join("validation.md");
    // The presets' section is measured by `validate --tools` alone.
    let old = std::fs::read_to_string(&md).unwrap_or_default();
    let text = match tools::kept_section(&old) {
        Some(section) => tools::with_section(&text, section),
        None => text,
    };
    std::fs::write(&md, text).with_context(|| format!("cannot write {}", md.display()))?;
    Digest::new(checked.iter().map(|c| (c.policy.name.to_string(), c.digest())).collect()).write(&opts.out)?;
    write_figures(&opts.out, &checked)?;
    eprintln!(
        "schedlab: wrote {} and {} ({} policies, {} experiments, {} runs each, {:.0} s)",
        md.display(),
        digest::FILE,
        checked.len(),
        experiments.len(),
        runs,
        started.elapsed().as_secs_f64()
    );
    // Each failure on a line of its own (`schedlab: validate: fails: `),
    // then one line that counts them.
    let worse = matrix.failures();
    let kinds = [
        (
            &unexplained,
            "figure(s) outside tolerance that the guest's costs, uptime and start do not explain, and that no open \
             difference of open.toml holds where it was measured (fix the model, or measure what explains them)",
        ),
        (
            &stale,
            "open difference(s) of crates/schedlab-cli/src/commands/validate/open.toml whose figure is no longer \
             flagged and has left its band, or does not exist (remove them, or measure them again)",
        ),
        (&worse, "kernel(s) whose discriminating figures another model matches better than its own"),
    ];
    let mut counts = Vec::new();
    for (list, what) in kinds {
        for item in list.iter() {
            eprintln!("{FAILS}{item}");
        }
        if !list.is_empty() {
            counts.push(format!("{} {what}", list.len()));
        }
    }
    if !counts.is_empty() {
        bail!("{} (each named above)", counts.join("; "));
    }
    Ok(())
}

/// How validate names each thing it fails on, one a line.
pub(crate) const FAILS: &str = "schedlab: validate: fails: ";

/// The page's figures as data, DIR/validation-figures.json: per policy,
/// experiment and figure, the medians of both simulations and of the real
/// runs, the real runs' range, and the outcome (what an open difference's
/// band is read from).
fn write_figures(out: &std::path::Path, checked: &[Checked]) -> Result<()> {
    let mut all = Vec::new();
    for c in checked {
        for row in &c.rows {
            for f in row_keys(row) {
                let find = |v: &[Figure]| v.iter().find(|x| x.key == f.key).map(|x| x.value).filter(|v| !v.is_nan());
                let range = row.real.iter().find(|x| x.key == f.key).map(|x| [x.range.0, x.range.1]);
                all.push(serde_json::json!({
                    "policy": c.policy.name,
                    "experiment": row.exp.id,
                    "figure": f.key,
                    "label": f.label,
                    "kind": format!("{:?}", f.kind),
                    "sim": find(&row.sim),
                    "guest": find(&row.guest),
                    "real": find(&row.real),
                    "real_range": range.filter(|r| r.iter().all(|v| v.is_finite())),
                    "outcome": format!("{:?}", outcome(row, &f.key)),
                }));
            }
        }
    }
    let path = out.join("validation-figures.json");
    std::fs::write(&path, serde_json::to_string_pretty(&all)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Every model judged on every kernel's runs ([`matrix`]). The default
/// simulation does not depend on the kernel, so it runs once per model and
/// experiment; a model's own rows are those of its section.
fn cross_model(opts: &Options, runs: usize, checked: &[Checked]) -> Result<matrix::Matrix> {
    use matrix::{KernelRows, RealRow};
    let kernels: Vec<KernelRows> = checked
        .iter()
        .map(|c| KernelRows {
            name: c.policy.name,
            rows: c.rows.iter().map(|r| RealRow { id: r.exp.id, real: &r.real, secs: r.secs }).collect(),
        })
        .collect();
    let mut experiments: Vec<&'static Experiment> = Vec::new();
    for row in checked.iter().flat_map(|c| &c.rows) {
        if !experiments.iter().any(|e| e.id == row.exp.id) {
            experiments.push(row.exp);
        }
    }
    let jobs: Vec<(&'static str, &'static Experiment)> =
        kernels.iter().flat_map(|k| experiments.iter().map(move |&e| (k.name, e))).collect();
    let defaults: std::collections::HashMap<(&str, &str), Vec<Figure>> = jobs
        .par_iter()
        .map(|&(model, exp)| Ok(((model, exp.id), medians(&simulated(opts, exp, model, runs, exp.secs * SEC, None)?))))
        .collect::<Result<_>>()?;
    matrix::Matrix::new(&kernels, |model, k, r| {
        let (c, row) = (&checked[k], &checked[k].rows[r]);
        if model == c.policy.name {
            return Ok((row.sim.clone(), row.guest.clone()));
        }
        let guest = Guest { costs: &c.guest_costs, start: row.start.clone(), own: false };
        let sims = simulated(opts, row.exp, model, runs, row.exp.secs * SEC, Some(&guest))?;
        Ok((defaults[&(model, row.exp.id)].clone(), medians(&sims)))
    })
}

/// How a policy's kernel is booted, as its model's defaults assume
/// (MuQSS's rqshare, the sched_ext scheduler a BPF model follows), under
/// which label, and the guest's costs there (measured now, or kept in
/// `data`) with the line that says what they rest on.
struct PolicyKernel {
    label: &'static str,
    vm_args: VmArgs,
    guest_costs: Vec<(String, u64)>,
    guest_notes: String,
    /// The calibration they were read from.
    calibration: serde_json::Value,
}

fn policy_kernel(
    opts: &Options,
    data: &std::path::Path,
    policy: &'static PolicyInfo,
    kernel_file: &std::path::Path,
    kept: Option<&serde_json::Value>,
) -> Result<PolicyKernel> {
    let label = policy.kernel.map_or(policy.name, |k| k.0);
    let vm_args = VmArgs {
        accel: opts.accel,
        memory: 1024,
        timeout: None,
        boot_args: policy.boot_args.iter().map(|a| a.to_string()).collect(),
        scx: policy.scx.map(String::from),
    };
    let file = data.join(format!("{}-calibration.json", policy.name));
    let c = guest_costs(&file, opts.reuse, kept, kernel_file, &vm_args, label)?;
    Ok(PolicyKernel { label, vm_args, guest_costs: c.costs, guest_notes: c.notes, calibration: c.calibration })
}

/// One policy's kernel as validate boots it, and what it has found so far.
struct Kernel<'a> {
    c: Checked,
    label: &'static str,
    data: &'a std::path::Path,
    vm_args: VmArgs,
    crashes_file: PathBuf,
    disturbed_file: PathBuf,
    kept: Option<&'a KernelDigest>,
}

impl<'a> Kernel<'a> {
    /// The guest's costs (measured now, or kept) and the boots an earlier
    /// validate found crashed or disturbed (kept only when its runs are),
    /// from DIR/validation/ or else from the digest `kept`.
    fn new(
        opts: &Options,
        data: &'a std::path::Path,
        policy: &'static PolicyInfo,
        kernel_file: PathBuf,
        kept: Option<&'a KernelDigest>,
    ) -> Result<Self> {
        let sha256 = if kernel_file.is_file() { Some(digest::sha256(&kernel_file)?) } else { None };
        if let (Some(now), Some(then)) = (&sha256, kept.and_then(|k| k.sha256.as_ref()))
            && now != then
        {
            bail!(
                "{}: the runs kept in {} were measured in another build of this kernel (SHA-256 {then}, this one's \
                 {now}): run validate without --reuse-real to boot this one",
                kernel_file.display(),
                opts.out.join(digest::FILE).display()
            );
        }
        let PolicyKernel { label, vm_args, guest_costs, guest_notes, calibration } =
            policy_kernel(opts, data, policy, &kernel_file, kept.map(|k| &k.calibration))?;
        let mut c = Checked {
            policy,
            kernel_file,
            rows: Vec::new(),
            guest_costs,
            guest_notes,
            idle_min: f64::INFINITY,
            idle_runs: 0,
            real_runs: 0,
            machine: String::new(),
            crashes: Vec::new(),
            disturbed: Vec::new(),
            sha256: sha256.or_else(|| kept.and_then(|k| k.sha256.clone())),
            calibration,
            runs: Default::default(),
        };
        let crashes_file = data.join(format!("{}-crashes.txt", policy.name));
        let disturbed_file = data.join(format!("{}-disturbed.txt", policy.name));
        let kept_lists = [kept.map(|k| &k.crashes), kept.map(|k| &k.disturbed)];
        let files = [(&crashes_file, &mut c.crashes), (&disturbed_file, &mut c.disturbed)];
        for ((file, list), kept) in files.into_iter().zip(kept_lists) {
            if opts.reuse {
                match std::fs::read_to_string(file) {
                    Ok(text) => *list = text.lines().map(str::to_string).collect(),
                    Err(_) => *list = kept.cloned().unwrap_or_default(),
                }
            } else if file.exists() {
                std::fs::remove_file(file).with_context(|| format!("cannot remove {}", file.display()))?;
            }
        }
        Ok(Kernel { c, label, data, vm_args, crashes_file, disturbed_file, kept })
    }

    /// One experiment's row: simulated with both sets of costs, and `runs`
    /// real runs, kept or booted now.
    fn experiment(&mut self, opts: &Options, exp: &'static Experiment, runs: usize, started: Instant) -> Result<Row> {
        // --quick runs fewer experiments once, each as long as in the
        // full suite: the tolerances hold for runs of that length (a
        // 1 s run's mean run per switch moved 12% with its first slices).
        let duration = exp.secs * SEC;
        let sims = simulated(opts, exp, self.c.policy.name, runs, duration, None)?;
        let mut reals = Vec::new();
        let mut uptimes = Vec::new();
        let mut before_start = Vec::new();
        let mut forked_start = Vec::new();
        let mut thread_exit = Vec::new();
        let (mut beyond_work, mut fork_cpu) = (Vec::new(), Vec::new());
        let (mut timer_wakeup, mut sleep_late) = (Vec::new(), Vec::new());
        let (mut yield_cpu, mut yield_switched) = (Vec::new(), Vec::new());
        let (mut timer_return, mut timer_to_waking) = (Vec::new(), Vec::new());
        let (mut to_signal, mut after_signal, mut idle_wakeup) = (Vec::new(), Vec::new(), Vec::new());
        let mut preempt_wakeup = Vec::new();
        let mut controller_cpu = Vec::new();
        let mut at_gate = Vec::new();
        let mut machine_work = Vec::new();
        let mut niffies_ahead = Vec::new();
        let mut tick_gap = Vec::new();
        for run in 1..=runs {
            let name = format!("{}-{run}", exp.id);
            let kept = self.data.join(format!("{}-{name}.json", self.c.policy.name));
            // A kept report, or else the digest of one.
            let reused = if opts.reuse {
                kept_run(&kept, exp, duration)?
                    .or_else(|| self.kept.and_then(|k| k.runs.get(&name)).filter(|d| d.is_of_length(duration)).cloned())
            } else {
                None
            };
            let real = match reused {
                Some(d) => d,
                None => {
                    eprintln!(
                        "schedlab: validate: {} {} run {run}/{runs} in {} ({:.0} s so far)",
                        self.c.policy.name,
                        exp.id,
                        self.c.kernel_file.display(),
                        started.elapsed().as_secs_f64()
                    );
                    let r = self.boot(exp, run, duration)?;
                    std::fs::write(&kept, serde_json::to_string(&r)?)
                        .with_context(|| format!("cannot write {}", kept.display()))?;
                    RunDigest::of(exp, &r)
                }
            };
            uptimes.extend(real.uptime_s);
            before_start.push(real.cpu_before_start_us);
            forked_start.push(real.forked_cpu_before_start_us);
            thread_exit.push(real.thread_exit_us);
            beyond_work.push(real.cpu_beyond_work_pct);
            fork_cpu.push(real.fork_cpu_us);
            timer_wakeup.push(real.timer_wakeup_us);
            yield_cpu.push(real.yield_cpu_us);
            yield_switched.push(real.yield_switched_pct);
            sleep_late.push(real.sleep_timer_late_us.clone());
            timer_return.push(real.timer_return_us);
            timer_to_waking.push(real.sleep_timer_to_waking_us);
            to_signal.push(real.wait_run_to_signal_us);
            after_signal.push(real.wait_signal_to_switch_us);
            idle_wakeup.push(real.idle_wakeup_mean_us);
            preempt_wakeup.push(real.preempt_wakeup_us);
            controller_cpu.push(real.controller_cpu_ms);
            at_gate.push(real.cpu_at_gate_us);
            machine_work.push(real.other_runs_per_s.zip(real.other_run_mean_us));
            niffies_ahead.push(real.niffies_ahead_ms.clone());
            tick_gap.push(real.tick_gap_us);
            reals.push(real.figures.clone());
            if !exp.figures.decisions
                && let Some(machine) = &real.machine
            {
                self.c.machine.clone_from(machine);
                if let Some(idle) = real.idle_cpus {
                    self.c.idle_min = self.c.idle_min.min(idle);
                    self.c.idle_runs += 1;
                }
                self.c.real_runs += 1;
            }
            self.c.runs.insert(name, real);
        }
        // The guest's kernel had been up a few seconds when each run began
        // (runs kept from before 2026-11-25 do not say), not the default
        // hour.
        uptimes.sort_by(f64::total_cmp);
        // The runner's start, where every run measured it: its threads'
        // CPU time before it (runs kept from before 2026-11-25 did not),
        // their CPU at the gate and the controller's before it created
        // them (nor runs kept from before 2026-11-26).
        let start = Start {
            uptime: uptimes.get(uptimes.len() / 2).map(|s| (s * 1e9) as u64),
            before_start: median_of_every(before_start, 1e3),
            // Runs booted since 2026-12-07 give a forked thread's apart;
            // before, the one figure was the median over all the threads,
            // which the forked ones made where they outnumbered the rest.
            forked_start: median_of_every(forked_start, 1e3),
            // Where every run saw its threads exit (a finite workload's,
            // runs booted since 2026-11-27).
            thread_exit: median_of_every(thread_exit, 1e3),
            // Runs booted since 2026-11-27: a percentage is 10 us per ms of
            // a run.
            run_stretch: median_of_every(beyond_work, 1e4).filter(|&s| s > 0),
            fork: median_of_every(fork_cpu, 1e3),
            // Runs booted since the runner counted its yields (2026-11-28).
            // The switched share is kept to a tenth of a percent (the
            // runner's own resolution), not truncated to a whole one.
            yield_cost: median_of_every(yield_cpu, 1e3)
                .zip(median_of_every(yield_switched, 10.0).map(|tenths| tenths as f64 / 1000.0)),
            // Runs booted since the runner measured them (2026-11-27),
            // where threads slept on timers: what a timed wakeup cost them
            // and how late it came.
            timer_wakeup: median_of_every(timer_wakeup, 1e3),
            timer_lateness: timer_lateness(sleep_late),
            // Runs booted since the runner split a timed sleep (2026-11-28).
            timer_return: median_of_every(timer_return, 1e3),
            timer_to_waking: median_of_every(timer_to_waking, 1e3),
            wait_hop: median_of_every(to_signal, 1e3).zip(median_of_every(after_signal, 1e3)),
            idle_wakeup: median_of_every(idle_wakeup, 1e3),
            preempt_wakeup: median_of_every(preempt_wakeup, 1e3),
            at_gate: median_of_every(at_gate, 1e3),
            controller_cpu: median_of_every(controller_cpu, 1e6),
            // Where every run traced the whole guest (runs kept from before
            // 2026-11-27 traced the workload's threads only).
            machine_work: machine_work.into_iter().collect::<Option<Vec<_>>>().filter(|v| !v.is_empty()).map(|v| {
                let (rates, means): (Vec<f64>, Vec<f64>) = v.into_iter().unzip();
                background::MachineWork { runs_per_s: median(rates), run_mean: (median(means) * 1e3) as u64 }
            }),
            // Runs booted since the runner read it (2026-11-27): the CPUs'
            // ticks as far apart as in the runs (a 4-vCPU guest on 2 host
            // CPUs spreads them far wider than calibrate's 2-vCPU boots).
            tick_gap: median_of_every(tick_gap, 1e3),
            niffies_ahead: niffies_ahead.into_iter().collect::<Option<Vec<Vec<f64>>>>().and_then(|runs| {
                let cpus = runs.first()?.len();
                (cpus > 0 && runs.iter().all(|r| r.len() == cpus))
                    .then(|| (0..cpus).map(|c| median(runs.iter().map(|r| r[c]).collect())).collect())
            }),
        };
        let guest = Guest { costs: &self.c.guest_costs, start: start.clone(), own: true };
        let guest_sims = simulated(opts, exp, self.c.policy.name, runs, duration, Some(&guest))?;
        Ok(Row {
            exp,
            sim: medians(&sims),
            guest: medians(&guest_sims),
            real: medians(&reals),
            secs: duration as f64 / 1e9,
            start,
        })
    }

    /// Run `run` of `exp` in a boot of the kernel, booted again when the
    /// kernel crashed or the host disturbed it, up to MAX_BOOTS in a row.
    fn boot(&mut self, exp: &Experiment, run: usize, duration: u64) -> Result<Report> {
        let idle = wait_for_quiet();
        let cm = experiment_common(exp, duration, run as u64);
        let w = load_workload(&cm)?;
        let host = HostArgs { no_trace: false, no_groups: false, trace_events: Vec::new() };
        let (mut failed, mut disturbed) = (0, 0);
        let mut r = loop {
            let attempt =
                vm::run(&cm, &w, &self.c.kernel_file, self.label, &self.vm_args, &host, false).map(|(r, _)| r);
            let failure = attempt.as_ref().err().and_then(kernel_failure);
            let (why, list, file, count) = match (attempt, failure) {
                // A kernel that crashes is a finding, kept on the
                // page; the run is booted once more.
                (Err(_), Some(failure)) => (failure, &mut self.c.crashes, &self.crashes_file, &mut failed),
                (attempt, _) => {
                    let r = attempt?;
                    match disturbance(&r, exp.cpus) {
                        // Not the kernel's figures: booted again
                        // once the host is quiet.
                        Some(why) => (why, &mut self.c.disturbed, &self.disturbed_file, &mut disturbed),
                        None => break r,
                    }
                }
            };
            let what = format!("{} run {run}: {why}", exp.id);
            *count += 1;
            if *count == MAX_BOOTS {
                bail!(
                    "{}: {what}, in {MAX_BOOTS} boots in a row{}",
                    self.label,
                    if failed == MAX_BOOTS {
                        ""
                    } else {
                        ": validate needs a quiet host (stop what runs beside it, or run it again later)"
                    }
                );
            }
            eprintln!("schedlab: validate: {} {what}; booting it again", self.label);
            append_line(file, &what)?;
            list.push(what);
            wait_for_quiet();
        };
        if let Some(h) = r.host.as_mut() {
            h.notes.push(format!("{IDLE_NOTE}{idle:.2}"));
            h.notes.push(format!("{}{}", digest::MEASURED_NOTE, digest::this_commit()));
        }
        Ok(r)
    }
}

/// What the simulation with the guest's costs takes from the guest.
struct Guest<'a> {
    costs: &'a [(String, u64)],
    start: Start,
    /// Simulated on the policy whose kernel measured them (not another
    /// model held against that kernel).
    own: bool,
}

/// How the real runs started, each the runs' median, in ns.
#[derive(Clone, Default)]
struct Start {
    /// The kernel's uptime when the runs began.
    uptime: Option<u64>,
    /// A task thread's CPU time before t0, to start the tasks as the
    /// runner does (start.rs).
    before_start: Option<u64>,
    /// A thread forked in the run: its CPU time before its work.
    forked_start: Option<u64>,
    /// From a task thread's program end to its leaving the CPU for good.
    thread_exit: Option<u64>,
    /// CPU time a run took beyond its work, per ms of it.
    run_stretch: Option<u64>,
    /// A forking thread's CPU time per fork.
    fork: Option<u64>,
    /// A yielder's CPU time per sched_yield beyond its work, and the share
    /// of its yields it left its CPU at.
    yield_cost: Option<(u64, f64)>,
    /// A thread's CPU time per timed wakeup, beyond its work.
    timer_wakeup: Option<u64>,
    /// A pipe reader's run split at the wakeup it sends: from its switch-in
    /// to the wakeup beyond its work, and from the wakeup to its switch-out.
    wait_hop: Option<(u64, u64)>,
    /// From a wakeup sent to an idle CPU to the wakee's run there.
    idle_wakeup: Option<u64>,
    /// From a wakeup that preempted a busy CPU to the wakee's run there.
    preempt_wakeup: Option<u64>,
    /// How late the sleeps' timers fired on busy CPUs, at
    /// `SLEEP_PERCENTILES`: each percentile the runs' median.
    timer_lateness: Option<[u64; SLEEP_PERCENTILES.len()]>,
    /// From a timed sleep's switch back in to its return, which its
    /// thread's latency holds.
    timer_return: Option<u64>,
    /// From a sleep's timer's expiry on a busy CPU to its sched_waking.
    timer_to_waking: Option<u64>,
    /// Of that, what a thread had used at the start gate.
    at_gate: Option<u64>,
    /// The runner's controller's CPU time before it created the threads,
    /// which its threads inherit the effect of.
    controller_cpu: Option<u64>,
    /// What the guest ran besides the workload ([`background`]).
    machine_work: Option<background::MachineWork>,
    /// On MuQSS: how far each CPU's niffies stood ahead of the first
    /// CPU's at the start (ms, from the second CPU on), each the median of
    /// the runs, where every run read them; the simulation's CPUs start as
    /// far apart.
    niffies_ahead: Option<Vec<f64>>,
    /// How far apart the CPUs' ticks of one jiffy came, the runs' median
    /// gap (ns), where every run measured it: the simulation's tick_spread
    /// is the width whose draws differ by that at the median.
    tick_gap: Option<u64>,
}

/// The median of `values` in ns (each given in units of `ns` ns), where
/// every run measured it.
fn median_of_every(values: Vec<Option<f64>>, ns: f64) -> Option<u64> {
    let values = values.into_iter().collect::<Option<Vec<f64>>>().filter(|v| !v.is_empty())?;
    Some((median(values) * ns) as u64)
}

/// The runs' timer lateness (us at `SLEEP_PERCENTILES`), each percentile
/// the median of the runs, in ns; where every run measured it.
fn timer_lateness(runs: Vec<Option<Vec<f64>>>) -> Option<[u64; SLEEP_PERCENTILES.len()]> {
    let runs = runs.into_iter().collect::<Option<Vec<Vec<f64>>>>().filter(|r| !r.is_empty())?;
    if runs.iter().any(|r| r.len() != SLEEP_PERCENTILES.len()) {
        return None;
    }
    let mut q = [0; SLEEP_PERCENTILES.len()];
    for (i, slot) in q.iter_mut().enumerate() {
        *slot = (median(runs.iter().map(|r| r[i]).collect()) * 1e3) as u64;
    }
    // Medians of rising columns may not rise: keep them a distribution.
    for i in 1..q.len() {
        q[i] = q[i].max(q[i - 1]);
    }
    Some(q)
}

/// The distribution a simulation draws `timer_latency` from.
fn lateness_dist(q: &[u64; SLEEP_PERCENTILES.len()]) -> Dist {
    Dist::Quantiles(SLEEP_PERCENTILES.iter().zip(q).map(|(&p, &ns)| (p, ns)).collect())
}

/// `exp` simulated under `policy` with seeds 1..=runs, in parallel, with
/// the defaults or as in the guest.
fn simulated(
    opts: &Options,
    exp: &Experiment,
    policy: &str,
    runs: usize,
    duration: u64,
    guest: Option<&Guest>,
) -> Result<Vec<Vec<Figure>>> {
    (1..=runs as u64)
        .into_par_iter()
        .map(|seed| {
            let mut cm = experiment_common(exp, duration, seed);
            cm.set.clone_from(&opts.set);
            if let Some(g) = guest {
                cm.cost = g.costs.iter().map(|(name, ns)| (name.clone(), Dist::Const(*ns))).collect();
                cm.uptime = g.start.uptime;
            }
            let mut w = load_workload(&cm)?;
            if let Some(gap) = guest.and_then(|g| g.start.tick_gap) {
                w.machine.costs.tick_spread = Some(schedlab_host::calibrate::tick_spread_of_gap(gap));
            }
            // MuQSS's CPUs start with their niffies as far apart as the
            // runs read them.
            if let Some(ahead) = guest.and_then(|g| g.start.niffies_ahead.as_ref()) {
                w.machine.niffies_ahead = std::iter::once(0).chain(ahead.iter().map(|ms| (ms * 1e6) as i64)).collect();
            }
            // A thread forked in the run pays what the runs' forked threads
            // paid before their work (their attributes' system calls besides
            // the thread's own start, which is all calibrate measures: 69-78
            // us in fork-burst's runs against 17-51 us), where the runs say;
            // runs booted before 2026-12-07 give the median over all threads.
            if let Some(forked_start) = guest.and_then(|g| g.start.forked_start.or(g.start.before_start))
                && w.forks()
            {
                w.machine.costs.thread_start = forked_start;
            }
            // A thread that ends in the run pays its exit there, as the
            // real runs' threads did (the trace's figure).
            if let Some(exit) = guest.and_then(|g| g.start.thread_exit) {
                w.machine.costs.thread_exit = exit;
            }
            // What the runs' threads paid beyond their work (runs booted
            // since 2026-11-27): the CPU the machine took from a run without
            // a switch, and a fork in the runner, which calibrate's clone
            // alone is a third of (fork-burst: 250-450 us against 73-155).
            if let Some(stretch) = guest.and_then(|g| g.start.run_stretch) {
                w.machine.costs.run_stretch = stretch;
            }
            if let Some(fork) = guest.and_then(|g| g.start.fork) {
                w.machine.costs.fork = fork;
            }
            // A yield as the runs' yielders paid it: calibrate's sched_yield
            // has nothing to switch to (3-4 us under TCG), where one that
            // switches away cost the yielder 20-100 us more in the runs.
            // The simulation charges the switch back to it as
            // `context_switch`, so a yield pays the rest.
            if let Some((cpu, switched)) = guest.and_then(|g| g.start.yield_cost) {
                let switch_back = (w.machine.costs.context_switch as f64 * switched) as u64;
                w.machine.costs.syscall = w.machine.costs.syscall.max(cpu.saturating_sub(switch_back));
            }
            // A timed wakeup as the runs' threads paid it (one that
            // preempts a busy CPU costs more than calibrate's on an idle
            // one: jitter's 80-110 us against 60), and its timer as late as
            // the runs' were, tail included: a timer a period late skips
            // an expiry of cyclictest's.
            if let Some(cost) = guest.and_then(|g| g.start.timer_wakeup) {
                w.machine.costs.timer_wakeup = cost;
            }
            // The lateness runs to the expiry, the wakeup from its
            // sched_waking (the expiry handler's 10-20 us under TCG
            // between), and a thread sees its wakeup once the sleep has
            // returned to it (the sleep's return, 25-30 us), where the
            // runs split the sleep so.
            let to_waking = guest.and_then(|g| g.start.timer_to_waking).unwrap_or(0);
            if let Some(q) = guest.and_then(|g| g.start.timer_lateness) {
                w.machine.costs.timer_latency = lateness_dist(&q.map(|late| late + to_waking));
            }
            if let Some(ret) = guest.and_then(|g| g.start.timer_return) {
                w.machine.costs.timer_return = ret;
            }
            // A wakeup sent to an idle CPU takes as long to run its task as
            // the runs' did on average (their trace's sched_waking to the
            // switch-in; a rate of such wakeups follows the mean), where
            // they measured it: calibrate's idle_exit is another boot's,
            // and this machine's guests slow down by the hour.
            if let Some(delay) = guest.and_then(|g| g.start.idle_wakeup) {
                w.machine.costs.idle_exit = delay;
            }
            // And one that preempts a busy CPU switches as late as in the
            // runs (sched_waking to the switch-in, at the median: the
            // interrupt's return into schedule(), 51-93 us under TCG),
            // where they measured it; the preempted task runs meanwhile.
            if let Some(delay) = guest.and_then(|g| g.start.preempt_wakeup) {
                w.machine.costs.wake_preempt = delay;
            }
            // A pipe reader's run as the runs' readers split it (lat-ctx:
            // 30 us from its switch-in to the wakeup it sends, beyond its
            // work, and 60 us from there to its switch-out, against
            // calibrate's 12 us switch and 27 us IPI): the first is the
            // switch and the read's return (`wait_wakeup`), the second the
            // write's return and the next read, the reply's IPI included
            // where it woke another, idle CPU, paid after every such
            // wakeup (`signal_return`; bpfland's readers share one CPU and
            // pay it all the same: 28-30 us).
            if let Some((to_signal, after)) = guest.and_then(|g| g.start.wait_hop) {
                w.machine.costs.wait_wakeup = to_signal.saturating_sub(w.machine.costs.context_switch);
                w.machine.costs.signal_return = after;
                w.machine.costs.wake_remote = 0;
            }
            // The guest's own work runs beside the workload from the
            // machine's start, not forked by the runner's controller.
            let beside = |w: Workload| match guest.and_then(|g| g.start.machine_work) {
                Some(work) => background::with_machine_work(&w, work),
                None => w,
            };
            let trace_to = match (guest, &opts.trace_sims) {
                (Some(g), Some(dir)) if g.own => Some(dir.join(format!("{policy}-{}-{seed}.txt", exp.id))),
                _ => None,
            };
            if exp.figures.decisions {
                // Decisions are counted over the whole run, start-up
                // included: the runner's start is not simulated for them.
                let w = beside(w);
                if let Some(path) = &trace_to {
                    simulate_to_ftrace(&w, policy, path)?;
                }
                return Ok(decision_figures(&simulate_decisions(&w, policy)?));
            }
            let started = guest.and_then(|g| {
                let s = &g.start;
                start::runner_start(&w, s.before_start?, s.at_gate, s.controller_cpu.unwrap_or(0))
            });
            let w = beside(started.unwrap_or(w));
            let report = match &trace_to {
                Some(path) => simulate_to_ftrace(&w, policy, path)?,
                None => simulate(&w, policy)?,
            };
            Ok(figures(exp, &report))
        })
        .collect()
}

/// The open.toml entries for an experiment that ran on their policy whose
/// figure was not unexplained there.
fn stale_open_entries<'a>(checked: &'a [Checked]) -> Vec<String> {
    let mut stale = Vec::new();
    for o in open::all() {
        let Some(c) = checked.iter().find(|c| c.policy.name == o.policy) else { continue };
        let Some(row) = c.rows.iter().find(|r| r.exp.id == o.experiment) else { continue };
        if !row.sim.iter().chain(&row.real).any(|f| f.key == o.figure) {
            stale.push(format!("{} {} {} (no such figure)", o.policy, o.experiment, o.figure));
            continue;
        }
        // A difference that did not show in these runs stays open while
        // its figures are where it was measured (a figure near its
        // tolerance is flagged in some boots and not in others); one that
        // moved away was fixed or changed, and its entry must say so.
        let find = |v: &'a [Figure]| v.iter().find(|f| f.key == o.figure);
        if outcome(row, &o.figure) != Outcome::Unexplained
            && let Some(why) = o.band_miss(find(&row.sim), find(&row.guest), find(&row.real), row.secs)
        {
            stale.push(format!("{} {} {} (no longer flagged, {why})", o.policy, o.experiment, o.figure));
        }
    }
    stale
}

/// The policies to check and their kernel files. Named policies must have
/// a kernel; by default every policy whose kernel file is there.
/// With `kept` (--reuse-real), a policy whose runs it holds needs no kernel.
fn choose_policies(opts: &Options, kept: Option<&Digest>) -> Result<Vec<(&'static PolicyInfo, PathBuf)>> {
    let mut out = Vec::new();
    let in_digest = |name: &str| kept.is_some_and(|d| d.kernels.contains_key(name));
    if opts.sched.is_empty() {
        for p in schedlab_policies::all() {
            if let Some((file, _)) = p.kernel {
                let path = opts.kernels.join(format!("{file}.bzImage"));
                if path.is_file() || in_digest(p.name) {
                    out.push((p, path));
                } else {
                    eprintln!("schedlab: validate: {} skipped: no {}", p.name, path.display());
                }
            }
        }
        if out.is_empty() {
            bail!(
                "no guest kernel found in {}: give the directory of the *.bzImage files with --kernels",
                opts.kernels.display()
            );
        }
        return Ok(out);
    }
    for name in &opts.sched {
        let Some(p) = schedlab_policies::all().into_iter().find(|p| p.name == name) else {
            bail!(
                "unknown scheduler '{name}': choose one of {}",
                schedlab_policies::all()
                    .iter()
                    .filter(|p| p.kernel.is_some())
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        };
        let Some((file, _)) = p.kernel else {
            bail!("{name} has no bootable kernel to be checked against (see `schedlab list`)");
        };
        let path = opts.kernels.join(format!("{file}.bzImage"));
        if !path.is_file() && !in_digest(p.name) {
            bail!(
                "{} is not there: build it with tools/kernel/build.sh or give its directory with --kernels",
                path.display()
            );
        }
        out.push((p, path));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boot_that_measured_the_host_is_named() {
        let w = load_workload(&experiment_common(&EXPERIMENTS[0], 10_000_000, 1)).unwrap();
        let mut r = simulate(&w, "eevdf").unwrap();
        r.extra = vec![
            (vm::HOST_OTHERS.into(), 0.1),
            (schedlab_host::TICKS_DELIVERED.into(), 98.7),
            (schedlab_host::TIMER_LATE_P90.into(), 210.0),
        ];
        assert_eq!(disturbance(&r, 2), None);
        r.extra[2].1 = 835.2;
        assert_eq!(
            disturbance(&r, 2).unwrap(),
            "the guest's timers fired 835 us late at the 90th percentile while other processes took 0.10 host CPUs"
        );
        // On a quiet host late timers are the kernel's own (muqss-5.10 with
        // 1024 spinners): booting again would not change them.
        r.extra[0].1 = 0.02;
        assert_eq!(disturbance(&r, 2), None);
        // Without the host's figure the lateness is put down to the host.
        let without_host = Report { extra: r.extra[1..].to_vec(), ..r.clone() };
        assert_eq!(
            disturbance(&without_host, 2).unwrap(),
            "the guest's timers fired 835 us late at the 90th percentile (the host's other processes were not measured)"
        );
        r.extra[0].1 = 0.1;
        r.extra[2].1 = 150.0;
        r.extra[0].1 = 1.04;
        assert_eq!(disturbance(&r, 2).unwrap(), "other processes took 1.04 host CPUs while the guest ran");
        r.extra[0].1 = 0.0;
        r.extra[1].1 = 93.7;
        assert_eq!(disturbance(&r, 2).unwrap(), "the guest's busy CPUs took 93.7% of their timer ticks");
        // More vCPUs than host CPUs lose ticks by design.
        assert_eq!(disturbance(&r, 4096), None);
    }

    fn verdict(kind: Kind, sim: f64, real: f64, secs: f64) -> Verdict {
        judge(kind, Some(&fig(kind, sim)), Some(&fig(kind, real)), secs).1
    }

    #[test]
    fn a_percentage_one_side_lacks_agrees_only_within_counting_noise_of_none() {
        let none = fig(Kind::Pct, f64::NAN);
        let of = |n: f64| Figure { samples: n, ..fig(Kind::Pct, 0.0) };
        assert_eq!(judge(Kind::Pct, Some(&none), Some(&of(1.0)), 3.0).1, Verdict::Within);
        assert_eq!(judge(Kind::Pct, Some(&of(4.0)), Some(&none), 3.0).1, Verdict::Within);
        assert_eq!(judge(Kind::Pct, Some(&none), Some(&of(5.0)), 3.0).1, Verdict::Outside);
        assert_eq!(judge(Kind::Pct, Some(&of(30.0)), Some(&none), 3.0).1, Verdict::Outside);
    }

    #[test]
    fn tolerances_flag_what_they_say() {
        assert_eq!(verdict(Kind::Rate, 250.0, 251.0, 3.0), Verdict::Within);
        assert_eq!(verdict(Kind::Rate, 250.0, 280.0, 3.0), Verdict::Outside);
        // Below 1/s apart, a rate agrees whatever the ratio.
        assert_eq!(verdict(Kind::Rate, 0.0, 0.4, 3.0), Verdict::Within);
        // 20 events in 3 s against 24: within counting noise; not 200 against 240.
        assert_eq!(verdict(Kind::Rate, 8.0, 6.7, 3.0), Verdict::Within);
        assert_eq!(verdict(Kind::Rate, 8.0, 6.7, 30.0), Verdict::Outside);
        assert_eq!(verdict(Kind::Share, 42.9, 40.0, 3.0), Verdict::Within);
        assert_eq!(verdict(Kind::Share, 50.0, 13.7, 3.0), Verdict::Outside);
        // Cost-bound durations are counted apart, not passed: 2 us against
        // 249 us says nothing either way.
        assert_eq!(verdict(Kind::Time, 2_000.0, 249_000.0, 3.0), Verdict::NotCompared);
        assert_eq!(verdict(Kind::Time, 2_000.0, 4_000_000.0, 3.0), Verdict::Outside);
        assert_eq!(verdict(Kind::Time, 4_014_000.0, 3_998_000.0, 3.0), Verdict::Within);
    }

    #[test]
    fn a_value_between_boots_that_disagree_is_one_the_kernel_gave() {
        // tt thread-test-2: 113, 160 and 168 switches/s in three boots.
        let boots = |v: f64, lo: f64, hi: f64| Figure { range: (lo, hi), ..fig(Kind::Rate, v) };
        let real = boots(160.0, 113.0, 168.0);
        let (text, v) = judge(Kind::Rate, Some(&fig(Kind::Rate, 127.0)), Some(&real), 3.0);
        assert_eq!((text.as_str(), v), ("0.79, between boots", Verdict::Within));
        // Outside every boot it is still a difference, however wide they are.
        assert_eq!(judge(Kind::Rate, Some(&fig(Kind::Rate, 110.0)), Some(&real), 3.0).1, Verdict::Outside);
        assert_eq!(judge(Kind::Rate, Some(&fig(Kind::Rate, 185.0)), Some(&real), 3.0).1, Verdict::Outside);
        // One boot has no range to stand in.
        let one = boots(160.0, 160.0, 160.0);
        assert_eq!(judge(Kind::Rate, Some(&fig(Kind::Rate, 127.0)), Some(&one), 3.0).1, Verdict::Outside);
        // A share, a percentage and a duration alike.
        let spread = Figure { range: (0.3, 0.7), of_share: 0.4, ..fig(Kind::Share, 0.6) };
        let sim = Figure { of_share: 0.4, ..fig(Kind::Share, 0.3) };
        assert_eq!(judge(Kind::Share, Some(&sim), Some(&spread), 3.0).1, Verdict::Within);
        let turn = Figure { range: (2.03e6, 3.92e6), ..fig(Kind::Time, 2.13e6) };
        assert_eq!(judge(Kind::Time, Some(&fig(Kind::Time, 3.79e6)), Some(&turn), 3.0).1, Verdict::Within);
        assert_eq!(judge(Kind::Time, Some(&fig(Kind::Time, 4.19e6)), Some(&turn), 3.0).1, Verdict::Outside);
    }

    #[test]
    fn a_real_value_between_seeds_that_disagree_is_one_the_model_gave() {
        // tt wakeup-preemption: 220 switches/s at the seeds' median, from
        // 215 to 299, against 261 in the boots (259-262).
        let seeds = Figure { range: (215.0, 299.0), ..fig(Kind::Rate, 220.0) };
        let real = Figure { range: (259.0, 262.0), ..fig(Kind::Rate, 261.0) };
        let (text, v) = judge(Kind::Rate, Some(&seeds), Some(&real), 3.0);
        assert_eq!((text.as_str(), v), ("0.84, between seeds", Verdict::Within));
        // Outside every seed it is still a difference.
        let short = Figure { range: (215.0, 258.0), ..seeds.clone() };
        assert_eq!(judge(Kind::Rate, Some(&short), Some(&real), 3.0).1, Verdict::Outside);
        // Seeds that agree have no range to stand in.
        assert_eq!(judge(Kind::Rate, Some(&fig(Kind::Rate, 220.0)), Some(&real), 3.0).1, Verdict::Outside);
        // A percentage of decisions alike.
        let pct = Figure { range: (20.0, 62.0), samples: 30.0, ..fig(Kind::Pct, 33.3) };
        let moved = Figure { samples: 30.0, ..fig(Kind::Pct, 59.6) };
        assert_eq!(judge(Kind::Pct, Some(&pct), Some(&moved), 3.0).1, Verdict::Within);
    }

    #[test]
    fn a_small_task_share_is_judged_relative_to_it() {
        // bmq thread-test-256's spinners: 0.4% each, spread 0.1 simulated
        // against 1.6 real points: within 3 points, far outside 25% of 0.4%.
        let mut sim = fig(Kind::Share, 0.1);
        let mut real = fig(Kind::Share, 1.6);
        (sim.of_share, real.of_share) = (0.39, 0.39);
        assert_eq!(judge(Kind::Share, Some(&sim), Some(&real), 3.0).1, Verdict::Outside);
        real.value = 0.18;
        assert_eq!(judge(Kind::Share, Some(&sim), Some(&real), 3.0).1, Verdict::Within);
        // A large share keeps the 3 points.
        (sim.value, real.value, real.of_share) = (40.0, 42.5, 41.0);
        assert_eq!(judge(Kind::Share, Some(&sim), Some(&real), 3.0).1, Verdict::Within);
    }

    #[test]
    fn a_spread_of_shares_is_told_to_one_turn() {
        // thread-test-1024: 0.1% each; a 4 ms turn is 0.13 points of 3 s.
        let mut sim = fig(Kind::Share, 0.1);
        let mut real = fig(Kind::Share, 0.2);
        (sim.of_share, real.of_share, real.turn) = (0.1, 0.1, 0.133);
        assert_eq!(judge(Kind::Share, Some(&sim), Some(&real), 3.0).1, Verdict::Within);
        // Two turns apart is a difference.
        real.value = 0.4;
        assert_eq!(judge(Kind::Share, Some(&sim), Some(&real), 3.0).1, Verdict::Outside);
        // Without a turn (a share, not a spread) 25% of the share holds.
        (real.value, real.turn) = (0.2, 0.0);
        assert_eq!(judge(Kind::Share, Some(&sim), Some(&real), 3.0).1, Verdict::Outside);
    }

    #[test]
    fn a_spread_carries_its_tasks_turn() {
        let exp = EXPERIMENTS.iter().find(|e| e.id == "thread-test-16").unwrap();
        let w = load_workload(&experiment_common(exp, 3 * SEC, 1)).unwrap();
        let figs = figures(exp, &simulate(&w, "cfs").unwrap());
        let spread = figs.iter().find(|f| f.key == "spread:spinner").unwrap();
        // 16 spinners take turns of 4 ms on CPU 0 (cfs-6.1, 2 CPUs):
        // 4 ms is 0.133 points of 3 s.
        assert!((spread.turn - 0.1333).abs() < 0.01, "turn {} points", spread.turn);
    }

    #[test]
    fn a_figure_one_side_lacks_is_a_flag() {
        let f = fig(Kind::Time, 4_000_000.0);
        assert_eq!(judge(Kind::Time, Some(&f), None, 3.0), ("not in the real runs".into(), Verdict::Outside));
        assert_eq!(judge(Kind::Time, None, Some(&f), 3.0).1, Verdict::Outside);
        // A percentage of no decisions: a flag when one side made more than
        // counting noise allows (a_percentage_one_side_lacks_...).
        let (none, some) = (fig(Kind::Pct, f64::NAN), Figure { samples: 30.0, ..fig(Kind::Pct, 18.0) });
        assert_eq!(judge(Kind::Pct, Some(&none), Some(&some), 3.0).1, Verdict::Outside);
        assert_eq!(judge(Kind::Pct, Some(&none), Some(&none), 3.0).1, Verdict::Within);
    }

    fn row(sim: f64, guest: f64, real: f64) -> Row {
        Row {
            exp: &EXPERIMENTS[0],
            sim: vec![fig(Kind::Rate, sim)],
            guest: vec![fig(Kind::Rate, guest)],
            real: vec![fig(Kind::Rate, real)],
            secs: 3.0,
            start: Start::default(),
        }
    }

    #[test]
    fn only_the_guests_costs_explain_a_flag() {
        assert_eq!(outcome(&row(250.0, 100.0, 251.0), "k"), Outcome::Within);
        assert_eq!(outcome(&row(1000.0, 260.0, 251.0), "k"), Outcome::Explained);
        assert_eq!(outcome(&row(1000.0, 900.0, 251.0), "k"), Outcome::Unexplained);
        assert_eq!(outcome(&row(1000.0, 900.0, 251.0), "other"), Outcome::Unexplained);
    }

    #[test]
    fn open_entries_are_exact_and_go_stale() {
        let mut seen = std::collections::BTreeSet::new();
        for o in open::all() {
            assert!(
                EXPERIMENTS.iter().chain(DECISION_EXPERIMENTS).any(|e| e.id == o.experiment),
                "{} names no experiment",
                o.experiment
            );
            assert!(
                seen.insert((&o.policy, &o.experiment, &o.figure)),
                "{} {} {} twice",
                o.policy,
                o.experiment,
                o.figure
            );
            assert!(
                schedlab_policies::POLICIES.iter().any(|p| p.name == o.policy && p.kernel.is_some()),
                "{}",
                o.policy
            );
            assert!(!o.figure.contains('*') && !o.experiment.contains('*') && !o.policy.contains('*'));
            // Its numbers are data: the band it was measured at, and by whom.
            assert!(o.measured.is_some(), "{} {} {} has no band", o.policy, o.experiment, o.figure);
        }
        // An open share holds while it is unexplained, and goes stale once
        // the model agrees with the kernel somewhere else than it was
        // measured.
        let o = open::all().find(|o| o.figure.starts_with("share:")).expect("an open share figure");
        let exp = EXPERIMENTS.iter().chain(DECISION_EXPERIMENTS).find(|e| e.id == o.experiment).unwrap();
        let share = |v: f64| Figure { key: o.figure.clone(), of_share: v, ..fig(Kind::Share, v) };
        let checked = |sim_share: f64, real: f64| Checked {
            policy: schedlab_policies::POLICIES.iter().find(|p| p.name == o.policy).unwrap(),
            kernel_file: PathBuf::new(),
            rows: vec![Row {
                exp,
                sim: vec![share(sim_share)],
                guest: vec![share(sim_share)],
                real: vec![share(real)],
                secs: 3.0,
                start: Start::default(),
            }],
            guest_costs: Vec::new(),
            guest_notes: String::new(),
            idle_min: 2.0,
            idle_runs: 0,
            real_runs: 0,
            machine: String::new(),
            crashes: Vec::new(),
            disturbed: Vec::new(),
            sha256: None,
            calibration: serde_json::Value::Null,
            runs: Default::default(),
        };
        // (The entry's neighbours of the same experiment, absent from this
        // row, are stale as "no such figure": only its own line counts.)
        let this = format!("{} {} {} (", o.policy, o.experiment, o.figure);
        let its_own =
            |c: Checked| stale_open_entries(&[c]).into_iter().filter(|s| s.starts_with(&this)).collect::<Vec<_>>();
        assert!(its_own(checked(0.0, 60.0)).is_empty());
        // Agreed, and moved from where it was measured: stale.
        let stale = its_own(checked(99.9, 99.9));
        assert!(
            stale.len() == 1 && stale[0].starts_with(&format!("{this}no longer flagged, out of its band")),
            "{stale:?}"
        );
    }

    #[test]
    fn medians_take_the_middle_run() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0]), 2.5);
    }

    #[test]
    fn every_experiment_names_a_builtin_workload_with_its_params() {
        for e in EXPERIMENTS.iter().chain(DECISION_EXPERIMENTS) {
            let w = load_workload(&experiment_common(e, SEC, 1)).unwrap_or_else(|err| panic!("{}: {err}", e.id));
            assert_eq!(w.nr_cpus(), e.cpus, "{}", e.id);
        }
        assert!(EXPERIMENTS.iter().any(|e| e.quick));
    }
}
