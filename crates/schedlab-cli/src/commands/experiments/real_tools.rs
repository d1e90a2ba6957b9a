//! `schedlab experiments --vm`: the seeds' tests with the real tools, in
//! the real kernel of every scheduler (the guest kernels of
//! $SCHEDLAB_KERNELS, one QEMU at a time, 2 vCPUs under TCG): cyclictest
//! beside stress-ng, ranked beside the scheduler survey's ranking; the
//! makespan of a real parallel build (make -j4 driving gcc) and a real
//! compressor (xz -T2); and the thread test with real spinners (stress-ng
//! pinned to one CPU). Each row is the guest's own trace of the programs
//! (commands::program), so the figures are the kernel's decisions with an
//! emulated CPU: compare kernels by rank and ratio, not absolute time.

use super::{Doc, md_table};
use crate::commands::program::{self, ProgramArgs};
use crate::commands::vm::VmArgs;
use crate::render::{svg, us};
use anyhow::{Context, Result};
use schedlab_sim::report::HistSummary;
use schedlab_vm::programs::ProgramsResult;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The survey's kernels (6.0) and the guest kernels closest to them.
const SURVEY_KERNELS: [(&str, &str); 6] = [
    ("BMQ", "bmq-6.1"),
    ("PDS", "pds-6.1"),
    ("TT", "tt-6.1"),
    ("CacULE", "cacule-6.1"),
    ("Bore", "bore-6.1"),
    ("CFS", "cfs-6.1"),
];
/// The survey's order, best (lowest latency) first: under `stress-ng
/// --cpu 24` on 8 CPUs, and under 256 workers.
const SURVEY_ORDER: [&[&str]; 2] = [&["BMQ", "PDS", "TT", "CacULE", "Bore", "CFS"], &["TT", "Bore", "CFS"]];

const VCPUS: u32 = 2;

fn vm_args() -> VmArgs {
    VmArgs {
        accel: schedlab_vm::Accel::Tcg,
        memory: 1024,
        timeout: Some(300_000_000_000),
        boot_args: Vec::new(),
        scx: None,
    }
}

/// The words of a command line without quoting.
fn words(line: &str) -> Vec<String> {
    line.split_whitespace().map(String::from).collect()
}

/// Runs the programs of `words` (joined by "+") with `include`s in every
/// kernel; a program that fails ends the experiment with what it said. A
/// guest kernel that crashes is booted once more (TCG guests oops now and
/// then, as validate knows); one that crashes twice is left out of the
/// tables, and the page says so with its oops.
fn every_kernel(
    doc: &mut Doc,
    kernels: &[(String, PathBuf)],
    words: &[String],
    include: &[PathBuf],
) -> Result<Vec<(String, ProgramsResult)>> {
    let args = ProgramArgs { include: include.to_vec(), trace_out: None, program: words.to_vec() };
    let line = words.join(" ");
    let vm = vm_args();
    let prepared = program::prepare(&args, vm.memory, vm.timeout.unwrap_or(program::DEFAULT_TIMEOUT_NS))?;
    let mut out = Vec::new();
    for (label, file) in kernels {
        let mut failures = Vec::new();
        for _ in 0..2 {
            // A stop signal between two guests (real_tools holds them)
            // ends the experiments here; during one, the guest's run says
            // so.
            if let Some(sig) = schedlab_host::signals::received() {
                return Err(schedlab_vm::VmError::Interrupted(sig).into());
            }
            eprintln!("schedlab: experiments: {label}: {line}");
            match program::run_vm(&prepared, file, label, VCPUS, &vm) {
                Ok(result) => {
                    if program::outcome(&result, label) != 0 {
                        anyhow::bail!("{label}: '{line}' failed: {}", result.programs[0].stderr.trim());
                    }
                    out.push((label.clone(), result));
                    break;
                }
                Err(e) => match e.downcast_ref::<schedlab_vm::VmError>().and_then(|v| v.kernel_failure()) {
                    Some(failure) => {
                        eprintln!("schedlab: experiments: {label} {failure}; booting it again");
                        failures.push(failure);
                    }
                    None => return Err(e),
                },
            }
        }
        if failures.len() == 2 {
            let _ = write!(doc.text, "{label} is left out of `{line}`: its kernel {}, twice.\n\n", failures[1]);
        }
    }
    Ok(out)
}

/// cyclictest's own summary of its threads: (cycles, average us weighted
/// by cycles, maximum us).
fn cyclictest_figures(stdout: &str) -> Option<(u64, f64, f64)> {
    let (mut cycles, mut sum, mut max) = (0u64, 0.0, 0.0f64);
    for line in stdout.lines().filter(|l| l.trim_start().starts_with("T:")) {
        let after = |key: &str| -> Option<f64> { line.split(key).nth(1)?.split_whitespace().next()?.parse().ok() };
        let c = after("C:")? as u64;
        cycles += c;
        sum += after("Avg:")? * c as f64;
        max = max.max(after("Max:")?);
    }
    (cycles > 0).then(|| (cycles, sum / cycles as f64, max))
}

/// Ranks (1 = best) of `values`, lowest first.
fn ranks(values: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut rank = vec![0; values.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i] = r + 1;
    }
    rank
}

/// How many pairs of the survey's kernels the measured order puts as the
/// survey does, of how many, and the pairs it turns round.
fn agreement(order: &[&str], measured: &dyn Fn(&str) -> Option<f64>) -> (usize, usize, Vec<String>) {
    let (mut agree, mut total, mut against) = (0, 0, Vec::new());
    for (i, a) in order.iter().enumerate() {
        for b in &order[i + 1..] {
            if let (Some(x), Some(y)) = (measured(a), measured(b)) {
                total += 1;
                if x <= y {
                    agree += 1;
                } else {
                    against.push(format!("{b} before {a}"));
                }
            }
        }
    }
    (agree, total, against)
}

pub(super) fn real_tools(doc: &mut Doc) -> Result<()> {
    let kernels = program::all_kernels(&program::kernels_dir())?;
    // Ctrl-C or SIGTERM between two guests is noted rather than killing
    // schedlab, so the inputs' temporary directory goes too.
    let _signals = schedlab_host::signals::StopSignals::install();
    let _ = write!(
        doc.text,
        "## The real tools in every kernel\n\n\
         The same tests with the real programs, in the real kernel of each scheduler: \
         `schedlab compare --kernel all -- PROGRAM ...` boots each kernel of ../shared/kernels \
         under QEMU (TCG, {VCPUS} vCPUs, one guest at a time) with the programs and their \
         libraries in its initramfs, and reads every row from the guest's own trace. TCG \
         emulates the CPU: the decisions are the kernel's, the costs are not this hardware's, \
         so compare the kernels by rank and ratio. One run per kernel: a figure that a busy host \
         could move says so below the table.\n\n"
    );
    responsiveness(doc, &kernels)?;
    throughput(doc, &kernels)?;
    thread_test(doc, &kernels)?;
    Ok(())
}

fn responsiveness(doc: &mut Doc, kernels: &[(String, PathBuf)]) -> Result<()> {
    let loops = if doc.opts.quick { 1000 } else { 3000 };
    let _ = write!(
        doc.text,
        "### Responsiveness: cyclictest beside stress-ng\n\n\
         `cyclictest -a -t -i 1000 -l {loops} -q` (one SCHED_OTHER thread per vCPU, each \
         waking every 1 ms) beside `stress-ng --cpu N` on {VCPUS} vCPUs, with N at the survey's \
         two loads per CPU: 3 per CPU (its `--cpu 24` on 8 CPUs) and 32 (its 256 workers). \
         Average and maximum are cyclictest's own figures over its threads; p99 and the \
         histograms are the guest trace's (from the time each sleep asked for to the switch \
         onto the CPU: cyclictest's latency less the return to user space).\n\n"
    );
    for (load, per_cpu) in [(0usize, 3u32), (1, 32)] {
        let workers = per_cpu * VCPUS;
        let line = format!("cyclictest -a -t -i 1000 -l {loops} -q + stress-ng --cpu {workers} --timeout 600");
        let runs = every_kernel(doc, kernels, &words(&line), &[])?;
        let _ = writeln!(doc.text, "#### {per_cpu} stress-ng workers per vCPU (`--cpu {workers}`)\n");
        let figures: Vec<Option<(u64, f64, f64)>> =
            runs.iter().map(|(_, r)| cyclictest_figures(&r.programs[0].stdout)).collect();
        let hist = |r: &ProgramsResult| -> HistSummary {
            r.report.specs.iter().find(|s| s.name == "cyclictest").map(|s| s.wakeup_latency.clone()).unwrap_or_default()
        };
        let avg: Vec<f64> = figures.iter().map(|f| f.map_or(f64::INFINITY, |f| f.1)).collect();
        let max: Vec<f64> = figures.iter().map(|f| f.map_or(f64::INFINITY, |f| f.2)).collect();
        let (avg_rank, max_rank) = (ranks(&avg), ranks(&max));
        let headers =
            ["kernel", "cycles", "avg us", "max us", "trace p99 us", "rank by avg", "rank by max"].map(String::from);
        let rows: Vec<Vec<String>> = runs
            .iter()
            .enumerate()
            .map(|(i, (label, r))| {
                let (c, a, m) = figures[i].map_or(("-".into(), "-".into(), "-".into()), |f| {
                    (f.0.to_string(), format!("{:.0}", f.1), format!("{:.0}", f.2))
                });
                vec![label.clone(), c, a, m, us(hist(r).p99), avg_rank[i].to_string(), max_rank[i].to_string()]
            })
            .collect();
        doc.text.push_str(&md_table(&headers, &rows));
        let hists: Vec<HistSummary> = runs.iter().map(|(_, r)| hist(r)).collect();
        let panels: Vec<(String, &HistSummary)> = runs.iter().map(|(l, _)| l.clone()).zip(&hists).collect();
        doc.plot(
            &format!("vm-cyclictest-{per_cpu}.svg"),
            svg::hist_panels(
                &format!("cyclictest in each kernel, stress-ng --cpu {workers} on {VCPUS} vCPUs"),
                "latency",
                &panels,
            ),
            "cyclictest wakeup latency histograms of every kernel",
        );
        let order = SURVEY_ORDER[load];
        let (agree_avg, total, against_avg) = agreement(order, &|n| survey_figure(&runs, &avg, n));
        let (agree_max, _, against_max) = agreement(order, &|n| survey_figure(&runs, &max, n));
        let _ = write!(
            doc.text,
            "\nThe survey ranked its 6.0 kernels {} (lowest latency first) under this load. Among \
             the 6.1 guest kernels of the same schedulers, the average puts {agree_avg} of the \
             {total} pairs in the survey's order{}, the maximum {agree_max}{}.\n\n",
            order.join(" > "),
            if against_avg.is_empty() { String::new() } else { format!(" (not: {})", against_avg.join(", ")) },
            if against_max.is_empty() { String::new() } else { format!(" (not: {})", against_max.join(", ")) },
        );
        disturbed(doc, &runs);
    }
    Ok(())
}

/// The figure of the guest kernel that stands for the survey's `name`.
fn survey_figure(runs: &[(String, ProgramsResult)], figure: &[f64], name: &str) -> Option<f64> {
    let kernel = SURVEY_KERNELS.iter().find(|(n, _)| *n == name)?.1;
    let i = runs.iter().position(|(l, _)| l == kernel)?;
    figure[i].is_finite().then_some(figure[i])
}

/// A line naming the runs during which the host's other processes took
/// CPU time from the guest's vCPUs.
fn disturbed(doc: &mut Doc, runs: &[(String, ProgramsResult)]) {
    let busy: Vec<String> = runs
        .iter()
        .filter_map(|(l, r)| {
            let others = r.report.extra_figure(crate::commands::vm::HOST_OTHERS)?;
            (others >= 0.1).then(|| format!("{l} ({others:.2} CPUs)"))
        })
        .collect();
    if !busy.is_empty() {
        let _ = write!(doc.text, "Other processes on the host took CPU time during: {}.\n\n", busy.join(", "));
    }
}

/// A C source tree for `make -j4` (16 files of arithmetic, no headers)
/// and a 4 MiB text file for the compressor, in a directory of this run's.
fn inputs(dir: &Path) -> Result<(PathBuf, PathBuf)> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let tree = dir.join("tree");
    std::fs::create_dir_all(&tree)?;
    let mut objs = Vec::new();
    for i in 0..16 {
        let mut c = String::new();
        for f in 0..30 {
            let _ = write!(c, "unsigned long f{i}_{f}(unsigned long x) {{");
            for _ in 0..12 {
                let _ = write!(
                    c,
                    " x = x * {} + {}; x ^= x >> {};",
                    rng.random_range(3..99),
                    rng.random_range(1..999),
                    rng.random_range(1..13)
                );
            }
            c.push_str(" return x; }\n");
        }
        std::fs::write(tree.join(format!("u{i}.c")), c)?;
        objs.push(format!("u{i}.o"));
    }
    std::fs::write(
        tree.join("Makefile"),
        format!("all: {}\n%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n", objs.join(" ")),
    )?;
    let words = ["sched", "task", "slice", "tick", "wakeup", "vruntime", "deadline", "queue", "cpu", "latency"];
    let mut text = String::with_capacity(4 << 20);
    while text.len() < 4 << 20 {
        text.push_str(words[rng.random_range(0..words.len())]);
        text.push(if rng.random_range(0..12) == 0 { '\n' } else { ' ' });
    }
    let file = dir.join("input.txt");
    std::fs::write(&file, text)?;
    Ok((tree, file))
}

fn throughput(doc: &mut Doc, kernels: &[(String, PathBuf)]) -> Result<()> {
    let gcc = Path::new("/usr/bin/gcc");
    let cc1 = Path::new("/usr/lib/gcc/x86_64-linux-gnu/12/cc1");
    let dir = tempfile::Builder::new().prefix("schedlab-experiments-").tempdir().context("a temporary directory")?;
    let (tree, input) = inputs(dir.path())?;
    let _ = write!(
        doc.text,
        "### Throughput: a real build and a real compressor\n\n\
         The makespan (the program's wall time in the guest) of `make -j4` over a generated tree \
         of 16 C files driving Debian's gcc 12 (`-O2 -S -ffreestanding`: cc1 only, packed into \
         the guest with its libraries), and of `xz -T2 -6` over a generated 4 MiB text file, per \
         kernel and as a ratio to cfs-6.1's (below 1 is faster).\n\n"
    );
    let mut jobs: Vec<(&str, Vec<String>, Vec<PathBuf>)> = Vec::new();
    if gcc.is_file() && cc1.is_file() {
        let mut make = words(&format!("make -s -j4 -C {} CC=gcc", tree.display()));
        make.push("CFLAGS=-O2 -S -ffreestanding".into());
        jobs.push(("make -j4 (gcc)", make, vec![tree.clone(), gcc.to_path_buf(), cc1.to_path_buf()]));
    } else {
        doc.text.push_str("No build: this machine has no gcc 12 (apt-get install gcc).\n\n");
    }
    jobs.push(("xz -T2", words(&format!("xz -T2 -6 -k -f {}", input.display())), vec![input.clone()]));
    let mut columns: Vec<(String, Vec<(String, f64)>)> = Vec::new();
    for (name, line, include) in jobs {
        let runs = every_kernel(doc, kernels, &line, &include)?;
        let spans: Vec<(String, f64)> = runs
            .iter()
            .map(|(l, r)| (l.clone(), r.report.totals.makespan_ns.unwrap_or(r.report.duration_ns) as f64 / 1e9))
            .collect();
        disturbed(doc, &runs);
        columns.push((name.to_string(), spans));
    }
    let mut headers = vec!["kernel".to_string()];
    for (name, _) in &columns {
        headers.push(format!("{name} s"));
        headers.push(format!("{name} / cfs"));
    }
    let rows: Vec<Vec<String>> = kernels
        .iter()
        .map(|(label, _)| {
            let mut row = vec![label.clone()];
            for (_, spans) in &columns {
                let of = |l: &str| spans.iter().find(|(k, _)| k == l).map(|s| s.1);
                let (this, cfs) = (of(label), of("cfs-6.1"));
                row.push(this.map_or("-".into(), |s| format!("{s:.2}")));
                row.push(this.zip(cfs).map_or("-".into(), |(s, c)| format!("{:.2}", s / c)));
            }
            row
        })
        .collect();
    doc.text.push_str(&md_table(&headers, &rows));
    doc.text.push('\n');
    Ok(())
}

fn thread_test(doc: &mut Doc, kernels: &[(String, PathBuf)]) -> Result<()> {
    let counts: &[u32] = if doc.opts.quick { &[16, 128] } else { &[16, 128, 1024] };
    let _ = write!(
        doc.text,
        "### The thread test with real spinners\n\n\
         `stress-ng --cpu N --taskset 0 --timeout 3` (N spinning workers, all pinned to CPU 0) \
         in each kernel: context switches per second of the workers, as `perf stat -e \
         context-switches` counts them.\n\n"
    );
    let mut headers = vec!["kernel".to_string()];
    headers.extend(counts.iter().map(|n| format!("N={n}")));
    let mut table: Vec<Vec<String>> = kernels.iter().map(|(l, _)| vec![l.clone()]).collect();
    for &n in counts {
        let line = words(&format!("stress-ng --cpu {n} --taskset 0 --timeout 3"));
        let runs = every_kernel(doc, kernels, &line, &[])?;
        for row in table.iter_mut() {
            let Some((_, r)) = runs.iter().find(|(l, _)| *l == row[0]) else {
                row.push("-".into());
                continue;
            };
            let workers = r.report.tasks.iter().filter(|t| t.name.starts_with("stress-ng-cpu-"));
            let switches: u64 = workers.map(|t| t.voluntary_switches + t.involuntary_switches).sum();
            row.push(format!("{:.0}", switches as f64 / (r.report.duration_ns as f64 / 1e9)));
        }
        disturbed(doc, &runs);
    }
    doc.text.push_str(&md_table(&headers, &table));
    doc.text.push('\n');
    Ok(())
}
