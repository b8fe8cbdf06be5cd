//! HawkEye's huge-page selection (Panwar et al., ASPLOS '19) as the PCC paper's artifact
//! models it (`001_pcc.spec.md` §4), the PCC's software baseline: not the HawkEye kernel,
//! but its access-coverage policy replayed through the same promotion machinery.
//!
//! Per 2 MB region of the workload's footprint, a 512-bit coverage map. Every reference in
//! a *window* of `hawkeye.window_refs` references (the paper's 1 s, as accesses per second
//! x 1) sets the bit of its 4 KB page; no TLB is involved, so the policy sees use, not walks.
//! At the window's end, for every region that has been touched in some window:
//! EMA = 0.9 old + 0.1 coverage (the first value taken as is), bucket = min(floor(EMA / 50),
//! 9). It then picks up to `hawkeye.promote_per_interval` (8: the 4096 pages khugepaged
//! scans) regions not asked for before, from bucket 9 downwards, within a bucket in the
//! order the regions entered it (a region whose bucket does not change keeps its place).
//! Then it clears the maps and sleeps `os.promotion_interval` references (the paper's 30 s)
//! before the next window: a cycle of window + sleep references. The picks go to the OS at
//! the daemon's next tick, due at each window's end, under the same footprint cap as the
//! PCC (`os.promotion_cap`). Regions with coverage 0 (touched in no window) are never
//! picked, as a region in no bucket list.
//!
//! The coverage maps index the process's regions directly (a dense array per 2 MB region, so
//! a reference costs a short scan of the regions and one bit set, no allocation). One
//! address space only (`os.processes=1`, not virtualized): the maps are keyed by address.

use crate::arch::addr::VirtAddr;
use crate::arch::ctx::Ctx;
use crate::mech::{Hooks, Mechanism, OsRequest, PromotionBudget};
use crate::arch::clock::Clock;
use crate::param::Promotion;
use crate::stats::Stats;

use crate::param::{Limit, bound, component};

component! {
    /// HawkEye's promotion daemon (`hawkeye.*`).
    HawkEyeParams {
        window_refs: u64 = 1_000_000; "window_refs"; Some(Limit::Int(bound::INTERVAL)); "os.promotion=hawkeye: references in HawkEye's measurement window (the paper's 1 s, as accesses per second x 1); it then sleeps os.promotion_interval references";
        promote_per_interval: u64 = 8; "promote_per_interval"; Some(Limit::Int(1 << 20)); "2 MB regions HawkEye promotes at most per window (khugepaged's 4096 pages scanned = 8 regions)";
    }
}

/// Buckets of access coverage (0-49, ..., 450-512 pages).
const BUCKETS: usize = 10;

/// A workload region's 2 MB regions: tags `first..first + n` are slots `base..base + n`.
#[derive(Clone, Copy, Debug)]
struct Span {
    first: u64,
    n: u64,
    base: usize,
}

/// One 2 MB region's state.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// The window's coverage map: one bit per 4 KB page.
    map: [u64; 8],
    /// The moving average of its coverage, and whether it has one (touched in a window).
    ema: f64,
    has_ema: bool,
    bucket: u8,
    /// When it entered its bucket (window count, then slot order): its place in the list.
    since: u64,
    /// The context of its last reference (for the OS request).
    ctx: Ctx,
    /// Already asked for.
    asked: bool,
}

/// What HawkEye is built from (the `hawkeye.*` keys).
#[derive(Clone, Copy, Debug)]
pub struct HawkEyeSpec {
    pub window_refs: u64,
    pub sleep_refs: u64,
    pub per_interval: usize,
    pub cap: f64,
}

pub struct HawkEye {
    spans: Vec<Span>,
    slots: Vec<Slot>,
    /// The span of the last reference (references cluster).
    last: usize,
    p: HawkEyeSpec,
    /// References into the current cycle (window, then sleep).
    phase: u64,
    windows: u64,
    /// `windows` at the end of warm-up: the stamps that order a bucket's regions count windows
    /// from there (a region that entered its bucket since ranks before one that entered it
    /// during warm-up).
    stamp_origin: u64,
    /// Picks of the last window, for the OS at the next tick (capacity reserved once).
    pending: Vec<(Ctx, u64)>,
    order: Vec<usize>,
    budget: PromotionBudget,
    requests: u64,
}

impl HawkEye {
    /// HawkEye, if it is the promotion daemon (`os.promotion=hawkeye`), over the process's
    /// `regions`.
    pub fn build(p: &HawkEyeParams, promotion: &crate::mech::PromotionParams, regions: &[crate::Region]) -> Option<HawkEye> {
        (promotion.kind == Promotion::HawkEye).then(|| {
            let p = HawkEyeSpec {
                window_refs: p.window_refs,
                sleep_refs: promotion.interval,
                per_interval: p.promote_per_interval as usize,
                cap: promotion.cap,
            };
            HawkEye::new(p, regions)
        })
    }

    pub fn new(p: HawkEyeSpec, regions: &[crate::Region]) -> HawkEye {
        let mut spans: Vec<Span> = Vec::new();
        let mut base = 0;
        let mut sorted: Vec<_> = regions.iter().filter(|r| r.len > 0).map(|r| (r.start >> 21, (r.start + r.len - 1) >> 21)).collect();
        sorted.sort_unstable();
        for (first, last) in sorted {
            // Workload regions sharing a 2 MB region share its slot.
            let first = match spans.last() {
                Some(s) if s.first + s.n > first => s.first + s.n,
                _ => first,
            };
            if first > last {
                continue;
            }
            let n = last - first + 1;
            spans.push(Span { first, n, base });
            base += n as usize;
        }
        let budget = PromotionBudget::new(p.cap, base as u64);
        HawkEye {
            spans,
            slots: vec![Slot::default(); base],
            last: 0,
            p,
            phase: 0,
            windows: 0,
            stamp_origin: 0,
            pending: Vec::with_capacity(p.per_interval),
            order: Vec::with_capacity(base),
            budget,
            requests: 0,
        }
    }

    /// The slot of 2 MB region `tag`, if it is in the footprint.
    #[inline]
    fn slot(&mut self, tag: u64) -> Option<usize> {
        let s = self.spans.get(self.last)?;
        if tag.wrapping_sub(s.first) < s.n {
            return Some(s.base + (tag - s.first) as usize);
        }
        let i = self.spans.iter().position(|s| tag.wrapping_sub(s.first) < s.n)?;
        self.last = i;
        let s = self.spans[i];
        Some(s.base + (tag - s.first) as usize)
    }

    /// The window ended: update the averages and buckets, pick the next promotions, clear
    /// the maps.
    #[cold]
    fn end_window(&mut self) {
        self.windows += 1;
        let stamp = (self.windows - self.stamp_origin) * self.slots_len_hint();
        for (i, s) in self.slots.iter_mut().enumerate() {
            let cover: u32 = s.map.iter().map(|w| w.count_ones()).sum();
            s.map = [0; 8];
            if !s.has_ema && cover == 0 {
                continue;
            }
            s.ema = if s.has_ema { 0.9 * s.ema + 0.1 * cover as f64 } else { cover as f64 };
            let bucket = ((s.ema / 50.0) as usize).min(BUCKETS - 1) as u8;
            if !s.has_ema || bucket != s.bucket {
                (s.bucket, s.since) = (bucket, stamp + i as u64);
            }
            s.has_ema = true;
        }
        // From bucket 9 down, each bucket in the order its regions entered it.
        self.order.clear();
        self.order.extend((0..self.slots.len()).filter(|&i| self.slots[i].has_ema && !self.slots[i].asked));
        let slots = &self.slots;
        self.order.sort_unstable_by_key(|&i| (std::cmp::Reverse(slots[i].bucket), slots[i].since));
        self.pending.clear();
        for k in 0..self.order.len() {
            if self.pending.len() >= self.p.per_interval {
                break;
            }
            let i = self.order[k];
            let tag = self.tag_of(i);
            if !self.budget.take(self.slots[i].ctx, tag) {
                break;
            }
            self.slots[i].asked = true;
            self.pending.push((self.slots[i].ctx, tag));
        }
    }

    /// A bound on slots, so that (window, slot) orders as one number.
    fn slots_len_hint(&self) -> u64 {
        self.slots.len() as u64 + 1
    }

    fn tag_of(&self, i: usize) -> u64 {
        let s = self.spans.iter().rev().find(|s| s.base <= i).expect("a slot is in a span");
        s.first + (i - s.base) as u64
    }

    /// Region `tag`'s average coverage and bucket, if it has one (tests, studies).
    pub fn ema(&self, tag: u64) -> Option<(f64, u8)> {
        let i = self.spans.iter().position(|s| tag.wrapping_sub(s.first) < s.n)?;
        let s = &self.slots[self.spans[i].base + (tag - self.spans[i].first) as usize];
        s.has_ema.then_some((s.ema, s.bucket))
    }

    /// Windows ended, and promotions asked of the OS.
    pub fn counts(&self) -> (u64, u64) {
        (self.windows, self.requests)
    }

    /// The budget (the footprint cap).
    pub fn budget(&self) -> &PromotionBudget {
        &self.budget
    }
}

/// The glossary's entries of the mechanism's statistics: what `emit_stats` emits.
pub(crate) const STATS: &[&[crate::glossary::Entry]] = &[{
    use crate::glossary::{e, Kind::*, Section::*};
    &[
        e(Mechanisms, "hawkeye.windows", Counter, "windows", "HawkEye's measurement windows ended (every `hawkeye.window_refs` + `os.promotion_interval` references, first after `hawkeye.window_refs`).").only("`os.promotion=hawkeye`"),
        e(Mechanisms, "hawkeye.requests", Counter, "regions", "Promotions HawkEye asked the OS for: at most `hawkeye.promote_per_interval` per window, each region once over the run, and at most `os.promotion_cap` of the footprint. The OS's `promotions` counts those it carried out.").only("`os.promotion=hawkeye`"),
    ]
}];

impl Mechanism for HawkEye {
    fn hooks(&self) -> Hooks {
        Hooks { reference: true, ..Default::default() }
    }

    #[inline]
    fn on_reference(&mut self, _c: usize, va: VirtAddr, ctx: Ctx) {
        if self.phase < self.p.window_refs {
            if let Some(i) = self.slot(va.0 >> 21) {
                let page = (va.0 >> 12) & 511;
                let s = &mut self.slots[i];
                s.map[(page >> 6) as usize] |= 1 << (page & 63);
                s.ctx = ctx;
            }
        }
        self.phase += 1;
        if self.phase == self.p.window_refs {
            self.end_window();
        }
        if self.phase >= self.p.window_refs + self.p.sleep_refs {
            self.phase = 0;
        }
    }

    fn task(&self) -> Option<(Clock, u64, u64)> {
        // Due at each window's end, when the picks are ready.
        Some((Clock::References, self.p.window_refs + self.p.sleep_refs, self.p.window_refs))
    }

    fn on_tick(&mut self, out: &mut Vec<OsRequest>) {
        self.requests += self.pending.len() as u64;
        // (The core is the OS's choice of who pays: the first.)
        out.extend(self.pending.drain(..).map(|(ctx, tag)| OsRequest::Promote { core: 0, ctx, va: VirtAddr(tag << 21) }));
    }

    fn emit_stats(&self, s: &mut Stats) {
        s.int("hawkeye.windows", self.windows);
        s.int("hawkeye.requests", self.requests);
    }

    fn on_warmup_end(&mut self) {
        self.stamp_origin = self.windows;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB2: u64 = 1 << 21;
    const BASE: u64 = 0x4000_0000;

    fn params(window: u64, sleep: u64) -> HawkEyeSpec {
        HawkEyeSpec { window_refs: window, sleep_refs: sleep, per_interval: 8, cap: 1.0 }
    }

    fn region(start: u64, len: u64) -> crate::Region {
        crate::Region { name: String::new(), start, len, file: None }
    }

    /// Touch `pages` distinct pages of 2 MB region `r` (of BASE).
    fn touch(h: &mut HawkEye, r: u64, pages: u64) {
        for p in 0..pages {
            h.on_reference(0, VirtAddr(BASE + r * MB2 + p * 4096), 1);
        }
    }

    fn tick(h: &mut HawkEye) -> Vec<u64> {
        let mut out = Vec::new();
        h.on_tick(&mut out);
        out.iter().map(|r| (r.va().0 - BASE) / MB2).collect()
    }

    /// Coverage counts distinct pages, not accesses; the first EMA is the coverage; then
    /// 0.9 old + 0.1 new; bucket = min(EMA / 50, 9); references while asleep do not count.
    #[test]
    fn coverage_ema_and_buckets() {
        let mut h = HawkEye::new(params(1000, 100), &[region(BASE, 4 * MB2)]);
        touch(&mut h, 0, 500); // 500 distinct pages
        touch(&mut h, 1, 10);
        touch(&mut h, 1, 10); // the same 10 again: coverage 10
        touch(&mut h, 2, 480); // 1000 references: the window ends
        touch(&mut h, 2, 1); // asleep
        assert_eq!(h.ema(BASE >> 21), Some((500.0, 9)));
        assert_eq!(h.ema((BASE >> 21) + 1), Some((10.0, 0)));
        assert_eq!(h.ema((BASE >> 21) + 2), Some((480.0, 9)));
        assert_eq!(h.ema((BASE >> 21) + 3), None);
        touch(&mut h, 3, 99); // asleep
        assert_eq!(h.phase, 0);
        // Next window: region 1 fully covered, region 0 not touched.
        touch(&mut h, 1, 512);
        touch(&mut h, 3, 488);
        assert_eq!(h.ema(BASE >> 21), Some((450.0, 9)));
        assert_eq!(h.ema((BASE >> 21) + 1), Some((0.9 * 10.0 + 0.1 * 512.0, 1)));
        assert_eq!(h.ema((BASE >> 21) + 3), Some((488.0, 9)));
        assert_eq!(h.counts().0, 2);
    }

    /// At most 8 promotions per window, from bucket 9 down, in the order regions entered
    /// their bucket; a region is asked for once; references outside the footprint are
    /// ignored.
    #[test]
    fn at_most_eight_per_interval_from_the_top_bucket() {
        let mut h = HawkEye::new(params(20 * 512, 0), &[region(BASE, 20 * MB2)]);
        // Regions 0..10 at coverage 100 (bucket 2), then 10..20 at 512 (bucket 9).
        for r in 0..10 {
            touch(&mut h, r, 100);
            h.on_reference(0, VirtAddr(0x10), 1); // not in the footprint
            for _ in 0..411 {
                h.on_reference(0, VirtAddr(BASE + r * MB2), 1);
            }
        }
        for r in 10..20 {
            touch(&mut h, r, 512);
        }
        assert_eq!(h.counts().0, 1);
        assert_eq!(tick(&mut h), (10..18).collect::<Vec<_>>());
        assert!(tick(&mut h).is_empty(), "the picks go to the OS once");
        // Next window: nothing touched; the EMAs decay (512 -> 460.8, still bucket 9; 100 ->
        // 90, bucket 1).
        for _ in 0..20 * 512 {
            h.on_reference(0, VirtAddr(0x10), 1);
        }
        assert_eq!(tick(&mut h), vec![18, 19, 0, 1, 2, 3, 4, 5]);
        assert_eq!(h.counts(), (2, 16));
    }

    /// The footprint cap: floor(footprint x cap) regions over the run.
    #[test]
    fn the_footprint_cap_applies() {
        let mut h = HawkEye::new(HawkEyeSpec { cap: 0.1, ..params(20 * 512, 0) }, &[region(BASE, 20 * MB2)]);
        assert_eq!(h.budget().limit, 2);
        for r in 0..20 {
            touch(&mut h, r, 512);
        }
        assert_eq!(tick(&mut h), vec![0, 1]);
        for r in 0..20 {
            touch(&mut h, r, 512);
        }
        assert!(tick(&mut h).is_empty());
    }

    /// Several workload regions map to one dense table, a shared 2 MB region once.
    #[test]
    fn regions_map_to_slots() {
        let mut h = HawkEye::new(params(10, 0), &[region(BASE + 10 * MB2, MB2), region(BASE, MB2 + 4096), region(BASE + MB2 + 8192, 4096)]);
        assert_eq!(h.slots.len(), 3);
        assert_eq!(h.slot((BASE >> 21) + 1), Some(1));
        assert_eq!(h.slot((BASE >> 21) + 10), Some(2));
        assert_eq!(h.slot((BASE >> 21) + 2), None);
        assert_eq!(h.tag_of(2), (BASE >> 21) + 10);
    }
}
