//! `schedlab record`: a command's scheduling on this machine's kernel, as an ftrace text trace.

use anyhow::{Context, Result};

pub(crate) fn run(output: std::path::PathBuf, command: Vec<String>) -> Result<()> {
    // Before the command runs: a run of minutes must not be lost
    // to a typo in -o.
    let (out, mut file) = crate::output::OutputFile::create(&output)?;
    let rec = schedlab_host::record(&command)?;
    // Written whole (a full disk or /dev/full is an error, not a
    // silently empty trace), even when a stop signal ended the recording.
    std::io::Write::write_all(&mut file, rec.text.as_bytes())
        .with_context(|| format!("cannot write {}", output.display()))?;
    out.commit(file)?;
    let lines = rec.text.lines().filter(|l| !l.starts_with('#')).count();
    eprintln!("{lines} sched events of '{}' written to {} ({})", command.join(" "), output.display(), rec.exit_status);
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
    Ok(())
}
