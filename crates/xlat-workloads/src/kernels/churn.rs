//! A heap that gives memory back to the OS: an allocator hands out fixed-size chunks of an
//! arena, the program writes and reads them, and freed chunks go back to the OS: with munmap
//! (`free=munmap`), so the next allocation of a chunk faults its pages in again, or, as
//! jemalloc on FreeBSD does, with madvise(MADV_FREE) (`free=madv_free`), which leaves them
//! mapped but clean and not accessed. Every free is
//! an OS call whose TLB shootdown reaches every core running the program: shootdowns come
//! from the workload, as in programs that churn their mappings (allocators purging, garbage
//! collectors, JITs), rather than from a knob.
//!
//! Each thread owns an equal share of the arena's chunks and keeps at most `live` of its
//! share allocated, freeing its oldest chunk when it allocates past that.

use std::collections::VecDeque;

use xlat_core::os::OsOp;

use crate::params::{choice, float, size, PDef, Params};
use crate::recorder::{interleave, static_split, Recorder};
use crate::rng::{derive, Rng};
use crate::vas::{Arr, Vas};
use crate::WorkloadError;

use super::KernelImpl;

pub const DESC: &str =
    "a heap that returns memory to the OS: allocate a chunk, write and read it, free the oldest (munmap), so shootdowns come from the workload";
pub const PARAMS: &[PDef] = &[
    size("footprint", "64M", "arena size in bytes"),
    size("chunk", "64K", "allocation size in bytes (whole 4 KB pages)"),
    size("ops", "64K", "allocations (split over threads)"),
    size("reads", "64", "8-byte reads of random live chunks after each allocation"),
    float("live", "0.5", "fraction of a thread's chunks allocated at once; past it the oldest is freed"),
    choice(
        "free",
        "munmap",
        "how a chunk goes back to the OS: munmap, or madv_free (jemalloc's madvise(MADV_FREE): it stays mapped, clean)",
        &["munmap", "madv_free"],
    ),
];

/// Allocator bookkeeping before a chunk's first write (a free-list pop).
const ALLOC_DELTA: u32 = 20;
/// A free: the allocator's bookkeeping and the system call.
const FREE_DELTA: u32 = 30;
/// Index arithmetic, load, accumulate.
const READ_DELTA: u32 = 6;
const PAGE: u64 = 4096;

pub struct Churn {
    vas: Vas,
    arena: Arr,
    chunks: u64,
    chunk: u64,
    ops: u64,
    reads: u64,
    live: f64,
    threads: usize,
    seed: u64,
    /// The OS call that frees a chunk.
    free_op: OsOp,
    /// Chunks freed (OS calls made), for tests.
    pub frees: u64,
}

impl KernelImpl for Churn {
    fn new(p: &Params, _native: bool) -> Result<Self, WorkloadError> {
        let chunk = p.range("chunk", PAGE, 1 << 30)?.next_multiple_of(PAGE);
        let footprint = p.range("footprint", chunk, 1 << 40)?;
        let chunks = footprint / chunk;
        let live = p.f64("live");
        if !(live > 0.0 && live <= 1.0) {
            return Err(WorkloadError::BadValue { workload: "churn".into(), param: "live".into(), value: live.to_string(), why: "must be in (0, 1]".into() });
        }
        let threads = p.threads();
        if chunks < 2 * threads as u64 {
            return Err(WorkloadError::BadValue {
                workload: "churn".into(),
                param: "footprint".into(),
                value: footprint.to_string(),
                why: format!("holds {chunks} chunks: each of the {threads} threads needs at least 2"),
            });
        }
        let mut vas = Vas::new();
        let arena = vas.array("arena", chunks, chunk);
        let free_op = if p.str("free") == "madv_free" { OsOp::Free } else { OsOp::Unmap };
        Ok(Churn { vas, arena, chunks, chunk, ops: p.u64("ops"), reads: p.u64("reads"), live, threads, seed: p.seed(), free_op, frees: 0 })
    }
    fn vas(&self) -> &Vas {
        &self.vas
    }
    fn threads(&self) -> usize {
        self.threads
    }

    fn run<R: Recorder>(&mut self, rec: &mut R) -> u64 {
        rec.roi_begin();
        let (arena, chunk, threads) = (self.arena, self.chunk, self.threads);
        let shares = static_split(self.chunks, threads);
        let mut rngs: Vec<Rng> = (0..threads).map(|t| Rng::new(derive(self.seed, 0xC4 + t as u64))).collect();
        // Per thread: its allocated chunks, oldest first, and which of its chunks are free.
        let mut live: Vec<VecDeque<u64>> = vec![VecDeque::new(); threads];
        let mut free: Vec<Vec<u64>> = shares.iter().map(|&(lo, hi)| (lo..hi).collect()).collect();
        let max_live: Vec<usize> = shares.iter().map(|&(lo, hi)| (((hi - lo) as f64 * self.live) as usize).clamp(1, (hi - lo) as usize - 1)).collect();
        let (reads, pages) = (self.reads, chunk / PAGE);
        let mut sum = 0u64;
        let mut frees = 0u64;
        interleave(rec, &static_split(self.ops, threads), 16, |rec, t, lo, hi| {
            let rng = &mut rngs[t];
            for _ in lo..hi {
                // Allocate a random free chunk and write its pages (the first touch faults).
                let i = rng.below(free[t].len() as u64) as usize;
                let c = free[t].swap_remove(i);
                let base = arena.at(c);
                for p in 0..pages {
                    rec.store(base + p * PAGE, 8, if p == 0 { ALLOC_DELTA } else { 2 });
                }
                live[t].push_back(c);
                // Use the live data.
                for _ in 0..reads {
                    let l = live[t][rng.below(live[t].len() as u64) as usize];
                    let off = rng.below(chunk / 8) * 8;
                    rec.load(arena.at(l) + off, 8, READ_DELTA);
                    sum = sum.wrapping_add(l ^ off);
                }
                // Past the live limit, the oldest chunk goes back to the OS.
                if live[t].len() > max_live[t] {
                    let old = live[t].pop_front().expect("live is over its limit");
                    rec.os_call(self.free_op, arena.at(old), chunk, FREE_DELTA);
                    free[t].push(old);
                    frees += 1;
                }
            }
        });
        self.frees = frees;
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::*;

    #[test]
    fn chunks_are_written_used_and_freed_oldest_first() {
        let (k, s, _) = run_recorded::<Churn>("churn", PARAMS, "footprint=64K,chunk=8K,ops=20,reads=2,live=0.5");
        // 8 chunks, at most 4 live: the 5th allocation on frees the oldest.
        assert_eq!(k.frees, 16);
        let calls: Vec<&Ref> = s[0].iter().filter(|r| r.is_os_call()).collect();
        assert_eq!(calls.len(), 16);
        assert!(calls.iter().all(|r| r.size == OsOp::Unmap as u8 && r.pages() == 2 && (r.va - k.arena.base) % 8192 == 0));
        // Every allocation writes both pages of its chunk before anything else touches it.
        let stores = s[0].iter().filter(|r| r.kind() == xlat_core::RefKind::Store && !r.is_os_call()).count();
        assert_eq!(stores, 40);
        let accesses: Vec<Vec<Ref>> = s.iter().map(|st| st.iter().filter(|r| !r.is_os_call()).copied().collect()).collect();
        assert_in_regions(&k.vas, &accesses);
    }

    #[test]
    fn jemalloc_frees_with_madv_free() {
        let (_, s, _) = run_recorded::<Churn>("churn", PARAMS, "footprint=64K,chunk=8K,ops=20,reads=2,free=madv_free");
        let calls: Vec<&Ref> = s[0].iter().filter(|r| r.is_os_call()).collect();
        assert!(calls.len() == 16 && calls.iter().all(|r| r.size == OsOp::Free as u8 && r.pages() == 2));
    }

    #[test]
    fn each_thread_frees_in_its_own_share() {
        let (k, s, _) = run_recorded::<Churn>("churn", PARAMS, "footprint=1M,chunk=64K,ops=64,reads=1,threads=2");
        for (t, st) in s.iter().enumerate() {
            for r in st.iter().filter(|r| r.is_os_call()) {
                let c = (r.va - k.arena.base) / (64 << 10);
                assert_eq!(c / 8, t as u64, "thread {t} freed chunk {c}");
            }
        }
    }

    use xlat_core::Ref;
}
