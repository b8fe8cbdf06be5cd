//! TLBs: levels of set-associative arrays holding translations.
//!
//! Entries are tagged by context (PCID, and VPID for virtual machines), so switching
//! address spaces need not flush them. A TLB level is one or more set-associative arrays,
//! each holding some page sizes (real CPUs split L1 TLBs per page size; Zen 3 does not).

use crate::addr::{PageSize, VirtAddr};
use crate::assoc::{Key, SetAssoc};
use crate::config::Policy;

use crate::memory::repl::LineKind;

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
        crate::host::lanes::find_u64_pair(words, [key.tag, key.ctx as u64])
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
        for (live, d) in self.live.iter_mut().zip(dropped) {
            *live -= d;
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
        self.covers(k.ctx, k.vpn(), k.size().shift())
    }

    /// Whether this invalidation reaches the `2^shift`-byte region number `tag` of context
    /// `ctx` (a page, a page-walk-cache prefix, a mechanism's region). The one rule every
    /// translation structure follows.
    #[inline]
    pub fn covers(&self, ctx: Ctx, tag: u64, shift: u32) -> bool {
        match *self {
            Invalidate::All => true,
            Invalidate::Context(c) => ctx == c,
            Invalidate::Vm(v) => ctx >> VPID_SHIFT == v,
            Invalidate::Range { ctx: c, start, end } => {
                // (The region's last byte, not its end, so a region at the top of the address
                // space does not overflow.)
                let first = tag << shift;
                let last = first | ((1u64 << shift) - 1);
                ctx == c && first < end && last >= start
            }
        }
    }
}

/// What a TLB level counts (emitted as `tlb.<name>.*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TlbStats {
    /// Lookups.
    pub accesses: u64,
    /// Lookups that found a usable translation (a store's needs a dirty one; see
    /// [`crate::translate::Translator`] for a clean one), by page size too.
    pub hits: u64,
    pub hits_by_size: [u64; 3],
    /// Lookups that found no translation of the page.
    pub misses: u64,
}

/// A TLB level: arrays and which page sizes each holds, and what it counts.
pub struct TlbLevel {
    arrays: Vec<TlbArray>,
    /// For each page size, the index of the array that holds it, if any.
    holder: [Option<u8>; 3],
    pub stats: TlbStats,
}

impl TlbLevel {
    /// `arrays`: (entries, ways, sizes held). Arrays with zero entries are left out.
    pub fn new(arrays: &[(u64, u64, &[PageSize])], policy: Policy, seed: u64) -> TlbLevel {
        let mut lvl = TlbLevel { arrays: Vec::new(), holder: [None; 3], stats: TlbStats::default() };
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
