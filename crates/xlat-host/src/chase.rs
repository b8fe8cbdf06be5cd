//! The probe's kernel: a dependent pointer chase through `n` pages in random order, one access
//! per page, each at a random cache line of its page so the accesses spread over the cache
//! sets instead of piling into one. Each load's address is the previous load's value, so the
//! time per access is the full latency of the translation and the data access.
//!
//! The control chase ([`control_layout`]) is the same chase, the same lines in the same order
//! with each node kept at its line of a page, but packed into about 1/64 as many pages: the
//! same data-cache footprint with a TLB footprint far below the main chase's.

use std::time::Instant;

use crate::mem::Mapping;
use crate::rng::Rng;
use crate::sys::Counter;
use crate::{HostError, Result, LINE, PAGE};

/// The chase's shape, independent of where it lives: each page's node offset (page × 4096 plus
/// a random line) and the successor of each page (one random cycle). The simulator's copy of
/// the chase (`xlat probe --compare`) replays exactly this.
pub fn layout(pages: usize, seed: u64) -> (Vec<usize>, Vec<usize>) {
    let mut rng = Rng::new(seed);
    let offsets = (0..pages).map(|p| p * PAGE + rng.below(PAGE / LINE) * LINE).collect();
    (offsets, rng.cycle(pages))
}

/// The control of [`layout`]`(nodes, seed)`: the same nodes, each at the same line of a page
/// (so the L1D, which is indexed by the line within the page, sees the same sets filled
/// equally), in the same cycle, but node `i` sits in page `r`, where `r` is how many earlier
/// nodes share its line. The pages used are the most nodes that share one line: about
/// nodes / 64, plus a few (the largest of 64 binomial counts). Caches indexed by physical
/// bits above the page offset see the nodes spread over the pages' frames much as the main
/// chase's, so a data cache treats both chases alike and only the TLBs tell them apart.
/// Returns (offsets, successors, pages used).
pub fn control_layout(nodes: usize, seed: u64) -> (Vec<usize>, Vec<usize>, usize) {
    let (offsets, next) = layout(nodes, seed);
    let mut used = [0usize; PAGE / LINE];
    let packed = offsets
        .iter()
        .map(|&o| {
            let line = o % PAGE / LINE;
            used[line] += 1;
            (used[line] - 1) * PAGE + line * LINE
        })
        .collect();
    (packed, next, used.into_iter().max().unwrap_or(0))
}

/// A chase built in the first pages of a mapping.
pub struct Chain<'a> {
    map: &'a mut Mapping,
    start: usize,
    pages: usize,
    nodes: usize,
}

impl<'a> Chain<'a> {
    /// Links the first `pages` pages of `map` into one random cycle (Sattolo), one node per
    /// page at a random line of it. `pages` must be ≥ 2 and fit in the mapping.
    pub fn build(map: &'a mut Mapping, pages: usize, seed: u64) -> Result<Chain<'a>> {
        if pages < 2 || pages * PAGE > map.len() {
            return Err(HostError::Invalid(format!("a chase needs 2..={} pages, not {pages}", map.len() / PAGE)));
        }
        let (offsets, next) = layout(pages, seed);
        Ok(Chain::link(map, &offsets, &next, pages))
    }

    /// The control chase of [`Chain::build`]`(map, nodes, seed)` ([`control_layout`]): as many
    /// nodes, the same lines and order, in about nodes / 64 pages.
    pub fn build_control(map: &'a mut Mapping, nodes: usize, seed: u64) -> Result<Chain<'a>> {
        if nodes < 2 || nodes * PAGE > map.len() {
            return Err(HostError::Invalid(format!("a chase needs 2..={} nodes, not {nodes}", map.len() / PAGE)));
        }
        let (offsets, next, pages) = control_layout(nodes, seed);
        Ok(Chain::link(map, &offsets, &next, pages))
    }

    /// Writes each node's successor into it: node `i` at `offsets[i]` points to `next[i]`.
    fn link(map: &'a mut Mapping, offsets: &[usize], next: &[usize], pages: usize) -> Chain<'a> {
        let base = map.as_ptr() as usize;
        let node: Vec<usize> = offsets.iter().map(|o| base + o).collect();
        let bytes = map.bytes();
        for (p, &addr) in node.iter().enumerate() {
            let off = addr - base;
            bytes[off..off + 8].copy_from_slice(&node[next[p]].to_ne_bytes());
        }
        Chain { start: node[0], map, pages, nodes: node.len() }
    }

    /// The pages the chase's nodes are in.
    pub fn pages(&self) -> usize {
        self.pages
    }

    /// Follows `steps` pointers from where the last walk stopped; returns where it ended.
    pub fn walk(&mut self, steps: u64) -> usize {
        // SAFETY: `start` is a node of this chain, whose mapping it borrows mutably, so the
        // memory stays mapped and nobody else writes it.
        let p = unsafe { walk_from(self.start, steps) };
        self.start = p;
        // Keep the mapping borrowed for the chain's lifetime.
        let _ = self.map.len();
        p
    }

    /// The node the next walk starts from (for a second thread chasing the same chain, with
    /// [`walk_from`], while this one lives).
    pub fn position(&self) -> usize {
        self.start
    }

    /// The nodes in its cycle (one per page, except in the control).
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// Nanoseconds per access over `steps` accesses, after a warm-up of two full cycles
    /// (at least 10,000 accesses) that loads the TLBs and caches into their steady state.
    ///
    /// The accesses are timed in chunks of [`CHUNK`] and the median chunk is reported: on a
    /// shared machine the thread is sometimes descheduled, which adds the time it was away to
    /// one chunk and leaves the TLB cold for the next, and the median ignores both.
    pub fn ns_per_access(&mut self, steps: u64) -> f64 {
        self.measure(steps, None).0
    }

    /// As [`Chain::ns_per_access`], and with a counter, its events per access over the timed
    /// accesses (all of them: a descheduled moment's misses are in it, a few in thousands).
    pub fn measure(&mut self, steps: u64, counter: Option<&mut Counter>) -> (f64, Option<f64>) {
        self.walk((2 * self.nodes as u64).max(10_000));
        let chunks = steps.div_ceil(CHUNK).max(1);
        let mut counter = counter;
        if let Some(c) = counter.as_deref_mut() {
            c.start();
        }
        let mut per: Vec<f64> = (0..chunks)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(self.walk(CHUNK));
                t.elapsed().as_nanos() as f64 / CHUNK as f64
            })
            .collect();
        let events = counter.map(|c| c.stop() as f64 / (chunks * CHUNK) as f64);
        (crate::knee::median(&mut per), events)
    }
}

/// Follows `steps` pointers from node `p` of a chain; returns where it ended.
///
/// # Safety
/// `p` must be a node of a [`Chain`] whose mapping stays mapped and unwritten while this runs
/// (reads from several threads at once are fine: the chain is only read).
#[inline(never)]
pub unsafe fn walk_from(mut p: usize, steps: u64) -> usize {
    for _ in 0..steps {
        // SAFETY: every node holds the address of another node of the chain (the caller's
        // promise); the read is volatile so the compiler keeps every load of the chain.
        p = unsafe { (p as *const usize).read_volatile() };
    }
    p
}

/// Accesses per timed chunk: 8 µs at 1 ns per access (the clock read costs well under 1% of
/// it), 6 ms at 700 ns.
pub const CHUNK: u64 = 8192;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::Pages;

    #[test]
    fn chain_visits_every_page_once_per_cycle() {
        let mut m = Mapping::new(64 * PAGE, Pages::Base).unwrap();
        let mut c = Chain::build(&mut m, 50, 3).unwrap();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..50 {
            let p = c.walk(1);
            assert!(seen.insert(p / PAGE), "page visited twice within one cycle");
        }
        assert_eq!(seen.len(), 50);
        // One more step is back at the first node visited.
        let first = c.walk(1);
        assert!(seen.contains(&(first / PAGE)));
    }

    #[test]
    fn line_offsets_vary() {
        let mut m = Mapping::new(256 * PAGE, Pages::Base).unwrap();
        let mut c = Chain::build(&mut m, 256, 1).unwrap();
        let lines: std::collections::HashSet<usize> = (0..256).map(|_| c.walk(1) % PAGE / LINE).collect();
        assert!(lines.len() > 40, "only {} distinct lines", lines.len());
    }

    #[test]
    fn the_control_has_the_same_lines_in_the_same_order_in_few_pages() {
        let (offsets, next) = layout(4096, 7);
        let (packed, cnext, pages) = control_layout(4096, 7);
        assert_eq!(next, cnext);
        assert!(offsets.iter().zip(&packed).all(|(a, b)| a % PAGE == b % PAGE), "a node moved to another line");
        let distinct: std::collections::HashSet<usize> = packed.iter().copied().collect();
        assert_eq!(distinct.len(), 4096, "two nodes share a line");
        assert!((64..=96).contains(&pages), "{pages} pages for 4,096 nodes");
        assert!(packed.iter().all(|&o| o / PAGE < pages));
        // A walk visits every node once per cycle, in the control as in the main chase.
        let mut m = Mapping::new(4096 * PAGE, Pages::Base).unwrap();
        let mut c = Chain::build_control(&mut m, 4096, 7).unwrap();
        assert_eq!(c.pages(), pages);
        let seen: std::collections::HashSet<usize> = (0..4096).map(|_| c.walk(1)).collect();
        assert_eq!(seen.len(), 4096);
    }

    #[test]
    fn too_many_pages_is_an_error() {
        let mut m = Mapping::new(4 * PAGE, Pages::Base).unwrap();
        assert!(Chain::build(&mut m, 5, 1).is_err());
        assert!(Chain::build(&mut m, 1, 1).is_err());
        assert!(Chain::build_control(&mut m, 5, 1).is_err());
    }
}
