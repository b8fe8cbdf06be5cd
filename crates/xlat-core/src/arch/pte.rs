//! The x86-64 page-table entry format: the bits the OS writes and the walker reads.

/// x86-64 entry bits.
pub const PTE_P: u64 = 1 << 0;
pub const PTE_RW: u64 = 1 << 1;
pub const PTE_US: u64 = 1 << 2;
pub const PTE_A: u64 = 1 << 5;
pub const PTE_D: u64 = 1 << 6;
/// Page size: this entry at L2/L3 maps a 2 MB / 1 GB page instead of pointing to a node.
pub const PTE_PS: u64 = 1 << 7;
pub const PTE_NX: u64 = 1 << 63;
pub const PTE_PFN_MASK: u64 = 0x000f_ffff_ffff_f000;

/// Software-available bit (x86 ignores bits 9-11 of an entry): the node this entry points
/// to is flattened (2 MB, indexed by 18 VA bits). The flattening paper adds such a size bit
/// to the entry format; the root's size bit lives with CR3 (here: the root node).
pub const PTE_FLAT: u64 = 1 << 9;
