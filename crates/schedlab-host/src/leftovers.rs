//! What a run killed by SIGKILL, an abort or the OOM killer left behind,
//! removed by the next run of any command that creates such things (`host`,
//! `record`, `vm`): one sweep, so that a killed `vm`'s files go with the next
//! `host` as well as with the next `vm`.
//!
//! Each kind is recognised as schedlab's by more than its name:
//! - cgroups `schedlab-PID` under the v1 cpu controller and tracefs
//!   instances `instances/schedlab-PID`: directories of kernel file systems
//!   that only root may create there, named after a process that is gone;
//! - `$TMPDIR/schedlab-vm-PID-*`: only a directory owned by this user that
//!   holds the marker file a vm run writes first into its own directory,
//!   with that PID in it. A directory someone else named the same way is
//!   never touched.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// `$TMPDIR/schedlab-vm-PID-*`: a vm run's temporary directory.
pub const VM_TEMP_PREFIX: &str = "schedlab-vm-";
/// The file a vm run writes into its temporary directory, holding its PID.
pub const VM_MARKER: &str = ".schedlab-vm-run";

/// Removes what runs whose process is gone left behind, says what on
/// stderr at once (a run that then fails, or is stopped by a signal, never
/// gets to print its warnings, and what it removed must not go unsaid) and
/// returns the same lines.
pub fn sweep() -> Vec<String> {
    let mut said = crate::cgroup::remove_stale();
    said.extend(crate::tracing::remove_stale());
    said.extend(remove_stale_vm_dirs(&std::env::temp_dir()));
    for removed in &said {
        eprintln!("schedlab: {removed}");
    }
    said
}

/// Marks `dir` as the temporary directory of this vm run.
pub fn mark_vm_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::write(dir.join(VM_MARKER), std::process::id().to_string())
}

fn remove_stale_vm_dirs(tmp: &Path) -> Vec<String> {
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    let mut said = Vec::new();
    for (path, pid) in crate::signals::stale_entries(tmp, VM_TEMP_PREFIX) {
        let ours = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir() && m.uid() == uid)
            && std::fs::read_to_string(path.join(VM_MARKER)).is_ok_and(|text| text.trim() == pid.to_string());
        if ours && std::fs::remove_dir_all(&path).is_ok() {
            said.push(format!("removed {}, left by schedlab vm run {pid}, which was killed", path.display()));
        }
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_marked_directories_of_dead_runs_go() {
        let tmp = std::env::temp_dir().join(format!("schedlab-leftovers-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).unwrap();
        // 4000002 is above any pid_max: no such process runs.
        let ns = crate::signals::pid_namespace();
        let marked = tmp.join(format!("schedlab-vm-4000002-ns{ns}-abc"));
        std::fs::create_dir(&marked).unwrap();
        std::fs::write(marked.join(VM_MARKER), "4000002").unwrap();
        std::fs::write(marked.join("initrd.cpio"), "x").unwrap();
        // A user's directory that only looks like one, and one whose marker
        // names another run.
        let users = tmp.join(format!("schedlab-vm-4000002-ns{ns}-mydata"));
        std::fs::create_dir(&users).unwrap();
        std::fs::write(users.join("thesis.tex"), "x").unwrap();
        let other = tmp.join(format!("schedlab-vm-4000003-ns{ns}-x"));
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join(VM_MARKER), "4000002").unwrap();
        let said = remove_stale_vm_dirs(&tmp);
        assert!(!marked.exists());
        assert!(users.join("thesis.tex").exists(), "a user's directory was removed");
        assert!(other.exists());
        assert_eq!(said.len(), 1, "{said:?}");
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
