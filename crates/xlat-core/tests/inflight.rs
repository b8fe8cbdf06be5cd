//! In-flight state: a reference waits for work already under way that it needs (the walk of
//! its page, the fill of its line) instead of finding the translation or the line the moment
//! an earlier reference's access was simulated. Each rule is checked against the same run with
//! `core.inflight=false`; and a walk never waits for other references' work.

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

#[test]
fn a_walk_takes_only_as_long_as_its_own_reads() {
    // One MSHR, one walker, no page-walk caches, random loads over 4 GB: walks queue for the
    // walker and data misses for the MSHR, but a walk's latency is its four reads and the
    // probe, each read at most an LLC miss (plus a fill in flight it merges with): work of
    // other references never enters it. (Walk reads once held MSHRs that data misses had
    // booked far ahead, and walk latencies ran away to 10^19 cycles.)
    let pairs = [("core.mshrs", "1"), ("core.walkers", "1"), ("pwc.l4.entries", "0"), ("pwc.l3.entries", "0"), ("pwc.l2.entries", "0")];
    let s = run(&cfg(true, &pairs), common::random_refs(50_000, 4 * GB, 3), region(4 * GB), true);
    let c = Config::default();
    let worst_read = c.cache_llc.latency + c.dram_latency_cycles();
    let bound = (c.walker.pwc_latency + 4 * 2 * worst_read) as f64;
    assert!(s.f("walk_cycles_per_walk") < bound, "{} >= {bound}", s.f("walk_cycles_per_walk"));
    assert!(s.f("walk_cycles.hist.ge4096") == 0.0);
}

#[test]
fn a_younger_reference_that_issues_first_starts_the_walk_a_dependent_one_merges_into() {
    // A B-tree step: the child pointer's load misses, the node's first key waits for it, the
    // next key (another line of the node's page) does not. In hardware that key issues at
    // once, misses the TLBs and starts the walk; the first key, issuing when the pointer
    // arrives, merges into it. Simulated in program order, the first key looks ahead for it.
    let node = BASE + (64 << 20);
    let refs = [Ref::load(BASE, 1), Ref::load(node, 1).after(1), Ref::load(node + 0x40, 1)];
    let ahead = |n: &str| run(&cfg(true, &[("core.lookahead", n)]), refs.to_vec(), region(GB), true);
    let (on, off) = (ahead("8"), ahead("0"));
    assert_eq!((on.u("walks"), off.u("walks")), (2, 2));
    assert_eq!((on.u("inflight.early_walks"), off.u("inflight.early_walks")), (1, 0));
    // The walk starts a pointer's miss sooner, overlaps that miss, and the run ends sooner.
    let sooner = on.u("inflight.early_walk_cycles");
    assert!(sooner > 100, "the pointer's miss: {sooner}");
    assert!(on.u("cycles") + 100 < off.u("cycles"), "{} vs {}", on.u("cycles"), off.u("cycles"));
    // The younger key still waits for the walk it started.
    assert_eq!(on.u("inflight.walk_merges"), 1);

    // A key that waits for the first key (or for nothing on that page) starts nothing.
    let chained = [refs[0], refs[1], Ref::load(node + 0x40, 1).after(1)];
    assert_eq!(run(&cfg(true, &[("core.lookahead", "8")]), chained.to_vec(), region(GB), true).u("inflight.early_walks"), 0);
    let other = [refs[0], refs[1], Ref::load(node + 4096, 1)];
    assert_eq!(run(&cfg(true, &[("core.lookahead", "8")]), other.to_vec(), region(GB), true).u("inflight.early_walks"), 0);
}

#[test]
fn a_younger_reference_that_issues_first_starts_the_fill_a_dependent_one_merges_into() {
    // The same with a perfect TLB and the younger load in the first key's line: it asks for
    // the line first, and the first key completes with that fill.
    let perfect = [("tlb.perfect", "true")];
    let node = BASE + (64 << 20);
    let refs = [Ref::load(BASE, 1), Ref::load(node, 1).after(1), Ref::load(node + 8, 1)];
    let ahead = |n: &str| run(&cfg(true, &[perfect[0], ("core.lookahead", n)]), refs.to_vec(), region(GB), true);
    let (on, off) = (ahead("8"), ahead("0"));
    assert_eq!((on.u("inflight.early_fills"), off.u("inflight.early_fills")), (1, 0));
    assert!(on.u("inflight.early_fill_cycles") > 100);
    // Both loads of the node's line miss once: the second merges into the first's fill.
    assert_eq!(on.u("dram.reads"), off.u("dram.reads"));
    assert!(on.u("cycles") + 100 < off.u("cycles"), "{} vs {}", on.u("cycles"), off.u("cycles"));
}
