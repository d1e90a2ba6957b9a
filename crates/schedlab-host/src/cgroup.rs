//! Task groups on the real kernel: one cgroup per workload group under a
//! private `schedlab-PID` directory of the cpu controller, weights and
//! quotas as the workload gives them, removed again when the run ends.
//!
//! Threads of one process can sit in different groups only with the cgroup
//! v1 cpu controller (its `tasks` file takes thread ids) or in v2's threaded
//! mode; schedlab uses v1 where the cpu controller is mounted there and
//! otherwise says why it runs without groups.

use schedlab_sim::workload::GroupSpec;
use std::path::{Path, PathBuf};

pub struct Cgroups {
    /// Directory of each group; index 0 (the root group) is None.
    dirs: Vec<Option<PathBuf>>,
    /// Created directories, parents first.
    created: Vec<PathBuf>,
}

fn mounts() -> Vec<(String, String, String)> {
    std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 4).then(|| (f[1].to_string(), f[2].to_string(), f[3].to_string()))
        })
        .collect()
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| format!("writing {value} to {}: {e}", path.display()))
}

impl Cgroups {
    /// Creates the groups, or says why it cannot.
    pub fn setup(groups: &[GroupSpec]) -> Result<Cgroups, String> {
        let all = mounts();
        let v1 = all
            .iter()
            .find(|(_, fstype, opts)| fstype == "cgroup" && opts.split(',').any(|o| o == "cpu"))
            .map(|(dir, _, _)| PathBuf::from(dir));
        let Some(root) = v1 else {
            let v2 = all.iter().any(|(_, fstype, _)| fstype == "cgroup2");
            return Err(if v2 {
                "the cpu controller is on cgroup v2 only, where threads of one process share a group unless \
                 threaded cgroups are set up, which schedlab does not do yet; running without groups"
                    .into()
            } else {
                "no cgroup cpu controller is mounted; running without groups".into()
            });
        };
        let base = root.join(format!("schedlab-{}", std::process::id()));
        let mut cg = Cgroups { dirs: vec![None; groups.len()], created: Vec::new() };
        std::fs::create_dir(&base).map_err(|e| {
            format!(
                "cannot create {} ({e}); run as root or delegate the cpu controller; running without groups",
                base.display()
            )
        })?;
        cg.created.push(base.clone());
        for (i, g) in groups.iter().enumerate().skip(1) {
            let parent = g.parent.and_then(|p| cg.dirs[p as usize].clone()).unwrap_or_else(|| base.clone());
            let dir = parent.join(&g.name);
            std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            cg.created.push(dir.clone());
            // cgroup v2 cpu.weight 100 is v1's cpu.shares 1024.
            let shares = (g.cpu_weight as u64 * 1024 / 100).max(2);
            write(&dir.join("cpu.shares"), &shares.to_string())?;
            if let Some((quota, period)) = g.cpu_max {
                write(&dir.join("cpu.cfs_period_us"), &(period / 1000).to_string())?;
                write(&dir.join("cpu.cfs_quota_us"), &(quota / 1000).to_string())?;
            }
            cg.dirs[i] = Some(dir);
        }
        Ok(cg)
    }

    pub fn attach(&self, group: u32, tid: i32) -> Result<(), String> {
        match &self.dirs[group as usize] {
            Some(dir) => write(&dir.join("tasks"), &tid.to_string()),
            None => Ok(()),
        }
    }
}

impl Drop for Cgroups {
    fn drop(&mut self) {
        // Children first; the threads have exited, so each group is empty.
        for dir in self.created.iter().rev() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}
