//! The benchmarks people already run, written as they run them: a WORKLOAD
//! of `stress-ng --cpu 24`, `cyclictest -t -a -i 1000`, `hackbench -g 10
//! -l 1000`, `perf bench sched messaging|pipe` or `lat_ctx -s 0 2` is made
//! into a schedlab workload with the tool's own flags and defaults, so each
//! classic experiment is one line on the simulator, `host` and `vm` alike.
//! Several tools run side by side joined with `+`, as jitterdebugger runs
//! cyclictest beside `stress-ng`:
//! `cyclictest -t -a -i 1000 + stress-ng --cpu 24`.
//!
//! What each tool's threads do follows its source (stress-ng 0.15,
//! rt-tests 2.x cyclictest, hackbench of rt-tests, perf 6.x bench/sched-*,
//! lmbench 3 lat_ctx): who waits on whom and how often. The CPU each
//! message or cycle costs the task itself ([`ToolCosts`]) is measured: on
//! this hardware by default, and in each guest kernel by `schedlab validate
//! --tools`, which holds each preset against the real tool.

use crate::Nanos;
use std::fmt::Write;

/// The CPU time a tool's task spends per unit of its work, besides what
/// the machine's costs charge (the switch, the timer's wakeup).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ToolCosts {
    /// One write or one read of a small message through a pipe
    /// (hackbench's 100 bytes; perf bench sched's pipe and messaging).
    pub message: Nanos,
    /// What a cyclictest thread does per cycle once its timer has woken
    /// it: read the clock, compute the latency, update its statistics, arm
    /// the next sleep.
    pub cycle: Nanos,
}

impl ToolCosts {
    /// This hardware's, measured with the real tools on this machine
    /// (Debian's rt-tests 2.4 on Linux 6.18, 2 CPUs) by `schedlab compare
    /// --host --json -- TOOL` and [`ToolCosts::from_message_run`] /
    /// [`ToolCosts::from_cycle_run`] with the default costs:
    /// `hackbench -p -g 2 -f 5 -l 2000`: its 20 workers took 63-68 ms for
    /// 100,000 writes and 100,000 reads, in 3,200-4,000 switches (2 us
    /// each): 0.29 us a message; `cyclictest -t1 -p80 -i1000 -l3000 -q`:
    /// its thread took 29.4-29.6 ms in 3,000 cycles: 9.8 us a cycle (a
    /// guest's hrtimer is programmed through its hypervisor).
    pub const MEASURED: ToolCosts = ToolCosts { message: 300, cycle: 9_800 };

    /// The CPU a message cost a run of MESSAGES messages (each one write
    /// and one read), from its workers' CPU time and switches less the
    /// `context_switch` cost the simulation charges each switch-in.
    pub fn from_message_run(worker_cpu: Nanos, worker_switches: u64, messages: u64, context_switch: Nanos) -> Nanos {
        worker_cpu.saturating_sub(worker_switches * context_switch) / (2 * messages).max(1)
    }

    /// The CPU a cycle cost a cyclictest thread, less the `timer_wakeup`
    /// cost the simulation charges a task its timer woke.
    pub fn from_cycle_run(thread_cpu: Nanos, cycles: u64, timer_wakeup: Nanos) -> Nanos {
        (thread_cpu / cycles.max(1)).saturating_sub(timer_wakeup)
    }
}

/// Duration of a run whose tool has no end of its own and no flag for one.
pub const DEFAULT_DURATION: &str = "5s";

/// The tools understood, for messages and for telling a preset from a
/// scenario name.
pub const TOOLS: [&str; 5] = ["stress-ng", "cyclictest", "hackbench", "perf", "lat_ctx"];

/// Whether `text` is a preset: its first word names one of TOOLS.
pub fn is_preset(text: &str) -> bool {
    text.split_whitespace().next().is_some_and(|w| TOOLS.contains(&w))
}

/// Flags of one tool's command line: `-x V`, `--long V`, `--long=V` and
/// bare switches, and the positional words.
struct Args<'a> {
    tool: &'a str,
    words: Vec<&'a str>,
}

impl<'a> Args<'a> {
    /// The value of the first of `names` given, consumed from the words.
    fn value(&mut self, names: &[&str]) -> Result<Option<&'a str>, String> {
        for i in 0..self.words.len() {
            let w = self.words[i];
            for n in names {
                if w == *n {
                    let v = self.words.get(i + 1).copied().filter(|v| !v.starts_with('-'));
                    let Some(v) = v else {
                        return Err(format!("{}: {n} needs a value", self.tool));
                    };
                    self.words.drain(i..=i + 1);
                    return Ok(Some(v));
                }
                if let Some(v) = w.strip_prefix(n).and_then(|r| r.strip_prefix('=')).or_else(|| attached(w, n)) {
                    self.words.remove(i);
                    return Ok(Some(v));
                }
            }
        }
        Ok(None)
    }

    /// A flag whose value is optional (cyclictest's `-t [N]`, `-a [CPU]`):
    /// None when absent, Some(None) when given bare.
    fn optional(&mut self, names: &[&str]) -> Option<Option<&'a str>> {
        for i in 0..self.words.len() {
            let w = self.words[i];
            for n in names {
                if w == *n {
                    let v = self.words.get(i + 1).copied().filter(|v| v.bytes().all(|b| b.is_ascii_digit()));
                    self.words.drain(i..i + 1 + v.is_some() as usize);
                    return Some(v);
                }
                if let Some(v) = w.strip_prefix(n).and_then(|r| r.strip_prefix('=')).or_else(|| attached(w, n)) {
                    self.words.remove(i);
                    return Some(Some(v));
                }
            }
        }
        None
    }

    fn switch(&mut self, names: &[&str]) -> bool {
        let before = self.words.len();
        self.words.retain(|w| !names.contains(w));
        self.words.len() != before
    }

    fn number(&mut self, names: &[&str], default: u64, max: u64) -> Result<u64, String> {
        match self.value(names)? {
            None => Ok(default),
            Some(v) => match v.parse::<u64>() {
                Ok(n) if n <= max => Ok(n),
                _ => Err(format!("{}: {} {v} is not a whole number from 0 to {max}", self.tool, names[0])),
            },
        }
    }

    /// Refuses what is left: a flag schedlab does not know is not ignored
    /// silently, since it may change what the tool does.
    fn done(self, known: &str) -> Result<(), String> {
        match self.words.first() {
            None => Ok(()),
            Some(w) => Err(format!("{}: '{w}' is not a flag schedlab models; it knows {known}", self.tool)),
        }
    }
}

/// The value of a short flag written against it, as getopt reads
/// `cyclictest -t1 -p80 -i1000`: `-t1` is `-t 1`.
fn attached<'a>(word: &'a str, name: &str) -> Option<&'a str> {
    let short = name.len() == 2 && name.starts_with('-') && !name.starts_with("--");
    word.strip_prefix(name).filter(|v| short && !v.is_empty() && !v.starts_with('='))
}

/// A duration flag of a tool: stress-ng's and cyclictest's "60", "60s",
/// "5m", "1h" (a bare number is seconds, as both tools read it).
fn tool_duration(tool: &str, v: &str) -> Result<String, String> {
    let (num, unit) = v.split_at(v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len()));
    let n: u64 = num.parse().map_err(|_| format!("{tool}: duration '{v}' is not a number of seconds"))?;
    let secs = match unit {
        "" | "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3600),
        "d" => n.checked_mul(86400),
        _ => None,
    };
    match secs {
        Some(s) if s > 0 && s <= 78 * 3600 => Ok(format!("{s}s")),
        _ => Err(format!("{tool}: duration '{v}': give 1s to 78h (s, m, h)")),
    }
}

/// One tool's part of the workload.
#[derive(Default)]
struct Part {
    tasks: String,
    /// The run's length when the tool sets one.
    duration: Option<String>,
    /// The tool ends by itself (the run's figure is its makespan).
    finite: bool,
}

fn stress_ng(mut a: Args, cpus: u32) -> Result<Part, String> {
    let workers = a.number(&["--cpu", "-c"], 0, 100_000)?;
    // Every --cpu-method is a CPU-bound loop with no sleeps; which
    // arithmetic it does changes nothing a scheduler sees.
    let _ = a.value(&["--cpu-method"])?;
    let duration = a.value(&["--timeout", "-t"])?.map(|v| tool_duration("stress-ng", v)).transpose()?;
    let _ = a.switch(&["--metrics", "--metrics-brief", "-q", "--quiet"]);
    a.done("--cpu N (0: one per CPU), --cpu-method M, --timeout T, --metrics")?;
    let n = if workers == 0 { cpus as u64 } else { workers };
    let tasks = format!(
        "[[task]]\nname = \"stress-ng-cpu\"\ncount = {n}\nprogram = [ {{ loop = \"forever\", body = [ {{ run = \"1s\" }} ] }} ]\n"
    );
    Ok(Part { tasks, duration, finite: false })
}

fn cyclictest(mut a: Args, cpus: u32, costs: &ToolCosts) -> Result<Part, String> {
    let smp = a.switch(&["--smp", "-S"]);
    let threads = match a.optional(&["-t", "--threads"]) {
        None if smp => cpus as u64,
        None => 1,
        Some(None) => cpus as u64,
        Some(Some(n)) => n
            .parse::<u64>()
            .ok()
            .filter(|n| (1..=100_000).contains(n))
            .ok_or("cyclictest: -t N needs 1 to 100000 threads")?,
    };
    let affinity = a.optional(&["-a", "--affinity"]);
    let interval = a.number(&["-i", "--interval"], 1000, 10_000_000)?;
    if interval == 0 {
        return Err("cyclictest: -i 0: the interval is microseconds above zero".into());
    }
    let priority = a.number(&["-p", "--priority"], 0, 99)?;
    // cyclictest's --policy: fifo or rr with -p; other, normal, batch and
    // idle run at priority 0 (cyclictest drops -p for them).
    let named_policy = a.value(&["-y", "--policy"])?;
    let duration = a.value(&["-D", "--duration"])?.map(|v| tool_duration("cyclictest", v)).transpose()?;
    let loops = a.number(&["-l", "--loops"], 0, u32::MAX as u64)?;
    let _ = a.value(&["-h", "--histogram", "-H", "--histofall", "-d", "--distance"])?;
    let _ = a.switch(&["-m", "--mlockall", "-n", "--nanosleep", "-q", "--quiet", "-N", "--nsecs"]);
    a.done("-t [N], --smp, -a [CPU], -i US, -p PRIO, --policy P, -D T, -l LOOPS, -m, -n, -q, -h US")?;
    let affinity = match affinity {
        None if smp => "affinity = \"per-cpu\"\n".to_string(),
        None => String::new(),
        Some(None) => "affinity = \"per-cpu\"\n".to_string(),
        Some(Some(cpu)) => format!("affinity = \"{cpu}\"\n"),
    };
    let policy = match (named_policy, priority) {
        (None | Some("fifo"), p) if p > 0 => format!("policy = \"fifo\"\nrt_priority = {p}\n"),
        (Some("rr"), p) if p > 0 => format!("policy = \"rr\"\nrt_priority = {p}\n"),
        (Some("fifo" | "rr"), _) => return Err("cyclictest: --policy fifo and rr need -p 1..99".into()),
        (None | Some("other" | "normal"), _) => String::new(),
        (Some(p @ ("batch" | "idle")), _) => format!("policy = \"{p}\"\n"),
        (Some(other), _) => {
            return Err(format!("cyclictest: --policy {other}: give other, normal, batch, idle, fifo or rr"));
        }
    };
    let body = format!("{{ timer = \"{interval}us\" }}, {{ run = \"{}ns\" }}", costs.cycle.max(1));
    let (program, finite) = if loops > 0 {
        (format!("[ {{ loop = {loops}, body = [ {body} ] }} ]"), true)
    } else {
        (format!("[ {{ loop = \"forever\", body = [ {body} ] }} ]"), false)
    };
    let tasks = format!("[[task]]\nname = \"cyclictest\"\ncount = {threads}\n{affinity}{policy}program = {program}\n");
    let finite = finite && duration.is_none();
    Ok(Part { tasks, duration, finite })
}

/// hackbench and `perf bench sched messaging`: GROUPS groups of FDS
/// senders and FDS receivers; every sender writes LOOPS messages to each
/// receiver of its group, every receiver reads FDS x LOOPS. All start
/// together and the run ends when the last receiver is done.
fn messaging(tool: &str, groups: u64, fds: u64, loops: u64, costs: &ToolCosts) -> Result<Part, String> {
    let msg = format!("{}ns", costs.message.max(1));
    if groups == 0 || fds == 0 || loops == 0 {
        return Err(format!("{tool}: groups, fds and loops must be above zero"));
    }
    if groups * fds * 2 > 1_000_000 {
        return Err(format!("{tool}: {} tasks are more than schedlab simulates", groups * fds * 2));
    }
    let mut t = String::new();
    for g in 0..groups {
        let signals: Vec<String> =
            (0..fds).map(|r| format!("{{ run = \"{msg}\" }}, {{ signal = \"g{g}-r{r}\" }}")).collect();
        let _ = write!(
            t,
            "[[task]]\nname = \"sender-g{g}\"\ncount = {fds}\nprogram = [ {{ loop = {loops}, body = [ {} ] }}, {{ exit = true }} ]\n",
            signals.join(", ")
        );
        for r in 0..fds {
            let _ = write!(
                t,
                "[[task]]\nname = \"receiver-g{g}-r{r}\"\nprogram = [ {{ loop = {}, body = [ {{ wait = \"g{g}-r{r}\" }}, {{ run = \"{msg}\" }} ] }}, {{ exit = true }} ]\n",
                fds * loops
            );
        }
    }
    Ok(Part { tasks: t, duration: None, finite: true })
}

fn hackbench(mut a: Args, costs: &ToolCosts) -> Result<Part, String> {
    let groups = a.number(&["-g", "--groups"], 10, 10_000)?;
    let fds = a.number(&["-f", "--fds"], 20, 10_000)?;
    let loops = a.number(&["-l", "--loops"], 100, 100_000_000)?;
    let _ = a.value(&["-s", "--datasize"])?;
    let _ = a.switch(&["-T", "--threads", "-P", "--process", "-p", "--pipe"]);
    a.done("-g GROUPS, -f FDS, -l LOOPS, -s SIZE, -T/-P, -p")?;
    messaging("hackbench", groups, fds, loops, costs)
}

fn perf_bench(mut a: Args, costs: &ToolCosts) -> Result<Part, String> {
    let kind = (a.words.first().copied(), a.words.get(1).copied(), a.words.get(2).copied());
    if kind.0 != Some("bench") || kind.1 != Some("sched") {
        return Err("perf: schedlab models `perf bench sched messaging` and `perf bench sched pipe`".into());
    }
    let what = kind.2.ok_or("perf bench sched: name messaging or pipe")?;
    a.words.drain(..3);
    match what {
        "messaging" => {
            let groups = a.number(&["-g", "--group"], 10, 10_000)?;
            let loops = a.number(&["-l", "--nr_loops"], 100, 100_000_000)?;
            let _ = a.switch(&["-t", "--thread", "-p", "--pipe"]);
            a.done("-g GROUPS, -l LOOPS, -t, -p")?;
            // perf's messaging has hackbench's 20 senders and receivers.
            messaging("perf bench sched messaging", groups, 20, loops, costs)
        }
        "pipe" => {
            let loops = a.number(&["-l", "--loop"], 1_000_000, 100_000_000)?;
            let _ = a.switch(&["-T", "--threaded"]);
            a.done("-l LOOPS, -T")?;
            Ok(ring("perf-pipe", 2, loops, &format!("{}ns", costs.message.max(1))))
        }
        other => Err(format!("perf bench sched {other}: schedlab models messaging and pipe")),
    }
}

/// N tasks passing one token around a ring of pipes, LOOPS times round
/// (forever when 0); task 0 starts with it.
fn ring(name: &str, n: u64, loops: u64, work: &str) -> Part {
    let mut t = String::new();
    for i in 0..n {
        let (from, to) = ((i + n - 1) % n, i);
        let (take, pass) = (format!("{name}-{from}-to-{to}"), format!("{name}-{to}-to-{}", (i + 1) % n));
        let body = if i == 0 {
            format!("{{ run = \"{work}\" }}, {{ signal = \"{pass}\" }}, {{ wait = \"{take}\" }}")
        } else {
            format!("{{ wait = \"{take}\" }}, {{ run = \"{work}\" }}, {{ signal = \"{pass}\" }}")
        };
        let program = if loops == 0 {
            format!("[ {{ loop = \"forever\", body = [ {body} ] }} ]")
        } else {
            format!("[ {{ loop = {loops}, body = [ {body} ] }}, {{ exit = true }} ]")
        };
        let _ = write!(t, "[[task]]\nname = \"{name}-{i}\"\nprogram = {program}\n");
    }
    Part { tasks: t, duration: None, finite: loops > 0 }
}

fn lat_ctx(mut a: Args) -> Result<Part, String> {
    // lat_ctx -s KB: each process sums KB of its own array per hop; at
    // ~10 GB/s of cache bandwidth that is ~0.1 us per KB beyond the hop.
    let kb = a.number(&["-s"], 0, 1_000_000)?;
    let _ = a.value(&["-P", "-W", "-N"])?;
    let n = match a.words.as_slice() {
        [n] => {
            n.parse::<u64>().ok().filter(|n| (2..=100_000).contains(n)).ok_or("lat_ctx: give 2 to 100000 processes")?
        }
        _ => return Err("lat_ctx: give the number of processes, e.g. lat_ctx -s 0 2".into()),
    };
    a.words.clear();
    Ok(ring("lat_ctx", n, 0, &format!("{}ns", 1000 + kb * 100)))
}

/// The workload TOML for a preset command line on a machine of `cpus`,
/// with this hardware's tool costs.
pub fn toml(text: &str, cpus: u32) -> Result<String, String> {
    toml_with(text, cpus, &ToolCosts::MEASURED)
}

/// The workload TOML for a preset command line with the tools' costs of
/// another machine (a guest kernel's, measured by validate).
pub fn toml_with(text: &str, cpus: u32, costs: &ToolCosts) -> Result<String, String> {
    let mut parts = Vec::new();
    for command in text.split(" + ") {
        let words: Vec<&str> = command.split_whitespace().collect();
        let Some((&tool, rest)) = words.split_first() else {
            return Err("an empty command beside '+'".into());
        };
        let a = Args { tool, words: rest.to_vec() };
        parts.push(match tool {
            "stress-ng" => stress_ng(a, cpus)?,
            "cyclictest" => cyclictest(a, cpus, costs)?,
            "hackbench" => hackbench(a, costs)?,
            "perf" => perf_bench(a, costs)?,
            "lat_ctx" => lat_ctx(a)?,
            other => return Err(format!("'{other}' is not a tool schedlab models: {}", TOOLS.join(", "))),
        });
    }
    let duration = parts
        .iter()
        .find_map(|p| p.duration.clone())
        .unwrap_or_else(|| if parts.iter().all(|p| p.finite) { "78h".into() } else { DEFAULT_DURATION.into() });
    let mut out = format!(
        "name = \"{}\"\ndescription = \"\"\"{}\"\"\"\nduration = \"{duration}\"\n[machine]\ncpus = {cpus}\n",
        text.split_whitespace().collect::<Vec<_>>().join(" ").replace(['"', '\\'], ""),
        text.replace(['"', '\\'], "")
    );
    // `+` joins commands as one workload: the same tool twice would define
    // its tasks (and channels) twice, so a later command's identifiers
    // that an earlier one used get its position as a suffix.
    let mut seen: Vec<String> = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let names = quoted_values(&p.tasks, "name = \"");
        let tasks = if names.iter().any(|n| seen.contains(n)) {
            suffixed(&p.tasks, &format!("-{}", i + 1))
        } else {
            p.tasks.clone()
        };
        seen.extend(quoted_values(&tasks, "name = \""));
        out.push_str(&tasks);
    }
    Ok(out)
}

/// The quoted values that follow `key` (e.g. `name = "`) in a TOML text.
fn quoted_values(text: &str, key: &str) -> Vec<String> {
    text.match_indices(key)
        .filter_map(|(at, _)| {
            let rest = &text[at + key.len()..];
            rest.find('"').map(|end| rest[..end].to_string())
        })
        .collect()
}

/// `text` with `suffix` added to every task name and every name a task
/// refers to (channels, fork templates).
fn suffixed(text: &str, suffix: &str) -> String {
    let mut out = text.to_string();
    for key in ["name = \"", "wait = \"", "signal = \"", "fork = \""] {
        let mut result = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(at) = rest.find(key) {
            let (head, tail) = rest.split_at(at + key.len());
            result.push_str(head);
            let end = tail.find('"').unwrap_or(tail.len());
            result.push_str(&tail[..end]);
            result.push_str(suffix);
            rest = &tail[end..];
        }
        result.push_str(rest);
        out = result;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Overrides, Workload};

    fn load(text: &str, cpus: u32) -> Workload {
        Workload::from_toml(&toml(text, cpus).unwrap(), text, &Overrides::default()).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_same_tool_twice_joins_as_two_sets_of_tasks() {
        let w = load("stress-ng --cpu 4 + stress-ng --cpu 2", 8);
        let names: Vec<&str> = w.tasks.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["stress-ng-cpu", "stress-ng-cpu-2"]);
        assert_eq!(w.initial_tasks(), 6);
        // Two rings keep their own channels.
        let w = load("lat_ctx -s 0 2 + lat_ctx -s 0 2", 2);
        assert_eq!(w.tasks.len(), 4);
        assert_eq!(w.channels.len(), 4, "{:?}", w.channels.iter().map(|c| &c.name).collect::<Vec<_>>());
    }

    #[test]
    fn each_tool_reads_its_own_flags() {
        let w = load("stress-ng --cpu 24 --cpu-method loop --timeout 60s", 8);
        assert_eq!((w.initial_tasks(), w.duration, w.nr_cpus()), (24, 60_000_000_000, 8));
        assert_eq!(load("stress-ng --cpu 0", 4).initial_tasks(), 4, "--cpu 0 is one per CPU");
        let w = load("cyclictest -t -a -i 500 -p 80 -D 2m", 4);
        assert_eq!(w.initial_tasks(), 4);
        assert!(w.tasks[0].per_cpu && w.tasks[0].policy.is_rt());
        assert_eq!(w.duration, 120_000_000_000);
        let w = load("hackbench -g 2 -f 3 -l 10", 2);
        assert_eq!(w.initial_tasks(), 2 * 3 * 2);
        assert_eq!(w.duration, 78 * 3600 * 1_000_000_000, "hackbench ends by itself: its makespan is the figure");
        assert_eq!(load("perf bench sched messaging -g 1", 2).initial_tasks(), 40);
        assert_eq!(load("perf bench sched pipe -l 1000", 2).initial_tasks(), 2);
        assert_eq!(load("lat_ctx -s 0 2", 2).initial_tasks(), 2);
        let w = load("cyclictest --smp -i 1000 + stress-ng --cpu 6", 2);
        assert_eq!((w.tasks.len(), w.initial_tasks()), (2, 8));
        // Short flags with their values against them, as getopt reads them.
        let w = load("cyclictest -t2 -p80 -i1000 -D5", 4);
        assert_eq!((w.initial_tasks(), w.duration), (2, 5_000_000_000));
        assert!(w.tasks[0].policy.is_rt());
        assert_eq!(load("hackbench -p -g2 -f3 -l10", 2).initial_tasks(), 2 * 3 * 2);
        assert!(!load("cyclictest --policy=other -p 80", 2).tasks[0].policy.is_rt(), "other drops -p");
        assert!(load("cyclictest --policy rr -p80", 2).tasks[0].policy.is_rt());
    }

    #[test]
    fn the_tools_costs_are_the_ones_given() {
        let costs = ToolCosts { message: 1_234, cycle: 56_789 };
        let text = toml_with("hackbench -g 1 -f 1 -l 1 + cyclictest -l 1", 2, &costs).unwrap();
        assert!(text.contains("run = \"1234ns\"") && text.contains("run = \"56789ns\""), "{text}");
        let measured = toml("cyclictest -l 1", 2).unwrap();
        assert!(measured.contains(&format!("run = \"{}ns\"", ToolCosts::MEASURED.cycle)), "{measured}");
    }

    #[test]
    fn unknown_flags_and_bad_values_are_refused_by_name() {
        let err = |t: &str| toml(t, 2).unwrap_err();
        assert!(err("stress-ng --vm 2").contains("'--vm' is not a flag schedlab models"));
        assert!(err("cyclictest -i 0").contains("above zero"));
        assert!(err("cyclictest -p 120").contains("0 to 99"));
        assert!(err("hackbench -g x").contains("not a whole number"));
        assert!(err("perf bench sched numa").contains("messaging and pipe"));
        assert!(err("lat_ctx").contains("number of processes"));
        assert!(err("stress-ng --cpu 4 --timeout 1y").contains("1s to 78h"));
        assert!(err("cyclictest -x1").contains("'-x1' is not a flag"));
        assert!(err("cyclictest -i0").contains("above zero"));
        assert!(err("cyclictest --policy=fifo").contains("need -p 1..99"));
        assert!(err("cyclictest --policy=deadline").contains("give other, normal"));
        assert!(is_preset("hackbench -g 1") && !is_preset("thread-test"));
    }
}
