//! A cfs_rq's timeline: its queued entities ordered by (key, entity), as
//! the kernel's rb_root_cached orders them, with the augment EEVDF keeps in
//! each node since Linux 6.6: the least vruntime of the subtree. It makes
//! pick_eevdf (the eligible entity with the earliest deadline) O(log n)
//! instead of a scan of the queue. (The kernel's min_slice augment serves
//! cfs_rq_min_slice, which the model's 6.12 pick and protection do not
//! read.)
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
    /// Its heap priority, kept so a walk does not rehash the nodes it
    /// passes.
    prio: u32,
    /// Least vruntime in the subtree rooted here.
    min_vruntime: i64,
}

impl Default for Node {
    fn default() -> Self {
        Node { left: NONE, right: NONE, prio: 0, min_vruntime: i64::MAX }
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

/// Recompute a node's augment from its own vruntime and its children's.
fn update(ents: &mut [Ent], n: u32) {
    let e = &ents[n as usize];
    let mut min_v = e.vruntime;
    for child in [e.node.left, e.node.right] {
        if child != NONE {
            min_v = min_v.min(ents[child as usize].node.min_vruntime);
        }
    }
    ents[n as usize].node.min_vruntime = min_v;
}

/// After `n` lost an entity of vruntime `v` below it: only an augment equal
/// to it can change.
fn update_after_removal(ents: &mut [Ent], n: u32, v: i64) {
    if ents[n as usize].node.min_vruntime == v {
        update(ents, n);
    }
}

/// Splits the subtree at `at` into the entities filed before `se` and
/// those after it. Its recursion follows the two spines that the new
/// node's subtrees are cut from, of expected length below two.
fn split(ents: &mut [Ent], at: u32, se: u32) -> (u32, u32) {
    if at == NONE {
        return (NONE, NONE);
    }
    if before(ents, at, se) {
        let (l, r) = split(ents, ents[at as usize].node.right, se);
        ents[at as usize].node.right = l;
        update(ents, at);
        (at, r)
    } else {
        let (l, r) = split(ents, ents[at as usize].node.left, se);
        ents[at as usize].node.left = r;
        update(ents, at);
        (l, at)
    }
}

/// Join two subtrees whose every key in `a` precedes every key in `b`.
fn merge(ents: &mut [Ent], a: u32, b: u32) -> u32 {
    if a == NONE {
        return b;
    }
    if b == NONE {
        return a;
    }
    if ents[a as usize].node.prio > ents[b as usize].node.prio {
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

/// Takes `se`, whose vruntime is `v`, out of the subtree at `at`;
/// [`Tree::remove`]'s way for a path too deep for its stack.
fn remove_at(ents: &mut [Ent], at: u32, se: u32, v: i64) -> u32 {
    assert!(at != NONE, "entity {se} is not in the tree it is removed from");
    if at == se {
        let node = &ents[se as usize].node;
        return merge(ents, node.left, node.right);
    }
    if before(ents, se, at) {
        let left = remove_at(ents, ents[at as usize].node.left, se, v);
        ents[at as usize].node.left = left;
    } else {
        let right = remove_at(ents, ents[at as usize].node.right, se, v);
        ents[at as usize].node.right = right;
    }
    update_after_removal(ents, at, v);
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

    /// Files `se` under its current key; its key and vruntime must not
    /// change while it is in the tree (take it out first, as the kernel
    /// does).
    ///
    /// Top down: the walk lowers the augments of the nodes it passes to the
    /// new entity's vruntime (it joins all their subtrees), until it reaches
    /// the node the new entity outranks, whose subtree it splits between
    /// its two children.
    pub fn insert(&mut self, ents: &mut [Ent], se: u32) {
        let (v, prio) = (ents[se as usize].vruntime, priority(se));
        let (mut parent, mut went_left) = (NONE, false);
        let mut at = self.root;
        while at != NONE && ents[at as usize].node.prio > prio {
            went_left = before(ents, se, at);
            let node = &mut ents[at as usize].node;
            node.min_vruntime = node.min_vruntime.min(v);
            parent = at;
            at = if went_left { node.left } else { node.right };
        }
        let (left, right) = split(ents, at, se);
        ents[se as usize].node = Node { left, right, prio, ..Node::default() };
        update(ents, se);
        if parent == NONE {
            self.root = se;
        } else if went_left {
            ents[parent as usize].node.left = se;
        } else {
            ents[parent as usize].node.right = se;
        }
        self.len += 1;
    }

    /// Iterative over a path kept on the stack (a treap of a thousand
    /// entities is about 14 deep); a deeper one takes the recursive way.
    pub fn remove(&mut self, ents: &mut [Ent], se: u32) {
        const MAX_PATH: usize = 48;
        let v = ents[se as usize].vruntime;
        let mut path = [NONE; MAX_PATH];
        let mut depth = 0;
        let mut at = self.root;
        while at != se {
            assert!(at != NONE, "entity {se} is not in the tree it is removed from");
            if depth == MAX_PATH {
                self.root = remove_at(ents, self.root, se, v);
                self.len -= 1;
                return;
            }
            path[depth] = at;
            depth += 1;
            let node = &ents[at as usize].node;
            at = if before(ents, se, at) { node.left } else { node.right };
        }
        let node = &ents[se as usize].node;
        let mut sub = merge(ents, node.left, node.right);
        for &up in path[..depth].iter().rev() {
            let node = &mut ents[up as usize].node;
            if node.left == at {
                node.left = sub;
            } else {
                node.right = sub;
            }
            update_after_removal(ents, up, v);
            (at, sub) = (up, up);
        }
        self.root = sub;
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
        fn walk(ents: &[Ent], at: u32, count: &mut u32) -> Result<i64, String> {
            *count += 1;
            let e = &ents[at as usize];
            let mut min_v = e.vruntime;
            for (child, left) in [(e.node.left, true), (e.node.right, false)] {
                if child == NONE {
                    continue;
                }
                if e.node.prio != priority(at)
                    || ents[child as usize].node.prio > e.node.prio
                    || before(ents, child, at) != left
                {
                    return Err(format!("tree order broken between entities {at} and {child}"));
                }
                min_v = min_v.min(walk(ents, child, count)?);
            }
            if min_v != e.node.min_vruntime {
                return Err(format!("stale augment at entity {at}"));
            }
            Ok(min_v)
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ent(key: i64, vruntime: i64, slice: u64) -> Ent {
        Ent {
            weight: 1024,
            vruntime,
            deadline: key,
            vlag: 0,
            vprot: 0,
            slice,
            custom_slice: false,
            rel_deadline: false,
            delayed: false,
            on_rq: true,
            sum_exec: 0,
            prev_sum_exec: 0,
            key,
            list_seq: 0,
            rq: 0,
            my_rq: NONE,
            task: 0,
            depth: 0,
            node: Node::default(),
        }
    }

    /// The tree against a list kept in (key, entity) order: same order,
    /// same first entity at or below a vruntime bound.
    fn agrees(tree: &Tree, ents: &[Ent], model: &[u32], bound: i64) -> Result<(), TestCaseError> {
        tree.check(ents).map_err(TestCaseError::fail)?;
        prop_assert_eq!(tree.to_vec(ents), model.to_vec());
        let want = model.iter().copied().find(|&s| ents[s as usize].vruntime <= bound);
        prop_assert_eq!(tree.first_eligible(ents, |v| v <= bound), want);
        prop_assert_eq!(tree.first(ents), model.first().copied());
        Ok(())
    }

    proptest! {
        /// Inserts and removes in any order keep the order and both
        /// augments right.
        #[test]
        fn matches_a_sorted_list(
            vals in proptest::collection::vec((0i64..40, -50i64..50, 1u64..20), 1..48),
            ops in proptest::collection::vec((any::<bool>(), any::<prop::sample::Index>()), 1..200),
            bound in -60i64..60,
        ) {
            let mut ents: Vec<Ent> = vals.iter().map(|&(k, v, s)| ent(k, v, s)).collect();
            let mut tree = Tree::default();
            let mut model: Vec<u32> = Vec::new();
            for (insert, pick) in ops {
                let absent: Vec<u32> = (0..ents.len() as u32).filter(|s| !model.contains(s)).collect();
                if (insert && !absent.is_empty()) || model.is_empty() {
                    let se = absent[pick.index(absent.len())];
                    tree.insert(&mut ents, se);
                    model.push(se);
                    model.sort_by_key(|&s| (ents[s as usize].key, s));
                } else {
                    let se = model.remove(pick.index(model.len()));
                    tree.remove(&mut ents, se);
                }
                prop_assert_eq!(tree.len() as usize, model.len());
                agrees(&tree, &ents, &model, bound)?;
            }
        }
    }

    /// Keys rising as priorities fall build a single spine deeper than
    /// the removal's path stack, which must then take the recursive way.
    #[test]
    fn a_spine_deeper_than_the_path_stack() {
        let mut by_priority: Vec<u32> = (0..100).collect();
        by_priority.sort_by_key(|&s| std::cmp::Reverse(priority(s)));
        let mut ents: Vec<Ent> = (0..100).map(|_| ent(0, 0, 5)).collect();
        for (rank, &se) in by_priority.iter().enumerate() {
            ents[se as usize].key = rank as i64;
            ents[se as usize].vruntime = 100 - rank as i64;
        }
        let mut tree = Tree::default();
        for &se in &by_priority {
            tree.insert(&mut ents, se);
        }
        let mut model = by_priority.clone();
        // The deepest first: each removal walks the whole spine.
        while let Some(se) = model.pop() {
            tree.remove(&mut ents, se);
            agrees(&tree, &ents, &model, 50).unwrap();
        }
        assert_eq!(tree.len(), 0);
    }
}
