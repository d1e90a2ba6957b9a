//! What kernel this is: release, HZ, preemption model and the scheduler
//! tunables that can be read, for the host row of a comparison.

use std::io::Read;

pub struct KernelInfo {
    pub release: String,
    pub hz: Option<u32>,
    pub preempt: Option<String>,
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

pub fn read() -> KernelInfo {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    let mut notes = Vec::new();
    let config = kernel_config(&release);
    if config.is_none() {
        notes.push(
            "kernel config not found (/proc/config.gz or /boot/config-*): HZ and preemption model unknown".into(),
        );
    }
    let hz = config.as_deref().and_then(|c| config_value(c, "CONFIG_HZ")).and_then(|v| v.parse().ok());
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
        });
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
        if let Ok(v) = std::fs::read_to_string(format!("/proc/sys/kernel/{name}")) {
            if let Ok(x) = v.trim().parse() {
                tunables.push((name.to_string(), x));
            }
        }
    }
    if !unreadable.is_empty() {
        notes.push(format!("scheduler tunables in debugfs could not be read: {}", unreadable.join(", ")));
    }
    KernelInfo { release, hz, preempt, tunables, notes }
}
