//! The simulated virtual address space kernels lay their arrays out in.
//!
//! Host pointers are useless for simulation (ASLR makes them differ run to run), so every
//! big array gets a deterministic simulated address. The layout imitates what a Linux
//! process gets when it `mmap`s each large array (glibc serves allocations above its 128 KiB
//! mmap threshold with `mmap`): arrays live in the mmap area near `0x7f00_0000_0000`, page
//! aligned, one after another with a one-page gap (as separate VMAs never merge here).
//! Arrays of 2 MiB or more start on a 2 MiB boundary, as Linux (since 6.7) aligns large
//! anonymous mappings so that transparent huge pages can back them; smaller ones are 4 KiB
//! aligned. We grow upwards (Linux grows downwards from `mmap_base`) so that an array's
//! address does not depend on the sizes of arrays allocated after it.
//! Data starts at the mapping's first byte, as if the program used `mmap` directly (as the
//! PT-Baker thesis did for Graph500) rather than a malloc chunk with a 16-byte header.

use xlat_core::Region;

pub const MMAP_BASE: u64 = 0x7f00_0000_0000;
const PAGE: u64 = 4096;
const HUGE: u64 = 2 << 20;

#[inline]
fn align_up(x: u64, a: u64) -> u64 {
    (x + a - 1) & !(a - 1)
}

#[derive(Clone, Debug)]
pub struct Vas {
    next: u64,
    regions: Vec<Region>,
}

/// One simulated array: `base + index * elem`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Arr {
    pub base: u64,
    pub elem: u64,
}

impl Arr {
    #[inline(always)]
    pub fn at(&self, i: u64) -> u64 {
        self.base + i * self.elem
    }
}

impl Default for Vas {
    fn default() -> Self {
        Vas::new()
    }
}

impl Vas {
    pub fn new() -> Vas {
        Vas { next: MMAP_BASE, regions: Vec::new() }
    }

    /// Reserve `count` elements of `elem` bytes named `name`.
    pub fn array(&mut self, name: &str, count: u64, elem: u64) -> Arr {
        let bytes = count.saturating_mul(elem).max(1);
        let align = if bytes >= HUGE { HUGE } else { PAGE };
        let start = align_up(self.next, align);
        let len = align_up(bytes, PAGE);
        self.next = start + len + PAGE;
        self.regions.push(Region { name: name.to_string(), start, len, file: None });
        Arr { base: start, elem }
    }

    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    pub fn footprint(&self) -> u64 {
        self.regions.iter().map(|r| r.len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_aligned_and_disjoint() {
        let mut v = Vas::new();
        let a = v.array("a", 10, 8);
        let b = v.array("b", 1 << 20, 8);
        let c = v.array("c", 3, 64);
        assert_eq!(a.base, MMAP_BASE);
        assert_eq!(b.base % HUGE, 0);
        assert!(b.base >= a.base + 4096);
        assert!(c.base >= b.base + (8 << 20));
        let r = v.regions();
        for w in r.windows(2) {
            assert!(w[0].end() < w[1].start);
        }
        assert_eq!(v.footprint(), 4096 + (8 << 20) + 4096);
    }
}
