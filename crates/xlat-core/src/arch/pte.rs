//! The x86-64 page-table entry format: the bits the OS writes and the walker reads, which
//! entries map a page, and how tables and their nodes are named.

use crate::arch::addr::PageSize;

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

/// Which page table a walk reads: the native one, a VM's host (EPT) table, or a guest's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Table {
    Native = 0,
    Host = 1,
    Guest = 2,
}

/// Index of a page-table node in the OS's arena of them (`os::pt::PageTables`).
pub type NodeId = u32;
pub const NO_NODE: NodeId = u32::MAX;

/// The size of the page an entry maps when it is a leaf: any present entry of a level-1
/// node, a PS entry at level 2 (2 MB) or 3 (1 GB). `entry_level` is the level of the entry
/// (as `os::pt::PageTables::index_at` returns it).
#[inline]
pub fn leaf_size(entry_level: u8, e: u64) -> Option<PageSize> {
    match entry_level {
        // PS at level 1 (x86's PAT bit, never set here) marks a replica of a 2 MB page in a
        // flattened L2+L1 node.
        1 if e & PTE_PS != 0 => Some(PageSize::Size2M),
        1 => Some(PageSize::Size4K),
        2 if e & PTE_PS != 0 => Some(PageSize::Size2M),
        3 if e & PTE_PS != 0 => Some(PageSize::Size1G),
        _ => None,
    }
}
