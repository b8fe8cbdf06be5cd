//! Zen 3's Page Directory Cache, the first user of the `on_tlb_evict` hook: 1 GB pages the L1
//! DTLB evicts are found there instead of walked again.

use xlat_core::{Config, Ref, RunOptions, Stats, VecSource};

mod common;
use common::{region, BASE, GB};

/// Round-robin over `pages` 1 GB pages, one load each, `rounds` times.
fn run(pairs: &[(&str, &str)], pages: u64, rounds: u64) -> Stats {
    let mut all = vec![("os.page_policy", "ideal"), ("os.huge_1g", "true"), ("phys.size_gb", "24"), ("tlb.l1d.entries_1g", "4"), ("tlb.l1d.ways_1g", "4")];
    all.extend_from_slice(pairs);
    let cfg = Config::from_pairs(all).unwrap();
    let refs: Vec<Ref> = (0..rounds).flat_map(|r| (0..pages).map(move |p| Ref::load(BASE + p * GB + r * 4096, 1))).collect();
    let mut src = VecSource::new(vec![refs], region(pages * GB));
    xlat_core::simulate(&cfg, &mut src, RunOptions::default(), true, 1, &mut |_| true).unwrap()
}

/// Eight 1 GB pages through a 4-entry L1 array (LRU, round-robin: every reference misses it).
/// Without an L2 array for 1 GB pages every miss walks; with a PDC only the first touch of
/// each page does (8 walks), the other misses find what the L1 evicted.
#[test]
fn the_pdc_catches_what_the_l1_evicts() {
    let none = run(&[("tlb.l2.entries_1g", "0")], 8, 10);
    assert_eq!(none.f("walks"), 80.0);
    let pdc = run(&[("tlb.l2.entries_1g", "0"), ("tlb.pdc.entries", "64")], 8, 10);
    assert_eq!(pdc.f("walks"), 8.0);
    // The first round walks; after it every L1 miss (72) is a PDC hit, and every L1 fill
    // but the first four evicted a 1 GB page into it (80 - 4).
    assert_eq!((pdc.f("tlb.pdc.hits"), pdc.f("tlb.pdc.lookups"), pdc.f("tlb.pdc.fills")), (72.0, 80.0, 76.0));
}
