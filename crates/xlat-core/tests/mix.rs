//! Mixes: a machine running different programs, each in its own address space, on its own
//! cores. Each program's statistics (`prog<N>.`) are exactly what it gets alone when the
//! programs share nothing that matters, and differ when they share the LLC.

use xlat_core::{Config, Program, Ref, RefKind, RunOptions, Stats, VecSource};

mod common;
use common::{region, Rng, BASE};

const MB: u64 = 1 << 20;
const N: usize = 30_000;

/// Four programs with different access patterns over the same virtual addresses (their
/// address spaces are apart): random loads over 24 MB, pointer chasing over 8 MB, a
/// strided sweep with stores over 16 MB, and random loads and fetches over 4 MB.
fn streams() -> Vec<Vec<Ref>> {
    let mut r = Rng(0x5eed);
    let random = (0..N).map(|_| Ref::load(BASE + r.below(24 * MB / 8) * 8, 3)).collect();
    let chase = (0..N).map(|_| Ref::new(BASE + r.below(8 * MB / 64) * 64, RefKind::Load, 8, 5, true)).collect();
    let sweep = (0..N as u64).map(|i| Ref::new(BASE + (i * 4160) % (16 * MB), if i % 3 == 0 { RefKind::Store } else { RefKind::Load }, 8, 2, false)).collect();
    let code = (0..N)
        .map(|i| {
            let va = BASE + r.below(4 * MB / 8) * 8;
            Ref::new(va, if i % 4 == 0 { RefKind::Fetch } else { RefKind::Load }, 8, 4, false)
        })
        .collect();
    vec![random, chase, sweep, code]
}

fn programs() -> Vec<Program> {
    let sizes = [24 * MB, 8 * MB, 16 * MB, 4 * MB];
    (0..4).map(|i| Program { name: format!("p{i}"), regions: region(sizes[i]), streams: vec![i], slot: 0 }).collect()
}

fn config(extra: &[(&str, &str)]) -> Config {
    let mut pairs = vec![("system.cores", "4"), ("phys.size_gb", "4"), ("cache.llc.size_kb", "2048"), ("cache.llc.ways", "8")];
    pairs.extend_from_slice(extra);
    Config::from_pairs(pairs.iter().copied()).unwrap()
}

/// Run the mix with only the programs in `active` running (the others' address spaces are
/// built and prefaulted all the same, so physical memory is laid out identically).
fn run(cfg: &Config, active: &[usize]) -> Stats {
    let streams = streams().into_iter().enumerate().map(|(i, s)| if active.contains(&i) { s } else { Vec::new() }).collect();
    let mut src = VecSource::with_programs(streams, programs());
    xlat_core::simulate(cfg, &mut src, RunOptions { threads: 1, ..Default::default() }, true, 7, &mut |_| true).unwrap()
}

/// Every `prog<p>.` statistic of a run.
fn of(s: &Stats, p: usize) -> Vec<(String, String)> {
    let pre = format!("prog{p}.");
    s.entries.iter().filter(|(k, _)| k.starts_with(&pre)).map(|(k, v)| (k.clone(), format!("{v:?}"))).collect()
}

#[test]
fn a_mix_reports_each_program_and_the_machine() {
    let s = run(&config(&[]), &[0, 1, 2, 3]);
    let get = |k: &str| s.get(k).unwrap_or_else(|| panic!("{k} missing")).as_f64();
    for p in 0..4 {
        assert!(get(&format!("prog{p}.instructions")) > 0.0);
        assert_eq!(get(&format!("prog{p}.refs")), N as f64);
        assert_eq!(get(&format!("prog{p}.walks")), get(&format!("core{p}.walks")), "one core each: a program is its core");
    }
    let sum: f64 = (0..4).map(|p| get(&format!("prog{p}.walks"))).sum();
    assert_eq!(sum, get("walks"));
    // Four address spaces, each with its own page table.
    assert_eq!(get("pt.nodes.l4"), 4.0);
}

#[test]
fn programs_that_share_nothing_get_exactly_what_they_get_alone() {
    // Each core its own quarter of the LLC's ways, DRAM without queueing (the default), 4 KB
    // pages mapped before the run: nothing one program does reaches another.
    let cfg = config(&[("cache.llc.ways_per_core", "2")]);
    let mix = run(&cfg, &[0, 1, 2, 3]);
    for p in 0..4 {
        let alone = run(&cfg, &[p]);
        assert_eq!(of(&mix, p), of(&alone, p), "program {p}");
    }
}

#[test]
fn in_a_virtualized_mix_each_program_has_a_vm_of_its_own() {
    let virt = [("virt.enabled", "true"), ("virt.guest_mem_gb", "1"), ("cache.llc.ways_per_core", "2")];
    let cfg = config(&virt);
    let mix = run(&cfg, &[0, 1, 2, 3]);
    // Four guests, each with one process: four guest tables and four EPTs.
    assert_eq!(mix.get("pt.nodes.l4").unwrap().as_f64(), 4.0);
    assert_eq!(mix.get("host.pt.nodes.l4").unwrap().as_f64(), 4.0);
    for p in [0, 3] {
        assert_eq!(of(&mix, p), of(&run(&cfg, &[p]), p), "program {p}");
    }
    let two_vms = config(&[("virt.enabled", "true"), ("virt.guest_mem_gb", "1"), ("virt.vms", "2")]);
    let mut src = VecSource::with_programs(streams(), programs());
    let e = xlat_core::simulate(&two_vms, &mut src, RunOptions::default(), false, 1, &mut |_| true).unwrap_err();
    assert!(e.to_string().contains("its own VM: 4 programs, but virt.vms=2"), "{e}");
}

#[test]
fn programs_that_share_the_llc_slow_each_other() {
    let cfg = config(&[]);
    let mix = run(&cfg, &[0, 1, 2, 3]);
    let mut differ = 0;
    for p in 0..4 {
        let alone = run(&cfg, &[p]);
        let llc = |s: &Stats| s.get(&format!("prog{p}.data_served.llc")).unwrap().as_f64();
        assert!(llc(&mix) <= llc(&alone), "program {p}: sharing the LLC cannot add LLC hits here");
        differ += (of(&mix, p) != of(&alone, p)) as usize;
    }
    assert!(differ >= 2, "only {differ} programs noticed the others");
}

#[test]
fn bad_mixes_are_refused_with_a_reason() {
    let cfg = config(&[]);
    let mut two = programs();
    two[1].streams = vec![0];
    let mut src = VecSource::with_programs(streams(), two);
    let e = xlat_core::simulate(&cfg, &mut src, RunOptions::default(), false, 1, &mut |_| true).unwrap_err();
    assert_eq!(e.to_string(), "bad mix: programs 0 and 1 both run on core 0");
    let mut far = programs();
    far[3].streams = vec![9];
    let mut src = VecSource::with_programs(streams(), far);
    let e = xlat_core::simulate(&cfg, &mut src, RunOptions::default(), false, 1, &mut |_| true).unwrap_err();
    assert_eq!(e.to_string(), "bad mix: program 3 runs on core 9, but the machine has 4 cores (system.cores)");
}

#[test]
fn way_partitions_need_a_policy_that_can_keep_them() {
    let e = Config::from_pairs([("cache.llc.ways_per_core", "2"), ("cache.llc.policy", "srrip")]).unwrap_err();
    assert!(e.to_string().contains("lru or fifo"), "{e}");
    let e = Config::from_pairs([("cache.llc.ways_per_core", "32")]).unwrap_err();
    assert!(e.to_string().contains("more than the LLC's"), "{e}");
}

/// Two programs sharing core 0 as VMs of their own (the CSALT thesis's pairs): program A at
/// place 0 (stream 0), program B at place 1 (stream 1), over the same guest-virtual addresses.
fn pair(a: Vec<Ref>, b: Vec<Ref>, extra: &[(&str, &str)]) -> Result<Stats, xlat_core::SimError> {
    let mut pairs = vec![
        ("system.cores", "1"),
        ("phys.size_gb", "4"),
        ("virt.enabled", "true"),
        ("virt.guest_mem_gb", "1"),
        ("tlb.l2.entries", "256"),
        ("tlb.l2.ways", "8"),
    ];
    pairs.extend_from_slice(extra);
    let cfg = Config::from_pairs(pairs.iter().copied()).unwrap();
    let programs = vec![
        Program { name: "a".into(), regions: region(16 * MB), streams: vec![0], slot: 0 },
        Program { name: "b".into(), regions: region(16 * MB), streams: vec![1], slot: 1 },
    ];
    let mut src = VecSource::with_programs(vec![a, b], programs);
    xlat_core::simulate(&cfg, &mut src, RunOptions { threads: 1, ..Default::default() }, true, 7, &mut |_| true)
}

fn loads(seed: u64) -> Vec<Ref> {
    let mut r = Rng(seed);
    (0..N).map(|_| Ref::load(BASE + r.below(16 * MB / 8) * 8, 3)).collect()
}

#[test]
fn programs_sharing_a_core_take_turns_each_in_its_own_vm() {
    let get = |s: &Stats, k: &str| s.get(k).unwrap_or_else(|| panic!("{k} missing")).as_f64();
    // A switch every 20,000 cycles: both programs run to their end, taking turns.
    let s = pair(loads(1), loads(2), &[("virt.switch_interval_cycles", "20000")]).unwrap();
    assert_eq!(get(&s, "refs"), 2.0 * N as f64);
    assert!(get(&s, "vm_switches") >= 4.0, "{}", get(&s, "vm_switches"));
    // Switching only when a program ends: B runs after A, from A's TLB contents. Its entries
    // are tagged with its VM, so A's (same guest-virtual pages) never serve it: in LRU TLBs
    // and page-walk caches the other VM's entries only ever go first, so B misses exactly as
    // it does alone, and the pair walks what each walks alone.
    let long = [("virt.switch_interval_cycles", "1000000000000")];
    let both = pair(loads(1), loads(2), &long).unwrap();
    let a = pair(loads(1), Vec::new(), &long).unwrap();
    let b = pair(Vec::new(), loads(2), &long).unwrap();
    assert_eq!(get(&both, "vm_switches"), 1.0);
    assert!(get(&a, "walks") > 1000.0);
    assert_eq!(get(&both, "walks"), get(&a, "walks") + get(&b, "walks"));
    assert_eq!(get(&both, "walk_steps"), get(&a, "walk_steps") + get(&b, "walk_steps"));
    // Natively two programs never share a core.
    let e = pair(loads(1), loads(2), &[("virt.enabled", "false")]).unwrap_err().to_string();
    assert!(e.contains("programs 0 and 1 both run on core 0") && e.contains("virt.enabled=true"), "{e}");
}
