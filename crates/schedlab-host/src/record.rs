//! `schedlab record`: a command run under a private tracefs instance of
//! sched events, its trace kept for replay.

use crate::*;
use std::os::unix::process::CommandExt;

/// What `record` captured.
pub struct Recording {
    /// The trace in tracefs's text layout.
    pub text: String,
    /// Events the ring buffers dropped (a replay of a trace with drops is
    /// missing bursts).
    pub overrun: u64,
    pub exit_status: std::process::ExitStatus,
    /// The command's process (the root of what it started).
    pub pid: u32,
    /// CLOCK_MONOTONIC (the trace's clock) just before the command
    /// started and when it was seen to end.
    pub started: schedlab_sim::Nanos,
    pub ended: schedlab_sim::Nanos,
    /// The stop signal that ended the recording early, passed on to the
    /// command; the trace up to then is kept.
    pub interrupted: Option<libc::c_int>,
}

/// How long a command that was passed a stop signal has to exit before
/// it is killed.
pub(crate) const COMMAND_STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs `command` with the machine's sched events recorded through a
/// private tracefs instance: everything that ran, so that a replay has the
/// command's competition too (a filtered trace sees other tasks only when
/// they switch with the command's, and cannot tell how long they ran).
/// A stop signal is passed on to the command; the recording ends with it,
/// and the instance is removed on every path.
pub fn record(command: &[String]) -> Result<Recording, HostError> {
    let _signals = signals::StopSignals::install();
    let (program, args) = command
        .split_first()
        .ok_or_else(|| HostError::Setup("nothing to record: give a command after --, e.g. -- make -j4".into()))?;
    leftovers::sweep();
    let nr_cpus = sys::allowed_cpus().len().max(1);
    let tracer = tracing::Tracer::for_programs(nr_cpus, "schedlab record").map_err(HostError::Setup)?;
    tracer.set_on(true);
    // The command gets a process group of its own, so that a stop signal
    // reaches everything it started (a shell's children that ignore
    // signals too, at the grace period's end) and nothing of schedlab's:
    // a terminal's Ctrl-C reaches schedlab, which passes it on.
    let started = sys::now();
    // SAFETY: getpid is async-signal-safe.
    let recorder = unsafe { libc::getpid() };
    let mut command = std::process::Command::new(program);
    command.args(args).process_group(0);
    // SAFETY: prctl, getppid and _exit are async-signal-safe, as the code
    // between fork and exec must be. A recorder killed by SIGKILL takes its
    // command along (not what the command itself started: a shell's
    // children outlive it); one that died before the prctl took effect is
    // caught by the parent check. The death signal follows the thread that
    // forks: record runs on its caller's thread, which lives as long as the
    // recording.
    unsafe {
        command.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != recorder {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let mut child = command.spawn().map_err(|e| HostError::Setup(format!("cannot run '{program}': {e}")))?;
    let group = child.id() as libc::pid_t;
    let mut interrupted = None;
    let mut deadline = None;
    let ended;
    let exit_status = loop {
        if let Some(status) = child.try_wait().map_err(|e| HostError::Setup(format!("waiting for '{program}': {e}")))? {
            // A signal that came as the command ended still ends the
            // recording early, and says so.
            interrupted = interrupted.or_else(signals::received);
            if interrupted.is_some() {
                // SAFETY: the group is the command's own; what is left of
                // it (a background child) goes with it.
                unsafe { libc::killpg(group, libc::SIGKILL) };
            }
            ended = sys::now();
            break status;
        }
        if interrupted.is_none()
            && let Some(sig) = signals::received()
        {
            interrupted = Some(sig);
            // SAFETY: signalling the command's own process group, whose
            // leader has not been reaped.
            unsafe { libc::killpg(group, sig) };
            deadline = Some(std::time::Instant::now() + COMMAND_STOP_GRACE);
        }
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            // SAFETY: as above; everything in the group that ignored the
            // signal.
            unsafe { libc::killpg(group, libc::SIGKILL) };
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    tracer.set_on(false);
    let (text, overrun) = tracer.text().map_err(HostError::Setup)?;
    Ok(Recording { text, overrun, exit_status, pid: group as u32, started, ended, interrupted })
}
