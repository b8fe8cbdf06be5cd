//! AMD PTE coalescing in the TLB model: the coalescing paper's unit-test scenarios U1-U9
//! (seeds/002_coalescing.spec.md §2.11), run through a whole machine with the paper's trace
//! language (a word's operations applied to each coalescing group in address order), and a
//! property test: a coalesced entry never translates a page whose PTE differs from what the
//! entry implies.
//!
//! The scenarios' region comes from FreeBSD reservations without promotion (the paper's
//! microbenchmark setup): every PTE read-write, A = D = 0, contiguous and aligned. The TLBs
//! are Zen 3's (64-entry fully associative L1 DTLB, 2048-entry 16-way L2).

use xlat_core::arch::addr::{PageSize, VirtAddr};
use xlat_core::arch::ctx::Invalidate;
use xlat_core::arch::pte::{PTE_A, PTE_D, PTE_P, PTE_PFN_MASK, PTE_RW};
use xlat_core::translate::mmu::TlbId;
use xlat_core::translate::tlb::{TlbStats, GROUP};
use xlat_core::{Config, Machine, Ref, Region};

/// A 2 MB-aligned user address.
const BASE: u64 = 0x7f00_0000_0000;
/// Pages of the scenarios' region: 8 groups of 4, or 4 of 8 (the L1 DTLB never fills).
const PAGES: u64 = 32;
const K4: usize = PageSize::Size4K as usize;

fn machine(extra: &[(&str, &str)], prefault: bool) -> Machine {
    let mut pairs = vec![
        ("os.page_policy", "freebsd"),
        ("os.reservation_promote", "false"),
        ("tlb.coalescing", "16k"),
        ("tlb.l1d.unified", "true"),
        ("tlb.l1d.entries", "64"),
        ("tlb.l1d.ways", "64"),
        ("tlb.l2.entries", "2048"),
        ("tlb.l2.ways", "16"),
    ];
    pairs.extend_from_slice(extra);
    let cfg = Config::from_pairs(pairs).unwrap();
    let regions = vec![Region { name: "r".into(), start: BASE, len: PAGES * 4096, file: None }];
    let mut m = Machine::new(&cfg, 1, regions, 1).unwrap();
    if prefault {
        m.prefault().unwrap();
    }
    m
}

/// One operation of the trace language on page `K` of a group: `rK`, `wK`, or an INVLPG.
#[derive(Clone, Copy)]
enum Op {
    R(u64),
    W(u64),
    Inv(u64),
}

/// Apply one word (its operations in order) to each group of `n` pages of the region.
fn word(m: &mut Machine, n: u64, ops: &[Op]) {
    for g in 0..PAGES / n {
        for &op in ops {
            let page = |k: u64| BASE + (g * n + k) * 4096;
            match op {
                Op::R(k) => m.step(0, Ref::load(page(k), 1)).unwrap(),
                Op::W(k) => m.step(0, Ref::store(page(k), 1)).unwrap(),
                Op::Inv(k) => {
                    let ctx = m.kernel.contexts[0].ctx;
                    m.xl.invalidate(0, Invalidate::page(ctx, VirtAddr(page(k))));
                }
            }
        }
    }
}

/// The L1 DTLB's counters now.
fn l1d(m: &Machine) -> TlbStats {
    m.xl.mmus[0].tlb(TlbId::L1d).stats
}

/// What happened between two snapshots of the L1 DTLB's counters: misses answered by the
/// L2 and by a walk, and hits, by page-size code (the paper's T2 split).
#[derive(Debug, PartialEq, Eq)]
struct T2 {
    l2_hit: [u64; 4],
    l2_miss: [u64; 4],
    l1_hit: [u64; 4],
}

fn since(a: TlbStats, b: TlbStats) -> T2 {
    let d = |x: [u64; 4], y: [u64; 4]| [0, 1, 2, 3].map(|i| y[i] - x[i]);
    T2 { l2_hit: d(a.refills[0], b.refills[0]), l2_miss: d(a.refills[1], b.refills[1]), l1_hit: d(a.hits_by_size, b.hits_by_size) }
}

/// A T2 split with only these counts (others 0): `(4 KB, coalesced)` each.
fn t2(l2_hit: (u64, u64), l2_miss: (u64, u64), l1_hit: (u64, u64)) -> T2 {
    let a = |(k4, c): (u64, u64)| [k4, 0, 0, c];
    T2 { l2_hit: a(l2_hit), l2_miss: a(l2_miss), l1_hit: a(l1_hit) }
}

/// Run a word and return its T2 split.
fn run(m: &mut Machine, n: u64, ops: &[Op]) -> T2 {
    let before = l1d(m);
    word(m, n, ops);
    since(before, l1d(m))
}

/// The coalesced entries of a TLB level: (first page's address, dirty).
fn coalesced(m: &Machine, id: TlbId) -> Vec<(u64, bool)> {
    let lvl = m.xl.mmus[0].tlb(id);
    let shift = 12 + lvl.group_shift();
    let mut v: Vec<(u64, bool)> = lvl.entries().into_iter().filter(|(k, _)| k.code() == GROUP).map(|(k, e)| (k.vpn() << shift, e.dirty)).collect();
    v.sort_unstable();
    v
}

/// Whether a level holds a 4 KB entry for `va`, and whether it is dirty.
fn entry_4k(m: &Machine, id: TlbId, va: u64) -> Option<bool> {
    m.xl.mmus[0].tlb(id).entries().into_iter().find(|(k, _)| k.code() == K4 && k.vpn() == va >> 12).map(|(_, e)| e.dirty)
}

/// Every group's first address, with the same dirtiness.
fn all_groups(n: u64, dirty: bool) -> Vec<(u64, bool)> {
    (0..PAGES / n).map(|g| (BASE + g * n * 4096, dirty)).collect()
}

fn walks(m: &Machine) -> u64 {
    m.xl.mmus[0].counters.walks
}

fn pte(m: &Machine, va: u64) -> u64 {
    let sp = &m.kernel.os.spaces[0];
    m.kernel.os.pt.translate(sp.root, sp.top, VirtAddr(va)).unwrap().entry
}

const G4: u64 = PAGES / 4;

/// U1: `r0 r1 r2 r3` (one word). Per group: 3 × 4KB L2 misses (r0, r1, r2), then on r3 the
/// walk sees all A set and all D clear → 1 coalesced L2 miss, installing a logically RO 16 KB
/// entry.
#[test]
fn u1_one_word_of_reads_coalesces_on_the_last_page() {
    let mut m = machine(&[], true);
    let t = run(&mut m, 4, &[Op::R(0), Op::R(1), Op::R(2), Op::R(3)]);
    assert_eq!(t, t2((0, 0), (3 * G4, G4), (0, 0)));
    assert_eq!(coalesced(&m, TlbId::L1d), all_groups(4, false), "a clean (logically read-only) 16 KB entry per group");
    assert_eq!(coalesced(&m, TlbId::L2), all_groups(4, false));
    for p in 0..PAGES {
        assert_eq!(pte(&m, BASE + p * 4096) & (PTE_A | PTE_D), PTE_A, "page {p}: read, not written");
    }
    // The same counts under the paper's counter names.
    let s = m.stats();
    let get = |n: &str| s.get(n).unwrap_or_else(|| panic!("no {n}")).as_f64();
    assert_eq!((get("tlb.l1d.misses.l2_miss.4k"), get("tlb.l1d.misses.l2_miss.coalesced")), (24.0, 8.0));
    assert_eq!(get("tlb.l1d.misses.l2_hit.coalesced"), 0.0);
}

/// U2: `r0: r1: r2: r3`. Words 1–3 produce only 4 KB misses. Word 4 produces coalesced
/// misses.
#[test]
fn u2_four_words_coalesce_in_the_fourth() {
    let mut m = machine(&[], true);
    for k in 0..3 {
        assert_eq!(run(&mut m, 4, &[Op::R(k)]), t2((0, 0), (G4, 0), (0, 0)), "word {}", k + 1);
        assert!(coalesced(&m, TlbId::L1d).is_empty());
    }
    assert_eq!(run(&mut m, 4, &[Op::R(3)]), t2((0, 0), (0, G4), (0, 0)), "word 4");
    assert_eq!(coalesced(&m, TlbId::L1d), all_groups(4, false));
}

/// U3: U1, then `w0`. The write destroys the RO coalesced entry; the walk sets D0 → mixed D →
/// 4 KB RW entry. A following `r1` may hit a lingering 4 KB entry or miss and install a 4 KB
/// entry — never a coalesced one.
#[test]
fn u3_a_write_destroys_the_clean_coalesced_entry() {
    let mut m = machine(&[], true);
    word(&mut m, 4, &[Op::R(0), Op::R(1), Op::R(2), Op::R(3)]);
    let (w, dirty_walks) = (walks(&m), m.xl.mmus[0].counters.dirty_walks);
    // The store finds the clean coalesced entry in the L1: not a hit, not a miss, a walk.
    assert_eq!(run(&mut m, 4, &[Op::W(0)]), t2((0, 0), (0, 0), (0, 0)));
    assert_eq!((walks(&m) - w, m.xl.mmus[0].counters.dirty_walks - dirty_walks), (0, G4), "one dirty-bit walk per group, no TLB-miss walk");
    assert!(coalesced(&m, TlbId::L1d).is_empty() && coalesced(&m, TlbId::L2).is_empty(), "destroyed in L1 and L2");
    for g in 0..G4 {
        let p0 = BASE + g * 4 * 4096;
        assert_eq!(entry_4k(&m, TlbId::L1d, p0), Some(true), "group {g}: a 4 KB read-write entry for page 0");
        assert_eq!(pte(&m, p0) & PTE_D, PTE_D);
        assert_eq!(pte(&m, p0 + 4096) & PTE_D, 0);
    }
    // r1: here the lingering 4 KB entry from U1 answers.
    let t = run(&mut m, 4, &[Op::R(1)]);
    assert_eq!((t.l1_hit[GROUP], t.l2_hit[GROUP], t.l2_miss[GROUP]), (0, 0, 0), "never coalesced");
    assert_eq!(t, t2((0, 0), (0, 0), (G4, 0)), "a 4 KB hit on the lingering entry");
    assert!(coalesced(&m, TlbId::L1d).is_empty());
}

/// U4: U3, then `w1 w2 w3`. The walk for the last written page sees all D set → RW
/// coalesced entry.
#[test]
fn u4_once_every_page_is_written_a_read_write_entry_forms() {
    let mut m = machine(&[], true);
    word(&mut m, 4, &[Op::R(0), Op::R(1), Op::R(2), Op::R(3)]);
    word(&mut m, 4, &[Op::W(0)]);
    word(&mut m, 4, &[Op::R(1)]);
    // w1, w2 re-walk through their clean 4 KB entries (D mixed: 4 KB entries); w3 has no
    // entry left, misses L1 and L2, and its walk sees every D set.
    let t = run(&mut m, 4, &[Op::W(1), Op::W(2), Op::W(3)]);
    assert_eq!(t, t2((0, 0), (0, G4), (0, 0)));
    assert_eq!(coalesced(&m, TlbId::L1d), all_groups(4, true), "a read-write 16 KB entry per group");
    assert_eq!(coalesced(&m, TlbId::L2), all_groups(4, true));
    // Every page of the group now stores through it without a walk.
    let w = walks(&m);
    assert_eq!(run(&mut m, 4, &[Op::W(0), Op::W(1), Op::W(2), Op::W(3)]), t2((0, 0), (0, 0), (0, 4 * G4)));
    assert_eq!(walks(&m), w);
}

/// U5: U1, then INVLPG(page 0), then `r1`. Possible 4 KB hit on the lingering entry for page
/// 1. A later `r0` walk re-creates the coalesced entry (all A still set).
#[test]
fn u5_invlpg_kills_the_coalesced_entry_and_spares_other_pages() {
    let mut m = machine(&[], true);
    word(&mut m, 4, &[Op::R(0), Op::R(1), Op::R(2), Op::R(3)]);
    word(&mut m, 4, &[Op::Inv(0)]);
    assert!(coalesced(&m, TlbId::L1d).is_empty() && coalesced(&m, TlbId::L2).is_empty(), "every entry covering page 0 went");
    for g in 0..G4 {
        let p = BASE + g * 4 * 4096;
        for id in [TlbId::L1d, TlbId::L2] {
            assert_eq!(entry_4k(&m, id, p), None, "group {g}: page 0's own 4 KB entry went too");
            assert_eq!((entry_4k(&m, id, p + 4096), entry_4k(&m, id, p + 2 * 4096)), (Some(false), Some(false)), "group {g}: pages 1, 2 stay");
        }
    }
    assert_eq!(run(&mut m, 4, &[Op::R(1)]), t2((0, 0), (0, 0), (G4, 0)), "4 KB hits on the lingering entries");
    assert_eq!(run(&mut m, 4, &[Op::R(0)]), t2((0, 0), (0, G4), (0, 0)), "r0's walk re-creates the coalesced entry");
    assert_eq!(coalesced(&m, TlbId::L1d), all_groups(4, false));
}

/// U6: N=8 (Zen+), `r0 r1 r2 r3` only. Never coalesces: 4 of the 8 A bits are clear. With
/// N=4 it would coalesce. This isolates the granularity effect.
#[test]
fn u6_half_a_32k_group_never_coalesces() {
    let ops = [Op::R(0), Op::R(1), Op::R(2), Op::R(3)];
    let g8 = PAGES / 8;
    let mut m = machine(&[("tlb.coalescing", "32k")], true);
    assert_eq!(run(&mut m, 8, &ops), t2((0, 0), (4 * g8, 0), (0, 0)), "32 KB: only 4 KB entries");
    assert!(coalesced(&m, TlbId::L1d).is_empty());
    let mut m = machine(&[], true);
    assert_eq!(run(&mut m, 8, &ops), t2((0, 0), (3 * g8, g8), (0, 0)), "16 KB: the first half coalesces");
    // And 32 KB groups read whole do coalesce, once per group.
    let mut m = machine(&[("tlb.coalescing", "32k")], true);
    let all: Vec<Op> = (0..8).map(Op::R).collect();
    assert_eq!(run(&mut m, 8, &all), t2((0, 0), (7 * g8, g8), (0, 0)));
    assert_eq!(coalesced(&m, TlbId::L1d), all_groups(8, false));
}

/// U7: write-protected region, `r0..r(N-1)`. Coalesces (RO).
#[test]
fn u7_a_write_protected_region_coalesces_read_only() {
    for (size, n) in [("16k", 4u64), ("32k", 8)] {
        let mut m = machine(&[("tlb.coalescing", size)], true);
        for p in 0..PAGES {
            assert!(m.protect(0, 0, VirtAddr(BASE + p * 4096), false).unwrap());
        }
        assert_eq!(pte(&m, BASE) & (PTE_RW | PTE_P), PTE_P);
        let ops: Vec<Op> = (0..n).map(Op::R).collect();
        let g = PAGES / n;
        assert_eq!(run(&mut m, n, &ops), t2((0, 0), ((n - 1) * g, g), (0, 0)), "{size}");
        assert_eq!(coalesced(&m, TlbId::L1d), all_groups(n, false), "{size}");
    }
}

/// U8: mprotect one page of a group to a different protection. That group never coalesces.
#[test]
fn u8_one_page_of_other_protection_stops_its_group() {
    let mut m = machine(&[], true);
    let odd = BASE + (4 + 2) * 4096; // page 2 of group 1
    assert!(m.protect(0, 0, VirtAddr(odd), false).unwrap());
    let all = [Op::R(0), Op::R(1), Op::R(2), Op::R(3)];
    let want: Vec<(u64, bool)> = all_groups(4, false).into_iter().filter(|&(va, _)| va != BASE + 4 * 4096).collect();
    assert_eq!(run(&mut m, 4, &all), t2((0, 0), (3 * G4 + 1, G4 - 1), (0, 0)));
    assert_eq!(coalesced(&m, TlbId::L1d), want);
    // Never: not after every page is read again through fresh walks, nor written.
    for ops in [&[Op::Inv(0), Op::Inv(1), Op::Inv(2), Op::Inv(3)][..], &all, &[Op::W(0), Op::W(1), Op::W(2), Op::W(3)], &all] {
        word(&mut m, 4, ops);
        assert!(!coalesced(&m, TlbId::L1d).iter().any(|&(va, _)| va == BASE + 4 * 4096));
        assert!(!coalesced(&m, TlbId::L2).iter().any(|&(va, _)| va == BASE + 4 * 4096));
    }
}

/// U9: reservations disabled (pages from the buddy allocator). Coalesces only if the frames
/// happen to be contiguous and aligned.
#[test]
fn u9_without_reservations_only_chance_contiguity_coalesces() {
    // Pages fault in as the trace touches them, each read once: groups 0-3 in order, then
    // groups 4 and 5, and 6 and 7, alternating page by page, so that their frames interleave.
    let mut m = machine(&[("os.page_policy", "never")], false);
    let before = l1d(&m);
    for g in 0..4u64 {
        for k in 0..4u64 {
            m.step(0, Ref::load(BASE + (g * 4 + k) * 4096, 1)).unwrap();
        }
    }
    for g in [4u64, 6] {
        for k in 0..4u64 {
            for h in [g, g + 1] {
                m.step(0, Ref::load(BASE + (h * 4 + k) * 4096, 1)).unwrap();
            }
        }
    }
    let first = since(before, l1d(&m)).l2_miss[GROUP];
    // Then every group again, through fresh walks.
    let before = l1d(&m);
    word(&mut m, 4, &[Op::Inv(0), Op::Inv(1), Op::Inv(2), Op::Inv(3)]);
    word(&mut m, 4, &[Op::R(0), Op::R(1), Op::R(2), Op::R(3)]);
    let rewalked = since(before, l1d(&m)).l2_miss[GROUP];
    // The reference: a group is coalescable iff its frames are contiguous from an aligned
    // first frame (every page is read once and never written, so A and D agree).
    let sp = &m.kernel.os.spaces[0];
    let frame = |p: u64| m.kernel.os.pt.translate(sp.root, sp.top, VirtAddr(BASE + p * 4096)).unwrap().frame.0;
    let chance: Vec<bool> = (0..G4).map(|g| frame(4 * g) % 4 == 0 && (1..4).all(|k| frame(4 * g + k) == frame(4 * g) + k)).collect();
    assert_eq!(first, chance.iter().filter(|&&c| c).count() as u64);
    assert_eq!(rewalked, first, "the same groups coalesce when walked again");
    let want: Vec<(u64, bool)> = (0..G4).filter(|&g| chance[g as usize]).map(|g| (BASE + g * 4 * 4096, false)).collect();
    assert_eq!(coalesced(&m, TlbId::L1d), want);
    // Interleaved faults cannot give contiguous frames to both groups of a pair.
    assert!(!(chance[4] && chance[5] || chance[6] && chance[7]), "{chance:?}");
    // (This allocator's state gives both outcomes, so the check above checks both ways.)
    assert!(chance.contains(&true) && chance.contains(&false), "{chance:?}");
}

/// A tiny xorshift for the property test.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Every coalesced entry in every TLB level agrees with the page tables: each page of its
/// group is mapped by a present 4 KB PTE with the entry's frame plus its index, the group's
/// attribute bits are identical apart from D (the OS may not change them without a
/// shootdown), every page is accessed, and every page is dirty if the entry is. A clean
/// entry on the data path (L1 DTLB, L2) also means every page is still clean: a store that
/// set a D bit destroyed it.
fn check_coalesced(m: &Machine, step: usize) {
    let sp = &m.kernel.os.spaces[0];
    for id in TlbId::ALL {
        let lvl = m.xl.mmus[0].tlb(id);
        let g = lvl.group_shift();
        for (k, e) in lvl.entries().into_iter().filter(|(k, _)| k.code() == GROUP) {
            let first = k.vpn() << (12 + g);
            let attrs = |pte: u64| pte & !PTE_PFN_MASK & !PTE_D;
            let pte0 = m.kernel.os.pt.translate(sp.root, sp.top, VirtAddr(first)).map(|f| f.entry);
            for i in 0..1u64 << g {
                let va = first + i * 4096;
                let found = m.kernel.os.pt.translate(sp.root, sp.top, VirtAddr(va));
                let Some(f) = found else { panic!("step {step}: {} entry {first:#x} covers unmapped {va:#x}", id.name()) };
                assert_eq!((f.size, f.frame.0), (PageSize::Size4K, e.frame + i), "step {step}: {} {va:#x}", id.name());
                assert_eq!(attrs(f.entry), attrs(pte0.unwrap()), "step {step}: {} {va:#x} attributes", id.name());
                assert!(f.entry & PTE_A != 0, "step {step}: {} {va:#x} not accessed", id.name());
                if e.dirty {
                    assert!(f.entry & PTE_D != 0, "step {step}: {} dirty entry over clean {va:#x}", id.name());
                } else if id != TlbId::L1i {
                    assert!(f.entry & PTE_D == 0, "step {step}: {} clean entry over dirty {va:#x}", id.name());
                }
            }
        }
    }
}

/// The property, over random traces: loads and stores to a few groups, INVLPGs, pages made
/// read-only or writable again, pages unmapped (and faulted back in), on reservations and on
/// the buddy allocator, with 16 KB, 32 KB and mixed group sizes, small TLBs that evict, and
/// an L2 whose coalesced entries have ways of their own.
#[test]
fn a_coalesced_entry_never_translates_a_page_it_does_not_map() {
    let mut formed = 0;
    for seed in 1..=24u64 {
        let mut rng = Rng(seed * 0x9e37_79b9_7f4a_7c15);
        let policy = if seed % 3 == 0 { "never" } else { "freebsd" };
        let (l1, l2) = [("16k", "16k"), ("32k", "32k"), ("16k", "32k"), ("32k", "16k")][(seed % 4) as usize];
        let mut extra = vec![
            ("os.page_policy", policy),
            ("tlb.l1d.coalescing", l1),
            ("tlb.l2.coalescing", l2),
            ("tlb.l1d.entries", "8"),
            ("tlb.l1d.ways", "8"),
            ("tlb.l2.entries", "32"),
            ("tlb.l2.ways", "4"),
        ];
        if seed % 5 == 0 {
            // Coalesced entries in L2 ways of their own.
            extra.extend([("tlb.l2.entries_coalesced", "4"), ("tlb.l2.ways_coalesced", "2")]);
        }
        let mut m = machine(&extra, seed % 2 == 0);
        // A few groups, so that pages repeat often.
        let pages = 16;
        for step in 0..3000 {
            let va = BASE + rng.below(pages) * 4096;
            match rng.below(100) {
                0..=54 => m.step(0, Ref::load(va, 1)).unwrap(),
                55..=84 => m.step(0, Ref::store(va, 1)).unwrap(),
                85..=89 => {
                    let ctx = m.kernel.contexts[0].ctx;
                    m.xl.invalidate(0, Invalidate::page(ctx, VirtAddr(va)));
                }
                90..=95 => {
                    m.protect(0, 0, VirtAddr(va), rng.below(2) == 0).unwrap();
                }
                _ => {
                    m.unmap(0, 0, VirtAddr(va)).unwrap();
                }
            }
            check_coalesced(&m, step);
        }
        formed += l1d(&m).refills[1][GROUP];
    }
    assert!(formed > 100, "the traces formed coalesced entries ({formed}), so the check checked something");
}

/// `tlb.coalescing` sets every level's group; a level's own key overrides it (`inherit`
/// follows it); `inherit` is not a value of the machine-wide key, and a VM cannot coalesce.
#[test]
fn every_level_inherits_the_machine_wide_key_unless_it_sets_its_own() {
    let shifts = |pairs: &[(&str, &str)]| {
        let cfg = Config::from_pairs(pairs.iter().copied()).unwrap();
        let m = Machine::new(&cfg, 1, vec![Region { name: "r".into(), start: BASE, len: 1 << 20, file: None }], 1).unwrap();
        TlbId::ALL.map(|id| m.xl.mmus[0].tlb(id).group_shift())
    };
    // (L1 DTLB, L1 ITLB, L2, L2 ITLB; the last is empty without tlb.l2i.entries.)
    assert_eq!(shifts(&[]), [0, 0, 0, 0], "off by default");
    assert_eq!(shifts(&[("tlb.coalescing", "16k")]), [2, 2, 2, 0]);
    assert_eq!(shifts(&[("tlb.coalescing", "32k"), ("tlb.l1i.coalescing", "16k")]), [3, 2, 3, 0]);
    assert_eq!(shifts(&[("tlb.l2.coalescing", "32k")]), [0, 0, 3, 0]);
    assert_eq!(shifts(&[("tlb.coalescing", "16k"), ("tlb.l1d.coalescing", "none")]), [0, 2, 2, 0]);
    assert_eq!(shifts(&[("tlb.coalescing", "16k"), ("tlb.l2i.entries", "512"), ("tlb.l2i.coalescing", "32k")]), [2, 2, 2, 3]);
    let err = |pairs: &[(&str, &str)]| Config::from_pairs(pairs.iter().copied()).unwrap_err().to_string();
    assert!(err(&[("tlb.coalescing", "inherit")]).contains("tlb.coalescing"));
    assert!(err(&[("tlb.coalescing", "8k")]).contains("tlb.coalescing"));
    assert!(err(&[("virt.enabled", "true"), ("tlb.l2.coalescing", "16k")]).contains("native walks only"));
}

/// With `tlb.l2i.entries` the fetch path is L1 ITLB → L2 ITLB, and the L2 TLB holds data
/// only: an L1 ITLB miss is answered by the L2 ITLB, and the paper's ITLB split counts it.
#[test]
fn a_separate_l2_itlb_serves_fetches_and_only_fetches() {
    let cfg = Config::from_pairs([
        ("tlb.l2i.entries", "512"),
        ("tlb.l2i.ways", "8"),
        ("tlb.l1i.entries", "8"),
        ("tlb.l1i.ways", "8"),
        ("tlb.coalescing", "16k"),
        ("os.page_policy", "freebsd"),
        ("os.reservation_promote", "false"),
    ])
    .unwrap();
    let mut m = Machine::new(&cfg, 1, vec![Region { name: "r".into(), start: BASE, len: 64 * 4096, file: None }], 1).unwrap();
    m.prefault().unwrap();
    let code = |p: u64| BASE + p * 4096;
    // 32 code pages (more than the 8-entry L1 ITLB holds, with 16 KB groups: 8 groups), then
    // again; a load of a data page.
    for _ in 0..2 {
        for p in 0..32 {
            m.step(0, Ref::new(code(p), xlat_core::RefKind::Fetch, 4, 1, false)).unwrap();
        }
    }
    m.step(0, Ref::load(code(40), 1)).unwrap();
    let mmu = &m.xl.mmus[0];
    let vpns = |id: TlbId| mmu.tlb(id).entries().into_iter().map(|(k, _)| k.code()).collect::<Vec<usize>>();
    assert_eq!(vpns(TlbId::L2), vec![K4], "the L2 TLB holds the data page only");
    assert_eq!(vpns(TlbId::L2i).iter().filter(|&&c| c == GROUP).count(), 8, "the L2 ITLB holds the code, coalesced");
    let (l1i, l2i) = (mmu.tlb(TlbId::L1i).stats, mmu.tlb(TlbId::L2i).stats);
    assert_eq!(l2i.accesses, l1i.misses);
    assert_eq!(l1i.refills[0].iter().sum::<u64>(), l2i.hits, "L1 ITLB misses the L2 ITLB answered");
    assert!(l2i.hits > 0);
    let s = m.stats();
    assert_eq!(s.get("tlb.l2i.hits").unwrap().as_f64(), l2i.hits as f64);
    assert_eq!(s.get("tlb.l1i.misses.l2_hit").unwrap().as_f64(), l2i.hits as f64);
    assert_eq!(s.get("tlb.l2.accesses").unwrap().as_f64(), 1.0);
}

/// The §3.1 microbenchmark language drives the same machine: the paper's default 8 MB region
/// (512 subregions of 4 pages), U2's trace word by word, the invalidation token, the four
/// repeat kinds, and the final `mincore` report.
#[test]
fn the_microbenchmark_language_drives_the_model() {
    use xlat_core::microbench::{mincore, run as bench, PageState, Region as Sub, Repeats, Trace};
    let (k4, c) = (K4, GROUP);
    // 8 MB: 512 subregions (the default region of the paper's microbenchmark).
    let cfg = Config::from_pairs([("os.page_policy", "freebsd"), ("os.reservation_promote", "false"), ("tlb.coalescing", "16k")]).unwrap();
    let mut m = Machine::new(&cfg, 1, vec![Region { name: "r".into(), start: BASE, len: 8 << 20, file: None }], 1).unwrap();
    m.prefault().unwrap();
    let r = Sub { base: BASE, pages: 2048, group: 4 };
    let s = bench(&mut m, r, &Trace::parse("r0: r1: r2: r3:", 4).unwrap(), Repeats::default()).unwrap();
    let misses: Vec<(u64, u64)> = s.iter().map(|x| (x.l2_miss[k4], x.l2_miss[c])).collect();
    assert_eq!(misses, vec![(512, 0), (512, 0), (512, 0), (0, 512)], "U2 over 512 subregions");

    // A small region for the repeats: 4 subregions.
    let small = |extra: &[(&str, &str)]| {
        let mut pairs = vec![("os.page_policy", "freebsd"), ("os.reservation_promote", "false"), ("tlb.coalescing", "16k")];
        pairs.extend_from_slice(extra);
        let mut m =
            Machine::new(&Config::from_pairs(pairs).unwrap(), 1, vec![Region { name: "r".into(), start: BASE, len: 16 * 4096, file: None }], 1).unwrap();
        m.prefault().unwrap();
        m
    };
    let r = Sub { base: BASE, pages: 16, group: 4 };
    let mut m = small(&[]);
    let rep = Repeats { op: 3, local: 2, global: 2, trace: 2 };
    let s = bench(&mut m, r, &Trace::parse("r0 r1 r2 r3", 4).unwrap(), rep).unwrap();
    assert_eq!(s.len(), 4, "a sample per global repeat of each word of each trace repeat");
    assert_eq!((s[0].l2_miss[k4], s[0].l2_miss[c]), (12, 4));
    assert!(s[1..].iter().all(|x| x.l2_miss == [0; 4] && x.l2_hit == [0; 4]), "then every access hits the L1 DTLB: {s:?}");
    assert_eq!(m.xl.mmus[0].counters.loads, 4 * 4 * 3 * 2 * 2 * 2, "subregions x ops x op x local x global x trace");
    let mut m = small(&[]);
    let s = bench(&mut m, r, &Trace::parse("r0 r1 r2 r3: i0: r1: r0", 4).unwrap(), Repeats::default()).unwrap();
    let t: Vec<[u64; 4]> = s.iter().map(|x| x.l2_miss).collect();
    assert_eq!(t, vec![[12, 0, 0, 4], [0; 4], [0; 4], [0, 0, 0, 4]], "U5: after INVLPG, r1 hits its 4 KB entry and r0 re-coalesces");
    let mut m = small(&[]);
    bench(&mut m, r, &Trace::parse("r0 r1 w2", 4).unwrap(), Repeats::default()).unwrap();
    let pages = mincore(&m, r);
    let st = |valid, accessed, modified| PageState { valid, accessed, modified };
    assert_eq!(&pages[..4], &[st(true, true, false), st(true, true, false), st(true, true, true), st(true, false, false)]);
}

/// `tlb.l2.entries_coalesced` sets L2 ways aside for coalesced entries: at most that many are
/// cached, and filling them evicts no 4 KB entry (the 4 KB array keeps its capacity).
#[test]
fn coalesced_entries_can_have_l2_ways_of_their_own() {
    // 16 KB groups of the scenarios' region, read whole: 8 coalesced entries, 24 of 4 KB.
    let count = |m: &Machine, code: usize| m.xl.mmus[0].tlb(TlbId::L2).entries().iter().filter(|(k, _)| k.code() == code).count();
    let mut shared = machine(&[("tlb.l2.entries", "32"), ("tlb.l2.ways", "32")], true);
    word(&mut shared, 4, &[Op::R(0), Op::R(1), Op::R(2), Op::R(3)]);
    assert_eq!((count(&shared, K4), count(&shared, GROUP)), (24, 8), "one array of 32: everything fits");
    let mut own = machine(&[("tlb.l2.entries", "32"), ("tlb.l2.ways", "32"), ("tlb.l2.entries_coalesced", "4"), ("tlb.l2.ways_coalesced", "4")], true);
    let t = run(&mut own, 4, &[Op::R(0), Op::R(1), Op::R(2), Op::R(3)]);
    assert_eq!(t, t2((0, 0), (3 * G4, G4), (0, 0)));
    assert_eq!((count(&own, K4), count(&own, GROUP)), (24, 4), "4 ways for coalesced entries, the last 4 groups'");
    assert_eq!(coalesced(&own, TlbId::L2), all_groups(4, false)[4..].to_vec());
    // INVLPG reaches them there too.
    word(&mut own, 4, &[Op::Inv(3)]);
    assert!(coalesced(&own, TlbId::L2).is_empty());
}
