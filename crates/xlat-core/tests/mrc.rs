//! One-pass miss-ratio curves (`xlat_core::mrc`, `simulate_curves`) against separate runs:
//! the curve's misses at `w` ways equal the misses of a run whose structure has `w` ways
//! and the same sets, for the TLB levels and the lowest page-walk-cache level.

use xlat_core::os::OsOp;
use xlat_core::{Config, Ref, RefKind, RunOptions, VecSource};

mod common;
use common::{region, Rng, BASE, GB};

/// Loads and stores with a hot set, a warm set and a cold tail over 1 GB, and an mprotect
/// (a shootdown of 16 pages) now and then.
fn stream(n: usize, seed: u64) -> Vec<Ref> {
    let mut r = Rng(seed);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let page = match r.below(10) {
            0..=4 => r.below(48),
            5..=7 => 48 + r.below(3000),
            _ => r.below(GB / 4096),
        };
        let va = BASE + page * 4096 + r.below(512) * 8;
        out.push(if r.below(4) == 0 { Ref::store(va, 1) } else { Ref::load(va, 1) });
        if i % 5000 == 4999 {
            let at = BASE + r.below(3000) * 4096;
            out.push(Ref::os_call(OsOp::Protect, at, 16, 1));
            out.push(Ref::os_call(OsOp::Unprotect, at, 16, 1));
        }
    }
    out
}

fn cfg(pairs: &[(&str, String)]) -> Config {
    Config::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str()))).unwrap()
}

fn misses(c: &Config, refs: &[Ref], warmup: u64, stat: &str) -> f64 {
    let mut src = VecSource::new(vec![refs.to_vec()], region(GB));
    let opts = RunOptions { warmup, threads: 1, ..Default::default() };
    let s = xlat_core::simulate(c, &mut src, opts, true, 1, &mut |_| true).unwrap();
    s.get(stat).unwrap_or_else(|| panic!("no {stat}")).as_f64()
}

/// The curves of `refs` (after a 5,000-reference warm-up), and a check of each against
/// separate runs: `close(curve, run)` must hold at every size tried.
fn check(refs: &[Ref], close: impl Fn(u64, f64) -> bool) {
    let base = Config::default();
    let structures: Vec<String> = ["tlb.l1d", "tlb.l2", "pwc", "cache.l1d", "cache.l2"].map(String::from).to_vec();
    let mut src = VecSource::new(vec![refs.to_vec()], region(GB));
    let opts = RunOptions { warmup: 5_000, threads: 1, ..Default::default() };
    let (stats, curves) = xlat_core::simulate_curves(&base, &mut src, &structures, 32, opts, true, 1, &mut |_| true).unwrap();
    let curve = |name: &str| curves.iter().find(|c| c.structure == name).unwrap_or_else(|| panic!("no curve {name}: {curves:?}"));
    // At the configured size the curve is the run's own count, always.
    for (name, stat) in [
        ("tlb.l1d", "tlb.l1d.misses"),
        ("tlb.l2", "tlb.l2.misses"),
        ("pwc.l2", "pwc.l2.misses"),
        ("cache.l1d", "cache.l1d.misses"),
        ("cache.l2", "cache.l2.misses"),
    ] {
        let c = curve(name);
        let (_, ways) = c.arrays[0];
        assert_eq!(c.depths.misses(ways) as f64, stats.get(stat).unwrap().as_f64(), "{name} at its own {ways} ways");
    }
    assert!(curve("pwc.l2").exact && !curve("pwc.l3").exact && curve("tlb.l2").exact);
    // Other sizes: the same sets, other ways.
    let (l2_sets, _) = curve("tlb.l2").arrays[0];
    for w in [1usize, 2, 3, 8, 20, 32] {
        let c = cfg(&[("tlb.l2.entries", (l2_sets * w).to_string()), ("tlb.l2.ways", w.to_string())]);
        let (one, run) = (curve("tlb.l2").depths.misses(w), misses(&c, refs, 5_000, "tlb.l2.misses"));
        assert!(close(one, run), "tlb.l2 at {w} ways: curve {one}, run {run}");
    }
    let (l1_sets, _) = curve("tlb.l1d").arrays[0];
    for w in [1usize, 2, 8, 16] {
        let c = cfg(&[("tlb.l1d.entries", (l1_sets * w).to_string()), ("tlb.l1d.ways", w.to_string())]);
        let (one, run) = (curve("tlb.l1d").depths.misses(w), misses(&c, refs, 5_000, "tlb.l1d.misses"));
        assert!(close(one, run), "tlb.l1d at {w} ways: curve {one}, run {run}");
    }
    for w in [1usize, 2, 5, 16, 32] {
        let c = cfg(&[("pwc.l2.entries", w.to_string())]);
        let (one, run) = (curve("pwc.l2").depths.misses(w), misses(&c, refs, 5_000, "pwc.l2.misses"));
        assert!(close(one, run), "pwc.l2 at {w} entries: curve {one}, run {run}");
    }
    // Caches: sizes in KB of `sets` sets of 64-byte lines.
    for name in ["cache.l1d", "cache.l2"] {
        let (sets, _) = curve(name).arrays[0];
        let exact = curve(name).exact;
        for w in [1usize, 2, 4, 16, 32] {
            let kb = (sets * w * 64 / 1024).to_string();
            let c = cfg(&[
                (if name == "cache.l1d" { "cache.l1d.size_kb" } else { "cache.l2.size_kb" }, kb),
                (if name == "cache.l1d" { "cache.l1d.ways" } else { "cache.l2.ways" }, w.to_string()),
            ]);
            let (one, run) = (curve(name).depths.misses(w), misses(&c, refs, 5_000, &format!("{name}.misses")));
            assert!(!exact || close(one, run), "{name} at {w} ways: curve {one}, run {run}");
        }
    }
    // An L1D's input never depends on its size; an L2's does once write-backs reach it.
    let stores = refs.iter().any(|r| r.kind() == RefKind::Store);
    assert!(curve("cache.l1d").exact && curve("cache.l2").exact != stores);
}

/// Loads, with shootdowns (mprotect) among them: the curves are exact at every size.
#[test]
fn curves_equal_separate_runs() {
    let loads: Vec<Ref> = stream(60_000, 7).into_iter().map(|r| if r.kind() == RefKind::Store { Ref::load(r.va, 1) } else { r }).collect();
    check(&loads, |one, run| one as f64 == run);
}

/// With stores, an L2 TLB's input depends a little on its own size: a store that finds a
/// clean entry in the L1 DTLB looks in the L2, and whether the L2's copy is dirty depends
/// on whether it was evicted and refilled since. The curves stay within 0.02 % here.
#[test]
fn with_stores_curves_are_within_a_few_in_ten_thousand() {
    check(&stream(60_000, 7), |one, run| (one as f64 - run).abs() <= 2e-4 * run + 1.0);
}

#[test]
fn a_structure_the_machine_lacks_is_one_error() {
    let mut src = VecSource::new(vec![stream(100, 1)], region(GB));
    let names = |n: &str| vec![n.to_string()];
    for (name, needle) in [("tlb.l3", "known:"), ("pwc.l5", "no level 5")] {
        let e =
            xlat_core::simulate_curves(&Config::default(), &mut src, &names(name), 8, RunOptions::default(), false, 1, &mut |_| true).unwrap_err().to_string();
        assert!(e.contains(name) && e.contains(needle), "{e}");
    }
}

/// A curve deeper than the stacks kept as lists (a tree of last-use times, one set): the
/// page-walk cache's L2 level up to 600 entries, against separate runs (with stores: the
/// PWC's input, walks, does not depend on its size).
#[test]
fn a_deep_curve_equals_separate_runs() {
    let refs = stream(60_000, 9);
    let mut src = VecSource::new(vec![refs.clone()], region(GB));
    let opts = RunOptions { warmup: 5_000, threads: 1, ..Default::default() };
    let (_, curves) = xlat_core::simulate_curves(&Config::default(), &mut src, &["pwc.l2".to_string()], 600, opts, true, 1, &mut |_| true).unwrap();
    let c = &curves[0];
    for n in [24usize, 100, 257, 400, 512, 600] {
        let run = misses(&cfg(&[("pwc.l2.entries", n.to_string())]), &refs, 5_000, "pwc.l2.misses");
        assert_eq!(c.depths.misses(n) as f64, run, "pwc.l2 at {n} entries");
    }
    assert!(c.depths.misses(600) < c.depths.misses(24));
}
