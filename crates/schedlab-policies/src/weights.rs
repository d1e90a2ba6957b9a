//! The kernel's nice-to-weight tables (kernel/sched/core.c,
//! `sched_prio_to_weight` and `sched_prio_to_wmult`, unchanged since 2.6.23)
//! and `__calc_delta`, the fixed-point `delta * weight / lw` every fair
//! policy uses, reproduced so rounding matches the kernel's.

/// NICE_0_LOAD with scale_load_down applied (64-bit kernels keep 10 extra
/// bits of resolution internally; every ratio is the same without them).
pub const NICE_0_LOAD: u64 = 1024;
/// WEIGHT_IDLEPRIO: the weight of SCHED_IDLE tasks.
pub const WEIGHT_IDLEPRIO: u64 = 3;
const WMULT_CONST: u64 = 0xffff_ffff;
const WMULT_SHIFT: u32 = 32;

pub const SCHED_PRIO_TO_WEIGHT: [u64; 40] = [
    /* -20 */ 88761, 71755, 56483, 46273, 36291, /* -15 */ 29154, 23254, 18705, 14949, 11916,
    /* -10 */ 9548, 7620, 6100, 4904, 3906, /*  -5 */ 3121, 2501, 1991, 1586, 1277, /*   0 */ 1024, 820,
    655, 526, 423, /*   5 */ 335, 272, 215, 172, 137, /*  10 */ 110, 87, 70, 56, 45, /*  15 */ 36, 29,
    23, 18, 15,
];

/// Weight of a nice level, clamped to -20..19.
pub fn nice_to_weight(nice: i32) -> u64 {
    SCHED_PRIO_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize]
}

/// Weight of a task as the fair class sees it (SCHED_IDLE is 3).
pub fn task_weight(sys: &schedlab_sim::Sys, t: schedlab_sim::TaskId) -> u64 {
    let info = sys.task(t);
    match info.policy {
        schedlab_sim::workload::SchedPolicy::Idle => WEIGHT_IDLEPRIO,
        _ => nice_to_weight(info.nice),
    }
}

fn inv_weight(w: u64) -> u64 {
    if w >= WMULT_CONST { 1 } else { WMULT_CONST.checked_div(w).unwrap_or(WMULT_CONST) }
}

fn fls(x: u64) -> u32 {
    64 - x.leading_zeros()
}

/// `__calc_delta(delta, weight, lw)`: delta * weight / lw_weight, computed
/// with the kernel's 32-bit inverse and shifts.
pub fn calc_delta(delta: u64, weight: u64, lw_weight: u64) -> u64 {
    let mut fact = weight;
    let mut shift = WMULT_SHIFT as i32;
    let hi = fact >> 32;
    if hi != 0 {
        let fs = fls(hi);
        shift -= fs as i32;
        fact >>= fs;
    }
    fact = (fact & 0xffff_ffff) * inv_weight(lw_weight);
    let hi = fact >> 32;
    if hi != 0 {
        let fs = fls(hi);
        shift -= fs as i32;
        fact >>= fs;
    }
    ((delta as u128 * fact as u128) >> shift.max(0)) as u64
}

/// calc_delta_fair: scale real time to virtual time for an entity weight.
pub fn calc_delta_fair(delta: u64, weight: u64) -> u64 {
    if weight == NICE_0_LOAD { delta } else { calc_delta(delta, NICE_0_LOAD, weight) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_the_kernel() {
        assert_eq!(nice_to_weight(0), 1024);
        assert_eq!(nice_to_weight(-20), 88761);
        assert_eq!(nice_to_weight(19), 15);
        // Every step is about 1.25x ("10% CPU per nice level").
        for w in SCHED_PRIO_TO_WEIGHT.windows(2) {
            let r = w[0] as f64 / w[1] as f64;
            assert!((1.15..1.35).contains(&r), "ratio {r}");
        }
    }

    #[test]
    fn calc_delta_is_close_to_exact() {
        for &(d, w, lw) in &[(4_000_000u64, 1024u64, 3072u64), (1_000_000, 1024, 15), (123_456, 88761, 1024)] {
            let exact = d as f64 * w as f64 / lw as f64;
            let got = calc_delta(d, w, lw) as f64;
            assert!((got - exact).abs() / exact < 1e-6, "{d} {w} {lw}: {got} vs {exact}");
        }
        assert_eq!(calc_delta_fair(1000, NICE_0_LOAD), 1000);
    }
}
