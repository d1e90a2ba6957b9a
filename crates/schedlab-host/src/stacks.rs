//! Task threads on stacks mapped before the run.
//!
//! A thread from `std::thread` maps its stack and guard page when it is
//! created (glibc's allocate_stack: mmap and mprotect), maps and unmaps a
//! signal stack of its own (Rust's stack-overflow handler: mmap, mprotect
//! and munmap in the new thread), faults its stack pages in on first touch,
//! and may give the stack back with madvise when it exits. All of that
//! takes the process's mmap lock, and every thread exit takes it too
//! (exit_mm). In a TCG guest those calls are slow enough that a burst of
//! forks queues on the lock: traced in the scx-6.12 guest (Linux 6.12.117,
//! EEVDF) with a stacktrace trigger on sched_switch, 200 children forked
//! 50 us apart blocked 150 times on it (the parent in mmap, mprotect and
//! stack faults; the children in their signal stack's mmap and munmap and
//! in do_exit) where the workload itself never sleeps, and the
//! scheduler's figures measured those waits.
//!
//! So a task thread is a pthread on a stack from a pool mapped and touched
//! before t0 (pthread_attr_setstack: glibc then maps nothing, puts its
//! thread block at the stack's top and never unmaps it), with no signal
//! stack; a stack comes back to the pool when its thread has been joined.
//! A fork that finds the pool empty after reaping the threads that ended
//! maps a new stack, taking the lock as before.

use std::io;
use std::ptr::NonNull;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Stack of a task thread: the programs recurse nowhere.
pub(crate) const TASK_STACK: usize = 128 * 1024;
/// The top of a stack touched when it is mapped: glibc's thread block and
/// static TLS, and the frames a task thread uses (a read of /proc, a
/// formatted name), so that no first touch faults inside the run.
const TOUCHED: usize = 32 * 1024;
const PAGE: usize = 4096;
/// Stacks kept ready for the threads a workload forks in its run, beyond
/// one per initial thread: fork-burst's 200 children are all alive at once.
pub(crate) const FORK_RESERVE: usize = 256;

/// One mapping: a PROT_NONE guard page below TASK_STACK bytes of stack.
pub(crate) struct Stack {
    base: NonNull<libc::c_void>,
}

// The mapping is owned by exactly one Stack (or the thread running on it).
unsafe impl Send for Stack {}

impl Stack {
    pub(crate) fn map() -> io::Result<Stack> {
        let len = PAGE + TASK_STACK;
        // SAFETY: a fresh anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(base).expect("mmap does not return NULL on success");
        let stack = Stack { base };
        // SAFETY: the first page of the mapping just made.
        if unsafe { libc::mprotect(base.as_ptr(), PAGE, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let top = stack.low().wrapping_add(TASK_STACK);
        for offset in (PAGE..=TOUCHED).step_by(PAGE) {
            // SAFETY: inside the writable part of the mapping.
            unsafe { std::ptr::write_volatile(top.wrapping_sub(offset), 0u8) };
        }
        Ok(stack)
    }

    /// The lowest usable byte (above the guard page).
    fn low(&self) -> *mut u8 {
        self.base.as_ptr().cast::<u8>().wrapping_add(PAGE)
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, no thread runs on it any more.
        unsafe { libc::munmap(self.base.as_ptr(), PAGE + TASK_STACK) };
    }
}

/// A running (or ended, not yet joined) task thread and its stack.
pub(crate) struct TaskThread {
    thread: libc::pthread_t,
    stack: Stack,
    /// Its function and end flag, freed here after the join: a thread that
    /// frees nothing gets no malloc arena (`sys::malloc_settings`).
    start: NonNull<Start>,
}

// `start` is shared with the thread only through `run`'s raw accesses.
unsafe impl Send for TaskThread {}

impl TaskThread {
    /// Runs `f` (once) in a new thread on `stack`. On failure the stack
    /// comes back with the error.
    pub(crate) fn spawn(stack: Stack, f: Box<dyn FnMut() + Send>) -> Result<TaskThread, (Stack, io::Error)> {
        let start = NonNull::from(Box::leak(Box::new(Start { f, ended: AtomicBool::new(false) })));
        let mut thread: libc::pthread_t = 0;
        // SAFETY: attr is initialised before use and destroyed after; the
        // stack and `start` outlive the thread (both are only given back or
        // freed after a join).
        let rc = unsafe {
            let mut attr: libc::pthread_attr_t = std::mem::zeroed();
            libc::pthread_attr_init(&mut attr);
            let mut rc = libc::pthread_attr_setstack(&mut attr, stack.low().cast(), TASK_STACK);
            if rc == 0 {
                rc = libc::pthread_create(&mut thread, &attr, run, start.as_ptr().cast());
            }
            libc::pthread_attr_destroy(&mut attr);
            rc
        };
        if rc != 0 {
            // SAFETY: the thread was not created, so `start` is only ours.
            drop(unsafe { Box::from_raw(start.as_ptr()) });
            return Err((stack, io::Error::from_raw_os_error(rc)));
        }
        Ok(TaskThread { thread, stack, start })
    }

    /// Whether its function has returned (the thread may still be exiting).
    pub(crate) fn ended(&self) -> bool {
        // SAFETY: `start` lives until the join; the thread writes only `f`
        // and this atomic.
        unsafe { (*std::ptr::addr_of!((*self.start.as_ptr()).ended)).load(Ordering::Acquire) }
    }

    /// Waits for the thread to exit; its stack is free again.
    pub(crate) fn join(self) -> Stack {
        // SAFETY: a thread created by `spawn` and joined once (self is consumed).
        unsafe { libc::pthread_join(self.thread, std::ptr::null_mut()) };
        self.joined()
    }

    /// The stack back if the thread has exited, without waiting.
    pub(crate) fn try_join(self) -> Result<Stack, TaskThread> {
        if !self.ended() {
            return Err(self);
        }
        // SAFETY: as in `join`; EBUSY leaves the thread joinable.
        match unsafe { libc::pthread_tryjoin_np(self.thread, std::ptr::null_mut()) } {
            0 => Ok(self.joined()),
            _ => Err(self),
        }
    }

    fn joined(self) -> Stack {
        // SAFETY: the thread has exited, so `start` is only ours.
        drop(unsafe { Box::from_raw(self.start.as_ptr()) });
        self.stack
    }
}

struct Start {
    f: Box<dyn FnMut() + Send>,
    ended: AtomicBool,
}

extern "C" fn run(arg: *mut libc::c_void) -> *mut libc::c_void {
    let start = arg.cast::<Start>();
    // SAFETY: `arg` is the Start of `spawn`, alive until the join; only
    // this thread touches `f`.
    let f = unsafe { &mut *std::ptr::addr_of_mut!((*start).f) };
    // A panic may not unwind out of a C thread function; the panic hook
    // has printed it, and the run sees a task that stopped, as a panicked
    // std thread was seen before.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    // SAFETY: as above; the joiner reads it with Acquire.
    unsafe { (*std::ptr::addr_of!((*start).ended)).store(true, Ordering::Release) };
    std::ptr::null_mut()
}

/// Stacks ready for new threads.
#[derive(Default)]
pub(crate) struct StackPool {
    free: Mutex<Vec<Stack>>,
}

impl StackPool {
    /// A pool of `n` stacks mapped and touched now.
    pub(crate) fn with(n: usize) -> io::Result<StackPool> {
        let free = (0..n).map(|_| Stack::map()).collect::<io::Result<Vec<_>>>()?;
        Ok(StackPool { free: Mutex::new(free) })
    }

    /// A stack from the pool, or, when it is empty, one from `threads`
    /// that have exited, or a new mapping.
    pub(crate) fn take(&self, threads: &Mutex<Vec<TaskThread>>) -> io::Result<Stack> {
        if let Some(s) = self.free.lock().expect("no thread panics holding the lock").pop() {
            return Ok(s);
        }
        let mut reaped = Vec::new();
        {
            let mut threads = threads.lock().expect("no thread panics holding the lock");
            if threads.iter().any(TaskThread::ended) {
                let mut running = Vec::with_capacity(threads.len());
                for t in threads.drain(..) {
                    match t.try_join() {
                        Ok(stack) => reaped.push(stack),
                        Err(t) => running.push(t),
                    }
                }
                *threads = running;
            }
        }
        let mine = reaped.pop();
        self.free.lock().expect("no thread panics holding the lock").extend(reaped);
        match mine {
            Some(s) => Ok(s),
            None => Stack::map(),
        }
    }

    pub(crate) fn put(&self, stack: Stack) {
        self.free.lock().expect("no thread panics holding the lock").push(stack);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_runs_on_the_pool_s_stack_and_gives_it_back() {
        let pool = StackPool::with(1).unwrap();
        let threads = Mutex::new(Vec::new());
        let stack = pool.take(&threads).unwrap();
        let (low, high) = (stack.low() as usize, stack.low() as usize + TASK_STACK);
        let (tx, rx) = std::sync::mpsc::channel();
        let t = TaskThread::spawn(
            stack,
            Box::new(move || {
                let local = 0u8;
                tx.send(std::hint::black_box(&local) as *const u8 as usize).unwrap();
            }),
        )
        .map_err(|(_, e)| e)
        .unwrap();
        let at = rx.recv().unwrap();
        assert!((low..high).contains(&at), "a local at {at:#x} is not on the stack {low:#x}..{high:#x}");
        threads.lock().unwrap().push(t);
        // The pool is empty: the next take waits for nothing but reaps the
        // ended thread's stack (or maps one if it has not exited yet).
        while !threads.lock().unwrap().iter().all(TaskThread::ended) {
            std::thread::yield_now();
        }
        let again = pool.take(&threads).unwrap();
        let reused = again.low() as usize == low;
        let left = threads.lock().unwrap().len();
        assert!(reused && left == 0 || !reused && left == 1, "reused {reused}, threads left {left}");
        for t in threads.lock().unwrap().drain(..) {
            drop(t.join());
        }
    }

    #[test]
    fn a_panicking_task_thread_ends_and_is_joined() {
        let t = TaskThread::spawn(Stack::map().unwrap(), Box::new(|| panic!("a task's panic")))
            .map_err(|(_, e)| e)
            .unwrap();
        let stack = t.join();
        drop(stack);
    }
}
