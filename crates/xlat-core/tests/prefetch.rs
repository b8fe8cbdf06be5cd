//! Hardware data prefetchers (`cache.l1d.prefetcher`, `cache.l2.prefetcher`): they turn a
//! scan's misses into hits, never fetch outside the 4 KB page that trained them, and are
//! counted apart from demand accesses.

use xlat_core::{Config, Ref, Stats};

mod common;
use common::{region, run, BASE, GB};

fn scan(pairs: &[(&str, &str)], bytes: u64) -> Stats {
    // 8-byte loads in address order; a perfect TLB keeps translation out of the picture.
    let refs: Vec<Ref> = (0..bytes / 8).map(|i| Ref::load(BASE + i * 8, 1)).collect();
    let cfg = Config::from_pairs(pairs.iter().copied().chain([("tlb.perfect", "true")])).unwrap();
    run(&cfg, refs, region(GB), true)
}

#[test]
fn a_stream_prefetcher_turns_a_scans_misses_into_hits() {
    let off = scan(&[], 256 << 10);
    let on = scan(&[("cache.l2.prefetcher", "stream")], 256 << 10);
    assert!(off.get("cache.l2.prefetches").is_none(), "no prefetch statistics without a prefetcher");
    // Without a prefetcher every line misses L2; with one, only the first three lines of each
    // page (two steps up teach it the stream).
    assert_eq!(off.f("cache.l2.misses"), 4096.0);
    assert_eq!(on.f("cache.l2.misses"), 64.0 * 3.0);
    assert_eq!(on.f("cache.l2.prefetch_hits"), 4096.0 - 192.0);
    assert_eq!(on.f("cache.l2.prefetch_accuracy"), 1.0);
    // Prefetches are not demand accesses; the L1D still misses every line.
    assert_eq!(on.f("cache.l2.accesses"), off.f("cache.l2.accesses"));
    assert!(on.f("cycles") < 0.8 * off.f("cycles"), "{} vs {}", on.f("cycles"), off.f("cycles"));
}

#[test]
fn prefetches_never_leave_the_page_that_trained_them() {
    for (key, kind) in [("cache.l2.prefetcher", "stream"), ("cache.l1d.prefetcher", "stride"), ("cache.l1d.prefetcher", "stream")] {
        let s = scan(&[(key, kind)], 4096);
        // The page's 64 lines come from DRAM once each, by demand or by prefetch, and
        // nothing beyond them.
        assert_eq!(s.f("dram.reads"), 64.0, "{key}={kind}");
        let level = if key.contains("l1d") { "l1d" } else { "l2" };
        assert_eq!(s.f(&format!("cache.{level}.misses")) + s.f(&format!("cache.{level}.prefetches")), 64.0, "{key}={kind}");
    }
}

#[test]
fn a_demand_access_waits_for_its_line_still_in_flight_from_a_prefetch() {
    // With in-flight state a prefetched line is not there before it lands: back-to-back
    // loads gain less than the same prefetches arriving at once would give.
    let pf = [("cache.l2.prefetcher", "stream"), ("cache.l2.prefetch_degree", "8")];
    let with = |inflight: &str| scan(&[pf[0], pf[1], ("core.inflight", inflight)], 64 << 10);
    let (real, instant) = (with("true"), with("false"));
    assert_eq!(real.f("cache.l2.prefetches"), instant.f("cache.l2.prefetches"));
    assert!(real.f("cycles") > instant.f("cycles"));
    assert!(real.f("inflight.fill_merges") > 0.0);
}
