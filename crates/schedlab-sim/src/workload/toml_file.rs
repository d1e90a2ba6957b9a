//! The schedlab TOML workload file read into a [`Workload`]: the file as
//! written (serde structs with spans), then each section checked with the
//! line it came from and what to write instead.

use super::*;
use crate::time::parse_duration;
use serde::Deserialize;
use toml::Spanned;

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
    uptime: Option<Spanned<String>>,
    /// By cost name: `Costs::set_dist` knows the names and refuses others.
    #[serde(default)]
    costs: BTreeMap<String, Spanned<Dist>>,
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
    let durations = ["duration", "run", "sleep", "timer", "slice", "quota", "period", "start", "uptime"];
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
        let machine = ctx.machine(&file.machine, ov)?;
        let nr_cpus = machine.topology.nr_cpus();
        let duration = ctx.duration(file.duration.as_ref(), ov)?;
        let tunables = ctx.tunables(&file.tunables, ov)?;

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

        let groups = ctx.groups(&file.group)?;
        let TaskTables { tasks, channels, count_params } = ctx.tasks(&file.task, &params, &groups, nr_cpus)?;
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
            machine,
            tunables,
            groups,
            tasks,
            channels: channels.items.into_iter().map(|name| Channel { name, initial: 0 }).collect(),
            conds: Vec::new(),
            barriers: Vec::new(),
            measure_from: 0,
        };
        w.check_bounds().map_err(|message| WorkloadError { origin: origin.into(), line: 1, message })?;
        Ok(w)
    }
}

/// Each section of the file, read and checked.
impl Ctx<'_> {
    fn machine(&self, file: &MachineFile, ov: &Overrides) -> Result<Machine, WorkloadError> {
        let topology = match (&file.cpus, &file.topology) {
            (Some(c), Some(_)) => {
                return Err(self.err(c.span(), "give either machine.cpus or machine.topology, not both"));
            }
            (Some(c), None) => Topology::flat(*c.get_ref()).map_err(|m| self.err(c.span(), m))?,
            (None, Some(t)) => Topology::parse(t.get_ref()).map_err(|m| self.err(t.span(), m))?,
            (None, None) => Topology::flat(1).expect("one CPU is a machine"),
        };
        let topology = match ov.cpus {
            Some(n) => Topology::flat(n).map_err(|m| WorkloadError { origin: "--cpus".into(), line: 0, message: m })?,
            None => topology,
        };
        let hz = match &file.hz {
            Some(h) => {
                if ![100, 250, 300, 1000].contains(h.get_ref()) {
                    return Err(self.err(
                        h.span(),
                        format!("hz = {} is not a kernel CONFIG_HZ choice: use 100, 250, 300 or 1000", h.get_ref()),
                    ));
                }
                *h.get_ref()
            }
            None => DEFAULT_HZ,
        };
        // Through the same checks as --cost: a cost other than
        // timer_latency is one duration, and none is over a second.
        let mut costs = Costs::default();
        for (name, value) in &file.costs {
            costs.set_dist(name, value.get_ref().clone()).map_err(|m| self.err(value.span(), m))?;
        }
        let costs = costs.overridden(ov)?;
        let uptime = match (ov.uptime, &file.uptime) {
            (Some(u), _) => u,
            (None, Some(u)) => parse_duration(u.get_ref()).map_err(|m| self.err(u.span(), m))?,
            (None, None) => super::DEFAULT_UPTIME,
        };
        Ok(Machine { topology, hz, costs, uptime, niffies_ahead: Vec::new() })
    }

    fn duration(&self, file: Option<&Spanned<String>>, ov: &Overrides) -> Result<Nanos, WorkloadError> {
        let duration = match (ov.duration, file) {
            (Some(d), _) => d,
            (None, Some(d)) => parse_duration(d.get_ref()).map_err(|m| self.err(d.span(), m))?,
            (None, None) => NSEC_PER_SEC,
        };
        if duration == 0 || duration > crate::engine::queue::MAX_TIME {
            return Err(WorkloadError {
                origin: self.origin.into(),
                line: file.map_or(0, |d| self.line_of(d.span().start)),
                message: if duration == 0 {
                    "duration must be more than zero: write e.g. duration = \"5s\"".into()
                } else {
                    "duration is longer than the simulator's 78-hour horizon: simulate at most \"78h\"".into()
                },
            });
        }
        Ok(duration)
    }

    fn tunables(
        &self,
        file: &BTreeMap<String, Spanned<toml::Value>>,
        ov: &Overrides,
    ) -> Result<BTreeMap<String, i64>, WorkloadError> {
        let mut tunables = BTreeMap::new();
        for (name, value) in file {
            let v = match value.get_ref() {
                toml::Value::Integer(i) => *i,
                toml::Value::Boolean(b) => *b as i64,
                other => {
                    return Err(self.err(
                        value.span(),
                        format!("tunable {name} = {other}: tunables are integers (nanoseconds for *_ns) or booleans"),
                    ));
                }
            };
            tunables.insert(name.clone(), v);
        }
        tunables.extend(ov.tunables.iter().map(|(k, v)| (k.clone(), *v)));
        Ok(tunables)
    }

    /// Groups: root first, then in file order; parents must come first.
    fn groups(&self, file: &[Spanned<GroupFile>]) -> Result<Vec<GroupSpec>, WorkloadError> {
        let mut groups = vec![GroupSpec::root()];
        // Names to their index: 80,000 groups are checked in linear time.
        let mut index: std::collections::HashMap<String, usize> =
            std::collections::HashMap::from([(groups[0].name.clone(), 0)]);
        for g in file {
            let span = g.span();
            let g = g.get_ref();
            check_group_name(&g.name).map_err(|m| self.err(span.clone(), m))?;
            if index.contains_key(&g.name) {
                return Err(self.err(span, format!("group '{}' is defined twice", g.name)));
            }
            index.insert(g.name.clone(), groups.len());
            let parent = match &g.parent {
                None => 0,
                Some(p) => index.get(p).copied().filter(|&i| i < groups.len()).ok_or_else(|| {
                    self.err(
                        span.clone(),
                        format!("group '{}' names parent '{p}', which is not defined above it", g.name),
                    )
                })? as GroupId,
            };
            let cpu_weight = g.cpu_weight.unwrap_or(100);
            if !(1..=10000).contains(&cpu_weight) {
                return Err(self.err(
                    span,
                    format!(
                        "group '{}': cpu_weight {cpu_weight} is outside cgroup v2's 1..10000 (default 100)",
                        g.name
                    ),
                ));
            }
            let cpu_max = match &g.cpu_max {
                None => None,
                Some(s) => parse_cpu_max(s).map_err(|m| self.err(span.clone(), format!("group '{}': {m}", g.name)))?,
            };
            groups.push(GroupSpec { name: g.name.clone(), parent: Some(parent), cpu_weight, cpu_max });
        }
        Ok(groups)
    }

    /// The [[task]] tables, with the channels their programs name and the
    /// [params] used as counts.
    fn tasks(
        &self,
        file: &[Spanned<TaskFile>],
        params: &BTreeMap<String, i64>,
        groups: &[GroupSpec],
        nr_cpus: u32,
    ) -> Result<TaskTables, WorkloadError> {
        // Task names first, so fork can name a template defined later.
        // A hash of the names: a scan per [[task]] was quadratic (40,000
        // tasks: 3.5 s).
        let mut names: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for (i, t) in file.iter().enumerate() {
            if names.insert(t.get_ref().name.as_str(), i).is_some() {
                return Err(self.err(t.span(), format!("task '{}' is defined twice", t.get_ref().name)));
            }
        }
        let mut channels: Named<String, String> = Named::default();
        let mut tasks = Vec::new();
        let mut count_params = Vec::new();
        for spanned in file {
            let span = spanned.span();
            let t = spanned.get_ref();
            let here = |m: String| self.err(span.clone(), format!("task '{}': {m}", t.name));
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
            let policy = sched_policy(t.policy.as_deref(), t.rt_priority).map_err(&here)?;
            let per_cpu = t.affinity.as_deref() == Some("per-cpu");
            let affinity = match &t.affinity {
                None => None,
                Some(_) if per_cpu => None,
                Some(list) => Some(CpuSet::parse_list(list, nr_cpus).map_err(&here)?),
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
            compile_ops(self, &t.program, &names, &mut channels, &mut program, &t.name)?;
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
                forked_once: false,
                background: false,
                program,
            });
        }
        Ok(TaskTables { tasks, channels, count_params })
    }
}

/// What the [[task]] tables give a workload.
struct TaskTables {
    tasks: Vec<TaskSpec>,
    channels: Named<String, String>,
    count_params: Vec<String>,
}

/// A task's `policy` and `rt_priority`.
fn sched_policy(policy: Option<&str>, rt_priority: Option<u8>) -> Result<SchedPolicy, String> {
    Ok(match (policy.unwrap_or("normal"), rt_priority) {
        ("normal" | "other", None) => SchedPolicy::Normal,
        ("batch", None) => SchedPolicy::Batch,
        ("idle", None) => SchedPolicy::Idle,
        ("iso", None) => SchedPolicy::Iso,
        ("fifo" | "rr", None) => return Err("policy fifo and rr need rt_priority = 1..99".into()),
        ("fifo", Some(p)) | ("rr", Some(p)) if !(1..=99).contains(&p) => {
            return Err(format!("rt_priority {p} is outside 1..99"));
        }
        ("fifo", Some(p)) => SchedPolicy::Fifo(p),
        ("rr", Some(p)) => SchedPolicy::Rr(p),
        (_, Some(_)) => return Err("rt_priority applies only to policy \"fifo\" or \"rr\"".into()),
        (other, None) => return Err(format!("unknown policy '{other}': use normal, batch, idle, fifo or rr")),
    })
}

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
            ("[machine]\nuptime = 60\n", 2, "uptime = 60: a duration is a string with its unit, e.g. uptime = \"5ms\""),
            ("[machine]\nuptime = \"a week\"\n", 2, "is not a duration"),
            ("[machine]\nuptime = \"99999999999h\"\n", 2, "out of range"),
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
        assert_eq!(w.machine.uptime, crate::workload::DEFAULT_UPTIME);
        let ov = Overrides { uptime: Some(2_500_000_000), ..Default::default() };
        let w = Workload::from_toml(
            "[machine]\nuptime = \"5s\"\n[[task]]\nname = \"a\"\nprogram = [ { run = \"1ms\" } ]\n",
            "x",
            &ov,
        )
        .unwrap();
        assert_eq!(w.machine.uptime, 2_500_000_000, "--uptime wins over the file's");
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
