//! Names the commit this binary is built from (SCHEDLAB_COMMIT), for the
//! real runs `schedlab validate` measures: each says which schedlab
//! measured it. Outside a git checkout it is "unknown".

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
    println!("cargo:rustc-env=SCHEDLAB_COMMIT={commit}");
    // A new commit moves HEAD's branch (or HEAD itself when detached).
    let git = Path::new("../../.git");
    for path in ["HEAD", "refs/heads", "packed-refs"] {
        let p = git.join(path);
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
}
