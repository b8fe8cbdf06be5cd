//! Statistics over time (`RunOptions::interval`): the intervals partition the run after
//! warm-up, and taking them does not change the run.

mod common;
use common::{random_refs, region, BASE, GB};
use xlat_core::{Config, Ref, RunOptions, StatValue, Stats, VecSource};

fn run(cfg: &Config, streams: Vec<Vec<Ref>>, opts: RunOptions) -> Stats {
    let mut src = VecSource::new(streams, region(GB));
    xlat_core::simulate(cfg, &mut src, opts, false, 1, &mut |_| true).unwrap()
}

/// A phase of random loads over 1 GB (TLB misses), then a phase over 16 pages (none).
fn phases(n: usize) -> Vec<Ref> {
    let mut refs = random_refs(n, GB, 7);
    refs.extend((0..n as u64).map(|i| Ref::load(BASE + (i % 16) * 4096, 4)));
    refs
}

#[test]
fn intervals_add_up_to_the_run_and_show_its_phases() {
    let cfg = Config::default();
    let opts = RunOptions { warmup: 5_000, interval: 40_000, ..RunOptions::default() };
    let whole = run(&cfg, vec![phases(60_000)], RunOptions { interval: 0, ..opts });
    let s = run(&cfg, vec![phases(60_000)], opts);
    // Taking the intervals changes nothing.
    assert_eq!(s.entries, whole.entries);
    assert!(whole.series.is_empty());
    // 115 K references of 4 instructions after warm-up: 460 K instructions, 12 intervals
    // (the last one short), each at least as long as asked but for the last.
    let n = s.series.len();
    assert_eq!(n, 12, "{n} intervals");
    for (i, iv) in s.series.iter().enumerate() {
        let instr = iv.f("instructions");
        assert!(instr >= 40_000.0 || i == n - 1, "interval {i}: {instr} instructions");
        assert!(instr < 40_000.0 + 256.0 * 4.0 || i == n - 1, "interval {i} ends at the first check past its end: {instr}");
    }
    // Every counter's intervals add up to its total.
    for name in ["refs", "instructions", "cycles", "walks", "walk_steps", "tlb.l2.misses", "cache.l1d.accesses", "faults"] {
        let sum: f64 = s.series.iter().map(|iv| iv.f(name)).sum();
        assert_eq!(sum, s.f(name), "{name}");
    }
    // Ratios are not in the series (they do not add up); their parts are.
    assert!(s.series[0].get("ipc").is_none() && s.series[0].get("tlb.l2.mpki").is_none());
    // The first phase misses the TLBs, the second does not.
    let walks: Vec<f64> = s.series.iter().map(|iv| iv.f("walks")).collect();
    assert!(walks[1] > 5_000.0 && walks[n - 2] == 0.0, "walks per interval: {walks:?}");
    // Free memory falls as pages are faulted in: a negative change.
    assert!(matches!(s.series[0].get("phys.free_bytes"), Some(StatValue::Float(f)) if f < 0.0));
}

#[test]
fn several_cores_count_their_instructions_together() {
    let cfg = Config::from_pairs([("system.cores", "2")]).unwrap();
    let opts = RunOptions { interval: 20_000, ..RunOptions::default() };
    let s = run(&cfg, vec![random_refs(10_000, GB, 1), random_refs(10_000, GB, 2)], opts);
    assert_eq!(s.series.len(), 4, "80 K instructions over both cores");
    for name in ["refs", "core0.refs", "core1.walks", "instructions"] {
        assert_eq!(s.series.iter().map(|iv| iv.f(name)).sum::<f64>(), s.f(name), "{name}");
    }
}
