//! A task's properties (policy, nice, custom slice, CPUs, taskgroup) and
//! its events, each compiled to the workload's ops with rt-app's rules.

use super::*;

impl Conv<'_> {
    /// The line of the innermost key of `path`, each key searched after the
    /// previous one (keys are unique within an object, so the first match in
    /// nesting order is the one meant).
    pub(super) fn line(&self, path: &[&str]) -> usize {
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

    pub(super) fn err(&self, path: &[&str], message: impl Into<String>) -> WorkloadError {
        WorkloadError { origin: self.origin.to_string(), line: self.line(path), message: message.into() }
    }

    pub(super) fn chan(&mut self, name: &str, initial: u64) -> u32 {
        self.channels.id(name.to_string(), || Channel { name: name.to_string(), initial })
    }

    pub(super) fn mutex(&mut self, name: &str) -> u32 {
        self.chan(&format!("mutex:{name}"), 1)
    }

    pub(super) fn cond(&mut self, name: &str) -> u32 {
        self.conds.id(name.to_string(), || name.to_string())
    }

    pub(super) fn policy(&self, obj: &Json, path: &[&str], default: SchedPolicy) -> Result<SchedPolicy, WorkloadError> {
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

    pub(super) fn nice(&self, obj: &Json, path: &[&str], policy: SchedPolicy) -> Result<i32, WorkloadError> {
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
    pub(super) fn custom_slice(
        &self,
        obj: &Json,
        path: &[&str],
        policy: SchedPolicy,
    ) -> Result<Option<Nanos>, WorkloadError> {
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

    pub(super) fn cpus(&self, obj: &Json, path: &[&str]) -> Result<Option<CpuSet>, WorkloadError> {
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

    pub(super) fn taskgroup(&mut self, obj: &Json, path: &[&str]) -> Result<GroupId, WorkloadError> {
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
    pub(super) fn events(
        &mut self,
        obj: &Json,
        path: &[&str],
        task: usize,
        out: &mut Vec<Op>,
    ) -> Result<(), WorkloadError> {
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
    pub(super) fn event(
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
    pub(super) fn timer(&mut self, v: &Json, task: usize, p: &[&str]) -> Result<Op, WorkloadError> {
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
    pub(super) fn barrier(&mut self, name: String, task: usize) -> u32 {
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
    pub(super) fn not_an_event(&self, path: &[&str], key: &str) -> WorkloadError {
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
    pub(super) fn timer_slot(&mut self, task: usize, reference: &str) -> u32 {
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
