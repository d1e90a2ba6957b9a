//! Per-entity load tracking as kernel/sched/pelt.c computes it (Linux 6.x,
//! unchanged in substance since 5.8): time in 1024 ns units, 1024-unit
//! periods, sums decayed by y^n with y^32 = 1/2 through the
//! runnable_avg_yN_inv table (decay_load), a period's partial segments
//! summed as __accumulate_pelt_segments does, and the average the sum over
//! get_pelt_divider, recomputed only when a period boundary is crossed
//! (___update_load_avg runs only then). Integer arithmetic throughout, so
//! the balancer sees the kernel's numbers, rounding included.

use schedlab_sim::Nanos;

/// LOAD_AVG_PERIOD: the half-life, in periods.
const LOAD_AVG_PERIOD: u64 = 32;
/// LOAD_AVG_MAX: the sum of an always-present level of 1, at its limit.
const LOAD_AVG_MAX: u64 = 47742;
/// PELT_MIN_DIVIDER.
const PELT_MIN_DIVIDER: u64 = LOAD_AVG_MAX - 1024;

/// runnable_avg_yN_inv: y^n scaled by 2^32, n = 0..31.
const RUNNABLE_AVG_YN_INV: [u32; 32] = [
    0xffffffff, 0xfa83b2da, 0xf5257d14, 0xefe4b99a, 0xeac0c6e6, 0xe5b906e6, 0xe0ccdeeb, 0xdbfbb796, 0xd744fcc9,
    0xd2a81d91, 0xce248c14, 0xc9b9bd85, 0xc5672a10, 0xc12c4cc9, 0xbd08a39e, 0xb8fbaf46, 0xb504f333, 0xb123f581,
    0xad583ee9, 0xa9a15ab4, 0xa5fed6a9, 0xa2704302, 0x9ef5325f, 0x9b8d39b9, 0x9837f050, 0x94f3efe2, 0x91c0d1b2,
    0x8e9e2d2e, 0x8b95c1e3, 0x88980e80, 0x85aac367, 0x82cd8698,
];

/// decay_load: val * y^n.
fn decay_load(val: u64, n: u64) -> u64 {
    if n > LOAD_AVG_PERIOD * 63 {
        return 0;
    }
    let (shift, local) = (n / LOAD_AVG_PERIOD, n % LOAD_AVG_PERIOD);
    let val = val >> shift;
    // mul_u64_u32_shr(val, inv, 32)
    ((val as u128 * RUNNABLE_AVG_YN_INV[local as usize] as u128) >> 32) as u64
}

/// __accumulate_pelt_segments: the decayed d1 (end of the first period),
/// the whole periods in between, and d3 (start of the current period).
fn accumulate_segments(periods: u64, d1: u64, d3: u64) -> u64 {
    let c1 = decay_load(d1, periods);
    let c2 = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, periods) - 1024;
    c1 + c2 + d3
}

/// One PELT signal: a sum of `level` over time, decayed. `level` is what
/// the kernel passes as `load` (a task's 0/1 presence, a runqueue's
/// weight) or `running << SCHED_CAPACITY_SHIFT` for utilization.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pelt {
    sum: u64,
    level: u64,
    /// What the sum is scaled by into the average (a task's weight).
    scale: u64,
    /// The average as of the last period boundary crossed.
    avg: u64,
    period_contrib: u32,
    last_update: Nanos,
}

impl Pelt {
    /// ___update_load_sum to `now` at the current level, then
    /// ___update_load_avg when a period boundary was crossed.
    fn update(&mut self, now: Nanos) {
        if now <= self.last_update {
            return;
        }
        let delta = (now - self.last_update) >> 10;
        if delta == 0 {
            return;
        }
        self.last_update += delta << 10;
        // accumulate_sum
        let mut contrib = delta;
        let total = delta + self.period_contrib as u64;
        let periods = total / 1024;
        let rest = total % 1024;
        if periods > 0 {
            self.sum = decay_load(self.sum, periods);
            if self.level > 0 {
                contrib = accumulate_segments(periods, 1024 - self.period_contrib as u64, rest);
            }
        }
        self.period_contrib = rest as u32;
        self.sum += self.level * contrib;
        if periods > 0 {
            self.avg = self.scale * self.sum / (PELT_MIN_DIVIDER + self.period_contrib as u64);
        }
    }

    /// The level changes at `now` (a task starts or stops being runnable,
    /// a runqueue's weight changes). `scale` is what the average is the
    /// sum times: the task's weight for a task's load (se_weight), 1 for a
    /// runqueue's load and for utilization.
    pub fn set(&mut self, now: Nanos, level: u64, scale: u64) {
        self.scale = scale;
        self.update(now);
        self.level = level;
    }

    /// The average as the kernel would have it at `now`.
    pub fn avg(&self, now: Nanos) -> u64 {
        let mut copy = *self;
        copy.update(now);
        copy.avg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERIOD_NS: Nanos = 1024 * 1024;

    #[test]
    fn decay_halves_every_32_periods() {
        // y^0 is 0xffffffff / 2^32, so the kernel's halving rounds down by one.
        assert_eq!(decay_load(1 << 20, 32), (1 << 19) - 1);
        assert_eq!(decay_load(1 << 20, 64), (1 << 18) - 1);
        assert_eq!(decay_load(1 << 20, 16), 741455);
        assert_eq!(decay_load(1 << 20, LOAD_AVG_PERIOD * 63 + 1), 0);
    }

    #[test]
    fn always_runnable_converges_to_its_weight() {
        let mut p = Pelt::default();
        p.set(0, 1, 1024);
        let avg = p.avg(1000 * PERIOD_NS);
        // The kernel's fixed point loses a little to rounding: 1002..1024.
        assert!((1000..=1024).contains(&avg), "{avg}");
    }

    #[test]
    fn half_life_is_32_periods() {
        let mut p = Pelt::default();
        p.set(0, 1024, 1);
        let full = p.avg(1000 * PERIOD_NS);
        p.set(1000 * PERIOD_NS, 0, 1);
        let half = p.avg(1032 * PERIOD_NS);
        assert!((half as i64 - full as i64 / 2).abs() <= 16, "{full} -> {half}");
    }

    #[test]
    fn the_average_steps_at_period_boundaries() {
        let mut p = Pelt::default();
        p.set(0, 1024, 1);
        p.set(10 * PERIOD_NS, 1024, 1);
        let at_boundary = p.avg(10 * PERIOD_NS);
        assert!(at_boundary > 0);
        assert_eq!(p.avg(10 * PERIOD_NS + PERIOD_NS / 2), at_boundary);
        assert!(p.avg(11 * PERIOD_NS) > at_boundary);
    }

    #[test]
    fn a_half_duty_cycle_averages_half() {
        let mut p = Pelt::default();
        for i in 0..2000 {
            p.set(i * PERIOD_NS, (i % 2) * 1024, 1);
        }
        let avg = p.avg(2000 * PERIOD_NS);
        assert!((480..=544).contains(&avg), "{avg}");
    }
}
