//! trace-cmd's binary trace file, `trace.dat` version 6 as
//! trace-cmd.dat.v6(5) of trace-cmd 3.1 describes it, holding the sched
//! events of a simulated run in the ring-buffer pages Linux's ftrace fills
//! (header_page and header_event of Linux 6.x on x86-64: 4 KiB pages of a
//! 64-bit timestamp and commit, then events of a 32-bit header
//! `type_len:5 time_delta:27`). The event formats are Linux 6.1's
//! sched_switch, sched_waking, sched_wakeup, sched_wakeup_new and
//! sched_migrate_task (comm as a 16-byte array in each), so `trace-cmd
//! report`, KernelShark and libtraceevent read the file as a recording.
//!
//! The file gives each CPU's offset before its pages, so full pages wait in
//! an unnamed temporary file until the run ends (see [`TraceDat`]); memory
//! holds one open page per CPU.

use crate::time::Nanos;

const PAGE: usize = 4096;
/// `u64 timestamp; local_t commit;` on a 64-bit kernel.
const PAGE_HEADER: usize = 16;
const DELTA_BITS: u32 = 27;
const TYPE_TIME_EXTEND: u32 = 30;

const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

const HEADER_EVENT: &str = "# compressed entry header\n\
\ttype_len    :    5 bits\n\
\ttime_delta  :   27 bits\n\
\tarray       :   32 bits\n\
\n\
\tpadding     : type == 29\n\
\ttime_extend : type == 30\n\
\ttime_stamp : type == 31\n\
\tdata max type_len  == 28\n";

const COMMON_FIELDS: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

/// The event ids of this file (a recording takes them from the kernel;
/// here they only have to agree with the formats written).
const SWITCH: u16 = 316;
const WAKING: u16 = 315;
const WAKEUP: u16 = 314;
const WAKEUP_NEW: u16 = 313;
const MIGRATE: u16 = 311;

/// prev_state as sched_switch records it: TASK_REPORT_MAX (0x100) marks a
/// preempted task ("R+"), TASK_INTERRUPTIBLE a sleeping one, EXIT_DEAD an
/// exited one.
pub const STATE_RUNNING: i64 = 0;
pub const STATE_PREEMPTED: i64 = 0x100;
pub const STATE_SLEEPING: i64 = 0x1;
pub const STATE_EXITED: i64 = 0x10;

/// An event's own fields after the common ones, in the order they are
/// written: declaration, size, signed. The offsets follow from the sizes.
type Fields = &'static [(&'static str, usize, bool)];

const SWITCH_FIELDS: Fields = &[
    ("char prev_comm[16]", 16, false),
    ("pid_t prev_pid", 4, true),
    ("int prev_prio", 4, true),
    ("long prev_state", 8, true),
    ("char next_comm[16]", 16, false),
    ("pid_t next_pid", 4, true),
    ("int next_prio", 4, true),
];
const WAKE_FIELDS: Fields =
    &[("char comm[16]", 16, false), ("pid_t pid", 4, true), ("int prio", 4, true), ("int target_cpu", 4, true)];
const MIGRATE_FIELDS: Fields = &[
    ("char comm[16]", 16, false),
    ("pid_t pid", 4, true),
    ("int prio", 4, true),
    ("int orig_cpu", 4, true),
    ("int dest_cpu", 4, true),
];

/// The bytes of an event of these fields, the common ones included.
fn event_size(fields: Fields) -> usize {
    8 + fields.iter().map(|f| f.1).sum::<usize>()
}

fn format(name: &str, id: u16, fields: Fields, print: &str) -> String {
    let mut text = format!("name: {name}\nID: {id}\nformat:\n{COMMON_FIELDS}");
    let mut offset = 8;
    for &(decl, size, signed) in fields {
        text.push_str(&format!("\tfield:{decl};\toffset:{offset};\tsize:{size};\tsigned:{};\n", u8::from(signed)));
        offset += size;
    }
    text + &format!("\nprint fmt: {print}\n")
}

fn sched_formats() -> Vec<String> {
    // Linux 6.1's TP_printk of sched_switch, its TASK_REPORT bits spelled
    // out as the kernel's format file prints them.
    let switch_print = "\"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d \
         next_prio=%d\", REC->prev_comm, REC->prev_pid, REC->prev_prio, (REC->prev_state & ((((0x0000 | 0x0001 | \
         0x0002 | 0x0004 | 0x0008 | 0x0010 | 0x0020 | 0x0040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state & \
         ((((0x0000 | 0x0001 | 0x0002 | 0x0004 | 0x0008 | 0x0010 | 0x0020 | 0x0040) + 1) << 1) - 1), \"|\", { 0x0001, \
         \"S\" }, { 0x0002, \"D\" }, { 0x0004, \"T\" }, { 0x0008, \"t\" }, { 0x0010, \"X\" }, { 0x0020, \"Z\" }, { 0x0040, \
         \"P\" }, { 0x0080, \"I\" }) : \"R\", REC->prev_state & (((0x0000 | 0x0001 | 0x0002 | 0x0004 | 0x0008 | 0x0010 | \
         0x0020 | 0x0040) + 1) << 1) ? \"+\" : \"\", REC->next_comm, REC->next_pid, REC->next_prio";
    let wake_print = "\"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio, REC->target_cpu";
    let migrate_print = "\"comm=%s pid=%d prio=%d orig_cpu=%d dest_cpu=%d\", REC->comm, REC->pid, REC->prio, \
         REC->orig_cpu, REC->dest_cpu";
    vec![
        format("sched_switch", SWITCH, SWITCH_FIELDS, switch_print),
        format("sched_waking", WAKING, WAKE_FIELDS, wake_print),
        format("sched_wakeup", WAKEUP, WAKE_FIELDS, wake_print),
        format("sched_wakeup_new", WAKEUP_NEW, WAKE_FIELDS, wake_print),
        format("sched_migrate_task", MIGRATE, MIGRATE_FIELDS, migrate_print),
    ]
}

/// One CPU's ring buffer: the page being filled, and where its full pages
/// went in the spill file.
#[derive(Default)]
struct CpuPages {
    /// The open page (empty when none is).
    page: Vec<u8>,
    /// The time the last event's delta counts from.
    last: Nanos,
    /// This CPU's full pages, in order: their numbers in the spill file.
    spilled: Vec<u64>,
}

impl CpuPages {
    fn used(&self) -> usize {
        if self.page.is_empty() { PAGE } else { self.page.len() - PAGE_HEADER }
    }

    /// The open page, finished (its commit written, padded to a page).
    fn take_page(&mut self) -> Option<Vec<u8>> {
        if self.page.is_empty() {
            return None;
        }
        let commit = (self.page.len() - PAGE_HEADER) as u64;
        self.page[8..16].copy_from_slice(&commit.to_le_bytes());
        self.page.resize(PAGE, 0);
        Some(std::mem::take(&mut self.page))
    }

    /// Appends an event at `ts`; the page it filled, if it opened another.
    fn push(&mut self, ts: Nanos, payload: &[u8]) -> Option<Vec<u8>> {
        let len = payload.len().div_ceil(4) * 4;
        let delta = ts.saturating_sub(self.last);
        let extend = if delta >> DELTA_BITS != 0 { 8 } else { 0 };
        let mut full = None;
        if self.page.is_empty() || self.used() + extend + 4 + len > PAGE - PAGE_HEADER {
            full = self.take_page();
            // A new page counts from its own timestamp.
            self.page.reserve(PAGE);
            self.page.extend_from_slice(&ts.to_le_bytes());
            self.page.extend_from_slice(&0u64.to_le_bytes());
            self.last = ts;
        }
        let mut delta = ts - self.last;
        if delta >> DELTA_BITS != 0 {
            let head = TYPE_TIME_EXTEND | (((delta & ((1 << DELTA_BITS) - 1)) as u32) << 5);
            self.page.extend_from_slice(&head.to_le_bytes());
            self.page.extend_from_slice(&((delta >> DELTA_BITS) as u32).to_le_bytes());
            delta = 0;
        }
        let head = (len / 4) as u32 | ((delta as u32) << 5);
        self.page.extend_from_slice(&head.to_le_bytes());
        self.page.extend_from_slice(payload);
        self.page.resize(self.page.len() + len - payload.len(), 0);
        self.last = ts;
        full
    }
}

/// A comm as the kernel stores it: at most 15 bytes and a NUL.
fn comm16(comm: &str) -> [u8; 16] {
    let mut out = [0u8; 16];
    let bytes = comm.as_bytes();
    let n = bytes.len().min(15);
    out[..n].copy_from_slice(&bytes[..n]);
    out
}

fn common(id: u16, pid: u32) -> Vec<u8> {
    let mut v = Vec::with_capacity(64);
    v.extend_from_slice(&id.to_le_bytes());
    v.extend_from_slice(&[0, 0]);
    v.extend_from_slice(&(pid as i32).to_le_bytes());
    v
}

/// A side of a switch or the subject of a wakeup: comm, pid, prio.
pub struct Who<'a> {
    pub comm: &'a str,
    pub pid: u32,
    pub prio: i32,
}

/// The sched events of a run as ring-buffer pages per CPU. The file gives
/// each CPU's offset before its pages, and the CPUs' events come
/// interleaved, so full pages wait in an unnamed temporary file (gone with
/// the process however it ends) and memory holds one open page per CPU.
pub struct TraceDat {
    cpus: Vec<CpuPages>,
    comms: std::collections::BTreeMap<u32, String>,
    spill: Option<std::fs::File>,
    spilled: u64,
    /// The first failure to spill a page, returned by `write`.
    error: Option<std::io::Error>,
}

impl TraceDat {
    pub fn new(nr_cpus: u32) -> TraceDat {
        TraceDat {
            cpus: (0..nr_cpus).map(|_| CpuPages::default()).collect(),
            comms: Default::default(),
            spill: None,
            spilled: 0,
            error: None,
        }
    }

    fn push(&mut self, cpu: u32, ts: Nanos, payload: &[u8]) {
        if let Some(full) = self.cpus[cpu as usize].push(ts, payload) {
            self.spill_page(cpu, &full);
        }
    }

    fn spill_page(&mut self, cpu: u32, page: &[u8]) {
        use std::io::Write;
        if self.error.is_some() {
            return;
        }
        let file = match self.spill.take() {
            Some(f) => Ok(f),
            None => tempfile::tempfile(),
        };
        match file.and_then(|mut f| f.write_all(page).map(|()| f)) {
            Ok(f) => {
                self.spill = Some(f);
                self.cpus[cpu as usize].spilled.push(self.spilled);
                self.spilled += 1;
            }
            Err(e) => self.error = Some(e),
        }
    }

    fn name(&mut self, who: &Who) {
        if who.pid != 0 && !self.comms.contains_key(&who.pid) {
            self.comms.insert(who.pid, who.comm.to_string());
        }
    }

    /// sched_switch on `cpu`, from `prev` (in `prev_state`) to `next`.
    pub fn switch(&mut self, now: Nanos, cpu: u32, prev: Who, prev_state: i64, next: Who) {
        self.name(&prev);
        self.name(&next);
        let mut e = common(SWITCH, prev.pid);
        e.extend_from_slice(&comm16(prev.comm));
        e.extend_from_slice(&(prev.pid as i32).to_le_bytes());
        e.extend_from_slice(&prev.prio.to_le_bytes());
        e.extend_from_slice(&prev_state.to_le_bytes());
        e.extend_from_slice(&comm16(next.comm));
        e.extend_from_slice(&(next.pid as i32).to_le_bytes());
        e.extend_from_slice(&next.prio.to_le_bytes());
        debug_assert_eq!(e.len(), event_size(SWITCH_FIELDS));
        self.push(cpu, now, &e);
    }

    /// sched_waking then sched_wakeup (or sched_wakeup_new alone) of
    /// `task`, recorded on `cpu` while `running` (pid) runs there.
    pub fn wakeup(&mut self, now: Nanos, cpu: u32, running: u32, task: Who, new: bool) {
        self.name(&task);
        let ids: &[u16] = if new { &[WAKEUP_NEW] } else { &[WAKING, WAKEUP] };
        for &id in ids {
            let mut e = common(id, running);
            e.extend_from_slice(&comm16(task.comm));
            e.extend_from_slice(&(task.pid as i32).to_le_bytes());
            e.extend_from_slice(&task.prio.to_le_bytes());
            e.extend_from_slice(&(cpu as i32).to_le_bytes());
            debug_assert_eq!(e.len(), event_size(WAKE_FIELDS));
            self.push(cpu, now, &e);
        }
    }

    /// sched_migrate_task of `task` from `from` to `to`, recorded on `from`.
    pub fn migrate(&mut self, now: Nanos, running: u32, task: Who, from: u32, to: u32) {
        self.name(&task);
        let mut e = common(MIGRATE, running);
        e.extend_from_slice(&comm16(task.comm));
        e.extend_from_slice(&(task.pid as i32).to_le_bytes());
        e.extend_from_slice(&task.prio.to_le_bytes());
        e.extend_from_slice(&(from as i32).to_le_bytes());
        e.extend_from_slice(&(to as i32).to_le_bytes());
        debug_assert_eq!(e.len(), event_size(MIGRATE_FIELDS));
        self.push(from, now, &e);
    }

    /// The whole file.
    pub fn write(mut self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let mut head = Vec::new();
        head.extend_from_slice(&[0x17, 0x08, 0x44]);
        head.extend_from_slice(b"tracing6\0");
        head.push(0); // little endian
        head.push(8); // long
        head.extend_from_slice(&(PAGE as u32).to_le_bytes());
        for (name, text) in [("header_page", HEADER_PAGE), ("header_event", HEADER_EVENT)] {
            head.extend_from_slice(name.as_bytes());
            head.push(0);
            head.extend_from_slice(&(text.len() as u64).to_le_bytes());
            head.extend_from_slice(text.as_bytes());
        }
        head.extend_from_slice(&0u32.to_le_bytes()); // no ftrace (function tracer) formats
        head.extend_from_slice(&1u32.to_le_bytes());
        head.extend_from_slice(b"sched\0");
        let formats = sched_formats();
        head.extend_from_slice(&(formats.len() as u32).to_le_bytes());
        for f in &formats {
            head.extend_from_slice(&(f.len() as u64).to_le_bytes());
            head.extend_from_slice(f.as_bytes());
        }
        head.extend_from_slice(&0u32.to_le_bytes()); // kallsyms
        head.extend_from_slice(&0u32.to_le_bytes()); // printk formats
        let cmdlines: String = self.comms.iter().map(|(pid, c)| format!("{pid} {c}\n")).collect();
        head.extend_from_slice(&(cmdlines.len() as u64).to_le_bytes());
        head.extend_from_slice(cmdlines.as_bytes());
        head.extend_from_slice(&(self.cpus.len() as u32).to_le_bytes());
        head.extend_from_slice(b"flyrecord\0");
        for cpu in 0..self.cpus.len() as u32 {
            if let Some(page) = self.cpus[cpu as usize].take_page() {
                self.spill_page(cpu, &page);
            }
        }
        if let Some(e) = self.error.take() {
            return Err(std::io::Error::new(e.kind(), format!("keeping the trace's pages in a temporary file: {e}")));
        }
        // Each CPU's pages start on a page boundary of the file.
        let mut offset = (head.len() + 16 * self.cpus.len()).div_ceil(PAGE) * PAGE;
        for c in &self.cpus {
            let bytes = c.spilled.len() * PAGE;
            head.extend_from_slice(&(offset as u64).to_le_bytes());
            head.extend_from_slice(&(bytes as u64).to_le_bytes());
            offset += bytes;
        }
        head.resize(head.len().div_ceil(PAGE) * PAGE, 0);
        out.write_all(&head)?;
        let mut page = vec![0u8; PAGE];
        for c in &self.cpus {
            for &n in &c.spilled {
                use std::os::unix::fs::FileExt;
                let spill = self.spill.as_ref().expect("a spilled page has its file");
                spill.read_exact_at(&mut page, n * PAGE as u64)?;
                out.write_all(&page)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gap_over_27_bits_of_nanoseconds_is_a_time_extend() {
        let mut cpu = CpuPages::default();
        assert!(cpu.push(1_000, &[1, 2, 3, 4]).is_none());
        assert!(cpu.push(1_000 + (1 << 27) + 5, &[5, 6, 7, 8]).is_none());
        let page = cpu.take_page().unwrap();
        let word = |at: usize| u32::from_le_bytes(page[at..at + 4].try_into().unwrap());
        // First event: type_len 1, delta 0 from the page's timestamp.
        assert_eq!(word(PAGE_HEADER), 1);
        // Then a time extend of the delta's low 27 bits and the rest.
        assert_eq!(word(PAGE_HEADER + 8) & 31, TYPE_TIME_EXTEND);
        assert_eq!(word(PAGE_HEADER + 8) >> 5, 5);
        assert_eq!(word(PAGE_HEADER + 12), 1);
        assert_eq!(word(PAGE_HEADER + 16), 1);
        assert_eq!(page.len(), PAGE);
        assert_eq!(u64::from_le_bytes(page[8..16].try_into().unwrap()), 24);
    }

    #[test]
    fn a_full_page_opens_the_next_at_the_event_s_time() {
        let mut cpu = CpuPages::default();
        // 36-byte events (a wakeup's) take 40 bytes: 102 fill 4,080.
        let full: Vec<Vec<u8>> = (0..103u64).filter_map(|i| cpu.push(i, &[0u8; 36])).collect();
        assert_eq!(full.len(), 1);
        assert_eq!(u64::from_le_bytes(full[0][8..16].try_into().unwrap()), 4080);
        assert_eq!(u64::from_le_bytes(cpu.take_page().unwrap()[..8].try_into().unwrap()), 102);
    }

    #[test]
    fn each_cpu_s_pages_come_out_together_and_in_order() {
        // Two CPUs' events interleaved over many pages: the file holds CPU
        // 0's pages, then CPU 1's, each in the order they were filled.
        let mut dat = TraceDat::new(2);
        let who = Who { comm: "t", pid: 7, prio: 120 };
        for i in 0..1_000u64 {
            dat.wakeup(i * 10, (i % 2) as u32, 0, Who { ..who }, true);
        }
        let mut file = Vec::new();
        dat.write(&mut file).unwrap();
        let at = |o: usize| u64::from_le_bytes(file[o..o + 8].try_into().unwrap());
        let table = file.windows(10).position(|w| w == b"flyrecord\0").unwrap() + 10;
        let (off0, len0, off1, len1) = (at(table), at(table + 8), at(table + 16), at(table + 24));
        // 500 events of 40 bytes a CPU: 102 a page, 5 pages each.
        assert_eq!((len0, len1), (5 * PAGE as u64, 5 * PAGE as u64));
        assert_eq!(off1, off0 + len0);
        for (off, first_ts) in [(off0 as usize, 0), (off1 as usize, 10)] {
            let stamps: Vec<u64> = (0..5).map(|p| at(off + p * PAGE)).collect();
            // Each page starts at its first event's time: 102 events of 20 ns.
            assert_eq!(stamps, (0..5).map(|p| first_ts + p * 102 * 20).collect::<Vec<_>>());
        }
    }
}
