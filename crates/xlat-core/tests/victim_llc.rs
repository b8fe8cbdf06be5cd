//! A victim LLC (`cache.llc.fill=victim`, Zen's L3): filled only by L2 evictions, and an LLC hit
//! moves the line to the L2, so the L2 and the LLC hold different lines and their capacities
//! add up. An inclusive-fill LLC duplicates what the L2 holds.

use xlat_core::{Config, Ref, Stats};

mod common;
use common::{region, run, BASE, GB};

/// Cyclic passes over `lines` lines (one load each) with a 32 KB L2 and a 64 KB LLC.
fn cyclic(fill: &str, lines: u64, passes: u64) -> Stats {
    let refs: Vec<Ref> = (0..passes * lines).map(|i| Ref::load(BASE + (i % lines) * 64, 1)).collect();
    let pairs = [
        ("tlb.perfect", "true"),
        ("cache.l1d.size_kb", "4"),
        ("cache.l1d.ways", "4"),
        ("cache.l2.size_kb", "32"),
        ("cache.llc.size_kb", "64"),
        ("cache.llc.ways", "16"),
        ("cache.llc.fill", fill),
    ];
    run(&Config::from_pairs(pairs.iter().copied()).unwrap(), refs, region(GB), true)
}

#[test]
fn a_victim_llc_adds_its_capacity_to_the_l2s() {
    // 1280 lines: more than the LLC's 1024, fewer than L2 + LLC (512 + 1024).
    let (lines, passes) = (1280, 6);
    let inclusive = cyclic("inclusive", lines, passes);
    let victim = cyclic("victim", lines, passes);
    // An inclusive-fill LLC under LRU thrashes on every pass; a victim LLC fetches each line
    // from DRAM once, on the first pass.
    assert_eq!(inclusive.f("dram.reads"), (lines * passes) as f64);
    assert_eq!(victim.f("dram.reads"), lines as f64);
    assert!(victim.f("cycles") < inclusive.f("cycles"));
}

#[test]
fn a_victim_llc_holds_nothing_the_l2_has_not_evicted() {
    // 256 lines fit the 32 KB L2: nothing is evicted, so the second pass hits L2 and the LLC
    // is never filled (and never hit).
    let s = cyclic("victim", 256, 2);
    assert_eq!(s.f("dram.reads"), 256.0);
    assert_eq!(s.f("cache.llc.hits"), 0.0);
    // (A cyclic pass over 256 lines thrashes the 64-line L1D: the whole second pass hits L2.)
    assert_eq!(s.f("data_served.l2"), 256.0);
}

#[test]
fn a_victim_llc_cannot_be_inclusive() {
    let e = Config::from_pairs([("cache.llc.fill", "victim"), ("cache.llc.inclusive", "true")]).unwrap_err();
    assert!(e.to_string().contains("victim LLC cannot be inclusive"), "{e}");
}

/// AMD's L3 is "mostly exclusive": a line one core's L2 evicted into it, hit by another core,
/// stays (it is likely shared); hit by the core that put it there, it moves up.
#[test]
fn a_victim_llc_keeps_a_line_another_core_put_there() {
    use xlat_core::{RunOptions, VecSource};
    let c = Config::from_pairs([
        ("system.cores", "2"),
        ("tlb.perfect", "true"),
        ("cache.l1d.size_kb", "4"),
        ("cache.l1d.ways", "4"),
        ("cache.l2.size_kb", "32"),
        ("cache.llc.size_kb", "1024"),
        ("cache.llc.fill", "victim"),
    ])
    .unwrap();
    // Core 0 reads 1024 lines (its 512-line L2 evicts the first half into the LLC), then
    // core 1, much later, reads the first half; then core 0, later still, reads it again.
    let pass = |delta: u32| -> Vec<Ref> { (0..512u64).map(|i| Ref::load(BASE + i * 64, if i == 0 { delta } else { 1 })).collect() };
    let first: Vec<Ref> = (0..1024u64).map(|i| Ref::load(BASE + i * 64, 1)).chain(pass(4_000_000)).collect();
    let streams = vec![first, pass(2_000_000)];
    let mut src = VecSource::new(streams, region(GB));
    let s = xlat_core::simulate(&c, &mut src, RunOptions::default(), true, 1, &mut |_| true).unwrap();
    // Core 1's 512 reads hit the LLC and leave the lines there, so core 0's second pass hits
    // them too: the only DRAM reads are core 0's first 1024.
    // (All but one: one of the first half is still in core 0's caches.)
    let shared = s.f("core1.data_served.llc");
    assert!(shared >= 510.0, "{shared}");
    assert!(s.f("dram.reads") <= 1024.0 + 512.0 - shared, "{}", s.f("dram.reads"));
    assert!(s.f("core0.data_served.llc") >= shared - 2.0, "{}", s.f("core0.data_served.llc"));
}
