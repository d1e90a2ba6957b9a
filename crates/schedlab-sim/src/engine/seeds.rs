//! The run's seeded streams: each task's own random stream, and where in
//! the jiffy the run starts and how late each CPU's tick comes, all drawn
//! from the workload's seed so a run is the same every time.

use crate::policy::TaskId;
use crate::time::Nanos;
use crate::topology::CpuId;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

/// The random stream of task `t`: one per task, so a task draws the same
/// durations whatever order a scheduler runs things in, simulated or real.
pub fn task_rng(seed: u64, t: TaskId) -> Pcg64Mcg {
    Pcg64Mcg::seed_from_u64(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (t as u64 + 1))
}

fn splitmix(seed: u64, a: u64, b: u64) -> u64 {
    // splitmix64 of (seed, a, b): cheap, stateless, deterministic.
    let mut z = seed ^ a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub(super) fn tick_jitter(seed: u64, cpu: CpuId, jiffy: u64, max: Nanos) -> u64 {
    if max == 0 { 0 } else { splitmix(seed, cpu as u64, jiffy) % max }
}

/// Where in the jiffy the workload starts: a real one starts at no
/// particular point of the tick, and its timers (set from its own start)
/// keep that phase to the tick for the whole run, both being hrtimers on
/// one clock. Starting every run on a tick made every 4th 1 ms timer of a
/// HZ=250 run expire on the very nanosecond of a tick.
pub(super) fn tick_phase(seed: u64, tick: u64) -> u64 {
    splitmix(seed, u64::MAX, 0x7469_636b) % tick.max(1)
}
