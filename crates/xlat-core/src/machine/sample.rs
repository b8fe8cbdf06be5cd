//! Sampled long runs: simulate a small part of each period of a long reference stream in
//! detail and skip the rest, for an estimate with a confidence interval in a fraction of the
//! time (SMARTS-like, with detailed warming).
//!
//! Each period of `period` references (counted ones, all streams together) is: `skip`
//! references read from the source and dropped (their OS calls still applied, so mappings
//! stay what the program made them), then `warm` references simulated in detail and not
//! measured (the TLBs, page-walk caches and caches, stale from the skip, warm up again; the
//! page tables were never cold), then `unit` references simulated and measured. Each unit's
//! statistics are kept apart (the change of every integer statistic over it), so the caller
//! can estimate a ratio such as IPC and its confidence interval from the units' spread.
//!
//! Skipping trades accuracy for speed where warming is too short for a structure's reach: a
//! workload whose LLC holds a working set longer than `warm` references starts each unit
//! colder than a full run would. `docs/performance.md` measures it.

use crate::error::SimError;
use crate::machine::{Machine, RunOptions};
use crate::stats::Stats;
use crate::workload::{Ref, RefKind, RefSource};

/// How a sampled run divides the stream (references, all streams together).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub period: u64,
    pub warm: u64,
    pub unit: u64,
}

impl Sample {
    /// One line saying what is wrong, if anything.
    pub fn check(&self) -> Result<(), SimError> {
        if self.unit == 0 || self.warm.saturating_add(self.unit) > self.period {
            return Err(SimError::BadSample(format!(
                "period {} with {} warm and {} measured references: give 0 < unit and warm + unit <= period",
                self.period, self.warm, self.unit
            )));
        }
        Ok(())
    }

    /// References skipped per period.
    pub fn skip(&self) -> u64 {
        self.period - self.warm - self.unit
    }
}

/// What a sampled run did.
#[derive(Clone, Debug, Default)]
pub struct Sampled {
    /// Each measured unit's statistics: the change of every integer statistic over it.
    pub units: Vec<Stats>,
    /// References dropped unsimulated, and simulated (warm and measured).
    pub skipped: u64,
    pub simulated: u64,
    /// Every statistic at the end (for the states a run reports, such as memory in use).
    pub last: Stats,
}

/// Pages a skipped store already dirtied, a bit each in a bitmap per 1 GB region of an
/// address space: each page's bits are set once, not at every skipped store to it.
struct Dirtied {
    /// (address space and 1 GB region number, its 262,144 pages' bits).
    regions: Vec<(u64, Box<[u64]>)>,
    /// The region the last lookup found (stores cluster).
    last: usize,
}

impl Dirtied {
    const PAGES: usize = 1 << 18;

    fn new() -> Dirtied {
        Dirtied { regions: Vec::new(), last: 0 }
    }

    /// Marks page `va >> 12` of `space`; false if it was marked.
    fn insert(&mut self, space: usize, va: u64) -> bool {
        let key = (va >> 30) | (space as u64) << 40;
        if self.regions.get(self.last).is_none_or(|r| r.0 != key) {
            self.last = match self.regions.iter().position(|r| r.0 == key) {
                Some(i) => i,
                None => {
                    self.regions.push((key, vec![0u64; Self::PAGES / 64].into_boxed_slice()));
                    self.regions.len() - 1
                }
            };
        }
        let page = (va >> 12) as usize & (Self::PAGES - 1);
        let word = &mut self.regions[self.last].1[page / 64];
        let bit = 1u64 << (page % 64);
        let new = *word & bit == 0;
        *word |= bit;
        new
    }
}

/// The source as a sampled run reads it: each counted stream gets a budget of references per
/// phase (a stream whose budget is spent looks ended, so a phase's run stops exactly there),
/// and what a batch held beyond the budget is kept for the next phase instead of lost.
pub(crate) struct Metered<'a> {
    src: &'a mut dyn RefSource,
    carry: Vec<Vec<Ref>>,
    /// References each stream may still give in this phase (`u64::MAX`: not counted).
    budget: Vec<u64>,
    counted: Vec<bool>,
}

impl<'a> Metered<'a> {
    pub(crate) fn new(src: &'a mut dyn RefSource) -> Metered<'a> {
        let n = src.streams();
        let counted = (0..n).map(|s| src.counted(s)).collect();
        Metered { src, carry: (0..n).map(|_| Vec::with_capacity(crate::machine::BATCH)).collect(), budget: vec![u64::MAX; n], counted }
    }

    /// Give the counted streams `n` references in all (an equal share each).
    fn allow(&mut self, n: u64) {
        let k = self.counted.iter().filter(|&&c| c).count().max(1) as u64;
        for (b, &c) in self.budget.iter_mut().zip(&self.counted) {
            *b = if c { n.div_ceil(k) } else { u64::MAX };
        }
    }
}

impl RefSource for Metered<'_> {
    fn streams(&self) -> usize {
        self.src.streams()
    }
    fn regions(&self) -> Vec<crate::workload::Region> {
        self.src.regions()
    }
    fn programs(&self) -> Vec<crate::workload::Program> {
        self.src.programs()
    }
    fn counted(&self, stream: usize) -> bool {
        self.counted[stream]
    }
    fn paced(&self) -> bool {
        self.src.paced()
    }
    fn observe(&mut self, stream: usize, va: u64) {
        self.src.observe(stream, va)
    }
    fn helper(&self) -> Option<crate::workload::Helper> {
        self.src.helper()
    }
    fn next_batch(&mut self, stream: usize, out: &mut Vec<Ref>) -> Result<(), crate::workload::SourceError> {
        let want = out.capacity().max(1);
        out.clear();
        if self.budget[stream] == 0 {
            return Ok(());
        }
        if self.carry[stream].is_empty() {
            self.src.next_batch(stream, &mut self.carry[stream])?;
        }
        let carry = &mut self.carry[stream];
        let k = carry.len().min(want).min(usize::try_from(self.budget[stream]).unwrap_or(usize::MAX));
        out.extend(carry.drain(..k));
        if self.counted[stream] {
            self.budget[stream] -= k as u64;
        }
        Ok(())
    }
}

/// Drop `n` references of the counted streams (an equal share each), applying the OS calls
/// among them and the dirty bits their stores set. Returns how many were dropped (fewer: the
/// streams ended).
fn skip(m: &mut Machine, src: &mut Metered, n: u64, buf: &mut Vec<Ref>, dirtied: &mut Dirtied) -> Result<u64, SimError> {
    if n == 0 {
        return Ok(0);
    }
    src.allow(n);
    let mut dropped = 0;
    // (A batch of each stream in turn, as a run takes them: a kernel's threads make their
    // references together, so one stream drained first would leave the others' buffered.)
    let mut live: Vec<usize> = (0..src.streams()).filter(|&s| src.counted[s]).collect();
    let contexts = m.kernel.contexts.len();
    while !live.is_empty() {
        let mut i = 0;
        while i < live.len() {
            let s = live[i];
            // With vCPU overcommit a context time-slices streams c, c + n, ...: stream s's OS
            // calls are its context's (one program, so one address space on every slot).
            // Programs time-sliced on shared cores have a space each, which a skipped call
            // cannot switch to.
            let c = s % contexts;
            let elsewhere = s >= contexts && m.kernel.sched.places > 1;
            src.next_batch(s, buf)?;
            if buf.is_empty() {
                live.remove(i);
                continue;
            }
            for r in buf.iter() {
                if r.is_os_call() {
                    if elsewhere {
                        return Err(SimError::BadSample("--skip over an OS call of a program that shares its core with another: the call cannot be applied to a program not running (use --warmup)".into()));
                    }
                    m.step(c, *r)?;
                } else if r.kind() == RefKind::Store && !m.xl.virt {
                    // The dirty bits the skipped stores would set: otherwise the measured
                    // stores find clean pages and walk again to set them. (Once a page: the
                    // OS of a sampled run is not expected to clean pages.)
                    let space = m.kernel.contexts[s].space;
                    if dirtied.insert(space, r.va) {
                        m.kernel.os.touch_store(space, crate::arch::addr::VirtAddr(r.va));
                    }
                }
            }
            dropped += buf.len() as u64;
            i += 1;
        }
    }
    Ok(dropped)
}

/// Drop the first `n` references of the counted streams of `src` (as a sampled run skips),
/// then leave every stream unlimited: what was read beyond them comes next. Returns how many
/// were dropped (fewer: the streams ended).
pub(crate) fn fast_forward(m: &mut Machine, src: &mut Metered, n: u64) -> Result<u64, SimError> {
    let dropped = skip(m, src, n, &mut Vec::with_capacity(crate::machine::BATCH), &mut Dirtied::new())?;
    src.budget.fill(u64::MAX);
    Ok(dropped)
}

/// Simulate `m` one phase of `refs` references; `Ok(None)` when the source had ended.
fn stretch(m: &mut Machine, src: &mut Metered, refs: u64, threads: usize, progress: &mut dyn FnMut(u64) -> bool) -> Result<Option<u64>, SimError> {
    src.allow(refs);
    match m.run(src, RunOptions { max_refs: Some(refs), threads, ..RunOptions::default() }, progress) {
        Ok(done) => Ok(Some(done)),
        // (A run that finds the source empty measured nothing: the end of the stream.)
        Err(SimError::WarmupTooLong { warmup: 0, done: 0 }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Run `src` on `m` sampled: `opts.skip` and `opts.warmup` references skipped first, then periods over the
/// next `opts.max_refs` (or the whole stream). `progress(position)` gets the stream position.
pub fn run(m: &mut Machine, src: &mut dyn RefSource, s: Sample, opts: RunOptions, progress: &mut dyn FnMut(u64) -> bool) -> Result<Sampled, SimError> {
    s.check()?;
    let mut out = Sampled::default();
    let mut buf = Vec::with_capacity(crate::machine::BATCH);
    let mut dirtied = Dirtied::new();
    let mut src = Metered::new(src);
    let mut pos = skip(m, &mut src, opts.skip + opts.warmup, &mut buf, &mut dirtied)?;
    let end = opts.max_refs.map_or(u64::MAX, |r| r.saturating_add(opts.skip + opts.warmup));
    while pos < end {
        let want = s.skip().min(end - pos);
        let dropped = skip(m, &mut src, want, &mut buf, &mut dirtied)?;
        out.skipped += dropped;
        pos += dropped;
        if dropped < want || pos >= end {
            break;
        }
        let base = pos;
        let mut report = |done: u64| progress(base + done);
        let Some(w) = stretch(m, &mut src, s.warm.min(end - pos), opts.threads, &mut report)? else { break };
        out.simulated += w;
        pos += w;
        if w < s.warm.min(end - base) || pos >= end {
            break;
        }
        m.end_warmup();
        let before = m.stats();
        let base = pos;
        let mut report = |done: u64| progress(base + done);
        let Some(u) = stretch(m, &mut src, s.unit.min(end - pos), opts.threads, &mut report)? else { break };
        out.simulated += u;
        pos += u;
        if u > 0 {
            out.units.push(m.stats().since(&before));
        }
        if u < s.unit {
            break;
        }
        if !progress(pos) {
            return Err(SimError::Interrupted);
        }
    }
    out.last = m.stats();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_needs_a_unit_that_fits_its_period() {
        assert!(Sample { period: 10, warm: 3, unit: 7 }.check().is_ok());
        assert!(Sample { period: 10, warm: 4, unit: 7 }.check().is_err());
        assert!(Sample { period: 10, warm: 0, unit: 0 }.check().is_err());
        assert_eq!(Sample { period: 10, warm: 3, unit: 2 }.skip(), 5);
    }

    #[test]
    fn each_page_is_dirtied_once() {
        let mut d = Dirtied::new();
        assert!(d.insert(0, 0x7f00_0000_1234) && !d.insert(0, 0x7f00_0000_1fff));
        assert!(d.insert(1, 0x7f00_0000_1234), "another address space");
        assert!(d.insert(0, 0x7f00_0000_2000) && d.insert(0, 0x7f40_0000_1000));
        assert_eq!(d.regions.len(), 3);
    }
}
