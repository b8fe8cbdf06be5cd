//! Golden tests for flattened page tables (seed 004 §2): node counts, walk lengths with and
//! without page-walk caches, large pages inside flattened nodes, the FPT+NF rule, and the
//! fallback to 4 KB levels when no 2 MB block can be had.

mod common;
use common::{random_refs, region, GB};

/// Prefaulted, as the paper's SE-mode runs.
fn run(cfg: &Config, refs: Vec<Ref>, regions: Vec<Region>) -> Stats {
    common::run(cfg, refs, regions, true)
}
use xlat_core::arch::addr::{PhysAddr, VirtAddr};
use xlat_core::os::Os;
use xlat_core::{Config, Machine, Ref, Region, Stats};

fn cfg(pairs: &[(&str, &str)]) -> Config {
    Config::from_pairs(pairs.iter().copied()).unwrap()
}

const NO_PWC: [(&str, &str); 4] = [("pwc.l4.entries", "0"), ("pwc.l3.entries", "0"), ("pwc.l2.entries", "0"), ("pwc.flat.entries", "0")];

#[test]
fn eight_gb_needs_9_flattened_nodes_instead_of_4106() {
    // Spec §2.2: 1 L4+L3 root + 8 L2+L1 nodes (each covers 1 GB) = 9 x 2 MB = 18 MB.
    let mut m = Machine::new(&cfg(&[("pt.format", "fpt")]), 1, region(8 * GB), 1).unwrap();
    m.prefault().unwrap();
    let s = m.stats();
    assert_eq!(s.f("pt.nodes"), 9.0);
    assert_eq!(s.f("pt.flat_nodes"), 9.0);
    assert_eq!(s.f("pt_bytes"), (18u64 << 20) as f64);
    assert_eq!(s.f("pt.flatten_fallbacks"), 0.0);
}

#[test]
fn walk_lengths_per_layout_without_pwc() {
    let refs = random_refs(5_000, GB, 3);
    for (format, steps) in [("radix4", 4.0), ("radix5", 5.0), ("fpt", 2.0), ("fpt-l4l3", 3.0), ("fpt-l3l2", 3.0), ("fpt5", 3.0), ("fpt-1g", 2.0)] {
        let mut pairs = NO_PWC.to_vec();
        pairs.push(("pt.format", format));
        let s = run(&cfg(&pairs), refs.clone(), region(GB));
        assert_eq!(s.f("walk_steps_per_walk"), steps, "{format}");
    }
}

#[test]
fn walk_lengths_with_2mb_pages_per_layout_without_pwc() {
    // Spec §2.2's table: 2 MB data pages end the walk one level early wherever a level-2
    // entry exists; fpt-1g's 27-bit root makes it one read; fpt keeps 2 (FPT+NF).
    let refs = random_refs(5_000, GB, 4);
    for (format, steps) in [("radix4", 3.0), ("fpt", 2.0), ("fpt-l3l2", 2.0), ("fpt5", 2.0), ("fpt-1g", 1.0)] {
        let mut pairs = NO_PWC.to_vec();
        pairs.extend([("pt.format", format), ("os.page_policy", "ideal")]);
        let s = run(&cfg(&pairs), refs.clone(), region(GB));
        assert_eq!(s.f("huge_coverage"), 1.0, "{format}");
        assert_eq!(s.f("walk_steps_per_walk"), steps, "{format}");
    }
}

#[test]
fn table_sizes_of_the_five_level_and_1gb_layouts() {
    // 8 GB dense in 4 KB pages: fpt5 = L5+L4 root + one L3+L2 node (512 GB) + 4096 L1 nodes;
    // fpt-1g = one 1 GB root + 4096 L1 nodes (the bloat §3.2 warns of).
    for (format, nodes, flat, bytes) in [("fpt5", 4098.0, 2.0, (4u64 << 20) + (16 << 20)), ("fpt-1g", 4097.0, 1.0, (1u64 << 30) + (16 << 20))] {
        let mut m = Machine::new(&cfg(&[("pt.format", format)]), 1, region(8 * GB), 1).unwrap();
        m.prefault().unwrap();
        let s = m.stats();
        assert_eq!((s.f("pt.nodes"), s.f("pt.flat_nodes"), s.f("pt_bytes")), (nodes, flat, bytes as f64), "{format}");
    }
}

#[test]
fn the_prefix_table_serves_the_five_level_flattened_root() {
    // fpt5's root entries (18 bits, VA[56:39]) sit in the flattened-prefix table; the L3+L2
    // node's entries (VA[56:21]) in the L2 PWC: a random 8 GB walk reads ~2 entries (the L1
    // entry, and the L3+L2 entry on an L2-PWC miss), never the root after warm-up.
    let refs = random_refs(50_000, 8 * GB, 6);
    let s = run(&cfg(&[("pt.format", "fpt5")]), refs, region(8 * GB));
    let per_walk = s.f("walk_steps_per_walk");
    assert!((1.95..2.0).contains(&per_walk), "{per_walk}");
    assert!(s.f("pwc.l4.hits") > 0.99 * s.f("walks"), "{} of {}", s.f("pwc.l4.hits"), s.f("walks"));
}

#[test]
fn a_recursive_slot_changes_no_statistic() {
    let refs = random_refs(20_000, GB, 8);
    for format in ["radix4", "fpt", "fpt-l3l2"] {
        let plain = run(&cfg(&[("pt.format", format)]), refs.clone(), region(GB));
        let rec = run(&cfg(&[("pt.format", format), ("pt.recursive_slot", "493")]), refs.clone(), region(GB));
        assert_eq!(plain, rec, "{format}");
    }
}

#[test]
fn gups_with_fpt_reads_one_pte_per_walk() {
    // Spec §2.7: the 24-entry prefix table holds all 8 root entries of an 8 GB GUPS, so a
    // walk reads only the L2+L1 entry (radix: ~2.5 reads).
    let refs = random_refs(100_000, 8 * GB, 5);
    let s = run(&cfg(&[("pt.format", "fpt")]), refs.clone(), region(8 * GB));
    let per_walk = s.f("walk_steps_per_walk");
    assert!((1.0..1.001).contains(&per_walk), "{per_walk}");
    // With only 4 prefix entries, half the walks also read the root: ~1.5.
    let s = run(&cfg(&[("pt.format", "fpt"), ("pwc.flat.entries", "4")]), refs, region(8 * GB));
    let per_walk = s.f("walk_steps_per_walk");
    assert!((1.45..1.55).contains(&per_walk), "{per_walk}");
}

#[test]
fn no_2mb_block_falls_back_to_two_4kb_levels() {
    // Every free 2 MB block has a pinned page: flattened nodes cannot be allocated.
    let c = cfg(&[("pt.format", "fpt"), ("phys.fragmentation", "pinned:1.0")]);
    let mut m = Machine::new(&c, 1, region(GB), 1).unwrap();
    m.prefault().unwrap();
    let s = m.stats();
    assert_eq!(s.f("pt.flat_nodes"), 0.0);
    assert_eq!(s.f("pt.flatten_fallbacks"), 2.0, "the root and the one L2+L1 node");
    assert_eq!(s.f("pt.nodes"), 1.0 + 1.0 + 1.0 + 512.0);
    let mut pairs = NO_PWC.to_vec();
    pairs.extend([("pt.format", "fpt"), ("phys.fragmentation", "pinned:1.0")]);
    let s = run(&cfg(&pairs), random_refs(2_000, GB, 1), region(GB));
    assert_eq!(s.f("walk_steps_per_walk"), 4.0, "a fallen-back tree walks like radix");
}

#[test]
fn two_mb_pages_replicate_in_flattened_nodes_until_the_nf_rule_unflattens() {
    // `ideal` maps every 2 MB region of the 1 GB region huge: 512 > 32 2 MB pages, so
    // the L2+L1 node is unflattened (FPT+NF) into a 4 KB L2 node of 2 MB leaves.
    let refs = random_refs(5_000, GB, 9);
    let mut pairs = NO_PWC.to_vec();
    pairs.extend([("pt.format", "fpt"), ("os.page_policy", "ideal")]);
    let s = run(&cfg(&pairs), refs.clone(), region(GB));
    assert_eq!(s.f("pt.unflattened"), 1.0);
    assert_eq!(s.f("walk_steps_per_walk"), 2.0, "root + L2 leaf");
    assert_eq!(s.f("huge_coverage"), 1.0);
    // Plain FPT (no NF rule): the 2 MB pages stay as 512 replicas; still 2 reads.
    let mut pairs = NO_PWC.to_vec();
    pairs.extend([("pt.format", "fpt"), ("os.page_policy", "ideal"), ("pt.nf_threshold", "0")]);
    let s = run(&cfg(&pairs), refs, region(GB));
    assert_eq!(s.f("pt.unflattened"), 0.0);
    assert_eq!(s.f("pt.flat_nodes"), 2.0);
    assert_eq!(s.f("walk_steps_per_walk"), 2.0);
    assert!(s.f("tlb.l1d.hits_2m") > 0.0, "replicas fill 2 MB TLB entries");
}

#[test]
fn the_50_percent_scenario_leaves_blocks_for_flattened_nodes() {
    // Seed 004 §5.3: lowhalf fragments data memory; page-table nodes still get 2 MB blocks.
    let c = cfg(&[("pt.format", "fpt"), ("phys.fragmentation", "lowhalf"), ("os.page_policy", "ideal"), ("phys.size_gb", "16")]);
    let mut m = Machine::new(&c, 1, region(8 * GB), 1).unwrap();
    m.prefault().unwrap();
    let s = m.stats();
    assert_eq!(s.f("pt.flatten_fallbacks"), 0.0);
    assert!((s.f("huge_coverage") - 0.5).abs() < 0.01, "{}", s.f("huge_coverage"));
}

/// A canonical (sign-extended) 48-bit address from four 9-bit indices and a 12-bit offset.
fn kva(l4: u64, l3: u64, l2: u64, l1: u64, off: u64) -> VirtAddr {
    let v = (l4 << 39) | (l3 << 30) | (l2 << 21) | (l1 << 12) | off;
    VirtAddr((((v << 16) as i64) >> 16) as u64)
}

/// A process whose OS (`pairs`) faulted in the page at indices (a, b, c, d).
fn os_with_page(pairs: &[(&str, &str)], (a, b, c, d): (u64, u64, u64, u64)) -> (Os, usize, VirtAddr) {
    let mut os = Os::new(&cfg(pairs).kernel());
    let sp = os.create_space(Vec::new()).unwrap();
    let page = kva(a, b, c, d, 0);
    os.fault(sp, page, true).unwrap();
    (os, sp, page)
}

#[test]
fn the_os_builds_the_glue_table_of_a_flattened_root() {
    // Spec §2.5 case B through the OS: a flattened L4+L3 root, glue slot G = 511.
    let (g, (a, b, c, d)) = (511, (2, 4, 6, 8));
    let (os, sp, page) = os_with_page(&[("pt.format", "fpt-l4l3"), ("pt.recursive_slot", "511")], (a, b, c, d));
    let (pt, root) = (&os.pt, os.spaces[sp].root);
    let frame = os.translate(sp, page).unwrap().0;
    // Root entry (x, y) = (a, b) at [G][G][G][x] + 8y: the first read counts as two recursions.
    let w = pt.hw_walk(root, kva(g, g, g, a, b * 8), 48).unwrap();
    assert_eq!((w.addr, w.steps), (pt.node(root).entry_addr((a << 9 | b) as usize), 3));
    assert_eq!(os.page_table_va(sp, page, 3), Some(kva(g, g, g, a, b * 8)));
    // The L1 entry of (a, b, c) at [G][a][b][c] + 8d holds the page's frame.
    assert_eq!(os.page_table_va(sp, page, 1), Some(kva(g, a, b, c, d * 8)));
    let w = pt.hw_walk(root, kva(g, a, b, c, d * 8), 48).unwrap();
    let l1 = pt.leaf_node(root, 4, page).unwrap();
    assert_eq!(w.addr, pt.node(l1).entry_addr(d as usize));
    assert_eq!(pt.entry(l1, d as usize) >> 12 & 0xff_ffff_ffff, frame.0);
    // Legacy view: CR3 at L4* walks the same table as an ordinary 4-level one.
    let l4star = os.legacy_root(sp).unwrap();
    let (flat, legacy) = (pt.hw_walk(root, VirtAddr(page.0 + 0x321), 48).unwrap(), pt.hw_walk_from(l4star, VirtAddr(page.0 + 0x321), 48).unwrap());
    assert_eq!((flat.addr, flat.steps, legacy.addr, legacy.steps), (PhysAddr((frame.0 << 12) + 0x321), 3, flat.addr, 4));
}

#[test]
fn the_os_builds_the_recursive_slot_of_the_prototype_layout() {
    // Spec §2.5 case A through the OS: L4, L3+L2, L1 with L4[R] -> L4, R = 510.
    let (r, (a, b, c, d)) = (510, (3, 5, 7, 9));
    let (os, sp, page) = os_with_page(&[("pt.format", "fpt-l3l2"), ("pt.recursive_slot", "510")], (a, b, c, d));
    let (pt, root) = (&os.pt, os.spaces[sp].root);
    assert!(os.legacy_root(sp).is_none(), "a 4 KB root needs no glue");
    // One recursion, [R][a][b,c] + 8d: the PTE of the page in its L1 node.
    let l32 = pt.node(root).children.get(a as usize);
    let l1 = pt.node(l32).children.get((b << 9 | c) as usize);
    assert_eq!(os.page_table_va(sp, page, 1), Some(kva(r, a, b, c, d * 8)));
    let w = pt.hw_walk(root, kva(r, a, b, c, d * 8), 48).unwrap();
    assert_eq!((w.addr, w.offset_bits, w.steps), (pt.node(l1).entry_addr(d as usize), 12, 3));
    // Two recursions, [R][R][a] + 21 bits: the pointer to the L3+L2 node is taken as a 2 MB page.
    let off = (b << 9 | c) * 8;
    assert_eq!(os.page_table_va(sp, page, 2), Some(VirtAddr(kva(r, r, a, 0, 0).0 + off)));
    let w = pt.hw_walk(root, VirtAddr(kva(r, r, a, 0, 0).0 + off), 48).unwrap();
    assert_eq!((w.addr, w.offset_bits, w.steps), (pt.node(l32).entry_addr((b << 9 | c) as usize), 21, 3));
    // A user address in the slot does not exist (the slot is in the kernel half).
    let mut os = os;
    assert!(os.fault(sp, kva(r, 0, 0, 0, 0), false).is_err());
}

#[test]
fn the_os_flattens_a_fallen_back_node_late() {
    // No 2 MB block while the first pages fault in: their L2+L1 node falls back to 4 KB
    // levels (3 reads per walk). Blocks free again; the next page that gives the node its
    // 4th entry merges it (2 reads), and every page still translates to its frame.
    let mut os = Os::new(&cfg(&[("pt.format", "fpt"), ("pt.late_flatten", "4"), ("phys.size_gb", "2")]).kernel());
    let sp = os.create_space(Vec::new()).unwrap();
    let mut held = Vec::new();
    while let Some(f) = os.phys.alloc(9) {
        held.push(f);
    }
    let pages: Vec<VirtAddr> = (0..6).map(|i| kva(0, 1, i * 3, i, 0)).collect();
    for &p in &pages[..3] {
        os.fault(sp, p, false).unwrap();
    }
    let root = os.spaces[sp].root;
    assert_eq!(os.pt.hw_walk(root, pages[0], 48).unwrap().steps, 3);
    assert_eq!(os.pt.flatten_fallbacks, 1);
    for f in held {
        os.phys.free(f, 9);
    }
    let frames: Vec<_> = pages[..3].iter().map(|&p| os.translate(sp, p).unwrap()).collect();
    for &p in &pages[3..] {
        os.fault(sp, p, false).unwrap();
    }
    assert_eq!(os.pt.late_flattened, 1);
    for (i, &p) in pages.iter().enumerate() {
        assert_eq!(os.pt.hw_walk(root, p, 48).unwrap().steps, 2, "page {i}");
        if i < 3 {
            assert_eq!(os.translate(sp, p).unwrap(), frames[i]);
        }
    }
}

#[test]
fn host_ptes_of_a_guest_table_are_one_per_4kb_of_it() {
    // §4.1: 11 MB of guest page table take 22 KB of host PTEs with 4 KB host pages. A 1 GB
    // guest region in 4 KB pages: 515 guest nodes, so 515 host entries of 8 bytes.
    let s = run(&cfg(&[("virt.enabled", "true")]), random_refs(2_000, GB, 2), region(GB));
    assert_eq!(s.f("pt.nodes"), 515.0);
    assert_eq!(s.f("virt.guest_pt_host_pte_bytes"), 515.0 * 8.0);
}
