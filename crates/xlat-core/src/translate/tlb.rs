//! TLBs: levels of set-associative arrays holding translations.
//!
//! Entries are tagged by context (PCID, and VPID for virtual machines), so switching
//! address spaces need not flush them. A TLB level is one or more set-associative arrays,
//! each holding some page sizes (real CPUs split L1 TLBs per page size; Zen 3 does not).
//!
//! A level may also hold **coalesced** entries (AMD's PTE coalescing, see
//! [`crate::translate::coalesce`]): one entry for an aligned group of 4 or 8 contiguous
//! 4 KB pages, kept in the array of 4 KB pages under its own page-size code and probed
//! before the 4 KB entries of the same pages.

use crate::arch::addr::{PageSize, VirtAddr};
use crate::arch::ctx::{Ctx, Invalidate, SPACE_MASK, VPID_SHIFT};
use crate::assoc::{Key, SetAssoc};
use crate::memory::repl::Policy;
use crate::param::TlbSetIndex;

use crate::memory::repl::LineKind;
use crate::mrc::{Depths, StackKey, StackProfile};

use crate::param::{bound, component, Limit};

/// A TLB level's replacement policy: any but the cache policies.
fn tlb_policy(key: String, p: Policy) -> Result<(), crate::param::ConfigError> {
    if matches!(p, Policy::Ptp | Policy::CsaltD | Policy::CsaltCd | Policy::Dip) {
        return Err(crate::param::invalid(key, format!("{} is a cache policy, not a TLB policy", p.name())));
    }
    Ok(())
}

component! {
    /// The L1 DTLB (`tlb.l1d.*`): its arrays per page size, latency, replacement and coalescing.
    L1dTlbParams {
        entries: u64 = 64; "entries"; Some(Limit::Int(bound::ENTRIES)); "L1 DTLB entries for 4 KB pages (all sizes if tlb.l1d.unified)";
        ways: u64 = 4; "ways"; Some(Limit::Int(bound::WAYS)); "associativity of the 4 KB L1 DTLB array";
        entries_2m: u64 = 32; "entries_2m"; Some(Limit::Int(bound::ENTRIES)); "L1 DTLB entries for 2 MB pages (0: none)";
        ways_2m: u64 = 4; "ways_2m"; Some(Limit::Int(bound::WAYS)); "associativity of the 2 MB L1 DTLB array";
        entries_1g: u64 = 4; "entries_1g"; Some(Limit::Int(bound::ENTRIES)); "L1 DTLB entries for 1 GB pages (0: none)";
        ways_1g: u64 = 4; "ways_1g"; Some(Limit::Int(bound::WAYS)); "associativity of the 1 GB L1 DTLB array";
        unified: bool = false; "unified"; None; "one L1 DTLB array holds every page size (Zen 3), sized by entries/ways";
        latency: u64 = 1; "latency"; Some(Limit::Int(bound::LATENCY)); "L1 DTLB lookup cycles (overlapped with the L1D tag check)";
        policy: crate::memory::repl::Policy = crate::memory::repl::Policy::Lru; "policy"; None; "L1 DTLB replacement policy";
        coalescing: crate::param::Coalescing = crate::param::Coalescing::Inherit; "coalescing"; None; "PTE coalescing in the L1 DTLB: none|16k|32k, or inherit (tlb.coalescing)";
    }
    check(p, key) {
        crate::param::geometry(key("entries"), key("ways"), p.entries, p.ways, false)?;
        if !p.unified {
            crate::param::geometry(key("entries_2m"), key("ways_2m"), p.entries_2m, p.ways_2m, true)?;
            crate::param::geometry(key("entries_1g"), key("ways_1g"), p.entries_1g, p.ways_1g, true)?;
        }
        tlb_policy(key("policy"), p.policy)
    }
}

component! {
    /// The L1 ITLB (`tlb.l1i.*`).
    L1iTlbParams {
        entries: u64 = 128; "entries"; Some(Limit::Int(bound::ENTRIES)); "L1 ITLB entries for 4 KB pages";
        ways: u64 = 8; "ways"; Some(Limit::Int(bound::WAYS)); "associativity of the 4 KB L1 ITLB array";
        entries_2m: u64 = 8; "entries_2m"; Some(Limit::Int(bound::ENTRIES)); "L1 ITLB entries for 2 MB pages (0: none)";
        ways_2m: u64 = 8; "ways_2m"; Some(Limit::Int(bound::WAYS)); "associativity of the 2 MB L1 ITLB array";
        latency: u64 = 1; "latency"; Some(Limit::Int(bound::LATENCY)); "L1 ITLB lookup cycles";
        policy: crate::memory::repl::Policy = crate::memory::repl::Policy::Lru; "policy"; None; "L1 ITLB replacement policy";
        coalescing: crate::param::Coalescing = crate::param::Coalescing::Inherit; "coalescing"; None; "PTE coalescing in the L1 ITLB: none|16k|32k, or inherit (tlb.coalescing)";
    }
    check(p, key) {
        crate::param::geometry(key("entries"), key("ways"), p.entries, p.ways, false)?;
        crate::param::geometry(key("entries_2m"), key("ways_2m"), p.entries_2m, p.ways_2m, true)?;
        tlb_policy(key("policy"), p.policy)
    }
}

component! {
    /// The L2 TLB (`tlb.l2.*`), shared by data and, without an L2 ITLB, instructions.
    L2TlbParams {
        entries: u64 = 1536; "entries"; Some(Limit::Int(bound::ENTRIES)); "unified L2 TLB entries (4 KB and 2 MB pages)";
        ways: u64 = 12; "ways"; Some(Limit::Int(bound::WAYS)); "L2 TLB associativity";
        entries_1g: u64 = 16; "entries_1g"; Some(Limit::Int(bound::ENTRIES)); "separate L2 TLB array for 1 GB pages (0: 1 GB pages are not held in L2)";
        ways_1g: u64 = 4; "ways_1g"; Some(Limit::Int(bound::WAYS)); "associativity of the 1 GB L2 TLB array";
        entries_coalesced: u64 = 0; "entries_coalesced"; Some(Limit::Int(bound::ENTRIES)); "with PTE coalescing: L2 TLB entries set aside for coalesced entries, in an array of their own (0: they share the 4 KB array; Zen's split is undocumented)";
        ways_coalesced: u64 = 2; "ways_coalesced"; Some(Limit::Int(bound::WAYS)); "associativity of the L2 TLB's array of coalesced entries";
        latency: u64 = 9; "latency"; Some(Limit::Int(bound::LATENCY)); "L2 TLB lookup cycles, paid on every L1 TLB miss";
        policy: crate::memory::repl::Policy = crate::memory::repl::Policy::Lru; "policy"; None; "L2 TLB replacement policy";
        coalescing: crate::param::Coalescing = crate::param::Coalescing::Inherit; "coalescing"; None; "PTE coalescing in the L2 TLB: none|16k|32k, or inherit (tlb.coalescing)";
        pdes: bool = false; "pdes"; None; "the L2 TLB also holds page directory entries (the L2 entries that point to a leaf table, keyed by VA[47:21]) in its array of 2 MB pages, competing with translations, and a walk looks there for them instead of in pwc.l2 (which must then be 0): AMD Zen's L2 DTLB";
    }
    check(p, key) {
        crate::param::geometry(key("entries"), key("ways"), p.entries, p.ways, false)?;
        crate::param::geometry(key("entries_1g"), key("ways_1g"), p.entries_1g, p.ways_1g, true)?;
        crate::param::geometry(key("entries_coalesced"), key("ways_coalesced"), p.entries_coalesced, p.ways_coalesced, true)?;
        tlb_policy(key("policy"), p.policy)
    }
}

component! {
    /// The separate L2 ITLB (`tlb.l2i.*`), if any.
    L2iTlbParams {
        entries: u64 = 0; "entries"; Some(Limit::Int(bound::ENTRIES)); "separate L2 ITLB entries: 4 KB and 2 MB pages, 1 GB code pages cached as 2 MB pieces (Zen: 512). With it the L2 TLB holds data only; 0: fetches share the L2 TLB";
        ways: u64 = 8; "ways"; Some(Limit::Int(bound::WAYS)); "L2 ITLB associativity (a lookup costs tlb.l2.latency)";
        policy: crate::memory::repl::Policy = crate::memory::repl::Policy::Lru; "policy"; None; "L2 ITLB replacement policy";
        coalescing: crate::param::Coalescing = crate::param::Coalescing::Inherit; "coalescing"; None; "PTE coalescing in the L2 ITLB: none|16k|32k, or inherit (tlb.coalescing)";
    }
    check(p, key) {
        crate::param::geometry(key("entries"), key("ways"), p.entries, p.ways, true)?;
        tlb_policy(key("policy"), p.policy)
    }
}

component! {
    /// The nested TLB of 2D walks (`tlb.nested.*`).
    NestedTlbParams {
        entries: u64 = 16; "entries"; Some(Limit::Int(bound::ENTRIES)); "nested TLB entries caching gPA->hPA translations for 2D walks (flattening paper Tab. 1: 16, fully associative; 0: none)";
        ways: u64 = 16; "ways"; Some(Limit::Int(bound::WAYS)); "nested TLB associativity (entries = fully associative)";
        latency: u64 = 1; "latency"; Some(Limit::Int(bound::LATENCY)); "nested TLB lookup cycles (Tab. 1: 1)";
    }
}

/// The page-size code of a coalesced entry in a [`TlbKey`] (codes 0-2 are the
/// [`PageSize`]s), and the index of its counters in [`TlbStats`].
pub const GROUP: usize = 3;

/// Page-size codes: [`PageSize`] as usize (4 KB, 2 MB, 1 GB), then [`GROUP`].
pub const CODES: usize = 4;

/// 16 bytes with no undefined padding, so that a set's keys compare as whole vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(C)]
pub struct TlbKey {
    /// Virtual page number shifted left by 2, with the page-size code in the low bits (for a
    /// coalesced entry the group number, `VA >> (12 + group shift)`, and [`GROUP`]).
    pub tag: u64,
    pub ctx: Ctx,
    /// 0 for a translation, [`PDE`] for a page directory entry (`tlb.l2.pdes`).
    kind: u32,
}

/// The [`TlbKey`] kind of a page directory entry held by an L2 TLB (`tlb.l2.pdes`): keyed
/// like the 2 MB page it covers, told apart by this.
const PDE: u32 = 1;

impl Key for TlbKey {
    const INVALID: TlbKey = TlbKey::from_parts(u64::MAX, u32::MAX);

    #[inline]
    fn find(keys: &[TlbKey], key: TlbKey) -> Option<usize> {
        // SAFETY: TlbKey is two u64s in memory (repr(C), 8 + 4 + 4 bytes, no padding): the
        // second is the context in its low half and the kind in its high half.
        let words = unsafe { std::slice::from_raw_parts(keys.as_ptr() as *const u64, 2 * keys.len()) };
        crate::host::lanes::find_u64_pair(words, [key.tag, key.ctx as u64 | (key.kind as u64) << 32])
    }
}

impl TlbKey {
    pub const fn from_parts(tag: u64, ctx: Ctx) -> TlbKey {
        TlbKey { tag, ctx, kind: 0 }
    }

    /// The key of the page directory entry for `va` (the level-2 entry pointing to the leaf
    /// table that maps it), as an L2 TLB with `tlb.l2.pdes` holds it.
    #[inline]
    pub fn pde(va: VirtAddr, ctx: Ctx) -> TlbKey {
        TlbKey { kind: PDE, ..TlbKey::new(va, PageSize::Size2M, ctx) }
    }

    /// Whether this is a page directory entry's key, not a translation's.
    #[inline]
    pub fn is_pde(&self) -> bool {
        self.kind == PDE
    }

    #[inline]
    pub fn new(va: VirtAddr, size: PageSize, ctx: Ctx) -> TlbKey {
        TlbKey::from_parts((va.vpn(size) << 2) | size as u64, ctx)
    }

    /// The key of the coalesced entry covering `va`, in an array of groups of
    /// `2^group_shift` 4 KB pages.
    #[inline]
    pub fn group(va: VirtAddr, group_shift: u32, ctx: Ctx) -> TlbKey {
        TlbKey::from_parts(((va.0 >> (12 + group_shift)) << 2) | GROUP as u64, ctx)
    }

    /// Page size of the pages the entry maps (a coalesced entry maps 4 KB pages).
    #[inline]
    pub fn size(&self) -> PageSize {
        match self.tag & 3 {
            1 => PageSize::Size2M,
            2 => PageSize::Size1G,
            _ => PageSize::Size4K,
        }
    }

    /// The page-size code: a [`PageSize`] as usize, or [`GROUP`].
    #[inline]
    pub fn code(&self) -> usize {
        (self.tag & 3) as usize
    }

    /// log2 of the bytes the entry covers, in an array whose coalesced entries are groups of
    /// `2^group_shift` pages.
    #[inline]
    pub fn shift(&self, group_shift: u32) -> u32 {
        match self.code() {
            GROUP => 12 + group_shift,
            _ => self.size().shift(),
        }
    }

    #[inline]
    pub fn vpn(&self) -> u64 {
        self.tag >> 2
    }
}

/// A translation as lookups return it and fills take it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TlbEntry {
    /// First 4 KB frame of the page.
    pub frame: u64,
    /// The leaf PTE's dirty bit was set when this entry was filled (or since): a store may
    /// proceed without a walk to set it. (A coalesced entry is dirty when every page of its
    /// group is: a clean one is logically read-only.)
    pub dirty: bool,
    /// The page (4 KB) lies in a coalescable group of `2^group` pages, aligned and contiguous
    /// (0: none): what a walk found ([`crate::translate::coalesce`]), or what a coalesced
    /// entry that hit covers. A level that coalesces groups of at most this many pages caches
    /// the group.
    pub group: u8,
}

impl TlbEntry {
    /// A translation of one page.
    #[inline]
    pub const fn page(frame: u64, dirty: bool) -> TlbEntry {
        TlbEntry { frame, dirty, group: 0 }
    }
}

/// What a TLB way stores: packed (9 bytes) so that a TLB way is 32 bytes, two per host cache
/// line. (For a coalesced entry, the group's first frame.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(C, packed)]
struct Stored {
    frame: u64,
    dirty: bool,
}

/// One set-associative TLB array.
pub struct TlbArray {
    arr: SetAssoc<TlbKey, Stored>,
    /// Valid entries per page-size code, so lookups skip sizes the array holds none of.
    live: [u32; CODES],
    /// Coalesced entries are groups of `2^group_shift` 4 KB pages (0: the array holds none).
    group_shift: u32,
    /// The set index: the page number's low bits xor the VM ID's masked by this (all ones
    /// with `tlb.set_index=vpn_xor_vm`, 0 for plain page-number bits).
    vm_mask: u64,
    /// The entry the last fill pushed out, until [`TlbLevel::take_evicted`] takes it.
    evicted: Option<(TlbKey, TlbEntry)>,
}

impl TlbArray {
    pub fn new(entries: u64, ways: u64, policy: Policy, seed: u64) -> TlbArray {
        let ways = ways.min(entries);
        TlbArray { arr: SetAssoc::new((entries / ways) as usize, ways as usize, policy, seed), live: [0; CODES], group_shift: 0, vm_mask: 0, evicted: None }
    }

    /// The set of page number `vpn` of context `ctx` (see [`TlbSetIndex`]).
    #[inline]
    fn set_of_vpn(&self, vpn: u64, ctx: Ctx) -> usize {
        self.arr.set_of(self.index_of(vpn, ctx))
    }

    /// The value whose low bits are the set of page number `vpn` of context `ctx`.
    #[inline]
    fn index_of(&self, vpn: u64, ctx: Ctx) -> u64 {
        vpn ^ (u64::from((ctx & SPACE_MASK) >> VPID_SHIFT) & self.vm_mask)
    }

    pub fn ways(&self) -> usize {
        self.arr.ways()
    }

    #[inline]
    fn set_of(&self, va: VirtAddr, size: PageSize, ctx: Ctx) -> usize {
        self.set_of_vpn(va.vpn(size), ctx)
    }

    /// Sets of the array.
    pub fn sets(&self) -> usize {
        self.arr.sets()
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
        let set = self.set_of(va, size, ctx);
        self.arr.lookup(set, TlbKey::new(va, size, ctx))
    }

    /// The coalesced entry covering `va`, if this array holds one.
    #[inline]
    pub fn lookup_group(&mut self, va: VirtAddr, ctx: Ctx) -> Option<usize> {
        if self.live[GROUP] == 0 {
            return None;
        }
        let set = self.group_set(va, ctx);
        self.arr.lookup(set, TlbKey::group(va, self.group_shift, ctx))
    }

    #[inline]
    fn group_set(&self, va: VirtAddr, ctx: Ctx) -> usize {
        self.set_of_vpn(va.0 >> (12 + self.group_shift), ctx)
    }

    /// The node the page directory entry for `va` points to, if this array holds it
    /// (`tlb.l2.pdes`; the entry's frame field holds the node).
    #[inline]
    fn lookup_pde(&mut self, va: VirtAddr, ctx: Ctx) -> Option<u64> {
        if self.live[PageSize::Size2M as usize] == 0 {
            return None;
        }
        let set = self.set_of(va, PageSize::Size2M, ctx);
        self.arr.lookup(set, TlbKey::pde(va, ctx)).map(|slot| self.arr.val(slot).frame)
    }

    /// Cache the page directory entry for `va`, pointing to `node` (a walk just read it: the
    /// lookup missed, so no probe).
    #[inline]
    fn fill_pde(&mut self, va: VirtAddr, ctx: Ctx, node: u64) {
        let set = self.set_of(va, PageSize::Size2M, ctx);
        self.put_absent(set, TlbKey::pde(va, ctx), node, false);
    }

    /// The translation in `slot` (for a coalesced entry, of the group's first page).
    #[inline]
    pub fn entry(&self, slot: usize) -> TlbEntry {
        let s = *self.arr.val(slot);
        TlbEntry::page(s.frame, s.dirty)
    }

    /// Insert a translation (replacing a stale copy of the same page if present).
    #[inline]
    pub fn insert(&mut self, va: VirtAddr, size: PageSize, ctx: Ctx, e: TlbEntry) {
        let set = self.set_of(va, size, ctx);
        self.put(set, TlbKey::new(va, size, ctx), e.frame, e.dirty);
    }

    /// [`Self::insert`] of a translation known not to be cached here (a lookup just missed
    /// at every page size): no probe.
    #[inline]
    pub fn insert_absent(&mut self, va: VirtAddr, size: PageSize, ctx: Ctx, e: TlbEntry) {
        let set = self.set_of(va, size, ctx);
        self.put_absent(set, TlbKey::new(va, size, ctx), e.frame, e.dirty);
    }

    /// Insert the coalesced entry for the group of `2^group_shift` pages holding `va`, whose
    /// page `va` has the translation `e` (replacing a stale copy; `absent`: none is cached).
    /// Entries of single pages of the group stay (§2.5 of the coalescing paper).
    #[inline(never)]
    fn insert_group(&mut self, va: VirtAddr, ctx: Ctx, e: TlbEntry, absent: bool) {
        let set = self.group_set(va, ctx);
        let key = TlbKey::group(va, self.group_shift, ctx);
        // (The group is aligned in both spaces: its first frame is the page's, rounded down.)
        let first = e.frame & !((1u64 << self.group_shift) - 1);
        if absent {
            self.put_absent(set, key, first, e.dirty);
        } else {
            self.put(set, key, first, e.dirty);
        }
    }

    /// [`TlbLevel::insert`]'s part for the array of coalesced entries: cache the group of the
    /// 4 KB translation `e` if it is coalescable at this array's size (true), or else drop a
    /// coalesced entry covering `va`, now stale (false).
    #[inline(never)]
    fn insert_or_drop_group(&mut self, va: VirtAddr, ctx: Ctx, e: TlbEntry) -> bool {
        if u32::from(e.group) >= self.group_shift {
            self.insert_group(va, ctx, e, false);
            return true;
        }
        self.drop_group(va, ctx);
        false
    }

    /// Drop the coalesced entry covering `va`, if any.
    #[inline]
    fn drop_group(&mut self, va: VirtAddr, ctx: Ctx) {
        if self.live[GROUP] == 0 {
            return;
        }
        let set = self.group_set(va, ctx);
        if let Some(slot) = self.arr.probe(set, TlbKey::group(va, self.group_shift, ctx)) {
            self.arr.invalidate_slot(slot);
            self.live[GROUP] -= 1;
        }
    }

    #[inline]
    fn put(&mut self, set: usize, key: TlbKey, frame: u64, dirty: bool) {
        if let Some(slot) = self.arr.probe(set, key) {
            *self.arr.val_mut(slot) = Stored { frame, dirty };
            return;
        }
        self.put_absent(set, key, frame, dirty);
    }

    #[inline]
    fn put_absent(&mut self, set: usize, key: TlbKey, frame: u64, dirty: bool) {
        debug_assert!(self.arr.probe(set, key).is_none(), "insert_absent of a cached translation");
        let (_, ev) = self.arr.insert(set, key, Stored { frame, dirty }, LineKind::Data);
        self.live[key.code()] += 1;
        if let Some(ev) = ev {
            self.live[ev.key.code()] -= 1;
            // (A page directory entry pushed out is no translation for the eviction hook.)
            self.evicted = (!ev.key.is_pde()).then(|| (ev.key, TlbEntry::page(ev.val.frame, ev.val.dirty)));
        }
    }

    /// Drop entries matching `pred(key)`; returns how many.
    pub fn invalidate_where(&mut self, mut pred: impl FnMut(&TlbKey) -> bool) -> usize {
        let mut dropped = [0u32; CODES];
        let n = self.arr.invalidate_where(|k, _| {
            let hit = pred(&k);
            if hit {
                dropped[k.code()] += 1;
            }
            hit
        });
        for (live, d) in self.live.iter_mut().zip(dropped) {
            *live -= d;
        }
        n
    }

    /// Drop the entries `what` reaches in the sets of `2^shift`-byte regions `first..=last`
    /// of `ctx` (a few pages' invalidation need not scan the array), each set's in way order
    /// as a scan drops them; returns how many.
    fn invalidate_regions(&mut self, what: &Invalidate, ctx: Ctx, first: u64, last: u64) -> usize {
        let mut n = 0;
        for region in first..=last {
            let set = self.set_of_vpn(region, ctx);
            for way in 0..self.arr.ways() {
                let slot = self.arr.slot(set, way);
                let k = self.arr.key(slot);
                if k != TlbKey::INVALID && reaches(what, &k, self.group_shift) {
                    self.arr.invalidate_slot(slot);
                    self.live[k.code()] -= 1;
                    n += 1;
                }
            }
        }
        n
    }

    /// Drop every entry of set `set` (TCAT-cotagless); returns how many.
    pub fn invalidate_set(&mut self, set: usize) -> usize {
        let mut n = 0;
        for way in 0..self.arr.ways() {
            if let Some(ev) = self.arr.invalidate_slot(self.arr.slot(set, way)) {
                self.live[ev.key.code()] -= 1;
                n += 1;
            }
        }
        n
    }

    pub fn occupancy(&self) -> usize {
        self.arr.occupancy()
    }

    /// Every valid translation (for checks, not the hot path; page directory entries left
    /// out). A coalesced entry's has the group's first frame and its `group`.
    pub fn entries(&self) -> Vec<(TlbKey, TlbEntry)> {
        let g = self.group_shift as u8;
        self.arr
            .slots()
            .map(|s| (self.arr.key(s), self.entry(s)))
            .filter(|(k, _)| *k != TlbKey::INVALID && !k.is_pde())
            .map(|(k, e)| (k, TlbEntry { group: if k.code() == GROUP { g } else { 0 }, ..e }))
            .collect()
    }
}

/// Whether `inv` reaches the entry `k` of an array whose coalesced entries are groups of
/// `2^group_shift` pages (INVLPG of any page of a group drops the group).
#[inline]
fn reaches(inv: &Invalidate, k: &TlbKey, group_shift: u32) -> bool {
    inv.covers(k.ctx, k.vpn(), k.shift(group_shift))
}

/// What a TLB level counts (emitted as `tlb.<name>.*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TlbStats {
    /// Lookups.
    pub accesses: u64,
    /// Lookups that found a usable translation (a store's needs a dirty one; see
    /// [`crate::translate::Translator`] for a clean one), by page-size code too (a
    /// [`PageSize`] as usize, or [`GROUP`] for a coalesced entry).
    pub hits: u64,
    pub hits_by_size: [u64; CODES],
    /// Lookups that found no translation of the page.
    pub misses: u64,
    /// Misses by what answered them and the page-size code of the entry this level was
    /// filled with: `[0]` a deeper TLB level, `[1]` a walk (the coalescing paper's T2 split
    /// of L1 TLB misses into L2 hits and misses by size).
    pub refills: [[u64; CODES]; 2],
}

impl TlbStats {
    /// Count a hit on `e` (as [`TlbLevel::lookup`] returned it) of page size `size`.
    #[inline]
    pub fn hit(&mut self, e: TlbEntry, size: PageSize) {
        self.hits += 1;
        self.hits_by_size[code_of(e, size)] += 1;
    }
}

/// The page-size code of a translation a lookup returned.
#[inline]
fn code_of(e: TlbEntry, size: PageSize) -> usize {
    if e.group != 0 {
        GROUP
    } else {
        size as usize
    }
}

/// A TLB level: arrays and which page sizes each holds, and what it counts.
pub struct TlbLevel {
    arrays: Vec<TlbArray>,
    /// For each page size, the index of the array that holds it, if any.
    holder: [Option<u8>; 3],
    /// The array that holds coalesced entries (that of 4 KB pages), if the level coalesces.
    group_holder: Option<u8>,
    /// A 1 GB translation is cached as the 2 MB piece holding the address (when the level
    /// holds 2 MB pages and not 1 GB ones).
    smash_1g: bool,
    pub stats: TlbStats,
    /// The miss-ratio-curve profile, when one was asked for ([`Self::profile`]).
    prof: Option<Box<TlbProfile>>,
}

/// A TLB level's one-pass miss-ratio curve ([`crate::mrc`]): one recency stack per array,
/// with the array's sets, and one histogram for the level. A lookup's depth is the least of
/// its probes' (a level hits if any array does), so `depths.misses(w)` is the level's
/// misses with `w` ways in each array. Exact for LRU arrays; with coalescing, the group's
/// and its pages' entries compete as in the level, but which one a hit refreshes may differ.
pub struct TlbProfile {
    stacks: Vec<StackProfile>,
    pub depths: Depths,
}

/// A TLB key as a stack key.
#[inline]
fn stack_key(k: TlbKey) -> StackKey {
    (StackKey::from(k.ctx) << 64) | StackKey::from(k.tag)
}

#[inline]
fn tlb_key(k: StackKey) -> TlbKey {
    TlbKey::from_parts(k as u64, (k >> 64) as Ctx)
}

impl TlbLevel {
    /// `arrays`: (entries, ways, sizes held). Arrays with zero entries are left out.
    pub fn new(arrays: &[(u64, u64, &[PageSize])], policy: Policy, seed: u64) -> TlbLevel {
        let mut lvl = TlbLevel { arrays: Vec::new(), holder: [None; 3], group_holder: None, smash_1g: false, stats: TlbStats::default(), prof: None };
        for (i, &(entries, ways, sizes)) in arrays.iter().filter(|a| a.0 > 0).enumerate() {
            lvl.arrays.push(TlbArray::new(entries, ways, policy, seed.wrapping_add(i as u64)));
            for &s in sizes {
                lvl.holder[s as usize] = Some(i as u8);
            }
        }
        lvl
    }

    /// This level also caches coalesced groups of `2^group_shift` 4 KB pages (0: none): in
    /// its array of 4 KB pages, or with `own` = (entries, ways) > 0 in an array of their own
    /// (ways set aside for coalesced entries: a way-partitioned set-associative level; the
    /// coalescing paper leaves open how Zen's L2 mixes sizes).
    pub fn coalescing(mut self, group_shift: u32, own: (u64, u64), policy: Policy, seed: u64) -> TlbLevel {
        let Some(a) = self.holder[PageSize::Size4K as usize].filter(|_| group_shift > 0) else { return self };
        let a = if own.0 > 0 {
            self.arrays.push(TlbArray::new(own.0, own.1, policy, seed));
            self.arrays.len() as u8 - 1
        } else {
            a
        };
        self.arrays[a as usize].group_shift = group_shift;
        self.group_holder = Some(a);
        self
    }

    /// This level caches a 1 GB translation as the 2 MB piece holding the address, as
    /// Zen's L2 ITLB does ("smashing"), if it holds 2 MB pages and not 1 GB ones.
    pub fn smashing_1g(mut self) -> TlbLevel {
        self.smash_1g = self.holder[PageSize::Size2M as usize].is_some() && self.holder[PageSize::Size1G as usize].is_none();
        self
    }

    /// The 2 MB piece of the 1 GB translation `e` of `va`, for a level that smashes 1 GB
    /// pages ([`Self::smashing_1g`]).
    #[inline]
    fn smashed(&self, size: PageSize, va: VirtAddr, e: TlbEntry) -> Option<TlbEntry> {
        (self.smash_1g && size == PageSize::Size1G).then(|| TlbEntry::page(e.frame + ((va.0 >> 21) & 511) * 512, e.dirty))
    }

    /// The node that the page directory entry for `va` points to, if this level holds it:
    /// in its array of 2 MB pages (`tlb.l2.pdes`: Zen's L2 DTLB). Not a translation lookup:
    /// no statistic counts it here (the walker counts it as its `pwc.l2` lookup).
    #[inline]
    pub fn lookup_pde(&mut self, va: VirtAddr, ctx: Ctx) -> Option<u64> {
        let a = self.holder[PageSize::Size2M as usize]?;
        self.arrays[a as usize].lookup_pde(va, ctx)
    }

    /// Cache the page directory entry for `va`, pointing to `node`, in the array of 2 MB
    /// pages, where it competes with translations (a walk read it after
    /// [`Self::lookup_pde`] missed).
    #[inline]
    pub fn fill_pde(&mut self, va: VirtAddr, ctx: Ctx, node: u64) {
        if let Some(a) = self.holder[PageSize::Size2M as usize] {
            self.arrays[a as usize].fill_pde(va, ctx, node);
        }
    }

    /// The entry the last fill of this level pushed out, if any (for the `on_tlb_evict` hook:
    /// take it after each fill, or it goes stale).
    #[inline]
    pub fn take_evicted(&mut self) -> Option<(TlbKey, TlbEntry)> {
        self.arrays.iter_mut().find_map(|a| a.evicted.take())
    }

    /// How this level's arrays pick a translation's set (`tlb.set_index`).
    pub fn indexed(mut self, index: TlbSetIndex) -> TlbLevel {
        let mask = if index == TlbSetIndex::VpnXorVm { u64::MAX } else { 0 };
        for a in &mut self.arrays {
            a.vm_mask = mask;
        }
        self
    }

    /// log2 of the pages of this level's coalesced entries (0: it holds none).
    pub fn group_shift(&self) -> u32 {
        self.group_holder.map_or(0, |a| self.arrays[a as usize].group_shift)
    }

    #[inline]
    pub fn holds(&self, size: PageSize) -> bool {
        self.holder[size as usize].is_some()
    }

    /// Look `va` up: first a coalesced entry covering it (so that, as the coalescing paper
    /// observes, 4 KB entries of a coalesced group go unused and age out), then every page
    /// size. On a hit return the translation of `va`'s page and its size (a coalesced entry
    /// returns the 4 KB page's frame, with `group` set).
    #[inline(always)]
    pub fn lookup(&mut self, va: VirtAddr, ctx: Ctx) -> Option<(TlbEntry, PageSize)> {
        let found = self.lookup_unprofiled(va, ctx);
        if self.prof.is_some() {
            self.profile_lookup(va, ctx, found);
        }
        found
    }

    #[inline]
    fn lookup_unprofiled(&mut self, va: VirtAddr, ctx: Ctx) -> Option<(TlbEntry, PageSize)> {
        if let Some(a) = self.group_holder {
            let arr = &mut self.arrays[a as usize];
            if let Some(slot) = arr.lookup_group(va, ctx) {
                let (e, g) = (arr.entry(slot), arr.group_shift);
                let frame = e.frame + ((va.0 >> 12) & ((1 << g) - 1));
                return Some((TlbEntry { frame, dirty: e.dirty, group: g as u8 }, PageSize::Size4K));
            }
        }
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

    /// Whether this level holds a translation of `va`'s page, leaving its replacement state
    /// as it is (a prefetcher's check before it walks).
    pub fn holds_page(&self, va: VirtAddr, ctx: Ctx) -> bool {
        if let Some(a) = self.group_holder {
            let arr = &self.arrays[a as usize];
            if arr.live[GROUP] != 0 && arr.arr.probe(arr.group_set(va, ctx), TlbKey::group(va, arr.group_shift, ctx)).is_some() {
                return true;
            }
        }
        PageSize::ALL.into_iter().any(|size| {
            self.holder[size as usize].is_some_and(|a| {
                let arr = &self.arrays[a as usize];
                arr.holds_any(size) && arr.arr.probe(arr.set_of(va, size, ctx), TlbKey::new(va, size, ctx)).is_some()
            })
        })
    }

    /// Mark the cached translation of `va` dirty (after a walk set the PTE's D bit).
    #[inline]
    pub fn set_dirty(&mut self, va: VirtAddr, size: PageSize, ctx: Ctx) {
        if let Some(a) = self.holder[size as usize] {
            let arr = &mut self.arrays[a as usize];
            let set = arr.set_of(va, size, ctx);
            if let Some(slot) = arr.arr.probe(set, TlbKey::new(va, size, ctx)) {
                arr.arr.val_mut(slot).dirty = true;
            }
        }
    }

    /// Cache the translation `e` of `va` (replacing a stale copy). A 4 KB page whose group
    /// is coalescable at this level's size (`e.group`) is cached as the coalesced entry;
    /// otherwise a coalesced entry covering the page is stale (a store walked and set the
    /// page's D bit: the coalescing paper's §2.4 destroys it) and goes. Returns the
    /// page-size code cached.
    #[inline(always)]
    pub fn insert(&mut self, va: VirtAddr, size: PageSize, ctx: Ctx, e: TlbEntry) -> usize {
        let code = self.insert_unprofiled(va, size, ctx, e);
        if self.prof.is_some() {
            self.profile_fill(va, ctx, code);
        }
        code
    }

    #[inline]
    fn insert_unprofiled(&mut self, va: VirtAddr, size: PageSize, ctx: Ctx, e: TlbEntry) -> usize {
        if let (PageSize::Size4K, Some(g)) = (size, self.group_holder) {
            if self.arrays[g as usize].insert_or_drop_group(va, ctx, e) {
                return GROUP;
            }
        }
        if let Some(a) = self.holder[size as usize] {
            self.arrays[a as usize].insert(va, size, ctx, e);
            return size as usize;
        }
        self.insert_elsewhere(va, size, ctx, e, false)
    }

    /// [`Self::insert`] after a lookup of `va` missed (see [`TlbArray::insert_absent`]).
    #[inline(always)]
    pub fn insert_absent(&mut self, va: VirtAddr, size: PageSize, ctx: Ctx, e: TlbEntry) -> usize {
        let code = self.insert_absent_unprofiled(va, size, ctx, e);
        if self.prof.is_some() {
            self.profile_fill(va, ctx, code);
        }
        code
    }

    #[inline]
    fn insert_absent_unprofiled(&mut self, va: VirtAddr, size: PageSize, ctx: Ctx, e: TlbEntry) -> usize {
        // (Without coalescing no translation has a group: one test.)
        if e.group != 0 && self.insert_group_absent(va, size, ctx, e) {
            return GROUP;
        }
        if let Some(a) = self.holder[size as usize] {
            self.arrays[a as usize].insert_absent(va, size, ctx, e);
            return size as usize;
        }
        self.insert_elsewhere(va, size, ctx, e, true)
    }

    /// [`Self::insert_absent`] of a translation in a coalescable group: cache the group if
    /// this level coalesces groups that size (true).
    #[inline(never)]
    fn insert_group_absent(&mut self, va: VirtAddr, size: PageSize, ctx: Ctx, e: TlbEntry) -> bool {
        let Some(g) = self.group_holder.filter(|_| size == PageSize::Size4K) else { return false };
        let arr = &mut self.arrays[g as usize];
        if u32::from(e.group) < arr.group_shift {
            return false;
        }
        arr.insert_group(va, ctx, e, true);
        true
    }

    /// A translation of a size this level holds no array for: its 2 MB piece if the level
    /// smashes 1 GB pages, else nothing. (Out of line: the fills above stay small.)
    #[cold]
    #[inline(never)]
    fn insert_elsewhere(&mut self, va: VirtAddr, size: PageSize, ctx: Ctx, e: TlbEntry, absent: bool) -> usize {
        let (Some(piece), Some(a)) = (self.smashed(size, va, e), self.holder[PageSize::Size2M as usize]) else { return size as usize };
        let arr = &mut self.arrays[a as usize];
        if absent {
            arr.insert_absent(va, PageSize::Size2M, ctx, piece);
        } else {
            arr.insert(va, PageSize::Size2M, ctx, piece);
        }
        PageSize::Size2M as usize
    }

    pub fn invalidate(&mut self, what: Invalidate) -> usize {
        if let Some(p) = &mut self.prof {
            for (st, a) in p.stacks.iter_mut().zip(&self.arrays) {
                let g = a.group_shift;
                st.remove_where(|k| reaches(&what, &tlb_key(k), g));
            }
        }
        // (An idle core's levels hold nothing: a shootdown reaches every core's.)
        if self.arrays.iter().all(|a| a.live == [0; CODES]) {
            return 0;
        }
        if let Invalidate::Range { ctx, start, end } = what {
            if let Some(n) = self.invalidate_range(&what, ctx, start, end) {
                return n;
            }
        }
        self.arrays
            .iter_mut()
            .map(|a| {
                let g = a.group_shift;
                a.invalidate_where(|k| reaches(&what, k, g))
            })
            .sum()
    }

    /// [`Self::invalidate`] of `[start, end)` of `ctx` by looking in the sets its pages, 2 MB
    /// pieces, 1 GB pieces and coalesced groups index, where those are fewer than an array's
    /// sets (a shootdown of a few pages: a scan of every entry would cost thousands of host
    /// instructions); None for a range wider than that, which the caller scans for. The same
    /// entries go either way, each set's in the same order: an entry lies in the set its own
    /// region indexes.
    fn invalidate_range(&mut self, what: &Invalidate, ctx: Ctx, start: u64, end: u64) -> Option<usize> {
        if end <= start {
            return Some(0);
        }
        // (Each kind of entry an array holds: its region size and that array.)
        let mut kinds = [(0u32, 0u8); 4];
        let mut k = 0;
        for size in PageSize::ALL {
            if let Some(a) = self.holder[size as usize] {
                kinds[k] = (size.shift(), a);
                k += 1;
            }
        }
        if let Some(a) = self.group_holder {
            kinds[k] = (12 + self.arrays[a as usize].group_shift, a);
            k += 1;
        }
        let kinds = &kinds[..k];
        let wide = kinds.iter().any(|&(shift, a)| ((end - 1) >> shift) - (start >> shift) >= self.arrays[a as usize].sets() as u64);
        if wide {
            return None;
        }
        let mut n = 0;
        for &(shift, a) in kinds {
            n += self.arrays[a as usize].invalidate_regions(what, ctx, start >> shift, (end - 1) >> shift);
        }
        Some(n)
    }

    /// Drop the entries whose key `pred` names, in every array (TCAT-cotag's search by
    /// co-tag); returns how many.
    pub fn invalidate_keys(&mut self, mut pred: impl FnMut(&TlbKey) -> bool) -> usize {
        if let Some(p) = &mut self.prof {
            for st in &mut p.stacks {
                st.remove_where(|k| pred(&tlb_key(k)));
            }
        }
        self.arrays.iter_mut().map(|a| a.invalidate_where(&mut pred)).sum()
    }

    /// Drop every entry of the set that hash value `h` selects in the array holding pages of
    /// `size` (TCAT-cotagless: `h` is the POM-TLB set, whose low bits are this array's set
    /// when both index by the same hash); returns how many.
    pub fn invalidate_hashed_set(&mut self, size: PageSize, h: u64) -> usize {
        let Some(a) = self.holder[size as usize] else { return 0 };
        let arr = &mut self.arrays[a as usize];
        let set = arr.arr.set_of(h);
        if let Some(p) = &mut self.prof {
            // (The profile's stacks have the array's sets: every associativity loses the set.)
            p.stacks[a as usize].clear_set(set);
        }
        arr.invalidate_set(set)
    }

    pub fn occupancy(&self) -> usize {
        self.arrays.iter().map(|a| a.occupancy()).sum()
    }

    /// Profile this level from now on for its miss-ratio curve ([`TlbProfile`]): up to `cap`
    /// ways in each array, with the arrays' own sets.
    pub fn profile(&mut self, cap: usize) {
        let stacks = self.arrays.iter().map(|a| StackProfile::new(a.sets(), cap)).collect();
        self.prof = Some(Box::new(TlbProfile { stacks, depths: Depths::new(cap) }));
    }

    /// Whether every array replaces LRU.
    pub fn is_lru(&self) -> bool {
        self.arrays.iter().all(|a| a.arr.is_lru())
    }

    /// (sets, ways) of each array, in order.
    pub fn geometry(&self) -> Vec<(usize, usize)> {
        self.arrays.iter().map(|a| (a.sets(), a.ways())).collect()
    }

    /// The profile, if [`Self::profile`] started one.
    pub fn profiled(&self) -> Option<&TlbProfile> {
        self.prof.as_deref()
    }

    pub fn profiled_mut(&mut self) -> Option<&mut TlbProfile> {
        self.prof.as_deref_mut()
    }

    /// (array, set index value, key) of each probe of a lookup of `va`, in lookup order:
    /// the coalesced group's, then each page size's.
    fn probes(&self, va: VirtAddr, ctx: Ctx) -> ([(usize, u64, TlbKey); 4], usize) {
        let mut out = [(0, 0, TlbKey::INVALID); 4];
        let mut n = 0;
        if let Some(a) = self.group_holder {
            let arr = &self.arrays[a as usize];
            out[n] = (a as usize, arr.index_of(va.0 >> (12 + arr.group_shift), ctx), TlbKey::group(va, arr.group_shift, ctx));
            n += 1;
        }
        for size in PageSize::ALL {
            if let Some(a) = self.holder[size as usize] {
                out[n] = (a as usize, self.arrays[a as usize].index_of(va.vpn(size), ctx), TlbKey::new(va, size, ctx));
                n += 1;
            }
        }
        (out, n)
    }

    /// A lookup's depth (the least of its probes') counted; a hit refreshes the entry hit.
    #[cold]
    #[inline(never)]
    fn profile_lookup(&mut self, va: VirtAddr, ctx: Ctx, found: Option<(TlbEntry, PageSize)>) {
        let (probes, n) = self.probes(va, ctx);
        let p = self.prof.as_deref_mut().expect("profiled");
        let mut depth = usize::MAX;
        for &(a, index, key) in &probes[..n] {
            let st = &p.stacks[a];
            depth = depth.min(st.depth(st.set_of(index), stack_key(key)));
        }
        p.depths.count(depth);
        if let Some((e, size)) = found {
            let hit = if e.group != 0 { probes[0] } else { *probes[..n].iter().find(|pr| pr.2.code() == size as usize).expect("the size hit is probed") };
            let st = &mut p.stacks[hit.0];
            st.touch(st.set_of(hit.1), stack_key(hit.2));
        }
    }

    /// A fill of `va`'s translation, cached as page-size code `code`, refreshes its entry.
    #[cold]
    #[inline(never)]
    fn profile_fill(&mut self, va: VirtAddr, ctx: Ctx, code: usize) {
        let (probes, n) = self.probes(va, ctx);
        let p = self.prof.as_deref_mut().expect("profiled");
        // (A size the level holds no array for, and does not smash, was not cached.)
        let filled = if code == GROUP { probes[..n].first().filter(|pr| pr.2.code() == GROUP) } else { probes[..n].iter().find(|pr| pr.2.code() == code) };
        if let Some(&(a, index, key)) = filled {
            let st = &mut p.stacks[a];
            st.touch(st.set_of(index), stack_key(key));
        }
    }

    /// Every valid entry of every array (for checks, not the hot path).
    pub fn entries(&self) -> Vec<(TlbKey, TlbEntry)> {
        self.arrays.iter().flat_map(|a| a.entries()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Zen's L2 ITLB holds no 1 GB pages: a 1 GB translation is cached as the 2 MB piece
    /// holding the address, which answers for that piece only, and a shootdown of the 1 GB
    /// page removes it.
    #[test]
    fn a_smashing_level_caches_the_2m_piece_of_a_1g_page() {
        use PageSize::*;
        let mut l = TlbLevel::new(&[(64, 8, &[Size4K, Size2M])], Policy::Lru, 1).smashing_1g();
        let (gb, ctx) = (VirtAddr(5 << 30), 7);
        let va = VirtAddr(gb.0 + (3 << 21) + 0x1234);
        assert_eq!(l.insert_absent(va, Size1G, ctx, TlbEntry::page(0x40000, true)), Size2M as usize);
        assert_eq!(l.lookup(va, ctx), Some((TlbEntry::page(0x40000 + 3 * 512, true), Size2M)));
        assert_eq!(l.lookup(VirtAddr(va.0 + (1 << 21)), ctx), None, "another piece of the 1 GB page");
        assert_eq!(l.invalidate(Invalidate::Range { ctx, start: gb.0, end: gb.0 + (1 << 30) }), 1);
        assert_eq!(l.lookup(va, ctx), None);
        // A level that holds 1 GB pages, or no 2 MB ones, does not smash.
        let mut whole = TlbLevel::new(&[(64, 8, &[Size4K, Size2M, Size1G])], Policy::Lru, 1).smashing_1g();
        whole.insert_absent(va, Size1G, ctx, TlbEntry::page(0x40000, true));
        assert_eq!(whole.lookup(va, ctx), Some((TlbEntry::page(0x40000, true), Size1G)));
        let mut small = TlbLevel::new(&[(64, 8, &[Size4K])], Policy::Lru, 1).smashing_1g();
        small.insert_absent(va, Size1G, ctx, TlbEntry::page(0x40000, true));
        assert_eq!(small.lookup(va, ctx), None);
    }

    /// A range invalidation looks only in the sets its pages, 2 MB and 1 GB pieces and
    /// coalesced groups index: it drops what a scan of every entry drops (the reference:
    /// `invalidate_keys` with the same rule), each set's in the same order, so that the levels
    /// go on filling and evicting alike; on levels with every page size, coalesced groups in
    /// the 4 KB array or in their own, a unified array and a fully associative one, and ranges
    /// of one page to wider than the arrays' sets.
    #[test]
    fn a_range_invalidation_drops_what_a_scan_drops() {
        use PageSize::*;
        type Build = fn() -> TlbLevel;
        let levels: [Build; 4] = [
            || TlbLevel::new(&[(64, 4, &[Size4K]), (32, 4, &[Size2M]), (4, 4, &[Size1G])], Policy::Lru, 1).coalescing(2, (0, 0), Policy::Lru, 2),
            || TlbLevel::new(&[(1536, 12, &[Size4K, Size2M]), (16, 4, &[Size1G])], Policy::Fifo, 1).coalescing(3, (64, 2), Policy::Fifo, 2),
            || TlbLevel::new(&[(64, 64, &[Size4K, Size2M, Size1G])], Policy::Lru, 1).coalescing(2, (0, 0), Policy::Lru, 2),
            || TlbLevel::new(&[(128, 8, &[Size4K]), (8, 8, &[Size2M])], Policy::Lru, 1).smashing_1g(),
        ];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for (i, build) in levels.iter().enumerate() {
            let (mut fast, mut scan) = (build(), build());
            let mut recent = [0u64; 32];
            let mut dropped = 0;
            for op in 0..6_000 {
                let r = next();
                // Two contexts, 2 GB of addresses; a range starts near a page filled lately,
                // so that it drops entries of every kind.
                let ctx = (r & 1) as Ctx + 1;
                let va = VirtAddr((r >> 8) & ((2 << 30) - 1) & !0xfff);
                if op % 7 != 6 {
                    recent[op % 32] = va.0;
                    let size = match r >> 60 {
                        0 => Size1G,
                        1 | 2 => Size2M,
                        _ => Size4K,
                    };
                    let e = TlbEntry { frame: (r >> 20) & 0xf_ffff, dirty: r & 2 != 0, group: ((r >> 4) % 4) as u8 };
                    assert_eq!(fast.insert(va, size, ctx, e), scan.insert(va, size, ctx, e));
                    continue;
                }
                let pages = [1u64, 2, 4, 16, 17, 300, 4096][((r >> 40) % 7) as usize];
                let near = recent[((r >> 50) % 32) as usize];
                let start = (near & !((1 << [12, 12, 14, 21][((r >> 56) % 4) as usize]) - 1)) + ((r >> 2) & 0xfff) * u64::from(r & 4 != 0);
                let what = Invalidate::Range { ctx, start, end: start + pages * 4096 };
                let g = [2, 3, 2, 0][i];
                let n = fast.invalidate(what);
                assert_eq!(n, scan.invalidate_keys(|k| reaches(&what, k, g)), "level {i}, op {op}");
                assert_eq!(fast.entries(), scan.entries(), "level {i}, op {op}");
                dropped += n;
            }
            assert!(fast.occupancy() > 0 && dropped > 100, "level {i}: {dropped} dropped");
        }
    }
}
