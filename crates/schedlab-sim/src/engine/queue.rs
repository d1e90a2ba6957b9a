//! The engine's event queue: events ordered by (time, insertion sequence),
//! so equal-time events fire in the order they were scheduled and a run is
//! deterministic.
//!
//! It is the hottest structure of the simulator. The order key is one
//! `u128` (time above, sequence below) and travels with its payload, so a
//! pop reads nothing outside the queue's own arrays. Entries are kept in
//! three tiers, like the kernel's timer wheel in front of an hrtimer queue:
//! the current bucket of 16 us, a ring of buckets for the next four
//! seconds (a push links the entry into its bucket's list, in a pool that
//! reuses freed entries, so memory follows the events pending) and a heap
//! for anything later. When time reaches a bucket its entries
//! are sorted once, and pops take them from the end of that run; events
//! pushed into the current bucket meanwhile (idle exits, short bursts) go
//! to a small 4-ary heap, and a pop takes the earlier of the two heads.
//! Sorting a bucket costs a fraction of sifting each entry through a heap
//! of the whole bucket. A bitmap of the ring's non-empty buckets lets a pop
//! skip the empty ones a word at a time: a lone busy CPU's next tick is 250
//! buckets away, and stepping through them one by one was most of the cost
//! of its tick. The order of pops is exactly the key order.

use crate::time::Nanos;

/// Latest time a run may reach: 2^48 ns, about 78 hours.
pub const MAX_TIME: Nanos = (1 << 48) - 1;
const TIME_SHIFT: u32 = 64;
/// A ring bucket spans 2^14 ns (about 16 us): most events of a busy
/// machine fall within a millisecond of being pushed, and the fewer of them
/// share the current bucket, the smaller the heap they go through.
const BUCKET_SHIFT: u32 = 14;
/// Buckets in the ring: about 4.3 s ahead (a 1 MiB ring).
const NR_BUCKETS: u64 = 262144;
const NONE: u32 = u32::MAX;

pub struct EventQueue<K> {
    /// The entries bucket `cur` held when it became current, latest first.
    run: Vec<(u128, K)>,
    /// Heap of the entries pushed into bucket `cur` since.
    near: Vec<(u128, K)>,
    /// First pool entry of bucket b (cur < b < cur + NR_BUCKETS) at index
    /// b % NR_BUCKETS, NONE when empty.
    ring: Vec<u32>,
    /// Ring entries with the next entry of their bucket (or of the free
    /// list).
    pool: Vec<(u128, K, u32)>,
    free: u32,
    in_ring: usize,
    /// One bit per ring bucket (index b % NR_BUCKETS): set while it holds
    /// entries.
    occupied: Vec<u64>,
    /// Heap of entries at or beyond bucket cur + NR_BUCKETS.
    far: Vec<(u128, K)>,
    cur: u64,
    seq: u64,
}

fn bucket_of(key: u128) -> u64 {
    ((key >> TIME_SHIFT) as u64) >> BUCKET_SHIFT
}

fn heap_push<K: Copy>(heap: &mut Vec<(u128, K)>, entry: (u128, K)) {
    heap.push(entry);
    let mut i = heap.len() - 1;
    while i > 0 {
        let parent = (i - 1) / 4;
        if heap[parent].0 <= entry.0 {
            break;
        }
        heap[i] = heap[parent];
        i = parent;
    }
    heap[i] = entry;
}

fn heap_pop<K: Copy>(heap: &mut Vec<(u128, K)>) -> Option<(u128, K)> {
    let top = *heap.first()?;
    let last = heap.pop().expect("heap is not empty");
    if heap.is_empty() {
        return Some(top);
    }
    let n = heap.len();
    let mut i = 0;
    loop {
        let first = 4 * i + 1;
        let min = if first + 3 < n {
            // A full node: pairwise minima compile to conditional moves,
            // not to four hard-to-predict branches.
            let h = &heap[first..first + 4];
            let lo = if h[1].0 < h[0].0 { first + 1 } else { first };
            let hi = if h[3].0 < h[2].0 { first + 3 } else { first + 2 };
            if heap[hi].0 < heap[lo].0 { hi } else { lo }
        } else if first < n {
            (first..n).min_by_key(|&c| heap[c].0).expect("node has a child")
        } else {
            break;
        };
        if heap[min].0 >= last.0 {
            break;
        }
        heap[i] = heap[min];
        i = min;
    }
    heap[i] = last;
    Some(top)
}

impl<K: Copy> EventQueue<K> {
    pub fn new() -> Self {
        EventQueue {
            run: Vec::new(),
            near: Vec::new(),
            ring: vec![NONE; NR_BUCKETS as usize],
            pool: Vec::new(),
            free: NONE,
            in_ring: 0,
            occupied: vec![0; (NR_BUCKETS / 64) as usize],
            far: Vec::new(),
            cur: 0,
            seq: 0,
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.run.len() + self.near.len() + self.in_ring + self.far.len()
    }

    /// Schedules `kind` at `at` (which must not exceed [`MAX_TIME`]).
    pub fn push(&mut self, at: Nanos, kind: K) {
        debug_assert!(at <= MAX_TIME, "event time {at} beyond the queue's range");
        self.seq += 1;
        self.file(((u128::from(at) << TIME_SHIFT) | u128::from(self.seq), kind));
    }

    /// Puts an entry in the tier its bucket belongs to.
    fn file(&mut self, entry: (u128, K)) {
        let b = bucket_of(entry.0);
        if b <= self.cur {
            heap_push(&mut self.near, entry);
        } else if b < self.cur + NR_BUCKETS {
            let slot = b % NR_BUCKETS;
            self.occupied[(slot / 64) as usize] |= 1 << (slot % 64);
            let head = &mut self.ring[slot as usize];
            let linked = (entry.0, entry.1, *head);
            *head = if self.free == NONE {
                self.pool.push(linked);
                (self.pool.len() - 1) as u32
            } else {
                let index = self.free;
                self.free = self.pool[index as usize].2;
                self.pool[index as usize] = linked;
                index
            };
            self.in_ring += 1;
        } else {
            heap_push(&mut self.far, entry);
        }
    }

    /// The earliest event, removed.
    pub fn pop(&mut self) -> Option<(Nanos, K)> {
        while self.run.is_empty() && self.near.is_empty() {
            // Jump to the bucket before the next one holding entries: the
            // ring's earliest (every far entry lies beyond the ring), or
            // with nothing in the ring the far heap's earliest.
            if self.in_ring == 0 {
                let next = self.far.first()?.0;
                self.cur = self.cur.max(bucket_of(next) - 1);
            } else {
                self.cur = self.next_occupied() - 1;
            }
            self.advance();
        }
        let from_run = match (self.run.last(), self.near.first()) {
            (Some(r), Some(n)) => r.0 < n.0,
            (run, _) => run.is_some(),
        };
        let (key, kind) = if from_run { self.run.pop() } else { heap_pop(&mut self.near) }.expect("an entry is due");
        Some(((key >> TIME_SHIFT) as Nanos, kind))
    }

    /// The first bucket after `cur` that holds ring entries (the ring is
    /// not empty): its bucket number, found from the bitmap a word at a
    /// time, from cur + 1's slot round to cur's.
    fn next_occupied(&self) -> u64 {
        let words = self.occupied.len();
        let start = (self.cur + 1) % NR_BUCKETS;
        let first = (start / 64) as usize;
        // The first word without the slots before start, then every word
        // after it, back round to the first word's slots before start.
        let masked = self.occupied[first] & (u64::MAX << (start % 64));
        let found = if masked != 0 {
            Some(first as u64 * 64 + u64::from(masked.trailing_zeros()))
        } else {
            (1..=words).find_map(|i| {
                let w = (first + i) % words;
                let bits = if i == words { self.occupied[w] & !(u64::MAX << (start % 64)) } else { self.occupied[w] };
                (bits != 0).then(|| w as u64 * 64 + u64::from(bits.trailing_zeros()))
            })
        };
        let slot = found.expect("the ring holds entries");
        self.cur + 1 + (slot + NR_BUCKETS - start) % NR_BUCKETS
    }

    /// Moves on to the next bucket: its entries become the sorted run, and
    /// the far ones that the ring now reaches go into the ring.
    fn advance(&mut self) {
        self.cur += 1;
        let slot = self.cur % NR_BUCKETS;
        self.occupied[(slot / 64) as usize] &= !(1 << (slot % 64));
        let mut at = std::mem::replace(&mut self.ring[slot as usize], NONE);
        while at != NONE {
            let (key, kind, next) = self.pool[at as usize];
            self.run.push((key, kind));
            self.pool[at as usize].2 = self.free;
            self.free = at;
            self.in_ring -= 1;
            at = next;
        }
        self.run.sort_unstable_by_key(|entry| std::cmp::Reverse(entry.0));
        while let Some(&entry) = self.far.first() {
            if bucket_of(entry.0) >= self.cur + NR_BUCKETS {
                break;
            }
            heap_pop(&mut self.far);
            self.file(entry);
        }
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
    use proptest::test_runner::TestCaseError;

    /// Replays pushes and pops against a list kept in order by hand, then
    /// drains both: pops come out by time, equal times in push order (the
    /// first of the earliest), and the queue ends empty.
    fn matches_model(ops: Vec<(bool, Nanos)>) -> Result<(), TestCaseError> {
        let mut q = EventQueue::new();
        let mut model: Vec<(Nanos, u32)> = Vec::new();
        let earliest =
            |model: &mut Vec<(Nanos, u32)>| (0..model.len()).min_by_key(|&i| (model[i].0, i)).map(|i| model.remove(i));
        let mut id = 0u32;
        for (is_push, at) in ops {
            if is_push || model.is_empty() {
                q.push(at, id);
                model.push((at, id));
                id += 1;
            } else {
                prop_assert_eq!(q.pop(), earliest(&mut model));
            }
            prop_assert_eq!(q.len(), model.len());
        }
        while let Some(want) = earliest(&mut model) {
            prop_assert_eq!(q.pop(), Some(want));
        }
        prop_assert_eq!(q.pop(), None);
        Ok(())
    }

    proptest! {
        /// Many equal times, all within the heap's bucket.
        #[test]
        fn pops_in_time_then_push_order(ops in proptest::collection::vec((any::<bool>(), 0u64..50), 1..400)) {
            matches_model(ops)?;
        }

        /// Times spread over seconds, through the ring and beyond its
        /// reach, and pushes earlier than the last pop.
        #[test]
        fn pops_in_order_across_tiers(ops in proptest::collection::vec((any::<bool>(), 0u64..20_000_000_000), 1..400)) {
            matches_model(ops)?;
        }
    }
}
