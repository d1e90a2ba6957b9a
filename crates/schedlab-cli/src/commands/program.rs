//! Real programs in real kernels: `schedlab vm --kernel K -- PROGRAM ...`
//! and `schedlab compare --kernel all -- PROGRAM ...` (with `--host`, this
//! machine's kernel too). Each program goes into the guest's initramfs
//! with everything it loads (schedlab_vm::elf), runs under a trace of
//! every task (schedlab_vm::programs), and comes back as the report every
//! other row has; its output comes back to the caller.

use crate::args::Common;
use crate::commands::vm::{self, VmArgs};
use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use schedlab_sim::Report;
use schedlab_sim::report::recorded::{self, RecordedRun};
use schedlab_vm::initramfs::Extra;
use schedlab_vm::programs::{JOB_FILE, ProgramsJob, ProgramsResult};
use std::path::{Path, PathBuf};

#[derive(Args, Clone, Default)]
pub(crate) struct ProgramArgs {
    /// A file or directory to put in the guest at the same path (a source
    /// tree for make, an input; repeatable). The programs run in the
    /// current directory's path.
    #[arg(long, value_name = "PATH")]
    pub(crate) include: Vec<PathBuf>,
    /// Keep the guest's trace of every task (tracefs text, for `schedlab
    /// replay` and Perfetto); with several kernels, FILE gets each
    /// kernel's name before its extension.
    #[arg(long, value_name = "FILE")]
    pub(crate) trace_out: Option<PathBuf>,
    /// Real programs to run instead of a workload, after --: `-- PROGRAM
    /// [ARGS...] [+ PROGRAM [ARGS...]]...`. All start at once; the run ends
    /// when the first one exits (the others are then stopped), or at
    /// --timeout. Its exit status is schedlab's.
    #[arg(last = true, index = 2, value_name = "PROGRAM")]
    pub(crate) program: Vec<String>,
}

impl ProgramArgs {
    pub(crate) fn given(&self) -> bool {
        !self.program.is_empty()
    }

    /// These flags beside a workload, before anything runs: --include is
    /// for real programs (a workload's threads read no file), and
    /// --trace-out's file must be writable.
    pub(crate) fn check_for_workload(&self) -> Result<()> {
        if let Some(path) = self.include.first() {
            bail!(
                "--include {}: it puts files beside real programs (after --); a workload's threads read none: drop \
                 it",
                path.display()
            );
        }
        if let Some(out) = &self.trace_out {
            crate::output::check_output(out, "--trace-out")?;
        }
        Ok(())
    }

    /// Writes a guest's `trace` of a workload where --trace-out says, if it
    /// says (with `label` for one of several kernels).
    pub(crate) fn write_workload_trace(&self, trace: Option<String>, label: Option<&str>) -> Result<()> {
        match (&self.trace_out, trace) {
            (Some(out), Some(text)) => write_trace_text(&text, out, label),
            _ => Ok(()),
        }
    }
}

/// Splits `a b + c d` into the programs' command lines.
pub(crate) fn split_programs(words: &[String]) -> Result<Vec<Vec<String>>> {
    let programs: Vec<Vec<String>> = words.split(|w| w == "+").map(|p| p.to_vec()).collect();
    if programs.iter().any(|p| p.is_empty()) {
        bail!("an empty program between '+': write -- PROGRAM [ARGS] + PROGRAM [ARGS]");
    }
    Ok(programs)
}

/// What the simulator's flags would change, refused for a real program.
pub(crate) fn refuse_workload_flags(common: &Common) -> Result<()> {
    if !common.workload.is_empty() {
        bail!("give a workload or a program after --, not both ('{}' is a workload): drop one", common.workload);
    }
    let given = [
        ("--seed", common.seed.is_some()),
        ("--duration", common.duration.is_some()),
        ("--param", !common.param.is_empty()),
        ("--set", !common.set.is_empty()),
        ("--cost", !common.cost.is_empty()),
        ("--uptime", common.uptime.is_some()),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
        bail!(
            "{flag} describes a simulated workload; a real program runs as it is: give its own options (e.g. \
             stress-ng --timeout 3s), and --timeout to stop it"
        );
    }
    Ok(())
}

/// The programs and their files, ready to boot.
pub(crate) struct Prepared {
    job: ProgramsJob,
    extra: Vec<Extra>,
}

impl Prepared {
    /// Has the guest send its trace back, for a model's row beside the
    /// kernel's.
    pub(crate) fn keep_trace(&mut self) {
        self.job.keep_trace = true;
    }
}

/// The model that follows a kernel row's scheduler (`bmq-6.1` -> bmq;
/// scx-6.12 runs EEVDF until a BPF scheduler attaches; `scx-6.12+bpfland`
/// -> the model of that BPF scheduler, where there is one).
pub(crate) fn model_of(label: &str) -> Option<&'static str> {
    if let Some((_, bpf)) = label.split_once('+') {
        return schedlab_policies::all().iter().find(|p| p.scx == Some(bpf)).map(|p| p.name);
    }
    let name = label.split('-').next()?;
    let name = if name == "scx" { "eevdf" } else { name };
    schedlab_policies::all().iter().find(|p| p.name == name).map(|p| p.name)
}

/// The kernel row's run as its model makes it: the guest's trace replayed
/// on the model (as `schedlab replay` does), simulated with a trace of its
/// own, and read the way the kernel's row was (report::recorded) over the
/// same window and the same tasks: the program's, by name.
pub(crate) fn model_row(result: &ProgramsResult, label: &str) -> Result<Option<Report>> {
    use schedlab_sim::formats::trace_out::{PID_BASE, TraceFormat, TraceWriter};
    let (Some(text), Some(model)) = (&result.trace, model_of(label)) else { return Ok(None) };
    let ov = schedlab_sim::Overrides { cpus: Some(result.report.cpus), ..Default::default() };
    let (w, recording) = schedlab_sim::formats::replay::workload_from_trace(text, label, &ov)?;
    let t0 = recording.start;
    let mut buf = Vec::new();
    let spec_of = {
        let mut writer = TraceWriter::new(&w, Box::new(&mut buf), TraceFormat::Ftrace);
        let mut seen = SpecsOfTasks { trace: &mut writer, spec_of: Vec::new() };
        let sim = crate::simulate::simulate_observed(&w, model, &mut seen)?;
        let spec_of = seen.spec_of;
        writer.finish(sim.duration_ns).context("the model's trace")?;
        spec_of
    };
    let parsed = recorded::parse(&String::from_utf8_lossy(&buf)).map_err(|e| anyhow!("the model's trace: {e}"))?;
    let program: std::collections::HashSet<&str> = result.report.tasks.iter().map(|t| t.name.as_str()).collect();
    // A replayed child is forked by its parent's program, so its task id
    // is the order it was created in, not its spec's index.
    let roots = spec_of
        .iter()
        .enumerate()
        .filter(|(_, spec)| program.contains(w.tasks[**spec as usize].name.as_str()))
        .map(|(t, _)| PID_BASE + t as u32)
        .collect();
    let (from, to) = result.window;
    let run =
        RecordedRun { roots, from: from.saturating_sub(t0), to: to.saturating_sub(t0), nr_cpus: result.report.cpus };
    let head = Report {
        source: "simulated".into(),
        scheduler: format!("{model} (model of {label}'s run)"),
        workload: result.report.workload.clone(),
        hz: w.machine.hz,
        ..Report::default()
    };
    let mut report = recorded::report(&parsed, &run, head);
    // The simulated trace names a task "comm-tid" after the kernel's task
    // and adds its own pid: the kernel row's name again.
    for t in &mut report.tasks {
        if let Some((name, _)) = t.name.rsplit_once('-') {
            t.name = name.to_string();
        }
    }
    Ok(Some(report))
}

/// Passes a simulation's events to its trace and keeps the spec each task
/// was made from, by task id (the trace's pid less PID_BASE).
struct SpecsOfTasks<'a, 'w> {
    trace: &'a mut schedlab_sim::formats::trace_out::TraceWriter<'w>,
    spec_of: Vec<u32>,
}

impl schedlab_sim::Observer for SpecsOfTasks<'_, '_> {
    fn event(&mut self, now: u64, sys: &schedlab_sim::Sys, ev: schedlab_sim::TraceEvent) {
        for t in self.spec_of.len()..sys.tasks.len() {
            self.spec_of.push(sys.tasks[t].spec);
        }
        self.trace.event(now, sys, ev);
    }
}

/// Guest memory the kernel and the runner need besides the packed files.
const GUEST_BASE_MIB: u64 = 160;

/// Finds each program and what it loads, and the includes; refuses what
/// would not fit in `memory_mib` (the initramfs is held twice while it
/// unpacks: the archive, then its files).
pub(crate) fn prepare(a: &ProgramArgs, memory_mib: u64, timeout_ns: u64) -> Result<Prepared> {
    let programs = split_programs(&a.program)?;
    let mut extra = Vec::new();
    let mut library_dirs = std::collections::BTreeSet::new();
    let mut argvs = Vec::new();
    for argv in &programs {
        let path = schedlab_vm::elf::find_program(&argv[0]).map_err(|e| anyhow!("{e}"))?;
        let closure = schedlab_vm::elf::closure(&path).map_err(|e| anyhow!("{e}"))?;
        extra.extend(closure.files.iter().cloned().map(Extra::File));
        library_dirs.extend(closure.library_dirs);
        let mut guest_argv = vec![path.to_string_lossy().into_owned()];
        guest_argv.extend(argv[1..].iter().cloned());
        argvs.push(guest_argv);
    }
    for inc in &a.include {
        for x in schedlab_vm::initramfs::include(inc).map_err(|e| anyhow!("{e}"))? {
            // An included program (a compiler that make runs) brings what
            // it loads, as the programs themselves do.
            if let Extra::File(path) = &x
                && schedlab_vm::elf::is_elf_executable(path)
            {
                let closure = schedlab_vm::elf::closure(path).map_err(|e| anyhow!("--include: {e}"))?;
                extra.extend(closure.files.iter().filter(|f| *f != path).cloned().map(Extra::File));
                library_dirs.extend(closure.library_dirs);
            }
            extra.push(x);
        }
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    extra.push(Extra::Dir(cwd.clone()));
    let bytes: u64 = extra.iter().map(Extra::size).sum::<u64>() + std::fs::metadata(std::env::current_exe()?)?.len();
    let need_mib = GUEST_BASE_MIB + 2 * bytes.div_ceil(1 << 20);
    if need_mib > memory_mib {
        bail!(
            "the programs and --include files take {} MiB, and the guest holds them twice while it unpacks them: \
             give --memory {}M or more, or include less",
            bytes.div_ceil(1 << 20),
            need_mib.next_multiple_of(64)
        );
    }
    let job = ProgramsJob {
        programs: argvs,
        cwd: cwd.to_string_lossy().into_owned(),
        library_path: library_dirs.iter().map(|d| d.to_string_lossy().into_owned()).collect(),
        timeout_ns,
        keep_trace: a.trace_out.is_some(),
    };
    Ok(Prepared { job, extra })
}

/// How long the programs may run when --timeout does not say.
pub(crate) const DEFAULT_TIMEOUT_NS: u64 = 600_000_000_000;
/// Time the guest gets beyond the programs' timeout: boot, stopping the
/// programs, and sending the report and the trace back.
const GUEST_MARGIN_NS: u64 = 180_000_000_000;

/// Runs the prepared programs in `kernel` on `cpus` vCPUs.
pub(crate) fn run_vm(p: &Prepared, kernel: &Path, label: &str, cpus: u32, vm: &VmArgs) -> Result<ProgramsResult> {
    let topology = [1, cpus, 1];
    let job = schedlab_vm::GuestJob {
        args: vec![
            "schedlab".into(),
            "guest-programs".into(),
            format!("{}/{JOB_FILE}", schedlab_vm::initramfs::JOB_DIR),
        ],
        files: vec![(JOB_FILE.into(), serde_json::to_vec(&p.job)?)],
        extra: p.extra.clone(),
    };
    let out = vm::run_in_guest(&job, kernel, topology, p.job.timeout_ns + GUEST_MARGIN_NS, vm, label)?;
    let mut result: ProgramsResult = serde_json::from_str(&out.stdout)
        .with_context(|| format!("vm {label}: the guest's report did not arrive whole"))?;
    vm::label_report(&mut result.report, &out, topology, kernel, label);
    Ok(result)
}

/// The program as `record` runs it on this machine's kernel, its report
/// from the same trace reading as a guest's.
pub(crate) fn run_host(a: &ProgramArgs) -> Result<(Report, i32)> {
    let programs = split_programs(&a.program)?;
    if programs.len() > 1 {
        bail!("--host runs one program (as `schedlab record` does); run several in a guest with --kernel");
    }
    let rec = schedlab_host::record(&programs[0])?;
    if let Some(sig) = rec.interrupted {
        bail!("interrupted by {}: the program was stopped", schedlab_host::signals::name(sig));
    }
    let parsed = recorded::parse(&rec.text).map_err(|e| anyhow!("host: the trace: {e}"))?;
    let kernel = schedlab_host::info::read();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let head = Report {
        source: "host".into(),
        scheduler: "host".into(),
        workload: programs[0].join(" "),
        hz: kernel.hz.unwrap_or(0),
        tunables: kernel.tunables.clone(),
        host: Some(kernel.host_info(
            "this machine",
            "tracefs instance, every task".into(),
            "not used: a real program".into(),
            kernel.notes.clone(),
        )),
        ..Report::default()
    };
    let run = RecordedRun { roots: vec![rec.pid], from: rec.started, to: rec.ended, nr_cpus: cpus };
    let status = rec.exit_status.code().unwrap_or(1);
    Ok((recorded::report(&parsed, &run, head), status))
}

/// Why a program that failed in a guest may have failed, where its own
/// words say enough.
fn hint(stderr: &str) -> Option<&'static str> {
    let s = stderr.to_ascii_lowercase();
    if ["socket", "fdpair", "address family not supported", "function not implemented"].iter().any(|w| s.contains(w)) {
        return Some(
            "a system call this guest kernel lacks: the guest kernels other than scx-6.12 have no networking (no \
             CONFIG_NET), so sockets and socketpair fail; use the program's pipe mode (hackbench -p)",
        );
    }
    if s.contains("/dev/") && (s.contains("no such file") || s.contains("no such device")) {
        return Some("the guest has only the devices devtmpfs makes for its kernel: no disks, no network devices");
    }
    if s.contains("no such file or directory") {
        return Some("the guest holds only the program, its libraries and --include paths: include the files it reads");
    }
    None
}

/// Says how each program of a guest run ended, on stderr; the first
/// one's status (124 after a timeout, as timeout(1) gives) is the run's.
pub(crate) fn outcome(result: &ProgramsResult, label: &str) -> i32 {
    for p in &result.programs {
        let status = p.status();
        if result.timed_out && !p.stopped {
            continue;
        }
        if status != 0 && !p.stopped {
            let how = match (p.code, p.signal) {
                (Some(c), _) => format!("exited with {c}"),
                (None, Some(s)) => format!("was killed by signal {s}"),
                _ => "ended".into(),
            };
            eprintln!(
                "schedlab: vm {label}: '{}' {how}{}",
                p.command,
                hint(&p.stderr).map_or(String::new(), |h| format!(": {h}"))
            );
        }
        if p.truncated {
            eprintln!(
                "schedlab: vm {label}: '{}' wrote more than 1 MiB; the rest of its output was dropped",
                p.command
            );
        }
    }
    if result.overrun > 0 {
        eprintln!(
            "schedlab: vm {label}: the trace dropped {} events (its ring buffers filled): figures miss them; run \
             shorter",
            result.overrun
        );
    }
    if result.timed_out {
        eprintln!(
            "schedlab: vm {label}: stopped at --timeout; the report covers what ran until then (give more time \
             with --timeout)"
        );
        return 124;
    }
    result.programs.first().map_or(1, |p| if p.stopped { 1 } else { p.status() })
}

/// Writes a guest's trace where --trace-out says (`label` inserted before
/// the extension when several kernels ran).
pub(crate) fn write_trace(result: &ProgramsResult, out: &Path, label: Option<&str>) -> Result<()> {
    let Some(text) = &result.trace else { return Ok(()) };
    write_trace_text(text, out, label)
}

/// Writes a guest's trace to `out`, or with `label` (one of several
/// kernels) to `out` with the label before its extension.
fn write_trace_text(text: &str, out: &Path, label: Option<&str>) -> Result<()> {
    let path = match label {
        None => out.to_path_buf(),
        Some(l) => {
            let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let name = match out.extension() {
                Some(ext) => format!("{stem}.{l}.{}", ext.to_string_lossy()),
                None => format!("{stem}.{l}"),
            };
            out.with_file_name(name)
        }
    };
    crate::output::write_whole(&path, text.as_bytes())
}

/// `schedlab vm --kernel K -- PROGRAM ...`: the report, the program's
/// output (stdout on stdout, or on stderr under --json and --csv), and
/// its exit status as schedlab's.
pub(crate) fn vm_command(common: &Common, a: &ProgramArgs, kernel: &Path, vm: &VmArgs, tasks: bool) -> Result<i32> {
    refuse_workload_flags(common)?;
    let label = vm::row_label(kernel, vm);
    let cpus = common.cpus.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get() as u32));
    let p = prepare(a, vm.memory, vm.timeout.unwrap_or(DEFAULT_TIMEOUT_NS))?;
    let result = run_vm(&p, kernel, &label, cpus, vm)?;
    let structured = common.json || common.csv;
    for prog in &result.programs {
        if structured {
            eprint!("{}", prog.stdout);
        } else {
            print!("{}", prog.stdout);
        }
        eprint!("{}", prog.stderr);
    }
    if let Some(out) = &a.trace_out {
        write_trace(&result, out, None)?;
    }
    crate::output::print_one(common, &result.report, tasks)?;
    Ok(outcome(&result, &label))
}

/// Every guest kernel of `dir` for `--kernel all`, as NAME.bzImage; scx
/// kernels are left out (without a BPF scheduler they run EEVDF).
pub(crate) fn all_kernels(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut found: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .with_context(|| {
            format!("--kernel all: cannot read {} (set SCHEDLAB_KERNELS to the kernels' directory)", dir.display())
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "bzImage"))
        .map(|p| (vm::kernel_label(&p), p))
        .filter(|(l, _)| !l.starts_with("scx-"))
        .collect();
    found.sort();
    if found.is_empty() {
        bail!("--kernel all: no *.bzImage in {} (set SCHEDLAB_KERNELS to the kernels' directory)", dir.display());
    }
    Ok(found)
}

/// Where `--kernel all` and a bare kernel name look.
pub(crate) fn kernels_dir() -> PathBuf {
    std::env::var_os("SCHEDLAB_KERNELS").map_or_else(|| PathBuf::from("../shared/kernels"), PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_split_at_plus_and_refuse_empty_ones() {
        let w = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(split_programs(&w("a -x + b")).unwrap(), [w("a -x"), w("b")]);
        assert!(split_programs(&w("a +")).unwrap_err().to_string().contains("empty program"));
        assert_eq!(
            hint("hackbench: socketpair: Address family not supported by protocol").map(|h| h.contains("-p")),
            Some(true)
        );
        assert!(hint("Creating fdpair (error: Function not implemented)").is_some_and(|h| h.contains("no networking")));
    }

    #[test]
    fn a_kernel_rows_model_replays_its_trace_over_the_same_window_and_tasks() {
        assert_eq!(
            (model_of("bmq-6.1"), model_of("muqss-5.10"), model_of("scx-6.12")),
            (Some("bmq"), Some("muqss"), Some("eevdf"))
        );
        assert_eq!((model_of("scx-6.12+bpfland"), model_of("scx-6.12+rusty")), (Some("bpfland"), None));
        assert_eq!(model_of("mykernel"), None);
        // The guests' traces of hackbench -p (fixtures of the replay
        // tests), each row read as the guest reads it. Its workers are
        // forked in the replay, so their task ids are not their specs'.
        for kernel in ["eevdf-6.12", "pds-6.12"] {
            let path = format!(
                "{}/../schedlab-policies/tests/fixtures/guest-{kernel}-hackbench-pipe.trace.gz",
                env!("CARGO_MANIFEST_DIR")
            );
            let text = schedlab_sim::formats::input::read_input_file(Path::new(&path), "trace").unwrap();
            let parsed = recorded::parse(&text).unwrap();
            let window = parsed.sched_span().unwrap();
            let roots: Vec<u32> = Vec::new();
            let all = recorded::report(
                &parsed,
                &RecordedRun { roots, from: window.0, to: window.1, nr_cpus: 2 },
                Report::default(),
            );
            let mut real = all.clone();
            real.tasks.retain(|t| t.name.starts_with("hackbench-"));
            let result = ProgramsResult {
                report: real.clone(),
                programs: Vec::new(),
                timed_out: false,
                overrun: 0,
                trace: Some(text.clone()),
                window,
            };
            let model = model_row(&result, kernel).unwrap().expect("a model of the kernel");
            assert_eq!(model.scheduler, format!("{} (model of {kernel}'s run)", model_of(kernel).unwrap()));
            let names = |r: &Report| r.tasks.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
            assert_eq!(names(&model), names(&real), "{kernel}: the program's tasks, and only them");
            let cpu = |r: &Report| r.tasks.iter().map(|t| t.cpu_time_ns).sum::<u64>() as f64;
            assert!((cpu(&model) / cpu(&real) - 1.0).abs() < 0.05, "{kernel}: {} against {}", cpu(&model), cpu(&real));
            assert!(model_row(&result, "scx-6.12+rusty").unwrap().is_none(), "no model of scx_rusty");
        }
    }

    #[test]
    fn a_kernel_rows_model_follows_a_forked_task_whose_id_is_not_its_specs() {
        // p-20 forks p-21; q-30, outside the program, has a higher pid but
        // is started first in the replay, so p-21's task id comes after it.
        let text = "\
          <idle>-0     [000] d..2.   5.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=p next_pid=20 next_prio=120
          <idle>-0     [001] d..2.   5.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=q next_pid=30 next_prio=120
               p-20    [000] .....   5.001000: sched_process_fork: comm=p pid=20 child_comm=p child_pid=21
               p-20    [000] d..2.   5.001010: sched_wakeup_new: comm=p pid=21 prio=120 target_cpu=000
               q-30    [001] d..2.   5.002000: sched_switch: prev_comm=q prev_pid=30 prev_prio=120 prev_state=S ==> next_comm=p next_pid=21 next_prio=120
               p-21    [001] d..2.   5.005000: sched_switch: prev_comm=p prev_pid=21 prev_prio=120 prev_state=X ==> next_comm=swapper/1 next_pid=0 next_prio=120
               p-20    [000] d..2.   5.006000: sched_switch: prev_comm=p prev_pid=20 prev_prio=120 prev_state=X ==> next_comm=swapper/0 next_pid=0 next_prio=120
";
        let parsed = recorded::parse(text).unwrap();
        let window = parsed.sched_span().unwrap();
        let mut real = recorded::report(
            &parsed,
            &RecordedRun { roots: Vec::new(), from: window.0, to: window.1, nr_cpus: 2 },
            Report::default(),
        );
        real.tasks.retain(|t| t.name.starts_with("p-"));
        let result = ProgramsResult {
            report: real.clone(),
            programs: Vec::new(),
            timed_out: false,
            overrun: 0,
            trace: Some(text.to_string()),
            window,
        };
        let model = model_row(&result, "eevdf-6.12").unwrap().unwrap();
        let names = |r: &Report| r.tasks.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&model), ["p-20", "p-21"], "p-20 and its child, not q-30");
        assert_eq!(names(&real), names(&model));
        assert!(model.tasks.iter().all(|t| t.cpu_time_ns > 2_000_000), "each ran its work: {:?}", model.tasks);
    }

    #[test]
    fn a_bad_program_is_refused_before_anything_boots() {
        let a = ProgramArgs { program: vec!["no-such-program-schedlab".into()], ..ProgramArgs::default() };
        let e = prepare(&a, 1024, DEFAULT_TIMEOUT_NS).err().unwrap().to_string();
        assert!(e.contains("is not on PATH"), "{e}");
        let a = ProgramArgs {
            program: vec!["ls".into()],
            include: vec![PathBuf::from("/no/such/include")],
            ..ProgramArgs::default()
        };
        let e = prepare(&a, 1024, DEFAULT_TIMEOUT_NS).err().unwrap().to_string();
        assert!(e.contains("--include /no/such/include"), "{e}");
        // A file larger than the guest's memory can hold.
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        std::fs::File::create(&big).unwrap().set_len(300 << 20).unwrap();
        let a = ProgramArgs { program: vec!["ls".into()], include: vec![big], ..ProgramArgs::default() };
        let e = prepare(&a, 512, DEFAULT_TIMEOUT_NS).err().unwrap().to_string();
        assert!(e.contains("give --memory") && e.contains("holds them twice"), "{e}");
    }
}
