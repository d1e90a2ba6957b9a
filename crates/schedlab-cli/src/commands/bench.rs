//! `schedlab bench`: simulation speed (events per second, nanoseconds per
//! event, simulated seconds per wall second) and memory (peak bytes per
//! task) for every policy, on the standard workloads and on a task-count
//! sweep that shows how the cost per event grows, plus the speed-up of
//! `compare` from one thread to all.

use crate::args::{Common, common};
use crate::simulate::{load_workload, simulate};
use anyhow::{Result, anyhow};
use rayon::prelude::*;
use schedlab_sim::Workload;
use schedlab_sim::workload::scaling_workload;
use std::time::Instant;

#[global_allocator]
static ALLOCATOR: schedlab_sim::memory::CountingAllocator = schedlab_sim::memory::CountingAllocator;

struct Measured {
    events: u64,
    wall: f64,
    sim_s: f64,
    bytes_per_task: f64,
}

fn measure(w: &Workload, sched: &str, tasks: usize) -> Result<Measured> {
    let start = Instant::now();
    let (r, peak) = schedlab_sim::memory::peak_during(|| simulate(w, sched));
    let r = r?;
    let wall = start.elapsed().as_secs_f64();
    Ok(Measured {
        events: r.totals.events,
        wall,
        sim_s: r.duration_ns as f64 / 1e9,
        bytes_per_task: peak as f64 / tasks.max(1) as f64,
    })
}

fn row(label: &str, sched: &str, m: &Measured) -> String {
    format!(
        "{:<34} {:<7} {:>10} {:>12.0} {:>9.0} {:>10.2} {:>10.0}",
        label,
        sched,
        m.events,
        m.events as f64 / m.wall,
        m.wall * 1e9 / m.events.max(1) as f64,
        m.sim_s / m.wall,
        m.bytes_per_task
    )
}

pub fn run(quick: bool) -> Result<()> {
    let scale = if quick { 5 } else { 1 };
    println!(
        "{:<34} {:<7} {:>10} {:>12} {:>9} {:>10} {:>10}",
        "workload", "sched", "events", "events/s", "ns/event", "sim/wall", "bytes/task"
    );
    let cases: Vec<(&str, Common)> = vec![
        ("thread-test N=4096, 1 CPU busy", common("thread-test", &[("threads", 4096)], 2_000_000_000 / scale)),
        ("jitter-under-load, 8 CPUs", common("jitter-under-load", &[], 2_000_000_000 / scale)),
        ("mixed-64: 64 CPUs, 2,000 tasks", common("mixed-64", &[], 1_000_000_000 / scale)),
        // One busy CPU for an hour: 900,000 ticks and little else, the
        // cost of a tick when nothing else is pending (a long lone run, a
        // trace with hours between two events).
        ("a lone spinner, 1 h", common("thread-test", &[("threads", 1)], 3_600_000_000_000 / scale)),
    ];
    for (label, c) in &cases {
        let w = load_workload(c)?;
        let tasks = w.tasks.iter().map(|t| t.count as usize).sum();
        for p in schedlab_policies::all() {
            println!("{}", row(label, p.name, &measure(&w, p.name, tasks)?));
        }
    }
    println!();
    println!("cost per event as tasks grow (256 CPUs, ~25 CPUs of demand; every task forks at 0 s):");
    println!(
        "{:<34} {:<7} {:>10} {:>12} {:>9} {:>10} {:>10} {:>12}",
        "workload", "sched", "events", "events/s", "ns/event", "sim/wall", "bytes/task", "steady ns/ev"
    );
    let counts: &[u32] = if quick { &[100, 1_000, 10_000] } else { &[100, 1_000, 10_000, 100_000] };
    let half = 500_000_000 / scale;
    for p in schedlab_policies::all() {
        let mut steady_at = Vec::new();
        for &n in counts {
            // The run from 0 to 2d, and its second half alone as the
            // difference from a run to d: the forks of the first
            // moments (each visits every CPU, as sched_balance_find_dst_group
            // does) and the report are then left out of the steady cost.
            let short = measure(&scaling_workload(n, half).map_err(|e| anyhow!("{e}"))?, p.name, n as usize)?;
            let long = measure(&scaling_workload(n, 2 * half).map_err(|e| anyhow!("{e}"))?, p.name, n as usize)?;
            // Wall-clock noise can exceed a short second half: no figure then.
            let extra_events = long.events.saturating_sub(short.events);
            let steady = (long.wall > short.wall && extra_events > 0)
                .then(|| (long.wall - short.wall) * 1e9 / extra_events as f64);
            let shown = steady.map_or_else(|| "-".to_string(), |s| format!("{s:.0}"));
            println!("{} {shown:>12}", row(&format!("scaling: {n} tasks"), p.name, &long));
            steady_at.push((n, long.wall * 1e9 / long.events.max(1) as f64, steady));
        }
        if let (Some(&(_, total_1k, steady_1k)), Some(&(last, total, steady))) =
            (steady_at.iter().find(|s| s.0 == 1_000), steady_at.last())
        {
            let steady_growth = match (steady, steady_1k) {
                (Some(s), Some(s1k)) => format!("x{:.2}", s / s1k),
                _ => "not measurable (noise)".to_string(),
            };
            println!(
                "{}: cost per event from 1,000 to {last} tasks x{:.2} overall, {steady_growth} in the steady state",
                p.name,
                total / total_1k,
            );
        }
    }
    println!();
    for p in schedlab_policies::POLICIES {
        if let Some(why) = p.linear_pick {
            println!("{}: O(n) per pick by design: {why}", p.name);
        }
    }
    println!();
    compare_speedup(&load_workload(&cases[2].1)?)
}

/// `compare` runs the policies in parallel: time all of them on one
/// thread and on every core.
fn compare_speedup(w: &Workload) -> Result<()> {
    let all = |threads: usize| -> Result<f64> {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
        let start = Instant::now();
        pool.install(|| {
            schedlab_policies::all().par_iter().map(|p| simulate(w, p.name).map(|_| ())).collect::<Result<Vec<_>>>()
        })?;
        Ok(start.elapsed().as_secs_f64())
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let one = all(1)?;
    let many = all(cores)?;
    println!(
        "compare mixed-64, all {} policies: {one:.2} s on 1 thread, {many:.2} s on {cores} threads (x{:.2})",
        schedlab_policies::all().len(),
        one / many
    );
    Ok(())
}
