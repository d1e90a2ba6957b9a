//! The scheduling policies schedlab simulates, each behind the engine's
//! [`Policy`] interface, and the registry that builds them by name.

pub mod baby;
pub mod bfs;
pub mod bpfland;
mod common;
pub mod fair;
pub mod muqss;
pub mod pelt;
pub mod projc;
pub mod scx;
pub mod smp;
pub mod weights;

pub use common::{TunableSpec, apply_tunables, list_tunables, value_of};
use schedlab_sim::{Engine, EngineOptions, Observer, Policy, Report, Workload};

/// How a built-in policy is made for a workload.
pub type Constructor = fn(&Workload) -> Result<Box<dyn Policy>, String>;

/// A policy schedlab can build, with the source version it follows.
pub struct PolicyInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub source: &'static str,
    /// Whether it has group scheduling (cpu.weight, cpu.max).
    pub groups: bool,
    /// The guest kernel (`NAME.bzImage` of ../shared/kernels) this model is
    /// checked against by `schedlab validate`, and what that kernel is; None
    /// where no kernel of the scheduler can be booted.
    pub kernel: Option<(&'static str, &'static str)>,
    /// Boot parameters that make that kernel run as the model's defaults
    /// assume (`schedlab validate` boots it with them).
    pub boot_args: &'static [&'static str],
    /// A sched_ext scheduler the kernel loads for the model (`vm --scx
    /// NAME`): the model is of that BPF scheduler, not of the kernel's own.
    pub scx: Option<&'static str>,
    /// For a policy without a bootable kernel: what its model was audited
    /// against line by line (docs/schedulers.md lists what was checked).
    pub audit: Option<&'static str>,
    /// Where its pick costs O(queued tasks) by design, as in its source:
    /// why (`schedlab bench` says so beside its figures).
    pub linear_pick: Option<&'static str>,
    /// Builds it for a workload (its CPUs, groups, tunables); None for a
    /// registered policy, built by its [`UserPolicy::build`].
    pub build: Option<Constructor>,
}

pub const POLICIES: &[PolicyInfo] = &[
    PolicyInfo {
        name: "cfs",
        summary: "Completely Fair Scheduler: vruntime order, sched_latency/min_granularity slices",
        source: "Linux 6.1.192 kernel/sched/fair.c",
        groups: true,
        kernel: Some(("cfs-6.1", "Linux 6.1.192")),
        boot_args: &[],
        scx: None,
        audit: None,
        linear_pick: None,
        build: Some(|w| Ok(Box::new(fair::Fair::new(fair::Variant::Cfs, w)?))),
    },
    PolicyInfo {
        name: "eevdf",
        summary: "Earliest Eligible Virtual Deadline First: lag, eligibility, base_slice deadlines",
        source: "Linux 6.12.117 kernel/sched/fair.c, features.h",
        groups: true,
        kernel: Some(("eevdf-6.12", "Linux 6.12.117")),
        boot_args: &[],
        scx: None,
        audit: None,
        linear_pick: None,
        build: Some(|w| Ok(Box::new(fair::Fair::new(fair::Variant::Eevdf, w)?))),
    },
    PolicyInfo {
        name: "bore",
        summary: "EEVDF with BORE's burst penalty: tasks that run long without sleeping lose weight",
        source: "BORE 6.5.5 on Linux 6.12.117 (patches/bore-6.12.patch)",
        groups: true,
        kernel: Some(("bore-6.12", "BORE 6.5.5 on Linux 6.12.117")),
        boot_args: &[],
        scx: None,
        audit: None,
        linear_pick: None,
        build: Some(|w| Ok(Box::new(fair::Fair::new_bore(w)?))),
    },
    PolicyInfo {
        name: "bfs",
        summary: "one global runqueue, earliest virtual deadline first, nice as deadline ratio",
        source: "BFS v0.512 (Con Kolivas, Linux 4.8)",
        groups: false,
        kernel: None,
        boot_args: &[],
        scx: None,
        audit: Some("kernel/sched/bfs.c of BFS v0.512 (as carried by trilean/linux-4.9-pca)"),
        linear_pick: Some("earliest_deadline_task walks the global queue past tasks other CPUs cannot take"),
        build: Some(|w| Ok(Box::new(bfs::Bfs::new(w)?))),
    },
    PolicyInfo {
        name: "muqss",
        summary: "BFS deadlines on skiplist runqueues (shared by an LLC's cores), each pick looks at every runqueue",
        source: "MuQSS v0.205 (Con Kolivas, 5.10-ck1; patches/muqss-5.10.patch)",
        groups: false,
        kernel: Some(("muqss-5.10", "MuQSS v0.205 on Linux 5.10.262")),
        // Built with RQ_NONE; the model's default is MuQSS's own (mc).
        boot_args: &["rqshare=mc"],
        scx: None,
        audit: None,
        linear_pick: None,
        build: Some(|w| Ok(Box::new(muqss::Muqss::new(w)?))),
    },
    PolicyInfo {
        name: "bmq",
        summary: "bitmap priority queues per CPU, priority boosted by sleeping and lowered by used slices",
        source: "Project C v6.12-r1 BMQ (Alfred Chen; patches/prjc-6.12.patch)",
        groups: false,
        kernel: Some(("bmq-6.12", "Project C v6.12-r1 (BMQ) on Linux 6.12.117")),
        boot_args: &[],
        scx: None,
        audit: None,
        linear_pick: None,
        build: Some(|w| Ok(Box::new(projc::ProjectC::new(projc::Flavour::Bmq, w)?))),
    },
    PolicyInfo {
        name: "pds",
        summary: "per-CPU queues ordered by a nice-based virtual deadline in 8.4 ms units",
        source: "Project C v6.12-r1 PDS (Alfred Chen; patches/prjc-6.12.patch)",
        groups: false,
        kernel: Some(("pds-6.12", "Project C v6.12-r1 (PDS) on Linux 6.12.117")),
        boot_args: &[],
        scx: None,
        audit: None,
        linear_pick: None,
        build: Some(|w| Ok(Box::new(projc::ProjectC::new(projc::Flavour::Pds, w)?))),
    },
    PolicyInfo {
        name: "cacule",
        summary: "CFS ordered by a ULE interactivity score: the task that slept most relative to its run goes first",
        source: "CacULE-cachy with RDB for Linux 6.1 (Hamad Al Marri; patches/cacule-6.1.patch)",
        groups: true,
        kernel: Some(("cacule-6.1", "CacULE (RDB) v6.0 on Linux 6.1.192")),
        boot_args: &[],
        scx: None,
        audit: None,
        linear_pick: Some("pick_next_entity scans the cfs_rq list for the best interactivity score"),
        build: Some(|w| Ok(Box::new(fair::Fair::new_cacule(w)?))),
    },
    PolicyInfo {
        name: "tt",
        summary: "CFS with task types (realtime, interactive, CPU-bound, batch) and HRRN order, CFS balancer",
        source: "TT v6.1 (Hamad Al Marri; patches/tt-6.1.patch)",
        groups: false,
        kernel: Some(("tt-6.1", "TT v6.1 on Linux 6.1.192")),
        boot_args: &[],
        scx: None,
        audit: None,
        linear_pick: Some("__pick_first_entity scans the cfs_rq list for the best HRRN"),
        build: Some(|w| Ok(Box::new(fair::Fair::new_tt(w)?))),
    },
    PolicyInfo {
        name: "baby",
        summary: "minimal per-CPU deadline scheduler: one-tick round robin by deadline",
        source: "Baby (deadline) for Linux 5.14 (Hamad Al Marri)",
        groups: false,
        kernel: None,
        boot_args: &[],
        scx: None,
        audit: Some("bs.c of baby-dl-5.14.patch (hamadmarri/Baby-CPU-Scheduler)"),
        linear_pick: Some("pick_next_entity scans the per-CPU list for the earliest deadline"),
        build: Some(|w| Ok(Box::new(baby::Baby::new(w)?))),
    },
    PolicyInfo {
        name: "bpfland",
        summary: "sched_ext scx_bpfland: vruntime deadlines with wakeup-frequency lag, per-CPU and shared DSQs",
        source: "scx_bpfland 1.1.4 (sched-ext/scx, Andrea Righi) on Linux 6.12's sched_ext core",
        groups: false,
        kernel: Some(("scx-6.12", "scx_bpfland 1.1.4 on Linux 6.12.117 (sched_ext)")),
        boot_args: &[],
        scx: Some("bpfland"),
        audit: None,
        linear_pick: None,
        build: Some(|w| Ok(Box::new(bpfland::Bpfland::policy(w)?))),
    },
];

/// Builds a policy for a workload; what [`register`] takes beside its
/// [`PolicyInfo`].
pub type Builder = Box<dyn Fn(&Workload) -> Result<Box<dyn Policy>, String> + Send + Sync>;

/// A policy written outside schedlab (see docs/writing-a-policy.md), which
/// the CLI and `build` offer beside the built-in ones once registered.
pub struct UserPolicy {
    pub info: PolicyInfo,
    pub build: Builder,
}

impl UserPolicy {
    /// A policy named `name` (what `--sched` selects), described by
    /// `summary`, built by `build` for each run.
    pub fn new(
        name: &'static str,
        summary: &'static str,
        build: impl Fn(&Workload) -> Result<Box<dyn Policy>, String> + Send + Sync + 'static,
    ) -> UserPolicy {
        UserPolicy {
            info: PolicyInfo {
                name,
                summary,
                source: "a user's policy (registered with schedlab_policies::register)",
                groups: false,
                kernel: None,
                boot_args: &[],
                scx: None,
                audit: None,
                linear_pick: None,
                build: None,
            },
            build: Box::new(build),
        }
    }
}

static USER_POLICIES: std::sync::OnceLock<Vec<UserPolicy>> = std::sync::OnceLock::new();

/// Whether `name` can name a policy of one's own: plain (1 to 32
/// lowercase letters, digits, `-`, `_`), as `--sched` takes it and as
/// reports and file names carry it.
pub fn check_name(name: &str) -> Result<(), String> {
    let plain = !name.is_empty()
        && name.len() <= 32
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if plain {
        Ok(())
    } else {
        Err(format!("policy name '{}': use 1 to 32 lowercase letters, digits, '-' or '_'", name.escape_default()))
    }
}

/// Adds policies to the registry, once per process, before any is built:
/// their names must be new, and plain (lowercase letters, digits, `-`,
/// `_`), as `--sched` takes them.
pub fn register(policies: Vec<UserPolicy>) -> Result<(), String> {
    let mut seen: Vec<&str> = POLICIES.iter().map(|p| p.name).collect();
    for p in &policies {
        let name = p.info.name;
        check_name(name)?;
        if seen.contains(&name) {
            return Err(format!("policy name '{name}' is taken (by a built-in or an earlier registration): rename it"));
        }
        seen.push(name);
    }
    USER_POLICIES.set(policies).map_err(|_| "policies were registered already: register them all at once".to_string())
}

/// Every policy: the built-in ones, then those registered.
pub fn all() -> Vec<&'static PolicyInfo> {
    POLICIES.iter().chain(USER_POLICIES.get().into_iter().flatten().map(|u| &u.info)).collect()
}

/// Whether `name` is a registered policy (not a built-in one).
pub fn is_user_policy(name: &str) -> bool {
    USER_POLICIES.get().is_some_and(|u| u.iter().any(|p| p.info.name == name))
}

/// `w` simulated under the policy named `name`: what every front end
/// (the CLI, the Python package, the benchmarks) runs. An error names the
/// policy.
pub fn simulate(w: &Workload, name: &str) -> Result<Report, String> {
    Engine::new(w, build(name, w)?, EngineOptions::default()).run().map_err(|e| format!("{name}: {e}"))
}

/// [`simulate`] with `observer` seeing each event as it happens (a
/// timeline, a trace writer, a decision counter).
pub fn simulate_observed<'w>(w: &'w Workload, name: &str, observer: &'w mut dyn Observer) -> Result<Report, String> {
    Engine::new(w, build(name, w)?, EngineOptions::default())
        .with_observer(observer)
        .run()
        .map_err(|e| format!("{name}: {e}"))
}

/// Builds the policy `name` for a workload (its CPUs, groups, tunables).
pub fn build(name: &str, w: &Workload) -> Result<Box<dyn Policy>, String> {
    if let Some(u) = USER_POLICIES.get().into_iter().flatten().find(|u| u.info.name == name) {
        return (u.build)(w).map_err(|e| format!("{name}: {e}"));
    }
    match POLICIES.iter().find(|p| p.name == name).and_then(|p| p.build) {
        Some(build) => build(w),
        None => Err(format!(
            "unknown scheduler '{name}'{}: choose one of {}",
            schedlab_sim::names::did_you_mean(name, all().iter().map(|p| p.name)),
            all().iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registered_name_is_plain_and_new() {
        let named = |name: &'static str| vec![UserPolicy::new(name, "test", |_| Err("not built".into()))];
        assert_eq!(
            register(named("eevdf")).unwrap_err(),
            "policy name 'eevdf' is taken (by a built-in or an earlier registration): rename it"
        );
        assert!(register(named("../rr")).unwrap_err().starts_with("policy name '../rr': use 1 to 32 lowercase"));
        assert!(register(named("")).is_err());
        let mut twice = named("rr");
        twice.extend(named("rr"));
        assert!(register(twice).unwrap_err().contains("'rr' is taken"));
        // Nothing was registered by the refusals.
        assert_eq!(all().len(), POLICIES.len());
    }
}
