//! The Promotion Candidate Cache (seed 001) in a real machine: fed by the walker, it ranks
//! the 2 MB region that causes the most walks first; its statistics reach `simulate`'s
//! result; the OS's shootdowns drop what they cover.

mod common;

use common::{Rng, BASE};
use xlat_core::arch::addr::VirtAddr;
use xlat_core::{Config, Machine, Ref, Region, RunOptions, Stats, VecSource};

const MB2: u64 = 2 << 20;
/// The regions of the workload, and the one that gets most of the accesses.
const REGIONS: u64 = 4;
const HOT: u64 = 2;

/// Small TLBs (16-entry L1, 64-entry L2: 256 KB of reach), so that random 4 KB accesses
/// inside one 2 MB region keep missing, and the PCC on.
fn cfg(extra: &[(&str, &str)]) -> Config {
    // (Promotions change mappings: every translation used is checked.)
    let mut pairs = vec![("tlb.l1d.entries", "16"), ("tlb.l2.entries", "64"), ("tlb.l2.ways", "4"), ("pcc.enabled", "true"), ("check.translations", "1")];
    pairs.extend_from_slice(extra);
    Config::from_pairs(pairs).unwrap()
}

fn regions() -> Vec<Region> {
    vec![Region { name: "data".into(), start: BASE, len: REGIONS * MB2, file: None }]
}

/// `n` random loads over the regions, 70 % of them into region `HOT`.
fn refs(n: usize, seed: u64) -> Vec<Ref> {
    let mut r = Rng(seed);
    (0..n)
        .map(|_| {
            let region = if r.below(10) < 7 { HOT } else { [0, 1, 3][r.below(3) as usize] };
            Ref::load(BASE + region * MB2 + r.below(MB2 / 8) * 8, 3)
        })
        .collect()
}

fn machine(cfg: &Config, n: usize) -> Machine {
    let mut m = Machine::new(cfg, 1, regions(), 1).unwrap();
    m.prefault().unwrap();
    let mut src = VecSource::new(vec![refs(n, 7)], regions());
    m.run(&mut src, RunOptions::default(), &mut |_| true).unwrap();
    m
}

/// After a run, the region with most of the accesses (and so most of the walks) heads the
/// PCC's read-out, in the process's context; every region that was walked has an entry; with
/// prefaulted memory every walk reached the PCC, and each region's first walk (PMD A bit
/// clear) was filtered.
#[test]
fn the_most_walked_region_ranks_first() {
    for policy in ["lfu", "lru"] {
        let m = machine(&cfg(&[("pcc.policy", policy)]), 40_000);
        let s = m.stats();
        let pcc = m.xl.mechs.pcc().expect("pcc.enabled");
        let list = pcc.peek(0);
        assert_eq!(list.len(), REGIONS as usize, "{policy}: {list:?}");
        assert_eq!(list[0].start(), VirtAddr(BASE + HOT * MB2), "{policy}: {list:?}");
        assert_eq!(list[0].ctx, m.kernel.contexts[0].ctx);
        assert!(list.windows(2).all(|w| w[0].freq >= w[1].freq), "{policy}: read-out by frequency: {list:?}");
        assert!(list.iter().all(|c| !c.huge));
        assert!(s.f("walks") > 10_000.0, "the small TLBs miss: {} walks", s.f("walks"));
        assert_eq!(s.f("pcc.lookups"), s.f("walks"), "{policy}: every walk reaches the PMD stage");
        assert_eq!(s.f("pcc.filtered"), REGIONS as f64);
        assert_eq!(s.f("pcc.inserts"), REGIONS as f64);
        assert_eq!(s.f("pcc.hits"), s.f("pcc.lookups") - 2.0 * REGIONS as f64);
        assert!(s.f("pcc.decays") > 10.0, "8-bit counters saturate on the hot region");
        assert_eq!((s.f("pcc.evictions"), s.f("pcc.occupancy")), (0.0, REGIONS as f64));
    }
}

/// `simulate` reports the pcc.* statistics (none with the PCC off, the default); with two
/// cores, per core under `coreN.pcc.` and summed under `pcc.`.
#[test]
fn simulate_reports_the_pcc_statistics() {
    let run = |cfg: &Config, streams: Vec<Vec<Ref>>| -> Stats {
        let mut src = VecSource::new(streams, regions());
        xlat_core::simulate(cfg, &mut src, RunOptions::default(), true, 1, &mut |_| true).unwrap()
    };
    let off = run(&Config::from_pairs([("tlb.l2.entries", "64"), ("tlb.l2.ways", "4")]).unwrap(), vec![refs(5_000, 3)]);
    assert!(off.entries.iter().all(|(k, _)| !k.starts_with("pcc.")), "the PCC is off by default");
    let s = run(&cfg(&[("pcc.entries_1g", "8")]), vec![refs(5_000, 3)]);
    for k in ["lookups", "filtered", "inserts", "hits", "huge_lookups", "evictions", "decays", "invalidations", "reads", "flushed", "occupancy"] {
        assert!(s.get(&format!("pcc.{k}")).is_some(), "pcc.{k}");
        assert!(s.get(&format!("pcc.1g.{k}")).is_some(), "pcc.1g.{k}");
    }
    assert_eq!(s.f("pcc.1g.lookups"), s.f("walks"));
    assert_eq!((s.f("pcc.1g.filtered"), s.f("pcc.1g.occupancy")), (1.0, 1.0), "one gigabyte, one cold walk");

    let two = run(&cfg(&[("system.cores", "2")]), vec![refs(5_000, 3), refs(5_000, 4)]);
    let (a, b) = (two.f("core0.pcc.lookups"), two.f("core1.pcc.lookups"));
    assert!(a > 0.0 && b > 0.0);
    assert_eq!(two.f("pcc.lookups"), a + b);
    assert_eq!(two.f("pcc.lookups"), two.f("walks"));
    assert_eq!(two.f("pcc.occupancy"), two.f("core0.pcc.occupancy") + two.f("core1.pcc.occupancy"));
}

/// The OS's shootdowns reach the PCC: unmapping one page drops its region's entry only; a
/// promotion of the hot region drops its entry (its 512-page shootdown is above the flush
/// ceiling, so it flushes the whole context: every entry of the process goes).
#[test]
fn shootdowns_drop_pcc_entries() {
    let mut m = machine(&cfg(&[]), 20_000);
    let tags = |m: &Machine| m.xl.mechs.pcc().unwrap().peek(0).iter().map(|c| c.tag - (BASE >> 21)).collect::<Vec<_>>();
    assert_eq!(tags(&m)[0], HOT);
    assert!(m.unmap(0, 0, VirtAddr(BASE + MB2 + 0x3000)).unwrap());
    let mut left = tags(&m);
    left.sort_unstable();
    assert_eq!(left, vec![0, 2, 3], "the unmapped page's region left the PCC");
    assert!(m.request_promotion(0, 0, VirtAddr(BASE + HOT * MB2)).unwrap());
    assert!(!tags(&m).contains(&HOT), "the promoted region left the PCC");
    let s = m.stats();
    assert_eq!(s.f("pcc.invalidations"), 4.0, "{:?}", tags(&m));
}

/// The OS's read-out: `candidates` honours `pcc.readout` (flush empties the PCC; invalidate
/// leaves it).
#[test]
fn read_out_modes_through_the_machine() {
    for (mode, left) in [("invalidate", REGIONS as usize), ("flush", 0)] {
        let mut m = machine(&cfg(&[("pcc.readout", mode)]), 10_000);
        let pcc = m.xl.mechs.pcc_mut().unwrap();
        let got = pcc.candidates(0);
        assert_eq!(got.len(), REGIONS as usize);
        assert_eq!(got[0].tag, (BASE >> 21) + HOT);
        assert_eq!(pcc.peek(0).len(), left, "{mode}");
        let s = m.stats();
        assert_eq!((s.f("pcc.reads"), s.f("pcc.flushed")), (1.0, (REGIONS as usize - left) as f64));
    }
}

/// In a VM the PCC counts the guest's walks (2D walks; the host's EPT steps are not its
/// business), tagged by the guest's context (VPID above the PCID), and still ranks the hot
/// guest-virtual region first.
#[test]
fn in_a_vm_the_pcc_ranks_guest_virtual_regions() {
    let c = cfg(&[("virt.enabled", "true"), ("virt.guest_mem_gb", "1"), ("phys.size_gb", "2")]);
    let m = machine(&c, 20_000);
    let s = m.stats();
    let list = m.xl.mechs.pcc().unwrap().peek(0);
    assert_eq!(list[0].start(), VirtAddr(BASE + HOT * MB2), "{list:?}");
    assert_eq!(list[0].ctx, m.kernel.contexts[0].ctx);
    assert!(list[0].ctx >> 12 != 0, "a guest context has a VPID");
    assert!(s.f("host_walks") > 0.0);
    assert_eq!(s.f("pcc.lookups"), s.f("walks"), "prefaulted: every guest walk reaches the PMD stage");
    assert_eq!(s.f("pcc.filtered"), REGIONS as f64);
}

/// Demand paging: a region's first walk faults above its PMD (no PMD stage), the retry
/// finds the new PMD with its A bit clear (filtered); later first touches of pages fault on
/// the PTE after the PMD stage, and so count, as do their retries.
#[test]
fn demand_paging_filters_each_regions_first_walk() {
    let c = cfg(&[]);
    let mut m = Machine::new(&c, 1, regions(), 1).unwrap();
    let mut src = VecSource::new(vec![refs(20_000, 5)], regions());
    m.run(&mut src, RunOptions::default(), &mut |_| true).unwrap();
    let s = m.stats();
    assert_eq!(s.f("pcc.filtered"), REGIONS as f64);
    assert!(s.f("faults") > 1000.0);
    // Every walk reaches the PMD stage (TLB misses' and retries after faults) but one per
    // region, which faulted above its PMD (the first one on a missing L4 entry).
    assert_eq!(s.f("pcc.lookups"), s.f("walks") + s.f("walks.retries") - REGIONS as f64);
    assert_eq!(m.xl.mechs.pcc().unwrap().peek(0)[0].tag, (BASE >> 21) + HOT);
}

/// The OS's promotion daemon (`os.promotion=pcc`): every 5,000 references it reads the PCC
/// and promotes its best candidate; the hot region goes first, then the others, until every
/// region is huge and the walks stop. It runs on the references' clock, so the run keeps
/// two host threads and gives the same numbers on one.
#[test]
fn the_daemon_promotes_the_hottest_region_first() {
    let c = cfg(&[
        ("os.promotion", "pcc"),
        ("os.promotion_interval", "5000"),
        ("os.promotion_first", "5000"),
        ("pcc.promote_per_read", "1"),
        ("os.page_policy", "madvise"),
        ("os.khugepaged_pages", "0"),
    ]);
    let run = |threads: usize| {
        let mut m = Machine::new(&c, 1, regions(), 1).unwrap();
        m.prefault().unwrap();
        let mut src = VecSource::new(vec![refs(60_000, 7)], regions());
        m.run(&mut src, RunOptions { threads, ..RunOptions::default() }, &mut |_| true).unwrap();
        (m.stats(), m.host_times.is_some(), m)
    };
    let (one, one_split, _) = run(1);
    let (two, two_split, m) = run(2);
    assert!(!one_split);
    if std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2 {
        assert!(two_split, "a daemon on the references' clock keeps the run on two threads");
    }
    assert_eq!(one.entries, two.entries);
    // Twelve read-outs, one request each while candidates last; every region is promoted.
    assert_eq!(two.f("pcc.daemon.reads"), 11.0);
    assert_eq!(two.f("promotions"), REGIONS as f64);
    assert!(two.f("pcc.daemon.requests") >= REGIONS as f64);
    assert_eq!(two.f("huge_coverage"), 1.0);
    // The hot region was the first promoted: after the first read-out its pages are one
    // 2 MB page.
    let sp = &m.kernel.os.spaces[0];
    let hot = m.kernel.os.pt.translate(sp.root, sp.top, VirtAddr(BASE + HOT * MB2)).unwrap();
    assert_eq!(hot.size, xlat_core::arch::addr::PageSize::Size2M);
}

/// Which region the daemon promotes first, read from a run that stops after one read-out.
#[test]
fn the_first_promotion_is_the_hot_region() {
    let c = cfg(&[
        ("os.promotion", "pcc"),
        ("os.promotion_interval", "20000"),
        ("os.promotion_first", "20000"),
        ("pcc.promote_per_read", "1"),
        ("os.page_policy", "madvise"),
        ("os.khugepaged_pages", "0"),
    ]);
    let m = machine(&c, 20_300);
    assert_eq!(m.stats().f("promotions"), 1.0);
    let sp = &m.kernel.os.spaces[0];
    for r in 0..REGIONS {
        let t = m.kernel.os.pt.translate(sp.root, sp.top, VirtAddr(BASE + r * MB2)).unwrap();
        assert_eq!(t.size == xlat_core::arch::addr::PageSize::Size2M, r == HOT, "region {r}");
    }
}

/// The footprint cap (`os.promotion_cap`, the utility curve): of the 4 regions, 0.5 allows 2
/// over the whole run, whatever the daemon would promote; the hot one is among them. The same
/// run without the cap promotes all 4.
#[test]
fn the_footprint_cap_limits_promotions_over_the_run() {
    let run = |cap: &str| {
        let c = cfg(&[
            ("os.promotion", "pcc"),
            ("os.promotion_interval", "5000"),
            ("os.promotion_first", "5000"),
            ("os.promotion_cap", cap),
            ("os.khugepaged_pages", "0"),
        ]);
        let mut m = Machine::new(&c, 1, regions(), 1).unwrap();
        m.prefault().unwrap();
        let mut src = VecSource::new(vec![refs(60_000, 7)], regions());
        m.run(&mut src, RunOptions::default(), &mut |_| true).unwrap();
        m
    };
    let m = run("0.5");
    let s = m.stats();
    assert_eq!(s.f("promotions"), 2.0);
    assert_eq!(s.f("huge_coverage"), 0.5);
    let sp = &m.kernel.os.spaces[0];
    let hot = m.kernel.os.pt.translate(sp.root, sp.top, VirtAddr(BASE + HOT * MB2)).unwrap();
    assert_eq!(hot.size, xlat_core::arch::addr::PageSize::Size2M);
    assert_eq!(run("1").stats().f("promotions"), REGIONS as f64);
    assert_eq!(run("0").stats().f("promotions"), 0.0);
}

/// HawkEye (`os.promotion=hawkeye`, no PCC): every window it promotes up to
/// `hawkeye.promote_per_interval` regions by access coverage. Random loads cover every
/// region about equally, so with one promotion per window the four regions go in four
/// windows, and the walks stop.
#[test]
fn hawkeye_promotes_by_coverage_through_the_os() {
    let c = Config::from_pairs([
        ("tlb.l1d.entries", "16"),
        ("tlb.l2.entries", "64"),
        ("tlb.l2.ways", "4"),
        ("os.promotion", "hawkeye"),
        ("hawkeye.window_refs", "4000"),
        ("os.promotion_interval", "6000"),
        ("hawkeye.promote_per_interval", "1"),
        ("os.khugepaged_pages", "0"),
    ])
    .unwrap();
    let mut m = Machine::new(&c, 1, regions(), 1).unwrap();
    m.prefault().unwrap();
    let mut src = VecSource::new(vec![refs(60_000, 7)], regions());
    m.run(&mut src, RunOptions::default(), &mut |_| true).unwrap();
    let s = m.stats();
    assert_eq!(s.f("hawkeye.windows"), 6.0);
    assert_eq!(s.f("hawkeye.requests"), REGIONS as f64);
    assert_eq!(s.f("promotions"), REGIONS as f64);
    assert_eq!(s.f("huge_coverage"), 1.0);
    assert!(m.xl.mechs.hawkeye().is_some() && m.xl.mechs.pcc().is_none());
    // One address space only.
    let err = Config::from_pairs([("os.promotion", "hawkeye"), ("os.processes", "2")]).unwrap_err().to_string();
    assert!(err.contains("one address space"), "{err}");
}

/// The hindsight oracle (`os.promotion=oracle`, ours): a first run without promotion counts
/// each region's 4 KB walks; the second promotes the most walked ones at its one read, up to
/// the cap. At 25 % (one region of four) it picks the hot region, and the run walks less
/// than without promotion. Without the first run's profile, `simulate` says what is missing.
#[test]
fn the_oracle_promotes_the_most_walked_regions_with_hindsight() {
    let c = cfg(&[("os.promotion", "oracle"), ("os.promotion_first", "1000"), ("os.promotion_cap", "0.25")]);
    let src = || VecSource::new(vec![refs(30_000, 7)], regions());
    let profile = xlat_core::profile_walks(&c, &mut src(), RunOptions::default(), true, 1, &mut |_| true).unwrap();
    assert_eq!(profile.regions.len(), REGIONS as usize);
    assert_eq!(profile.regions[0].tag, (BASE >> 21) + HOT);
    assert!(profile.regions.windows(2).all(|w| w[0].walks >= w[1].walks));
    let s = xlat_core::simulate_with(&c, &mut src(), Some(&profile), RunOptions::default(), true, 1, &mut |_| true).unwrap();
    assert_eq!((s.f("oracle.requests"), s.f("promotions"), s.f("huge_coverage")), (1.0, 1.0, 0.25));
    assert_eq!(s.f("oracle.profile_walks"), profile.walks() as f64);
    let none = xlat_core::simulate(&cfg(&[]), &mut src(), RunOptions::default(), true, 1, &mut |_| true).unwrap();
    assert_eq!(none.f("walks"), profile.walks() as f64, "the first run is the run without promotion");
    assert!(s.f("walks") < 0.5 * none.f("walks"), "{} vs {}", s.f("walks"), none.f("walks"));
    let err = xlat_core::simulate(&c, &mut src(), RunOptions::default(), true, 1, &mut |_| true).unwrap_err();
    assert!(matches!(err, xlat_core::SimError::OracleNeedsProfile), "{err}");
}

/// PCC-driven demotion (`pcc.demotion`): the first read-out promotes every region; with
/// one-entry 2 MB TLBs the four 2 MB pages keep walking, so at the next read-out they come
/// back as huge entries and are demoted, once each. Each 2 MB block is given back: its 512
/// pages move to other frames (every translation used is checked: no stale one), and no
/// region is promoted again.
#[test]
fn promoted_regions_that_keep_walking_are_demoted_and_their_blocks_freed() {
    let c = cfg(&[
        ("os.promotion", "pcc"),
        ("os.promotion_interval", "10000"),
        ("os.promotion_first", "10000"),
        ("pcc.demotion", "true"),
        ("os.khugepaged_pages", "0"),
        ("tlb.l1d.entries_2m", "1"),
        ("tlb.l1d.ways_2m", "1"),
        ("tlb.l2.entries", "1"),
        ("tlb.l2.ways", "1"),
    ]);
    let m = machine(&c, 25_000);
    let s = m.stats();
    let n = REGIONS as f64;
    assert_eq!((s.f("promotions"), s.f("pcc.daemon.demotions"), s.f("demotions")), (n, n, n));
    assert_eq!(s.f("os.migrated_pages"), 512.0 * n);
    assert_eq!(s.f("pcc.daemon.requests"), n, "none promoted again");
    assert_eq!(s.f("huge_coverage"), 0.0);
    let sp = &m.kernel.os.spaces[0];
    let now = m.kernel.os.pt.translate(sp.root, sp.top, VirtAddr(BASE + HOT * MB2)).unwrap();
    assert_eq!(now.size, xlat_core::arch::addr::PageSize::Size4K);
}

/// `pcc.bias` names programs of a mix: one the run does not have is an error, before it runs.
#[test]
fn a_bias_beyond_the_programs_is_an_error() {
    let c = cfg(&[("os.promotion", "pcc"), ("pcc.bias", "1")]);
    let e = Machine::new(&c, 1, regions(), 1).err().expect("one program").to_string();
    assert!(e.contains("pcc.bias names program 1, but the run has 1 program"), "{e}");
}

/// The acceptance test: a promotion the PCC chose removes the region's 4 KB entries
/// from every core's TLBs (two threads of one process on two cores), and the walks after it
/// end at the 2 MB leaf: each core's TLBs then hold the region as a 2 MB entry.
#[test]
fn a_pcc_promotion_leaves_no_4k_entry_on_any_core_and_the_next_walks_end_at_2m() {
    let c = cfg(&[
        ("system.cores", "2"),
        ("os.promotion", "pcc"),
        ("os.promotion_first", "20000"),
        ("os.promotion_interval", "1000000"),
        ("pcc.promote_per_read", "1"),
        ("os.khugepaged_pages", "0"),
    ]);
    let hot = (BASE >> 21) + HOT;
    let in_hot = |m: &Machine, size: xlat_core::arch::addr::PageSize| -> Vec<usize> {
        (0..2)
            .map(|core| {
                m.xl.mmus[core].tlbs.iter().flat_map(|l| l.entries()).filter(|(k, _)| k.size() == size && (k.vpn() << size.shift()) >> 21 == hot).count()
            })
            .collect()
    };
    // Before the read-out both cores hold 4 KB entries of the hot region.
    let mut m = Machine::new(&c, 2, regions(), 1).unwrap();
    m.prefault().unwrap();
    let mut src = VecSource::new(vec![refs(9_000, 7), refs(9_000, 8)], regions());
    m.run(&mut src, RunOptions::default(), &mut |_| true).unwrap();
    assert!(in_hot(&m, xlat_core::arch::addr::PageSize::Size4K).iter().all(|&n| n > 0), "{:?}", in_hot(&m, xlat_core::arch::addr::PageSize::Size4K));
    // The same run past the read-out (20,000 references): the hot region went first.
    let mut m = Machine::new(&c, 2, regions(), 1).unwrap();
    m.prefault().unwrap();
    let mut src = VecSource::new(vec![refs(10_500, 7), refs(10_500, 8)], regions());
    m.run(&mut src, RunOptions::default(), &mut |_| true).unwrap();
    assert_eq!(m.stats().f("promotions"), 1.0);
    assert_eq!(in_hot(&m, xlat_core::arch::addr::PageSize::Size4K), vec![0, 0], "no 4 KB entry of the region on any core");
    let huge = in_hot(&m, xlat_core::arch::addr::PageSize::Size2M);
    assert!(huge.iter().all(|&n| n >= 1), "each core holds the region as a 2 MB entry, filled by a walk: {huge:?}");
}

/// In a VM, a promotion's copy writes the guest's new 2 MB block, so the host backs all of
/// it then (the copying vCPU takes the EPT violations), not page by page at the workload's
/// later first touches. The workload here touches only the lower half of each region: the
/// upper half of each new block is host-backed all the same, and the EPT violations of the
/// run include the 4 x 512 pages of the blocks.
#[test]
fn in_a_vm_a_promotion_backs_its_new_block_in_the_host() {
    let c = cfg(&[
        ("virt.enabled", "true"),
        ("virt.guest_mem_gb", "1"),
        ("phys.size_gb", "2"),
        ("os.promotion", "pcc"),
        ("os.promotion_interval", "5000"),
        ("os.promotion_first", "5000"),
        ("pcc.promote_per_read", "1"),
        ("os.khugepaged_pages", "0"),
    ]);
    let lower: Vec<Ref> = refs(40_000, 9).into_iter().map(|r| Ref::load(r.va - r.va % MB2 + (r.va % MB2) / 2 / 8 * 8, 3)).collect();
    let mut m = Machine::new(&c, 1, regions(), 1).unwrap();
    let mut src = VecSource::new(vec![lower], regions());
    m.run(&mut src, RunOptions::default(), &mut |_| true).unwrap();
    let s = m.stats();
    assert_eq!(s.f("promotions"), REGIONS as f64);
    let vm = &m.kernel.vms[0];
    let sp = &vm.os.spaces[0];
    for r in 0..REGIONS {
        let t = vm.os.pt.translate(sp.root, sp.top, VirtAddr(BASE + r * MB2)).unwrap();
        assert_eq!(t.size, xlat_core::arch::addr::PageSize::Size2M, "region {r}");
        let block = t.frame.addr().0 & !(MB2 - 1);
        for page in 256..512 {
            let gpa = VirtAddr(block + page * 4096);
            assert!(m.kernel.os.translate(vm.space, gpa).is_some(), "region {r}: guest page {page} of the new block not backed");
        }
    }
    assert!(s.f("ept_violations") >= (REGIONS * 512) as f64, "{}", s.f("ept_violations"));
}
