//! What a program needs to start in a guest that has nothing else: the
//! program, its ELF interpreter and the closure of its DT_NEEDED
//! libraries, each found as glibc 2.36's ld.so finds it (elf/dl-load.c,
//! `_dl_map_object`), so that the file packed is the file that would load:
//!
//! 1. the DT_RPATH of the object that needs it and of the objects that
//!    loaded that one, back to the program, unless the object has a
//!    DT_RUNPATH;
//! 2. (LD_LIBRARY_PATH: the guest's environment has none);
//! 3. the object's own DT_RUNPATH;
//! 4. the directories ld.so.cache was built from (/etc/ld.so.conf and its
//!    includes): the guest has no cache, so the runner gives the program
//!    the ones that held a library as LD_LIBRARY_PATH;
//! 5. the system directories (Debian's multiarch ones, then /lib, /usr/lib).
//!
//! `$ORIGIN` is the directory of the object that names it. A candidate of
//! another ELF class or machine is passed over, as ld.so passes over an
//! i386 library in a 64-bit search. A script (`#!`) brings its
//! interpreter, and `#!/usr/bin/env NAME` the NAME found on PATH.

use goblin::elf::Elf;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// ld.so's built-in search directories on Debian's x86-64 glibc.
const SYSTEM_DIRS: [&str; 4] = ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"];

/// What to put in the guest for one program.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Closure {
    /// The program as it will be run (its path on this machine, the same
    /// path in the guest).
    pub program: PathBuf,
    /// Every file to pack, each at the path it is loaded by (a symlink's
    /// name, with its target's content): the program, interpreters and
    /// libraries.
    pub files: BTreeSet<PathBuf>,
    /// Directories outside ld.so's built-in ones that held a library.
    pub library_dirs: BTreeSet<PathBuf>,
}

/// The program `name` names as a shell finds it: a path if it holds a
/// '/', else the first executable file of that name on PATH.
pub fn find_program(name: &str) -> Result<PathBuf, String> {
    if name.is_empty() {
        return Err("an empty program name: give the program after --, e.g. -- stress-ng --cpu 2".into());
    }
    if name.contains('/') {
        let path = PathBuf::from(name);
        let abs = if path.is_absolute() {
            path
        } else {
            std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?.join(path)
        };
        return check_executable(&abs).map(|()| abs);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut found_not_executable = None;
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join(name);
        if candidate.is_file() {
            match check_executable(&candidate) {
                Ok(()) => return Ok(candidate),
                Err(e) => found_not_executable = found_not_executable.or(Some(e)),
            }
        }
    }
    Err(found_not_executable.unwrap_or_else(|| {
        format!("'{name}' is not on PATH: install it (e.g. apt-get install {name}) or give its path")
    }))
}

fn check_executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if meta.is_dir() {
        return Err(format!("{} is a directory, not a program", path.display()));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(format!(
            "{} is not executable: chmod +x it, or run its interpreter as the program",
            path.display()
        ));
    }
    Ok(())
}

/// Whether `path` is an executable ELF file with an interpreter (a
/// dynamically linked program, whose libraries a guest needs too).
pub fn is_elf_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    executable
        && std::fs::read(path)
            .is_ok_and(|d| d.starts_with(b"\x7fELF") && Elf::parse(&d).is_ok_and(|e| e.interpreter.is_some()))
}

/// The closure of the program at `path` (found by [`find_program`]).
pub fn closure(path: &Path) -> Result<Closure, String> {
    let mut c = Closure { program: path.to_path_buf(), ..Closure::default() };
    let conf_dirs = ld_so_conf_dirs(Path::new("/etc/ld.so.conf"));
    add_executable(path, &mut c, &conf_dirs, 0)?;
    Ok(c)
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// A program or a script's interpreter, with what it loads.
fn add_executable(path: &Path, c: &mut Closure, conf_dirs: &[PathBuf], depth: u32) -> Result<(), String> {
    let data = read(path)?;
    c.files.insert(path.to_path_buf());
    if data.starts_with(b"#!") {
        if depth >= 4 {
            return Err(format!("{}: scripts name interpreters more than 4 deep", path.display()));
        }
        let line = data[2..].split(|&b| b == b'\n').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        let mut words = line.split_whitespace();
        let interp = words.next().ok_or_else(|| format!("{}: '#!' names no interpreter", path.display()))?;
        let interp_path = PathBuf::from(interp);
        if !interp_path.is_file() {
            return Err(format!(
                "{} is a script for {interp}, which this machine lacks: install it, or give the interpreter as \
                 the program",
                path.display()
            ));
        }
        add_executable(&interp_path, c, conf_dirs, depth + 1)?;
        if interp_path.file_name().is_some_and(|n| n == "env")
            && let Some(name) = words.find(|w| !w.starts_with('-'))
        {
            let found = find_program(name).map_err(|e| format!("{} runs '{name}' through env: {e}", path.display()))?;
            add_executable(&found, c, conf_dirs, depth + 1)?;
        }
        return Ok(());
    }
    let elf = Elf::parse(&data).map_err(|_| {
        format!("{} is neither an ELF executable nor a script (#!): give a program this machine runs", path.display())
    })?;
    if elf.header.e_machine != goblin::elf::header::EM_X86_64 {
        return Err(format!(
            "{} is an ELF file for another machine ({}): the guests are x86-64",
            path.display(),
            goblin::elf::header::machine_to_str(elf.header.e_machine)
        ));
    }
    if let Some(interp) = elf.interpreter {
        let interp = PathBuf::from(interp);
        if !interp.is_file() {
            return Err(format!(
                "{} needs the ELF interpreter {}, which this machine lacks",
                path.display(),
                interp.display()
            ));
        }
        add_elf(&interp, c, conf_dirs, &[])?;
    }
    add_needed(path, &elf, c, conf_dirs, &[])
}

/// A shared object found for a DT_NEEDED entry, and what it needs.
fn add_elf(path: &Path, c: &mut Closure, conf_dirs: &[PathBuf], loaders_rpath: &[PathBuf]) -> Result<(), String> {
    if !c.files.insert(path.to_path_buf()) {
        return Ok(());
    }
    let data = read(path)?;
    let elf = Elf::parse(&data).map_err(|e| format!("{} is not a readable ELF file: {e}", path.display()))?;
    add_needed(path, &elf, c, conf_dirs, loaders_rpath)
}

fn expand(entry: &str, object: &Path) -> Vec<PathBuf> {
    let origin = object.parent().unwrap_or(Path::new("/")).to_string_lossy().into_owned();
    entry
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d.replace("${ORIGIN}", &origin).replace("$ORIGIN", &origin)))
        .collect()
}

fn add_needed(
    object: &Path,
    elf: &Elf,
    c: &mut Closure,
    conf_dirs: &[PathBuf],
    loaders_rpath: &[PathBuf],
) -> Result<(), String> {
    let runpath: Vec<PathBuf> = elf.runpaths.iter().flat_map(|r| expand(r, object)).collect();
    // DT_RPATH counts for this object's own needs and, inherited, for
    // those of everything it loads; DT_RUNPATH switches both off.
    let mut rpath: Vec<PathBuf> = Vec::new();
    if runpath.is_empty() {
        rpath.extend(elf.rpaths.iter().flat_map(|r| expand(r, object)));
        rpath.extend(loaders_rpath.iter().cloned());
    }
    let (class64, machine) = (elf.is_64, elf.header.e_machine);
    for needed in &elf.libraries {
        let found = if needed.contains('/') {
            let p = PathBuf::from(needed);
            p.is_file().then_some(p)
        } else {
            let system = SYSTEM_DIRS.iter().map(PathBuf::from);
            let mut dirs = rpath.iter().cloned().chain(runpath.iter().cloned()).chain(conf_dirs.iter().cloned());
            dirs.find(|d| fits(&d.join(needed), class64, machine))
                .or_else(|| system.clone().find(|d| fits(&d.join(needed), class64, machine)))
                .map(|d| d.join(needed))
        };
        let Some(lib) = found else {
            return Err(format!(
                "{} needs {needed}, which this machine's ld.so would not find: install the package that has it \
                 (apt-file search {needed})",
                object.display()
            ));
        };
        if let Some(dir) = lib.parent()
            && !SYSTEM_DIRS.iter().any(|s| Path::new(s) == dir)
        {
            c.library_dirs.insert(dir.to_path_buf());
        }
        let inherited = if runpath.is_empty() { rpath.clone() } else { Vec::new() };
        add_elf(&lib, c, conf_dirs, &inherited)?;
    }
    Ok(())
}

/// Whether `path` is an ELF object ld.so would load for an object of this
/// class and machine.
fn fits(path: &Path, class64: bool, machine: u16) -> bool {
    let Ok(mut f) = std::fs::File::open(path) else { return false };
    let mut head = [0u8; 20];
    if std::io::Read::read_exact(&mut f, &mut head).is_err() || &head[..4] != b"\x7fELF" {
        return false;
    }
    let is64 = head[4] == 2;
    let m =
        if head[5] == 1 { u16::from_le_bytes([head[18], head[19]]) } else { u16::from_be_bytes([head[18], head[19]]) };
    is64 == class64 && m == machine
}

/// The directories of /etc/ld.so.conf, its `include` globs (`dir/*.conf`)
/// followed, in order.
fn ld_so_conf_dirs(conf: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut seen = BTreeMap::new();
    conf_file(conf, &mut out, &mut seen, 0);
    out
}

fn conf_file(conf: &Path, out: &mut Vec<PathBuf>, seen: &mut BTreeMap<PathBuf, ()>, depth: u32) {
    if depth > 8 || seen.insert(conf.to_path_buf(), ()).is_some() {
        return;
    }
    let Ok(text) = std::fs::read_to_string(conf) else { return };
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if let Some(pattern) = line.strip_prefix("include") {
            for file in glob_conf(pattern.trim(), conf) {
                conf_file(&file, out, seen, depth + 1);
            }
        } else if line.starts_with('/') && !line.starts_with("hwcap") {
            let dir = PathBuf::from(line);
            if !out.contains(&dir) {
                out.push(dir);
            }
        }
    }
}

/// The files of an include pattern: a path whose last part may hold one
/// '*' (as ld.so.conf.d/*.conf); sorted, as glob(3) sorts them.
fn glob_conf(pattern: &str, conf: &Path) -> Vec<PathBuf> {
    let pattern = if pattern.starts_with('/') {
        PathBuf::from(pattern)
    } else {
        conf.parent().unwrap_or(Path::new("/")).join(pattern)
    };
    let (Some(dir), Some(name)) = (pattern.parent(), pattern.file_name().map(|n| n.to_string_lossy().into_owned()))
    else {
        return Vec::new();
    };
    let Some((prefix, suffix)) = name.split_once('*') else { return vec![pattern.clone()] };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name().map(|n| n.to_string_lossy()).is_some_and(|n| {
                        n.len() >= prefix.len() + suffix.len() && n.starts_with(prefix) && n.ends_with(suffix)
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `ldd` says `path` loads, as the real files.
    fn ldd(path: &Path) -> BTreeSet<PathBuf> {
        let out = std::process::Command::new("ldd").arg(path).output().expect("ldd runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let p = match l.split_once("=>") {
                    Some((_, rest)) => rest.split_whitespace().next()?,
                    None => l.split_whitespace().next()?,
                };
                p.starts_with('/').then(|| std::fs::canonicalize(p).expect("a file ldd found"))
            })
            .collect()
    }

    #[test]
    fn the_closure_holds_what_ld_so_loads() {
        let exe = std::env::current_exe().unwrap();
        let mut programs = vec![exe];
        // Programs of many libraries where this machine has them (CI
        // installs stress-ng; ls is everywhere).
        for name in ["stress-ng", "cyclictest", "ls"] {
            if let Ok(p) = find_program(name) {
                programs.push(p);
            }
        }
        for p in programs {
            let c = closure(&p).unwrap();
            let packed: BTreeSet<PathBuf> =
                c.files.iter().filter(|f| **f != p).map(|f| std::fs::canonicalize(f).unwrap()).collect();
            assert_eq!(packed, ldd(&p), "{}", p.display());
        }
    }

    #[test]
    fn scripts_bring_their_interpreter_and_bad_programs_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("run.sh");
        std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let c = closure(&script).unwrap();
        assert!(c.files.contains(Path::new("/bin/sh")), "{:?}", c.files);
        assert!(c.files.iter().any(|f| f.to_string_lossy().contains("libc.so")), "{:?}", c.files);

        let missing = dir.path().join("py");
        std::fs::write(&missing, "#!/opt/nowhere/python9\n").unwrap();
        std::fs::set_permissions(&missing, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = closure(&missing).unwrap_err();
        assert!(e.contains("is a script for /opt/nowhere/python9, which this machine lacks"), "{e}");

        let data = dir.path().join("data.txt");
        std::fs::write(&data, "hello").unwrap();
        let e = find_program(data.to_str().unwrap()).unwrap_err();
        assert!(e.contains("is not executable"), "{e}");
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = closure(&data).unwrap_err();
        assert!(e.contains("neither an ELF executable nor a script"), "{e}");
        let e = find_program("no-such-program-schedlab").unwrap_err();
        assert!(e.contains("is not on PATH"), "{e}");
        assert!(find_program(dir.path().to_str().unwrap()).unwrap_err().contains("is a directory"));
    }

    #[test]
    fn ld_so_conf_includes_are_followed_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("conf.d")).unwrap();
        std::fs::write(d.join("ld.so.conf"), format!("include {}/conf.d/*.conf\n/opt/last\n", d.display())).unwrap();
        std::fs::write(d.join("conf.d/b.conf"), "# comment\n/opt/b\n").unwrap();
        std::fs::write(d.join("conf.d/a.conf"), "/opt/a\n").unwrap();
        std::fs::write(d.join("conf.d/ignored.txt"), "/opt/no\n").unwrap();
        let dirs = ld_so_conf_dirs(&d.join("ld.so.conf"));
        assert_eq!(dirs, [PathBuf::from("/opt/a"), PathBuf::from("/opt/b"), PathBuf::from("/opt/last")]);
    }
}
