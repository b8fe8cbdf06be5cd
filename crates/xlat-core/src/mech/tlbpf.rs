//! A TLB prefetcher: sequential prefetching (SP) as Kandiraju and Sivasubramaniam evaluate it
//! ("Going the distance for TLB prefetching", ISCA 2002): each L2 TLB miss to a page asks for
//! the translation of the next page, which a walk fetches ahead of use. It is the worked
//! example of the prefetch hooks ([`Mechanism::prefetch_request`],
//! [`Mechanism::on_prefetch_walk`]; `docs/extending.md`).
//!
//! Where prefetched translations go: a prefetch buffer (PB) of its own per core, looked up
//! with the L2 TLB, from which a hit moves the translation into the TLBs; not the L2 TLB
//! itself. That is the design of the TLB-prefetching literature (Kandiraju and
//! Sivasubramaniam's PB; the prefetch queue of Vavouliotis et al., ISCA 2021), chosen there
//! so that a wrong prefetch evicts nothing a program uses. (ChampSim's STLB prefetchers fill
//! the STLB, as its cache prefetchers fill their caches; a prefetcher that wants that would
//! need the translator to fill the L2 TLB instead.) The buffer answers through
//! `on_l2_tlb_miss`, in parallel with the L2 TLB's lookup, so a hit costs nothing more than
//! the L2 TLB's latency; a walk it saved counts as an L2 TLB miss refilled from below.
//!
//! The page asked for is the next 4 KB page (a miss inside a 2 MB page asks for a page the
//! TLBs then hold: the translator walks for none). The walks are the translator's: they take
//! a walker of the core and read the page tables through the caches as demand walks do, once
//! the miss's own translation is known (`Translator::step`), and a page not mapped is
//! dropped, never faulted in.

use crate::arch::addr::{PageSize, VirtAddr};
use crate::arch::ctx::{Ctx, Invalidate};
use crate::mech::{Hooks, Mechanism, Prefetched};
use crate::memory::port::MemPort;
use crate::param::TlbPrefetcher;
use crate::stats::{Ints, Stats};
use crate::translate::tlb::TlbEntry;

use crate::param::{Limit, component};

component! {
    /// The TLB prefetcher (`tlb.prefetcher`, `tlb.prefetch_buffer`).
    TlbPrefetchParams {
        prefetcher: crate::param::TlbPrefetcher = crate::param::TlbPrefetcher::None; "prefetcher"; None; "TLB prefetcher: none, or sequential (Kandiraju and Sivasubramaniam's SP: each L2 TLB miss prefetches the translation of the next 4 KB page). A prefetch walks as a demand walk does, on a walker of the core, its reads through the caches, after the miss's own translation is known; the translation goes to a prefetch buffer of tlb.prefetch_buffer entries beside the L2 TLB, looked up on its misses";
        buffer: u64 = 16; "prefetch_buffer"; Some(Limit::Int(4096)); "entries of the TLB prefetcher's prefetch buffer, per core (fully associative, FIFO; a hit moves the translation into the TLBs)";
    }
    check(p, key) {
        if p.prefetcher != TlbPrefetcher::None && p.buffer == 0 {
            return Err(crate::param::invalid(key("prefetch_buffer"), "must be at least 1 with a TLB prefetcher (its prefetches go there)"));
        }
        Ok(())
    }
}

crate::stats::counters! {
    /// The prefetcher's events, summed over the cores (statistics `tlb.prefetch.*`; the
    /// memory side counts the walks).
    pub struct TlbPrefetchCounters under "" {
        requests: "tlb.prefetch.requests" => (Tlbs, Counter, "pages",
            "Pages whose translations the TLB prefetcher asked for (the sequential one: the 4 KB page after each L2 TLB miss's, unless its prefetch buffer held it), summed over cores: `tlb.prefetch.cached` + `tlb.prefetch.walks`.")
            .only("`tlb.prefetcher` other than `none`"),
        cached: "tlb.prefetch.cached" => (Tlbs, Counter, "pages",
            "Requests for a page a TLB level of the core already held: no walk.").only("`tlb.prefetcher` other than `none`"),
        unmapped: "tlb.prefetch.unmapped" => (Tlbs, Counter, "walks",
            "Prefetch walks that found the page not mapped: dropped (a prefetch never faults).").only("`tlb.prefetcher` other than `none`"),
        fills: "tlb.prefetch.fills" => (Tlbs, Counter, "entries",
            "Translations prefetch walks put into the prefetch buffers (`tlb.prefetch.walks` - `tlb.prefetch.unmapped`).")
            .only("`tlb.prefetcher` other than `none`"),
        hits: "tlb.prefetch.hits" => (Tlbs, Counter, "lookups",
            "L2 TLB misses a prefetch buffer translated (the useful prefetches): the translation moves into the TLBs and no walk runs (a store needs a dirty one). The L2 TLB's `misses` still count them.")
            .only("`tlb.prefetcher` other than `none`"),
    }
}

/// A prefetched translation: the page (`tag`, the VA's page number at `size`) of context
/// `ctx`, and when it was filled (the buffer is FIFO).
#[derive(Clone, Copy, Debug)]
struct Slot {
    tag: u64,
    ctx: Ctx,
    size: PageSize,
    e: TlbEntry,
    filled: u64,
}

/// One core's prefetch buffer and its request not yet taken.
struct Core {
    slots: Vec<Option<Slot>>,
    pending: Option<VirtAddr>,
}

impl Core {
    /// The slot holding the translation of `va` in `ctx`, if any.
    fn find(&self, va: VirtAddr, ctx: Ctx) -> Option<usize> {
        self.slots.iter().position(|s| s.is_some_and(|s| s.ctx == ctx && s.tag == va.vpn(s.size)))
    }
}

/// The sequential TLB prefetcher with its per-core prefetch buffers (`tlb.prefetcher=sequential`).
pub struct Sequential {
    cores: Vec<Core>,
    /// Fills so far, the FIFO order's clock.
    clock: u64,
    pub counters: TlbPrefetchCounters,
}

impl Sequential {
    /// The prefetcher of a machine of `cores` cores, if `p` asks for it.
    pub fn build(p: &TlbPrefetchParams, cores: usize) -> Option<Sequential> {
        (p.prefetcher == TlbPrefetcher::Sequential).then(|| Sequential::new(p.buffer as usize, cores))
    }

    /// Prefetch buffers of `entries` entries (at least 1) for `cores` cores.
    pub fn new(entries: usize, cores: usize) -> Sequential {
        assert!(entries > 0, "a prefetch buffer needs an entry (the configuration validates it)");
        let cores = (0..cores).map(|_| Core { slots: vec![None; entries], pending: None }).collect();
        Sequential { cores, clock: 0, counters: TlbPrefetchCounters::default() }
    }

    /// Translations in core `c`'s buffer.
    pub fn occupancy(&self, c: usize) -> usize {
        self.cores[c].slots.iter().flatten().count()
    }
}

/// The glossary's entries of the mechanism's statistics: its counters, and the accuracy
/// `derive_stats` computes from them (its walks are the memory side's,
/// [`crate::memory::hierarchy::PrefetchWalkCounters`]).
pub(crate) const STATS: &[&[crate::glossary::Entry]] = &[TlbPrefetchCounters::STATS, {
    use crate::glossary::{e, Kind::*, Section::*};
    &[
        e(Tlbs, "tlb.prefetch.accuracy", Ratio, "fraction", "`tlb.prefetch.hits` / `tlb.prefetch.fills`.").only("`tlb.prefetcher` other than `none`"),
    ]
}];

impl Mechanism for Sequential {
    fn hooks(&self) -> Hooks {
        Hooks { l2_tlb_miss: true, tlb_prefetch: true, ..Hooks::default() }
    }

    /// Look the buffer up (a hit leaves it: the translation moves to the TLBs) and ask for
    /// the next page, unless the buffer holds that already.
    #[inline]
    fn on_l2_tlb_miss<P: MemPort>(&mut self, c: usize, va: VirtAddr, ctx: Ctx, write: bool, _port: &mut P) -> Option<(TlbEntry, PageSize)> {
        let core = &mut self.cores[c];
        let hit = core.find(va, ctx).and_then(|i| core.slots[i].take());
        let next = VirtAddr((va.0 & !0xfff).wrapping_add(4096));
        if core.find(next, ctx).is_none() {
            core.pending = Some(next);
        }
        let s = hit?;
        // (A store through a clean translation walks to set the D bit; the clean copy goes.)
        if write && !s.e.dirty {
            return None;
        }
        self.counters.hits += 1;
        Some((s.e, s.size))
    }

    #[inline]
    fn prefetch_request(&mut self, c: usize) -> Option<VirtAddr> {
        let va = self.cores[c].pending.take()?;
        self.counters.requests += 1;
        Some(va)
    }

    fn on_prefetch_walk(&mut self, c: usize, va: VirtAddr, ctx: Ctx, result: Prefetched) {
        let (e, size) = match result {
            Prefetched::Cached => return self.counters.cached += 1,
            Prefetched::Unmapped => return self.counters.unmapped += 1,
            Prefetched::Walked(e, size) => (e, size),
        };
        self.counters.fills += 1;
        self.clock += 1;
        let core = &mut self.cores[c];
        // The same page again (a 2 MB page asked for through another of its 4 KB pages),
        // else a free slot, else the oldest.
        let i = core.find(va, ctx).or_else(|| core.slots.iter().position(Option::is_none)).unwrap_or_else(|| {
            let oldest = core.slots.iter().enumerate().min_by_key(|(_, s)| s.map_or(0, |s| s.filled));
            oldest.map_or(0, |(i, _)| i)
        });
        core.slots[i] = Some(Slot { tag: va.vpn(size), ctx, size, e, filled: self.clock });
    }

    /// A prefetched translation is a TLB entry of the core's: it goes as the TLBs' do.
    fn on_invalidate(&mut self, c: usize, what: Invalidate) -> usize {
        let core = &mut self.cores[c];
        let mut n = 0;
        for s in &mut core.slots {
            if s.is_some_and(|x| what.covers(x.ctx, x.tag, x.size.shift())) {
                *s = None;
                n += 1;
            }
        }
        n
    }

    fn emit_stats(&self, s: &mut Stats) {
        self.counters.emit("", s);
    }

    fn derive_stats(&self, i: &Ints, s: &mut Stats) {
        s.ratio("tlb.prefetch.accuracy", i.get("tlb.prefetch.hits"), i.get("tlb.prefetch.fills"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mech::{AnyMech, Mechs};
    use crate::memory::port::fake::FakePort;

    fn page(n: u64) -> VirtAddr {
        VirtAddr(0x7f00_0000_0000 + n * 4096)
    }

    /// Through the hook layer, as the translator drives it: a miss asks for the next page;
    /// its walk's translation answers the next miss (once: it moves to the TLBs), which asks
    /// for the page after; a store does not take a clean translation; a page a TLB holds, or
    /// one not mapped, fills nothing; the buffer is FIFO; a shootdown reaches it; and the
    /// other core's buffer is its own.
    #[test]
    fn a_miss_prefetches_the_next_page_into_the_buffer() {
        // (The buffer answers without touching memory: the port records no call.)
        let mut port = FakePort::default();
        let mut m = Mechs::new(vec![AnyMech::TlbPrefetch(Sequential::new(2, 2))], 2);
        assert!(m.hooks.tlb_prefetch && m.hooks.l2_tlb_miss);
        let ctx = 1;
        let e = |frame| TlbEntry::page(frame, false);
        assert_eq!(m.on_l2_tlb_miss(0, VirtAddr(page(0).0 + 123), ctx, false, &mut port), None);
        assert_eq!(m.prefetch_request(0), Some(page(1)));
        assert_eq!(m.prefetch_request(0), None, "one request per miss");
        assert_eq!(m.prefetch_request(1), None, "the other core asked for nothing");
        m.on_prefetch_walk(0, page(1), ctx, Prefetched::Walked(e(501), PageSize::Size4K));
        assert_eq!(m.on_l2_tlb_miss(1, page(1), ctx, false, &mut port), None, "core 1's buffer is its own");
        assert_eq!(m.prefetch_request(1), Some(page(2)));
        m.on_prefetch_walk(1, page(2), ctx, Prefetched::Unmapped);
        assert_eq!(m.on_l2_tlb_miss(0, VirtAddr(page(1).0 + 8), ctx, false, &mut port), Some((e(501), PageSize::Size4K)));
        assert_eq!(m.on_l2_tlb_miss(0, page(1), 2, false, &mut port), None, "another context's page is not this one");
        assert_eq!(m.prefetch_request(0), Some(page(2)));
        m.on_prefetch_walk(0, page(2), ctx, Prefetched::Walked(e(502), PageSize::Size4K));
        assert_eq!(m.on_l2_tlb_miss(0, page(1), ctx, false, &mut port), None, "a hit moved it out");
        assert_eq!(m.prefetch_request(0), None, "page 2 is in the buffer already");
        assert_eq!(m.on_l2_tlb_miss(0, page(2), ctx, true, &mut port), None, "a store walks to set D");
        m.prefetch_request(0);
        m.on_prefetch_walk(0, page(3), ctx, Prefetched::Cached);
        // FIFO: 10, 11, then 12 replaces 10.
        for (p, f) in [(10, 510), (11, 511), (12, 512)] {
            m.on_prefetch_walk(0, page(p), ctx, Prefetched::Walked(e(f), PageSize::Size4K));
        }
        let Some(AnyMech::TlbPrefetch(pf)) = m.get(0) else { panic!("the prefetcher") };
        assert_eq!(pf.occupancy(0), 2);
        assert_eq!(m.on_l2_tlb_miss(0, page(10), ctx, false, &mut port), None, "the oldest went");
        // A shootdown of page 11 in this context.
        assert_eq!(m.on_invalidate(0, Invalidate::Range { ctx, start: page(11).0, end: page(12).0 }), 1);
        assert_eq!(m.on_l2_tlb_miss(0, page(11), ctx, false, &mut port), None);
        assert_eq!(m.on_l2_tlb_miss(0, page(12), ctx, false, &mut port), Some((e(512), PageSize::Size4K)));
        let mut s = Stats::default();
        m.emit_stats(&mut s);
        let mut d = Stats::default();
        m.derive_stats(&Ints::new(&s), &mut d);
        s.entries.extend(d.entries);
        // Requests taken: page 1, page 2 (core 1), page 2, page 3.
        assert_eq!(s.f("tlb.prefetch.fills"), 5.0);
        assert_eq!(s.f("tlb.prefetch.hits"), 2.0);
        assert_eq!(s.f("tlb.prefetch.cached"), 1.0);
        assert_eq!(s.f("tlb.prefetch.unmapped"), 1.0);
        assert_eq!(s.f("tlb.prefetch.requests"), 4.0);
        assert_eq!(s.f("tlb.prefetch.accuracy"), 0.4);
        assert!(port.0.is_empty(), "{:?}", port.0);
    }

    /// A 2 MB page's translation answers a miss anywhere in it.
    #[test]
    fn a_large_page_answers_for_all_of_it() {
        let mut port = FakePort::default();
        let mut pf = Sequential::new(4, 1);
        let base = VirtAddr(0x4000_0000);
        pf.on_prefetch_walk(0, base, 1, Prefetched::Walked(TlbEntry::page(512, true), PageSize::Size2M));
        assert_eq!(pf.on_l2_tlb_miss(0, VirtAddr(base.0 + 0x1f_f000), 1, true, &mut port), Some((TlbEntry::page(512, true), PageSize::Size2M)));
        assert_eq!(pf.prefetch_request(0), Some(VirtAddr(base.0 + 0x20_0000)), "the page after the 4 KB page missed");
        assert!(port.0.is_empty(), "{:?}", port.0);
    }
}
