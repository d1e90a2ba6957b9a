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

use crate::time::{NSEC_PER_SEC, NSEC_PER_USEC, Nanos};
use crate::topology::{CpuSet, Topology};
use crate::workload::dist::Dist;
use crate::workload::{
    Barrier, Channel, GroupId, GroupSpec, Imported, Machine, Named, Op, Overrides, SchedPolicy, TaskSpec, TaskSpecId,
    TimerMode, Workload, WorkloadError, takes_time,
};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// A JSON value that keeps its object keys in file order (rt-app runs
/// events in that order) and refuses duplicate keys (json-c would keep
/// both; serde would keep one).
#[derive(Clone, Debug, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
                Ok(Json::Bool(b))
            }
            fn visit_i64<E>(self, i: i64) -> Result<Json, E> {
                Ok(Json::Int(i))
            }
            fn visit_u64<E: de::Error>(self, u: u64) -> Result<Json, E> {
                i64::try_from(u).map(Json::Int).map_err(|_| E::custom(format!("{u} is too large")))
            }
            fn visit_f64<E>(self, f: f64) -> Result<Json, E> {
                Ok(Json::Float(f))
            }
            fn visit_str<E>(self, s: &str) -> Result<Json, E> {
                Ok(Json::Str(s.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Json, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(Json::Arr(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Json, A::Error> {
                let mut v: Vec<(String, Json)> = Vec::new();
                while let Some((mut k, x)) = a.next_entry::<String, Json>()? {
                    // A repeated key gets a number appended, as rt-app's
                    // workgen does before handing the file to rt-app.
                    let base = k.clone();
                    let mut n = 1;
                    while v.iter().any(|(seen, _)| *seen == k) {
                        n += 1;
                        k = format!("{base}{n}");
                    }
                    v.push((k, x));
                }
                Ok(Json::Obj(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl Json {
    fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Int(_) | Json::Float(_) => "a number",
            Json::Str(_) => "a string",
            Json::Arr(_) => "an array",
            Json::Obj(_) => "an object",
        }
    }

    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(v) => v.iter().find(|(k, _)| k == key).map(|(_, x)| x),
            _ => None,
        }
    }
}

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

impl Conv<'_> {
    /// The line of the innermost key of `path`, each key searched after the
    /// previous one (keys are unique within an object, so the first match in
    /// nesting order is the one meant).
    fn line(&self, path: &[&str]) -> usize {
        let mut pos = 0;
        for key in path {
            let quoted = format!("\"{key}\"");
            let mut from = pos;
            while let Some(i) = self.text[from..].find(&quoted) {
                let after = from + i + quoted.len();
                if self.text[after..].trim_start().starts_with(':') {
                    pos = after;
                    break;
                }
                from = after;
            }
        }
        self.text[..pos].matches('\n').count() + 1
    }

    fn err(&self, path: &[&str], message: impl Into<String>) -> WorkloadError {
        WorkloadError { origin: self.origin.to_string(), line: self.line(path), message: message.into() }
    }

    fn chan(&mut self, name: &str, initial: u64) -> u32 {
        self.channels.id(name.to_string(), || Channel { name: name.to_string(), initial })
    }

    fn mutex(&mut self, name: &str) -> u32 {
        self.chan(&format!("mutex:{name}"), 1)
    }

    fn cond(&mut self, name: &str) -> u32 {
        self.conds.id(name.to_string(), || name.to_string())
    }

    fn policy(&self, obj: &Json, path: &[&str], default: SchedPolicy) -> Result<SchedPolicy, WorkloadError> {
        let name = match obj.get("policy") {
            None => None,
            Some(Json::Str(s)) => Some(s.as_str()),
            Some(other) => {
                let mut p = path.to_vec();
                p.push("policy");
                return Err(self.err(&p, format!("policy is {}, not a string such as \"SCHED_OTHER\"", other.kind())));
            }
        };
        let prio = match obj.get("priority") {
            None => None,
            Some(Json::Int(i)) => Some(*i),
            Some(other) => {
                let mut p = path.to_vec();
                p.push("priority");
                return Err(self.err(&p, format!("priority is {}, not an integer", other.kind())));
            }
        };
        let here = |m: String| {
            let mut p = path.to_vec();
            p.push(if obj.get("priority").is_some() { "priority" } else { "policy" });
            self.err(&p, m)
        };
        let rt = |p: i64| -> Result<u8, WorkloadError> {
            if (1..=99).contains(&p) {
                Ok(p as u8)
            } else {
                Err(here(format!("priority {p} is outside SCHED_FIFO/SCHED_RR's 1..99")))
            }
        };
        Ok(match name {
            None => match (default, prio) {
                (SchedPolicy::Fifo(_), Some(p)) => SchedPolicy::Fifo(rt(p)?),
                (SchedPolicy::Rr(_), Some(p)) => SchedPolicy::Rr(rt(p)?),
                (d, _) => d,
            },
            Some("SCHED_OTHER") => SchedPolicy::Normal,
            Some("SCHED_BATCH") => SchedPolicy::Batch,
            Some("SCHED_IDLE") => SchedPolicy::Idle,
            // rt-app's default rt priority is 10.
            Some("SCHED_FIFO") => SchedPolicy::Fifo(rt(prio.unwrap_or(10))?),
            Some("SCHED_RR") => SchedPolicy::Rr(rt(prio.unwrap_or(10))?),
            Some("SCHED_DEADLINE") => {
                return Err(here("SCHED_DEADLINE is not modelled: use SCHED_FIFO or SCHED_OTHER".into()));
            }
            Some(other) => {
                return Err(here(format!(
                    "unknown policy \"{other}\": use SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO or SCHED_RR"
                )));
            }
        })
    }

    fn nice(&self, obj: &Json, path: &[&str], policy: SchedPolicy) -> Result<i32, WorkloadError> {
        match (policy.is_rt(), obj.get("priority")) {
            (false, Some(Json::Int(n))) if (-20..=19).contains(n) => Ok(*n as i32),
            (false, Some(Json::Int(n))) => {
                let mut p = path.to_vec();
                p.push("priority");
                Err(self.err(&p, format!("priority {n} is a nice value here (SCHED_OTHER) and outside -20..19")))
            }
            _ => Ok(0),
        }
    }

    /// "dl-runtime" on a SCHED_OTHER or SCHED_BATCH task: rt-app passes it
    /// as sched_attr.sched_runtime, which Linux 6.12+ takes as the task's
    /// custom slice, clamped to 0.1 .. 100 ms (__setscheduler_params).
    fn custom_slice(&self, obj: &Json, path: &[&str], policy: SchedPolicy) -> Result<Option<Nanos>, WorkloadError> {
        let Some(v) = obj.get("dl-runtime") else { return Ok(None) };
        let mut p = path.to_vec();
        p.push("dl-runtime");
        if !matches!(policy, SchedPolicy::Normal | SchedPolicy::Batch) {
            return Err(self.err(
                &p,
                "\"dl-runtime\" is a custom slice only on SCHED_OTHER and SCHED_BATCH tasks; SCHED_DEADLINE is not \
                 modelled",
            ));
        }
        match v {
            Json::Int(us) if *us > 0 => {
                let ns = scaled(*us, NSEC_PER_USEC).ok_or_else(|| self.err(&p, beyond_horizon(*us, "us")))?;
                Ok(Some(ns.clamp(100 * NSEC_PER_USEC, 100 * crate::time::NSEC_PER_MSEC)))
            }
            other => Err(self.err(&p, format!("\"dl-runtime\" is microseconds above 0, not {}", other.kind()))),
        }
    }

    fn cpus(&self, obj: &Json, path: &[&str]) -> Result<Option<CpuSet>, WorkloadError> {
        let Some(v) = obj.get("cpus") else { return Ok(None) };
        let mut p = path.to_vec();
        p.push("cpus");
        let Json::Arr(list) = v else {
            return Err(self.err(&p, format!("cpus is {}, not an array of CPU numbers such as [0, 2]", v.kind())));
        };
        let mut set = CpuSet::empty(self.nr_cpus);
        for c in list {
            match c {
                Json::Int(i) if *i >= 0 && (*i as u64) < self.nr_cpus as u64 => set.insert(*i as u32),
                Json::Int(i) => {
                    return Err(self.err(
                        &p,
                        format!(
                            "cpus names CPU {i} but the simulated machine has {} CPUs: pass --cpus {} or more",
                            self.nr_cpus,
                            i + 1
                        ),
                    ));
                }
                other => return Err(self.err(&p, format!("cpus holds {}, not a CPU number", other.kind()))),
            }
        }
        if list.is_empty() {
            return Err(self.err(&p, "cpus is empty: list at least one CPU"));
        }
        Ok(Some(set))
    }

    fn taskgroup(&mut self, obj: &Json, path: &[&str]) -> Result<GroupId, WorkloadError> {
        let mut p = path.to_vec();
        p.push("taskgroup");
        let name = match obj.get("taskgroup") {
            None => return Ok(0),
            Some(Json::Str(s)) if s.is_empty() => return Ok(0),
            Some(Json::Str(s)) => s.clone(),
            Some(other) => {
                return Err(self.err(&p, format!("taskgroup is {}, not a path such as \"/tg1\"", other.kind())));
            }
        };
        if !name.starts_with('/') {
            return Err(self.err(&p, format!("taskgroup \"{name}\" has to start with /, as rt-app requires")));
        }
        let mut parent: GroupId = 0;
        let mut full = String::new();
        for part in name.split('/').filter(|s| !s.is_empty()) {
            crate::workload::check_group_name(part)
                .map_err(|m| self.err(&p, format!("taskgroup \"{}\": {m}", name.escape_debug())))?;
            full.push('/');
            full.push_str(part);
            parent = match self.groups.iter().position(|g| g.name == full) {
                Some(i) => i as GroupId,
                None => {
                    self.groups.push(GroupSpec {
                        name: full.clone(),
                        parent: Some(parent),
                        cpu_weight: 100,
                        cpu_max: None,
                    });
                    self.groups.len() as GroupId - 1
                }
            };
        }
        Ok(parent)
    }

    /// Compiles the events of one task or phase object, in key order.
    fn events(&mut self, obj: &Json, path: &[&str], task: usize, out: &mut Vec<Op>) -> Result<(), WorkloadError> {
        let Json::Obj(entries) = obj else { unreachable!("checked by the caller") };
        // Mutexes held at this point of the phase, to check that wait and
        // unlock find theirs locked (pthread_cond_wait needs it held).
        let mut held: Vec<String> = Vec::new();
        let start = out.len();
        for (key, v) in entries {
            let Some(kind) = event_kind(key) else {
                if TASK_PROPS.contains(&key.as_str()) || GLOBAL_IGNORED.contains(&key.as_str()) {
                    continue;
                }
                return Err(self.not_an_event(path, key));
            };
            let mut p = path.to_vec();
            p.push(key);
            self.event(kind, v, &p, task, &mut held, out)?;
        }
        if out.len() == start {
            return Err(self.err(path, "no events found: a task or phase needs at least one event (run, sleep, ...)"));
        }
        Ok(())
    }

    /// One event of a phase, with the mutexes the phase holds at that point.
    fn event(
        &mut self,
        kind: &str,
        v: &Json,
        p: &[&str],
        task: usize,
        held: &mut Vec<String>,
        out: &mut Vec<Op>,
    ) -> Result<(), WorkloadError> {
        let key = p.last().copied().unwrap_or(kind);
        let here = |m: String| self.err(p, format!("event \"{key}\": {m}"));
        let usec = |v: &Json| -> Result<Nanos, WorkloadError> {
            match v {
                Json::Int(i) if *i < 0 => Err(here(format!("{i} is negative: give microseconds, 0 or more"))),
                Json::Int(i) => scaled(*i, NSEC_PER_USEC).ok_or_else(|| here(beyond_horizon(*i, "us"))),
                other => Err(here(format!("takes a duration in microseconds, not {}", other.kind()))),
            }
        };
        let string = |v: &Json| -> Result<String, WorkloadError> {
            match v {
                Json::Str(s) => Ok(s.clone()),
                other => Err(here(format!("takes a resource name in quotes, not {}", other.kind()))),
            }
        };
        let field = |v: &Json, f: &str| -> Result<String, WorkloadError> {
            match v.get(f) {
                Some(Json::Str(s)) => Ok(s.clone()),
                _ => Err(here(format!("takes an object with \"{f}\": {{ \"ref\": \"c\", \"mutex\": \"m\" }}"))),
            }
        };
        match kind {
            "run" | "runtime" => out.push(Op::Run(Dist::Const(usec(v)?))),
            "sleep" => out.push(Op::Sleep(Dist::Const(usec(v)?))),
            "timer" => out.push(self.timer(v, task, p)?),
            "lock" => {
                let m = string(v)?;
                let id = self.mutex(&m);
                held.push(m);
                out.push(Op::Wait(id));
            }
            "unlock" => {
                let m = string(v)?;
                let Some(i) = held.iter().rposition(|h| *h == m) else {
                    return Err(here(format!("unlocks \"{m}\", which this phase has not locked before")));
                };
                held.remove(i);
                out.push(Op::Signal(self.mutex(&m)));
            }
            "signal" | "broad" => {
                let c = self.cond(&string(v)?);
                out.push(if kind == "signal" { Op::CondSignal(c) } else { Op::CondBroadcast(c) });
            }
            "wait" | "sync" => {
                let (c, m) = (field(v, "ref")?, field(v, "mutex")?);
                if !held.contains(&m) {
                    return Err(here(format!(
                        "waits with mutex \"{m}\" unlocked: add \"lock\": \"{m}\" before it in the phase \
                         (pthread_cond_wait needs the mutex held)"
                    )));
                }
                let (cid, mid) = (self.cond(&c), self.mutex(&m));
                if kind == "sync" {
                    out.push(Op::CondSignal(cid));
                }
                out.push(Op::CondWait { cond: cid, mutex: Some(mid) });
                out.push(Op::Wait(mid));
            }
            "barrier" => {
                let id = self.barrier(string(v)?, task);
                out.push(Op::Barrier(id));
            }
            // rt-app: suspend blocks on the resource its string names
            // (workgen fills an empty one with the thread's name), and
            // resume wakes whoever waits on the resource it names. A
            // resource is created on first use, and a resume nobody
            // waits for is lost, as rt-app's condition variable loses it.
            "suspend" => {
                let resource = match v {
                    Json::Str(s) if !s.is_empty() => s.clone(),
                    _ => self.names[task].clone(),
                };
                let c = self.cond(&format!("suspend:{resource}"));
                out.push(Op::CondWait { cond: c, mutex: None });
            }
            "resume" => {
                let target = string(v)?;
                let c = self.cond(&format!("suspend:{target}"));
                out.push(Op::CondBroadcast(c));
            }
            "yield" => out.push(Op::Yield),
            "fork" => {
                let target = string(v)?;
                let Some(id) = self.names.iter().position(|n| *n == target) else {
                    return Err(here(format!("forks \"{target}\", which is not a task of this file")));
                };
                out.push(Op::Fork(id as TaskSpecId));
            }
            "sem_post" => {
                let s = string(v)?;
                out.push(Op::Signal(self.chan(&format!("sem:{s}"), 0)));
            }
            "sem_wait" => {
                let s = string(v)?;
                out.push(Op::Wait(self.chan(&format!("sem:{s}"), 0)));
            }
            "mem" | "memrun" | "iorun" => {
                return Err(here("memory and I/O bandwidth are not modelled: replace it with a run event".into()));
            }
            _ => unreachable!("every event kind is matched"),
        }
        Ok(())
    }

    /// A "timer" event: its period, mode and the schedule (slot) it keeps.
    fn timer(&mut self, v: &Json, task: usize, p: &[&str]) -> Result<Op, WorkloadError> {
        let key = p.last().copied().unwrap_or("timer");
        let here = |m: String| self.err(p, format!("event \"{key}\": {m}"));
        let period = match v.get("period") {
            Some(Json::Int(i)) if *i > 0 => scaled(*i, NSEC_PER_USEC).ok_or_else(|| here(beyond_horizon(*i, "us")))?,
            _ => return Err(here("needs \"period\": microseconds above zero".into())),
        };
        let relative = match v.get("mode") {
            None => true,
            Some(Json::Str(m)) if m == "relative" => true,
            Some(Json::Str(m)) if m == "absolute" => false,
            Some(_) => return Err(here("\"mode\" is \"relative\" or \"absolute\"".into())),
        };
        let reference = match v.get("ref") {
            Some(Json::Str(s)) => s.clone(),
            _ => "unknown".into(),
        };
        // A timer shared between threads (any ref not starting
        // with "unique" used by several) would advance one
        // schedule from all of them: not modelled.
        if !reference.starts_with("unique") && self.instances[task] > 1 {
            return Err(here(format!(
                "timer \"{reference}\" would be shared by the task's {} instances: name it \"unique...\" \
                 to give each its own, which is what schedlab models",
                self.instances[task]
            )));
        }
        let slot = self.timer_slot(task, &reference);
        Ok(Op::Timer { period, slot, mode: TimerMode::RtApp { relative } })
    }

    /// The barrier named `name`, which each instance of the task joins.
    fn barrier(&mut self, name: String, task: usize) -> u32 {
        let users = self.instances[task];
        match self.barriers.iter().position(|x| x.name == name) {
            Some(i) => {
                self.barriers[i].users += users;
                i as u32
            }
            None => {
                self.barriers.push(Barrier { name, users });
                self.barriers.len() as u32 - 1
            }
        }
    }

    /// A key that is neither an event nor a property rt-app's tasks have.
    fn not_an_event(&self, path: &[&str], key: &str) -> WorkloadError {
        let mut p = path.to_vec();
        p.push(key);
        if let Some((_, why)) = REFUSED_PROPS.iter().find(|(k, _)| *k == key) {
            return self.err(&p, format!("\"{key}\": {why}"));
        }
        if matches!(key, "exec" | "period" | "deadline" | "lock_order" | "resources") {
            return self.err(
                &p,
                format!(
                    "\"{key}\" is rt-app's old format (threads of \"exec\" and \"period\", as in its \
                     doc/examples/merge), which schedlab does not read: write each phase as events, e.g. {{ \"run\": 5000, \"timer\": \
                     {{ \"ref\": \"tick\", \"period\": 10000 }} }} for \"exec\": 5000, \"period\": 10000"
                ),
            );
        }
        self.err(
            &p,
            format!(
                "\"{key}\" is neither an rt-app event ({}) nor a task property ({})",
                EVENTS.join(", "),
                TASK_PROPS.join(", ")
            ),
        )
    }

    /// Each distinct timer ref of a task gets its own slot (its own
    /// schedule); the same ref in two phases is the same timer.
    fn timer_slot(&mut self, task: usize, reference: &str) -> u32 {
        let mine = || self.timers.iter().filter(|(t, _)| *t == task);
        match mine().position(|(_, r)| r == reference) {
            Some(i) => i as u32,
            None => {
                let slot = mine().count() as u32;
                self.timers.push((task, reference.to_string()));
                slot
            }
        }
    }
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

/// What json-c (rt-app's parser) accepts beyond JSON: /* */ and //
/// comments and trailing commas. Both are blanked out in place, so line
/// numbers stay those of the file.
fn relax(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let (mut i, mut in_str) = (0, false);
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\\' {
                i += 1;
            } else if c == b'"' {
                in_str = false;
            }
        } else if c == b'"' {
            in_str = true;
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let end = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
            for o in &mut out[i..end] {
                if *o != b'\n' {
                    *o = b' ';
                }
            }
            i = end;
            continue;
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                out[i] = b' ';
                i += 1;
            }
            continue;
        } else if c == b',' {
            let next = b[i + 1..].iter().zip(&out[i + 1..]).find(|(_, o)| !o.is_ascii_whitespace());
            if matches!(next, Some((_, b'}' | b']'))) {
                out[i] = b' ';
            }
        }
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
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
    let cpus = ov.cpus.or_else(|| cpus_named(text)).unwrap_or(1);
    let topology = Topology::flat(cpus).map_err(|m| WorkloadError { origin: "--cpus".into(), line: 0, message: m })?;
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
