//! `schedlab host`: a workload as real threads on this machine's kernel.

use crate::args::{Common, HostArgs};
use crate::output::print_one;
use crate::simulate::{load_workload, run_host};
use anyhow::{Result, bail};

pub(crate) fn run(common: Common, host_opts: HostArgs, trace_machine: bool) -> Result<()> {
    if !common.cost.is_empty() {
        bail!("--cost sets what the simulator charges; the real kernel pays its own costs (use compare --host)");
    }
    let w = load_workload(&common)?;
    let report = run_host(&w, &schedlab_host::HostOptions { trace_machine, ..host_opts.options() })?;
    print_one(&common, &report, false)?;
    // The partial report is printed; the exit status still says
    // the run was cut short, as record and vm say it.
    if let Some(sig) = schedlab_host::signals::received() {
        return Err(schedlab_host::HostError::CutShort(sig).into());
    }
    Ok(())
}
