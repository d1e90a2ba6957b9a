//! What a policy must not do, checked by the engine: a pick it cannot run
//! (checked at every pick) and the run's invariants (no task lost, none on
//! two CPUs, every count agreeing; checked after every event when
//! EngineOptions::check_invariants is set).

use super::{Engine, SimError};
use crate::policy::{TaskId, TaskState};
use crate::topology::CpuId;

impl Engine<'_> {
    /// The policy's pick, if the engine can run it: a task that is
    /// runnable, queued on this CPU and allowed there; and no pick only
    /// when no task waits on the CPU. Otherwise the policy broke the
    /// interface: the run ends with the reason, the CPU idle meanwhile.
    pub(super) fn checked_pick(&mut self, cpu: CpuId, next: Option<TaskId>) -> Option<TaskId> {
        let name = |t: TaskId| &self.w.tasks[self.sys.tasks[t as usize].spec as usize].name;
        let why = match next {
            None if self.sys.cpus[cpu as usize].nr_running > self.policy.held_back(&self.sys, cpu) => {
                let waiting = self.sys.tasks.iter().position(|i| i.cpu == cpu && i.state == TaskState::Runnable);
                format!(
                    "CPU {cpu} went idle with {} runnable task(s) on its runqueue{}: pick_next must return one (or \
                     the policy must move them with sys.migrate)",
                    self.sys.cpus[cpu as usize].nr_running,
                    waiting.map(|t| format!(", task {t} ({}) among them", name(t as TaskId))).unwrap_or_default()
                )
            }
            None => return None,
            Some(t) if t as usize >= self.sys.tasks.len() => {
                format!("CPU {cpu} picked task {t}, which does not exist ({} tasks)", self.sys.tasks.len())
            }
            Some(t) => {
                let info = &self.sys.tasks[t as usize];
                if info.state == TaskState::Running {
                    format!("CPU {cpu} picked task {t} ({}), which runs on CPU {}", name(t), info.cpu)
                } else if info.state != TaskState::Runnable {
                    format!("CPU {cpu} picked task {t} ({}), which is {:?}, not runnable", name(t), info.state)
                } else if info.cpu != cpu {
                    format!(
                        "CPU {cpu} picked task {t} ({}), which is queued on CPU {}: move it with sys.migrate first",
                        name(t),
                        info.cpu
                    )
                } else if !self.sys.allowed(t, cpu) {
                    format!("CPU {cpu} picked task {t} ({}), outside its affinity", name(t))
                } else {
                    return next;
                }
            }
        };
        self.sys.broke(why);
        None
    }

    pub(super) fn check_invariants(&self) -> Result<(), SimError> {
        let mut running_on = vec![None; self.sys.tasks.len()];
        for (cpu, info) in self.sys.cpus.iter().enumerate() {
            if let Some(t) = info.curr {
                if let Some(other) = running_on[t as usize] {
                    return Err(SimError::Invariant(format!("task {t} runs on CPU {other} and CPU {cpu}")));
                }
                running_on[t as usize] = Some(cpu);
                let task = &self.sys.tasks[t as usize];
                if task.state != TaskState::Running || task.cpu != cpu as CpuId {
                    return Err(SimError::Invariant(format!(
                        "CPU {cpu} runs task {t} whose state is {:?} on CPU {}",
                        task.state, task.cpu
                    )));
                }
                if !self.sys.allowed(t, cpu as CpuId) {
                    return Err(SimError::Invariant(format!("task {t} runs on CPU {cpu} outside its affinity")));
                }
            }
        }
        let mut counts = vec![0u32; self.sys.nr_cpus as usize];
        for (t, task) in self.sys.tasks.iter().enumerate() {
            match task.state {
                TaskState::Running if running_on[t].is_none() => {
                    return Err(SimError::Invariant(format!("task {t} is Running but on no CPU")));
                }
                TaskState::Runnable | TaskState::Running => counts[task.cpu as usize] += 1,
                _ => {}
            }
        }
        for (cpu, info) in self.sys.cpus.iter().enumerate() {
            if counts[cpu] != info.nr_running {
                return Err(SimError::Invariant(format!(
                    "CPU {cpu} counts {} runnable tasks but {} are assigned to it",
                    info.nr_running, counts[cpu]
                )));
            }
        }
        self.sys.check_idle_counts().map_err(SimError::Invariant)?;
        self.rt.check(|cpu| self.sys.cpus[cpu as usize].nr_rt).map_err(SimError::Invariant)?;
        self.policy.check_invariants(&self.sys).map_err(SimError::Invariant)
    }
}
