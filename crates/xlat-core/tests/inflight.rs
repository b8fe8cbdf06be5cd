//! In-flight state: a reference waits for work already under way that it needs (the walk of
//! its page, the fill of its line) instead of finding the translation or the line the moment
//! an earlier reference's access was simulated; page-walk reads entering at the L1D hold its
//! MSHRs. Each rule is checked against the same run with `core.inflight=false`.

use xlat_core::{Config, Ref, Stats};

mod common;
use common::{region, run, BASE, GB};

fn cfg(inflight: bool, pairs: &[(&str, &str)]) -> Config {
    let on = if inflight { "true" } else { "false" };
    Config::from_pairs(pairs.iter().copied().chain([("core.inflight", on)])).unwrap()
}

/// An integer statistic (`Stats::f` reads every kind as f64; these are counts).
trait U {
    fn u(&self, name: &str) -> u64;
}

impl U for Stats {
    fn u(&self, name: &str) -> u64 {
        self.f(name) as u64
    }
}

fn both(pairs: &[(&str, &str)], refs: &[Ref]) -> (Stats, Stats) {
    (run(&cfg(true, pairs), refs.to_vec(), region(GB), true), run(&cfg(false, pairs), refs.to_vec(), region(GB), true))
}

#[test]
fn a_second_reference_to_a_page_being_walked_waits_for_that_walk() {
    // Two independent loads to different lines of one page: the first misses the TLBs and
    // walks; the second finds the translation the walk installed, but only once it is done.
    let refs = [Ref::load(BASE, 1), Ref::load(BASE + 640, 1)];
    let (on, off) = both(&[], &refs);
    assert_eq!((on.u("walks"), off.u("walks")), (1, 1));
    assert_eq!(on.u("inflight.walk_merges"), 1);
    assert_eq!(off.u("inflight.walk_merges"), 0);
    let waited = on.u("inflight.walk_merge_cycles");
    assert!(waited > 20, "the second load waits for most of a cold walk: {waited}");
    // What it waited is exactly what its translation took (an L1 TLB hit adds nothing).
    assert_eq!(on.u("translation_cycles"), off.u("translation_cycles") + waited);

    // A load to another page is not held up: it walks for itself.
    let refs = [Ref::load(BASE, 1), Ref::load(BASE + (64 << 20), 1)];
    let (on, _) = both(&[], &refs);
    assert_eq!((on.u("walks"), on.u("inflight.walk_merges")), (2, 0));
}

#[test]
fn a_load_to_a_line_being_filled_completes_with_the_fill() {
    // Perfect TLB: no walks, so only the data side is in play. Two loads to one line: the
    // second hits the L1D while the first's miss is still on its way from DRAM.
    let perfect = [("tlb.perfect", "true")];
    let pair = [Ref::load(BASE, 1), Ref::load(BASE + 8, 1)];
    let (on, off) = both(&perfect, &pair);
    assert_eq!((on.u("inflight.fill_merges"), off.u("inflight.fill_merges")), (1, 0));
    assert!(on.u("inflight.fill_merge_cycles") > 100, "it waits for DRAM: {}", on.u("inflight.fill_merge_cycles"));
    // It completes with the first load's fill: the pair takes as long as the first alone.
    let alone = run(&cfg(true, &perfect), pair[..1].to_vec(), region(GB), true);
    assert_eq!(on.u("cycles"), alone.u("cycles"));
    // A load that depends on the second waits for the fill too; without in-flight state it
    // would have issued right after an L1D hit.
    let chain = [pair[0], pair[1], Ref::new(BASE + 4096, xlat_core::RefKind::Load, 8, 1, true)];
    let (on, off) = both(&perfect, &chain);
    assert!(on.u("cycles") > off.u("cycles") + 100, "{} vs {}", on.u("cycles"), off.u("cycles"));
}

fn two_pages() -> Vec<xlat_core::Region> {
    let page = |start| xlat_core::Region { name: "p".into(), start, len: 4096 };
    vec![page(BASE), page(BASE + (1 << 39))]
}

#[test]
fn page_walk_reads_entering_at_the_l1d_hold_its_mshrs() {
    // Two loads to pages 1 GB apart, no page-walk caches: two walks of four reads each, on
    // two walkers at once. With one MSHR their reads queue behind each other.
    let refs = [Ref::load(BASE, 1), Ref::load(BASE + (1 << 39), 1)];
    let no_pwc = [("pwc.l4.entries", "0"), ("pwc.l3.entries", "0"), ("pwc.l2.entries", "0"), ("core.walkers", "2")];
    let walk_cycles = |inflight: bool, mshrs: &str, port: &str| {
        let pairs: Vec<(&str, &str)> = no_pwc.iter().copied().chain([("core.mshrs", mshrs), ("walker.port", port)]).collect();
        let s = run(&cfg(inflight, &pairs), refs.to_vec(), two_pages(), true);
        assert_eq!(s.u("walk_steps"), 8);
        s.u("walk_cycles")
    };
    assert!(walk_cycles(true, "1", "l1d") > walk_cycles(true, "16", "l1d"));
    // Reads entering at L2 (and the model without in-flight state) take no L1D MSHR.
    assert_eq!(walk_cycles(true, "1", "l2"), walk_cycles(true, "16", "l2"));
    assert_eq!(walk_cycles(false, "1", "l1d"), walk_cycles(false, "16", "l1d"));
}
