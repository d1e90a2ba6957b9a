//! What kernel this is: release, HZ, preemption model and the scheduler
//! tunables that can be read, for the host row of a comparison.

use schedlab_sim::report::HostInfo;
use std::io::Read;

pub struct KernelInfo {
    pub release: String,
    pub hz: Option<u32>,
    pub preempt: Option<String>,
    pub clocksource: Option<String>,
    pub tunables: Vec<(String, i64)>,
    pub notes: Vec<String>,
}

fn kernel_config(release: &str) -> Option<String> {
    if let Ok(file) = std::fs::File::open("/proc/config.gz") {
        let mut text = String::new();
        if flate2::read::GzDecoder::new(file).read_to_string(&mut text).is_ok() {
            return Some(text);
        }
    }
    std::fs::read_to_string(format!("/boot/config-{release}")).ok()
}

fn config_value<'a>(config: &'a str, key: &str) -> Option<&'a str> {
    config.lines().find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

/// Whether this kernel is built with CONFIG_PREEMPTION: from its config,
/// or else from debugfs's sched/preempt, which only PREEMPT_DYNAMIC builds
/// have (PREEMPT_DYNAMIC selects PREEMPTION, whatever preempt= they boot
/// with). None when neither says. It decides how a CPU going idle balances
/// (detach_tasks stops after one task), which the fair models take as a
/// tunable.
pub fn preemptible_build() -> Option<bool> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()).ok()?;
    match kernel_config(&release) {
        Some(config) => Some(config_value(&config, "CONFIG_PREEMPTION") == Some("y")),
        None => std::path::Path::new("/sys/kernel/debug/sched/preempt").exists().then_some(true),
    }
}

/// HZ from how fast jiffies advance (/proc/timer_list, root only), for a
/// kernel that publishes no config, as the guest kernels of `schedlab vm`:
/// the count over 200 ms, rounded to the nearest HZ Kconfig offers.
fn measured_hz() -> Option<u32> {
    let sample = || -> Option<(u64, std::time::Instant)> {
        let text = std::fs::read_to_string("/proc/timer_list").ok()?;
        let jiffies = text.lines().find_map(|l| l.strip_prefix("jiffies: "))?.trim().parse().ok()?;
        Some((jiffies, std::time::Instant::now()))
    };
    let (j0, t0) = sample()?;
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (j1, t1) = sample()?;
    let rate = j1.checked_sub(j0)? as f64 / (t1 - t0).as_secs_f64();
    [100u32, 250, 300, 1000].into_iter().find(|&hz| (rate - hz as f64).abs() < hz as f64 * 0.1)
}

/// The preemption model from the version string (`uname -v`), which names
/// PREEMPT_RT, PREEMPT_DYNAMIC and PREEMPT but not voluntary or none.
fn preempt_from_version() -> Option<String> {
    let version = std::fs::read_to_string("/proc/sys/kernel/version").ok()?;
    let words: Vec<&str> = version.split_whitespace().collect();
    Some(
        if words.contains(&"PREEMPT_RT") {
            "rt"
        } else if words.contains(&"PREEMPT_DYNAMIC") {
            "dynamic"
        } else if words.contains(&"PREEMPT") {
            "full"
        } else {
            "none or voluntary"
        }
        .to_string(),
    )
}

impl KernelInfo {
    /// This kernel as a report's `host`: where it ran (`machine`), what
    /// traced it and what of cgroups it used, and the notes of the run
    /// (the kernel's own notes are the caller's to add).
    pub fn host_info(&self, machine: &str, tracing: String, cgroups: String, notes: Vec<String>) -> HostInfo {
        HostInfo {
            kernel_release: self.release.clone(),
            machine: machine.into(),
            hz: self.hz,
            preempt: self.preempt.clone(),
            clocksource: self.clocksource.clone(),
            tracing,
            cgroups,
            notes,
            decisions: None,
        }
    }
}

pub fn read() -> KernelInfo {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    let mut notes = Vec::new();
    let config = kernel_config(&release);
    let mut hz = config.as_deref().and_then(|c| config_value(c, "CONFIG_HZ")).and_then(|v| v.parse().ok());
    if config.is_none() {
        hz = measured_hz();
        notes.push(format!(
            "kernel config not found (/proc/config.gz or /boot/config-*): {}",
            if hz.is_some() { "HZ measured from jiffies" } else { "HZ unknown" }
        ));
    }
    let preempt = std::fs::read_to_string("/sys/kernel/debug/sched/preempt")
        .ok()
        .and_then(|t| t.split_whitespace().find(|w| w.starts_with('(')).map(|w| w.trim_matches(['(', ')']).to_string()))
        .or_else(|| {
            let c = config.as_deref()?;
            let model = ["PREEMPT_RT", "PREEMPT_LAZY", "PREEMPT", "PREEMPT_VOLUNTARY", "PREEMPT_NONE"]
                .into_iter()
                .find(|m| config_value(c, &format!("CONFIG_{m}")) == Some("y"))?;
            let dynamic = config_value(c, "CONFIG_PREEMPT_DYNAMIC") == Some("y");
            Some(format!(
                "{}{}",
                model.trim_start_matches("PREEMPT_").to_lowercase().replace("preempt", "full"),
                if dynamic { " (dynamic default)" } else { "" }
            ))
        })
        .or_else(preempt_from_version);
    let mut tunables = Vec::new();
    let mut unreadable = Vec::new();
    for name in [
        "base_slice_ns",
        "migration_cost_ns",
        "nr_migrate",
        "tunable_scaling",
        "latency_ns",
        "min_granularity_ns",
        "wakeup_granularity_ns",
    ] {
        let path = format!("/sys/kernel/debug/sched/{name}");
        match std::fs::read_to_string(&path) {
            Ok(v) => {
                if let Ok(x) = v.trim().parse() {
                    tunables.push((name.to_string(), x));
                }
            }
            Err(e) if std::path::Path::new(&path).exists() => unreadable.push(format!("{name} ({e})")),
            Err(_) => {}
        }
    }
    for name in [
        "sched_latency_ns",
        "sched_min_granularity_ns",
        "sched_wakeup_granularity_ns",
        "sched_rr_timeslice_ms",
        "sched_rt_runtime_us",
    ] {
        if let Ok(v) = std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            && let Ok(x) = v.trim().parse()
        {
            tunables.push((name.to_string(), x));
        }
    }
    if !unreadable.is_empty() {
        notes.push(format!("scheduler tunables in debugfs could not be read: {}", unreadable.join(", ")));
    }
    let clocksource = clocksource();
    if let Some((on, cpus)) = high_res_timers().filter(|(on, cpus)| on < cpus) {
        notes.push(format!(
            "high-resolution timers are active on {on} of {cpus} CPUs: on the others every hrtimer (hrtick, \
             nanosleep) fires at a tick"
        ));
    }
    KernelInfo { release, hz, preempt, clocksource, tunables, notes }
}

/// The clock the kernel keeps time with now (current_clocksource).
pub fn clocksource() -> Option<String> {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// How many CPUs run high-resolution timers, of how many /proc/timer_list
/// lists (root only; None without it or without CONFIG_HIGH_RES_TIMERS,
/// whose `.hres_active` it then does not print). A CPU without them fires
/// every hrtimer (hrtick, nanosleep, the tick itself) at a tick: a kernel
/// switches to them only once it has a clocksource fit for them, which an
/// x86 boot gets when its TSC calibration is refined, about a second in.
pub fn high_res_timers() -> Option<(usize, usize)> {
    parse_hres_active(&std::fs::read_to_string("/proc/timer_list").ok()?)
}

fn parse_hres_active(timer_list: &str) -> Option<(usize, usize)> {
    let flags: Vec<bool> = timer_list
        .lines()
        .filter_map(|l| l.trim().strip_prefix(".hres_active"))
        .map(|rest| rest.trim_start_matches([' ', ':']).trim() == "1")
        .collect();
    (!flags.is_empty()).then(|| (flags.iter().filter(|&&on| on).count(), flags.len()))
}

/// Host CPUs left idle by everything else over `window`, from /proc/stat:
/// what a test that needs free CPUs measures before it asserts, so that it
/// can skip with the figure on a busy machine.
pub fn idle_cpus(window: std::time::Duration) -> f64 {
    let sample = || {
        let (busy, idle) = machine_cpu_ticks();
        (idle, busy + idle)
    };
    let (i0, t0) = sample();
    std::thread::sleep(window);
    let (i1, t1) = sample();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    i1.saturating_sub(i0) as f64 / t1.saturating_sub(t0).max(1) as f64 * cpus
}

/// The whole machine's (busy, idle) time so far, in USER_HZ ticks, from the
/// first line of /proc/stat: idle is idle + iowait, busy user, nice,
/// system, irq, softirq and steal (guest time is inside user already).
pub fn machine_cpu_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let v: Vec<u64> =
        stat.lines().next().unwrap_or_default().split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    (v.iter().take(8).sum::<u64>() - idle, idle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn high_res_timers_are_counted_per_cpu_from_timer_list() {
        let list = "cpu: 0\n clock 0:\n  .hres_active    : 1\ncpu: 1\n  .hres_active    : 0\n";
        assert_eq!(parse_hres_active(list), Some((1, 2)));
        assert_eq!(parse_hres_active("Timer List Version: v0.9\ncpu: 0\n"), None);
    }
}
