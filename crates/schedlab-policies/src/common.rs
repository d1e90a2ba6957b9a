//! Pieces the non-CFS policies share: tunable parsing under the kernel's
//! names, CPU locality as BFS/MuQSS/Project C rank it, one-shot per-CPU
//! slice timers (hrtick / hrexpiry) and key-ordered runqueues.

#[cfg(test)]
use schedlab_sim::Workload;
use schedlab_sim::workload::SchedPolicy;
use schedlab_sim::{CpuId, Nanos, Sys, TaskId, Tunable};
use std::collections::{BTreeMap, BTreeSet};

/// One tunable: its kernel name, allowed range and help, with the value in force.
#[derive(Clone, Debug)]
pub struct TunableSpec {
    pub name: &'static str,
    pub value: i64,
    pub min: i64,
    pub max: i64,
    pub help: &'static str,
}

/// Moves the names `table` knows out of `set`, for a policy built on
/// another (CacULE and TT on CFS) whose remaining names the base checks.
pub fn take_own(table: &[TunableSpec], set: &mut BTreeMap<String, i64>) -> BTreeMap<String, i64> {
    let (mine, rest) = std::mem::take(set).into_iter().partition(|(k, _)| table.iter().any(|s| s.name == k.as_str()));
    *set = rest;
    mine
}

/// Applies `--set`/`[tunables]` values to a policy's table; one clear error
/// for an unknown name or a value out of range.
pub fn apply_tunables(policy: &str, table: &mut [TunableSpec], set: &BTreeMap<String, i64>) -> Result<(), String> {
    for (name, &value) in set {
        let Some(spec) = table.iter_mut().find(|s| s.name == name) else {
            return Err(format!(
                "unknown tunable '{name}' for {policy}{}: known are {}",
                schedlab_sim::names::did_you_mean(name, table.iter().map(|s| s.name)),
                table.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
            ));
        };
        if value < spec.min || value > spec.max {
            return Err(format!("{name} = {value} is out of range for {policy}: use {}..={}", spec.min, spec.max));
        }
        spec.value = value;
    }
    Ok(())
}

pub fn value_of(table: &[TunableSpec], name: &str) -> i64 {
    table.iter().find(|s| s.name == name).map_or(0, |s| s.value)
}

pub fn list_tunables(table: &[TunableSpec]) -> Vec<Tunable> {
    table.iter().map(|s| Tunable { name: s.name, value: s.value, help: s.help }).collect()
}

/// cpu_locality as BFS and MuQSS set it up: 0 the same CPU, 1 an SMT
/// sibling, 2 another core sharing the cache, 3 a CPU beyond the cache.
pub fn locality(sys: &Sys, a: CpuId, b: CpuId) -> u32 {
    if a == b {
        0
    } else if sys.topology.core_of(a) == sys.topology.core_of(b) {
        1
    } else if sys.topology.share_cache(a, b) {
        2
    } else {
        3
    }
}

/// CPUs ordered by locality from `from` (rq_order / cpu_order), then by
/// distance in CPU numbers, `from` first.
pub fn cpu_order(sys: &Sys, from: CpuId) -> Vec<CpuId> {
    let n = sys.nr_cpus;
    let mut v: Vec<CpuId> = (0..n).map(|i| (from + i) % n).collect();
    v.sort_by_key(|&c| locality(sys, from, c));
    v
}

/// The allowed CPU in `candidates` nearest to `from` (best_mask_cpu).
pub fn nearest(sys: &Sys, from: CpuId, candidates: impl Iterator<Item = CpuId>) -> Option<CpuId> {
    candidates.min_by_key(|&c| (locality(sys, from, c), (c + sys.nr_cpus - from) % sys.nr_cpus))
}

/// One-shot hrtimers per CPU that end a slice (hrtick), as late as the
/// machine's timers fire: arming a new one invalidates the old through an
/// epoch in the token.
pub struct SliceTimers {
    epoch: Vec<u32>,
    tag: u64,
}

impl SliceTimers {
    /// `tag` keeps these tokens apart from a policy's other timers.
    pub fn new(nr_cpus: u32, tag: u64) -> SliceTimers {
        SliceTimers { epoch: vec![0; nr_cpus as usize], tag }
    }

    pub fn arm(&mut self, sys: &mut Sys, cpu: CpuId, at: Nanos) {
        let e = &mut self.epoch[cpu as usize];
        *e = e.wrapping_add(1);
        sys.arm_hrtimer(at, self.tag | ((cpu as u64) << 32) | *e as u64);
    }

    pub fn cancel(&mut self, cpu: CpuId) {
        let e = &mut self.epoch[cpu as usize];
        *e = e.wrapping_add(1);
    }

    /// The CPU whose current timer this token is, if it is still current.
    pub fn fired(&self, token: u64) -> Option<CpuId> {
        if token & (0xff << 56) != self.tag {
            return None;
        }
        let cpu = ((token >> 32) & 0xff_ffff) as CpuId;
        (self.epoch.get(cpu as usize) == Some(&(token as u32))).then_some(cpu)
    }
}

/// The note of a scheduler that has no group scheduling (no cpu cgroup
/// controller): a workload's groups are ignored and every task competes
/// on its own.
pub fn no_groups(policy: &str, sys: &Sys) -> Vec<String> {
    if sys.groups.len() > 1 {
        vec![format!("cgroups (cpu.weight, cpu.max): {policy} has no group scheduling, so the groups were ignored")]
    } else {
        Vec::new()
    }
}

/// SCHED_ISO tasks under a policy without it run as SCHED_NORMAL; the
/// report says so.
pub fn no_iso(policy: &str, sys: &Sys) -> Vec<String> {
    if sys.tasks.iter().any(|t| t.policy == SchedPolicy::Iso) {
        vec![format!("SCHED_ISO: {policy} has no SCHED_ISO (only bfs and muqss do), so iso tasks ran as SCHED_NORMAL")]
    } else {
        Vec::new()
    }
}

/// Runqueues ordered by (key, arrival), FIFO within one key: BFS's global
/// skiplist, MuQSS's per-CPU skiplists and Project C's per-CPU queues. Each
/// task remembers where it is filed, so removal needs no search.
pub struct KeyedQueues {
    queues: Vec<BTreeSet<(u64, u64, TaskId)>>,
    /// Per task: (queue, key, arrival) while it is queued.
    slot: Vec<Option<(u32, u64, u64)>>,
    seq: u64,
}

impl KeyedQueues {
    pub fn new(nr_queues: usize) -> KeyedQueues {
        KeyedQueues { queues: vec![BTreeSet::new(); nr_queues], slot: Vec::new(), seq: 0 }
    }

    /// Files `t` in queue `q` behind every task with a key <= `key`.
    pub fn insert(&mut self, q: u32, t: TaskId, key: u64) {
        self.remove(t);
        self.seq += 1;
        if self.slot.len() <= t as usize {
            self.slot.resize(t as usize + 1, None);
        }
        self.slot[t as usize] = Some((q, key, self.seq));
        self.queues[q as usize].insert((key, self.seq, t));
    }

    pub fn remove(&mut self, t: TaskId) {
        if let Some((q, key, seq)) = self.slot.get_mut(t as usize).and_then(Option::take) {
            self.queues[q as usize].remove(&(key, seq, t));
        }
    }

    /// The queue holding `t`, if it is queued.
    pub fn queue_of(&self, t: TaskId) -> Option<u32> {
        self.slot.get(t as usize).copied().flatten().map(|(q, _, _)| q)
    }

    /// Queue `q`'s tasks in order, with their keys.
    pub fn iter(&self, q: u32) -> impl Iterator<Item = (u64, TaskId)> + '_ {
        self.queues[q as usize].iter().map(|&(k, _, t)| (k, t))
    }

    pub fn first(&self, q: u32) -> Option<(u64, TaskId)> {
        self.iter(q).next()
    }

    pub fn len(&self, q: u32) -> usize {
        self.queues[q as usize].len()
    }

    pub fn nr_queues(&self) -> usize {
        self.queues.len()
    }
}

/// A detached machine of 2 CPUs for a policy's unit tests, with the
/// workload it was made from (one task, which the tests replace).
#[cfg(test)]
pub(crate) fn two_cpus() -> (Workload, Sys) {
    let text = "name = \"x\"\nduration = \"1s\"\n[machine]\ncpus = 2\n[[task]]\nname = \"a\"\nprogram = [ { run = \"1ms\" } ]\n";
    let w = Workload::from_toml(text, "x", &Default::default()).unwrap();
    let sys = Sys::detached(&w);
    (w, sys)
}

/// A normal task at `nice` on CPU 0, asleep: what a unit test pushes onto
/// a detached machine before the policy's task_new.
#[cfg(test)]
pub(crate) fn sleeping_task(nice: i32) -> schedlab_sim::TaskInfo {
    schedlab_sim::TaskInfo {
        spec: 0,
        nice,
        policy: schedlab_sim::workload::SchedPolicy::Normal,
        affinity: None,
        group: 0,
        slice: None,
        parent: None,
        state: schedlab_sim::TaskState::Sleeping,
        cpu: 0,
        sum_exec: 0,
        last_ran: 0,
        slept_at: 0,
        last_sleep_len: 0,
        futex_wait: false,
    }
}
