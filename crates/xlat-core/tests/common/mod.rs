//! Helpers shared by the integration tests. Not every test file uses every helper.
#![allow(dead_code)]

use xlat_core::{Config, Ref, Region, RunOptions, Stats, VecSource};

pub const GB: u64 = 1 << 30;
/// A 1 GB-aligned user address, like a large mmap.
pub const BASE: u64 = 0x7f00_0000_0000;

/// xorshift64: a tiny deterministic generator for synthetic streams.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One region of `len` bytes at [`BASE`].
pub fn region(len: u64) -> Vec<Region> {
    vec![Region { name: "data".into(), start: BASE, len, file: None }]
}

/// Run one stream on `cfg` and return the statistics.
pub fn run(cfg: &Config, refs: Vec<Ref>, regions: Vec<Region>, prefault: bool) -> Stats {
    let mut src = VecSource::new(vec![refs], regions);
    xlat_core::simulate(cfg, &mut src, RunOptions::default(), prefault, 1, &mut |_| true).unwrap()
}

/// `n` uniformly random 8-byte loads over `footprint` bytes at [`BASE`].
pub fn random_refs(n: usize, footprint: u64, seed: u64) -> Vec<Ref> {
    let mut r = Rng(seed);
    (0..n).map(|_| Ref::load(BASE + (r.next() % (footprint / 8)) * 8, 4)).collect()
}
