//! `schedlab vm` and `compare --kernel`: the workload's host run inside a
//! real kernel booted under QEMU (schedlab_vm), its report labelled with
//! the kernel and the accelerator it ran under.

use crate::args::{Common, HostArgs};
use anyhow::{Context, Result, bail};
use clap::Args;
use schedlab_sim::time::{format_duration, parse_duration_flag};
use schedlab_sim::{Report, Workload};
use std::path::{Path, PathBuf};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_takes_m_or_g_within_bounds() {
        assert_eq!(parse_memory("1G"), Ok(1024));
        assert_eq!(parse_memory("512M"), Ok(512));
        assert!(parse_memory("512").unwrap_err().contains("in M or G"));
        assert!(parse_memory("64M").unwrap_err().contains("from 128M to 64G"));
        assert!(parse_memory("99999999999999999999G").is_err());
    }

    #[test]
    fn kernel_rows_are_named() {
        assert_eq!(parse_kernel("bmq=/k/bmq-6.12.bzImage"), Ok(("bmq".into(), PathBuf::from("/k/bmq-6.12.bzImage"))));
        assert!(parse_kernel("/k/bmq").unwrap_err().contains("NAME=FILE"));
        assert_eq!(parse_kernel("all"), Ok(("all".into(), PathBuf::new())));
        assert!(parse_kernel("=/k/bmq").unwrap_err().contains("needs a name"));
        assert_eq!(kernel_label(Path::new("../shared/kernels/pds-6.12.bzImage")), "pds-6.12");
        assert_eq!(parse_boot_arg("rqshare=mc"), Ok("rqshare=mc".into()));
        assert!(parse_boot_arg("nosmt").is_ok());
        assert!(parse_boot_arg("init=/bin/sh").unwrap_err().contains("set by schedlab vm"));
        assert!(parse_boot_arg("a b").unwrap_err().contains("not a kernel parameter"));
        assert!(parse_boot_arg("x;reboot").is_err());
        assert!(parse_boot_arg("").is_err());
    }
}

#[derive(Args, Clone)]
pub(crate) struct VmArgs {
    /// Accelerator: auto (KVM when it brings the guest up, else TCG), kvm
    /// or tcg.
    #[arg(long, default_value = "auto", value_parser = clap::value_parser!(schedlab_vm::Accel))]
    pub(crate) accel: schedlab_vm::Accel,
    /// Guest memory, e.g. 1G or 512M.
    #[arg(long, default_value = "1G", value_parser = parse_memory)]
    pub(crate) memory: u64,
    /// How long the guest may take after booting before it is killed
    /// (default: 2 minutes plus twice the duration).
    #[arg(long, value_parser = parse_duration_flag, value_name = "TIME")]
    pub(crate) timeout: Option<u64>,
    /// A kernel boot parameter for the guest, e.g. rqshare=mc for MuQSS
    /// (repeatable).
    #[arg(long = "boot-arg", value_name = "PARAM", value_parser = parse_boot_arg)]
    pub(crate) boot_args: Vec<String>,
    /// A sched_ext scheduler to run in the guest (a kernel with sched_ext,
    /// such as scx-6.12): NAME for scx_NAME in $SCHEDLAB_KERNELS/scx or on
    /// PATH, or a path to one's own build; its arguments after ':', e.g.
    /// bpfland or rusty:--slice-us-underutil 10000.
    #[arg(long, value_name = "SCHED[:ARGS]")]
    pub(crate) scx: Option<String>,
}

impl VmArgs {
    /// These options for the row `label`: a compare row named
    /// `scx-6.12+bpfland` runs scx_bpfland.
    pub(crate) fn for_row(&self, label: &str) -> VmArgs {
        let mut vm = self.clone();
        if vm.scx.is_none()
            && let Some((_, sched)) = label.split_once('+')
        {
            vm.scx = Some(sched.to_string());
        }
        vm
    }
}

/// Where `--scx NAME` looks first: the scx/ of the kernels' directory.
fn scx_dir() -> PathBuf {
    crate::commands::program::kernels_dir().join("scx")
}

/// The job with the sched_ext scheduler of `--scx`, if any: its binary
/// and libraries, and /job/scx.json for the guest's init.
fn with_scx(job: &schedlab_vm::GuestJob, vm: &VmArgs) -> Result<schedlab_vm::GuestJob> {
    let mut job = job.clone();
    let Some(spec) = &vm.scx else { return Ok(job) };
    let (path, args) = schedlab_vm::scx::find(spec, &scx_dir()).map_err(|e| anyhow::anyhow!("--scx: {e}"))?;
    let closure = schedlab_vm::elf::closure(&path).map_err(|e| anyhow::anyhow!("--scx: {e}"))?;
    job.extra.extend(closure.files.into_iter().map(schedlab_vm::initramfs::Extra::File));
    let scx = schedlab_vm::scx::ScxJob { path: path.to_string_lossy().into_owned(), args };
    let name = schedlab_vm::scx::SCX_FILE.rsplit('/').next().unwrap_or("scx.json").to_string();
    job.files.push((name, serde_json::to_vec(&scx)?));
    Ok(job)
}

/// Parameters the vm runner sets itself: the console it reads, the init it
/// runs and what it does on a panic.
const OWN_BOOT_ARGS: [&str; 6] = ["console", "quiet", "loglevel", "panic", "rdinit", "init"];

/// One kernel boot parameter: `word` or `key=value` of the characters a
/// command line carries without quoting, and none the runner sets itself.
pub(crate) fn parse_boot_arg(s: &str) -> Result<String, String> {
    let ok = |c: char| c.is_ascii_alphanumeric() || "_.,:=+-/".contains(c);
    if s.is_empty() || s.len() > 200 || !s.chars().all(ok) {
        return Err(format!(
            "'{}' is not a kernel parameter: give one word or key=value of letters, digits and _.,:=+-/ (at most \
             200), e.g. rqshare=mc",
            s.chars().take(40).collect::<String>()
        ));
    }
    let key = s.split('=').next().unwrap_or_default();
    if OWN_BOOT_ARGS.contains(&key) {
        return Err(format!("'{key}' is set by schedlab vm itself (the guest's console and init): leave it out"));
    }
    Ok(s.to_string())
}

fn parse_memory(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'G' | 'g')) => (&t[..i], 1024),
        Some((i, 'M' | 'm')) => (&t[..i], 1),
        _ => return Err(format!("'{s}': give the memory in M or G, e.g. 1G or 512M")),
    };
    let mib = num.parse::<u64>().ok().and_then(|n| n.checked_mul(mult));
    match mib {
        Some(m) if (128..=65536).contains(&m) => Ok(m),
        _ => Err(format!("'{s}': give a guest memory from 128M to 64G")),
    }
}

/// One --kernel of compare: `NAME=FILE`, a bzImage's path (named after the
/// file), a kernel's name in the kernels' directory, or `all` (kept as the
/// name "all" with no file, and expanded by the command).
pub(crate) fn parse_kernel(s: &str) -> Result<(String, PathBuf), String> {
    let s = s.trim();
    if s == "all" {
        return Ok(("all".into(), PathBuf::new()));
    }
    if !s.contains('=') {
        // KERNEL+SCHED: the kernel running a sched_ext scheduler.
        let (base, sched) = match s.split_once('+') {
            Some((b, sc)) if !sc.is_empty() => (b, Some(sc)),
            _ => (s, None),
        };
        let label = |k: &str| sched.map_or(k.to_string(), |sc| format!("{k}+{sc}"));
        let path = PathBuf::from(base);
        if path.is_file() {
            return Ok((label(&kernel_label(&path)), path));
        }
        let dir = crate::commands::program::kernels_dir();
        let named = dir.join(format!("{base}.bzImage"));
        if !base.contains('/') && named.is_file() {
            return Ok((label(base), named));
        }
        return Err(format!(
            "'{s}' is neither a kernel file nor a kernel in {}: give NAME=FILE, a bzImage's path, a name such as \
             bmq-6.12 (scx-6.12+bpfland for a sched_ext scheduler), or all",
            dir.display()
        ));
    }
    let (name, file) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not NAME=FILE, e.g. bmq=../shared/kernels/bmq-6.12.bzImage"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("'{s}': the row needs a name before '='"));
    }
    Ok((name.to_string(), PathBuf::from(file.trim())))
}

/// A `vm` row's name: the kernel's, and the sched_ext scheduler's after a
/// '+' (scx-6.12+bpfland).
pub(crate) fn row_label(kernel: &Path, vm: &VmArgs) -> String {
    let label = kernel_label(kernel);
    match &vm.scx {
        Some(spec) => {
            let name = spec.split(':').next().unwrap_or(spec);
            let name = name.rsplit('/').next().unwrap_or(name);
            format!("{label}+{}", name.strip_prefix("scx_").unwrap_or(name))
        }
        None => label,
    }
}

/// The name a kernel file gives its row: the file name without .bzImage.
pub(crate) fn kernel_label(file: &Path) -> String {
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.strip_suffix(".bzImage").unwrap_or(&name).to_string()
}

/// Boots `kernel` on `topology` vCPUs, runs `job` in it and returns what
/// it printed, after passing its warnings and messages on to stderr; a
/// failed command is an error naming what it said.
/// The extra figure of a vm report: host CPUs that processes other than
/// QEMU used while the guest ran (steal time included).
pub(crate) const HOST_OTHERS: &str = "host_other_processes_cpus";
/// From this much, the report says so.
const HOST_OTHERS_WARN_CPUS: f64 = 0.1;

pub(crate) fn run_in_guest(
    job: &schedlab_vm::GuestJob,
    kernel: &Path,
    topology: [u32; 3],
    run_timeout: u64,
    vm: &VmArgs,
    label: &str,
) -> Result<schedlab_vm::VmRun> {
    let opts = schedlab_vm::VmOptions {
        kernel: kernel.to_path_buf(),
        accel: vm.accel,
        memory_mib: vm.memory,
        topology,
        run_timeout: std::time::Duration::from_nanos(run_timeout),
        boot_args: vm.boot_args.clone(),
    };
    let job = with_scx(job, vm)?;
    // The error keeps its type: an interrupted run exits as the signal says.
    let out = schedlab_vm::run(&job, &opts).map_err(|e| anyhow::Error::new(e).context(format!("vm {label}")))?;
    for warning in &out.warnings {
        eprintln!("schedlab: vm {label}: {warning}");
    }
    let messages = out.messages();
    if out.exit_code != 0 {
        if let Some(m) = messages.iter().find(|m| m.contains(schedlab_vm::scx::EJECTED)) {
            // Typed, so that validate boots the run again and lists it as
            // it lists a kernel that crashed.
            let e = schedlab_vm::VmError::SchedulerEjected { message: m.to_string() };
            return Err(anyhow::Error::new(e).context(format!("vm {label}: schedlab in the guest failed")));
        }
        bail!(
            "vm {label}: schedlab in the guest failed (exit {}): {}",
            out.exit_code,
            if messages.is_empty() { "it printed nothing".to_string() } else { messages.join("; ") }
        );
    }
    for m in &messages {
        eprintln!("schedlab: vm {label}: guest: {m}");
    }
    Ok(out)
}

/// `schedlab calibrate --json` in `kernel` on `cpus` vCPUs: the guest's
/// own costs as the simulator takes them, and the figures behind them.
pub(crate) fn calibrate(kernel: &Path, cpus: u32, vm: &VmArgs, label: &str) -> Result<serde_json::Value> {
    let job = schedlab_vm::GuestJob {
        args: vec!["schedlab".into(), "calibrate".into(), "--json".into(), "--samples".into(), "0.25".into()],
        files: Vec::new(),
        extra: Vec::new(),
    };
    let out = run_in_guest(&job, kernel, [1, cpus, 1], vm.timeout.unwrap_or(180_000_000_000), vm, label)?;
    serde_json::from_str(&out.stdout)
        .with_context(|| format!("vm {label}: the guest's calibration did not arrive whole"))
}

/// The guest's command line: `schedlab host` on the same workload with the
/// same seed, duration and parameters, printing its report as JSON.
fn guest_job(common: &Common, w: &Workload, host: &HostArgs, keep_trace: bool) -> Result<schedlab_vm::GuestJob> {
    let mut files = Vec::new();
    let path = Path::new(&common.workload);
    let workload = if path.is_file() {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "workload".into());
        let text = std::fs::read(path).with_context(|| format!("cannot read workload file {}", path.display()))?;
        files.push((name.clone(), text));
        format!("{}/{name}", schedlab_vm::initramfs::JOB_DIR)
    } else {
        common.workload.clone()
    };
    let mut args: Vec<String> = vec!["schedlab".into(), "host".into(), workload, "--json".into()];
    args.extend(["--seed".into(), w.seed.to_string(), "--duration".into(), format!("{}ns", w.duration)]);
    if let Some(cpus) = common.cpus {
        args.extend(["--cpus".into(), cpus.to_string()]);
    }
    for (k, v) in &common.param {
        args.extend(["--param".into(), format!("{k}={v}")]);
    }
    // The guest is a machine of its own: its trace takes every task, so
    // the placement counts see the kernel's own threads.
    args.push(if host.no_trace { "--no-trace" } else { "--trace-machine" }.into());
    if host.no_groups {
        args.push("--no-groups".into());
    }
    for ev in &host.trace_events {
        args.extend(["--trace-event".into(), ev.clone()]);
    }
    if keep_trace {
        args.push("--with-trace".into());
    }
    Ok(schedlab_vm::GuestJob { args, files, extra: Vec::new() })
}

/// Names a guest's report after its kernel and says what the guest was:
/// the accelerator, vCPUs, boot time, and what that means for its figures.
pub(crate) fn label_report(
    report: &mut Report,
    out: &schedlab_vm::VmRun,
    topology: [u32; 3],
    kernel: &Path,
    label: &str,
) {
    report.source = "vm".into();
    report.extra.push((HOST_OTHERS.to_string(), (out.host_others_cpus * 100.0).round() / 100.0));
    report.scheduler = format!("{label} (vm)");
    let cpus = topology.iter().product::<u32>();
    if let Some(h) = report.host.as_mut() {
        h.machine = format!(
            "QEMU {}, {cpus} vCPUs ({}x{}x{}), {}",
            out.accel,
            topology[0],
            topology[1],
            topology[2],
            kernel.display()
        );
        h.notes.push(format!("guest booted in {}", format_duration(out.boot.as_nanos() as u64)));
        h.notes.extend(schedlab_vm::scx::console_notes(&out.console));
        if out.host_others_cpus >= HOST_OTHERS_WARN_CPUS {
            h.notes.push(format!(
                "other processes on the host used {:.2} CPUs while the guest ran: its vCPUs waited for them, and a \
                 vCPU that waits longer than a jiffy loses ticks",
                out.host_others_cpus
            ));
        }
        if out.accel == schedlab_vm::Accel::Tcg {
            h.notes.push(
                "TCG emulates the CPU: the kernel's decisions are real, costs and absolute latencies are not this \
                 hardware's (compare latencies as an order, not a value)"
                    .into(),
            );
            let host_cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            if cpus as usize > host_cpus {
                h.notes.push(format!(
                    "{cpus} vCPUs on {host_cpus} host CPUs: vCPUs share host CPUs, so a vCPU can lose time (and ticks) \
                     to another"
                ));
            }
        }
    }
}

/// Runs `w` (read from `common`) in `kernel` under QEMU and returns its
/// report, its scheduler named `label`, and with `keep_trace` the guest's
/// trace of every task (tracefs text), when the guest could trace.
pub(crate) fn run(
    common: &Common,
    w: &Workload,
    kernel: &Path,
    label: &str,
    vm: &VmArgs,
    host: &HostArgs,
    keep_trace: bool,
) -> Result<(Report, Option<String>)> {
    if keep_trace && host.no_trace {
        bail!("--trace-out keeps the guest's trace, and --no-trace turns tracing off: drop one");
    }
    if !common.set.is_empty() {
        bail!("--set changes simulated tunables; a real kernel runs with its own (compare the tunables it reports)");
    }
    if !common.cost.is_empty() {
        bail!("--cost sets what the simulator charges; a real kernel pays its own costs");
    }
    let t = &w.machine.topology;
    let topology = [t.llcs, t.cores_per_llc, t.threads_per_core];
    let run_timeout = vm.timeout.unwrap_or(120_000_000_000 + w.duration.saturating_mul(2));
    let out = run_in_guest(&guest_job(common, w, host, keep_trace)?, kernel, topology, run_timeout, vm, label)?;
    let whole = || format!("vm {label}: the guest's report did not arrive whole");
    let (mut report, trace): (Report, Option<String>) = if keep_trace {
        #[derive(serde::Deserialize)]
        struct WithTrace {
            report: Report,
            trace: Option<String>,
        }
        let both: WithTrace = serde_json::from_str(&out.stdout).with_context(whole)?;
        (both.report, both.trace)
    } else {
        (serde_json::from_str(&out.stdout).with_context(whole)?, None)
    };
    if keep_trace && trace.is_none() {
        eprintln!("schedlab: vm {label}: the guest recorded no trace (see the report's tracing line)");
    }
    label_report(&mut report, &out, topology, kernel, label);
    Ok((report, trace))
}
