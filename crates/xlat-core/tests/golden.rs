//! Golden tests: walk lengths, page-table sizes, page-walk-cache skips, A/D bits. These are
//! the places where other simulators' walkers have had long-lived bugs, so each
//! number here is derived by hand in the comment above it.

use xlat_core::arch::addr::{PageSize, VirtAddr};
use xlat_core::arch::pte::{PTE_A, PTE_D};
use xlat_core::{Config, Machine, Ref, RunOptions, VecSource};

fn cfg(pairs: &[(&str, &str)]) -> Config {
    Config::from_pairs(pairs.iter().copied()).unwrap()
}

mod common;
use common::{random_refs, region, run, BASE, GB};

const NO_PWC: [(&str, &str); 3] = [("pwc.l4.entries", "0"), ("pwc.l3.entries", "0"), ("pwc.l2.entries", "0")];

#[test]
fn without_pwc_every_walk_reads_every_level() {
    // Random 4 KB pages over 1 GB: nearly every reference misses both TLBs.
    let refs = random_refs(20_000, GB, 7);
    let s = run(&cfg(&NO_PWC), refs.clone(), region(GB), true);
    assert!(s.f("walks") > 19_000.0);
    assert_eq!(s.f("walk_steps_per_walk"), 4.0);

    let mut five: Vec<(&str, &str)> = NO_PWC.to_vec();
    five.push(("pt.format", "radix5"));
    let s = run(&cfg(&five), refs, region(GB), true);
    assert_eq!(s.f("walk_steps_per_walk"), 5.0);
    assert_eq!(s.f("pt.nodes.l5"), 1.0);
}

#[test]
fn pwc_levels_skip_exactly_their_depth() {
    // Two references to different 4 KB pages of one 2 MB region: the second walk hits the
    // L2 PWC (VA[47:21]) and reads only the leaf PTE.
    let pages = [BASE, BASE + 4096];
    let refs: Vec<Ref> = pages.iter().map(|&va| Ref::load(va, 1)).collect();
    let s = run(&Config::default(), refs, region(GB), true);
    assert_eq!(s.f("walks"), 2.0);
    assert_eq!(s.f("walk_steps"), 4.0 + 1.0);
    assert_eq!(s.f("pwc.l2.hits"), 1.0);

    // Different 2 MB regions of one 1 GB region: the L3 PWC hit skips two levels.
    let refs = vec![Ref::load(BASE, 1), Ref::load(BASE + (4 << 20), 1)];
    let s = run(&Config::default(), refs, region(GB), true);
    assert_eq!(s.f("walk_steps"), 4.0 + 2.0);
    assert_eq!((s.f("pwc.l3.hits"), s.f("pwc.l2.hits")), (1.0, 0.0));

    // Different 1 GB regions of one 512 GB region: the L4 PWC hit skips one level.
    let refs = vec![Ref::load(BASE, 1), Ref::load(BASE + GB, 1)];
    let mut regions = region(2 * GB);
    regions[0].len = 2 * GB;
    let s = run(&Config::default(), refs, regions, true);
    assert_eq!(s.f("walk_steps"), 4.0 + 3.0);
    assert_eq!(s.f("pwc.l4.hits"), 1.0);
}

#[test]
fn sequential_scan_needs_about_one_read_per_walk() {
    // One reference per 4 KB page over 64 MB: every page is a TLB miss, and all but one
    // walk per 2 MB find the leaf node in the L2 PWC.
    let pages = (64 << 20) / 4096;
    let refs: Vec<Ref> = (0..pages).map(|i| Ref::load(BASE + i * 4096, 4)).collect();
    let s = run(&Config::default(), refs, region(64 << 20), true);
    assert_eq!(s.f("walks"), pages as f64);
    let per_walk = s.f("walk_steps_per_walk");
    assert!((1.0..1.01).contains(&per_walk), "{per_walk}");
}

#[test]
fn prefaulted_8gb_of_4k_pages_has_4106_nodes() {
    // 8 GB / 4 KB = 2,097,152 PTEs in 4,096 leaf nodes (16 MB), 8 L2 nodes, 1 L3, 1 L4.
    let c = Config::default();
    let mut m = Machine::new(&c, 1, region(8 * GB), 1).unwrap();
    m.prefault().unwrap();
    let s = m.stats();
    assert_eq!(s.f("pt.nodes.l1"), 4096.0);
    assert_eq!(s.f("pt.nodes.l2"), 8.0);
    assert_eq!(s.f("pt.nodes.l3"), 1.0);
    assert_eq!(s.f("pt.nodes.l4"), 1.0);
    assert_eq!(s.f("pt.nodes"), 4106.0);
    assert_eq!(s.f("pt_bytes.l1"), (16u64 << 20) as f64);
    assert_eq!(s.f("mapped_bytes"), (8 * GB) as f64);
}

#[test]
fn gups_over_8gb_reads_about_2_5_ptes_per_walk() {
    // Flattening paper §3.3 / spec §2.7: uniform random over 8 GB with PWCs 4/4/24 (LRU):
    // the L4 PWC always hits, the L3 PWC holds 4 of the 8 1 GB regions (50 %), the L2 PWC
    // 24 of 4,096 2 MB regions (0.6 %): 1 + 0.994 + 0.497 ≈ 2.49 reads per walk.
    let refs = random_refs(200_000, 8 * GB, 3);
    let s = run(&Config::default(), refs, region(8 * GB), true);
    let per_walk = s.f("walk_steps_per_walk");
    assert!((2.44..2.54).contains(&per_walk), "{per_walk}");
}

#[test]
fn demand_faults_map_each_page_once() {
    let refs = vec![Ref::load(BASE, 1), Ref::store(BASE + 8, 1), Ref::load(BASE + 4096, 1)];
    let s = run(&Config::default(), refs, region(GB), false);
    assert_eq!(s.f("faults"), 2.0);
    assert_eq!(s.f("mapped_bytes"), 8192.0);
    // Without regions (a trace), pages are still mapped on first touch.
    let s = run(&Config::default(), vec![Ref::load(0x1234_5000, 1)], vec![], false);
    assert_eq!(s.f("faults"), 1.0);
}

#[test]
fn accessed_and_dirty_bits_are_set_as_hardware_does() {
    let c = Config::default();
    let mut m = Machine::new(&c, 1, region(GB), 1).unwrap();
    m.prefault().unwrap();
    let va = VirtAddr(BASE + 0x5000);
    let leaf = |m: &Machine| {
        let sp = &m.kernel.os.spaces[0];
        let (node, idx) = m.kernel.os.pt.leaf_location(sp.root, sp.top, va, PageSize::Size4K).unwrap();
        m.kernel.os.pt.entry(node, idx)
    };
    assert_eq!(leaf(&m) & (PTE_A | PTE_D), 0, "prefaulted pages start clean and unaccessed");
    m.step(0, Ref::load(va.0, 1)).unwrap();
    assert_eq!(leaf(&m) & (PTE_A | PTE_D), PTE_A, "a load's walk sets A only");
    let sp = &m.kernel.os.spaces[0];
    let root_entry = m.kernel.os.pt.entry(sp.root, va.index(4));
    assert_ne!(root_entry & PTE_A, 0, "upper-level entries used by the walk get A too");
    // A store through the clean TLB entry must walk again to set D.
    m.step(0, Ref::store(va.0, 1)).unwrap();
    assert_eq!(leaf(&m) & (PTE_A | PTE_D), PTE_A | PTE_D);
    let s = m.stats();
    // One TLB-miss walk and one dirty-bit walk, counted apart; both probed the PWCs.
    assert_eq!((s.f("walks"), s.f("tlb.dirty_walks")), (1.0, 1.0));
    assert_eq!(s.f("pwc.l4.hits") + s.f("pwc.l4.misses"), 2.0);
    // Now the TLB entry is dirty: more stores need no walk.
    m.step(0, Ref::store(va.0 + 8, 1)).unwrap();
    assert_eq!((m.stats().f("walks"), m.stats().f("tlb.dirty_walks")), (1.0, 1.0));
    // Another page is never touched: still clean.
    let other = VirtAddr(BASE + 0x9000);
    let sp = &m.kernel.os.spaces[0];
    let (node, idx) = m.kernel.os.pt.leaf_location(sp.root, sp.top, other, PageSize::Size4K).unwrap();
    assert_eq!(m.kernel.os.pt.entry(node, idx) & (PTE_A | PTE_D), 0);
}

#[test]
fn same_inputs_give_identical_statistics() {
    let c = Config::default();
    let a = run(&c, random_refs(50_000, 2 * GB, 9), region(2 * GB), false);
    let b = run(&c, random_refs(50_000, 2 * GB, 9), region(2 * GB), false);
    assert_eq!(a, b);
}

#[test]
fn a_perfect_tlb_bounds_the_translation_cost() {
    let refs = random_refs(50_000, 4 * GB, 5);
    let base = run(&Config::default(), refs.clone(), region(4 * GB), true);
    let perfect = run(&cfg(&[("tlb.perfect", "true")]), refs, region(4 * GB), true);
    assert_eq!(perfect.f("walks"), 0.0);
    assert!(perfect.f("ipc") > base.f("ipc") * 1.2, "{} vs {}", perfect.f("ipc"), base.f("ipc"));
}

#[test]
fn pte_reads_are_served_somewhere_exactly_once() {
    let s = run(&Config::default(), random_refs(30_000, 4 * GB, 11), region(4 * GB), true);
    let served: f64 = ["l1", "l2", "llc", "dram"].iter().map(|l| s.f(&format!("pte_served.{l}"))).sum();
    assert_eq!(served, s.f("walk_steps"));
    let data: f64 = ["l1", "l2", "llc", "dram"].iter().map(|l| s.f(&format!("data_served.{l}"))).sum();
    assert_eq!(data, s.f("refs"));
    assert_eq!(s.f("cache.l1d.pt.accesses"), s.f("walk_steps"), "walks enter at L1D on Intel");
}

#[test]
fn walker_port_l2_bypasses_l1d() {
    let s = run(&cfg(&[("walker.port", "l2")]), random_refs(10_000, GB, 2), region(GB), true);
    assert_eq!(s.f("cache.l1d.pt.accesses"), 0.0);
    assert_eq!(s.f("pte_served.l1"), 0.0);
    assert!(s.f("cache.l2.pt.accesses") > 0.0);
}

#[test]
fn multi_core_keeps_per_core_and_summed_names() {
    let c = cfg(&[("system.cores", "2")]);
    let mut src = VecSource::new(vec![random_refs(5000, GB, 1), random_refs(7000, GB, 2)], region(GB));
    let s = xlat_core::simulate(&c, &mut src, RunOptions::default(), true, 1, &mut |_| true).unwrap();
    assert_eq!(s.f("core0.refs"), 5000.0);
    assert_eq!(s.f("core1.refs"), 7000.0);
    assert_eq!(s.f("refs"), 12000.0);
    assert_eq!(s.f("walks"), s.f("core0.walks") + s.f("core1.walks"));
    let too_many = xlat_core::simulate(&Config::default(), &mut VecSource::new(vec![vec![], vec![]], vec![]), RunOptions::default(), false, 1, &mut |_| true);
    assert!(too_many.unwrap_err().to_string().contains("system.cores"));
}

#[test]
fn warmup_resets_statistics_but_keeps_state() {
    let refs: Vec<Ref> = (0..1000).map(|i| Ref::load(BASE + (i % 10) * 4096, 1)).collect();
    let mut src = VecSource::new(vec![refs], region(GB));
    let opts = RunOptions { max_refs: Some(500), warmup: 500, ..RunOptions::default() };
    let s = xlat_core::simulate(&Config::default(), &mut src, opts, true, 1, &mut |_| true).unwrap();
    assert_eq!(s.f("refs"), 500.0);
    assert_eq!(s.f("walks"), 0.0, "all ten pages were translated during warm-up");
    assert_eq!(s.f("instructions"), 500.0);
}

#[test]
fn ptp_keeps_page_table_lines_cached_at_a_small_data_cost() {
    // Flattening paper §7.1: with PTP in L2 and LLC, the L2 page-walk miss ratio drops by
    // tens of points and the data miss ratio rises by a few; walks get faster.
    let refs = random_refs(1_500_000, 8 * GB, 13);
    let base = run(&Config::default(), refs.clone(), region(8 * GB), true);
    let ptp = run(&cfg(&[("cache.l2.policy", "ptp"), ("cache.llc.policy", "ptp")]), refs, region(8 * GB), true);
    // GUPS's 16 MB of leaf PTEs cannot fit a 256 KB L2 whatever the policy, but they can
    // fit the 16 MB LLC once data stops pushing them out.
    let d_pt = ptp.f("cache.llc.pt.miss_rate") - base.f("cache.llc.pt.miss_rate");
    let d_data = ptp.f("cache.llc.data.miss_rate") - base.f("cache.llc.data.miss_rate");
    eprintln!(
        "L2 pt miss {:.3} -> {:.3}; LLC pt miss {:.3} -> {:.3}, data {:.3} -> {:.3}; walk cycles {:.1} -> {:.1}",
        base.f("cache.l2.pt.miss_rate"),
        ptp.f("cache.l2.pt.miss_rate"),
        base.f("cache.llc.pt.miss_rate"),
        ptp.f("cache.llc.pt.miss_rate"),
        base.f("cache.llc.data.miss_rate"),
        ptp.f("cache.llc.data.miss_rate"),
        base.f("walk_cycles_per_walk"),
        ptp.f("walk_cycles_per_walk")
    );
    assert!(d_pt < -0.10, "page-table miss ratio falls: {d_pt}");
    assert!(d_data > -0.01 && d_data < 0.10, "data miss ratio rises a little: {d_data}");
    assert!(ptp.f("walk_cycles_per_walk") < base.f("walk_cycles_per_walk"));
    assert!(ptp.f("ipc") > base.f("ipc"));
}

#[test]
fn ptp_detector_turns_on_only_in_tlb_miss_phases() {
    let detector = cfg(&[("cache.l2.policy", "ptp"), ("ptp.mode", "detector"), ("ptp.detector_epoch", "10000")]);
    let gups = run(&detector, random_refs(100_000, 8 * GB, 2), region(8 * GB), true);
    assert!(gups.f("ptp.epochs") > 5.0);
    assert_eq!(gups.f("ptp.active_epochs"), gups.f("ptp.epochs"), "random access over 8 GB misses the TLB all the time");
    // A loop over 64 KB never misses the L2 TLB after warming up.
    let small: Vec<Ref> = (0..100_000u64).map(|i| Ref::load(BASE + (i * 64) % (64 << 10), 4)).collect();
    let s = run(&detector, small, region(64 << 10), true);
    assert!(s.f("ptp.epochs") > 5.0);
    assert_eq!(s.f("ptp.active_epochs"), 0.0);
}
