//! Task groups on the real kernel: one cgroup per workload group under a
//! private `schedlab-PID` directory of the cpu controller, weights and
//! quotas as the workload gives them, removed again when the run ends.
//!
//! Threads of one process can sit in different groups only with the cgroup
//! v1 cpu controller (its `tasks` file takes thread ids) or in v2's threaded
//! mode; schedlab uses v1 where the cpu controller is mounted there and
//! otherwise says why it runs without groups.

use schedlab_sim::workload::{GroupSpec, check_group_name};
use std::path::{Path, PathBuf};

pub struct Cgroups {
    /// Directory of each group; index 0 (the root group) is None.
    dirs: Vec<Option<PathBuf>>,
    /// The `tasks` file of each group, made before any thread needs it.
    tasks: Vec<Option<PathBuf>>,
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

/// Groups of run PID live in `schedlab-PID` under the controller's root.
const DIR_PREFIX: &str = "schedlab-";

/// Removes the groups of runs whose process is gone (SIGKILL, OOM, abort:
/// no Drop ran), deepest first, and says what it removed.
pub fn remove_stale() -> Vec<String> {
    let Some(root) = v1_cpu_root(&mounts()) else { return Vec::new() };
    let mut said = Vec::new();
    for (dir, pid) in crate::signals::stale_entries(&root, DIR_PREFIX) {
        let mut tree = Vec::new();
        collect_dirs(&dir, &mut tree);
        // Deepest first: a cgroup goes only once it has no children.
        tree.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        if tree.iter().all(|d| std::fs::remove_dir(d).is_ok()) {
            said.push(format!("removed cgroup {}, left by schedlab run {pid}, which was killed", dir.display()));
        }
    }
    said
}

fn collect_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    out.push(dir.to_path_buf());
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                collect_dirs(&e.path(), out);
            }
        }
    }
}

fn v1_cpu_root(all: &[(String, String, String)]) -> Option<PathBuf> {
    all.iter()
        .find(|(_, fstype, opts)| fstype == "cgroup" && opts.split(',').any(|o| o == "cpu"))
        .map(|(dir, _, _)| PathBuf::from(dir))
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| format!("writing {value} to {}: {e}", path.display()))
}

impl Cgroups {
    /// Creates the groups, or says why it cannot.
    pub fn setup(groups: &[GroupSpec]) -> Result<Cgroups, String> {
        let all = mounts();
        let Some(root) = v1_cpu_root(&all) else {
            let v2 = all.iter().any(|(_, fstype, _)| fstype == "cgroup2");
            return Err(if v2 {
                "the cpu controller is on cgroup v2 only, where threads of one process share a group unless \
                 threaded cgroups are set up, which schedlab does not do yet; running without groups"
                    .into()
            } else {
                "no cgroup cpu controller is mounted; running without groups".into()
            });
        };
        let base = root.join(format!("{DIR_PREFIX}{}", crate::signals::run_name()));
        let mut cg = Cgroups { dirs: vec![None; groups.len()], tasks: vec![None; groups.len()], created: Vec::new() };
        std::fs::create_dir(&base).map_err(|e| {
            format!(
                "cannot create {} ({e}); run as root or delegate the cpu controller; running without groups",
                base.display()
            )
        })?;
        cg.created.push(base.clone());
        if !base.join("cpu.shares").exists() {
            // MuQSS's Kconfig hides FAIR_GROUP_SCHED: the controller mounts
            // and makes directories, but has nothing to weigh them with.
            return Err("this kernel's cpu controller has no cpu.shares: it has no group scheduling (MuQSS, for \
                        one); running without groups"
                .into());
        }
        for (i, g) in groups.iter().enumerate().skip(1) {
            let parent = g.parent.and_then(|p| cg.dirs[p as usize].clone()).unwrap_or_else(|| base.clone());
            // rt-app names a group by its path ("/tg1/sub"); its directory
            // is the last component, under its parent's. The name was
            // checked when the workload was read; checked again here, as
            // a join with anything but one plain component would leave the
            // controller's directory, as root.
            let leaf = g.name.rsplit('/').next().unwrap_or_default();
            check_group_name(leaf)?;
            let dir = parent.join(leaf);
            std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            cg.created.push(dir.clone());
            // cgroup v2 cpu.weight 100 is v1's cpu.shares 1024.
            let shares = (g.cpu_weight as u64 * 1024 / 100).max(2);
            write(&dir.join("cpu.shares"), &shares.to_string())?;
            if let Some((quota, period)) = g.cpu_max {
                write(&dir.join("cpu.cfs_period_us"), &(period / 1000).to_string())?;
                write(&dir.join("cpu.cfs_quota_us"), &(quota / 1000).to_string())?;
            }
            cg.tasks[i] = Some(dir.join("tasks"));
            cg.dirs[i] = Some(dir);
        }
        Ok(cg)
    }

    /// Moves thread `tid` into `group`. It allocates nothing but on an
    /// error (a forked task thread allocates nothing: `sys::malloc_settings`).
    pub fn attach(&self, group: u32, tid: i32) -> Result<(), String> {
        use std::io::Write;
        let Some(tasks) = &self.tasks[group as usize] else { return Ok(()) };
        let mut digits = [0u8; 12];
        let mut cursor = std::io::Cursor::new(&mut digits[..]);
        let _ = write!(cursor, "{tid}");
        let len = cursor.position() as usize;
        std::fs::OpenOptions::new()
            .write(true)
            .open(tasks)
            .and_then(|mut f| f.write_all(&digits[..len]))
            .map_err(|e| format!("writing {tid} to {}: {e}", tasks.display()))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Says that a test skips, where `cargo test` shows it without
    /// --nocapture (the harness captures the print macros, not writes to the
    /// stderr handle itself) and tools/test.sh counts it.
    fn skip(why: &str) {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIPPED {}: {why}", std::thread::current().name().unwrap_or("a test"));
    }

    #[test]
    fn rt_app_paths_become_nested_cgroups_under_the_run() {
        let group = |name: &str, parent| GroupSpec { name: name.into(), parent, cpu_weight: 100, cpu_max: None };
        let groups = [GroupSpec::root(), group("/tg1", Some(0)), group("/tg1/sub", Some(1))];
        let cg = match Cgroups::setup(&groups) {
            Ok(cg) => cg,
            Err(why) => {
                skip(&why);
                return;
            }
        };
        let base = cg.created[0].clone();
        assert!(base.file_name().unwrap().to_string_lossy().starts_with(DIR_PREFIX));
        assert_eq!(cg.dirs[2].as_deref(), Some(base.join("tg1").join("sub").as_path()));
        assert!(base.join("tg1/sub/cpu.shares").exists());
        drop(cg);
        assert!(!base.exists(), "{} left behind", base.display());
    }
}
