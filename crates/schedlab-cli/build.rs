//! Names the commit this binary is built from (SCHEDLAB_COMMIT), for the
//! real runs `schedlab validate` measures: each says which schedlab
//! measured it. Outside a git checkout it is "unknown"; a tree with
//! changes to tracked files not committed adds "+dirty", since the runs it
//! boots are then measured by code no commit holds.

use std::path::Path;
use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "unknown".into());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .is_some_and(|o| !o.stdout.is_empty());
    let commit = if dirty && commit != "unknown" { format!("{commit}+dirty") } else { commit };
    println!("cargo:rustc-env=SCHEDLAB_COMMIT={commit}");
    // An edit makes the tree dirty, a commit clean again: look again when
    // a source or the index changes.
    for dir in ["../../crates", "../../Cargo.toml", "../../.git/index"] {
        if Path::new(dir).exists() {
            println!("cargo:rerun-if-changed={dir}");
        }
    }
    // A new commit moves HEAD's branch (or HEAD itself when detached).
    let git = Path::new("../../.git");
    for path in ["HEAD", "refs/heads", "packed-refs"] {
        let p = git.join(path);
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
}
