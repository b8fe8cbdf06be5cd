//! Replacement policies, shared by caches and TLBs.
//!
//! A policy is a small trait (ChampSim-style plug-in). Containers pick invalid ways
//! themselves and ask the policy only to rank valid ones. The enum [`AnyPolicy`] dispatches
//! statically, so the hot path has no virtual calls.

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

/// The interface every replacement policy implements.
pub trait ReplacementPolicy {
    /// A block at (`set`, `way`) was hit.
    fn on_hit(&mut self, set: usize, way: usize);
    /// A block was filled into (`set`, `way`).
    fn on_fill(&mut self, set: usize, way: usize);
    /// Pick the way to evict from a full set; `kinds[w]` is the kind of way `w`'s block.
    fn victim(&mut self, set: usize, kinds: &[LineKind]) -> usize;
}

/// True LRU by timestamps: the way with the oldest use is the victim.
pub struct Lru {
    ways: usize,
    stamp: Vec<u64>,
    clock: u64,
}

impl Lru {
    pub fn new(sets: usize, ways: usize) -> Lru {
        Lru { ways, stamp: vec![0; sets * ways], clock: 0 }
    }

    /// The least recently used way of `set` among those for which `eligible` holds.
    #[inline]
    pub fn oldest(&self, set: usize, eligible: impl Fn(usize) -> bool) -> Option<usize> {
        let base = set * self.ways;
        let mut best: Option<usize> = None;
        let mut best_stamp = u64::MAX;
        for w in 0..self.ways {
            let s = self.stamp[base + w];
            if s < best_stamp && eligible(w) {
                best_stamp = s;
                best = Some(w);
            }
        }
        best
    }
}

impl ReplacementPolicy for Lru {
    #[inline]
    fn on_hit(&mut self, set: usize, way: usize) {
        self.clock += 1;
        self.stamp[set * self.ways + way] = self.clock;
    }
    #[inline]
    fn on_fill(&mut self, set: usize, way: usize) {
        self.on_hit(set, way)
    }
    #[inline]
    fn victim(&mut self, set: usize, _kinds: &[LineKind]) -> usize {
        self.oldest(set, |_| true).unwrap_or(0)
    }
}

/// First in, first out: hits do not change the order.
pub struct Fifo(Lru);

impl ReplacementPolicy for Fifo {
    #[inline]
    fn on_hit(&mut self, _set: usize, _way: usize) {}
    #[inline]
    fn on_fill(&mut self, set: usize, way: usize) {
        self.0.on_fill(set, way)
    }
    #[inline]
    fn victim(&mut self, set: usize, kinds: &[LineKind]) -> usize {
        self.0.victim(set, kinds)
    }
}

/// Static RRIP (Jaleel et al., ISCA 2010) with 2-bit re-reference predictions: insert at
/// "long" (2), promote to 0 on a hit, evict the first way predicted "distant" (3), ageing
/// the set until one is.
pub struct Srrip {
    ways: usize,
    rrpv: Vec<u8>,
}

impl Srrip {
    const MAX: u8 = 3;
    pub fn new(sets: usize, ways: usize) -> Srrip {
        Srrip { ways, rrpv: vec![Self::MAX; sets * ways] }
    }
}

impl ReplacementPolicy for Srrip {
    #[inline]
    fn on_hit(&mut self, set: usize, way: usize) {
        self.rrpv[set * self.ways + way] = 0;
    }
    #[inline]
    fn on_fill(&mut self, set: usize, way: usize) {
        self.rrpv[set * self.ways + way] = Self::MAX - 1;
    }
    fn victim(&mut self, set: usize, _kinds: &[LineKind]) -> usize {
        let r = &mut self.rrpv[set * self.ways..(set + 1) * self.ways];
        loop {
            if let Some(w) = r.iter().position(|&v| v == Self::MAX) {
                return w;
            }
            for v in r.iter_mut() {
                *v += 1;
            }
        }
    }
}

/// Uniform random victim from a seeded xorshift generator (deterministic per seed).
pub struct Random {
    ways: usize,
    state: u64,
}

impl ReplacementPolicy for Random {
    #[inline]
    fn on_hit(&mut self, _set: usize, _way: usize) {}
    #[inline]
    fn on_fill(&mut self, _set: usize, _way: usize) {}
    #[inline]
    fn victim(&mut self, _set: usize, _kinds: &[LineKind]) -> usize {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        (self.state % self.ways as u64) as usize
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
    pub fn new(policy: Policy, sets: usize, ways: usize, seed: u64) -> AnyPolicy {
        match policy {
            Policy::Lru => AnyPolicy::Lru(Lru::new(sets, ways)),
            Policy::Fifo => AnyPolicy::Fifo(Fifo(Lru::new(sets, ways))),
            Policy::Srrip => AnyPolicy::Srrip(Srrip::new(sets, ways)),
            Policy::Random => AnyPolicy::Random(Random { ways, state: seed | 1 }),
        }
    }
}

impl ReplacementPolicy for AnyPolicy {
    #[inline]
    fn on_hit(&mut self, set: usize, way: usize) {
        match self {
            AnyPolicy::Lru(p) => p.on_hit(set, way),
            AnyPolicy::Fifo(p) => p.on_hit(set, way),
            AnyPolicy::Srrip(p) => p.on_hit(set, way),
            AnyPolicy::Random(p) => p.on_hit(set, way),
        }
    }
    #[inline]
    fn on_fill(&mut self, set: usize, way: usize) {
        match self {
            AnyPolicy::Lru(p) => p.on_fill(set, way),
            AnyPolicy::Fifo(p) => p.on_fill(set, way),
            AnyPolicy::Srrip(p) => p.on_fill(set, way),
            AnyPolicy::Random(p) => p.on_fill(set, way),
        }
    }
    #[inline]
    fn victim(&mut self, set: usize, kinds: &[LineKind]) -> usize {
        match self {
            AnyPolicy::Lru(p) => p.victim(set, kinds),
            AnyPolicy::Fifo(p) => p.victim(set, kinds),
            AnyPolicy::Srrip(p) => p.victim(set, kinds),
            AnyPolicy::Random(p) => p.victim(set, kinds),
        }
    }
}
