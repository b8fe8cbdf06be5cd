//! Dependent pointer chasing over one random cycle through all nodes (Sattolo's algorithm),
//! the classic latency microbenchmark: each load's address is the previous load's value.

use crate::params::{size, PDef, Params};
use crate::recorder::{interleave, static_split, Recorder};
use crate::rng::{derive, Rng};
use crate::vas::{Arr, Vas};
use crate::WorkloadError;

use super::KernelImpl;

pub const DESC: &str = "dependent pointer chasing over a random cyclic permutation (one node per cache line)";
pub const PARAMS: &[PDef] = &[
    size("footprint", "1G", "bytes of nodes"),
    size("node", "64", "node size in bytes (the next pointer is at its start); 8..4096"),
    size("loads", "32M", "number of dependent loads (split over threads)"),
];

/// `p = *p` plus amortised loop control.
const DELTA: u32 = 2;

pub struct Chase {
    vas: Vas,
    arr: Arr,
    n: u64,
    refs: u64,
    threads: usize,
    seed: u64,
    native: bool,
    /// The cycle in visiting order: node `perm[i]` points to `perm[i + 1]`.
    pub perm: Vec<u32>,
    /// The pointers themselves (`next[v]`), materialised for native runs only: a recorded
    /// run walks `perm` in order, which yields the same addresses without the host itself
    /// paying a cache miss per step.
    pub next: Vec<u32>,
}

impl KernelImpl for Chase {
    fn new(p: &Params, native: bool) -> Result<Self, WorkloadError> {
        let node = p.range("node", 8, 4096)?;
        let fp = p.range("footprint", 2 * node, node << 32)?;
        let n = fp / node;
        let mut vas = Vas::new();
        let arr = vas.array("nodes", n, node);
        Ok(Chase { vas, arr, n, refs: p.u64("loads"), threads: p.threads(), seed: p.seed(), native, perm: Vec::new(), next: Vec::new() })
    }
    fn vas(&self) -> &Vas {
        &self.vas
    }
    fn threads(&self) -> usize {
        self.threads
    }

    fn run<R: Recorder>(&mut self, rec: &mut R) -> u64 {
        let mut rng = Rng::new(derive(self.seed, 0xC4A5E));
        let n = self.n as usize;
        // Sattolo: a uniformly random permutation with exactly one cycle.
        let mut perm: Vec<u32> = (0..n as u32).collect();
        for i in (1..n).rev() {
            if i % (1 << 20) == 0 && rec.stopped() {
                return 0;
            }
            let j = rng.below(i as u64) as usize;
            perm.swap(i, j);
        }
        let ranges = static_split(self.refs, self.threads);
        let arr = self.arr;
        // Threads start at evenly spaced points of the cycle.
        let start: Vec<usize> = (0..self.threads).map(|t| t * n / self.threads).collect();
        let mut cur: Vec<u32> = start.iter().map(|&i| perm[i]).collect();
        if self.native {
            let mut next = vec![0u32; n];
            for i in 0..n {
                next[perm[i] as usize] = perm[(i + 1) % n];
            }
            drop(perm);
            self.next = next;
            rec.roi_begin();
            let next = &self.next;
            interleave(rec, &ranges, 1024, |rec, t, lo, hi| {
                let mut p = cur[t];
                for _ in lo..hi {
                    rec.load_dep(arr.at(p as u64), 8, DELTA);
                    p = next[p as usize];
                }
                cur[t] = p;
            });
        } else {
            self.perm = perm;
            rec.roi_begin();
            let perm = &self.perm;
            let mut pos = start;
            interleave(rec, &ranges, 1024, |rec, t, lo, hi| {
                let mut i = pos[t];
                for _ in lo..hi {
                    rec.load_dep(arr.at(perm[i] as u64), 8, DELTA);
                    i += 1;
                    if i == n {
                        i = 0;
                    }
                }
                pos[t] = i;
                cur[t] = perm[i];
            });
        }
        cur.iter().fold(0u64, |a, &p| a.wrapping_mul(1_000_003).wrapping_add(p as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::*;

    #[test]
    fn single_cycle_and_dependent_chain() {
        let (k, s, sum) = run_recorded::<Chase>("chase", PARAMS, "footprint=640K,loads=10000,threads=2");
        let n = k.n as usize;
        assert_eq!(n, 10240);
        // perm visits every node once; following it is the pointer chain.
        let mut seen = vec![false; n];
        for &p in &k.perm {
            assert!(!seen[p as usize]);
            seen[p as usize] = true;
        }
        let mut next = vec![0u32; n];
        for i in 0..n {
            next[k.perm[i] as usize] = k.perm[(i + 1) % n];
        }
        assert_in_regions(&k.vas, &s);
        for st in &s {
            assert_eq!(st.len(), 5000);
            for w in st.windows(2) {
                assert!(w[1].is_dependent());
                let a = (w[0].va - k.arr.base) / 64;
                assert_eq!(next[a as usize] as u64, (w[1].va - k.arr.base) / 64);
            }
        }
        // The native run chases real pointers and ends on the same nodes.
        let p = Params::resolve("chase", PARAMS, &[("footprint".into(), "640K".into()), ("loads".into(), "10000".into()), ("threads".into(), "2".into())], 1)
            .unwrap();
        let mut nk = Chase::new(&p, true).unwrap();
        let mut rec = crate::recorder::CountRecorder::new(0);
        assert_eq!(nk.run(&mut rec), sum);
        assert_eq!(rec.refs, 10000);
        let mut x = 0usize;
        for _ in 0..n {
            x = nk.next[x] as usize;
        }
        assert_eq!(x, 0, "one cycle through all nodes");
    }
}
