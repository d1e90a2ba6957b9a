//! The engine's event queue: events ordered by (time, insertion sequence),
//! so equal-time events fire in the order they were scheduled and a run is
//! deterministic.
//!
//! It is the hottest structure of the simulator, so the order key is packed
//! into one `u128` (48 bits of time, 48 of sequence, 32 of a slot holding
//! the event's payload) in a 4-ary min-heap: a node's four children share a
//! 64-byte cache line and the tree is half as deep as a binary heap's.
//! Payloads live in a slab indexed by the slot and are reused.

use crate::time::Nanos;

/// Latest time the queue can hold: 2^48 ns, about 78 hours.
pub const MAX_TIME: Nanos = (1 << 48) - 1;
const SEQ_BITS: u32 = 48;
const SLOT_BITS: u32 = 32;

pub struct EventQueue<K> {
    heap: Vec<u128>,
    slots: Vec<K>,
    free: Vec<u32>,
    seq: u64,
}

impl<K: Copy> EventQueue<K> {
    pub fn new() -> Self {
        EventQueue { heap: Vec::new(), slots: Vec::new(), free: Vec::new(), seq: 0 }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.heap.len()
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedules `kind` at `at` (which must not exceed [`MAX_TIME`]).
    pub fn push(&mut self, at: Nanos, kind: K) {
        debug_assert!(at <= MAX_TIME, "event time {at} beyond the queue's range");
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = kind;
                s
            }
            None => {
                self.slots.push(kind);
                (self.slots.len() - 1) as u32
            }
        };
        self.seq += 1;
        let key = (u128::from(at) << (SEQ_BITS + SLOT_BITS))
            | (u128::from(self.seq & ((1 << SEQ_BITS) - 1)) << SLOT_BITS)
            | u128::from(slot);
        self.heap.push(key);
        self.sift_up(self.heap.len() - 1);
    }

    /// The earliest event, removed.
    pub fn pop(&mut self) -> Option<(Nanos, K)> {
        let top = *self.heap.first()?;
        let last = self.heap.pop().expect("heap is not empty");
        if !self.heap.is_empty() {
            self.heap[0] = last;
            self.sift_down(0);
        }
        let slot = (top & u128::from(u32::MAX)) as u32;
        self.free.push(slot);
        Some(((top >> (SEQ_BITS + SLOT_BITS)) as Nanos, self.slots[slot as usize]))
    }

    fn sift_up(&mut self, mut i: usize) {
        let key = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 4;
            if self.heap[parent] <= key {
                break;
            }
            self.heap[i] = self.heap[parent];
            i = parent;
        }
        self.heap[i] = key;
    }

    fn sift_down(&mut self, mut i: usize) {
        let key = self.heap[i];
        let n = self.heap.len();
        loop {
            let first = 4 * i + 1;
            let min = if first + 3 < n {
                // A full node: pairwise minima compile to conditional moves,
                // not to four hard-to-predict branches.
                let h = &self.heap[first..first + 4];
                let lo = if h[1] < h[0] { first + 1 } else { first };
                let hi = if h[3] < h[2] { first + 3 } else { first + 2 };
                if self.heap[hi] < self.heap[lo] { hi } else { lo }
            } else if first < n {
                (first..n).min_by_key(|&c| self.heap[c]).expect("node has a child")
            } else {
                break;
            };
            if self.heap[min] >= key {
                break;
            }
            self.heap[i] = self.heap[min];
            i = min;
        }
        self.heap[i] = key;
    }
}

impl<K: Copy> Default for EventQueue<K> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Pops come out by time, and equal times in push order, whatever
        /// the interleaving of pushes and pops.
        #[test]
        fn pops_in_time_then_push_order(ops in proptest::collection::vec((any::<bool>(), 0u64..50), 1..400)) {
            let mut q = EventQueue::new();
            let mut model: Vec<(Nanos, u32)> = Vec::new();
            let mut id = 0u32;
            for (is_push, at) in ops {
                if is_push || model.is_empty() {
                    q.push(at, id);
                    model.push((at, id));
                    id += 1;
                } else {
                    // Stable: the first of the earliest.
                    let i = (0..model.len()).min_by_key(|&i| (model[i].0, i)).unwrap();
                    let want = model.remove(i);
                    prop_assert_eq!(q.pop(), Some(want));
                }
                prop_assert_eq!(q.len(), model.len());
            }
        }
    }

    #[test]
    fn slots_are_reused() {
        let mut q = EventQueue::new();
        for round in 0..100u64 {
            q.push(round, round);
            q.push(round, round + 1);
            assert_eq!(q.pop(), Some((round, round)));
            assert_eq!(q.pop(), Some((round, round + 1)));
        }
        assert!(q.is_empty());
        assert!(q.slots.len() <= 2);
    }
}
