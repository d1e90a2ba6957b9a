//! One module per command; `run` dispatches the parsed command line to
//! them.

pub(crate) mod bench;
pub(crate) mod binary_trace;
pub(crate) mod calibrate;
pub(crate) mod compare;
pub(crate) mod experiments;
pub(crate) mod host;
pub(crate) mod list;
pub(crate) mod program;
pub(crate) mod record;
pub(crate) mod replay;
pub(crate) mod run;
pub(crate) mod sweep;
pub(crate) mod trace;
pub(crate) mod validate;
pub(crate) mod vm;

use crate::args::{Cli, Command};
use crate::output::print_one;
use crate::simulate::load_workload;
use anyhow::Result;

pub(crate) fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Run { common, sched, tasks, html } => run::run(common, sched, tasks, html),
        Command::Trace { common, sched, output, format } => trace::run(common, sched, output, format),
        Command::Replay { common, sched, tasks, trace_out } => replay::run(&common, sched, tasks, trace_out.as_deref()),
        Command::Record { output, command } => record::run(output, command),
        Command::Vm { common, kernel, vm_opts, host_opts, tasks, program_opts } => {
            if program_opts.given() {
                let code = program::vm_command(&common, &program_opts, &kernel, &vm_opts, tasks)?;
                if code != 0 {
                    std::process::exit(code);
                }
                return Ok(());
            }
            if common.workload.is_empty() {
                anyhow::bail!(
                    "give a workload (a file or a built-in scenario) or a program after --, e.g. -- stress-ng --cpu 2 --timeout 3s"
                );
            }
            program_opts.check_for_workload()?;
            let w = load_workload(&common)?;
            let label = vm::row_label(&kernel, &vm_opts);
            let keep = program_opts.trace_out.is_some();
            let (report, trace) = vm::run(&common, &w, &kernel, &label, &vm_opts, &host_opts, keep)?;
            program_opts.write_workload_trace(trace, None)?;
            print_one(&common, &report, tasks)
        }
        Command::Host { common, host_opts, trace_machine, trace_out, with_trace } => {
            host::run(common, host_opts, host::Extras { trace_machine, trace_out, with_trace })
        }
        Command::GuestPrograms { job } => {
            let text = std::fs::read(&job)?;
            let job: schedlab_vm::programs::ProgramsJob = serde_json::from_slice(&text)?;
            let result = schedlab_vm::programs::run_in_guest(&job).map_err(|e| anyhow::anyhow!("{e}"))?;
            println!("{}", serde_json::to_string(&result)?);
            Ok(())
        }
        Command::Compare(args) => compare::run(args),
        Command::Sweep { common, vary, sched, metric, output, plot, jobs } => sweep::run(sweep::SweepRequest {
            common: &common,
            vary: &vary,
            sched,
            metrics: &metric,
            output: output.as_deref(),
            plot: plot.as_deref(),
            jobs,
        }),
        Command::Experiments { out, quick, host, vm, jobs } => experiments::run(experiments::Options {
            out: out.unwrap_or_else(experiments::default_out),
            quick,
            host,
            vm,
            jobs: jobs.unwrap_or_else(rayon::current_num_threads),
        }),
        Command::Validate { out, kernels, quick, runs, sched, accel, reuse_real, tools, set, trace_sims } => {
            validate::run(validate::Options {
                out: out.unwrap_or_else(validate::default_out),
                kernels: kernels.unwrap_or_else(validate::default_kernels),
                quick,
                runs,
                sched,
                accel,
                reuse: reuse_real,
                tools,
                set,
                trace_sims,
            })
        }
        Command::List => {
            list::run();
            Ok(())
        }
        Command::Bench { quick } => bench::run(quick),
        Command::Calibrate { samples, json } => calibrate::run(samples, json),
    }
}
