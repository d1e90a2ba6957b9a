//! The scheduling policies schedlab simulates, each behind the engine's
//! [`Policy`] interface, and the registry that builds them by name.

pub mod fair;
pub mod pelt;
pub mod smp;
pub mod weights;

use schedlab_sim::{Policy, Workload};

/// A policy schedlab can build, with the source version it follows.
pub struct PolicyInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub source: &'static str,
}

pub const POLICIES: &[PolicyInfo] = &[
    PolicyInfo {
        name: "cfs",
        summary: "Completely Fair Scheduler: vruntime order, sched_latency/min_granularity slices",
        source: "Linux 5.15-6.5 kernel/sched/fair.c",
    },
    PolicyInfo {
        name: "eevdf",
        summary: "Earliest Eligible Virtual Deadline First: lag, eligibility, base_slice deadlines",
        source: "Linux 6.12-6.18 kernel/sched/fair.c, features.h",
    },
];

/// Builds the policy `name` for a workload (its CPUs, groups, tunables).
pub fn build(name: &str, w: &Workload) -> Result<Box<dyn Policy>, String> {
    match name {
        "cfs" => Ok(Box::new(fair::Fair::new(fair::Variant::Cfs, w)?)),
        "eevdf" => Ok(Box::new(fair::Fair::new(fair::Variant::Eevdf, w)?)),
        other => Err(format!(
            "unknown scheduler '{other}': choose one of {}",
            POLICIES.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
        )),
    }
}
