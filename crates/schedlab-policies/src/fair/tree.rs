//! A cfs_rq's timeline: its queued entities ordered by (key, entity), as
//! the kernel's rb_root_cached orders them, with the two augments EEVDF
//! keeps in each node since Linux 6.6 and 6.12: the least vruntime and the
//! least slice of the subtree. They make pick_eevdf (the eligible entity
//! with the earliest deadline) and cfs_rq_min_slice O(log n) instead of a
//! scan of the queue.
//!
//! The tree is intrusive, as the kernel's is: its links live in the
//! entities ([`Node`] in `Ent`), so a queue costs no allocation and a
//! walk touches the entities it compares anyway. It is a treap (a search
//! tree heap-ordered by a hash of the entity number) rather than a
//! red-black tree: the same in-order sequence, so the same decisions, with
//! simpler rebalancing.

use super::{Ent, NONE};

/// An entity's links and subtree augments.
#[derive(Clone, Debug)]
pub(super) struct Node {
    left: u32,
    right: u32,
    /// Least vruntime in the subtree rooted here.
    min_vruntime: i64,
    /// Least slice in the subtree rooted here.
    min_slice: u64,
}

impl Default for Node {
    fn default() -> Self {
        Node { left: NONE, right: NONE, min_vruntime: i64::MAX, min_slice: u64::MAX }
    }
}

/// One cfs_rq's tree: its root and size.
#[derive(Clone, Debug)]
pub(super) struct Tree {
    root: u32,
    len: u32,
}

impl Default for Tree {
    fn default() -> Self {
        Tree { root: NONE, len: 0 }
    }
}

/// The treap's heap order: a fixed pseudo-random priority per entity.
fn priority(se: u32) -> u32 {
    let mut z = se.wrapping_add(0x9e37_79b9);
    z = (z ^ (z >> 16)).wrapping_mul(0x85eb_ca6b);
    z = (z ^ (z >> 13)).wrapping_mul(0xc2b2_ae35);
    z ^ (z >> 16)
}

fn before(ents: &[Ent], a: u32, b: u32) -> bool {
    (ents[a as usize].key, a) < (ents[b as usize].key, b)
}

/// Recompute a node's augments from its own values and its children's.
fn update(ents: &mut [Ent], n: u32) {
    let e = &ents[n as usize];
    let (mut min_v, mut min_s) = (e.vruntime, e.slice);
    for child in [e.node.left, e.node.right] {
        if child != NONE {
            let c = &ents[child as usize].node;
            min_v = min_v.min(c.min_vruntime);
            min_s = min_s.min(c.min_slice);
        }
    }
    let node = &mut ents[n as usize].node;
    node.min_vruntime = min_v;
    node.min_slice = min_s;
}

fn insert_at(ents: &mut [Ent], at: u32, se: u32) -> u32 {
    if at == NONE {
        ents[se as usize].node = Node::default();
        update(ents, se);
        return se;
    }
    let root = if before(ents, se, at) {
        let sub = insert_at(ents, ents[at as usize].node.left, se);
        ents[at as usize].node.left = sub;
        if priority(sub) > priority(at) {
            // Rotate right: the new subtree root rises above `at`.
            ents[at as usize].node.left = ents[sub as usize].node.right;
            update(ents, at);
            ents[sub as usize].node.right = at;
            sub
        } else {
            at
        }
    } else {
        let sub = insert_at(ents, ents[at as usize].node.right, se);
        ents[at as usize].node.right = sub;
        if priority(sub) > priority(at) {
            ents[at as usize].node.right = ents[sub as usize].node.left;
            update(ents, at);
            ents[sub as usize].node.left = at;
            sub
        } else {
            at
        }
    };
    update(ents, root);
    root
}

/// Join two subtrees whose every key in `a` precedes every key in `b`.
fn merge(ents: &mut [Ent], a: u32, b: u32) -> u32 {
    if a == NONE {
        return b;
    }
    if b == NONE {
        return a;
    }
    if priority(a) > priority(b) {
        let right = merge(ents, ents[a as usize].node.right, b);
        ents[a as usize].node.right = right;
        update(ents, a);
        a
    } else {
        let left = merge(ents, a, ents[b as usize].node.left);
        ents[b as usize].node.left = left;
        update(ents, b);
        b
    }
}

fn remove_at(ents: &mut [Ent], at: u32, se: u32) -> u32 {
    assert!(at != NONE, "entity {se} is not in the tree it is removed from");
    if at == se {
        let node = &ents[se as usize].node;
        return merge(ents, node.left, node.right);
    }
    if before(ents, se, at) {
        let left = remove_at(ents, ents[at as usize].node.left, se);
        ents[at as usize].node.left = left;
    } else {
        let right = remove_at(ents, ents[at as usize].node.right, se);
        ents[at as usize].node.right = right;
    }
    update(ents, at);
    at
}

fn each_from(ents: &[Ent], at: u32, f: &mut impl FnMut(u32)) {
    if at != NONE {
        each_from(ents, ents[at as usize].node.left, f);
        f(at);
        each_from(ents, ents[at as usize].node.right, f);
    }
}

impl Tree {
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Files `se` under its current key; its vruntime and slice must not
    /// change while it is in the tree (take it out first, as the kernel
    /// does).
    pub fn insert(&mut self, ents: &mut [Ent], se: u32) {
        self.root = insert_at(ents, self.root, se);
        self.len += 1;
    }

    pub fn remove(&mut self, ents: &mut [Ent], se: u32) {
        self.root = remove_at(ents, self.root, se);
        self.len -= 1;
    }

    pub fn first(&self, ents: &[Ent]) -> Option<u32> {
        let mut at = self.root;
        if at == NONE {
            return None;
        }
        while ents[at as usize].node.left != NONE {
            at = ents[at as usize].node.left;
        }
        Some(at)
    }

    /// The first entity with the key it is filed under, the form a cfs_rq
    /// caches as its leftmost.
    pub fn first_keyed(&self, ents: &[Ent]) -> Option<(i64, u32)> {
        self.first(ents).map(|s| (ents[s as usize].key, s))
    }

    /// The entity filed right after `se` (rb_next).
    pub fn next(&self, ents: &[Ent], se: u32) -> Option<u32> {
        let (mut at, mut succ) = (self.root, None);
        while at != NONE {
            if before(ents, se, at) {
                succ = Some(at);
                at = ents[at as usize].node.left;
            } else {
                at = ents[at as usize].node.right;
            }
        }
        succ
    }

    /// Visits every entity in order.
    pub fn for_each(&self, ents: &[Ent], mut f: impl FnMut(u32)) {
        each_from(ents, self.root, &mut f);
    }

    pub fn to_vec(&self, ents: &[Ent]) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.len as usize);
        self.for_each(ents, |s| out.push(s));
        out
    }

    /// The least slice in the tree (the root's augment).
    pub fn min_slice(&self, ents: &[Ent]) -> Option<u64> {
        (self.root != NONE).then(|| ents[self.root as usize].node.min_slice)
    }

    /// __pick_eevdf's walk: the first entity in key order that `eligible`
    /// accepts, where `eligible` is monotone in vruntime (accepting a
    /// vruntime accepts every smaller one), so a subtree whose least
    /// vruntime is refused holds no candidate.
    pub fn first_eligible(&self, ents: &[Ent], eligible: impl Fn(i64) -> bool) -> Option<u32> {
        let mut at = self.root;
        while at != NONE {
            let node = &ents[at as usize].node;
            if node.left != NONE && eligible(ents[node.left as usize].node.min_vruntime) {
                at = node.left;
                continue;
            }
            if eligible(ents[at as usize].vruntime) {
                return Some(at);
            }
            if node.right != NONE && !eligible(ents[node.right as usize].node.min_vruntime) {
                return None;
            }
            at = node.right;
        }
        None
    }

    /// Checks the heap order, the key order and the augments of every
    /// node, for the policy's invariant check.
    pub fn check(&self, ents: &[Ent]) -> Result<(), String> {
        fn walk(ents: &[Ent], at: u32, count: &mut u32) -> Result<(i64, u64), String> {
            *count += 1;
            let e = &ents[at as usize];
            let (mut min_v, mut min_s) = (e.vruntime, e.slice);
            for (child, left) in [(e.node.left, true), (e.node.right, false)] {
                if child == NONE {
                    continue;
                }
                if priority(child) > priority(at) || before(ents, child, at) != left {
                    return Err(format!("tree order broken between entities {at} and {child}"));
                }
                let (v, s) = walk(ents, child, count)?;
                min_v = min_v.min(v);
                min_s = min_s.min(s);
            }
            if (min_v, min_s) != (e.node.min_vruntime, e.node.min_slice) {
                return Err(format!("stale augment at entity {at}"));
            }
            Ok((min_v, min_s))
        }
        let mut count = 0;
        if self.root != NONE {
            walk(ents, self.root, &mut count)?;
        }
        if count != self.len {
            return Err(format!("tree holds {count} entities but counts {}", self.len));
        }
        Ok(())
    }
}
