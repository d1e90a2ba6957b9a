//! `schedlab experiments`: the classic scheduler measurements end to end,
//! written as docs/experiments.md with SVG plots beside it. Each section
//! runs a built-in scenario on every policy (and, with --host, on this
//! machine's kernel where it has the CPUs for it) and states what the
//! numbers say; the prose that does not depend on the numbers explains the
//! mechanism once.

mod real_tools;

use crate::args::{Common, common, overrides};
use crate::commands::sweep::{self, Point};
use crate::render::svg;
use crate::render::us;
use crate::simulate::{load_workload, simulate, simulate_each};
use anyhow::{Context, Result};
use schedlab_sim::Report;
use schedlab_sim::grid::{Axis, Dim};
use schedlab_sim::report::HistSummary;
use std::fmt::Write;
use std::path::PathBuf;

pub struct Options {
    pub out: PathBuf,
    pub quick: bool,
    pub host: bool,
    /// Also the real tools in every guest kernel (real_tools).
    pub vm: bool,
    pub jobs: usize,
}

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;

fn all_policies() -> Vec<String> {
    schedlab_policies::all().iter().map(|p| p.name.to_string()).collect()
}

fn md_table(headers: &[String], rows: &[Vec<String>]) -> String {
    let mut out =
        format!("| {} |\n|{}|\n", headers.join(" | "), headers.iter().map(|_| "---").collect::<Vec<_>>().join("|"));
    for r in rows {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
    out
}

/// The writer of the document and its plots.
struct Doc {
    opts: Options,
    text: String,
    plots: Vec<(String, String)>,
}

impl Doc {
    fn plot(&mut self, file: &str, svg: String, alt: &str) {
        let _ = writeln!(self.text, "\n![{alt}](experiments/{file})\n");
        self.plots.push((file.to_string(), svg));
    }

    fn dur(&self, full: u64, quick: u64) -> u64 {
        if self.opts.quick { quick } else { full }
    }

    fn simulate_all(&self, c: &Common) -> Result<Vec<Report>> {
        simulate_each(&load_workload(c)?, &all_policies())
    }

    /// The real kernel's report, or a line saying why there is none.
    fn host(&self, c: &Common) -> Option<Report> {
        if !self.opts.host {
            return None;
        }
        let w = load_workload(c).ok()?;
        match schedlab_host::run(&w, &schedlab_host::HostOptions::default()) {
            Ok(run) => Some(run.report),
            Err(e) => {
                eprintln!("schedlab: experiments: {}: the real kernel could not run it: {e}", c.workload);
                None
            }
        }
    }
}

pub fn run(opts: Options) -> Result<()> {
    let dir = opts.out.join("experiments");
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create {}: check the directory is writable", dir.display()))?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(opts.jobs.max(1)).build().context("worker threads")?;
    let mut doc = Doc { opts, text: String::new(), plots: Vec::new() };
    pool.install(|| -> Result<()> {
        header(&mut doc);
        thread_test(&mut doc)?;
        smp_fairness(&mut doc)?;
        jitter(&mut doc)?;
        lat_ctx(&mut doc)?;
        makespan(&mut doc)?;
        if doc.opts.vm {
            real_tools::real_tools(&mut doc)?;
        }
        Ok(())
    })?;
    let md = doc.opts.out.join("experiments.md");
    std::fs::write(&md, &doc.text).with_context(|| format!("cannot write {}", md.display()))?;
    for (file, svg) in &doc.plots {
        let path = dir.join(file);
        std::fs::write(&path, svg).with_context(|| format!("cannot write {}", path.display()))?;
    }
    eprintln!("schedlab: wrote {} and {} plots in {}", md.display(), doc.plots.len(), dir.display());
    Ok(())
}

fn header(doc: &mut Doc) {
    let host = if doc.opts.host {
        let k = schedlab_host::info::read();
        format!(
            "The real-kernel figures come from `schedlab host` on the machine that wrote this page: Linux {}, {} CPUs, HZ={}, preemption {}.",
            k.release,
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            k.hz.map_or("unknown".into(), |h| h.to_string()),
            k.preempt.as_deref().unwrap_or("unknown")
        )
    } else {
        "No real-kernel figures: this page was written without --host.".to_string()
    };
    let _ = write!(
        doc.text,
        "# The classic experiments\n\n\
         Written by `schedlab experiments{}{}{}` (schedlab {}). Every number below is \
         reproduced by that command; each section also names the single `schedlab` command \
         for its main table. Simulations are deterministic: the same command prints the same \
         numbers. {host}\n\n",
        if doc.opts.quick { " --quick" } else { "" },
        if doc.opts.host { " --host" } else { "" },
        if doc.opts.vm { " --vm" } else { "" },
        env!("CARGO_PKG_VERSION"),
    );
}

/// Context switches against thread count on one CPU, CFS as of 5.12 and
/// 5.13+, EEVDF and every other policy.
fn thread_test(doc: &mut Doc) -> Result<()> {
    let duration = doc.dur(2 * SEC, 200 * MS);
    let counts = if doc.opts.quick { "1,2,4,...,64" } else { "1,2,4,...,4096" };
    let c = common("thread-test", &[], duration);
    let w = load_workload(&c)?;
    let params: Vec<String> = w.params.keys().cloned().collect();
    let axes = vec![
        schedlab_sim::grid::parse_axis(&format!("threads={counts}"), &params, &w.count_params)
            .map_err(|e| anyhow::anyhow!(e))?,
    ];
    let threads = rayon::current_num_threads();
    let mut points = sweep::run_grid(&c, &overrides(&c), &axes, &all_policies(), threads)?;
    // CFS before Linux 5.13: sched_slice without ALT_PERIOD and BASE_SLICE.
    let mut old = overrides(&c);
    old.tunables.insert("ALT_PERIOD".into(), 0);
    old.tunables.insert("BASE_SLICE".into(), 0);
    for mut p in sweep::run_grid(&c, &old, &axes, &["cfs".to_string()], threads)? {
        p.report.scheduler = "cfs-5.12".into();
        points.push(p);
    }
    let mut names = vec!["cfs-5.12".to_string()];
    names.extend(all_policies());
    points.sort_by_key(|p| (p.values[0], names.iter().position(|n| *n == p.report.scheduler)));

    let _ = write!(
        doc.text,
        "## Do more threads mean more context switches?\n\n\
         N threads spin on one CPU (`taskset -c 0`), N from 1 to {}, {} simulated each, as \
         `perf stat -e context-switches` is run against them. `schedlab sweep thread-test \
         --vary tasks={counts} --duration {}ms` prints this table and `--plot` draws it.\n\n\
         CFS as of 5.12 and as of 5.13+ differ in `sched_slice()` (commit 0c2de3f054a5 added \
         the ALT_PERIOD and BASE_SLICE features); `cfs-5.12` is `cfs` with both off. Without \
         HRTICK a fair-class slice can only end at a tick, so once the slice \
         (sched_latency/N, at least min_granularity) is shorter than the 4 ms tick of HZ=250, \
         every tick switches and the rate stops growing with N: the answer is no, not past a \
         handful of threads. The policies that differ are those whose slices are not below a \
         tick: BFS/MuQSS's rr_interval (6 ms), Project C's 4.19 ms (4 << 20 ns) ended exactly by \
         hrtick (238/s), and BORE's base slice of exactly one tick, used up at the next tick or the \
         one after depending on microseconds of tick jitter.\n\n",
        counts.rsplit(',').next().unwrap_or(""),
        svg::time_label(duration as f64),
        duration / MS
    );
    let metric = "context_switches_per_sec";
    let mut header = vec!["threads".to_string()];
    header.extend(names.iter().cloned());
    let mut rows = Vec::new();
    for chunk in points.chunk_by(|a, b| a.values == b.values) {
        let mut row = vec![chunk[0].values[0].to_string()];
        for n in &names {
            let r = chunk.iter().find(|p| p.report.scheduler == *n).and_then(|p| p.report.metric(metric));
            row.push(r.map_or("-".into(), |v| format!("{v:.0}")));
        }
        rows.push(row);
    }
    doc.text.push_str("Context switches per second:\n\n");
    doc.text.push_str(&md_table(&header, &rows));
    let svg = sweep::plot_svg("thread-test, 1 CPU", &axes, &names, &points, metric);
    doc.plot("thread-test.svg", svg, "context switches per second against thread count");

    // Past the first few counts the slice is below a tick: compare the
    // largest count with 8 threads to show whether the rate still grows.
    let last = axes[0].values.last().copied().unwrap_or(8);
    let rate =
        |n: &str, v: i64| points.iter().find(|p| p.report.scheduler == n && p.values[0] == v)?.report.metric(metric);
    let growth: Vec<String> = names
        .iter()
        .filter_map(|n| {
            Some(format!("{n} {:.0} ({:+.0}%)", rate(n, last)?, (rate(n, last)? / rate(n, 8)?.max(1e-9) - 1.0) * 100.0))
        })
        .collect();
    let _ = write!(
        doc.text,
        "Predicted: switches/s at {last} threads (and the change from 8 threads): {}.\n\n",
        growth.join(", ")
    );

    let counts: &[i64] = if doc.opts.quick { &[2, 8] } else { &[1, 2, 8, 64, 512] };
    if doc.opts.host {
        let mut rows = Vec::new();
        for &n in counts {
            let c = common("thread-test", &[("threads", n)], SEC);
            let sim = load_workload(&c).and_then(|w| simulate(&w, "eevdf"))?;
            if let Some(real) = doc.host(&c) {
                rows.push(vec![
                    n.to_string(),
                    format!("{:.0}", real.totals.context_switches_per_sec),
                    format!("{:.0}", sim.totals.context_switches_per_sec),
                ]);
            }
        }
        if !rows.is_empty() {
            doc.text.push_str("The real kernel, 1 s per count (`schedlab compare thread-test --param threads=N --sched eevdf --host`):\n\n");
            doc.text.push_str(&md_table(&["threads".into(), "real kernel".into(), "eevdf simulated".into()], &rows));
            doc.text.push('\n');
        }
    }
    Ok(())
}

/// 10 hogs on 8 CPUs: each should get 80% of a CPU.
fn smp_fairness(doc: &mut Doc) -> Result<()> {
    let duration = doc.dur(10 * SEC, SEC);
    let c = common("smp-fairness", &[], duration);
    let reports = doc.simulate_all(&c)?;
    let _ = write!(
        doc.text,
        "## 10 hogs on 8 CPUs\n\n\
         Ten CPU-bound threads on eight CPUs for {}, read as `top` reads them: each should \
         show 80%. Per-CPU runqueue schedulers reach that only by migrating hogs between \
         CPUs over and over (the load balancer); a single global queue (BFS, and MuQSS's \
         deadline-ordered look across queues) gets it by construction. `schedlab compare \
         smp-fairness --tasks --duration {}s`.\n\n",
        svg::time_label(duration as f64),
        duration / SEC
    );
    let rows: Vec<Vec<String>> = reports
        .iter()
        .map(|r| {
            let (min, avg, max) = r.share_range().unwrap_or_default();
            vec![
                r.scheduler.clone(),
                format!("{min:.1}"),
                format!("{avg:.1}"),
                format!("{max:.1}"),
                format!("{:.4}", r.totals.jain_fairness),
                format!("{:.1}", r.totals.migrations as f64 / (r.duration_ns as f64 / 1e9)),
            ]
        })
        .collect();
    let headers = ["scheduler", "min %", "avg %", "max %", "Jain", "migrations/s"].map(String::from);
    doc.text.push_str(&md_table(&headers, &rows));
    let panels: Vec<svg::BarPanel> = reports
        .iter()
        .map(|r| {
            let bars = r
                .tasks
                .iter()
                .map(|t| svg::Bar { label: t.name.clone(), group: t.name.clone(), value: t.cpu_share_pct })
                .collect();
            (r.scheduler.clone(), bars)
        })
        .collect();
    doc.plot(
        "smp-fairness.svg",
        svg::bar_panels("10 hogs on 8 CPUs: CPU share", "% of one CPU", &panels, Some(80.0)),
        "per-task CPU share",
    );
    let worst = reports.iter().min_by(|a, b| a.totals.jain_fairness.total_cmp(&b.totals.jain_fairness));
    let best = reports.iter().max_by(|a, b| a.totals.jain_fairness.total_cmp(&b.totals.jain_fairness));
    if let (Some(w), Some(b)) = (worst, best) {
        let _ = write!(
            doc.text,
            "Predicted: fairest {} (Jain {:.4}), least fair {} (Jain {:.4}).\n\n",
            b.scheduler, b.totals.jain_fairness, w.scheduler, w.totals.jain_fairness
        );
    }
    if doc.opts.host {
        // This machine has fewer CPUs: the same over-subscription, 3 on 2.
        let mut c = common("smp-fairness", &[("hogs", 3)], doc.dur(5 * SEC, SEC));
        c.cpus = Some(2);
        if let Some(real) = doc.host(&c) {
            let sims = doc.simulate_all(&c)?;
            let mut rows = vec![share_row(&real, "real kernel")];
            rows.extend(sims.iter().map(|r| share_row(r, &r.scheduler)));
            doc.text.push_str("On this machine's 2 CPUs, 3 hogs (each should get 66.7%), the real kernel beside the simulations (`schedlab compare smp-fairness --cpus 2 --param hogs=3 --host`):\n\n");
            doc.text.push_str(&md_table(&["run".into(), "shares %".into(), "Jain".into()], &rows));
            doc.text.push('\n');
        }
    }
    Ok(())
}

fn share_row(r: &Report, name: &str) -> Vec<String> {
    let shares: Vec<String> = r.tasks.iter().map(|t| format!("{:.1}", t.cpu_share_pct)).collect();
    vec![name.to_string(), shares.join(" / "), format!("{:.4}", r.totals.jain_fairness)]
}

/// The `cyclic` tasks' wakeup latency: what cyclictest would report.
fn cyclic_latency(r: &Report) -> HistSummary {
    r.specs.iter().find(|s| s.name == "cyclic").map(|s| s.wakeup_latency.clone()).unwrap_or_default()
}

fn latency_row(name: &str, h: &HistSummary) -> Vec<String> {
    if h.count == 0 {
        return vec![name.to_string(), "0".into(), "-".into(), "-".into(), "-".into(), "-".into()];
    }
    vec![name.to_string(), h.count.to_string(), us(h.min), us(h.mean), us(h.p99), us(h.max)]
}

/// Wakeup latency of a cyclictest-like probe under stress-ng --cpu 24 and 256.
fn jitter(doc: &mut Doc) -> Result<()> {
    let duration = doc.dur(5 * SEC, 500 * MS);
    let _ = write!(
        doc.text,
        "## Wakeup latency under load\n\n\
         `cyclictest -a -t -i 1000` (one SCHED_OTHER thread per CPU, waking every 1 ms on an \
         absolute timer) beside `stress-ng --cpu 24` and `--cpu 256` on 8 CPUs, {} each. The \
         latency is from the timer's expiry to the thread running, as cyclictest measures it. \
         A woken fair-class task preempts a hog when its vruntime (CFS: by more than the \
         wakeup granularity) or its eligibility and deadline (EEVDF: RUN_TO_PARITY lets the \
         running hog finish its slice) say so; on the other policies it depends on the \
         priority or deadline a sleeper earns. `schedlab compare jitter-under-load --param \
         workers=N --hist`.\n\n",
        svg::time_label(duration as f64)
    );
    let headers = ["scheduler", "samples", "min us", "avg us", "p99 us", "max us"].map(String::from);
    for workers in [24i64, 256] {
        let c = common("jitter-under-load", &[("workers", workers)], duration);
        let reports = doc.simulate_all(&c)?;
        let _ = writeln!(doc.text, "### {workers} busy workers on 8 CPUs\n");
        let rows: Vec<Vec<String>> = reports.iter().map(|r| latency_row(&r.scheduler, &cyclic_latency(r))).collect();
        doc.text.push_str(&md_table(&headers, &rows));
        let hists: Vec<HistSummary> = reports.iter().map(cyclic_latency).collect();
        let panels: Vec<(String, &HistSummary)> = reports.iter().map(|r| r.scheduler.clone()).zip(&hists).collect();
        doc.plot(
            &format!("jitter-{workers}.svg"),
            svg::hist_panels(&format!("cyclictest wakeup latency, stress {workers} on 8 CPUs"), "latency", &panels),
            "wakeup latency histograms",
        );
        // Ties on p99 (many sit at the bare switch cost) go by the maximum.
        let best = reports.iter().zip(&hists).filter(|(_, h)| h.count > 0).min_by_key(|(_, h)| (h.p99, h.max));
        let worst = reports.iter().zip(&hists).filter(|(_, h)| h.count > 0).max_by_key(|(_, h)| (h.p99, h.max));
        if let (Some((b, bh)), Some((w, wh))) = (best, worst) {
            let _ = write!(
                doc.text,
                "Predicted: lowest p99 {} ({} us, max {} us), highest {} ({} us, max {} us).\n\n",
                b.scheduler,
                us(bh.p99),
                us(bh.max),
                w.scheduler,
                us(wh.p99),
                us(wh.max)
            );
        }
        if doc.opts.host {
            // Same load per CPU on this machine's 2 CPUs.
            let mut c = common("jitter-under-load", &[("workers", workers / 4)], doc.dur(3 * SEC, 500 * MS));
            c.cpus = Some(2);
            if let Some(real) = doc.host(&c) {
                let w = load_workload(&c)?;
                let mut rows = vec![latency_row("real kernel", &cyclic_latency(&real))];
                for n in ["cfs", "eevdf"] {
                    rows.push(latency_row(&format!("{n} simulated"), &cyclic_latency(&simulate(&w, n)?)));
                }
                let _ = write!(
                    doc.text,
                    "On this machine's 2 CPUs with {} workers (the same {} per CPU), `schedlab compare jitter-under-load --cpus 2 --param workers={} --sched cfs,eevdf --host`:\n\n",
                    workers / 4,
                    workers / 8,
                    workers / 4
                );
                doc.text.push_str(&md_table(&headers, &rows));
                doc.text.push_str(
                    "\nThe real kernel's floor (its minimum) is the hrtimer interrupt, the wakeup and the switch, \
                     which the simulation reduces to its 2 us switch cost; the tail (p99, max) is the scheduler's \
                     decision and is where the rows should be compared.\n",
                );
                if !real.absent.is_empty() {
                    let _ = writeln!(doc.text, "\nNot measured on the real kernel: {}.", real.absent.join("; "));
                }
                doc.text.push('\n');
            }
        }
    }
    Ok(())
}

/// lmbench lat_ctx -s 0 2: a token over two pipes.
fn lat_ctx(doc: &mut Doc) -> Result<()> {
    let duration = doc.dur(2 * SEC, 200 * MS);
    let c = common("lat-ctx", &[], duration);
    let mut reports = doc.simulate_all(&c)?;
    if let Some(real) = doc.host(&c) {
        reports.push(real);
    }
    let _ = write!(
        doc.text,
        "## lat_ctx\n\n\
         lmbench's `lat_ctx -s 0 2` on 2 CPUs: two tasks pass a token through a pair of pipes, \
         1 us of work per hop. lmbench reports the time per hop; here it is the run's \
         duration over its context switches, with the wakeup latency of each hop beside it. \
         Whether the woken task runs on the waker's CPU (wake-affine) or the idle one decides \
         the figure. `schedlab compare lat-ctx{}`.\n\n",
        if doc.opts.host { " --host" } else { "" }
    );
    let rows: Vec<Vec<String>> = reports
        .iter()
        .map(|r| {
            let hop = r.duration_ns as f64 / r.totals.context_switches.max(1) as f64 / 1e3;
            let w = &r.wakeup_latency;
            vec![
                r.scheduler.clone(),
                format!("{:.2}", hop),
                if w.count == 0 { "-".into() } else { us(w.mean) },
                format!("{:.0}", r.totals.migrations as f64 / (r.duration_ns as f64 / 1e9)),
            ]
        })
        .collect();
    let headers = ["scheduler", "us per switch", "wakeup avg us", "migrations/s"].map(String::from);
    doc.text.push_str(&md_table(&headers, &rows));
    doc.text.push('\n');
    Ok(())
}

/// make -j and a frame-parallel encoder on 2, 4 and 16 CPUs: makespan.
fn makespan(doc: &mut Doc) -> Result<()> {
    let _ = write!(
        doc.text,
        "## Throughput: a parallel build and a frame-parallel encoder\n\n\
         Makespan (time until the last task exits; lower is better) of `make-j` (a `make -jN` \
         build: four directories of 60 forked compiles, an archive step per directory, a \
         final link) and `encoder` (x264-style frame threads, 1.5 per CPU, 400 frames whose \
         motion search waits on the previous frame's first rows) on 2, 4 and 16 CPUs. \
         Both have serial steps, so how soon a waiting task gets a CPU, and whether the \
         critical path gets preempted, shows in the makespan. `schedlab compare make-j --cpus N \
         --param jobs=N` and `schedlab compare encoder --cpus N --param threads=1.5N`.\n\n"
    );
    let cpus: [i64; 3] = [2, 4, 16];
    for (scenario, param, per_cpu) in [("make-j", "jobs", 1.0), ("encoder", "threads", 1.5)] {
        let mut points: Vec<Point> = Vec::new();
        for n in cpus {
            let mut c = common(scenario, &[(param, (n as f64 * per_cpu) as i64)], 120 * SEC);
            c.cpus = Some(n as u32);
            let reports = doc.simulate_all(&c)?;
            points.extend(reports.into_iter().map(|report| Point { values: vec![n], report }));
        }
        let names = all_policies();
        let mut header = vec!["scheduler".to_string()];
        header.extend(cpus.iter().map(|n| format!("{n} CPUs")));
        let rows: Vec<Vec<String>> = names
            .iter()
            .map(|name| {
                let mut row = vec![name.clone()];
                for n in cpus {
                    let r = points.iter().find(|p| p.values[0] == n && p.report.scheduler == *name);
                    row.push(
                        r.and_then(|p| p.report.totals.makespan_ns)
                            .map_or("-".into(), |m| format!("{:.3} s", m as f64 / 1e9)),
                    );
                }
                row
            })
            .collect();
        let _ = writeln!(doc.text, "### {scenario}\n");
        doc.text.push_str(&md_table(&header, &rows));
        let axes = vec![Axis { name: "cpus".into(), dim: Dim::Cpus, values: cpus.to_vec() }];
        doc.plot(
            &format!("{scenario}-makespan.svg"),
            sweep::plot_svg(scenario, &axes, &names, &points, "makespan_ns"),
            &format!("{scenario} makespan against CPUs"),
        );
        for n in cpus {
            let at: Vec<&Point> = points.iter().filter(|p| p.values[0] == n).collect();
            let best = at.iter().filter_map(|p| Some((p.report.totals.makespan_ns?, &p.report.scheduler))).min();
            let worst = at.iter().filter_map(|p| Some((p.report.totals.makespan_ns?, &p.report.scheduler))).max();
            if let (Some(b), Some(w)) = (best, worst) {
                let _ = writeln!(
                    doc.text,
                    "- {n} CPUs: fastest {} ({:.3} s), slowest {} ({:.3} s), {:.1}% apart.",
                    b.1,
                    b.0 as f64 / 1e9,
                    w.1,
                    w.0 as f64 / 1e9,
                    (w.0 as f64 / b.0 as f64 - 1.0) * 100.0
                );
            }
        }
        doc.text.push('\n');
        if doc.opts.host && !doc.opts.quick {
            let mut c = common(scenario, &[(param, (2.0 * per_cpu) as i64)], 120 * SEC);
            c.cpus = Some(2);
            if let Some(real) = doc.host(&c) {
                let sim = points.iter().find(|p| p.values[0] == 2 && p.report.scheduler == "eevdf");
                let _ = writeln!(
                    doc.text,
                    "On this machine's 2 CPUs the real kernel took {} (simulated EEVDF: {}).\n",
                    real.totals.makespan_ns.map_or("-".into(), |m| format!("{:.3} s", m as f64 / 1e9)),
                    sim.and_then(|p| p.report.totals.makespan_ns)
                        .map_or("-".into(), |m| format!("{:.3} s", m as f64 / 1e9))
                );
            }
        }
    }
    Ok(())
}

/// Where `schedlab experiments` writes by default: docs/ of the checkout
/// when run from one, else the current directory.
/// ./schedlab-experiments: never the repository's tracked docs/, which
/// holds the page made with --host on the project's machine.
pub fn default_out() -> PathBuf {
    PathBuf::from("schedlab-experiments")
}
