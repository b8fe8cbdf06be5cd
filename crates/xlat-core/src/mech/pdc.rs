//! Zen 3's Page Directory Cache (seed 002, T1): the L2 DTLB holds no 1 GB pages; a
//! 64-entry structure per core holds the 1 GB translations the L1 DTLB evicts, and answers
//! an L1 miss the L2 DTLB cannot. A victim cache: only L1 evictions fill it, so a 1 GB page
//! the L1 still holds takes no room in it. AMD documents neither its lookup latency nor its
//! replacement; xlat looks it up in parallel with the L2 DTLB (no cycles of its own) and
//! replaces by LRU. A hit leaves the entry in place (the L1 is refilled from it).

use crate::arch::addr::{PageSize, VirtAddr};
use crate::arch::ctx::{Ctx, Invalidate};
use crate::assoc::{Key, SetAssoc};
use crate::mech::{Hooks, Mechanism};
use crate::memory::port::MemPort;
use crate::memory::repl::Policy;
use crate::stats::{Ints, Stats};
use crate::translate::mmu::TlbId;
use crate::translate::tlb::{TlbEntry, TlbKey};

use crate::param::{Limit, bound, component};

component! {
    /// The Page Directory Cache (`tlb.pdc.*`).
    PdcParams {
        entries: u64 = 0; "entries"; Some(Limit::Int(bound::ENTRIES)); "Page Directory Cache entries per core (AMD Zen 3: 64): a victim cache of the 1 GB translations the L1 DTLB evicts, looked up with the L2 DTLB (which then needs no 1 GB array: tlb.l2.entries_1g=0); 0: none";
        ways: u64 = 64; "ways"; Some(Limit::Int(bound::ENTRIES)); "Page Directory Cache associativity (entries or more: fully associative)";
    }
    check(p, key) {
        // (More ways than entries: fully associative.)
        crate::param::geometry(key("entries"), key("ways"), p.entries, p.ways.min(p.entries), true)
    }
}

crate::stats::counters! {
    /// The PDCs' events, summed over the cores (statistics `tlb.pdc.*`).
    pub struct PdcCounters under "" {
        lookups: "tlb.pdc.lookups" => (Tlbs, Counter, "lookups",
            "L1 DTLB misses the L2 DTLB did not serve, looked up in the cores' Page Directory Caches (summed over cores).").only("`tlb.pdc.entries` > 0"),
        hits: "tlb.pdc.hits" => (Tlbs, Counter, "lookups",
            "Of `tlb.pdc.lookups`, those a PDC translated (a 1 GB page the L1 DTLB had evicted; a store needs a dirty entry).").only("`tlb.pdc.entries` > 0"),
        fills: "tlb.pdc.fills" => (Tlbs, Counter, "entries", "1 GB translations the L1 DTLBs evicted into their PDCs.").only("`tlb.pdc.entries` > 0"),
    }
}

pub struct Pdc {
    /// Per core.
    arrays: Vec<SetAssoc<TlbKey, TlbEntry>>,
    pub counters: PdcCounters,
}

impl Pdc {
    /// The PDCs of a machine of `cores` cores, if it has them (`tlb.pdc.entries` > 0).
    pub fn build(p: &PdcParams, cores: usize) -> Option<Pdc> {
        (p.entries > 0).then(|| Pdc::new(p.entries, p.ways, cores))
    }

    pub fn new(entries: u64, ways: u64, cores: usize) -> Pdc {
        let ways = ways.clamp(1, entries);
        let arrays = (0..cores).map(|c| SetAssoc::new((entries / ways) as usize, ways as usize, Policy::Lru, 0x9dc0 + c as u64)).collect();
        Pdc { arrays, counters: PdcCounters::default() }
    }

    /// Core `c` looks `va` up (a store needs a dirty entry).
    pub fn lookup(&mut self, c: usize, va: VirtAddr, ctx: Ctx, write: bool) -> Option<(TlbEntry, PageSize)> {
        self.counters.lookups += 1;
        let a = &mut self.arrays[c];
        let slot = a.lookup(a.set_of(va.vpn(PageSize::Size1G)), TlbKey::new(va, PageSize::Size1G, ctx))?;
        let e = *a.val(slot);
        // (A store through a clean entry walks to set the D bit.)
        if write && !e.dirty {
            return None;
        }
        self.counters.hits += 1;
        Some((e, PageSize::Size1G))
    }

    /// Whether core `c`'s PDC holds `va`'s 1 GB translation in context `ctx` (tests).
    pub fn holds(&self, c: usize, va: VirtAddr, ctx: Ctx) -> bool {
        let a = &self.arrays[c];
        a.probe(a.set_of(va.vpn(PageSize::Size1G)), TlbKey::new(va, PageSize::Size1G, ctx)).is_some()
    }
}

/// The glossary's entries of the mechanism's statistics: its counters, and the hit rate
/// `derive_stats` computes from them.
pub(crate) const STATS: &[&[crate::glossary::Entry]] = &[PdcCounters::STATS, {
    use crate::glossary::{e, Kind::*, Section::*};
    &[
        e(Tlbs, "tlb.pdc.hit_rate", Ratio, "fraction", "`tlb.pdc.hits` / `tlb.pdc.lookups`.").only("`tlb.pdc.entries` > 0"),
    ]
}];

impl Mechanism for Pdc {
    fn hooks(&self) -> Hooks {
        Hooks { l2_tlb_miss: true, tlb_evict: true, ..Default::default() }
    }

    /// Its lookup takes no cycles of its own (in parallel with the L2 DTLB) and reads no
    /// memory.
    #[inline]
    fn on_l2_tlb_miss<P: MemPort>(&mut self, c: usize, va: VirtAddr, ctx: Ctx, write: bool, _port: &mut P) -> Option<(TlbEntry, PageSize)> {
        self.lookup(c, va, ctx, write)
    }

    #[inline]
    fn on_tlb_evict(&mut self, c: usize, level: TlbId, key: TlbKey, e: TlbEntry) {
        if level != TlbId::L1d || key.code() != PageSize::Size1G as usize {
            return;
        }
        self.counters.fills += 1;
        let a = &mut self.arrays[c];
        let set = a.set_of(key.vpn());
        match a.probe(set, key) {
            Some(slot) => *a.val_mut(slot) = e,
            None => drop(a.insert(set, key, e, crate::memory::repl::LineKind::Data)),
        }
    }

    fn on_invalidate(&mut self, c: usize, what: Invalidate) -> usize {
        self.arrays[c].invalidate_where(|k, _| k != TlbKey::INVALID && what.covers(k.ctx, k.vpn(), PageSize::Size1G.shift()))
    }

    fn emit_stats(&self, s: &mut Stats) {
        self.counters.emit("", s);
    }

    fn derive_stats(&self, i: &Ints, s: &mut Stats) {
        s.ratio("tlb.pdc.hit_rate", i.get("tlb.pdc.hits"), i.get("tlb.pdc.lookups"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only what the L1 DTLB evicts comes in, only 1 GB pages, and a shootdown reaches it.
    #[test]
    fn it_holds_the_1g_pages_the_l1_evicts() {
        let mut p = Pdc::new(64, 64, 2);
        let (va, ctx) = (VirtAddr(3 << 30), 1);
        let k1g = TlbKey::new(va, PageSize::Size1G, ctx);
        p.on_tlb_evict(0, TlbId::L2, k1g, TlbEntry::page(0x40000, true));
        p.on_tlb_evict(0, TlbId::L1d, TlbKey::new(va, PageSize::Size2M, ctx), TlbEntry::page(0x40000, true));
        assert!(!p.holds(0, va, ctx), "an L2 eviction and a 2 MB page do not fill it");
        p.on_tlb_evict(0, TlbId::L1d, k1g, TlbEntry::page(0x40000, false));
        assert!(p.holds(0, va, ctx) && !p.holds(1, va, ctx), "per core");
        let inside = VirtAddr(va.0 + 12345);
        assert_eq!(p.lookup(0, inside, ctx, false), Some((TlbEntry::page(0x40000, false), PageSize::Size1G)));
        assert_eq!(p.lookup(0, inside, ctx, true), None, "a store walks to set D");
        assert_eq!(p.on_invalidate(0, Invalidate::page(ctx, inside)), 1);
        assert_eq!(p.lookup(0, inside, ctx, false), None);
        assert_eq!((p.counters.lookups, p.counters.hits, p.counters.fills), (3, 1, 1));
    }
}
