//! HPCC RandomAccess (GUPS): `Table[ran & (TableSize-1)] ^= ran` with HPCC's 64-bit LFSR
//! stream, split into 128 independent lanes started with `HPCC_starts`, as in the
//! reference sequential/OpenMP code. Seed 1 (the default) is HPCC's own run; seed `s`
//! replays the window of the same LFSR sequence that starts `(s - 1) x updates` values
//! later, so seeds give independent update streams of identical statistics.

use crate::params::{choice, size, PDef, Params};
use crate::recorder::{interleave, Recorder};
use crate::rng::hpcc;
use crate::vas::{Arr, Vas};
use crate::WorkloadError;

use super::KernelImpl;

pub const DESC: &str = "HPCC RandomAccess (GUPS): XOR updates to random 8-byte words of a power-of-two table";
pub const PARAMS: &[PDef] = &[
    size("footprint", "8G", "table size in bytes (rounded down to a power of two; 8-byte entries)"),
    size("updates", "16M", "number of updates (0 = HPCC's 4 x table entries)"),
    choice("materialize", "auto", "keep the real table in host memory: auto = when <= 1 GiB, or always when running natively", &["auto", "yes", "no"]),
];

const LANES: usize = 128;
/// Instructions per update, the table's load included: HPCC's loop (core_single_cpu.c,
/// RandomAccessUpdate) compiles (gcc 12 -O3 -march=x86-64-v2) to 13 a lane: load `ran[j]`, the
/// LFSR step (lea, mov, xor, test, cmovs), the mask (mov, and), store `ran[j]`, `xor [mem], reg`
/// into the table, and add, cmp, jne (`ran[]` is 1 KiB of stack: not recorded); the lane loop
/// around it adds 4 per 128 updates. The store is the same `xor [mem], reg` (delta 0).
const DELTA: u32 = 13;

pub struct Gups {
    vas: Vas,
    table_arr: Arr,
    entries: u64,
    updates: u64,
    materialize: bool,
    threads: usize,
    /// Position in HPCC's sequence where lane 0 starts (0 for seed 1).
    start: i64,
    pub table: Vec<u64>,
}

impl KernelImpl for Gups {
    fn new(p: &Params, native: bool) -> Result<Self, WorkloadError> {
        let fp = p.range("footprint", 4096, 1 << 40)?;
        let entries = 1u64 << (63 - (fp / 8).leading_zeros());
        let mut updates = p.u64("updates");
        if updates == 0 {
            updates = 4 * entries;
        }
        updates = (updates / LANES as u64).max(1) * LANES as u64;
        let materialize = match p.str("materialize") {
            "yes" => true,
            "no" => false,
            _ => native || entries * 8 <= 1 << 30,
        };
        let mut vas = Vas::new();
        let table_arr = vas.array("table", entries, 8);
        let threads = p.threads().min(LANES);
        // Reduced modulo the LFSR's period by HPCC_starts.
        let start = (p.seed().wrapping_sub(1).wrapping_mul(updates) % hpcc::PERIOD as u64) as i64;
        Ok(Gups { vas, table_arr, entries, updates, materialize, threads, start, table: Vec::new() })
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
        if self.materialize {
            self.table = (0..self.entries).collect();
        }
        rec.roi_begin();
        let iters = self.updates / LANES as u64;
        let mut ran: Vec<u64> = (0..LANES).map(|j| self.lane_start(iters, j)).collect();
        // Threads own contiguous groups of lanes (the OpenMP code parallelises the lane loop).
        let lane_split: Vec<(usize, usize)> =
            crate::recorder::static_split(LANES as u64, self.threads).into_iter().map(|(a, b)| (a as usize, b as usize)).collect();
        let ranges: Vec<(u64, u64)> = (0..self.threads).map(|_| (0, iters)).collect();
        let mask = self.entries - 1;
        let arr = self.table_arr;
        let mut digest = 0u64;
        let table = &mut self.table;
        let mat = self.materialize;
        interleave(rec, &ranges, 256, |rec, t, lo, hi| {
            let (l0, l1) = lane_split[t];
            let lanes = &mut ran[l0..l1];
            for _ in lo..hi {
                for r in lanes.iter_mut() {
                    let v = hpcc::step(*r);
                    *r = v;
                    let idx = v & mask;
                    rec.load(arr.at(idx), 8, DELTA);
                    rec.store(arr.at(idx), 8, 0);
                    if mat {
                        table[idx as usize] ^= v;
                    } else {
                        digest ^= v;
                    }
                }
            }
        });
        if mat {
            table.iter().fold(0u64, |a, &x| a.wrapping_mul(31).wrapping_add(x))
        } else {
            digest
        }
    }
}

impl Gups {
    /// The LFSR value lane `j` of `iters` updates per lane starts from.
    fn lane_start(&self, iters: u64, j: usize) -> u64 {
        hpcc::starts(self.start + (iters * j as u64) as i64)
    }

    /// HPCC's verification: replay the same updates (XOR is its own inverse) and count
    /// entries that are not back to their initial value.
    pub fn verify_errors(&mut self) -> u64 {
        let iters = self.updates / LANES as u64;
        let mask = self.entries - 1;
        for j in 0..LANES {
            let mut r = self.lane_start(iters, j);
            for _ in 0..iters {
                r = hpcc::step(r);
                self.table[(r & mask) as usize] ^= r;
            }
        }
        self.table.iter().enumerate().filter(|(i, &v)| v != *i as u64).count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::*;

    /// An update is HPCC's loop's 13 instructions (see [`DELTA`]), all on the table's load: its
    /// store is the same `xor [mem], reg`. 6.5 a reference.
    #[test]
    fn an_update_is_hpccs_compiled_loop() {
        let (_, s, _) = run_recorded::<Gups>("gups", PARAMS, "footprint=1M,updates=4096,threads=2");
        for r in s.iter().flatten() {
            assert_eq!(r.inst_delta, if r.kind() == xlat_core::RefKind::Load { 13 } else { 0 });
        }
        assert_eq!(instructions(&s), 13 * 4096);
    }

    #[test]
    fn hpcc_check_passes_and_refs_match_updates() {
        let (mut k, streams, _) = run_recorded::<Gups>("gups", PARAMS, "footprint=1M,updates=0,threads=3");
        assert!(k.materialize);
        let updates = 4 * (1 << 17);
        let total: usize = streams.iter().map(|s| s.len()).sum();
        assert_eq!(total, 2 * updates);
        assert_eq!(streams.len(), 3);
        // The table was really updated (not all entries still equal their index)...
        assert!(k.table.iter().enumerate().filter(|(i, &v)| v != *i as u64).count() > 1000);
        // ...and HPCC's check finds zero errors, as for the sequential reference.
        assert_eq!(k.verify_errors(), 0);
        assert_in_regions(&k.vas, &streams);
        // Load then store to the same word.
        let s = &streams[0];
        assert_eq!(s[0].va, s[1].va);
        assert_eq!(s[1].kind(), xlat_core::RefKind::Store);
    }

    /// Seed 1 is HPCC's own sequence (lane 0 starts at the LFSR's first value); other
    /// seeds give other update streams that still pass HPCC's check.
    #[test]
    fn seeds_pick_windows_of_the_hpcc_sequence() {
        let (k1, s1, _) = run_recorded::<Gups>("gups", PARAMS, "footprint=1M,updates=1024,seed=1");
        let first = hpcc::step(hpcc::starts(0)) & ((1 << 17) - 1);
        assert_eq!(s1[0][0].va, k1.table_arr.base + first * 8, "seed 1 starts where HPCC does");
        let (mut k2, s2, _) = run_recorded::<Gups>("gups", PARAMS, "footprint=1M,updates=1024,seed=2");
        assert_ne!(s1, s2);
        assert_eq!(k2.verify_errors(), 0);
        let (_, s2b, _) = run_recorded::<Gups>("gups", PARAMS, "footprint=1M,updates=1024,seed=2");
        assert_eq!(s2, s2b);
    }

    #[test]
    fn large_footprint_is_not_materialised_and_deterministic() {
        let (k, a, sa) = run_recorded::<Gups>("gups", PARAMS, "footprint=32G,updates=4096");
        assert!(k.table.is_empty());
        assert_eq!(k.entries, 4 << 30);
        let (_, b, sb) = run_recorded::<Gups>("gups", PARAMS, "footprint=32G,updates=4096");
        assert_eq!(a, b);
        assert_eq!(sa, sb);
        assert_in_regions(&k.vas, &a);
    }
}
