//! SMT: hardware contexts sharing a core (`system.threads_per_core`). They share its TLBs,
//! page-walk caches, walkers, MSHRs and private caches, and split its dispatch width and
//! reorder buffer; with thread-tagged TLBs (`tlb.thread_tagged`, as AMD's Zen) a thread never
//! uses an entry its sibling filled.

use xlat_core::{Config, Program, Ref, RunOptions, Stats, VecSource};

mod common;
use common::{region, BASE};

const PAGES: u64 = 512;

fn cfg(pairs: &[(&str, &str)]) -> Config {
    let mut all = vec![("system.threads_per_core", "2"), ("phys.size_gb", "2")];
    all.extend_from_slice(pairs);
    Config::from_pairs(all.iter().copied()).unwrap()
}

/// Thread 0 touches `PAGES` pages; thread 1, once thread 0 is long done, the same pages.
fn same_pages() -> Vec<Vec<Ref>> {
    // (One line per page, in a different L1D set each time: all 512 fit the 32 KB L1D.)
    let touch = |first_delta: u32| (0..PAGES).map(|p| Ref::load(BASE + p * 4096 + (p % 64) * 64, if p == 0 { first_delta } else { 1 })).collect();
    vec![touch(1), touch(2_000_000)]
}

fn run(c: &Config, streams: Vec<Vec<Ref>>) -> Stats {
    let mut src = VecSource::new(streams, region(64 << 20));
    xlat_core::simulate(c, &mut src, RunOptions::default(), true, 1, &mut |_| true).unwrap()
}

#[test]
fn thread_tagged_tlbs_never_serve_the_sibling() {
    let shared = run(&cfg(&[]), same_pages());
    let tagged = run(&cfg(&[("tlb.thread_tagged", "true")]), same_pages());
    // One core: the L2 TLB (1536 entries) holds all 512 pages.
    assert_eq!(shared.f("walks"), PAGES as f64, "competitively shared: thread 1 hits thread 0's entries");
    assert_eq!(tagged.f("walks"), 2.0 * PAGES as f64, "tagged: thread 1 walks every page again");
    // Thread 0's data lines are in the core's one L1D (those the walks' PTE lines left):
    // thread 1 hits them; on a core of its own it hits none.
    let apart = run(&cfg(&[("system.threads_per_core", "1"), ("system.cores", "2")]), same_pages());
    assert_eq!(apart.f("data_served.l1"), 0.0);
    assert!(shared.f("data_served.l1") > 0.4 * PAGES as f64, "{}", shared.f("data_served.l1"));
    // (Tagged, thread 1's own walks bring the PTE lines back into the L1D, over its data.)
    assert!(tagged.f("data_served.l1") < shared.f("data_served.l1"));
}

#[test]
fn a_core_s_threads_split_its_width() {
    // Loads that hit the L1 after the first pass, 8 instructions apart: dispatch-bound.
    let busy = |n: u64| -> Vec<Ref> { (0..n).map(|i| Ref::load(BASE + (i % 64) * 64, 8)).collect() };
    let one = run(&cfg(&[("system.threads_per_core", "1")]), vec![busy(50_000)]);
    let smt = run(&cfg(&[]), vec![busy(50_000)]);
    let ratio = smt.f("cycles") / one.f("cycles");
    assert!((1.9..2.1).contains(&ratio), "a lone thread gets half the width: {ratio}");
    // Two threads of a 2-way core run in the cycles one thread needs on a whole core... twice.
    let both = run(&cfg(&[]), vec![busy(50_000), busy(50_000)]);
    assert!((both.f("cycles") / smt.f("cycles") - 1.0).abs() < 0.05);
    assert_eq!(both.f("instructions"), 2.0 * one.f("instructions"));
}

#[test]
fn programs_do_not_share_a_core_s_threads() {
    let c = cfg(&[("system.cores", "2")]);
    let programs = |a: Vec<usize>, b: Vec<usize>| {
        vec![
            Program { name: "a".into(), regions: region(1 << 20), streams: a, slot: 0 },
            Program { name: "b".into(), regions: region(1 << 20), streams: b, slot: 0 },
        ]
    };
    let streams = || vec![vec![Ref::load(BASE, 1)]; 4];
    let mut src = VecSource::with_programs(streams(), programs(vec![0], vec![1]));
    let e = xlat_core::simulate(&c, &mut src, RunOptions::default(), false, 1, &mut |_| true).unwrap_err();
    assert_eq!(e.to_string(), "bad mix: programs 0 and 1 share core 0's hardware threads: give each program whole cores");
    // Whole cores each: fine, with per-program statistics.
    let mut src = VecSource::with_programs(streams(), programs(vec![0, 1], vec![2, 3]));
    let s = xlat_core::simulate(&c, &mut src, RunOptions::default(), false, 1, &mut |_| true).unwrap();
    assert_eq!((s.f("prog0.refs"), s.f("prog1.refs")), (2.0, 2.0));
    assert_eq!(s.f("core1.refs"), 2.0);
}

#[test]
fn streams_beyond_the_contexts_are_refused() {
    let c = cfg(&[]);
    let mut src = VecSource::new(vec![vec![Ref::load(BASE, 1)]; 3], region(1 << 20));
    let e = xlat_core::simulate(&c, &mut src, RunOptions::default(), false, 1, &mut |_| true).unwrap_err();
    assert!(e.to_string().contains("3 streams but the machine has 2"), "{e}");
}

/// A core's statistics sum its threads'; `ctx<N>.` keeps each thread's own (PT-Baker's main
/// thread beside a helper on its sibling).
#[test]
fn each_thread_has_its_own_memory_side_statistics() {
    let s = run(&cfg(&[("tlb.thread_tagged", "true")]), same_pages());
    for k in ["instructions", "pte_served.l1", "pte_served.l2", "pte_served.llc", "pte_served.dram", "data_served.l1", "data_served.dram", "walk_cycles"] {
        assert_eq!(s.f(&format!("ctx0.{k}")) + s.f(&format!("ctx1.{k}")), s.f(k), "{k}");
    }
    // Thread 1 starts long after thread 0; each walked every page once.
    assert!(s.f("ctx1.cycles") > s.f("ctx0.cycles") + 100_000.0);
    assert_eq!(s.f("ctx0.walk_cycles") / s.f("ctx0.walk_cycles_per_walk"), PAGES as f64);
    // One core: no per-context statistics.
    assert!(run(&cfg(&[("system.threads_per_core", "1")]), vec![same_pages().remove(0)]).get("ctx0.cycles").is_none());
}
