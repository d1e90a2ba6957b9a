//! Writing a simulated schedule as the traces people already open: the
//! kernel's ftrace text (sched_switch, sched_waking, sched_wakeup,
//! sched_wakeup_new, sched_migrate_task in the layout of Linux 6.x's
//! `trace` file, so Perfetto and [`crate::formats::ftrace::parse`] read it
//! as a real one), Perfetto's own protobuf trace (the same events as
//! per-CPU ftrace bundles, which Perfetto's UI shows as CPU tracks and
//! thread states), trace-cmd's `trace.dat` (see [`super::trace_dat`]) and
//! the Chrome/Perfetto JSON trace format with one track per CPU.
//!
//! Simulated tasks get pid 1000 + task id and their task spec's name as
//! comm (cut to the kernel's 15 characters); an idle CPU runs swapper/N,
//! pid 0. Wakeup events are printed on the target CPU (the kernel prints
//! them on the waker's).

use super::perfetto_proto as pp;
use super::trace_dat::{self, TraceDat, Who};
use crate::engine::{Observer, TraceEvent};
use crate::policy::{Sys, TaskId, TaskState};
use crate::time::Nanos;
use crate::workload::{SchedPolicy, Workload};
use std::io::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    Ftrace,
    /// Chrome/Perfetto JSON: one slice track per CPU.
    Perfetto,
    /// Perfetto's protobuf (`.perfetto-trace`): ftrace sched events.
    PerfettoProto,
    /// trace-cmd's binary `trace.dat` (version 6).
    TraceDat,
}

/// An [`Observer`] that streams the schedule to a writer. Write errors are
/// kept and returned by [`TraceWriter::finish`].
pub struct TraceWriter<'a> {
    w: &'a Workload,
    out: Box<dyn Write + 'a>,
    format: TraceFormat,
    error: Option<std::io::Error>,
    /// Perfetto: the slice open on each CPU (comm, pid, start).
    open: Vec<Option<(String, u32, Nanos)>>,
    first_event: bool,
    /// Protobuf: each thread's tid and comm, for the process tree.
    threads: std::collections::BTreeMap<u32, String>,
    /// trace.dat: the ring-buffer pages, written whole at the end.
    dat: Option<TraceDat>,
}

pub const PID_BASE: u32 = 1000;

fn comm(w: &Workload, sys: &Sys, t: TaskId) -> String {
    w.tasks[sys.task(t).spec as usize].name.chars().take(15).collect()
}

fn prio(sys: &Sys, t: TaskId) -> i32 {
    let info = sys.task(t);
    match info.policy {
        SchedPolicy::Fifo(p) | SchedPolicy::Rr(p) => 99 - p as i32,
        _ => 120 + info.nice,
    }
}

/// One side of a sched_switch as the kernel prints it (comm, pid, prio):
/// a task, or the CPU's swapper when it idles.
fn side(w: &Workload, sys: &Sys, cpu: u32, t: Option<TaskId>) -> (String, u32, i32) {
    match t {
        Some(t) => (comm(w, sys, t), PID_BASE + t, prio(sys, t)),
        None => (format!("swapper/{cpu}"), 0, 120),
    }
}

/// What runs on `cpu` besides `task`: the current task a line recorded
/// there about `task` (its wakeup, its migration) shows.
fn running_besides(sys: &Sys, cpu: u32, task: TaskId) -> Option<TaskId> {
    sys.cpus[cpu as usize].curr.filter(|&c| c != task)
}

/// A task's pid, 0 (the swapper's) for none.
fn pid_of(t: Option<TaskId>) -> u32 {
    t.map_or(0, |t| PID_BASE + t)
}

/// sched_switch's prev_state, the kernel's bits for the task leaving a
/// CPU: 0 for the idle task, TASK_REPORT_MAX for a preempted one ("R+"),
/// EXIT_DEAD for one that exited, TASK_INTERRUPTIBLE for one gone to sleep.
fn prev_state_bits(prev: Option<TaskId>, state: TaskState) -> i64 {
    match (prev, state) {
        (None, _) => trace_dat::STATE_RUNNING,
        (_, TaskState::Runnable | TaskState::Running) => trace_dat::STATE_PREEMPTED,
        (_, TaskState::Exited) => trace_dat::STATE_EXITED,
        _ => trace_dat::STATE_SLEEPING,
    }
}

/// "comm-pid" of what runs on `cpu`, as the header of a line.
fn header(w: &Workload, sys: &Sys, cpu: u32, running: Option<TaskId>, now: Nanos, flags: &str) -> String {
    let (c, pid) = match running {
        Some(t) => (comm(w, sys, t), PID_BASE + t),
        None => ("<idle>".to_string(), 0),
    };
    format!("{c:>16}-{pid:<7} [{cpu:03}] {flags} {:>5}.{:06}: ", now / 1_000_000_000, now % 1_000_000_000 / 1000)
}

impl<'a> TraceWriter<'a> {
    pub fn new(w: &'a Workload, out: Box<dyn Write + 'a>, format: TraceFormat) -> TraceWriter<'a> {
        let mut tw = TraceWriter {
            w,
            out,
            format,
            error: None,
            open: vec![None; w.nr_cpus() as usize],
            first_event: true,
            threads: Default::default(),
            dat: (format == TraceFormat::TraceDat).then(|| TraceDat::new(w.nr_cpus())),
        };
        match format {
            TraceFormat::Ftrace => {
                let n = w.nr_cpus();
                tw.put(format!(
                    "# tracer: nop\n#\n# schedlab simulation of {}\n#\n#                                _-----=> irqs-off/BH-disabled\n#                               / _----=> need-resched\n#                              | / _---=> hardirq/softirq\n#                              || / _--=> preempt-depth\n#                              ||| / _-=> migrate-disable\n#                              |||| /     delay\n#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n#              | |         |   |||||     |         |\n",
                    if w.name.is_empty() { format!("{n} CPUs") } else { w.name.clone() }
                ));
            }
            TraceFormat::Perfetto => {
                tw.put("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n".to_string());
                tw.json(format!(
                    "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{{\"name\":\"schedlab {}\"}}}}",
                    json_escape(&w.name)
                ));
                for cpu in 0..w.nr_cpus() {
                    tw.json(format!(
                        "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{cpu},\"args\":{{\"name\":\"CPU {cpu}\"}}}}"
                    ));
                    tw.json(format!(
                        "{{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":{cpu},\"args\":{{\"sort_index\":{cpu}}}}}"
                    ));
                }
            }
            TraceFormat::PerfettoProto | TraceFormat::TraceDat => {}
        }
        tw
    }

    /// One packet of the protobuf trace, as a `Trace.packet` field.
    fn packet(&mut self, p: pp::TracePacket) {
        use prost::Message;
        let bytes = pp::Trace { packet: vec![p] }.encode_to_vec();
        if self.error.is_none()
            && let Err(e) = self.out.write_all(&bytes)
        {
            self.error = Some(e);
        }
    }

    fn proto(&mut self, now: Nanos, sys: &Sys, ev: TraceEvent) {
        let w = self.w;
        let mut name = |t: TaskId| {
            let c = comm(w, sys, t);
            self.threads.insert(PID_BASE + t, c.clone());
            c
        };
        let (cpu, pid, event) = match ev {
            TraceEvent::Switch { cpu, prev, prev_state, next } => {
                // Both tasks are named in the process tree.
                for t in prev.into_iter().chain(next) {
                    name(t);
                }
                let ((pc, pp_, ppr), (nc, np, npr)) = (side(w, sys, cpu, prev), side(w, sys, cpu, next));
                // Written without the preemption mark (R, not R+), as the
                // protobuf always was.
                let state = prev_state_bits(prev, prev_state) & !trace_dat::STATE_PREEMPTED;
                let e = pp::Event::SchedSwitch(pp::SchedSwitch {
                    prev_comm: Some(pc),
                    prev_pid: Some(pp_ as i32),
                    prev_prio: Some(ppr),
                    prev_state: Some(state),
                    next_comm: Some(nc),
                    next_pid: Some(np as i32),
                    next_prio: Some(npr),
                });
                (cpu, pp_, vec![e])
            }
            TraceEvent::Wakeup { task, cpu, new } => {
                let wake = pp::SchedWake {
                    comm: Some(name(task)),
                    pid: Some((PID_BASE + task) as i32),
                    prio: Some(prio(sys, task)),
                    success: Some(1),
                    target_cpu: Some(cpu as i32),
                };
                let running = pid_of(running_besides(sys, cpu, task));
                let events = if new {
                    vec![pp::Event::SchedWakeupNew(wake)]
                } else {
                    vec![pp::Event::SchedWaking(wake.clone()), pp::Event::SchedWakeup(wake)]
                };
                (cpu, running, events)
            }
            TraceEvent::Migrate { task, from, to } => {
                let running = pid_of(running_besides(sys, from, task));
                let e = pp::Event::SchedMigrateTask(pp::SchedMigrateTask {
                    comm: Some(name(task)),
                    pid: Some((PID_BASE + task) as i32),
                    prio: Some(prio(sys, task)),
                    orig_cpu: Some(from as i32),
                    dest_cpu: Some(to as i32),
                });
                (from, running, vec![e])
            }
        };
        let event = event
            .into_iter()
            .map(|e| pp::FtraceEvent { timestamp: Some(now), pid: Some(pid), event: Some(e) })
            .collect();
        self.packet(pp::TracePacket {
            ftrace_events: Some(pp::FtraceEventBundle { cpu: Some(cpu), event, compact_sched: None }),
            trusted_packet_sequence_id: Some(1),
            ..Default::default()
        });
    }

    fn put(&mut self, text: String) {
        if self.error.is_none()
            && let Err(e) = self.out.write_all(text.as_bytes())
        {
            self.error = Some(e);
        }
    }

    fn json(&mut self, obj: String) {
        let sep = if self.first_event { "" } else { ",\n" };
        self.first_event = false;
        self.put(format!("{sep}{obj}"));
    }

    fn close_slice(&mut self, cpu: u32, end: Nanos) {
        if let Some((name, pid, start)) = self.open[cpu as usize].take() {
            self.json(format!(
                "{{\"name\":\"{}\",\"cat\":\"sched\",\"ph\":\"X\",\"pid\":1,\"tid\":{cpu},\"ts\":{:.3},\"dur\":{:.3},\"args\":{{\"pid\":{pid}}}}}",
                json_escape(&name),
                start as f64 / 1e3,
                (end - start) as f64 / 1e3,
            ));
        }
    }

    /// Closes what is still running at `end` and flushes; the first write
    /// error, if any.
    pub fn finish(mut self, end: Nanos) -> std::io::Result<()> {
        if self.format == TraceFormat::Perfetto {
            for cpu in 0..self.open.len() as u32 {
                self.close_slice(cpu, end);
            }
            self.put("\n]}\n".to_string());
        }
        if self.format == TraceFormat::PerfettoProto {
            // Every simulated task is a process of its own (tgid = tid),
            // named by its comm.
            let threads = std::mem::take(&mut self.threads);
            let tree = pp::ProcessTree {
                processes: threads
                    .iter()
                    .map(|(&tid, c)| pp::Process { pid: Some(tid as i32), ppid: Some(1), cmdline: vec![c.clone()] })
                    .collect(),
                threads: threads
                    .iter()
                    .map(|(&tid, c)| pp::Thread {
                        tid: Some(tid as i32),
                        name: Some(c.clone()),
                        tgid: Some(tid as i32),
                    })
                    .collect(),
            };
            self.packet(pp::TracePacket {
                timestamp: Some(end),
                process_tree: Some(tree),
                trusted_packet_sequence_id: Some(1),
                ..Default::default()
            });
        }
        if let Some(dat) = self.dat.take()
            && self.error.is_none()
            && let Err(e) = dat.write(&mut self.out)
        {
            self.error = Some(e);
        }
        if self.error.is_none()
            && let Err(e) = self.out.flush()
        {
            self.error = Some(e);
        }
        self.error.map_or(Ok(()), Err)
    }

    fn ftrace(&mut self, now: Nanos, sys: &Sys, ev: TraceEvent) {
        let w = self.w;
        match ev {
            TraceEvent::Switch { cpu, prev, prev_state, next } => {
                let ((pc, pp, ppr), (nc, np, npr)) = (side(w, sys, cpu, prev), side(w, sys, cpu, next));
                // The letters of the kernel's print format for those bits.
                let state = match prev_state_bits(prev, prev_state) {
                    trace_dat::STATE_PREEMPTED => "R+",
                    trace_dat::STATE_EXITED => "X",
                    trace_dat::STATE_SLEEPING => "S",
                    _ => "R",
                };
                let line = format!(
                    "{}sched_switch: prev_comm={pc} prev_pid={pp} prev_prio={ppr} prev_state={state} ==> next_comm={nc} next_pid={np} next_prio={npr}\n",
                    header(w, sys, cpu, prev, now, "d..2.")
                );
                self.put(line);
            }
            TraceEvent::Wakeup { task, cpu, new } => {
                let running = running_besides(sys, cpu, task);
                let (c, pid, pr) = (comm(w, sys, task), PID_BASE + task, prio(sys, task));
                let fields = format!("comm={c} pid={pid} prio={pr} target_cpu={cpu:03}");
                // try_to_wake_up traces sched_waking first; wake_up_new_task
                // only sched_wakeup_new.
                let line = if new {
                    format!("{}sched_wakeup_new: {fields}\n", header(w, sys, cpu, running, now, "dN.4."))
                } else {
                    format!(
                        "{}sched_waking: {fields}\n{}sched_wakeup: {fields}\n",
                        header(w, sys, cpu, running, now, "d..3."),
                        header(w, sys, cpu, running, now, "dN.4.")
                    )
                };
                self.put(line);
            }
            TraceEvent::Migrate { task, from, to } => {
                let running = running_besides(sys, from, task);
                let line = format!(
                    "{}sched_migrate_task: comm={} pid={} prio={} orig_cpu={from} dest_cpu={to}\n",
                    header(w, sys, from, running, now, "d..3."),
                    comm(w, sys, task),
                    PID_BASE + task,
                    prio(sys, task)
                );
                self.put(line);
            }
        }
    }

    fn trace_dat(&mut self, now: Nanos, sys: &Sys, ev: TraceEvent) {
        let w = self.w;
        let Some(dat) = self.dat.as_mut() else { return };
        match ev {
            TraceEvent::Switch { cpu, prev, prev_state, next } => {
                let ((pc, pp, ppr), (nc, np, npr)) = (side(w, sys, cpu, prev), side(w, sys, cpu, next));
                let state = prev_state_bits(prev, prev_state);
                let (prev, next) = (Who { comm: &pc, pid: pp, prio: ppr }, Who { comm: &nc, pid: np, prio: npr });
                dat.switch(now, cpu, prev, state, next);
            }
            TraceEvent::Wakeup { task, cpu, new } => {
                let running = pid_of(running_besides(sys, cpu, task));
                let c = comm(w, sys, task);
                dat.wakeup(now, cpu, running, Who { comm: &c, pid: PID_BASE + task, prio: prio(sys, task) }, new);
            }
            TraceEvent::Migrate { task, from, to } => {
                let running = pid_of(running_besides(sys, from, task));
                let c = comm(w, sys, task);
                dat.migrate(now, running, Who { comm: &c, pid: PID_BASE + task, prio: prio(sys, task) }, from, to);
            }
        }
    }
}

impl Observer for TraceWriter<'_> {
    fn event(&mut self, now: Nanos, sys: &Sys, ev: TraceEvent) {
        match self.format {
            TraceFormat::Ftrace => self.ftrace(now, sys, ev),
            TraceFormat::TraceDat => self.trace_dat(now, sys, ev),
            TraceFormat::PerfettoProto => self.proto(now, sys, ev),
            TraceFormat::Perfetto => {
                if let TraceEvent::Switch { cpu, next, .. } = ev {
                    self.close_slice(cpu, now);
                    if let Some(n) = next {
                        self.open[cpu as usize] = Some((comm(self.w, sys, n), PID_BASE + n, now));
                    }
                }
            }
        }
    }
}

fn json_escape(s: &str) -> String {
    serde_json::to_string(s).map(|q| q[1..q.len() - 1].to_string()).unwrap_or_default()
}
