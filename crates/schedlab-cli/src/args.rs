//! The command line as clap reads it: every command and its flags, the
//! flags all workload commands share, and how they become the workload's
//! overrides.

use crate::commands::{program, vm};
use clap::{Args, Parser, Subcommand};
use schedlab_sim::Overrides;
use schedlab_sim::time::{parse_duration, parse_duration_flag};
use schedlab_sim::workload::dist::Dist;
use std::collections::BTreeMap;

#[derive(Parser)]
#[command(
    name = "schedlab",
    version,
    about = "A laboratory for CPU schedulers: one workload, every scheduler, side by side"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
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
    Compare(CompareArgs),
    /// Run a workload as real threads, or real programs (after --), in a
    /// real kernel booted under QEMU (a bzImage of the scheduler to
    /// measure), with the same report.
    // A real kernel runs with its own tunables and pays its own costs:
    // --set and --cost are refused, so --help does not offer them.
    #[command(mut_arg("workload", |a| a.required(false).default_value("").index(1)))]
    #[command(mut_arg("set", |a| a.hide(true)), mut_arg("cost", |a| a.hide(true)))]
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
        #[command(flatten)]
        program_opts: program::ProgramArgs,
    },
    /// Inside a guest: run the programs of a job file under a trace.
    #[command(hide = true)]
    GuestPrograms { job: std::path::PathBuf },
    /// Run a workload as real threads on this machine's kernel.
    #[command(mut_arg("cost", |a| a.hide(true)))]
    Host {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        host_opts: HostArgs,
        /// Trace every task of the machine, not only the workload's (what
        /// `vm` asks of its guest, a machine of its own): the placement
        /// counts then see the kernel's own threads' wakeups. The workload's
        /// figures are its threads' either way.
        #[arg(long)]
        trace_machine: bool,
        /// Keep the run's trace in FILE: tracefs text of every event the
        /// run recorded (for `schedlab replay`, trace-cmd's tools and
        /// Perfetto).
        #[arg(long, value_name = "FILE")]
        trace_out: Option<std::path::PathBuf>,
        /// Inside a guest: print the report and the trace as one JSON
        /// object, {"report": ..., "trace": "..."}, for `vm --trace-out`.
        #[arg(long, hide = true)]
        with_trace: bool,
    },
    /// Write the simulated schedule as a trace: ftrace text (as tracefs's
    /// `trace` file prints it), Perfetto's protobuf (CPU tracks and thread
    /// states in ui.perfetto.dev) or Chrome JSON, one track per CPU.
    Trace {
        #[command(flatten)]
        common: Common,
        /// Scheduler to simulate (see `schedlab list`).
        #[arg(long, default_value = "eevdf")]
        sched: String,
        /// Output file; the format follows its extension (.perfetto-trace
        /// or .pftrace: Perfetto's protobuf; .dat: trace-cmd's trace.dat;
        /// .json: Chrome JSON; else ftrace text) unless --format says
        /// otherwise.
        #[arg(short, long)]
        output: std::path::PathBuf,
        /// ftrace, perfetto (protobuf), trace-dat or json.
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
        /// Write the replayed schedule (one --sched) as ftrace text, to
        /// set beside the recording in Perfetto or diff with it.
        #[arg(long, value_name = "FILE")]
        trace_out: Option<std::path::PathBuf>,
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
        /// Also run the real tools (cyclictest, stress-ng, make with gcc,
        /// xz) in every guest kernel of $SCHEDLAB_KERNELS (default
        /// ../shared/kernels) under QEMU: about 15 minutes.
        #[arg(long)]
        vm: bool,
        /// Worker threads (default: one per CPU).
        #[arg(long)]
        jobs: Option<usize>,
    },
    /// Check each simulated policy against its own kernel booted under QEMU
    /// on a fixed set of experiments, and write validation.md with the
    /// simulated and real figures side by side (about an hour; --quick,
    /// four experiments a short run settles, about 30 s per kernel).
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
        /// Hold each preset (stress-ng, cyclictest, hackbench, perf bench
        /// sched) against the real tool in each kernel instead, and write
        /// that section of validation.md (about 4 minutes a kernel).
        #[arg(long)]
        tools: bool,
        /// Set a tunable in the simulations only (the kernels keep theirs),
        /// to see what the real figures say of a change.
        #[arg(long = "set", value_name = "NAME=VALUE", value_parser = parse_kv)]
        set: Vec<(String, i64)>,
        /// Also write each simulation with the guest's costs as ftrace text
        /// in DIR (POLICY-EXPERIMENT-SEED.txt), to hold beside a guest's
        /// trace (`schedlab vm --trace-out`).
        #[arg(long, value_name = "DIR")]
        trace_sims: Option<std::path::PathBuf>,
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
    /// Also record this tracefs event beside the sched events, for
    /// --trace-out: a sched event by its name (sched_stat_runtime prints
    /// CFS's vruntime at every update_curr) or GROUP/NAME such as
    /// irq/irq_handler_entry (repeatable). The report's figures ignore it.
    #[arg(long = "trace-event", value_name = "EVENT", value_parser = parse_trace_event)]
    pub(crate) trace_events: Vec<String>,
}

impl HostArgs {
    pub(crate) fn options(&self) -> schedlab_host::HostOptions {
        schedlab_host::HostOptions {
            tracing: !self.no_trace,
            groups: !self.no_groups,
            extra_events: self.trace_events.clone(),
            ..Default::default()
        }
    }
}

/// A tracefs event's name, NAME or GROUP/NAME, which becomes a path under
/// the instance's events/: nothing that could leave that directory.
fn parse_trace_event(s: &str) -> Result<String, String> {
    let part = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    let ok = match s.split_once('/') {
        Some((group, name)) => part(group) && part(name),
        None => part(s),
    };
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!(
            "'{s}' is not a trace event's name: give NAME (a sched event, e.g. sched_stat_runtime) or GROUP/NAME \
             (e.g. irq/irq_handler_entry), in lower-case letters, digits and _, as tracefs's available_events lists them"
        ))
    }
}

#[derive(Args)]
pub(crate) struct Common {
    /// Workload: a schedlab TOML file, an rt-app JSON file, or the name of a
    /// built-in scenario.
    pub(crate) workload: String,
    /// Seed for the workload's random durations.
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Simulated duration, e.g. 5s or 500ms.
    #[arg(long, value_parser = parse_run_duration)]
    pub(crate) duration: Option<u64>,
    /// Number of CPUs (a flat topology), replacing the workload's machine.
    #[arg(long)]
    pub(crate) cpus: Option<u32>,
    /// Set a scheduler tunable by its kernel name, e.g. base_slice_ns=3000000;
    /// SCHED:NAME=VALUE sets it for that scheduler alone (eevdf:base_slice_ns=...).
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = parse_kv)]
    pub(crate) set: Vec<(String, i64)>,
    /// Set a workload parameter from its [params], e.g. threads=64.
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = parse_kv)]
    pub(crate) param: Vec<(String, i64)>,
    /// Set one of the machine's costs, e.g. idle_exit=8us (`schedlab
    /// calibrate` measures them): context_switch, migration, idle_exit,
    /// wake_preempt, wake_remote, syscall, fork, thread_start, thread_exit, run_stretch
    /// (per ms of a run), timer_wakeup, timer_return (the part of timer_wakeup after
    /// the switch, before the thread sees its wakeup), wait_wakeup, signal_return, timer_latency,
    /// tick_jitter, tick_spread.
    /// timer_latency also takes the quantiles a trace measured, e.g.
    /// timer_latency=quantiles(p0=30us,p50=50us,p99=2ms,p100=5ms).
    #[arg(long = "cost", value_name = "NAME=DURATION", value_parser = parse_cost)]
    pub(crate) cost: Vec<(String, Dist)>,
    /// How long the simulated kernel has been up when the workload starts,
    /// e.g. 2.5s (default 1h): what it made at boot is that old (CacULE
    /// scores a task group by its life since boot).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_flag)]
    pub(crate) uptime: Option<u64>,
    /// Print the report as JSON (schema in docs/report-schema.md).
    #[arg(long)]
    pub(crate) json: bool,
    /// Print the report as CSV, one row per run (or per task with --tasks);
    /// columns in docs/report-schema.md.
    #[arg(long, conflicts_with = "json")]
    pub(crate) csv: bool,
    /// Print log2 histograms of wakeup latency and run time per switch.
    #[arg(long)]
    pub(crate) hist: bool,
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

fn parse_cost(s: &str) -> Result<(String, Dist), String> {
    let (k, v) = s.split_once('=').ok_or_else(|| format!("'{s}' is not NAME=DURATION, e.g. idle_exit=8us"))?;
    if v.trim().ends_with(|c: char| c.is_ascii_digit()) {
        return Err(format!("'{v}' has no time unit: write e.g. {k}=8us"));
    }
    Ok((k.trim().to_string(), Dist::parse(v)?))
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
        uptime: c.uptime,
    }
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
        uptime: None,
        json: false,
        csv: false,
        hist: false,
    }
}

// The flags of `compare` (no doc comment: clap would take it for the
// command's help, which the variant's gives).
#[derive(Args)]
#[command(mut_arg("workload", |a| a.required(false).default_value("").index(1)))]
pub(crate) struct CompareArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// Comma-separated schedulers (default: all).
    #[arg(long, value_delimiter = ',')]
    pub(crate) sched: Vec<String>,
    /// Also run the workload on this machine's kernel, as real threads.
    #[arg(long)]
    pub(crate) host: bool,
    #[command(flatten)]
    pub(crate) host_opts: HostArgs,
    /// Also run the workload in a real kernel booted under QEMU, one row
    /// each: NAME=FILE, a bzImage's path, a kernel's name in
    /// $SCHEDLAB_KERNELS (default ../shared/kernels), e.g. bmq-6.12, or
    /// `all` for every kernel there (comma-separated or repeated).
    #[arg(long = "kernel", value_name = "KERNEL", value_delimiter = ',', value_parser = vm::parse_kernel)]
    pub(crate) kernel: Vec<(String, std::path::PathBuf)>,
    #[command(flatten)]
    pub(crate) vm_opts: vm::VmArgs,
    /// Per task: CPU share under each scheduler (rows of --csv become
    /// one per task).
    #[arg(long)]
    pub(crate) tasks: bool,
    /// Also write a self-contained HTML page with plots to this file.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<std::path::PathBuf>,
    /// Start of the HTML page's CPU timeline window (default: the middle
    /// of the run, or its start for runs under a second).
    #[arg(long, value_parser = parse_duration_flag, value_name = "TIME")]
    pub(crate) timeline_at: Option<u64>,
    /// Length of the timeline window.
    #[arg(long, value_parser = parse_duration_flag, default_value = "200ms", value_name = "TIME")]
    pub(crate) timeline_len: u64,
    #[command(flatten)]
    pub(crate) program_opts: program::ProgramArgs,
}
