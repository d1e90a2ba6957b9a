//! Per-entity load tracking (kernel/sched/pelt.c) in continuous form: a
//! signal decays by y per 1024 us period with y^32 = 1/2, so an always
//! runnable task's load average converges to its weight. The kernel sums
//! whole periods with lookup tables; the geometric series is the same.

use schedlab_sim::Nanos;

const PERIOD_NS: f64 = 1_024_000.0;
/// ln(y) with y^32 = 0.5.
const LN_Y: f64 = -std::f64::consts::LN_2 / 32.0;

/// A decaying average of a piecewise-constant level (weight while
/// runnable, 0 while sleeping; or 1024 while running, for utilization).
#[derive(Clone, Copy, Debug, Default)]
pub struct Pelt {
    avg: f64,
    level: f64,
    last: Nanos,
}

impl Pelt {
    fn decay_to(&mut self, now: Nanos) {
        if now > self.last {
            let periods = (now - self.last) as f64 / PERIOD_NS;
            let k = (periods * LN_Y).exp();
            self.avg = self.avg * k + self.level * (1.0 - k);
            self.last = now;
        }
    }

    /// The level changes at `now` (a task starts or stops being runnable).
    pub fn set(&mut self, now: Nanos, level: f64) {
        self.decay_to(now);
        self.level = level;
    }

    pub fn add(&mut self, now: Nanos, delta: f64) {
        self.decay_to(now);
        self.level = (self.level + delta).max(0.0);
    }

    /// The average at `now`.
    pub fn value(&self, now: Nanos) -> f64 {
        let mut copy = *self;
        copy.decay_to(now);
        copy.avg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_life_is_32_periods() {
        let mut p = Pelt::default();
        p.set(0, 1024.0);
        let t = (32.0 * PERIOD_NS) as Nanos;
        assert!((p.value(t) - 512.0).abs() < 1.0);
        p.set(t, 0.0);
        assert!((p.value(2 * t) - 256.0).abs() < 1.0);
    }
}
