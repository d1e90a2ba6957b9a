//! `schedlab validate`: every simulated policy that has a bootable kernel,
//! run beside that kernel under QEMU (the vm runner) on a fixed set of
//! experiments, written as a Markdown page of simulated against real
//! figures.
//!
//! Each figure (switches/s, per-task share, run time per switch, wakeup
//! latency, migrations/s, makespan) is the median of several runs on each
//! side: seeds 1..=runs for the simulation, as many boots of the kernel for
//! the real side. A figure outside its tolerance is flagged, and a flag
//! must be explained from the source (the `EXPLAINED` table below, which the
//! page prints beside it) or fixed in the model; `validate` exits non-zero
//! while any flag has no explanation, so CI notices a model drifting away
//! from its kernel.
//!
//! Which kernel a policy is checked against is `PolicyInfo::kernel`; the
//! kernels are ../shared/kernels/NAME.bzImage unless --kernels says where.

use crate::vm::{self, VmArgs};
use crate::{Common, HostArgs, common, load_workload, simulate};
use anyhow::{Context, Result, bail};
use rayon::prelude::*;
use schedlab_policies::{POLICIES, PolicyInfo};
use schedlab_sim::Report;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct Options {
    pub out: PathBuf,
    pub kernels: PathBuf,
    pub quick: bool,
    pub runs: Option<usize>,
    pub sched: Vec<String>,
    pub accel: schedlab_vm::Accel,
    /// Read the real runs kept by an earlier validate in `out` instead of
    /// booting the kernels again.
    pub reuse: bool,
}

pub fn default_out() -> PathBuf {
    PathBuf::from("schedlab-validation")
}

pub fn default_kernels() -> PathBuf {
    PathBuf::from("../shared/kernels")
}

/// Every experiment runs on 2 CPUs: the guest gets one vCPU per host CPU of
/// the machines this runs on, so no vCPU waits for another's host CPU.
const CPUS: u32 = 2;
const SEC: u64 = 1_000_000_000;

/// Which figures an experiment reports; shares and wakeups come only where
/// they say something about the policy.
#[derive(Clone, Copy)]
struct Figures {
    shares: bool,
    migrations: bool,
    wakeups: bool,
    makespan: bool,
}

struct Experiment {
    id: &'static str,
    workload: &'static str,
    params: &'static [(&'static str, i64)],
    what: &'static str,
    figures: Figures,
    /// Part of `--quick`: the experiments whose every figure is a decision
    /// one short run settles (no balancer randomness, nothing TCG's cost of
    /// a syscall or a wakeup moves, which varies from boot to boot).
    quick: bool,
    /// Seconds per run in the full suite: 3, or 10 where the figure is a
    /// rare event (the balancer's migrations) that 3 s counts too few of.
    secs: u64,
}

const PINNED: Figures = Figures { shares: true, migrations: false, wakeups: false, makespan: false };

const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        id: "thread-test-2",
        workload: "thread-test",
        params: &[("threads", 2)],
        what: "2 spinners pinned to CPU 0",
        figures: PINNED,
        quick: false,
        secs: 3,
    },
    Experiment {
        id: "thread-test-16",
        workload: "thread-test",
        params: &[("threads", 16)],
        what: "16 spinners pinned to CPU 0",
        figures: PINNED,
        quick: true,
        secs: 3,
    },
    Experiment {
        id: "thread-test-256",
        workload: "thread-test",
        params: &[("threads", 256)],
        what: "256 spinners pinned to CPU 0",
        figures: PINNED,
        quick: false,
        secs: 3,
    },
    Experiment {
        id: "thread-test-1024",
        workload: "thread-test",
        params: &[("threads", 1024)],
        what: "1024 spinners pinned to CPU 0",
        figures: PINNED,
        quick: false,
        secs: 3,
    },
    Experiment {
        id: "smp-fairness",
        workload: "smp-fairness",
        params: &[("hogs", 3)],
        what: "3 hogs on 2 CPUs",
        figures: Figures { shares: true, migrations: true, wakeups: false, makespan: false },
        quick: false,
        secs: 10,
    },
    Experiment {
        id: "nice-hog",
        workload: "nice-hog",
        params: &[],
        what: "2 hogs and a nice 5 hog on CPU 0",
        figures: PINNED,
        quick: true,
        secs: 3,
    },
    Experiment {
        id: "sleeper-hog",
        workload: "sleeper-hog",
        params: &[],
        what: "1 ms run / 3 ms sleep beside a hog on CPU 0",
        figures: Figures { shares: true, migrations: false, wakeups: true, makespan: false },
        quick: false,
        secs: 3,
    },
    Experiment {
        id: "yield-hog",
        workload: "yield-hog",
        params: &[],
        what: "100 us run + sched_yield loop beside a hog on CPU 0",
        figures: PINNED,
        quick: false,
        secs: 3,
    },
    Experiment {
        id: "lat-ctx",
        workload: "lat-ctx",
        params: &[],
        what: "lat_ctx -s 0 2: a token passed over two pipes",
        figures: Figures { shares: false, migrations: true, wakeups: true, makespan: false },
        quick: false,
        secs: 3,
    },
    Experiment {
        id: "jitter",
        workload: "jitter-under-load",
        params: &[("workers", 6)],
        what: "cyclictest -a -t -i 1000 beside 6 stress-ng workers, 2 CPUs",
        figures: Figures { shares: true, migrations: true, wakeups: true, makespan: false },
        quick: false,
        secs: 3,
    },
    Experiment {
        id: "fork-burst",
        workload: "fork-burst",
        params: &[],
        what: "200 children of 4 ms forked 50 us apart, 2 CPUs",
        figures: Figures { shares: false, migrations: true, wakeups: false, makespan: true },
        quick: false,
        secs: 3,
    },
    Experiment {
        id: "cgroup-split",
        workload: "cgroup-split",
        params: &[],
        what: "cgroups of weight 100 (2 hogs) and 300 (1 hog) on CPU 0",
        figures: PINNED,
        quick: true,
        secs: 3,
    },
];

/// How a figure is compared.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    /// Events per second or a makespan: within 10%, or within 1/s.
    Rate,
    /// A CPU share in percent: within 3 points.
    Share,
    /// A duration: within 10% at tick scale; below 250 us on both sides
    /// only the order is compared, since TCG's emulated CPU sets the cost
    /// of every switch and wakeup there.
    Time,
}

const RATIO_TOLERANCE: f64 = 0.10;
const SHARE_POINTS: f64 = 3.0;
const RATE_FLOOR: f64 = 1.0;
const COST_SCALE_NS: f64 = 250_000.0;

#[derive(Clone, Debug)]
struct Figure {
    key: String,
    label: String,
    kind: Kind,
    value: f64,
    /// The lowest and highest of the runs the median was taken from.
    range: (f64, f64),
}

fn figures(exp: &Experiment, r: &Report) -> Vec<Figure> {
    let secs = r.duration_ns.max(1) as f64 / 1e9;
    let mut out = Vec::new();
    let mut push =
        |key: String, label: String, kind, value| out.push(Figure { key, label, kind, value, range: (value, value) });
    push("switches".into(), "switches/s".into(), Kind::Rate, r.totals.context_switches_per_sec);
    if exp.figures.migrations {
        push("migrations".into(), "migrations/s".into(), Kind::Rate, r.totals.migrations as f64 / secs);
    }
    if exp.figures.shares {
        for s in &r.specs {
            push(format!("share:{}", s.name), format!("{} share %", s.name), Kind::Share, s.cpu_share_avg_pct);
            if s.tasks > 1 {
                push(
                    format!("spread:{}", s.name),
                    format!("{} share max-min", s.name),
                    Kind::Share,
                    s.cpu_share_max_pct - s.cpu_share_min_pct,
                );
            }
        }
    }
    // A run-time-per-switch p50 is meaningful where one kind of task runs;
    // beside another kind the histogram has two modes and its median is any
    // value between them, so each kind gets its mean run per switch.
    if r.specs.len() == 1 {
        push("run_p50".into(), "run/switch p50".into(), Kind::Time, r.runtime_per_switch.p50 as f64);
    } else {
        for (i, s) in r.specs.iter().enumerate() {
            let (cpu, switches) =
                r.tasks.iter().filter(|t| t.spec as usize == i).fold((0u64, 0u64), |(c, n), t| {
                    (c + t.cpu_time_ns, n + t.voluntary_switches + t.involuntary_switches)
                });
            if switches > 0 {
                push(
                    format!("run:{}", s.name),
                    format!("{} run/switch", s.name),
                    Kind::Time,
                    cpu as f64 / switches as f64,
                );
            }
        }
    }
    if exp.figures.wakeups && r.wakeup_latency.count > 0 {
        push("wake_p50".into(), "wakeup p50".into(), Kind::Time, r.wakeup_latency.p50 as f64);
    }
    if exp.figures.makespan
        && let Some(m) = r.totals.makespan_ns
    {
        push("makespan".into(), "makespan".into(), Kind::Time, m as f64);
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Each figure's median over the runs, in the order of the first run.
fn medians(exp: &Experiment, reports: &[Report]) -> Vec<Figure> {
    let mut order: Vec<Figure> = Vec::new();
    let mut values: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in reports {
        for f in figures(exp, r) {
            if !order.iter().any(|o| o.key == f.key) {
                order.push(f.clone());
            }
            values.entry(f.key).or_default().push(f.value);
        }
    }
    for f in &mut order {
        let v = values.remove(&f.key).unwrap_or_default();
        f.range = v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        f.value = median(v);
    }
    order
}

#[derive(Debug, PartialEq)]
enum Verdict {
    Within,
    /// Compared as an order only: both sides are cost-bound.
    SameOrder,
    Outside,
}

/// The comparison's text (ratio or difference) and verdict; `secs` is the
/// length of a run, for the counting noise of a rate.
fn judge(kind: Kind, sim: f64, real: f64, secs: f64) -> (String, Verdict) {
    match kind {
        Kind::Share => {
            let d = sim - real;
            (format!("{d:+.1} pt"), if d.abs() <= SHARE_POINTS { Verdict::Within } else { Verdict::Outside })
        }
        Kind::Time if sim < COST_SCALE_NS && real < COST_SCALE_NS => ("both < 250 us".into(), Verdict::SameOrder),
        Kind::Rate | Kind::Time => {
            if real == 0.0 && sim == 0.0 {
                return ("both 0".into(), Verdict::Within);
            }
            let text = if real > 0.0 { format!("{:.2}", sim / real) } else { "-".into() };
            // A rate counts events: n of them in a run are known to about
            // sqrt(n), so a difference within two of those is not one.
            let noise = 2.0 * (real * secs).sqrt() / secs;
            let close = (kind == Kind::Rate && (sim - real).abs() < RATE_FLOOR.max(noise))
                || (real > 0.0 && (sim / real - 1.0).abs() <= RATIO_TOLERANCE);
            (text, if close { Verdict::Within } else { Verdict::Outside })
        }
    }
}

fn show(kind: Kind, v: f64) -> String {
    if v.is_nan() {
        return "-".into();
    }
    match kind {
        Kind::Share => format!("{v:.1}"),
        Kind::Time => schedlab_sim::time::format_duration(v as u64),
        Kind::Rate if v >= 100.0 => format!("{v:.0}"),
        Kind::Rate => format!("{v:.1}"),
    }
}

/// Why a figure is outside its tolerance, from the source: (policy or "*",
/// experiment id or prefix ending in '*', figure key or prefix ending in
/// '*', explanation). The first match is printed beside the flag.
const EXPLAINED: &[(&str, &str, &str, &str)] = &[
    ("bmq", "thread-test-256", "switches", PROJC_FORK_SLICES),
    ("bmq", "thread-test-256", "run_p50", PROJC_FORK_SLICES),
    ("bmq", "thread-test-1024", "switches", PROJC_FORK_SLICES),
    ("bmq", "thread-test-1024", "run_p50", PROJC_FORK_SLICES),
    ("pds", "thread-test-256", "switches", PROJC_FORK_SLICES),
    ("pds", "thread-test-256", "run_p50", PROJC_FORK_SLICES),
    ("pds", "thread-test-1024", "switches", PROJC_FORK_SLICES),
    ("pds", "thread-test-1024", "run_p50", PROJC_FORK_SLICES),
    ("pds", "sleeper-hog", "switches", PDS_SLEEPER_SLICE_EDGE),
    ("pds", "sleeper-hog", "run:*", PDS_SLEEPER_SLICE_EDGE),
    ("bore", "smp-fairness", "spread:hog", SPREAD_IS_A_RANDOM_WALK),
    ("eevdf", "smp-fairness", "spread:hog", SPREAD_IS_A_RANDOM_WALK),
    ("bore", "thread-test*", "switches", BORE_SLICE_IS_A_TICK),
    ("bore", "thread-test*", "run*", BORE_SLICE_IS_A_TICK),
    ("bore", "smp-fairness", "switches", BORE_SLICE_IS_A_TICK),
    ("bore", "smp-fairness", "run*", BORE_SLICE_IS_A_TICK),
    ("bore", "nice-hog", "switches", BORE_SLICE_IS_A_TICK),
    ("bore", "nice-hog", "run*", BORE_SLICE_IS_A_TICK),
    ("bore", "cgroup-split", "switches", BORE_SLICE_IS_A_TICK),
    ("bore", "cgroup-split", "run*", BORE_SLICE_IS_A_TICK),
    (
        "*",
        "lat-ctx",
        "switches",
        "lat_ctx's rate is the cost of a round trip (a futex wake, a wait and a switch per hop), which TCG \
         emulates at tens of microseconds: each hop runs 55-85 us in the guests against the simulation's \
         `costs.context_switch` and `costs.idle_exit` (2 and 5 us by default). The decision, ping and pong \
         alternating with no involuntary switch, agrees.",
    ),
    (
        "*",
        "lat-ctx",
        "migrations",
        "ping and pong each keep a CPU of their own in both; the kernel moves one of them when its wakeup \
         finds its previous CPU running something outside the workload (a kernel thread, the runner's own \
         thread), 2-18 times a second in the guests. The simulation runs nothing else, so it never does.",
    ),
    (
        "*",
        "jitter",
        "*",
        "Under TCG a cyclic thread's wakeup takes 35-115 us of CPU for its 10 us of work (the emulated timer \
         interrupt, the switch and clock_nanosleep around it) and comes 40-110 us late at the median, over a \
         millisecond late at p99; a period whose wakeup is later than the period is skipped, as \
         clock_nanosleep's absolute timer skips expiries already past. So the real cyclic threads woke 2,000 to \
         2,850 times in 3 s, not 3,000, and preempted the stress-ng workers that much less often: the cyclic \
         share (4-8% against 1%), the switch rate and the workers' run per switch all follow from that cost, \
         not from a scheduling decision (the model's `costs` are this hardware's, not TCG's).",
    ),
    (
        "*",
        "fork-burst",
        "*",
        "Creating a thread under TCG is slow: each child used 4.5-5.0 ms of CPU for its 4 ms of work (its \
         stack and TLS are first-touched through the emulated MMU) and the parent 81-125 ms for its 10 ms \
         (200 clone() calls, about 0.4 ms each), so the burst needs about 1.05 s of CPU where the simulation \
         needs 0.81 s and lasts 0.59-0.75 s on the 2 vCPUs against 0.41 s simulated; its switch and migration \
         rates and run lengths are diluted accordingly. The simulator charges no fork cost; on KVM or bare \
         metal this experiment measures placement, under TCG it mostly measures thread creation.",
    ),
    (
        "*",
        "sleeper-hog",
        "wake_p50",
        "The sleeper's timer wakeup preempts the hog at once on both sides (a wait for the hog's slice or the \
         tick would take milliseconds); what it costs to get there, the emulated timer interrupt and switch, is \
         60-300 us under TCG depending on the host's state at the time, against the simulation's 2 us.",
    ),
    ("*", "sleeper-hog", "share:*", SLEEPER_COST),
    ("*", "sleeper-hog", "run:sleeper", SLEEPER_COST),
    ("*", "yield-hog", "share:*", YIELD_COST),
    ("*", "yield-hog", "run:yielder", YIELD_COST),
];

const SLEEPER_COST: &str = "Each cycle is 1 ms of work plus the clock_nanosleep() that ends it and the timer \
     wakeup that starts the next, 60-110 us of CPU under TCG (more when the host is busy) that the kernel charges \
     to the sleeper: 1.06-1.11 ms per switch in the guests, and a share that much above the simulation's, which \
     charges no cost to a sleep. The number of switches, one per cycle each way, agrees.";

const YIELD_COST: &str = "Each iteration is 100 us of work plus a sched_yield() call, which costs 18-40 us under \
     TCG depending on the host's state (eevdf-6.12, 1 s: 672 loops and 79.4 ms of yielder CPU, simulated 669 \
     loops and 67.0 ms): the number of iterations and of switches agrees, the CPU each iteration takes, and with \
     it the yielder's share, does not.";

/// Project C's sched_fork shares the forker's slice with the child.
const PROJC_FORK_SLICES: &str = "The runner forks its threads from one thread before the run, and Project C's \
     sched_fork gives each child half of the forker's remaining slice (2.1, 1.05, ... ms, a full 4.19 ms once \
     the half falls below RESCHED_NS), which the child keeps through its sleeps until t0. With 256 or 1024 \
     spinners and 716 slices in 3 s, many threads run only that first, short slice inside the window: more \
     switches and, at 1024, a shorter median run. The simulated workload's tasks are not forked, so they start \
     with full slices; simulating the same threads forked one by one from a controller (run 20 us, fork, x N) \
     gives 296 and 460-469 switches/s and a 2.09 ms median run at 1024 (real: 279-280 and 326-431/s, 1.93 ms \
     for pds).";

/// PDS: four 1 ms runs against a 4.19 ms slice.
const PDS_SLEEPER_SLICE_EDGE: &str = "The sleeper's 4.19 ms slice covers four of its 1 ms runs and leaves 194 us, \
     above RESCHED_NS (102 us), so in the simulation its fifth run starts with 194 us, is cut there (its \
     deadline renewed behind the hog) and finishes later: 549 switches/s, 817 us per sleeper run. In the guest \
     each run costs about 1.03 ms with its sleep and wakeup (the CPU time TCG charges), the four runs use the \
     slice down to less than RESCHED_NS, check_curr renews it as the sleeper goes to sleep and no run is cut: \
     470 switches/s. The simulation with 1.03 ms runs gives 465 switches/s and no cut run; at 1.06 ms the edge \
     falls inside the fourth run instead (578/s).";

/// A spread of shares is the end of a random walk of balancer moves.
const SPREAD_IS_A_RANDOM_WALK: &str = "The spread between the three hogs' shares is where about 70 balancer moves \
     in 10 s left them, each move giving one hog a few milliseconds over another: a random walk that covers most \
     of its range on both sides. eevdf: 5.0, 1.7 and 1.4 points over simulated seeds 1-3, 0.1-6.1 over the three \
     boots; bore: 7.4, 3.6 and 1.1 simulated, 1.5-2.7 real; the migration rates agree (eevdf 7.5 and 7.2/s, bore \
     6.9 and 7.3/s). Three runs a side do not resolve a 3-point difference in it.";

/// BORE's base slice is min_base_slice_ns rounded up to a tick: exactly one
/// tick at HZ=250.
const BORE_SLICE_IS_A_TICK: &str = "BORE 6.5.5's base slice is min_base_slice_ns (2 ms) rounded up to a whole tick: \
     exactly 4 ms at HZ=250. A hog picked just after a tick has run a little less than 4 ms at the next one (the \
     tick interval minus the switch), so its request is used up there only when that tick came later than the \
     switch took: whether a hog runs one tick or two is decided by microseconds of tick jitter. The guest's \
     emulated timer is irregular by more than the simulated ticks' 0-4 us, so about a third of its runs end after \
     one tick (run/switch histogram of thread-test-2: 134-152 runs in [2.1, 4.2) ms, 293-305 in [4.2, 8.4) ms); the \
     simulation's end after two. The share of the CPU each task gets agrees; how often it switches is a \
     property of the machine's timer at this knife edge, not of the scheduler.";

fn explanation(policy: &str, exp: &str, key: &str) -> Option<&'static str> {
    let matches = |pattern: &str, s: &str| match pattern.strip_suffix('*') {
        Some(prefix) => s.starts_with(prefix),
        None => pattern == s,
    };
    EXPLAINED
        .iter()
        .find(|(p, e, k, _)| matches(p, policy) && matches(e, exp) && matches(k, key))
        .map(|(_, _, _, text)| *text)
}

/// One policy's results: per experiment, simulated and real figures.
struct Checked {
    policy: &'static PolicyInfo,
    kernel_file: PathBuf,
    /// Per experiment: simulated and real figures, and the length of a run.
    rows: Vec<(&'static Experiment, Vec<Figure>, Vec<Figure>, f64)>,
    /// Host CPUs idle before the real runs, the lowest seen, and how many
    /// of the runs recorded it (runs kept by older versions did not).
    idle_min: f64,
    idle_runs: usize,
    real_runs: usize,
    /// The guest machine as the real runs' reports describe it.
    machine: String,
}

/// The command line of one run of `exp`: its workload sized to the guests.
fn experiment_common(exp: &Experiment, duration: u64, seed: u64) -> Common {
    let mut c = common(exp.workload, exp.params, duration);
    c.cpus = Some(CPUS);
    c.seed = Some(seed);
    c
}

/// The real run kept at `path` by an earlier validate, if there is one of
/// this length (one that finished early reports its makespan as length).
fn kept_run(path: &Path, duration: u64) -> Result<Option<Report>> {
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let r: Report =
        serde_json::from_str(&text).with_context(|| format!("{} is not a report: remove it", path.display()))?;
    let same = r.duration_ns.abs_diff(duration) < duration / 10
        || (r.totals.makespan_ns.is_some() && r.duration_ns <= duration);
    Ok(same.then_some(r))
}

pub fn run(opts: Options) -> Result<()> {
    let runs = opts.runs.unwrap_or(if opts.quick { 1 } else { 3 });
    if !(1..=20).contains(&runs) {
        bail!("--runs {runs}: give from 1 to 20 runs per figure");
    }
    let policies = choose_policies(&opts)?;
    let experiments: Vec<&Experiment> = EXPERIMENTS.iter().filter(|e| !opts.quick || e.quick).collect();
    let data = opts.out.join("validation");
    std::fs::create_dir_all(&data)
        .with_context(|| format!("cannot create {}: check the directory is writable", data.display()))?;

    let vm_args = VmArgs { accel: opts.accel, memory: 1024, timeout: None };
    let host = HostArgs { no_trace: false, no_groups: false };
    let started = Instant::now();
    let mut checked = Vec::new();
    for (policy, kernel_file) in policies {
        let mut c = Checked {
            policy,
            kernel_file,
            rows: Vec::new(),
            idle_min: f64::INFINITY,
            idle_runs: 0,
            real_runs: 0,
            machine: String::new(),
        };
        let label = policy.kernel.map_or(policy.name, |k| k.0);
        for exp in &experiments {
            // --quick runs fewer experiments once, each as long as in the
            // full suite: the tolerances hold for runs of that length (a
            // 1 s run's mean run per switch moved 12% with its first slices).
            let duration = exp.secs * SEC;
            let sims: Vec<Report> = (1..=runs as u64)
                .into_par_iter()
                .map(|seed| simulate(&load_workload(&experiment_common(exp, duration, seed))?, policy.name))
                .collect::<Result<_>>()?;
            let mut reals = Vec::new();
            for run in 1..=runs {
                let kept = data.join(format!("{}-{}-{run}.json", policy.name, exp.id));
                let reused = if opts.reuse { kept_run(&kept, duration)? } else { None };
                let report = if let Some(r) = reused {
                    r
                } else {
                    let idle = wait_for_quiet();
                    eprintln!(
                        "schedlab: validate: {} {} run {run}/{runs} in {} ({:.0} s so far)",
                        policy.name,
                        exp.id,
                        c.kernel_file.display(),
                        started.elapsed().as_secs_f64()
                    );
                    let cm = experiment_common(exp, duration, run as u64);
                    let w = load_workload(&cm)?;
                    let mut r = vm::run(&cm, &w, &c.kernel_file, label, &vm_args, &host)?;
                    if let Some(h) = r.host.as_mut() {
                        h.notes.push(format!("{IDLE_NOTE}{idle:.2}"));
                    }
                    std::fs::write(&kept, serde_json::to_string(&r)?)
                        .with_context(|| format!("cannot write {}", kept.display()))?;
                    r
                };
                if let Some(h) = report.host.as_ref() {
                    c.machine = h.machine.clone();
                    let idle = h.notes.iter().find_map(|n| n.strip_prefix(IDLE_NOTE)?.parse::<f64>().ok());
                    if let Some(idle) = idle {
                        c.idle_min = c.idle_min.min(idle);
                        c.idle_runs += 1;
                    }
                    c.real_runs += 1;
                }
                reals.push(report);
            }
            c.rows.push((exp, medians(exp, &sims), medians(exp, &reals), duration as f64 / 1e9));
        }
        checked.push(c);
    }

    let (text, tallies, unexplained) = page(&opts, runs, &checked);
    for (name, (figures, within, explained, missing)) in tallies {
        eprintln!(
            "schedlab: validate: {name}: {within} of {figures} figures within tolerance, {explained} flagged and \
             explained, {missing} unexplained"
        );
    }
    let md = opts.out.join("validation.md");
    std::fs::write(&md, text).with_context(|| format!("cannot write {}", md.display()))?;
    eprintln!(
        "schedlab: wrote {} ({} policies, {} experiments, {} runs each, {:.0} s)",
        md.display(),
        checked.len(),
        experiments.len(),
        runs,
        started.elapsed().as_secs_f64()
    );
    if !unexplained.is_empty() {
        bail!(
            "{} figure(s) outside tolerance with no explanation: {}. Explain each from the source (validate.rs, \
             EXPLAINED) or fix the model",
            unexplained.len(),
            unexplained.join(", ")
        );
    }
    Ok(())
}

/// The policies to check and their kernel files. Named policies must have
/// a kernel; by default every policy whose kernel file is there.
fn choose_policies(opts: &Options) -> Result<Vec<(&'static PolicyInfo, PathBuf)>> {
    let mut out = Vec::new();
    if opts.sched.is_empty() {
        for p in POLICIES {
            if let Some((file, _)) = p.kernel {
                let path = opts.kernels.join(format!("{file}.bzImage"));
                if path.is_file() {
                    out.push((p, path));
                } else {
                    eprintln!("schedlab: validate: {} skipped: no {}", p.name, path.display());
                }
            }
        }
        if out.is_empty() {
            bail!(
                "no guest kernel found in {}: give the directory of the *.bzImage files with --kernels",
                opts.kernels.display()
            );
        }
        return Ok(out);
    }
    for name in &opts.sched {
        let Some(p) = POLICIES.iter().find(|p| p.name == name) else {
            bail!(
                "unknown scheduler '{name}': choose one of {}",
                POLICIES.iter().filter(|p| p.kernel.is_some()).map(|p| p.name).collect::<Vec<_>>().join(", ")
            );
        };
        let Some((file, _)) = p.kernel else {
            bail!("{name} has no bootable kernel to be checked against (see `schedlab list`)");
        };
        let path = opts.kernels.join(format!("{file}.bzImage"));
        if !path.is_file() {
            bail!(
                "{} is not there: build it with tools/kernel/build.sh or give its directory with --kernels",
                path.display()
            );
        }
        out.push((p, path));
    }
    Ok(out)
}

/// The note a kept real run carries: the host CPUs idle before it.
const IDLE_NOTE: &str = "host CPUs idle before the run (schedlab validate): ";

/// Waits (up to 30 s) for 1.5 host CPUs to be idle, as the two vCPUs need,
/// and returns the idle CPUs measured last.
fn wait_for_quiet() -> f64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let idle = schedlab_host::info::idle_cpus(Duration::from_millis(300));
        if idle >= 1.5 || Instant::now() >= deadline {
            if idle < 1.5 {
                eprintln!("schedlab: validate: only {idle:.1} host CPUs idle: the real runs may lose ticks");
            }
            return idle;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Per policy: figures, within tolerance, flagged and explained, unexplained.
type Tally = (usize, usize, usize, usize);

/// The page, each policy's tally and the unexplained figures' names.
fn page(opts: &Options, runs: usize, checked: &[Checked]) -> (String, Vec<(&'static str, Tally)>, Vec<String>) {
    let mut t = String::new();
    let mut unexplained = Vec::new();
    let mut tallies = Vec::new();
    let cmd = format!(
        "schedlab validate{}{}",
        if opts.quick { " --quick" } else { "" },
        if opts.runs.is_some() { format!(" --runs {runs}") } else { String::new() }
    );
    let _ = write!(
        t,
        "# Validation: each model against its own kernel\n\n\
         Written by `{cmd}` (schedlab {}). Each policy that has a bootable kernel runs the experiments \
         below in the simulator and, as real threads (`schedlab host`), in that kernel booted under QEMU \
         (`schedlab vm`) on {CPUS} vCPUs for {} each. Every figure is the median of {runs} run{}: seeds 1 to \
         {runs} simulated, {runs} boot{} of the kernel.\n\n\
         **Tolerances.** Rates (switches/s, migrations/s) and makespans: within {:.0}%, or within 1/s or \
         two standard deviations of the real run's event count (2 sqrt(n)), whichever is larger: a rate \
         of 20 events in a run cannot be told from one of 24. Shares: within \
         {SHARE_POINTS:.0} percentage points. Durations (run time per switch, wakeup latency p50): within \
         {:.0}% at tick scale (run time per switch is the p50 where one kind of task runs, and each \
         kind's mean beside another kind, where the p50 of the mixture could be anything between the \
         two); where both sides are below 250 µs only the order is compared, because under \
         TCG the CPU is emulated and every switch and wakeup costs what the emulation costs, not what the \
         scheduler decides. A figure outside its tolerance is flagged ⚑ and explained from the source \
         below its table, or it is a defect of the model (`schedlab validate` exits non-zero while one \
         is unexplained).\n\n",
        env!("CARGO_PKG_VERSION"),
        if opts.quick { "3 s".to_string() } else { "3 s (smp-fairness 10 s)".to_string() },
        if runs == 1 { "" } else { "s" },
        if runs == 1 { "" } else { "s" },
        RATIO_TOLERANCE * 100.0,
        RATIO_TOLERANCE * 100.0,
    );
    t.push_str("| policy | model follows | kernel | figures | within | flagged, explained | unexplained |\n");
    t.push_str("|---|---|---|---:|---:|---:|---:|\n");
    let mut sections = String::new();
    for c in checked {
        let (section, counts, missing) = policy_section(c);
        sections.push_str(&section);
        unexplained.extend(missing);
        tallies.push((c.policy.name, counts));
        let _ = writeln!(
            t,
            "| {} | {} | {} ({}) | {} | {} | {} | {} |",
            c.policy.name,
            c.policy.source,
            c.policy.kernel.map_or("-", |k| k.1),
            vm::kernel_label(&c.kernel_file),
            counts.0,
            counts.1,
            counts.2,
            counts.3
        );
    }
    let without: Vec<String> = POLICIES
        .iter()
        .filter(|p| !checked.iter().any(|c| c.policy.name == p.name))
        .map(|p| match p.kernel {
            Some((file, what)) => {
                if opts.sched.is_empty() {
                    format!("{} ({what}: no {file}.bzImage in {})", p.name, opts.kernels.display())
                } else {
                    format!("{} (not asked for)", p.name)
                }
            }
            None => format!("{} (no bootable kernel of {})", p.name, p.source),
        })
        .collect();
    if !without.is_empty() {
        let _ = writeln!(t, "\nNot checked: {}.", without.join("; "));
    }
    t.push('\n');
    t.push_str(&sections);
    (t, tallies, unexplained)
}

/// One policy's table; counts (figures, within, explained, unexplained) and
/// the unexplained figures' names.
fn policy_section(c: &Checked) -> (String, Tally, Vec<String>) {
    let mut t = String::new();
    let mut counts = (0, 0, 0, 0);
    let mut missing = Vec::new();
    let _ = write!(
        t,
        "## {}: {}\n\nModel: {}. Kernel: {}. Host CPUs idle before the real runs: {}.\n\n\
         | experiment | figure | simulated | real (range) | sim/real | |\n|---|---|---:|---:|---:|---|\n",
        c.policy.name,
        c.policy.kernel.map_or("-", |k| k.1),
        c.policy.source,
        if c.machine.is_empty() { c.kernel_file.display().to_string() } else { c.machine.clone() },
        if c.idle_runs == 0 {
            "not recorded".to_string()
        } else if c.idle_runs < c.real_runs {
            format!("at least {:.1} in the {} of {} runs that recorded it", c.idle_min, c.idle_runs, c.real_runs)
        } else {
            format!("at least {:.1}", c.idle_min)
        }
    );
    let mut notes: Vec<(&'static str, Vec<String>)> = Vec::new();
    for (exp, sim, real, secs) in &c.rows {
        let mut first = true;
        for s in sim {
            let Some(r) = real.iter().find(|r| r.key == s.key) else { continue };
            counts.0 += 1;
            let (ratio, verdict) = judge(s.kind, s.value, r.value, *secs);
            let mark = match verdict {
                Verdict::Within => {
                    counts.1 += 1;
                    String::new()
                }
                Verdict::SameOrder => {
                    counts.1 += 1;
                    "order".into()
                }
                Verdict::Outside => match explanation(c.policy.name, exp.id, &s.key) {
                    Some(text) => {
                        counts.2 += 1;
                        let n = match notes.iter().position(|(t, _)| *t == text) {
                            Some(i) => i,
                            None => {
                                notes.push((text, Vec::new()));
                                notes.len() - 1
                            }
                        };
                        notes[n].1.push(format!("{} {}", exp.id, s.label));
                        format!("⚑ [{}]", n + 1)
                    }
                    None => {
                        counts.3 += 1;
                        missing.push(format!("{} {} {}", c.policy.name, exp.id, s.label));
                        "⚑ **unexplained**".into()
                    }
                },
            };
            let name = if first { format!("{} <br><small>{}</small>", exp.id, exp.what) } else { String::new() };
            first = false;
            let real = if r.range.0 < r.range.1 {
                format!(
                    "{} <small>({} - {})</small>",
                    show(r.kind, r.value),
                    show(r.kind, r.range.0),
                    show(r.kind, r.range.1)
                )
            } else {
                show(r.kind, r.value)
            };
            let _ = writeln!(t, "| {name} | {} | {} | {real} | {ratio} | {mark} |", s.label, show(s.kind, s.value));
        }
    }
    if !notes.is_empty() {
        t.push_str("\nFlags:\n\n");
        for (i, (text, which)) in notes.iter().enumerate() {
            let _ = writeln!(t, "{}. *{}*: {text}", i + 1, which.join(", "));
        }
    }
    t.push('\n');
    (t, counts, missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerances_flag_what_they_say() {
        assert_eq!(judge(Kind::Rate, 250.0, 251.0, 3.0).1, Verdict::Within);
        assert_eq!(judge(Kind::Rate, 250.0, 280.0, 3.0).1, Verdict::Outside);
        // Below 1/s apart, a rate agrees whatever the ratio.
        assert_eq!(judge(Kind::Rate, 0.0, 0.4, 3.0).1, Verdict::Within);
        // 20 events in 3 s against 24: within counting noise; not 200 against 240.
        assert_eq!(judge(Kind::Rate, 8.0, 6.7, 3.0).1, Verdict::Within);
        assert_eq!(judge(Kind::Rate, 8.0, 6.7, 30.0).1, Verdict::Outside);
        assert_eq!(judge(Kind::Share, 42.9, 40.0, 3.0).1, Verdict::Within);
        assert_eq!(judge(Kind::Share, 50.0, 13.7, 3.0).1, Verdict::Outside);
        assert_eq!(judge(Kind::Time, 2_000.0, 40_000.0, 3.0).1, Verdict::SameOrder);
        assert_eq!(judge(Kind::Time, 2_000.0, 4_000_000.0, 3.0).1, Verdict::Outside);
        assert_eq!(judge(Kind::Time, 4_014_000.0, 3_998_000.0, 3.0).1, Verdict::Within);
    }

    #[test]
    fn medians_take_the_middle_run() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0]), 2.5);
    }

    #[test]
    fn explanations_match_by_prefix() {
        assert!(explanation("bmq", "lat-ctx", "switches").is_some());
        assert!(explanation("bmq", "lat-ctx", "share:ping").is_none());
        assert!(explanation("eevdf", "jitter", "share:cyclic").is_some());
    }

    #[test]
    fn every_experiment_names_a_builtin_workload_with_its_params() {
        for e in EXPERIMENTS {
            let w = load_workload(&experiment_common(e, SEC, 1)).unwrap_or_else(|err| panic!("{}: {err}", e.id));
            assert_eq!(w.nr_cpus(), CPUS, "{}", e.id);
        }
        assert!(EXPERIMENTS.iter().any(|e| e.quick));
    }
}
