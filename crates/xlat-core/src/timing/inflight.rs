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
//! A small direct-mapped table of (key, start, ready) per core: a new entry evicts whatever
//! shared its slot, and the reference that would have waited for the evicted one does not
//! (an optimistic error, rare with more slots than units in flight).

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

#[cfg(test)]
mod tests {
    use super::*;

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
