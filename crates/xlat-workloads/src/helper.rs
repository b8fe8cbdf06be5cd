//! Helper threads: one more stream beside a program's own, in the same address space, that
//! touches every `step`-th page of the program's regions, cyclically, for as long as the
//! program runs: PT-Baker's helper, which keeps the program's page-table entries in the
//! shared cache so that its walks hit there. `touch` mode loads a byte of each page (a
//! user-space helper: it misses its own TLB and walks, bringing the entries in); `prefetch`
//! mode prefetches it instead (it waits for no data, and walks where prefetches do); `pte` mode
//! reads only the page's page-table entries, as a software walk in the kernel does (an OS
//! call, see `xlat_core::os::OsOp::ReadPtes`).
//!
//! The helper runs on its own core, paced by the simulated clock like any core: the engine
//! advances the core with the smallest clock, so the helper's rate follows its own IPC. A
//! touch costs its loop's compiled instructions ([`USER_LOOP`], [`KERNEL_LOOP`]), `idle` NOPs
//! more throttle it, a `sleep` of that many cycles after each
//! pass pauses it (an OS call: its core idles). With `ahead` pages it follows the program's first thread instead (PT-Baker's
//! run-ahead): it touches the `ahead` pages beyond the page that thread last referenced
//! (which the engine reports, [`RefSource::observe`]), and spins on its last page when it is
//! that far ahead. It ends when every stream of the program has ended.

use xlat_core::os::OsOp;
use xlat_core::{Program, Ref, RefSource, Region, SourceError};

const PAGE: u64 = 4096;

/// Instructions per touch of the user-level helper's loop, its load or prefetch included, with
/// no NOPs: Algorithm 2 (seeds/000 §2.2) compiled without optimisation, as §4.2 builds it (gcc
/// 12 -O0, x86-64: the `use_prefetch` test and branch, the address from `i` and the base on the
/// stack, the load and its store to `tmp` or the prefetch and a jump, `i += stride` in memory,
/// and its compare and branch: 13 either way). Each NOP adds one.
pub const USER_LOOP: u32 = 13;
/// The same for the kernel-level helper's leaf loop (Algorithm 3, §2.3) at the kernel's -O2
/// (gcc 12 -O2: the pointer's NULL test and branch, the PTE's load, the end compare and
/// branch, two adds): 7.
pub const KERNEL_LOOP: u32 = 7;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HelperMode {
    Touch,
    Prefetch,
    Pte,
}

pub struct HelperSource {
    inner: Box<dyn RefSource>,
    regions: Vec<Region>,
    step: u64,
    idle: u32,
    sleep: u32,
    mode: HelperMode,
    /// The next page: its region and its offset in it.
    region: usize,
    offset: u64,
    /// The first touch of a pass (after the first) carries the sleep.
    wrapped: bool,
    ended: Vec<bool>,
    /// Run-ahead pacing: pages beyond the first thread's position (0: cyclic passes), that
    /// position, and the next page to touch.
    ahead: u64,
    main_va: u64,
    next: u64,
    /// The helper's stream (its hardware context); the streams between the program's and it
    /// are idle contexts.
    at: usize,
}

/// Touches per batch when paced: the first thread's position is re-read this often.
const PACED_BATCH: usize = 64;

impl HelperSource {
    /// `inner` plus a helper stream (its last) touching every `step`-th page (`step` >= 1) of
    /// `inner`'s regions.
    pub fn new(inner: Box<dyn RefSource>, step: u64, idle: u32, sleep: u32, mode: HelperMode) -> HelperSource {
        let regions: Vec<Region> = inner.regions().into_iter().filter(|r| r.len > 0).collect();
        let n = inner.streams();
        let start = regions.first().map_or(0, |r| r.start);
        HelperSource {
            inner,
            regions,
            step: step.max(1),
            idle,
            sleep,
            mode,
            region: 0,
            offset: 0,
            wrapped: false,
            ended: vec![false; n],
            ahead: 0,
            main_va: start,
            next: start,
            at: n,
        }
    }

    /// Sweep only the largest of the program's regions (the thesis sweeps the one region that
    /// causes most TLB misses).
    pub fn largest_region(mut self) -> HelperSource {
        if let Some(r) = self.regions.iter().max_by_key(|r| r.len).cloned() {
            (self.main_va, self.next) = (r.start, r.start);
            self.regions = vec![r];
        }
        self
    }

    /// Run on stream `at` (at least the program's stream count) instead of the one after the
    /// program's: the contexts between are left idle.
    pub fn at(mut self, at: usize) -> HelperSource {
        self.at = at.max(self.ended.len());
        self
    }

    /// Follow the program's first thread `ahead` pages ahead instead of passing over the
    /// regions (0: do not).
    pub fn with_ahead(mut self, ahead: u64) -> HelperSource {
        self.ahead = ahead;
        self
    }

    /// Instructions from one touch to the next: the loop's and the NOPs'.
    fn delta(&self) -> u32 {
        let body = if self.mode == HelperMode::Pte { KERNEL_LOOP } else { USER_LOOP };
        self.idle.saturating_add(body)
    }

    fn touch(&self, va: u64, delta: u32) -> Ref {
        match self.mode {
            HelperMode::Touch => Ref::load(va, delta),
            HelperMode::Prefetch => Ref::prefetch(va, delta),
            HelperMode::Pte => Ref::os_call(OsOp::ReadPtes, va, 1, delta),
        }
    }

    /// Run-ahead touches: the pages from `ahead` to `2 x ahead` beyond the first thread's
    /// page, within its region, every `step`-th; past them, a spin on the last one.
    fn paced_batch(&mut self, out: &mut Vec<Ref>) {
        let page = self.main_va & !(PAGE - 1);
        let end = self.regions.iter().find(|r| r.start <= page && page < r.end()).map_or(u64::MAX, |r| r.end());
        let lo = page.saturating_add(self.ahead * PAGE).min(end);
        let hi = page.saturating_add(2 * self.ahead * PAGE).min(end);
        if self.next < lo || self.next > hi.saturating_add(self.step * PAGE) {
            self.next = lo;
        }
        let delta = self.delta();
        for _ in 0..out.capacity().clamp(1, PACED_BATCH) {
            if self.next < hi {
                out.push(self.touch(self.next, delta));
                self.next += self.step * PAGE;
            } else {
                // (Far enough ahead: spin on the last page touched, an L1 hit.)
                out.push(Ref::load(hi.saturating_sub(PAGE).max(lo.min(page)), delta));
            }
        }
    }

    fn helper_batch(&mut self, out: &mut Vec<Ref>) {
        out.clear();
        if self.regions.is_empty() || self.ended.iter().all(|&e| e) {
            return;
        }
        if self.ahead > 0 {
            return self.paced_batch(out);
        }
        let n = out.capacity().max(2);
        while out.len() + 1 < n {
            let r = &self.regions[self.region];
            let va = r.start + self.offset;
            let delta = self.delta();
            if std::mem::take(&mut self.wrapped) && self.sleep > 0 {
                out.push(Ref::os_call(OsOp::Sleep, self.sleep as u64, 1, 1));
            }
            out.push(self.touch(va, delta));
            self.offset += self.step * PAGE;
            if self.offset >= r.len {
                self.offset = 0;
                self.region += 1;
                if self.region == self.regions.len() {
                    self.region = 0;
                    self.wrapped = true;
                }
            }
        }
    }
}

impl RefSource for HelperSource {
    fn streams(&self) -> usize {
        self.at + 1
    }

    fn regions(&self) -> Vec<Region> {
        self.inner.regions()
    }

    fn paced(&self) -> bool {
        self.ahead > 0
    }

    fn counted(&self, stream: usize) -> bool {
        // (The run measures the program's work, not the helper's.)
        stream < self.ended.len() && self.inner.counted(stream)
    }

    fn helper(&self) -> Option<xlat_core::Helper> {
        let span = self.step * PAGE;
        let pass = if self.ahead > 0 { 0 } else { self.regions.iter().map(|r| r.len.div_ceil(span)).sum() };
        Some(xlat_core::Helper { stream: self.at, pass })
    }

    fn observe(&mut self, stream: usize, va: u64) {
        if stream == 0 {
            self.main_va = va;
        }
    }

    fn programs(&self) -> Vec<Program> {
        // (One program: the helper is a thread of it, in its address space.)
        vec![Program { name: String::new(), regions: self.inner.regions(), streams: (0..self.ended.len()).chain([self.at]).collect(), slot: 0 }]
    }

    fn next_batch(&mut self, stream: usize, out: &mut Vec<Ref>) -> Result<(), SourceError> {
        if stream < self.ended.len() {
            self.inner.next_batch(stream, out)?;
            if out.is_empty() {
                self.ended[stream] = true;
            }
            return Ok(());
        }
        if stream == self.at {
            self.helper_batch(out);
        } else {
            out.clear(); // an idle context between the program's and the helper's
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xlat_core::VecSource;

    fn main_stream(n: usize) -> Box<dyn RefSource> {
        let regions = vec![
            Region { name: "a".into(), start: 0x10_0000, len: 10 * PAGE, file: None },
            Region { name: "b".into(), start: 0x80_0000, len: 3 * PAGE, file: None },
        ];
        Box::new(VecSource::new(vec![(0..n).map(|i| Ref::load(0x10_0000 + i as u64 * 8, 1)).collect()], regions))
    }

    #[test]
    fn the_helper_walks_every_step_th_page_cyclically_and_ends_with_the_program() {
        let mut h = HelperSource::new(main_stream(5), 4, 2, 100, HelperMode::Touch);
        assert_eq!(h.streams(), 2);
        assert_eq!(h.programs()[0].streams, vec![0, 1]);
        let mut out = Vec::with_capacity(7);
        h.next_batch(1, &mut out).unwrap();
        let pages: Vec<u64> = out.iter().map(|r| r.va).collect();
        // Region a: pages 0, 4, 8; region b: page 0; a sleep of 100 cycles; then a again.
        assert_eq!(pages, [0x10_0000, 0x10_4000, 0x10_8000, 0x80_0000, 100, 0x10_0000]);
        let d = 2 + USER_LOOP;
        assert_eq!(out.iter().map(|r| r.inst_delta).collect::<Vec<_>>(), [d, d, d, d, 1, d], "the loop's instructions and two NOPs a touch");
        assert!(out[4].is_os_call() && out[4].size == OsOp::Sleep as u8 && out[4].va == 100, "the sleep between passes");
        // The program's stream runs out: the helper stops.
        let mut main = Vec::with_capacity(16);
        h.next_batch(0, &mut main).unwrap();
        assert_eq!(main.len(), 5);
        h.next_batch(1, &mut out).unwrap();
        assert!(!out.is_empty(), "the program has not said it ended yet");
        h.next_batch(0, &mut main).unwrap();
        assert!(main.is_empty());
        h.next_batch(1, &mut out).unwrap();
        assert!(out.is_empty());
    }

    #[test]
    fn a_paced_helper_stays_ahead_of_the_first_thread() {
        let mut h = HelperSource::new(main_stream(1), 1, 0, 0, HelperMode::Touch).with_ahead(3);
        assert!(h.paced());
        h.observe(0, 0x10_1008);
        let mut out = Vec::with_capacity(8);
        h.next_batch(1, &mut out).unwrap();
        // Pages 4, 5, 6 of region a (3 to 6 beyond page 1), then spinning on page 6.
        let pages: Vec<u64> = out.iter().map(|r| (r.va - 0x10_0000) / PAGE).collect();
        assert_eq!(pages, [4, 5, 6, 6, 6, 6, 6, 6]);
        // The thread moves on: so does the helper.
        h.observe(0, 0x10_5000);
        h.next_batch(1, &mut out).unwrap();
        assert_eq!(out.iter().map(|r| (r.va - 0x10_0000) / PAGE).collect::<Vec<_>>(), [8, 9, 9, 9, 9, 9, 9, 9], "up to the region's end");
    }

    #[test]
    fn the_helper_may_sweep_the_largest_region_from_a_context_further_on() {
        let mut h = HelperSource::new(main_stream(1), 4, 0, 0, HelperMode::Touch).largest_region().at(2);
        assert_eq!(h.streams(), 3);
        assert_eq!(h.programs()[0].streams, vec![0, 2], "context 1 is idle");
        let mut out = Vec::with_capacity(4);
        h.next_batch(1, &mut out).unwrap();
        assert!(out.is_empty());
        h.next_batch(2, &mut out).unwrap();
        // Region a only (10 pages): pages 0, 4, 8, then 0 again.
        assert_eq!(out.iter().map(|r| (r.va - 0x10_0000) / PAGE).collect::<Vec<_>>(), [0, 4, 8]);
        h.next_batch(2, &mut out).unwrap();
        assert_eq!((out[0].va - 0x10_0000) / PAGE, 0);
    }

    #[test]
    fn a_kernel_helper_reads_page_table_entries_only() {
        let mut h = HelperSource::new(main_stream(1), 1, 0, 0, HelperMode::Pte);
        let mut out = Vec::with_capacity(2);
        h.next_batch(1, &mut out).unwrap();
        assert!(out.iter().all(|r| r.is_os_call() && r.size == OsOp::ReadPtes as u8 && r.pages() == 1));
        assert!(out.iter().all(|r| r.inst_delta == KERNEL_LOOP), "the leaf loop's instructions, no NOPs");
    }
}
