//! Inside the guest: schedlab is the kernel's init (PID 1 of an initramfs).
//! It mounts what the host runner reads (proc, sysfs, devtmpfs, tracefs,
//! debugfs, the cgroup v1 cpu controller), says it is up on the console,
//! waits for the kernel's final clocksource and high-resolution timers,
//! runs its job with stdout on the second serial port, writes the exit
//! code after the output, waits until the port has sent everything, and
//! powers the machine off, which ends QEMU.

use crate::initramfs::ARGS_FILE;
use std::ffi::CString;
use std::io::Write;

/// Printed on the console once init runs: under KVM this is how a guest
/// that hangs during boot is told from a slow one.
pub const UP_MARKER: &str = "schedlab-guest: up";
/// Follows the job's output on the result port, with the exit code.
pub const EXIT_MARKER: &str = "SCHEDLAB-EXIT";
/// The second serial port: the job's stdout, kept apart from the
/// kernel's messages on the console (ttyS0).
const RESULT_PORT: &str = "/dev/ttyS1";

/// The job's sched_ext scheduler while it runs.
static SCX: std::sync::Mutex<Option<crate::scx::Running>> = std::sync::Mutex::new(None);

/// Whether this process is the init of a schedlab guest.
pub fn is_init() -> bool {
    std::process::id() == 1 && std::path::Path::new(ARGS_FILE).exists()
}

fn mount(fstype: &str, target: &str, options: &str) -> Result<(), String> {
    let _ = std::fs::create_dir_all(target);
    let c = |s: &str| CString::new(s).expect("no NUL in mount arguments");
    let (source, fs, dir, opts) = (c(fstype), c(fstype), c(target), c(options));
    let data = if options.is_empty() { std::ptr::null() } else { opts.as_ptr().cast() };
    // SAFETY: every pointer is a valid C string (or null data) for the call.
    let rc = unsafe { libc::mount(source.as_ptr(), dir.as_ptr(), fs.as_ptr(), 0, data) };
    if rc == 0 { Ok(()) } else { Err(format!("mount -t {fstype} {target}: {}", std::io::Error::last_os_error())) }
}

/// Sets the guest up and returns the job's command line (program name
/// first). Mounts the host runner can do without are reported on the
/// console and skipped: the runner then says in its report what it lacked.
pub fn start() -> Result<Vec<String>, String> {
    mount("proc", "/proc", "")?;
    mount("sysfs", "/sys", "")?;
    mount("devtmpfs", "/dev", "")?;
    // The initramfs root is writable already; /tmp gets a tmpfs of its own
    // unless files were packed there (an --include under /tmp), which a
    // mount would hide.
    if std::fs::read_dir("/tmp").map_or(true, |mut d| d.next().is_none()) {
        mount("tmpfs", "/tmp", "")?;
    }
    for (fstype, target, options) in [
        // POSIX shared memory (shm_open: cyclictest's statistics).
        ("tmpfs", "/dev/shm", "mode=1777"),
        ("tracefs", "/sys/kernel/tracing", ""),
        ("debugfs", "/sys/kernel/debug", ""),
        // A tmpfs to hold the controller's mount point, as distributions do.
        ("tmpfs", "/sys/fs/cgroup", "mode=755"),
        ("cgroup", "/sys/fs/cgroup/cpu", "cpu"),
    ] {
        if fstype == "cgroup" && !has_cpu_controller() {
            // TT's Kconfig takes CGROUP_SCHED out: no controller to mount,
            // and the runner says so when a workload has groups.
            continue;
        }
        if let Err(e) = mount(fstype, target, options) {
            eprintln!("schedlab: guest: {e}");
        }
    }
    eprintln!("{UP_MARKER}");
    wait_for_final_timekeeping();
    let port = std::fs::OpenOptions::new()
        .write(true)
        .open(RESULT_PORT)
        .map_err(|e| format!("cannot open the result port {RESULT_PORT}: {e}"))?;
    use std::os::fd::AsRawFd;
    // SAFETY: both descriptors are open; stdout now writes to the port.
    if unsafe { libc::dup2(port.as_raw_fd(), 1) } < 0 {
        return Err(format!("dup2 onto stdout: {}", std::io::Error::last_os_error()));
    }
    // A sched_ext scheduler of the job's runs every task before the job
    // starts, or the job does not run.
    if let Some(running) = crate::scx::start()? {
        *SCX.lock().unwrap_or_else(|e| e.into_inner()) = Some(running);
    }
    let text = std::fs::read(ARGS_FILE).map_err(|e| format!("cannot read {ARGS_FILE}: {e}"))?;
    serde_json::from_slice(&text).map_err(|e| format!("{ARGS_FILE}: {e}"))
}

/// Longest wait for the kernel's timekeeping to settle (guest time).
const TIMEKEEPING_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Holds the job back until the kernel keeps time as it will for the rest
/// of the boot. An x86 kernel starts on tsc-early, which is not fit for
/// high-resolution timers, and replaces it with tsc when a delayed work
/// refines the TSC's frequency, about a second after the initcall: often
/// after init has started (at 1.57 s and 1.88 s in a boot of pds-6.12 under
/// TCG). A job that starts first runs with every hrtimer on the tick grid,
/// and one that keeps its CPUs busy can starve that work for its whole run:
/// a pds-6.12 guest then ran its 4 ms hrtick slices for 4.7 ms on average
/// against 4.3 ms. The outcome goes to the console; the runner reports the
/// clocksource and any CPU left without high-resolution timers.
fn wait_for_final_timekeeping() {
    let start = std::time::Instant::now();
    loop {
        let clock = schedlab_host::info::clocksource();
        let hres = schedlab_host::info::high_res_timers();
        let settled = clock.as_deref() != Some("tsc-early") && hres.is_none_or(|(on, cpus)| on == cpus);
        if settled || start.elapsed() >= TIMEKEEPING_WAIT {
            let hres = hres.map_or("high-resolution timers unknown".to_string(), |(on, cpus)| {
                format!("high-resolution timers on {on} of {cpus} CPUs")
            });
            eprintln!(
                "schedlab-guest: timekeeping {} after {} ms: clocksource {}, {hres}",
                if settled { "settled" } else { "not settled" },
                start.elapsed().as_millis(),
                clock.as_deref().unwrap_or("unknown"),
            );
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Whether the kernel has a cpu cgroup controller (/proc/cgroups lists it).
fn has_cpu_controller() -> bool {
    std::fs::read_to_string("/proc/cgroups")
        .map(|t| t.lines().any(|l| l.split_whitespace().next() == Some("cpu")))
        .unwrap_or(true)
}

/// Ends the guest with the job's exit code: written after its output,
/// drained out of the port, then power off (QEMU runs with -no-reboot, so
/// a reboot ends it too).
pub fn finish(mut code: i32) -> ! {
    let scx = SCX.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(running) = scx
        && let Err(e) = running.stop()
    {
        eprintln!("schedlab: {e}");
        if code == 0 {
            code = 1;
        }
    }
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "\n{EXIT_MARKER} {code}\n");
    let _ = out.flush();
    // SAFETY: plain system calls on fd 1 and the whole machine, which is
    // ours: this is the guest's init.
    unsafe {
        libc::tcdrain(1);
        libc::sync();
        libc::reboot(libc::RB_POWER_OFF);
        libc::reboot(libc::RB_AUTOBOOT);
    }
    // Init must not return: the kernel would panic (and, with panic=-1,
    // reboot, which also ends QEMU).
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}
