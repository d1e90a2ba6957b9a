//! The vm runner: a scheduler's real kernel booted under QEMU with a
//! generated initramfs whose init is this very schedlab binary; it runs a
//! schedlab command in the guest (the host runner, `schedlab host ... --json`)
//! and the command's output comes back to the caller.
//!
//! Why a direct QEMU call rather than a launcher such as virtme-ng: the
//! guest needs no shell, no module tree and no shared host file system,
//! only one binary and its libraries in a cpio archive, two serial ports
//! (console, result) and a power-off at the end. That is a dozen QEMU
//! arguments, with nothing to install beyond Debian's `qemu-system-x86`.
//!
//! Accelerators: KVM where it works, TCG otherwise. On some machines
//! /dev/kvm exists but a guest hangs right after decompression; `Auto`
//! gives KVM a few seconds to print the guest's "up" marker and falls back
//! to TCG once. Under TCG the kernel's decisions are real and the CPU is
//! emulated: costs and absolute latencies are not this hardware's.
//!
//! Clocks under TCG: the guest's TSC is the host's, so it is as steady and
//! as synchronised across vCPUs as the host's, but the 6.1 and 5.10 kernels'
//! boot-time TSC sync check sees warps (a vCPU thread descheduled inside
//! the check) and fall back to the emulated HPET, where a real machine
//! keeps the TSC; with the TSC as its clock and hpet's hrtimers, a traced
//! tick drifted off the jiffy grid. TCG guests boot with `tsc=reliable`, so
//! every kernel keeps time on the TSC as on hardware (the report names the
//! clocksource), and init starts the job only once the kernel has it and
//! high-resolution timers (guest::start).
//!
//! Nothing is left behind: QEMU runs in its own process group with
//! PR_SET_PDEATHSIG (it dies with schedlab, even on SIGKILL), is killed on
//! Ctrl-C, SIGTERM, SIGHUP, a timeout or an error, and the temporary
//! directory (`schedlab-vm-PID-*` under $TMPDIR, marked as this run's) goes
//! with it; one left by a run that was SIGKILLed is removed by the next run
//! of any command (schedlab_host::leftovers).

pub mod elf;
pub mod guest;
pub mod initramfs;
pub mod programs;
pub mod scx;

use schedlab_host::signals;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    /// KVM when it brings a guest up, else TCG.
    Auto,
    Kvm,
    Tcg,
}

impl std::str::FromStr for Accel {
    type Err = String;
    fn from_str(s: &str) -> Result<Accel, String> {
        match s {
            "auto" => Ok(Accel::Auto),
            "kvm" => Ok(Accel::Kvm),
            "tcg" => Ok(Accel::Tcg),
            _ => Err(format!("unknown accelerator '{s}': use auto, kvm or tcg")),
        }
    }
}

impl std::fmt::Display for Accel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Accel::Auto => "auto",
            Accel::Kvm => "KVM",
            Accel::Tcg => "TCG",
        })
    }
}

/// How long KVM gets to bring the guest to its init before `Auto` falls
/// back to TCG: a KVM boot of these kernels takes well under a second.
const KVM_BOOT_TIMEOUT: Duration = Duration::from_secs(8);
/// How long TCG gets for the same (about 2 s on a quiet 2-core machine).
const TCG_BOOT_TIMEOUT: Duration = Duration::from_secs(90);
const POLL: Duration = Duration::from_millis(20);

pub struct VmOptions {
    /// The kernel image (an x86 bzImage).
    pub kernel: PathBuf,
    pub accel: Accel,
    pub memory_mib: u64,
    /// Guest CPUs as LLCs x cores per LLC x threads per core; QEMU's
    /// sockets, each with its own last-level cache.
    pub topology: [u32; 3],
    /// How long the job may take once the guest is up.
    pub run_timeout: Duration,
    /// Kernel boot parameters beside the runner's own (checked by the
    /// caller: one parameter each, no spaces).
    pub boot_args: Vec<String>,
}

/// What to run in the guest.
#[derive(Clone)]
pub struct GuestJob {
    /// schedlab's command line in the guest, program name first.
    pub args: Vec<String>,
    /// Files the command line names, placed in /job/ by name.
    pub files: Vec<(String, Vec<u8>)>,
    /// Files of this machine placed at their own paths (a program, its
    /// libraries, what `--include` names).
    pub extra: Vec<initramfs::Extra>,
}

pub struct VmRun {
    /// What the guest's command printed on stdout.
    pub stdout: String,
    pub exit_code: i32,
    /// The accelerator the guest ran under (never Auto).
    pub accel: Accel,
    /// The guest's console: kernel messages and the command's stderr.
    pub console: String,
    /// Things the user should know: a fallback to TCG, leftovers removed.
    pub warnings: Vec<String>,
    /// From QEMU's start to the guest's init.
    pub boot: Duration,
    /// Host CPUs that processes other than QEMU used while the job ran,
    /// on average (steal time included): a guest's vCPUs hold their tick
    /// rate only while the host's CPUs are theirs.
    pub host_others_cpus: f64,
}

impl VmRun {
    /// Lines the guest's schedlab wrote to stderr ("schedlab: ...").
    pub fn messages(&self) -> Vec<&str> {
        self.console.lines().filter_map(|l| l.trim_end().strip_prefix("schedlab: ")).collect()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum VmError {
    #[error("qemu-system-x86_64 is not installed: install Debian's qemu-system-x86 (apt-get install qemu-system-x86)")]
    NoQemu,
    #[error("{0}")]
    Setup(String),
    #[error("interrupted by {}: the guest was stopped and its files removed", signals::name(*.0))]
    Interrupted(libc::c_int),
    #[error("the guest did not reach its init within {} s under {accel}{}", timeout.as_secs(), console_tail(console))]
    BootTimeout { accel: Accel, timeout: Duration, console: String },
    #[error(
        "the guest did not finish within {} s of booting: it was killed (give more time with --timeout){}",
        timeout.as_secs(), console_tail(console)
    )]
    RunTimeout { timeout: Duration, console: String },
    #[error("the guest stopped without a result (a crash or a kernel panic?){}", console_tail(console))]
    NoResult { console: String },
    /// The sched_ext scheduler the job ran under was ejected by the kernel
    /// before the job ended (its watchdog's runnable task stall, an error
    /// of its own): the rest of the run was the kernel's fallback, not its.
    #[error("{message}")]
    SchedulerEjected { message: String },
}

/// How a kernel's oops or panic begins on its console.
const OOPS: [&str; 5] = ["BUG:", "general protection fault", "Oops:", "kernel BUG", "Kernel panic"];
/// How a kernel that hangs while booting says why (RCU stall reports).
const STALL: [&str; 2] = ["stall", "starved"];

impl VmError {
    /// What went wrong when the guest kernel itself failed: "crashed: " and
    /// the first line of its oops, or "hung while booting: " and the first
    /// stall it reported. None for every other error (a run that timed out,
    /// a setup error, an interruption).
    pub fn kernel_failure(&self) -> Option<String> {
        let (console, what, signs): (&str, &str, &[&str]) = match self {
            VmError::NoResult { console } => (console, "crashed", &OOPS),
            VmError::BootTimeout { console, .. } => (console, "hung while booting", &[&OOPS[..], &STALL[..]].concat()),
            VmError::SchedulerEjected { message } => {
                // The kernel's own words for it ("EXIT: runnable task
                // stall (...)"), as the scheduler printed them at its end.
                let why = message.rsplit_once("Error: ").map_or(message.as_str(), |(_, why)| why);
                return Some(format!("scheduler ejected: {}", why.trim().chars().take(200).collect::<String>()));
            }
            _ => return None,
        };
        let line =
            console.lines().find(|l| signs.iter().any(|o| l.contains(o))).unwrap_or("(no oops or stall printed)");
        Some(format!("{what}: {}", line.trim().chars().take(200).collect::<String>()))
    }
}

fn console_tail(console: &str) -> String {
    let lines: Vec<&str> = console.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return "; the console printed nothing".into();
    }
    // A kernel's oops says what went wrong in its first lines (the BUG or
    // general protection line, RIP and the call trace); the last lines of a
    // panic are only its registers and "Shutting down cpus".
    if let Some(first) = lines.iter().position(|l| OOPS.iter().any(|o| l.contains(o))) {
        let shown = &lines[first..lines.len().min(first + 40)];
        return format!("; the kernel crashed:\n  {}", shown.join("\n  "));
    }
    let tail = &lines[lines.len().saturating_sub(12)..];
    format!("; last console lines:\n  {}", tail.join("\n  "))
}

fn find_qemu() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("qemu-system-x86_64")).find(|p| p.is_file())
}

/// Refuses what is not an x86 bzImage before QEMU gives a less clear error.
fn check_kernel(kernel: &Path) -> Result<(), VmError> {
    let mut header = [0u8; 0x206];
    let mut f = std::fs::File::open(kernel)
        .map_err(|e| VmError::Setup(format!("cannot open the kernel {}: {e}", kernel.display())))?;
    if f.read_exact(&mut header).is_err() || &header[0x202..0x206] != b"HdrS" {
        return Err(VmError::Setup(format!(
            "{} is not an x86 bzImage (no 'HdrS' boot header): give a kernel built as arch/x86/boot/bzImage",
            kernel.display()
        )));
    }
    // The boot protocol's header gives the image's whole length: the setup
    // sectors (0 means 4) and the boot sector, then syssize paragraphs of
    // 16 bytes. A shorter file was cut in copying; QEMU would only stop
    // with a silent console.
    let setup_sects = match header[0x1f1] {
        0 => 4,
        n => u64::from(n),
    };
    let syssize = u64::from(u32::from_le_bytes(header[0x1f4..0x1f8].try_into().expect("4 bytes")));
    let expected = (setup_sects + 1) * 512 + syssize * 16;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if len < expected {
        return Err(VmError::Setup(format!(
            "{} is cut short: its boot header says {expected} bytes, the file has {len}: copy the kernel again",
            kernel.display()
        )));
    }
    Ok(())
}

/// A running QEMU, killed when dropped.
struct Qemu {
    child: Child,
}

impl Drop for Qemu {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Why a boot or run phase ended.
enum Ended {
    Exited,
    Marker,
    TimedOut,
}

fn read_lossy(path: &Path) -> String {
    std::fs::read(path).map(|b| String::from_utf8_lossy(&b).replace('\r', "")).unwrap_or_default()
}

struct Launch<'a> {
    qemu: &'a Path,
    opts: &'a VmOptions,
    dir: &'a Path,
    initrd: &'a Path,
}

impl Launch<'_> {
    fn console(&self) -> PathBuf {
        self.dir.join("console.log")
    }
    fn result(&self) -> PathBuf {
        self.dir.join("result.out")
    }

    fn spawn(&self, accel: Accel) -> Result<Qemu, VmError> {
        let [llcs, cores, threads] = self.opts.topology;
        let cpus = llcs * cores * threads;
        let mut cmd = Command::new(self.qemu);
        cmd.args(["-nodefaults", "-no-user-config", "-display", "none", "-no-reboot"]);
        match accel {
            Accel::Kvm => cmd.args(["-accel", "kvm", "-cpu", "host"]),
            // topoext lets the emulated CPU report SMT siblings.
            _ => cmd.args(["-accel", "tcg,thread=multi", "-cpu", "max,+topoext"]),
        };
        cmd.arg("-smp").arg(format!("{cpus},sockets={llcs},cores={cores},threads={threads}"));
        cmd.arg("-m").arg(format!("{}M", self.opts.memory_mib));
        cmd.arg("-kernel").arg(&self.opts.kernel);
        cmd.arg("-initrd").arg(self.initrd);
        // no_hash_pointers: a 6.1 guest without entropy prints every pointer
        // as (____ptrval____) until its random pool is ready, which a short
        // boot never sees, and a trace's hrtimer lines cannot be paired
        // (the key `=1` keeps a kernel before 5.12, which lacks it, from
        // handing it to init as an argument).
        let mut append = String::from("console=ttyS0 quiet loglevel=4 panic=-1 rdinit=/init no_hash_pointers=1");
        if accel != Accel::Kvm {
            append.push_str(" tsc=reliable");
        }
        for a in &self.opts.boot_args {
            append.push(' ');
            append.push_str(a);
        }
        cmd.arg("-append").arg(append);
        cmd.arg("-serial").arg(format!("file:{}", self.console().display()));
        cmd.arg("-serial").arg(format!("file:{}", self.result().display()));
        let stderr = std::fs::File::create(self.dir.join("qemu.err"))
            .map_err(|e| VmError::Setup(format!("cannot create a file in {}: {e}", self.dir.display())))?;
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(stderr);
        use std::os::unix::process::CommandExt;
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                // Its own process group, so a terminal's Ctrl-C reaches
                // schedlab, which stops the guest; and it dies with
                // schedlab, even when that is SIGKILLed.
                libc::setpgid(0, 0);
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| VmError::Setup(format!("cannot start {}: {e}", self.qemu.display())))?;
        Ok(Qemu { child })
    }

    /// Waits until QEMU exits, `marker` shows on the console (if given), or
    /// `timeout` passes; a stop signal ends the wait with an error.
    fn wait(&self, q: &mut Qemu, marker: Option<&str>, timeout: Duration) -> Result<Ended, VmError> {
        let start = Instant::now();
        loop {
            if let Some(sig) = signals::received() {
                return Err(VmError::Interrupted(sig));
            }
            if q.child.try_wait().map_err(|e| VmError::Setup(format!("waiting for QEMU: {e}")))?.is_some() {
                return Ok(Ended::Exited);
            }
            if marker.is_some_and(|m| read_lossy(&self.console()).contains(m)) {
                return Ok(Ended::Marker);
            }
            if start.elapsed() >= timeout {
                return Ok(Ended::TimedOut);
            }
            std::thread::sleep(POLL);
        }
    }

    /// `wait` for the job's end, sampling the host's load meanwhile.
    fn wait_sampling(&self, q: &mut Qemu, timeout: Duration, load: &HostLoad) -> Result<Ended, VmError> {
        let start = Instant::now();
        loop {
            load.sample();
            match self.wait(q, None, POLL.min(timeout.saturating_sub(start.elapsed())))? {
                Ended::TimedOut if start.elapsed() < timeout => continue,
                ended => return Ok(ended),
            }
        }
    }

    /// QEMU's error output without the warning our own `+topoext` draws
    /// from TCG, which never stops a guest and would read as the cause.
    fn qemu_stderr(&self) -> String {
        let err = read_lossy(&self.dir.join("qemu.err"));
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| !(l.contains("TCG doesn't support requested feature") && l.contains("topoext")))
            .collect();
        lines.join("\n").trim().to_string()
    }

    /// Boots under `accel` until the guest's init is up.
    fn boot(&self, accel: Accel) -> Result<(Qemu, Duration), VmError> {
        let _ = std::fs::remove_file(self.console());
        let timeout = if accel == Accel::Kvm { KVM_BOOT_TIMEOUT } else { TCG_BOOT_TIMEOUT };
        let start = Instant::now();
        let mut q = self.spawn(accel)?;
        match self.wait(&mut q, Some(guest::UP_MARKER), timeout)? {
            Ended::Marker => Ok((q, start.elapsed())),
            Ended::TimedOut => Err(VmError::BootTimeout { accel, timeout, console: read_lossy(&self.console()) }),
            Ended::Exited => {
                let err = self.qemu_stderr();
                Err(VmError::Setup(format!(
                    "QEMU ({accel}) stopped before the guest came up{}{}",
                    if err.is_empty() { String::new() } else { format!(": {err}") },
                    console_tail(&read_lossy(&self.console()))
                )))
            }
        }
    }
}

/// The host's busy time against QEMU's own CPU time, from the job's start
/// to QEMU's last sample before it exits.
struct HostLoad {
    pid: u32,
    start: Instant,
    busy0: u64,
    qemu0: u64,
    /// (host busy, QEMU's CPU time, when), both in USER_HZ ticks.
    last: std::cell::Cell<(u64, u64, Instant)>,
}

impl HostLoad {
    fn start(pid: u32) -> HostLoad {
        let (busy0, qemu0) = (schedlab_host::info::machine_cpu_ticks().0, process_cpu(pid).unwrap_or(0));
        let now = Instant::now();
        HostLoad { pid, start: now, busy0, qemu0, last: std::cell::Cell::new((busy0, qemu0, now)) }
    }

    fn sample(&self) {
        if let Some(cpu) = process_cpu(self.pid) {
            self.last.set((schedlab_host::info::machine_cpu_ticks().0, cpu, Instant::now()));
        }
    }

    fn others_cpus(&self) -> f64 {
        let (busy, qemu, at) = self.last.get();
        let secs = (at - self.start).as_secs_f64();
        if secs <= 0.0 {
            return 0.0;
        }
        let others = busy.saturating_sub(self.busy0).saturating_sub(qemu.saturating_sub(self.qemu0));
        // SAFETY: sysconf has no side effects.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        others as f64 / hz / secs
    }
}

/// utime + stime of a process (every thread), USER_HZ ticks.
fn process_cpu(pid: u32) -> Option<u64> {
    let stat = schedlab_host::ProcStat::read(&format!("/proc/{pid}/stat"))?;
    u64::try_from(stat.field(14)? + stat.field(15)?).ok()
}

/// Why KVM failed to bring up a guest of this process, which then boots
/// its later guests (validate's hundreds) with TCG without the probe.
static KVM_REFUSED: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

fn kvm_usable() -> bool {
    std::fs::OpenOptions::new().read(true).write(true).open("/dev/kvm").is_ok()
}

fn host_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Boots `opts.kernel`, runs `job` in it and returns what it printed.
pub fn run(job: &GuestJob, opts: &VmOptions) -> Result<VmRun, VmError> {
    let signals = signals::StopSignals::install();
    let qemu = find_qemu().ok_or(VmError::NoQemu)?;
    check_kernel(&opts.kernel)?;
    let cpus: u64 = opts.topology.iter().map(|&n| n as u64).product();
    if cpus == 0 {
        return Err(VmError::Setup("the guest needs at least one CPU".into()));
    }
    if opts.accel == Accel::Kvm && cpus as usize > host_cpus() {
        return Err(VmError::Setup(format!(
            "{cpus} vCPUs under KVM on {} host CPUs would measure the host's time-sharing of vCPUs, not the guest's \
             scheduler: use --cpus {} or fewer, or --accel tcg",
            host_cpus(),
            host_cpus()
        )));
    }
    if opts.accel == Accel::Kvm && !kvm_usable() {
        return Err(VmError::Setup("/dev/kvm cannot be opened for reading and writing: use --accel tcg".into()));
    }
    // What killed runs of any kind left (its module says how each is known
    // to be schedlab's).
    schedlab_host::leftovers::sweep();
    let mut warnings = Vec::new();
    let dir = tempfile::Builder::new()
        .prefix(&format!("{}{}-", schedlab_host::leftovers::VM_TEMP_PREFIX, schedlab_host::signals::run_name()))
        .tempdir()
        .map_err(|e| VmError::Setup(format!("cannot create a temporary directory: {e}")))?;
    schedlab_host::leftovers::mark_vm_dir(dir.path())
        .map_err(|e| VmError::Setup(format!("cannot write in {}: {e}", dir.path().display())))?;
    let initrd = dir.path().join("initrd.cpio");
    let exe = std::env::current_exe().map_err(|e| VmError::Setup(format!("cannot find schedlab's own binary: {e}")))?;
    initramfs::write(&initrd, &exe, &job.args, &job.files, &job.extra).map_err(VmError::Setup)?;
    let launch = Launch { qemu: &qemu, opts, dir: dir.path(), initrd: &initrd };

    let (mut q, boot, accel) = match opts.accel {
        Accel::Tcg => {
            let (q, boot) = launch.boot(Accel::Tcg)?;
            (q, boot, Accel::Tcg)
        }
        Accel::Kvm => {
            let (q, boot) = launch.boot(Accel::Kvm)?;
            (q, boot, Accel::Kvm)
        }
        Accel::Auto => {
            let refused_before = KVM_REFUSED.lock().ok().and_then(|r| r.clone());
            // Said once a process: validate boots a hundred guests, and
            // each report's machine line names TCG anyway.
            let said_before = refused_before.is_some();
            let kvm = if let Some(why) = refused_before {
                Err(why)
            } else if !kvm_usable() {
                Err("/dev/kvm cannot be opened".to_string())
            } else if cpus as usize > host_cpus() {
                Err(format!("{cpus} vCPUs are more than the {} host CPUs", host_cpus()))
            } else {
                match launch.boot(Accel::Kvm) {
                    Ok(up) => Ok(up),
                    Err(e @ VmError::Interrupted(_)) => return Err(e),
                    Err(e) => {
                        let why = match e {
                            VmError::BootTimeout { timeout, .. } => {
                                format!("KVM did not bring the guest up within {} s", timeout.as_secs())
                            }
                            e => format!("KVM failed: {}", e.to_string().lines().next().unwrap_or_default()),
                        };
                        // A KVM that hangs hangs for every guest: the next
                        // ones of this process go to TCG at once.
                        if let Ok(mut r) = KVM_REFUSED.lock() {
                            *r = Some(why.clone());
                        }
                        Err(why)
                    }
                }
            };
            match kvm {
                Ok((q, boot)) => (q, boot, Accel::Kvm),
                Err(why) => {
                    if !said_before {
                        warnings.push(format!(
                            "{why}; using TCG: the kernel's decisions are real, costs and latencies are emulated"
                        ));
                    }
                    let (q, boot) = launch.boot(Accel::Tcg)?;
                    (q, boot, Accel::Tcg)
                }
            }
        }
    };
    let load = HostLoad::start(q.child.id());
    let ended = launch.wait_sampling(&mut q, opts.run_timeout, &load)?;
    let host_others_cpus = load.others_cpus();
    match ended {
        Ended::Exited => {}
        Ended::TimedOut | Ended::Marker => {
            return Err(VmError::RunTimeout { timeout: opts.run_timeout, console: read_lossy(&launch.console()) });
        }
    }
    drop(q);
    drop(signals);
    let console = read_lossy(&launch.console());
    let result = read_lossy(&launch.result());
    let marker = result.rfind(guest::EXIT_MARKER).ok_or_else(|| VmError::NoResult { console: console.clone() })?;
    let exit_code = result[marker + guest::EXIT_MARKER.len()..].trim().parse().unwrap_or(-1);
    Ok(VmRun {
        stdout: result[..marker].trim().to_string(),
        exit_code,
        accel,
        console,
        warnings,
        boot,
        host_others_cpus,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_failure_is_named_by_its_first_oops_or_stall_line() {
        let crashed = VmError::NoResult {
            console: "booting\n  RIP: 0010:x\nOops: int3: 0000 [#1] SMP\nKernel panic - not syncing\n".into(),
        };
        assert_eq!(crashed.kernel_failure().unwrap(), "crashed: Oops: int3: 0000 [#1] SMP");
        let hung = VmError::BootTimeout {
            accel: Accel::Tcg,
            timeout: Duration::from_secs(90),
            console: "rcu: INFO: rcu_sched detected stalls on CPUs/tasks:\n".into(),
        };
        assert_eq!(
            hung.kernel_failure().unwrap(),
            "hung while booting: rcu: INFO: rcu_sched detected stalls on CPUs/tasks:"
        );
        // A run that was only slow is not the kernel's failure.
        let slow = VmError::RunTimeout { timeout: Duration::from_secs(1), console: "Kernel panic\n".into() };
        assert!(slow.kernel_failure().is_none());
        // A sched_ext scheduler the kernel ejected mid-run (seen under TCG:
        // bpfland's lat-ctx, a task not run for 6.9 s) fails that boot.
        let ejected = VmError::SchedulerEjected {
            message: format!(
                "bpfland_1.1.4 {}: scx_ops_error_irq_workfn+0x23/0x28 | Error: EXIT: runnable task stall (sl-ping[45] \
                 failed to run for 6.856s)",
                scx::EJECTED
            ),
        };
        assert_eq!(
            ejected.kernel_failure().unwrap(),
            "scheduler ejected: EXIT: runnable task stall (sl-ping[45] failed to run for 6.856s)"
        );
        assert!(crashed.to_string().contains("the kernel crashed:\n  Oops: int3"));
    }
}
