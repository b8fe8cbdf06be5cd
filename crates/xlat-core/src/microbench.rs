//! The coalescing paper's microbenchmark (§3.1; seeds/002_coalescing.spec.md §2.9), driving
//! a machine directly: a trace language of reads, writes and invalidations of pages of
//! coalescing subregions, applied to every subregion of a region, with the paper's four kinds
//! of repeats, the L1 DTLB miss counters sampled after every word, and a `mincore`-like
//! report of each page's valid, accessed and modified state at the end.
//!
//! The language:
//! - a **subregion** is an aligned group of `n` pages (4 or 8: the coalescing group);
//! - an **operation** is `rK` (read page K of the subregion), `wK` (write it) or `iK`
//!   (INVLPG it: the paper does not name its invalidation token), with K < n;
//! - a **word** is operations separated by spaces, terminated by `:` (the last word's `:`
//!   may be left out): `r0: r1: r2: r3` is four words, `r0 r1 r2 r3` one;
//! - executing a word applies its operations in order to each subregion in address order.
//!
//! Repeats ([`Repeats`]): each operation issued `op` times; a word applied `local` times to
//! one subregion before the next; the whole word applied across all subregions `global`
//! times; the whole trace run `trace` times. The counters are sampled after each application
//! of a word across the region.

use crate::arch::addr::VirtAddr;
use crate::arch::ctx::Invalidate;
use crate::arch::pte::{PTE_A, PTE_D};
use crate::error::SimError;
use crate::machine::Machine;
use crate::translate::mmu::TlbId;
use crate::translate::tlb::CODES;
use crate::workload::Ref;
use thiserror::Error;

/// One operation on a page of a subregion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read(u32),
    Write(u32),
    Invlpg(u32),
}

/// A parsed trace: its words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    pub words: Vec<Vec<Op>>,
}

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum TraceError {
    #[error("microbenchmark trace: '{token}' is not an operation (rK, wK or iK with K a page of the subregion)")]
    BadToken { token: String },
    #[error("microbenchmark trace: '{token}' names page {page}, but a subregion has {pages} pages (0..{pages})")]
    PageOutOfRange { token: String, page: u32, pages: u32 },
    #[error("microbenchmark trace: word {word} is empty")]
    EmptyWord { word: usize },
}

impl Trace {
    /// Parse `text` for subregions of `pages` pages.
    pub fn parse(text: &str, pages: u32) -> Result<Trace, TraceError> {
        let mut parts: Vec<&str> = text.split(':').collect();
        // (A trailing ':' terminates the last word; it does not start another.)
        if parts.len() > 1 && parts.last().is_some_and(|p| p.trim().is_empty()) {
            parts.pop();
        }
        let mut words = Vec::new();
        for (w, part) in parts.iter().enumerate() {
            let mut ops = Vec::new();
            for token in part.split_whitespace() {
                let bad = || TraceError::BadToken { token: token.to_string() };
                let (kind, num) = token.split_at(token.char_indices().nth(1).map_or(token.len(), |(i, _)| i));
                let page: u32 = num.parse().map_err(|_| bad())?;
                if page >= pages {
                    return Err(TraceError::PageOutOfRange { token: token.to_string(), page, pages });
                }
                ops.push(match kind {
                    "r" => Op::Read(page),
                    "w" => Op::Write(page),
                    "i" => Op::Invlpg(page),
                    _ => return Err(bad()),
                });
            }
            if ops.is_empty() {
                return Err(TraceError::EmptyWord { word: w + 1 });
            }
            words.push(ops);
        }
        Ok(Trace { words })
    }
}

/// The paper's loops (each at least 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repeats {
    pub op: u32,
    pub local: u32,
    pub global: u32,
    pub trace: u32,
}

impl Default for Repeats {
    fn default() -> Repeats {
        Repeats { op: 1, local: 1, global: 1, trace: 1 }
    }
}

/// The L1 DTLB misses of one sample, split as the paper's counters (T2): answered by the L2
/// (`l2_hit`) or by a walk (`l2_miss`), by the size of the entry the L1 DTLB got (indexed by
/// page-size code: 4 KB, 2 MB, 1 GB, coalesced; see [`crate::translate::tlb::GROUP`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// Which word (0-based) of the trace was applied.
    pub word: usize,
    pub l2_hit: [u64; CODES],
    pub l2_miss: [u64; CODES],
}

/// What `mincore` reports of a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageState {
    pub valid: bool,
    pub accessed: bool,
    pub modified: bool,
}

/// The region the trace runs over: `pages` pages from `base` (of address space 0, run by
/// core 0), in subregions of `group` pages.
#[derive(Clone, Copy, Debug)]
pub struct Region {
    pub base: u64,
    pub pages: u64,
    pub group: u64,
}

/// Run `trace` on core 0 of `m` over `r`; one sample per application of a word.
pub fn run(m: &mut Machine, r: Region, trace: &Trace, rep: Repeats) -> Result<Vec<Sample>, SimError> {
    let mut samples = Vec::new();
    for _ in 0..rep.trace {
        for (w, word) in trace.words.iter().enumerate() {
            for _ in 0..rep.global {
                let before = m.xl.mmus[0].tlb(TlbId::L1d).stats.refills;
                for sub in 0..r.pages / r.group {
                    for _ in 0..rep.local {
                        for &op in word {
                            for _ in 0..rep.op {
                                apply(m, r.base + sub * r.group * 4096, op)?;
                            }
                        }
                    }
                }
                let after = m.xl.mmus[0].tlb(TlbId::L1d).stats.refills;
                let d = |j: usize| std::array::from_fn(|i| after[j][i] - before[j][i]);
                samples.push(Sample { word: w, l2_hit: d(0), l2_miss: d(1) });
            }
        }
    }
    Ok(samples)
}

fn apply(m: &mut Machine, sub: u64, op: Op) -> Result<(), SimError> {
    let page = |k: u32| sub + k as u64 * 4096;
    match op {
        Op::Read(k) => m.step(0, Ref::load(page(k), 1)),
        Op::Write(k) => m.step(0, Ref::store(page(k), 1)),
        Op::Invlpg(k) => {
            let ctx = m.kernel.contexts[0].ctx;
            m.xl.invalidate(0, Invalidate::page(ctx, VirtAddr(page(k))));
            Ok(())
        }
    }
}

/// Each page's state in the page tables (the paper's final `mincore` report).
pub fn mincore(m: &Machine, r: Region) -> Vec<PageState> {
    let sp = &m.kernel.os.spaces[0];
    (0..r.pages)
        .map(|p| match m.kernel.os.pt.translate(sp.root, sp.top, VirtAddr(r.base + p * 4096)) {
            Some(f) => PageState { valid: true, accessed: f.entry & PTE_A != 0, modified: f.entry & PTE_D != 0 },
            None => PageState { valid: false, accessed: false, modified: false },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paper's examples: `r0: r1: r2: r3` is four words, `r0 r1 r2 r3` one; a trailing
    /// `:` ends the last word; bad tokens and pages outside the subregion are one-line errors.
    #[test]
    fn the_language_parses_words_and_rejects_what_it_is_not() {
        use Op::*;
        assert_eq!(Trace::parse("r0: r1: r2: r3", 4).unwrap().words, vec![vec![Read(0)], vec![Read(1)], vec![Read(2)], vec![Read(3)]]);
        assert_eq!(Trace::parse("r0 r1 r2 r3", 4).unwrap().words, vec![vec![Read(0), Read(1), Read(2), Read(3)]]);
        assert_eq!(Trace::parse(" w7  i0 :r5:", 8).unwrap().words, vec![vec![Write(7), Invlpg(0)], vec![Read(5)]]);
        let err = |t: &str, n: u32| Trace::parse(t, n).unwrap_err().to_string();
        assert_eq!(err("r0 x1", 4), "microbenchmark trace: 'x1' is not an operation (rK, wK or iK with K a page of the subregion)");
        assert!(err("r", 4).contains("'r' is not an operation"));
        assert!(err("rr", 4).contains("'rr'"));
        assert!(err("r-1", 4).contains("'r-1'"));
        assert_eq!(err("r4", 4), "microbenchmark trace: 'r4' names page 4, but a subregion has 4 pages (0..4)");
        assert_eq!(err("r0:: r1", 4), "microbenchmark trace: word 2 is empty");
        assert_eq!(err("", 4), "microbenchmark trace: word 1 is empty");
    }
}
