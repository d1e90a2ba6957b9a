//! The system calls the host runner makes, wrapped so each failure says
//! what was attempted and how to get permission for it.

use schedlab_sim::Nanos;
use std::io;

pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// The CPU the calling thread runs on, as the kernel numbers it.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: no arguments; -1 on failure.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

fn clock(id: libc::clockid_t) -> Nanos {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec; both clocks always exist on Linux.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as Nanos * 1_000_000_000 + ts.tv_nsec as Nanos
}

/// CLOCK_MONOTONIC, the clock ftrace's "mono" trace_clock also reads.
pub fn now() -> Nanos {
    clock(libc::CLOCK_MONOTONIC)
}

/// CPU time of the calling thread.
pub fn thread_cpu_time() -> Nanos {
    clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The numeric fields of a /proc `stat` file (/proc/PID/stat,
/// /proc/thread-self/stat), read once: field N of proc(5) is `field(N)`.
pub struct ProcStat {
    /// Fields 3 onwards, as text.
    after_comm: Vec<String>,
}

impl ProcStat {
    /// None where the file cannot be read (a process that is gone).
    pub fn read(path: &str) -> Option<ProcStat> {
        let stat = std::fs::read(path).ok()?;
        let stat = String::from_utf8_lossy(&stat);
        // The comm, field 2, is in parentheses and may hold spaces and
        // parentheses: count from the last ')', which field 3 follows.
        let rest = &stat[stat.rfind(')')? + 1..];
        Some(ProcStat { after_comm: rest.split_whitespace().map(String::from).collect() })
    }

    /// Field `n` (numbered from 1 as proc(5) numbers them, n >= 3).
    pub fn field(&self, n: usize) -> Option<i64> {
        self.after_comm.get(n.checked_sub(3)?)?.parse().ok()
    }
}

/// The calling thread's priority as /proc gives it (field 18, the kernel's
/// task_prio()); None where it cannot be read.
pub fn stat_priority() -> Option<i64> {
    ProcStat::read("/proc/thread-self/stat")?.field(18)
}

/// Sleeps until an absolute CLOCK_MONOTONIC time; false when a signal cut
/// it short.
pub fn sleep_until(at: Nanos) -> bool {
    let ts =
        libc::timespec { tv_sec: (at / 1_000_000_000) as libc::time_t, tv_nsec: (at % 1_000_000_000) as libc::c_long };
    // SAFETY: ts is valid; a null remainder is allowed with TIMER_ABSTIME.
    let rc = unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
    rc == 0
}

pub struct Rusage {
    pub voluntary: u64,
    pub involuntary: u64,
}

/// getrusage(RUSAGE_THREAD): this thread's context switches.
pub fn thread_rusage() -> Rusage {
    // SAFETY: zeroed rusage is a valid out-parameter.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD with a valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    Rusage { voluntary: ru.ru_nvcsw as u64, involuntary: ru.ru_nivcsw as u64 }
}

fn last_error(what: &str, fix: &str) -> String {
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EPERM) || e.raw_os_error() == Some(libc::EACCES) {
        format!("{what}: not permitted ({e}); {fix}")
    } else {
        format!("{what}: {e}")
    }
}

pub fn set_nice(tid: i32, nice: i32) -> Result<(), String> {
    // SAFETY: plain syscall on our own thread id.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
    if rc != 0 {
        return Err(last_error(&format!("setting nice {nice}"), "run as root or with CAP_SYS_NICE, or use nice >= 0"));
    }
    Ok(())
}

/// sched_setscheduler for SCHED_BATCH, SCHED_IDLE, SCHED_FIFO and SCHED_RR.
pub fn set_policy(tid: i32, policy: libc::c_int, rt_priority: i32, label: &str) -> Result<(), String> {
    let param = libc::sched_param { sched_priority: rt_priority };
    // SAFETY: valid param for our own thread.
    let rc = unsafe { libc::sched_setscheduler(tid, policy, &param) };
    if rc != 0 {
        return Err(last_error(
            &format!("setting {label}"),
            "real-time policies need root or CAP_SYS_NICE (and RLIMIT_RTPRIO)",
        ));
    }
    Ok(())
}

pub fn set_affinity(tid: i32, cpus: &[usize]) -> Result<(), String> {
    set_affinity_set(tid, &cpu_set(cpus.iter().copied()))
}

/// The kernel's CPU mask of `cpus`, each below CPU_SETSIZE (the caller's
/// mapping of allowed CPUs).
pub fn cpu_set(cpus: impl IntoIterator<Item = usize>) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain data; CPU_SET stays in bounds for < 1024.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for c in cpus {
        // SAFETY: c < CPU_SETSIZE is checked by the caller's mapping.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    set
}

pub fn set_affinity_set(tid: i32, set: &libc::cpu_set_t) -> Result<(), String> {
    // SAFETY: a valid set for a thread of ours.
    let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), set) };
    if rc != 0 {
        return Err(last_error("setting CPU affinity", "check the container's cpuset"));
    }
    Ok(())
}

/// The CPUs task `tid` (0: the calling thread) may run on, or None when it
/// cannot be read (the task is gone).
fn affinity_of(tid: i32) -> Option<libc::cpu_set_t> {
    // SAFETY: as above.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a cpu_set_t of the size given.
    let rc = unsafe { libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    (rc == 0).then_some(set)
}

/// The CPUs this process may run on, in order.
pub fn allowed_cpus() -> Vec<usize> {
    let Some(set) = affinity_of(0) else {
        return (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect();
    };
    // SAFETY: reading bits of an initialized set.
    (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect()
}

/// How many CPUs task `tid` may run on (any process's or kernel thread's),
/// or None when it cannot be read (the task is gone).
pub fn cpus_allowed_of(tid: i32) -> Option<usize> {
    // SAFETY: CPU_COUNT reads an initialized set.
    affinity_of(tid).map(|set| unsafe { libc::CPU_COUNT(&set) } as usize)
}

/// sched_setattr with sched_runtime: EEVDF's custom slice (Linux 6.12+).
pub fn set_slice(tid: i32, nice: i32, slice: Nanos) -> Result<(), String> {
    #[repr(C)]
    struct SchedAttr {
        size: u32,
        sched_policy: u32,
        sched_flags: u64,
        sched_nice: i32,
        sched_priority: u32,
        sched_runtime: u64,
        sched_deadline: u64,
        sched_period: u64,
    }
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_policy: libc::SCHED_OTHER as u32,
        sched_flags: 0,
        sched_nice: nice,
        sched_priority: 0,
        sched_runtime: slice,
        sched_deadline: 0,
        sched_period: 0,
    };
    // SAFETY: attr is a valid sched_attr of the size it declares.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, tid, &attr as *const SchedAttr, 0u32) };
    if rc != 0 {
        return Err(last_error(
            &format!("setting a {slice} ns slice with sched_setattr"),
            "custom slices need Linux 6.12 or newer",
        ));
    }
    Ok(())
}

/// The malloc settings of a run. A thread's first malloc or free (its
/// tcache) makes glibc give it an arena of its own, up to eight per CPU:
/// an mmap of 128 MiB, a munmap and an mprotect, each taking the process's
/// mmap lock for writing, and an arena's heap grows by mprotect and is
/// trimmed on free. Every thread exit takes that lock for reading
/// (exit_mm), so in a TCG guest a burst of forked threads queued on it:
/// fork-burst's children, which never sleep, blocked 31 times in one boot
/// of eevdf-6.12 (`D` on the switch, the stack through do_exit and
/// rwsem_down_read_slowpath) and the parent 10 times in mmap and mprotect.
/// So a forked thread allocates nothing (`threads::spawn_task`), a thread
/// at the start gate makes its arena before t0, and a heap grows in steps
/// of 64 MiB and never shrinks during the run.
pub fn malloc_settings() {
    // SAFETY: mallopt takes plain integers; glibc applies them to later
    // allocations only.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
        libc::mallopt(libc::M_TOP_PAD, 64 << 20);
    }
}

/// Timer slack of 1 ns, so timed wakeups are not rounded by the default 50 us.
pub fn set_min_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

pub fn set_thread_name(name: &str) {
    // On the stack: a forked task thread allocates nothing.
    let mut bytes = [0u8; 16];
    for (to, b) in bytes.iter_mut().zip(name.bytes().filter(|&b| b != 0).take(15)) {
        *to = b;
    }
    // SAFETY: a NUL-terminated string of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, bytes.as_ptr() as libc::c_ulong) };
}

pub fn sched_yield() {
    // SAFETY: no arguments.
    unsafe { libc::sched_yield() };
}

/// A pipe carrying 8-byte timestamps, the host's channel.
pub struct Pipe {
    pub read: i32,
    pub write: i32,
}

impl Pipe {
    pub fn new() -> io::Result<Pipe> {
        let mut fds = [0i32; 2];
        // SAFETY: fds has room for two descriptors.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Pipe { read: fds[0], write: fds[1] })
    }

    pub fn send(&self, value: u64) -> bool {
        let buf = value.to_ne_bytes();
        loop {
            // SAFETY: 8 valid bytes; writes of up to PIPE_BUF are atomic.
            let n = unsafe { libc::write(self.write, buf.as_ptr().cast(), 8) };
            if n == 8 {
                return true;
            }
            if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return false;
        }
    }

    pub fn recv(&self) -> Option<u64> {
        let mut buf = [0u8; 8];
        loop {
            // SAFETY: 8 writable bytes.
            let n = unsafe { libc::read(self.read, buf.as_mut_ptr().cast(), 8) };
            if n == 8 {
                return Some(u64::from_ne_bytes(buf));
            }
            if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return None;
        }
    }

    /// Let the writer stop without blocking on a full pipe.
    pub fn make_write_nonblocking(&self) {
        // SAFETY: fcntl on our own descriptor.
        unsafe {
            let flags = libc::fcntl(self.write, libc::F_GETFL);
            libc::fcntl(self.write, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        // SAFETY: closing descriptors we own.
        unsafe {
            libc::close(self.read);
            libc::close(self.write);
        }
    }
}

/// Number from `/proc/self/task/TID/sched`, e.g. "se.nr_migrations"
/// (needs CONFIG_SCHED_DEBUG).
pub fn task_sched_field(tid: i32, name: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/sched")).ok()?;
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().split('.').next().and_then(|x| x.parse().ok()))
}

/// run_delay from `/proc/self/task/TID/schedstat` (CONFIG_SCHED_INFO).
pub fn task_run_delay(tid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

/// (busy, idle) jiffies per CPU from /proc/stat.
pub fn cpu_times() -> Vec<(u64, u64)> {
    let Ok(text) = std::fs::read_to_string("/proc/stat") else { return Vec::new() };
    let mut out = Vec::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let Some(name) = it.next() else { continue };
        if !name.starts_with("cpu") || name == "cpu" {
            continue;
        }
        let Ok(cpu) = name[3..].parse::<usize>() else { continue };
        let v: Vec<u64> = it.filter_map(|x| x.parse().ok()).collect();
        if v.len() < 8 {
            continue;
        }
        // user nice system idle iowait irq softirq steal
        let busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        let idle = v[3] + v[4];
        if out.len() <= cpu {
            out.resize(cpu + 1, (0, 0));
        }
        out[cpu] = (busy, idle);
    }
    out
}

/// CPU time of this whole process (every thread, user and system), ns.
pub fn process_cpu_time() -> Nanos {
    clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// Whether this kernel runs MuQSS (Con Kolivas's -ck scheduler), whose
/// accounting the runner corrects: it alone has both rr_interval and
/// yield_type sysctls.
pub fn is_muqss() -> bool {
    std::path::Path::new("/proc/sys/kernel/rr_interval").exists()
        && std::path::Path::new("/proc/sys/kernel/yield_type").exists()
}

/// USER_HZ, the unit of /proc/stat.
pub fn user_hz() -> u64 {
    // SAFETY: sysconf has no side effects.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 { v as u64 } else { 100 }
}

/// A one-shot start gate on a futex word. `std::sync::Barrier` releases its
/// waiters through one mutex: with a thousand threads on a few CPUs they
/// convoy on it and each blocks and wakes again inside the measured window.
/// Here `open` wakes every waiter and none of them has a lock to take.
pub struct Gate {
    word: std::sync::atomic::AtomicU32,
}

impl Default for Gate {
    fn default() -> Self {
        Gate { word: std::sync::atomic::AtomicU32::new(0) }
    }
}

impl Gate {
    pub fn wait(&self) {
        use std::sync::atomic::Ordering;
        while self.word.load(Ordering::Acquire) == 0 {
            // SAFETY: the word outlives the call; FUTEX_WAIT returns at once
            // (EAGAIN) when the gate opened in between.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    self.word.as_ptr(),
                    libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                    0u32,
                    std::ptr::null::<libc::timespec>(),
                );
            }
        }
    }

    pub fn open(&self) {
        use std::sync::atomic::Ordering;
        self.word.store(1, Ordering::Release);
        // SAFETY: as in wait; waking i32::MAX waiters wakes them all.
        unsafe {
            libc::syscall(libc::SYS_futex, self.word.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, i32::MAX);
        }
    }
}

/// Mappings one task thread costs: its stack and guard page, and the
/// alternate signal stack and its guard page that std gives every thread.
const MAPS_PER_THREAD: u64 = 4;

/// Memory one task thread costs, generously: a 16 KiB kernel stack, its
/// task_struct and page tables, and the few pages of its 128 KiB stack it
/// touches.
const MEMORY_PER_THREAD_KIB: u64 = 64;

fn read_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// How many more threads this process can create, and the limit that
/// sets it, phrased with its fix. Past any of these limits thread creation
/// fails, and past vm.max_map_count std aborts the process in the new
/// thread (it cannot map the thread's signal stack), so a run checks first.
pub fn thread_capacity() -> (u64, String) {
    let mut limits: Vec<(u64, String)> = Vec::new();
    if let Some(max) = read_u64("/proc/sys/vm/max_map_count") {
        let used = std::fs::read_to_string("/proc/self/maps").map_or(0, |m| m.lines().count() as u64);
        limits.push((
            max.saturating_sub(used) / MAPS_PER_THREAD,
            format!(
                "vm.max_map_count is {max} and each thread takes {MAPS_PER_THREAD} mappings \
                 (raise it with sysctl -w vm.max_map_count=N)"
            ),
        ));
    }
    if let Some(max) = read_u64("/proc/sys/kernel/threads-max") {
        // /proc/loadavg's fourth field is "runnable/total" threads.
        let total = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|l| l.split_whitespace().nth(3)?.split('/').nth(1)?.parse::<u64>().ok())
            .unwrap_or(0);
        limits.push((
            max.saturating_sub(total),
            format!("kernel.threads-max is {max} with {total} threads running (raise it with sysctl)"),
        ));
    }
    let available_kib = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
    });
    if let Some(kib) = available_kib {
        limits.push((
            kib / MEMORY_PER_THREAD_KIB,
            format!(
                "{} MiB of memory is available and a thread takes about {MEMORY_PER_THREAD_KIB} KiB \
                 (its kernel stack and task, the pages of its stack it touches)",
                kib / 1024
            ),
        ));
    }
    if let Some((max, current)) = pids_limit() {
        limits.push((
            max.saturating_sub(current),
            format!("this process's cgroup has pids.max {max} with {current} in use (raise pids.max)"),
        ));
    }
    // SAFETY: getrlimit writes the struct.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: as above; root is not bound by RLIMIT_NPROC.
    if unsafe { libc::getrlimit(libc::RLIMIT_NPROC, &mut rl) } == 0
        && rl.rlim_cur != libc::RLIM_INFINITY
        && unsafe { libc::geteuid() } != 0
    {
        let total = std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count() as u64);
        limits.push((
            (rl.rlim_cur as u64).saturating_sub(total),
            format!("RLIMIT_NPROC is {} (ulimit -u); it counts all of this user's threads", rl.rlim_cur),
        ));
    }
    limits.into_iter().min_by_key(|(n, _)| *n).unwrap_or((u64::MAX, "no limit found".into()))
}

/// pids.max and pids.current of this process's pids cgroup (v1 or v2).
fn pids_limit() -> Option<(u64, u64)> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in cgroups.lines() {
        let mut f = line.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        let dir = if controllers.split(',').any(|c| c == "pids") {
            format!("/sys/fs/cgroup/pids{path}")
        } else if controllers.is_empty() {
            format!("/sys/fs/cgroup{path}")
        } else {
            continue;
        };
        if let (Some(max), Some(current)) =
            (read_u64(&format!("{dir}/pids.max")), read_u64(&format!("{dir}/pids.current")))
        {
            return Some((max, current));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_fields_are_numbered_as_proc_5_numbers_them() {
        let stat = ProcStat::read("/proc/self/stat").unwrap();
        assert_eq!(stat.field(1), None, "fields 1 and 2 (the pid and the comm) are not read");
        assert_eq!(stat.field(4), Some(i64::from(std::os::unix::process::parent_id())), "field 4 is the ppid");
        assert!(ProcStat::read("/proc/4000002/stat").is_none(), "no such process");
    }
}
