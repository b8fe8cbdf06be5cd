//! How fast can the memory side of a GUPS reference be simulated at all on this host? A
//! lower-bound experiment for the engine's throughput target, not part of the engine:
//! `cargo run --release -p xlat-core --example floor -- [refs]`.
//!
//! It runs the accesses of the `skylake` preset's memory side for GUPS over 8 GB through
//! the leanest exact model we could write: three LRU caches (L1D 32 KB 8-way, L2 256 KB
//! 4-way, LLC 16 MB 16-way; non-inclusive fills and write-backs as `Machine::access` does
//! them) kept as bare key arrays, a dirty mask and the engine's order word
//! (`repl::Order`), no statistics beyond where each access was served, no line kinds or
//! owners, no record decoding, LLC sets prefetched ahead. Then the same again with the
//! engine's timing window (`timing::Window`: dispatch, walkers, MSHRs, completion).
//!
//! The stream is synthetic but calibrated to the engine's own GUPS run (`speed` example):
//! per load+store pair, the load walks (its L3 entry read when the 4-entry L3 PWC misses, half
//! the time, then the L2 entry and the leaf) and the store walks again 80 % of the time to
//! set the dirty bit (only the leaf: the L2 PWC hits). That gives the engine's 2.65 cache
//! accesses per reference and its mix of where they are served (about 49 % L1, 12 % L2, 9 %
//! LLC, 30 % DRAM), which the run prints.
use std::time::Instant;
use xlat_core::repl::Order;
use xlat_core::timing::Window;

/// One LRU cache: `W` ways per set.
struct Lean<const W: usize> {
    keys: Vec<[u64; W]>,
    order: Vec<u64>,
    dirty: Vec<u32>,
    geometry: Order,
    mask: usize,
}

impl<const W: usize> Lean<W> {
    fn new(sets: usize) -> Self {
        let geometry = Order::new(W);
        Lean { keys: vec![[u64::MAX; W]; sets], order: vec![geometry.empty(); sets], dirty: vec![0; sets], geometry, mask: sets - 1 }
    }

    #[inline(always)]
    fn find(&self, set: usize, line: u64) -> Option<usize> {
        let keys = &self.keys[set];
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of x86-64; W is even, so the loads stay inside the set.
        unsafe {
            use std::arch::x86_64::*;
            let (p, k) = (keys.as_ptr() as *const __m128i, _mm_set1_epi64x(line as i64));
            let mut m = 0u32;
            for i in 0..W / 2 {
                let e = _mm_cmpeq_epi32(_mm_loadu_si128(p.add(i)), k);
                let e = _mm_and_si128(e, _mm_shuffle_epi32(e, 0xB1));
                m |= (_mm_movemask_pd(_mm_castsi128_pd(e)) as u32) << (2 * i);
            }
            (m != 0).then(|| m.trailing_zeros() as usize)
        }
        #[cfg(not(target_arch = "x86_64"))]
        keys.iter().position(|&k| k == line)
    }

    /// A demand access: whether it hit (a hit that writes marks the line dirty).
    #[inline(always)]
    fn access(&mut self, line: u64, write: bool) -> bool {
        let set = line as usize & self.mask;
        let Some(way) = self.find(set, line) else { return false };
        self.order[set] = Order::promote(self.order[set], way);
        self.dirty[set] |= (write as u32) << way;
        true
    }

    /// Install an absent line; returns the victim and whether it was dirty.
    #[inline(always)]
    fn fill(&mut self, line: u64, dirty: bool) -> Option<(u64, bool)> {
        let set = line as usize & self.mask;
        let o = self.order[set];
        let way = self.geometry.victim(o);
        self.order[set] = self.geometry.refill(o, way);
        let old = std::mem::replace(&mut self.keys[set][way], line);
        let was_dirty = self.dirty[set] >> way & 1 != 0;
        self.dirty[set] = self.dirty[set] & !(1 << way) | (dirty as u32) << way;
        (old != u64::MAX).then_some((old, was_dirty))
    }

    /// A write-back from the level above: mark dirty, installing the line if absent.
    #[inline(always)]
    fn write_back(&mut self, line: u64) -> Option<(u64, bool)> {
        let set = line as usize & self.mask;
        match self.find(set, line) {
            Some(way) => {
                self.dirty[set] |= 1 << way;
                None
            }
            None => self.fill(line, true),
        }
    }

    fn prefetch(&self, line: u64) {
        let set = line as usize & self.mask;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: prefetching is a hint and never faults.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let p = self.keys.as_ptr().add(set) as *const i8;
            _mm_prefetch(p, _MM_HINT_T0);
            _mm_prefetch(p.wrapping_add(64), _MM_HINT_T0);
            _mm_prefetch(self.order.as_ptr().add(set) as *const i8, _MM_HINT_T0);
            _mm_prefetch(self.dirty.as_ptr().add(set) as *const i8, _MM_HINT_T0);
        }
    }
}

/// Where accesses were served: L1, L2, LLC, DRAM.
struct Hierarchy {
    l1: Lean<8>,
    l2: Lean<4>,
    llc: Lean<16>,
    served: [u64; 4],
    dram_writes: u64,
}

/// Latencies of the `skylake` preset, in cycles (DRAM: 100 ns at 2 GHz).
const LAT: [u64; 4] = [4, 12, 42, 42 + 200];

impl Hierarchy {
    /// One access; returns where it was served (index into `LAT`).
    #[inline(always)]
    fn access(&mut self, line: u64, write: bool) -> usize {
        if self.l1.access(line, write) {
            self.served[0] += 1;
            return 0;
        }
        let served = if self.l2.access(line, false) {
            1
        } else if self.llc.access(line, false) {
            2
        } else {
            if let Some((_, true)) = self.llc.fill(line, false) {
                self.dram_writes += 1;
            }
            3
        };
        self.served[served] += 1;
        if served != 1 {
            if let Some((v, true)) = self.l2.fill(line, false) {
                if let Some((_, true)) = self.llc.write_back(v) {
                    self.dram_writes += 1;
                }
            }
        }
        if let Some((v, true)) = self.l1.fill(line, write) {
            if let Some((w, true)) = self.l2.write_back(v) {
                if let Some((_, true)) = self.llc.write_back(w) {
                    self.dram_writes += 1;
                }
            }
        }
        served
    }
}

/// One step of the stream: a reference's walk reads (`pte`), or its data access.
#[derive(Clone, Copy)]
enum Step {
    /// A reference that walks starts (its dispatch).
    Walk,
    Pte(u64),
    /// The data access; `bool`: a store.
    Data(u64, bool),
    /// A reference the TLB translates (dispatch and data access).
    Hit(u64, bool),
}

fn line_of(s: Step) -> Option<u64> {
    match s {
        Step::Pte(l) | Step::Data(l, _) | Step::Hit(l, _) => Some(l),
        Step::Walk => None,
    }
}

fn stream(refs: u64) -> Vec<Step> {
    // Line numbers: one L3-entry line, 512 lines of L2 entries, 256 K lines of leaf entries
    // (16 MB for 2 M pages), then 8 GB of data.
    let (l3, l2, leaf, data) = (1u64 << 30, (1u64 << 30) + 1, (1u64 << 30) + 1024, 1u64 << 36);
    let mut x = 88172645463325252u64;
    let mut out = Vec::with_capacity(refs as usize * 4);
    for _ in 0..refs / 2 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let word = x & ((1 << 30) - 1);
        let page = word >> 9;
        let r = x >> 32;
        out.push(Step::Walk);
        if r & 1 == 0 {
            out.push(Step::Pte(l3));
        }
        out.push(Step::Pte(l2 + (page >> 9) / 8));
        out.push(Step::Pte(leaf + page / 8));
        out.push(Step::Data(data + (word >> 3), false));
        if (r >> 8) % 10 < 8 {
            out.push(Step::Walk);
            out.push(Step::Pte(leaf + page / 8));
            out.push(Step::Data(data + (word >> 3), true));
        } else {
            out.push(Step::Hit(data + (word >> 3), true));
        }
    }
    out
}

fn run(steps: &[Step], timing: bool) -> (f64, Hierarchy, u64) {
    let mut h = Hierarchy { l1: Lean::new(64), l2: Lean::new(1024), llc: Lean::new(16384), served: [0; 4], dram_writes: 0 };
    let mut w = Window::new(4, 224, 10, 2);
    let (mut issue, mut lat) = (0u64, 0u64);
    let t0 = Instant::now();
    for (i, &s) in steps.iter().enumerate() {
        if let Some(l) = steps.get(i + 8).copied().and_then(line_of) {
            h.llc.prefetch(l);
        }
        match s {
            Step::Walk => {
                if timing {
                    issue = w.dispatch(4, false) + 9;
                }
                lat = 1;
            }
            Step::Pte(l) => lat += LAT[h.access(l, false)],
            Step::Data(l, write) | Step::Hit(l, write) => {
                let served = h.access(l, write);
                if timing {
                    let t = if let Step::Hit(..) = s {
                        issue = w.dispatch(4, false);
                        issue
                    } else {
                        w.walkers.acquire(issue, lat) + lat
                    };
                    let start = if served == 0 { t } else { w.mshrs.acquire(t, LAT[served]) };
                    w.complete(if write { t + 1 } else { start + LAT[served] });
                }
            }
        }
    }
    (t0.elapsed().as_secs_f64(), h, w.cycles())
}

fn main() {
    let refs: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(20_000_000);
    let steps = stream(refs);
    for timing in [false, true] {
        // Best of three: the host is shared.
        let (mut best, mut last) = (f64::MAX, None);
        for _ in 0..3 {
            let (dt, h, cycles) = run(&steps, timing);
            best = best.min(dt);
            last = Some((h, cycles));
        }
        let (h, cycles) = last.expect("three runs");
        let total: u64 = h.served.iter().sum();
        let pct = |i: usize| 100.0 * h.served[i] as f64 / total as f64;
        println!(
            "{}: {refs} refs in {best:.3} s = {:.1} ns/ref ({:.1} M refs/s); {:.2} accesses/ref served L1 {:.0} % L2 {:.0} % LLC {:.0} % DRAM {:.0} %; {} DRAM writes{}",
            if timing { "caches + timing" } else { "caches only    " },
            best * 1e9 / refs as f64,
            refs as f64 / best / 1e6,
            total as f64 / refs as f64,
            pct(0),
            pct(1),
            pct(2),
            pct(3),
            h.dram_writes,
            if timing { format!("; {cycles} cycles") } else { String::new() }
        );
    }
}
