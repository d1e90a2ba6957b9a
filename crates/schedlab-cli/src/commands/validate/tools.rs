//! `schedlab validate --tools`: each preset held against the real tool it
//! imitates (stress-ng, cyclictest, hackbench, perf bench sched), the
//! preset simulated on a model against the tool itself in that model's
//! kernel, judged with the page's tolerances and verdicts.
//!
//! The preset's own costs (the CPU of a message, of a cyclictest cycle;
//! presets.rs's ToolCosts) are measured, not guessed: by default this
//! hardware's, and for the simulation with the guest's costs, the guest
//! kernel's, from a run of hackbench and one of cyclictest alone in a boot
//! of it, beside the costs `schedlab calibrate` measures there. A real
//! run is the guest's trace of the tool (commands::program), the same
//! report as `schedlab vm -- PROGRAM`; its tasks are matched to the
//! preset's by role (cyclictest's measuring thread, not its main one).
//!
//! The section is written into DIR/validation.md between two markers, and
//! a full `validate` keeps it, so each part of the page is rewritten only
//! by the run that measures it.

use super::matrix::{KernelRows, Matrix, RealRow};
use super::*;
use crate::commands::program::{self, ProgramArgs};
use schedlab_sim::formats::presets::{self, ToolCosts};
use schedlab_sim::report::TaskReport;
use std::fmt::Write;
use std::path::Path;

pub(super) const BEGIN: &str = "<!-- schedlab validate --tools: begin -->";
pub(super) const END: &str = "<!-- schedlab validate --tools: end -->";

/// Tasks of one kind, in the real report and in the preset's.
struct Role {
    key: &'static str,
    /// The real tool's process name (the report's task kind).
    real: &'static str,
    /// The process's first task is its main thread, which the preset does
    /// not have (cyclictest's and hackbench's wait for the others).
    skip_main: bool,
    /// Names of the preset's task kinds that play it (a prefix each).
    preset: &'static [&'static str],
    shares: bool,
    wakeups: bool,
}

struct ToolCheck {
    id: &'static str,
    /// The command line, as the real tool runs it and as the preset reads it.
    line: &'static str,
    what: &'static str,
    roles: &'static [Role],
    migrations: bool,
    /// The tool ends by itself: the preset runs to its end, and the
    /// figures are the tool's own time (from its start signal, after it
    /// forked its processes: what the preset starts with) and the counts
    /// of events in the run; otherwise the preset runs as long as the real
    /// run, and the figures are rates.
    finite: bool,
}

const WORKERS: Role = Role {
    key: "workers",
    real: "stress-ng-cpu",
    skip_main: false,
    preset: &["stress-ng-cpu"],
    shares: true,
    wakeups: false,
};

/// cyclictest's measuring thread (its share is its CPU per cycle, run/switch,
/// times its cycles: under TCG, what the emulation costs).
const CYCLICTEST_THREAD: Role = Role {
    key: "cyclictest",
    real: "cyclictest",
    skip_main: true,
    preset: &["cyclictest"],
    shares: false,
    wakeups: true,
};

/// hackbench's senders and receivers.
const HACKBENCH_WORKERS: Role = Role {
    key: "workers",
    real: "hackbench",
    skip_main: true,
    preset: &["sender-", "receiver-"],
    shares: false,
    wakeups: true,
};

const CHECKS: &[ToolCheck] = &[
    ToolCheck {
        id: "tool-stress-ng",
        line: "stress-ng --cpu 4 --timeout 3",
        what: "4 stress-ng workers on 2 CPUs",
        roles: &[WORKERS],
        migrations: true,
        finite: false,
    },
    ToolCheck {
        id: "tool-cyclictest",
        line: "cyclictest -t1 -p80 -i1000 -l3000 -q + stress-ng --cpu 4 --timeout 60",
        what: "cyclictest's thread (SCHED_FIFO 80, 1 ms) beside 4 stress-ng workers, for its 3000 cycles",
        roles: &[CYCLICTEST_THREAD, WORKERS],
        migrations: false,
        finite: false,
    },
    ToolCheck {
        id: "tool-hackbench",
        line: "hackbench -p -g 2 -f 5 -l 1000",
        what: "2 groups of 5 senders and 5 receivers, 1000 messages from each sender to each receiver, over pipes",
        roles: &[HACKBENCH_WORKERS],
        migrations: true,
        finite: true,
    },
    ToolCheck {
        id: "tool-perf-pipe",
        line: "perf bench sched pipe -l 5000",
        what: "two processes passing a token through two pipes 5000 times",
        roles: &[Role {
            key: "pair",
            real: "sched-pipe",
            skip_main: false,
            preset: &["perf-pipe"],
            shares: false,
            wakeups: true,
        }],
        migrations: true,
        finite: true,
    },
];

/// The runs that measure a kernel's tool costs: hackbench alone (a message:
/// 1 group x 5 senders x 5 receivers x 400) and cyclictest alone (a cycle).
const MESSAGE_RUN: (&str, u64) = ("hackbench -p -g 1 -f 5 -l 400", 5 * 5 * 400);
const CYCLE_RUN: (&str, u64) = ("cyclictest -t1 -p80 -i1000 -l1000 -q", 1000);

fn role_tasks<'a>(r: &'a Report, role: &Role, real: bool) -> Vec<&'a TaskReport> {
    if real {
        let Some(spec) = r.specs.iter().position(|s| s.name == role.real) else { return Vec::new() };
        r.tasks.iter().filter(|t| t.spec as usize == spec).skip(role.skip_main as usize).collect()
    } else {
        let specs: Vec<usize> =
            (0..r.specs.len()).filter(|&k| role.preset.iter().any(|p| r.specs[k].name.starts_with(p))).collect();
        r.tasks.iter().filter(|t| specs.contains(&(t.spec as usize))).collect()
    }
}

/// What a finite tool says its run took, in a real run's report.
const TOOL_TIME: &str = "tool_time_ns";

/// The time hackbench ("Time: 0.036") and perf bench ("Total time: 0.816
/// [sec]") print for their run, from their start signal.
fn tool_time(stdout: &str) -> Option<f64> {
    let line = stdout.lines().find(|l| l.trim_start().starts_with("Time:") || l.contains("Total time:"))?;
    let secs: f64 = line.split("ime:").nth(1)?.split_whitespace().next()?.parse().ok()?;
    Some(secs * 1e9)
}

/// The figures of a check's run, real or simulated.
fn figures(check: &ToolCheck, r: &Report, real: bool) -> Vec<Figure> {
    // A finite tool's events are counted over the run, rates otherwise.
    let (per, unit) = if check.finite { (1.0, "") } else { (r.duration_ns.max(1) as f64 / 1e9, "/s") };
    let mut out = Vec::new();
    let mut push = |key: String, label: String, kind, value: f64, of_share: f64, turn: f64| {
        out.push(Figure { key, label, kind, value, range: (value, value), of_share, samples: 0.0, turn })
    };
    push("switches".into(), format!("switches{unit}"), Kind::Rate, r.totals.context_switches as f64 / per, 100.0, 0.0);
    if check.migrations {
        push(
            "migrations".into(),
            format!("migrations{unit}"),
            Kind::Rate,
            r.totals.migrations as f64 / per,
            100.0,
            0.0,
        );
    }
    if check.finite {
        let own = if real { r.extra_figure(TOOL_TIME) } else { r.totals.makespan_ns.map(|m| m as f64) };
        if let Some(m) = own {
            push("makespan".into(), "its time".into(), Kind::Time, m, 100.0, 0.0);
        }
    }
    for role in check.roles {
        let tasks = role_tasks(r, role, real);
        if tasks.is_empty() {
            continue;
        }
        let (k, n) = (role.key, tasks.len() as f64);
        let cpu: u64 = tasks.iter().map(|t| t.cpu_time_ns).sum();
        let switches: u64 = tasks.iter().map(|t| t.voluntary_switches + t.involuntary_switches).sum();
        if role.shares {
            let share = tasks.iter().map(|t| t.cpu_share_pct).sum::<f64>() / n;
            push(format!("share:{k}"), format!("{k} share %"), Kind::Share, share, share, 0.0);
            if tasks.len() > 1 {
                let (lo, hi) = tasks
                    .iter()
                    .fold((f64::INFINITY, 0.0f64), |(lo, hi), t| (lo.min(t.cpu_share_pct), hi.max(t.cpu_share_pct)));
                let turn = cpu as f64 / switches.max(1) as f64 * 100.0 / r.duration_ns.max(1) as f64;
                push(format!("spread:{k}"), format!("{k} share max-min"), Kind::Share, hi - lo, share, turn);
            }
        }
        if switches > 0 {
            push(format!("run:{k}"), format!("{k} run/switch"), Kind::Time, cpu as f64 / switches as f64, 100.0, 0.0);
        }
        if role.wakeups {
            let wakeups: u64 = tasks.iter().map(|t| t.wakeups).sum();
            push(format!("wakeups:{k}"), format!("{k} wakeups{unit}"), Kind::Rate, wakeups as f64 / per, 100.0, 0.0);
            let lat: f64 = tasks.iter().map(|t| t.wakeup_latency_avg_ns.unwrap_or(0) as f64 * t.wakeups as f64).sum();
            if wakeups > 0 {
                push(format!("wake:{k}"), format!("{k} wakeup avg"), Kind::Time, lat / wakeups as f64, 100.0, 0.0);
            }
        }
    }
    out
}

/// The CPU and switches of the tasks of a real run that play `role`.
fn role_cpu(r: &Report, role: &Role) -> (u64, u64) {
    role_tasks(r, role, true)
        .iter()
        .fold((0, 0), |(c, s), t| (c + t.cpu_time_ns, s + t.voluntary_switches + t.involuntary_switches))
}

/// A kernel's tool costs from its runs of MESSAGE_RUN and CYCLE_RUN,
/// less what its calibrated costs already charge.
fn kernel_tool_costs(message: &Report, cycle: &Report, costs: &[(String, u64)]) -> ToolCosts {
    let cost = |name: &str| costs.iter().find(|(k, _)| k == name).map_or(0, |(_, v)| *v);
    let (cpu, switches) = role_cpu(message, &HACKBENCH_WORKERS);
    let (thread_cpu, _) = role_cpu(cycle, &CYCLICTEST_THREAD);
    ToolCosts {
        message: ToolCosts::from_message_run(cpu, switches, MESSAGE_RUN.1, cost("context_switch")),
        cycle: ToolCosts::from_cycle_run(thread_cpu, CYCLE_RUN.1, cost("timer_wakeup")),
    }
}

/// One check on one kernel: its figures simulated, simulated with the
/// guest's costs, and real, each the median of the runs.
struct ToolRow {
    check: &'static ToolCheck,
    sim: Vec<Figure>,
    guest: Vec<Figure>,
    real: Vec<Figure>,
    secs: f64,
    /// How long the preset runs when the tool has no end of its own.
    duration: u64,
}

struct KernelTools {
    policy: &'static PolicyInfo,
    kernel_file: PathBuf,
    guest_costs: Vec<(String, u64)>,
    guest_notes: String,
    tool_costs: ToolCosts,
    rows: Vec<ToolRow>,
    disturbed: Vec<String>,
}

/// The preset of `check` simulated under `policy` with `costs`, seeds
/// 1..=runs, lasting `duration` unless the tool ends by itself.
fn simulated(
    check: &ToolCheck,
    policy: &str,
    runs: usize,
    duration: u64,
    costs: &ToolCosts,
    machine: &[(String, u64)],
) -> Result<Vec<Vec<Figure>>> {
    let text = presets::toml_with(check.line, CPUS, costs).map_err(|e| anyhow::anyhow!("{}: {e}", check.line))?;
    (1..=runs as u64)
        .into_par_iter()
        .map(|seed| {
            let ov = schedlab_sim::Overrides {
                seed: Some(seed),
                duration: (!check.finite).then_some(duration),
                costs: machine.iter().map(|(name, ns)| (name.clone(), Dist::Const(*ns))).collect(),
                ..Default::default()
            };
            let w = Workload::from_toml(&text, check.line, &ov).map_err(|e| anyhow::anyhow!("{}: {e}", check.line))?;
            Ok(figures(check, &simulate(&w, policy)?, false))
        })
        .collect()
}

/// Boots `kernel` with `line` until a run measured the kernel, not the
/// host (as validate's own runs), or keeps the run `kept` has.
fn real_run(
    opts: &Options,
    kernel: &Path,
    label: &str,
    vm_args: &VmArgs,
    line: &str,
    kept: &Path,
    disturbed: &mut Vec<String>,
) -> Result<Report> {
    if opts.reuse
        && let Ok(text) = std::fs::read_to_string(kept)
    {
        return serde_json::from_str(&text).with_context(|| format!("{} is not a report: remove it", kept.display()));
    }
    let args = ProgramArgs { program: line.split_whitespace().map(String::from).collect(), ..Default::default() };
    let prepared = program::prepare(&args, vm_args.memory, 120_000_000_000)?;
    let (mut failed, mut again) = (0, 0);
    loop {
        if let Some(sig) = schedlab_host::signals::received() {
            return Err(schedlab_vm::VmError::Interrupted(sig).into());
        }
        let idle = wait_for_quiet();
        eprintln!("schedlab: validate --tools: {label}: {line}");
        let why = match program::run_vm(&prepared, kernel, label, CPUS, vm_args) {
            Ok(result) => {
                if program::outcome(&result, label) != 0 {
                    bail!("{label}: '{line}' failed: {}", result.programs[0].stderr.trim());
                }
                let mut r = result.report;
                if let Some(ns) = tool_time(&result.programs[0].stdout) {
                    r.extra.push((TOOL_TIME.into(), ns));
                }
                match disturbance(&r, CPUS) {
                    None => {
                        if let Some(h) = r.host.as_mut() {
                            h.notes.push(format!("{IDLE_NOTE}{idle:.2}"));
                        }
                        std::fs::write(kept, serde_json::to_string(&r)?)
                            .with_context(|| format!("cannot write {}", kept.display()))?;
                        return Ok(r);
                    }
                    Some(why) => {
                        again += 1;
                        why
                    }
                }
            }
            Err(e) => match kernel_failure(&e) {
                Some(why) => {
                    failed += 1;
                    why
                }
                None => return Err(e),
            },
        };
        let what = format!("`{line}`: {why}");
        if failed + again == MAX_BOOTS {
            bail!("{label}: {what}, in {MAX_BOOTS} boots in a row");
        }
        eprintln!("schedlab: validate --tools: {label} {what}; booting it again");
        disturbed.push(what);
    }
}

/// Runs the checks on every chosen kernel and writes the section into
/// DIR/validation.md; fails while any figure is unexplained.
pub(super) fn run(opts: &Options) -> Result<()> {
    let runs = opts.runs.unwrap_or(3);
    if !(1..=20).contains(&runs) {
        bail!("--runs {runs}: give from 1 to 20 runs per figure");
    }
    for tool in ["stress-ng", "cyclictest", "hackbench", "perf"] {
        schedlab_vm::elf::find_program(tool).map_err(|e| {
            anyhow::anyhow!(
                "validate --tools runs the real {tool}: {e} (Debian: apt install stress-ng rt-tests linux-perf)"
            )
        })?;
    }
    let (data, _data_dir) = super::data_dir(&opts.out)?;
    let started = Instant::now();
    let mut done = Vec::new();
    for (policy, kernel_file) in choose_policies(opts, None)? {
        let PolicyKernel { label, vm_args, guest_costs, guest_notes, .. } =
            policy_kernel(opts, &data, policy, &kernel_file, None)?;
        let mut disturbed = Vec::new();
        let kept = |what: &str, line: &str, disturbed: &mut Vec<String>| {
            let file = data.join(format!("{}-{what}.json", policy.name));
            real_run(opts, &kernel_file, label, &vm_args, line, &file, disturbed)
        };
        let message = kept("tool-costs-message", MESSAGE_RUN.0, &mut disturbed)?;
        let cycle = kept("tool-costs-cycle", CYCLE_RUN.0, &mut disturbed)?;
        let tool_costs = kernel_tool_costs(&message, &cycle, &guest_costs);
        let mut rows = Vec::new();
        for check in CHECKS {
            let mut reals = Vec::new();
            let mut durations = Vec::new();
            for run in 1..=runs {
                let r = kept(&format!("{}-{run}", check.id), check.line, &mut disturbed)?;
                durations.push(r.duration_ns as f64);
                reals.push(figures(check, &r, true));
            }
            let duration = median(durations) as u64;
            let sims = simulated(check, policy.name, runs, duration, &ToolCosts::MEASURED, &[])?;
            let guest = simulated(check, policy.name, runs, duration, &tool_costs, &guest_costs)?;
            rows.push(ToolRow {
                check,
                sim: medians(&sims),
                guest: medians(&guest),
                real: medians(&reals),
                // Counts are judged as counts (their noise 2 sqrt(n)).
                secs: if check.finite { 1.0 } else { duration as f64 / 1e9 },
                duration,
            });
        }
        eprintln!("schedlab: validate --tools: {label} done ({:.0} s so far)", started.elapsed().as_secs_f64());
        done.push(KernelTools { policy, kernel_file, guest_costs, guest_notes, tool_costs, rows, disturbed });
    }
    let matrix = cross_model(&done, runs)?;
    let (text, unexplained) = section(opts, runs, &done, &matrix);
    let md = opts.out.join("validation.md");
    let old = std::fs::read_to_string(&md).unwrap_or_default();
    std::fs::write(&md, with_section(&old, &text)).with_context(|| format!("cannot write {}", md.display()))?;
    eprintln!(
        "schedlab: wrote the presets' section of {} ({} kernels, {:.0} s)",
        md.display(),
        done.len(),
        started.elapsed().as_secs_f64()
    );
    let mut failures = Vec::new();
    if !unexplained.is_empty() {
        failures.push(format!(
            "{} figure(s) of the presets outside tolerance that the guest's costs do not explain: {}",
            unexplained.len(),
            unexplained.join(", ")
        ));
    }
    let worse = matrix.failures();
    if !worse.is_empty() {
        failures.push(format!("a model other than its own matches a kernel better: {}", worse.join("; ")));
    }
    if !failures.is_empty() {
        bail!("{}", failures.join(". "));
    }
    Ok(())
}

/// Every model's presets judged against every kernel's real runs
/// ([`matrix`]).
fn cross_model(done: &[KernelTools], runs: usize) -> Result<Matrix> {
    let kernels: Vec<KernelRows> = done
        .iter()
        .map(|k| KernelRows {
            name: k.policy.name,
            rows: k.rows.iter().map(|r| RealRow { id: r.check.id, real: &r.real, secs: r.secs }).collect(),
        })
        .collect();
    Matrix::new(&kernels, |model, k, r| {
        let (kernel, row) = (&done[k], &done[k].rows[r]);
        let sim = medians(&simulated(row.check, model, runs, row.duration, &ToolCosts::MEASURED, &[])?);
        let guest = medians(&simulated(row.check, model, runs, row.duration, &kernel.tool_costs, &kernel.guest_costs)?);
        Ok((sim, guest))
    })
}

/// The matrix's heading and what it says, in the presets' section.
const MATRIX_HEADING: &str = "### Which model matches which kernel";
const MATRIX_INTRO: &str = "Each model's presets judged against each kernel's real runs (the simulation with that \
    kernel's costs, as above): figures within or explained of those compared, and in brackets the same of the \
    figures that tell the two kernels apart (on the diagonal, the kernel's *discriminating* figures, those some \
    other kernel differs on). Below, each kernel's own model against the other model closest to it on the figures \
    that tell their two kernels apart; where another model gets more of them than the kernel's own, `validate \
    --tools` fails.";

/// `page` with its tools section (BEGIN to END, no line end of its own)
/// replaced by `section`, or the section added at its end; writing the same
/// section again gives the same page.
pub(super) fn with_section(page: &str, section: &str) -> String {
    match (page.find(BEGIN), page.find(END)) {
        (Some(b), Some(e)) if b < e => format!("{}{section}{}", &page[..b], &page[e + END.len()..]),
        _ if page.is_empty() => format!("{section}\n"),
        _ => format!("{}\n\n{section}\n", page.trim_end_matches('\n')),
    }
}

/// The tools section of an earlier page, to keep when the rest of the page
/// is written again.
pub(super) fn kept_section(page: &str) -> Option<&str> {
    match (page.find(BEGIN), page.find(END)) {
        (Some(b), Some(e)) if b < e => Some(&page[b..e + END.len()]),
        _ => None,
    }
}

fn section(opts: &Options, runs: usize, done: &[KernelTools], matrix: &Matrix) -> (String, Vec<String>) {
    let us = |ns: u64| format!("{:.2} µs", ns as f64 / 1e3);
    let mut t = String::new();
    let m = ToolCosts::MEASURED;
    let _ = write!(
        t,
        "{BEGIN}\n## The presets against the tools they imitate\n\n\
         Written by `schedlab validate --tools{}` (schedlab {}). A preset (`stress-ng --cpu 4`, `cyclictest ...`, \
         `hackbench ...`, `perf bench sched pipe`) is schedlab's imitation of the tool, simulated; here each is \
         simulated on a model and held against the real tool run by `schedlab vm -- TOOL` in that model's kernel \
         under QEMU TCG on {CPUS} vCPUs (Debian's stress-ng 0.15, rt-tests 2.4 cyclictest and hackbench, perf \
         6.1). Every figure is the median of {runs} run{}: seeds 1 to {runs} simulated, {runs} boot{} of the kernel. \
         The real tasks are matched to the preset's by role: cyclictest's and hackbench's main thread, which waits \
         for the others, has no part in the preset and is left out.\n\n\
         **The presets' costs are measured.** What a message costs its sender and its receiver, and what a \
         cyclictest cycle costs its thread, beyond the switch and the timer's wakeup the machine's costs charge: \
         this hardware's in the first simulation ({} a message, {} a cycle, measured with the real tools on this \
         machine; presets.rs says how), and the guest kernel's in the second, from a run of `{}` and one of `{}` \
         in a boot of it, beside the costs `schedlab calibrate` measured there (listed under each kernel). The \
         second simulation does not start the tasks as the runner does (a real tool starts its own).\n\n\
         **Verdicts** as on the rest of the page: the same tolerances; a figure outside them with this \
         hardware's costs is *explained* when the simulation with the guest's costs is within them, and \
         *unexplained* otherwise; durations below 250 µs on both sides are *not compared*.\n\n\
         | policy | kernel | figures | within | explained by the guest's costs | not compared | unexplained |\n\
         |---|---|---:|---:|---:|---:|---:|\n",
        if opts.runs.is_some() { format!(" --runs {runs}") } else { String::new() },
        env!("CARGO_PKG_VERSION"),
        if runs == 1 { "" } else { "s" },
        if runs == 1 { "" } else { "s" },
        us(m.message),
        us(m.cycle),
        MESSAGE_RUN.0,
        CYCLE_RUN.0,
    );
    let mut unexplained = Vec::new();
    let mut sections = String::new();
    for k in done {
        let mut tally = page::Tally::default();
        let mut s = String::new();
        let _ = write!(
            s,
            "\n### {}: the presets in {}\n\nKernel: {}. Its tool costs: {} a message, {} a cycle. Its calibrated \
             costs: {}.\n\n",
            k.policy.name,
            k.policy.kernel.map_or("-", |x| x.0),
            k.kernel_file.display(),
            us(k.tool_costs.message),
            us(k.tool_costs.cycle),
            k.guest_notes
        );
        if !k.disturbed.is_empty() {
            let _ = write!(s, "Booted again: {}.\n\n", k.disturbed.join("; "));
        }
        s.push_str(
            "| tool | figure | preset simulated | with the guest's costs | real (range) | sim/real | |\n\
             |---|---|---:|---:|---:|---:|---|\n",
        );
        for row in &k.rows {
            let mut first = true;
            for f in figure_keys(&row.sim, &row.real) {
                let find = |v: &[Figure]| v.iter().find(|x| x.key == f.key).cloned();
                let (sim, guest, real) = (find(&row.sim), find(&row.guest), find(&row.real));
                let (text, _) = judge(f.kind, sim.as_ref(), real.as_ref(), row.secs);
                let o = outcome_of(&row.sim, &row.guest, &row.real, row.secs, &f.key);
                tally.add(o);
                let mark = match o {
                    Outcome::Within => "",
                    Outcome::NotCompared => "not compared",
                    Outcome::Explained => "explained",
                    Outcome::Unexplained => {
                        unexplained.push(format!("{} {} {}", k.policy.name, row.check.id, f.key));
                        "**unexplained**"
                    }
                };
                let cell = |x: &Option<Figure>| x.as_ref().map_or("-".to_string(), |x| show(f.kind, x.value));
                let real_cell = real.as_ref().map_or("-".to_string(), |r| {
                    format!(
                        "{} <small>({} - {})</small>",
                        show(f.kind, r.value),
                        show(f.kind, r.range.0),
                        show(f.kind, r.range.1)
                    )
                });
                let tool = if first {
                    format!("`{}` <br><small>{}</small>", row.check.line, row.check.what)
                } else {
                    String::new()
                };
                first = false;
                let _ = writeln!(
                    s,
                    "| {tool} | {} | {} | {} | {real_cell} | {text} | {mark} |",
                    f.label,
                    cell(&sim),
                    cell(&guest)
                );
            }
        }
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {} | {} |",
            k.policy.name,
            k.policy.kernel.map_or("-", |x| x.1),
            tally.figures,
            tally.within,
            tally.explained,
            tally.not_compared,
            tally.unexplained
        );
        sections.push_str(&s);
    }
    t.push_str(&matrix.text(MATRIX_HEADING, MATRIX_INTRO));
    t.push_str(&sections);
    t.push('\n');
    t.push_str(END);
    (t, unexplained)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(name: &str, spec: u32, cpu: u64, switches: u64, wakeups: u64) -> TaskReport {
        TaskReport {
            name: name.into(),
            spec,
            cpu_time_ns: cpu,
            voluntary_switches: switches,
            wakeups,
            wakeup_latency_avg_ns: Some(50_000),
            ..Default::default()
        }
    }

    #[test]
    fn a_kernels_tool_costs_leave_out_what_its_machine_costs_charge() {
        let spec = |name: &str| schedlab_sim::report::SpecReport { name: name.into(), ..Default::default() };
        // hackbench's main thread is not a worker; 10 workers took 20 ms
        // in 1,000 switches for MESSAGE_RUN's 10,000 messages.
        let mut message = Report { specs: vec![spec("hackbench")], ..Default::default() };
        message.tasks.push(task("hackbench-1", 0, 5_000_000, 10, 1));
        message.tasks.extend((0..10).map(|i| task(&format!("hackbench-{}", i + 2), 0, 2_000_000, 100, 100)));
        let mut cycle = Report { specs: vec![spec("cyclictest")], ..Default::default() };
        cycle.tasks.push(task("cyclictest-1", 0, 9_000_000, 100, 100));
        cycle.tasks.push(task("cyclictest-2", 0, 60_000_000, 1000, 1000));
        let costs = [("context_switch".to_string(), 10_000), ("timer_wakeup".to_string(), 40_000)];
        let c = kernel_tool_costs(&message, &cycle, &costs);
        // (20 ms - 1,000 x 10 us) / (2 x 10,000) = 0.5 us; 60 us - 40 us.
        assert_eq!(c, ToolCosts { message: 500, cycle: 20_000 });
    }

    #[test]
    fn the_preset_and_the_real_tool_are_read_by_role() {
        let spec = |name: &str, tasks: u64| schedlab_sim::report::SpecReport {
            name: name.into(),
            tasks,
            ..Default::default()
        };
        let check = &CHECKS[1];
        let mut real = Report {
            duration_ns: 1_000_000_000,
            specs: vec![spec("cyclictest", 2), spec("stress-ng-cpu", 1)],
            ..Default::default()
        };
        real.tasks.push(task("cyclictest-1", 0, 9_000_000, 100, 100));
        real.tasks.push(task("cyclictest-2", 0, 60_000_000, 1000, 1000));
        real.tasks.push(task("stress-ng-cpu-3", 1, 900_000_000, 10, 0));
        let f = figures(check, &real, true);
        let get = |key: &str| f.iter().find(|x| x.key == key).map(|x| x.value);
        // The measuring thread alone: 1,000 wakeups, not the main's 100.
        assert_eq!(get("wakeups:cyclictest"), Some(1000.0));
        assert_eq!(get("run:cyclictest"), Some(60_000.0));
        // The preset's own names for the same roles.
        let sim = Report {
            duration_ns: 1_000_000_000,
            specs: vec![spec("cyclictest", 1), spec("stress-ng-cpu", 1)],
            tasks: vec![
                task("cyclictest-0", 0, 60_000_000, 1000, 1000),
                task("stress-ng-cpu-0", 1, 900_000_000, 10, 0),
            ],
            ..Default::default()
        };
        let keys = |f: &[Figure]| f.iter().map(|x| x.key.clone()).collect::<Vec<_>>();
        assert_eq!(keys(&figures(check, &sim, false)), keys(&f));
    }

    #[test]
    fn a_finite_tools_own_time_is_read_from_what_it_prints() {
        assert_eq!(tool_time("Running in process mode with 2 groups\nTime: 0.036\n"), Some(36_000_000.0));
        let perf = "# Running 'sched/pipe' benchmark:\n\n     Total time: 0.816 [sec]\n\n     163.375400 usecs/op\n";
        assert_eq!(tool_time(perf), Some(816_000_000.0));
        assert_eq!(tool_time("T: 0 ( 38) P:80 I:1000 C: 2000"), None);
    }

    #[test]
    fn the_section_replaces_its_old_self_and_the_rest_of_the_page_stays() {
        let page = format!("# Page\n\ntext\n\n{BEGIN}\nold\n{END}\n\n## after\n");
        let new = format!("{BEGIN}\nnew\n{END}");
        let out = with_section(&page, &new);
        assert_eq!(out, format!("# Page\n\ntext\n\n{BEGIN}\nnew\n{END}\n\n## after\n"));
        assert_eq!(kept_section(&out), Some(new.as_str()));
        let appended = with_section("# Page\n", &new);
        assert_eq!(appended, format!("# Page\n\n{new}\n"));
        assert_eq!(with_section(&appended, &new), appended, "the same section again, the same page");
        assert_eq!(kept_section("# Page\n"), None);
    }
}
