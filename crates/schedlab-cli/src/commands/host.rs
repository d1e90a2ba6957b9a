//! `schedlab host`: a workload as real threads on this machine's kernel.

use crate::args::{Common, HostArgs};
use crate::output::print_one;
use crate::simulate::{load_workload, run_host};
use anyhow::{Result, bail};

pub(crate) fn run(common: Common, host_opts: HostArgs) -> Result<()> {
    if !common.cost.is_empty() {
        bail!("--cost sets what the simulator charges; the real kernel pays its own costs (use compare --host)");
    }
    let w = load_workload(&common)?;
    let report = run_host(&w, &host_opts)?;
    print_one(&common, &report, false)?;
    // The partial report is printed; the exit status still says
    // the run was cut short, as record and vm say it.
    if let Some(sig) = schedlab_host::signals::received() {
        return Err(schedlab_host::HostError::CutShort(sig).into());
    }
    Ok(())
}
