//! `schedlab trace`: one simulated run written as an ftrace text or Perfetto JSON trace.

use crate::args::Common;
use crate::simulate::{load_workload, one_scheduler};
use anyhow::{Context, Result, anyhow, bail};
use schedlab_sim::formats::trace_out::{TraceFormat, TraceWriter};
use schedlab_sim::{Engine, EngineOptions};

pub(crate) fn run(common: Common, sched: String, output: std::path::PathBuf, format: Option<String>) -> Result<()> {
    one_scheduler("trace", &sched)?;
    let w = load_workload(&common)?;
    let format = match format.as_deref() {
        Some("ftrace") => TraceFormat::Ftrace,
        Some("perfetto" | "json") => TraceFormat::Perfetto,
        Some(other) => bail!("unknown trace format '{other}': use ftrace or perfetto"),
        None if output.extension().is_some_and(|e| e == "json") => TraceFormat::Perfetto,
        None => TraceFormat::Ftrace,
    };
    let file = std::fs::File::create(&output)
        .with_context(|| format!("cannot create {}: check the directory exists and is writable", output.display()))?;
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
    Ok(())
}
