//! A one-core run (native or in one VM) may translate on one host thread and replay its memory side on a
//! second (`RunOptions::threads`): the statistics must be exactly those of one thread, on
//! every path a reference can take (TLB hits, walks, 2D walks, dirty walks, faults, EPT
//! violations, write-backs, L3 TLB lookups and fills, warm-up, several runs, interruption).

use xlat_core::{Config, Machine, Ref, RunOptions, SimError, Stats, VecSource};

mod common;
use common::{region, Rng, BASE, GB};

fn cfg(pairs: &[(&str, &str)]) -> Config {
    Config::from_pairs(pairs.iter().copied()).unwrap()
}

/// Loads, stores and software prefetches: random over `footprint` (walks, dirty walks), with
/// runs of neighbouring references (TLB and cache hits) and dependent loads.
fn mixed_refs(n: usize, footprint: u64, seed: u64) -> Vec<Ref> {
    let mut r = Rng(seed);
    let mut out = Vec::with_capacity(n);
    let mut va = BASE;
    while out.len() < n {
        if r.below(4) == 0 {
            va = BASE + r.below(footprint / 8) * 8;
        } else {
            va = BASE + (va - BASE + 64 * r.below(80)) % footprint;
        }
        let delta = r.below(6) as u32;
        out.push(match r.below(6) {
            0 | 1 => Ref::store(va, delta),
            2 => Ref::new(va, xlat_core::RefKind::Load, 8, delta, true),
            3 => Ref::prefetch(va, delta),
            _ => Ref::load(va, delta),
        });
    }
    out
}

/// Run `refs` on a fresh machine with `threads` host threads, in two runs of `opts` each
/// (the second continues the first's state), and return the statistics.
fn run(c: &Config, refs: &[Ref], prefault: bool, opts: RunOptions, threads: usize) -> Stats {
    let half = refs.len() / 2;
    let mut m = Machine::new(c, 1, region(8 * GB), 7).unwrap();
    if prefault {
        m.prefault().unwrap();
    }
    for part in [&refs[..half], &refs[half..]] {
        let mut src = VecSource::new(vec![part.to_vec()], region(8 * GB));
        m.run(&mut src, RunOptions { threads, ..opts }, &mut |_| true).unwrap();
    }
    m.stats()
}

#[test]
fn two_host_threads_give_one_threads_statistics() {
    let refs = mixed_refs(60_000, 8 * GB, 3);
    let configs: &[&[(&str, &str)]] = &[
        &[],
        &[("pt.format", "fpt")],
        &[("pt.format", "radix5"), ("cache.llc.policy", "srrip"), ("tlb.l2.policy", "fifo")],
        &[("cache.llc.inclusive", "true"), ("cache.l1d.policy", "random")],
        &[("walker.port", "l2"), ("dram.bandwidth_gbps", "2"), ("tlb.prefetch_walks", "false")],
        &[("dram.banks", "32"), ("dram.bandwidth_gbps", "25.6"), ("dram.trefi_ns", "3900"), ("core.lq", "16")],
        &[("os.page_policy", "thp"), ("tlb.l2.ways", "6")],
        &[("cache.l2.policy", "ptp"), ("cache.llc.policy", "ptp"), ("ptp.mode", "always")],
        &[("os.page_policy", "freebsd"), ("os.reservation_promote", "false"), ("tlb.coalescing", "16k"), ("tlb.l2i.entries", "512")],
        &[("tlb.coalescing", "32k"), ("tlb.l2.entries_coalesced", "256"), ("tlb.l2.ways_coalesced", "2")],
        &[("virt.enabled", "true")],
        &[("virt.enabled", "true"), ("pt.format", "fpt"), ("virt.host_pt.format", "fpt"), ("virt.nested_tlb_data", "false")],
        // An L3 TLB in memory: lookups that hit (no walk), fills written through the caches,
        // a die-stacked DRAM with a queue.
        &[("pomtlb.enabled", "true"), ("pomtlb.size_mb", "1"), ("pomtlb.bandwidth_gbps", "8")],
        &[("virt.enabled", "true"), ("pomtlb.enabled", "true"), ("pomtlb.size_mb", "1")],
        // Partitioned caches repartition at epoch ends on the memory side.
        &[
            ("pomtlb.enabled", "true"),
            ("pomtlb.size_mb", "1"),
            ("cache.l2.policy", "csalt-cd"),
            ("cache.llc.policy", "csalt-d"),
            ("csalt.epoch", "3000"),
            ("csalt.profiler", "global_pos"),
        ],
        &[("pomtlb.enabled", "true"), ("cache.l2.policy", "dip"), ("cache.llc.policy", "csalt-cd"), ("csalt.epoch", "5000")],
        &[("core.lookahead", "8")],
        // TLB prefetch walks after the data access, on the walkers, counted apart.
        &[("tlb.prefetcher", "sequential"), ("core.walkers", "1")],
        &[("virt.enabled", "true"), ("core.lookahead", "8")],
    ];
    for pairs in configs {
        let c = cfg(pairs);
        for prefault in [false, true] {
            for opts in [RunOptions::default(), RunOptions { warmup: 7_000, max_refs: Some(15_000), ..RunOptions::default() }] {
                let one = run(&c, &refs, prefault, opts, 1);
                let two = run(&c, &refs, prefault, opts, 2);
                assert!(one.f("walks") > 1000.0 && one.f("tlb.dirty_walks") > 0.0, "the stream exercises walks");
                if c.core.lookahead > 0 {
                    assert!(one.f("inflight.early_walks") > 0.0 && one.f("inflight.early_fills") > 0.0, "and younger references starting work");
                }
                assert_eq!(one, two, "config {pairs:?}, prefault {prefault}, {opts:?}");
            }
        }
    }
}

#[test]
fn faults_are_replayed_with_their_cost() {
    // Not prefaulted: every first touch faults inside a walk.
    let refs = mixed_refs(20_000, GB, 5);
    let one = run(&Config::default(), &refs, false, RunOptions::default(), 1);
    let two = run(&Config::default(), &refs, false, RunOptions::default(), 2);
    assert!(one.f("faults") > 1000.0);
    assert_eq!(one, two);
}

#[test]
fn an_interrupted_run_stops_at_the_same_reference() {
    let refs = mixed_refs(200_000, 4 * GB, 9);
    let stop = |threads| {
        let mut m = Machine::new(&Config::default(), 1, region(8 * GB), 7).unwrap();
        let mut src = VecSource::new(vec![refs.clone()], region(8 * GB));
        let opts = RunOptions { threads, ..RunOptions::default() };
        let err = m.run(&mut src, opts, &mut |done| done < 2 * xlat_core::machine::PROGRESS_EVERY).unwrap_err();
        assert!(matches!(err, SimError::Interrupted));
        m.stats()
    };
    let (one, two) = (stop(1), stop(2));
    // (Dropped prefetches are no `refs`.)
    assert_eq!(one.f("refs") + one.f("prefetches.dropped"), 2.0 * xlat_core::machine::PROGRESS_EVERY as f64);
    assert_eq!(one, two);
}

#[test]
fn running_out_of_memory_is_the_same_error() {
    // 1 GB of physical memory cannot hold 2 GB of touched pages.
    let c = cfg(&[("phys.size_gb", "1")]);
    let refs: Vec<Ref> = (0..600_000u64).map(|i| Ref::store(BASE + i * 4096, 1)).collect();
    let fail = |threads| {
        let mut m = Machine::new(&c, 1, region(8 * GB), 7).unwrap();
        let mut src = VecSource::new(vec![refs.clone()], region(8 * GB));
        m.run(&mut src, RunOptions { threads, ..RunOptions::default() }, &mut |_| true).unwrap_err().to_string()
    };
    let one = fail(1);
    assert!(one.contains("exhausted") || one.contains("memory"), "{one}");
    assert_eq!(one, fail(2));
}

/// A run on two threads says how busy each was (host times, outside the statistics); a run on
/// one thread has none to report.
#[test]
fn host_times_are_reported_for_two_threads_only() {
    let refs = mixed_refs(40_000, 8 * GB, 5);
    let c = cfg(&[]);
    let mut m = Machine::new(&c, 1, region(8 * GB), 7).unwrap();
    for threads in [2, 1, 2] {
        let mut src = VecSource::new(vec![refs.clone()], region(8 * GB));
        m.run(&mut src, RunOptions { threads, ..RunOptions::default() }, &mut |_| true).unwrap();
        match (threads, m.host_times) {
            (1, None) => {}
            (2, Some(h)) => {
                assert!(h.wall_s > 0.0 && h.memory_s > 0.0 && h.translate_s > 0.0, "{h:?}");
                // Each thread is busy at most the whole run (plus the clock's granularity).
                assert!(h.memory_s <= h.wall_s + 1e-3 && h.translate_s <= h.wall_s + 1e-3, "{h:?}");
            }
            (t, h) => panic!("{t} threads reported {h:?}"),
        }
    }
}

/// The end of warm-up zeroes statistics and changes nothing simulated: a run with a warm-up
/// ends at the same cycle as the same references without one, even with DRAM and die-stacked
/// DRAM queues busy across the boundary.
#[test]
fn warm_up_changes_no_simulated_state() {
    let refs = mixed_refs(40_000, 4 * GB, 11);
    let c = cfg(&[
        ("dram.bandwidth_gbps", "2"),
        ("dram.banks", "16"),
        ("dram.trefi_ns", "3900"),
        ("pomtlb.enabled", "true"),
        ("pomtlb.size_mb", "1"),
        ("pomtlb.bandwidth_gbps", "1"),
    ]);
    let end = |warmup| {
        let mut m = Machine::new(&c, 1, region(8 * GB), 7).unwrap();
        let mut src = VecSource::new(vec![refs.clone()], region(8 * GB));
        m.run(&mut src, RunOptions { warmup, threads: 1, ..RunOptions::default() }, &mut |_| true).unwrap();
        (m.mem.ctxs[0].window.cycles(), m.stats())
    };
    let (with, s) = end(20_000);
    let (without, all) = end(0);
    assert_eq!(with, without);
    assert!(s.f("dram.queue_cycles") > 0.0 && s.f("dram.bank_wait_cycles") > 0.0 && s.f("refs") + s.f("prefetches.dropped") == 20_000.0);
    assert!(s.f("dram.reads") < all.f("dram.reads"));
}

/// A warm-up counted in instructions ends at the reference that reaches the count: the
/// statistics then cover what follows, `max_refs` of it, on one host thread or two alike. Here
/// 100 references of 3 instructions each: 150 instructions of warm-up end with the 50th.
#[test]
fn a_warmup_in_instructions_ends_at_the_reference_that_reaches_it() {
    let refs: Vec<Ref> = (0..100u64).map(|i| Ref::load(BASE + i * 4096, 3)).collect();
    let c = cfg(&[]);
    for threads in [1, 2] {
        let mut m = Machine::new(&c, 1, region(GB), 7).unwrap();
        let mut src = VecSource::new(vec![refs.clone()], region(GB));
        let opts = RunOptions { warmup_instructions: 150, max_refs: Some(30), threads, ..RunOptions::default() };
        assert_eq!(m.run(&mut src, opts, &mut |_| true).unwrap(), 80);
        let s = m.stats();
        assert_eq!((s.f("refs"), s.f("instructions")), (30.0, 90.0), "threads {threads}");
    }
    let mut m = Machine::new(&c, 1, region(GB), 7).unwrap();
    let mut src = VecSource::new(vec![refs.clone()], region(GB));
    let opts = RunOptions { warmup_instructions: 300, ..RunOptions::default() };
    let e = m.run(&mut src, opts, &mut |_| true).unwrap_err();
    assert!(matches!(e, SimError::WarmupInstructionsTooLong { instructions: 300, done: 100 }), "{e}");
}
