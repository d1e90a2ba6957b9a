//! Memory: what this process may still take ([`available`], so that an
//! input too big to read is refused with a message before an allocation
//! fails and aborts), and the heap use of a run, for `schedlab bench`'s
//! bytes per task and the fuzz test's bound on what a workload file can
//! make a run allocate: the system allocator, counting live bytes and
//! their peak. A binary that wants the figures installs it:
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: schedlab_sim::memory::CountingAllocator = schedlab_sim::memory::CountingAllocator;
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

pub struct CountingAllocator;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; the
// counters are only statistics.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as the caller promised for this layout.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as the caller promised.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as the caller promised.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let now = LIVE.fetch_add(new_size - layout.size(), Relaxed) + new_size - layout.size();
                PEAK.fetch_max(now, Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Relaxed);
            }
        }
        p
    }
}

/// What `f` returns, and the most heap it held at once beyond what was
/// live when it started (0 unless [`CountingAllocator`] is installed).
/// Allocations of other threads meanwhile count too: measure on a quiet
/// process.
pub fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.load(Relaxed);
    PEAK.store(base, Relaxed);
    let out = f();
    (out, PEAK.load(Relaxed).saturating_sub(base))
}

/// The bytes this process may still allocate, as far as Linux says, and
/// what bounds it: the least of MemAvailable, `ulimit -v` and `ulimit -d`
/// beyond what the process already holds, and its memory cgroup's limit
/// beyond its usage (v1 and v2). None where none of them can be read.
pub fn available() -> Option<(u64, &'static str)> {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let kib_field = |text: &str, key: &str| -> Option<u64> {
        let line = text.lines().find_map(|l| l.strip_prefix(key))?;
        line.split_whitespace().next()?.parse::<u64>().ok().map(|k| k * 1024)
    };
    let mut bounds: Vec<(u64, &'static str)> = Vec::new();
    if let Some(v) = read("/proc/meminfo").and_then(|m| kib_field(&m, "MemAvailable:")) {
        bounds.push((v, "the machine's available memory"));
    }
    let status = read("/proc/self/status").unwrap_or_default();
    if let Some(limits) = read("/proc/self/limits") {
        for (key, held, what) in
            [("Max address space", "VmSize:", "ulimit -v"), ("Max data size", "VmData:", "ulimit -d")]
        {
            let soft = limits.lines().find_map(|l| l.strip_prefix(key)).and_then(|l| l.split_whitespace().next());
            if let Some(limit) = soft.and_then(|v| v.parse::<u64>().ok()) {
                bounds.push((limit.saturating_sub(kib_field(&status, held).unwrap_or(0)), what));
            }
        }
    }
    for line in read("/proc/self/cgroup").unwrap_or_default().lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next(), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let files = if controllers == "memory" {
            Some((
                format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes"),
                format!("/sys/fs/cgroup/memory{path}/memory.usage_in_bytes"),
            ))
        } else if controllers.is_empty() {
            Some((format!("/sys/fs/cgroup{path}/memory.max"), format!("/sys/fs/cgroup{path}/memory.current")))
        } else {
            None
        };
        if let Some((limit, usage)) = files
            && let Some(limit) = read(&limit).and_then(|v| v.trim().parse::<u64>().ok())
        {
            let usage = read(&usage).and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(0);
            bounds.push((limit.saturating_sub(usage), "the memory cgroup's limit"));
        }
    }
    bounds.into_iter().min_by_key(|b| b.0)
}
