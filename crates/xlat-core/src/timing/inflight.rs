//! Work still in flight on a core: line fills on their way from the memory hierarchy, and
//! page walks not yet done. A later reference that needs the same line or page waits for
//! that work instead of starting its own, as MSHRs merge misses to one line and a TLB's miss
//! handling merges misses to one page. Without this, the functional caches and TLBs (which
//! hold a line or translation from the moment its access is simulated) would serve the
//! second reference at hit latency, long before the data or the translation exists.
//!
//! References are simulated in program order but their accesses happen at cycles that are not
//! in order (one waits for a walk, the next hits in the TLB): an access at a cycle before the
//! work on its key even started would in truth have done that work itself, so it waits as
//! long as the work took, not until the work is done.
//!
//! The converse happens too: a reference that waits for its producer (a pointer chase)
//! issues late, and a younger reference to the same page or line that does not wait issues
//! first; in hardware the younger one starts the walk or the fill and the older one merges
//! into it. References are simulated in program order, so the older one looks a few
//! references ahead ([`early`], `core.lookahead`) for such a reference, and its walk or fill
//! starts when that one would have issued (B-tree lookups: a node's first key waits for the
//! child pointer, the keys the search reads next do not).
//!
//! A small direct-mapped table of (key, start, ready) per core: a new entry evicts whatever
//! shared its slot, and the reference that would have waited for the evicted one does not
//! (an optimistic error, rare with more slots than units in flight).

use crate::workload::{Ref, RefKind};

/// Slots per table: more than any preset's MSHRs or walkers, so collisions stay rare.
const SLOTS_LOG2: u32 = 6;
const SLOTS: usize = 1 << SLOTS_LOG2;

pub struct InFlight {
    /// (key, start, ready). (An array, not a slice: the masked index needs no bounds check.)
    slots: [(u64, u64, u64); SLOTS],
    /// The latest `ready` of any work put: at or after it nothing is in flight, and a lookup
    /// is one comparison (most references, when misses are rare).
    until: u64,
}

impl Default for InFlight {
    fn default() -> InFlight {
        InFlight { slots: [(u64::MAX, 0, 0); SLOTS], until: 0 }
    }
}

impl InFlight {
    #[inline(always)]
    fn slot(key: u64) -> usize {
        // Fibonacci hashing: strided keys (every 8th line, every 4th page) spread out.
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS_LOG2)) as usize & (SLOTS - 1)
    }

    /// With work on `key` in flight at `t`, the cycle an access at `t` has its result: when
    /// the work is done, or, for an access before the work started, as long after `t` as
    /// the work took.
    #[inline(always)]
    pub fn pending(&self, key: u64, t: u64) -> Option<u64> {
        if t >= self.until {
            return None;
        }
        let (k, start, ready) = self.slots[Self::slot(key)];
        (k == key && ready > t).then(|| ready.min(t + (ready - start)))
    }

    /// Work on `key` runs from `start` to `ready`.
    #[inline(always)]
    pub fn put(&mut self, key: u64, start: u64, ready: u64) {
        debug_assert!(start <= ready);
        self.slots[Self::slot(key)] = (key, start, ready);
        self.until = self.until.max(ready);
    }
}

/// The younger references that would start a dependent reference's work before it: the
/// first to its 4 KB page (the walk) and the first to its line (the fill), each as its
/// distance in instructions and its own producer, in memory references back from the
/// dependent one (0: none). A distance of `u32::MAX`: no such reference. 12 bytes, so that
/// the two-thread engine records it as one op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Early {
    pub page_delta: u32,
    pub line_delta: u32,
    pub page_back: u8,
    pub line_back: u8,
}

impl Early {
    pub const NONE: Early = Early { page_delta: u32::MAX, line_delta: u32::MAX, page_back: 0, line_back: 0 };

    /// (A younger reference to the line is one to the page: the page's distance says it all.)
    #[inline(always)]
    pub fn is_none(&self) -> bool {
        self.page_delta == u32::MAX
    }
}

/// For the dependent reference `refs[0]`, which issues when its producer completes: the first
/// of the next `k` references, within `rob` instructions and before any OS call, that access
/// its 4 KB page, and the first that access its line, whose issue does not wait for it (they
/// depend on nothing, or on a reference older than it). Only loads and stores count: a
/// software prefetch may be dropped at a TLB miss, and fetches use other structures.
pub fn early(refs: &[Ref], k: usize, rob: u64) -> Early {
    let x = refs[0];
    let mut e = Early::NONE;
    let mut d: u64 = 0;
    for (j, y) in refs.iter().enumerate().skip(1).take(k) {
        if y.is_os_call() {
            break;
        }
        d += u64::from(y.inst_delta);
        if d >= rob {
            break;
        }
        if y.va >> 12 != x.va >> 12 || !matches!(y.kind(), RefKind::Load | RefKind::Store) {
            continue;
        }
        // Its producer, counted back from `x`: `x` itself or one after it would hold it back.
        let p = usize::from(y.producer());
        if p != 0 && p <= j {
            continue;
        }
        let back = p.saturating_sub(j) as u8;
        if e.page_delta == u32::MAX {
            (e.page_delta, e.page_back) = (d as u32, back);
        }
        if y.va >> 6 == x.va >> 6 && y.kind() == RefKind::Load {
            (e.line_delta, e.line_back) = (d as u32, back);
            break;
        }
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The younger references that count, and those that do not.
    #[test]
    fn early_finds_the_first_independent_reference_to_the_page_and_to_the_line() {
        let page = 0x7f00_0000_0000u64;
        let chase = Ref::load(page + 0x200, 1).after(1);
        // A B-tree node: its first key waits for the child pointer, the next keys do not.
        let refs = [chase, Ref::load(page + 0x248, 4), Ref::load(page + 0x220, 4), Ref::load(page + 0x210, 4)];
        let e = early(&refs, 8, 352);
        assert_eq!((e.page_delta, e.page_back), (4, 0));
        assert_eq!((e.line_delta, e.line_back), (8, 0));
        // One that waits for `x` (or for one after it) does not count; one that waits for a
        // reference older than `x` does, with that producer.
        let refs = [chase, Ref::load(page + 0x240, 1).after(1), Ref::load(page + 0x208, 1).after(3)];
        let e = early(&refs, 8, 352);
        assert_eq!(e.page_delta, 2);
        assert_eq!((e.line_delta, e.line_back), (2, 1));
        // Other pages, prefetches, and anything past the reorder buffer, the look-ahead or an
        // OS call do not count.
        let far = [chase, Ref::load(page + 0x1000, 1), Ref::prefetch(page + 0x208, 1), Ref::load(page + 0x208, 400)];
        assert!(early(&far, 8, 352).is_none());
        let refs = [chase, Ref::load(page + 0x1000, 1), Ref::load(page + 0x208, 1)];
        assert!(early(&refs, 1, 352).is_none());
        let call = Ref::os_call(crate::os::OsOp::Sleep, 0, 1, 1);
        assert!(early(&[chase, call, Ref::load(page + 0x208, 1)], 8, 352).is_none());
    }

    /// Against a map of every key's latest work: the table never reports work the map does
    /// not have, and reports all of it while keys do not collide.
    #[test]
    fn matches_a_map_of_the_latest_work() {
        let mut t = InFlight::default();
        let mut m = std::collections::HashMap::new();
        let mut x = 12345u64;
        for now in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = x % 500;
            if x % 3 == 0 {
                // Work that started up to 100 cycles ago or will start up to 100 from now.
                let start = (now + 100).saturating_sub(x % 201);
                t.put(key, start, start + x % 300);
                m.insert(key, (start, start + x % 300));
            }
            let want = m.get(&key).copied().filter(|&(_, r)| r > now).map(|(s, r)| if now >= s { r } else { now + (r - s) });
            match t.pending(key, now) {
                Some(r) => assert_eq!(Some(r), want, "key {key} at {now}"),
                None => {
                    // Forgotten only if another key took its slot since.
                    if want.is_some() {
                        let (k, _, _) = t.slots[InFlight::slot(key)];
                        assert_ne!(k, key);
                    }
                }
            }
        }
        // An access after the work started waits for its end; one before it waits as long as
        // the work took.
        let mut w = InFlight::default();
        w.put(7, 100, 300);
        assert_eq!(w.pending(7, 150), Some(300));
        assert_eq!(w.pending(7, 40), Some(240));
        assert_eq!(w.pending(7, 300), None);
        assert_eq!(w.pending(8, 150), None);
        // Nothing is pending in an empty table, key 0 included.
        let e = InFlight::default();
        assert_eq!(e.pending(0, 0), None);
        assert_eq!(e.pending(u64::MAX, 0), None);
    }
}
