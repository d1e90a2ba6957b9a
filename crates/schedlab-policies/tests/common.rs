//! Helpers shared by the policy tests.
#![allow(dead_code)]

use schedlab_policies::fair::{Fair, Variant};
use schedlab_sim::{Engine, EngineOptions, Overrides, Report, Workload};

pub fn workload(text: &str) -> Workload {
    Workload::from_toml(text, "test.toml", &Overrides::default()).unwrap_or_else(|e| panic!("{e}"))
}

pub fn scenario(name: &str, ov: Overrides) -> Workload {
    let path = format!("{}/../../scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    Workload::from_toml(&text, &path, &ov).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs with the engine's and the policy's invariants checked after every
/// event.
pub fn run_checked(w: &Workload, sched: &str) -> Report {
    let policy: Box<dyn schedlab_sim::Policy> = match sched {
        "eevdf" => Box::new(Fair::new(Variant::Eevdf, w).unwrap().with_verification()),
        other => schedlab_policies::build(other, w).unwrap(),
    };
    let opts = EngineOptions { check_invariants: true, ..EngineOptions::default() };
    Engine::new(w, policy, opts).run().unwrap_or_else(|e| panic!("{sched}: {e}"))
}

pub fn run(w: &Workload, sched: &str) -> Report {
    schedlab_policies::simulate(w, sched).unwrap_or_else(|e| panic!("{e}"))
}

/// A policy-specific figure of the report (Policy::extra_metrics).
pub fn extra(r: &Report, name: &str) -> Option<f64> {
    r.extra_figure(name)
}

pub fn share_of(r: &Report, spec_name: &str) -> f64 {
    r.specs.iter().find(|s| s.name == spec_name).unwrap_or_else(|| panic!("no spec {spec_name}")).cpu_share_avg_pct
}

/// busy + idle = CPUs x time; task time + switch overhead = busy time;
/// every migration is some task's.
pub fn assert_conservation(r: &Report) {
    let task_migrations: u64 = r.tasks.iter().map(|t| t.migrations).sum();
    assert_eq!(task_migrations, r.totals.migrations, "{}: per-task migrations != total", r.scheduler);
    let total = r.duration_ns * r.cpus as u64;
    assert_eq!(r.totals.busy_ns + r.totals.idle_ns, total, "{}: busy + idle != CPUs x time", r.scheduler);
    let task_time: u64 = r.tasks.iter().map(|t| t.cpu_time_ns).sum();
    let overhead: u64 = r.per_cpu.iter().map(|c| c.switch_overhead_ns).sum();
    assert_eq!(task_time + overhead, r.totals.busy_ns, "{}: task time + overhead != busy", r.scheduler);
    for c in &r.per_cpu {
        assert_eq!(c.busy_ns + c.idle_ns, r.duration_ns, "{}: CPU {} time does not add up", r.scheduler, c.cpu);
    }
}
