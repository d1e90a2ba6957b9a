//! How reports leave: the text tables, --json and --csv, HTML pages.

use crate::args::Common;
use crate::render;
use anyhow::{Context, Result};
use schedlab_sim::{Report, Workload, report};

/// --json or --csv output of a set of reports; false when neither was asked
/// for. `single` prints a lone report as an object, not an array.
pub(crate) fn structured_output(c: &Common, reports: &[Report], tasks: bool, single: bool) -> Result<bool> {
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
pub(crate) fn print_one(c: &Common, report: &Report, tasks: bool) -> Result<()> {
    if !structured_output(c, std::slice::from_ref(report), tasks, true)? {
        print!("{}", render::run_summary(report, c.hist));
        if tasks {
            println!();
            print!("{}", render::task_lines(report));
        }
    }
    Ok(())
}

/// The HTML page's timeline window when none is asked for.
pub(crate) const TIMELINE_LEN: u64 = 200_000_000;

/// The timeline window from `at` (default: centred in runs of a second or
/// more, from the start in shorter ones), `len` long.
pub(crate) fn timeline_window(w: &Workload, at: Option<u64>, len: u64) -> (u64, u64) {
    let from = at.unwrap_or(if w.duration >= 1_000_000_000 { (w.duration / 2).saturating_sub(len / 2) } else { 0 });
    (from, from.saturating_add(len))
}

pub(crate) fn write_html(path: &std::path::Path, page: &str) -> Result<()> {
    write_whole(path, page.as_bytes())
}

/// Writes `bytes` to `path` whole or not at all ([`OutputFile`]) and says so.
pub(crate) fn write_whole(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let (out, mut file) = OutputFile::create(path)?;
    file.write_all(bytes).with_context(|| format!("cannot write {}", path.display()))?;
    out.commit(file)?;
    eprintln!("schedlab: wrote {}", path.display());
    Ok(())
}

/// Checks, before a command's work, that its output `path` (given with
/// `flag`) can be written: not a directory, in a directory that takes a
/// file. A run of minutes must not end on "Is a directory".
pub(crate) fn check_output(path: &std::path::Path, flag: &str) -> Result<()> {
    let shown = path.display();
    if path.is_dir() {
        anyhow::bail!("{flag} {shown} is a directory: give a file's path");
    }
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return Ok(());
    }
    let dir = directory_of(path);
    if !dir.is_dir() {
        anyhow::bail!("{flag} {shown}: the directory {} does not exist", dir.display());
    }
    tempfile::Builder::new().prefix(".schedlab-check.").tempfile_in(dir).map(drop).map_err(|e| {
        anyhow::anyhow!("{flag} {shown}: cannot write in {} ({}): check its permissions", dir.display(), e.kind())
    })
}

/// The directory a file `path` goes in: its parent, or the current one for
/// a bare name.
fn directory_of(path: &std::path::Path) -> &std::path::Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    }
}

/// A file a command writes whole or not at all: made before the work (a
/// typo in -o must not cost a run of minutes), written to a temporary file
/// beside it and renamed over it once complete, so a failed or stopped
/// command leaves an existing file as it was and no half-written one. A
/// device or a FIFO (/dev/null, /dev/stdout) is written in place.
pub(crate) struct OutputFile {
    path: std::path::PathBuf,
    /// The temporary file's path, removed on drop unless committed.
    temp: Option<tempfile::TempPath>,
}

impl OutputFile {
    /// The file to write, and where to write it.
    pub(crate) fn create(path: &std::path::Path) -> Result<(OutputFile, std::fs::File)> {
        let shown = path.display();
        let special = std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir());
        if special {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .with_context(|| format!("cannot open {shown} for writing"))?;
            return Ok((OutputFile { path: path.to_path_buf(), temp: None }, file));
        }
        if path.is_dir() {
            anyhow::bail!("{shown} is a directory: give a file's path");
        }
        let dir = directory_of(path);
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        // Created as File::create would (0666 less the umask), not 0600.
        let temp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".part")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .tempfile_in(dir)
            .with_context(|| format!("cannot create {shown}: check the directory exists and is writable"))?;
        let (file, temp) = temp.into_parts();
        Ok((OutputFile { path: path.to_path_buf(), temp: Some(temp) }, file))
    }

    /// Puts the written file in place; `file` is the handle it was written
    /// through, flushed and synced here so that a full disk is an error.
    pub(crate) fn commit(self, file: std::fs::File) -> Result<()> {
        let shown = self.path.display();
        if let Some(temp) = self.temp {
            file.sync_all().with_context(|| format!("cannot write {shown}"))?;
            temp.persist(&self.path).map_err(|e| anyhow::anyhow!("cannot write {shown}: {}", e.error))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn an_output_file_replaces_the_old_one_only_when_complete() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.trace");
        std::fs::write(&path, "old").unwrap();
        // Abandoned: the old file stays, and nothing else is left.
        let (out, mut file) = OutputFile::create(&path).unwrap();
        file.write_all(b"half").unwrap();
        drop((out, file));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "the temporary file is gone");
        // Committed: the new one in place.
        let (out, mut file) = OutputFile::create(&path).unwrap();
        file.write_all(b"new").unwrap();
        out.commit(file).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        // The umask's mode, as File::create gives (this test's umask is
        // its process's: compared with a file made the usual way).
        let plain = dir.path().join("plain");
        std::fs::File::create(&plain).unwrap();
        let mode =
            |p: &std::path::Path| std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions());
        assert_eq!(mode(&path), mode(&plain));
        assert!(OutputFile::create(dir.path()).is_err(), "a directory is refused before the work");
        assert!(OutputFile::create(&dir.path().join("no/such/dir/x")).is_err());
    }
}
