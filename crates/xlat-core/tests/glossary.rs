//! The statistics glossary (`xlat_core::glossary`) against the engine: `docs/statistics.md`
//! is the glossary's rendering; every statistic a handful of configurations emit is declared
//! (with the right kind); and every declared name is emitted by one of them.

use std::collections::BTreeSet;
use xlat_core::glossary::Kind;
use xlat_core::{Config, Ref, RefKind, RunOptions, StatValue, Stats, VecSource};

mod common;
use common::{Rng, BASE};

const MB: u64 = 1 << 20;

/// Declared names no configuration below emits, with the reason. Keep it tiny.
const NOT_RUN: &[(&str, &str)] = &[];

/// `n` references per stream over `footprint` bytes at `BASE`: random loads and stores,
/// some fetches, in `streams` streams.
fn streams(streams: usize, n: usize, footprint: u64) -> Vec<Vec<Ref>> {
    (0..streams)
        .map(|s| {
            let mut r = Rng(0x9e37 + s as u64);
            (0..n)
                .map(|i| {
                    let va = BASE + (r.next() % (footprint / 8)) * 8;
                    let kind = match i % 8 {
                        0 => RefKind::Fetch,
                        1 | 2 => RefKind::Store,
                        _ => RefKind::Load,
                    };
                    Ref::new(va, kind, 8, 3, false)
                })
                .collect()
        })
        .collect()
}

/// Run `pairs` on `cores` streams and return the statistics.
fn run(name: &str, pairs: &[(&str, &str)], cores: usize, prefault: bool) -> Stats {
    let n = cores.to_string();
    let mut all = vec![("system.cores", n.as_str()), ("phys.size_gb", "8")];
    all.extend_from_slice(pairs);
    let cfg = Config::from_pairs(all.iter().copied()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let footprint = 64 * MB;
    let regions = vec![xlat_core::Region { name: "data".into(), start: BASE, len: footprint, file: None }];
    // ("mix": two programs, one stream each, in address spaces of their own; "helper": the
    // last stream is a PT-Baker helper's.)
    let src = || {
        let inner = if name == "mix" {
            let prog = |i: usize| xlat_core::Program { name: format!("p{i}"), regions: regions.clone(), streams: vec![i], slot: 0 };
            VecSource::with_programs(streams(cores, 20_000, footprint), vec![prog(0), prog(1)])
        } else {
            VecSource::new(streams(cores, 20_000, footprint), regions.clone())
        };
        let helper = (name == "helper").then_some(xlat_core::Helper { stream: cores - 1, pass: 2048 });
        WithHelper(inner, helper)
    };
    let profile = (cfg.promotion.kind == xlat_core::config::Promotion::Oracle)
        .then(|| xlat_core::profile_walks(&cfg, &mut src(), RunOptions::default(), prefault, 1, &mut |_| true).unwrap_or_else(|e| panic!("{name}: {e}")));
    xlat_core::simulate_with(&cfg, &mut src(), profile.as_ref(), RunOptions::default(), prefault, 1, &mut |_| true).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A source whose helper thread is `.1`.
struct WithHelper(VecSource, Option<xlat_core::Helper>);

impl xlat_core::RefSource for WithHelper {
    fn streams(&self) -> usize {
        self.0.streams()
    }
    fn regions(&self) -> Vec<xlat_core::Region> {
        self.0.regions()
    }
    fn programs(&self) -> Vec<xlat_core::Program> {
        self.0.programs()
    }
    fn helper(&self) -> Option<xlat_core::Helper> {
        self.1
    }
    fn next_batch(&mut self, stream: usize, out: &mut Vec<Ref>) -> Result<(), xlat_core::SourceError> {
        self.0.next_batch(stream, out)
    }
}

fn has_key(key: &str) -> bool {
    Config::schema().iter().any(|k| k.key == key)
}

/// A configuration: (name, config pairs, cores, prefault).
type Case = (&'static str, Vec<(&'static str, &'static str)>, usize, bool);

/// The configurations whose names the glossary must cover.
fn cases() -> Vec<Case> {
    let mut v = vec![
        ("native", vec![], 1, true),
        ("two_cores", vec![], 2, true),
        (
            "two_vms",
            vec![
                ("virt.enabled", "true"),
                ("virt.vms", "2"),
                ("virt.guest_mem_gb", "2"),
                ("virt.switch_interval_cycles", "200000"),
                ("pt.format", "radix5"),
                ("pwc.l5.entries", "2"),
                ("virt.host_pt.format", "radix5"),
                ("virt.host_pwc.l5.entries", "2"),
            ],
            2,
            true,
        ),
        ("fpt", vec![("pt.format", "fpt")], 1, true),
        (
            "dram_banks",
            vec![("dram.banks", "32"), ("dram.bandwidth_gbps", "25.6"), ("core.lq", "8"), ("dram.write_batch", "4"), ("dram.turnaround_ns", "8")],
            1,
            true,
        ),
        ("radix5", vec![("pt.format", "radix5"), ("pwc.l5.entries", "2")], 1, true),
        ("thp", vec![("os.page_policy", "thp"), ("os.khugepaged_interval_cycles", "100000")], 1, false),
        (
            "coalescing",
            vec![("os.page_policy", "freebsd"), ("os.reservation_promote", "false"), ("tlb.coalescing", "16k"), ("tlb.l2i.entries", "512")],
            2,
            true,
        ),
        ("ptp_detector", vec![("cache.l2.policy", "ptp"), ("cache.llc.policy", "ptp"), ("ptp.mode", "detector"), ("ptp.detector_epoch", "5000")], 2, true),
        (
            "pomtlb",
            vec![
                ("pomtlb.enabled", "true"),
                ("pomtlb.size_mb", "1"),
                ("cache.l2.policy", "csalt-cd"),
                ("cache.llc.policy", "csalt-d"),
                ("csalt.epoch", "2000"),
            ],
            2,
            true,
        ),
    ];
    if has_key("tlb.pdc.entries") {
        v.push(("pdc", vec![("tlb.pdc.entries", "64"), ("tlb.l2.entries_1g", "0")], 1, true));
    }
    if has_key("shootdown.protocol") {
        v.push((
            "tcat",
            vec![
                ("pomtlb.enabled", "true"),
                ("pomtlb.size_mb", "1"),
                ("coherence.enabled", "true"),
                ("shootdown.protocol", "tcat-cotagless"),
                ("tlb.set_index", "vpn_xor_vm"),
                ("check.translations", "7"),
            ],
            2,
            false,
        ));
    }
    if has_key("pcc.enabled") {
        v.push(("pcc", vec![("os.promotion", "pcc"), ("pcc.entries_1g", "8"), ("os.promotion_interval", "2000"), ("pcc.demotion", "true")], 2, false));
    }
    if has_key("ech.enabled") {
        v.push(("ech", vec![("ech.enabled", "true")], 1, true));
    }
    if has_key("tlb.prefetcher") {
        v.push(("tlb_prefetch", vec![("tlb.prefetcher", "sequential")], 1, true));
    }
    if has_key("asap.enabled") {
        v.push(("asap", vec![("asap.enabled", "true")], 1, true));
    }
    if has_key("cache.l2.prefetcher") {
        v.push(("prefetchers", vec![("cache.l1d.prefetcher", "stride"), ("cache.l2.prefetcher", "stream")], 1, true));
    }
    if has_key("os.promotion") {
        v.push(("hawkeye", vec![("os.promotion", "hawkeye"), ("hawkeye.window_refs", "1000"), ("os.promotion_interval", "1000")], 2, false));
        v.push(("oracle", vec![("os.promotion", "oracle"), ("os.promotion_first", "1000")], 1, true));
        v.push(("mix", vec![("os.promotion", "pcc"), ("os.promotion_interval", "2000")], 2, true));
        v.push(("helper", vec![], 2, true));
        v.push(("smt", vec![("system.threads_per_core", "2")], 2, true));
    }
    v
}

#[test]
fn docs_statistics_md_is_the_glossary() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/statistics.md");
    let doc = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        doc == xlat_core::machine::glossary::markdown(),
        "docs/statistics.md is not the glossary's rendering: regenerate it with\n    cargo run --release -p xlat-core --example glossary > docs/statistics.md"
    );
}

#[test]
fn every_statistic_is_declared_and_every_declaration_emitted() {
    let mut emitted = BTreeSet::new();
    let mut undeclared = Vec::new();
    for (name, pairs, cores, prefault) in cases() {
        let s = run(name, &pairs, cores, prefault);
        assert!(s.f("refs") > 0.0, "{name}: nothing ran");
        for (stat, v) in &s.entries {
            match xlat_core::machine::glossary::lookup(stat) {
                None => undeclared.push(format!("{stat} ({name})")),
                Some(e) => {
                    // (Every integer is a counter, subtracted at the end of warm-up, or a level,
                    // reported as it is: the snapshot needs to know which.)
                    let int = matches!(v, StatValue::Int(_));
                    let classified = matches!(e.kind, Kind::Counter | Kind::Level);
                    assert_eq!(int, classified, "{name}: {stat} is {v:?}, declared a {} by {}", e.kind.name(), e.pattern);
                }
            }
            emitted.insert(stat.clone());
        }
    }
    assert!(
        undeclared.is_empty(),
        "statistics emitted but not declared (add an entry beside the code that emits them, see crates/xlat-core/src/glossary.rs, then regenerate docs/statistics.md):\n  {}",
        undeclared.join("\n  ")
    );
    let mut dead = Vec::new();
    for e in xlat_core::machine::glossary::entries() {
        if NOT_RUN.iter().any(|(p, _)| *p == e.pattern) {
            continue;
        }
        for name in e.expand() {
            if !emitted.contains(&name) {
                dead.push(format!("{name} (of {})", e.pattern));
            }
        }
    }
    assert!(
        dead.is_empty(),
        "declared names no configuration of this test emits (remove or fix the entry, or run a configuration that emits it):\n  {}",
        dead.join("\n  ")
    );
}

/// A structure has one name (`tlb.nested`, `virt.host_pwc`); its old one still finds it, as a
/// statistic or a key, at a dotted boundary only.
#[test]
fn old_structure_names_are_aliases() {
    use xlat_core::glossary::canonical;
    assert_eq!(canonical("nested_tlb.hits"), "tlb.nested.hits");
    assert_eq!(canonical("core2.vpwc.l2.hits"), "core2.virt.host_pwc.l2.hits");
    assert_eq!(canonical("virt.nested_tlb_data"), "virt.nested_tlb_data");
    assert_eq!(canonical("xvpwc.l2.hits"), "xvpwc.l2.hits");
    assert!(xlat_core::machine::glossary::lookup("core1.nested_tlb.misses").is_some());
    let c = Config::from_pairs([("nested_tlb.entries", "8"), ("vpwc.l3.entries", "2")]).unwrap();
    assert_eq!((c.tlb_nested.entries, c.virt_host_pwc.l3_entries), (8, 2));
    assert_eq!(c.get("nested_tlb.entries").as_deref(), Some("8"));
    assert!(Config::from_pairs([("nested_tlb.entriez", "8")]).is_err());
}
