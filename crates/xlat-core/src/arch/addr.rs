//! Address newtypes and page sizes. No raw `u64` address crosses a module boundary.

/// A virtual address of a simulated process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct VirtAddr(pub u64);

/// A (host-)physical address of the simulated machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PhysAddr(pub u64);

/// A 4 KB physical frame number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Frame(pub u64);

impl Frame {
    #[inline]
    pub fn addr(self) -> PhysAddr {
        PhysAddr(self.0 << 12)
    }
}

impl PhysAddr {
    /// The 64-byte cache line this address falls in.
    #[inline]
    pub fn line(self) -> u64 {
        self.0 >> 6
    }
}

/// Page sizes a translation can have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum PageSize {
    Size4K = 0,
    Size2M = 1,
    Size1G = 2,
}

impl PageSize {
    pub const ALL: [PageSize; 3] = [PageSize::Size4K, PageSize::Size2M, PageSize::Size1G];

    #[inline]
    pub const fn shift(self) -> u32 {
        match self {
            PageSize::Size4K => 12,
            PageSize::Size2M => 21,
            PageSize::Size1G => 30,
        }
    }

    #[inline]
    pub const fn bytes(self) -> u64 {
        1 << self.shift()
    }

    /// Number of 4 KB frames in a page of this size.
    #[inline]
    pub const fn frames(self) -> u64 {
        1 << (self.shift() - 12)
    }

    /// Page-table level whose entry maps a page of this size (1 = PT, 2 = PD, 3 = PDPT).
    #[inline]
    pub const fn leaf_level(self) -> u8 {
        match self {
            PageSize::Size4K => 1,
            PageSize::Size2M => 2,
            PageSize::Size1G => 3,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            PageSize::Size4K => "4k",
            PageSize::Size2M => "2m",
            PageSize::Size1G => "1g",
        }
    }
}

impl VirtAddr {
    /// Virtual page number at the given page size.
    #[inline]
    pub fn vpn(self, size: PageSize) -> u64 {
        self.0 >> size.shift()
    }

    /// The 9-bit index into a radix node at `level` (1 = leaf PT ... 5 = PML5).
    #[inline]
    pub fn index(self, level: u8) -> usize {
        ((self.0 >> (12 + 9 * (level as u32 - 1))) & 0x1ff) as usize
    }

    #[inline]
    pub fn offset(self, size: PageSize) -> u64 {
        self.0 & (size.bytes() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_split_a_canonical_address() {
        let va = VirtAddr((3 << 39) | (5 << 30) | (7 << 21) | (11 << 12) | 0x123);
        assert_eq!([va.index(4), va.index(3), va.index(2), va.index(1)], [3, 5, 7, 11]);
        assert_eq!(va.offset(PageSize::Size4K), 0x123);
        assert_eq!(va.vpn(PageSize::Size2M), (3 << 18) | (5 << 9) | 7);
        assert_eq!(PageSize::Size2M.frames(), 512);
    }
}
