//! Criterion benchmarks of whole simulations: simulated events per second
//! for every policy on the 64-CPU mixed workload and on a lone spinner
//! (the cost of a tick with nothing else pending), and for cfs and eevdf
//! across task counts on 256 CPUs (the cost per event as queues grow).
//! `schedlab bench` prints the same figures with memory per task.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use schedlab_sim::workload::scaling_workload;
use schedlab_sim::{Overrides, Workload};
use std::time::Duration;

fn events(w: &Workload, sched: &str) -> u64 {
    schedlab_policies::simulate(w, sched).expect("simulation runs").totals.events
}

/// A built-in scenario with `ov`, as every policy simulates it.
fn every_policy(c: &mut Criterion, group: &str, scenario: &str, ov: &Overrides) {
    let path = format!("{}/../../scenarios/{scenario}.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("a built-in scenario");
    let w = Workload::from_toml(&text, &path, ov).expect("the scenario parses");
    let mut g = c.benchmark_group(group);
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    for p in schedlab_policies::POLICIES {
        g.throughput(Throughput::Elements(events(&w, p.name)));
        g.bench_function(p.name, |b| b.iter(|| events(&w, p.name)));
    }
    g.finish();
}

fn mixed_64(c: &mut Criterion) {
    let ov = Overrides { duration: Some(100_000_000), ..Overrides::default() };
    every_policy(c, "mixed-64 (100 ms simulated)", "mixed-64", &ov);
}

fn lone_spinner(c: &mut Criterion) {
    let mut ov = Overrides { duration: Some(60_000_000_000), ..Overrides::default() };
    ov.params.insert("threads".into(), 1);
    every_policy(c, "a lone spinner (60 s simulated)", "thread-test", &ov);
}

fn scaling(c: &mut Criterion) {
    let mut g = c.benchmark_group("256 CPUs, tasks (200 ms simulated)");
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    for n in [1_000u32, 10_000, 100_000] {
        let w = scaling_workload(n, 200_000_000).expect("the scaling workload parses");
        for sched in ["cfs", "eevdf"] {
            g.throughput(Throughput::Elements(events(&w, sched)));
            g.bench_with_input(BenchmarkId::new(sched, n), &w, |b, w| b.iter(|| events(w, sched)));
        }
    }
    g.finish();
}

criterion_group!(benches, mixed_64, lone_spinner, scaling);
criterion_main!(benches);
