//! Sampled runs (`xlat_core::sample`): a plan that skips nothing measures what a full run
//! does, counter by counter; skipped stores leave their pages dirty; bad plans are one error.

use xlat_core::sample::Sample;
use xlat_core::workload::{Region, SourceError};
use xlat_core::{Config, Ref, RefSource, RunOptions, Stats, VecSource};

mod common;
use common::{region, Rng, BASE, GB};

fn stream(n: usize, seed: u64) -> Vec<Ref> {
    let mut r = Rng(seed);
    (0..n)
        .map(|_| {
            let va = BASE + r.below(GB / 4096) * 4096 + r.below(512) * 8;
            if r.below(3) == 0 {
                Ref::store(va, 2)
            } else {
                Ref::load(va, 1)
            }
        })
        .collect()
}

fn sampled(refs: &[Ref], s: Sample, warmup: u64, max: u64) -> xlat_core::sample::Sampled {
    let mut src = VecSource::new(vec![refs.to_vec()], region(GB));
    let opts = RunOptions { warmup, max_refs: Some(max), threads: 1, ..Default::default() };
    xlat_core::simulate_sampled(&Config::default(), &mut src, s, opts, true, 1, &mut |_| true).unwrap()
}

fn sum(units: &[Stats], name: &str) -> f64 {
    units.iter().map(|u| u.f(name)).sum()
}

#[test]
fn a_plan_that_skips_nothing_measures_the_full_run() {
    let refs = stream(50_000, 3);
    let mut src = VecSource::new(vec![refs.clone()], region(GB));
    let full = xlat_core::simulate(&Config::default(), &mut src, RunOptions { threads: 1, ..Default::default() }, true, 1, &mut |_| true).unwrap();
    // Units of 7,000 (not a multiple of the engine's batches): each unit picks up exactly
    // where the last stopped.
    let r = sampled(&refs, Sample { period: 7_000, warm: 0, unit: 7_000 }, 0, 50_000);
    assert_eq!((r.units.len(), r.skipped, r.simulated), (8, 0, 50_000));
    for name in ["refs", "instructions", "cycles", "walks", "tlb.dirty_walks", "tlb.l2.misses", "cache.l1d.misses", "cache.llc.misses", "dram.reads"] {
        assert_eq!(sum(&r.units, name), full.f(name), "{name}");
    }
}

#[test]
fn skipped_stores_leave_their_pages_dirty() {
    // The same 200 pages stored to again and again: after the skipped first pass every page
    // is dirty, so the measured stores walk only for TLB misses, never to set a dirty bit.
    let pages: Vec<Ref> = (0..20_000u64).map(|i| Ref::store(BASE + (i % 200) * 4096, 1)).collect();
    let r = sampled(&pages, Sample { period: 10_000, warm: 0, unit: 1_000 }, 0, 20_000);
    assert_eq!((r.units.len(), r.skipped), (2, 18_000));
    assert_eq!(sum(&r.units, "tlb.dirty_walks"), 0.0);
    // A full run of the measured stretch alone, pages clean, walks to dirty them.
    let first: Vec<Ref> = pages[9_000..10_000].to_vec();
    let mut src = VecSource::new(vec![first], region(GB));
    let cold = xlat_core::simulate(&Config::default(), &mut src, RunOptions { threads: 1, ..Default::default() }, true, 1, &mut |_| true).unwrap();
    assert!(cold.f("tlb.dirty_walks") + cold.f("walks") >= 200.0);
}

#[test]
fn a_bad_plan_is_one_error() {
    let mut src = VecSource::new(vec![stream(10, 1)], region(GB));
    let e = xlat_core::simulate_sampled(&Config::default(), &mut src, Sample { period: 10, warm: 8, unit: 5 }, RunOptions::default(), false, 1, &mut |_| true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad sampling") && e.contains("warm + unit <= period"), "{e}");
}

/// Two streams made together, as a kernel's threads are: like the kernels' buffers, it
/// refuses to let one stream run more than `slack` references ahead of the other.
struct Lockstep {
    inner: VecSource,
    read: [u64; 2],
    slack: u64,
}

impl RefSource for Lockstep {
    fn streams(&self) -> usize {
        2
    }
    fn regions(&self) -> Vec<Region> {
        self.inner.regions()
    }
    fn next_batch(&mut self, stream: usize, out: &mut Vec<Ref>) -> Result<(), SourceError> {
        self.inner.next_batch(stream, out)?;
        self.read[stream] += out.len() as u64;
        if self.read[stream] > self.read[1 - stream] + self.slack {
            return Err(SourceError::Workload { name: "lockstep".into(), what: "streams consumed too unevenly".into() });
        }
        Ok(())
    }
}

#[test]
fn a_skip_takes_the_streams_in_turn() {
    // 200,000 references skipped over two streams, 100,000 of each, where neither stream
    // may be read more than 20,000 ahead: the skip reads a batch of each in turn.
    let streams = vec![stream(120_000, 5), stream(120_000, 6)];
    let mut src = Lockstep { inner: VecSource::new(streams, region(GB)), read: [0; 2], slack: 20_000 };
    let cfg = Config::from_pairs([("system.cores", "2")]).unwrap();
    let opts = RunOptions { skip: 200_000, threads: 1, ..Default::default() };
    let s = xlat_core::simulate(&cfg, &mut src, opts, true, 1, &mut |_| true).unwrap();
    assert_eq!(s.f("refs"), 40_000.0);
}
