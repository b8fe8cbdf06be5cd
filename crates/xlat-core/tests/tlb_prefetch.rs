//! The TLB prefetch hooks end to end, with the sequential prefetcher (`tlb.prefetcher`): its
//! walks are real walks (walker time, page-table reads through the caches), its translations
//! answer later L2 TLB misses from the prefetch buffer, shootdowns reach the buffer, and a
//! two-thread run counts all of it as a one-thread run does.

use xlat_core::arch::addr::VirtAddr;
use xlat_core::{Config, Machine, Ref, RunOptions, Stats, VecSource};

mod common;
use common::{region, run, BASE, GB};

fn cfg(pairs: &[(&str, &str)]) -> Config {
    Config::from_pairs([("check.translations", "1")].into_iter().chain(pairs.iter().copied())).unwrap()
}

/// A sequential page stream: `pages` 4 KB pages in order, 8 loads a page.
fn page_stream(pages: u64) -> Vec<Ref> {
    (0..pages * 8).map(|i| Ref::load(BASE + (i / 8) * 4096 + (i % 8) * 512, 2)).collect()
}

const SP: (&str, &str) = ("tlb.prefetcher", "sequential");

/// On a sequential page stream every L2 TLB miss but the first finds its translation in the
/// prefetch buffer: demand walks all but vanish, and as many prefetch walks take their place,
/// with their reads and walker time counted apart. The L2 TLB misses as often (the buffer is
/// beside it, not in it).
#[test]
fn a_page_stream_is_served_by_prefetches() {
    let pages = 4000;
    let off = run(&cfg(&[]), page_stream(pages), region(GB), true);
    let on = run(&cfg(&[SP]), page_stream(pages), region(GB), true);
    assert_eq!(on.f("tlb.l2.misses"), off.f("tlb.l2.misses"));
    assert!(off.f("walks") >= pages as f64, "each page walks once without prefetching: {}", off.f("walks"));
    assert!(on.f("walks") < off.f("walks") / 100.0, "demand walks {} (without prefetching {})", on.f("walks"), off.f("walks"));
    assert!(on.f("tlb.prefetch.hits") >= (pages - 2) as f64, "useful prefetches: {}", on.f("tlb.prefetch.hits"));
    assert_eq!(on.f("tlb.prefetch.walks"), on.f("tlb.prefetch.fills") + on.f("tlb.prefetch.unmapped"));
    assert_eq!(on.f("tlb.prefetch.requests"), on.f("tlb.prefetch.walks") + on.f("tlb.prefetch.cached"));
    assert!(on.f("tlb.prefetch.accuracy") > 0.99);
    assert!(on.f("tlb.prefetch.steps") >= on.f("tlb.prefetch.walks"), "a prefetch walk reads at least its leaf");
    let served: f64 = ["l1", "l2", "llc", "dram"].iter().map(|w| on.f(&format!("tlb.prefetch.served.{w}"))).sum();
    assert_eq!(served, on.f("tlb.prefetch.steps"));
    assert!(on.f("tlb.prefetch.walk_cycles") > 0.0);
    assert!(on.f("walk_steps") < off.f("walk_steps") / 100.0, "prefetch walks' reads are not demand walk steps");
    assert!(off.get("tlb.prefetch.walks").is_none(), "without a prefetcher there are no prefetch statistics");
}

/// The last page of the region: its next page is not mapped, and the walk for it is dropped
/// without a fault. Random references over a large footprint: prefetches that are rarely used.
#[test]
fn unmapped_and_useless_prefetches() {
    let s = run(&cfg(&[SP]), page_stream(16), region(16 * 4096), true);
    assert_eq!(s.f("tlb.prefetch.unmapped"), 1.0);
    assert_eq!(s.f("faults"), 0.0);
    let random = common::random_refs(20_000, 4 * GB, 11);
    let s = run(&cfg(&[SP]), random, region(4 * GB), true);
    assert!(s.f("tlb.prefetch.fills") > 10_000.0);
    assert!(s.f("tlb.prefetch.accuracy") < 0.05, "random pages are rarely next: {}", s.f("tlb.prefetch.accuracy"));
}

/// A prefetched translation is dropped when its page is unmapped: the next touch faults and
/// maps a new frame, and the translation checker (every translation used) finds nothing stale.
#[test]
fn a_shootdown_reaches_the_prefetch_buffer() {
    let c = cfg(&[SP]);
    let mut m = Machine::new(&c, 1, region(GB), 7).unwrap();
    m.prefault().unwrap();
    let mut src = VecSource::new(vec![page_stream(10)], region(GB));
    m.run(&mut src, RunOptions::default(), &mut |_| true).unwrap();
    // Page 10 was prefetched after page 9's miss.
    let before = m.stats();
    assert_eq!(before.f("tlb.prefetch.fills"), 10.0);
    assert!(m.unmap(0, 0, VirtAddr(BASE + 10 * 4096)).unwrap());
    m.step(0, Ref::load(BASE + 10 * 4096, 1)).unwrap();
    let after = m.stats();
    assert_eq!(after.f("tlb.prefetch.hits"), before.f("tlb.prefetch.hits"), "the buffer lost page 10");
    assert_eq!(after.f("faults"), before.f("faults") + 1.0);
}

/// One host thread or two: the same statistics, natively, in a VM (2D prefetch walks) and
/// with one walker, which prefetch walks then keep from demand walks.
#[test]
fn two_host_threads_count_prefetches_as_one() {
    let refs: Vec<Ref> = page_stream(3000).into_iter().chain(common::random_refs(20_000, 2 * GB, 5)).collect();
    let stats = |pairs: &[(&str, &str)], threads: usize| -> Stats {
        let c = Config::from_pairs(pairs.iter().copied()).unwrap();
        let mut m = Machine::new(&c, 1, region(2 * GB), 7).unwrap();
        // (Prefaulted: a page not yet mapped is not prefetched.)
        m.prefault().unwrap();
        let mut src = VecSource::new(vec![refs.clone()], region(2 * GB));
        m.run(&mut src, RunOptions { threads, warmup: 5_000, ..RunOptions::default() }, &mut |_| true).unwrap();
        assert_eq!(m.host_times.is_some(), threads == 2, "the run is split over two threads when asked");
        m.stats()
    };
    for pairs in [&[SP][..], &[SP, ("virt.enabled", "true")], &[SP, ("core.walkers", "1"), ("walker.port", "l2")]] {
        let one = stats(pairs, 1);
        assert!(
            one.f("tlb.prefetch.walks") > 1000.0 && one.f("tlb.prefetch.hits") > 1000.0,
            "{pairs:?}: {} prefetch walks, {} hits",
            one.f("tlb.prefetch.walks"),
            one.f("tlb.prefetch.hits")
        );
        assert_eq!(one, stats(pairs, 2), "{pairs:?}");
    }
}
