//! The scheduler events of the kernel's ftrace text output (the `trace`
//! file of tracefs, as `cat /sys/kernel/tracing/trace` prints it):
//! sched_switch, sched_wakeup, sched_wakeup_new, sched_waking and
//! sched_migrate_task, in the field layout of Linux 5.x-6.x
//! (include/trace/events/sched.h).

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

/// Parses one line. Ok(None) for comments, blank lines and other events.
pub fn parse_line(line: &str) -> Result<Option<SchedEvent>, String> {
    let line = line.trim_end();
    if line.trim_start().starts_with('#') || line.trim().is_empty() {
        return Ok(None);
    }
    let Some(ev_at) = line.find(": sched_") else {
        return Ok(None);
    };
    let head = &line[..ev_at];
    let rest = &line[ev_at + 2..];
    let (event, fields) = rest.split_once(": ").ok_or("event name without fields")?;
    let ts_text = head.split_whitespace().last().ok_or("missing timestamp")?;
    let ts = parse_ts(ts_text)?;
    let open = head.rfind('[').ok_or("missing [CPU]")?;
    let close = head[open..].find(']').ok_or("missing ] after CPU")? + open;
    let cpu = num(&head[open + 1..close], "CPU")?;
    let kind = match event {
        "sched_switch" => {
            let (prev, next) = fields.split_once(" ==> ").ok_or("sched_switch without ' ==> '")?;
            SchedEventKind::Switch {
                prev_comm: field(prev, "prev_comm", Some("prev_pid"))?.to_string(),
                prev_pid: num(field(prev, "prev_pid", None)?, "prev_pid")?,
                prev_prio: num(field(prev, "prev_prio", None)?, "prev_prio")?,
                prev_state: field(prev, "prev_state", None)?.to_string(),
                next_comm: field(next, "next_comm", Some("next_pid"))?.to_string(),
                next_pid: num(field(next, "next_pid", None)?, "next_pid")?,
                next_prio: num(field(next, "next_prio", None)?, "next_prio")?,
            }
        }
        "sched_wakeup" | "sched_wakeup_new" | "sched_waking" => {
            let comm = field(fields, "comm", Some("pid"))?.to_string();
            let pid = num(field(fields, "pid", None)?, "pid")?;
            let prio = num(field(fields, "prio", None)?, "prio")?;
            let target_cpu = num(field(fields, "target_cpu", None)?, "target_cpu")?;
            if event == "sched_waking" {
                SchedEventKind::Waking { comm, pid, prio, target_cpu }
            } else {
                SchedEventKind::Wakeup { comm, pid, prio, target_cpu, new: event == "sched_wakeup_new" }
            }
        }
        "sched_migrate_task" => SchedEventKind::Migrate {
            comm: field(fields, "comm", Some("pid"))?.to_string(),
            pid: num(field(fields, "pid", None)?, "pid")?,
            prio: num(field(fields, "prio", None)?, "prio")?,
            orig_cpu: num(field(fields, "orig_cpu", None)?, "orig_cpu")?,
            dest_cpu: num(field(fields, "dest_cpu", None)?, "dest_cpu")?,
        },
        _ => return Ok(None),
    };
    Ok(Some(SchedEvent { ts, cpu, kind }))
}

/// "1234.567890" (seconds, microseconds or nanoseconds after the point).
fn parse_ts(text: &str) -> Result<Nanos, String> {
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
}
