//! `schedlab trace`: one simulated run written as an ftrace text, Perfetto
//! protobuf, trace-cmd trace.dat or Chrome JSON trace.

use crate::args::Common;
use crate::simulate::{load_workload, one_scheduler, simulate_observed};
use anyhow::{Context, Result, bail};
use schedlab_sim::formats::trace_out::{TraceFormat, TraceWriter};

pub(crate) fn run(common: Common, sched: String, output: std::path::PathBuf, format: Option<String>) -> Result<()> {
    one_scheduler("trace", &sched)?;
    let w = load_workload(&common)?;
    let ext = output.extension().and_then(|e| e.to_str()).unwrap_or_default();
    let format = match format.as_deref() {
        Some("ftrace") => TraceFormat::Ftrace,
        Some("perfetto") => TraceFormat::PerfettoProto,
        Some("json") => TraceFormat::Perfetto,
        Some("trace-dat" | "dat") => TraceFormat::TraceDat,
        Some(other) => bail!("unknown trace format '{other}': use ftrace, perfetto (protobuf), trace-dat or json"),
        None if ext == "perfetto-trace" || ext == "pftrace" => TraceFormat::PerfettoProto,
        None if ext == "dat" => TraceFormat::TraceDat,
        None if ext == "json" => TraceFormat::Perfetto,
        None => TraceFormat::Ftrace,
    };
    // The scheduler and its tunables are checked before anything is
    // written, with the tunables as it will run them.
    crate::simulate::check_scopes(&w, std::slice::from_ref(&sched))?;
    schedlab_policies::build(&sched, &crate::simulate::for_scheduler(&w, &sched)).map_err(|e| anyhow::anyhow!(e))?;
    let (out, file) = crate::output::OutputFile::create(&output)?;
    let kept = file.try_clone().with_context(|| format!("cannot write {}", output.display()))?;
    let mut writer = TraceWriter::new(&w, Box::new(std::io::BufWriter::new(file)), format);
    let report = simulate_observed(&w, &sched, &mut writer)?;
    writer.finish(report.duration_ns).with_context(|| format!("writing {}", output.display()))?;
    out.commit(kept)?;
    eprintln!(
        "{} context switches of {sched} on {} written to {}",
        report.totals.context_switches,
        w.name,
        output.display()
    );
    Ok(())
}
