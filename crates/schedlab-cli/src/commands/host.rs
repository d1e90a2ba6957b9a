//! `schedlab host`: a workload as real threads on this machine's kernel.

use crate::args::{Common, HostArgs};
use crate::output::print_one;
use crate::simulate::{load_workload, run_host_traced};
use anyhow::{Result, bail};
use std::path::PathBuf;

/// The flags only `host` has.
pub(crate) struct Extras {
    pub(crate) trace_machine: bool,
    pub(crate) trace_out: Option<PathBuf>,
    pub(crate) with_trace: bool,
}

pub(crate) fn run(common: Common, host_opts: HostArgs, extras: Extras) -> Result<()> {
    if !common.cost.is_empty() {
        bail!("--cost sets what the simulator charges; the real kernel pays its own costs (use compare --host)");
    }
    if (extras.trace_out.is_some() || extras.with_trace) && host_opts.no_trace {
        bail!("--trace-out keeps the run's trace, and --no-trace turns tracing off: drop one");
    }
    if let Some(out) = &extras.trace_out {
        crate::output::check_output(out, "--trace-out")?;
    }
    let w = load_workload(&common)?;
    let opts = schedlab_host::HostOptions {
        trace_machine: extras.trace_machine,
        keep_trace: extras.trace_out.is_some() || extras.with_trace,
        ..host_opts.options()
    };
    let (report, trace) = run_host_traced(&w, &opts)?;
    if let Some(out) = &extras.trace_out {
        match &trace {
            Some(text) => crate::output::write_whole(out, text.as_bytes())?,
            None => eprintln!(
                "schedlab: host: no trace was recorded (see the report's tracing line): {} not written",
                out.display()
            ),
        }
    }
    if extras.with_trace {
        println!("{}", serde_json::to_string(&serde_json::json!({ "report": report, "trace": trace }))?);
    } else {
        print_one(&common, &report, false)?;
    }
    // The partial report is printed; the exit status still says
    // the run was cut short, as record and vm say it.
    if let Some(sig) = schedlab_host::signals::received() {
        return Err(schedlab_host::HostError::CutShort(sig).into());
    }
    Ok(())
}
