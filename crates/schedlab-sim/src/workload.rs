//! Workload files: the machine, the scheduler tunables, cgroups and task
//! programs, read from TOML and checked into a [`Workload`] the engine runs.
//! Every error names the line of the file it comes from and what to write
//! instead.

use crate::dist::Dist;
use crate::time::{NSEC_PER_SEC, NSEC_PER_USEC, Nanos, parse_duration};
use crate::topology::{CpuSet, Topology};
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// A workload that cannot be run: where (file and line, or the command
/// line option, whose line is 0) and what to write instead.
#[derive(Debug, thiserror::Error)]
#[error("{origin}{}: {message}", if *line > 0 { format!(":{line}") } else { String::new() })]
pub struct WorkloadError {
    pub origin: String,
    pub line: usize,
    pub message: String,
}

pub type TaskSpecId = u32;
pub type GroupId = u32;
pub type ChanId = u32;
pub type CondId = u32;
pub type BarrierId = u32;

/// A channel: a counting semaphore of tokens with a FIFO of waiters. A
/// mutex is a channel holding one token.
#[derive(Clone, Debug, PartialEq)]
pub struct Channel {
    pub name: String,
    /// Tokens at the start (1 for a mutex).
    pub initial: u64,
}

/// A barrier: every arrival waits until `users` tasks have arrived, then
/// all go on (rt-app's barrier event).
#[derive(Clone, Debug, PartialEq)]
pub struct Barrier {
    pub name: String,
    pub users: u32,
}

/// How a periodic timer computes its next expiry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerMode {
    /// cyclictest's: the first expiry is a period after the first timer op;
    /// missed expiries are skipped to the next one ahead.
    Periodic,
    /// rt-app's: the first expiry is a period after the task started; when
    /// an expiry has already passed the task does not sleep, and a relative
    /// timer then restarts its period from now while an absolute one keeps
    /// its schedule (and catches up).
    RtApp { relative: bool },
}

impl TimerMode {
    /// The next expiry of a timer whose last one was `last` (None before
    /// its first use), for a task started at `started`, at time `now`:
    /// Ok(expiry) to sleep until, or Err(new last) when rt-app would not
    /// sleep because the expiry has already passed.
    pub fn next_expiry(self, last: Option<Nanos>, period: Nanos, started: Nanos, now: Nanos) -> Result<Nanos, Nanos> {
        match self {
            TimerMode::Periodic => {
                let mut next = last.map_or(now + period, |n| n + period);
                if next <= now {
                    // Overrun: skip to the next period ahead, as a periodic
                    // timer with missed expiries would.
                    next += (now - next) / period * period + period;
                }
                Ok(next)
            }
            TimerMode::RtApp { relative } => {
                let next = last.unwrap_or(started) + period;
                if next > now { Ok(next) } else { Err(if relative { now } else { next }) }
            }
        }
    }
}

/// Scheduling policy of a task, as sched_setscheduler(2) names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SchedPolicy {
    Normal,
    Batch,
    Idle,
    /// SCHED_ISO (BFS and MuQSS): soft real-time for unprivileged users,
    /// limited to sched_iso_cpu of the CPU; SCHED_NORMAL elsewhere.
    Iso,
    /// SCHED_FIFO with its rt priority 1..99.
    Fifo(u8),
    /// SCHED_RR with its rt priority 1..99.
    Rr(u8),
}

impl SchedPolicy {
    pub fn is_rt(self) -> bool {
        matches!(self, SchedPolicy::Fifo(_) | SchedPolicy::Rr(_))
    }
}

/// One step of a task program, flattened so loops are jumps.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Burn CPU for this long.
    Run(Dist),
    /// Block for this long.
    Sleep(Dist),
    /// Block until the timer's next expiry (clock_nanosleep TIMER_ABSTIME).
    /// A task has timers numbered by `slot`, each with its own schedule.
    Timer {
        period: Nanos,
        slot: u32,
        mode: TimerMode,
    },
    /// Take a token from a channel, blocking until one is there.
    Wait(ChanId),
    /// Put a token in a channel, waking its first waiter.
    Signal(ChanId),
    /// pthread_cond_wait: release the mutex (if any) and block until a
    /// signal or broadcast on the condition; the mutex is taken back by the
    /// Wait op that follows.
    CondWait {
        cond: CondId,
        mutex: Option<ChanId>,
    },
    /// pthread_cond_signal: wake the first waiter, if any (no waiter, no
    /// effect: a condition keeps no tokens).
    CondSignal(CondId),
    /// pthread_cond_broadcast: wake every waiter.
    CondBroadcast(CondId),
    /// Wait at a barrier until all its users have arrived.
    Barrier(BarrierId),
    /// sched_yield().
    Yield,
    /// Start a new task from a template.
    Fork(TaskSpecId),
    Exit,
    /// Start of a loop body; `count` None repeats forever; `end` is the
    /// index of the matching LoopEnd.
    LoopStart {
        count: Option<u64>,
        end: u32,
    },
    LoopEnd {
        start: u32,
    },
}

#[derive(Clone, Debug)]
pub struct TaskSpec {
    pub name: String,
    pub count: u32,
    pub nice: i32,
    pub policy: SchedPolicy,
    pub affinity: Option<CpuSet>,
    /// `affinity = "per-cpu"`: instance k runs only on CPU k mod ncpus, as
    /// `cyclictest -a -t` pins one thread per CPU.
    pub per_cpu: bool,
    pub group: GroupId,
    /// sched_attr.sched_runtime: a custom slice request (EEVDF honours it).
    pub slice: Option<Nanos>,
    pub start: Dist,
    /// Templates are only started by `fork`.
    pub template: bool,
    pub program: Vec<Op>,
}

impl TaskSpec {
    /// The name reports give task `id` made from this spec: the spec's name,
    /// numbered by task id when the spec makes several tasks.
    pub fn task_name(&self, id: u32) -> String {
        if self.count > 1 || self.template { format!("{}-{id}", self.name) } else { self.name.clone() }
    }
}

/// The speed benchmarks' scaling workload (`schedlab bench` and the
/// criterion suite): `tasks` tasks on 256 CPUs, each running exp(100us)
/// bursts between sleeps of exp(tasks x 4us), about 25 CPUs' worth of
/// demand whatever the count, so the event mix stays the same while the
/// queues grow.
pub fn scaling_workload(tasks: u32, duration: Nanos) -> Result<Workload, WorkloadError> {
    let text = format!(
        r#"
name = "scaling-{tasks}"
duration = "{duration}ns"
[machine]
topology = "4x32x2"
[[task]]
name = "t"
count = {tasks}
program = [ {{ loop = "forever", body = [ {{ run = "exp(100us)" }}, {{ sleep = "exp({}us)" }} ] }} ]
"#,
        tasks as u64 * 4
    );
    Workload::from_toml(&text, "bench-scaling.toml", &Overrides::default())
}

/// Items named by a key (channels, conditions, waker->wakee pairs),
/// numbered in first-seen order: how names become ids. A lookup is a hash,
/// so a file with 100,000 names reads in linear time.
pub(crate) struct Named<K, T> {
    pub items: Vec<T>,
    ids: std::collections::HashMap<K, u32>,
}

impl<K: std::hash::Hash + Eq, T> Default for Named<K, T> {
    fn default() -> Self {
        Named { items: Vec::new(), ids: std::collections::HashMap::new() }
    }
}

impl<K: std::hash::Hash + Eq, T> Named<K, T> {
    /// The id of `key`, with `new()` pushed for a key not seen before.
    pub fn id(&mut self, key: K, new: impl FnOnce() -> T) -> u32 {
        let items = &mut self.items;
        *self.ids.entry(key).or_insert_with(|| {
            items.push(new());
            items.len() as u32 - 1
        })
    }
}

/// A workload's name when its file gives none: the file name's stem.
pub(crate) fn name_from_origin(origin: &str) -> String {
    std::path::Path::new(origin).file_stem().map_or_else(|| origin.to_string(), |s| s.to_string_lossy().into_owned())
}

/// CONFIG_HZ when the workload does not say.
pub const DEFAULT_HZ: u32 = 250;

#[derive(Clone, Debug)]
pub struct GroupSpec {
    pub name: String,
    pub parent: Option<GroupId>,
    /// cgroup v2 cpu.weight, 1..10000, default 100.
    pub cpu_weight: u32,
    /// cgroup v2 cpu.max as (quota, period) in ns; None is "max".
    pub cpu_max: Option<(Nanos, Nanos)>,
}

#[derive(Clone, Debug)]
pub struct Costs {
    /// CPU time spent switching from one task to another.
    pub context_switch: Nanos,
    /// Extra CPU time a task needs after it moves to another CPU (cold
    /// caches); doubled across LLCs.
    pub migration: Nanos,
    /// Delay between a wakeup aimed at an idle CPU and that CPU running the
    /// task (IPI and idle exit).
    pub idle_exit: Nanos,
    /// Cost of a system call that does not block (sched_yield).
    pub syscall: Nanos,
    /// CPU time the forking task spends in clone() before the child is
    /// runnable (wake_up_new_task is clone's last step).
    pub fork: Nanos,
    /// CPU time a new task spends before the first step of its program
    /// (the thread library's start-up, the first touch of its stack).
    pub thread_start: Nanos,
    /// CPU time charged to a task for each timed sleep it wakes from: the
    /// clock_nanosleep() call and the return from the timer's wakeup.
    pub timer_wakeup: Nanos,
    /// How late a timer wakes its task past the time it was set for (the
    /// timer interrupt's delivery), before any idle exit.
    pub timer_latency: Nanos,
    /// Each tick arrives up to this much after its jiffy boundary (uniform,
    /// seeded per CPU and jiffy): interrupts of one jiffy reach the CPUs in
    /// no fixed order, and an emulated timer is more irregular still.
    pub tick_jitter: Nanos,
}

/// The cost names `[machine] costs` and `--cost` take, in the order
/// messages list them.
pub const COST_NAMES: &[&str] = &[
    "context_switch",
    "migration",
    "idle_exit",
    "syscall",
    "fork",
    "thread_start",
    "timer_wakeup",
    "timer_latency",
    "tick_jitter",
];

impl Costs {
    /// Replace one cost by the name `[machine] costs` gives it (`--cost`).
    pub fn set(&mut self, name: &str, value: Nanos) -> Result<(), String> {
        let slot = match name {
            "context_switch" => &mut self.context_switch,
            "migration" => &mut self.migration,
            "idle_exit" => &mut self.idle_exit,
            "syscall" => &mut self.syscall,
            "fork" => &mut self.fork,
            "thread_start" => &mut self.thread_start,
            "timer_wakeup" => &mut self.timer_wakeup,
            "timer_latency" => &mut self.timer_latency,
            "tick_jitter" => &mut self.tick_jitter,
            _ => return Err(format!("unknown cost '{name}': use one of {}", COST_NAMES.join(", "))),
        };
        // A cost is paid per event: nanoseconds to milliseconds. Hours would
        // only push events past the engine's horizon.
        if value > crate::time::NSEC_PER_SEC {
            return Err(format!(
                "cost {name} = {} is more than a second: a cost is paid at every event, e.g. {name} = \"8us\"",
                crate::time::format_duration(value)
            ));
        }
        *slot = value;
        Ok(())
    }

    /// The command line's costs over these.
    pub(crate) fn overridden(mut self, ov: &Overrides) -> Result<Costs, WorkloadError> {
        for (name, &value) in &ov.costs {
            self.set(name, value).map_err(|message| WorkloadError { origin: "--cost".into(), line: 0, message })?;
        }
        Ok(self)
    }
}

impl Default for Costs {
    fn default() -> Costs {
        Costs {
            context_switch: 2 * NSEC_PER_USEC,
            migration: 10 * NSEC_PER_USEC,
            idle_exit: 5 * NSEC_PER_USEC,
            syscall: 300,
            // What a fork, a thread's start and a timer cost on bare metal
            // is small beside the bursts of the built-in scenarios and is
            // not charged unless measured (`schedlab calibrate`).
            fork: 0,
            thread_start: 0,
            timer_wakeup: 0,
            timer_latency: 0,
            tick_jitter: 4 * NSEC_PER_USEC,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Machine {
    pub topology: Topology,
    pub hz: u32,
    pub costs: Costs,
}

impl GroupSpec {
    /// The root cgroup, groups[0] of every workload.
    pub fn root() -> GroupSpec {
        GroupSpec { name: "/".into(), parent: None, cpu_weight: 100, cpu_max: None }
    }
}

impl Machine {
    /// A machine with the default HZ and costs, the command line's costs
    /// over them (for inputs that describe no machine: rt-app, traces).
    pub fn with_defaults(topology: Topology, ov: &Overrides) -> Result<Machine, WorkloadError> {
        Ok(Machine { topology, hz: DEFAULT_HZ, costs: Costs::default().overridden(ov)? })
    }

    pub fn tick_ns(&self) -> Nanos {
        NSEC_PER_SEC / self.hz as Nanos
    }
}

/// A checked workload, ready to simulate.
#[derive(Clone, Debug)]
pub struct Workload {
    pub name: String,
    pub description: String,
    /// The file's [params] with the values in force (overrides applied).
    pub params: BTreeMap<String, i64>,
    /// The [params] that some [[task]] uses as its `count`.
    pub count_params: Vec<String>,
    pub duration: Nanos,
    pub seed: u64,
    pub machine: Machine,
    pub tunables: BTreeMap<String, i64>,
    /// groups[0] is the root group.
    pub groups: Vec<GroupSpec>,
    pub tasks: Vec<TaskSpec>,
    pub channels: Vec<Channel>,
    /// Condition variables (rt-app's signal/wait/broad, suspend/resume).
    pub conds: Vec<String>,
    pub barriers: Vec<Barrier>,
}

/// Command-line overrides applied while a file is read, so that references
/// (a `count` naming a parameter, CPU lists) are checked against them.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub cpus: Option<u32>,
    pub duration: Option<Nanos>,
    pub seed: Option<u64>,
    pub params: BTreeMap<String, i64>,
    pub tunables: BTreeMap<String, i64>,
    /// `[machine] costs` by name, e.g. from `schedlab calibrate`.
    pub costs: BTreeMap<String, Nanos>,
}

// ---- the file as written ----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    name: Option<String>,
    #[serde(default)]
    description: String,
    duration: Option<Spanned<String>>,
    seed: Option<u64>,
    #[serde(default)]
    machine: MachineFile,
    #[serde(default)]
    params: BTreeMap<String, i64>,
    #[serde(default)]
    tunables: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    group: Vec<Spanned<GroupFile>>,
    #[serde(default)]
    task: Vec<Spanned<TaskFile>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct MachineFile {
    cpus: Option<Spanned<u32>>,
    topology: Option<Spanned<String>>,
    hz: Option<Spanned<u32>>,
    #[serde(default)]
    costs: CostsFile,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CostsFile {
    context_switch: Option<Dist>,
    migration: Option<Dist>,
    idle_exit: Option<Dist>,
    syscall: Option<Dist>,
    fork: Option<Dist>,
    thread_start: Option<Dist>,
    timer_wakeup: Option<Dist>,
    timer_latency: Option<Dist>,
    tick_jitter: Option<Dist>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupFile {
    name: String,
    parent: Option<String>,
    cpu_weight: Option<u32>,
    cpu_max: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Count {
    Fixed(u32),
    Param(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskFile {
    name: String,
    count: Option<Count>,
    #[serde(default)]
    nice: i32,
    policy: Option<String>,
    rt_priority: Option<u8>,
    affinity: Option<String>,
    group: Option<String>,
    slice: Option<Dist>,
    start: Option<Dist>,
    #[serde(default)]
    template: bool,
    program: Vec<Spanned<toml::Table>>,
}

struct Ctx<'a> {
    origin: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    fn line_of(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())].matches('\n').count() + 1
    }

    fn err(&self, span: std::ops::Range<usize>, message: impl Into<String>) -> WorkloadError {
        WorkloadError { origin: self.origin.to_string(), line: self.line_of(span.start), message: message.into() }
    }
}

const PROGRAM_HELP: &str = "an op is one of { run = \"3ms\" }, { sleep = \"exp(1ms)\" }, { timer = \"1ms\" }, { wait = \"chan\" }, { signal = \"chan\" }, { yield = true }, { fork = \"template\" }, { exit = true }, { loop = 10, body = [ ... ] } or { loop = \"forever\", body = [ ... ] }";

/// serde's "invalid type: integer `5`, expected a string" in the words of
/// the file: the key, its value, and what to write instead.
fn plain_type_error(text: &str, span: std::ops::Range<usize>, message: &str) -> String {
    let start = span.start.min(text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let before = text[line_start..start].trim_end().trim_end_matches('=').trim_end();
    let key: String = before
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let mut value: String = text.get(span).unwrap_or("").trim().chars().take(40).collect();
    if value.contains('\n') || value.is_empty() {
        value = "this".into();
    }
    let durations = ["duration", "run", "sleep", "timer", "slice", "quota", "period", "start"];
    if key.is_empty() {
        return message.to_string();
    }
    if message.contains("untagged enum Count") {
        format!("count = {value}: give a whole number of tasks (1 or more) or the name of one of the [params]")
    } else if message.contains("expected a string") && durations.contains(&key.as_str()) {
        format!("{key} = {value}: a duration is a string with its unit, e.g. {key} = \"5ms\"")
    } else if message.contains("expected a string") {
        format!("{key} = {value}: write it as a string in quotes, e.g. {key} = \"...\"")
    } else if ["expected u32", "expected u64", "expected i32", "expected i64", "expected u8"]
        .iter()
        .any(|t| message.contains(t))
    {
        format!("{key} = {value}: give a whole number, e.g. {key} = 2")
    } else if message.contains("expected a sequence") {
        format!("{key}: give a list in brackets, e.g. {key} = [ ... ]")
    } else if message.contains("expected a boolean") {
        format!("{key} = {value}: give true or false")
    } else {
        message.to_string()
    }
}

impl Workload {
    pub fn from_toml(text: &str, origin: &str, ov: &Overrides) -> Result<Workload, WorkloadError> {
        let ctx = Ctx { origin, text };
        let file: FileSpec = toml::from_str(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            ctx.err(span.clone(), plain_type_error(text, span, e.message().trim()))
        })?;

        let topology = match (&file.machine.cpus, &file.machine.topology) {
            (Some(c), Some(_)) => {
                return Err(ctx.err(c.span(), "give either machine.cpus or machine.topology, not both"));
            }
            (Some(c), None) => Topology::flat(*c.get_ref()).map_err(|m| ctx.err(c.span(), m))?,
            (None, Some(t)) => Topology::parse(t.get_ref()).map_err(|m| ctx.err(t.span(), m))?,
            (None, None) => Topology::flat(1).expect("one CPU is a machine"),
        };
        let topology = match ov.cpus {
            Some(n) => Topology::flat(n).map_err(|m| WorkloadError { origin: "--cpus".into(), line: 0, message: m })?,
            None => topology,
        };
        let nr_cpus = topology.nr_cpus();
        let hz = match &file.machine.hz {
            Some(h) => {
                if ![100, 250, 300, 1000].contains(h.get_ref()) {
                    return Err(ctx.err(
                        h.span(),
                        format!("hz = {} is not a kernel CONFIG_HZ choice: use 100, 250, 300 or 1000", h.get_ref()),
                    ));
                }
                *h.get_ref()
            }
            None => DEFAULT_HZ,
        };
        let cost = |d: &Option<Dist>, default: Nanos| -> Nanos {
            match d {
                Some(d) => d.mean().round() as Nanos,
                None => default,
            }
        };
        let defaults = Costs::default();
        let costs = Costs {
            context_switch: cost(&file.machine.costs.context_switch, defaults.context_switch),
            migration: cost(&file.machine.costs.migration, defaults.migration),
            idle_exit: cost(&file.machine.costs.idle_exit, defaults.idle_exit),
            syscall: cost(&file.machine.costs.syscall, defaults.syscall),
            fork: cost(&file.machine.costs.fork, defaults.fork),
            thread_start: cost(&file.machine.costs.thread_start, defaults.thread_start),
            timer_wakeup: cost(&file.machine.costs.timer_wakeup, defaults.timer_wakeup),
            timer_latency: cost(&file.machine.costs.timer_latency, defaults.timer_latency),
            tick_jitter: cost(&file.machine.costs.tick_jitter, defaults.tick_jitter),
        }
        .overridden(ov)?;

        let duration = match (ov.duration, &file.duration) {
            (Some(d), _) => d,
            (None, Some(d)) => parse_duration(d.get_ref()).map_err(|m| ctx.err(d.span(), m))?,
            (None, None) => NSEC_PER_SEC,
        };
        if duration == 0 || duration > crate::queue::MAX_TIME {
            return Err(WorkloadError {
                origin: origin.into(),
                line: file.duration.as_ref().map_or(0, |d| ctx.line_of(d.span().start)),
                message: if duration == 0 {
                    "duration must be more than zero: write e.g. duration = \"5s\"".into()
                } else {
                    "duration is longer than the simulator's 78-hour horizon: simulate at most \"78h\"".into()
                },
            });
        }

        let mut tunables = BTreeMap::new();
        for (name, value) in &file.tunables {
            let v = match value.get_ref() {
                toml::Value::Integer(i) => *i,
                toml::Value::Boolean(b) => *b as i64,
                other => {
                    return Err(ctx.err(
                        value.span(),
                        format!("tunable {name} = {other}: tunables are integers (nanoseconds for *_ns) or booleans"),
                    ));
                }
            };
            tunables.insert(name.clone(), v);
        }
        tunables.extend(ov.tunables.iter().map(|(k, v)| (k.clone(), *v)));

        let mut params = file.params.clone();
        params.extend(ov.params.iter().map(|(k, v)| (k.clone(), *v)));
        if params.contains_key("ncpus") {
            return Err(WorkloadError {
                origin: origin.into(),
                line: 1,
                message: "ncpus is built in (the machine's CPU count): name your parameter otherwise".into(),
            });
        }
        params.insert("ncpus".into(), nr_cpus as i64);

        // Groups: root first, then in file order; parents must come first.
        let mut groups = vec![GroupSpec::root()];
        for g in &file.group {
            let span = g.span();
            let g = g.get_ref();
            check_group_name(&g.name).map_err(|m| ctx.err(span.clone(), m))?;
            if groups.iter().any(|x| x.name == g.name) {
                return Err(ctx.err(span, format!("group '{}' is defined twice", g.name)));
            }
            let parent = match &g.parent {
                None => 0,
                Some(p) => groups.iter().position(|x| &x.name == p).ok_or_else(|| {
                    ctx.err(
                        span.clone(),
                        format!("group '{}' names parent '{p}', which is not defined above it", g.name),
                    )
                })? as GroupId,
            };
            let cpu_weight = g.cpu_weight.unwrap_or(100);
            if !(1..=10000).contains(&cpu_weight) {
                return Err(ctx.err(
                    span,
                    format!(
                        "group '{}': cpu_weight {cpu_weight} is outside cgroup v2's 1..10000 (default 100)",
                        g.name
                    ),
                ));
            }
            let cpu_max = match &g.cpu_max {
                None => None,
                Some(s) => parse_cpu_max(s).map_err(|m| ctx.err(span.clone(), format!("group '{}': {m}", g.name)))?,
            };
            groups.push(GroupSpec { name: g.name.clone(), parent: Some(parent), cpu_weight, cpu_max });
        }

        // Task names first, so fork can name a template defined later.
        // A hash of the names: a scan per [[task]] was quadratic (40,000
        // tasks: 3.5 s).
        let mut names: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for (i, t) in file.task.iter().enumerate() {
            if names.insert(t.get_ref().name.as_str(), i).is_some() {
                return Err(ctx.err(t.span(), format!("task '{}' is defined twice", t.get_ref().name)));
            }
        }
        let mut channels: Named<String, String> = Named::default();
        let mut tasks = Vec::new();
        let mut count_params = Vec::new();
        for spanned in &file.task {
            let span = spanned.span();
            let t = spanned.get_ref();
            let here = |m: String| ctx.err(span.clone(), format!("task '{}': {m}", t.name));
            let count = match &t.count {
                None => 1,
                Some(Count::Fixed(n)) => *n,
                Some(Count::Param(p)) => {
                    if !count_params.contains(p) {
                        count_params.push(p.clone());
                    }
                    let v = params.get(p).ok_or_else(|| {
                        here(format!("count = \"{p}\" names no parameter: add it under [params] or pass --param {p}=N"))
                    })?;
                    u32::try_from(*v).map_err(|_| here(format!("parameter {p} = {v} is not a task count")))?
                }
            };
            if count as u64 > MAX_TASKS {
                return Err(here(format!("count {count} is more than the {MAX_TASKS} tasks schedlab simulates")));
            }
            if !(-20..=19).contains(&t.nice) {
                return Err(here(format!("nice {} is outside -20..19", t.nice)));
            }
            let policy = match (t.policy.as_deref().unwrap_or("normal"), t.rt_priority) {
                ("normal" | "other", None) => SchedPolicy::Normal,
                ("batch", None) => SchedPolicy::Batch,
                ("idle", None) => SchedPolicy::Idle,
                ("iso", None) => SchedPolicy::Iso,
                ("fifo" | "rr", None) => {
                    return Err(here("policy fifo and rr need rt_priority = 1..99".into()));
                }
                ("fifo", Some(p)) | ("rr", Some(p)) if !(1..=99).contains(&p) => {
                    return Err(here(format!("rt_priority {p} is outside 1..99")));
                }
                ("fifo", Some(p)) => SchedPolicy::Fifo(p),
                ("rr", Some(p)) => SchedPolicy::Rr(p),
                (_, Some(_)) => {
                    return Err(here("rt_priority applies only to policy \"fifo\" or \"rr\"".into()));
                }
                (other, None) => {
                    return Err(here(format!("unknown policy '{other}': use normal, batch, idle, fifo or rr")));
                }
            };
            let per_cpu = t.affinity.as_deref() == Some("per-cpu");
            let affinity = match &t.affinity {
                None => None,
                Some(_) if per_cpu => None,
                Some(list) => Some(CpuSet::parse_list(list, nr_cpus).map_err(here)?),
            };
            let group = match &t.group {
                None => 0,
                Some(name) => groups.iter().position(|g| &g.name == name).ok_or_else(|| {
                    here(format!("group '{name}' is not defined: add a [[group]] with name = \"{name}\""))
                })? as GroupId,
            };
            let slice = match &t.slice {
                None => None,
                Some(d) => {
                    let v = d.mean().round() as Nanos;
                    // sched_setattr clamps sched_runtime to 0.1 ms .. 100 ms.
                    if !(100 * NSEC_PER_USEC..=100_000 * NSEC_PER_USEC).contains(&v) {
                        return Err(here("slice must be between 100us and 100ms, as sched_setattr allows".into()));
                    }
                    Some(v)
                }
            };
            let mut program = Vec::new();
            compile_ops(&ctx, &t.program, &names, &mut channels, &mut program, &t.name)?;
            tasks.push(TaskSpec {
                name: t.name.clone(),
                count,
                nice: t.nice,
                policy,
                affinity,
                per_cpu,
                group,
                slice,
                start: t.start.clone().unwrap_or(Dist::Const(0)),
                template: t.template,
                program,
            });
        }
        if !tasks.iter().any(|t| !t.template && t.count > 0) {
            return Err(WorkloadError {
                origin: origin.into(),
                line: 1,
                message: "the workload starts no task: add a [[task]] with a program (templates alone never start)"
                    .into(),
            });
        }

        let w = Workload {
            name: file.name.unwrap_or_else(|| name_from_origin(origin)),
            description: file.description,
            params: file.params.keys().filter_map(|k| Some((k.clone(), *params.get(k)?))).collect(),
            count_params,
            duration,
            seed: ov.seed.or(file.seed).unwrap_or(1),
            machine: Machine { topology, hz, costs },
            tunables,
            groups,
            tasks,
            channels: channels.items.into_iter().map(|name| Channel { name, initial: 0 }).collect(),
            conds: Vec::new(),
            barriers: Vec::new(),
        };
        w.check_bounds().map_err(|message| WorkloadError { origin: origin.into(), line: 1, message })?;
        Ok(w)
    }

    pub fn nr_cpus(&self) -> u32 {
        self.machine.topology.nr_cpus()
    }

    /// The affinity of instance `k` of spec `spec`.
    pub fn instance_affinity(&self, spec: TaskSpecId, k: u32) -> Option<CpuSet> {
        let s = &self.tasks[spec as usize];
        if s.per_cpu {
            let mut set = CpuSet::empty(self.nr_cpus());
            set.insert(k % self.nr_cpus());
            Some(set)
        } else {
            s.affinity.clone()
        }
    }

    /// Number of tasks started at the beginning (templates excluded).
    pub fn initial_tasks(&self) -> u64 {
        self.tasks.iter().filter(|t| !t.template).map(|t| t.count as u64).sum()
    }

    /// What is legal in a workload but almost surely not meant: a channel
    /// or condition some task waits on and no task signals (its waiters
    /// sleep for the rest of the run).
    pub fn lints(&self) -> Vec<String> {
        let (mut chan_wait, mut chan_signal) = (vec![false; self.channels.len()], vec![false; self.channels.len()]);
        let (mut cond_wait, mut cond_signal) = (vec![false; self.conds.len()], vec![false; self.conds.len()]);
        for op in self.tasks.iter().flat_map(|t| &t.program) {
            match op {
                Op::Wait(c) => chan_wait[*c as usize] = true,
                Op::Signal(c) => chan_signal[*c as usize] = true,
                Op::CondWait { cond, .. } => cond_wait[*cond as usize] = true,
                Op::CondSignal(c) | Op::CondBroadcast(c) => cond_signal[*c as usize] = true,
                _ => {}
            }
        }
        let mut out = Vec::new();
        for (i, ch) in self.channels.iter().enumerate() {
            if chan_wait[i] && !chan_signal[i] {
                out.push(format!(
                    "channel '{}' is waited on but no task signals it: its waiters sleep for the rest of the run",
                    ch.name
                ));
            }
        }
        for (i, name) in self.conds.iter().enumerate() {
            if cond_wait[i] && !cond_signal[i] {
                out.push(format!(
                    "condition '{name}' is waited on but no task signals it: its waiters sleep for the rest of the run"
                ));
            }
        }
        out
    }

    /// Refuses a workload that starts more than MAX_TASKS tasks in all
    /// (the count of one entry is bounded, but a file or a trace of many
    /// entries could ask for any number), or whose names hold control
    /// characters: they are printed to a terminal, where an escape sequence
    /// would clear the screen or forge a line.
    pub fn check_bounds(&self) -> Result<(), String> {
        let names = std::iter::once(("workload", &self.name)).chain(self.tasks.iter().map(|t| ("task", &t.name)));
        for (what, name) in names {
            if name.chars().any(char::is_control) {
                let shown: String = name.chars().take(40).collect();
                return Err(format!(
                    "{what} name '{}' holds control characters (a terminal would act on them): use printable ones",
                    shown.escape_debug()
                ));
            }
        }
        match self.initial_tasks() {
            n if n > MAX_TASKS => {
                Err(format!("the workload starts {n} tasks: schedlab simulates at most {MAX_TASKS} at once"))
            }
            _ => Ok(()),
        }
    }
}

/// Tasks a workload may start.
pub const MAX_TASKS: u64 = 1_000_000;

/// A group's name becomes a cgroup directory on the real kernel (as root):
/// one path component of plain characters, never a path. Nesting is said
/// with `parent`, not with '/'.
pub fn check_group_name(name: &str) -> Result<(), String> {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if name.is_empty() || name.len() > 64 || name == "." || name == ".." || !name.chars().all(plain) {
        return Err(format!(
            "group name '{}' must be 1 to 64 letters, digits, '_', '-' or '.' (not '.' or '..'): it names a cgroup \
             directory; nest groups with parent = \"NAME\"",
            name.chars().take(80).collect::<String>().escape_debug()
        ));
    }
    // A cgroup directory's own files: a group so named would collide with
    // one (mkdir says "File exists" and the run would go on ungrouped).
    let prefix = name.split('.').next().unwrap_or(name);
    if matches!(name, "tasks" | "notify_on_release" | "release_agent")
        || (name.contains('.') && CGROUP_FILE_PREFIXES.contains(&prefix))
    {
        return Err(format!(
            "group name '{name}' is the name of a cgroup control file (tasks, cgroup.*, cpu.*, memory.* and the \
             like): choose another name"
        ));
    }
    Ok(())
}

/// The prefixes of cgroup v1 and v2 control files ("cpu.shares").
const CGROUP_FILE_PREFIXES: &[&str] = &[
    "cgroup",
    "cpu",
    "cpuacct",
    "cpuset",
    "memory",
    "io",
    "blkio",
    "pids",
    "devices",
    "freezer",
    "net_cls",
    "net_prio",
    "perf_event",
    "hugetlb",
    "rdma",
    "misc",
];

/// The kernel's largest CFS bandwidth quota, in microseconds: MAX_BW
/// (2^44 - 1) of kernel/sched/core.c.
const MAX_CFS_QUOTA_US: u64 = (1 << 44) - 1;

fn parse_cpu_max(text: &str) -> Result<Option<(Nanos, Nanos)>, String> {
    let help = "cpu_max is cgroup v2's \"QUOTA PERIOD\" in microseconds, e.g. \"200000 100000\" for 2 CPUs, or \"max\"";
    let parts: Vec<&str> = text.split_whitespace().collect();
    let period = match parts.get(1) {
        Some(p) => p.parse::<u64>().map_err(|_| help.to_string())?,
        None => 100_000,
    };
    if parts.is_empty() || parts.len() > 2 {
        return Err(help.into());
    }
    if parts[0] == "max" {
        return Ok(None);
    }
    let quota = parts[0].parse::<u64>().map_err(|_| help.to_string())?;
    // The kernel's limits: period 1ms..1s, quota at least 1ms.
    if !(1_000..=1_000_000).contains(&period) {
        return Err(format!("period {period}us is outside the kernel's 1000..1000000"));
    }
    if quota < 1_000 {
        return Err(format!("quota {quota}us is below the kernel's minimum of 1000"));
    }
    if quota > MAX_CFS_QUOTA_US {
        return Err(format!("quota {quota}us is above the kernel's maximum of {MAX_CFS_QUOTA_US} (use \"max\")"));
    }
    Ok(Some((quota * NSEC_PER_USEC, period * NSEC_PER_USEC)))
}

fn compile_ops(
    ctx: &Ctx,
    ops: &[Spanned<toml::Table>],
    names: &std::collections::HashMap<&str, usize>,
    channels: &mut Named<String, String>,
    out: &mut Vec<Op>,
    task: &str,
) -> Result<(), WorkloadError> {
    for op in ops {
        let span = op.span();
        let table = op.get_ref();
        let here = |m: String| ctx.err(span.clone(), format!("task '{task}': {m}"));
        let keys: Vec<&str> = table.keys().map(String::as_str).collect();
        let kind = match keys.as_slice() {
            [k] => *k,
            ks if ks.contains(&"loop") && ks.contains(&"body") && ks.len() == 2 => "loop",
            _ => {
                return Err(here(format!("op {{ {} }} is not one op: {PROGRAM_HELP}", keys.join(", "))));
            }
        };
        let value = &table[kind];
        let dist = |v: &toml::Value| -> Result<Dist, WorkloadError> {
            match v {
                toml::Value::String(s) => Dist::parse(s).map_err(&here),
                // A bare number would be nanoseconds, which nobody means by
                // `run = 5`: the CLI and Python refuse it too.
                toml::Value::Integer(i) => {
                    Err(here(format!("{kind} = {i} has no unit: write e.g. {kind} = \"{i}ms\" (or \"{i}ns\")")))
                }
                other => Err(here(format!("{kind} = {other}: write a duration such as \"3ms\""))),
            }
        };
        let name = |v: &toml::Value| -> Result<String, WorkloadError> {
            v.as_str().map(str::to_string).ok_or_else(|| here(format!("{kind} takes a name in quotes")))
        };
        let mut chan = |v: &toml::Value| -> Result<u32, WorkloadError> {
            let n = name(v)?;
            Ok(channels.id(n.clone(), || n))
        };
        match kind {
            "run" => out.push(Op::Run(dist(value)?)),
            "sleep" => out.push(Op::Sleep(dist(value)?)),
            "timer" => match dist(value)? {
                Dist::Const(p) if p > 0 => out.push(Op::Timer { period: p, slot: 0, mode: TimerMode::Periodic }),
                _ => {
                    return Err(here("timer takes a fixed period above zero, e.g. { timer = \"1ms\" }".into()));
                }
            },
            "wait" => out.push(Op::Wait(chan(value)?)),
            "signal" => out.push(Op::Signal(chan(value)?)),
            "yield" => out.push(Op::Yield),
            "exit" => out.push(Op::Exit),
            "fork" => {
                let n = name(value)?;
                let id = names.get(n.as_str()).copied().ok_or_else(|| {
                    here(format!("fork = \"{n}\" names no task: define a [[task]] named \"{n}\" with template = true"))
                })?;
                out.push(Op::Fork(id as TaskSpecId));
            }
            "loop" => {
                let count = match value {
                    toml::Value::Integer(n) if *n >= 1 => Some(*n as u64),
                    toml::Value::String(s) if s == "forever" => None,
                    other => {
                        return Err(here(format!("loop = {other}: write a count of at least 1 or \"forever\"")));
                    }
                };
                let Some(toml::Value::Array(body)) = table.get("body") else {
                    return Err(here("loop needs body = [ ...ops... ]".into()));
                };
                let body: Vec<Spanned<toml::Table>> = body
                    .iter()
                    .map(|v| match v {
                        toml::Value::Table(t) => Ok(Spanned::new(span.clone(), t.clone())),
                        other => Err(here(format!("loop body holds {other}, not an op table: {PROGRAM_HELP}"))),
                    })
                    .collect::<Result<_, _>>()?;
                let start = out.len();
                out.push(Op::LoopStart { count, end: 0 });
                compile_ops(ctx, &body, names, channels, out, task)?;
                let body_ops = &out[start + 1..];
                if body_ops.is_empty() {
                    return Err(here("loop body is empty".into()));
                }
                if count.is_none() && !body_ops.iter().any(takes_time) {
                    return Err(here(
                        "a forever loop must run, sleep, wait, yield or use a timer, or it never lets time pass".into(),
                    ));
                }
                let end = out.len() as u32;
                out.push(Op::LoopEnd { start: start as u32 });
                out[start] = Op::LoopStart { count, end };
            }
            other => return Err(here(format!("unknown op '{other}': {PROGRAM_HELP}"))),
        }
    }
    Ok(())
}

/// Whether an op can let simulated time pass (a loop without one would
/// spin forever at one instant).
pub(crate) fn takes_time(op: &Op) -> bool {
    matches!(
        op,
        Op::Run(_) | Op::Sleep(_) | Op::Timer { .. } | Op::Wait(_) | Op::Yield | Op::CondWait { .. } | Op::Barrier(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Workload, WorkloadError> {
        Workload::from_toml(text, "test.toml", &Overrides::default())
    }

    #[test]
    fn reads_a_full_workload() {
        let w = load(
            r#"
name = "demo"
duration = "2s"
[machine]
topology = "1x2x2"
[params]
hogs = 3
[[group]]
name = "a"
cpu_max = "50000 100000"
[[task]]
name = "hog"
count = "hogs"
group = "a"
program = [ { loop = "forever", body = [ { run = "3ms" }, { sleep = "exp(1ms)" } ] } ]
[[task]]
name = "ping"
program = [ { loop = 3, body = [ { signal = "p" }, { wait = "q" } ] } ]
"#,
        )
        .unwrap();
        assert_eq!(w.duration, 2 * NSEC_PER_SEC);
        assert_eq!(w.nr_cpus(), 4);
        assert_eq!(w.tasks[0].count, 3);
        assert_eq!(w.groups[1].cpu_max, Some((50_000_000, 100_000_000)));
        assert_eq!(w.channels.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), vec!["p", "q"]);
        assert!(matches!(w.tasks[0].program[0], Op::LoopStart { count: None, end: 3 }));
    }

    #[test]
    fn errors_name_the_line_and_the_fix() {
        let e = load("[[task]]\nname = \"a\"\nnice = 30\nprogram = [ { run = \"1ms\" } ]\n").unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.to_string().contains("nice 30 is outside -20..19"), "{e}");

        let e = load("[[task]]\nname = \"a\"\nprogram = [ { run = \"1xs\" } ]\n").unwrap_err();
        assert!(e.to_string().contains("use ns, us, ms, s, min or h"), "{e}");

        let e = load("[[task]]\nname = \"a\"\nprogram = [ { jump = 1 } ]\n").unwrap_err();
        assert!(e.to_string().contains("unknown op 'jump'"), "{e}");

        let e = load("\n\n[machine]\ncpus = 4\nbogus = 1\n").unwrap_err();
        assert_eq!(e.line, 5, "{e}");

        let e = load("[[task]]\nname = \"a\"\nprogram = [ { loop = \"forever\", body = [ { signal = \"x\" } ] } ]\n")
            .unwrap_err();
        assert!(e.to_string().contains("never lets time pass"), "{e}");

        let e = load("[[task]]\nname = \"a\"\ncount = \"n\"\nprogram = [ { run = \"1ms\" } ]\n").unwrap_err();
        assert!(e.to_string().contains("--param n=N"), "{e}");

        // serde's words ("invalid type: integer `5`, expected a string") in
        // the file's: the key, its value, what to write.
        for (text, line, says) in [
            ("duration = 5\n", 1, "duration = 5: a duration is a string with its unit, e.g. duration = \"5ms\""),
            ("[machine]\ncpus = \"two\"\n", 2, "cpus = \"two\": give a whole number, e.g. cpus = 2"),
            ("[[task]]\nname = 5\nprogram = []\n", 2, "name = 5: write it as a string in quotes"),
            ("[[task]]\nname = \"a\"\ncount = -1\nprogram = []\n", 3, "count = -1: give a whole number of tasks"),
            ("[[task]]\nname = \"a\"\nprogram = { run = \"1ms\" }\n", 3, "program: give a list in brackets"),
            ("[[task]]\nname = \"a\"\nprogram = [ { run = 5 } ]\n", 3, "run = 5 has no unit: write e.g. run = \"5ms\""),
        ] {
            let e = load(text).unwrap_err();
            assert_eq!((e.line, e.message.contains(says)), (line, true), "{text}: {e}");
            assert!(!e.message.contains("invalid type") && !e.message.contains("untagged"), "{e}");
        }
    }

    #[test]
    fn overrides_win() {
        let mut ov = Overrides { cpus: Some(16), ..Default::default() };
        ov.params.insert("n".into(), 7);
        let w = Workload::from_toml(
            "[params]\nn = 1\n[[task]]\nname = \"a\"\ncount = \"n\"\nprogram = [ { run = \"1ms\" } ]\n",
            "x",
            &ov,
        )
        .unwrap();
        assert_eq!(w.nr_cpus(), 16);
        assert_eq!(w.tasks[0].count, 7);
    }

    #[test]
    fn names_with_terminal_escapes_are_refused() {
        let text = "name = \"\\u001b[2J\\u001b[31mPWNED\"\n[[task]]\nname = \"t\"\nprogram = [ { run = \"1ms\" } ]\n";
        let err = Workload::from_toml(text, "x.toml", &Overrides::default()).unwrap_err().to_string();
        assert!(err.contains("workload name '\\u{1b}[2J") && err.contains("control characters"), "{err}");
        let text = "[[task]]\nname = \"a\\u0007b\"\nprogram = [ { run = \"1ms\" } ]\n";
        let err = Workload::from_toml(text, "x.toml", &Overrides::default()).unwrap_err().to_string();
        assert!(err.contains("task name 'a\\u{7}b'"), "{err}");
    }

    #[test]
    fn group_names_are_one_plain_path_component() {
        for bad in ["", ".", "..", "a/b", "../x", "/etc", "a b", "x\0", &"g".repeat(65)] {
            assert!(check_group_name(bad).is_err(), "{bad:?} accepted");
        }
        // Names of a cgroup directory's own files.
        for bad in ["tasks", "cgroup.procs", "cpu.shares", "cpu.max", "memory.max", "release_agent"] {
            let err = check_group_name(bad).unwrap_err();
            assert!(err.contains("cgroup control file"), "{bad}: {err}");
        }
        // A 100 MB name is not echoed whole.
        assert!(check_group_name(&"/".repeat(100_000_000)).unwrap_err().len() < 400);
        for good in ["web", "user-1", "tg_2.slice"] {
            check_group_name(good).unwrap();
        }
        let err = Workload::from_toml(
            "[[group]]\nname = \"a/../../x\"\n[[task]]\nname = \"t\"\ngroup = \"a/../../x\"\nprogram = [ { run = \"1ms\" } ]\n",
            "g.toml",
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("g.toml:1: group name 'a/../../x'"), "{err}");
        let quota = "[[group]]\nname = \"q\"\ncpu_max = \"99999999999999999 100000\"\n[[task]]\nname = \"t\"\ngroup = \"q\"\nprogram = [ { run = \"1ms\" } ]\n";
        let err = Workload::from_toml(quota, "q.toml", &Overrides::default()).unwrap_err();
        assert!(err.to_string().contains("above the kernel's maximum"), "{err}");
    }

    #[test]
    fn a_million_tasks_in_all_is_the_limit() {
        let entry = |i: u32| format!("[[task]]\nname = \"t{i}\"\ncount = 600000\nprogram = [ {{ run = \"1ms\" }} ]\n");
        let err = Workload::from_toml(&(entry(0) + &entry(1)), "big.toml", &Overrides::default()).unwrap_err();
        assert!(err.to_string().contains("starts 1200000 tasks: schedlab simulates at most 1000000"), "{err}");
    }

    #[test]
    fn a_channel_nobody_signals_is_pointed_out() {
        let w = load("[[task]]\nname = \"a\"\nprogram = [ { wait = \"go\" }, { run = \"1ms\" } ]\n").unwrap();
        assert_eq!(w.lints().len(), 1);
        assert!(w.lints()[0].contains("channel 'go' is waited on but no task signals it"));
        let w = load("[[task]]\nname = \"a\"\nprogram = [ { wait = \"go\" } ]\n[[task]]\nname = \"b\"\nprogram = [ { signal = \"go\" } ]\n").unwrap();
        assert!(w.lints().is_empty());
    }
}
