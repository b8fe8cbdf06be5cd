//! TCAT, Translation Coherence using Addressable TLBs (seed 003, §4): TLB shootdowns carried
//! by the cache-coherence protocol through the POM-TLB. The POM-TLB's hash gives every (VM,
//! page) one home line A, and a core's TLB can hold a translation only after reading A (its
//! L2 TLB missed and looked the POM-TLB up, or walked and wrote the translation there). The
//! directory therefore knows exactly which cores' TLBs may hold it: the line's TLB sharers.
//!
//! This module keeps those sharers (sticky, as the spec's §4.2 recommends: set when a TLB is
//! filled from A, cleared only by the invalidation's acknowledgement; TLB evictions are
//! silent, so the set may be conservative, never short) and drops a sharer's entries the way
//! the slave does: **co-tag** (every entry whose home line is A) or **co-tagless** (every
//! entry of the private-TLB set A's POM-TLB set selects, Eq. 5.11-5.12, which needs the TLBs
//! indexed by the same hash: `tlb.set_index=vpn_xor_vm`). The initiator's side, the
//! hypervisor's read-modify-write and flush of A, is the shootdown protocol's
//! (`crate::os::shootdown`), which reaches this module only through the mechanism layer's
//! home-line hooks: [`Mechanism::shootdown_lines`] names the lines a shootdown rewrites,
//! [`Mechanism::invalidate_line`] is the directory's forward of a rewrite to the sharers and
//! their drops, and [`Mechanism::on_walk_write`] the same for a walk's write of a line
//! (`tcat.fill_invalidates`). What the line held is the POM-TLB's
//! ([`Mechanism::on_line_rewrite`]).
//!
//! A co-tag is a pure function of the entry's page, size and context (its home line), so
//! xlat computes it from the entry's tag instead of storing it: the same entries match. A
//! 1 GB TLB entry has no one home (the POM-TLB holds its 2 MB pieces); it is dropped when an
//! update names a page it covers.

use crate::arch::addr::{PageSize, VirtAddr};
use crate::arch::ctx::{Ctx, Invalidate};
use crate::mech::pomtlb::PomAddressing;
use crate::mech::{FillFrom, Hooks, Mechanism};
use crate::param::ShootdownProtocol;
use crate::stats::Stats;
use crate::translate::mmu::Mmu;
use crate::translate::tlb::{TlbKey, TlbLevel};

use crate::param::component;

component! {
    /// TCAT's translation coherence (`tcat.*`).
    TcatParams {
        fill_invalidates: bool = false; "fill_invalidates"; None; "TCAT: the MMU's write of a walk's translation into its POM-TLB line also invalidates the line's other TLB sharers, as a plain coherence protocol would (false: such writes carry no xlat_inv flag and TLBs ignore them, the seed's recommended default; true measures what that filter saves)";
        flush: bool = true; "flush"; None; "TCAT: the hypervisor flushes (CLFLUSH) the POM-TLB line after its read-modify-write, as the thesis requires (false shows its §5.2.5.1 counterexample: the cleared line stays modified in the initiator's L1D, which the MMU never reads, and until it is written back every L3 TLB lookup of the line finds the old, valid translation; pomtlb.stale_hits counts them, the translation checker catches their use)";
    }
}

crate::stats::counters! {
    /// TCAT's events, chip-wide (statistics `tcat.*`).
    pub struct TcatCounters under "" {
        lines: "tcat.lines" => (Mechanisms, Counter, "lines",
            "POM-TLB lines the hypervisor read-modify-wrote and flushed for guest page-table updates (TCAT's initiator: one per page, per page size its mapping may have had).")
            .only("`shootdown.protocol=tcat-cotag|tcat-cotagless`"),
        messages: "tcat.messages" => (Mechanisms, Counter, "messages",
            "Invalidations the directory forwarded to the TLB sharers of those lines (the initiator's own core by self-snoop included).")
            .only("`shootdown.protocol=tcat-cotag|tcat-cotagless`"),
        spurious: "tcat.spurious" => (Mechanisms, Counter, "messages",
            "Of `tcat.messages`, those that found no entry to drop (sharers are sticky; TLB evictions are silent).")
            .only("`shootdown.protocol=tcat-cotag|tcat-cotagless`"),
        invalidations: "tcat.invalidations" => (Mechanisms, Counter, "entries",
            "TLB entries the sharers dropped: those homed in the line (co-tag), or the whole private-TLB set it selects (co-tagless).")
            .only("`shootdown.protocol=tcat-cotag|tcat-cotagless`"),
        fill_invalidations: "tcat.fill_invalidations" => (Mechanisms, Counter, "entries",
            "TLB entries other cores dropped because a walk's fill wrote their POM-TLB line (`tcat.fill_invalidates=true`, a plain protocol without the xlat_inv filter; 0 otherwise).")
            .only("`shootdown.protocol=tcat-cotag|tcat-cotagless`"),
        fallbacks: "tcat.fallbacks" => (Mechanisms, Counter, "shootdowns",
            "Shootdowns left to the baseline protocol (kvm_tlb in a VM, ipi natively): over `os.flush_ceiling_pages` pages, or the host's gPA changes, which TCAT does not cover.")
            .only("`shootdown.protocol=tcat-cotag|tcat-cotagless`"),
    }
}

pub struct Tcat {
    pub addr: PomAddressing,
    /// Drop by co-tag (else the whole set).
    pub cotag: bool,
    /// Per POM-TLB line, from its first: the cores whose TLBs were filled from it.
    sharers: Vec<u64>,
    /// A walk's write of a line invalidates its other sharers (`tcat.fill_invalidates`).
    pub fill_invalidates: bool,
    /// Coalesced TLB entries are groups of up to `2^group_shift` 4 KB pages (0: none). A
    /// core that fills a 4 KB translation may then hold its whole group's from one entry, so
    /// it becomes a sharer of every page's home line in the group (conservative: the group
    /// may not have coalesced), and the co-tag drop takes a group entry if any of its pages is
    /// homed in the line. Neither paper pairs the two; this is the co-tag design carried to an
    /// entry of several pages.
    pub group_shift: u32,
    pub counters: TcatCounters,
}

impl Tcat {
    /// TCAT, if the shootdown protocol is one of its (`shootdown.protocol=tcat-cotag|
    /// tcat-cotagless), over the POM-TLB `pom`, beside TLBs whose largest coalesced entries
    /// are groups of `2^group_shift` pages.
    pub fn build(p: &TcatParams, protocol: ShootdownProtocol, pom: &crate::mech::pomtlb::PomTlbParams, group_shift: u32) -> Option<Tcat> {
        let cotag = match protocol {
            ShootdownProtocol::TcatCotag => true,
            ShootdownProtocol::TcatCotagless => false,
            _ => return None,
        };
        Some(Tcat { fill_invalidates: p.fill_invalidates, group_shift, ..Tcat::new(PomAddressing::of(pom), cotag) })
    }

    pub fn new(addr: PomAddressing, cotag: bool) -> Tcat {
        let (lo, hi) = addr.lines();
        Tcat { addr, cotag, sharers: vec![0; (hi - lo) as usize], fill_invalidates: false, group_shift: 0, counters: TcatCounters::default() }
    }

    /// The home line of `va`'s translation as a page of `size` in context `ctx` (a 1 GB
    /// page's is its 2 MB piece's, where the POM-TLB holds it).
    pub fn home(&self, va: VirtAddr, size: PageSize, ctx: Ctx) -> u64 {
        let size = if size == PageSize::Size4K { size } else { PageSize::Size2M };
        self.addr.line(va, size, ctx)
    }

    /// The cores whose TLBs may hold translations from `line`.
    pub fn sharers(&self, line: u64) -> u64 {
        self.sharers[(line - self.addr.lines().0) as usize]
    }

    /// The directory collected the acknowledgements for `line`: it has no TLB sharers left.
    pub fn acked(&mut self, line: u64) {
        let lo = self.addr.lines().0;
        self.sharers[(line - lo) as usize] = 0;
    }

    /// The cores of `others` acknowledged an invalidation of `line` (the rest stay sharers).
    pub fn acked_by(&mut self, line: u64, others: u64) {
        let lo = self.addr.lines().0;
        self.sharers[(line - lo) as usize] &= !others;
    }

    /// A sharer's slave operation for the invalidation of `line`, which names the page at
    /// `va` of context `ctx`, on one of its TLB levels: returns the entries dropped.
    pub fn invalidate(&self, tlb: &mut TlbLevel, line: u64, va: VirtAddr, ctx: Ctx) -> usize {
        let page = Invalidate::page(ctx, va);
        let covers_1g =
            |k: &TlbKey| k.size() == PageSize::Size1G && k.code() < crate::translate::tlb::GROUP && page.covers(k.ctx, k.vpn(), PageSize::Size1G.shift());
        if self.cotag {
            let addr = self.addr;
            let gs = tlb.group_shift();
            let group_homed = |k: &TlbKey| {
                k.code() == crate::translate::tlb::GROUP
                    && (0..1u64 << gs).any(|i| addr.line(VirtAddr(((k.vpn() << gs) + i) << 12), PageSize::Size4K, k.ctx) == line)
            };
            return tlb.invalidate_keys(|k| addr.home(k) == Some(line) || covers_1g(k) || group_homed(k));
        }
        // Eq. 5.11: the line's POM-TLB set, whose low bits (Eq. 5.12) are the TLB's set.
        let Some((size, s_pom)) = self.addr.set_of_line(line) else { return 0 };
        tlb.invalidate_hashed_set(size, s_pom) + tlb.invalidate_keys(covers_1g)
    }

    /// The invalidation of `line` (naming `va` of `ctx`) at the cores of `cores`, on every TLB
    /// level of theirs: the entries each core dropped, by core, summed; and how many of those
    /// cores had none (`spurious`).
    fn drop_at(&self, cores: u64, line: u64, va: VirtAddr, ctx: Ctx, mmus: &mut [Mmu]) -> (usize, u64) {
        let mut dropped = 0;
        let mut spurious = 0;
        for mmu in mmus.iter_mut().enumerate().filter(|&(c, _)| cores >> c & 1 == 1).map(|(_, m)| m) {
            let n: usize = mmu.tlbs.iter_mut().map(|t| self.invalidate(t, line, va, ctx)).sum();
            dropped += n;
            spurious += u64::from(n == 0);
        }
        (dropped, spurious)
    }
}

/// The glossary's entries of the mechanism's statistics: its counters.
pub(crate) const STATS: &[&[crate::glossary::Entry]] = &[TcatCounters::STATS];

impl Mechanism for Tcat {
    fn hooks(&self) -> Hooks {
        Hooks { tlb_fill: true, walk_write: self.fill_invalidates, ..Default::default() }
    }

    /// Per page, its home line as a 4 KB page, as a 2 MB page, or both: the ranges over the
    /// pages the OS counted give the stride of the mappings it changed, and so the sizes the
    /// change may have been to (a 1 GB page's lines are its 2 MB pieces').
    fn shootdown_lines(&self, ranges: &[(u64, u64)], pages: u64, ctx: Ctx, out: &mut Vec<(u64, VirtAddr)>) -> bool {
        let bytes: u64 = ranges.iter().map(|&(s, e)| e - s).sum();
        let stride = bytes / pages.max(1);
        let small = stride < PageSize::Size2M.bytes();
        let large = stride > PageSize::Size4K.bytes();
        for &(start, end) in ranges {
            if small {
                out.extend((start >> 12..end.div_ceil(4096)).map(|p| VirtAddr(p << 12)).map(|va| (self.home(va, PageSize::Size4K, ctx), va)));
            }
            if large {
                out.extend((start >> 21..end.div_ceil(PageSize::Size2M.bytes())).map(|r| VirtAddr(r << 21)).map(|va| (self.home(va, PageSize::Size2M, ctx), va)));
            }
        }
        true
    }

    /// The directory forwards the rewrite to every sharer (the initiator's own core too, by
    /// self-snoop), each drops what the line names, and the acknowledgements clear the line's
    /// sharers.
    fn invalidate_line(&mut self, line: u64, va: VirtAddr, ctx: Ctx, mmus: &mut [Mmu]) -> u64 {
        let sharers = self.sharers(line);
        let (dropped, spurious) = self.drop_at(sharers, line, va, ctx, mmus);
        self.acked(line);
        let t = &mut self.counters;
        t.lines += 1;
        t.messages += u64::from(sharers.count_ones());
        t.spurious += spurious;
        t.invalidations += dropped as u64;
        sharers
    }

    fn on_baseline_shootdown(&mut self) {
        self.counters.fallbacks += 1;
    }

    /// `tcat.fill_invalidates` (the only case `hooks` asks for it): the walk's write of the
    /// home line, as a plain protocol would, invalidates what the line's other TLB sharers
    /// hold from it; they acknowledge, the writer stays a sharer.
    #[cold]
    fn on_walk_write(&mut self, c: usize, va: VirtAddr, size: PageSize, ctx: Ctx, mmus: &mut [Mmu]) {
        let line = self.home(va, size, ctx);
        let others = self.sharers(line) & !(1u64 << c);
        if others == 0 {
            return;
        }
        let (dropped, _) = self.drop_at(others, line, va, ctx, mmus);
        self.acked_by(line, others);
        self.counters.fill_invalidations += dropped as u64;
    }

    /// A fill from the POM-TLB or a walk read (or wrote) the home line: the core becomes one
    /// of its TLB sharers. (A refill from the L2 TLB reads nothing: the core already is.)
    #[inline]
    fn on_tlb_fill(&mut self, c: usize, va: VirtAddr, size: PageSize, ctx: Ctx, from: FillFrom) {
        if from == FillFrom::Level {
            return;
        }
        if self.group_shift > 0 && size == PageSize::Size4K {
            let first = (va.0 >> (12 + self.group_shift)) << self.group_shift;
            for p in first..first + (1 << self.group_shift) {
                let i = (self.home(VirtAddr(p << 12), size, ctx) - self.addr.lines().0) as usize;
                self.sharers[i] |= 1 << c;
            }
            return;
        }
        let i = (self.home(va, size, ctx) - self.addr.lines().0) as usize;
        self.sharers[i] |= 1 << c;
    }

    /// The initiator's read-modify-write and flush go through the memory side and return
    /// its cycles: one host thread.
    fn needs_memory_side(&self) -> bool {
        true
    }

    fn emit_stats(&self, s: &mut Stats) {
        self.counters.emit("", s);
    }

}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::ctx::VPID_SHIFT;
    use crate::memory::repl::Policy;
use crate::param::{PomHash, TlbSetIndex};
    use crate::translate::tlb::TlbEntry;

    fn addr() -> PomAddressing {
        PomAddressing::new(16, 16, 16384 << 30, PomHash::Vpn)
    }

    fn l2(index: TlbSetIndex) -> TlbLevel {
        TlbLevel::new(&[(1024, 8, &[PageSize::Size4K, PageSize::Size2M])], Policy::Lru, 1).indexed(index)
    }

    /// Fig. 5.4 from the slave's side: T1 and an unrelated T2 sit in CPU1's L2 TLB; the
    /// invalidation for T1's home line drops T1 only (co-tag), or every entry of T1's set,
    /// which with the shared hash is where T1 is (co-tagless).
    #[test]
    fn a_slave_drops_what_the_home_line_names() {
        let ctx = (3 << VPID_SHIFT) | 1;
        let (t1, t2) = (VirtAddr(0x7f00_0001_2000), VirtAddr(0x7f00_0005_5000));
        for cotag in [true, false] {
            let tcat = Tcat::new(addr(), cotag);
            let mut tlb = l2(TlbSetIndex::VpnXorVm);
            tlb.insert_absent(t1, PageSize::Size4K, ctx, TlbEntry::page(0x100, true));
            tlb.insert_absent(t2, PageSize::Size4K, ctx, TlbEntry::page(0x200, true));
            let a = tcat.home(t1, PageSize::Size4K, ctx);
            assert_eq!(tcat.invalidate(&mut tlb, a, t1, ctx), 1, "cotag {cotag}");
            assert_eq!(tlb.lookup(t1, ctx), None);
            assert!(tlb.lookup(t2, ctx).is_some(), "T2 lives in another line and another set");
        }
    }

    /// Co-tagless relies on the private TLB indexing by the POM-TLB's hash (§4.5): with plain
    /// page-number bits, the set it drops is the wrong one when the VM ID is not 0, and the
    /// stale entry survives. (The configuration refuses that combination.)
    #[test]
    fn cotagless_needs_the_shared_hash() {
        let ctx = 5 << VPID_SHIFT;
        let va = VirtAddr(0x4000_0000);
        let tcat = Tcat::new(addr(), false);
        let mut plain = l2(TlbSetIndex::Vpn);
        plain.insert_absent(va, PageSize::Size4K, ctx, TlbEntry::page(1, true));
        let a = tcat.home(va, PageSize::Size4K, ctx);
        assert_eq!(tcat.invalidate(&mut plain, a, va, ctx), 0);
        assert!(plain.lookup(va, ctx).is_some(), "the stale entry is still there");
    }

    /// The home-line hooks, as the OS's initiator drives them through `Mechs`: a shootdown
    /// of one 4 KB page is its 4 KB home line (of one 2 MB page, its 2 MB line); the line's
    /// rewrite reaches both sharers, which drop T1 from their L2 TLBs and acknowledge, so a
    /// second rewrite reaches nobody; a shootdown left to the baseline is a fallback. A
    /// machine without TCAT carries no shootdown by lines.
    #[test]
    fn the_hooks_carry_a_shootdown_to_the_sharers() {
        use crate::mech::{AnyMech, Mechs};
        let (t1, ctx) = (VirtAddr(0x7f00_0001_2000), 1);
        let cfg = crate::config::Config::default();
        let mut mmus: Vec<Mmu> = (0..2).map(|c| Mmu::new(&cfg.mmu(), c)).collect();
        let mut mechs = Mechs::new(vec![AnyMech::Tcat(Box::new(Tcat::new(addr(), true)))], 2);
        for (c, mmu) in mmus.iter_mut().enumerate() {
            mmu.tlbs[crate::translate::mmu::TlbId::L2 as usize].insert_absent(t1, PageSize::Size4K, ctx, TlbEntry::page(0x100, true));
            mechs.on_tlb_fill(c, t1, PageSize::Size4K, ctx, FillFrom::Walk);
        }
        let mut lines = Vec::new();
        assert!(mechs.shootdown_lines(&[(t1.0, t1.0 + 4096)], 1, ctx, &mut lines));
        let tcat = mechs.tcat().unwrap();
        let a = tcat.home(t1, PageSize::Size4K, ctx);
        assert_eq!(lines, vec![(a, t1)]);
        let mut huge = Vec::new();
        assert!(mechs.shootdown_lines(&[(0x4000_0000, 0x4020_0000)], 1, ctx, &mut huge));
        assert_eq!(huge, vec![(tcat.home(VirtAddr(0x4000_0000), PageSize::Size2M, ctx), VirtAddr(0x4000_0000))]);

        assert_eq!(mechs.invalidate_line(a, t1, ctx, &mut mmus), 0b11);
        assert!(mmus.iter_mut().all(|m| m.tlbs[crate::translate::mmu::TlbId::L2 as usize].lookup(t1, ctx).is_none()));
        assert_eq!(mechs.invalidate_line(a, t1, ctx, &mut mmus), 0, "the acknowledgements cleared the sharers");
        mechs.on_baseline_shootdown();
        let k = &mechs.tcat().unwrap().counters;
        assert_eq!((k.lines, k.messages, k.invalidations, k.spurious, k.fallbacks), (2, 2, 2, 0, 1));

        let mut none = Mechs::new(Vec::new(), 2);
        assert!(!none.shootdown_lines(&[(t1.0, t1.0 + 4096)], 1, ctx, &mut lines));
        assert_eq!(none.invalidate_line(a, t1, ctx, &mut mmus), 0);
    }

    /// Beside coalescing TLBs (co-tag): a fill of one page of a 4-page group makes the core a
    /// sharer of the whole group's home lines, and the invalidation of a line homing any page
    /// of a coalesced entry drops the entry, so the update of the group's third page reaches
    /// the core that filled its first and leaves no stale translation of it.
    #[test]
    fn a_coalesced_entry_is_dropped_by_any_of_its_pages_lines() {
        let mut tcat = Tcat { group_shift: 2, ..Tcat::new(addr(), true) };
        let ctx = 1;
        let first = VirtAddr(0x7f00_0001_0000);
        let third = VirtAddr(first.0 + 2 * 4096);
        let mut tlb = l2(TlbSetIndex::Vpn).coalescing(2, (64, 4), Policy::Lru, 2);
        tlb.insert_absent(first, PageSize::Size4K, ctx, TlbEntry { frame: 0x400, dirty: true, group: 2 });
        let hit = tlb.lookup(third, ctx).expect("the group entry covers the third page");
        assert_eq!((hit.0.frame, hit.0.group), (0x402, 2));
        tcat.on_tlb_fill(3, first, PageSize::Size4K, ctx, FillFrom::Walk);
        let line = tcat.home(third, PageSize::Size4K, ctx);
        assert_ne!(line, tcat.home(first, PageSize::Size4K, ctx), "the pages have lines of their own");
        assert_eq!(tcat.sharers(line), 1 << 3, "the filler shares every page's line of the group");
        assert_eq!(tcat.invalidate(&mut tlb, line, third, ctx), 1);
        assert_eq!(tlb.lookup(first, ctx), None, "the whole group entry went");
        // Another group's line leaves it alone.
        tlb.insert_absent(first, PageSize::Size4K, ctx, TlbEntry { frame: 0x400, dirty: true, group: 2 });
        let elsewhere = tcat.home(VirtAddr(first.0 + 16 * 4096), PageSize::Size4K, ctx);
        assert_eq!(tcat.invalidate(&mut tlb, elsewhere, VirtAddr(first.0 + 16 * 4096), ctx), 0);
        assert!(tlb.lookup(third, ctx).is_some());
    }

    /// Sharers are set by fills from the POM-TLB or a walk, not by refills from the L2 TLB,
    /// and cleared by the acknowledgement.
    #[test]
    fn sharers_follow_fills_until_the_ack() {
        let mut tcat = Tcat::new(addr(), true);
        let (va, ctx) = (VirtAddr(0x1234_5000), 0);
        let a = tcat.home(va, PageSize::Size4K, ctx);
        tcat.on_tlb_fill(0, va, PageSize::Size4K, ctx, FillFrom::Walk);
        tcat.on_tlb_fill(2, va, PageSize::Size4K, ctx, FillFrom::L3);
        tcat.on_tlb_fill(1, va, PageSize::Size4K, ctx, FillFrom::Level);
        assert_eq!(tcat.sharers(a), 0b101);
        tcat.acked(a);
        assert_eq!(tcat.sharers(a), 0);
    }
}
