//! The real side of validate: the guest's costs measured by calibrate in
//! a boot of the kernel, the real runs kept from an earlier validate, and
//! how a boot is judged to have measured its host rather than its kernel
//! (another process took the host's CPUs, a busy vCPU lost ticks).

use super::*;
use anyhow::{Context, Result, bail};
use std::fmt::Write;
use std::path::Path;
use std::time::Duration;

/// The guest's costs, kept at `path` by an earlier validate (or else in
/// its digest, `kept`) or measured now by `schedlab calibrate` in
/// [`CALIBRATION_BOOTS`] boots of `kernel` (each cost their median), as
/// `--cost` pairs, a line saying what they rest on, and the calibration.
pub(super) fn guest_costs(
    path: &Path,
    reuse: bool,
    kept: Option<&serde_json::Value>,
    kernel: &Path,
    vm: &VmArgs,
    label: &str,
) -> Result<Calibrated> {
    let value: serde_json::Value = if reuse && path.is_file() {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{} is not a calibration: remove it", path.display()))?
    } else if let Some(kept) = kept.filter(|k| reuse && !k.is_null()) {
        kept.clone()
    } else {
        eprintln!(
            "schedlab: validate: {label}: measuring the guest's costs (schedlab calibrate in {CALIBRATION_BOOTS} \
             boots)"
        );
        let mut boots = Vec::with_capacity(CALIBRATION_BOOTS);
        let mut failed = 0;
        while boots.len() < CALIBRATION_BOOTS {
            let idle = wait_for_quiet();
            match vm::calibrate(kernel, CPUS, vm, label) {
                Ok(mut v) => {
                    v["host_idle_cpus_before"] = idle.into();
                    boots.push(v);
                }
                // A kernel that hangs or crashes while booting now and then
                // (muqss-5.10) is booted again, as for the real runs.
                Err(e) => match kernel_failure(&e) {
                    Some(why) if failed < MAX_FAILED_CALIBRATION_BOOTS => {
                        failed += 1;
                        eprintln!("schedlab: validate: {label}: {why}; booting it again");
                    }
                    _ => return Err(e),
                },
            }
        }
        let v = median_calibration(boots);
        std::fs::write(path, v.to_string()).with_context(|| format!("cannot write {}", path.display()))?;
        v
    };
    let costs: Vec<(String, u64)> = value["costs"]
        .as_object()
        .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_u64()?))).collect())
        .unwrap_or_default();
    if costs.is_empty() {
        bail!("{}: the guest's calibration names no costs: remove it and run validate again", path.display());
    }
    let us = |ns: u64| format!("{:.1} µs", ns as f64 / 1e3);
    // Each cost with the range of the boots it is the median of.
    let boots = value["boots"].as_array().map(Vec::as_slice).unwrap_or_default();
    let range = |name: &str| -> String {
        let v: Vec<u64> = boots.iter().filter_map(|b| b["costs"][name].as_u64()).collect();
        match (v.iter().min(), v.iter().max()) {
            (Some(lo), Some(hi)) if v.len() > 1 => format!(" ({:.1}-{:.1})", *lo as f64 / 1e3, *hi as f64 / 1e3),
            _ => String::new(),
        }
    };
    let mut notes = costs.iter().map(|(k, v)| format!("{k} {}{}", us(*v), range(k))).collect::<Vec<_>>().join(", ");
    if boots.len() > 1 {
        let _ = write!(notes, " (the median of {} boots, their range in brackets)", boots.len());
    }
    let tick = &value["tick_lateness"];
    match (tick["median_ns"].as_u64(), tick["max_ns"].as_u64(), tick["samples"].as_u64()) {
        (Some(m), Some(x), Some(n)) => {
            let _ = write!(notes, "; the tick came {} late at the median, {} at most ({n} ticks)", us(m), us(x));
        }
        _ => {
            let why = tick["not_measured"].as_str().unwrap_or("not recorded");
            let _ = write!(notes, "; tick lateness not measured ({why}): tick_jitter at its default");
        }
    }
    let gap = &value["tick_gap"];
    if let (Some(m), Some(n)) = (gap["median_ns"].as_u64(), gap["samples"].as_u64()) {
        let _ = write!(notes, "; the CPUs' ticks of one jiffy came {} apart at the median ({n} ticks)", us(m));
    }
    if let Some(l) = value["timer_late_ns"].as_u64() {
        let _ = write!(notes, "; a timer woke its thread {} late at the median", us(l));
    }
    if let Some(o) = value["other_load_pct"].as_f64() {
        let _ = write!(notes, "; other processes took {o:.1}% of the guest's CPUs meanwhile");
    }
    Ok(Calibrated { costs, notes, calibration: value })
}

/// The guest's costs as `--cost` pairs, the line that says what they rest
/// on, and the calibration they were read from.
pub(super) struct Calibrated {
    pub(super) costs: Vec<(String, u64)>,
    pub(super) notes: String,
    pub(super) calibration: serde_json::Value,
}

/// Calibration boots of each kernel. One boot's costs are not the
/// kernel's: under TCG they moved by a factor of 1.5-2 between two boots of
/// the same kernel (cfs-6.1's context_switch 12.3 and 22.8 us, tt-6.1's
/// idle_exit 51 and 2 us), more than the tolerances they decide on.
const CALIBRATION_BOOTS: usize = 3;
/// Boots of a kernel that failed while booting, before validate gives up
/// on its calibration.
const MAX_FAILED_CALIBRATION_BOOTS: usize = 3;

/// One calibration from several boots: each cost the median of the boots'
/// (the middle one of three), the other figures those of the boot whose
/// idle wakeup is the median, and every boot kept under `boots`.
fn median_calibration(boots: Vec<serde_json::Value>) -> serde_json::Value {
    let middle = |mut v: Vec<u64>| -> u64 {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let mut names: Vec<String> =
        boots.iter().filter_map(|b| b["costs"].as_object()).flat_map(|m| m.keys().cloned()).collect();
    names.sort();
    names.dedup();
    let mut costs = serde_json::Map::new();
    for name in names {
        let values: Vec<u64> = boots.iter().filter_map(|b| b["costs"][&name].as_u64()).collect();
        // A cost only some boots measured (the tick, where it kept a grid)
        // is the median of those.
        if !values.is_empty() {
            costs.insert(name, middle(values).into());
        }
    }
    let wakeup = |b: &serde_json::Value| b["idle_wakeup_ns"].as_u64().unwrap_or(0);
    let target = middle(boots.iter().map(wakeup).collect());
    let mut v = boots.iter().find(|b| wakeup(b) == target).cloned().unwrap_or_default();
    v["costs"] = costs.into();
    v["boots"] = boots.into();
    v
}

/// What went wrong when `e` is a guest kernel that crashed or hung while
/// booting ([`schedlab_vm::VmError::kernel_failure`]).
pub(super) fn kernel_failure(e: &anyhow::Error) -> Option<String> {
    e.chain().find_map(|c| c.downcast_ref::<schedlab_vm::VmError>())?.kernel_failure()
}

pub(super) fn append_line(path: &Path, line: &str) -> Result<()> {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    writeln!(f, "{line}").with_context(|| format!("cannot write {}", path.display()))
}

/// The real run kept at `path` by an earlier validate, as the judge reads
/// it, if there is one of this length ([`RunDigest::is_of_length`]).
pub(super) fn kept_run(path: &Path, exp: &Experiment, duration: u64) -> Result<Option<RunDigest>> {
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let r: Report =
        serde_json::from_str(&text).with_context(|| format!("{} is not a report: remove it", path.display()))?;
    Ok(Some(RunDigest::of(exp, &r)).filter(|d| d.is_of_length(duration)))
}

/// The note a kept real run carries: the host CPUs idle before it.
pub(super) const IDLE_NOTE: &str = "host CPUs idle before the run (schedlab validate): ";

/// Boots of one run that may fail or be disturbed in a row before validate
/// gives up: MuQSS 0.205 booted with rqshare=mc hangs before its init in
/// about one boot of six here (3 of 16; none of 8 without it), so three
/// in a row ended about one full validate in four on MuQSS's 45 runs.
pub(super) const MAX_BOOTS: u32 = 5;

/// Host CPUs other processes may take while a guest runs: its two vCPUs
/// need the host's two CPUs to themselves for the tick to come on time.
pub(super) const HOST_OTHERS_LIMIT: f64 = 0.25;

/// Ticks a busy guest CPU must have taken: quiet boots of every kernel
/// take 98.7-100% (MuQSS's halved /proc/stat 104%); a host that ran two
/// busy loops beside a guest of pds-6.12 left it 93.7%, and 150 switches/s
/// where the kernel makes 230.
pub(super) const TICKS_DELIVERED_MIN: f64 = schedlab_host::TICKS_DELIVERED_MIN_PCT;

/// Host CPUs other processes must have taken for late guest timers to be
/// put down to the host. On a quiet host (0.00-0.03 CPUs of others) a
/// kernel can make its own timers late: muqss-5.10 with 1024 spinners
/// fired them 274-971 us late at the 90th percentile in five boots, where
/// eevdf-6.12 and pds-6.12 stay at 134-183 us; booting again cannot change
/// that, and validate stopped there. The host bursts that do it average
/// 0.18 CPUs (two processes at 10% duty).
pub(super) const TIMER_LATE_OTHERS_MIN: f64 = 0.05;

/// Why a guest's run measured its host rather than its kernel, if it did:
/// other processes took the host's CPUs while it ran, its timers fired
/// late while others took at least [`TIMER_LATE_OTHERS_MIN`] host CPUs (a
/// vCPU its host ran late: even 0.18 host CPUs of others, in short
/// bursts, do that; see [`schedlab_host::TIMER_LATE_P90_LIMIT_US`]), or a
/// busy vCPU lost ticks (checked where the guest has no more vCPUs than the host has
/// CPUs: beyond that, vCPUs share CPUs and lose ticks by design, which the
/// page states).
pub(super) fn disturbance(r: &Report, vcpus: u32) -> Option<String> {
    let others = r.extra_figure(vm::HOST_OTHERS);
    if let Some(others) = others.filter(|&o| o >= HOST_OTHERS_LIMIT) {
        return Some(format!("other processes took {others:.2} host CPUs while the guest ran"));
    }
    // Without the host's figure the lateness can only be put down to it.
    if let Some(p90) =
        r.extra_figure(schedlab_host::TIMER_LATE_P90).filter(|&l| l > schedlab_host::TIMER_LATE_P90_LIMIT_US)
        && others.is_none_or(|o| o >= TIMER_LATE_OTHERS_MIN)
    {
        let host = match others {
            Some(o) => format!("while other processes took {o:.2} host CPUs"),
            None => "(the host's other processes were not measured)".to_string(),
        };
        return Some(format!("the guest's timers fired {p90:.0} us late at the 90th percentile {host}"));
    }
    let host_cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if vcpus as usize <= host_cpus
        && let Some(pct) = r.extra_figure(schedlab_host::TICKS_DELIVERED).filter(|&p| p < TICKS_DELIVERED_MIN)
    {
        return Some(format!("the guest's busy CPUs took {pct:.1}% of their timer ticks"));
    }
    None
}

/// Waits (up to 30 s) for 1.5 host CPUs to be idle, as the two vCPUs need,
/// and returns the idle CPUs measured last.
pub(super) fn wait_for_quiet() -> f64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let idle = schedlab_host::info::idle_cpus(Duration::from_millis(300));
        if idle >= 1.5 || Instant::now() >= deadline {
            if idle < 1.5 {
                eprintln!("schedlab: validate: only {idle:.1} host CPUs idle: the real runs may lose ticks");
            }
            return idle;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calibration_of_several_boots_takes_each_cost_from_the_middle() {
        let boot = |cs: u64, idle: u64, tick: Option<u64>, wakeup: u64| {
            let mut costs = serde_json::json!({"context_switch": cs, "idle_exit": idle});
            if let Some(t) = tick {
                costs["tick_jitter"] = t.into();
            }
            serde_json::json!({"costs": costs, "idle_wakeup_ns": wakeup, "timer_late_ns": wakeup + 1})
        };
        let v = median_calibration(vec![
            boot(12_300, 51_000, None, 70_000),
            boot(22_800, 2_000, Some(90_000), 24_000),
            boot(15_400, 61_000, Some(50_000), 80_000),
        ]);
        assert_eq!(v["costs"]["context_switch"], 15_400);
        assert_eq!(v["costs"]["idle_exit"], 51_000);
        // Two boots measured the tick: the upper of their two.
        assert_eq!(v["costs"]["tick_jitter"], 90_000);
        // The rest is the boot whose idle wakeup is the middle one.
        assert_eq!(v["timer_late_ns"], 70_001);
        assert_eq!(v["boots"].as_array().map(Vec::len), Some(3));
    }
}
