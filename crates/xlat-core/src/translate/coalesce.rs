//! AMD's PTE coalescing (the coalescing paper, seeds/002 §2): on a page walk, the hardware
//! looks at the leaf PTEs around the one it needs, in the same 64-byte line. If an aligned
//! group of 4 (Zen 2/3: a half line, 16 KB) or 8 (Zen/Zen+: the whole line, 32 KB) PTEs maps
//! an equally aligned, physically contiguous run of 4 KB frames with bit-identical
//! attributes (Accessed and Dirty included), the TLB caches the group as one entry.
//!
//! This module is the predicate, evaluated by the walker on the PTE values after it set the
//! accessed (and, for a store, dirty) bit of the page being walked, on native walks only.
//! What a TLB level does with the answer is in [`crate::translate::tlb`]: a coalesced entry
//! is probed before the 4 KB ones, is read-only while its group is clean, is dropped when a
//! store walks one of its pages and leaves the group's D bits mixed, and is reached by an
//! invalidation of any of its pages; filling it evicts no 4 KB entry.

use crate::arch::pte::{PTE_P, PTE_PFN_MASK};
use crate::config::Coalescing;

/// Which group sizes the walker checks: bit `s` set for groups of `2^s` pages (s = 2: 16 KB,
/// s = 3: 32 KB). 0: coalescing is off and the walker checks nothing.
pub type GroupSizes = u8;

/// The group sizes some TLB level of the configuration coalesces (what walks check).
pub fn group_sizes(cfg: &crate::config::Config) -> GroupSizes {
    ["l1d", "l1i", "l2", "l2i"].iter().map(|n| group_shift(cfg.coalescing(n))).filter(|&s| s > 0).fold(0, |m, s| m | 1 << s)
}

/// log2 of the pages a setting coalesces (0: none).
pub fn group_shift(c: Coalescing) -> u32 {
    match c {
        Coalescing::None | Coalescing::Inherit => 0,
        Coalescing::K16 => 2,
        Coalescing::K32 => 3,
    }
}

/// Whether the aligned group of `2^shift` leaf PTEs of `entries` (a level-1 node's entries)
/// that holds entry `idx` is coalescable (§2.3): every PTE present; frames contiguous and the
/// first aligned to the group (`PFN(P[i]) = PFN(P[0]) + i`, `PFN(P[0]) % N = 0`); every
/// attribute bit identical, Accessed and Dirty included (all bits outside the frame number:
/// the paper says "exactly identical", so ignored and software bits count too).
#[inline]
pub fn coalescable(entries: &[u64], idx: usize, shift: u32) -> bool {
    let n = 1usize << shift;
    let first = idx & !(n - 1);
    let group = &entries[first..first + n];
    let p0 = group[0];
    let (frame0, attrs) = ((p0 & PTE_PFN_MASK) >> 12, p0 & !PTE_PFN_MASK);
    if p0 & PTE_P == 0 || frame0 & (n as u64 - 1) != 0 {
        return false;
    }
    group.iter().enumerate().all(|(i, &p)| p & !PTE_PFN_MASK == attrs && (p & PTE_PFN_MASK) >> 12 == frame0 + i as u64)
}

/// The largest group among `sizes` that holds entry `idx` of `entries` and is coalescable:
/// its log2 page count, 0 if none. (A coalescable group of 8 is made of two coalescable
/// groups of 4, so the larger answers for both.)
#[inline]
pub fn largest(entries: &[u64], idx: usize, sizes: GroupSizes) -> u8 {
    for shift in [3u32, 2] {
        if sizes & (1 << shift) != 0 && coalescable(entries, idx, shift) {
            return shift as u8;
        }
    }
    0
}

/// [`largest`] for entry `idx` of node `node` of `pt` (out of line: walks without
/// coalescing pay only the test that skips it).
#[inline(never)]
pub fn largest_in(pt: &crate::os::pt::PageTables, node: crate::os::pt::NodeId, idx: usize, sizes: GroupSizes) -> u8 {
    largest(pt.entries(node), idx, sizes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::pte::{PTE_A, PTE_D, PTE_NX, PTE_RW, PTE_US};

    const FLAGS: u64 = PTE_P | PTE_RW | PTE_US | PTE_A;

    /// A line of 8 PTEs mapping frames `base..base+8` with `FLAGS`.
    fn line(base: u64) -> Vec<u64> {
        (0..8).map(|i| ((base + i) << 12) | FLAGS).collect()
    }

    /// The predicate of §2.3, one condition at a time: an aligned contiguous group with
    /// identical attributes coalesces; a hole, a gap in the frames, a misaligned first frame,
    /// or any differing attribute bit (A, D, RW, NX) stops it, for the group that holds the
    /// difference only.
    #[test]
    fn each_condition_of_the_predicate_is_needed() {
        let ok = line(0x1000);
        assert!(coalescable(&ok, 5, 3) && coalescable(&ok, 0, 2) && coalescable(&ok, 7, 2));
        assert_eq!(largest(&ok, 1, 0b1100), 3);
        assert_eq!(largest(&ok, 1, 0b0100), 2);
        assert_eq!(largest(&ok, 1, 0), 0, "no sizes: nothing checked");

        // Misaligned: the frames are contiguous but start at an odd frame.
        let mis = line(0x1001);
        assert!(!coalescable(&mis, 0, 2) && !coalescable(&mis, 4, 3));
        // 4-aligned but not 8-aligned: 16 KB groups coalesce, the 32 KB one does not.
        let half = line(0x1004);
        assert!(coalescable(&half, 0, 2) && coalescable(&half, 4, 2) && !coalescable(&half, 0, 3));
        assert_eq!(largest(&half, 6, 0b1100), 2);

        for (what, change) in [
            ("a hole", &(|e: u64| e & !PTE_P) as &dyn Fn(u64) -> u64),
            ("a non-contiguous frame", &|e: u64| e + (1 << 12)),
            ("a clear A bit", &|e: u64| e & !PTE_A),
            ("a set D bit", &|e: u64| e | PTE_D),
            ("read-only", &|e: u64| e & !PTE_RW),
            ("no-execute", &|e: u64| e | PTE_NX),
        ] {
            let mut l = ok.clone();
            l[6] = change(l[6]);
            assert!(!coalescable(&l, 6, 2) && !coalescable(&l, 4, 2), "{what} in the group");
            assert!(!coalescable(&l, 0, 3), "{what} in the line");
            assert!(coalescable(&l, 1, 2), "{what} in the other half does not matter");
            assert_eq!(largest(&l, 2, 0b1100), 2, "{what}: the clean half still coalesces");
        }
        // All D bits set (and all clear, above) coalesce: uniform is what counts.
        let dirty: Vec<u64> = ok.iter().map(|e| e | PTE_D).collect();
        assert!(coalescable(&dirty, 3, 3));
    }
}
