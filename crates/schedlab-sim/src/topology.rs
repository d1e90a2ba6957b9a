//! The simulated machine's CPUs and how they share hardware: SMT siblings
//! within a core, cores within a last-level-cache (LLC) group, LLC groups
//! within the machine. Written `cpus = 8` (one LLC, no SMT) or
//! `topology = "LLCSxCORESxTHREADS"`, e.g. "2x8x2" for 32 CPUs.

use serde::Serialize;

pub type CpuId = u32;

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Topology {
    pub llcs: u32,
    pub cores_per_llc: u32,
    pub threads_per_core: u32,
    /// (core, LLC) of each CPU: asked on every wakeup and balance, a
    /// lookup is much cheaper than the two divisions.
    #[serde(skip)]
    places: Box<[(u32, u32)]>,
}

impl Topology {
    /// One LLC of `cpus` CPUs without SMT; refused outside 1 to 4096 CPUs.
    pub fn flat(cpus: u32) -> Result<Topology, String> {
        Topology::new(1, cpus, 1)
    }

    /// Refuses a machine outside 1 to 4096 CPUs, before building its
    /// per-CPU table.
    fn new(llcs: u32, cores_per_llc: u32, threads_per_core: u32) -> Result<Topology, String> {
        let total = llcs as u64 * cores_per_llc as u64 * threads_per_core as u64;
        if total == 0 || total > 4096 {
            return Err(format!("{total} CPUs: schedlab simulates 1 to 4096 CPUs"));
        }
        let places =
            (0..total as u32).map(|c| (c / threads_per_core, c / (threads_per_core * cores_per_llc))).collect();
        Ok(Topology { llcs, cores_per_llc, threads_per_core, places })
    }

    pub fn parse(text: &str) -> Result<Topology, String> {
        let parts: Vec<&str> = text.split('x').map(str::trim).collect();
        let bad = || {
            format!(
                "topology '{text}' is not LLCSxCORESxTHREADS: write e.g. \"1x4x2\" (1 LLC, 4 cores, 2 SMT threads each)"
            )
        };
        if parts.len() != 3 {
            return Err(bad());
        }
        let n: Vec<u32> = parts.iter().map(|p| p.parse::<u32>().map_err(|_| bad())).collect::<Result<_, _>>()?;
        if n.contains(&0) {
            return Err(format!("topology '{text}': every count must be at least 1"));
        }
        Topology::new(n[0], n[1], n[2])
    }

    pub fn nr_cpus(&self) -> u32 {
        self.llcs * self.cores_per_llc * self.threads_per_core
    }

    /// Physical core index of a CPU (SMT siblings share it).
    pub fn core_of(&self, cpu: CpuId) -> u32 {
        self.places[cpu as usize].0
    }

    pub fn llc_of(&self, cpu: CpuId) -> u32 {
        self.places[cpu as usize].1
    }

    pub fn share_cache(&self, a: CpuId, b: CpuId) -> bool {
        self.llc_of(a) == self.llc_of(b)
    }

    pub fn siblings(&self, cpu: CpuId) -> std::ops::Range<CpuId> {
        let first = self.core_of(cpu) * self.threads_per_core;
        first..first + self.threads_per_core
    }

    pub fn llc_cpus(&self, cpu: CpuId) -> std::ops::Range<CpuId> {
        let per = self.threads_per_core * self.cores_per_llc;
        let first = self.llc_of(cpu) * per;
        first..first + per
    }

    /// 0 = same CPU, 1 = SMT sibling, 2 = same LLC, 3 = other LLC. BFS and
    /// MuQSS scale their locality penalties by this distance.
    pub fn distance(&self, a: CpuId, b: CpuId) -> u32 {
        self.distance_from(b)(a)
    }

    /// [`Topology::distance`] from one CPU, for a scan over many: `from`'s
    /// core and LLC are contiguous CPU ranges, looked up once.
    pub fn distance_from(&self, from: CpuId) -> impl Fn(CpuId) -> u32 + use<> {
        let (core, llc) = (self.siblings(from), self.llc_cpus(from));
        move |c| {
            if c == from {
                0
            } else if core.contains(&c) {
                1
            } else if llc.contains(&c) {
                2
            } else {
                3
            }
        }
    }
}

/// A set of CPUs (affinity masks), one bit per CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuSet {
    words: Box<[u64]>,
}

impl CpuSet {
    pub fn empty(nr_cpus: u32) -> CpuSet {
        CpuSet { words: vec![0; nr_cpus.div_ceil(64) as usize].into_boxed_slice() }
    }

    pub fn all(nr_cpus: u32) -> CpuSet {
        let mut set = CpuSet::empty(nr_cpus);
        for cpu in 0..nr_cpus {
            set.insert(cpu);
        }
        set
    }

    pub fn insert(&mut self, cpu: CpuId) {
        self.words[(cpu / 64) as usize] |= 1 << (cpu % 64);
    }

    pub fn contains(&self, cpu: CpuId) -> bool {
        self.words.get((cpu / 64) as usize).is_some_and(|w| w & (1 << (cpu % 64)) != 0)
    }

    pub fn count(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }

    pub fn first(&self) -> Option<CpuId> {
        self.iter().next()
    }

    pub fn iter(&self) -> impl Iterator<Item = CpuId> + '_ {
        self.words
            .iter()
            .enumerate()
            .flat_map(|(i, &w)| (0..64).filter(move |b| w & (1u64 << b) != 0).map(move |b| i as u32 * 64 + b))
    }

    /// Parses a cpulist as taskset -c and /sys show it: "0-3,8,10-11".
    pub fn parse_list(text: &str, nr_cpus: u32) -> Result<CpuSet, String> {
        let mut set = CpuSet::empty(nr_cpus);
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (a.trim(), b.trim()),
                None => (part, part),
            };
            let parse =
                |s: &str| s.parse::<u32>().map_err(|_| format!("'{text}' is not a CPU list: write e.g. \"0-3,6\""));
            let (lo, hi) = (parse(lo)?, parse(hi)?);
            if lo > hi {
                return Err(format!("CPU range '{part}' runs backwards"));
            }
            if hi >= nr_cpus {
                return Err(format!("CPU {hi} in '{text}' does not exist: the machine has CPUs 0-{}", nr_cpus - 1));
            }
            for cpu in lo..=hi {
                set.insert(cpu);
            }
        }
        if set.count() == 0 {
            return Err(format!("CPU list '{text}' is empty"));
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smt_and_llc_relations() {
        let t = Topology::parse("2x4x2").unwrap();
        assert_eq!(t.nr_cpus(), 16);
        assert_eq!(t.siblings(5), 4..6);
        assert_eq!(t.llc_cpus(9), 8..16);
        assert_eq!(t.distance(4, 5), 1);
        assert_eq!(t.distance(4, 6), 2);
        assert_eq!(t.distance(4, 12), 3);
        assert!(Topology::parse("2x4").unwrap_err().contains("LLCSxCORESxTHREADS"));
    }

    #[test]
    fn cpulists() {
        let s = CpuSet::parse_list("0-2,5", 8).unwrap();
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 1, 2, 5]);
        assert!(CpuSet::parse_list("9", 8).unwrap_err().contains("0-7"));
        assert_eq!(CpuSet::all(130).count(), 130);
    }
}
