//! Page-walk caches: Intel-style paging-structure caches, one table per upper level of the page
//! table (fully associative or set-associative; LRU, or any policy of `memory/repl/` that
//! ranks by use rather than by what a line holds), mapping a VA prefix (and context) to the
//! node one level down.

use crate::arch::addr::VirtAddr;
use crate::arch::ctx::{Ctx, Invalidate};
use crate::assoc::{Key, SetAssoc};
use crate::memory::repl::LineKind;
use crate::memory::repl::Policy;
use crate::mrc::{StackKey, StackProfile};
use crate::os::pt::{NodeId, NO_NODE};
use crate::translate::tlb::TlbKey;

use crate::param::{bound, component, Limit};

component! {
    /// A page-walk cache: entries per level of the prefixes it caches (`pwc` for the native or
    /// guest walk, `virt.host_pwc` for the host dimension of 2D walks).
    PwcParams {
        l5_entries: u64 = 0; "l5.entries"; Some(Limit::Int(bound::PWC)); "{} entries for L5 prefixes (address bits 56:48; 5-level tables only)";
        l4_entries: u64 = 4; "l4.entries"; Some(Limit::Int(bound::PWC)); "{} entries for L4 prefixes (bits 47:39, pointing to an L3 node)";
        l3_entries: u64 = 4; "l3.entries"; Some(Limit::Int(bound::PWC)); "{} entries for L3 prefixes (bits 47:30, pointing to an L2 node)";
        l2_entries: u64 = 24; "l2.entries"; Some(Limit::Int(bound::PWC)); "{} entries for L2 prefixes (bits 47:21, pointing to an L1 node)";
        l5_ways: u64 = 0; "l5.ways"; Some(Limit::Int(bound::PWC)); "{} associativity of the L5 prefix table (0: fully associative)";
        l4_ways: u64 = 0; "l4.ways"; Some(Limit::Int(bound::PWC)); "{} associativity of the L4 prefix table (0: fully associative)";
        l3_ways: u64 = 0; "l3.ways"; Some(Limit::Int(bound::PWC)); "{} associativity of the L3 prefix table (0: fully associative; a flattened root's table always is)";
        l2_ways: u64 = 0; "l2.ways"; Some(Limit::Int(bound::PWC)); "{} associativity of the L2 prefix table (0: fully associative, as Intel's; ChampSim's are set-associative, indexed by the low bits of the prefix)";
        flat_entries: u64 = 24; "flat.entries"; Some(Limit::Int(bound::PWC)); "{} entries for the 18-bit prefix (bits 47:30) of a flattened L4+L3 root (format fpt or fpt-l4l3; the flattening paper's FPT uses the 24-entry structure)";
        policy: crate::memory::repl::Policy = crate::memory::repl::Policy::Lru; "policy"; None; "{} replacement policy, every level (lru, fifo, random, srrip or nru; Intel's and ChampSim's are LRU)";
    }
    check(p, key) {
        if matches!(p.policy, Policy::Ptp | Policy::CsaltD | Policy::CsaltCd | Policy::Dip) {
            return Err(crate::param::invalid(key("policy"), format!("{} is a cache policy, not a page-walk-cache policy", p.policy.name())));
        }
        for (level, n, w) in [("l2", p.l2_entries, p.l2_ways), ("l3", p.l3_entries, p.l3_ways), ("l4", p.l4_entries, p.l4_ways), ("l5", p.l5_entries, p.l5_ways)] {
            // (0 ways: fully associative.)
            crate::param::geometry(key(&format!("{level}.entries")), key(&format!("{level}.ways")), n, if w == 0 { n } else { w }, true)?;
        }
        crate::param::geometry(key("flat.entries"), key("flat.entries"), p.flat_entries, p.flat_entries, true)
    }
}

/// A small fully-associative LRU table of packed `u64` keys: one page-walk-cache level,
/// probed on every walk (several times per 2D walk). A hash index finds a key without
/// scanning and a doubly linked recency list names the victim, so lookups and fills are
/// O(1) whatever the size. Replacement is exact LRU: the first free entry (lowest index)
/// if any, else the least recently used.
struct FaLru {
    keys: Vec<u64>,
    vals: Vec<NodeId>,
    /// Recency list over valid entries: `prev` towards the most recent, `next` towards
    /// the least; `NIL`-terminated.
    prev: Vec<u32>,
    next: Vec<u32>,
    mru: u32,
    lru: u32,
    /// Free entries, a bit each.
    free: Vec<u64>,
    /// Open-addressing index (linear probing): entry numbers, or `NIL`.
    index: Vec<u32>,
    index_bits: u32,
}

const NIL: u32 = u32::MAX;

impl FaLru {
    const INVALID: u64 = u64::MAX;

    fn new(entries: usize) -> FaLru {
        let index_len = (entries * 2).next_power_of_two().max(8);
        let mut free = vec![0u64; entries.div_ceil(64)];
        for i in 0..entries {
            free[i / 64] |= 1 << (i % 64);
        }
        FaLru {
            keys: vec![Self::INVALID; entries],
            vals: vec![NO_NODE; entries],
            prev: vec![NIL; entries],
            next: vec![NIL; entries],
            mru: NIL,
            lru: NIL,
            free,
            index: vec![NIL; index_len],
            index_bits: index_len.trailing_zeros(),
        }
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - self.index_bits)) as usize
    }

    #[inline]
    fn find(&self, key: u64) -> Option<usize> {
        let mask = self.index.len() - 1;
        let mut h = self.home(key);
        loop {
            let e = self.index[h];
            if e == NIL {
                return None;
            }
            if self.keys[e as usize] == key {
                return Some(e as usize);
            }
            h = (h + 1) & mask;
        }
    }

    fn index_insert(&mut self, key: u64, entry: usize) {
        let mask = self.index.len() - 1;
        let mut h = self.home(key);
        while self.index[h] != NIL {
            h = (h + 1) & mask;
        }
        self.index[h] = entry as u32;
    }

    /// Remove `key` from the index, shifting later members of its probe run back so that
    /// no lookup stops early at the hole.
    fn index_remove(&mut self, key: u64) {
        let mask = self.index.len() - 1;
        let mut h = self.home(key);
        while self.keys[self.index[h] as usize] != key {
            h = (h + 1) & mask;
        }
        let mut hole = h;
        let mut j = h;
        loop {
            j = (j + 1) & mask;
            let e = self.index[j];
            if e == NIL {
                break;
            }
            let home = self.home(self.keys[e as usize]);
            // Move `e` into the hole unless its home lies cyclically in (hole, j].
            let stays = if hole <= j { hole < home && home <= j } else { hole < home || home <= j };
            if !stays {
                self.index[hole] = e;
                hole = j;
            }
        }
        self.index[hole] = NIL;
    }

    #[inline]
    fn unlink(&mut self, i: usize) {
        let (p, n) = (self.prev[i], self.next[i]);
        if p == NIL {
            self.mru = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.lru = p;
        } else {
            self.prev[n as usize] = p;
        }
    }

    #[inline]
    fn push_mru(&mut self, i: usize) {
        self.prev[i] = NIL;
        self.next[i] = self.mru;
        if self.mru == NIL {
            self.lru = i as u32;
        } else {
            self.prev[self.mru as usize] = i as u32;
        }
        self.mru = i as u32;
    }

    #[inline]
    fn lookup(&mut self, key: u64) -> Option<NodeId> {
        let i = self.find(key)?;
        if self.mru != i as u32 {
            self.unlink(i);
            self.push_mru(i);
        }
        Some(self.vals[i])
    }

    /// Install `key -> val`; an entry already there only gets the new value.
    fn fill(&mut self, key: u64, val: NodeId) {
        match self.find(key) {
            Some(i) => self.vals[i] = val,
            None => self.fill_absent(key, val),
        }
    }

    /// Install `key -> val`, known to be absent.
    #[inline]
    fn fill_absent(&mut self, key: u64, val: NodeId) {
        debug_assert!(self.find(key).is_none(), "page-walk cache fill of a cached prefix");
        let i = match self.free.iter().position(|&w| w != 0) {
            Some(w) => {
                let i = w * 64 + self.free[w].trailing_zeros() as usize;
                self.free[w] &= !(1 << (i % 64));
                i
            }
            None => {
                let i = self.lru as usize;
                self.unlink(i);
                self.index_remove(self.keys[i]);
                i
            }
        };
        self.keys[i] = key;
        self.vals[i] = val;
        self.index_insert(key, i);
        self.push_mru(i);
    }

    /// Valid entries: (index, key).
    fn valid(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.keys.iter().copied().enumerate().filter(|&(_, k)| k != Self::INVALID)
    }

    fn invalidate(&mut self, i: usize) {
        self.unlink(i);
        self.index_remove(self.keys[i]);
        self.keys[i] = Self::INVALID;
        self.free[i / 64] |= 1 << (i % 64);
    }
}

/// Intel-style paging-structure caches: one fully-associative LRU table per upper level,
/// mapping a VA prefix to the node one level down. All are probed in parallel; the
/// longest prefix (lowest level) that hits decides where the walk starts.
pub struct Pwc {
    /// Index `l` caches entries of level-`l` nodes (tag = VA >> (12 + 9(l-1))).
    tables: [Option<PwcTable>; 6],
    /// The miss-ratio-curve profile, when one was asked for ([`Pwc::profile`]).
    prof: Option<Box<PwcProfile>>,
}

/// The page-walk cache's one-pass miss-ratio curves ([`crate::mrc`]): a recency stack per
/// level, with the level's sets. Exact for the lowest level; an upper level is filled only
/// when every level below it missed, so its contents depend on theirs and its curve is
/// approximate where they hit (a hit below refreshes an upper entry only in the larger
/// tables that hold it).
pub struct PwcProfile {
    /// Index `l`: level `l`'s stacks (and depth histogram), if the PWC has that level.
    pub levels: [Option<StackProfile>; 6],
}

/// One PWC level: real sizes (a few dozen entries) are one set searched with vector compares,
/// under the level's replacement policy; large fully-associative LRU ones (design-space
/// sweeps) are hash-indexed so a lookup stays O(1).
enum PwcTable {
    /// `sets` sets (a power of two; 1 for a fully-associative table), by the low bits of the
    /// prefix.
    Scan(SetAssoc<u64, NodeId>, u64),
    Hashed(FaLru),
}

/// Largest PWC level searched by scanning.
const PWC_SCAN_MAX: usize = 64;

impl PwcTable {
    /// `ways` 0 (or `entries`): fully associative. A large fully-associative table under a
    /// policy other than LRU is scanned too (the hashed table keeps LRU order only).
    fn new(entries: usize, ways: usize, policy: Policy, seed: u64) -> PwcTable {
        if ways > 0 && ways < entries {
            let sets = entries / ways;
            PwcTable::Scan(SetAssoc::new(sets, ways, policy, seed), sets as u64 - 1)
        } else if entries <= PWC_SCAN_MAX || policy != Policy::Lru {
            PwcTable::Scan(SetAssoc::new(1, entries, policy, seed), 0)
        } else {
            PwcTable::Hashed(FaLru::new(entries))
        }
    }

    /// The set of a key: the low bits of its VA prefix.
    #[inline(always)]
    fn set(key: u64, mask: u64) -> usize {
        (key & mask) as usize
    }

    #[inline]
    fn lookup(&mut self, key: u64) -> Option<NodeId> {
        match self {
            PwcTable::Scan(a, m) => a.lookup(Self::set(key, *m), key).map(|slot| *a.val(slot)),
            PwcTable::Hashed(t) => t.lookup(key),
        }
    }

    fn fill(&mut self, key: u64, val: NodeId) {
        match self {
            PwcTable::Scan(a, m) => {
                let set = Self::set(key, *m);
                match a.probe(set, key) {
                    Some(slot) => *a.val_mut(slot) = val,
                    None => {
                        a.insert(set, key, val, LineKind::PageTable);
                    }
                }
            }
            PwcTable::Hashed(t) => t.fill(key, val),
        }
    }

    #[inline]
    fn fill_absent(&mut self, key: u64, val: NodeId) {
        match self {
            PwcTable::Scan(a, m) => {
                let set = Self::set(key, *m);
                debug_assert!(a.probe(set, key).is_none(), "page-walk cache fill of a cached prefix");
                a.insert(set, key, val, LineKind::PageTable);
            }
            PwcTable::Hashed(t) => t.fill_absent(key, val),
        }
    }

    /// Valid entries: (key, node).
    fn valid(&self) -> Vec<(u64, NodeId)> {
        match self {
            PwcTable::Scan(a, _) => a.slots().filter(|&s| a.key(s) != u64::INVALID).map(|s| (a.key(s), *a.val(s))).collect(),
            PwcTable::Hashed(t) => t.valid().map(|(i, k)| (k, t.vals[i])).collect(),
        }
    }

    /// Drop every entry whose key satisfies `pred`; returns how many.
    fn invalidate_where(&mut self, mut pred: impl FnMut(u64) -> bool) -> usize {
        match self {
            PwcTable::Scan(a, _) => a.invalidate_where(|k, _| pred(k)),
            PwcTable::Hashed(t) => {
                let hit: Vec<usize> = t.valid().filter(|&(_, k)| pred(k)).map(|(i, _)| i).collect();
                for &i in &hit {
                    t.invalidate(i);
                }
                hit.len()
            }
        }
    }
}

/// Result of probing the page-walk caches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PwcHit {
    /// Level of the node the walk continues at.
    pub level: u8,
    pub node: NodeId,
}

/// A PWC key packs the context above the VA prefix: prefixes of level >= 2 have at most
/// 57 - 21 = 36 bits, and contexts (VPID <= 257, PCID < 4096) fewer than 24.
const PWC_CTX_SHIFT: u32 = 40;

impl Pwc {
    /// `entries[l]` entries for level `l` in `ways[l]` ways (0: fully associative; index 0
    /// and 1 unused: leaf entries are translations, cached by the TLBs), each level replaced
    /// by `policy` (`seed`: a random policy's).
    pub fn new(entries: [u64; 6], ways: [u64; 6], policy: Policy, seed: u64) -> Pwc {
        let mk = |l: usize| (entries[l] > 0).then(|| PwcTable::new(entries[l] as usize, ways[l] as usize, policy, seed + l as u64));
        Pwc { tables: [None, None, mk(2), mk(3), mk(4), mk(5)], prof: None }
    }

    #[inline]
    fn key(va: VirtAddr, level: u8, ctx: Ctx) -> u64 {
        debug_assert!(ctx < 1 << (64 - PWC_CTX_SHIFT));
        ((ctx as u64) << PWC_CTX_SHIFT) | (va.0 >> (12 + 9 * (level as u32 - 1)))
    }

    /// Probe levels `2..=top` in parallel. `hits[l]` reports whether level `l` matched.
    #[inline]
    pub fn lookup(&mut self, va: VirtAddr, ctx: Ctx, top: u8, hits: &mut [bool; 6]) -> Option<PwcHit> {
        let mut best = None;
        // (A plain countdown: an inclusive range iterator costs more than the probes here.)
        let mut level = top as usize;
        while level >= 2 {
            if let Some(t) = &mut self.tables[level] {
                if let Some(node) = t.lookup(Self::key(va, level as u8, ctx)) {
                    hits[level] = true;
                    best = Some(PwcHit { level: level as u8 - 1, node });
                }
            }
            level -= 1;
        }
        if self.prof.is_some() {
            self.profile_lookup(va, ctx, top, hits);
        }
        best
    }

    /// Profile level `level` (if the PWC has it) from now on for its miss-ratio curve, up to
    /// `cap` ways per set.
    pub fn profile(&mut self, level: u8, cap: usize) {
        let Some((sets, _)) = self.geometry(level) else { return };
        let p = self.prof.get_or_insert_with(|| Box::new(PwcProfile { levels: Default::default() }));
        p.levels[level as usize] = Some(StackProfile::new(sets, cap));
    }

    /// (sets, ways) of level `level`, if the PWC has it.
    pub fn geometry(&self, level: u8) -> Option<(usize, usize)> {
        self.tables[level as usize].as_ref().map(|t| match t {
            PwcTable::Scan(a, _) => (a.sets(), a.ways()),
            PwcTable::Hashed(f) => (1, f.keys.len()),
        })
    }

    /// Whether level `level`'s replacement is LRU (its miss-ratio curve from one pass is exact
    /// only then).
    pub fn is_lru(&self, level: u8) -> bool {
        self.tables[level as usize].as_ref().is_some_and(|t| match t {
            PwcTable::Scan(a, _) => a.is_lru(),
            PwcTable::Hashed(_) => true,
        })
    }

    /// The profile, if [`Self::profile`] started one.
    pub fn profiled(&self) -> Option<&PwcProfile> {
        self.prof.as_deref()
    }

    pub fn profiled_mut(&mut self) -> Option<&mut PwcProfile> {
        self.prof.as_deref_mut()
    }

    /// Each level's depth counted; a level that hit refreshes its entry.
    #[cold]
    #[inline(never)]
    fn profile_lookup(&mut self, va: VirtAddr, ctx: Ctx, top: u8, hits: &[bool; 6]) {
        let p = self.prof.as_deref_mut().expect("profiled");
        for (level, st) in p.levels.iter_mut().enumerate().take(top as usize + 1).skip(2) {
            if let Some(st) = st {
                let key = Self::key(va, level as u8, ctx);
                let set = st.set_of(key);
                let d = st.depth(set, StackKey::from(key));
                st.depths_mut().count(d);
                if hits[level] {
                    st.touch_at(set, StackKey::from(key), d);
                }
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn profile_fill(&mut self, va: VirtAddr, ctx: Ctx, level: u8) {
        let p = self.prof.as_deref_mut().expect("profiled");
        if let Some(st) = &mut p.levels[level as usize] {
            let key = Self::key(va, level, ctx);
            st.touch(st.set_of(key), StackKey::from(key));
        }
    }

    #[inline]
    pub fn has_level(&self, level: u8) -> bool {
        self.tables[level as usize].is_some()
    }

    /// Count a lookup's outcome per level this PWC has: `counters[i]` is (hits, misses) of
    /// level `i + 2`, `hits` what [`Self::lookup`] reported.
    #[inline]
    pub fn tally(&self, hits: &[bool; 6], counters: [(&mut u64, &mut u64); 4]) {
        for (i, (h, m)) in counters.into_iter().enumerate() {
            if self.has_level(i as u8 + 2) {
                if hits[i + 2] {
                    *h += 1;
                } else {
                    *m += 1;
                }
            }
        }
    }

    /// Remember that the level-`level` entry for `va` points to `child`.
    pub fn fill(&mut self, va: VirtAddr, ctx: Ctx, level: u8, child: NodeId) {
        if let Some(t) = &mut self.tables[level as usize] {
            t.fill(Self::key(va, level, ctx), child);
        }
        if self.prof.is_some() {
            self.profile_fill(va, ctx, level);
        }
    }

    /// [`Self::fill`] by a walk: the walk reads only levels below its longest PWC hit, so
    /// the lookup of this level just missed and no probe is needed.
    #[inline]
    pub fn fill_missed(&mut self, va: VirtAddr, ctx: Ctx, level: u8, child: NodeId) {
        if let Some(t) = &mut self.tables[level as usize] {
            t.fill_absent(Self::key(va, level, ctx), child);
        }
        if self.prof.is_some() {
            self.profile_fill(va, ctx, level);
        }
    }

    /// Every valid entry: (level of the entry, key with the VA prefix as tag, node it points
    /// to, one level down). For checks, not the hot path.
    pub fn entries(&self) -> Vec<(u8, TlbKey, NodeId)> {
        let mut out = Vec::new();
        for (level, t) in self.tables.iter().enumerate() {
            let Some(t) = t else { continue };
            for (k, node) in t.valid() {
                let key = TlbKey::from_parts(k & ((1 << PWC_CTX_SHIFT) - 1), (k >> PWC_CTX_SHIFT) as Ctx);
                out.push((level as u8, key, node));
            }
        }
        out
    }

    /// Drop cached upper-level entries covering the invalidated range (a shootdown must
    /// clear paging-structure caches too, as INVLPG does).
    pub fn invalidate(&mut self, what: Invalidate) -> usize {
        if let Some(p) = &mut self.prof {
            for (level, st) in p.levels.iter_mut().enumerate() {
                let Some(st) = st else { continue };
                let shift = 12 + 9 * (level as u32 - 1);
                st.remove_where(|k| what.covers((k >> PWC_CTX_SHIFT) as Ctx, (k as u64) & ((1 << PWC_CTX_SHIFT) - 1), shift));
            }
        }
        let mut n = 0;
        for (level, t) in self.tables.iter_mut().enumerate() {
            let Some(t) = t else { continue };
            let shift = 12 + 9 * (level as u32 - 1);
            n += t.invalidate_where(|k| what.covers((k >> PWC_CTX_SHIFT) as Ctx, k & ((1 << PWC_CTX_SHIFT) - 1), shift));
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash-indexed LRU table against a plain list: lookups, fills (free entries
    /// first, lowest index first, else the LRU one) and invalidations, with keys drawn
    /// from a small range so that probe runs collide and deletions shift them.
    #[test]
    fn fa_lru_matches_a_list() {
        for size in [1usize, 3, 5, 24, 70] {
            let mut t = FaLru::new(size);
            // Model: entry index -> (key, val) and a recency order of indices (front = MRU).
            let mut slots: Vec<Option<(u64, NodeId)>> = vec![None; size];
            let mut order: std::collections::VecDeque<usize> = Default::default();
            let mut x = 0x2545_f491_4f6c_dd1du64;
            for step in 0..20_000u32 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let key = x % (3 * size as u64 + 2);
                let hit = slots.iter().position(|s| s.is_some_and(|(k, _)| k == key));
                match x >> 60 {
                    0..=8 => {
                        let got = t.lookup(key);
                        assert_eq!(got, hit.map(|i| slots[i].unwrap().1), "size {size} step {step}");
                        if let Some(i) = hit {
                            order.retain(|&j| j != i);
                            order.push_front(i);
                        }
                    }
                    9..=13 => {
                        if hit.is_none() {
                            t.fill(key, step);
                            let i = match slots.iter().position(|s| s.is_none()) {
                                Some(i) => i,
                                None => order.pop_back().unwrap(),
                            };
                            slots[i] = Some((key, step));
                            order.retain(|&j| j != i);
                            order.push_front(i);
                        }
                    }
                    _ => {
                        if let Some(i) = hit {
                            t.invalidate(i);
                            slots[i] = None;
                            order.retain(|&j| j != i);
                        }
                    }
                }
                for (i, s) in slots.iter().enumerate() {
                    assert_eq!(t.keys[i], s.map_or(FaLru::INVALID, |(k, _)| k), "size {size} step {step} entry {i}");
                }
            }
        }
    }

    /// A set-associative level (ChampSim's PSCL2 is 4 sets x 8 ways) against per-set LRU
    /// lists indexed by the prefix's low bits: a prefix only competes with those of its set.
    #[test]
    fn set_associative_level_matches_per_set_lru_lists() {
        for (entries, ways) in [(32usize, 8usize), (8, 4), (4, 1)] {
            let sets = entries / ways;
            let mut t = PwcTable::new(entries, ways, Policy::Lru, 0);
            let mut model: Vec<Vec<u64>> = vec![Vec::new(); sets]; // front = MRU
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            for step in 0..20_000u32 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let key = x % (3 * entries as u64);
                let set = &mut model[key as usize % sets];
                let hit = set.iter().position(|&k| k == key);
                assert_eq!(t.lookup(key).is_some(), hit.is_some(), "{entries}x{ways} step {step}");
                match hit {
                    Some(i) => {
                        set.remove(i);
                    }
                    None => {
                        t.fill_absent(key, step);
                        set.truncate(ways - 1);
                    }
                }
                set.insert(0, key);
            }
        }
        // Two prefixes of one set evict each other in a direct-mapped table; another set's stay.
        let mut t = PwcTable::new(4, 1, Policy::Lru, 0);
        t.fill_absent(1, 10);
        t.fill_absent(2, 20);
        t.fill_absent(5, 50);
        assert_eq!((t.lookup(1), t.lookup(5), t.lookup(2)), (None, Some(50), Some(20)));
    }
}
