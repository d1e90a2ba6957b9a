//! The guest's root file system: a newc cpio archive (the format the kernel
//! unpacks into its rootfs) holding the schedlab binary as `/init`, the
//! shared libraries it loads, a `/dev/console` node for init's first file
//! descriptors, and the job: its arguments and the files they name.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the guest finds its job.
pub const JOB_DIR: &str = "/job";
pub const ARGS_FILE: &str = "/job/args.json";

struct Archive<W: Write> {
    out: W,
    ino: u32,
    dirs: BTreeSet<String>,
}

impl<W: Write> Archive<W> {
    fn entry(&mut self, name: &str, mode: u32, rdev: (u32, u32), data: &[u8]) -> std::io::Result<()> {
        self.ino += 1;
        let size = u32::try_from(data.len())
            .map_err(|_| std::io::Error::other(format!("{name} is over 4 GiB, too large for the initramfs")))?;
        let mut w = cpio::newc::Builder::new(name.trim_start_matches('/'))
            .ino(self.ino)
            .mode(mode)
            .nlink(if mode & 0o170000 == 0o040000 { 2 } else { 1 })
            .rdev_major(rdev.0)
            .rdev_minor(rdev.1)
            .write(&mut self.out, size);
        w.write_all(data)?;
        w.finish()?;
        Ok(())
    }

    /// Creates every missing parent of `path`, parents first.
    fn parents(&mut self, path: &str) -> std::io::Result<()> {
        let mut at = String::new();
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            at.push('/');
            at.push_str(part);
            if self.dirs.insert(at.clone()) {
                self.entry(&at, 0o040755, (0, 0), &[])?;
            }
        }
        Ok(())
    }

    fn dir(&mut self, path: &str) -> std::io::Result<()> {
        self.parents(path)?;
        if self.dirs.insert(path.to_string()) {
            self.entry(path, 0o040755, (0, 0), &[])?;
        }
        Ok(())
    }

    fn file(&mut self, path: &str, mode: u32, data: &[u8]) -> std::io::Result<()> {
        self.parents(path)?;
        self.entry(path, 0o100000 | mode, (0, 0), data)
    }
}

/// The shared libraries and the ELF interpreter `binary` loads, as `ldd`
/// resolves them on this machine; none for a static binary.
fn shared_libraries(binary: &Path) -> Result<Vec<PathBuf>, String> {
    let out = match std::process::Command::new("ldd").arg(binary).output() {
        Ok(out) => out,
        Err(e) => return Err(format!("cannot run ldd to find the libraries of {}: {e}", binary.display())),
    };
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || text.contains("not a dynamic executable") || text.contains("statically linked") {
        return Ok(Vec::new());
    }
    let mut libs = Vec::new();
    for line in text.lines() {
        // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or
        // "/lib64/ld-linux-x86-64.so.2 (0x...)"; the vDSO has no file.
        let path = match line.split_once("=>") {
            Some((_, rest)) => rest.split_whitespace().next(),
            None => line.split_whitespace().next().filter(|p| p.starts_with('/')),
        };
        match path {
            Some(p) if p.starts_with('/') => libs.push(PathBuf::from(p)),
            Some("not") => return Err(format!("{} needs a library this machine lacks: {line}", binary.display())),
            _ => {}
        }
    }
    Ok(libs)
}

/// Writes the initramfs for running `binary` in the guest with `args`,
/// `files` placed under JOB_DIR by name.
pub fn write(out: &Path, binary: &Path, args: &[String], files: &[(String, Vec<u8>)]) -> Result<(), String> {
    let io = |e: std::io::Error| format!("writing the initramfs {}: {e}", out.display());
    let file = std::fs::File::create(out).map_err(io)?;
    let mut a = Archive { out: std::io::BufWriter::new(file), ino: 0, dirs: BTreeSet::new() };
    for d in ["/dev", "/proc", "/sys", "/tmp", "/run", JOB_DIR] {
        a.dir(d).map_err(io)?;
    }
    // The kernel opens /dev/console for init's stdin, stdout and stderr
    // before devtmpfs is mounted: without the node init starts deaf.
    a.entry("/dev/console", 0o020600, (5, 1), &[]).map_err(io)?;
    let exe = std::fs::read(binary).map_err(|e| format!("cannot read {}: {e}", binary.display()))?;
    a.file("/init", 0o755, &exe).map_err(io)?;
    for lib in shared_libraries(binary)? {
        let data = std::fs::read(&lib).map_err(|e| format!("cannot read {}: {e}", lib.display()))?;
        a.file(&lib.to_string_lossy(), 0o755, &data).map_err(io)?;
    }
    let args = serde_json::to_vec(args).map_err(|e| format!("encoding the guest's arguments: {e}"))?;
    a.file(ARGS_FILE, 0o644, &args).map_err(io)?;
    for (name, data) in files {
        a.file(&format!("{JOB_DIR}/{name}"), 0o644, data).map_err(io)?;
    }
    let out = cpio::newc::trailer(a.out).map_err(io)?;
    out.into_inner().map_err(|e| io(e.into_error()))?.sync_all().map_err(io)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_holds_init_libraries_console_and_job() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("initrd.cpio");
        let exe = std::env::current_exe().unwrap();
        let files = vec![("w.toml".to_string(), b"duration = \"1s\"".to_vec())];
        write(&out, &exe, &["host".into(), "/job/w.toml".into()], &files).unwrap();
        let mut names = Vec::new();
        let mut r = std::fs::File::open(&out).unwrap();
        loop {
            let entry = cpio::newc::Reader::new(r).unwrap();
            if entry.entry().is_trailer() {
                break;
            }
            names.push((entry.entry().name().to_string(), entry.entry().mode(), entry.entry().rdev_major()));
            r = entry.finish().unwrap();
        }
        let has = |n: &str| names.iter().any(|(name, _, _)| name == n);
        assert!(has("init") && has("job/args.json") && has("job/w.toml"), "{names:?}");
        let console = names.iter().find(|(n, _, _)| n == "dev/console").expect("console node");
        assert_eq!((console.1 & 0o170000, console.2), (0o020000, 5), "a character device 5:1");
        // Parents come before their children, as the kernel creates them.
        let pos = |n: &str| names.iter().position(|(name, _, _)| name == n).unwrap();
        assert!(pos("job") < pos("job/w.toml"));
        for lib in shared_libraries(&exe).unwrap() {
            assert!(has(lib.to_string_lossy().trim_start_matches('/')), "{} missing", lib.display());
        }
    }
}
