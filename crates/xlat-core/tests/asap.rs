//! ASAP (`asap.enabled`): prefetching the last page-table levels as a walk starts overlaps
//! their reads with the upper levels' instead of serialising them, so walks that miss the
//! caches get shorter, and it is counted apart from walk steps.

use xlat_core::{Config, Stats};

mod common;
use common::{random_refs, region, run, GB};

/// Random loads over 4 GB with no page-walk caches: every walk reads four levels, the lower
/// two mostly from DRAM.
fn gups(asap: &str, pwc: bool) -> Stats {
    let mut pairs = vec![("asap.enabled", asap)];
    if !pwc {
        pairs.extend([("pwc.l4.entries", "0"), ("pwc.l3.entries", "0"), ("pwc.l2.entries", "0")]);
    }
    run(&Config::from_pairs(pairs).unwrap(), random_refs(20_000, 4 * GB, 7), region(4 * GB), true)
}

#[test]
fn asap_overlaps_the_last_levels_with_the_upper_ones() {
    let (off, on) = (gups("false", false), gups("true", false));
    // The same walks read the same entries; ASAP adds two prefetches per walk.
    assert_eq!(on.f("walks"), off.f("walks"));
    assert_eq!(on.f("walk_steps"), off.f("walk_steps"));
    assert_eq!(on.f("asap.prefetches"), 2.0 * on.f("walks"));
    // The walks' DRAM reads (the leaves of 4 GB) become ASAP's: the walks find them in flight.
    assert!(on.f("pte_served.dram") < 0.01 * off.f("pte_served.dram"));
    assert!(on.f("asap.served.dram") > 0.99 * off.f("pte_served.dram"));
    // Shorter walks: a leaf's DRAM read starts with the walk, not after the upper levels.
    let (a, b) = (off.f("walk_cycles_per_walk"), on.f("walk_cycles_per_walk"));
    assert!(b < a - 10.0, "walk latency {a} -> {b}");
    assert!(on.f("cycles") < off.f("cycles"));
    // Its reads are cache accesses of page-table lines.
    assert!(on.f("cache.l1d.pt.accesses") > off.f("cache.l1d.pt.accesses"));
}

#[test]
fn asap_statistics_appear_only_with_asap() {
    assert!(gups("false", true).get("asap.prefetches").is_none());
    let e = Config::from_pairs([("asap.enabled", "true"), ("pt.format", "fpt")]).unwrap_err();
    assert!(e.to_string().contains("native radix"), "{e}");
}
