//! Page tables that are real: nodes live in frames of simulated physical memory and hold
//! x86-64-format entries. The OS (`os`) is their only writer; the walker
//! (`translate::walker`) reads entries at their physical addresses through the caches.

use crate::arch::addr::{Frame, PageSize, PhysAddr, VirtAddr};
use crate::arch::pte::*;
use crate::os::phys::PhysMem;
use thiserror::Error;

pub use crate::arch::pte::{leaf_size, NodeId, NO_NODE};

use crate::param::{component, Limit};

component! {
    /// The page-table format (`pt.*`).
    PtParams {
        format: crate::param::PtFormat = crate::param::PtFormat::Radix4; "format"; None; "page-table format: radix4, radix5, fpt (L4+L3 and L2+L1 flattened into 2 MB nodes, with the FPT+NF rule), fpt-l3l2 (the paper's Linux prototype), fpt-l4l3 (flattened root only), fpt5 (five levels as L5+L4, L3+L2 and L1), fpt-1g (one 1 GB L4+L3+L2 root node and L1)";
        nf_threshold: u64 = 32; "nf_threshold"; Some(Limit::Int(512)); "pt.format=fpt: a 1 GB region whose flattened L2+L1 node comes to hold this many 2 MB pages is unflattened below the root (FPT+NF; the paper's 32; 0: never)";
        late_flatten: u64 = 0; "late_flatten"; Some(Limit::Int(512)); "late flattening (flattening paper §6.2): a node built as 4 KB because no 2 MB block was free is merged with its children into a flattened node (copy, re-point the parent, free the old nodes) once it holds this many entries and a block is free, retried as the region grows (0: never; roots are never merged late)";
        recursive_slot: u64 = 0; "recursive_slot"; Some(Limit::Int(511)); "the OS maps each page table into itself through this root slot (flattening paper §3.5): a 4 KB root's entry points back at the root, a flattened root's sub-table becomes the glue table L4* (256-511, the kernel half, so no user address collides; 0: none)";
    }
    check(p, key) {
        if p.recursive_slot != 0 && p.recursive_slot < 256 {
            return Err(crate::param::invalid(key("recursive_slot"), "must be 0 (none) or a kernel-half slot, 256-511"));
        }
        if p.recursive_slot != 0 && p.format == crate::param::PtFormat::Fpt1G {
            return Err(crate::param::invalid(key("recursive_slot"), "a 1 GB root (pt.format=fpt-1g) has no 4 KB sub-tables to recurse through"));
        }
        if p.nf_threshold > 512 {
            return Err(crate::param::invalid(key("nf_threshold"), "a 1 GB region holds at most 512 2 MB pages"));
        }
        Ok(())
    }
}

impl PtParams {
    /// The page-table layout `pt.format` selects.
    pub fn layout(&self) -> Layout {
        use crate::param::PtFormat;
        match self.format {
            PtFormat::Radix4 => Layout::Radix4,
            PtFormat::Radix5 => Layout::Radix5,
            PtFormat::Fpt => Layout::Fpt { nf: self.nf_threshold as u16 },
            PtFormat::FptL3L2 => Layout::FptL3L2,
            PtFormat::FptL4L3 => Layout::FptL4L3,
            PtFormat::Fpt5 => Layout::Fpt5,
            PtFormat::Fpt1G => Layout::Fpt1G,
        }
    }
}

/// Number of entries in a 4 KB node.
pub const ENTRIES: usize = 512;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum PtError {
    #[error("simulated physical memory is exhausted (allocating a level-{level} page-table node)")]
    OutOfMemory { level: u8 },
    #[error("virtual address {va:#x} is already mapped at level {level}")]
    AlreadyMapped { va: u64, level: u8 },
    #[error("a {size} page at {va:#x} needs a level-{level} entry, which this page-table layout merges away")]
    NoLeafLevel { va: u64, size: &'static str, level: u8 },
    #[error("root slot {slot} cannot map the page tables: {why}")]
    RecursiveSlot { slot: usize, why: &'static str },
}

/// How a tree's levels are laid out: which adjacent levels merge into one 2 MB node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Conventional 4-level radix (9/9/9/9).
    Radix4,
    /// Conventional 5-level radix (9/9/9/9/9).
    Radix5,
    /// The flattening paper's evaluated design: L4+L3 and L2+L1 (18/18). A 1 GB region
    /// whose L2+L1 node comes to hold `nf` or more 2 MB pages is unflattened below the
    /// root (FPT+NF: a 4 KB L2 node with 2 MB leaves); `nf` = 0 never unflattens.
    Fpt { nf: u16 },
    /// L4+L3 flattened, L2 and L1 conventional (18/9/9).
    FptL4L3,
    /// L4 conventional, L3+L2 flattened, L1 conventional (9/18/9): the paper's Linux prototype.
    FptL3L2,
    /// Five levels flattened as §3.6 suggests: L5+L4 and L3+L2 in 2 MB nodes, L1
    /// conventional (18/18/9): 2 reads for a 2 MB page, 3 for a 4 KB page.
    Fpt5,
    /// Three levels merged (§3.2): one 1 GB root node of L4+L3+L2 (27 bits) whose entries are
    /// 2 MB pages or pointers to 4 KB L1 nodes: 1 read for a 2 MB page, 2 for a 4 KB page.
    Fpt1G,
}

impl Layout {
    /// Level of the root.
    pub fn top(self) -> u8 {
        if matches!(self, Layout::Radix5 | Layout::Fpt5) {
            5
        } else {
            4
        }
    }

    /// How many levels a node whose top level is `level` merges when the block it needs
    /// (2 MB for two, 1 GB for three) is free: 1 for a conventional 4 KB node.
    pub fn span(self, level: u8) -> u8 {
        match (self, level) {
            (Layout::Fpt { .. }, 4 | 2) | (Layout::FptL4L3, 4) | (Layout::FptL3L2, 3) | (Layout::Fpt5, 5 | 3) => 2,
            (Layout::Fpt1G, 4) => 3,
            _ => 1,
        }
    }

    /// Whether a node whose top level is `level` is built flattened when it can be.
    pub fn flattens(self, level: u8) -> bool {
        self.span(level) > 1
    }

    /// Whether a 1 GB page can be a single level-3 entry. Layouts that merge level 3 with
    /// the level below it have no level-3 entry: their OS maps 2 MB pages instead.
    pub fn holds_1g_leaves(self) -> bool {
        !matches!(self, Layout::FptL3L2 | Layout::Fpt5 | Layout::Fpt1G)
    }
}

/// One page-table node (page directory, page table...), 4 KB or flattened 2 MB.
pub struct Node {
    pub frame: Frame,
    /// Highest level the node covers: 1 = leaf PT, 2 = PD, 3 = PDPT, 4 = PML4, 5 = PML5.
    pub level: u8,
    /// Levels merged into this node: 1 (4 KB, 512 entries), 2 (flattened: 2 MB, 2^18
    /// entries indexed by 18 VA bits) or 3 (1 GB, 2^27 entries, 27 bits).
    pub span: u8,
    /// The layout of the tree this node belongs to.
    pub layout: Layout,
    /// Flattened L2+L1 nodes: 2 MB data pages held as 512 replicated entries.
    pub huge_groups: u16,
    /// A 4 KB node built where the layout wanted a flattened one (no block was free).
    pub fell_back: bool,
    /// A root's elastic cuckoo page tables in [`PageTables`]' list (`NO_ECH`: none).
    ech: u32,
    /// Lowest level covered, and the VA shift and mask that index the node: fixed by
    /// `level` and `span`, kept so that walks do not recompute them.
    low: u8,
    shift: u8,
    mask: u32,
    /// Where the entries (exactly as hardware reads them) are kept: chunk and offset in
    /// [`PageTables`]'s entry store.
    chunk: u32,
    offset: u32,
    /// For each entry that points to a node, that node's id: lets the simulator find the
    /// child's storage without hashing the entry's PFN. Kept consistent with the entries.
    pub children: Children,
}

/// The child node of each entry of a node (`NO_NODE` where there is none). Kept as id + 1 in
/// zero-initialised memory: a 1 GB node's 2^27 slots then cost host memory only where used
/// (the allocator maps zeroed pages on first touch), and a lookup is one load and one
/// subtraction (0 - 1 wraps to `NO_NODE`).
pub struct Children(Box<[u32]>);

impl Children {
    fn new(len: usize) -> Children {
        Children(vec![0u32; len].into_boxed_slice())
    }

    fn none() -> Children {
        Children(Box::new([]))
    }

    /// The child of entry `idx`, or `NO_NODE`.
    #[inline(always)]
    pub fn get(&self, idx: usize) -> NodeId {
        self.0[idx].wrapping_sub(1)
    }

    #[inline]
    fn set(&mut self, idx: usize, id: NodeId) {
        self.0[idx] = id.wrapping_add(1);
    }

    /// Whether entry `idx` exists and points to a child node.
    #[inline]
    pub fn has(&self, idx: usize) -> bool {
        self.0.get(idx).is_some_and(|&c| c != 0)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every entry's child (`NO_NODE` where none), in entry order.
    pub fn iter(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.0.iter().map(|c| c.wrapping_sub(1))
    }
}

impl Node {
    /// Physical address of entry `idx`.
    #[inline]
    pub fn entry_addr(&self, idx: usize) -> PhysAddr {
        PhysAddr(self.frame.addr().0 + idx as u64 * 8)
    }

    /// Lowest level the node covers; its entries are at this level.
    #[inline]
    pub fn low(&self) -> u8 {
        self.low
    }

    /// Number of entries.
    #[inline]
    pub fn entry_count(&self) -> usize {
        1 << (9 * self.span as u32)
    }

    /// The entry of this node that `va` selects: VA bits [12+9(low-1), 12+9*level).
    #[inline]
    pub fn index(&self, va: VirtAddr) -> usize {
        ((va.0 >> self.shift) as usize) & self.mask as usize
    }

    fn set_shape(&mut self, level: u8, span: u8) {
        self.level = level;
        self.span = span;
        self.low = level + 1 - span;
        self.shift = 12 + 9 * (self.low - 1);
        self.mask = (1u32 << (9 * span as u32)) - 1;
    }

    /// Bytes of VA one entry covers.
    #[inline]
    pub fn entry_span(&self) -> u64 {
        1 << (12 + 9 * (self.low() as u32 - 1))
    }
}

/// What an entry found by a walk means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    NotPresent,
    /// A translation of this page size.
    Leaf(PageSize),
    /// A pointer to the child node.
    Pointer(NodeId),
    /// A pointer into the page tables themselves: the recursive slot or the glue table
    /// ([`PageTables::install_recursive`]).
    PageTables,
}

/// Every page-table node of the machine (all address spaces share physical memory).
#[derive(Default)]
pub struct PageTables {
    nodes: Vec<Node>,
    /// Entry storage in 2 MB chunks (huge-page backed on the host: walks read it at random).
    /// A flattened node has a chunk of its own.
    chunks: Vec<crate::host::hostmem::HugeBuf<u64>>,
    /// Entries used in the chunk that 4 KB nodes are being carved from.
    chunk_used: usize,
    small_chunk: Option<usize>,
    per_level: [u64; 6],
    bytes_per_level: [u64; 6],
    flat_nodes: u64,
    /// Flattened nodes that could not be allocated (no free 2 MB block) and were built as
    /// two 4 KB levels instead.
    pub flatten_fallbacks: u64,
    /// Flattened L2+L1 nodes turned back into 4 KB levels by the FPT+NF rule.
    pub unflattened: u64,
    /// Fallen-back nodes merged with their children once a block was free (late flattening).
    pub late_flattened: u64,
    /// A fallen-back node is flattened late when it comes to have this many children (0:
    /// never; `pt.late_flatten`).
    late_flatten_at: u16,
    /// ECH (`ech.enabled`): its parameters, and each root's hashed tables, mirroring the tree.
    ech_params: Option<crate::os::ech::EchGeometry>,
    ech: Vec<crate::os::ech::EchSpace>,
    /// Ids of freed 4 KB and 2 MB nodes (by span), reused with their zeroed storage by the
    /// next allocations. (A freed 1 GB node's storage is released instead.)
    free_ids: [Vec<NodeId>; 3],
    /// Bumped whenever an entry starts or stops pointing to a node, or is written from
    /// outside the table's own operations: a path found earlier is still the tree's while
    /// this is unchanged ([`PageTables::leaf_entry_near`]).
    shape: u64,
}

const NO_ECH: u32 = u32::MAX;

/// The index of a page size in ECH's per-size tables.
fn ech_size(size: PageSize) -> usize {
    match size {
        PageSize::Size4K => 0,
        PageSize::Size2M => 1,
        PageSize::Size1G => 2,
    }
}

/// Entries per storage chunk: 512 nodes of 4 KB, or one flattened node.
const CHUNK: usize = ENTRIES * 512;

/// A successful functional lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub frame: Frame,
    pub size: PageSize,
    pub entry: u64,
}

/// What a [`PageTables::map`] changed besides the mapping itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[must_use]
pub struct MapEffect {
    /// A flattened node was replaced by 4 KB levels (FPT+NF) for this VA range: cached
    /// paging-structure entries for it are stale and must be shot down.
    pub restructured: Option<(u64, u64)>,
}

impl PageTables {
    pub fn new() -> PageTables {
        PageTables::default()
    }

    /// A 4 KB node at `level` of a conventional tree.
    pub fn alloc_node(&mut self, phys: &mut PhysMem, level: u8) -> Result<NodeId, PtError> {
        self.alloc(phys, level, 1, if level == 5 { Layout::Radix5 } else { Layout::Radix4 })
    }

    /// The root of a new tree of `layout`. A flattened root falls back to 4 KB when no
    /// 2 MB block is free.
    pub fn alloc_root(&mut self, phys: &mut PhysMem, layout: Layout) -> Result<NodeId, PtError> {
        let root = self.alloc_child(phys, layout.top(), layout)?;
        if let Some(p) = self.ech_params {
            self.nodes[root as usize].ech = self.ech.len() as u32;
            self.ech.push(crate::os::ech::EchSpace::new(phys, &p, root as u64));
        }
        Ok(root)
    }

    /// Give every root made from now on elastic cuckoo page tables (ECH), kept in step with
    /// the tree by every mapping change.
    pub fn enable_ech(&mut self, p: crate::os::ech::EchGeometry) {
        self.ech_params = Some(p);
    }

    /// The elastic cuckoo page tables of the tree rooted at `root`, if it has them.
    #[inline]
    pub fn ech(&self, root: NodeId) -> Option<&crate::os::ech::EchSpace> {
        self.ech.get(self.nodes[root as usize].ech as usize)
    }

    /// Every root's elastic cuckoo page tables.
    pub fn ech_spaces(&self) -> &[crate::os::ech::EchSpace] {
        &self.ech
    }

    fn ech_mut(&mut self, root: NodeId) -> Option<&mut crate::os::ech::EchSpace> {
        let i = self.nodes[root as usize].ech as usize;
        self.ech.get_mut(i)
    }

    /// A node whose top level is `level` in a tree of `layout`, flattened if the layout
    /// says so and a block of its size (2 MB, or 1 GB for three levels) is free; otherwise a
    /// 4 KB node, marked as fallen back (late flattening may merge it later).
    fn alloc_child(&mut self, phys: &mut PhysMem, level: u8, layout: Layout) -> Result<NodeId, PtError> {
        let span = layout.span(level);
        if span > 1 {
            match self.alloc(phys, level, span, layout) {
                Ok(id) => return Ok(id),
                Err(_) => self.flatten_fallbacks += 1,
            }
        }
        let id = self.alloc(phys, level, 1, layout)?;
        self.nodes[id as usize].fell_back = span > 1;
        Ok(id)
    }

    /// Flatten late (`pt.late_flatten`): a fallen-back node that comes to have `at` children
    /// is merged with them into one node when a block is free (0: never).
    pub fn set_late_flatten(&mut self, at: u16) {
        self.late_flatten_at = at;
    }

    fn alloc(&mut self, phys: &mut PhysMem, level: u8, span: u8, layout: Layout) -> Result<NodeId, PtError> {
        let frame = if span == 1 { phys.alloc_page() } else { phys.alloc(9 * (span - 1)) };
        let frame = frame.ok_or(PtError::OutOfMemory { level })?;
        let len = 1usize << (9 * span as u32);
        let has_children = level + 1 - span > 1;
        let children = if has_children { Children::new(len) } else { Children::none() };
        let reuse = if span < 3 { self.free_ids[span as usize].pop() } else { None };
        let id = match reuse {
            Some(id) => {
                let n = &mut self.nodes[id as usize];
                n.frame = frame;
                n.set_shape(level, span);
                n.layout = layout;
                n.huge_groups = 0;
                n.fell_back = false;
                n.ech = NO_ECH;
                n.children = children;
                id
            }
            None => {
                let (chunk, offset) = if span == 3 {
                    // (Only the entries the OS writes are ever touched: a sparse 1 GB.)
                    self.chunks.push(crate::host::hostmem::HugeBuf::zeroed(len));
                    (self.chunks.len() - 1, 0)
                } else if span == 2 {
                    self.chunks.push(crate::host::hostmem::HugeBuf::new(CHUNK, 0u64));
                    (self.chunks.len() - 1, 0)
                } else {
                    if self.small_chunk.is_none() || self.chunk_used == CHUNK {
                        self.chunks.push(crate::host::hostmem::HugeBuf::new(CHUNK, 0u64));
                        self.small_chunk = Some(self.chunks.len() - 1);
                        self.chunk_used = 0;
                    }
                    let off = self.chunk_used;
                    self.chunk_used += ENTRIES;
                    (self.small_chunk.expect("set above"), off)
                };
                let mut n = Node {
                    frame,
                    level,
                    span,
                    layout,
                    huge_groups: 0,
                    fell_back: false,
                    ech: NO_ECH,
                    low: 0,
                    shift: 0,
                    mask: 0,
                    chunk: chunk as u32,
                    offset: offset as u32,
                    children,
                };
                n.set_shape(level, span);
                self.nodes.push(n);
                (self.nodes.len() - 1) as NodeId
            }
        };
        self.per_level[level as usize] += 1;
        self.bytes_per_level[level as usize] += len as u64 * 8;
        if span > 1 {
            self.flat_nodes += 1;
        }
        Ok(id)
    }

    /// How a walk for `va` moves through `node`, a node at `level`: the index of the entry
    /// it reads there, and the level of that entry (what it maps if it is a leaf, see
    /// [`leaf_size`]; the node it points to is one level below). The one place the hardware
    /// walkers (native, guest and host dimensions) compute indices: a format whose nodes
    /// index more VA bits (a flattened node) changes only this.
    #[inline(always)]
    pub fn index_at(&self, node: NodeId, _level: u8, va: VirtAddr) -> (usize, u8) {
        // The node's size (from the size bit of the entry that points to it) decides how
        // many VA bits index it: 9, or 18 for a flattened node.
        let n = &self.nodes[node as usize];
        (n.index(va), n.low())
    }

    /// Whether `id` names a node of these tables (ids of one table set mean nothing in
    /// another: a guest's nodes are not the host's).
    #[inline]
    pub fn has_node(&self, id: NodeId) -> bool {
        (id as usize) < self.nodes.len()
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
        self.shape += 1;
        *self.entry_mut(id, idx) = e;
    }

    /// Make entry `idx` of `node` point to `child` (`NO_NODE`: to no node), for the walk;
    /// the caller writes the entry itself.
    #[inline]
    fn set_child(&mut self, node: NodeId, idx: usize, child: NodeId) {
        self.shape += 1;
        self.nodes[node as usize].children.set(idx, child);
    }

    /// Changes when the tree's shape does (see [`PageTables::leaf_entry_near`]).
    #[inline]
    pub fn shape(&self) -> u64 {
        self.shape
    }

    /// All entries of a node, as hardware reads them.
    pub fn entries(&self, id: NodeId) -> &[u64] {
        let n = &self.nodes[id as usize];
        &self.chunks[n.chunk as usize][n.offset as usize..n.offset as usize + n.entry_count()]
    }

    /// What entry `idx` of `node` is. Leaves: 4 KB entries at level 1 (a PS entry there is
    /// a replica of a 2 MB page in a flattened L2+L1 node), PS entries at levels 2 and 3.
    #[inline]
    pub fn classify(&self, node: NodeId, idx: usize) -> (u64, EntryKind) {
        let e = self.entry(node, idx);
        if e & PTE_P == 0 {
            return (e, EntryKind::NotPresent);
        }
        let n = &self.nodes[node as usize];
        let kind = match n.low() {
            1 if e & PTE_PS != 0 => EntryKind::Leaf(PageSize::Size2M),
            1 => EntryKind::Leaf(PageSize::Size4K),
            2 if e & PTE_PS != 0 => EntryKind::Leaf(PageSize::Size2M),
            3 if e & PTE_PS != 0 => EntryKind::Leaf(PageSize::Size1G),
            _ => match n.children.get(idx) {
                NO_NODE => EntryKind::PageTables,
                child => EntryKind::Pointer(child),
            },
        };
        (e, kind)
    }

    /// Return a node that no entry points to any more (its parent entry was rewritten) to
    /// physical memory. Its entries are cleared; its id is reused by a later allocation.
    pub fn free_node(&mut self, phys: &mut PhysMem, id: NodeId) {
        let n = &self.nodes[id as usize];
        debug_assert!(n.children.iter().all(|c| c == NO_NODE), "freeing a node that still has children");
        let (frame, level, span, chunk, offset, len) = (n.frame, n.level, n.span, n.chunk as usize, n.offset as usize, n.entry_count());
        if span == 3 {
            // Release the host memory; the id is not reused.
            self.chunks[chunk] = crate::host::hostmem::HugeBuf::zeroed(0);
            self.nodes[id as usize].children = Children::none();
        } else {
            self.chunks[chunk][offset..offset + len].fill(0);
            self.free_ids[span as usize].push(id);
        }
        self.per_level[level as usize] -= 1;
        self.bytes_per_level[level as usize] -= len as u64 * 8;
        if span > 1 {
            self.flat_nodes -= 1;
            phys.free(frame, 9 * (span - 1));
        } else {
            phys.free_page(frame);
        }
    }

    /// Follow pointers from `root` towards `va` down to the node whose entries are at
    /// `level` or above it (the node that holds `va`'s level-`level` entry, or a large leaf
    /// above it). Returns the node and its parent (node, index), `None` if a pointer on the
    /// way is missing.
    fn descend(&self, root: NodeId, va: VirtAddr, level: u8) -> Option<(NodeId, Option<(NodeId, usize)>)> {
        let mut node = root;
        let mut parent = None;
        loop {
            let n = &self.nodes[node as usize];
            if n.low() <= level {
                return Some((node, parent));
            }
            let idx = n.index(va);
            let child = n.children.get(idx);
            if child == NO_NODE {
                return None;
            }
            parent = Some((node, idx));
            node = child;
        }
    }

    /// The entries that hold the 2 MB region at `va` (aligned): a level-1 node's 512
    /// entries, or the 512-entry group of a flattened L2+L1 node. `None` if the region is
    /// not mapped through level-1 entries (nothing there, or a conventional 2 MB leaf).
    pub fn leaf_group(&self, root: NodeId, _top: u8, va: VirtAddr) -> Option<(NodeId, usize)> {
        let (node, _) = self.descend(root, va, 1)?;
        let n = &self.nodes[node as usize];
        if n.low() != 1 {
            return None;
        }
        let start = n.index(VirtAddr(va.0 & !((2 << 20) - 1)));
        Some((node, start))
    }

    /// The 512 level-1 entries of the 2 MB region at `va`, if it is mapped through them.
    pub fn region_entries(&self, root: NodeId, top: u8, va: VirtAddr) -> Option<&[u64]> {
        let (node, start) = self.leaf_group(root, top, va)?;
        let e = &self.entries(node)[start..start + ENTRIES];
        // A flattened group holding a replicated 2 MB page is not a group of 4 KB pages.
        (e[0] & (PTE_P | PTE_PS) != (PTE_P | PTE_PS)).then_some(e)
    }

    /// Nothing at all is mapped where a `size` leaf for `va` would go (Linux's pmd_none).
    pub fn huge_slot_empty(&self, root: NodeId, va: VirtAddr, size: PageSize) -> bool {
        let Some((node, _)) = self.descend(root, va, size.leaf_level()) else { return true };
        let n = &self.nodes[node as usize];
        if n.low() == size.leaf_level() {
            let idx = n.index(va);
            return self.entry(node, idx) & PTE_P == 0 && !n.children.has(idx);
        }
        // Flattened node below the leaf level: every entry of the range must be empty.
        let per = (size.bytes() / n.entry_span()) as usize;
        let start = n.index(VirtAddr(va.0 & !(size.bytes() - 1)));
        self.entries(node)[start..start + per].iter().all(|&e| e & PTE_P == 0)
    }

    /// Replace the 4 KB pages of the 2 MB-aligned `va` with one 2 MB leaf mapping `frame`
    /// (a promotion). Returns the old 512 entries; a level-1 node that held them is freed.
    /// `None` (and nothing changed) if `va` is not mapped through level-1 entries.
    pub fn collapse_2m(&mut self, phys: &mut PhysMem, root: NodeId, top: u8, va: VirtAddr, frame: Frame, flags: u64) -> Option<Vec<u64>> {
        let old = self.collapse_entries(phys, root, top, va, frame, flags)?;
        let va2m = va.0 & !((2 << 20) - 1);
        if let Some(e) = self.ech_mut(root) {
            for (i, &pte) in old.iter().enumerate() {
                if pte & PTE_P != 0 {
                    e.unmapped(va2m + i as u64 * 4096, 0);
                }
            }
            e.mapped(phys, va2m, 1);
        }
        Some(old)
    }

    fn collapse_entries(&mut self, phys: &mut PhysMem, root: NodeId, top: u8, va: VirtAddr, frame: Frame, flags: u64) -> Option<Vec<u64>> {
        let (node, start) = self.leaf_group(root, top, va)?;
        let old = self.entries(node)[start..start + ENTRIES].to_vec();
        let leaf = (frame.0 << 12) | PTE_P | PTE_PS | flags;
        if self.nodes[node as usize].span == 2 {
            // Flattened L2+L1: the 2 MB page becomes 512 replicated entries.
            for i in 0..ENTRIES {
                *self.entry_mut(node, start + i) = leaf;
            }
            self.nodes[node as usize].huge_groups += 1;
            return Some(old);
        }
        let (_, parent) = self.descend(root, va, 1)?;
        let (pd, idx) = parent?;
        self.set_child(pd, idx, NO_NODE);
        *self.entry_mut(pd, idx) = leaf;
        self.free_node(phys, node);
        Some(old)
    }

    /// Free the level-1 node mapping the 2 MB region at `va` if none of its entries is
    /// present any more, clearing its parent's pointer (an unmap emptied it). Flattened
    /// nodes (2 MB of entries) are kept. True if a node was freed.
    pub fn free_empty_leaf_node(&mut self, phys: &mut PhysMem, root: NodeId, _top: u8, va: VirtAddr) -> bool {
        let Some((node, Some((pd, idx)))) = self.descend(root, va, 1) else { return false };
        let n = &self.nodes[node as usize];
        if n.low() != 1 || n.span != 1 || self.entries(node).iter().any(|&e| e & PTE_P != 0) {
            return false;
        }
        self.set_child(pd, idx, NO_NODE);
        *self.entry_mut(pd, idx) = 0;
        self.free_node(phys, node);
        true
    }

    /// Replace the 2 MB leaf at the 2 MB-aligned `va` with 512 4 KB entries mapping the same
    /// frames with the same rights, accessed and dirty bits (a demotion, as Linux's split):
    /// a new level-1 node, or the flattened node's group rewritten. Returns the leaf's first
    /// frame and entry; `Ok(None)` if there is no 2 MB leaf there.
    pub fn split_2m(&mut self, phys: &mut PhysMem, root: NodeId, top: u8, va: VirtAddr) -> Result<Option<(Frame, u64)>, PtError> {
        let split = self.split_entries(phys, root, top, va)?;
        if let (Some(_), Some(e)) = (split, self.ech.get_mut(self.nodes[root as usize].ech as usize)) {
            let va2m = va.0 & !((2 << 20) - 1);
            e.unmapped(va2m, 1);
            for i in 0..ENTRIES as u64 {
                e.mapped(phys, va2m + i * 4096, 0);
            }
        }
        Ok(split)
    }

    fn split_entries(&mut self, phys: &mut PhysMem, root: NodeId, top: u8, va: VirtAddr) -> Result<Option<(Frame, u64)>, PtError> {
        let Some((node, _)) = self.descend(root, va, 2) else { return Ok(None) };
        let (low, span) = (self.nodes[node as usize].low(), self.nodes[node as usize].span);
        let idx = self.nodes[node as usize].index(VirtAddr(va.0 & !((2 << 20) - 1)));
        let e = self.entry(node, idx);
        if e & PTE_P == 0 || e & PTE_PS == 0 {
            return Ok(None);
        }
        let base = (e & PTE_PFN_MASK) >> 12;
        let bits = e & !(PTE_PFN_MASK | PTE_PS);
        if low == 1 {
            debug_assert_eq!(span, 2);
            for i in 0..ENTRIES {
                *self.entry_mut(node, idx + i) = ((base + i as u64) << 12) | bits;
            }
            let n = &mut self.nodes[node as usize];
            n.huge_groups = n.huge_groups.saturating_sub(1);
            return Ok(Some((Frame(base), e)));
        }
        let _ = top;
        let child = self.alloc(phys, 1, 1, self.nodes[node as usize].layout)?;
        for i in 0..ENTRIES {
            *self.entry_mut(child, i) = ((base + i as u64) << 12) | bits;
        }
        let cframe = self.nodes[child as usize].frame;
        *self.entry_mut(node, idx) = (cframe.0 << 12) | PTE_P | PTE_RW | PTE_US;
        self.set_child(node, idx, child);
        Ok(Some((Frame(base), e)))
    }

    /// The node whose top level is `level` on the path to `va` (what a page-walk cache entry
    /// for that prefix must point to), if the path has one.
    pub fn node_at(&self, root: NodeId, _top: u8, va: VirtAddr, level: u8) -> Option<NodeId> {
        let (node, _) = self.descend(root, va, level)?;
        (self.nodes[node as usize].level == level).then_some(node)
    }

    /// Set bits in an entry (the walker's A/D updates).
    #[inline]
    pub fn set_bits(&mut self, id: NodeId, idx: usize, bits: u64) {
        *self.entry_mut(id, idx) |= bits;
    }

    /// The aligned groups of `2^shift` entries of level-1 nodes whose entries all map 4 KB
    /// pages: how many there are, and how many PTE coalescing could cache as one entry
    /// ([`crate::arch::coalesce::coalescable`]): the contiguity the OS made.
    pub fn leaf_groups(&self, shift: u32) -> (u64, u64) {
        let n = 1usize << shift;
        let (mut groups, mut coalescable) = (0, 0);
        for id in 0..self.nodes.len() as NodeId {
            if self.nodes[id as usize].low() != 1 {
                continue;
            }
            let entries = self.entries(id);
            for first in (0..entries.len()).step_by(n) {
                if entries[first..first + n].iter().all(|&e| e & (PTE_P | PTE_PS) == PTE_P) {
                    groups += 1;
                    coalescable += crate::arch::coalesce::coalescable(entries, first, shift) as u64;
                }
            }
        }
        (groups, coalescable)
    }

    /// Nodes whose top level is `level` (1..=5).
    pub fn nodes_at(&self, level: u8) -> u64 {
        self.per_level[level as usize]
    }

    pub fn total_nodes(&self) -> u64 {
        self.per_level.iter().sum()
    }

    /// Flattened (2 MB) nodes.
    pub fn flat_nodes(&self) -> u64 {
        self.flat_nodes
    }

    /// Bytes of page-table memory in nodes whose top level is `level`.
    pub fn bytes_at(&self, level: u8) -> u64 {
        self.bytes_per_level[level as usize]
    }

    /// Map `va` (aligned to `size`) to `frame` in the tree rooted at `root`, allocating
    /// nodes as its layout says. In a flattened L2+L1 node a 2 MB page is 512 replicated
    /// entries; reaching the layout's FPT+NF threshold unflattens the node.
    // A mapping request is naturally (tree, root, address, frame, size, flags); `_top` keeps the
    // signature in step with the other walks over the tree. Bundling them would only add a type.
    #[allow(clippy::too_many_arguments)]
    pub fn map(&mut self, phys: &mut PhysMem, root: NodeId, _top: u8, va: VirtAddr, frame: Frame, size: PageSize, flags: u64) -> Result<MapEffect, PtError> {
        let mut late = None;
        let effect = self.map_entry(phys, root, va, frame, size, flags, &mut late)?;
        if let Some(e) = self.ech_mut(root) {
            e.mapped(phys, va.0 & !(size.bytes() - 1), ech_size(size));
        }
        if let (Some((parent, pidx, node)), None) = (late, effect.restructured) {
            if let Some(range) = self.late_flatten(phys, parent, pidx, node, va)? {
                return Ok(MapEffect { restructured: Some(range) });
            }
        }
        Ok(effect)
    }

    /// [`Self::map`]'s walk down the tree and its write of the leaf; `late` is set to a
    /// fallen-back node (with its parent entry) that this mapping gave its `late_flatten_at`-th
    /// present entry.
    #[allow(clippy::too_many_arguments)]
    fn map_entry(
        &mut self,
        phys: &mut PhysMem,
        root: NodeId,
        va: VirtAddr,
        frame: Frame,
        size: PageSize,
        flags: u64,
        late: &mut Option<(NodeId, usize, NodeId)>,
    ) -> Result<MapEffect, PtError> {
        let target = size.leaf_level();
        let mut node = root;
        let mut parent: Option<(NodeId, usize)> = None;
        loop {
            let (low, level, layout) = {
                let n = &self.nodes[node as usize];
                (n.low(), n.level, n.layout)
            };
            let idx = self.nodes[node as usize].index(va);
            if low <= target {
                let leaf = (frame.0 << 12) | PTE_P | flags | if size == PageSize::Size4K { 0 } else { PTE_PS };
                if low == target {
                    let has_child = self.nodes[node as usize].children.has(idx);
                    if self.entry(node, idx) & PTE_P != 0 || has_child {
                        return Err(PtError::AlreadyMapped { va: va.0, level: target });
                    }
                    *self.entry_mut(node, idx) = leaf;
                    return Ok(MapEffect::default());
                }
                // A 2 MB page inside a flattened L2+L1 node: replicate it. (A 1 GB page below
                // level 3 has no entry of its own: the OS maps 2 MB pages there instead.)
                if target != 2 || low != 1 {
                    return Err(PtError::NoLeafLevel { va: va.0, size: size.name(), level: target });
                }
                let start = self.nodes[node as usize].index(VirtAddr(va.0 & !((2 << 20) - 1)));
                if self.entries(node)[start..start + ENTRIES].iter().any(|&e| e & PTE_P != 0) {
                    return Err(PtError::AlreadyMapped { va: va.0, level: target });
                }
                for i in 0..ENTRIES {
                    *self.entry_mut(node, start + i) = leaf;
                }
                self.nodes[node as usize].huge_groups += 1;
                if let (Layout::Fpt { nf }, Some((p, pidx))) = (layout, parent) {
                    if nf > 0 && self.nodes[node as usize].huge_groups >= nf {
                        let range = self.unflatten(phys, p, pidx, node, va)?;
                        return Ok(MapEffect { restructured: Some(range) });
                    }
                }
                return Ok(MapEffect::default());
            }
            let e = self.entry(node, idx);
            if e & PTE_P != 0 && e & PTE_PS != 0 {
                return Err(PtError::AlreadyMapped { va: va.0, level });
            }
            let child = self.nodes[node as usize].children.get(idx);
            let next = if child != NO_NODE {
                child
            } else {
                let c = self.alloc_child(phys, low - 1, layout)?;
                let cn = &self.nodes[c as usize];
                // (Only a root merges three levels: no entry points to a 1 GB node.)
                debug_assert!(cn.span < 3);
                let flat = if cn.span == 2 { PTE_FLAT } else { 0 };
                let cframe = cn.frame;
                // Upper-level entries are permissive; the leaf decides the rights.
                *self.entry_mut(node, idx) = (cframe.0 << 12) | PTE_P | PTE_RW | PTE_US | flat;
                self.set_child(node, idx, c);
                if let (true, Some((p, pidx))) = (self.nodes[node as usize].fell_back && self.late_flatten_at > 0, parent) {
                    let present = self.entries(node).iter().filter(|&&e| e & PTE_P != 0).count();
                    if present >= self.late_flatten_at as usize {
                        *late = Some((p, pidx, node));
                    }
                }
                c
            };
            parent = Some((node, idx));
            node = next;
        }
    }

    /// Late flattening (§6.2, the step the paper's prototype leaves out): merge the
    /// fallen-back 4 KB node `old` (entry `pidx` of `parent`) and its children into a new
    /// 2 MB node: allocate the block, copy the children's entries into it (a 2 MB leaf of an
    /// L2 node becomes 512 replicas), re-point the parent entry with the flattened-size bit,
    /// free the old nodes. Returns the VA range whose cached paging-structure entries went
    /// stale; `None` (nothing changed) if no 2 MB block is free, if `old` holds a leaf that
    /// cannot move down a level (a 1 GB page), or if FPT+NF would unflatten the result.
    fn late_flatten(&mut self, phys: &mut PhysMem, parent: NodeId, pidx: usize, old: NodeId, va: VirtAddr) -> Result<Option<(u64, u64)>, PtError> {
        let (level, low, layout) = {
            let n = &self.nodes[old as usize];
            (n.level, n.low(), n.layout)
        };
        debug_assert_eq!(layout.span(level), 2);
        let mut huge = 0;
        for i in 0..ENTRIES {
            let e = self.entry(old, i);
            if e & PTE_P != 0 && !self.nodes[old as usize].children.has(i) {
                if low != 2 || e & PTE_PS == 0 {
                    return Ok(None);
                }
                huge += 1;
            }
        }
        if let Layout::Fpt { nf } = layout {
            if nf > 0 && huge >= nf {
                return Ok(None);
            }
        }
        let Ok(new) = self.alloc(phys, level, 2, layout) else { return Ok(None) };
        for i in 0..ENTRIES {
            let e = self.entry(old, i);
            if e & PTE_P == 0 {
                continue;
            }
            let child = self.nodes[old as usize].children.get(i);
            if child == NO_NODE {
                // A 2 MB leaf: replicated in the flattened L2+L1 node.
                for j in 0..ENTRIES {
                    *self.entry_mut(new, i * ENTRIES + j) = e;
                }
                self.nodes[new as usize].huge_groups += 1;
                continue;
            }
            let has_grandchildren = !self.nodes[child as usize].children.is_empty();
            for j in 0..ENTRIES {
                let ce = self.entry(child, j);
                *self.entry_mut(new, i * ENTRIES + j) = ce;
                if has_grandchildren && self.nodes[child as usize].children.has(j) {
                    let grandchild = self.nodes[child as usize].children.get(j);
                    self.set_child(new, i * ENTRIES + j, grandchild);
                    self.set_child(child, j, NO_NODE);
                }
            }
            self.set_child(old, i, NO_NODE);
            self.free_node(phys, child);
        }
        let f = self.nodes[new as usize].frame;
        let pe = self.entry(parent, pidx);
        *self.entry_mut(parent, pidx) = (pe & !PTE_PFN_MASK) | (f.0 << 12) | PTE_FLAT;
        self.set_child(parent, pidx, new);
        self.free_node(phys, old);
        self.late_flattened += 1;
        let cover = self.nodes[new as usize].entry_span() << 18;
        let base = va.0 & !(cover - 1);
        Ok(Some((base, base + cover)))
    }

    /// FPT+NF: replace the flattened L2+L1 node `flat` (entry `pidx` of `parent`) by a 4 KB
    /// L2 node whose entries are 2 MB leaves for replicated groups and 4 KB L1 nodes for the
    /// rest. Returns the VA range whose cached translations went stale.
    fn unflatten(&mut self, phys: &mut PhysMem, parent: NodeId, pidx: usize, flat: NodeId, va: VirtAddr) -> Result<(u64, u64), PtError> {
        let layout = self.nodes[flat as usize].layout;
        let l2 = self.alloc(phys, 2, 1, layout)?;
        for g in 0..ENTRIES {
            let group: Vec<u64> = self.entries(flat)[g * ENTRIES..(g + 1) * ENTRIES].to_vec();
            if group[0] & (PTE_P | PTE_PS) == PTE_P | PTE_PS {
                *self.entry_mut(l2, g) = group[0];
            } else if group.iter().any(|&e| e & PTE_P != 0) {
                let l1 = self.alloc(phys, 1, 1, layout)?;
                for (i, &e) in group.iter().enumerate() {
                    *self.entry_mut(l1, i) = e;
                }
                let f = self.nodes[l1 as usize].frame;
                *self.entry_mut(l2, g) = (f.0 << 12) | PTE_P | PTE_RW | PTE_US;
                self.set_child(l2, g, l1);
            }
        }
        let f = self.nodes[l2 as usize].frame;
        let old = self.entry(parent, pidx);
        *self.entry_mut(parent, pidx) = (old & !(PTE_PFN_MASK | PTE_FLAT)) | (f.0 << 12);
        self.set_child(parent, pidx, l2);
        self.free_node(phys, flat);
        self.unflattened += 1;
        let base = va.0 & !((1u64 << 30) - 1);
        Ok((base, base + (1 << 30)))
    }

    /// Remove the leaf mapping `va` of `size`; returns the frame it mapped. Emptied nodes
    /// are kept (as Linux keeps them until the VMA goes away).
    pub fn unmap(&mut self, root: NodeId, top: u8, va: VirtAddr, size: PageSize) -> Option<Frame> {
        let frame = self.unmap_entry(root, top, va, size)?;
        if let Some(e) = self.ech_mut(root) {
            e.unmapped(va.0 & !(size.bytes() - 1), ech_size(size));
        }
        Some(frame)
    }

    fn unmap_entry(&mut self, root: NodeId, _top: u8, va: VirtAddr, size: PageSize) -> Option<Frame> {
        let (node, _) = self.descend(root, va, size.leaf_level())?;
        let n = &self.nodes[node as usize];
        let low = n.low();
        if low == size.leaf_level() {
            let idx = n.index(va);
            let (e, kind) = self.classify(node, idx);
            if kind != EntryKind::Leaf(size) {
                return None;
            }
            *self.entry_mut(node, idx) = 0;
            return Some(Frame((e & PTE_PFN_MASK) >> 12));
        }
        // A replicated 2 MB page in a flattened L2+L1 node.
        let start = n.index(VirtAddr(va.0 & !((2 << 20) - 1)));
        let e = self.entry(node, start);
        if size != PageSize::Size2M || e & (PTE_P | PTE_PS) != PTE_P | PTE_PS {
            return None;
        }
        for i in 0..ENTRIES {
            *self.entry_mut(node, start + i) = 0;
        }
        let n = &mut self.nodes[node as usize];
        n.huge_groups = n.huge_groups.saturating_sub(1);
        Some(Frame((e & PTE_PFN_MASK) >> 12))
    }

    /// Functional translation (no side effects, no timing): what the hardware walk finds.
    /// The physical addresses of the entries a walk of `va` reads, from the root down to the
    /// leaf or the first entry that is not present (what a software walk loads).
    pub fn path(&self, root: NodeId, va: VirtAddr, out: &mut Vec<PhysAddr>) {
        self.path_with(root, va, |pa| out.push(pa));
    }

    /// [`PageTables::path`], each entry's address handed to `f` (no list to allocate).
    /// Returns the node of the last entry.
    pub fn path_with(&self, root: NodeId, va: VirtAddr, mut f: impl FnMut(PhysAddr)) -> NodeId {
        let mut node = root;
        loop {
            let n = &self.nodes[node as usize];
            let idx = n.index(va);
            f(n.entry_addr(idx));
            match self.classify(node, idx) {
                (_, EntryKind::Pointer(child)) => node = child,
                _ => return node,
            }
        }
    }

    /// The address of `va`'s entry in `node`, if a walk of `va` ends there as a walk of
    /// `near` did: `node` holds level-1 entries (never pointers), `path_with` of `near`
    /// ended in it, `va` lies in the range it maps, and the shape has not changed since
    /// (`shape` is [`PageTables::shape`] then). A software walker going through one leaf
    /// table finds each next entry so, without the walk from the root.
    #[inline]
    pub fn leaf_entry_near(&self, node: NodeId, near: VirtAddr, va: VirtAddr, shape: u64) -> Option<PhysAddr> {
        let n = self.nodes.get(node as usize)?;
        let covered = n.shift as u32 + 9 * n.span as u32;
        (shape == self.shape && n.low == 1 && (near.0 ^ va.0) >> covered == 0).then(|| n.entry_addr(n.index(va)))
    }

    pub fn translate(&self, root: NodeId, _top: u8, va: VirtAddr) -> Option<Mapping> {
        let (_, _, e, size) = self.leaf_entry(root, va)?;
        let mut frame = (e & PTE_PFN_MASK) >> 12;
        if size != PageSize::Size4K {
            frame &= !(size.frames() - 1);
        }
        Some(Mapping { frame: Frame(frame), size, entry: e })
    }

    /// The leaf that maps `va`, functionally: its node, index, entry and page size.
    pub fn leaf_entry(&self, root: NodeId, va: VirtAddr) -> Option<(NodeId, usize, u64, PageSize)> {
        let mut node = root;
        loop {
            let idx = self.nodes[node as usize].index(va);
            match self.classify(node, idx) {
                (e, EntryKind::Leaf(size)) => return Some((node, idx, e, size)),
                (_, EntryKind::Pointer(child)) => node = child,
                // (The recursive slot maps page tables, not data.)
                (_, EntryKind::NotPresent | EntryKind::PageTables) => return None,
            }
        }
    }

    /// Follow the upper levels of the table functionally to the node that holds `va`'s
    /// level-1 entry (no timing, no side effects); `None` if the path is not there or ends
    /// in a large page. Used to prefetch host memory ahead of the simulated walk.
    #[inline]
    pub fn leaf_node(&self, root: NodeId, _top: u8, va: VirtAddr) -> Option<NodeId> {
        let (node, _) = self.descend(root, va, 1)?;
        (self.nodes[node as usize].low() == 1).then_some(node)
    }

    /// The level-1 node that maps `va`, found without reading that node's own bookkeeping
    /// (a random one of thousands, likely a host cache miss): the descent stops at the
    /// level-2 entry and returns the id it holds. A prefetch hint: `NO_NODE` when nothing is
    /// there, and the id may name a node of another level (a flattened node is returned
    /// itself), so users check [`Node::low`] once the node has arrived.
    #[inline]
    pub fn leaf_hint(&self, root: NodeId, va: VirtAddr) -> NodeId {
        let mut node = root;
        loop {
            let n = &self.nodes[node as usize];
            if n.low() <= 1 {
                return node;
            }
            let child = n.children.get(n.index(va));
            if child == NO_NODE || n.low() == 2 {
                return child;
            }
            node = child;
        }
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

    /// The node and index holding the leaf entry for `va` at `size`, if the path exists
    /// (for a 2 MB page in a flattened L2+L1 node: the first of its replicas).
    pub fn leaf_location(&self, root: NodeId, _top: u8, va: VirtAddr, size: PageSize) -> Option<(NodeId, usize)> {
        let (node, _) = self.descend(root, va, size.leaf_level())?;
        let n = &self.nodes[node as usize];
        if n.low() == size.leaf_level() {
            Some((node, n.index(va)))
        } else {
            Some((node, n.index(VirtAddr(va.0 & !(size.bytes() - 1)))))
        }
    }

    /// Every node of the tree rooted at `root`: (physical address, bytes), root first.
    pub fn tree_nodes(&self, root: NodeId, out: &mut Vec<(u64, u64)>) {
        let n = &self.nodes[root as usize];
        out.push((n.frame.addr().0, n.entry_count() as u64 * 8));
        for c in n.children.iter().filter(|&c| c != NO_NODE) {
            self.tree_nodes(c, out);
        }
    }

    /// Every 2 MB region mapped through level-1 entries (4 KB pages), ascending.
    pub fn regions_4k(&self, root: NodeId, out: &mut Vec<u64>) {
        self.collect_4k(root, 0, out);
    }

    fn collect_4k(&self, node: NodeId, prefix: u64, out: &mut Vec<u64>) {
        let n = &self.nodes[node as usize];
        let step = n.entry_span();
        if n.low() == 1 {
            // Flattened L2+L1: groups of 512 entries per 2 MB region.
            let e = self.entries(node);
            for g in 0..n.entry_count() / ENTRIES {
                let grp = &e[g * ENTRIES..(g + 1) * ENTRIES];
                if grp[0] & PTE_PS == 0 && grp.iter().any(|&x| x & PTE_P != 0) {
                    out.push(prefix | (g as u64 * ENTRIES as u64 * step));
                }
            }
            return;
        }
        for (i, c) in n.children.iter().enumerate() {
            if c == NO_NODE {
                continue;
            }
            let va = prefix | (i as u64 * step);
            if self.nodes[c as usize].span == 1 && self.nodes[c as usize].level == 1 {
                out.push(va);
            } else {
                self.collect_4k(c, va, out);
            }
        }
    }
}

/// The result of [`PageTables::hw_walk`]: where the walk ended and how many low VA bits
/// were left as the offset into what it found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwWalk {
    pub addr: PhysAddr,
    pub offset_bits: u32,
    /// Entries read.
    pub steps: u32,
}

impl PageTables {
    /// Make the tree rooted at `root` map itself through root slot `slot` (§3.5), as an OS
    /// that edits page tables through virtual addresses (Windows) does. A 4 KB root's entry
    /// `slot` points back at the root (a recursive mapping). A flattened root's sub-table
    /// `slot` (the 512 entries under top-level index `slot`) becomes the glue table L4*:
    /// entry i points at sub-table i as a 4 KB node, so L4*[slot] is L4* itself and L4* is
    /// also an ordinary 4-level view of the table for hardware without flattening. No memory
    /// is allocated; the slot's VA range is given up. See [`Self::recursive_va`].
    pub fn install_recursive(&mut self, root: NodeId, slot: usize) -> Result<(), PtError> {
        let (frame, span) = (self.nodes[root as usize].frame, self.nodes[root as usize].span);
        let entries: Vec<usize> = match span {
            1 => vec![slot],
            2 => (slot * ENTRIES..(slot + 1) * ENTRIES).collect(),
            _ => return Err(PtError::RecursiveSlot { slot, why: "a 1 GB root has no 4 KB sub-tables to recurse through" }),
        };
        if slot >= ENTRIES {
            return Err(PtError::RecursiveSlot { slot, why: "a root has 512 top-level slots" });
        }
        if entries.iter().any(|&i| self.entry(root, i) & PTE_P != 0 || self.nodes[root as usize].children.has(i)) {
            return Err(PtError::RecursiveSlot { slot, why: "it already maps memory" });
        }
        // Kernel-only and writable (the OS's view); no size bit: each target is a 4 KB node.
        for (k, &i) in entries.iter().enumerate() {
            *self.entry_mut(root, i) = ((frame.0 + k as u64) << 12) | PTE_P | PTE_RW;
        }
        Ok(())
    }

    /// The virtual address through which the recursive mapping of [`Self::install_recursive`]
    /// (root slot `slot`) reaches the level-`level` entry that maps `va`, in a `va_bits`
    /// address space (48 or 57 bits); sign-extended. Built from the widths of the nodes on
    /// the path: `k` recursions (the slot index, 9 bits each: through the root's own entry or
    /// the glue table) then the path's indices down to the node holding the entry, whose
    /// index times 8 is the offset; the hardware walk ends there because the bits left
    /// equal that node's size (§3.5's rule). `None` if the path has no node holding a
    /// level-`level` entry (not mapped yet, a large page above it, or a merged level) or if
    /// no whole number of recursions fits.
    pub fn recursive_va(&self, root: NodeId, slot: usize, va: VirtAddr, level: u8, va_bits: u32) -> Option<VirtAddr> {
        let (node, _) = self.descend(root, va, level)?;
        if self.nodes[node as usize].low() != level {
            return None;
        }
        // The path's nodes, root first.
        let mut path = vec![root];
        while *path.last()? != node {
            let n = &self.nodes[*path.last()? as usize];
            path.push(n.children.get(n.index(va)));
        }
        let widths: Vec<u32> = path.iter().map(|&p| 9 * self.nodes[p as usize].span as u32).collect();
        let used = widths.iter().sum::<u32>() + 3;
        let rest = va_bits.checked_sub(used)?;
        if rest == 0 || rest % 9 != 0 {
            return None;
        }
        let mut bits = 0u64;
        for _ in 0..rest / 9 {
            bits = (bits << 9) | slot as u64;
        }
        for (i, &p) in path.iter().enumerate() {
            let n = &self.nodes[p as usize];
            bits = (bits << widths[i]) | n.index(va) as u64;
        }
        bits <<= 3;
        let sign = 64 - va_bits;
        Some(VirtAddr((((bits << sign) as i64) >> sign) as u64))
    }

    /// A walk as the hardware of the flattening paper does it, driven only by what it reads
    /// (§3.5): the root's size (the size bit beside CR3) sets the first step's width; each
    /// later step indexes the current node with 9 bits, or 18 if the entry that led there
    /// has the flattened-size bit; the walk ends at a leaf, or when the VA bits left equal
    /// the size of the node the entry points to (a pointer met where a page of that size
    /// could be is taken as that page). This is what makes recursive (self-referencing)
    /// mappings work: it does not use the simulator's own knowledge of node levels, only
    /// entries and their physical addresses. Functional and slow (it looks nodes up by
    /// address); for checking recursive mappings, not for simulation.
    pub fn hw_walk(&self, root: NodeId, va: VirtAddr, va_bits: u32) -> Option<HwWalk> {
        let n = &self.nodes[root as usize];
        self.walk_phys(n.frame.addr().0, 9 * n.span as u32, va, va_bits)
    }

    /// [`Self::hw_walk`] from a conventional (4 KB) root at a physical address, as hardware
    /// without flattening support would walk (CR3 pointing at the glue table).
    pub fn hw_walk_from(&self, root: PhysAddr, va: VirtAddr, va_bits: u32) -> Option<HwWalk> {
        self.walk_phys(root.0, 9, va, va_bits)
    }

    fn walk_phys(&self, mut base: u64, mut width: u32, va: VirtAddr, va_bits: u32) -> Option<HwWalk> {
        let mut left = va_bits;
        let mut steps = 0;
        loop {
            left = left.checked_sub(width)?;
            let idx = (va.0 >> left) & ((1 << width) - 1);
            let e = self.read_phys(base + idx * 8)?;
            steps += 1;
            if e & PTE_P == 0 {
                return None;
            }
            let next = e & PTE_PFN_MASK;
            let offset = va.0 & ((1u64 << left) - 1);
            let next_width = if e & PTE_FLAT != 0 { 18 } else { 9 };
            // A leaf (a real page, or the last level); or a pointer to a node of 2^w
            // entries (2^(w+3) bytes) when the VA bits left address exactly that much: the
            // node is the "page".
            if e & PTE_PS != 0 || left == 12 || left == next_width + 3 {
                return Some(HwWalk { addr: PhysAddr(next + offset), offset_bits: left, steps });
            }
            base = next;
            width = next_width;
        }
    }

    /// The 8-byte word at a physical address inside some page-table node (`None` if no node
    /// holds that address).
    fn read_phys(&self, pa: u64) -> Option<u64> {
        for (id, n) in self.nodes.iter().enumerate() {
            let start = n.frame.addr().0;
            if pa >= start && pa < start + n.entry_count() as u64 * 8 {
                return Some(self.entry(id as NodeId, ((pa - start) / 8) as usize));
            }
        }
        None
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
        let _ = pt.map(&mut phys, root, 4, va, Frame(0x1234), PageSize::Size4K, PTE_RW | PTE_US).unwrap();
        let m = pt.translate(root, 4, VirtAddr(va.0 + 0x10)).unwrap();
        assert_eq!((m.frame, m.size), (Frame(0x1234), PageSize::Size4K));
        assert_eq!(m.entry & (PTE_P | PTE_RW | PTE_PS), PTE_P | PTE_RW);
        assert_eq!([pt.nodes_at(4), pt.nodes_at(3), pt.nodes_at(2), pt.nodes_at(1)], [1, 1, 1, 1]);

        let va2 = VirtAddr(0x7f00_0020_0000);
        let _ = pt.map(&mut phys, root, 4, va2, Frame(0x4000), PageSize::Size2M, PTE_RW).unwrap();
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
        let _ = pt.map(&mut phys, root, 4, va, Frame(77), PageSize::Size4K, 0).unwrap();
        let mut node = root;
        for level in (2..=4).rev() {
            let idx = va.index(level);
            let e = pt.entry(node, idx);
            let child = pt.node(node).children.get(idx);
            assert_eq!((e & PTE_PFN_MASK) >> 12, pt.node(child).frame.0, "level {level} entry PFN is the child's frame");
            node = child;
        }
    }

    /// `leaf_entry_near` against the whole walk: wherever it answers, the walk from the root
    /// reads the same entries above the leaf and ends at the entry it gave, however the
    /// tables changed since (maps, unmaps, freed leaf tables, promotions, demotions), on
    /// every layout; and it answers for most walks nothing has changed under.
    #[test]
    fn a_walk_found_near_the_last_is_the_walk_from_the_root() {
        let layouts = [Layout::Radix4, Layout::Radix5, Layout::Fpt { nf: 0 }, Layout::Fpt { nf: 1 }, Layout::FptL4L3, Layout::FptL3L2];
        for layout in layouts {
            let (mut phys, mut pt, root) = table(layout, &[]);
            let mut rng = crate::rng::Rng::new(7);
            // Eight 2 MB regions in two 1 GB ones.
            let region = |r: u64| ((r % 4) << 21) | ((r / 4) << 30);
            let mut walks: Vec<(u64, Vec<PhysAddr>, NodeId, u64)> = Vec::new();
            let mut answered = 0;
            for step in 0..4000 {
                let r = rng.below(8);
                let page = region(r) + (rng.below(512) << 12);
                match rng.below(10) {
                    0..=4 => drop(pt.map(&mut phys, root, 4, VirtAddr(page), Frame(page >> 12), PageSize::Size4K, PTE_RW)),
                    5 => drop(pt.unmap(root, 4, VirtAddr(page), PageSize::Size4K)),
                    6 => drop(pt.free_empty_leaf_node(&mut phys, root, 4, VirtAddr(region(r)))),
                    7 => drop(pt.collapse_2m(&mut phys, root, 4, VirtAddr(region(r)), Frame(0x10_0000 + r * 512), PTE_RW)),
                    8 => drop(pt.split_2m(&mut phys, root, 4, VirtAddr(region(r)))),
                    _ => drop(pt.map(&mut phys, root, 4, VirtAddr(region(r)), Frame(0x20_0000 + r * 512), PageSize::Size2M, PTE_RW)),
                }
                let shape = pt.shape();
                for (near, path, node, at) in &walks {
                    let va = near + (rng.below(4096) << 9);
                    let Some(entry) = pt.leaf_entry_near(*node, VirtAddr(*near), VirtAddr(va), *at) else { continue };
                    let mut now = Vec::new();
                    pt.path(root, VirtAddr(va), &mut now);
                    assert_eq!(now.last(), Some(&entry), "{layout:?} step {step}: the leaf entry of {va:#x}");
                    assert_eq!(now[..now.len() - 1], path[..path.len() - 1], "{layout:?} step {step}: the entries above it");
                    answered += 1;
                }
                // Remember a new walk now and then; keep a few.
                if step % 7 == 0 {
                    let near = region(rng.below(8)) + (rng.below(512) << 12);
                    let mut path = Vec::new();
                    pt.path(root, VirtAddr(near), &mut path);
                    let node = pt.path_with(root, VirtAddr(near), |_| {});
                    walks.push((near, path, node, shape));
                    if walks.len() > 6 {
                        walks.remove(0);
                    }
                }
            }
            assert!(answered > 200, "{layout:?}: only {answered} walks answered near the last");
        }
    }

    /// A 4-level table of `layout` mapping the given 4 KB pages (frame = page number + 1000).
    fn table(layout: Layout, pages: &[u64]) -> (PhysMem, PageTables, NodeId) {
        let mut phys = PhysMem::new(1 << 32);
        let mut pt = PageTables::new();
        let root = pt.alloc_root(&mut phys, layout).unwrap();
        for &va in pages {
            let _ = pt.map(&mut phys, root, 4, VirtAddr(va), Frame((va >> 12) + 1000), PageSize::Size4K, PTE_RW).unwrap();
        }
        (phys, pt, root)
    }

    fn va(l4: u64, l3: u64, l2: u64, l1: u64, off: u64) -> VirtAddr {
        VirtAddr((l4 << 39) | (l3 << 30) | (l2 << 21) | (l1 << 12) | off)
    }

    /// Spec 004 §2.5, case A (L4, L3+L2, L1): with L4[R] pointing back at L4, one recursion
    /// ([R][a][b,c] + offset) lands in the L1 node of (a, b, c); two ([R][R][a] + 21 bits)
    /// treat the pointer to the flattened L3+L2 node as a 2 MB page.
    #[test]
    fn recursive_mapping_with_a_flattened_middle() {
        let (a, b, c, d) = (3, 5, 7, 9);
        let page = va(a, b, c, d, 0);
        let (_, mut pt, root) = table(Layout::FptL3L2, &[page.0]);
        let r = 510;
        let root_frame = pt.node(root).frame;
        pt.write_entry(root, r, (root_frame.0 << 12) | PTE_P | PTE_RW);
        // The ordinary walk still works (3 reads: L4, L3+L2, L1).
        let w = pt.hw_walk(root, VirtAddr(page.0 + 0x123), 48).unwrap();
        assert_eq!((w.addr, w.steps), (PhysAddr(((page.0 >> 12) + 1000) * 4096 + 0x123), 3));
        // One recursion: the PTE of `page` inside its L1 node.
        let l32 = pt.node(root).children.get(a as usize);
        let l1 = pt.node(l32).children.get((b << 9 | c) as usize);
        let w = pt.hw_walk(root, va(r as u64, a, b, c, d * 8), 48).unwrap();
        assert_eq!(w.addr, pt.node(l1).entry_addr(d as usize));
        assert_eq!((w.offset_bits, w.steps), (12, 3));
        assert_eq!((pt.read_phys(w.addr.0).unwrap() & PTE_PFN_MASK) >> 12, (page.0 >> 12) + 1000);
        // Two recursions: 27 bits in three 9-bit steps, then 21 bits into the L3+L2 node.
        let off = (b << 9 | c) * 8;
        let w = pt.hw_walk(root, VirtAddr(((r as u64) << 39) | ((r as u64) << 30) | (a << 21) | off), 48).unwrap();
        assert_eq!((w.offset_bits, w.steps), (21, 3));
        assert_eq!(w.addr, pt.node(l32).entry_addr((b << 9 | c) as usize));
    }

    /// Spec 004 §2.5, case B (flattened root L4+L3, L2, L1) with the glue sub-table L4*:
    /// sub-table G of the 2 MB root becomes a conventional L4 whose entry i points at
    /// sub-table i (and L4*[G] at itself). Root entry (x, y) is at [G][G][G][x] + 8y; the L1
    /// node of (a, b, c) at [G][a][b][c]; and L4* is an ordinary 4-level view of the table.
    #[test]
    fn glue_table_for_a_flattened_root() {
        let (a, b, c, d) = (2, 4, 6, 8);
        let page = va(a, b, c, d, 0);
        let other = va(7, 1, 2, 3, 0);
        let (_, mut pt, root) = table(Layout::FptL4L3, &[page.0, other.0]);
        assert_eq!(pt.node(root).span, 2);
        let g = 511u64;
        let root_frame = pt.node(root).frame.0;
        // Build L4* in sub-table G: entry i -> sub-table i (4 KB size bit).
        for i in 0..512u64 {
            pt.write_entry(root, (g * 512 + i) as usize, ((root_frame + i) << 12) | PTE_P | PTE_RW);
        }
        // Root entry (x, y): the L3-level entry of L4 index x, L3 index y.
        let (x, y) = (a, b);
        let w = pt.hw_walk(root, VirtAddr((g << 39) | (g << 30) | (g << 21) | (x << 12) | (y * 8)), 48).unwrap();
        assert_eq!(w.addr, pt.node(root).entry_addr((x << 9 | y) as usize));
        assert_eq!(w.steps, 3, "the first read counts as two recursions");
        // The L1 node of (a, b, c): one recursion.
        let l2 = pt.node(root).children.get((a << 9 | b) as usize);
        let l1 = pt.node(l2).children.get(c as usize);
        let w = pt.hw_walk(root, VirtAddr((g << 39) | (a << 30) | (b << 21) | (c << 12) | (d * 8)), 48).unwrap();
        assert_eq!(w.addr, pt.node(l1).entry_addr(d as usize));
        // Legacy view: walking from L4* (a 4 KB root) translates like the flattened root.
        let l4star = PhysAddr((root_frame + g) << 12);
        for v in [page, other, VirtAddr(page.0 + 0xabc)] {
            let flat = pt.hw_walk(root, v, 48).unwrap();
            let legacy = pt.hw_walk_from(l4star, v, 48).unwrap();
            assert_eq!(flat.addr, legacy.addr);
            assert_eq!(legacy.steps, 4);
            assert_eq!(flat.steps, 3);
        }
    }

    /// Every layout that can recurse: the address [`PageTables::recursive_va`] gives for
    /// each level's entry on a page's path is where the hardware walk of §3.5 lands, and
    /// the ordinary walks are unchanged by the slot.
    #[test]
    fn recursive_addresses_reach_every_entry_on_every_layout() {
        let slot = 300;
        let pages = [va(1, 2, 3, 4, 0), va(1, 2, 3, 5, 0), va(7, 300, 9, 0, 0), va(100, 1, 511, 511, 0)];
        for layout in [Layout::Radix4, Layout::Radix5, Layout::Fpt { nf: 32 }, Layout::FptL4L3, Layout::FptL3L2, Layout::Fpt5] {
            let va_bits = if layout.top() == 5 { 57 } else { 48 };
            let (_, mut pt, root) = table(layout, &pages.map(|p| p.0));
            pt.install_recursive(root, slot).unwrap();
            assert!(pt.install_recursive(root, slot).is_err(), "{layout:?}: the slot is taken now");
            let mut reached = 0;
            for &p in &pages {
                let data = pt.hw_walk(root, VirtAddr(p.0 + 0x123), va_bits).unwrap();
                assert_eq!(data.addr, PhysAddr(((p.0 >> 12) + 1000) * 4096 + 0x123), "{layout:?}");
                for level in 1..=layout.top() {
                    let Some(rva) = pt.recursive_va(root, slot, p, level, va_bits) else {
                        // Only a level merged into a flattened node has no entry of its own.
                        let (node, _) = pt.descend(root, p, level).unwrap();
                        assert_ne!(pt.node(node).low(), level, "{layout:?} level {level}");
                        continue;
                    };
                    let (node, _) = pt.descend(root, p, level).unwrap();
                    let w = pt.hw_walk(root, rva, va_bits).unwrap();
                    assert_eq!(w.addr, pt.node(node).entry_addr(pt.node(node).index(p)), "{layout:?} level {level}");
                    assert!(rva.0 >> (va_bits - 1) == (1u64 << (65 - va_bits)) - 1, "{layout:?}: sign-extended kernel-half address");
                    reached += 1;
                }
            }
            assert!(reached >= pages.len() * 2, "{layout:?}");
            assert_eq!(pt.translate(root, 4, VirtAddr(pages[0].0)).unwrap().frame, Frame((pages[0].0 >> 12) + 1000));
        }
    }

    /// Late flattening (§6.2): an L2+L1 node that fell back to 4 KB levels (no free 2 MB
    /// block) is merged once a block is free and it holds 3 entries: walks go from 3 reads
    /// to 2, every translation (a 2 MB page too) is unchanged, and the old nodes are freed.
    #[test]
    fn late_flattening_merges_a_fallen_back_node_once_a_block_is_free() {
        let mut phys = PhysMem::new(1 << 30);
        let mut pt = PageTables::new();
        pt.set_late_flatten(3);
        let root = pt.alloc_root(&mut phys, Layout::Fpt { nf: 32 }).unwrap();
        let mut held = Vec::new();
        while let Some(f) = phys.alloc(crate::os::phys::ORDER_2M) {
            held.push(f);
        }
        let mut pages = Vec::new();
        while let Some(f) = phys.alloc_page() {
            pages.push(f);
        }
        // Give one block back split: 4 KB frames are left, no 2 MB block.
        phys.free(held.pop().unwrap(), crate::os::phys::ORDER_2M);
        pages.push(phys.alloc_page().unwrap());
        assert_eq!(phys.free_2m_blocks(), 0);
        let (p1, p2, huge, p3) = (va(0, 1, 0, 7, 0), va(0, 1, 1, 0, 0), va(0, 1, 5, 0, 0), va(0, 1, 2, 3, 0));
        for p in [p1, p2] {
            let e = pt.map(&mut phys, root, 4, p, Frame((p.0 >> 12) + 1000), PageSize::Size4K, PTE_RW).unwrap();
            assert_eq!(e, MapEffect::default());
        }
        let l2 = pt.node(root).children.get(1);
        assert!(pt.node(l2).fell_back && pt.node(l2).span == 1, "no 2 MB block: 4 KB L2 and L1 nodes");
        assert_eq!(pt.hw_walk(root, p1, 48).unwrap().steps, 3);
        // A 2 MB page as a leaf of the fallen-back L2 node: 3 entries now, but no child added.
        let e = pt.map(&mut phys, root, 4, huge, Frame(0x40000), PageSize::Size2M, PTE_RW).unwrap();
        assert_eq!(e, MapEffect::default());
        assert_eq!(pt.late_flattened, 0);
        for f in held {
            phys.free(f, crate::os::phys::ORDER_2M);
        }
        for f in pages {
            phys.free_page(f);
        }
        let e = pt.map(&mut phys, root, 4, p3, Frame((p3.0 >> 12) + 1000), PageSize::Size4K, PTE_RW).unwrap();
        assert_eq!(e.restructured, Some((1 << 30, 2 << 30)), "the 1 GB region's cached paging-structure entries are stale");
        assert_eq!(pt.late_flattened, 1);
        let flat = pt.node(root).children.get(1);
        assert_eq!((pt.node(flat).span, pt.node(flat).huge_groups), (2, 1));
        assert_ne!(pt.entry(root, 1) & PTE_FLAT, 0);
        assert_eq!((pt.total_nodes(), pt.flat_nodes()), (2, 2), "the L2 and its three L1 nodes were freed");
        for p in [p1, p2, p3] {
            let w = pt.hw_walk(root, VirtAddr(p.0 + 0x45), 48).unwrap();
            assert_eq!((w.addr, w.steps), (PhysAddr(((p.0 >> 12) + 1000) * 4096 + 0x45), 2));
        }
        let m = pt.translate(root, 4, VirtAddr(huge.0 + 0x12_3456)).unwrap();
        assert_eq!((m.frame, m.size), (Frame(0x40000), PageSize::Size2M));
        assert_eq!(pt.hw_walk(root, VirtAddr(huge.0 + 0x12_3456), 48).unwrap().steps, 2);
    }

    /// Late flattening in the paper's prototype layout (L4, L3+L2, L1): the fallen-back L3
    /// node's L2 children are copied into the new L3+L2 node and their L1 nodes re-parented.
    #[test]
    fn late_flattening_of_the_prototypes_l3l2_node() {
        let mut phys = PhysMem::new(1 << 30);
        let mut pt = PageTables::new();
        pt.set_late_flatten(2);
        let root = pt.alloc_root(&mut phys, Layout::FptL3L2).unwrap();
        let mut held = Vec::new();
        while let Some(f) = phys.alloc(crate::os::phys::ORDER_2M) {
            held.push(f);
        }
        let pages = [va(5, 1, 2, 3, 0), va(5, 2, 0, 0, 0), va(5, 9, 9, 9, 0)];
        let _ = pt.map(&mut phys, root, 4, pages[0], Frame(1000), PageSize::Size4K, PTE_RW).unwrap();
        assert_eq!(pt.hw_walk(root, pages[0], 48).unwrap().steps, 4, "fallen back: four 4 KB levels");
        for f in held {
            phys.free(f, crate::os::phys::ORDER_2M);
        }
        for (k, &p) in pages.iter().enumerate().skip(1) {
            let _ = pt.map(&mut phys, root, 4, p, Frame(1000 + k as u64), PageSize::Size4K, PTE_RW).unwrap();
        }
        assert_eq!(pt.late_flattened, 1);
        for (k, &p) in pages.iter().enumerate() {
            let w = pt.hw_walk(root, VirtAddr(p.0 + 8), 48).unwrap();
            assert_eq!((w.addr, w.steps), (PhysAddr((1000 + k as u64) * 4096 + 8), 3), "L4, L3+L2, L1");
            assert_eq!(pt.translate(root, 4, p).unwrap().frame, Frame(1000 + k as u64));
        }
        assert_eq!((pt.nodes_at(3), pt.nodes_at(2), pt.nodes_at(1), pt.flat_nodes()), (1, 0, 3, 1));
    }

    /// §3.2's three-level merge: one 1 GB L4+L3+L2 root indexed by 27 bits; a 2 MB page is
    /// one read, a 4 KB page two; no 1 GB leaf fits, and its storage is touched only where used.
    #[test]
    fn a_1gb_root_merges_three_levels() {
        let mut phys = PhysMem::new(4 << 30);
        let mut pt = PageTables::new();
        let root = pt.alloc_root(&mut phys, Layout::Fpt1G).unwrap();
        assert_eq!((pt.node(root).span, pt.node(root).low(), pt.bytes_at(4)), (3, 2, 1 << 30));
        let (small, huge) = (va(3, 4, 5, 6, 0), va(9, 8, 7, 0, 0));
        let _ = pt.map(&mut phys, root, 4, small, Frame(0x1234), PageSize::Size4K, PTE_RW).unwrap();
        let _ = pt.map(&mut phys, root, 4, huge, Frame(0x40000), PageSize::Size2M, PTE_RW).unwrap();
        assert_eq!(pt.hw_walk(root, small, 48).unwrap().steps, 2);
        assert_eq!(pt.hw_walk(root, VirtAddr(huge.0 + 0x1000), 48).unwrap(), HwWalk { addr: PhysAddr((0x40000 << 12) + 0x1000), offset_bits: 21, steps: 1 });
        let err = pt.map(&mut phys, root, 4, va(20, 0, 0, 0, 0), Frame(0x80000), PageSize::Size1G, PTE_RW).unwrap_err();
        assert!(matches!(err, PtError::NoLeafLevel { level: 3, .. }), "{err}");
        assert!(pt.install_recursive(root, 300).is_err());
        assert_eq!(pt.total_nodes(), 2);
    }
}
