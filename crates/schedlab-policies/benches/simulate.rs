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

fn mixed_64(c: &mut Criterion) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/mixed-64.toml");
    let text = std::fs::read_to_string(path).expect("scenarios/mixed-64.toml");
    let ov = Overrides { duration: Some(100_000_000), ..Overrides::default() };
    let w = Workload::from_toml(&text, path, &ov).expect("mixed-64 parses");
    let mut g = c.benchmark_group("mixed-64 (100 ms simulated)");
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    for p in schedlab_policies::POLICIES {
        g.throughput(Throughput::Elements(events(&w, p.name)));
        g.bench_function(p.name, |b| b.iter(|| events(&w, p.name)));
    }
    g.finish();
}

fn lone_spinner(c: &mut Criterion) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/thread-test.toml");
    let text = std::fs::read_to_string(path).expect("scenarios/thread-test.toml");
    let mut ov = Overrides { duration: Some(60_000_000_000), ..Overrides::default() };
    ov.params.insert("threads".into(), 1);
    let w = Workload::from_toml(&text, path, &ov).expect("thread-test parses");
    let mut g = c.benchmark_group("a lone spinner (60 s simulated)");
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    for p in schedlab_policies::POLICIES {
        g.throughput(Throughput::Elements(events(&w, p.name)));
        g.bench_function(p.name, |b| b.iter(|| events(&w, p.name)));
    }
    g.finish();
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
