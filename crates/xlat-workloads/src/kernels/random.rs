//! Uniform random reads of 8-byte words over a large array: the "rand" microbenchmark of
//! the flattening paper (a stand-in for memcached-like and very large graph workloads).

use crate::params::{choice, size, PDef, Params};
use crate::recorder::{interleave, static_split, Recorder};
use crate::rng::{derive, Rng};
use crate::vas::{Arr, Vas};
use crate::WorkloadError;

use super::KernelImpl;

pub const DESC: &str = "uniform random 8-byte reads over a large array";
pub const PARAMS: &[PDef] = &[
    size("footprint", "8G", "array size in bytes (8-byte elements)"),
    size("reads", "32M", "number of reads (split over threads)"),
    choice("materialize", "auto", "keep the real array in host memory: auto = when <= 1 GiB, or always when running natively", &["auto", "yes", "no"]),
];

/// Instructions per read, the load included. The flattening paper's "rand" is not public: this
/// kernel's loop written in C (Vigna's xoshiro256++ step, Lemire's multiply-high range, the load
/// into a sum) compiles (gcc 12 -O3 -march=x86-64-v2) to 20: 14 for the generator, mov and mul for
/// the range, the add from memory, and add, cmp, jne. An estimate of the real program's loop.
const DELTA: u32 = 20;

pub struct Random {
    vas: Vas,
    arr: Arr,
    n: u64,
    refs: u64,
    materialize: bool,
    threads: usize,
    seed: u64,
}

impl KernelImpl for Random {
    fn new(p: &Params, native: bool) -> Result<Self, WorkloadError> {
        let fp = p.range("footprint", 8, 1 << 40)?;
        let n = fp / 8;
        let materialize = match p.str("materialize") {
            "yes" => true,
            "no" => false,
            _ => native || fp <= 1 << 30,
        };
        let mut vas = Vas::new();
        let arr = vas.array("array", n, 8);
        Ok(Random { vas, arr, n, refs: p.u64("reads"), materialize, threads: p.threads(), seed: p.seed() })
    }
    fn vas(&self) -> &Vas {
        &self.vas
    }
    fn threads(&self) -> usize {
        self.threads
    }

    fn host_bytes(&self) -> u64 {
        if self.materialize {
            self.vas.footprint()
        } else {
            0
        }
    }

    fn run<R: Recorder>(&mut self, rec: &mut R) -> u64 {
        // Content is a cheap function of the index so the sum checks real reads.
        let data: Vec<u64> = if self.materialize { (0..self.n).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect() } else { Vec::new() };
        rec.roi_begin();
        let mut rngs: Vec<Rng> = (0..self.threads).map(|t| Rng::new(derive(self.seed, t as u64))).collect();
        let ranges = static_split(self.refs, self.threads);
        let (arr, n) = (self.arr, self.n);
        let mut sum = 0u64;
        interleave(rec, &ranges, 4096, |rec, t, lo, hi| {
            let rng = &mut rngs[t];
            if data.is_empty() {
                for _ in lo..hi {
                    let i = rng.below(n);
                    rec.load(arr.at(i), 8, DELTA);
                    sum = sum.wrapping_add(i);
                }
            } else {
                for _ in lo..hi {
                    let i = rng.below(n);
                    rec.load(arr.at(i), 8, DELTA);
                    sum = sum.wrapping_add(data[i as usize]);
                }
            }
        });
        std::hint::black_box(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::*;

    /// A read is the C loop's 20 instructions (see [`DELTA`]).
    #[test]
    fn a_read_is_the_compiled_loops_20_instructions() {
        let (_, s, _) = run_recorded::<Random>("random", PARAMS, "footprint=64K,reads=1000");
        assert!(s[0].iter().all(|r| r.inst_delta == 20));
    }

    #[test]
    fn reads_are_uniform_and_sum_matches() {
        let (k, s, sum) = run_recorded::<Random>("random", PARAMS, "footprint=64K,reads=80000");
        assert_eq!(s[0].len(), 80000);
        assert_in_regions(&k.vas, &s);
        let mut hist = vec![0u32; 16];
        let mut expect = 0u64;
        for r in &s[0] {
            let i = (r.va - k.arr.base) / 8;
            expect = expect.wrapping_add(i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            hist[(i * 16 / k.n) as usize] += 1;
        }
        assert_eq!(sum, expect);
        for h in hist {
            assert!((4500..5500).contains(&h), "{h}");
        }
    }
}
