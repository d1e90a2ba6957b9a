//! The few messages of Perfetto's trace protobuf (protos/perfetto/trace/
//! trace_packet.proto, ftrace/ftrace_event_bundle.proto, ftrace_event.proto,
//! ftrace/sched.proto, ps/process_tree.proto) that a schedule needs: per-CPU
//! ftrace bundles of sched_switch, sched_waking, sched_wakeup(_new) and
//! sched_migrate_task events, which Perfetto's UI shows as CPU tracks and
//! thread states, and a process tree naming the threads. Field numbers
//! follow Perfetto's descriptors (v50+; checked against the perfetto PyPI
//! package's perfetto_trace_pb2 by the test that decodes our output).
//!
//! Read back ([`to_ftrace_text`]) for `schedlab replay`: the same events,
//! and the compact_sched bundles Perfetto's traced records by default,
//! become tracefs text lines that formats::ftrace parses.

#[derive(Clone, PartialEq, prost::Message)]
pub struct Trace {
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    #[prost(message, optional, tag = "1")]
    pub ftrace_events: Option<FtraceEventBundle>,
    #[prost(message, optional, tag = "2")]
    pub process_tree: Option<ProcessTree>,
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct FtraceEventBundle {
    #[prost(uint32, optional, tag = "1")]
    pub cpu: Option<u32>,
    #[prost(message, repeated, tag = "2")]
    pub event: Vec<FtraceEvent>,
    /// What traced writes by default instead of sched_switch and
    /// sched_waking events (read, never written here).
    #[prost(message, optional, tag = "4")]
    pub compact_sched: Option<CompactSched>,
}

/// FtraceEventBundle.CompactSched: a bundle's (one CPU's) switches and
/// wakings as parallel arrays, each timestamp relative to the one before
/// it (the first absolute), comms interned in `intern_table`; a switch's
/// prev is the task the CPU's previous switch put on it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CompactSched {
    #[prost(string, repeated, tag = "5")]
    pub intern_table: Vec<String>,
    #[prost(uint64, repeated, packed = "true", tag = "1")]
    pub switch_timestamp: Vec<u64>,
    #[prost(int64, repeated, packed = "true", tag = "2")]
    pub switch_prev_state: Vec<i64>,
    #[prost(int32, repeated, packed = "true", tag = "3")]
    pub switch_next_pid: Vec<i32>,
    #[prost(int32, repeated, packed = "true", tag = "4")]
    pub switch_next_prio: Vec<i32>,
    #[prost(uint32, repeated, packed = "true", tag = "6")]
    pub switch_next_comm_index: Vec<u32>,
    #[prost(uint64, repeated, packed = "true", tag = "7")]
    pub waking_timestamp: Vec<u64>,
    #[prost(int32, repeated, packed = "true", tag = "8")]
    pub waking_pid: Vec<i32>,
    #[prost(int32, repeated, packed = "true", tag = "9")]
    pub waking_target_cpu: Vec<i32>,
    #[prost(int32, repeated, packed = "true", tag = "10")]
    pub waking_prio: Vec<i32>,
    #[prost(uint32, repeated, packed = "true", tag = "11")]
    pub waking_comm_index: Vec<u32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct FtraceEvent {
    #[prost(uint64, optional, tag = "1")]
    pub timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "2")]
    pub pid: Option<u32>,
    #[prost(oneof = "Event", tags = "4, 17, 20, 114, 491")]
    pub event: Option<Event>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Event {
    #[prost(message, tag = "4")]
    SchedSwitch(SchedSwitch),
    #[prost(message, tag = "17")]
    SchedWakeup(SchedWake),
    #[prost(message, tag = "20")]
    SchedWaking(SchedWake),
    #[prost(message, tag = "114")]
    SchedWakeupNew(SchedWake),
    #[prost(message, tag = "491")]
    SchedMigrateTask(SchedMigrateTask),
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedSwitch {
    #[prost(string, optional, tag = "1")]
    pub prev_comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub prev_pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub prev_prio: Option<i32>,
    /// The kernel's task state as sched_switch reports it: 0 runnable
    /// (preempted), 1 sleeping (S), 16 EXIT_DEAD (X).
    #[prost(int64, optional, tag = "4")]
    pub prev_state: Option<i64>,
    #[prost(string, optional, tag = "5")]
    pub next_comm: Option<String>,
    #[prost(int32, optional, tag = "6")]
    pub next_pid: Option<i32>,
    #[prost(int32, optional, tag = "7")]
    pub next_prio: Option<i32>,
}

/// sched_wakeup, sched_waking and sched_wakeup_new share their fields.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedWake {
    #[prost(string, optional, tag = "1")]
    pub comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub prio: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    pub success: Option<i32>,
    #[prost(int32, optional, tag = "5")]
    pub target_cpu: Option<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedMigrateTask {
    #[prost(string, optional, tag = "1")]
    pub comm: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    pub prio: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    pub orig_cpu: Option<i32>,
    #[prost(int32, optional, tag = "5")]
    pub dest_cpu: Option<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessTree {
    #[prost(message, repeated, tag = "1")]
    pub processes: Vec<Process>,
    #[prost(message, repeated, tag = "2")]
    pub threads: Vec<Thread>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Process {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    pub ppid: Option<i32>,
    #[prost(string, repeated, tag = "3")]
    pub cmdline: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Thread {
    #[prost(int32, optional, tag = "1")]
    pub tid: Option<i32>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(int32, optional, tag = "3")]
    pub tgid: Option<i32>,
}

/// A task as a line of tracefs text names it.
#[derive(Clone)]
struct Named {
    comm: String,
    pid: i32,
    prio: i32,
}

/// sched_switch's prev_state letters from the kernel's state bits: 0
/// runnable, 1 S, 2 D, 0x10 X, 0x20 Z; a preempted task carries the
/// TASK_REPORT_MAX bit (above the states) and prints R+.
fn state_letters(state: i64) -> &'static str {
    match state {
        0 => "R",
        s if s & 0x1 != 0 => "S",
        s if s & 0x2 != 0 => "D",
        s if s & 0x10 != 0 => "X",
        s if s & 0x20 != 0 => "Z",
        _ => "R+",
    }
}

fn line(ts: u64, cpu: u32, on: &Named, text: &str) -> (u64, u32, String) {
    let who = if on.pid == 0 { "<idle>".to_string() } else { on.comm.replace(' ', "_") };
    (
        ts,
        cpu,
        format!(
            "{who:>16}-{:<7} [{cpu:03}] d..2. {:>5}.{:06}: {text}",
            on.pid,
            ts / 1_000_000_000,
            ts % 1_000_000_000 / 1000
        ),
    )
}

/// A sched event of a bundle, explicit or compact, before it is a line.
enum Sched {
    /// A switch; a compact one leaves prev to the CPU's previous switch.
    Switch {
        prev: Option<Named>,
        state: &'static str,
        next: Named,
    },
    Wake {
        event: &'static str,
        task: Named,
        target_cpu: i32,
    },
    Migrate {
        task: Named,
        orig_cpu: i32,
        dest_cpu: i32,
    },
}

fn named(comm: Option<&String>, pid: Option<i32>, prio: Option<i32>) -> Named {
    Named { comm: comm.cloned().unwrap_or_default(), pid: pid.unwrap_or(0), prio: prio.unwrap_or(120) }
}

/// A bundle's explicit events, then its compact ones, with their
/// timestamps (compact ones made absolute).
fn bundle_events(bundle: &FtraceEventBundle) -> Vec<(u64, Sched)> {
    let mut out = Vec::new();
    for e in &bundle.event {
        let sched = match &e.event {
            Some(Event::SchedSwitch(s)) => Sched::Switch {
                prev: Some(named(s.prev_comm.as_ref(), s.prev_pid, s.prev_prio)),
                state: state_letters(s.prev_state.unwrap_or(0)),
                next: named(s.next_comm.as_ref(), s.next_pid, s.next_prio),
            },
            Some(Event::SchedWaking(w) | Event::SchedWakeup(w) | Event::SchedWakeupNew(w)) => Sched::Wake {
                event: match &e.event {
                    Some(Event::SchedWaking(_)) => "sched_waking",
                    Some(Event::SchedWakeup(_)) => "sched_wakeup",
                    _ => "sched_wakeup_new",
                },
                task: named(w.comm.as_ref(), w.pid, w.prio),
                target_cpu: w.target_cpu.unwrap_or(0),
            },
            Some(Event::SchedMigrateTask(m)) => Sched::Migrate {
                task: named(m.comm.as_ref(), m.pid, m.prio),
                orig_cpu: m.orig_cpu.unwrap_or(0),
                dest_cpu: m.dest_cpu.unwrap_or(0),
            },
            None => continue,
        };
        out.push((e.timestamp.unwrap_or(0), sched));
    }
    if let Some(c) = &bundle.compact_sched {
        let comm = |i: Option<&u32>| i.and_then(|&i| c.intern_table.get(i as usize));
        let mut ts = 0u64;
        for (k, d) in c.switch_timestamp.iter().enumerate() {
            ts = ts.wrapping_add(*d);
            let next = named(
                comm(c.switch_next_comm_index.get(k)),
                c.switch_next_pid.get(k).copied(),
                c.switch_next_prio.get(k).copied(),
            );
            let state = state_letters(c.switch_prev_state.get(k).copied().unwrap_or(0));
            out.push((ts, Sched::Switch { prev: None, state, next }));
        }
        let mut ts = 0u64;
        for (k, d) in c.waking_timestamp.iter().enumerate() {
            ts = ts.wrapping_add(*d);
            let task =
                named(comm(c.waking_comm_index.get(k)), c.waking_pid.get(k).copied(), c.waking_prio.get(k).copied());
            let target_cpu = c.waking_target_cpu.get(k).copied().unwrap_or(0);
            out.push((ts, Sched::Wake { event: "sched_waking", task, target_cpu }));
        }
    }
    out
}

/// A Perfetto protobuf trace's sched events as tracefs text, in time
/// order; an error names what the bytes lack.
pub fn to_ftrace_text(bytes: &[u8]) -> Result<String, String> {
    use prost::Message;
    let trace = Trace::decode(bytes).map_err(|e| format!("not a Perfetto trace protobuf: {e}"))?;
    let idle = |cpu: u32| Named { comm: format!("swapper/{cpu}"), pid: 0, prio: 120 };
    let field = |n: &Named| n.comm.replace(' ', "_");
    // What each CPU runs, as its switches say, across bundles.
    let mut on: std::collections::HashMap<u32, Named> = std::collections::HashMap::new();
    let mut lines = Vec::new();
    for bundle in trace.packet.iter().filter_map(|p| p.ftrace_events.as_ref()) {
        let cpu = bundle.cpu.unwrap_or(0);
        let mut events = bundle_events(bundle);
        // Stable: explicit events before compact ones of the same time.
        events.sort_by_key(|(ts, _)| *ts);
        for (ts, sched) in events {
            let current = on.get(&cpu).cloned().unwrap_or_else(|| idle(cpu));
            let text = match sched {
                Sched::Switch { prev, state, next } => {
                    let prev = prev.unwrap_or_else(|| current.clone());
                    let text = format!(
                        "sched_switch: prev_comm={} prev_pid={} prev_prio={} prev_state={state} ==> next_comm={} \
                         next_pid={} next_prio={}",
                        field(&prev),
                        prev.pid,
                        prev.prio,
                        field(&next),
                        next.pid,
                        next.prio
                    );
                    on.insert(cpu, next);
                    text
                }
                Sched::Wake { event, task, target_cpu } => {
                    format!(
                        "{event}: comm={} pid={} prio={} target_cpu={target_cpu:03}",
                        field(&task),
                        task.pid,
                        task.prio
                    )
                }
                Sched::Migrate { task, orig_cpu, dest_cpu } => format!(
                    "sched_migrate_task: comm={} pid={} prio={} orig_cpu={orig_cpu} dest_cpu={dest_cpu}",
                    field(&task),
                    task.pid,
                    task.prio
                ),
            };
            lines.push(line(ts, cpu, &current, &text));
        }
    }
    if lines.is_empty() {
        return Err("a Perfetto trace without ftrace sched events (record with the linux.ftrace data source and the \
                    sched/sched_switch and sched/sched_waking events)"
            .into());
    }
    lines.sort_by_key(|(ts, cpu, _)| (*ts, *cpu));
    let mut out = String::from("# tracer: nop\n#\n# converted from a Perfetto protobuf trace by schedlab\n");
    for (_, _, l) in lines {
        out.push_str(&l);
        out.push('\n');
    }
    Ok(out)
}
