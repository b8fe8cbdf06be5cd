//! The hindsight oracle of huge-page selection (ours: `001_pcc.spec.md` §4 asks for it to
//! show how close the PCC comes to the best choice; the paper has none). With
//! `os.promotion=oracle` a run is made twice ([`crate::simulate`] needs the first's
//! [`WalkProfile`], which [`crate::profile_walks`] makes):
//!
//! 1. *Watching*: the same machine without promotion, counting every walk that ends at a
//!    4 KB page per 2 MB region (and address space) over the whole run.
//! 2. *Acting*: at the daemon's first read (`os.promotion_first` references, when the PCC's
//!    daemon reads first), it asks the OS to promote the regions with the most walks, best
//!    first, up to the footprint cap (`os.promotion_cap`; uncapped, every region that
//!    walked). Nothing later: it already knows the whole run.
//!
//! The ranking is by walks, not by walks saved when re-simulated (a region's 2 MB page may
//! still miss in the TLB): the spec's first reading, and the cheap one.

use std::collections::HashMap;

use crate::arch::addr::{PageSize, VirtAddr};
use crate::arch::ctx::{Ctx, SPACE_MASK};
use crate::mech::{Hooks, Mechanism, OsRequest, PromotionBudget};
use crate::memory::port::MemPort;
use crate::arch::clock::Clock;
use crate::param::Promotion;
use crate::stats::Stats;
use crate::translate::tlb::TlbEntry;

/// The walks of one 2 MB region in a run without promotion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionWalks {
    /// The address space's context (VPID << 12 | PCID).
    pub ctx: Ctx,
    /// VA >> 21.
    pub tag: u64,
    /// Walks that ended at a 4 KB page of the region.
    pub walks: u64,
}

/// What the first run saw: every region that walked, most walks first (ties by context,
/// then address, so that the order is the same on every run).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WalkProfile {
    pub regions: Vec<RegionWalks>,
}

impl WalkProfile {
    /// The profile of `counts`, ranked.
    pub fn ranked(counts: &HashMap<(Ctx, u64), u64>) -> WalkProfile {
        let mut regions: Vec<RegionWalks> = counts.iter().map(|(&(ctx, tag), &walks)| RegionWalks { ctx, tag, walks }).collect();
        regions.sort_unstable_by_key(|r| (std::cmp::Reverse(r.walks), r.ctx, r.tag));
        WalkProfile { regions }
    }

    /// Walks over every region.
    pub fn walks(&self) -> u64 {
        self.regions.iter().map(|r| r.walks).sum()
    }
}

/// The oracle: watching (no profile yet) or acting on one.
pub struct Oracle {
    counts: HashMap<(Ctx, u64), u64>,
    profile: Option<WalkProfile>,
    first: u64,
    period: u64,
    budget: PromotionBudget,
    /// The read has been made (it is made once).
    done: bool,
    requests: u64,
}

impl Oracle {
    /// The oracle, watching, if it is the promotion daemon (`os.promotion=oracle`), for a footprint
    /// of `footprint_2m` 2 MB regions.
    pub fn build(promotion: &crate::mech::PromotionParams, footprint_2m: u64) -> Option<Oracle> {
        (promotion.kind == Promotion::Oracle).then(|| Oracle::new(promotion.first.max(1), promotion.interval.max(1), promotion.cap, footprint_2m))
    }

    pub fn new(first: u64, period: u64, cap: f64, footprint_2m: u64) -> Oracle {
        Oracle {
            // (Sized once for the footprint: counting allocates only past it.)
            counts: HashMap::with_capacity(footprint_2m.min(1 << 20) as usize),
            profile: None,
            first,
            period,
            budget: PromotionBudget::new(cap, footprint_2m),
            done: false,
            requests: 0,
        }
    }

    /// A walk of `va` in `ctx` ended at a page of `size`: watching, count it if 4 KB.
    #[inline]
    pub fn count(&mut self, ctx: Ctx, va: VirtAddr, size: PageSize) {
        if self.profile.is_none() && size == PageSize::Size4K {
            *self.counts.entry((ctx & SPACE_MASK, va.0 >> 21)).or_insert(0) += 1;
        }
    }

    pub fn acting(&self) -> bool {
        self.profile.is_some()
    }

    /// The regions it asks for at its read: the best of the profile, up to the cap.
    pub fn pick(&mut self) -> Vec<RegionWalks> {
        let Some(p) = &self.profile else { return Vec::new() };
        p.regions.iter().copied().filter(|r| self.budget.take(r.ctx, r.tag)).collect()
    }
}

/// The glossary's entries of the mechanism's statistics: what `emit_stats` emits.
pub(crate) const STATS: &[&[crate::glossary::Entry]] = &[{
    use crate::glossary::{e, Kind::*, Section::*};
    &[
        e(Mechanisms, "oracle.profile_walks", Level, "walks", "Walks that ended at a 4 KB page in the hindsight oracle's first run (the same machine without promotion), over every region: what its ranking counts (L2 TLB misses and the walks that only set a dirty bit, so it can exceed that run's `walks`).").only("`os.promotion=oracle`"),
        e(Mechanisms, "oracle.profile_regions", Level, "regions", "2 MB regions with at least one such walk: the oracle's ranked list.").only("`os.promotion=oracle`"),
        e(Mechanisms, "oracle.requests", Counter, "regions", "Promotions the oracle asked the OS for at its one read (`os.promotion_first`): the regions with the most walks, up to `os.promotion_cap` of the footprint. The OS's `promotions` counts those it carried out.").only("`os.promotion=oracle`"),
    ]
}];

impl Mechanism for Oracle {
    fn hooks(&self) -> Hooks {
        Hooks { walk_end: true, ..Default::default() }
    }

    /// What it has counted so far (the first run's result).
    fn hindsight(&self) -> Option<WalkProfile> {
        Some(WalkProfile::ranked(&self.counts))
    }

    /// Act on `profile` (the first run's) from now on.
    fn act_on(&mut self, profile: &WalkProfile) {
        self.profile = Some(profile.clone());
    }

    #[inline]
    fn on_walk_end<P: MemPort>(&mut self, _c: usize, va: VirtAddr, ctx: Ctx, _e: TlbEntry, size: PageSize, _port: &mut P) {
        self.count(ctx, va, size);
    }

    fn task(&self) -> Option<(Clock, u64, u64)> {
        Some((Clock::References, self.period, self.first))
    }

    fn on_tick(&mut self, out: &mut Vec<OsRequest>) {
        if self.done || self.profile.is_none() {
            return;
        }
        self.done = true;
        let picks = self.pick();
        self.requests += picks.len() as u64;
        // (Promotions are the OS's work on the core that runs the process: the first core.)
        out.extend(picks.into_iter().map(|r| OsRequest::Promote { core: 0, ctx: r.ctx, va: VirtAddr(r.tag << 21) }));
    }

    fn emit_stats(&self, s: &mut Stats) {
        let p = self.profile.as_ref();
        s.int("oracle.profile_walks", p.map_or(0, |p| p.walks()));
        s.int("oracle.profile_regions", p.map_or(0, |p| p.regions.len() as u64));
        s.int("oracle.requests", self.requests);
    }

}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(o: &mut Oracle, ctx: Ctx, va: u64, size: PageSize) {
        o.count(ctx, VirtAddr(va), size);
    }

    /// Watching counts 4 KB walks per region and context (threads of a process together);
    /// the ranking is by walks, then context, then address.
    #[test]
    fn the_profile_ranks_regions_by_4k_walks() {
        let mut o = Oracle::new(1, 1, 1.0, 8);
        let thread1 = 1 | 1 << crate::arch::ctx::THREAD_SHIFT;
        for (ctx, va) in [(1, 0x20_0000), (1, 0x40_0000), (thread1, 0x40_0000), (2, 0x20_0000), (2, 0x20_1000)] {
            walk(&mut o, ctx, va, PageSize::Size4K);
        }
        walk(&mut o, 1, 0x60_0000, PageSize::Size2M);
        let got: Vec<_> = o.hindsight().unwrap().regions.iter().map(|r| (r.ctx, r.tag, r.walks)).collect();
        assert_eq!(got, vec![(1, 2, 2), (2, 1, 2), (1, 1, 1)]);
    }

    /// Acting: one read, the best regions up to the cap (25 % of 8 regions: 2), and nothing
    /// after; watching never asks.
    #[test]
    fn it_promotes_the_best_regions_once_up_to_the_cap() {
        let profile = WalkProfile {
            regions: vec![RegionWalks { ctx: 1, tag: 7, walks: 9 }, RegionWalks { ctx: 1, tag: 3, walks: 5 }, RegionWalks { ctx: 1, tag: 4, walks: 1 }],
        };
        let mut o = Oracle::new(1, 1, 0.25, 8);
        let mut out = Vec::new();
        o.on_tick(&mut out);
        assert!(out.is_empty(), "watching");
        o.act_on(&profile);
        o.on_tick(&mut out);
        assert!(out.iter().all(|r| matches!(r, OsRequest::Promote { .. })));
        let vas: Vec<_> = out.iter().map(|r| r.va().0 >> 21).collect();
        assert_eq!(vas, vec![7, 3]);
        o.on_tick(&mut out);
        assert_eq!(out.len(), 2, "one read only");
    }
}
