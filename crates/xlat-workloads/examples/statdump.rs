//! Every statistic of the standard configurations, one `case stat value` line each, so that
//! two builds can be compared bit for bit (`scripts/statcheck` does it against a git
//! revision): `cargo run --release -p xlat-workloads --example statdump [-- CASE...]`.
//!
//! The cases cover the engine's paths: native radix, 5-level and flattened tables (1 GB nodes
//! and five levels too), hashed ones (ECH), 2D walks
//! (radix and flattened), one and two host threads, several cores, several processes with
//! and without PCIDs, THP with khugepaged and faults, fragmentation, two VMs, the PTP
//! detector, a perfect TLB, the AMD-style walker port with an inclusive LLC and a DRAM
//! queue, warm-up, the POM-TLB, CSALT and DIP, coalesced TLB entries, data prefetchers, a TLB
//! prefetcher, and TCAT's shootdowns over the POM-TLB. Each is small enough that the whole set
//! runs in about a minute.
use xlat_core::{Config, Machine, RunOptions};

/// (name, workload spec, references, warm-up, prefault, host threads, config pairs)
type Case = (&'static str, &'static str, u64, u64, bool, usize, &'static [&'static str]);

const GUPS: &str = "gups:footprint=4G,updates=4M";
const GUPS_SMALL: &str = "gups:footprint=256M,updates=4M";

const CASES: &[Case] = &[
    ("native", GUPS, 2_000_000, 0, true, 1, &[]),
    ("native_2t", GUPS, 2_000_000, 0, true, 2, &[]),
    ("warmup_2t", GUPS, 1_500_000, 500_000, true, 2, &[]),
    ("radix5", GUPS, 1_000_000, 0, true, 1, &["pt.format=radix5", "pwc.l5.entries=2"]),
    ("fpt", GUPS, 1_000_000, 0, true, 2, &["pt.format=fpt"]),
    ("fpt_l3l2", GUPS, 1_000_000, 0, true, 1, &["pt.format=fpt-l3l2"]),
    ("fpt5", GUPS, 1_000_000, 0, true, 1, &["pt.format=fpt5"]),
    ("fpt_1g", GUPS, 1_000_000, 0, true, 1, &["pt.format=fpt-1g"]),
    ("ech_2t", GUPS, 1_000_000, 200_000, true, 2, &["ech.enabled=true"]),
    ("faults", GUPS_SMALL, 1_000_000, 0, false, 2, &[]),
    ("virt", GUPS, 1_000_000, 0, true, 1, &["virt.enabled=true"]),
    ("virt_2t", GUPS, 1_000_000, 0, true, 2, &["virt.enabled=true"]),
    ("virt_fpt", GUPS, 1_000_000, 0, true, 2, &["virt.enabled=true", "pt.format=fpt", "virt.host_pt.format=fpt"]),
    ("virt_faults", GUPS_SMALL, 1_000_000, 0, false, 1, &["virt.enabled=true", "virt.host_page_policy=thp"]),
    ("two_vms", GUPS_SMALL, 1_000_000, 0, true, 1, &["virt.enabled=true", "virt.vms=2", "virt.switch_interval_cycles=2000000"]),
    ("two_vms_novpid", GUPS_SMALL, 600_000, 0, true, 1, &["virt.enabled=true", "virt.vms=2", "virt.vpid=false", "virt.switch_interval_cycles=1000000"]),
    ("multicore", "bfs:scale=14,threads=4", 1_000_000, 0, true, 1, &["system.cores=4", "cache.llc.size_kb=32768"]),
    ("multicore_gups", "gups:footprint=2G,updates=4M,threads=4", 1_000_000, 0, true, 1, &["system.cores=4", "ptp.per_context=true"]),
    ("multicore_faults", "gups:footprint=512M,updates=4M,threads=2", 800_000, 0, false, 1, &["system.cores=2"]),
    ("processes", GUPS_SMALL, 1_000_000, 0, true, 1, &["os.processes=2", "os.timeslice_cycles=1000000"]),
    ("processes_nopcid", GUPS_SMALL, 600_000, 0, true, 1, &["os.processes=2", "os.timeslice_cycles=1000000", "os.pcid=false"]),
    ("thp", GUPS_SMALL, 1_000_000, 0, false, 1, &["os.page_policy=thp", "os.khugepaged_interval_cycles=2000000"]),
    (
        "thp_frag",
        GUPS_SMALL,
        1_000_000,
        0,
        false,
        1,
        &["os.page_policy=thp", "phys.fragmentation=pinned:0.99", "phys.size_gb=4", "os.thp_defrag=never", "os.khugepaged_interval_cycles=2000000"],
    ),
    ("ideal", GUPS, 1_000_000, 0, true, 2, &["os.page_policy=ideal"]),
    ("ptp_always", GUPS, 1_000_000, 0, true, 2, &["cache.l2.policy=ptp", "cache.llc.policy=ptp"]),
    (
        "ptp_detector",
        "gups:footprint=4G,updates=4M,threads=2",
        1_000_000,
        0,
        true,
        1,
        &["system.cores=2", "cache.l2.policy=ptp", "cache.llc.policy=ptp", "ptp.mode=detector", "ptp.detector_epoch=20000", "ptp.detector_mpki=50"],
    ),
    ("perfect", GUPS, 1_000_000, 0, true, 1, &["tlb.perfect=true"]),
    ("amd_port", GUPS, 1_000_000, 0, true, 2, &["walker.port=l2", "cache.llc.inclusive=true", "dram.bandwidth_gbps=20", "tlb.l1d.unified=true"]),
    ("bfs", "bfs:scale=15", 1_500_000, 200_000, true, 2, &[]),
    ("pomtlb_2t", GUPS, 1_500_000, 500_000, true, 2, &["pomtlb.enabled=true"]),
    ("virt_pomtlb", GUPS, 1_000_000, 0, true, 1, &["virt.enabled=true", "pomtlb.enabled=true", "pomtlb.size_mb=1"]),
    ("csalt_2t", GUPS, 1_000_000, 200_000, true, 2, &["pomtlb.enabled=true", "cache.l2.policy=csalt-cd", "cache.llc.policy=csalt-d", "csalt.epoch=20000"]),
    ("dip", GUPS, 1_000_000, 0, true, 1, &["pomtlb.enabled=true", "cache.llc.policy=dip"]),
    (
        "coalescing",
        "random:footprint=64M,reads=2M",
        1_000_000,
        500_000,
        true,
        2,
        &["os.page_policy=freebsd", "os.reservation_promote=false", "tlb.coalescing=16k"],
    ),
    ("coalescing_faults", GUPS_SMALL, 600_000, 0, false, 1, &["tlb.coalescing=32k"]),
    ("asap_2t", GUPS, 1_000_000, 200_000, true, 2, &["asap.enabled=true"]),
    ("prefetchers_2t", "bfs:scale=15", 1_000_000, 200_000, true, 2, &["cache.l1d.prefetcher=stride", "cache.l2.prefetcher=stream"]),
    ("tlb_prefetch_2t", GUPS_SMALL, 1_000_000, 200_000, true, 2, &["tlb.prefetcher=sequential", "core.walkers=1"]),
    (
        "tcat",
        "kvstore:threads=4,keys=256K,ops=8M,writes=0.05,churn=0.032",
        600_000,
        100_000,
        true,
        1,
        &["system.cores=4", "pomtlb.enabled=true", "coherence.enabled=true", "shootdown.protocol=tcat-cotag", "tcat.flush=false", "tcat.fill_invalidates=true"],
    ),
];

fn main() {
    let only: Vec<String> = std::env::args().skip(1).collect();
    for &(name, spec, refs, warmup, prefault, threads, pairs) in CASES {
        if !only.is_empty() && !only.iter().any(|o| o == name) {
            continue;
        }
        let cfg = Config::from_pairs(pairs.iter().map(|p| p.split_once('=').expect("key=value"))).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (_, mut src) = xlat_workloads::open(spec, 1).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut m = Machine::new(&cfg, src.streams(), src.regions(), 1).unwrap_or_else(|e| panic!("{name}: {e}"));
        if prefault {
            m.prefault().unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        m.run(src.as_mut(), RunOptions { max_refs: Some(refs), warmup, threads, ..RunOptions::default() }, &mut |_| true)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for (k, v) in &m.stats().entries {
            println!("{name} {k} {v:?}");
        }
    }
}
