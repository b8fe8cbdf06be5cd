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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TlbKey {
    /// Virtual page number shifted left by 2, with the page-size code in the low bits.
    pub tag: u64,
    pub ctx: Ctx,
}

impl Key for TlbKey {
    const INVALID: TlbKey = TlbKey { tag: u64::MAX, ctx: u32::MAX };
}

impl TlbKey {
    #[inline]
    pub fn new(va: VirtAddr, size: PageSize, ctx: Ctx) -> TlbKey {
        TlbKey { tag: (va.vpn(size) << 2) | size as u64, ctx }
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
        (0..self.arr.sets() * self.arr.ways()).map(|s| (self.arr.key(s), *self.arr.val(s))).filter(|(k, _)| *k != TlbKey::INVALID).collect()
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

/// A small fully-associative LRU table of packed `u64` keys: one page-walk-cache level.
/// Probed on every walk, so it is three flat arrays (keys scanned, values and stamps
/// touched once) rather than a [`SetAssoc`] of wide ways.
struct FaLru {
    keys: Vec<u64>,
    vals: Vec<NodeId>,
    /// LRU stamps: larger = more recent, 0 = invalid.
    stamps: Vec<u32>,
    clock: u32,
}

impl FaLru {
    const INVALID: u64 = u64::MAX;

    fn new(entries: usize) -> FaLru {
        FaLru { keys: vec![Self::INVALID; entries], vals: vec![NO_NODE; entries], stamps: vec![0; entries], clock: 0 }
    }

    #[inline]
    fn find(&self, key: u64) -> Option<usize> {
        self.keys.iter().position(|&k| k == key)
    }

    #[inline]
    fn touch(&mut self, i: usize) {
        self.clock += 1;
        self.stamps[i] = self.clock;
        if self.clock >= crate::repl::STAMP_LIMIT {
            self.renumber();
        }
    }

    /// Replace stamps by their ranks (same order) before the clock wraps.
    #[cold]
    fn renumber(&mut self) {
        let mut order: Vec<usize> = (0..self.keys.len()).collect();
        order.sort_by_key(|&i| self.stamps[i]);
        for (rank, &i) in order.iter().enumerate() {
            self.stamps[i] = if self.keys[i] == Self::INVALID { 0 } else { rank as u32 + 1 };
        }
        self.clock = self.keys.len() as u32 + 1;
    }

    #[inline]
    fn lookup(&mut self, key: u64) -> Option<NodeId> {
        let i = self.find(key)?;
        self.touch(i);
        Some(self.vals[i])
    }

    /// Install `key -> val`; an entry already there only gets the new value.
    fn fill(&mut self, key: u64, val: NodeId) {
        match self.find(key) {
            Some(i) => self.vals[i] = val,
            None => self.fill_absent(key, val),
        }
    }

    /// Install `key -> val`, known to be absent: no probe.
    #[inline]
    fn fill_absent(&mut self, key: u64, val: NodeId) {
        debug_assert!(self.find(key).is_none(), "page-walk cache fill of a cached prefix");
        // Invalid entries have stamp 0: the first of them, else the least recently used.
        let (mut best, mut best_stamp) = (0, u32::MAX);
        for (i, &s) in self.stamps.iter().enumerate() {
            let older = s < best_stamp;
            best = if older { i } else { best };
            best_stamp = if older { s } else { best_stamp };
        }
        self.keys[best] = key;
        self.vals[best] = val;
        self.touch(best);
    }
}

/// Intel-style paging-structure caches: one fully-associative LRU table per upper level,
/// mapping a VA prefix to the node one level down. All are probed in parallel; the
/// longest prefix (lowest level) that hits decides where the walk starts.
pub struct Pwc {
    /// Index `l` caches entries of level-`l` nodes (tag = VA >> (12 + 9(l-1))).
    tables: [Option<FaLru>; 6],
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
        let mk = |n: u64| (n > 0).then(|| FaLru::new(n as usize));
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
        for level in (2..=top).rev() {
            if let Some(t) = &mut self.tables[level as usize] {
                if let Some(node) = t.lookup(Self::key(va, level, ctx)) {
                    hits[level as usize] = true;
                    best = Some(PwcHit { level: level - 1, node });
                }
            }
        }
        best
    }

    #[inline]
    pub fn has_level(&self, level: u8) -> bool {
        self.tables[level as usize].is_some()
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
            for (i, &k) in t.keys.iter().enumerate() {
                if k != FaLru::INVALID {
                    let key = TlbKey { tag: k & ((1 << PWC_CTX_SHIFT) - 1), ctx: (k >> PWC_CTX_SHIFT) as Ctx };
                    out.push((level as u8, key, t.vals[i]));
                }
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
            for i in 0..t.keys.len() {
                let k = t.keys[i];
                if k == FaLru::INVALID {
                    continue;
                }
                let (tag, ctx) = (k & ((1 << PWC_CTX_SHIFT) - 1), (k >> PWC_CTX_SHIFT) as Ctx);
                let hit = match what {
                    Invalidate::All => true,
                    Invalidate::Context(c) => ctx == c,
                    Invalidate::Vm(v) => ctx >> VPID_SHIFT == v,
                    Invalidate::Range { ctx: c, start, end } => {
                        let base = tag << shift;
                        ctx == c && base < end && base + (1u64 << shift) > start
                    }
                };
                if hit {
                    t.keys[i] = FaLru::INVALID;
                    t.stamps[i] = 0;
                    n += 1;
                }
            }
        }
        n
    }
}
