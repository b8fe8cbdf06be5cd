//! The TLB-thrash microbenchmark of PT-Baker (Algorithm 5): touch the first byte of every
//! `step`-th page of an array, cyclically. Sweeping the array's size in pages shows each TLB
//! level's reach as a knee in its misses: on Zen 3 the L1 DTLB thrashes past 64 pages and the L2
//! DTLB past about 2048.
//!
//! With several threads, each runs the whole loop over the same array (the thesis's SMT
//! sharing test: two threads touching one shared array). With `prefetch` pages, the array has
//! that many more, and each iteration also prefetches the next of them, cyclically (the
//! thesis's Fig. 4.3: if prefetches start walks, their translations evict the loads' from the
//! TLBs, and the loads miss more).

use crate::params::{size, PDef, Params};
use crate::recorder::{interleave, Recorder};
use crate::vas::{Arr, Vas};
use crate::WorkloadError;

use super::KernelImpl;

pub const DESC: &str = "PT-Baker's TLB-thrash loop: one load per step-th page of an array, cyclically (sweep pages for TLB reach)";
pub const PARAMS: &[PDef] = &[
    size("pages", "2112", "array size in 4 KB pages"),
    size("step", "1", "pages between touches (the algorithm's page_step)"),
    size("touches", "1M", "loads per thread (the algorithm's N)"),
    size("prefetch", "0", "pages past the loaded ones, one software prefetch of them per load, cyclically (0: none)"),
];

/// `tmp = A[idx % size]; idx += step` and the loop: load, add, compare, branch.
const DELTA: u32 = 4;
const PAGE: u64 = 4096;

pub struct Thrash {
    vas: Vas,
    arr: Arr,
    pages: u64,
    step: u64,
    touches: u64,
    prefetch: u64,
    threads: usize,
}

impl KernelImpl for Thrash {
    fn new(p: &Params, _native: bool) -> Result<Self, WorkloadError> {
        let pages = p.range("pages", 1, 1 << 28)?;
        let step = p.range("step", 1, pages)?;
        let prefetch = p.range("prefetch", 0, 1 << 28)?;
        let mut vas = Vas::new();
        let arr = vas.array("array", pages + prefetch, PAGE);
        Ok(Thrash { vas, arr, pages, step, touches: p.u64("touches"), prefetch, threads: p.threads() })
    }
    fn vas(&self) -> &Vas {
        &self.vas
    }
    fn threads(&self) -> usize {
        self.threads
    }

    fn run<R: Recorder>(&mut self, rec: &mut R) -> u64 {
        rec.roi_begin();
        let (arr, pages, step, prefetch) = (self.arr, self.pages, self.step, self.prefetch);
        // Every thread runs the whole loop from page 0.
        let ranges = vec![(0, self.touches); self.threads];
        let mut idx = vec![0u64; self.threads];
        let mut pidx = vec![0u64; self.threads];
        let mut sum = 0u64;
        interleave(rec, &ranges, 1024, |rec, t, lo, hi| {
            for _ in lo..hi {
                rec.load(arr.at(idx[t]), 1, DELTA);
                sum = sum.wrapping_add(idx[t]);
                idx[t] = (idx[t] + step) % pages;
                if prefetch > 0 {
                    // (The prefetch and its index's increment.)
                    rec.prefetch(arr.at(pages + pidx[t]), 2);
                    pidx[t] = (pidx[t] + step) % prefetch;
                }
            }
        });
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::*;

    #[test]
    fn touches_the_first_byte_of_every_step_th_page_cyclically() {
        let (k, s, _) = run_recorded::<Thrash>("tlbthrash", PARAMS, "pages=10,step=3,touches=12");
        assert_in_regions(&k.vas, &s);
        let pages: Vec<u64> = s[0].iter().map(|r| (r.va - k.arr.base) / PAGE).collect();
        // idx = 0, 3, 6, 9, then wraps modulo 10: 2, 5, 8, 1, 4, 7, 0, 3.
        assert_eq!(pages, [0, 3, 6, 9, 2, 5, 8, 1, 4, 7, 0, 3]);
        assert!(s[0].iter().all(|r| r.va % PAGE == 0));
        // Two threads: each its own whole loop over the same array.
        let (_, s, _) = run_recorded::<Thrash>("tlbthrash", PARAMS, "pages=4,touches=6,threads=2");
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].iter().map(|r| r.va).collect::<Vec<_>>(), s[1].iter().map(|r| r.va).collect::<Vec<_>>());
        // Prefetches of the pages past the loaded ones, one after each load.
        let (k, s, _) = run_recorded::<Thrash>("tlbthrash", PARAMS, "pages=3,prefetch=2,touches=4");
        let got: Vec<(u64, xlat_core::RefKind)> = s[0].iter().map(|r| ((r.va - k.arr.base) / PAGE, r.kind())).collect();
        use xlat_core::RefKind::{Load, Prefetch};
        assert_eq!(got, [(0, Load), (3, Prefetch), (1, Load), (4, Prefetch), (2, Load), (3, Prefetch), (0, Load), (4, Prefetch)]);
    }
}
