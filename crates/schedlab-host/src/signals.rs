//! Ending a run cleanly on Ctrl-C, SIGTERM and SIGHUP. The handlers only
//! record which signal came; the run's controller sees it at its next look,
//! stops what it started (threads, a guest), removes what it created
//! (cgroups, a tracefs instance, temporary files) and returns, so the
//! command ends with nothing left behind. SIGKILL cannot be caught: what a
//! killed run leaves is found and removed by the next run (see `stale`).

use std::sync::atomic::{AtomicI32, Ordering};

/// The signals that stop a run: a terminal's Ctrl-C, `kill`'s default and
/// a closed terminal.
pub const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_stop_signal(sig: libc::c_int) {
    RECEIVED.store(sig, Ordering::SeqCst);
}

/// While it lives, STOP_SIGNALS are recorded instead of killing the
/// process; the previous handlers come back when it is dropped.
pub struct StopSignals {
    old: [libc::sighandler_t; STOP_SIGNALS.len()],
}

impl StopSignals {
    pub fn install() -> StopSignals {
        RECEIVED.store(0, Ordering::SeqCst);
        let mut old = [libc::SIG_DFL; STOP_SIGNALS.len()];
        for (slot, sig) in old.iter_mut().zip(STOP_SIGNALS) {
            // SAFETY: the handler only stores to an atomic.
            *slot = unsafe { libc::signal(sig, on_stop_signal as *const () as libc::sighandler_t) };
            if *slot == libc::SIG_IGN {
                // A signal ignored at start stays ignored (`nohup schedlab
                // ...` must outlive its terminal's SIGHUP).
                // SAFETY: putting back the disposition found.
                unsafe { libc::signal(sig, libc::SIG_IGN) };
            }
        }
        StopSignals { old }
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        for (old, sig) in self.old.iter().zip(STOP_SIGNALS) {
            // SAFETY: restoring the handler that was there.
            unsafe { libc::signal(sig, *old) };
        }
    }
}

/// The stop signal received since `install`, if any.
pub fn received() -> Option<libc::c_int> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

/// The signal's name as `kill -l` prints it, for messages.
pub fn name(sig: libc::c_int) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT (Ctrl-C)",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// Keeps STOP_SIGNALS away from the calling thread, so that they reach the
/// controller, whose sleep they cut short.
pub fn block_in_this_thread() {
    // SAFETY: a zeroed sigset_t is valid input to sigemptyset.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in STOP_SIGNALS {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Whether process `pid` is alive: the owner of a leftover named after it.
pub fn process_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// The inode of the initial PID namespace (PROC_PID_INIT_INO).
const INIT_PID_NS: u64 = 0xEFFF_FFFC;

/// This process's PID namespace, by the inode of /proc/self/ns/pid (the
/// initial one where /proc cannot say).
pub fn pid_namespace() -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid").map_or(INIT_PID_NS, |m| m.ino())
}

/// Whether this process sees the kernel's own PIDs, which tracefs prints.
pub fn in_initial_pid_namespace() -> bool {
    pid_namespace() == INIT_PID_NS
}

/// What names this run's cgroups, tracefs instance and temporary
/// directories: its PID and its PID namespace (`1234-ns4026531836`). A PID
/// alone is another process's in another namespace (containers run CI):
/// two runs there would share `schedlab-1`, and one would take the other
/// for dead.
pub fn run_name() -> String {
    format!("{}-ns{}", std::process::id(), pid_namespace())
}

/// The entries of `dir` named `prefix` + a run's name (+ anything after a
/// '-') whose process is gone: what a run that was SIGKILLed (or died by
/// OOM or abort) left behind. Its own are never returned, nor those of
/// runs in another PID namespace, whose liveness this one cannot see;
/// names of before the namespace was part of them count as the initial
/// namespace's.
pub fn stale_entries(dir: &std::path::Path, prefix: &str) -> Vec<(std::path::PathBuf, u32)> {
    stale_entries_in(dir, prefix, pid_namespace())
}

fn stale_entries_in(dir: &std::path::Path, prefix: &str, ns: u64) -> Vec<(std::path::PathBuf, u32)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let mut parts = name.strip_prefix(prefix)?.split('-');
            let pid = parts.next()?.parse::<u32>().ok()?;
            let their_ns = parts.next().and_then(|p| p.strip_prefix("ns")?.parse::<u64>().ok()).unwrap_or(INIT_PID_NS);
            let ours = their_ns == ns;
            (ours && pid != std::process::id() && !process_alive(pid)).then(|| (e.path(), pid))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_dead_runs_of_this_pid_namespace_are_stale() {
        let dir = std::env::temp_dir().join(format!("schedlab-stale-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // 4000002 is above any pid_max: no such process runs here.
        for name in ["x-4000002-ns77", "x-4000003-ns88", "x-4000004", "x-1-ns77"] {
            std::fs::create_dir(dir.join(name)).unwrap();
        }
        let names = |ns| {
            let mut v: Vec<String> = stale_entries_in(&dir, "x-", ns)
                .into_iter()
                .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        // In namespace 77: its dead run; not namespace 88's, whose PIDs it
        // cannot see; PID 1 of namespace 77 is alive (init).
        assert_eq!(names(77), ["x-4000002-ns77"]);
        // In the initial namespace: an unnamespaced (older) name too.
        assert_eq!(names(INIT_PID_NS), ["x-4000004"]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(run_name().starts_with(&format!("{}-ns", std::process::id())));
    }
}
