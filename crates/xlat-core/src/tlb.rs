//! TLBs and page-walk caches.
//!
//! Entries are tagged by context (PCID, and VPID for virtual machines), so switching
//! address spaces need not flush them. A TLB level is one or more set-associative arrays,
//! each holding some page sizes (real CPUs split L1 TLBs per page size; Zen 3 does not).

use crate::addr::{PageSize, VirtAddr};
use crate::assoc::{Key, SetAssoc};
use crate::config::Policy;
use crate::pt::{NodeId, NO_NODE};
use crate::repl::LineKind;

/// Address-space context of a translation: PCID in the low 12 bits, VPID above (0 natively).
/// Host-side structures of a VM (nested TLB, vPWC) use the VM's VPID with PCID 0.
pub type Ctx = u32;

/// Bits of a [`Ctx`] below the VPID.
pub const VPID_SHIFT: u32 = 12;

/// 16 bytes with no undefined padding, so that a set's keys compare as whole vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(C)]
pub struct TlbKey {
    /// Virtual page number shifted left by 2, with the page-size code in the low bits.
    pub tag: u64,
    pub ctx: Ctx,
    pad: u32,
}

impl Key for TlbKey {
    const INVALID: TlbKey = TlbKey::from_parts(u64::MAX, u32::MAX);

    #[inline]
    fn find(keys: &[TlbKey], key: TlbKey) -> Option<usize> {
        // SAFETY: TlbKey is two u64s in memory (repr(C), 8 + 4 + 4 bytes, pad always 0).
        let words = unsafe { std::slice::from_raw_parts(keys.as_ptr() as *const u64, 2 * keys.len()) };
        crate::lanes::find_u64_pair(words, [key.tag, key.ctx as u64])
    }
}

impl TlbKey {
    pub const fn from_parts(tag: u64, ctx: Ctx) -> TlbKey {
        TlbKey { tag, ctx, pad: 0 }
    }

    #[inline]
    pub fn new(va: VirtAddr, size: PageSize, ctx: Ctx) -> TlbKey {
        TlbKey::from_parts((va.vpn(size) << 2) | size as u64, ctx)
    }

    #[inline]
    pub fn size(&self) -> PageSize {
        match self.tag & 3 {
            0 => PageSize::Size4K,
            1 => PageSize::Size2M,
            _ => PageSize::Size1G,
        }
    }

    #[inline]
    pub fn vpn(&self) -> u64 {
        self.tag >> 2
    }
}

/// What a TLB entry caches. Packed (9 bytes) so that a TLB way is 32 bytes: two per host
/// cache line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(C, packed)]
pub struct TlbEntry {
    /// First 4 KB frame of the page.
    pub frame: u64,
    /// The leaf PTE's dirty bit was set when this entry was filled (or since): a store may
    /// proceed without a walk to set it.
    pub dirty: bool,
}

/// One set-associative TLB array.
pub struct TlbArray {
    arr: SetAssoc<TlbKey, TlbEntry>,
    /// Valid entries per page size, so lookups skip sizes the array holds none of.
    live: [u32; 3],
}

impl TlbArray {
    pub fn new(entries: u64, ways: u64, policy: Policy, seed: u64) -> TlbArray {
        let ways = ways.min(entries);
        TlbArray { arr: SetAssoc::new((entries / ways) as usize, ways as usize, policy, seed), live: [0; 3] }
    }

    #[inline]
    fn set_of(&self, va: VirtAddr, size: PageSize) -> usize {
        self.arr.set_of(va.vpn(size))
    }

    #[inline]
    pub fn holds_any(&self, size: PageSize) -> bool {
        self.live[size as usize] != 0
    }

    #[inline]
    pub fn lookup(&mut self, va: VirtAddr, size: PageSize, ctx: Ctx) -> Option<usize> {
        if self.live[size as usize] == 0 {
            return None;
        }
        let set = self.set_of(va, size);
        self.arr.lookup(set, TlbKey::new(va, size, ctx))
    }

    #[inline]
    pub fn entry(&self, slot: usize) -> TlbEntry {
        *self.arr.val(slot)
    }

    #[inline]
    pub fn entry_mut(&mut self, slot: usize) -> &mut TlbEntry {
        self.arr.val_mut(slot)
    }

    /// Insert a translation (replacing a stale copy of the same page if present).
    #[inline]
    pub fn insert(&mut self, va: VirtAddr, size: PageSize, ctx: Ctx, e: TlbEntry) {
        let set = self.set_of(va, size);
        let key = TlbKey::new(va, size, ctx);
        if let Some(slot) = self.arr.probe(set, key) {
            *self.arr.val_mut(slot) = e;
            return;
        }
        self.insert_absent(va, size, ctx, e);
    }

    /// [`Self::insert`] of a translation known not to be cached here (a lookup just missed
    /// at every page size): no probe.
    #[inline]
    pub fn insert_absent(&mut self, va: VirtAddr, size: PageSize, ctx: Ctx, e: TlbEntry) {
        let set = self.set_of(va, size);
        let key = TlbKey::new(va, size, ctx);
        debug_assert!(self.arr.probe(set, key).is_none(), "insert_absent of a cached translation");
        let (_, ev) = self.arr.insert(set, key, e, LineKind::Data);
        self.live[size as usize] += 1;
        if let Some(ev) = ev {
            self.live[ev.key.size() as usize] -= 1;
        }
    }

    /// Drop entries matching `pred(key)`; returns how many.
    pub fn invalidate_where(&mut self, mut pred: impl FnMut(&TlbKey) -> bool) -> usize {
        let mut dropped = [0u32; 3];
        let n = self.arr.invalidate_where(|k, _| {
            let hit = pred(&k);
            if hit {
                dropped[k.size() as usize] += 1;
            }
            hit
        });
        for s in 0..3 {
            self.live[s] -= dropped[s];
        }
        n
    }

    pub fn occupancy(&self) -> usize {
        self.arr.occupancy()
    }

    /// Every valid entry (for checks, not the hot path).
    pub fn entries(&self) -> Vec<(TlbKey, TlbEntry)> {
        self.arr.slots().map(|s| (self.arr.key(s), *self.arr.val(s))).filter(|(k, _)| *k != TlbKey::INVALID).collect()
    }
}

/// Which translations an invalidation removes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalidate {
    /// Every page overlapping `[start, end)` of one context (INVLPG / a ranged flush).
    Range { ctx: Ctx, start: u64, end: u64 },
    /// Everything of one context (INVPCID single-context).
    Context(Ctx),
    /// Everything of one VM: contexts whose VPID (the bits above the PCID) is this
    /// (INVVPID single-context, or INVEPT after the host changed the VM's EPT).
    Vm(u32),
    /// Everything (CR3 write without PCID, or INVPCID all).
    All,
}

impl Invalidate {
    pub fn page(ctx: Ctx, va: VirtAddr) -> Invalidate {
        Invalidate::Range { ctx, start: va.0, end: va.0 + 1 }
    }

    #[inline]
    fn matches_page(&self, k: &TlbKey) -> bool {
        match *self {
            Invalidate::All => true,
            Invalidate::Context(c) => k.ctx == c,
            Invalidate::Vm(v) => k.ctx >> VPID_SHIFT == v,
            Invalidate::Range { ctx, start, end } => {
                let shift = k.size().shift();
                let base = k.vpn() << shift;
                k.ctx == ctx && base < end && base + (1 << shift) > start
            }
        }
    }
}

/// A TLB level: arrays and which page sizes each holds.
pub struct TlbLevel {
    arrays: Vec<TlbArray>,
    /// For each page size, the index of the array that holds it, if any.
    holder: [Option<u8>; 3],
}

impl TlbLevel {
    /// `arrays`: (entries, ways, sizes held). Arrays with zero entries are left out.
    pub fn new(arrays: &[(u64, u64, &[PageSize])], policy: Policy, seed: u64) -> TlbLevel {
        let mut lvl = TlbLevel { arrays: Vec::new(), holder: [None; 3] };
        for (i, &(entries, ways, sizes)) in arrays.iter().filter(|a| a.0 > 0).enumerate() {
            lvl.arrays.push(TlbArray::new(entries, ways, policy, seed.wrapping_add(i as u64)));
            for &s in sizes {
                lvl.holder[s as usize] = Some(i as u8);
            }
        }
        lvl
    }

    #[inline]
    pub fn holds(&self, size: PageSize) -> bool {
        self.holder[size as usize].is_some()
    }

    /// Look `va` up at every page size; on a hit return the entry and its size.
    #[inline]
    pub fn lookup(&mut self, va: VirtAddr, ctx: Ctx) -> Option<(TlbEntry, PageSize)> {
        for size in PageSize::ALL {
            if let Some(a) = self.holder[size as usize] {
                let arr = &mut self.arrays[a as usize];
                if let Some(slot) = arr.lookup(va, size, ctx) {
                    return Some((arr.entry(slot), size));
                }
            }
        }
        None
    }

    /// Mark the cached translation of `va` dirty (after a walk set the PTE's D bit).
    #[inline]
    pub fn set_dirty(&mut self, va: VirtAddr, size: PageSize, ctx: Ctx) {
        if let Some(a) = self.holder[size as usize] {
            let arr = &mut self.arrays[a as usize];
            let set = arr.set_of(va, size);
            if let Some(slot) = arr.arr.probe(set, TlbKey::new(va, size, ctx)) {
                arr.entry_mut(slot).dirty = true;
            }
        }
    }

    #[inline]
    pub fn insert(&mut self, va: VirtAddr, size: PageSize, ctx: Ctx, e: TlbEntry) {
        if let Some(a) = self.holder[size as usize] {
            self.arrays[a as usize].insert(va, size, ctx, e);
        }
    }

    /// [`Self::insert`] after a lookup of `va` missed (see [`TlbArray::insert_absent`]).
    #[inline]
    pub fn insert_absent(&mut self, va: VirtAddr, size: PageSize, ctx: Ctx, e: TlbEntry) {
        if let Some(a) = self.holder[size as usize] {
            self.arrays[a as usize].insert_absent(va, size, ctx, e);
        }
    }

    pub fn invalidate(&mut self, what: Invalidate) -> usize {
        self.arrays.iter_mut().map(|a| a.invalidate_where(|k| what.matches_page(k))).sum()
    }

    pub fn occupancy(&self) -> usize {
        self.arrays.iter().map(|a| a.occupancy()).sum()
    }

    /// Every valid entry of every array (for checks, not the hot path).
    pub fn entries(&self) -> Vec<(TlbKey, TlbEntry)> {
        self.arrays.iter().flat_map(|a| a.entries()).collect()
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
}

/// One PWC level, exact LRU either way: real sizes (a few dozen entries) are one set
/// searched with vector compares; large ones (design-space sweeps) are hash-indexed so a
/// lookup stays O(1).
enum PwcTable {
    Scan(SetAssoc<u64, NodeId>),
    Hashed(FaLru),
}

/// Largest PWC level searched by scanning.
const PWC_SCAN_MAX: usize = 64;

impl PwcTable {
    fn new(entries: usize) -> PwcTable {
        if entries <= PWC_SCAN_MAX {
            PwcTable::Scan(SetAssoc::new(1, entries, Policy::Lru, 0))
        } else {
            PwcTable::Hashed(FaLru::new(entries))
        }
    }

    #[inline]
    fn lookup(&mut self, key: u64) -> Option<NodeId> {
        match self {
            PwcTable::Scan(a) => a.lookup(0, key).map(|slot| *a.val(slot)),
            PwcTable::Hashed(t) => t.lookup(key),
        }
    }

    fn fill(&mut self, key: u64, val: NodeId) {
        match self {
            PwcTable::Scan(a) => match a.probe(0, key) {
                Some(slot) => *a.val_mut(slot) = val,
                None => {
                    a.insert(0, key, val, LineKind::PageTable);
                }
            },
            PwcTable::Hashed(t) => t.fill(key, val),
        }
    }

    #[inline]
    fn fill_absent(&mut self, key: u64, val: NodeId) {
        match self {
            PwcTable::Scan(a) => {
                debug_assert!(a.probe(0, key).is_none(), "page-walk cache fill of a cached prefix");
                a.insert(0, key, val, LineKind::PageTable);
            }
            PwcTable::Hashed(t) => t.fill_absent(key, val),
        }
    }

    /// Valid entries: (key, node).
    fn valid(&self) -> Vec<(u64, NodeId)> {
        match self {
            PwcTable::Scan(a) => a.slots().filter(|&s| a.key(s) != u64::INVALID).map(|s| (a.key(s), *a.val(s))).collect(),
            PwcTable::Hashed(t) => t.valid().map(|(i, k)| (k, t.vals[i])).collect(),
        }
    }

    /// Drop every entry whose key satisfies `pred`; returns how many.
    fn invalidate_where(&mut self, mut pred: impl FnMut(u64) -> bool) -> usize {
        match self {
            PwcTable::Scan(a) => a.invalidate_where(|k, _| pred(k)),
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
    /// `entries[l]` entries for level `l` (index 0 and 1 unused: leaf entries are
    /// translations, cached by the TLBs).
    pub fn new(entries: [u64; 6], _seed: u64) -> Pwc {
        let mk = |n: u64| (n > 0).then(|| PwcTable::new(n as usize));
        Pwc { tables: [None, None, mk(entries[2]), mk(entries[3]), mk(entries[4]), mk(entries[5])] }
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
        best
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
    }

    /// [`Self::fill`] by a walk: the walk reads only levels below its longest PWC hit, so
    /// the lookup of this level just missed and no probe is needed.
    #[inline]
    pub fn fill_missed(&mut self, va: VirtAddr, ctx: Ctx, level: u8, child: NodeId) {
        if let Some(t) = &mut self.tables[level as usize] {
            t.fill_absent(Self::key(va, level, ctx), child);
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
        let mut n = 0;
        for (level, t) in self.tables.iter_mut().enumerate() {
            let Some(t) = t else { continue };
            let shift = 12 + 9 * (level as u32 - 1);
            n += t.invalidate_where(|k| {
                let (tag, ctx) = (k & ((1 << PWC_CTX_SHIFT) - 1), (k >> PWC_CTX_SHIFT) as Ctx);
                match what {
                    Invalidate::All => true,
                    Invalidate::Context(c) => ctx == c,
                    Invalidate::Vm(v) => ctx >> VPID_SHIFT == v,
                    Invalidate::Range { ctx: c, start, end } => {
                        let base = tag << shift;
                        ctx == c && base < end && base + (1u64 << shift) > start
                    }
                }
            });
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
}
