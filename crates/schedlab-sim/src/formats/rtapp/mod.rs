//! rt-app workloads (github.com/scheduler-tools/rt-app, doc/tutorial.txt and
//! src/rt-app_parse_config.c at 55cb0c0): the JSON read into a
//! [`Workload`] with the meaning rt-app gives each key.
//!
//! Events run in key order and are recognised by prefix as rt-app does
//! ("run0", "sleep_a"; "runtime" before "run"). Mapping: run and runtime
//! burn CPU for the time given (no frequency or capacity scaling here, so
//! both are wall time); sleep; timer with rt-app's reference (task start)
//! and relative/absolute catch-up; lock/unlock a mutex; signal, broad, wait
//! and sync on condition variables (a signal without a waiter is lost);
//! barrier (users counted from the file as rt-app counts them); suspend and
//! resume on named resources, created on first use (a resume nobody waits
//! for is lost); yield; fork of a task with `instance: 0`; sem_post/sem_wait.
//! Task properties: instance, delay, loop, phases with their loops, cpus,
//! policy with priority (nice for SCHED_OTHER/BATCH/IDLE), taskgroup (a
//! cgroup path with default weights).
//!
//! What schedlab cannot model is refused, naming the key: SCHED_DEADLINE,
//! util_min/util_max, membind_nodes, mem/iorun/memrun, priority
//! inheritance, and per-phase changes of cpus, policy or taskgroup.

mod events;
mod json;

use crate::time::{NSEC_PER_SEC, NSEC_PER_USEC, Nanos};
use crate::topology::{CpuSet, Topology};
use crate::workload::dist::Dist;
use crate::workload::{
    Barrier, Channel, GroupId, GroupSpec, Imported, Machine, Named, Op, Overrides, SchedPolicy, TaskSpec, TaskSpecId,
    TimerMode, Workload, WorkloadError, takes_time,
};
use json::{Json, relax};

/// Task keys a phase may not change: schedlab sets them when a task starts.
const PHASE_FIXED: [&str; 5] = ["cpus", "policy", "priority", "taskgroup", "dl-runtime"];

/// Event names in the order rt-app matches their prefixes.
const EVENTS: [&str; 20] = [
    "lock", "unlock", "wait", "signal", "broad", "sync", "sleep", "runtime", "run", "timer", "suspend", "resume",
    "memrun", "mem", "iorun", "yield", "barrier", "fork", "sem_post", "sem_wait",
];

fn event_kind(key: &str) -> Option<&'static str> {
    EVENTS.iter().copied().find(|e| key.starts_with(e))
}

/// Keys of a task or phase object that are not events.
const TASK_PROPS: [&str; 9] =
    ["instance", "delay", "loop", "phases", "cpus", "policy", "priority", "taskgroup", "dl-runtime"];

const REFUSED_PROPS: [(&str, &str); 6] = [
    ("dl-period", "SCHED_DEADLINE is not modelled"),
    ("dl-deadline", "SCHED_DEADLINE is not modelled"),
    ("util_min", "utilization clamping needs CPU frequency and capacity, which schedlab does not model"),
    ("util_max", "utilization clamping needs CPU frequency and capacity, which schedlab does not model"),
    ("membind_nodes", "NUMA memory placement is not modelled"),
    ("nice", "rt-app has no \"nice\" key: use \"priority\", which is the nice value for SCHED_OTHER"),
];

/// Global keys that only steer rt-app's own logging, memory or
/// calibration; they change nothing that is simulated.
const GLOBAL_IGNORED: [&str; 12] = [
    "frag",
    "calibration",
    "lock_pages",
    "logdir",
    "log_basename",
    "log_size",
    "ftrace",
    "gnuplot",
    "io_device",
    "mem_buffer_size",
    "cumulative_slack",
    "pi_enabled",
];

struct Conv<'a> {
    origin: &'a str,
    text: &'a str,
    nr_cpus: u32,
    default_policy: SchedPolicy,
    names: Vec<String>,
    instances: Vec<u32>,
    channels: Named<String, Channel>,
    conds: Named<String, String>,
    barriers: Vec<Barrier>,
    groups: Vec<GroupSpec>,
    /// (task, timer ref) in the order first used.
    timers: Vec<(usize, String)>,
}

/// `n` units in nanoseconds, if that is within the simulator's horizon
/// (rt-app's microseconds and seconds would otherwise wrap in u64).
fn scaled(n: i64, unit: Nanos) -> Option<Nanos> {
    u64::try_from(n).ok()?.checked_mul(unit).filter(|&ns| ns <= crate::engine::queue::MAX_TIME)
}

fn beyond_horizon(n: i64, unit: &str) -> String {
    format!("{n} {unit} is beyond the simulator's 78-hour horizon")
}

/// Loop count as rt-app reads it: -1 (or absent, where that is the
/// default) is forever.
fn loop_count(obj: &Json, default: i64) -> Result<Option<u64>, String> {
    match obj.get("loop") {
        None if default < 0 => Ok(None),
        None => Ok(Some(default as u64)),
        Some(Json::Int(n)) if *n < 0 => Ok(None),
        Some(Json::Int(0)) => Err("loop 0 runs nothing: remove the task or phase, or loop at least once".into()),
        Some(Json::Int(n)) => Ok(Some(*n as u64)),
        Some(other) => Err(format!("loop is {}, not an integer (-1 is forever)", other.kind())),
    }
}

fn wrap_loop(out: &mut Vec<Op>, start: usize, count: Option<u64>) {
    if count == Some(1) {
        return;
    }
    out.insert(start, Op::LoopStart { count, end: 0 });
    // Loops inside shifted by one: fix their jump targets.
    for op in &mut out[start + 1..] {
        match op {
            Op::LoopStart { end, .. } => *end += 1,
            Op::LoopEnd { start: s } => *s += 1,
            _ => {}
        }
    }
    let end = out.len() as u32;
    out.push(Op::LoopEnd { start: start as u32 });
    out[start] = Op::LoopStart { count, end };
}

/// The CPUs an rt-app file names: one more than the highest CPU in any
/// "cpus" list (of a task or a phase), if any is named. rt-app itself runs
/// on the whole machine; a caller that knows the machine takes the larger
/// of the two (see `from_rtapp_json`).
pub fn cpus_named(text: &str) -> Option<u32> {
    fn walk(j: &Json, best: &mut Option<u32>) {
        match j {
            Json::Obj(entries) => {
                for (k, v) in entries {
                    if let (true, Json::Arr(list)) = (k == "cpus", v) {
                        for c in list {
                            if let Json::Int(i) = c
                                && let Ok(i) = u32::try_from(*i)
                            {
                                *best = Some(best.unwrap_or(0).max(i.saturating_add(1)));
                            }
                        }
                    }
                    walk(v, best);
                }
            }
            Json::Arr(items) => items.iter().for_each(|v| walk(v, best)),
            _ => {}
        }
    }
    let top: Json = serde_json::from_str(&relax(text)).ok()?;
    let mut best = None;
    walk(&top, &mut best);
    best
}

/// Reads an rt-app JSON file. The machine is not in the file: it has
/// `--cpus` CPUs, or as many as the file's "cpus" lists name (one if none
/// do); the command line gives this machine's count instead, as rt-app runs
/// on the whole machine.
pub fn from_rtapp_json(text: &str, origin: &str, ov: &Overrides) -> Result<Workload, WorkloadError> {
    let relaxed = relax(text);
    let text = relaxed.as_str();
    let top: Json = serde_json::from_str(text).map_err(|e| WorkloadError {
        origin: origin.to_string(),
        line: e.line(),
        message: format!("not valid rt-app JSON: {e}"),
    })?;
    let topology = match ov.cpus {
        Some(cpus) => {
            Topology::flat(cpus).map_err(|m| WorkloadError { origin: "--cpus".into(), line: 0, message: m })?
        }
        None => {
            let cpus = cpus_named(text).unwrap_or(1);
            Topology::flat(cpus).map_err(|m| WorkloadError {
                origin: origin.to_string(),
                line: 0,
                message: format!(
                    "its \"cpus\" lists name CPU {}, a machine of {m}; pin to lower CPUs or give --cpus",
                    cpus - 1
                ),
            })?
        }
    };
    let mut conv = Conv {
        origin,
        text,
        nr_cpus: topology.nr_cpus(),
        default_policy: SchedPolicy::Normal,
        names: Vec::new(),
        instances: Vec::new(),
        channels: Named::default(),
        conds: Named::default(),
        barriers: Vec::new(),
        groups: vec![GroupSpec::root()],
        timers: Vec::new(),
    };
    let Json::Obj(sections) = &top else {
        return Err(conv.err(&[], format!("the file is {}, not an rt-app object with \"tasks\"", top.kind())));
    };
    conv.check_sections(sections)?;
    let duration = match top.get("global") {
        Some(g) => conv.global(g)?,
        None => None,
    };
    let Some(Json::Obj(tasks)) = top.get("tasks") else {
        return Err(conv.err(&["tasks"], "the file needs a \"tasks\" object with one entry per thread"));
    };
    if tasks.is_empty() {
        return Err(conv.err(&["tasks"], "\"tasks\" is empty: describe at least one thread"));
    }
    // Every name and instance count first: an event may name a task
    // defined further down.
    for (name, t) in tasks {
        conv.names.push(name.clone());
        let instances = match t.get("instance") {
            None => 1,
            Some(Json::Int(n)) if (0..=1_000_000).contains(n) => *n as u32,
            Some(_) => return Err(conv.err(&["tasks", name, "instance"], "instance is a thread count, 0..1000000")),
        };
        conv.instances.push(instances);
    }
    let specs =
        tasks.iter().enumerate().map(|(idx, (name, t))| conv.task(idx, name, t)).collect::<Result<Vec<_>, _>>()?;
    if !specs.iter().any(|t| !t.template && t.count > 0) {
        return Err(conv.err(&["tasks"], "every task has instance 0: nothing starts (forks need a running task)"));
    }
    let duration = match (ov.duration, duration) {
        (Some(d), _) | (None, Some(d)) => d,
        (None, None) => {
            let finite = specs.iter().all(|s| !matches!(s.program.first(), Some(Op::LoopStart { count: None, .. })));
            if !finite {
                return Err(conv.err(
                    &["global"],
                    "global.duration is -1 or absent and some task loops forever: set a duration or pass --duration",
                ));
            }
            crate::engine::queue::MAX_TIME
        }
    };
    if duration > crate::engine::queue::MAX_TIME {
        return Err(conv.err(&["global", "duration"], "duration is longer than the simulator's 78-hour horizon"));
    }
    Workload::imported(
        origin,
        ov,
        Imported {
            description: format!("rt-app workload {origin}"),
            duration,
            machine: Machine::with_defaults(topology, ov)?,
            tunables: ov.tunables.clone(),
            groups: conv.groups,
            tasks: specs,
            channels: conv.channels.items,
            conds: conv.conds.items,
            barriers: conv.barriers,
        },
    )
    .map_err(|message| WorkloadError { origin: origin.into(), line: 1, message })
}

/// The file's top level, section by section, and each task.
impl Conv<'_> {
    fn check_sections(&self, sections: &[(String, Json)]) -> Result<(), WorkloadError> {
        for (k, _) in sections {
            if !["tasks", "global", "resources"].contains(&k.as_str()) {
                // A repeated key was numbered (as workgen numbers events).
                let base = k.trim_end_matches(|c: char| c.is_ascii_digit());
                if base != k && ["tasks", "global", "resources"].contains(&base) {
                    return Err(self.err(
                        &[k],
                        format!("the section \"{base}\" appears more than once: put everything it holds in one"),
                    ));
                }
                return Err(
                    self.err(&[k], format!("unknown section \"{k}\": rt-app files have tasks, global, resources"))
                );
            }
        }
        Ok(())
    }

    /// The "global" section: sets the default policy, gives the duration
    /// if it has one.
    fn global(&mut self, g: &Json) -> Result<Option<Nanos>, WorkloadError> {
        let Json::Obj(entries) = g else {
            return Err(self.err(&["global"], format!("global is {}, not an object", g.kind())));
        };
        let mut duration = None;
        for (k, v) in entries {
            match (k.as_str(), v) {
                ("duration", Json::Int(d)) if *d > 0 => {
                    duration = Some(
                        scaled(*d, NSEC_PER_SEC)
                            .ok_or_else(|| self.err(&["global", "duration"], beyond_horizon(*d, "s")))?,
                    )
                }
                ("duration", Json::Int(-1)) => {}
                ("duration", _) => {
                    return Err(self.err(&["global", "duration"], "duration is whole seconds above 0, or -1"));
                }
                ("default_policy", v) => {
                    self.default_policy =
                        self.policy(&Json::Obj(vec![("policy".into(), v.clone())]), &["global"], SchedPolicy::Normal)?
                }
                ("pi_enabled", Json::Bool(true)) => {
                    return Err(self.err(
                        &["global", "pi_enabled"],
                        "priority inheritance is not modelled: set pi_enabled to false",
                    ));
                }
                (k, _) if GLOBAL_IGNORED.contains(&k) => {}
                (k, _) => {
                    return Err(self.err(&["global", k], format!("unknown global key \"{k}\"")));
                }
            }
        }
        Ok(duration)
    }

    fn task(&mut self, idx: usize, name: &str, t: &Json) -> Result<TaskSpec, WorkloadError> {
        let path = ["tasks", name];
        if !matches!(t, Json::Obj(_)) {
            return Err(self.err(&path, format!("task \"{name}\" is {}, not an object", t.kind())));
        }
        // Refused first: a per-phase change cannot be fixed with --cpus,
        // so it must not wait behind an error about the CPU numbers.
        if let Some(Json::Obj(phases)) = t.get("phases") {
            for (pname, phase) in phases {
                for key in PHASE_FIXED {
                    if phase.get(key).is_some() && phase.get(key) != t.get(key) {
                        return Err(self.err(
                            &["tasks", name, "phases", pname.as_str(), key],
                            format!(
                                "phase \"{pname}\" changes \"{key}\": schedlab fixes a task's {key} when it starts; \
                                 set it on the task, or split the task"
                            ),
                        ));
                    }
                }
            }
        }
        let policy = self.policy(t, &path, self.default_policy)?;
        let nice = self.nice(t, &path, policy)?;
        let slice = self.custom_slice(t, &path, policy)?;
        let affinity = self.cpus(t, &path)?;
        let group = self.taskgroup(t, &path)?;
        if group != 0 && policy.is_rt() {
            return Err(self.err(&path, "a taskgroup holds only SCHED_OTHER tasks in rt-app: drop one of the two"));
        }
        let delay = match t.get("delay") {
            None => 0,
            Some(Json::Int(d)) if *d >= 0 => scaled(*d, NSEC_PER_USEC)
                .ok_or_else(|| self.err(&["tasks", name, "delay"], beyond_horizon(*d, "us")))?,
            Some(_) => return Err(self.err(&["tasks", name, "delay"], "delay is microseconds, 0 or more")),
        };
        let program = self.program(idx, name, t)?;
        Ok(TaskSpec {
            name: name.to_string(),
            count: self.instances[idx],
            nice,
            policy,
            affinity,
            per_cpu: false,
            group,
            slice,
            start: Dist::Const(delay),
            template: self.instances[idx] == 0,
            forked_once: false,
            background: false,
            program,
        })
    }

    /// A task's events, phase after phase, in the loops rt-app runs them.
    fn program(&mut self, idx: usize, name: &str, t: &Json) -> Result<Vec<Op>, WorkloadError> {
        let path = ["tasks", name];
        let mut program = Vec::new();
        match t.get("phases") {
            Some(Json::Obj(phases)) => {
                if phases.is_empty() {
                    return Err(self.err(&["tasks", name, "phases"], "phases is empty"));
                }
                for (pname, phase) in phases {
                    let ppath = ["tasks", name, "phases", pname.as_str()];
                    if !matches!(phase, Json::Obj(_)) {
                        return Err(self.err(&ppath, format!("phase \"{pname}\" is {}, not an object", phase.kind())));
                    }
                    let start = program.len();
                    self.events(phase, &ppath, idx, &mut program)?;
                    let count = loop_count(phase, 1).map_err(|m| self.err(&ppath, m))?;
                    wrap_loop(&mut program, start, count);
                }
                let count = loop_count(t, -1).map_err(|m| self.err(&path, m))?;
                wrap_loop(&mut program, 0, count);
            }
            Some(other) => {
                return Err(self.err(&["tasks", name, "phases"], format!("phases is {}, not an object", other.kind())));
            }
            None => {
                self.events(t, &path, idx, &mut program)?;
                // Without phases, a given loop counts the events' repeats
                // and absent means forever.
                let count = loop_count(t, -1).map_err(|m| self.err(&path, m))?;
                wrap_loop(&mut program, 0, count);
            }
        }
        if let Some(Op::LoopStart { count: None, end }) = program.first()
            && !program[1..*end as usize].iter().any(takes_time)
        {
            return Err(self.err(&path, "the task loops forever without running, sleeping or waiting"));
        }
        Ok(program)
    }
}
