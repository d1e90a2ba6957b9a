//! Binary traces given to `replay`: perf.data and trace-cmd's trace.dat
//! are read through their own tools' text output (`perf script`,
//! `trace-cmd report`), which the trace parser reads (formats::ftrace); a
//! Perfetto protobuf is decoded here (formats::perfetto_proto: sched
//! events and compact_sched bundles); any other binary file is named with
//! what replay takes. The tools are the formats' reference readers: they know every
//! kernel's tracepoint layout, which perf.data and trace.dat carry and a
//! reader of our own would have to follow version by version.

use anyhow::{Result, anyhow, bail};
use std::path::Path;

/// What a binary trace file is, from its first bytes.
#[derive(Debug, PartialEq)]
pub(crate) enum Binary {
    /// perf.data (magic "PERFILE2").
    PerfData,
    /// trace-cmd's trace.dat (magic "\x17\x08\x44tracing").
    TraceDat,
    /// A Perfetto trace: a protobuf of TracePackets (field 1, a length).
    Perfetto,
    /// Any other file that is not text.
    Other,
}

/// The kind of `head` (a file's first bytes) when it is not text.
pub(crate) fn classify(head: &[u8], name: &str) -> Option<Binary> {
    if head.starts_with(b"PERFILE2") {
        return Some(Binary::PerfData);
    }
    if head.starts_with(b"\x17\x08\x44tracing") {
        return Some(Binary::TraceDat);
    }
    // gzip is text once unpacked (input.rs reads it).
    if head.starts_with(&[0x1f, 0x8b]) {
        return None;
    }
    // Text has no control bytes but tab and line ends; bytes that are not
    // UTF-8 may be a task's name (prctl takes any), read lossily later.
    let text = !head.iter().any(|&b| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) || b == 0x7f);
    if text {
        return None;
    }
    Some(binary_kind(head, name))
}

fn binary_kind(head: &[u8], name: &str) -> Binary {
    if head.first() == Some(&0x0a) || name.ends_with(".perfetto-trace") || name.ends_with(".pftrace") {
        Binary::Perfetto
    } else {
        Binary::Other
    }
}

/// The trace at `path` as text, through its tool when it is binary; None
/// when it is text already (read it as usual).
pub(crate) fn text_of(path: &Path) -> Result<Option<String>> {
    use std::io::Read;
    let mut head = vec![0u8; 512];
    let n = std::fs::File::open(path).and_then(|mut f| f.read(&mut head)).unwrap_or(0);
    head.truncate(n);
    let shown = path.display();
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    match classify(&head, &name) {
        None => Ok(None),
        Some(Binary::PerfData) => {
            let file = path.to_string_lossy();
            let args = ["script", "--force", "--ns", "-i", &file];
            tool_text("perf", &args, &format!("{shown} is a perf.data file"), "apt install linux-perf").map(Some)
        }
        Some(Binary::TraceDat) => {
            let file = path.to_string_lossy();
            let args = ["report", "-i", &file];
            tool_text("trace-cmd", &args, &format!("{shown} is a trace-cmd trace.dat file"), "apt install trace-cmd")
                .map(Some)
        }
        Some(Binary::Perfetto) => {
            let max = schedlab_sim::formats::input::MAX_INPUT_BYTES;
            if std::fs::metadata(path).map_or(0, |m| m.len()) > max {
                bail!("{shown} is over {} MiB; replay reads traces of at most that", max >> 20);
            }
            let bytes = std::fs::read(path).map_err(|e| anyhow!("cannot read {shown}: {e}"))?;
            schedlab_sim::formats::perfetto_proto::to_ftrace_text(&bytes).map(Some).map_err(|e| {
                anyhow!(
                    "{shown} looks like a Perfetto trace, but {e}; Perfetto's traceconv converts any of its traces \
                     to text (`traceconv systrace {shown} trace.txt`)"
                )
            })
        }
        Some(Binary::Other) => bail!(
            "{shown} is a binary file, not a trace replay reads: give tracefs text (a `trace` file, `schedlab \
             record`), `perf script` or `trace-cmd report` output (or gzip of any), perf.data, trace.dat, or a \
             Perfetto protobuf trace"
        ),
    }
}

/// What `tool ARGS` prints, the text form of a binary trace.
fn tool_text(tool: &str, args: &[&str], what: &str, install: &str) -> Result<String> {
    let out = std::process::Command::new(tool).args(args).output().map_err(|e| {
        anyhow!(
            "{what}; replay reads it through `{tool} {}`, and {tool} cannot run here ({e}): {install}, or convert it \
             where {tool} is and replay the text",
            args.join(" ")
        )
    })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("no message");
        bail!("{what}; `{tool} {}` failed: {first}", args.join(" "));
    }
    String::from_utf8(out.stdout)
        .map_err(|_| anyhow!("{what}; `{tool} {}` printed text that is not UTF-8", args.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_traces_are_told_apart_by_their_first_bytes() {
        assert_eq!(classify(b"PERFILE2\x68\0\0\0", "perf.data"), Some(Binary::PerfData));
        assert_eq!(classify(b"\x17\x08\x44tracing6\0", "trace.dat"), Some(Binary::TraceDat));
        assert_eq!(classify(b"\x0a\x8f\x01\x12\x00", "x.bin"), Some(Binary::Perfetto));
        assert_eq!(classify(b"\x00\x01\x02", "x.perfetto-trace"), Some(Binary::Perfetto));
        assert_eq!(classify(b"\x7fELF\x02\x01\x01\0", "a.out"), Some(Binary::Other));
        assert_eq!(classify(b"# tracer: nop\n", "trace"), None);
        assert_eq!(classify(&[0x1f, 0x8b, 8, 0], "t.gz"), None);
        // A multi-byte character cut by the head's end is still text, and
        // so is a name that is not UTF-8.
        assert_eq!(classify("  <idle>-0 [000] é".as_bytes().split_last().unwrap().1, "trace"), None);
        assert_eq!(classify(b"  sp\xffn-10 [000] d..2. 1.0: sched_switch:\n", "trace"), None);
    }
}
