//! NRU, not recently used, with one used bit per way (the "MRU-bit" or "bit-PLRU" policy of
//! small fully associative structures: Sun's UltraSPARC T2 replaces its TLBs and L1 caches
//! so). A use (hit or fill) sets the way's bit; when that leaves every way's bit set, the
//! others are cleared, so the bits always name some ways not recently used. The victim is the
//! lowest way whose bit is clear. One bit of state per way where LRU needs a full order: the
//! worked example of a replacement policy in `docs/extending.md`, tried on page-walk caches
//! with `pwc.policy=nru`.

use super::{ReplacementPolicy, SetView};

pub struct Nru;

impl Nru {
    /// Way `way` was used: set its bit, clearing the others if every bit is now set.
    #[inline]
    fn touch(set: &mut SetView, way: usize) {
        set.ages[way] = 1;
        if set.ages.iter().all(|&b| b == 1) {
            set.ages.fill(0);
            set.ages[way] = 1;
        }
    }
}

impl ReplacementPolicy for Nru {
    fn init(&self, ages: &mut [u32]) {
        ages.fill(0);
    }
    fn on_hit(&mut self, set: &mut SetView, way: usize) {
        Self::touch(set, way);
    }
    fn on_fill(&mut self, set: &mut SetView, way: usize) {
        Self::touch(set, way);
    }
    fn victim(&mut self, set: &mut SetView) -> usize {
        // (Only a one-way set has every bit set after a use: its one way goes.)
        set.ages.iter().position(|&b| b == 0).unwrap_or(0)
    }
}
