//! Software prefetches (`RefKind::Prefetch`, PT-Baker's user-level helper with `prefetcht0`):
//! a load into the L1D that retires once translated and its fill has an MSHR, walks on a TLB
//! miss only where prefetches start walks (`tlb.prefetch_walks`), and never faults.

use xlat_core::{Config, Ref, RefKind};

mod common;
use common::{region, run, BASE, GB};

fn cfg(pairs: &[(&str, &str)]) -> Config {
    Config::from_pairs(pairs.iter().copied()).unwrap()
}

/// Page `i`'s line `i % 64` (distinct lines, distinct pages).
fn at(i: u64) -> u64 {
    BASE + i * 4096 + (i % 64) * 64
}

#[test]
fn a_prefetch_brings_translation_and_line_for_a_later_load() {
    let n = 16;
    let chain = |i: u64| Ref::new(at(i), RefKind::Load, 8, 1, true);
    let loads: Vec<Ref> = (0..n).map(chain).collect();
    let prefetched: Vec<Ref> = (0..n).map(|i| Ref::prefetch(at(i), 1)).chain((0..n).map(chain)).collect();
    let cold = run(&Config::default(), loads, region(GB), true);
    let warm = run(&Config::default(), prefetched, region(GB), true);
    assert_eq!((warm.f("prefetches"), warm.f("loads"), warm.f("prefetches.dropped")), (n as f64, n as f64, 0.0));
    // The prefetches walked and fetched; the loads behind them hit the L1 DTLB and the L1D.
    assert_eq!((cold.f("walks"), warm.f("walks")), (n as f64, n as f64));
    assert_eq!(warm.f("data_served.dram"), cold.f("data_served.dram"));
    assert_eq!(warm.f("data_served.l1"), n as f64);
    // The chain of dependent misses is gone: the prefetches overlapped.
    assert!(warm.f("cycles") * 3.0 < cold.f("cycles"), "{} vs {}", warm.f("cycles"), cold.f("cycles"));
}

/// A load of the first page's last line (its walk and its miss), then `k` references made by `f`
/// to the page's first `k` lines.
fn page_lines(k: u64, f: fn(u64, u32) -> Ref) -> Vec<Ref> {
    std::iter::once(Ref::load(BASE + 63 * 64, 1)).chain((0..k).map(|i| f(BASE + i * 64, 1))).collect()
}

#[test]
fn nothing_waits_for_a_prefetchs_data() {
    // After a load of a page's last line, misses of some of its other lines: loads retire as
    // their lines arrive, prefetches once translated and their fills sent, each holding one of
    // the 10 MSHRs until its line arrives.
    let alone = run(&Config::default(), page_lines(0, Ref::load), region(GB), true).f("cycles");
    // Nine prefetches find an MSHR each (the load holds the tenth): they retire as they
    // dispatch, nine instructions in three cycles at 4 a cycle.
    let few = run(&Config::default(), page_lines(9, Ref::prefetch), region(GB), true);
    assert!(few.f("cycles") - alone <= 4.0, "{} after {alone}", few.f("cycles"));
    assert_eq!(few.f("data_served.dram"), 10.0);
}

#[test]
fn a_prefetch_waits_for_an_mshr() {
    // 63 prefetches of the other lines of a loaded page, 10 MSHRs: from the tenth miss on, a
    // prefetch's fill waits for an earlier one's line, and the prefetch for its MSHR (so a
    // helper that prefetches faster than the MSHRs fill lines is held back by them). So they
    // take about five fills one after another, and as many loads one more, for their own
    // lines.
    let alone = run(&Config::default(), page_lines(0, Ref::load), region(GB), true).f("cycles");
    let prefetches = run(&Config::default(), page_lines(63, Ref::prefetch), region(GB), true).f("cycles");
    let loads = run(&Config::default(), page_lines(63, Ref::load), region(GB), true).f("cycles");
    // (720, 1430 and 1572 cycles: the fills take 142 cycles from DRAM.)
    let fill = loads - prefetches;
    assert!(fill > 100.0, "loads {loads} against prefetches {prefetches}");
    assert!(prefetches - alone > 4.0 * fill, "{prefetches} after {alone}, fills of {fill}");
}

#[test]
fn where_prefetches_start_no_walks_a_tlb_miss_drops_them() {
    let c = cfg(&[("tlb.prefetch_walks", "false")]);
    // Page 0 is loaded first (its translation is then in the TLBs); pages 1.. only prefetched.
    let refs: Vec<Ref> = std::iter::once(Ref::load(at(0), 1)).chain((0..8).map(|i| Ref::prefetch(at(i) + 8, 1))).collect();
    let s = run(&c, refs, region(GB), true);
    assert_eq!((s.f("prefetches"), s.f("prefetches.dropped"), s.f("walks")), (1.0, 7.0, 1.0));
    // The one that hit the TLB fetched its line (the load's: an L1D hit); the rest touched
    // nothing, and are no references.
    assert_eq!((s.f("data_served.dram"), s.f("data_served.l1"), s.f("refs")), (1.0, 1.0, 2.0));
}

#[test]
fn a_prefetch_never_faults() {
    // Not prefaulted: the prefetch of an unmapped page is dropped; the load after it faults.
    let refs = vec![Ref::prefetch(at(3), 1), Ref::load(at(3), 1)];
    for pairs in [&[][..], &[("virt.enabled", "true")], &[("tlb.perfect", "true")]] {
        let s = run(&cfg(pairs), refs.clone(), region(GB), false);
        assert_eq!((s.f("prefetches.dropped"), s.f("faults"), s.f("loads")), (1.0, 1.0, 1.0), "{pairs:?}");
    }
}
