//! The guest's root file system: a newc cpio archive (the format the kernel
//! unpacks into its rootfs) holding the schedlab binary as `/init`, the
//! shared libraries it loads (crate::elf), a `/dev/console` node for init's
//! first file descriptors, the job (its arguments and the files they
//! name), and for a real program its closure and `--include`s, each at its
//! own path.

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

/// One more thing to place in the guest: a file of this machine at the
/// same path, a directory, or a symlink (a source tree keeps its links).
#[derive(Clone, Debug, PartialEq)]
pub enum Extra {
    File(PathBuf),
    Dir(PathBuf),
    Symlink { path: PathBuf, target: PathBuf },
}

impl Extra {
    fn add<W: Write>(&self, a: &mut Archive<W>) -> Result<(), String> {
        fn io(p: &Path) -> impl Fn(std::io::Error) -> String + '_ {
            move |e| format!("packing {}: {e}", p.display())
        }
        match self {
            Extra::File(path) => {
                use std::os::unix::fs::PermissionsExt;
                let meta = std::fs::metadata(path).map_err(io(path))?;
                let data = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                a.file(&path.to_string_lossy(), meta.permissions().mode() & 0o7777, &data).map_err(io(path))
            }
            Extra::Dir(path) => a.dir(&path.to_string_lossy()).map_err(io(path)),
            Extra::Symlink { path, target } => {
                a.parents(&path.to_string_lossy()).map_err(io(path))?;
                a.entry(&path.to_string_lossy(), 0o120777, (0, 0), target.to_string_lossy().as_bytes())
                    .map_err(io(path))
            }
        }
    }

    /// Bytes it adds to the guest's memory.
    pub fn size(&self) -> u64 {
        match self {
            Extra::File(p) => std::fs::metadata(p).map_or(0, |m| m.len()),
            _ => 0,
        }
    }
}

/// What `--include PATH` places in the guest: the file, or the directory
/// with everything below it (symlinks as links), at its absolute path.
pub fn include(path: &Path) -> Result<Vec<Extra>, String> {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?.join(path)
    };
    let mut out = Vec::new();
    walk(&abs, &mut out)?;
    // A link that leads out of what was included (/usr/bin/gcc ->
    // gcc-12 -> x86_64-linux-gnu-gcc-12) brings the links and the file it
    // leads to, or it would dangle in the guest.
    let links: Vec<(PathBuf, PathBuf)> = out
        .iter()
        .filter_map(|x| match x {
            Extra::Symlink { path, target } => Some((path.clone(), target.clone())),
            _ => None,
        })
        .collect();
    for (mut link, mut target) in links {
        for _ in 0..16 {
            let next = link.parent().unwrap_or(Path::new("/")).join(&target);
            if next.starts_with(&abs) {
                break;
            }
            let Ok(meta) = std::fs::symlink_metadata(&next) else { break };
            if meta.file_type().is_symlink() {
                let Ok(t) = std::fs::read_link(&next) else { break };
                out.push(Extra::Symlink { path: next.clone(), target: t.clone() });
                (link, target) = (next, t);
            } else {
                if meta.is_file() {
                    out.push(Extra::File(next));
                }
                break;
            }
        }
    }
    Ok(out)
}

fn walk(path: &Path, out: &mut Vec<Extra>) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("--include {}: {e}", path.display()))?;
    let ft = meta.file_type();
    if ft.is_symlink() {
        let target = std::fs::read_link(path).map_err(|e| format!("--include {}: {e}", path.display()))?;
        out.push(Extra::Symlink { path: path.to_path_buf(), target });
    } else if ft.is_dir() {
        out.push(Extra::Dir(path.to_path_buf()));
        let mut children: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| format!("--include {}: {e}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        children.sort();
        for child in children {
            walk(&child, out)?;
        }
    } else if ft.is_file() {
        out.push(Extra::File(path.to_path_buf()));
    } else {
        return Err(format!(
            "--include {}: not a file, directory or symlink (a device or a socket cannot be copied into the guest)",
            path.display()
        ));
    }
    Ok(())
}

/// Writes the initramfs for running `binary` in the guest with `args`,
/// `files` placed under JOB_DIR by name, and `extra` at their own paths.
pub fn write(
    out: &Path,
    binary: &Path,
    args: &[String],
    files: &[(String, Vec<u8>)],
    extra: &[Extra],
) -> Result<(), String> {
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
    let own = crate::elf::closure(binary)?;
    let mut packed: BTreeSet<PathBuf> = BTreeSet::new();
    for lib in own.files.iter().filter(|f| *f != binary) {
        let data = std::fs::read(lib).map_err(|e| format!("cannot read {}: {e}", lib.display()))?;
        a.file(&lib.to_string_lossy(), 0o755, &data).map_err(io)?;
        packed.insert(lib.clone());
    }
    for x in extra {
        // A program's libraries are often schedlab's too (libc): once.
        if let Extra::File(p) = x
            && !packed.insert(p.clone())
        {
            continue;
        }
        x.add(&mut a)?;
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
        let extra = [Extra::Dir("/src/tree".into()), Extra::Symlink { path: "/src/tree/l".into(), target: "x".into() }];
        write(&out, &exe, &["host".into(), "/job/w.toml".into()], &files, &extra).unwrap();
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
        for lib in crate::elf::closure(&exe).unwrap().files.iter().filter(|f| **f != exe) {
            assert!(has(lib.to_string_lossy().trim_start_matches('/')), "{} missing", lib.display());
        }
        let link = names.iter().find(|(n, _, _)| n == "src/tree/l").expect("the symlink");
        assert_eq!(link.1 & 0o170000, 0o120000);
        assert!(pos("src") < pos("src/tree") && pos("src/tree") < pos("src/tree/l"));
    }
}
