//! Physical-memory fragmentation scenarios (`phys.fragmentation`), applied to the buddy
//! allocator before the workload starts, reproducible from a seed:
//!
//! - `pinned:X` — the PCC paper's method (seeds/001 §7.4): one unmovable 4 KB page pinned
//!   in X of the free 2 MB blocks (X a fraction: `pinned:0.9` pins 90 % of them), chosen at
//!   random, at a random offset inside each. Those blocks can never back a 2 MB page.
//! - `lowhalf` — the flattening paper's 50 % scenario (seeds/004 §5.3): the lower half of
//!   each address space may use 2 MB pages, the upper half may not, "mimicking an OS that
//!   runs out of free large pages". The OS enforces the split by address; physically, only
//!   as many free 2 MB blocks are left whole as the lower halves need (see `os`).
//! - `aged:SEED` — a long-running machine: allocate/free churn of short-lived blocks of
//!   mixed sizes (page cache, slab) with long-lived unmovable pages sprinkled in, until
//!   only `phys.aged_target` of the free 2 MB blocks are still whole; then the short-lived
//!   blocks are freed. Free memory ends up in blocks of every order, as in `/proc/buddyinfo`
//!   of a machine that has been up for a while.
//!
//! `phys.available_gb` first takes memory away as `memhog` does in the PCC artifact (which
//! leaves footprint + 3 GB free before fragmenting), so X applies to what is left.

use crate::arch::addr::Frame;
use crate::os::phys::{PhysMem, MAX_ORDER, ORDER_2M};
use crate::rng::Rng;

pub use crate::param::Fragmentation;

/// Take memory away until at most `keep_frames` frames are free (a `memhog` that never
/// exits): largest blocks first, so what stays free is the tail of the free lists.
/// Returns the frames taken.
pub fn hog(phys: &mut PhysMem, keep_frames: u64) -> u64 {
    let mut taken = 0;
    for order in (0..=MAX_ORDER).rev() {
        while phys.free_frames() >= keep_frames + (1 << order) {
            if phys.alloc(order).is_none() {
                break;
            }
            taken += 1 << order;
        }
    }
    taken
}

/// Whole, free 2 MB blocks, in address order.
pub fn free_blocks_2m(phys: &PhysMem) -> Vec<u64> {
    let whole = (phys.total_frames() / 512) as usize;
    (0..whole).filter(|&b| phys.used_in_2m(b) == 0).map(|b| b as u64).collect()
}

/// Pin one unmovable 4 KB frame, at a random offset, in `n` of the free 2 MB blocks chosen
/// uniformly at random. Returns how many were pinned (`n`, or fewer if fewer are free).
pub fn pin_blocks(phys: &mut PhysMem, n: u64, rng: &mut Rng) -> u64 {
    let mut blocks = free_blocks_2m(phys);
    let n = n.min(blocks.len() as u64) as usize;
    // Partial Fisher-Yates: the first n entries are a uniform sample.
    for i in 0..n {
        let j = i + rng.below((blocks.len() - i) as u64) as usize;
        blocks.swap(i, j);
    }
    let mut chosen = blocks[..n].to_vec();
    chosen.sort_unstable();
    for b in chosen {
        let ok = phys.alloc_at(Frame(b * 512 + rng.below(512)), 0);
        debug_assert!(ok, "block {b} was free");
    }
    n as u64
}

/// The PCC paper's method: pin one page in `round(x * free 2 MB blocks)` of them.
pub fn pin_fraction(phys: &mut PhysMem, x: f64, rng: &mut Rng) -> u64 {
    let n = (x * free_blocks_2m(phys).len() as f64).round() as u64;
    pin_blocks(phys, n, rng)
}

/// Age memory by churn until only `target` (a fraction) of the free 2 MB blocks are still
/// whole. Returns the long-lived (unmovable) frames left behind.
pub fn age(phys: &mut PhysMem, seed: u64, target: f64) -> u64 {
    let mut rng = Rng::new(seed);
    let start = free_blocks_2m(phys).len() as u64;
    let goal = start - ((target * start as f64).round() as u64).min(start);
    let total = phys.free_frames();
    // Short-lived sizes: mostly 4 KB (page cache), some 8-64 KB (slab, network buffers).
    fn short_order(rng: &mut Rng) -> u8 {
        match rng.below(20) {
            0..=9 => 0,
            10..=12 => 1,
            13..=15 => 2,
            16..=17 => 3,
            _ => 4,
        }
    }
    let mut short: Vec<(u32, u8)> = Vec::new();
    let mut broken = vec![false; phys.blocks_2m()];
    let mut n_broken = 0u64;
    let mut long = 0u64;
    // Phase 1: fill to 90 %, then free a random 60 % of it, which scatters free memory.
    while phys.free_frames() > total / 10 {
        let o = short_order(&mut rng);
        match phys.alloc(o) {
            Some(f) => short.push((f.0 as u32, o)),
            None => break,
        }
    }
    let mut kept = Vec::with_capacity(short.len());
    for (f, o) in short.drain(..) {
        if rng.below(10) < 6 {
            phys.free(Frame(f as u64), o);
        } else {
            kept.push((f, o));
        }
    }
    short = kept;
    // Phase 2: steady churn; one allocation in four is long-lived and never freed.
    let mut steps = 0u64;
    while n_broken < goal && steps < 200_000_000 {
        steps += 1;
        if !short.is_empty() {
            let i = rng.below(short.len() as u64) as usize;
            let (f, o) = short.swap_remove(i);
            phys.free(Frame(f as u64), o);
        }
        let o = short_order(&mut rng);
        if let Some(f) = phys.alloc(o) {
            short.push((f.0 as u32, o));
        }
        if rng.below(4) == 0 {
            if let Some(f) = phys.alloc(0) {
                long += 1;
                let b = (f.0 >> ORDER_2M) as usize;
                if !broken[b] {
                    broken[b] = true;
                    n_broken += 1;
                }
            }
        }
    }
    for (f, o) in short {
        phys.free(Frame(f as u64), o);
    }
    long
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::param::ConfigValue;

    #[test]
    fn parses_and_shows_every_scenario() {
        for (text, v) in [
            ("none", Fragmentation::None),
            ("pinned:0.9", Fragmentation::Pinned(0.9)),
            ("pinned:50%", Fragmentation::Pinned(0.5)),
            ("lowhalf", Fragmentation::LowHalf),
            ("aged:7", Fragmentation::Aged(7)),
        ] {
            assert_eq!(Fragmentation::parse(text), Some(v), "{text}");
            assert_eq!(Fragmentation::parse(&v.show()), Some(v));
        }
        for bad in ["pinned:1.5", "pinned:", "pinned:-0.1", "aged:x", "half", "pinned:nan"] {
            assert_eq!(Fragmentation::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn pinning_breaks_exactly_that_fraction_of_blocks() {
        let mut p = PhysMem::new(1 << 30);
        let before = p.free_2m_blocks();
        assert_eq!(before, 511, "1 GB minus the block holding the 1 MB reserve");
        let n = pin_fraction(&mut p, 0.9, &mut Rng::new(1));
        assert_eq!(n, (0.9f64 * 511.0).round() as u64);
        assert_eq!(p.free_2m_blocks(), before - n);
        assert_eq!(p.free_frames(), (1 << 18) - 256 - n);
        // Same seed, same blocks.
        let mut q = PhysMem::new(1 << 30);
        pin_fraction(&mut q, 0.9, &mut Rng::new(1));
        assert_eq!(free_blocks_2m(&p), free_blocks_2m(&q));
    }

    #[test]
    fn hog_leaves_the_requested_memory_free() {
        let mut p = PhysMem::new(1 << 30);
        hog(&mut p, 100 << 8);
        assert!(p.free_frames() <= 100 << 8 && p.free_frames() > (100 << 8) - 512, "{}", p.free_frames());
    }

    #[test]
    fn aging_reaches_its_target_and_spreads_free_memory_over_orders() {
        let mut p = PhysMem::new(1 << 30);
        let start = p.free_2m_blocks();
        let long = age(&mut p, 3, 0.2);
        assert_eq!(p.free_2m_blocks(), (0.2f64 * start as f64).round() as u64);
        assert_eq!(p.free_frames(), (1 << 18) - 256 - long);
        let small_orders = (0..ORDER_2M).filter(|&o| p.free_blocks(o) > 0).count();
        assert!(small_orders >= 6, "free memory in many orders below 2 MB: {small_orders}");
        let mut q = PhysMem::new(1 << 30);
        assert_eq!(age(&mut q, 3, 0.2), long, "deterministic");
    }
}
