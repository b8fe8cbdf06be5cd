//! Page tables that are real: nodes live in frames of simulated physical memory and hold
//! x86-64-format entries. The OS (`os`) is their only writer; the walker (`machine`) reads
//! entries at their physical addresses through the caches.

use crate::addr::{Frame, PageSize, PhysAddr, VirtAddr};
use crate::phys::PhysMem;
use thiserror::Error;

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

/// Index of a node in [`PageTables`].
pub type NodeId = u32;
pub const NO_NODE: NodeId = u32::MAX;

/// Number of entries in a 4 KB node.
pub const ENTRIES: usize = 512;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum PtError {
    #[error("simulated physical memory is exhausted (allocating a level-{level} page-table node)")]
    OutOfMemory { level: u8 },
    #[error("virtual address {va:#x} is already mapped at level {level}")]
    AlreadyMapped { va: u64, level: u8 },
}

/// One page-table node (page directory, page table...).
pub struct Node {
    pub frame: Frame,
    /// 1 = leaf PT, 2 = PD, 3 = PDPT, 4 = PML4, 5 = PML5.
    pub level: u8,
    /// Where the entries (exactly as hardware reads them) are kept: chunk and offset in
    /// [`PageTables`]'s entry store.
    chunk: u32,
    offset: u32,
    /// For each entry that points to a node, that node's id: lets the simulator find the
    /// child's storage without hashing the entry's PFN. Kept consistent with `entries`.
    pub children: Box<[NodeId]>,
}

impl Node {
    /// Physical address of entry `idx`.
    #[inline]
    pub fn entry_addr(&self, idx: usize) -> PhysAddr {
        PhysAddr(self.frame.addr().0 + idx as u64 * 8)
    }
}

/// The size of the page an entry maps when it is a leaf: any present entry of a level-1
/// node, a PS entry at level 2 (2 MB) or 3 (1 GB). `entry_level` is the level of the entry
/// (as [`PageTables::index_at`] returns it).
#[inline]
pub fn leaf_size(entry_level: u8, e: u64) -> Option<PageSize> {
    match entry_level {
        1 => Some(PageSize::Size4K),
        2 if e & PTE_PS != 0 => Some(PageSize::Size2M),
        3 if e & PTE_PS != 0 => Some(PageSize::Size1G),
        _ => None,
    }
}

/// Every page-table node of the machine (all address spaces share physical memory).
#[derive(Default)]
pub struct PageTables {
    nodes: Vec<Node>,
    /// Entry storage in 2 MB chunks (huge-page backed on the host: walks read it at random).
    chunks: Vec<crate::hostmem::HugeBuf<u64>>,
    /// Entries used in the last chunk.
    chunk_used: usize,
    per_level: [u64; 6],
    /// Ids of freed nodes, reused (with their zeroed storage) by the next allocations.
    free_ids: Vec<NodeId>,
}

/// Entries per storage chunk: 512 nodes of 4 KB.
const CHUNK: usize = ENTRIES * 512;

/// A successful functional lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub frame: Frame,
    pub size: PageSize,
    pub entry: u64,
}

impl PageTables {
    pub fn new() -> PageTables {
        PageTables::default()
    }

    pub fn alloc_node(&mut self, phys: &mut PhysMem, level: u8) -> Result<NodeId, PtError> {
        let frame = phys.alloc_page().ok_or(PtError::OutOfMemory { level })?;
        if let Some(id) = self.free_ids.pop() {
            let n = &mut self.nodes[id as usize];
            n.frame = frame;
            n.level = level;
            n.children = if level > 1 { vec![NO_NODE; ENTRIES].into_boxed_slice() } else { Box::new([]) };
            self.per_level[level as usize] += 1;
            return Ok(id);
        }
        let id = self.nodes.len() as NodeId;
        if self.chunks.is_empty() || self.chunk_used == CHUNK {
            self.chunks.push(crate::hostmem::HugeBuf::new(CHUNK, 0u64));
            self.chunk_used = 0;
        }
        let chunk = self.chunks.len() - 1;
        let offset = self.chunk_used;
        self.chunk_used += ENTRIES;
        self.nodes.push(Node {
            frame,
            level,
            chunk: chunk as u32,
            offset: offset as u32,
            // Leaf nodes point to no node: skip the array (it would double their host memory).
            children: if level > 1 { vec![NO_NODE; ENTRIES].into_boxed_slice() } else { Box::new([]) },
        });
        self.per_level[level as usize] += 1;
        Ok(id)
    }

    /// How a walk for `va` moves through `node`, a node at `level`: the index of the entry
    /// it reads there, and the level of that entry (what it maps if it is a leaf, see
    /// [`leaf_size`]; the node it points to is one level below). The one place the hardware
    /// walkers (native, guest and host dimensions) compute indices: a format whose nodes
    /// index more VA bits (a flattened node) changes only this.
    #[inline(always)]
    pub fn index_at(&self, _node: NodeId, level: u8, va: VirtAddr) -> (usize, u8) {
        (va.index(level), level)
    }

    #[inline]
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id as usize]
    }

    #[inline]
    pub fn entry(&self, id: NodeId, idx: usize) -> u64 {
        let n = &self.nodes[id as usize];
        self.chunks[n.chunk as usize][n.offset as usize + idx]
    }

    #[inline]
    fn entry_mut(&mut self, id: NodeId, idx: usize) -> &mut u64 {
        let n = &self.nodes[id as usize];
        &mut self.chunks[n.chunk as usize][n.offset as usize + idx]
    }

    /// Overwrite an entry (the OS's remapping of a leaf; the caller keeps `children` right).
    #[inline]
    pub(crate) fn write_entry(&mut self, id: NodeId, idx: usize, e: u64) {
        *self.entry_mut(id, idx) = e;
    }

    /// The 512 entries of a node, as hardware reads them.
    pub fn entries(&self, id: NodeId) -> &[u64] {
        let n = &self.nodes[id as usize];
        &self.chunks[n.chunk as usize][n.offset as usize..n.offset as usize + ENTRIES]
    }

    /// Return a node that no entry points to any more (its parent entry was rewritten) to
    /// physical memory. Its entries are cleared; its id is reused by a later allocation.
    pub fn free_node(&mut self, phys: &mut PhysMem, id: NodeId) {
        let n = &self.nodes[id as usize];
        debug_assert!(n.children.iter().all(|&c| c == NO_NODE), "freeing a node that still has children");
        let (frame, level, chunk, offset) = (n.frame, n.level, n.chunk as usize, n.offset as usize);
        self.chunks[chunk][offset..offset + ENTRIES].fill(0);
        self.per_level[level as usize] -= 1;
        self.free_ids.push(id);
        phys.free_page(frame);
    }

    /// Replace the level-1 node under the 2 MB-aligned `va` with one 2 MB leaf mapping
    /// `frame` (a promotion). Returns the old node's 512 entries; the node is freed. `None`
    /// (and nothing changed) if `va` is not mapped through a level-1 node.
    pub fn collapse_2m(&mut self, phys: &mut PhysMem, root: NodeId, top: u8, va: VirtAddr, frame: Frame, flags: u64) -> Option<Vec<u64>> {
        let (pd, idx) = self.leaf_location(root, top, va, PageSize::Size2M)?;
        let child = self.nodes[pd as usize].children[idx];
        if child == NO_NODE {
            return None;
        }
        let old = self.entries(child).to_vec();
        self.nodes[pd as usize].children[idx] = NO_NODE;
        *self.entry_mut(pd, idx) = (frame.0 << 12) | PTE_P | PTE_PS | flags;
        self.free_node(phys, child);
        Some(old)
    }

    /// Replace the 2 MB leaf at the 2 MB-aligned `va` with a new level-1 node of 512 4 KB
    /// entries mapping the same frames with the same rights, accessed and dirty bits (a
    /// demotion, as Linux's split). Returns the leaf's first frame and entry; `Ok(None)` if
    /// there is no 2 MB leaf there.
    pub fn split_2m(&mut self, phys: &mut PhysMem, root: NodeId, top: u8, va: VirtAddr) -> Result<Option<(Frame, u64)>, PtError> {
        let Some((pd, idx)) = self.leaf_location(root, top, va, PageSize::Size2M) else { return Ok(None) };
        let e = self.entry(pd, idx);
        if e & PTE_P == 0 || e & PTE_PS == 0 {
            return Ok(None);
        }
        let base = (e & PTE_PFN_MASK) >> 12;
        let node = self.alloc_node(phys, 1)?;
        let bits = e & !(PTE_PFN_MASK | PTE_PS);
        for i in 0..ENTRIES {
            *self.entry_mut(node, i) = ((base + i as u64) << 12) | bits;
        }
        let nframe = self.nodes[node as usize].frame;
        *self.entry_mut(pd, idx) = (nframe.0 << 12) | PTE_P | PTE_RW | PTE_US;
        self.nodes[pd as usize].children[idx] = node;
        Ok(Some((Frame(base), e)))
    }

    /// The node at `level` on the path to `va` (what a page-walk cache entry for that
    /// prefix must point to), if the path exists that deep.
    pub fn node_at(&self, root: NodeId, top: u8, va: VirtAddr, level: u8) -> Option<NodeId> {
        let mut node = root;
        for l in (level + 1..=top).rev() {
            node = *self.nodes[node as usize].children.get(va.index(l))?;
            if node == NO_NODE {
                return None;
            }
        }
        Some(node)
    }

    /// Set bits in an entry (the walker's A/D updates).
    #[inline]
    pub fn set_bits(&mut self, id: NodeId, idx: usize, bits: u64) {
        *self.entry_mut(id, idx) |= bits;
    }

    /// Nodes at `level` (1..=5).
    pub fn nodes_at(&self, level: u8) -> u64 {
        self.per_level[level as usize]
    }

    pub fn total_nodes(&self) -> u64 {
        self.per_level.iter().sum()
    }

    /// Bytes of page-table memory at `level`.
    pub fn bytes_at(&self, level: u8) -> u64 {
        self.per_level[level as usize] * (ENTRIES as u64 * 8)
    }

    /// Map `va` (aligned to `size`) to `frame` in the table rooted at `root` (a node of
    /// level `top`), allocating intermediate nodes as needed.
    pub fn map(
        &mut self,
        phys: &mut PhysMem,
        root: NodeId,
        top: u8,
        va: VirtAddr,
        frame: Frame,
        size: PageSize,
        flags: u64,
    ) -> Result<(), PtError> {
        let leaf = size.leaf_level();
        let mut node = root;
        let mut level = top;
        while level > leaf {
            let idx = va.index(level);
            let e = self.entry(node, idx);
            if e & PTE_P != 0 && e & PTE_PS != 0 {
                return Err(PtError::AlreadyMapped { va: va.0, level });
            }
            let child = self.nodes[node as usize].children[idx];
            node = if child != NO_NODE {
                child
            } else {
                let c = self.alloc_node(phys, level - 1)?;
                let cframe = self.nodes[c as usize].frame;
                // Upper-level entries are permissive; the leaf decides the rights.
                *self.entry_mut(node, idx) = (cframe.0 << 12) | PTE_P | PTE_RW | PTE_US;
                self.nodes[node as usize].children[idx] = c;
                c
            };
            level -= 1;
        }
        let idx = va.index(leaf);
        let has_child = self.nodes[node as usize].children.get(idx).is_some_and(|&c| c != NO_NODE);
        if self.entry(node, idx) & PTE_P != 0 || has_child {
            return Err(PtError::AlreadyMapped { va: va.0, level: leaf });
        }
        let ps = if size == PageSize::Size4K { 0 } else { PTE_PS };
        *self.entry_mut(node, idx) = (frame.0 << 12) | PTE_P | ps | flags;
        Ok(())
    }

    /// Remove the leaf mapping `va` of `size`; returns the frame it mapped. Emptied nodes
    /// are kept (as Linux keeps them until the VMA goes away).
    pub fn unmap(&mut self, root: NodeId, top: u8, va: VirtAddr, size: PageSize) -> Option<Frame> {
        let leaf = size.leaf_level();
        let mut node = root;
        for level in (leaf + 1..=top).rev() {
            node = self.nodes[node as usize].children[va.index(level)];
            if node == NO_NODE {
                return None;
            }
        }
        let idx = va.index(leaf);
        let e = self.entry(node, idx);
        let is_leaf = leaf == 1 || e & PTE_PS != 0;
        if e & PTE_P == 0 || !is_leaf {
            return None;
        }
        *self.entry_mut(node, idx) = 0;
        Some(Frame((e & PTE_PFN_MASK) >> 12))
    }

    /// Functional translation (no side effects, no timing): what the hardware walk finds.
    pub fn translate(&self, root: NodeId, top: u8, va: VirtAddr) -> Option<Mapping> {
        let mut node = root;
        let mut level = top;
        loop {
            let idx = va.index(level);
            let e = self.entry(node, idx);
            if e & PTE_P == 0 {
                return None;
            }
            if let Some(size) = leaf_size(level, e) {
                return Some(Mapping { frame: Frame((e & PTE_PFN_MASK) >> 12), size, entry: e });
            }
            node = self.nodes[node as usize].children[idx];
            debug_assert_ne!(node, NO_NODE);
            level -= 1;
        }
    }

    /// Follow the upper levels of the table functionally to the node that holds `va`'s
    /// level-1 entry (no timing, no side effects); `None` if the path is not there or ends
    /// in a large page. Used to prefetch host memory ahead of the simulated walk.
    #[inline]
    pub fn leaf_node(&self, root: NodeId, top: u8, va: VirtAddr) -> Option<NodeId> {
        let mut node = root;
        for level in (2..=top).rev() {
            node = *self.nodes[node as usize].children.get(va.index(level))?;
            if node == NO_NODE {
                return None;
            }
        }
        Some(node)
    }

    /// Ask the host CPU to start loading the storage of entry `idx` of `node`.
    #[inline]
    pub fn prefetch_entry(&self, node: NodeId, idx: usize) {
        let n = &self.nodes[node as usize];
        crate::prefetch(self.chunks[n.chunk as usize].as_ptr().wrapping_add(n.offset as usize + idx));
    }

    /// Ask the host CPU to start loading `node`'s bookkeeping.
    #[inline]
    pub fn prefetch_node(&self, node: NodeId) {
        crate::prefetch(self.nodes.as_ptr().wrapping_add(node as usize));
    }

    /// The node and index holding the leaf entry for `va` at `size`, if the path exists.
    pub fn leaf_location(&self, root: NodeId, top: u8, va: VirtAddr, size: PageSize) -> Option<(NodeId, usize)> {
        let mut node = root;
        for level in (size.leaf_level() + 1..=top).rev() {
            node = self.nodes[node as usize].children[va.index(level)];
            if node == NO_NODE {
                return None;
            }
        }
        Some((node, va.index(size.leaf_level())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (PhysMem, PageTables, NodeId) {
        let mut phys = PhysMem::new(1 << 30);
        let mut pt = PageTables::new();
        let root = pt.alloc_node(&mut phys, 4).unwrap();
        (phys, pt, root)
    }

    #[test]
    fn map_then_translate_4k_and_2m() {
        let (mut phys, mut pt, root) = setup();
        let va = VirtAddr(0x7f12_3456_7000);
        pt.map(&mut phys, root, 4, va, Frame(0x1234), PageSize::Size4K, PTE_RW | PTE_US).unwrap();
        let m = pt.translate(root, 4, VirtAddr(va.0 + 0x10)).unwrap();
        assert_eq!((m.frame, m.size), (Frame(0x1234), PageSize::Size4K));
        assert_eq!(m.entry & (PTE_P | PTE_RW | PTE_PS), PTE_P | PTE_RW);
        assert_eq!([pt.nodes_at(4), pt.nodes_at(3), pt.nodes_at(2), pt.nodes_at(1)], [1, 1, 1, 1]);

        let va2 = VirtAddr(0x7f00_0020_0000);
        pt.map(&mut phys, root, 4, va2, Frame(0x4000), PageSize::Size2M, PTE_RW).unwrap();
        let m = pt.translate(root, 4, VirtAddr(va2.0 + 0x1_2345)).unwrap();
        assert_eq!((m.frame, m.size), (Frame(0x4000), PageSize::Size2M));
        assert!(m.entry & PTE_PS != 0);
        assert_eq!(pt.nodes_at(1), 1, "a 2 MB leaf needs no PT node");
        assert!(pt.map(&mut phys, root, 4, VirtAddr(va2.0 + 4096), Frame(1), PageSize::Size4K, 0).is_err());
        assert_eq!(pt.unmap(root, 4, va2, PageSize::Size2M), Some(Frame(0x4000)));
        assert!(pt.translate(root, 4, va2).is_none());
    }

    #[test]
    fn entries_point_at_child_frames() {
        let (mut phys, mut pt, root) = setup();
        let va = VirtAddr(0x1000);
        pt.map(&mut phys, root, 4, va, Frame(77), PageSize::Size4K, 0).unwrap();
        let mut node = root;
        for level in (2..=4).rev() {
            let idx = va.index(level);
            let e = pt.entry(node, idx);
            let child = pt.node(node).children[idx];
            assert_eq!((e & PTE_PFN_MASK) >> 12, pt.node(child).frame.0, "level {level} entry PFN is the child's frame");
            node = child;
        }
    }
}
