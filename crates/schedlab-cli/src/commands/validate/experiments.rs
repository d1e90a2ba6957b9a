//! The experiments `schedlab validate` runs on each kernel and its
//! simulation: which workload, sized how, on how many CPUs, for how long,
//! and which figures each reports. Each isolates one decision of the
//! scheduler (the scenarios' own descriptions say which).

use crate::args::{Common, common};

/// Every experiment runs on 2 CPUs: the guest gets one vCPU per host CPU of
/// the machines this runs on, so no vCPU waits for another's host CPU.
pub(super) const CPUS: u32 = 2;

pub(super) const SEC: u64 = 1_000_000_000;

/// Which figures an experiment reports; shares and wakeups come only where
/// they say something about the policy.
#[derive(Clone, Copy)]
pub(super) struct Figures {
    pub(super) shares: bool,
    pub(super) migrations: bool,
    pub(super) wakeups: bool,
    pub(super) makespan: bool,
    /// Placement decisions alone (decisions.rs), nothing that takes time.
    pub(super) decisions: bool,
}

pub(super) struct Experiment {
    pub(super) id: &'static str,
    pub(super) workload: &'static str,
    pub(super) params: &'static [(&'static str, i64)],
    pub(super) what: &'static str,
    pub(super) figures: Figures,
    /// Part of `--quick`: the experiments whose every figure is a decision
    /// one short run settles (no balancer randomness, nothing TCG's cost of
    /// a syscall or a wakeup moves, which varies from boot to boot).
    pub(super) quick: bool,
    /// Seconds per run in the full suite: 3, or 10 where the figure is a
    /// rare event (the balancer's migrations) that 3 s counts too few of.
    pub(super) secs: u64,
    /// CPUs of the machine, simulated and in the guest.
    pub(super) cpus: u32,
}

pub(super) const PINNED: Figures =
    Figures { shares: true, migrations: false, wakeups: false, makespan: false, decisions: false };

pub(super) const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        id: "thread-test-2",
        workload: "thread-test",
        params: &[("threads", 2)],
        what: "2 spinners pinned to CPU 0",
        figures: PINNED,
        quick: false,
        secs: 3,
        cpus: CPUS,
    },
    Experiment {
        id: "thread-test-16",
        workload: "thread-test",
        params: &[("threads", 16)],
        what: "16 spinners pinned to CPU 0",
        figures: PINNED,
        quick: true,
        secs: 3,
        cpus: CPUS,
    },
    Experiment {
        id: "thread-test-256",
        workload: "thread-test",
        params: &[("threads", 256)],
        what: "256 spinners pinned to CPU 0",
        figures: PINNED,
        quick: false,
        secs: 3,
        cpus: CPUS,
    },
    Experiment {
        id: "thread-test-1024",
        workload: "thread-test",
        params: &[("threads", 1024)],
        what: "1024 spinners pinned to CPU 0",
        figures: PINNED,
        quick: false,
        secs: 3,
        cpus: CPUS,
    },
    Experiment {
        id: "smp-fairness",
        workload: "smp-fairness",
        params: &[("hogs", 3)],
        what: "3 hogs on 2 CPUs",
        figures: Figures { shares: true, migrations: true, wakeups: false, makespan: false, decisions: false },
        quick: false,
        secs: 10,
        cpus: CPUS,
    },
    Experiment {
        id: "nice-hog",
        workload: "nice-hog",
        params: &[],
        what: "2 hogs and a nice 5 hog on CPU 0",
        figures: PINNED,
        quick: true,
        secs: 3,
        cpus: CPUS,
    },
    Experiment {
        id: "nice-ladder",
        workload: "nice-ladder",
        params: &[],
        what: "hogs at nice 0, 3 and 6 and a 1 ms run / 4 ms sleep task at nice 3 on CPU 0",
        // Where BMQ's levels and PDS's deadlines part: the two kernels
        // differed on only 9-10 figures of the other experiments.
        figures: Figures { shares: true, migrations: false, wakeups: true, makespan: false, decisions: false },
        quick: false,
        secs: 3,
        cpus: CPUS,
    },
    Experiment {
        id: "nice-sleepers",
        workload: "nice-sleepers",
        params: &[],
        what: "2 ms run / 6 ms sleep tasks at nice 0, 5 and 10 beside a hog on CPU 0",
        // Where a sleep outweighs a nice level: BMQ's boost gives every
        // sleeper its 25%, PDS's deadlines and the weights do not.
        figures: Figures { shares: true, migrations: false, wakeups: true, makespan: false, decisions: false },
        quick: false,
        secs: 3,
        cpus: CPUS,
    },
    Experiment {
        id: "wakeup-preemption",
        workload: "wakeup-preemption",
        params: &[],
        what: "a 0.5 ms run / 9.5 ms sleep task beside two hogs on CPU 0",
        // Whether a wakeup preempts: its latency is a tick or a slice
        // where it does not, milliseconds that TCG's costs do not hide.
        figures: Figures { shares: true, migrations: false, wakeups: true, makespan: false, decisions: false },
        quick: false,
        secs: 3,
        cpus: CPUS,
    },
    Experiment {
        id: "sleeper-hog",
        workload: "sleeper-hog",
        params: &[],
        what: "1 ms run / 3 ms sleep beside a hog on CPU 0",
        figures: Figures { shares: true, migrations: false, wakeups: true, makespan: false, decisions: false },
        quick: false,
        secs: 3,
        cpus: CPUS,
    },
    Experiment {
        id: "yield-hog",
        workload: "yield-hog",
        params: &[],
        what: "100 us run + sched_yield loop beside a hog on CPU 0",
        figures: PINNED,
        // What a yield does is each policy's own rule (EEVDF's slice and
        // TT's task types show there and in no other quick experiment).
        quick: true,
        secs: 3,
        cpus: CPUS,
    },
    Experiment {
        id: "lat-ctx",
        workload: "lat-ctx",
        params: &[],
        what: "lat_ctx -s 0 2: a token passed over two pipes",
        figures: Figures { shares: false, migrations: true, wakeups: true, makespan: false, decisions: false },
        quick: false,
        secs: 3,
        cpus: CPUS,
    },
    Experiment {
        id: "jitter",
        workload: "jitter-under-load",
        params: &[("workers", 6)],
        what: "cyclictest -a -t -i 1000 beside 6 stress-ng workers, 2 CPUs",
        figures: Figures { shares: true, migrations: true, wakeups: true, makespan: false, decisions: false },
        quick: false,
        secs: 3,
        cpus: CPUS,
    },
    Experiment {
        id: "fork-burst",
        workload: "fork-burst",
        params: &[],
        what: "200 children of 4 ms forked 50 us apart, 2 CPUs",
        figures: Figures { shares: false, migrations: true, wakeups: false, makespan: true, decisions: false },
        quick: false,
        secs: 3,
        cpus: CPUS,
    },
    Experiment {
        id: "cgroup-split",
        workload: "cgroup-split",
        params: &[],
        what: "cgroups of weight 100 (2 hogs) and 300 (1 hog) on CPU 0",
        figures: PINNED,
        quick: true,
        secs: 3,
        cpus: CPUS,
    },
];

/// Placement decisions on more CPUs than the host has: a guest's vCPUs
/// then share host CPUs and lose time (eevdf, 5 hogs on 4 vCPUs: 140
/// switches/s against 248 simulated), so rates and durations say nothing
/// there; but where the kernel places a task is decided from the guest's
/// own state, which the overcommit slows and does not falsify. Only those
/// counts, as percentages, are compared (decisions.rs counts them the same
/// way on both sides).
pub(super) const DECISION_EXPERIMENTS: &[Experiment] = &[
    Experiment {
        id: "make-j4",
        workload: "make-j",
        params: &[("jobs", 4)],
        what: "make -j4 on 4 CPUs: a jobserver and compilers that sleep on I/O",
        figures: Figures { shares: false, migrations: false, wakeups: false, makespan: false, decisions: true },
        quick: false,
        secs: 15,
        cpus: 4,
    },
    Experiment {
        id: "fork-burst-4",
        workload: "fork-burst",
        params: &[],
        what: "200 children of 4 ms forked 50 us apart, 4 CPUs",
        figures: Figures { shares: false, migrations: false, wakeups: false, makespan: false, decisions: true },
        quick: false,
        secs: 3,
        cpus: 4,
    },
];

/// The command line of one run of `exp`: its workload sized to the guests.
pub(super) fn experiment_common(exp: &Experiment, duration: u64, seed: u64) -> Common {
    let mut c = common(exp.workload, exp.params, duration);
    c.cpus = Some(exp.cpus);
    c.seed = Some(seed);
    c
}
