//! A sched_ext scheduler in the guest (`schedlab vm --scx bpfland`): its
//! binary goes into the initramfs with its libraries (crate::elf), the
//! guest's init starts it before the job and waits until the kernel says
//! it is in charge, and stops it after the job, saying how it ended.
//!
//! What the kernel says, as Linux 6.12's kernel/sched/ext.c publishes it:
//! `/sys/kernel/sched_ext/state` ("enabled" once a BPF scheduler runs every
//! task, "disabled" again after it leaves), `root/ops` (the scheduler's
//! name and version, e.g. `bpfland_1.1.4_x86_64_unknown_linux_gnu`) and
//! `enable_seq` (one more each time a scheduler was enabled). A scheduler
//! that the watchdog ejects during the run leaves the state "disabled"
//! before the job ends: that run was EEVDF's, not the scheduler's, and is
//! refused. The scx binaries print their exit on stdout ("EXIT:
//! unregistered from user space" after SIGINT; the error and sched_ext's
//! debug dump otherwise), which is kept.
//!
//! What the scx schedulers need of the guest (../shared/kernels/README.md):
//! proc, sysfs, tracefs or debugfs and the BPF file system mounted, and a
//! writable /var/run for their statistics socket.

use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The job's description of the scheduler, under /job/.
pub const SCX_FILE: &str = "/job/scx.json";
/// How the guest says what happened, on the console: one line each.
pub const ATTACHED: &str = "schedlab-scx: attached";
pub const ENDED: &str = "schedlab-scx: ended";
const SYSFS: &str = "/sys/kernel/sched_ext";
/// How long a scheduler has to attach (guest time; TCG: 2-7 s seen).
const ATTACH_TIMEOUT: Duration = Duration::from_secs(60);
const STOP_GRACE: Duration = Duration::from_secs(10);
const LOG: &str = "/run/schedlab-scx.log";

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ScxJob {
    /// The binary's path (this machine's, the same in the guest).
    pub path: String,
    pub args: Vec<String>,
}

/// The scheduler's binary for `--scx NAME[:ARGS]`: a path, `scx_NAME` in
/// `dir` (../shared/kernels/scx), or `scx_NAME` / NAME on PATH; its
/// arguments after ':' split at spaces.
pub fn find(spec: &str, dir: &Path) -> Result<(PathBuf, Vec<String>), String> {
    let (name, args) = match spec.split_once(':') {
        Some((n, a)) => (n, a.split_whitespace().map(String::from).collect()),
        None => (spec, Vec::new()),
    };
    if name.is_empty() {
        return Err("--scx needs a scheduler, e.g. --scx bpfland (scx_bpfland)".into());
    }
    if name.contains('/') {
        return crate::elf::find_program(name).map(|p| (p, args));
    }
    let file = if name.starts_with("scx_") { name.to_string() } else { format!("scx_{name}") };
    if dir.join(&file).is_file() {
        return Ok((dir.join(&file), args));
    }
    crate::elf::find_program(&file).map(|p| (p, args)).map_err(|_| {
        format!(
            "no sched_ext scheduler '{name}': neither {} nor {file} on PATH (available: {})",
            dir.join(&file).display(),
            available(dir).join(", ")
        )
    })
}

/// The schedulers of `dir` (scx_NAME files), by NAME.
pub fn available(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str()?.strip_prefix("scx_").map(String::from))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn read(file: &str) -> String {
    std::fs::read_to_string(Path::new(SYSFS).join(file)).map(|s| s.trim().to_string()).unwrap_or_default()
}

/// What the scheduler said that tells how it ended: its EXIT line and
/// errors (sched_ext's exit kind and message, as the scx binaries print
/// them), else its last lines; colours and log prefixes taken out.
fn log_tail() -> String {
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open(LOG) {
        let _ = f.read_to_string(&mut text);
    }
    let lines: Vec<String> = text.lines().map(plain).filter(|l| !l.is_empty()).collect();
    let telling: Vec<&String> =
        lines.iter().filter(|l| l.contains("EXIT") || l.to_lowercase().contains("error")).collect();
    if telling.is_empty() {
        lines[lines.len().saturating_sub(4)..].join(" | ")
    } else {
        telling.iter().take(6).map(|l| l.as_str()).collect::<Vec<_>>().join(" | ")
    }
}

/// A log line without ANSI colour codes and its "HH:MM:SS [LEVEL]" prefix.
fn plain(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // CSI: ESC [ parameters, ended by a letter.
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    let out = out.trim();
    match out.split_once("] ") {
        Some((head, rest)) if head.len() < 20 && head.contains('[') => rest.trim().to_string(),
        _ => out.to_string(),
    }
}

/// The running scheduler, in the guest.
pub struct Running {
    child: std::process::Child,
    ops: String,
    enable_seq: String,
}

/// Starts the job's scheduler, if it has one, and waits until the kernel
/// runs it; an error says why it is not running.
pub fn start() -> Result<Option<Running>, String> {
    let Ok(text) = std::fs::read(SCX_FILE) else { return Ok(None) };
    let job: ScxJob = serde_json::from_slice(&text).map_err(|e| format!("{SCX_FILE}: {e}"))?;
    if !Path::new(SYSFS).is_dir() {
        return Err(format!(
            "this kernel has no sched_ext ({SYSFS} is missing): --scx needs a kernel built with \
             CONFIG_SCHED_CLASS_EXT, such as scx-6.12.bzImage"
        ));
    }
    for dir in ["/var/run/scx", "/sys/fs/bpf"] {
        let _ = std::fs::create_dir_all(dir);
    }
    let bpf = std::ffi::CString::new("bpf").expect("no NUL");
    let target = std::ffi::CString::new("/sys/fs/bpf").expect("no NUL");
    // SAFETY: valid C strings; this is the guest's init.
    unsafe { libc::mount(bpf.as_ptr(), target.as_ptr(), bpf.as_ptr(), 0, std::ptr::null()) };
    let log = std::fs::File::create(LOG).map_err(|e| format!("{LOG}: {e}"))?;
    let err = log.try_clone().map_err(|e| format!("{LOG}: {e}"))?;
    let start = Instant::now();
    let mut child = std::process::Command::new(&job.path)
        .args(&job.args)
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", job.path))?;
    loop {
        if read("state") == "enabled" && !read("root/ops").is_empty() {
            let ops = read("root/ops");
            eprintln!("{ATTACHED} {ops} after {} ms", start.elapsed().as_millis());
            return Ok(Some(Running { child, ops, enable_seq: read("enable_seq") }));
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("{} exited ({status}) before it attached: {}", job.path, log_tail()));
        }
        if start.elapsed() >= ATTACH_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "{} did not attach within {} s (state {}): {}",
                job.path,
                ATTACH_TIMEOUT.as_secs(),
                read("state"),
                log_tail()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Running {
    /// Stops the scheduler after the job; an error when it was no longer
    /// in charge at the job's end (ejected: the run was not its own).
    pub fn stop(mut self) -> Result<(), String> {
        let still = read("state") == "enabled" && read("enable_seq") == self.enable_seq;
        // SAFETY: signalling our own child, not yet reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
        let start = Instant::now();
        let status = loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                break status.to_string();
            }
            if start.elapsed() >= STOP_GRACE {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break "killed: it did not stop within 10 s of SIGINT".to_string();
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let exit = log_tail();
        eprintln!("{ENDED} {} ({status}): {exit}", self.ops);
        if still { Ok(()) } else { Err(format!("{} {EJECTED}: the run was not its own: {exit}", self.ops)) }
    }
}

/// What the guest says of a scheduler the kernel ejected before its job
/// ended; the host's `vm` turns a guest that said it into
/// [`crate::VmError::SchedulerEjected`].
pub const EJECTED: &str = "was ejected before the job ended (sched_ext's state left 'enabled')";

/// What the console says of the scheduler: its ops name and attach line,
/// and how it ended.
pub fn console_notes(console: &str) -> Vec<String> {
    console
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            if let Some(rest) = l.strip_prefix(ATTACHED) {
                let ops = rest.split_whitespace().next().unwrap_or("");
                let after = rest.split_once(" after ").map_or(String::new(), |(_, t)| format!(" after {t}"));
                Some(format!("sched_ext scheduler {ops} attached{after}"))
            } else {
                l.strip_prefix(ENDED).map(|rest| format!("sched_ext scheduler ended:{rest}"))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedulers_are_found_by_name_path_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("scx_toy");
        std::fs::copy("/bin/true", &f).unwrap();
        let (path, args) = find("toy:--slice-us 5000 -v", dir.path()).unwrap();
        assert_eq!((path, args), (f.clone(), vec!["--slice-us".into(), "5000".into(), "-v".into()]));
        assert_eq!(find("scx_toy", dir.path()).unwrap().0, f);
        let e = find("nosuch", dir.path()).unwrap_err();
        assert!(e.contains("no sched_ext scheduler 'nosuch'") && e.contains("available: toy"), "{e}");
        assert!(find("", dir.path()).is_err());
        assert_eq!(plain("12:24:13 \x1b[0m\x1b[34m[INFO] \x1b[0mscheduler flags: 0x6"), "scheduler flags: 0x6");
        assert_eq!(plain("EXIT: unregistered from user space"), "EXIT: unregistered from user space");
        let notes = console_notes(
            "schedlab-scx: attached bpfland_1.1.4_x86_64 after 2100 ms\n\
             schedlab-scx: ended bpfland_1.1.4_x86_64 (exit status: 0): EXIT: unregistered from user space\n",
        );
        assert_eq!(
            notes,
            [
                "sched_ext scheduler bpfland_1.1.4_x86_64 attached after 2100 ms",
                "sched_ext scheduler ended: bpfland_1.1.4_x86_64 (exit status: 0): EXIT: unregistered from user space"
            ]
        );
    }
}
