//! Replacement policies, shared by caches, TLBs and page-walk caches.
//!
//! A policy is a small trait (ChampSim-style plug-in) that sees one set at a time. Its
//! per-block state is a small integer (`Way::age`) stored beside the block's tag, so a lookup
//! touches one contiguous stretch of host memory: the simulator's speed on TLB-thrashing
//! workloads is bounded by host cache misses, not by arithmetic. Containers pick invalid
//! ways themselves and ask the policy only to rank valid ones. The enum [`AnyPolicy`]
//! dispatches statically, so the hot path has no virtual calls.

use crate::config::Policy;

/// What a cache line holds; policies such as page-table prioritization look at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum LineKind {
    #[default]
    Data = 0,
    PageTable = 1,
    TlbEntry = 2,
}

impl LineKind {
    pub const ALL: [LineKind; 3] = [LineKind::Data, LineKind::PageTable, LineKind::TlbEntry];
    pub fn name(self) -> &'static str {
        match self {
            LineKind::Data => "data",
            LineKind::PageTable => "pt",
            LineKind::TlbEntry => "tlbe",
        }
    }
}

/// One block of a set: tag, payload, kind and the policy's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Way<K, V> {
    pub key: K,
    pub val: V,
    pub kind: LineKind,
    /// Policy state: LRU/FIFO rank (0 = most recent), or SRRIP's re-reference prediction.
    pub age: u16,
}

/// The interface every replacement policy implements. `set` is the whole set.
pub trait ReplacementPolicy {
    /// Prepare the state of a fresh (all-invalid) set.
    fn init<K: Copy, V: Copy>(&self, set: &mut [Way<K, V>]);
    /// Block `way` was hit.
    fn on_hit<K: Copy, V: Copy>(&mut self, set: &mut [Way<K, V>], way: usize);
    /// Block `way` was just filled.
    fn on_fill<K: Copy, V: Copy>(&mut self, set: &mut [Way<K, V>], way: usize);
    /// Pick the way to evict from a full set.
    fn victim<K: Copy, V: Copy>(&mut self, set: &mut [Way<K, V>]) -> usize;
}

/// Move `way` to rank 0, ageing the blocks that were more recent than it.
#[inline]
fn promote<K, V>(set: &mut [Way<K, V>], way: usize) {
    let old = set[way].age;
    for w in set.iter_mut() {
        if w.age < old {
            w.age += 1;
        }
    }
    set[way].age = 0;
}

/// The way with the highest rank (the least recently used / first in).
#[inline]
fn oldest<K, V>(set: &[Way<K, V>]) -> usize {
    let mut best = 0;
    for (i, w) in set.iter().enumerate() {
        if w.age > set[best].age {
            best = i;
        }
    }
    best
}

/// True LRU: ranks form a permutation of 0..ways; the highest rank is evicted.
pub struct Lru;

impl ReplacementPolicy for Lru {
    fn init<K: Copy, V: Copy>(&self, set: &mut [Way<K, V>]) {
        for (i, w) in set.iter_mut().enumerate() {
            w.age = i as u16;
        }
    }
    #[inline]
    fn on_hit<K: Copy, V: Copy>(&mut self, set: &mut [Way<K, V>], way: usize) {
        promote(set, way)
    }
    #[inline]
    fn on_fill<K: Copy, V: Copy>(&mut self, set: &mut [Way<K, V>], way: usize) {
        promote(set, way)
    }
    #[inline]
    fn victim<K: Copy, V: Copy>(&mut self, set: &mut [Way<K, V>]) -> usize {
        oldest(set)
    }
}

/// First in, first out: like LRU, but hits do not change the order.
pub struct Fifo;

impl ReplacementPolicy for Fifo {
    fn init<K: Copy, V: Copy>(&self, set: &mut [Way<K, V>]) {
        Lru.init(set)
    }
    #[inline]
    fn on_hit<K: Copy, V: Copy>(&mut self, _set: &mut [Way<K, V>], _way: usize) {}
    #[inline]
    fn on_fill<K: Copy, V: Copy>(&mut self, set: &mut [Way<K, V>], way: usize) {
        promote(set, way)
    }
    #[inline]
    fn victim<K: Copy, V: Copy>(&mut self, set: &mut [Way<K, V>]) -> usize {
        oldest(set)
    }
}

/// Static RRIP (Jaleel et al., ISCA 2010) with 2-bit re-reference predictions: insert at
/// "long" (2), promote to 0 on a hit, evict the first way predicted "distant" (3), ageing
/// the whole set until one is.
pub struct Srrip;

impl Srrip {
    const DISTANT: u16 = 3;
}

impl ReplacementPolicy for Srrip {
    fn init<K: Copy, V: Copy>(&self, set: &mut [Way<K, V>]) {
        for w in set.iter_mut() {
            w.age = Self::DISTANT;
        }
    }
    #[inline]
    fn on_hit<K: Copy, V: Copy>(&mut self, set: &mut [Way<K, V>], way: usize) {
        set[way].age = 0;
    }
    #[inline]
    fn on_fill<K: Copy, V: Copy>(&mut self, set: &mut [Way<K, V>], way: usize) {
        set[way].age = Self::DISTANT - 1;
    }
    fn victim<K: Copy, V: Copy>(&mut self, set: &mut [Way<K, V>]) -> usize {
        loop {
            if let Some(w) = set.iter().position(|w| w.age >= Self::DISTANT) {
                return w;
            }
            for w in set.iter_mut() {
                w.age += 1;
            }
        }
    }
}

/// Uniform random victim from a seeded xorshift generator (deterministic per seed).
pub struct Random {
    state: u64,
}

impl ReplacementPolicy for Random {
    fn init<K: Copy, V: Copy>(&self, _set: &mut [Way<K, V>]) {}
    #[inline]
    fn on_hit<K: Copy, V: Copy>(&mut self, _set: &mut [Way<K, V>], _way: usize) {}
    #[inline]
    fn on_fill<K: Copy, V: Copy>(&mut self, _set: &mut [Way<K, V>], _way: usize) {}
    #[inline]
    fn victim<K: Copy, V: Copy>(&mut self, set: &mut [Way<K, V>]) -> usize {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        (self.state % set.len() as u64) as usize
    }
}

/// Every policy, chosen by config, dispatched by `match`.
pub enum AnyPolicy {
    Lru(Lru),
    Fifo(Fifo),
    Srrip(Srrip),
    Random(Random),
}

impl AnyPolicy {
    pub fn new(policy: Policy, seed: u64) -> AnyPolicy {
        match policy {
            Policy::Lru => AnyPolicy::Lru(Lru),
            Policy::Fifo => AnyPolicy::Fifo(Fifo),
            Policy::Srrip => AnyPolicy::Srrip(Srrip),
            Policy::Random => AnyPolicy::Random(Random { state: seed | 1 }),
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $p:ident => $e:expr) => {
        match $self {
            AnyPolicy::Lru($p) => $e,
            AnyPolicy::Fifo($p) => $e,
            AnyPolicy::Srrip($p) => $e,
            AnyPolicy::Random($p) => $e,
        }
    };
}

impl ReplacementPolicy for AnyPolicy {
    fn init<K: Copy, V: Copy>(&self, set: &mut [Way<K, V>]) {
        dispatch!(self, p => p.init(set))
    }
    #[inline]
    fn on_hit<K: Copy, V: Copy>(&mut self, set: &mut [Way<K, V>], way: usize) {
        dispatch!(self, p => p.on_hit(set, way))
    }
    #[inline]
    fn on_fill<K: Copy, V: Copy>(&mut self, set: &mut [Way<K, V>], way: usize) {
        dispatch!(self, p => p.on_fill(set, way))
    }
    #[inline]
    fn victim<K: Copy, V: Copy>(&mut self, set: &mut [Way<K, V>]) -> usize {
        dispatch!(self, p => p.victim(set))
    }
}
