//! A set-associative array of (key, value) blocks with a pluggable replacement policy: the
//! storage shared by TLBs, page-walk caches and data caches. Each set is one contiguous
//! run of [`Way`]s (tag, payload, kind and policy byte together).

use crate::config::Policy;
use crate::repl::{oldest, AnyPolicy, LineKind, ReplacementPolicy, Way};

/// A key that has a reserved "invalid" value, so a way needs no separate valid bit.
pub trait Key: Copy + Eq {
    const INVALID: Self;
}

impl Key for u64 {
    const INVALID: u64 = u64::MAX;
}

pub struct SetAssoc<K: Key, V: Copy + Default> {
    sets: usize,
    /// `sets - 1`: a number's low bits select its set.
    set_mask: usize,
    ways: usize,
    blocks: crate::hostmem::HugeBuf<Way<K, V>>,
    policy: AnyPolicy,
}

/// A block pushed out by an insertion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Evicted<K, V> {
    pub key: K,
    pub val: V,
    pub kind: LineKind,
}

impl<K: Key, V: Copy + Default> SetAssoc<K, V> {
    /// `sets` must be a power of two and `ways` at most 4096 (checked by config validation).
    pub fn new(sets: usize, ways: usize, policy: Policy, seed: u64) -> Self {
        assert!(sets.is_power_of_two() && ways > 0 && ways <= 4096, "geometry {sets}x{ways} must be validated by Config");
        let policy = AnyPolicy::new(policy, seed);
        let mut blocks = crate::hostmem::HugeBuf::new(sets * ways, Way { key: K::INVALID, val: V::default(), kind: LineKind::Data, owner: 0, age: 0 });
        for set in blocks.chunks_mut(ways) {
            policy.init(set);
        }
        SetAssoc { sets, set_mask: sets - 1, ways, blocks, policy }
    }

    #[inline]
    pub fn sets(&self) -> usize {
        self.sets
    }

    #[inline]
    pub fn ways(&self) -> usize {
        self.ways
    }

    /// Set index for a number whose low bits select the set.
    #[inline]
    pub fn set_of(&self, n: u64) -> usize {
        (n as usize) & self.set_mask
    }

    /// Hint the host CPU to load `set`'s blocks (the first two host lines of it).
    #[inline]
    pub fn prefetch_set(&self, set: usize) {
        let p = self.blocks.as_ptr().wrapping_add(set * self.ways);
        crate::prefetch(p);
        crate::prefetch((p as *const u8).wrapping_add(64));
    }

    /// Find `key` in `set` without touching replacement state. Returns the slot.
    #[inline]
    pub fn probe(&self, set: usize, key: K) -> Option<usize> {
        let base = set * self.ways;
        self.blocks[base..base + self.ways].iter().position(|w| w.key == key).map(|w| base + w)
    }

    /// Find `key` in `set`; a hit updates the replacement state. Returns the slot.
    #[inline]
    pub fn lookup(&mut self, set: usize, key: K) -> Option<usize> {
        let slot = self.probe(set, key)?;
        // LRU and FIFO (nearly every structure) inline; the other policies dispatch.
        if let AnyPolicy::Stamped(p) = &mut self.policy {
            if let Some(t) = p.hit_stamp() {
                self.blocks[slot].age = t;
                if t >= crate::repl::STAMP_LIMIT {
                    self.renumber();
                }
            }
            return Some(slot);
        }
        self.lookup_other(set, slot);
        Some(slot)
    }

    #[inline(never)]
    fn lookup_other(&mut self, set: usize, slot: usize) {
        let base = set * self.ways;
        let (blocks, policy) = (&mut self.blocks[base..base + self.ways], &mut self.policy);
        policy.on_hit(blocks, slot - base);
        if policy.clock_exhausted() {
            self.renumber();
        }
    }

    /// Replace every set's stamps by their ranks (same order, small numbers) and restart the
    /// policy's clock above them: what a 32-bit clock needs every few billion operations.
    #[cold]
    fn renumber(&mut self) {
        let ways = self.ways;
        let mut order: Vec<usize> = Vec::with_capacity(ways);
        for set in self.blocks.chunks_mut(ways) {
            order.clear();
            order.extend(0..ways);
            order.sort_by_key(|&w| set[w].age);
            // Ranks start at 1: stamp 0 is reserved for invalid blocks.
            for (rank, &w) in order.iter().enumerate() {
                set[w].age = if set[w].key == K::INVALID { 0 } else { rank as u32 + 1 };
            }
        }
        self.policy.restart_clock(ways as u32 + 1);
    }

    /// Insert `key` (known to be absent) into `set`, evicting if the set is full.
    /// Returns the new slot and the evicted block, if any.
    #[inline]
    pub fn insert(&mut self, set: usize, key: K, val: V, kind: LineKind) -> (usize, Option<Evicted<K, V>>) {
        self.insert_owned(set, key, val, kind, 0)
    }

    /// [`Self::insert`] for a block brought in by core `owner`.
    #[inline]
    pub fn insert_owned(&mut self, set: usize, key: K, val: V, kind: LineKind, owner: u8) -> (usize, Option<Evicted<K, V>>) {
        let base = set * self.ways;
        let ways = self.ways;
        if let AnyPolicy::Stamped(p) = &mut self.policy {
            // Invalid blocks have stamp 0 and valid ones at least 1, so one pass finds an
            // invalid block or else the oldest: the common case needs no second scan.
            let blocks = &mut self.blocks[base..base + ways];
            let way = oldest(blocks);
            let b = &mut blocks[way];
            let evicted = (b.key != K::INVALID).then_some(Evicted { key: b.key, val: b.val, kind: b.kind });
            let t = p.fill_stamp();
            *b = Way { key, val, kind, owner, age: t };
            if t >= crate::repl::STAMP_LIMIT {
                self.renumber();
            }
            return (base + way, evicted);
        }
        self.insert_other(set, key, val, kind, owner)
    }

    #[inline(never)]
    fn insert_other(&mut self, set: usize, key: K, val: V, kind: LineKind, owner: u8) -> (usize, Option<Evicted<K, V>>) {
        let base = set * self.ways;
        let ways = self.ways;
        let (blocks, policy) = (&mut self.blocks[base..base + ways], &mut self.policy);
        let way = match blocks.iter().position(|w| w.key == K::INVALID) {
            Some(w) => w,
            None => policy.victim(blocks),
        };
        let b = &blocks[way];
        let evicted = (b.key != K::INVALID).then_some(Evicted { key: b.key, val: b.val, kind: b.kind });
        let b = &mut blocks[way];
        b.key = key;
        b.val = val;
        b.kind = kind;
        b.owner = owner;
        policy.on_fill(blocks, way);
        if policy.clock_exhausted() {
            self.renumber();
        }
        (base + way, evicted)
    }

    #[inline]
    pub fn key(&self, slot: usize) -> K {
        self.blocks[slot].key
    }

    #[inline]
    pub fn val(&self, slot: usize) -> &V {
        &self.blocks[slot].val
    }

    #[inline]
    pub fn val_mut(&mut self, slot: usize) -> &mut V {
        &mut self.blocks[slot].val
    }

    #[inline]
    pub fn kind(&self, slot: usize) -> LineKind {
        self.blocks[slot].kind
    }

    /// Drop the block in `slot`; returns what it held.
    #[inline]
    pub fn invalidate_slot(&mut self, slot: usize) -> Option<Evicted<K, V>> {
        let b = &mut self.blocks[slot];
        if b.key == K::INVALID {
            return None;
        }
        let key = b.key;
        b.key = K::INVALID;
        b.age = 0;
        Some(Evicted { key, val: b.val, kind: b.kind })
    }

    /// Drop every block for which `pred(key, value)` holds; returns how many.
    pub fn invalidate_where(&mut self, mut pred: impl FnMut(K, &V) -> bool) -> usize {
        let mut n = 0;
        for b in self.blocks.iter_mut() {
            if b.key != K::INVALID && pred(b.key, &b.val) {
                b.key = K::INVALID;
                b.age = 0;
                n += 1;
            }
        }
        n
    }

    /// Number of valid blocks.
    pub fn occupancy(&self) -> usize {
        self.blocks.iter().filter(|b| b.key != K::INVALID).count()
    }

    /// The replacement policy, for mechanisms that steer it (page-table prioritization).
    pub fn policy_mut(&mut self) -> &mut AnyPolicy {
        &mut self.policy
    }

    #[doc(hidden)]
    pub fn set_clock_for_test(&mut self, at: u32) {
        self.policy.restart_clock(at);
    }

    /// The keys of `set` (invalid ones included), for tests and debugging.
    pub fn set_keys(&self, set: usize) -> Vec<K> {
        self.blocks[set * self.ways..(set + 1) * self.ways].iter().map(|b| b.key).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renumbering when the stamp clock runs out keeps LRU order.
    #[test]
    fn lru_survives_clock_exhaustion() {
        let mut a: SetAssoc<u64, u8> = SetAssoc::new(1, 4, Policy::Lru, 1);
        for k in 0..4 {
            a.insert(0, k, 0, LineKind::Data);
        }
        a.set_clock_for_test(crate::repl::STAMP_LIMIT - 2);
        a.lookup(0, 0); // 0 becomes most recent: order 1, 2, 3, 0
        a.lookup(0, 2); // renumbering happens around here: order 1, 3, 0, 2
        a.lookup(0, 1); // order 3, 0, 2, 1
        let (_, ev) = a.insert(0, 9, 0, LineKind::Data);
        assert_eq!(ev.unwrap().key, 3);
        let (_, ev) = a.insert(0, 10, 0, LineKind::Data);
        assert_eq!(ev.unwrap().key, 0);
    }
}
