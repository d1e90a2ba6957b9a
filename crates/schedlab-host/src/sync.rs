//! Condition variables and barriers for task threads, with the semantics
//! the simulator gives them (FIFO wakeups, a signal with no waiter is lost,
//! a barrier releases exactly the arrivals of its round), and a way out when
//! the run ends: waits recheck the stop flag every [`STOP_POLL`].

use crate::sys;
use schedlab_sim::Nanos;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// How often a blocked waiter looks at the stop flag. The extra wakeups are
/// futex timeouts of a sleeping thread, rare next to a workload's own.
const STOP_POLL: Duration = Duration::from_millis(100);

#[derive(Default)]
struct Tickets {
    /// Tickets handed to waiters so far.
    issued: u64,
    /// Waiters with a ticket below this have been woken.
    woken_below: u64,
    /// When the latest signal or broadcast was sent (for wakeup latency).
    sent_at: Nanos,
}

/// A condition variable whose waiters are woken in arrival order.
#[derive(Default)]
pub struct Cond {
    state: Mutex<Tickets>,
    cv: Condvar,
}

impl Cond {
    /// Registers a waiter; call it before releasing the mutex that guards
    /// the condition, so that no signal between the two is lost.
    pub fn enter(&self) -> u64 {
        let mut s = self.state.lock().expect("cond lock");
        s.issued += 1;
        s.issued - 1
    }

    /// Blocks until the waiter with `ticket` is woken: Some(latency from the
    /// signal), or None when the run is stopping.
    pub fn wait(&self, ticket: u64, stop: &AtomicBool) -> Option<Nanos> {
        let mut s = self.state.lock().expect("cond lock");
        while s.woken_below <= ticket {
            if stop.load(Ordering::SeqCst) {
                return None;
            }
            s = self.cv.wait_timeout(s, STOP_POLL).expect("cond lock").0;
        }
        Some(sys::now().saturating_sub(s.sent_at))
    }

    pub fn signal(&self) {
        let mut s = self.state.lock().expect("cond lock");
        if s.woken_below < s.issued {
            s.woken_below += 1;
            s.sent_at = sys::now();
            self.cv.notify_all();
        }
    }

    pub fn broadcast(&self) {
        let mut s = self.state.lock().expect("cond lock");
        if s.woken_below < s.issued {
            s.woken_below = s.issued;
            s.sent_at = sys::now();
            self.cv.notify_all();
        }
    }
}

/// A reusable barrier for `users` threads.
pub struct Barrier {
    users: u32,
    /// (arrived in this round, round number)
    state: Mutex<(u32, u64)>,
    cv: Condvar,
}

impl Barrier {
    pub fn new(users: u32) -> Barrier {
        Barrier { users, state: Mutex::new((0, 0)), cv: Condvar::new() }
    }

    /// Waits for the round to fill; false when the run is stopping first.
    pub fn arrive(&self, stop: &AtomicBool) -> bool {
        let mut s = self.state.lock().expect("barrier lock");
        s.0 += 1;
        if s.0 >= self.users {
            *s = (0, s.1 + 1);
            self.cv.notify_all();
            return true;
        }
        let round = s.1;
        while s.1 == round {
            if stop.load(Ordering::SeqCst) {
                return false;
            }
            s = self.cv.wait_timeout(s, STOP_POLL).expect("barrier lock").0;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_signal_without_waiters_is_lost() {
        let c = Cond::default();
        c.signal();
        let stop = AtomicBool::new(true);
        let t = c.enter();
        assert_eq!(c.wait(t, &stop), None, "the earlier signal must not wake a later waiter");
    }

    #[test]
    fn signal_wakes_in_arrival_order_and_broadcast_wakes_all() {
        let c = Cond::default();
        let stop = AtomicBool::new(true);
        let (a, b, d) = (c.enter(), c.enter(), c.enter());
        c.signal();
        assert!(c.wait(a, &stop).is_some());
        assert!(c.wait(b, &stop).is_none());
        c.broadcast();
        assert!(c.wait(b, &stop).is_some() && c.wait(d, &stop).is_some());
    }

    #[test]
    fn barrier_releases_a_full_round() {
        let b = Arc::new(Barrier::new(3));
        let stop = Arc::new(AtomicBool::new(false));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (b, stop) = (b.clone(), stop.clone());
                std::thread::spawn(move || b.arrive(&stop))
            })
            .collect();
        while b.state.lock().unwrap().0 < 2 {
            std::thread::yield_now();
        }
        assert!(b.arrive(&stop), "the last arrival goes on");
        for t in threads {
            assert!(t.join().unwrap(), "the first two are released by the third");
        }
        // A lone arrival in the next round waits, and leaves when stopped.
        stop.store(true, Ordering::SeqCst);
        assert!(!b.arrive(&stop));
    }
}
