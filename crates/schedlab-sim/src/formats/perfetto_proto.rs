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

/// A Perfetto protobuf trace's sched events as tracefs text, in time
/// order; an error names what the bytes lack.
pub fn to_ftrace_text(bytes: &[u8]) -> Result<String, String> {
    use prost::Message;
    let trace = Trace::decode(bytes).map_err(|e| format!("not a Perfetto trace protobuf: {e}"))?;
    let idle = |cpu: u32| Named { comm: format!("swapper/{cpu}"), pid: 0, prio: 120 };
    // What each CPU runs, as its switches say, across bundles.
    let mut on: std::collections::HashMap<u32, Named> = std::collections::HashMap::new();
    let mut lines = Vec::new();
    for bundle in trace.packet.iter().filter_map(|p| p.ftrace_events.as_ref()) {
        let cpu = bundle.cpu.unwrap_or(0);
        let mut events: Vec<(u64, usize, Option<&FtraceEvent>)> =
            bundle.event.iter().enumerate().map(|(i, e)| (e.timestamp.unwrap_or(0), i, Some(e))).collect();
        // Compact switches and wakings, their timestamps made absolute.
        let mut compact: Vec<(u64, String, Option<Named>)> = Vec::new();
        if let Some(c) = &bundle.compact_sched {
            let comm = |i: Option<&u32>| i.and_then(|&i| c.intern_table.get(i as usize)).cloned().unwrap_or_default();
            let mut ts = 0u64;
            for (k, d) in c.switch_timestamp.iter().enumerate() {
                ts = ts.wrapping_add(*d);
                let next = Named {
                    comm: comm(c.switch_next_comm_index.get(k)),
                    pid: c.switch_next_pid.get(k).copied().unwrap_or(0),
                    prio: c.switch_next_prio.get(k).copied().unwrap_or(120),
                };
                let state = state_letters(c.switch_prev_state.get(k).copied().unwrap_or(0));
                compact.push((ts, state.to_string(), Some(next)));
            }
            let mut ts = 0u64;
            for (k, d) in c.waking_timestamp.iter().enumerate() {
                ts = ts.wrapping_add(*d);
                let pid = c.waking_pid.get(k).copied().unwrap_or(0);
                let text = format!(
                    "sched_waking: comm={} pid={pid} prio={} target_cpu={:03}",
                    comm(c.waking_comm_index.get(k)).replace(' ', "_"),
                    c.waking_prio.get(k).copied().unwrap_or(120),
                    c.waking_target_cpu.get(k).copied().unwrap_or(0)
                );
                compact.push((ts, text, None));
            }
        }
        let first_compact = events.len();
        events.extend(compact.iter().enumerate().map(|(i, (ts, _, _))| (*ts, first_compact + i, None)));
        events.sort_by_key(|&(ts, i, _)| (ts, i));
        for (ts, i, explicit) in events {
            let current = on.get(&cpu).cloned().unwrap_or_else(|| idle(cpu));
            match explicit {
                Some(e) => {
                    let text = match &e.event {
                        Some(Event::SchedSwitch(s)) => {
                            let next = Named {
                                comm: s.next_comm.clone().unwrap_or_default(),
                                pid: s.next_pid.unwrap_or(0),
                                prio: s.next_prio.unwrap_or(120),
                            };
                            let text = format!(
                                "sched_switch: prev_comm={} prev_pid={} prev_prio={} prev_state={} ==> next_comm={} \
                                 next_pid={} next_prio={}",
                                s.prev_comm.clone().unwrap_or_default().replace(' ', "_"),
                                s.prev_pid.unwrap_or(0),
                                s.prev_prio.unwrap_or(120),
                                state_letters(s.prev_state.unwrap_or(0)),
                                next.comm.replace(' ', "_"),
                                next.pid,
                                next.prio
                            );
                            on.insert(cpu, next);
                            text
                        }
                        Some(Event::SchedWaking(w) | Event::SchedWakeup(w) | Event::SchedWakeupNew(w)) => {
                            let name = match &e.event {
                                Some(Event::SchedWaking(_)) => "sched_waking",
                                Some(Event::SchedWakeup(_)) => "sched_wakeup",
                                _ => "sched_wakeup_new",
                            };
                            format!(
                                "{name}: comm={} pid={} prio={} target_cpu={:03}",
                                w.comm.clone().unwrap_or_default().replace(' ', "_"),
                                w.pid.unwrap_or(0),
                                w.prio.unwrap_or(120),
                                w.target_cpu.unwrap_or(0)
                            )
                        }
                        Some(Event::SchedMigrateTask(m)) => format!(
                            "sched_migrate_task: comm={} pid={} prio={} orig_cpu={} dest_cpu={}",
                            m.comm.clone().unwrap_or_default().replace(' ', "_"),
                            m.pid.unwrap_or(0),
                            m.prio.unwrap_or(120),
                            m.orig_cpu.unwrap_or(0),
                            m.dest_cpu.unwrap_or(0)
                        ),
                        None => continue,
                    };
                    lines.push(line(ts, cpu, &current, &text));
                }
                None => {
                    let (_, text, next) = &compact[i - first_compact];
                    match next {
                        Some(next) => {
                            let text = format!(
                                "sched_switch: prev_comm={} prev_pid={} prev_prio={} prev_state={text} ==> next_comm={} \
                                 next_pid={} next_prio={}",
                                current.comm.replace(' ', "_"),
                                current.pid,
                                current.prio,
                                next.comm.replace(' ', "_"),
                                next.pid,
                                next.prio
                            );
                            lines.push(line(ts, cpu, &current, &text));
                            on.insert(cpu, next.clone());
                        }
                        None => lines.push(line(ts, cpu, &current, text)),
                    }
                }
            }
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
