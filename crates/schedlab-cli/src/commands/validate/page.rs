//! docs/validation.md: the page validate writes, a section per policy
//! with its tally, a table of simulated, re-simulated and real figures
//! per experiment, and the facts known of each open difference.

use super::*;
use schedlab_host::TIMER_LATE_P90_LIMIT_US;
use std::fmt::Write;

/// One policy's counts.
#[derive(Clone, Copy, Default, Debug)]
pub(super) struct Tally {
    pub(super) figures: usize,
    pub(super) within: usize,
    pub(super) explained: usize,
    pub(super) not_compared: usize,
    pub(super) unexplained: usize,
    /// Of the unexplained, open differences still where they were measured.
    pub(super) open_in_band: usize,
}

impl Tally {
    /// Counts one figure of outcome `o`.
    pub(super) fn add(&mut self, o: Outcome) {
        self.figures += 1;
        *match o {
            Outcome::Within => &mut self.within,
            Outcome::NotCompared => &mut self.not_compared,
            Outcome::Explained => &mut self.explained,
            Outcome::Unexplained => &mut self.unexplained,
        } += 1;
    }
}

/// The page, each policy's tally and the unexplained figures' names.
pub(super) fn page(
    opts: &Options,
    runs: usize,
    checked: &[Checked],
    matrix: &matrix::Matrix,
) -> (String, Vec<(&'static str, Tally)>, Vec<String>) {
    let mut t = String::new();
    let mut unexplained = Vec::new();
    let mut tallies = Vec::new();
    let set: String = opts.set.iter().map(|(k, v)| format!(" --set {k}={v}")).collect();
    let cmd = format!(
        "schedlab validate{}{}{set}",
        if opts.quick { " --quick" } else { "" },
        if opts.runs.is_some() { format!(" --runs {runs}") } else { String::new() }
    );
    let _ = write!(
        t,
        "# Validation: each model against its own kernel\n\n\
         Written by `{cmd}` (schedlab {}). Each policy that has a bootable kernel runs the experiments \
         below in the simulator and, as real threads (`schedlab host`), in that kernel booted under QEMU \
         (`schedlab vm`) on {CPUS} vCPUs for {} each. Every figure is the median of {runs} run{}: seeds 1 to \
         {runs} simulated, {runs} boot{} of the kernel.{}\n\n\
         **Two simulations.** Each experiment is simulated with the default costs (this hardware's: a 2 µs \
         switch, 5 µs to wake an idle CPU, nothing for a fork or a timer) and again with the guest's own, \
         measured by `schedlab calibrate` in three boots of the same kernel (the median of each cost, \
         listed under each policy, with the range of the boots: one boot's costs are not the kernel's): \
         under TCG the CPU is emulated, and a switch, a timer, a thread creation or the IPI a task sends \
         to wake another CPU costs tens to hundreds of microseconds. The second simulation also starts \
         at the guest kernel's uptime when the run began \
         (the median of the runs, 2-3 s after boot; runs kept from before 2026-11-25 do not say, and are \
         simulated at the default hour): what the kernel made at boot is that old, and CacULE scores a \
         task group by its life since boot. And it starts the tasks as the real runner does: created one \
         by one by a controller, each spending the CPU time the real runs measured before their start \
         (`thread_cpu_before_start_p50_us`, the median of the runs) and all released together at t0, \
         counted from there (since the runs booted 2026-12-07 that figure takes the gated threads only, \
         and a thread forked in the run pays its own, `forked_thread_cpu_before_start_p50_us`, as \
         `thread_start`: before, fork-burst's one gated parent started with its 200 children's 86 us where \
         its own clock read 4.4 ms); under MuQSS and Project C a forked thread holds half of its creator's slice, \
         less that time, when the run begins (runs kept without that figure, measured since 2026-11-25, \
         are simulated with every task runnable at the start). Beside the workload it runs what the guest \
         ran besides it: each guest's trace takes every task since 2026-11-27, and the kernel's threads, \
         the runner's controller and the rest ran so many times a second for so long on average (the \
         median of the runs, in each experiment's row); the simulation runs that on every CPU as tasks \
         its report leaves out. The runner's threads live on stacks mapped before the run since \
         2026-11-27, and a thread forked in the run allocates nothing since the runner of 53d2a10 (a \
         thread's first malloc made glibc map an arena for it): they no longer wait on the process's \
         mmap lock when they are created or exit. \
         A thread that ends in the run (fork-burst's children, make-j4's jobs) pays its exit before it \
         leaves its CPU, as long as the real runs' threads spent on a CPU from their program's end to \
         their last switch (`thread_exit_p50_us`, from the trace; the median of the runs; since 2026-11-27, when \
         the runner's threads stopped reading their counts from /proc at their end, which the trace \
         gives). And it charges what the runs' threads paid beyond their work, where every run measured \
         it (runs booted since 2026-11-27; under MuQSS, whose thread clocks run fast, timed by the \
         trace): the CPU time the guest charged to threads that only run beyond what they spun for (`cpu_beyond_work_pct`: \
         interrupts, a vCPU its host did not run; as `run_stretch`, per millisecond of a run) and a \
         forking thread's CPU time per fork in the runner (`fork_cpu_us`, as `fork`, in place of \
         calibrate's bare clone). Since the runs of yield-hog booted 2026-11-28 (the runner that counts a \
         thread's yields), a sched_yield costs what the runs' yielder paid per yield beyond its work \
         (`yield_cpu_us`, as `syscall` less the `context_switch` back to it, after the share of its \
         yields that switched away, `yield_switched_pct`): calibrate's yield has nothing to switch to. \
         Where threads sleep on timers (runs booted since the runner measured them, 2026-11-27), it \
         charges a timed wakeup what the runs' threads paid for one beyond their work (`timer_wakeup_cpu_us`, \
         as `timer_wakeup`: a wakeup that preempts a busy CPU costs more than calibrate's on an idle one) \
         and draws each timer's lateness from the quantiles of the runs' sleep timers that fired on a busy \
         CPU (`sleep_timer_late_p50_us` and the rest, from the trace; as `timer_latency`): an emulated \
         timer now and then fires a tick late, and a period-late timer skips an expiry of cyclictest's, \
         which one median does not carry; the hrtimers a scheduler arms (Project C's hrtick, MuQSS's hrexpiry) \
         fire that late too (a traced pds-6.12 fork-burst run's hrtick: 41 us late at the median, 90 us at the \
         90th percentile). Since the runs booted 2026-11-28 with the runner of 40cdcab \
         (the five experiments with timed sleeps), that lateness runs on to the sched_waking its expiry's \
         handler sends (`sleep_timer_to_waking_us`, the median, added to each quantile: the trace's \
         lateness stops at the expiry, and a wakeup's path to its switch is timed from the sched_waking), \
         and a timed wakeup's latency is counted where its thread sees it, once the sleep has returned to \
         it (`timer_return_us`, from the switch back in to the thread's clock after the call, as \
         `timer_return`, a part of `timer_wakeup`): the runs' threads time their latency there, as \
         cyclictest does. Since the runs booted 2026-11-27 with the runner that traces \
         sched_waking, a wakeup one of the workload's threads sends to an idle CPU runs its task as late as \
         in the runs on average (`idle_wakeup_mean_us`, as `idle_exit`: a rate of such wakeups follows the \
         mean); since the runs booted 2026-11-28, a wakeup that preempts a busy CPU (a timer's, an IPI) \
         switches as late as in the runs at the median (`preempt_wakeup_p50_us`, sched_waking to the \
         switch-in, as `wake_preempt`: the interrupt's return into schedule(), which a wakeup's latency \
         includes), and where threads pass a token over pipes \
         (lat-ctx) a reader's run is split as the runs' readers split it at the wakeup they send \
         (`wait_run_to_signal_us`, beyond a switch, as `wait_wakeup`; `wait_signal_to_switch_us` as \
         `signal_return`, paid after every wakeup it sends, its IPI included where there was one). lat-ctx then takes every piece of its hop from its own runs: its switch rate and \
         turns check that a hop is those pieces and nothing else (no wait for a busy CPU, no move), not \
         the costs. The guest's ticks come late together, each CPU's up to `tick_spread` apart (calibrate \
         measures the gap between its 2 vCPUs' ticks); where the runs measured it (`tick_gap_p50_us`, \
         from the trace's hrtimer expiries, runs booted since 2026-11-27), each experiment takes the \
         runs' own: 4 vCPUs on 2 host CPUs spread their ticks over 50-75 us at the median where 2 keep \
         them within 5-18 us.\n\n\
         **Tolerances.** Rates (switches/s, migrations/s) and makespans: within {:.0}%, or within 1/s or \
         two standard deviations of the real run's event count (2 sqrt(n)), whichever is larger: a rate \
         of 20 events in a run cannot be told from one of 24. Shares and spreads of shares: within \
         {SHARE_POINTS:.0} percentage points, and for tasks whose real share is under {SMALL_SHARE_PCT:.0}% \
         also within {:.0}% of that share, or for a spread within one turn of those tasks (their CPU \
         time per switch, in points of the run): a spread moves by whole turns, and with 1024 spinners a \
         4 ms turn is 0.13 points where a quarter of their share is 0.03. Durations (run time per \
         switch, wakeup latency p50): within {:.0}% (run time per switch is the p50 where one kind of \
         task runs, and each kind's mean beside \
         another kind); where both sides are below 250 µs the figure is *not compared*: it measures what \
         the emulation costs. A figure one side has and the other lacks is a flag. Where the boots \
         disagree, a simulated value between the lowest and the highest boot is within (\"between \
         boots\"): it is one the kernel itself gave, and the tolerance around their median would ask \
         the simulation to agree with the kernel better than the kernel agrees with itself. The same \
         holds the other way: where the simulation's seeds disagree, a real value between the lowest \
         and the highest seed is within (\"between seeds\", their range printed beside the simulated \
         median): a drawn cost that puts a fork or a wakeup on the other side of a tick moves such a \
         figure from one seed to the next as a boot's timing does.\n\n\
         **Verdicts.** A figure outside its tolerance with the default costs is flagged. It is *explained* \
         only when the simulation with the guest's measured costs brings it within tolerance (that figure \
         is in the table); otherwise it is *unexplained*: a defect of the model, or an open difference \
         whose known facts are printed below its table. An open difference records where it was measured \
         (its simulated, re-simulated and real values, in open.toml): it stays *in its band* while each is \
         within its own tolerance of that value (or inside a recorded range, for real figures whose boots \
         disagree). `schedlab validate` exits non-zero on an unexplained figure that is not open and in its \
         band, on an open entry whose figure is no longer flagged, and when another model matches a \
         kernel's discriminating figures better than its own model does.\n\n\
         **Boots that measured the host.** A boot is run again when other processes took {HOST_OTHERS_LIMIT} \
         host CPUs or more while the guest ran, when the guest's hrtimers (the tick, the hrtick, sleeps) \
         fired more than {TIMER_LATE_P90_LIMIT_US:.0} µs late at the 90th percentile while others took \
         {TIMER_LATE_OTHERS_MIN} host CPUs or more (quiet boots: 55-210 µs; a host taking 0.18 CPUs in \
         short bursts made it 835 µs, and every slice a timer ends longer; on a quiet host muqss-5.10 with \
         1024 spinners makes its own timers 274-971 µs late, which a new boot does not change), \
         or when a busy guest CPU took under {TICKS_DELIVERED_MIN:.0}% of its timer ticks (a vCPU its host \
         does not run for a jiffy skips the tick; judged on CPUs busy 95% of the run); such boots are \
         listed under their policy, and validate stops after {MAX_BOOTS} in a row. Runs kept from before \
         2026-11-25 carry no timer figure and were judged without it.\n\n\
         **Clocks.** Every guest keeps time on the TSC, as hardware does (`tsc=reliable`: under TCG the \
         6.1 and 5.10 kernels otherwise fall back to the emulated HPET), and its job starts only once the \
         kernel has left tsc-early and runs high-resolution timers on every CPU (before that, hrtimers fire \
         at ticks). The runs before 2026-11-25 lacked both.\n\n",
        env!("CARGO_PKG_VERSION"),
        if opts.quick { "3 s".to_string() } else { "3 s (smp-fairness 10 s)".to_string() },
        if runs == 1 { "" } else { "s" },
        if runs == 1 { "" } else { "s" },
        if set.is_empty() {
            String::new()
        } else {
            format!(" The simulations ran with{set}, the kernels with their own settings.")
        },
        RATIO_TOLERANCE * 100.0,
        SMALL_SHARE_RELATIVE * 100.0,
        RATIO_TOLERANCE * 100.0,
    );
    t.push_str(
        "| policy | model follows | kernel | figures | within | explained by the guest's costs, uptime and start | not compared | \
         unexplained |\n|---|---|---|---:|---:|---:|---:|---:|\n",
    );
    let mut sections = String::new();
    for c in checked {
        let (section, tally, missing) = policy_section(c);
        sections.push_str(&section);
        unexplained.extend(missing);
        tallies.push((c.policy.name, tally));
        let _ = writeln!(
            t,
            "| {} | {} | {} ({}) | {} | {} | {} | {} | {} |",
            c.policy.name,
            c.policy.source,
            c.policy.kernel.map_or("-", |k| k.1),
            vm::kernel_label(&c.kernel_file),
            tally.figures,
            tally.within,
            tally.explained,
            tally.not_compared,
            unexplained_cell(&tally)
        );
    }
    let without: Vec<String> = schedlab_policies::all()
        .into_iter()
        .filter(|p| !checked.iter().any(|c| c.policy.name == p.name))
        .map(|p| match p.kernel {
            Some((file, what)) => {
                if opts.sched.is_empty() {
                    format!("{} ({what}: no {file}.bzImage in {})", p.name, opts.kernels.display())
                } else {
                    format!("{} (not asked for)", p.name)
                }
            }
            None => match p.audit {
                Some(what) => format!("{} (source-audited against {what}, no kernel)", p.name),
                None => format!("{} (no bootable kernel of {}, not audited)", p.name, p.source),
            },
        })
        .collect();
    if !without.is_empty() {
        let _ = writeln!(t, "\nNot checked: {}.", without.join("; "));
    }
    if checked.len() > 1 {
        t.push_str(&matrix.text(MATRIX_HEADING, MATRIX_INTRO));
    }
    t.push('\n');
    t.push_str(&sections);
    (t, tallies, unexplained)
}

const MATRIX_HEADING: &str = "## Which model matches which kernel";
const MATRIX_INTRO: &str = "Each model judged against each kernel's real runs, as the sections below judge its own \
    (outside with the default costs and within with that kernel's costs, uptime and start is explained): figures \
    within or explained of those compared, and in brackets the same of the figures that tell the two kernels apart \
    (where the model's own kernel's real runs are outside the column kernel's tolerance; on the diagonal, the \
    kernel's *discriminating* figures, those some other kernel differs on). Most figures are the same on every \
    kernel (a 1/N share, a tick-long turn, a sleeper getting what it asks for) and say nothing of which scheduler \
    ran. Below, each kernel's own model against the other model closest to it on the figures that tell their two \
    kernels apart: a model that follows its scheduler gets those figures of its kernel, and the other model, if it \
    follows its own, cannot. Where another model gets more of them than the kernel's own, `schedlab validate` \
    fails.";

/// The unexplained figures, and how many of them are open differences
/// still where they were measured.
pub(super) fn unexplained_cell(t: &Tally) -> String {
    match t.open_in_band {
        0 => t.unexplained.to_string(),
        n if n == t.unexplained => format!("{n}, all open and in their bands"),
        n => format!("{} ({n} open and in their bands)", t.unexplained),
    }
}

/// Where a policy's table rows count what they find.
pub(super) struct Judged<'a> {
    tally: &'a mut Tally,
    missing: &'a mut Vec<String>,
    notes: &'a mut Vec<(&'static str, Vec<String>)>,
}

pub(super) const DECISIONS_INTRO: &str = "\n### Placement decisions on more CPUs than the host has\n\n\
    Each machine here has 2 cores, so these guests run 4 vCPUs on 2 host CPUs: a vCPU waits for a host CPU, \
    loses ticks and runs slower, and rates and durations say nothing. Where the kernel places a task is still \
    decided from the guest's own state, so these figures are percentages of placement decisions, counted the \
    same way from the simulation's events and the guest's trace (decisions.rs): wakeups placed on a busy CPU \
    while another CPU of the LLC was idle (what SIS_UTIL's scan limit allows), wakeups placed on another CPU \
    than the task's last, new tasks placed on an idle CPU, and balancing moves (of a runnable task) that went \
    to an idle CPU. A wakeup of a task that had not yet switched out (the kernel finds it still queued and \
    places nothing; under TCG that race is common) is not counted. What a busy guest changes is how loaded \
    the LLC looks (PELT follows the guest's slower time), so these are the placement rules under the load \
    each side saw. Tolerance: 5 points, or two \
    binomial standard deviations of the real count.\n\n";

/// The head of a policy's tables.
pub(super) const TABLE_HEAD: &str = "| experiment | figure | simulated | with the guest's costs, uptime and start | real (range) | sim/real | |\n\
    |---|---|---:|---:|---:|---:|---|\n";

/// One experiment's rows of a policy's table.
pub(super) fn table_row(t: &mut String, c: &Checked, row: &Row, judged: &mut Judged) {
    let (tally, missing, notes) = (&mut *judged.tally, &mut *judged.missing, &mut *judged.notes);
    let mut first = true;
    for f in row_keys(row) {
        let find = |v: &[Figure]| v.iter().find(|x| x.key == f.key).cloned();
        let (sim, guest, real) = (find(&row.sim), find(&row.guest), find(&row.real));
        let (ratio, _) = judge(f.kind, sim.as_ref(), real.as_ref(), row.secs);
        let o = outcome(row, &f.key);
        tally.add(o);
        // An open difference that did not show in these runs is named
        // beside its figure, still open while it stays in its band.
        let mut open_note = |text: &'static str| {
            let n = match notes.iter().position(|(t, _)| *t == text) {
                Some(i) => i,
                None => {
                    notes.push((text, Vec::new()));
                    notes.len() - 1
                }
            };
            notes[n].1.push(format!("{} {}", row.exp.id, f.label));
            n + 1
        };
        let open = open::find(c.policy.name, row.exp.id, &f.key);
        let quiet_open = match (o, open) {
            (Outcome::Unexplained, _) | (_, None) => String::new(),
            (_, Some((text, _))) => format!(", open [{}] but not flagged in these runs", open_note(text)),
        };
        let mark = match o {
            Outcome::Within if quiet_open.is_empty() => String::new(),
            Outcome::Within => format!("within{quiet_open}"),
            Outcome::NotCompared => format!("not compared{quiet_open}"),
            Outcome::Explained => format!("⚑ explained by the guest's costs, uptime and start{quiet_open}"),
            Outcome::Unexplained => {
                let name = format!("{} {} {}", c.policy.name, row.exp.id, f.label);
                match open {
                    Some((text, open)) => {
                        let n = open_note(text);
                        // An open difference fails validate only when
                        // its figure moved: it is the one measured.
                        match open.band_miss(sim.as_ref(), guest.as_ref(), real.as_ref(), row.secs) {
                            None => {
                                tally.open_in_band += 1;
                                format!("⚑ unexplained, open [{n}], in its band")
                            }
                            Some(why) => {
                                missing.push(format!("{name} ({why})"));
                                format!("⚑ **unexplained**, open [{n}], {why}")
                            }
                        }
                    }
                    None => {
                        missing.push(name);
                        "⚑ **unexplained**".into()
                    }
                }
            }
        };
        let mut beside = row.start.machine_work.map_or(String::new(), |m| {
            format!("; the guest's other tasks: {:.0} runs/s of {:.0} µs", m.runs_per_s, m.run_mean as f64 / 1e3)
        });
        // What the runs' threads paid beyond their work, as the simulation
        // with the guest's costs charges it.
        let paid: Vec<String> = [
            row.start.run_stretch.map(|s| format!("{:.1}% of a run beyond its work", s as f64 / 1e4)),
            row.start.fork.map(|f| format!("{:.0} µs a fork", f as f64 / 1e3)),
            row.start.yield_cost.map(|(cpu, switched)| {
                format!("{:.0} µs a sched_yield ({:.0}% switched away)", cpu as f64 / 1e3, switched * 100.0)
            }),
            row.start.thread_exit.map(|e| format!("{:.0} µs an exit", e as f64 / 1e3)),
            row.start.timer_wakeup.map(|t| format!("{:.0} µs a timed wakeup", t as f64 / 1e3)),
            row.start.timer_to_waking.map(|t| format!("{:.0} µs from a sleep's expiry to its wakeup", t as f64 / 1e3)),
            row.start.timer_return.map(|t| format!("{:.0} µs from a sleep's switch-in to its return", t as f64 / 1e3)),
            row.start.wait_hop.map(|(to, after)| {
                format!(
                    "{:.0} µs from a pipe's wakeup to the reply and {:.0} µs after it",
                    to as f64 / 1e3,
                    after as f64 / 1e3
                )
            }),
            row.start.idle_wakeup.map(|t| format!("{:.0} µs to wake an idle CPU on average", t as f64 / 1e3)),
            row.start
                .preempt_wakeup
                .map(|t| format!("{:.0} µs from a preempting wakeup to its switch", t as f64 / 1e3)),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !paid.is_empty() {
            beside.push_str(&format!("; the threads paid {}", paid.join(", ")));
        }
        if let Some(gap) = row.start.tick_gap {
            beside.push_str(&format!("; the CPUs' ticks {:.0} µs apart at the median", gap as f64 / 1e3));
        }
        if let Some(ahead) = &row.start.niffies_ahead {
            let ms: Vec<String> = ahead.iter().map(|a| format!("{a:.0}")).collect();
            let cpus = if ms.len() == 1 { "CPU 1's".to_string() } else { format!("CPUs 1-{}'s", ms.len()) };
            beside.push_str(&format!(
                "; {cpus} niffies {} ms ahead of CPU 0's at the start (read in /proc)",
                ms.join(", ")
            ));
        }
        if let Some(q) = row.start.timer_lateness {
            let at = |p: f64| SLEEP_PERCENTILES.iter().position(|&x| x == p).map_or(0.0, |i| q[i] as f64 / 1e3);
            beside.push_str(&format!(
                "; their timers fired {:.0} µs late at the median, {:.0} µs at the 99th percentile",
                at(50.0),
                at(99.0)
            ));
        }
        let name =
            if first { format!("{} <br><small>{}{beside}</small>", row.exp.id, row.exp.what) } else { String::new() };
        first = false;
        let value = |x: &Option<Figure>| x.as_ref().map_or("-".to_string(), |x| show(x.kind, x.value));
        let ranged = |x: &Option<Figure>| match x {
            Some(x) if x.range.0 < x.range.1 => format!(
                "{} <small>({} - {})</small>",
                show(x.kind, x.value),
                show(x.kind, x.range.0),
                show(x.kind, x.range.1)
            ),
            _ => value(x),
        };
        // A simulation's seeds are shown where its verdict stood on them.
        let seeded = |x: &Option<Figure>| {
            let (text, _) = judge(f.kind, x.as_ref(), real.as_ref(), row.secs);
            if text.ends_with("between seeds") { ranged(x) } else { value(x) }
        };
        let _ = writeln!(
            t,
            "| {name} | {} | {} | {} | {} | {ratio} | {mark} |",
            f.label,
            seeded(&sim),
            seeded(&guest),
            ranged(&real)
        );
    }
}

/// One policy's table, its tally and the unexplained figures' names.
pub(super) fn policy_section(c: &Checked) -> (String, Tally, Vec<String>) {
    let mut t = String::new();
    let mut tally = Tally::default();
    let mut missing = Vec::new();
    let _ = write!(
        t,
        "## {}: {}\n\nModel: {}. Kernel: {}. Host CPUs idle before the real runs: {}.\n\n\
         The guest's costs (`schedlab calibrate` in boots of this kernel): {}.\n\n",
        c.policy.name,
        c.policy.kernel.map_or("-", |k| k.1),
        c.policy.source,
        {
            let kernel = if c.machine.is_empty() { c.kernel_file.display().to_string() } else { c.machine.clone() };
            if c.policy.boot_args.is_empty() {
                kernel
            } else {
                format!("{kernel}, booted with `{}` (the model's default)", c.policy.boot_args.join(" "))
            }
        },
        if c.idle_runs == 0 {
            "not recorded".to_string()
        } else if c.idle_runs < c.real_runs {
            format!("at least {:.1} in the {} of {} runs that recorded it", c.idle_min, c.idle_runs, c.real_runs)
        } else {
            format!("at least {:.1}", c.idle_min)
        },
        c.guest_notes
    );
    if !c.crashes.is_empty() {
        let _ = write!(
            t,
            "**The kernel failed** in {} boot{} of the real runs (each was booted again): {}.\n\n",
            c.crashes.len(),
            if c.crashes.len() == 1 { "" } else { "s" },
            c.crashes.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join("; ")
        );
    }
    if !c.disturbed.is_empty() {
        let _ = write!(
            t,
            "**The host disturbed** {} boot{} of the real runs (each was booted again): {}.\n\n",
            c.disturbed.len(),
            if c.disturbed.len() == 1 { "" } else { "s" },
            c.disturbed.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join("; ")
        );
    }
    t.push_str(TABLE_HEAD);
    let mut notes: Vec<(&'static str, Vec<String>)> = Vec::new();
    let mut judged = Judged { tally: &mut tally, missing: &mut missing, notes: &mut notes };
    for row in c.rows.iter().filter(|r| !r.exp.figures.decisions) {
        table_row(&mut t, c, row, &mut judged);
    }
    if c.rows.iter().any(|r| r.exp.figures.decisions) {
        t.push_str(DECISIONS_INTRO);
        t.push_str(TABLE_HEAD);
        for row in c.rows.iter().filter(|r| r.exp.figures.decisions) {
            table_row(&mut t, c, row, &mut judged);
        }
    }
    if !notes.is_empty() {
        t.push_str("\nOpen differences, with what is known:\n\n");
        for (i, (text, which)) in notes.iter().enumerate() {
            let _ = writeln!(t, "{}. *{}*: {text}", i + 1, which.join(", "));
        }
    }
    t.push('\n');
    (t, tally, missing)
}
