//! STREAM triad, `a[j] = b[j] + scalar * c[j]`, over three double arrays, scalar
//! (unvectorised) code: two 8-byte loads and one 8-byte store per element.

use crate::params::{float, size, PDef, Params};
use crate::recorder::{interleave, static_split, Recorder};
use crate::vas::{Arr, Vas};
use crate::WorkloadError;

use super::KernelImpl;

pub const DESC: &str = "STREAM triad a = b + s*c over three double arrays";
pub const PARAMS: &[PDef] = &[
    size("n", "4M", "elements per array (3 arrays of 8-byte doubles)"),
    size("iters", "3", "passes of the triad"),
    float("scalar", "3.0", "the triad's scalar"),
];

pub struct Stream {
    vas: Vas,
    arrs: [Arr; 3],
    n: u64,
    iters: u64,
    scalar: f64,
    threads: usize,
    pub a: Vec<f64>,
    pub b: Vec<f64>,
    pub c: Vec<f64>,
}

impl KernelImpl for Stream {
    fn new(p: &Params, _native: bool) -> Result<Self, WorkloadError> {
        let n = p.range("n", 1, 1 << 34)?;
        let mut vas = Vas::new();
        let arrs = [vas.array("a", n, 8), vas.array("b", n, 8), vas.array("c", n, 8)];
        Ok(Stream { vas, arrs, n, iters: p.u64("iters"), scalar: p.f64("scalar"), threads: p.threads(), a: Vec::new(), b: Vec::new(), c: Vec::new() })
    }
    fn vas(&self) -> &Vas {
        &self.vas
    }
    fn threads(&self) -> usize {
        self.threads
    }

    fn run<R: Recorder>(&mut self, rec: &mut R) -> u64 {
        let n = self.n as usize;
        self.a = vec![1.0; n];
        self.b = (0..n).map(|j| 2.0 + (j % 7) as f64).collect();
        self.c = (0..n).map(|j| (j % 13) as f64 * 0.5).collect();
        rec.roi_begin();
        let [aa, ba, ca] = self.arrs;
        let s = self.scalar;
        let ranges = static_split(self.n, self.threads);
        let (a, b, c) = (&mut self.a, &self.b, &self.c);
        for _ in 0..self.iters {
            interleave(rec, &ranges, 2048, |rec, _t, lo, hi| {
                for j in lo..hi {
                    rec.load(ba.at(j), 8, 3);
                    rec.load(ca.at(j), 8, 1);
                    rec.store(aa.at(j), 8, 3);
                    let j = j as usize;
                    a[j] = b[j] + s * c[j];
                }
            });
            if rec.stopped() {
                break;
            }
        }
        a.iter().fold(0u64, |h, x| h.wrapping_mul(31).wrapping_add(x.to_bits()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::*;

    #[test]
    fn triad_is_correct() {
        let (k, s, _) = run_recorded::<Stream>("stream", PARAMS, "n=10000,iters=2,threads=2,scalar=2.5");
        for j in 0..10000 {
            assert_eq!(k.a[j], k.b[j] + 2.5 * k.c[j]);
        }
        assert_eq!(s[0].len() + s[1].len(), 2 * 3 * 10000);
        assert_in_regions(&k.vas, &s);
        // Thread 1 starts at element 5000 of b.
        assert_eq!(s[1][0].va, k.arrs[1].at(5000));
    }
}
