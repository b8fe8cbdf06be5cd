//! Warm-up as a snapshot: a machine that ends its warm-up after W references and then runs N
//! reports, for every counter, what the same machine run without a warm-up counts over the
//! whole run minus what it had counted at W, and every level as it is at the end; the
//! floats are those of the measured part. So no warm-up count leaks into a statistic.

use xlat_core::glossary::Kind;
use xlat_core::{Config, Machine, Ref, RefKind, StatValue, Stats};

mod common;
use common::{region, Rng, BASE, GB};

const W: usize = 6_000;
const N: usize = 9_000;

/// `n` references per context over 256 MB: loads, stores and fetches.
fn refs(contexts: usize, n: usize) -> Vec<(usize, Ref)> {
    let mut r = Rng(0x5eed);
    (0..n * contexts)
        .map(|i| {
            let va = BASE + (r.next() % (256 << 17)) * 8;
            let kind = match i % 7 {
                0 => RefKind::Fetch,
                1 | 2 => RefKind::Store,
                _ => RefKind::Load,
            };
            (i % contexts, Ref::new(va, kind, 8, 3, false))
        })
        .collect()
}

fn machine(pairs: &[(&str, &str)]) -> Machine {
    let cfg = Config::from_pairs(pairs.iter().copied()).unwrap();
    let contexts = cfg.system.cores as usize * cfg.system.threads_per_core.max(1) as usize;
    let mut m = Machine::new(&cfg, contexts, region(GB), 1).unwrap();
    m.prefault().unwrap();
    m
}

fn ints(s: &Stats) -> impl Iterator<Item = (&str, u64)> {
    s.entries.iter().filter_map(|(n, v)| if let StatValue::Int(i) = v { Some((n.as_str(), *i)) } else { None })
}

fn int(s: &Stats, name: &str) -> u64 {
    match s.get(name) {
        Some(StatValue::Int(i)) => i,
        v => panic!("{name}: {v:?}"),
    }
}

#[test]
fn warm_up_counts_do_not_leak() {
    for pairs in [
        vec![("system.cores", "1")],
        vec![("system.cores", "2"), ("cache.l1d.prefetcher", "stride")],
        vec![("system.cores", "2"), ("system.threads_per_core", "2")],
        vec![("system.cores", "1"), ("virt.enabled", "true")],
        vec![("system.cores", "1"), ("pomtlb.enabled", "true"), ("tlb.pdc.entries", "16")],
    ] {
        let mut warmed = machine(&pairs);
        let mut whole = machine(&pairs);
        let contexts = warmed.kernel.contexts.len();
        let all = refs(contexts, W + N);
        let (before, after) = all.split_at(W * contexts);
        for &(c, r) in before {
            warmed.step(c, r).unwrap();
            whole.step(c, r).unwrap();
        }
        warmed.end_warmup();
        let at_w = whole.stats();
        for &(c, r) in after {
            warmed.step(c, r).unwrap();
            whole.step(c, r).unwrap();
        }
        let (measured, end) = (warmed.stats(), whole.stats());
        let names: Vec<&str> = measured.entries.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, end.entries.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), "{pairs:?}: the same statistics");
        for (name, v) in ints(&measured) {
            let kind = xlat_core::machine::glossary::lookup(name).unwrap_or_else(|| panic!("{name} is not in the glossary")).kind;
            // (`cycles`, `core<N>.cycles`...: the latest of contexts' clocks since W, not a
            // difference of the latest; checked below.)
            let clock = name == "cycles" || name.ends_with(".cycles") && name.matches('.').count() == 1;
            let want = match kind {
                Kind::Counter if clock => continue,
                Kind::Counter => int(&end, name) - ints(&at_w).find(|(n, _)| *n == name).map_or(0, |(_, v)| v),
                Kind::Level => int(&end, name),
                k => panic!("{name} is an integer declared a {}", k.name()),
            };
            assert_eq!(v, want, "{pairs:?}: {name}");
        }
        // The references and instructions are the measured part's alone, and so are the
        // ratios of them.
        let n = (N * contexts) as u64;
        assert_eq!(int(&measured, "refs"), n, "{pairs:?}");
        assert_eq!(int(&measured, "instructions"), 3 * n, "{pairs:?}");
        let served: u64 = ["l1", "l2", "llc", "dram"].iter().map(|w| int(&measured, &format!("data_served.{w}"))).sum();
        assert_eq!(served, n, "{pairs:?}");
        assert_eq!(int(&measured, "tlb.l1d.accesses") + int(&measured, "tlb.l1i.accesses"), n, "{pairs:?}");
        let ipc = int(&measured, "instructions") as f64 / int(&measured, "cycles") as f64;
        assert_eq!(measured.f("ipc"), ipc, "{pairs:?}");
        let rate = int(&measured, "cache.l1d.misses") as f64 / int(&measured, "cache.l1d.accesses") as f64;
        assert_eq!(measured.f("cache.l1d.miss_rate"), rate, "{pairs:?}");
        assert!(int(&measured, "cycles") < int(&end, "cycles"), "{pairs:?}: cycles since warm-up");
    }
}
