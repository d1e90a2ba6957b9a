//! The scheduler events of a kernel trace as text: sched_switch,
//! sched_wakeup, sched_wakeup_new, sched_waking, sched_migrate_task and
//! sched_process_exec, in the field layout of Linux 5.x-6.x
//! (include/trace/events/sched.h), as the tools people have print them:
//!
//! - tracefs's `trace` file: `comm-pid [cpu] flags ts: sched_switch: prev_comm=...`
//! - `perf script` (5.x and 6.x): `comm pid [cpu] ts:   sched:sched_switch: prev_comm=...`,
//!   the event name padded with a varying number of spaces;
//! - `trace-cmd report`: libtraceevent's sched plugin forms
//!   `prev:pid [prio] S ==> next:pid [prio]` and `comm:pid [prio] CPU:001`
//!   (older: `success=1 CPU:001`), other events in the format's fields, and
//!   an `instance:` prefix for events of a tracefs instance;
//! - `trace-cmd report -R`: the raw fields, prev_state as the kernel's
//!   number (0 running, 0x100 preempted, else the sleep state's bit).
//!
//! sched_process_fork and sched_process_exit are read too: they tell which
//! tasks a program created and when each ended (a guest's trace of a real
//! program, `report::recorded`). With tracefs's `record-tgid` option each
//! line carries its task's thread group, `comm-pid (tgid) [cpu]`, which
//! [`line_context`] reads.

use crate::time::Nanos;

#[derive(Clone, Debug, PartialEq)]
pub enum SchedEventKind {
    Switch {
        prev_comm: String,
        prev_pid: u32,
        prev_prio: i32,
        prev_state: String,
        next_comm: String,
        next_pid: u32,
        next_prio: i32,
    },
    Wakeup {
        comm: String,
        pid: u32,
        prio: i32,
        target_cpu: u32,
        new: bool,
    },
    Waking {
        comm: String,
        pid: u32,
        prio: i32,
        target_cpu: u32,
    },
    Migrate {
        comm: String,
        pid: u32,
        prio: i32,
        orig_cpu: u32,
        dest_cpu: u32,
    },
    /// A task called exec: from here on its comm is the file's base name.
    Exec {
        pid: u32,
        filename: String,
    },
    /// `parent_pid` created `child_pid` (a process or a thread).
    Fork {
        parent_pid: u32,
        child_comm: String,
        child_pid: u32,
    },
    /// A task began to exit (do_exit): it runs a little longer, then
    /// switches out for the last time.
    Exit {
        pid: u32,
    },
}

impl SchedEventKind {
    /// The comm an exec of `filename` gives a task: the base name, cut to
    /// TASK_COMM_LEN - 1 bytes, as __set_task_comm(kbasename(...)) does.
    pub fn comm_after_exec(filename: &str) -> String {
        let base = filename.rsplit('/').next().unwrap_or(filename);
        let mut end = base.len().min(15);
        while !base.is_char_boundary(end) {
            end -= 1;
        }
        base[..end].to_string()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct SchedEvent {
    pub ts: Nanos,
    pub cpu: u32,
    pub kind: SchedEventKind,
}

/// Finds `key=` followed by its value, which runs to the next known key.
fn field<'a>(text: &'a str, key: &str, next: Option<&str>) -> Result<&'a str, String> {
    let pat = format!("{key}=");
    let start = find_key(text, &pat).ok_or_else(|| format!("missing field {key}"))? + pat.len();
    let rest = &text[start..];
    let end = match next {
        Some(n) => find_key(rest, &format!(" {n}=")).ok_or_else(|| format!("missing field {n}"))?,
        None => rest.find(' ').unwrap_or(rest.len()),
    };
    Ok(rest[..end].trim())
}

/// Position of `pat` at the start of the text or after a space.
fn find_key(text: &str, pat: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(pat) {
        let at = from + i;
        if at == 0 || text.as_bytes()[at - 1] == b' ' || pat.starts_with(' ') {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

fn num<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, String> {
    s.trim().parse().map_err(|_| format!("{what} '{s}' is not a number"))
}

/// Where the event name starts: the first `sched_NAME:` after the CPU
/// bracket and the timestamp's colon (perf writes `sched:sched_NAME:`).
fn find_event(line: &str) -> Option<usize> {
    let bracket = line.find('[')?;
    let mut from = bracket;
    while let Some(i) = line[from..].find("sched_") {
        let at = from + i;
        let before = line[..at].trim_end_matches("sched:").trim_end();
        let name_end = line[at..].find(':').map(|e| at + e);
        if before.ends_with(':')
            && name_end.is_some_and(|e| line[at..e].bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
        {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// prev_state as `trace-cmd report -R` prints it: the kernel's number.
/// Running with no sleep bit (0, or TASK_REPORT_MAX for a preempted task
/// in 4.14+) is runnable; otherwise the lowest bit names the sleep state.
fn state_from_number(v: u64) -> String {
    if v & 0xff == 0 {
        return if v == 0 { "R" } else { "R+" }.into();
    }
    let letters = ["S", "D", "T", "t", "X", "Z", "P", "I"];
    letters[(v & 0xff).trailing_zeros() as usize].into()
}

/// "comm:pid [prio]" of trace-cmd's sched plugin; the comm may hold ':'
/// and spaces, so it is read from the right.
fn comm_pid_prio(text: &str) -> Result<(String, u32, i32), String> {
    let text = text.trim();
    let open = text.rfind('[').ok_or("missing [PRIO]")?;
    let close = text[open..].find(']').ok_or("missing ] after PRIO")? + open;
    let prio = num(&text[open + 1..close], "prio")?;
    let (comm, pid) = text[..open].trim_end().rsplit_once(':').ok_or("missing COMM:PID")?;
    Ok((comm.to_string(), num(pid, "pid")?, prio))
}

fn switch_fields(fields: &str) -> Result<SchedEventKind, String> {
    let (prev, next) = match fields.split_once(" ==> ") {
        Some(halves) => halves,
        // trace-cmd report -R prints the fields with no arrow.
        None => fields.split_at(find_key(fields, "next_comm=").ok_or("sched_switch without ' ==> ' or next_comm=")?),
    };
    if !prev.contains("prev_comm=") {
        // trace-cmd's plugin: "prev:pid [prio] S ==> next:pid [prio]".
        let (state_at, _) =
            prev.trim_end().char_indices().rev().find(|(_, c)| *c == ' ').ok_or("missing prev state")?;
        let (prev_comm, prev_pid, prev_prio) = comm_pid_prio(&prev[..state_at])?;
        let (next_comm, next_pid, next_prio) = comm_pid_prio(next)?;
        let prev_state = prev[state_at..].trim().to_string();
        return Ok(SchedEventKind::Switch {
            prev_comm,
            prev_pid,
            prev_prio,
            prev_state,
            next_comm,
            next_pid,
            next_prio,
        });
    }
    let state = field(prev, "prev_state", None)?;
    let prev_state = match state.parse::<u64>() {
        Ok(v) => state_from_number(v),
        Err(_) => state.to_string(),
    };
    Ok(SchedEventKind::Switch {
        prev_comm: field(prev, "prev_comm", Some("prev_pid"))?.to_string(),
        prev_pid: num(field(prev, "prev_pid", None)?, "prev_pid")?,
        prev_prio: num(field(prev, "prev_prio", None)?, "prev_prio")?,
        prev_state,
        next_comm: field(next, "next_comm", Some("next_pid"))?.to_string(),
        next_pid: num(field(next, "next_pid", None)?, "next_pid")?,
        next_prio: num(field(next, "next_prio", None)?, "next_prio")?,
    })
}

fn wakeup_fields(event: &str, fields: &str) -> Result<SchedEventKind, String> {
    let (comm, pid, prio, target_cpu) = if fields.contains("comm=") {
        (
            field(fields, "comm", Some("pid"))?.to_string(),
            num(field(fields, "pid", None)?, "pid")?,
            num(field(fields, "prio", None)?, "prio")?,
            num(field(fields, "target_cpu", None)?, "target_cpu")?,
        )
    } else {
        // trace-cmd's plugin: "comm:pid [prio] CPU:001", older kernels
        // with "success=1" before the CPU.
        let cpu_at = fields.rfind("CPU:").ok_or("missing CPU:")?;
        let head = fields[..cpu_at].trim_end();
        let head = head.strip_suffix("success=1").or_else(|| head.strip_suffix("success=0")).unwrap_or(head);
        let (comm, pid, prio) = comm_pid_prio(head)?;
        (comm, pid, prio, num(&fields[cpu_at + 4..], "target CPU")?)
    };
    Ok(if event == "sched_waking" {
        SchedEventKind::Waking { comm, pid, prio, target_cpu }
    } else {
        SchedEventKind::Wakeup { comm, pid, prio, target_cpu, new: event == "sched_wakeup_new" }
    })
}

/// Parses one line. Ok(None) for comments, blank lines and other events.
pub fn parse_line(line: &str) -> Result<Option<SchedEvent>, String> {
    let line = line.trim_end();
    if line.trim_start().starts_with('#') || line.trim().is_empty() {
        return Ok(None);
    }
    let Some(ev_at) = find_event(line) else {
        return Ok(None);
    };
    let head = line[..ev_at].trim_end_matches("sched:").trim_end().trim_end_matches(':');
    let (event, fields) = line[ev_at..].split_once(':').ok_or("event name without fields")?;
    let fields = fields.trim();
    let ts_text = head.split_whitespace().last().ok_or("missing timestamp")?;
    let ts = parse_ts(ts_text)?;
    let open = head.rfind('[').ok_or("missing [CPU]")?;
    let close = head[open..].find(']').ok_or("missing ] after CPU")? + open;
    let cpu = num(&head[open + 1..close], "CPU")?;
    let kind = match event {
        "sched_switch" => switch_fields(fields)?,
        "sched_wakeup" | "sched_wakeup_new" | "sched_waking" => wakeup_fields(event, fields)?,
        "sched_migrate_task" => SchedEventKind::Migrate {
            comm: field(fields, "comm", Some("pid"))?.to_string(),
            pid: num(field(fields, "pid", None)?, "pid")?,
            prio: num(field(fields, "prio", None)?, "prio")?,
            orig_cpu: num(field(fields, "orig_cpu", None)?, "orig_cpu")?,
            dest_cpu: num(field(fields, "dest_cpu", None)?, "dest_cpu")?,
        },
        "sched_process_exec" => SchedEventKind::Exec {
            filename: field(fields, "filename", Some("pid"))?.to_string(),
            pid: num(field(fields, "pid", None)?, "pid")?,
        },
        "sched_process_fork" => SchedEventKind::Fork {
            parent_pid: num(field(fields, "pid", None)?, "pid")?,
            child_comm: field(fields, "child_comm", Some("child_pid"))?.to_string(),
            child_pid: num(field(fields, "child_pid", None)?, "child_pid")?,
        },
        "sched_process_exit" => SchedEventKind::Exit { pid: num(field(fields, "pid", None)?, "pid")? },
        _ => return Ok(None),
    };
    Ok(Some(SchedEvent { ts, cpu, kind }))
}

/// The task in whose context a line was printed, as tracefs (`comm-pid`)
/// or perf (`comm pid`) heads it, and its thread group where the line
/// carries one (tracefs's record-tgid option: `comm-pid (tgid) [cpu]`;
/// `(-------)` when the kernel had not seen the group).
pub fn line_context(line: &str) -> Option<(u32, Option<u32>)> {
    let head = &line[..line.find('[')?];
    let (head, tgid) = match head.trim_end().strip_suffix(')').and_then(|h| h.rsplit_once('(')) {
        Some((before, tgid)) => (before, tgid.trim().parse().ok()),
        None => (head, None),
    };
    let last = head.split_whitespace().last()?;
    let pid = last.rsplit('-').next().unwrap_or(last);
    Some((pid.parse().ok()?, tgid))
}

/// "1234.567890" (seconds, microseconds or nanoseconds after the point):
/// the time ftrace heads its lines with, in ns.
pub fn parse_ts(text: &str) -> Result<Nanos, String> {
    let (secs, frac) = text.split_once('.').ok_or_else(|| format!("timestamp '{text}' has no decimal point"))?;
    let secs: u64 = num(secs, "timestamp")?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("timestamp '{text}' is not SECONDS.FRACTION"));
    }
    let frac_ns: u64 = num::<u64>(frac, "timestamp")? * 10u64.pow(9 - frac.len() as u32);
    secs.checked_mul(1_000_000_000)
        .and_then(|ns| ns.checked_add(frac_ns))
        .ok_or_else(|| format!("timestamp '{text}' is beyond 584 years of nanoseconds"))
}

/// Parses a whole trace; an error names the line.
pub fn parse(text: &str) -> Result<Vec<SchedEvent>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match parse_line(line) {
            Ok(Some(ev)) => out.push(ev),
            Ok(None) => {}
            Err(e) => return Err(format!("line {}: {e}: {line}", i + 1)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kernel_layout() {
        let sw = "          <idle>-0       [001] d..2.  1234.567890: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=Web Content next_pid=3768 next_prio=120";
        let ev = parse_line(sw).unwrap().unwrap();
        assert_eq!(ev.ts, 1_234_567_890_000);
        assert_eq!(ev.cpu, 1);
        match ev.kind {
            SchedEventKind::Switch { next_comm, next_pid, prev_state, .. } => {
                assert_eq!(next_comm, "Web Content");
                assert_eq!(next_pid, 3768);
                assert_eq!(prev_state, "R");
            }
            other => panic!("{other:?}"),
        }
        let wk =
            "   spin-3768    [000] d.h2.  12.000001: sched_wakeup: comm=kworker/1:1 pid=45 prio=120 target_cpu=001";
        assert!(matches!(parse_line(wk).unwrap().unwrap().kind, SchedEventKind::Wakeup { pid: 45, target_cpu: 1, .. }));
        let mg = "  x-1 [000] d..2. 1.5: sched_migrate_task: comm=spin pid=7 prio=120 orig_cpu=0 dest_cpu=1";
        assert!(matches!(parse_line(mg).unwrap().unwrap().kind, SchedEventKind::Migrate { pid: 7, dest_cpu: 1, .. }));
        let far = "  x-1 [000] d..2. 99999999999999.5: sched_migrate_task: comm=a pid=7 prio=1 orig_cpu=0 dest_cpu=1";
        assert!(parse_line(far).unwrap_err().contains("beyond"));
        assert_eq!(parse_line("# tracer: nop").unwrap(), None);
        assert_eq!(parse_line("  x-1 [000] d..2. 1.5: irq_handler_entry: irq=1").unwrap(), None);
    }

    #[test]
    fn truncated_lines_are_errors_with_the_line_number() {
        let text = "# tracer: nop\n  x-1 [000] d..2. 1.5: sched_switch: prev_comm=a prev_pid=1\n";
        let err = parse(text).unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
    }

    #[test]
    fn reads_perf_and_trace_cmd_forms() {
        let perf = "     migration/0    18 [000]  4542.620313: sched:sched_migrate_task: comm=perf pid=26253 prio=120 orig_cpu=0 dest_cpu=1";
        assert!(matches!(
            parse_line(perf).unwrap().unwrap().kind,
            SchedEventKind::Migrate { pid: 26253, dest_cpu: 1, .. }
        ));
        let padded = "  perf 26253 [000]  4542.620305:       sched:sched_switch: prev_comm=perf prev_pid=26253 prev_prio=120 prev_state=D ==> next_comm=migration/0 next_pid=18 next_prio=0";
        assert!(matches!(
            parse_line(padded).unwrap().unwrap().kind,
            SchedEventKind::Switch { prev_pid: 26253, next_pid: 18, .. }
        ));
        // trace-cmd's plugin form; a comm with a space and a colon.
        let plugin =
            "inst:  a-1 [001]  1.000001: sched_switch:         Web Content:7:3768 [120] R+ ==> kworker/1:2:45 [120]";
        let SchedEventKind::Switch { prev_comm, prev_pid, prev_state, next_comm, next_pid, .. } =
            parse_line(plugin).unwrap().unwrap().kind
        else {
            panic!("not a switch")
        };
        assert_eq!((prev_comm.as_str(), prev_pid, prev_state.as_str()), ("Web Content:7", 3768, "R+"));
        assert_eq!((next_comm.as_str(), next_pid), ("kworker/1:2", 45));
        let wakeup = "  sh-2 [001]  4562.092899: sched_wakeup:         migration/1:21 [0] CPU:001";
        assert!(matches!(
            parse_line(wakeup).unwrap().unwrap().kind,
            SchedEventKind::Wakeup { pid: 21, prio: 0, target_cpu: 1, new: false, .. }
        ));
        let old = "  sh-2 [001]  9.5: sched_wakeup_new: bash:26382 [120] success=1 CPU:003";
        assert!(matches!(
            parse_line(old).unwrap().unwrap().kind,
            SchedEventKind::Wakeup { pid: 26382, target_cpu: 3, new: true, .. }
        ));
        // trace-cmd report -R: no arrow, prev_state a number.
        for (state, want) in [(0, "R"), (256, "R+"), (1, "S"), (2, "D"), (128, "I"), (257, "S")] {
            let raw = format!(
                "  b-1 [001] 2.5: sched_switch:  prev_comm=b prev_pid=1 prev_prio=120 prev_state={state} next_comm=c next_pid=2 next_prio=120"
            );
            let SchedEventKind::Switch { prev_state, next_pid: 2, .. } = parse_line(&raw).unwrap().unwrap().kind else {
                panic!()
            };
            assert_eq!(prev_state, want, "prev_state={state}");
        }
        let exec = "  sh-9 [000] 3.0: sched_process_exec: filename=/usr/bin/a-very-long-program-name pid=9 old_pid=9";
        let SchedEventKind::Exec { pid: 9, filename } = parse_line(exec).unwrap().unwrap().kind else { panic!() };
        assert_eq!(SchedEventKind::comm_after_exec(&filename), "a-very-long-pro");
        assert_eq!(parse_line("cpus=2").unwrap(), None);
        assert_eq!(parse_line("sched_switch: not an event line").unwrap(), None);
    }

    #[test]
    fn reads_fork_exit_and_the_thread_group_of_a_line() {
        let fork = "  stress-ng-51  (     51) [001] ..... 3.1: sched_process_fork: comm=stress-ng pid=51 \
                    child_comm=stress-ng child_pid=52";
        let ev = parse_line(fork).unwrap().unwrap();
        assert_eq!(ev.kind, SchedEventKind::Fork { parent_pid: 51, child_comm: "stress-ng".into(), child_pid: 52 });
        assert_eq!(line_context(fork), Some((51, Some(51))));
        let exit = "  cyclictest-60  (     58) [000] ..... 4.2: sched_process_exit: comm=cyclictest pid=60 prio=120";
        assert_eq!(parse_line(exit).unwrap().unwrap().kind, SchedEventKind::Exit { pid: 60 });
        assert_eq!(line_context(exit), Some((60, Some(58))));
        let unknown = "  <idle>-0  (-------) [000] d..2. 4.3: sched_switch: prev_comm=swapper/0 prev_pid=0 \
                       prev_prio=120 prev_state=R ==> next_comm=a next_pid=9 next_prio=120";
        assert_eq!(line_context(unknown), Some((0, None)));
        assert_eq!(line_context("  perf 26253 [000]  4542.620305: sched:sched_switch: x"), Some((26253, None)));
        assert_eq!(line_context("  Web Content-3768 [001] 1.0: x"), Some((3768, None)));
    }
}
