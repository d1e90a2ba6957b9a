//! BORE, the Burst-Oriented Response Enhancer, as in Masahito Suzuki's
//! 5.9.6 for Linux 6.12 (firelzrd/bore-scheduler,
//! patches/stable/linux-6.12-bore/0001-linux6.12.y-bore5.9.6.patch), on top
//! of [`super::Fair`]'s EEVDF.
//!
//! A task's burst time is the CPU time since it last slept or yielded. Its
//! burst penalty is (log2plus1(burst) - sched_burst_penalty_offset), in 8.8
//! fixed point, times sched_burst_penalty_scale / 65536, capped at 156; the
//! burst score (penalty / 4, 0..39) is added to the task's nice level for the
//! weight EEVDF uses, so a task that runs long without sleeping loses weight
//! and deadline while one that sleeps often keeps nice 0's. When a task
//! sleeps, the burst penalty it reached is folded into prev_burst_penalty
//! (halved on the way up with sched_burst_smoothness_long = 1, taken at once
//! on the way down with sched_burst_smoothness_short = 0). A forked task
//! inherits its parent's children's average penalty (at least the parent's
//! own), cached for sched_burst_cache_lifetime.
//!
//! BORE also changes EEVDF: base_slice_ns is the multiple of the tick at or
//! above min_base_slice_ns (2 ms), without CPU scaling; the lag clamp is
//! halved; RUN_TO_PARITY is dropped when more than
//! sched_burst_parity_threshold entities are queued; a waking or new task
//! gets half a slice to its deadline (sched_deadline_boost_mask); and a
//! yielding task restarts its burst.
//!
//! Left out: the topological ("atavistic") walk up the process tree and the
//! thread-group cache, since schedlab tasks have parents but no thread
//! groups: inheritance reads the direct parent's children.

use schedlab_sim::Nanos;
use std::collections::BTreeMap;

pub const MAX_BURST_PENALTY: u32 = 39 << 2;

#[derive(Clone, Debug)]
pub struct BoreTunables {
    pub sched_bore: bool,
    pub smoothness_long: u32,
    pub smoothness_short: u32,
    pub parity_threshold: u32,
    pub penalty_offset: u32,
    pub penalty_scale: u32,
    pub cache_lifetime: Nanos,
    pub min_base_slice_ns: u64,
}

impl BoreTunables {
    /// Takes BORE's names out of `set`, leaving EEVDF's.
    pub fn take(set: &mut BTreeMap<String, i64>) -> Result<BoreTunables, String> {
        let mut t = BoreTunables {
            sched_bore: true,
            smoothness_long: 1,
            smoothness_short: 0,
            parity_threshold: 2,
            penalty_offset: 24,
            penalty_scale: 1280,
            cache_lifetime: 75_000_000,
            min_base_slice_ns: 2_000_000,
        };
        let mut get = |name: &str, min: i64, max: i64| -> Result<Option<i64>, String> {
            match set.remove(name) {
                None => Ok(None),
                Some(v) if v < min || v > max => {
                    Err(format!("{name} = {v} is out of range for bore: use {min}..={max}"))
                }
                Some(v) => Ok(Some(v)),
            }
        };
        if let Some(v) = get("sched_bore", 0, 1)? {
            t.sched_bore = v != 0;
        }
        if let Some(v) = get("sched_burst_smoothness_long", 0, 1)? {
            t.smoothness_long = v as u32;
        }
        if let Some(v) = get("sched_burst_smoothness_short", 0, 1)? {
            t.smoothness_short = v as u32;
        }
        if let Some(v) = get("sched_burst_parity_threshold", 0, 255)? {
            t.parity_threshold = v as u32;
        }
        if let Some(v) = get("sched_burst_penalty_offset", 0, 64)? {
            t.penalty_offset = v as u32;
        }
        if let Some(v) = get("sched_burst_penalty_scale", 0, 4095)? {
            t.penalty_scale = v as u32;
        }
        if let Some(v) = get("sched_burst_cache_lifetime", 0, u32::MAX as i64)? {
            t.cache_lifetime = v as Nanos;
        }
        if let Some(v) = get("min_base_slice_ns", 1, 1_000_000_000)? {
            t.min_base_slice_ns = v as u64;
        }
        if set.contains_key("base_slice_ns") {
            return Err("base_slice_ns is read-only under bore: set min_base_slice_ns (rounded up to a tick)".into());
        }
        Ok(t)
    }

    /// base_slice_ns = the first multiple of the tick at or above min_base_slice_ns.
    pub fn base_slice(&self, tick_ns: u64) -> u64 {
        tick_ns * self.min_base_slice_ns.div_ceil(tick_ns).max(1)
    }

    pub fn list(&self) -> Vec<schedlab_sim::Tunable> {
        use schedlab_sim::Tunable;
        vec![
            Tunable {
                name: "sched_bore",
                value: self.sched_bore as i64,
                help: "1: burst penalties on; 0: plain EEVDF weights",
            },
            Tunable {
                name: "sched_burst_penalty_offset",
                value: self.penalty_offset as i64,
                help: "log2 of the burst (ns) below which no penalty applies (24: ~16.8 ms)",
            },
            Tunable {
                name: "sched_burst_penalty_scale",
                value: self.penalty_scale as i64,
                help: "penalty per log2 step beyond the offset, /65536 of a quarter nice level",
            },
            Tunable {
                name: "sched_burst_smoothness_long",
                value: self.smoothness_long as i64,
                help: "shift smoothing a rising penalty across bursts",
            },
            Tunable {
                name: "sched_burst_smoothness_short",
                value: self.smoothness_short as i64,
                help: "shift smoothing a falling penalty across bursts",
            },
            Tunable {
                name: "sched_burst_parity_threshold",
                value: self.parity_threshold as i64,
                help: "RUN_TO_PARITY only while at most this many entities are queued",
            },
            Tunable {
                name: "sched_burst_cache_lifetime",
                value: self.cache_lifetime as i64,
                help: "ns a parent's children-penalty average is reused for forks",
            },
            Tunable {
                name: "min_base_slice_ns",
                value: self.min_base_slice_ns as i64,
                help: "base_slice_ns is this rounded up to a whole tick",
            },
        ]
    }
}

/// log2plus1_u64_u32f8: fls64(v) in the high bits, the next 8 bits below
/// the leading one as the fraction.
pub fn log2plus1_u32f8(v: u64) -> u32 {
    if v == 0 {
        return 0;
    }
    let integral = 64 - v.leading_zeros();
    let fractional = ((v << (64 - integral)) >> 55) as u8;
    (integral << 8) | fractional as u32
}

pub fn calc_burst_penalty(t: &BoreTunables, burst_time: u64) -> u32 {
    let greed = log2plus1_u32f8(burst_time) as i64;
    let tolerance = (t.penalty_offset as i64) << 8;
    let penalty = (greed - tolerance).max(0) as u64;
    let scaled = (penalty * t.penalty_scale as u64) >> 16;
    (scaled as u32).min(MAX_BURST_PENALTY)
}

pub fn binary_smooth(t: &BoreTunables, new: u32, old: u32) -> u32 {
    if new >= old { old + ((new - old) >> t.smoothness_long) } else { old - ((old - new) >> t.smoothness_short) }
}

/// Per-task burst state.
#[derive(Clone, Debug, Default)]
pub struct Burst {
    pub burst_time: u64,
    pub prev_penalty: u32,
    pub curr_penalty: u32,
    pub penalty: u32,
    pub score: u32,
    /// Children-average cache: (score, timestamp).
    pub child_cache: Option<(u32, Nanos)>,
}

impl Burst {
    /// update_burst_penalty; returns the new burst score.
    pub fn update(&mut self, t: &BoreTunables) -> u32 {
        self.curr_penalty = calc_burst_penalty(t, self.burst_time);
        self.penalty = self.prev_penalty.max(self.curr_penalty);
        self.score = if t.sched_bore { self.penalty >> 2 } else { 0 };
        self.score
    }

    /// restart_burst (revolve_burst_penalty then a fresh score).
    pub fn restart(&mut self, t: &BoreTunables) -> u32 {
        self.prev_penalty = binary_smooth(t, self.curr_penalty, self.prev_penalty);
        self.burst_time = 0;
        self.curr_penalty = 0;
        self.penalty = self.prev_penalty;
        self.score = if t.sched_bore { self.penalty >> 2 } else { 0 };
        self.score
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tun() -> BoreTunables {
        BoreTunables::take(&mut BTreeMap::new()).unwrap()
    }

    #[test]
    fn penalty_starts_beyond_the_offset_and_caps() {
        let t = tun();
        // 2^23 ns (8.4 ms) is below the 2^24 offset: no penalty.
        assert_eq!(calc_burst_penalty(&t, 1 << 23), 0);
        // 1 s: fls = 30, six doublings past the offset plus a fraction.
        let p = calc_burst_penalty(&t, 1_000_000_000);
        assert!((30..=36).contains(&p), "{p}");
        assert_eq!(calc_burst_penalty(&t, u64::MAX), MAX_BURST_PENALTY);
    }

    #[test]
    fn smoothing_halves_rises_and_takes_falls_whole() {
        let t = tun();
        assert_eq!(binary_smooth(&t, 40, 0), 20);
        assert_eq!(binary_smooth(&t, 0, 20), 0);
    }

    #[test]
    fn base_slice_rounds_up_to_the_tick() {
        let t = tun();
        assert_eq!(t.base_slice(4_000_000), 4_000_000);
        assert_eq!(t.base_slice(1_000_000), 2_000_000);
        assert_eq!(t.base_slice(3_333_333), 3_333_333);
    }
}
