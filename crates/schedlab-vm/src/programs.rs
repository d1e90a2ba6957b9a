//! Real programs in a guest kernel (`schedlab vm --kernel K -- PROGRAM ...`):
//! the job the caller packs (each program's command line, its working
//! directory, where its libraries are) and, inside the guest, the runner
//! that starts them under a trace of every task and turns the trace into
//! the report every other row has (schedlab_sim::report::recorded).
//!
//! The guest is a machine of its own, so the trace is the whole machine's
//! (sched_switch, sched_waking/wakeup(_new), sched_migrate_task,
//! sched_process_fork/exec/exit, with record-tgid): the programs' tasks
//! are the processes started here and everything they fork; the rest
//! (kernel threads, this runner) is "other processes" in the report.
//!
//! All programs start at once, each in a process group of its own with its
//! output in the guest's /tmp; the run ends when the first one listed
//! exits (the others are then sent SIGTERM, and SIGKILL 2 s later), or at
//! the timeout (every program is sent SIGTERM, then SIGKILL), and the
//! report covers the programs' start to that moment. The runner sleeps in
//! waitpid meanwhile: it takes no CPU from the programs it measures.

use schedlab_sim::Report;
use schedlab_sim::report::recorded::{self, RecordedRun};
use serde::{Deserialize, Serialize};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::time::Duration;

/// The job's file under /job/.
pub const JOB_FILE: &str = "programs.json";

/// How long programs sent SIGTERM have before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// Output kept of each stream of each program.
const OUTPUT_LIMIT: usize = 1 << 20;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ProgramsJob {
    /// Each program's command line, its absolute path first.
    pub programs: Vec<Vec<String>>,
    /// Where they run (the caller's directory, so relative paths of an
    /// --include mean the same).
    pub cwd: String,
    /// LD_LIBRARY_PATH for libraries outside ld.so's built-in directories
    /// (the guest has no ld.so.cache).
    pub library_path: Vec<String>,
    /// When the runner stops the programs, from their start.
    pub timeout_ns: u64,
    /// Whether to send the trace back (`--trace-out`).
    pub keep_trace: bool,
}

/// How one program ended.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ProgramOutcome {
    pub command: String,
    pub pid: u32,
    pub code: Option<i32>,
    pub signal: Option<i32>,
    /// Stopped by the runner: after the first program ended, or at the
    /// timeout.
    pub stopped: bool,
    pub stdout: String,
    pub stderr: String,
    /// Whether either stream was cut at OUTPUT_LIMIT.
    pub truncated: bool,
}

impl ProgramOutcome {
    /// The exit status as a shell gives it: the code, or 128 + the signal.
    pub fn status(&self) -> i32 {
        self.code.unwrap_or_else(|| 128 + self.signal.unwrap_or(0))
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProgramsResult {
    pub report: Report,
    pub programs: Vec<ProgramOutcome>,
    /// Whether the timeout ended the run.
    pub timed_out: bool,
    /// Events the trace's ring buffers dropped.
    pub overrun: u64,
    /// The whole trace, tracefs text, when the job asked for it.
    pub trace: Option<String>,
    /// The report's window on the trace's clock (CLOCK_MONOTONIC, ns): the
    /// programs' start to the first one's exit or the timeout.
    #[serde(default)]
    pub window: (u64, u64),
}

fn signal_group(pid: u32, sig: libc::c_int) {
    // SAFETY: each program leads a process group of its own, made here.
    unsafe { libc::killpg(pid as libc::pid_t, sig) };
}

fn read_output(path: &str) -> (String, bool) {
    let data = std::fs::read(path).unwrap_or_default();
    let cut = data.len() > OUTPUT_LIMIT;
    (String::from_utf8_lossy(&data[..data.len().min(OUTPUT_LIMIT)]).into_owned(), cut)
}

/// Runs the job inside the guest (this process is its init).
pub fn run_in_guest(job: &ProgramsJob) -> Result<ProgramsResult, String> {
    if job.programs.is_empty() {
        return Err("no program to run".into());
    }
    let kernel = schedlab_host::info::read();
    // SAFETY: sysconf has no side effects.
    let nr_cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    let tracer = schedlab_host::tracing::Tracer::for_programs(nr_cpus, "the trace of the programs")?;
    tracer.set_on(true);
    let from = schedlab_host::monotonic_now();
    let mut children = Vec::new();
    for (i, argv) in job.programs.iter().enumerate() {
        let out = std::fs::File::create(format!("/tmp/schedlab-program-{i}.out")).map_err(|e| e.to_string())?;
        let err = std::fs::File::create(format!("/tmp/schedlab-program-{i}.err")).map_err(|e| e.to_string())?;
        let mut cmd = std::process::Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .current_dir(&job.cwd)
            .env_clear()
            .env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
            .env("HOME", "/tmp")
            .env("TMPDIR", "/tmp")
            .stdin(std::process::Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        if !job.library_path.is_empty() {
            cmd.env("LD_LIBRARY_PATH", job.library_path.join(":"));
        }
        match cmd.spawn() {
            Ok(child) => children.push(child),
            Err(e) => {
                for c in &mut children {
                    signal_group(c.id(), libc::SIGKILL);
                    let _ = c.wait();
                }
                return Err(format!("cannot start {} in the guest: {e}", argv[0]));
            }
        }
    }
    let groups: Vec<u32> = children.iter().map(|c| c.id()).collect();

    // The timeout, on a thread of its own: the main thread sleeps in
    // waitpid until the first program ends.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let timeout = Duration::from_nanos(job.timeout_ns);
    let watched = groups.clone();
    let watchdog = std::thread::spawn(move || -> Option<u64> {
        match done_rx.recv_timeout(timeout) {
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                let at = schedlab_host::monotonic_now();
                for &g in &watched {
                    signal_group(g, libc::SIGTERM);
                }
                if done_rx.recv_timeout(STOP_GRACE).is_err() {
                    for &g in &watched {
                        signal_group(g, libc::SIGKILL);
                    }
                }
                Some(at)
            }
            _ => None,
        }
    });
    let first_status = children[0].wait().map_err(|e| format!("waiting for {}: {e}", job.programs[0][0]))?;
    let mut to = schedlab_host::monotonic_now();
    let _ = done_tx.send(());
    let timed_out_at = watchdog.join().unwrap_or(None);
    if let Some(at) = timed_out_at {
        to = at;
    }
    let mut statuses = vec![(first_status, timed_out_at.is_some())];
    for child in children.iter_mut().skip(1) {
        let pid = child.id();
        let early = child.try_wait().ok().flatten();
        let status = match early {
            Some(s) => (s, false),
            None => {
                signal_group(pid, libc::SIGTERM);
                let deadline = std::time::Instant::now() + STOP_GRACE;
                loop {
                    if let Ok(Some(s)) = child.try_wait() {
                        break (s, true);
                    }
                    if std::time::Instant::now() >= deadline {
                        signal_group(pid, libc::SIGKILL);
                        break (child.wait().map_err(|e| e.to_string())?, true);
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        };
        statuses.push(status);
    }
    // What the programs left in their groups (a daemon, a stray child).
    for &g in &groups {
        signal_group(g, libc::SIGKILL);
    }
    tracer.set_on(false);
    let (text, overrun) = tracer.text()?;
    drop(tracer);

    let parsed = recorded::parse(&text)?;
    let mut notes = vec![format!(
        "a real program: the report is the guest's trace of every task from the programs' start to {}",
        if timed_out_at.is_some() { "the timeout" } else { "the first program's exit" }
    )];
    if overrun > 0 {
        notes.push(format!("the trace's ring buffers dropped {overrun} events: figures miss what they held"));
    }
    notes.extend(kernel.notes.iter().cloned());
    let command = |argv: &Vec<String>| argv.join(" ");
    let head = Report {
        source: "vm".into(),
        workload: job.programs.iter().map(command).collect::<Vec<_>>().join(" + "),
        hz: kernel.hz.unwrap_or(0),
        tunables: kernel.tunables.clone(),
        // The machine is the caller's to name (QEMU's accelerator, vCPUs).
        host: Some(kernel.host_info(
            "",
            "tracefs instance, every task (record-tgid)".into(),
            "not used: a real program".into(),
            notes,
        )),
        ..Report::default()
    };
    let run = RecordedRun { roots: groups.clone(), from, to, nr_cpus: nr_cpus as u32 };
    let report = recorded::report(&parsed, &run, head);
    let programs = job
        .programs
        .iter()
        .zip(&statuses)
        .zip(&groups)
        .enumerate()
        .map(|(i, ((argv, (status, stopped)), &pid))| {
            let (stdout, cut_out) = read_output(&format!("/tmp/schedlab-program-{i}.out"));
            let (stderr, cut_err) = read_output(&format!("/tmp/schedlab-program-{i}.err"));
            ProgramOutcome {
                command: command(argv),
                pid,
                code: status.code(),
                signal: status.signal(),
                stopped: *stopped,
                stdout,
                stderr,
                truncated: cut_out || cut_err,
            }
        })
        .collect();
    Ok(ProgramsResult {
        report,
        programs,
        timed_out: timed_out_at.is_some(),
        overrun,
        trace: job.keep_trace.then_some(text),
        window: (from, to),
    })
}
