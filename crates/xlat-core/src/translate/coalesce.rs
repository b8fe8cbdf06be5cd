//! AMD's PTE coalescing (the coalescing paper, seeds/002 §2): on a page walk, the hardware
//! looks at the leaf PTEs around the one it needs, in the same 64-byte line. If an aligned
//! group of 4 (Zen 2/3: a half line, 16 KB) or 8 (Zen/Zen+: the whole line, 32 KB) PTEs maps
//! an equally aligned, physically contiguous run of 4 KB frames with bit-identical
//! attributes (Accessed and Dirty included), the TLB caches the group as one entry.
//!
//! The predicate is the entry format's ([`crate::arch::coalesce`]); this module is where the
//! walker evaluates it, on the PTE values after it set the accessed (and, for a store, dirty)
//! bit of the page being walked, on native walks only, for the group sizes the TLBs coalesce.
//! What a TLB level does with the answer is in [`crate::translate::tlb`]: a coalesced entry
//! is probed before the 4 KB ones, is read-only while its group is clean, is dropped when a
//! store walks one of its pages and leaves the group's D bits mixed, and is reached by an
//! invalidation of any of its pages; filling it evicts no 4 KB entry.

use crate::arch::coalesce::{largest, GroupSizes};
use crate::param::Coalescing;

/// The group sizes some TLB level coalesces, given each level's setting (what walks check).
pub fn group_sizes(levels: &[Coalescing]) -> GroupSizes {
    levels.iter().map(|&c| group_shift(c)).filter(|&s| s > 0).fold(0, |m, s| m | 1 << s)
}

/// log2 of the pages a setting coalesces (0: none).
pub fn group_shift(c: Coalescing) -> u32 {
    match c {
        Coalescing::None | Coalescing::Inherit => 0,
        Coalescing::K16 => 2,
        Coalescing::K32 => 3,
    }
}

/// [`largest`] for entry `idx` of node `node` of `pt` (out of line: walks without
/// coalescing pay only the test that skips it).
#[inline(never)]
pub fn largest_in(pt: &crate::os::pt::PageTables, node: crate::os::pt::NodeId, idx: usize, sizes: GroupSizes) -> u8 {
    largest(pt.entries(node), idx, sizes)
}
