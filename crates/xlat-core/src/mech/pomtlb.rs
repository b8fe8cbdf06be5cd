//! The POM-TLB (seed 003, after Ryoo et al., ISCA'17): a very large, shared L3 TLB that
//! lives in memory (die-stacked DRAM). A set is one 64-byte line of four 16-byte entries at
//! `base + 64 * set`, so the MMU reads it like data: on an L2 TLB miss it reads the line
//! through the core's L2 cache and the LLC (the L1D is not on the MMU's path), and only an
//! LLC miss goes to the die-stacked DRAM. The lines compete with data and page-table lines
//! for the caches, which is what CSALT partitions. A miss walks the page tables; the walk's
//! translation is then written into its set, through the caches.
//!
//! Two arrays: one for 4 KB pages, one for 2 MB pages (a 1 GB page is held as the 2 MB
//! piece that was touched). Both are probed, in parallel, on every lookup (the thesis does
//! not say how the MMU picks one; probing both is its suggested default). Entries are
//! tagged by VM and process (the context), not flushed at a switch.
//!
//! The set index is Eq. 5.10 of the thesis in one of two readings (`pomtlb.hash`): `vpn`
//! hashes the virtual page number (one set per page, the property TCAT relies on), `literal`
//! shifts the page-aligned address right by 6 as printed (only 1/64 of the sets are used).
//!
//! The arrays hold what memory will hold once every write reaches it. The one time a cached
//! copy of a line says otherwise is TCAT's initiator rewriting a line without flushing it
//! (`tcat.flush=false`, the thesis's §5.2.5.1 counterexample): the cleared line sits modified
//! in the initiator's L1D, which the MMU's path does not read, while its L2, the LLC and the
//! DRAM still hold the old one. Such lines' old entries are kept aside ([`Unflushed`]: the
//! initiator announces each rewrite through [`Mechanism::on_line_rewrite`]) and answer lookups
//! until the L1D writes the line back (or an MMU write to it takes the line).

use crate::arch::addr::{PageSize, VirtAddr};
use crate::arch::ctx::{Ctx, Invalidate, SPACE_MASK, VPID_SHIFT};
use crate::assoc::SetAssoc;
use crate::mech::Mechanism;
use crate::memory::port::MemPort;
use crate::memory::repl::Policy;
use crate::param::{PomHash};
use crate::stats::{Ints, Stats};
use crate::translate::tlb::{TlbEntry, TlbKey};

use crate::param::{Limit, bound, component};

component! {
    /// The POM-TLB (`pomtlb.*`).
    PomTlbParams {
        enabled: bool = false; "enabled"; None; "POM-TLB (Ryoo et al. ISCA'17, the L3 TLB of the CSALT thesis, Marathe 2018): a shared translation array in die-stacked DRAM, looked up on an L2 TLB miss through the L2 cache and the LLC as lines of kind TLB entry, filled after each walk";
        size_mb: u64 = 16; "size_mb"; Some(Limit::Int(1024)); "POM-TLB array for 4 KB pages, in MB of memory (16-byte entries, one 64-byte line per set; the thesis's 16 MB)";
        large_size_mb: u64 = 1; "large_size_mb"; Some(Limit::Int(1024)); "POM-TLB array for 2 MB pages, in MB (the thesis does not say how the 16 MB is split; 1 MB holds 65,536 2 MB translations)";
        ways: u64 = 4; "ways"; Some(Limit::IntRange(1, 4)); "POM-TLB entries per set; sets are one 64-byte line, so at most 4 (the thesis's 4-way)";
        latency: u64 = 132; "latency"; Some(Limit::Int(bound::LATENCY)); "die-stacked DRAM latency beyond the LLC, in core cycles (Tab. 6.1: 11-11-11 at a 1 GHz bus, a row miss tRP+tRCD+tCAS = 33 ns = 132 cycles at 4 GHz)";
        bandwidth_gbps: f64 = 0.0; "bandwidth_gbps"; Some(Limit::Real(1e6)); "die-stacked DRAM bandwidth for the queue model (Tab. 6.1: 128 bits at DDR 2 GHz = 32 GB/s; 0: unlimited, the default, because the one-queue model makes reads issued earlier wait behind fills issued later)";
        base_gb: u64 = 16384; "base_gb"; Some(Limit::Int(1 << 20)); "physical address of the POM-TLB in GB (BASE_ADDR_POM-TLB, Eq. 5.10): above every frame the OS allocates; the 2 MB array follows the 4 KB one";
        hash: crate::param::PomHash = crate::param::PomHash::Vpn; "hash"; None; "POM-TLB set index: vpn ((VPN xor VM ID) mod sets, one set per page, the reading TCAT needs) or literal (Eq. 5.10 as printed: (VA xor VM ID) >> 6 on the page-aligned VA)";
    }
    check(p, key) {
        if !p.enabled {
            return Ok(());
        }
        for (name, mb) in [("size_mb", p.size_mb), ("large_size_mb", p.large_size_mb)] {
            if mb == 0 || !mb.is_power_of_two() || mb > 1024 {
                return Err(crate::param::invalid(key(name), format!("{mb} MB: must be a power of two between 1 and 1024")));
            }
        }
        if !(1..=4).contains(&p.ways) {
            return Err(crate::param::invalid(key("ways"), "must be between 1 and 4 (16-byte entries, a set is one 64-byte line)"));
        }
        if p.latency > 1 << 20 {
            return Err(crate::param::invalid(key("latency"), "must be at most 2^20 cycles"));
        }
        if !(p.bandwidth_gbps >= 0.0 && p.bandwidth_gbps.is_finite()) {
            return Err(crate::param::invalid(key("bandwidth_gbps"), "must be a finite number, 0 or more"));
        }
        Ok(())
    }
}

crate::stats::counters! {
    /// The POM-TLB's events, chip-wide (statistics `pomtlb.*`; where its lines were served
    /// is counted by the memory side).
    pub struct PomCounters under "pomtlb." {
        lookups: "lookups" => (Mechanisms, Counter, "lookups",
            "L2 TLB misses that looked the POM-TLB up (not stores through a clean L1/L2 entry, which walk at once): `hits` + `misses`. Every lookup reads two lines, one per array.")
            .only("`pomtlb.enabled=true`"),
        hits: "hits" => (Mechanisms, Counter, "lookups",
            "Lookups that found the translation (a store needs a dirty one); the L1 and L2 TLBs are filled and no walk runs.").only("`pomtlb.enabled=true`"),
        hits_2m: "hits_2m" => (Mechanisms, Counter, "lookups",
            "Hits in the 2 MB array (a 1 GB page is held as the 2 MB piece touched).").only("`pomtlb.enabled=true`"),
        misses: "misses" => (Mechanisms, Counter, "lookups", "Lookups that walked: no entry, or a store found a clean one.").only("`pomtlb.enabled=true`"),
        dirty_walks: "dirty_walks" => (Mechanisms, Counter, "lookups",
            "Misses of stores that found a clean entry and walked to set the PTE's D bit (included in `misses`).").only("`pomtlb.enabled=true`"),
        fills: "fills" => (Mechanisms, Counter, "translations",
            "Translations written after walks (each a write of its set's line through the L2 cache).").only("`pomtlb.enabled=true`"),
        evictions: "evictions" => (Mechanisms, Counter, "entries", "Valid entries a fill replaced (LRU within the 4-entry set).").only("`pomtlb.enabled=true`"),
        invalidations: "invalidations" => (Mechanisms, Counter, "entries", "Entries dropped by shootdowns and flushes.").only("`pomtlb.enabled=true`"),
        stale_hits: "stale_hits" => (Mechanisms, Counter, "lookups",
            "Hits (in `hits`) on an old entry of a line TCAT's initiator rewrote without flushing it (`tcat.flush=false`, the §5.2.5.1 counterexample): until the initiator's L1D writes the line back, the copies the MMU reads still hold the translation the rewrite cleared. 0 otherwise.")
            .only("`pomtlb.enabled=true`"),
    }
}

/// One array of the POM-TLB: its sets, where they are in memory, and its page size.
struct Array {
    sets: SetAssoc<TlbKey, TlbEntry>,
    /// Its first line (physical line number).
    base_line: u64,
}

impl Array {
    fn new(mb: u64, ways: u64, base_line: u64, seed: u64) -> Array {
        let sets = (mb << 20) / crate::LINE_BYTES;
        Array { sets: SetAssoc::new(sets as usize, ways as usize, Policy::Lru, seed), base_line }
    }

    fn lines(&self) -> u64 {
        self.sets.sets() as u64
    }
}

/// The POM-TLB's addressing: each array's first line and set count, and the hash (Eq. 5.10).
/// TCAT computes a translation's home line with it, and TCAT-cotagless a private TLB's set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PomAddressing {
    /// (first line, sets) of the 4 KB and the 2 MB array.
    pub small: (u64, u64),
    pub large: (u64, u64),
    pub hash: PomHash,
}

impl PomAddressing {
    /// Arrays of `small_mb` and `large_mb` of 64-byte sets, the first at physical address
    /// `base`, the second right after it.
    pub fn new(small_mb: u64, large_mb: u64, base: u64, hash: PomHash) -> PomAddressing {
        let base_line = base / crate::LINE_BYTES;
        let (small, large) = ((small_mb << 20) / crate::LINE_BYTES, (large_mb << 20) / crate::LINE_BYTES);
        PomAddressing { small: (base_line, small), large: (base_line + small, large), hash }
    }

    /// The POM-TLB's addressing by its keys.
    pub fn of(p: &PomTlbParams) -> PomAddressing {
        PomAddressing::new(p.size_mb, p.large_size_mb, p.base_gb << 30, p.hash)
    }

    /// The set of `va`'s translation of `size` (4 KB or 2 MB) in context `ctx`: Eq. 5.10 and
    /// 5.11 (the VA, or its page number, xor the VM ID, masked to the set count). The
    /// hardware thread an SMT core tags its TLB entries with is not part of it: one VM's
    /// page has one home line.
    pub fn set_index(&self, va: VirtAddr, size: PageSize, ctx: Ctx) -> u64 {
        let (_, sets) = self.array(size);
        let vm = u64::from((ctx & SPACE_MASK) >> VPID_SHIFT);
        let h = match self.hash {
            PomHash::Vpn => va.vpn(size) ^ vm,
            PomHash::Literal => ((va.0 & !(size.bytes() - 1)) ^ vm) >> 6,
        };
        h & (sets - 1)
    }

    /// The physical line that holds `va`'s set: ADDR_POM-TLB(VA) / 64 (Eq. 5.10).
    pub fn line(&self, va: VirtAddr, size: PageSize, ctx: Ctx) -> u64 {
        self.array(size).0 + self.set_index(va, size, ctx)
    }

    /// The home line of a TLB entry (its co-tag): that of its page in the array of its size;
    /// `None` for a 1 GB page (the POM-TLB holds its 2 MB pieces, each in its own line).
    pub fn home(&self, k: &TlbKey) -> Option<u64> {
        let size = k.size();
        (k.code() < crate::translate::tlb::GROUP && size != PageSize::Size1G).then(|| self.line(VirtAddr(k.vpn() << size.shift()), size, k.ctx))
    }

    /// The array a line is in and its set there (Eq. 5.11: `S_POM = (A - BASE) >> 6`).
    pub fn set_of_line(&self, line: u64) -> Option<(PageSize, u64)> {
        for (size, (base, sets)) in [(PageSize::Size4K, self.small), (PageSize::Size2M, self.large)] {
            if (base..base + sets).contains(&line) {
                return Some((size, line - base));
            }
        }
        None
    }

    /// All its lines: `[first, end)`.
    pub fn lines(&self) -> (u64, u64) {
        (self.small.0, self.large.0 + self.large.1)
    }

    fn array(&self, size: PageSize) -> (u64, u64) {
        if size == PageSize::Size4K {
            self.small
        } else {
            self.large
        }
    }
}

/// An entry a rewrite cleared in a line that was not flushed: every copy the MMU can read
/// still holds it while the only current copy is modified in context `holder`'s L1D.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unflushed {
    pub line: u64,
    pub holder: usize,
    pub key: TlbKey,
    pub entry: TlbEntry,
}

pub struct PomTlb {
    small: Array,
    large: Array,
    hash: PomHash,
    /// Old entries of lines rewritten and not flushed (see the module comment); empty unless
    /// `tcat.flush=false`.
    unflushed: Vec<Unflushed>,
    pub counters: PomCounters,
}

impl PomTlb {
    /// The POM-TLB, if its keys ask for one (`pomtlb.enabled`).
    pub fn build(p: &PomTlbParams) -> Option<PomTlb> {
        p.enabled.then(|| PomTlb::new(p.size_mb, p.large_size_mb, p.ways, p.base_gb << 30, p.hash))
    }

    /// Arrays of `small_mb` (4 KB pages) and `large_mb` (2 MB pages) of `ways`-way sets,
    /// the first at physical address `base`, the second right after it.
    pub fn new(small_mb: u64, large_mb: u64, ways: u64, base: u64, hash: PomHash) -> PomTlb {
        let a = PomAddressing::new(small_mb, large_mb, base, hash);
        let small = Array::new(small_mb, ways, a.small.0, 0x9071);
        let large = Array::new(large_mb, ways, a.large.0, 0x9072);
        PomTlb { small, large, hash, unflushed: Vec::new(), counters: PomCounters::default() }
    }

    /// The physical lines it occupies: `[first, end)`.
    pub fn line_range(&self) -> (u64, u64) {
        (self.small.base_line, self.large.base_line + self.large.lines())
    }

    /// Whether physical line `line` holds POM-TLB entries (`is_tlb_line`, §5.1.1).
    pub fn is_tlb_line(&self, line: u64) -> bool {
        let (lo, hi) = self.line_range();
        (lo..hi).contains(&line)
    }

    /// Where its sets are (a copy, for the structures that follow its hash: TCAT's).
    pub fn addressing(&self) -> PomAddressing {
        PomAddressing { small: (self.small.base_line, self.small.lines()), large: (self.large.base_line, self.large.lines()), hash: self.hash }
    }

    /// The set of `va`'s translation of `size` (4 KB or 2 MB) in context `ctx`: see
    /// [`PomAddressing::set_index`].
    pub fn set_index(&self, va: VirtAddr, size: PageSize, ctx: Ctx) -> usize {
        self.addressing().set_index(va, size, ctx) as usize
    }

    /// The physical line that holds `va`'s set: ADDR_POM-TLB(VA) / 64 (Eq. 5.10).
    pub fn line(&self, va: VirtAddr, size: PageSize, ctx: Ctx) -> u64 {
        self.addressing().line(va, size, ctx)
    }

    /// Look `va` up in both arrays (functionally; the caller reads the lines). A store
    /// cannot use a clean entry: it walks to set the D bit.
    pub fn lookup(&mut self, va: VirtAddr, ctx: Ctx, write: bool) -> Option<(TlbEntry, PageSize)> {
        // (Tagged by VM and process: the hardware thread or vCPU that filled an entry is not
        // kept, whatever the private TLBs do.)
        let ctx = ctx & SPACE_MASK;
        self.counters.lookups += 1;
        let mut found = None;
        for size in [PageSize::Size4K, PageSize::Size2M] {
            let set = self.set_index(va, size, ctx);
            let a = if size == PageSize::Size4K { &mut self.small } else { &mut self.large };
            if let Some(slot) = a.sets.lookup(set, TlbKey::new(va, size, ctx)) {
                found = Some((*a.sets.val(slot), size));
                break;
            }
        }
        match found {
            Some((e, size)) if !write || e.dirty => {
                self.counters.hits += 1;
                if size == PageSize::Size2M {
                    self.counters.hits_2m += 1;
                }
                Some((e, size))
            }
            Some(_) => {
                self.counters.dirty_walks += 1;
                self.counters.misses += 1;
                None
            }
            None => {
                self.counters.misses += 1;
                None
            }
        }
    }

    /// Install the walk's translation `e` of `va` (a page of `size`) for context `ctx`;
    /// returns the line written. A 1 GB page is installed as its 2 MB piece around `va`.
    pub fn fill(&mut self, va: VirtAddr, size: PageSize, ctx: Ctx, mut e: TlbEntry) -> u64 {
        let ctx = ctx & SPACE_MASK;
        // It holds single pages: a coalescable group's state (its pages' A/D bits) would go
        // stale here, and the TLBs rebuild groups from walks only.
        e.group = 0;
        let size = match size {
            PageSize::Size1G => {
                e.frame += ((va.0 >> 21) & 511) << 9;
                PageSize::Size2M
            }
            s => s,
        };
        let set = self.set_index(va, size, ctx);
        let key = TlbKey::new(va, size, ctx);
        let a = if size == PageSize::Size4K { &mut self.small } else { &mut self.large };
        let line = a.base_line + set as u64;
        if !self.unflushed.is_empty() {
            // The MMU's write takes the line, current copy and all: the old one is gone.
            self.unflushed.retain(|u| u.line != line);
        }
        self.counters.fills += 1;
        // (A rewrite of a present entry makes it the set's most recent, as a fill would.)
        match a.sets.lookup(set, key) {
            Some(slot) => *a.sets.val_mut(slot) = e,
            None => {
                let (_, ev) = a.sets.insert(set, key, e, crate::memory::repl::LineKind::Data);
                if ev.is_some() {
                    self.counters.evictions += 1;
                }
            }
        }
        line
    }

    /// TCAT's initiator is about to clear `va`'s entries (of context `ctx`) in `line` and
    /// will not flush it: keep them as what every copy but context `holder`'s L1D still says.
    fn keep_unflushed(&mut self, line: u64, va: VirtAddr, ctx: Ctx, holder: usize) {
        let ctx = ctx & SPACE_MASK;
        for size in [PageSize::Size4K, PageSize::Size2M] {
            if self.line(va, size, ctx) != line {
                continue;
            }
            let set = self.set_index(va, size, ctx);
            let a = if size == PageSize::Size4K { &self.small } else { &self.large };
            let key = TlbKey::new(va, size, ctx);
            if let Some(slot) = a.sets.probe(set, key) {
                let entry = *a.sets.val(slot);
                self.unflushed.retain(|u| u.key != key);
                self.unflushed.push(Unflushed { line, holder, key, entry });
            }
        }
    }

    /// A lookup of `va` that found nothing current: an old entry of an unflushed line answers
    /// if the line is still modified only in its holder's L1D (see the module comment).
    #[cold]
    fn stale_lookup<P: MemPort>(&mut self, va: VirtAddr, ctx: Ctx, write: bool, port: &P) -> Option<(TlbEntry, PageSize)> {
        self.unflushed.retain(|u| port.holds_modified(u.holder, u.line));
        let ctx = ctx & SPACE_MASK;
        let u = self.unflushed.iter().find(|u| u.key == TlbKey::new(va, u.key.size(), ctx) && (!write || u.entry.dirty))?;
        self.counters.stale_hits += 1;
        // (Counted as a hit: the MMU cannot tell.)
        self.counters.misses -= 1;
        self.counters.hits += 1;
        if u.key.size() == PageSize::Size2M {
            self.counters.hits_2m += 1;
        }
        Some((u.entry, u.key.size()))
    }

    /// The old entries kept for unflushed lines.
    pub fn unflushed(&self) -> &[Unflushed] {
        &self.unflushed
    }

    /// Drop what `what` names; returns how many entries went.
    pub fn invalidate(&mut self, what: Invalidate) -> usize {
        let n = match what {
            // A range of a few pages visits their sets; anything larger scans.
            Invalidate::Range { ctx, start, end } if end.saturating_sub(start) <= 4096 << 12 => {
                let mut n = 0;
                for size in [PageSize::Size4K, PageSize::Size2M] {
                    let mut va = start & !(size.bytes() - 1);
                    while va < end {
                        let set = self.set_index(VirtAddr(va), size, ctx);
                        let a = if size == PageSize::Size4K { &mut self.small } else { &mut self.large };
                        if let Some(slot) = a.sets.probe(set, TlbKey::new(VirtAddr(va), size, ctx)) {
                            a.sets.invalidate_slot(slot);
                            n += 1;
                        }
                        va += size.bytes();
                    }
                }
                n
            }
            _ => {
                let covers = |k: TlbKey| what.covers(k.ctx, k.vpn(), k.size().shift());
                self.small.sets.invalidate_where(|k, _| covers(k)) + self.large.sets.invalidate_where(|k, _| covers(k))
            }
        };
        self.counters.invalidations += n as u64;
        n
    }

    /// Every valid entry (for checks, not the hot path).
    pub fn entries(&self) -> Vec<(TlbKey, TlbEntry)> {
        let mut out = Vec::new();
        for a in [&self.small, &self.large] {
            out.extend(a.sets.slots().map(|s| (a.sets.key(s), *a.sets.val(s))).filter(|(k, _)| *k != <TlbKey as crate::assoc::Key>::INVALID));
        }
        out
    }

    /// Valid entries in the 4 KB and 2 MB arrays.
    pub fn occupancy(&self) -> (usize, usize) {
        (self.small.sets.occupancy(), self.large.sets.occupancy())
    }
}

/// The glossary's entries of the mechanism's statistics: its counters, its occupancy
/// (`emit_stats`) and hit rate (`derive_stats`) (its lines' trips through the caches are the memory side's,
/// [`crate::memory::hierarchy::TlbLineCounters`]).
pub(crate) const STATS: &[&[crate::glossary::Entry]] = &[PomCounters::STATS, {
    use crate::glossary::{e, Kind::*, Section::*};
    &[
        e(Mechanisms, "pomtlb.hit_rate", Ratio, "fraction", "`hits` / `lookups`.").only("`pomtlb.enabled=true`"),
        e(Mechanisms, "pomtlb.occupancy", Level, "entries", "Valid entries of the 4 KB array at the end of the run (state: not reset by warm-up).").only("`pomtlb.enabled=true`"),
        e(Mechanisms, "pomtlb.occupancy_2m", Level, "entries", "Valid entries of the 2 MB array at the end of the run.").only("`pomtlb.enabled=true`"),
    ]
}];

impl Mechanism for PomTlb {
    fn caches_translations(&self) -> bool {
        true
    }

    #[inline]
    fn on_l2_tlb_miss<P: MemPort>(&mut self, _c: usize, va: VirtAddr, ctx: Ctx, write: bool, port: &mut P) -> Option<(TlbEntry, PageSize)> {
        // Both arrays' lines are read in parallel; the lookup waits for the slower.
        port.tlb_read(self.line(va, PageSize::Size4K, ctx), false);
        port.tlb_read(self.line(va, PageSize::Size2M, ctx), true);
        let found = self.lookup(va, ctx, write);
        if found.is_none() && !self.unflushed.is_empty() {
            return self.stale_lookup(va, ctx, write, port);
        }
        found
    }

    #[inline]
    fn on_walk_end<P: MemPort>(&mut self, _c: usize, va: VirtAddr, ctx: Ctx, e: TlbEntry, size: PageSize, port: &mut P) {
        let line = self.fill(va, size, ctx, e);
        port.tlb_write(line);
    }

    fn on_invalidate(&mut self, _c: usize, what: Invalidate) -> usize {
        self.invalidate(what)
    }

    /// A rewrite of one of its lines (TCAT's initiator): flushed, every copy goes and the
    /// entry's invalidation (the shootdown's range) is the whole story; not flushed, the old
    /// entry stays readable (see the module comment).
    fn on_line_rewrite(&mut self, line: u64, va: VirtAddr, ctx: Ctx, holder: usize, flush: bool) {
        if !flush {
            self.keep_unflushed(line, va, ctx, holder);
        }
    }

    /// Its entries carry the process's and the VM's own IDs, which a core's tag flush does
    /// not reuse: it keeps them (and a shared structure cannot flush for one core anyway).
    fn on_flush(&mut self, _c: usize, _what: Invalidate) -> usize {
        0
    }

    fn hooks(&self) -> super::Hooks {
        super::Hooks { l2_tlb_miss: true, walk_end: true, ..Default::default() }
    }

    fn emit_stats(&self, s: &mut Stats) {
        self.counters.emit("pomtlb.", s);
        let (small, large) = self.occupancy();
        s.int("pomtlb.occupancy", small as u64);
        s.int("pomtlb.occupancy_2m", large as u64);
    }

    fn derive_stats(&self, i: &Ints, s: &mut Stats) {
        s.ratio("pomtlb.hit_rate", i.get("pomtlb.hits"), i.get("pomtlb.lookups"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default_pom() -> PomTlb {
        PomTlb::build(&PomTlbParams { enabled: true, ..Default::default() }).expect("enabled")
    }

    /// Eq. 5.10-5.12 with the default geometry: 16 MB of 64-byte sets is 2^18 sets; the
    /// line of a translation is `base + set`; a 128-set L2 TLB that indexes by the same
    /// hash finds the POM-TLB set's translations in set `S_POM & 127` (TCAT-cotagless).
    #[test]
    fn addressing_follows_eq_5_10_to_5_12() {
        let p = default_pom();
        assert_eq!(p.small.lines(), 1 << 18);
        let base_line = (16384u64 << 30) / 64;
        let (vm, pcid) = (3u32, 7u32);
        let ctx = (vm << VPID_SHIFT) | pcid;
        let va = VirtAddr(0x7f12_3456_7000);
        let s_pom = ((va.0 >> 12) ^ vm as u64) & ((1 << 18) - 1);
        assert_eq!(p.set_index(va, PageSize::Size4K, ctx) as u64, s_pom);
        let a = p.line(va, PageSize::Size4K, ctx) * 64;
        assert_eq!(a, (s_pom * 64) + (base_line * 64), "ADDR = set * 64 + BASE");
        assert_eq!((a - base_line * 64) >> 6, s_pom, "Eq. 5.11 recovers the set");
        assert_eq!(s_pom & 127, ((va.0 >> 12) ^ vm as u64) & 127, "Eq. 5.12: the low bits of the same hash");
        // The PID is not in the hash: two processes of one VM share the set, tags tell them apart.
        assert_eq!(p.set_index(va, PageSize::Size4K, vm << VPID_SHIFT), p.set_index(va, PageSize::Size4K, ctx));
        // The VM ID is: the same gVA in another VM goes elsewhere.
        assert_ne!(p.set_index(va, PageSize::Size4K, 4 << VPID_SHIFT), p.set_index(va, PageSize::Size4K, ctx));
        // Every byte of a page maps to its one set.
        assert_eq!(p.line(VirtAddr(va.0 + 0xfc0), PageSize::Size4K, ctx), p.line(va, PageSize::Size4K, ctx));
        // The 2 MB array follows the 4 KB one.
        assert!(p.line(va, PageSize::Size2M, ctx) >= base_line + (1 << 18));
        assert!(p.is_tlb_line(p.line(va, PageSize::Size2M, ctx)) && !p.is_tlb_line(base_line - 1));
    }

    /// The literal reading of Eq. 5.10 on page-aligned addresses leaves bits 0-5 of the
    /// index zero: only every 64th set is used.
    #[test]
    fn literal_hash_uses_one_set_in_64() {
        let p = PomTlb::build(&PomTlbParams { enabled: true, hash: PomHash::Literal, ..Default::default() }).unwrap();
        for i in 0..1000u64 {
            let set = p.set_index(VirtAddr(i * 4096 + 123), PageSize::Size4K, 0);
            assert_eq!(set % 64, 0);
        }
    }

    /// Against a tiny reference model (a map per page with LRU per set) on a random stream
    /// of lookups, fills and invalidations.
    #[test]
    fn behaves_like_a_reference_model() {
        use std::collections::HashMap;
        let mut p = PomTlb::new(1, 1, 4, 1 << 40, PomHash::Vpn);
        // Reference: per set, a list of (key, entry), most recent last.
        let mut sets: HashMap<(bool, usize), Vec<(TlbKey, TlbEntry)>> = HashMap::new();
        let mut x = 0x1234_5678u64;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..200_000 {
            let r = rnd();
            let ctx = (r % 3) as Ctx;
            let size = if r % 7 == 0 { PageSize::Size2M } else { PageSize::Size4K };
            let va = VirtAddr(((rnd() % (1 << 16)) << 12) & !(size.bytes() - 1));
            let key = TlbKey::new(va, size, ctx);
            let set = (size == PageSize::Size2M, p.set_index(va, size, ctx));
            match r % 5 {
                0 | 1 => {
                    let e = TlbEntry { frame: rnd() % (1 << 30), dirty: r % 2 == 0, group: 0 };
                    p.fill(va, size, ctx, e);
                    let s = sets.entry(set).or_default();
                    s.retain(|(k, _)| *k != key);
                    if s.len() == 4 {
                        s.remove(0);
                    }
                    s.push((key, e));
                }
                2 => {
                    let n = p.invalidate(Invalidate::page(ctx, va));
                    let mut m = 0;
                    for big in [false, true] {
                        let sz = if big { PageSize::Size2M } else { PageSize::Size4K };
                        let k = TlbKey::new(va, sz, ctx);
                        let s = sets.entry((big, p.set_index(va, sz, ctx))).or_default();
                        let before = s.len();
                        s.retain(|(kk, _)| *kk != k);
                        m += before - s.len();
                    }
                    assert_eq!(n, m);
                }
                _ => {
                    let got = p.lookup(va, ctx, false);
                    // The model: the 4 KB array first, then the 2 MB one; a hit is most recent.
                    let mut want = None;
                    for big in [false, true] {
                        let sz = if big { PageSize::Size2M } else { PageSize::Size4K };
                        let k = TlbKey::new(va, sz, ctx);
                        let s = sets.entry((big, p.set_index(va, sz, ctx))).or_default();
                        if let Some(i) = s.iter().position(|(kk, _)| *kk == k) {
                            let hit = s.remove(i);
                            s.push(hit);
                            want = Some((hit.1, sz));
                            break;
                        }
                    }
                    assert_eq!(got, want);
                }
            }
        }
        assert!(p.counters.hits > 1000 && p.counters.evictions > 1000, "the stream exercised hits and evictions: {:?}", p.counters);
    }

    /// A store cannot use a clean entry; a 1 GB page is held as the 2 MB piece touched.
    #[test]
    fn clean_entries_make_stores_walk_and_1g_pages_splinter() {
        let mut p = default_pom();
        let va = VirtAddr(0x4000_0000 + 5 * 0x20_0000 + 0x1234);
        p.fill(va, PageSize::Size4K, 1, TlbEntry { frame: 77, dirty: false, group: 0 });
        assert!(p.lookup(va, 1, false).is_some());
        assert!(p.lookup(va, 1, true).is_none());
        assert_eq!(p.counters.dirty_walks, 1);
        let mut q = default_pom();
        q.fill(va, PageSize::Size1G, 1, TlbEntry { frame: 1 << 18, dirty: true, group: 0 });
        assert_eq!(q.lookup(va, 1, true), Some((TlbEntry { frame: (1 << 18) + 5 * 512, dirty: true, group: 0 }, PageSize::Size2M)));
        assert!(q.lookup(VirtAddr(va.0 + 0x20_0000), 1, false).is_none(), "only the touched 2 MB piece");
    }
}
