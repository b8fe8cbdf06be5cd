//! Golden tests for flattened page tables (seed 004 §2): node counts, walk lengths with and
//! without page-walk caches, large pages inside flattened nodes, the FPT+NF rule, and the
//! fallback to 4 KB levels when no 2 MB block can be had.

mod common;
use common::{random_refs, region, GB};

/// Prefaulted, as the paper's SE-mode runs.
fn run(cfg: &Config, refs: Vec<Ref>, regions: Vec<Region>) -> Stats {
    common::run(cfg, refs, regions, true)
}
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
    for (format, steps) in [("radix4", 4.0), ("fpt", 2.0), ("fpt-l4l3", 3.0), ("fpt-l3l2", 3.0)] {
        let mut pairs = NO_PWC.to_vec();
        pairs.push(("pt.format", format));
        let s = run(&cfg(&pairs), refs.clone(), region(GB));
        assert_eq!(s.f("walk_steps_per_walk"), steps, "{format}");
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
