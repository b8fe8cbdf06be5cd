//! Which leaf entries AMD's PTE coalescing can cache as one TLB entry (the coalescing paper,
//! seeds/002 §2.3): an aligned group of 4 (Zen 2/3: a half line, 16 KB) or 8 (Zen/Zen+: the
//! whole line, 32 KB) PTEs that maps an equally aligned, physically contiguous run of 4 KB
//! frames with bit-identical attributes (Accessed and Dirty included). A rule of the entry
//! format, so both sides use it: the walker to fill a coalesced entry
//! ([`crate::translate::coalesce`]), the OS to count the contiguity it made.

use crate::arch::pte::{PTE_P, PTE_PFN_MASK};

/// Which group sizes the walker checks: bit `s` set for groups of `2^s` pages (s = 2: 16 KB,
/// s = 3: 32 KB). 0: coalescing is off and the walker checks nothing.
pub type GroupSizes = u8;

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
