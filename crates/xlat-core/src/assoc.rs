//! A set-associative array of (key, value) blocks with a pluggable replacement policy: the
//! storage shared by TLBs, page-walk caches and data caches.

use crate::config::Policy;
use crate::repl::{AnyPolicy, LineKind, ReplacementPolicy};

/// A key that has a reserved "invalid" value, so a way needs no separate valid bit.
pub trait Key: Copy + Eq {
    const INVALID: Self;
}

impl Key for u64 {
    const INVALID: u64 = u64::MAX;
}

pub struct SetAssoc<K: Key, V: Copy + Default> {
    sets: usize,
    ways: usize,
    keys: Vec<K>,
    vals: Vec<V>,
    kinds: Vec<LineKind>,
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
    /// `sets` must be a power of two (checked by config validation).
    pub fn new(sets: usize, ways: usize, policy: Policy, seed: u64) -> Self {
        assert!(sets.is_power_of_two() && ways > 0, "geometry {sets}x{ways} must be validated by Config");
        SetAssoc {
            sets,
            ways,
            keys: vec![K::INVALID; sets * ways],
            vals: vec![V::default(); sets * ways],
            kinds: vec![LineKind::Data; sets * ways],
            policy: AnyPolicy::new(policy, sets, ways, seed),
        }
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
        (n as usize) & (self.sets - 1)
    }

    /// Find `key` in `set` without touching replacement state.
    #[inline]
    pub fn probe(&self, set: usize, key: K) -> Option<usize> {
        let base = set * self.ways;
        self.keys[base..base + self.ways].iter().position(|&k| k == key).map(|w| base + w)
    }

    /// Find `key` in `set`; a hit updates the replacement state. Returns the slot.
    #[inline]
    pub fn lookup(&mut self, set: usize, key: K) -> Option<usize> {
        let slot = self.probe(set, key)?;
        self.policy.on_hit(set, slot - set * self.ways);
        Some(slot)
    }

    /// Insert `key` (known to be absent) into `set`, evicting if the set is full.
    /// Returns the new slot and the evicted block, if any.
    #[inline]
    pub fn insert(&mut self, set: usize, key: K, val: V, kind: LineKind) -> (usize, Option<Evicted<K, V>>) {
        let base = set * self.ways;
        let (way, evicted) = match self.keys[base..base + self.ways].iter().position(|&k| k == K::INVALID) {
            Some(w) => (w, None),
            None => {
                let w = self.policy.victim(set, &self.kinds[base..base + self.ways]);
                (w, Some(Evicted { key: self.keys[base + w], val: self.vals[base + w], kind: self.kinds[base + w] }))
            }
        };
        let slot = base + way;
        self.keys[slot] = key;
        self.vals[slot] = val;
        self.kinds[slot] = kind;
        self.policy.on_fill(set, way);
        (slot, evicted)
    }

    #[inline]
    pub fn key(&self, slot: usize) -> K {
        self.keys[slot]
    }

    #[inline]
    pub fn val(&self, slot: usize) -> &V {
        &self.vals[slot]
    }

    #[inline]
    pub fn val_mut(&mut self, slot: usize) -> &mut V {
        &mut self.vals[slot]
    }

    #[inline]
    pub fn kind(&self, slot: usize) -> LineKind {
        self.kinds[slot]
    }

    /// Drop the block in `slot`; returns what it held.
    #[inline]
    pub fn invalidate_slot(&mut self, slot: usize) -> Option<Evicted<K, V>> {
        let key = self.keys[slot];
        if key == K::INVALID {
            return None;
        }
        self.keys[slot] = K::INVALID;
        Some(Evicted { key, val: self.vals[slot], kind: self.kinds[slot] })
    }

    /// Drop every block for which `pred(key, value)` holds; returns how many.
    pub fn invalidate_where(&mut self, mut pred: impl FnMut(K, &V) -> bool) -> usize {
        let mut n = 0;
        for slot in 0..self.keys.len() {
            let k = self.keys[slot];
            if k != K::INVALID && pred(k, &self.vals[slot]) {
                self.keys[slot] = K::INVALID;
                n += 1;
            }
        }
        n
    }

    /// Number of valid blocks.
    pub fn occupancy(&self) -> usize {
        self.keys.iter().filter(|&&k| k != K::INVALID).count()
    }
}
