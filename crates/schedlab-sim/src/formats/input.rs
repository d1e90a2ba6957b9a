//! Where a workload comes from, for every front end (the CLI, the Python
//! package): a file (schedlab TOML or rt-app JSON), the name of a built-in
//! scenario, or a benchmark's command line (see `presets`). rt-app files
//! and command lines run on the whole machine as their tools do, so
//! without a CPU count of their own they get this machine's.

use super::{presets, rtapp, scenarios};
use crate::{Overrides, Workload};

/// A workload read, and what the reader should know about how.
pub struct Loaded {
    pub workload: Workload,
    /// How the machine was chosen when the input does not say.
    pub note: Option<String>,
}

fn machine_cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// The largest trace read: a recorded trace of a minute on many CPUs is a
/// few hundred MiB.
pub const MAX_INPUT_BYTES: u64 = 1 << 30;
/// The largest workload file (schedlab TOML, rt-app JSON) read: the biggest
/// real ones (rt-app use cases, a TOML of thousands of tasks) are well under
/// a megabyte, and many tasks of one kind are one `count`.
pub const MAX_WORKLOAD_BYTES: u64 = 16 << 20;

/// What bounds an input file of kind `what`: its largest size, how to come
/// under it, and the memory a run needs per byte of it, measured with
/// `/usr/bin/time -f %M` on the release build: a 30 MB TOML of 278,807
/// tasks peaked at 2.1 GB (71 bytes a byte: the TOML tree, then the tasks'
/// state), a 100 MB ftrace text at 262 MB (2.6). Rounded up.
fn bounds_of(what: &str) -> (u64, &'static str, u64) {
    if what == "trace" {
        (MAX_INPUT_BYTES, "cut it to the part you need", 4)
    } else {
        (MAX_WORKLOAD_BYTES, "give many tasks of one kind as one task with `count`", 80)
    }
}

/// Reads an input file (`what`: workload, trace) as text: a regular file of
/// at most MAX_WORKLOAD_BYTES (a workload) or MAX_INPUT_BYTES (a trace),
/// whose run fits in the memory this process may take. A device
/// (/dev/zero), a FIFO with no writer or a directory is refused before
/// anything is read, rather than read for ever or until memory runs out;
/// an input whose run would not fit is refused before it is read, rather
/// than aborted by a failed allocation halfway.
pub fn read_input_file(path: &std::path::Path, what: &str) -> Result<String, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {what} file {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!(
            "{shown} is not a regular file (a device, a FIFO or a directory): give the {what} as a file; to read a \
             pipe, save it to a file first"
        ));
    }
    let (limit, fix, memory_per_byte) = bounds_of(what);
    if meta.len() > limit {
        return Err(format!(
            "{shown} is {} MiB; schedlab reads {what} files of at most {} MiB: {fix}",
            meta.len() >> 20,
            limit >> 20
        ));
    }
    check_memory_for(&shown.to_string(), what, meta.len(), memory_per_byte)?;
    use std::io::Read;
    let mut head = [0u8; 2];
    let gzipped = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && head == [0x1f, 0x8b];
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(meta.len() as usize + 1).map_err(|_| {
        format!(
            "{shown}: {} MiB of memory for its text could not be had: free memory or cut the {what}",
            meta.len() >> 20
        )
    })?;
    let read = std::fs::File::open(path).and_then(|f| {
        if gzipped {
            // A gzipped trace (people keep them so): read through, to the
            // same limit once unpacked.
            flate2::read::GzDecoder::new(f).take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes)
        } else {
            f.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes)
        }
    });
    read.map_err(|e| format!("cannot read {what} file {shown}{}: {e}", if gzipped { " (gzip)" } else { "" }))?;
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        // A task may name itself with any bytes (prctl PR_SET_NAME), and
        // the kernel prints them as they are: a trace is read lossily.
        Err(e) if what == "trace" => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
            return Err(format!(
                "{shown} is not UTF-8 text (line {line}, byte {at}): save the {what} as UTF-8, or give the file it came from"
            ));
        }
    };
    if text.len() as u64 > limit {
        return Err(format!(
            "{shown} unpacks to over {} MiB; schedlab reads {what} files of at most that: {fix}",
            limit >> 20
        ));
    }
    if gzipped {
        check_memory_for(&shown.to_string(), what, text.len() as u64, memory_per_byte)?;
    }
    Ok(text)
}

/// Refuses an input of `bytes` whose run, at `memory_per_byte`, would need
/// more memory than this process may take (see `memory::available`),
/// naming both and the bound.
fn check_memory_for(shown: &str, what: &str, bytes: u64, memory_per_byte: u64) -> Result<(), String> {
    let need = bytes.saturating_mul(memory_per_byte);
    match crate::memory::available() {
        Some((free, bound)) if need > free => Err(format!(
            "{shown}: a run of this {} MiB {what} needs about {} MiB of memory, and {} MiB is left under {bound}: \
             cut the {what}, or run where more memory is free",
            bytes >> 20,
            need >> 20,
            free >> 20
        )),
        _ => Ok(()),
    }
}

/// Reads `spec` with `ov` applied. Errors are one line naming the input
/// and the fix.
pub fn load(spec: &str, ov: &Overrides) -> Result<Loaded, String> {
    let path = std::path::Path::new(spec);
    let (text, origin) = if path.exists() {
        (read_input_file(path, "workload")?, spec.to_string())
    } else if let Some(text) = scenarios::builtin(spec) {
        (text.to_string(), format!("scenarios/{spec}.toml"))
    } else if presets::is_preset(spec) {
        let text = presets::toml(spec, ov.cpus.unwrap_or_else(machine_cpus))?;
        (text, spec.to_string())
    } else {
        return Err(format!(
            "no file, built-in scenario or tool command named '{spec}'{}: give a path to a workload (TOML, or rt-app \
             JSON), one of {}, or a command of {} (e.g. 'stress-ng --cpu 4')",
            crate::names::did_you_mean(spec, scenarios::SCENARIOS.iter().map(|(n, _)| *n)),
            scenarios::SCENARIOS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
            presets::TOOLS.join(", ")
        ));
    };
    let is_json = path.extension().is_some_and(|e| e == "json") || text.trim_start().starts_with('{');
    if is_json {
        if let Some(name) = ov.params.keys().next() {
            return Err(format!("--param {name}: rt-app files have no parameters; edit the JSON instead"));
        }
        let mut ov = ov.clone();
        let mut chosen = None;
        if ov.cpus.is_none() {
            // rt-app runs on the whole machine: so does its simulation,
            // unless the file pins tasks to more CPUs than this one has.
            // A file that names more CPUs than this machine has is read
            // with its own count, so an impossible one is the file's error.
            let (here, named) = (machine_cpus(), rtapp::cpus_named(&text).unwrap_or(0));
            ov.cpus = (named <= here).then_some(here);
            chosen = Some(if named > here { "as many as its cpus lists name" } else { "this machine's count" });
        }
        let workload = rtapp::from_rtapp_json(&text, &origin, &ov).map_err(|e| e.to_string())?;
        let note = chosen.map(|why| {
            format!("{spec}: {} CPUs, {why} (rt-app runs on the whole machine); --cpus N to choose", workload.nr_cpus())
        });
        return Ok(Loaded { workload, note });
    }
    let workload = Workload::from_toml(&text, &origin, ov).map_err(|e| e.to_string())?;
    if let Some(name) = ov.params.keys().find(|n| !workload.params.contains_key(*n)) {
        return Err(format!("--param {name}: the workload has no parameter named '{name}' (see its [params])"));
    }
    Ok(Loaded { workload, note: None })
}
