//! The OS model: page-size policies, fragmentation scenarios, promotion, demotion,
//! compaction, shootdowns and context switches. The central property: after any sequence
//! of remappings, every TLB and page-walk-cache entry on every core agrees with a
//! functional walk of the page tables.

use xlat_core::arch::addr::{PageSize, VirtAddr};
use xlat_core::arch::pte::{PTE_A, PTE_D};
use xlat_core::os::OsOp;
use xlat_core::translate::mmu::TlbId;
use xlat_core::{Config, Machine, Ref, Region, RunOptions, Stats, VecSource};

const MB: u64 = 1 << 20;
const GB: u64 = 1 << 30;
/// A 1 GB-aligned user address, like a large mmap.
const BASE: u64 = 0x7f00_0000_0000;

/// A configuration whose every translation used is checked against the page tables.
fn cfg(pairs: &[(&str, &str)]) -> Config {
    Config::from_pairs([("check.translations", "1")].into_iter().chain(pairs.iter().copied())).unwrap()
}

fn region(name: &str, start: u64, len: u64) -> Region {
    Region { name: name.into(), start, len, file: None }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn run(cfg: &Config, streams: Vec<Vec<Ref>>, regions: Vec<Region>, prefault: bool) -> Stats {
    let mut src = VecSource::new(streams, regions);
    xlat_core::simulate(cfg, &mut src, RunOptions::default(), prefault, 1, &mut |_| true).unwrap()
}

/// Touch `va` on core `c` (a load, or a store).
fn touch(m: &mut Machine, c: usize, va: u64, store: bool) {
    let r = if store { Ref::store(va, 1) } else { Ref::load(va, 1) };
    m.step(c, r).unwrap();
}

/// Every TLB entry and page-walk-cache entry of every core agrees with the page tables:
/// a TLB entry maps its page to the frame (and size) a functional walk finds, and is dirty
/// only if the leaf is; a PWC entry points to the node the path really has there.
fn check_no_stale(m: &Machine) {
    for (c, core) in m.xl.mmus.iter().enumerate() {
        let t = &m.kernel.contexts[c];
        assert_eq!(t.ctx, m.kernel.os.spaces[t.space].ctx, "core {c} runs its space's PCID");
        for (name, level) in TlbId::ALL.map(|id| (id.name(), core.tlb(id))) {
            for (key, e) in level.entries() {
                let space = key.ctx as usize - 1;
                let size = key.size();
                let va = VirtAddr(key.vpn() << size.shift());
                let sp = &m.kernel.os.spaces[space];
                let found = m.kernel.os.pt.translate(sp.root, sp.top, va);
                let Some(found) = found else { panic!("core {c} {name}: stale entry for unmapped {:#x} ({size:?}, space {space})", va.0) };
                assert_eq!((found.size, found.frame.0), (size, e.frame), "core {c} {name}: {:#x} of space {space}", va.0);
                assert!(!e.dirty || found.entry & PTE_D != 0, "core {c} {name}: dirty entry for a clean page {:#x}", va.0);
            }
        }
        if c == 0 {
            // The POM-TLB is the chip's: check it once.
            for (key, e) in m.xl.mechs.pomtlb().map(|p| p.entries()).unwrap_or_default() {
                let space = key.ctx as usize - 1;
                let size = key.size();
                let va = VirtAddr(key.vpn() << size.shift());
                let sp = &m.kernel.os.spaces[space];
                let Some(found) = m.kernel.os.pt.translate(sp.root, sp.top, va) else {
                    panic!("POM-TLB: stale entry for unmapped {:#x} ({size:?}, space {space})", va.0)
                };
                // (A 1 GB page is held as 2 MB pieces.)
                assert!(found.size >= size, "POM-TLB: {:#x} is a {:?} page, held as {size:?}", va.0, found.size);
                let frame = found.frame.0 + ((va.0 & (found.size.bytes() - 1)) >> 12);
                let held = e.frame;
                assert_eq!(frame, held, "POM-TLB: {:#x} of space {space}", va.0);
                assert!(!e.dirty || found.entry & PTE_D != 0, "POM-TLB: dirty entry for a clean page {:#x}", va.0);
            }
        }
        for (level, key, node) in core.pwc.entries() {
            let space = key.ctx as usize - 1;
            let va = VirtAddr(key.tag << (12 + 9 * (level as u32 - 1)));
            let sp = &m.kernel.os.spaces[space];
            let real = m.kernel.os.pt.node_at(sp.root, sp.top, va, level - 1);
            assert_eq!(real, Some(node), "core {c} PWC L{level}: prefix {:#x} of space {space}", va.0);
        }
    }
}

#[test]
fn a_reservation_is_promoted_only_when_fully_populated() {
    let c = cfg(&[("os.page_policy", "freebsd")]);
    let mut m = Machine::new(&c, 1, vec![region("heap", BASE, 4 * MB)], 1).unwrap();
    // Touch 511 of the 512 pages of the first 2 MB region, in a scattered order.
    let mut pages: Vec<u64> = (0..512).collect();
    let mut r = Rng(5);
    for i in (1..pages.len()).rev() {
        pages.swap(i, r.below(i as u64 + 1) as usize);
    }
    let last = pages.pop().unwrap();
    for &p in &pages {
        touch(&mut m, 0, BASE + p * 4096, p % 3 == 0);
    }
    let s = m.stats();
    assert_eq!(s.f("promotions"), 0.0);
    assert_eq!(s.f("os.reservations"), 1.0);
    assert_eq!(s.f("huge_coverage"), 0.0);
    // The reservation puts each page at its offset in one aligned 2 MB block.
    let (f0, _) = m.kernel.os.translate(0, VirtAddr(BASE + pages[0] * 4096)).unwrap();
    let block = f0.0 - pages[0];
    assert_eq!(block % 512, 0);
    for &p in &pages {
        assert_eq!(m.kernel.os.translate(0, VirtAddr(BASE + p * 4096)), Some((xlat_core::arch::addr::Frame(block + p), PageSize::Size4K)));
    }
    let l1 = s.f("pt.nodes.l1");
    assert_eq!(l1, 1.0);
    // The 512th page: promoted in place, the level-1 node freed.
    touch(&mut m, 0, BASE + last * 4096, false);
    let s = m.stats();
    assert_eq!(s.f("promotions"), 1.0);
    assert_eq!(s.f("huge_coverage"), 1.0);
    assert_eq!(s.f("pt.nodes.l1"), 0.0);
    assert_eq!(s.f("shootdowns"), 1.0);
    assert_eq!(m.kernel.os.translate(0, VirtAddr(BASE + 5)), Some((xlat_core::arch::addr::Frame(block), PageSize::Size2M)));
    check_no_stale(&m);

    // Without promotion (FreeBSD's "reserv"): contiguous, never promoted.
    let c = cfg(&[("os.page_policy", "freebsd"), ("os.reservation_promote", "false")]);
    let refs: Vec<Ref> = (0..512).map(|p| Ref::load(BASE + p * 4096, 1)).collect();
    let s = run(&c, vec![refs], vec![region("heap", BASE, 4 * MB)], false);
    assert_eq!((s.f("promotions"), s.f("huge_coverage"), s.f("os.reservations")), (0.0, 0.0, 1.0));
}

#[test]
fn reservations_are_broken_under_memory_pressure() {
    // 1 GB of memory; one page in each of 800 2 MB regions: the first ~510 reserve a block,
    // then 4 KB allocations run dry and the least recently used reservations are broken.
    let c = cfg(&[("os.page_policy", "freebsd"), ("phys.size_gb", "1")]);
    let refs: Vec<Ref> = (0..800).map(|i| Ref::load(BASE + i * 2 * MB, 1)).collect();
    let s = run(&c, vec![refs], vec![region("heap", BASE, 1600 * MB)], false);
    assert!(s.f("os.reservations") >= 500.0, "{}", s.f("os.reservations"));
    assert!(s.f("os.reservations_broken") >= 1.0);
    assert_eq!(s.f("faults"), 800.0);
    assert_eq!(s.f("mapped_bytes"), 800.0 * 4096.0);
}

#[test]
fn pinned_fragmentation_breaks_exactly_that_fraction_of_blocks() {
    let base = Machine::new(&cfg(&[("phys.size_gb", "4")]), 1, vec![], 1).unwrap();
    let total = base.kernel.os.start.free_2m_blocks;
    assert_eq!(total, 2047);
    for x in [0.5, 0.9] {
        let c = cfg(&[("phys.size_gb", "4"), ("phys.fragmentation", &format!("pinned:{x}"))]);
        let m = Machine::new(&c, 1, vec![], 1).unwrap();
        let pinned = (x * total as f64).round() as u64;
        assert_eq!(m.kernel.os.start.free_2m_blocks, total - pinned, "pinned:{x}");
        assert_eq!(m.kernel.os.start.pinned_frames, pinned);
        let s = m.stats();
        assert_eq!(s.f("phys.start.free_2m_blocks"), (total - pinned) as f64);
        // A pinned block still has 511 free frames, as orders 0..8.
        assert_eq!(s.f("phys.start.free_blocks.order8"), pinned as f64 + base.kernel.os.start.free_blocks[8] as f64);
        let m2 = Machine::new(&c, 1, vec![], 1).unwrap();
        assert_eq!(m2.stats(), s, "reproducible from the seed");
    }
    // With memhog (phys.available_gb), X applies to what is left.
    let c = cfg(&[("phys.size_gb", "4"), ("phys.available_gb", "1"), ("phys.fragmentation", "pinned:0.5")]);
    let m = Machine::new(&c, 1, vec![], 1).unwrap();
    assert!(m.kernel.os.start.free_2m_blocks <= 256 && m.kernel.os.start.free_2m_blocks >= 250, "{}", m.kernel.os.start.free_2m_blocks);
}

#[test]
fn thp_under_fragmentation_falls_back_to_4k() {
    // 90 % of the blocks pinned, and only 1 GB left free: a 1 GB region cannot be all huge.
    let refs: Vec<Ref> = (0..512).map(|i| Ref::load(BASE + i * 2 * MB, 1)).collect();
    let c = cfg(&[("os.page_policy", "thp"), ("phys.size_gb", "4"), ("phys.available_gb", "1"), ("phys.fragmentation", "pinned:0.9")]);
    let s = run(&c, vec![refs.clone()], vec![region("data", BASE, GB)], false);
    assert_eq!(run(&c, vec![refs], vec![region("data", BASE, GB)], false), s, "deterministic");
    let avail = s.f("phys.start.free_2m_blocks");
    assert!((48.0..=52.0).contains(&avail), "10 % of 1 GB: {avail}");
    assert_eq!(s.f("os.huge_faults"), avail, "every free block went to a huge page, in first-touch order");
    assert_eq!(s.f("faults"), 512.0);
    let cov = s.f("huge_coverage");
    let expect = avail * 2.0 * MB as f64 / (avail * 2.0 * MB as f64 + (512.0 - avail) * 4096.0);
    assert!((cov - expect).abs() < 1e-9, "{cov} vs {expect}");
}

#[test]
fn aged_memory_reaches_its_target() {
    let c = cfg(&[("phys.size_gb", "2"), ("phys.fragmentation", "aged:3"), ("phys.aged_target", "0.25")]);
    let m = Machine::new(&c, 1, vec![], 1).unwrap();
    let whole = 1023.0_f64;
    assert_eq!(m.kernel.os.start.free_2m_blocks as f64, (0.25 * whole).round());
    let s = m.stats();
    let spread = (0..9).filter(|o| s.f(&format!("phys.start.free_blocks.order{o}")) > 0.0).count();
    assert!(spread >= 6, "aging leaves free blocks of many orders: {spread}");
}

#[test]
fn ideal_maps_an_aligned_region_in_2m_pages_and_walks_end_at_l2() {
    let no_pwc = [("pwc.l4.entries", "0"), ("pwc.l3.entries", "0"), ("pwc.l2.entries", "0")];
    let mut pairs: Vec<(&str, &str)> = no_pwc.to_vec();
    pairs.push(("os.page_policy", "ideal"));
    // 8 GB: 4096 2 MB pages, more than the L2 TLB holds.
    let mut r = Rng(9);
    let big: Vec<Ref> = (0..20_000).map(|_| Ref::load(BASE + r.below(8 * GB / 8) * 8, 1)).collect();
    let s = run(&cfg(&pairs), vec![big], vec![region("data", BASE, 8 * GB)], true);
    assert_eq!(s.f("huge_coverage"), 1.0);
    assert_eq!(s.f("pt.nodes.l1"), 0.0, "no level-1 nodes at all");
    assert_eq!(s.f("mapped_bytes"), (8 * GB) as f64);
    assert!(s.f("walks") > 1000.0, "{}", s.f("walks"));
    assert_eq!(s.f("walk_steps_per_walk"), 3.0, "L4, L3, L2: the walk ends at the 2 MB leaf");
    assert!(s.f("tlb.l1d.hits_2m") > 0.0 && s.f("tlb.l1d.hits_4k") == 0.0);

    // Demand faults: one per 2 MB region touched, each a huge fault.
    let refs: Vec<Ref> = (0..20_000).map(|_| Ref::load(BASE + r.below(GB / 8) * 8, 1)).collect();
    let s = run(&cfg(&pairs), vec![refs.clone()], vec![region("data", BASE, GB)], false);
    assert_eq!(s.f("huge_coverage"), 1.0);
    assert_eq!(s.f("faults"), 512.0);
    assert_eq!(s.f("os.huge_faults"), 512.0);

    // A region that is not 2 MB-aligned at its ends: the partial 2 MB pieces stay 4 KB.
    let s = run(&cfg(&pairs), vec![vec![Ref::load(BASE + 4096, 1), Ref::load(BASE + 3 * MB, 1)]], vec![region("data", BASE + 4096, 4 * MB)], false);
    assert_eq!(s.f("os.huge_faults"), 1.0);
    assert_eq!(s.f("mapped_bytes"), (2 * MB + 4096) as f64);

    // 1 GB pages: the walk ends at L3.
    pairs.push(("os.huge_1g", "true"));
    let s = run(&cfg(&pairs), vec![refs], vec![region("data", BASE, GB)], true);
    assert_eq!(s.f("huge_coverage"), 1.0);
    assert!(s.f("walks") >= 1.0);
    assert_eq!(s.f("walk_steps_per_walk"), 2.0, "L4, L3: the walk ends at the 1 GB leaf");
    assert_eq!(s.f("pt.nodes.l2"), 0.0);
    assert!(s.f("tlb.l1d.hits_1g") > 0.0);
}

#[test]
fn lowhalf_maps_the_lower_half_in_2m_pages() {
    let c = cfg(&[("os.page_policy", "ideal"), ("phys.fragmentation", "lowhalf"), ("phys.size_gb", "4")]);
    let regions = vec![region("data", BASE, 256 * MB)];
    let s = run(&c, vec![vec![Ref::load(BASE, 1)]], regions.clone(), true);
    assert_eq!(s.f("phys.start.free_2m_blocks"), 64.0, "only the lower half's blocks stay whole");
    let cov = s.f("huge_coverage");
    assert!((cov - 0.5).abs() < 1e-12, "{cov}");
    let mut m = Machine::new(&c, 1, regions, 1).unwrap();
    m.prefault().unwrap();
    assert_eq!(m.kernel.os.translate(0, VirtAddr(BASE + 127 * MB)).unwrap().1, PageSize::Size2M);
    assert_eq!(m.kernel.os.translate(0, VirtAddr(BASE + 128 * MB)).unwrap().1, PageSize::Size4K);
    // A trace declares no regions: lowhalf cannot know the halves.
    assert!(Machine::new(&c, 1, vec![], 1).is_err());
}

#[test]
fn khugepaged_collapses_with_its_budget() {
    let c = cfg(&[("os.page_policy", "thp"), ("phys.size_gb", "2")]);
    let mut m = Machine::new(&c, 1, vec![region("data", BASE, 32 * MB)], 1).unwrap();
    for i in 0..16 {
        touch(&mut m, 0, BASE + i * 2 * MB, false);
    }
    assert_eq!(m.stats().f("huge_coverage"), 1.0);
    for i in 0..16 {
        assert!(m.request_demotion(0, 0, VirtAddr(BASE + i * 2 * MB)).unwrap());
    }
    let s = m.stats();
    assert_eq!((s.f("demotions"), s.f("huge_coverage"), s.f("pt.nodes.l1")), (16.0, 0.0, 16.0));
    check_no_stale(&m);
    // Leave region 3 with 12 pages mapped (all young: split pages inherit the A bit).
    for p in 12..512 {
        assert!(m.unmap(0, 0, VirtAddr(BASE + 6 * MB + p * 4096)).unwrap());
    }
    m.run_khugepaged(0).unwrap();
    let s = m.stats();
    assert_eq!(s.f("os.khugepaged.scanned"), 8.0, "4096 pages = 8 regions per wake-up");
    assert_eq!(s.f("promotions"), 8.0);
    m.run_khugepaged(0).unwrap();
    let s = m.stats();
    assert_eq!(s.f("promotions"), 16.0, "the second wake-up resumes where the first stopped");
    assert_eq!(s.f("huge_coverage"), 1.0);
    assert_eq!(s.f("pt.nodes.l1"), 0.0, "collapsed regions free their level-1 nodes");
    assert_eq!(s.f("mapped_bytes"), (32 * MB) as f64, "the holes of region 3 are mapped (zeroed) too");
    check_no_stale(&m);

    // max_ptes_none = 100: a region with 500 holes is left alone.
    let c = cfg(&[("os.page_policy", "thp"), ("phys.size_gb", "2"), ("os.khugepaged_max_ptes_none", "100")]);
    let mut m = Machine::new(&c, 1, vec![region("data", BASE, 4 * MB)], 1).unwrap();
    touch(&mut m, 0, BASE, false);
    touch(&mut m, 0, BASE + 2 * MB, false);
    m.request_demotion(0, 0, VirtAddr(BASE)).unwrap();
    m.request_demotion(0, 0, VirtAddr(BASE + 2 * MB)).unwrap();
    for p in 12..512 {
        m.unmap(0, 0, VirtAddr(BASE + p * 4096)).unwrap();
    }
    m.run_khugepaged(0).unwrap();
    assert_eq!(m.stats().f("promotions"), 1.0, "only the full region");
}

#[test]
fn khugepaged_runs_on_its_interval() {
    // khugepaged wakes once per interval of simulated time (the smallest core clock).
    // madvise with no madvised region: every fault is a plain 4 KB one (no zeroing stalls),
    // and khugepaged has nothing to collapse but still wakes.
    let c = cfg(&[("os.page_policy", "madvise"), ("os.khugepaged_interval_cycles", "100000"), ("phys.size_gb", "2")]);
    let mut r = Rng(3);
    let refs: Vec<Ref> = (0..200_000).map(|_| Ref::load(BASE + r.below(64 * MB / 8) * 8, 4)).collect();
    let s = run(&c, vec![refs], vec![region("data", BASE, 64 * MB)], false);
    let wake = s.f("os.khugepaged.wakeups");
    let expected = (s.f("cycles") / 100_000.0).floor();
    assert!(wake >= expected - 2.0 && wake <= expected + 1.0, "{wake} wake-ups in {} cycles", s.f("cycles"));
}

#[test]
fn compaction_makes_a_2m_block_from_movable_pages() {
    // 1 GB machine with 128 MB free; a 4 KB-only region fills most of it, then every other
    // page is unmapped: plenty of free memory, almost no free 2 MB block. A madvised region
    // with defrag=always then gets its huge pages by compaction.
    let c = cfg(&[
        ("phys.size_gb", "1"),
        ("phys.available_gb", "0.125"),
        ("os.page_policy", "madvise"),
        ("os.madvise_regions", "hot"),
        ("os.thp_defrag", "always"),
    ]);
    let cold = region("cold", BASE, 120 * MB);
    let hot = region("hot", BASE + GB, 16 * MB);
    let mut m = Machine::new(&c, 1, vec![cold, hot], 1).unwrap();
    // Page-table nodes first (they are unmovable), then the data.
    for i in 0..60 {
        touch(&mut m, 0, BASE + i * 2 * MB, false);
    }
    for p in 0..(120 * MB / 4096) {
        touch(&mut m, 0, BASE + p * 4096, p % 7 == 0);
    }
    for p in (0..(120 * MB / 4096)).step_by(2) {
        m.kernel.os.unmap(0, VirtAddr(BASE + p * 4096)).unwrap();
    }
    m.os_sync(None);
    m.kernel.os.phys.drain_pcp();
    let before = m.kernel.os.phys.free_2m_blocks();
    assert!(before < 8, "{before} free 2 MB blocks");
    for i in 0..8 {
        touch(&mut m, 0, BASE + GB + i * 2 * MB, true);
    }
    let s = m.stats();
    assert_eq!(s.f("os.huge_faults"), 8.0);
    assert!(s.f("os.compactions") >= (8 - before) as f64, "{}", s.f("os.compactions"));
    assert!(s.f("os.migrated_pages") > 0.0);
    for i in 0..8 {
        assert_eq!(m.kernel.os.translate(0, VirtAddr(BASE + GB + i * 2 * MB)).unwrap().1, PageSize::Size2M);
    }
    // The migrated pages are still mapped, each to a frame of its own.
    let mut frames = std::collections::HashSet::new();
    for p in (1..(120 * MB / 4096)).step_by(2) {
        let (f, size) = m.kernel.os.translate(0, VirtAddr(BASE + p * 4096)).unwrap();
        assert_eq!(size, PageSize::Size4K);
        assert!(frames.insert(f), "frame {f:?} mapped twice");
    }
    check_no_stale(&m);
}

#[test]
fn a_shootdown_reaches_every_core_running_the_space_and_is_charged() {
    let c = cfg(&[("system.cores", "2"), ("os.page_policy", "freebsd")]);
    let mut m = Machine::new(&c, 2, vec![region("heap", BASE, 4 * MB)], 1).unwrap();
    for p in 0..511 {
        touch(&mut m, (p % 2) as usize, BASE + p * 4096, false);
    }
    assert!(m.xl.mmus[1].tlb(TlbId::L2).occupancy() > 0);
    let before = m.mem.ctxs[1].window.now();
    assert!(m.request_promotion(0, 0, VirtAddr(BASE)).unwrap());
    let s = m.stats();
    assert_eq!((s.f("promotions"), s.f("shootdowns"), s.f("os.shootdown_ipis")), (1.0, 1.0, 1.0));
    assert_eq!(s.f("shootdown_cycles"), (c.shootdown.initiator_cycles + c.shootdown.remote_cycles) as f64);
    assert!(m.mem.ctxs[1].window.now() >= before + c.shootdown.remote_cycles, "the remote core lost the interrupt's cycles");
    // 512 pages > the flush ceiling: the whole address space left both cores' TLBs.
    assert_eq!(s.f("os.full_flushes"), 1.0);
    assert_eq!(m.xl.mmus[0].tlb(TlbId::L2).occupancy() + m.xl.mmus[1].tlb(TlbId::L2).occupancy(), 0);
    check_no_stale(&m);

    // A demotion flushes one 2 MB page: a ranged flush.
    touch(&mut m, 1, BASE + 5, false);
    touch(&mut m, 1, BASE + 2 * MB + 5, false);
    assert!(m.request_demotion(1, 0, VirtAddr(BASE)).unwrap());
    assert_eq!(m.stats().f("os.full_flushes"), 1.0);
    assert!(m.xl.mmus[1].tlb(TlbId::L2).occupancy() >= 1, "the other page's entry stays");
    check_no_stale(&m);
}

#[test]
fn skipping_the_shootdown_is_caught() {
    // The check itself: an unmap without applying its shootdown leaves stale entries.
    let c = cfg(&[]);
    let mut m = Machine::new(&c, 1, vec![region("heap", BASE, 4 * MB)], 1).unwrap();
    touch(&mut m, 0, BASE, false);
    assert!(m.kernel.os.unmap(0, VirtAddr(BASE)).unwrap());
    let stale = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check_no_stale(&m)));
    assert!(stale.is_err(), "the checker must see the stale translation");
    m.os_sync(None);
    check_no_stale(&m);
}

/// Random remappings (promotions, demotions, unmaps, khugepaged, context switches, and the
/// programs' own munmap/mprotect/migration calls) on two cores and two processes,
/// interleaved with random references: no core ever holds a translation or a page-walk-cache
/// entry the page tables do not have.
#[test]
fn shootdowns_leave_no_stale_translation_anywhere() {
    let mut freed_nodes = 0.0;
    for seed in 1..=16u64 {
        let policy = ["thp", "freebsd", "never", "ideal"][seed as usize % 4];
        let pcid = if seed % 3 == 0 { "false" } else { "true" };
        // Half the runs flush 2 MB of 4 KB pages by range instead of a full flush.
        let ceiling = if seed % 2 == 0 { "1000" } else { "33" };
        let protocol = if seed % 4 < 2 { ["ipi", "tcat-cotag", "tcat-cotagless"][seed as usize % 3] } else { "ipi" };
        let c = cfg(&[
            ("system.cores", "2"),
            ("os.processes", "2"),
            ("os.timeslice_cycles", "3000"),
            ("os.pcid", pcid),
            ("os.flush_ceiling_pages", ceiling),
            ("os.page_policy", policy),
            ("os.khugepaged_interval_cycles", "20000"),
            ("phys.size_gb", "1"),
            ("tlb.l2.entries", "64"),
            ("tlb.l2.ways", "4"),
            // Half the runs have a POM-TLB, shared by the cores, which shootdowns must reach,
            // and those keep the TLBs coherent by IPIs or by TCAT (co-tag, co-tagless).
            ("pomtlb.enabled", if seed % 4 < 2 { "true" } else { "false" }),
            ("pomtlb.size_mb", "1"),
            ("shootdown.protocol", protocol),
            ("coherence.enabled", if protocol == "ipi" && seed % 2 == 1 { "false" } else { "true" }),
            ("check.translations", "1"),
            ("tcat.fill_invalidates", if seed % 8 < 4 { "true" } else { "false" }),
            ("tlb.set_index", if seed % 2 == 0 || protocol == "tcat-cotagless" { "vpn_xor_vm" } else { "vpn" }),
        ]);
        let len = 16 * MB;
        let regions = vec![region("a", BASE, len), region("b", BASE + GB + 2 * MB, 6 * MB + 8192)];
        let mut m = Machine::new(&c, 2, regions, seed).unwrap();
        let mut r = Rng(seed * 7919 + 1);
        let pick = |r: &mut Rng| -> u64 {
            if r.below(4) == 0 {
                BASE + GB + 2 * MB + r.below(6 * MB + 8192)
            } else {
                BASE + r.below(len)
            }
        };
        for round in 0..40 {
            let streams: Vec<Vec<Ref>> = (0..2)
                .map(|_| {
                    (0..300)
                        .map(|_| {
                            let va = pick(&mut r);
                            // The programs change their own mappings too (munmap, mprotect,
                            // migration, MADV_FREE of up to 2.3 MB): OS calls in the streams.
                            if r.below(100) == 0 {
                                let op = [OsOp::Unmap, OsOp::Protect, OsOp::Unprotect, OsOp::Migrate, OsOp::Free][r.below(5) as usize];
                                return Ref::os_call(op, va, 1 + r.below(600) as u16, 3);
                            }
                            if r.below(3) == 0 {
                                Ref::store(va, 2)
                            } else {
                                Ref::load(va, 2)
                            }
                        })
                        .collect()
                })
                .collect();
            let mut src = VecSource::new(streams, vec![]);
            m.run(&mut src, RunOptions::default(), &mut |_| true).unwrap();
            check_no_stale(&m);
            for _ in 0..4 {
                let core = r.below(2) as usize;
                let space = r.below(2) as usize;
                let va = VirtAddr(pick(&mut r));
                match r.below(4) {
                    0 => drop(m.request_promotion(core, space, va).unwrap()),
                    1 => drop(m.request_demotion(core, space, va).unwrap()),
                    2 => drop(m.unmap(core, space, va).unwrap()),
                    _ => m.run_khugepaged(core).unwrap(),
                }
                check_no_stale(&m);
            }
            let _ = round;
        }
        let s = m.stats();
        assert!(s.f("os.context_switches") > 0.0, "seed {seed}");
        assert!(s.f("shootdowns") > 0.0, "seed {seed}");
        assert!(s.f("os.calls") > 0.0 && s.f("os.unmapped_pages") > 0.0, "seed {seed}");
        freed_nodes += s.f("os.freed_pt_nodes");
        if protocol != "ipi" {
            assert!(s.f("tcat.lines") > 0.0 && s.f("tcat.invalidations") > 0.0, "seed {seed}: TCAT ran");
        }
    }
    assert!(freed_nodes > 0.0, "some unmap emptied a level-1 node, whose PWC entries must go too");
}

#[test]
fn processes_share_cores_by_time_slices() {
    // 2 MB of 4 KB pages per process: both fit the L2 TLB, unless switches flush it.
    let mut r = Rng(11);
    let refs: Vec<Ref> = (0..100_000).map(|_| Ref::load(BASE + r.below(2 * MB / 8) * 8, 2)).collect();
    let regions = vec![region("data", BASE, 2 * MB)];
    let one = run(&cfg(&[]), vec![refs.clone()], regions.clone(), false);
    let two = run(&cfg(&[("os.processes", "2"), ("os.timeslice_cycles", "20000")]), vec![refs.clone()], regions.clone(), false);
    let flush = run(&cfg(&[("os.processes", "2"), ("os.timeslice_cycles", "20000"), ("os.pcid", "false")]), vec![refs.clone()], regions.clone(), false);
    assert_eq!(one.f("os.context_switches"), 0.0);
    let switches = two.f("os.context_switches");
    assert!(switches > 5.0, "{switches}");
    assert!(two.f("mapped_bytes") > one.f("mapped_bytes"), "each process maps its own pages");
    assert_eq!(two.f("refs"), one.f("refs"), "the stream is shared, not duplicated");
    assert!(flush.f("walks") > two.f("walks"), "without PCIDs every switch flushes the TLBs");
    assert_eq!(run(&cfg(&[("os.processes", "2"), ("os.timeslice_cycles", "20000")]), vec![refs], regions, false), two, "deterministic");
}

#[test]
fn bad_os_keys_are_one_line_errors() {
    for (k, v) in [
        ("os.page_policy", "sometimes"),
        ("phys.fragmentation", "pinned:2"),
        ("phys.fragmentation", "shredded"),
        ("os.processes", "0"),
        ("phys.aged_target", "1.5"),
        ("phys.available_gb", "100"),
        ("os.khugepaged_max_ptes_none", "600"),
        ("os.madvise_regions", "a,,b"),
    ] {
        let e = Config::from_pairs([(k, v)]).unwrap_err().to_string();
        assert!(e.contains(k) && !e.contains('\n'), "{e}");
    }
}

/// The leaf mapping `va` in space 0.
fn leaf(m: &Machine, va: u64) -> xlat_core::os::pt::Mapping {
    let sp = &m.kernel.os.spaces[0];
    m.kernel.os.pt.translate(sp.root, sp.top, VirtAddr(va)).expect("mapped")
}

/// Share of the 16 KB-aligned groups of 4 pages of `[start, start + len)` whose frames are
/// contiguous and 16 KB-aligned: what PTE coalescing (seeds/002) can use.
fn coalescable_16k(m: &Machine, space: usize, start: u64, len: u64) -> f64 {
    let mut ok = 0;
    let groups = len / (16 * 1024);
    for g in 0..groups {
        let va = start + g * 16 * 1024;
        let frames: Vec<u64> = (0..4).filter_map(|i| m.kernel.os.translate(space, VirtAddr(va + i * 4096))).map(|(f, _)| f.0).collect();
        if frames.len() == 4 && frames[0] % 4 == 0 && frames.windows(2).all(|w| w[1] == w[0] + 1) {
            ok += 1;
        }
    }
    ok as f64 / groups as f64
}

#[test]
fn contiguity_comes_by_chance_from_the_buddy_allocator_and_by_design_from_reservations() {
    let len = 8 * MB;
    let touch_all = |pairs: &[(&str, &str)], random_order: bool| -> f64 {
        let mut m = Machine::new(&cfg(pairs), 1, vec![region("heap", BASE, len)], 1).unwrap();
        let mut pages: Vec<u64> = (0..len / 4096).collect();
        if random_order {
            let mut r = Rng(17);
            for i in (1..pages.len()).rev() {
                pages.swap(i, r.below(i as u64 + 1) as usize);
            }
        }
        for p in pages {
            touch(&mut m, 0, BASE + p * 4096, false);
        }
        coalescable_16k(&m, 0, BASE, len)
    };
    let seq = touch_all(&[], false);
    let rnd = touch_all(&[], true);
    let resv = touch_all(&[("os.page_policy", "freebsd"), ("os.reservation_promote", "false")], true);
    eprintln!("coalescable 16 KB groups: buddy sequential {seq:.3}, buddy random {rnd:.3}, reservations {resv:.3}");
    assert!(seq > 0.1 && seq < 1.0, "sequential first touch: some contiguity, broken by page-table pages: {seq}");
    assert!(rnd < 0.05, "random first touch: hardly any: {rnd}");
    assert_eq!(resv, 1.0, "a reservation places every page at its offset");
}

#[test]
fn prefaulting_as_writes_maps_in_address_order_and_leaves_pages_accessed_and_dirty() {
    // The coalescing study's model of a program's initialization: every page written once,
    // in address order. Linux's per-CPU lists hand out ascending frames (contiguity by
    // chance, broken where a page-table page is taken); a LIFO list, as FreeBSD's page cache,
    // descending ones (none); reservations place every page (all of it).
    let len = 8 * MB;
    let prefaulted = |pairs: &[(&str, &str)]| {
        let mut pairs = pairs.to_vec();
        pairs.push(("os.prefault_as", "write"));
        let mut m = Machine::new(&cfg(&pairs), 1, vec![region("heap", BASE, len)], 1).unwrap();
        m.prefault().unwrap();
        m
    };
    let linux = prefaulted(&[]);
    let share = coalescable_16k(&linux, 0, BASE, len);
    assert!(share > 0.1 && share < 1.0, "{share}");
    // The page tables' own count (statistic pt.coalescable.16k) agrees: every group of the
    // region is whole and uniformly accessed and dirty, so only contiguity decides.
    let (groups, ok) = linux.kernel.os.pt.leaf_groups(2);
    assert_eq!((groups, ok as f64 / groups as f64), (len / (16 << 10), share));
    assert!(linux.kernel.os.pt.leaf_groups(3).1 * 2 <= ok, "a 32 KB group is two 16 KB ones");
    assert_eq!(coalescable_16k(&prefaulted(&[("phys.pcp_order", "lifo")]), 0, BASE, len), 0.0);
    let resv = prefaulted(&[("os.page_policy", "freebsd"), ("os.reservation_promote", "false")]);
    assert_eq!(coalescable_16k(&resv, 0, BASE, len), 1.0);
    // Every leaf accessed and dirty: 4 KB ones, and the 2 MB pages full reservations become.
    let sup = prefaulted(&[("os.page_policy", "freebsd")]);
    for (m, size) in [(&linux, PageSize::Size4K), (&resv, PageSize::Size4K), (&sup, PageSize::Size2M)] {
        for va in (BASE..BASE + len).step_by(64 * 1024) {
            let found = leaf(m, va);
            assert_eq!(found.size, size);
            assert_eq!(found.entry & (PTE_A | PTE_D), PTE_A | PTE_D, "{va:#x}");
        }
    }
    // By default prefaulted pages are clean and not accessed.
    let mut m = Machine::new(&cfg(&[]), 1, vec![region("heap", BASE, len)], 1).unwrap();
    m.prefault().unwrap();
    assert_eq!(leaf(&m, BASE).entry & (PTE_A | PTE_D), 0);
}

#[test]
fn madv_free_leaves_pages_mapped_but_clean_and_demotes_a_superpage_it_covers_in_part() {
    // FreeBSD's MADV_FREE for jemalloc (seeds/002 §3.4): A and D cleared in the range, a 2 MB
    // page the range covers in part demoted, one it covers whole kept; os.madv_free=false
    // (nomdv) ignores the call.
    for honour in [true, false] {
        let c = cfg(&[("os.page_policy", "freebsd"), ("os.madv_free", if honour { "true" } else { "false" })]);
        let mut m = Machine::new(&c, 1, vec![region("heap", BASE, 4 * MB)], 1).unwrap();
        for p in 0..1024 {
            touch(&mut m, 0, BASE + p * 4096, true);
        }
        assert!([BASE, BASE + 2 * MB].iter().all(|&va| leaf(&m, va).size == PageSize::Size2M), "both reservations promoted");
        let calls = vec![Ref::os_call(OsOp::Free, BASE + 64 * 1024, 16, 30), Ref::os_call(OsOp::Free, BASE + 2 * MB, 512, 30)];
        m.run(&mut VecSource::new(vec![calls], vec![]), RunOptions::default(), &mut |_| true).unwrap();
        check_no_stale(&m);
        let s = m.stats();
        let ad = |va: u64| leaf(&m, va).entry & (PTE_A | PTE_D);
        if honour {
            assert_eq!(leaf(&m, BASE).size, PageSize::Size4K, "demoted: the range covers part of it");
            assert_eq!((ad(BASE + 64 * 1024), ad(BASE + 124 * 1024)), (0, 0), "the freed pages are clean and not accessed");
            assert_eq!((ad(BASE + 60 * 1024), ad(BASE + 128 * 1024)), (PTE_A | PTE_D, PTE_A | PTE_D), "its neighbours are not");
            assert_eq!((leaf(&m, BASE + 2 * MB).size, ad(BASE + 2 * MB)), (PageSize::Size2M, 0), "covered whole: kept, cleaned");
            assert_eq!((s.f("os.freed_pages"), s.f("os.calls"), s.f("demotions")), (16.0 + 512.0, 2.0, 1.0));
        } else {
            assert!([BASE, BASE + 2 * MB].iter().all(|&va| leaf(&m, va).size == PageSize::Size2M && ad(va) == PTE_A | PTE_D));
            assert_eq!((s.f("os.freed_pages"), s.f("os.calls"), s.f("os.ignored_calls")), (0.0, 0.0, 2.0));
        }
    }
}

#[test]
fn a_lower_promotion_threshold_promotes_a_reservation_early_where_the_region_covers_it() {
    // Quicksilver's 64 of 512 (seeds/002 §3.8): the 64th fault promotes, zeroing the other 448
    // pages; FreeBSD's 512 waits; a region smaller than 2 MB is never promoted early.
    for (at, promoted) in [("64", true), ("512", false)] {
        let c = cfg(&[("os.page_policy", "freebsd"), ("os.reservation_promote_at", at)]);
        let mut m = Machine::new(&c, 1, vec![region("heap", BASE, 4 * MB), region("small", BASE + 8 * MB, MB)], 1).unwrap();
        for p in 0..64 {
            touch(&mut m, 0, BASE + p * 4096, true);
            touch(&mut m, 0, BASE + 8 * MB + p * 4096, true);
        }
        let size = |va: u64| m.kernel.os.translate(0, VirtAddr(va)).map(|(_, s)| s);
        assert_eq!(size(BASE + 300 * 4096), if promoted { Some(PageSize::Size2M) } else { None }, "at {at}");
        assert_eq!(size(BASE + 8 * MB), Some(PageSize::Size4K), "a 1 MB region is never promoted early");
        assert_eq!(m.stats().f("promotions"), if promoted { 1.0 } else { 0.0 });
        check_no_stale(&m);
    }
    let e = Config::from_pairs([("os.reservation_promote_at", "0")]).unwrap_err().to_string();
    assert!(e.contains("os.reservation_promote_at"), "{e}");
}

#[test]
fn page_walk_caches_skip_to_a_2m_leaf() {
    // Two 2 MB pages in one 1 GB region: the second walk hits the L3 PWC (VA[47:30] -> the
    // L2 node) and reads only the 2 MB leaf entry; no L2 PWC entry exists for a leaf.
    let c = cfg(&[("os.page_policy", "ideal")]);
    let refs = vec![Ref::load(BASE, 1), Ref::load(BASE + 4 * MB, 1)];
    let s = run(&c, vec![refs], vec![region("data", BASE, GB)], true);
    assert_eq!(s.f("walks"), 2.0);
    assert_eq!(s.f("walk_steps"), 3.0 + 1.0);
    assert_eq!((s.f("pwc.l3.hits"), s.f("pwc.l2.hits")), (1.0, 0.0));
}

#[test]
fn a_demoted_superpage_is_promoted_again_in_place_on_freebsd() {
    let c = cfg(&[("os.page_policy", "freebsd")]);
    let mut m = Machine::new(&c, 1, vec![region("heap", BASE, 2 * MB)], 1).unwrap();
    for p in 0..512 {
        touch(&mut m, 0, BASE + p * 4096, false);
    }
    let (block, size) = m.kernel.os.translate(0, VirtAddr(BASE)).unwrap();
    assert_eq!(size, PageSize::Size2M);
    assert!(m.request_demotion(0, 0, VirtAddr(BASE)).unwrap());
    assert_eq!(m.kernel.os.translate(0, VirtAddr(BASE + 4096)).unwrap(), (xlat_core::arch::addr::Frame(block.0 + 1), PageSize::Size4K));
    let free = m.kernel.os.phys.free_frames();
    assert!(m.request_promotion(0, 0, VirtAddr(BASE)).unwrap());
    assert_eq!(m.kernel.os.translate(0, VirtAddr(BASE)).unwrap(), (block, PageSize::Size2M), "same block: no copy");
    assert!(m.kernel.os.phys.free_frames() <= free + 1, "no new block was allocated and the old frames stay");
    check_no_stale(&m);
}

#[test]
fn os_requests_name_a_missing_core_or_space() {
    let mut m = Machine::new(&cfg(&[]), 1, vec![region("heap", BASE, 2 * MB)], 1).unwrap();
    let e = m.request_promotion(3, 0, VirtAddr(BASE)).unwrap_err().to_string();
    assert!(e.contains("core 3"), "{e}");
    let e = m.request_demotion(0, 2, VirtAddr(BASE)).unwrap_err().to_string();
    assert!(e.contains("address space 2"), "{e}");
    assert!(m.unmap(0, 0, VirtAddr(1 << 60)).is_err(), "outside the address space");
    assert!(!m.unmap(0, 0, VirtAddr(BASE)).unwrap(), "nothing mapped there");
}

#[test]
fn thp_madvise_maps_huge_pages_only_in_madvised_regions() {
    let regions = vec![region("graph", BASE, 8 * MB), region("props", BASE + GB, 8 * MB)];
    let refs: Vec<Ref> = (0..4).flat_map(|i| [Ref::load(BASE + i * 2 * MB, 1), Ref::load(BASE + GB + i * 2 * MB, 1)]).collect();
    let s = run(&cfg(&[("os.page_policy", "madvise"), ("os.madvise_regions", "props")]), vec![refs.clone()], regions.clone(), false);
    assert_eq!(s.f("os.huge_faults"), 4.0, "the four regions of 'props'");
    let s = run(&cfg(&[("os.page_policy", "madvise")]), vec![refs.clone()], regions.clone(), false);
    assert_eq!(s.f("os.huge_faults"), 0.0, "a program that never calls madvise");
    let s = run(&cfg(&[("os.page_policy", "madvise"), ("os.madvise_regions", "*")]), vec![refs], regions, false);
    assert_eq!(s.f("os.huge_faults"), 8.0);
}

#[test]
fn a_kernel_software_walk_reads_only_the_entries_that_changed_since_its_last() {
    // PT-Baker's system call (seeds/000 §2.3, Algorithm 3) walks depth first: each upper
    // entry once, then every strided entry of the leaf table. One page's walk reads all four
    // levels; the next line of the same leaf table only its entry; the next leaf table its
    // PMD entry and then the leaf; a new pass (a lower address) starts at the root again.
    let mut m = Machine::new(&cfg(&[]), 1, vec![region("data", BASE, 8 * MB)], 1).unwrap();
    for p in (0..8 * MB).step_by(4096) {
        touch(&mut m, 0, BASE + p, false);
    }
    let mut read = |va: u64| {
        let before = m.stats().f("os.pte_reads");
        m.step(0, Ref::os_call(OsOp::ReadPtes, va, 1, 1)).unwrap();
        m.stats().f("os.pte_reads") - before
    };
    assert_eq!(read(BASE), 4.0, "the first walk: PML4, PDPT, PD and PT entries");
    assert_eq!(read(BASE + 8 * 4096), 1.0, "the next line of the same leaf table");
    assert_eq!(read(BASE + 504 * 4096), 1.0);
    assert_eq!(read(BASE + 2 * MB), 2.0, "the next leaf table: its PD entry, then the leaf");
    assert_eq!(read(BASE + 2 * MB), 4.0, "the same page again: a new pass from the root");
}
