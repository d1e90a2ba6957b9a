//! MuQSS's per-CPU niffies, read in a running MuQSS kernel (5.10-ck1,
//! ../shared/kernels/patches/muqss-5.10.patch): each CPU stamps deadlines
//! on its own rq->niffies, which update_clocks advances per CPU and which
//! two CPUs bring together only where one holds both runqueue locks, so the
//! CPUs' deadline clocks stand apart by what each has gained. How far apart
//! they stand when a workload starts decides which of its tasks win the
//! deadline comparisons across CPUs (schedlab-policies' muqss.rs).
//!
//! /proc has no file for niffies, but a task's priority there (field 18)
//! is task_prio(): 1 + NS_TO_MS(deadline - task_rq(p)->niffies) x 40 /
//! NS_TO_MS(longest_deadline_diff()), the nice 19 deadline's offset (238
//! of MuQSS's 2^20 ns "ms" at rr_interval 6: one step per 6.24 ms), left at
//! 1 below 0 or past 80 steps. A nice 19 thread on CPU a whose priority
//! rises has just had a deadline stamped there (its slice ran out); moved
//! to CPU b and read at once, its priority is off by the two CPUs' niffies
//! apart. The same the other way round cancels what it ran in between and
//! the staleness of the reading CPU's niffies: gap(b - a) = (p(b->a) -
//! p(a->b)) x step / 2, to about 3 ms.
//!
//! A move between CPUs that do not share a runqueue (rqshare=none) locks
//! both and synchronises their niffies: there the reading erases what it
//! reads. schedlab validate boots MuQSS with rqshare=mc, one runqueue for
//! the guest's CPUs, where nothing synchronises them.

use crate::sys;
use std::time::{Duration, Instant};

/// Readings each way per CPU; their median is kept.
const READINGS: usize = 3;

/// Whether this kernel is MuQSS (or BFS): the sysctls only -ck kernels have.
fn muqss_kernel() -> bool {
    ["rr_interval", "iso_cpu", "interactive"].iter().all(|f| std::path::Path::new("/proc/sys/kernel").join(f).exists())
}

/// One step of task_prio(), in ns: NS_TO_MS(longest_deadline_diff()) / 40
/// of MuQSS's 2^20 ns "ms", from rr_interval (ms) as the kernel computes it.
fn prio_step_ns(rr_interval: u64) -> f64 {
    let mut ratio = 128u64;
    for _ in 0..39 {
        ratio = ratio * 11 / 10;
    }
    let longest_ms = (ratio * rr_interval * ((1 << 20) / 128)) >> 20;
    longest_ms as f64 * (1u64 << 20) as f64 / 40.0
}

/// How far each CPU's niffies stand ahead of the first one's (ns; the first
/// is 0), read by a nice 19 thread moved between them; None where the
/// kernel is not MuQSS, or a reading was out of task_prio()'s range (over
/// about 250 ms apart) or did not come.
pub(crate) fn gaps(cpus: &[usize]) -> Option<Vec<f64>> {
    if cpus.len() < 2 || !muqss_kernel() {
        return None;
    }
    let rr_interval: u64 = std::fs::read_to_string("/proc/sys/kernel/rr_interval").ok()?.trim().parse().ok()?;
    let step = prio_step_ns(rr_interval);
    let cpus = cpus.to_vec();
    // A thread of its own: the controller runs SCHED_FIFO, and the reading
    // needs a nice 19 SCHED_OTHER thread that may move.
    std::thread::spawn(move || {
        let tid = sys::gettid();
        sys::set_policy(tid, libc::SCHED_OTHER, 0, "SCHED_OTHER").ok()?;
        sys::set_nice(tid, 19).ok()?;
        let base = cpus[0];
        let mut out = vec![0.0];
        for &c in &cpus[1..] {
            let mut gaps = Vec::with_capacity(READINGS);
            for _ in 0..READINGS {
                let from_base = stamped_then_read(tid, base, c)?;
                let from_c = stamped_then_read(tid, c, base)?;
                gaps.push((from_c - from_base) as f64 * step / 2.0);
            }
            gaps.sort_by(f64::total_cmp);
            out.push(gaps[READINGS / 2]);
        }
        Some(out)
    })
    .join()
    .ok()?
}

/// The calling thread's priority read on CPU `to` just after a deadline
/// was stamped for it on CPU `from`; None out of range or after 100 ms.
fn stamped_then_read(tid: i32, from: usize, to: usize) -> Option<i64> {
    move_to(tid, from)?;
    let deadline = Instant::now() + Duration::from_millis(100);
    let mut last = sys::stat_priority()?;
    loop {
        let p = sys::stat_priority()?;
        if p > last {
            break;
        }
        last = p;
        if Instant::now() > deadline {
            return None;
        }
    }
    move_to(tid, to)?;
    let p = sys::stat_priority()?;
    // 1 is task_prio()'s value out of range (and a nice 19 task's just
    // stamped deadline is 40 steps ahead on its own CPU).
    (p > 1).then_some(p)
}

/// Pins the thread to `cpu` and spins until it runs there.
fn move_to(tid: i32, cpu: usize) -> Option<()> {
    sys::set_affinity(tid, &[cpu]).ok()?;
    let deadline = Instant::now() + Duration::from_millis(100);
    while sys::current_cpu() != Some(cpu) {
        if Instant::now() > deadline {
            return None;
        }
        std::hint::spin_loop();
    }
    Some(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_step_of_task_prio_is_a_fortieth_of_the_nice_19_deadline() {
        // rr_interval 6: prio_ratios[39] = 5089, 5089 x 6 x 8192 ns =
        // 250.1 ms, 238 "ms" of 2^20 ns: 5.95 of them, 6.24 ms, a step.
        let step = super::prio_step_ns(6);
        assert!((step - 6_239_027.2).abs() < 1.0, "{step}");
    }
}
