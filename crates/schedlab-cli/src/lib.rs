//! `schedlab`: run a workload on simulated schedulers, side by side.
//!
//! The whole command line is this library's [`main_with`]: the `schedlab`
//! binary calls it with no policies of its own, and a user's crate calls it
//! with theirs to get every command with their policies beside the
//! built-in ones (docs/writing-a-policy.md).

mod bench;
mod experiments;
mod html;
mod render;
mod svg;
mod sweep;
mod validate;
mod vm;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Parser, Subcommand};
use rayon::prelude::*;
use schedlab_sim::report;
use schedlab_sim::time::{format_duration, parse_duration, parse_duration_flag};
use schedlab_sim::timeline::{Schedule, Timeline};
use schedlab_sim::trace_out::{TraceFormat, TraceWriter};
use schedlab_sim::{Engine, EngineOptions, Observer, Overrides, Report, Workload};
use std::collections::BTreeMap;

#[derive(Parser)]
#[command(
    name = "schedlab",
    version,
    about = "A laboratory for CPU schedulers: one workload, every scheduler, side by side"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a workload on one simulated scheduler and show its report.
    Run {
        #[command(flatten)]
        common: Common,
        /// Scheduler to simulate (see `schedlab list`).
        #[arg(long, default_value = "eevdf")]
        sched: String,
        /// Print the per-task table as well.
        #[arg(long)]
        tasks: bool,
        /// Also write a self-contained HTML page with plots to this file
        /// (its timeline a 200 ms window from the middle of the run).
        #[arg(long, value_name = "FILE")]
        html: Option<std::path::PathBuf>,
    },
    /// Run a workload on several schedulers and compare them in one table.
    Compare {
        #[command(flatten)]
        common: Common,
        /// Comma-separated schedulers (default: all).
        #[arg(long, value_delimiter = ',')]
        sched: Vec<String>,
        /// Also run the workload on this machine's kernel, as real threads.
        #[arg(long)]
        host: bool,
        #[command(flatten)]
        host_opts: HostArgs,
        /// Also run the workload in a real kernel booted under QEMU, as a row
        /// named NAME (repeatable), e.g. bmq=../shared/kernels/bmq-6.12.bzImage.
        #[arg(long = "kernel", value_name = "NAME=FILE", value_parser = vm::parse_kernel)]
        kernel: Vec<(String, std::path::PathBuf)>,
        #[command(flatten)]
        vm_opts: vm::VmArgs,
        /// Per task: CPU share under each scheduler (rows of --csv become
        /// one per task).
        #[arg(long)]
        tasks: bool,
        /// Also write a self-contained HTML page with plots to this file.
        #[arg(long, value_name = "FILE")]
        html: Option<std::path::PathBuf>,
        /// Start of the HTML page's CPU timeline window (default: the middle
        /// of the run, or its start for runs under a second).
        #[arg(long, value_parser = parse_duration_flag, value_name = "TIME")]
        timeline_at: Option<u64>,
        /// Length of the timeline window.
        #[arg(long, value_parser = parse_duration_flag, default_value = "200ms", value_name = "TIME")]
        timeline_len: u64,
    },
    /// Run a workload as real threads in a real kernel booted under QEMU
    /// (a bzImage of the scheduler to measure), with the same report.
    Vm {
        #[command(flatten)]
        common: Common,
        /// The kernel to boot: an x86 bzImage (see ../shared/kernels or
        /// tools/kernel/build.sh).
        #[arg(long, value_name = "FILE")]
        kernel: std::path::PathBuf,
        #[command(flatten)]
        vm_opts: vm::VmArgs,
        #[command(flatten)]
        host_opts: HostArgs,
        /// Print the per-task table as well.
        #[arg(long)]
        tasks: bool,
    },
    /// Run a workload as real threads on this machine's kernel.
    Host {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        host_opts: HostArgs,
    },
    /// Write the simulated schedule as a trace: ftrace text (as tracefs's
    /// `trace` file prints it) or Chrome/Perfetto JSON, one track per CPU.
    Trace {
        #[command(flatten)]
        common: Common,
        /// Scheduler to simulate (see `schedlab list`).
        #[arg(long, default_value = "eevdf")]
        sched: String,
        /// Output file; the format follows its extension (.json: Perfetto)
        /// unless --format says otherwise.
        #[arg(short, long)]
        output: std::path::PathBuf,
        /// ftrace or perfetto.
        #[arg(long)]
        format: Option<String>,
    },
    /// Replay a recorded trace (tracefs text, trace-cmd report or perf
    /// script of sched events) on simulated schedulers: each task's bursts,
    /// sleeps and wakers as recorded, everything else decided by the policy.
    #[command(mut_arg("workload", |a| a.value_name("TRACE").help(
        "The recorded trace: tracefs text (trace or trace_pipe), `trace-cmd report` or `perf script` output \
         of sched events, as `schedlab record` writes"
    )))]
    Replay {
        #[command(flatten)]
        common: Common,
        /// Comma-separated schedulers (default: all).
        #[arg(long, value_delimiter = ',')]
        sched: Vec<String>,
        /// Per task: CPU time in the trace beside each scheduler's.
        #[arg(long)]
        tasks: bool,
    },
    /// Record a command's scheduling on this machine's kernel as an ftrace
    /// text trace (needs tracefs, i.e. root), for `schedlab replay`.
    Record {
        /// Where to write the trace.
        #[arg(short, long)]
        output: std::path::PathBuf,
        /// The command and its arguments, after --.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Run a workload over a grid of parameter values on several
    /// schedulers, in parallel: CSV of every run, a line plot of a metric.
    Sweep {
        #[command(flatten)]
        common: Common,
        /// NAME=VALUES to vary: cpus, seed, duration, a [params] entry (or
        /// `tasks` for the workload's task-count parameter) or a tunable.
        /// Values are a list, e.g. 1,2,4,...,4096. Repeat for a grid; the
        /// plot's x axis is the first.
        #[arg(long, required = true, value_name = "NAME=VALUES")]
        vary: Vec<String>,
        /// Comma-separated schedulers (default: all).
        #[arg(long, value_delimiter = ',')]
        sched: Vec<String>,
        /// Report column(s) to tabulate and plot (CSV columns, see
        /// docs/report-schema.md).
        #[arg(long, value_delimiter = ',', default_value = "context_switches_per_sec")]
        metric: Vec<String>,
        /// Write the CSV here (and print the metric's table) instead of
        /// printing the CSV.
        #[arg(short, long, value_name = "FILE")]
        output: Option<std::path::PathBuf>,
        /// Write an SVG line plot of the metric against the first --vary.
        #[arg(long, value_name = "FILE")]
        plot: Option<std::path::PathBuf>,
        /// Worker threads (default: one per CPU).
        #[arg(long)]
        jobs: Option<usize>,
    },
    /// Run the classic experiments (thread-test, 10 hogs on 8 CPUs, wakeup
    /// latency under stress, lat_ctx, make -j and encoder makespan) and
    /// write experiments.md with its plots (in ./schedlab-experiments, or
    /// --out).
    Experiments {
        /// Directory for experiments.md and experiments/*.svg (default:
        /// ./schedlab-experiments; the repository's docs/ only when named).
        #[arg(long, value_name = "DIR")]
        out: Option<std::path::PathBuf>,
        /// Shorter runs and fewer points, for a quick look.
        #[arg(long)]
        quick: bool,
        /// Also run what this machine can on its real kernel.
        #[arg(long)]
        host: bool,
        /// Worker threads (default: one per CPU).
        #[arg(long)]
        jobs: Option<usize>,
    },
    /// Check each simulated policy against its own kernel booted under QEMU
    /// on a fixed set of experiments, and write validation.md with the
    /// simulated and real figures side by side (about 25 minutes; --quick,
    /// three decision-only experiments, about 20 s per kernel).
    Validate {
        /// Directory for validation.md and the real runs' reports (default:
        /// ./schedlab-validation; the repository's docs/ only when named).
        #[arg(long, value_name = "DIR")]
        out: Option<std::path::PathBuf>,
        /// Directory of the guest kernels, NAME.bzImage as `schedlab list`
        /// names them.
        #[arg(long, value_name = "DIR")]
        kernels: Option<std::path::PathBuf>,
        /// Only the experiments whose figures are decisions one short run
        /// settles, one run each (what CI runs).
        #[arg(long)]
        quick: bool,
        /// Runs per figure on each side (default 3; 1 with --quick).
        #[arg(long)]
        runs: Option<usize>,
        /// Comma-separated policies (default: every policy whose kernel is
        /// in --kernels).
        #[arg(long, value_delimiter = ',')]
        sched: Vec<String>,
        /// Accelerator: auto, kvm or tcg.
        #[arg(long, default_value = "auto", value_parser = clap::value_parser!(schedlab_vm::Accel))]
        accel: schedlab_vm::Accel,
        /// Take the real runs kept in DIR/validation/ by an earlier run
        /// instead of booting the kernels again (after a model change).
        #[arg(long)]
        reuse_real: bool,
        /// Set a tunable in the simulations only (the kernels keep theirs),
        /// to see what the real figures say of a change.
        #[arg(long = "set", value_name = "NAME=VALUE", value_parser = parse_kv)]
        set: Vec<(String, i64)>,
    },
    /// Measure this machine's context switch, idle wakeup and syscall costs
    /// and print them as --cost flags and a [machine] costs line, so that
    /// simulations start from this kernel's floor (about 2 s)
    Calibrate {
        /// Multiply the number of samples (1 = 20,000 round trips, 2,000
        /// idle wakeups, 200,000 yields).
        #[arg(long, default_value_t = 1.0)]
        samples: f64,
        /// Print the costs and the figures behind them as JSON (what
        /// `validate` reads from each guest).
        #[arg(long)]
        json: bool,
    },
    /// List schedulers with their tunables, and the built-in scenarios.
    List,
    /// Measure simulation speed: events per second on standard workloads.
    Bench {
        /// Shorter runs, for a quick look.
        #[arg(long)]
        quick: bool,
    },
}

#[derive(Args)]
pub(crate) struct HostArgs {
    /// Do not record sched events with tracefs on the real kernel.
    #[arg(long)]
    pub(crate) no_trace: bool,
    /// Do not create the workload's cgroups on the real kernel.
    #[arg(long)]
    pub(crate) no_groups: bool,
}

impl HostArgs {
    fn options(&self) -> schedlab_host::HostOptions {
        schedlab_host::HostOptions { tracing: !self.no_trace, groups: !self.no_groups }
    }
}

fn run_host(w: &Workload, args: &HostArgs) -> Result<Report> {
    let run = schedlab_host::run(w, &args.options())?;
    for warning in &run.warnings {
        eprintln!("schedlab: host: {warning}");
    }
    Ok(run.report)
}

#[derive(Args)]
pub(crate) struct Common {
    /// Workload: a schedlab TOML file, an rt-app JSON file, or the name of a
    /// built-in scenario.
    workload: String,
    /// Seed for the workload's random durations.
    #[arg(long)]
    seed: Option<u64>,
    /// Simulated duration, e.g. 5s or 500ms.
    #[arg(long, value_parser = parse_run_duration)]
    duration: Option<u64>,
    /// Number of CPUs (a flat topology), replacing the workload's machine.
    #[arg(long)]
    cpus: Option<u32>,
    /// Set a scheduler tunable by its kernel name, e.g. base_slice_ns=3000000.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = parse_kv)]
    set: Vec<(String, i64)>,
    /// Set a workload parameter from its [params], e.g. threads=64.
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = parse_kv)]
    param: Vec<(String, i64)>,
    /// Set one of the machine's costs, e.g. idle_exit=8us (`schedlab
    /// calibrate` measures them): context_switch, migration, idle_exit,
    /// syscall, fork, thread_start, timer_wakeup, timer_latency,
    /// tick_jitter.
    #[arg(long = "cost", value_name = "NAME=DURATION", value_parser = parse_cost)]
    cost: Vec<(String, u64)>,
    /// Print the report as JSON (schema in docs/report-schema.md).
    #[arg(long)]
    json: bool,
    /// Print the report as CSV, one row per run (or per task with --tasks);
    /// columns in docs/report-schema.md.
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    /// Print log2 histograms of wakeup latency and run time per switch.
    #[arg(long)]
    hist: bool,
}

/// --duration: with a unit, above zero, within the simulator's horizon.
fn parse_run_duration(s: &str) -> Result<u64, String> {
    match parse_duration_flag(s)? {
        0 => Err("a run must last more than zero: write e.g. 5s".into()),
        ns if ns > schedlab_sim::MAX_TIME => {
            Err(format!("'{s}' is beyond the simulator's 78-hour horizon: at most 78h"))
        }
        ns => Ok(ns),
    }
}

fn parse_cost(s: &str) -> Result<(String, u64), String> {
    let (k, v) = s.split_once('=').ok_or_else(|| format!("'{s}' is not NAME=DURATION, e.g. idle_exit=8us"))?;
    if v.trim().ends_with(|c: char| c.is_ascii_digit()) {
        return Err(format!("'{v}' has no time unit: write e.g. {k}=8us"));
    }
    Ok((k.trim().to_string(), parse_duration(v)?))
}

fn parse_kv(s: &str) -> Result<(String, i64), String> {
    let (k, v) = s.split_once('=').ok_or_else(|| format!("'{s}' is not NAME=VALUE, e.g. base_slice_ns=3000000"))?;
    let v = v.trim();
    let value = match v {
        "true" | "on" => 1,
        "false" | "off" => 0,
        _ => match parse_duration(v) {
            Ok(ns) if v.ends_with('s') => ns as i64,
            _ => v.parse::<i64>().map_err(|_| format!("value '{v}' of {k} is not an integer"))?,
        },
    };
    Ok((k.trim().to_string(), value))
}

/// The command line's changes to the workload.
pub(crate) fn overrides(c: &Common) -> Overrides {
    Overrides {
        cpus: c.cpus,
        duration: c.duration,
        seed: c.seed,
        params: c.param.iter().cloned().collect::<BTreeMap<_, _>>(),
        tunables: c.set.iter().cloned().collect::<BTreeMap<_, _>>(),
        costs: c.cost.iter().cloned().collect::<BTreeMap<_, _>>(),
    }
}

pub(crate) fn load_workload(c: &Common) -> Result<Workload> {
    let w = load_workload_with(c, &overrides(c))?;
    for lint in w.lints() {
        eprintln!("schedlab: warning: {}: {lint}", c.workload);
    }
    Ok(w)
}

/// The workload `c` names, read with overrides `ov` in place of the
/// command line's (a sweep varies them).
pub(crate) fn load_workload_with(c: &Common, ov: &Overrides) -> Result<Workload> {
    let loaded = schedlab_sim::input::load(&c.workload, ov).map_err(|e| anyhow!(e))?;
    // Said once, not at every point of a sweep.
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if let Some(note) = loaded.note
        && !SAID.swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        eprintln!("schedlab: {note}");
    }
    Ok(loaded.workload)
}

pub(crate) fn simulate(w: &Workload, sched: &str) -> Result<Report> {
    let policy = schedlab_policies::build(sched, w).map_err(|e| anyhow!(e))?;
    let engine = Engine::new(w, policy, EngineOptions::default());
    engine.run().map_err(|e| anyhow!("{sched}: {e}"))
}

/// `w` simulated on each of `names`, in parallel, reports in that order.
pub(crate) fn simulate_each(w: &Workload, names: &[String]) -> Result<Vec<Report>> {
    names.par_iter().map(|n| simulate(w, n)).collect()
}

/// A simulated run whose events `observer` sees as they happen.
pub(crate) fn simulate_observed<'w>(w: &'w Workload, sched: &str, observer: &'w mut dyn Observer) -> Result<Report> {
    let policy = schedlab_policies::build(sched, w).map_err(|e| anyhow!(e))?;
    Engine::new(w, policy, EngineOptions::default()).with_observer(observer).run().map_err(|e| anyhow!("{sched}: {e}"))
}

/// A simulated run that also keeps the schedule between `window.0` and
/// `window.1`, for the HTML report's timeline.
pub(crate) fn simulate_with_timeline(w: &Workload, sched: &str, window: (u64, u64)) -> Result<(Report, Schedule)> {
    let mut timeline = Timeline::new(w, window.0, window.1);
    let report = simulate_observed(w, sched, &mut timeline)?;
    let schedule = timeline.finish(report.duration_ns);
    Ok((report, schedule))
}

/// --json or --csv output of a set of reports; false when neither was asked
/// for. `single` prints a lone report as an object, not an array.
fn structured_output(c: &Common, reports: &[Report], tasks: bool, single: bool) -> Result<bool> {
    if c.json {
        if single && reports.len() == 1 {
            println!("{}", serde_json::to_string_pretty(&reports[0])?);
        } else {
            println!("{}", serde_json::to_string_pretty(reports)?);
        }
        return Ok(true);
    }
    if !c.csv {
        return Ok(false);
    }
    let mut out = csv::Writer::from_writer(std::io::stdout().lock());
    if tasks {
        out.write_record(report::TASK_COLUMNS)?;
        for r in reports {
            for rec in r.task_records() {
                out.write_record(&rec)?;
            }
        }
    } else {
        out.write_record(report::SUMMARY_COLUMNS)?;
        for r in reports {
            out.write_record(r.summary_record())?;
        }
    }
    out.flush()?;
    Ok(true)
}

/// One report as run, vm and host print it: JSON or CSV when asked, else
/// the summary (and with `tasks` a line per task).
fn print_one(c: &Common, report: &Report, tasks: bool) -> Result<()> {
    if !structured_output(c, std::slice::from_ref(report), tasks, true)? {
        print!("{}", render::run_summary(report, c.hist));
        if tasks {
            println!();
            print!("{}", render::task_lines(report));
        }
    }
    Ok(())
}

/// Runs schedlab's command line (`std::env::args`) with `policies` added
/// to the built-in ones; on an error, prints it and exits with its code.
pub fn main_with(policies: Vec<schedlab_policies::UserPolicy>) {
    if let Err(e) = schedlab_policies::register(policies) {
        eprintln!("schedlab: {e}");
        std::process::exit(2);
    }
    if schedlab_vm::guest::is_init() {
        guest_main();
    }
    // Like other Unix tools, end quietly when the reader of stdout goes
    // away (`schedlab run ... --json | head -1`) instead of failing a
    // write: Rust ignores SIGPIPE by default.
    // SAFETY: restoring the default disposition of one signal.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("schedlab: {e:#}");
        std::process::exit(exit_code(&e));
    }
}

/// 128 + the signal for a run a stop signal ended, as a shell reports a
/// process killed by it; 1 for every other error.
fn exit_code(e: &anyhow::Error) -> i32 {
    match (e.downcast_ref::<schedlab_vm::VmError>(), e.downcast_ref::<schedlab_host::HostError>()) {
        (Some(schedlab_vm::VmError::Interrupted(sig)), _)
        | (_, Some(schedlab_host::HostError::Interrupted(sig) | schedlab_host::HostError::CutShort(sig))) => 128 + sig,
        _ => 1,
    }
}

/// schedlab as the init of a `schedlab vm` guest: the job's command line
/// comes from the initramfs, its stdout goes to the result port.
fn guest_main() -> ! {
    let code = match schedlab_vm::guest::start() {
        Ok(args) => match Cli::try_parse_from(args) {
            Ok(cli) => match run(cli) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("schedlab: {e:#}");
                    exit_code(&e)
                }
            },
            Err(e) => {
                eprintln!("schedlab: {}", e.to_string().trim());
                2
            }
        },
        Err(e) => {
            eprintln!("schedlab: guest: {e}");
            1
        }
    };
    schedlab_vm::guest::finish(code)
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Run { common, sched, tasks, html } => {
            one_scheduler("run", &sched)?;
            let w = load_workload(&common)?;
            let report = match &html {
                Some(path) => {
                    let (report, timeline) =
                        simulate_with_timeline(&w, &sched, timeline_window(&w, None, TIMELINE_LEN))?;
                    let heading = format!(
                        "{} on {}: {} CPUs, HZ={}, {} simulated, seed {}",
                        report.scheduler,
                        w.name,
                        w.nr_cpus(),
                        w.machine.hz,
                        format_duration(w.duration),
                        w.seed
                    );
                    write_html(
                        path,
                        &html::page(
                            &format!("schedlab: {}", w.name),
                            &heading,
                            std::slice::from_ref(&report),
                            &[Some(timeline)],
                        ),
                    )?;
                    report
                }
                None => simulate(&w, &sched)?,
            };
            print_one(&common, &report, tasks)?;
        }
        Command::Trace { common, sched, output, format } => {
            one_scheduler("trace", &sched)?;
            let w = load_workload(&common)?;
            let format = match format.as_deref() {
                Some("ftrace") => TraceFormat::Ftrace,
                Some("perfetto" | "json") => TraceFormat::Perfetto,
                Some(other) => bail!("unknown trace format '{other}': use ftrace or perfetto"),
                None if output.extension().is_some_and(|e| e == "json") => TraceFormat::Perfetto,
                None => TraceFormat::Ftrace,
            };
            let file = std::fs::File::create(&output).with_context(|| {
                format!("cannot create {}: check the directory exists and is writable", output.display())
            })?;
            let mut writer = TraceWriter::new(&w, Box::new(std::io::BufWriter::new(file)), format);
            let policy = schedlab_policies::build(&sched, &w).map_err(|e| anyhow!(e))?;
            let report = Engine::new(&w, policy, EngineOptions::default())
                .with_observer(&mut writer)
                .run()
                .map_err(|e| anyhow!("{sched}: {e}"))?;
            writer.finish(report.duration_ns).with_context(|| format!("writing {}", output.display()))?;
            eprintln!(
                "{} context switches of {sched} on {} written to {}",
                report.totals.context_switches,
                w.name,
                output.display()
            );
        }
        Command::Replay { common, sched, tasks } => replay(&common, sched, tasks)?,
        Command::Record { output, command } => {
            // Before the command runs: a run of minutes must not be lost
            // to a typo in -o.
            let file = std::fs::File::create(&output).with_context(|| {
                format!("cannot create {}: check the directory exists and is writable", output.display())
            })?;
            let rec = schedlab_host::record(&command)?;
            for w in &rec.warnings {
                eprintln!("schedlab: record: {w}");
            }
            std::io::Write::write_all(&mut std::io::BufWriter::new(file), rec.text.as_bytes())
                .with_context(|| format!("cannot write {}", output.display()))?;
            let lines = rec.text.lines().filter(|l| !l.starts_with('#')).count();
            eprintln!(
                "{lines} sched events of '{}' written to {} ({})",
                command.join(" "),
                output.display(),
                rec.exit_status
            );
            if rec.overrun > 0 {
                eprintln!(
                    "schedlab: record: the ring buffers dropped {} events; a replay will miss bursts (record a shorter run)",
                    rec.overrun
                );
            }
            if let Some(sig) = rec.interrupted {
                eprintln!(
                    "schedlab: record: stopped by {}, passed on to the command; the trace holds what ran until then",
                    schedlab_host::signals::name(sig)
                );
                std::process::exit(128 + sig);
            }
        }
        Command::Vm { common, kernel, vm_opts, host_opts, tasks } => {
            let w = load_workload(&common)?;
            let label = vm::kernel_label(&kernel);
            let report = vm::run(&common, &w, &kernel, &label, &vm_opts, &host_opts)?;
            print_one(&common, &report, tasks)?;
        }
        Command::Host { common, host_opts } => {
            if !common.cost.is_empty() {
                bail!(
                    "--cost sets what the simulator charges; the real kernel pays its own costs (use compare --host)"
                );
            }
            let w = load_workload(&common)?;
            let report = run_host(&w, &host_opts)?;
            print_one(&common, &report, false)?;
            // The partial report is printed; the exit status still says
            // the run was cut short, as record and vm say it.
            if let Some(sig) = schedlab_host::signals::received() {
                return Err(schedlab_host::HostError::CutShort(sig).into());
            }
        }
        Command::Compare {
            common,
            sched,
            host,
            host_opts,
            kernel,
            vm_opts,
            tasks,
            html,
            timeline_at,
            timeline_len,
        } => {
            let w = load_workload(&common)?;
            let names = policy_names(sched, &w)?;
            if let Some(at) = timeline_at
                && at >= w.duration
            {
                bail!(
                    "--timeline-at {} is past the run's end at {}: give a time within it",
                    format_duration(at),
                    format_duration(w.duration)
                );
            }
            let (mut reports, mut timelines): (Vec<Report>, Vec<Option<Schedule>>) = if html.is_some() {
                let window = timeline_window(&w, timeline_at, timeline_len);
                let runs: Vec<(Report, Schedule)> =
                    names.par_iter().map(|n| simulate_with_timeline(&w, n, window)).collect::<Result<_>>()?;
                runs.into_iter().map(|(r, t)| (r, Some(t))).unzip()
            } else {
                let reports = simulate_each(&w, &names)?;
                let none = reports.iter().map(|_| None).collect();
                (reports, none)
            };
            // The real run goes last and alone, so the simulations do not
            // compete with it for CPUs.
            if host {
                reports.push(run_host(&w, &host_opts)?);
                timelines.push(None);
            }
            // Guests one at a time, each with every host CPU to itself.
            for (name, file) in &kernel {
                reports.push(vm::run(&common, &w, file, name, &vm_opts, &host_opts)?);
                timelines.push(None);
            }
            // A finite workload's runs end when its last task exits: the
            // horizon it was given says nothing.
            let span = if reports.iter().all(|r| r.totals.makespan_ns.is_some()) {
                "until every task exited (see makespan)".to_string()
            } else {
                format!("{} simulated", format_duration(w.duration))
            };
            let heading = format!("{}: {} CPUs, HZ={}, {span}, seed {}", w.name, w.nr_cpus(), w.machine.hz, w.seed);
            if let Some(path) = &html {
                write_html(path, &html::page(&format!("schedlab: {}", w.name), &heading, &reports, &timelines))?;
            }
            if !structured_output(&common, &reports, tasks, false)? {
                println!("{heading}\n");
                print!("{}", render::comparison_table(&reports));
                if tasks {
                    println!("\nCPU share per task, % of one CPU:");
                    print!("{}", render::task_share_table(&reports, None));
                }
                if common.hist {
                    for r in &reports {
                        println!("\n{}:", r.scheduler);
                        print!("{}", render::log2_hist("wakeup_latency_ns", &r.wakeup_latency));
                        print!("{}", render::log2_hist("runtime_per_switch_ns", &r.runtime_per_switch));
                    }
                }
            }
        }
        Command::Sweep { common, vary, sched, metric, output, plot, jobs } => sweep::run(sweep::SweepRequest {
            common: &common,
            vary: &vary,
            sched,
            metrics: &metric,
            output: output.as_deref(),
            plot: plot.as_deref(),
            jobs,
        })?,
        Command::Experiments { out, quick, host, jobs } => experiments::run(experiments::Options {
            out: out.unwrap_or_else(experiments::default_out),
            quick,
            host,
            jobs: jobs.unwrap_or_else(rayon::current_num_threads),
        })?,
        Command::Validate { out, kernels, quick, runs, sched, accel, reuse_real, set } => {
            validate::run(validate::Options {
                out: out.unwrap_or_else(validate::default_out),
                kernels: kernels.unwrap_or_else(validate::default_kernels),
                quick,
                runs,
                sched,
                accel,
                reuse: reuse_real,
                set,
            })?
        }
        Command::List => list(),
        Command::Bench { quick } => bench::run(quick)?,
        Command::Calibrate { samples, json } => calibrate(samples, json)?,
    }
    Ok(())
}

/// The HTML page's timeline window when none is asked for.
const TIMELINE_LEN: u64 = 200_000_000;

/// The timeline window from `at` (default: centred in runs of a second or
/// more, from the start in shorter ones), `len` long.
fn timeline_window(w: &Workload, at: Option<u64>, len: u64) -> (u64, u64) {
    let from = at.unwrap_or(if w.duration >= 1_000_000_000 { (w.duration / 2).saturating_sub(len / 2) } else { 0 });
    (from, from.saturating_add(len))
}

fn write_html(path: &std::path::Path, page: &str) -> Result<()> {
    std::fs::write(path, page)
        .with_context(|| format!("cannot write {}: check the directory exists and is writable", path.display()))?;
    eprintln!("schedlab: wrote {}", path.display());
    Ok(())
}

/// `run` and `trace` simulate one scheduler; a list is for `compare`.
fn one_scheduler(command: &str, sched: &str) -> Result<()> {
    if sched.contains(',') {
        bail!("{command} takes one scheduler, not '{sched}': use compare for several (compare --sched {sched})");
    }
    Ok(())
}

fn policy_names(sched: Vec<String>, w: &Workload) -> Result<Vec<String>> {
    let names: Vec<String> =
        if sched.is_empty() { schedlab_policies::all().iter().map(|p| p.name.to_string()).collect() } else { sched };
    for n in &names {
        if !schedlab_policies::all().iter().any(|p| p.name == n) {
            // Build once for the error message naming the choices.
            schedlab_policies::build(n, w).map_err(|e| anyhow!(e))?;
        }
    }
    // A tunable is one policy's: say which of those compared have it.
    if w.tunables.is_empty() {
        return Ok(names);
    }
    let mut bare = w.clone();
    bare.tunables.clear();
    let known: Vec<Vec<&'static str>> = names
        .iter()
        .map(|n| {
            schedlab_policies::build(n, &bare)
                .map(|p| p.tunables().iter().map(|t| t.name).collect())
                .unwrap_or_default()
        })
        .collect();
    for tunable in w.tunables.keys() {
        let (have, lack): (Vec<_>, Vec<_>) = names.iter().zip(&known).partition(|(_, k)| k.contains(&tunable.as_str()));
        if !lack.is_empty() {
            let list = |v: &[(&String, &Vec<&str>)]| v.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(",");
            bail!(
                "--set {tunable}: {} {} no such tunable{}",
                list(&lack),
                if lack.len() == 1 { "has" } else { "have" },
                if have.is_empty() {
                    " (see schedlab list)".to_string()
                } else {
                    format!(
                        "; {} {}: pass --sched {}",
                        list(&have),
                        if have.len() == 1 { "has it" } else { "have it" },
                        list(&have)
                    )
                }
            );
        }
    }
    Ok(names)
}

fn replay(common: &Common, sched: Vec<String>, tasks: bool) -> Result<()> {
    let text = schedlab_sim::input::read_input_file(std::path::Path::new(&common.workload), "trace")
        .map_err(|e| anyhow!("{e} (replay takes the path of a recorded trace)"))?;
    if !common.param.is_empty() {
        bail!("--param: a trace has no parameters");
    }
    let (w, recorded) = schedlab_sim::replay::workload_from_trace(&text, &common.workload, &overrides(common))?;
    let names = policy_names(sched, &w)?;
    let reports = simulate_each(&w, &names)?;
    if structured_output(common, &reports, tasks, false)? {
        return Ok(());
    }
    println!(
        "replay of {}: {} events, {} tasks, {} CPUs, {} recorded\n",
        common.workload,
        recorded.events,
        w.tasks.len(),
        w.nr_cpus(),
        schedlab_sim::time::format_duration(recorded.duration)
    );
    print!("{}", render::comparison_table(&reports));
    if tasks {
        println!("\nCPU time per task, ms (recorded, then each scheduler):");
        print!("{}", render::task_share_table(&reports, Some(&recorded.cpu_time)));
    }
    Ok(())
}

fn list() {
    println!("Schedulers (tunables shown as set for an 8-CPU machine):\n");
    let sample = Workload::from_toml(
        "[machine]\ncpus = 8\n[[task]]\nname = \"t\"\nprogram = [ { run = \"1ms\" } ]\n",
        "list",
        &Overrides::default(),
    )
    .expect("the built-in sample workload is valid");
    for p in schedlab_policies::all() {
        println!("{:<8} {}\n         follows {}", p.name, p.summary, p.source);
        match p.kernel {
            Some((file, what)) => println!("         checked against {what} ({file}.bzImage, `schedlab validate`)"),
            None => match p.audit {
                Some(what) => println!("         no bootable kernel; source-audited against {what}"),
                None => println!("         no bootable kernel to check it against"),
            },
        }
        if let Ok(policy) = schedlab_policies::build(p.name, &sample) {
            for t in policy.tunables() {
                println!("           {:<30} {:>12}  {}", t.name, t.value, t.help);
            }
        }
        println!();
    }
    println!("Built-in scenarios (run with `schedlab compare NAME`):\n");
    for (name, text) in schedlab_sim::scenarios::SCENARIOS {
        println!("  {name:<22} {}", schedlab_sim::scenarios::summary(text));
        let params = Workload::from_toml(text, name, &Overrides::default()).map(|w| w.params).unwrap_or_default();
        if !params.is_empty() {
            let list: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            println!("  {:<22} parameters (--param NAME=N), by default: {}", "", list.join(", "));
        }
    }
    println!("\nTool command lines as workloads (quote them; join several with ' + '):\n");
    for example in [
        "stress-ng --cpu 24 --cpu-method loop --timeout 10s",
        "cyclictest --smp -p 80 -i 1000 -D 5s",
        "cyclictest -t -a -i 1000 + stress-ng --cpu 24",
        "hackbench -g 10 -l 1000",
        "perf bench sched messaging -g 10",
        "perf bench sched pipe -l 100000",
        "lat_ctx -s 0 2",
    ] {
        println!("  '{example}'");
    }
}

fn calibrate(samples: f64, json: bool) -> Result<()> {
    let c = schedlab_host::calibrate::calibrate(samples)?;
    if json {
        let costs: serde_json::Map<String, serde_json::Value> =
            c.costs().into_iter().map(|(name, v)| (name.to_string(), v.into())).collect();
        let tick = match &c.tick {
            Ok(t) => serde_json::json!({"median_ns": t.median, "p95_ns": t.p95, "max_ns": t.max, "samples": t.samples}),
            Err(why) => serde_json::json!({"not_measured": why}),
        };
        let out = serde_json::json!({
            "costs": costs,
            "idle_wakeup_ns": c.idle_wakeup,
            "timer_late_ns": c.timer_late,
            "tick_lateness": tick,
            "other_load_pct": c.other_load_pct,
        });
        println!("{out}");
        return Ok(());
    }
    let us = |ns: u64| format!("{:.2} us", ns as f64 / 1e3);
    let (trips, wakeups, yields) = c.samples;
    let k = schedlab_host::info::read();
    println!(
        "Linux {}, {} CPUs usable, HZ={}: medians of batches; other processes took {:.1}% of the CPUs measured\n",
        k.release,
        c.cpus_allowed,
        k.hz.map_or("unknown".to_string(), |hz| hz.to_string()),
        c.other_load_pct
    );
    if c.other_load_pct > 5.0 {
        eprintln!(
            "schedlab: calibrate: other processes took {:.1}% of the CPUs measured: these are not this kernel's \
             costs on a quiet machine; run again when it is quiet",
            c.other_load_pct
        );
    }
    println!(
        "context_switch  {:>10}  per hop of a token between two threads on CPU {} ({trips} round trips)",
        us(c.context_switch),
        c.cpu
    );
    match (c.idle_wakeup, c.idle_exit(), c.other_cpu) {
        (Some(wakeup), Some(exit), Some(other)) => {
            println!(
                "idle_exit       {:>10}  a wakeup from CPU {} onto CPU {other}, idle for {}, takes {} ({wakeups} wakeups), less the switch",
                us(exit),
                c.cpu,
                format_duration(schedlab_host::calibrate::SHALLOW_IDLE),
                us(wakeup)
            );
            for (idle, latency) in &c.deep_idle {
                println!(
                    "                            after {} idle the same wakeup takes {}",
                    format_duration(*idle),
                    us(*latency)
                );
            }
        }
        _ => println!("idle_exit       not measured: this process may use only one CPU"),
    }
    println!("syscall         {:>10}  per sched_yield alone on CPU {} ({yields} calls)", us(c.syscall), c.cpu);
    println!(
        "fork            {:>10}  of the creating thread's CPU per thread created as `host` creates one",
        us(c.fork_parent)
    );
    println!("thread_start    {:>10}  of the new thread's CPU before its work begins", us(c.fork_child));
    println!(
        "timer_wakeup    {:>10}  of a thread's CPU per sleep to a time {} ahead, alone on CPU {}",
        us(c.timer_cpu),
        format_duration(200_000),
        c.cpu
    );
    println!(
        "timer_latency   {:>10}  it woke {} late at the median, less what waking an idle CPU costs",
        us(c.timer_latency()),
        us(c.timer_late)
    );
    match &c.tick {
        Ok(t) => println!(
            "tick_jitter     {:>10}  twice the median lateness of the tick past its jiffy (median {}, p95 {}, max {}, {} ticks)",
            us(t.jitter()),
            us(t.median),
            us(t.p95),
            us(t.max),
            t.samples
        ),
        Err(why) => println!("tick_jitter     not measured: {why} (default 4 us)"),
    }
    println!("migration       not measured: it depends on the task's working set (default 10 us)");
    println!("\nSimulate with these costs:\n  {}", c.cost_flags());
    println!("or put them in the workload's [machine] table:\n  {}", c.toml());
    Ok(())
}

pub(crate) fn common(workload: &str, params: &[(&str, i64)], duration: u64) -> Common {
    Common {
        workload: workload.to_string(),
        seed: None,
        duration: Some(duration),
        cpus: None,
        set: Vec::new(),
        param: params.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        cost: Vec::new(),
        json: false,
        csv: false,
        hist: false,
    }
}
