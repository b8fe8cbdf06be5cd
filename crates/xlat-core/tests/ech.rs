//! Golden tests for ECH, the elastic cuckoo page tables the flattening paper compares with
//! (seed 004 §6.1: "3 parallel accesses per walk with 4 KB pages"): how many lines a walk
//! reads with and without the cuckoo walk caches, 2 MB pages, and the tables following the
//! OS's mappings through promotions and demotions.

mod common;
use common::{random_refs, region, BASE, GB};
use xlat_core::arch::addr::VirtAddr;
use xlat_core::os::ech::cluster;
use xlat_core::os::Os;
use xlat_core::{Config, Stats};

fn cfg(pairs: &[(&str, &str)]) -> Config {
    let mut all = vec![("ech.enabled", "true")];
    all.extend_from_slice(pairs);
    Config::from_pairs(all.iter().copied()).unwrap()
}

fn run(c: &Config, footprint: u64, refs: usize) -> Stats {
    common::run(c, random_refs(refs, footprint, 11), region(footprint), true)
}

#[test]
fn a_walk_reads_every_way_of_the_4kb_table_at_once() {
    // 16 MB fits the 16-entry cache of 2 MB regions: after the first walk of each region
    // only the three ways of the 4 KB table are read; a cache miss adds the three lines its
    // walk-table entry can be in, per cache.
    let s = run(&cfg(&[]), 16 << 20, 20_000);
    let walks = s.f("walks");
    assert!(walks > 10_000.0, "{walks}");
    assert_eq!(s.f("ech.table_reads"), 3.0 * walks);
    assert_eq!(s.f("ech.cwt_reads"), 3.0 * (s.f("ech.pmd_cwc.misses") + s.f("ech.pud_cwc.misses")));
    assert_eq!(s.f("ech.pmd_cwc.misses"), 8.0, "each 2 MB region missed once");
    assert_eq!(s.f("walk_steps.miss"), s.f("ech.table_reads") + s.f("ech.cwt_reads"));
    assert_eq!(s.f("ech.stale_cwc"), 0.0);
    assert_eq!(s.f("pwc.l2.hits") + s.f("pwc.l2.misses"), 0.0, "no radix page-walk cache is probed");
}

#[test]
fn a_known_2mb_way_is_one_read() {
    // All 2 MB pages: a hit in the cache of 2 MB regions names the way, one read; a miss
    // leaves the three ways of the 2 MB table (the 1 GB region's entry knows the size only).
    let s = run(&cfg(&[("os.page_policy", "ideal")]), 16 << 20, 20_000);
    assert_eq!(s.f("huge_coverage"), 1.0);
    assert_eq!(s.f("ech.table_reads"), s.f("walks") + 2.0 * s.f("ech.pmd_cwc.misses"));
}

#[test]
fn a_known_1gb_way_is_one_read() {
    // 1 GB pages: the cache of 1 GB regions names the way; 2 MB regions have no walk-table
    // entries to fetch once it has.
    let s = run(&cfg(&[("os.page_policy", "ideal"), ("os.huge_1g", "true"), ("pwc.l2.entries", "24")]), 2 * GB, 20_000);
    assert_eq!(s.f("huge_coverage"), 1.0);
    assert_eq!(s.f("ech.table_reads"), s.f("walks") + 2.0 * s.f("ech.pud_cwc.misses"));
    assert_eq!(s.f("ech.cwt_reads"), 6.0 * s.f("ech.pud_cwc.misses"));
}

#[test]
fn a_large_footprint_misses_the_walk_caches() {
    // 8 GB at random: the 16 2 MB regions and 2 1 GB regions the caches hold rarely match, so
    // most walks read 3 table lines and 6 walk-table lines. The 4 KB table grows twice
    // (16 K lines per way at a 0.6 load factor, 4x per step) to hold 262,144 clusters.
    let s = run(&cfg(&[]), 8 * GB, 30_000);
    let walks = s.f("walks");
    assert_eq!(s.f("ech.table_reads"), 3.0 * walks);
    let per_walk = s.f("walk_steps_per_walk");
    assert!((8.0..9.0).contains(&per_walk), "{per_walk}");
    assert!(s.f("ech.resizes") >= 2.0, "{}", s.f("ech.resizes"));
    // 3 ways x 256 K lines of 64 B for 4 KB pages, more for the other tables.
    assert!(s.f("ech.bytes") >= 48.0 * (1 << 20) as f64, "{}", s.f("ech.bytes"));
    // Radix with Skylake's page-walk caches reads ~2.5 entries per walk here, one at a time.
    let radix = common::run(&Config::default(), random_refs(30_000, 8 * GB, 11), region(8 * GB), true);
    assert!(radix.f("walk_steps_per_walk") < 3.0);
}

#[test]
fn the_tables_follow_promotions_and_demotions() {
    // 512 4 KB pages, collapsed into a 2 MB page (khugepaged's or the PCC's promotion), then
    // split again: the clusters and the walk-table entry follow each step.
    let mut os = Os::new(&cfg(&[]).kernel());
    let sp = os.create_space(region(4 << 20)).unwrap();
    let root = os.spaces[sp].root;
    for i in 0..512u64 {
        os.fault(sp, VirtAddr(BASE + i * 4096), false).unwrap();
    }
    let e = os.pt.ech(root).unwrap();
    assert_eq!((e.pages[0].len(), e.pages[1].len(), e.pmd_info(BASE).count(0)), (64, 0, 512));
    assert!(os.request_promotion(sp, VirtAddr(BASE)).unwrap());
    let e = os.pt.ech(root).unwrap();
    assert!(e.pages[1].find(cluster(BASE, 1)).is_some(), "the 2 MB page's cluster");
    assert_eq!((e.pages[0].len(), e.pmd_info(BASE).sizes(), e.pud_info(BASE).sizes()), (0, 0b10, 0b10));
    assert!(os.request_demotion(sp, VirtAddr(BASE)).unwrap());
    let e = os.pt.ech(root).unwrap();
    assert!(e.pages[1].is_empty());
    assert!((0..64).all(|c| e.pages[0].find(cluster(BASE + c * 8 * 4096, 0)).map(|(_, n)| n) == Some(8)));
    assert_eq!(e.pmd_info(BASE).count(0), 512);
    os.unmap(sp, VirtAddr(BASE)).unwrap();
    assert_eq!(os.pt.ech(root).unwrap().pmd_info(BASE).count(0), 511, "munmap of one page");
}

#[test]
fn ech_is_refused_where_it_is_not_modelled() {
    for pairs in [
        [("ech.enabled", "true"), ("pt.format", "fpt")],
        [("ech.enabled", "true"), ("virt.enabled", "true")],
        [("ech.enabled", "true"), ("asap.enabled", "true")],
    ] {
        assert!(Config::from_pairs(pairs.iter().copied()).is_err(), "{pairs:?}");
    }
    assert!(Config::from_pairs([("ech.enabled", "true"), ("ech.slots", "1000")]).is_err());
}

#[test]
fn two_host_threads_give_the_same_statistics() {
    // The ECH walk's parallel read groups go through the translating thread's recording and
    // the memory thread's replay like every other port operation.
    let c = cfg(&[]);
    let refs = random_refs(20_000, 2 * GB, 5);
    let run = |threads| {
        let mut src = xlat_core::VecSource::new(vec![refs.clone()], region(2 * GB));
        let opts = xlat_core::RunOptions { threads, ..Default::default() };
        xlat_core::simulate(&c, &mut src, opts, true, 1, &mut |_| true).unwrap()
    };
    assert_eq!(run(1), run(2));
}
