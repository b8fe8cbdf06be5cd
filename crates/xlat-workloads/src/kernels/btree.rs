//! B+-tree lookups. The tree is bulk-loaded from sorted keys (leaves full, nodes allocated
//! level by level, as a bulk loader does); a lookup binary-searches each node's keys and
//! follows one child pointer per level (a dependent load), ending with the value load in
//! the leaf. Node layout (default 256 B): inner = count + 15 keys + 16 child pointers;
//! leaf = count + next pointer + 15 keys + 15 values.

use crate::params::{float, size, PDef, Params};
use crate::recorder::{interleave, static_split, Pos, Recorder};
use crate::rng::{derive, Rng};
use crate::vas::{Arr, Vas};
use crate::WorkloadError;

use super::KernelImpl;

pub const DESC: &str = "B+-tree point lookups (bulk-loaded tree, uniform keys)";
pub const PARAMS: &[PDef] = &[
    size("n", "8M", "keys in the tree"),
    size("node", "256", "node size in bytes (64..4096); sets the fan-out"),
    size("lookups", "1M", "lookups (split over threads)"),
    float("hit", "0.9", "fraction of lookups for keys that are present"),
];

/// Instructions per reference. No public program is this kernel's reference: the counts are its
/// own loop written in C (the same node layout and key draw; `tree->n`, a binary search with
/// `keys[mid] <= key`, the child pointer) compiled by gcc 12 -O3 -march=x86-64-v2, an estimate.
mod cost {
    /// A lookup's draw: xoshiro256++ for the index and Lemire's range (42), then for a present
    /// key its jitter, `derive` (two SplitMix64 steps) modulo 15 (29), or for an absent one add,
    /// test, jg (3); then mov, mov, nop and the root's count (4).
    pub const DRAW: u32 = 42;
    pub const PRESENT_KEY: u32 = 29;
    pub const ABSENT_KEY: u32 = 3;
    pub const ROOT: u32 = 4;
    /// A node below the root: sub, jne, its count.
    pub const COUNT: u32 = 3;
    /// The search's first probe: xor, jmp, cmp, jb, lea, shr, the key's cmp (7 after the count);
    /// after one that went right (jae, lea, jmp: `lo = mid + 1`) or left (jae, mov) cmp, jb,
    /// lea, shr, cmp.
    pub const FIRST_PROBE: u32 = 7;
    pub const PROBE: u32 = 5;
    pub const RIGHT: u32 = 3;
    pub const LEFT: u32 = 2;
    /// The search ends with the loop's cmp, jb (after xor, jmp if it made no probe), then the
    /// child pointer's mov; in a leaf test, je, cmp (the key found), jne, the value's mov.
    pub const END: u32 = 2;
    pub const CHILD: u32 = 1;
    pub const VALUE: u32 = 5;
    /// A key not in its leaf: test, je (no key at or below it) or test, je, cmp, jne.
    pub const MISS: [u32; 2] = [2, 4];
}

/// A bulk-loaded B+-tree over `u64` keys with its simulated node layout.
pub struct BPlusTree {
    /// Max keys per node.
    pub k: usize,
    /// `levels[0]` = leaves' keys (all keys, sorted); `levels[l]` for l >= 1 holds, per
    /// node of level l, its separator keys (the first key of each child but the first).
    leaf_keys: Vec<u64>,
    leaf_vals: Vec<u64>,
    /// Inner levels from just above the leaves up to the root: per node, its separator keys
    /// and its children's index range in the level below.
    inner: Vec<Vec<InnerNode>>,
    inner_arr: Arr,
    leaf_arr: Arr,
    /// First node index of each inner level inside the inner region.
    level_base: Vec<u64>,
    pub leaves: u64,
}

#[derive(Clone, Debug)]
struct InnerNode {
    seps: Vec<u64>,
    first_child: u64,
}

impl BPlusTree {
    pub fn max_keys(node: u64) -> usize {
        ((node - 16) / 16) as usize
    }

    /// Nodes needed for `n` keys: (leaves, inner nodes).
    pub fn node_counts(n: u64, k: usize) -> (u64, u64) {
        let leaves = n.div_ceil(k as u64).max(1);
        let mut inner = 0;
        let mut level = leaves;
        while level > 1 {
            level = level.div_ceil(k as u64 + 1);
            inner += level;
        }
        (leaves, inner.max(1))
    }

    pub fn layout(vas: &mut Vas, n: u64, node: u64, prefix: &str) -> (Arr, Arr) {
        let k = Self::max_keys(node);
        let (leaves, inner) = Self::node_counts(n, k);
        let inner_arr = vas.array(&format!("{prefix}inner"), inner, node);
        let leaf_arr = vas.array(&format!("{prefix}leaves"), leaves, node);
        (inner_arr, leaf_arr)
    }

    pub fn build(keys: Vec<u64>, vals: Vec<u64>, node: u64, inner_arr: Arr, leaf_arr: Arr) -> BPlusTree {
        let k = Self::max_keys(node);
        let leaves = (keys.len() as u64).div_ceil(k as u64).max(1);
        // Children of the level being built: (first key, count).
        let mut child_first: Vec<u64> = (0..leaves).map(|i| keys.get(i as usize * k).copied().unwrap_or(0)).collect();
        let mut inner = Vec::new();
        while child_first.len() > 1 {
            let mut level = Vec::new();
            let mut next_first = Vec::new();
            for (ni, chunk) in child_first.chunks(k + 1).enumerate() {
                level.push(InnerNode { seps: chunk[1..].to_vec(), first_child: (ni * (k + 1)) as u64 });
                next_first.push(chunk[0]);
            }
            inner.push(level);
            child_first = next_first;
        }
        // Inner nodes are allocated root first, then each level below.
        let mut level_base = vec![0u64; inner.len()];
        let mut at = 0;
        for l in (0..inner.len()).rev() {
            level_base[l] = at;
            at += inner[l].len() as u64;
        }
        BPlusTree { k, leaf_keys: keys, leaf_vals: vals, inner, inner_arr, leaf_arr, level_base, leaves }
    }

    /// Index of the first key > `key` in `keys`, recording each probe's 8-byte load at
    /// `base + 8 * (slot0 + i)`. The node's address came from the load at `from` (none:
    /// the root's address is fixed). Returns it and the instructions after the last probe.
    #[inline]
    fn upper_bound<R: Recorder>(rec: &mut R, keys: &[u64], key: u64, node_va: u64, key_off: u64, from: Option<Pos>) -> (usize, u32) {
        let (mut lo, mut hi) = (0usize, keys.len());
        let (mut delta, mut tail) = (cost::FIRST_PROBE, 0);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let va = node_va + key_off + 8 * mid as u64;
            read(rec, va, delta, from);
            delta = cost::PROBE;
            if keys[mid] <= key {
                lo = mid + 1;
                tail = cost::RIGHT;
            } else {
                hi = mid;
                tail = cost::LEFT;
            }
            delta += tail;
        }
        // (No probe: the search's xor, jmp.)
        let tail = if keys.is_empty() { cost::FIRST_PROBE - cost::PROBE } else { tail };
        (lo, tail + cost::END)
    }

    /// Look `key` up, recording every node access; returns its value. `tail` holds the
    /// instructions since the last reference: on entry those before the root's key count is
    /// read, on return those after the lookup's last reference.
    pub fn lookup<R: Recorder>(&self, rec: &mut R, key: u64, tail: &mut u32) -> Option<u64> {
        let mut child = 0u64;
        // Where the pointer to the current node was loaded (none for the root).
        let mut pointer: Option<Pos> = None;
        for l in (0..self.inner.len()).rev() {
            let node = &self.inner[l][child as usize];
            let va = self.inner_arr.at(self.level_base[l] + child);
            // The key count; the node's address came from the parent's child pointer, and so
            // do the addresses of the keys and the child pointer read after it.
            read(rec, va, std::mem::take(tail) + if pointer.is_some() { cost::COUNT } else { 0 }, pointer);
            let (i, after) = Self::upper_bound(rec, &node.seps, key, va, 8, pointer);
            // Child pointers follow the keys.
            let here = rec.here();
            read(rec, va + 8 + 8 * self.k as u64 + 8 * i as u64, after + cost::CHILD, pointer);
            pointer = Some(here);
            child = node.first_child + i as u64;
        }
        let leaf = child as usize;
        let s = leaf * self.k;
        let e = (s + self.k).min(self.leaf_keys.len());
        let va = self.leaf_arr.at(leaf as u64);
        // (A tree of one leaf has it for root.)
        read(rec, va, std::mem::take(tail) + if pointer.is_some() { cost::COUNT } else { 0 }, pointer);
        let keys = &self.leaf_keys[s..e];
        let (i, after) = Self::upper_bound(rec, keys, key, va, 16, pointer);
        if i > 0 && keys[i - 1] == key {
            read(rec, va + 16 + 8 * self.k as u64 + 8 * (i as u64 - 1), after + cost::VALUE, pointer);
            Some(self.leaf_vals[s + i - 1])
        } else {
            *tail = after + cost::MISS[usize::from(i > 0)];
            None
        }
    }

    pub fn height(&self) -> usize {
        self.inner.len() + 1
    }
}

/// An 8-byte read of a node whose address came from the load at `pointer` (none: the root,
/// at a fixed address), `delta` instructions after the reference before it.
#[inline(always)]
fn read<R: Recorder>(rec: &mut R, va: u64, delta: u32, pointer: Option<Pos>) {
    rec.load_from_opt(va, 8, delta, pointer)
}

pub struct BTree {
    vas: Vas,
    inner_arr: Arr,
    leaf_arr: Arr,
    n: u64,
    node: u64,
    lookups: u64,
    hit: f64,
    threads: usize,
    seed: u64,
    pub tree: Option<BPlusTree>,
    pub found: u64,
    pub wrong: u64,
}

/// Keys are `16 * i + jitter(i)`: sorted, distinct, and key presence is checkable.
fn key_of(i: u64, seed: u64) -> u64 {
    16 * i + (derive(seed, i) % 15)
}

impl KernelImpl for BTree {
    fn new(p: &Params, _native: bool) -> Result<Self, WorkloadError> {
        let n = p.range("n", 1, 1 << 36)?;
        let node = p.range("node", 64, 4096)?;
        let hit = p.f64("hit");
        if !(0.0..=1.0).contains(&hit) {
            return Err(p.bad("hit", "must be in [0, 1]"));
        }
        let mut vas = Vas::new();
        let (inner_arr, leaf_arr) = BPlusTree::layout(&mut vas, n, node, "");
        Ok(BTree { vas, inner_arr, leaf_arr, n, node, lookups: p.u64("lookups"), hit, threads: p.threads(), seed: p.seed(), tree: None, found: 0, wrong: 0 })
    }
    fn vas(&self) -> &Vas {
        &self.vas
    }
    fn threads(&self) -> usize {
        self.threads
    }

    fn run<R: Recorder>(&mut self, rec: &mut R) -> u64 {
        let seed = self.seed;
        let keys: Vec<u64> = (0..self.n).map(|i| key_of(i, seed)).collect();
        let vals: Vec<u64> = keys.iter().map(|k| k.wrapping_mul(3) ^ 0x5A5A).collect();
        let tree = BPlusTree::build(keys, vals, self.node, self.inner_arr, self.leaf_arr);
        rec.roi_begin();
        let mut rngs: Vec<Rng> = (0..self.threads).map(|t| Rng::new(derive(seed, 0xB7 + t as u64))).collect();
        let (n, hit) = (self.n, self.hit);
        let (mut found, mut wrong, mut digest) = (0u64, 0u64, 0u64);
        let mut tails = vec![0u32; self.threads];
        interleave(rec, &static_split(self.lookups, self.threads), 256, |rec, t, lo, hi| {
            let rng = &mut rngs[t];
            let tail = &mut tails[t];
            for _ in lo..hi {
                let i = rng.below(n);
                let present = rng.f64() < hit;
                // An absent key: the same slot shifted to a jitter value that is never used.
                let key = if present { key_of(i, seed) } else { 16 * i + 15 };
                *tail += cost::DRAW + if present { cost::PRESENT_KEY } else { cost::ABSENT_KEY } + cost::ROOT;
                let value = tree.lookup(rec, key, tail);
                // The loop's add, cmp, jne, after a value found also the sum's add.
                *tail += if value.is_some() { 4 } else { 3 };
                match value {
                    Some(v) => {
                        found += 1;
                        digest = digest.wrapping_add(v);
                        if !present || v != key.wrapping_mul(3) ^ 0x5A5A {
                            wrong += 1;
                        }
                    }
                    None => {
                        if present {
                            wrong += 1;
                        }
                    }
                }
            }
        });
        self.found = found;
        self.wrong = wrong;
        self.tree = Some(tree);
        digest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::*;

    /// One lookup's instructions are the C loop's (see [`cost`]). In a tree of two leaves under
    /// a root, looking up the 21st key reads the root's count (carrying what came before it:
    /// here 75), probes one key and goes right (7), reads the child pointer (right, the loop's
    /// end, the mov: 6), the leaf's count (3), probes keys 22 (7, left), 18 (7, right), 20 (8,
    /// right) and 21 (8, left), and reads the value (left, the loop's end, test, je, cmp, jne,
    /// mov: 9).
    #[test]
    fn a_lookups_instructions_are_the_c_loops() {
        let keys: Vec<u64> = (0..30).map(|i| key_of(i, 9)).collect();
        let mut vas = Vas::new();
        let (ia, la) = BPlusTree::layout(&mut vas, 30, 256, "");
        let t = BPlusTree::build(keys.clone(), (0..30).collect(), 256, ia, la);
        assert_eq!(t.height(), 2);
        let mut rec = crate::recorder::VecRecorder::default();
        let mut tail = 75;
        assert_eq!(t.lookup(&mut rec, keys[20], &mut tail), Some(20));
        let deltas: Vec<u32> = rec.streams[0].iter().map(|r| r.inst_delta).collect();
        assert_eq!(deltas, [75, 7, 6, 3, 7, 7, 8, 8, 9]);
        assert_eq!(tail, 0);
        // A key that is not there: the same probes, then left, the loop's end, test, je, cmp, jne.
        let mut rec = crate::recorder::VecRecorder::default();
        let mut tail = 0;
        assert_eq!(t.lookup(&mut rec, keys[20] + 1, &mut tail), None);
        assert_eq!((rec.streams[0].len(), tail), (8, 8));
        // In the kernel, the first lookup's root read carries the key's draw: 75 instructions for
        // a key that is there, 49 for one that is not.
        let (_, s, _) = run_recorded::<BTree>("btree", PARAMS, "n=1000,lookups=1");
        assert!([75, 49].contains(&s[0][0].inst_delta), "{}", s[0][0].inst_delta);
    }

    #[test]
    fn lookups_find_exactly_the_present_keys() {
        let (k, s, _) = run_recorded::<BTree>("btree", PARAMS, "n=100000,lookups=20000,threads=2,node=128");
        assert_eq!(k.wrong, 0);
        let frac = k.found as f64 / 20000.0;
        assert!((frac - 0.9).abs() < 0.02, "{frac}");
        let t = k.tree.as_ref().unwrap();
        // 7 keys per 128-byte node: 100000 keys -> 14286 leaves -> height 6.
        assert_eq!(t.k, 7);
        assert_eq!(t.height(), 6);
        assert_in_regions(&k.vas, &s);
        // Every key of a small tree is found with its value.
        let keys: Vec<u64> = (0..1000).map(|i| key_of(i, 9)).collect();
        let vals: Vec<u64> = (0..1000).collect();
        let mut vas = Vas::new();
        let (ia, la) = BPlusTree::layout(&mut vas, 1000, 256, "");
        let t = BPlusTree::build(keys.clone(), vals, 256, ia, la);
        let mut rec = crate::recorder::VecRecorder::default();
        for (i, &key) in keys.iter().enumerate() {
            assert_eq!(t.lookup(&mut rec, key, &mut 0), Some(i as u64));
            assert_eq!(t.lookup(&mut rec, 16 * i as u64 + 15, &mut 0), None);
        }
        assert_eq!(t.lookup(&mut rec, 16 * 5 + 15, &mut 0), None);
        assert_in_regions(&vas, &rec.streams);
    }

    /// Below the root, every read of a node (its key count, the keys the search probes, the
    /// child pointer or value) waits for the load of the parent's child pointer, however many
    /// probes came between: that is where its address came from.
    #[test]
    fn a_nodes_reads_all_wait_for_the_pointer_to_it() {
        let keys: Vec<u64> = (0..1000).map(|i| key_of(i, 9)).collect();
        let mut vas = Vas::new();
        let (ia, la) = BPlusTree::layout(&mut vas, 1000, 256, "");
        let t = BPlusTree::build(keys.clone(), (0..1000).collect(), 256, ia, la);
        assert!(t.height() >= 3);
        let mut rec = crate::recorder::VecRecorder::default();
        assert_eq!(t.lookup(&mut rec, keys[777], &mut 0), Some(777));
        let refs = &rec.streams[0];
        let node = |va: u64| va / 256;
        let root = node(refs[0].va);
        for (n, r) in refs.iter().enumerate() {
            let p = usize::from(r.producer());
            if node(r.va) == root {
                assert_eq!(p, 0, "the root's address is fixed");
                continue;
            }
            assert!(p > 0, "read {n} of a node recorded as independent");
            let pointer = refs[n - p];
            assert_ne!(node(pointer.va), node(r.va), "read {n}'s producer is in the parent");
            // The pointer is the parent's last read before this node's first.
            let first = refs.iter().position(|q| node(q.va) == node(r.va)).unwrap();
            assert_eq!(n - p, first - 1, "read {n} waits for the child pointer");
        }
    }
}
