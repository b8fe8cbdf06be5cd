//! Host prefetching: the run loop is bound by host memory latency on TLB-thrashing
//! workloads (every simulated walk reads page-table storage at random), so it looks a few
//! references ahead in the stream, finds their page-table entries functionally and asks the
//! host CPU to load them (and, when the memory side is on this thread, the simulated cache
//! sets they will touch). Purely a host-speed measure: it changes no simulated state.

use crate::arch::addr::{PageSize, VirtAddr};
use crate::arch::pte::{PTE_P, PTE_PFN_MASK};
use crate::memory::port::MemPort;
use crate::os::pt::{NodeId, NO_NODE};
use crate::os::Kernel;
use crate::workload::Ref;

pub const PREFETCH_DISTANCE: usize = 32;
/// Ring of leaf nodes found by the first prefetch stage; larger than `2 * D`.
const PREFETCH_RING: usize = 128;

/// State of [`prefetch_ahead`]: the leaf node found for each reference in flight,
/// and the last 2 MB region looked up with its leaf.
pub struct PrefetchRing {
    leaves: [NodeId; PREFETCH_RING],
    pub region: u64,
    leaf: NodeId,
    /// Virtualized: the host leaf node that maps each reference's data page.
    host_leaves: [NodeId; PREFETCH_RING],
    /// Virtualized: the last host space and 2 MB guest-physical region whose host leaf
    /// node was looked up for a guest PTE (guest page tables sit in few regions).
    pte_region: (usize, u64),
    pte_leaf: NodeId,
}

impl PrefetchRing {
    pub fn new() -> PrefetchRing {
        PrefetchRing {
            leaves: [NO_NODE; PREFETCH_RING],
            region: u64::MAX,
            leaf: NO_NODE,
            host_leaves: [NO_NODE; PREFETCH_RING],
            pte_region: (usize::MAX, u64::MAX),
            pte_leaf: NO_NODE,
        }
    }

    /// Slot `i`: the leaf node of `va` in `pt` (a tree at `root`; a hint, see
    /// [`crate::os::pt::PageTables::leaf_hint`]), prefetching its bookkeeping. References close
    /// together share a leaf node, so the tree is descended only for a new 2 MB region (a
    /// stale answer after a remap only costs a useless host prefetch).
    #[inline]
    fn find_leaf(&mut self, i: usize, va: u64, pt: &crate::os::pt::PageTables, root: NodeId) {
        let region = va >> 21;
        if region != self.region {
            self.region = region;
            self.leaf = pt.leaf_hint(root, VirtAddr(va));
            if self.leaf != NO_NODE {
                pt.prefetch_node(self.leaf);
            }
        }
        self.leaves[i % PREFETCH_RING] = self.leaf;
    }
}

/// Software pipeline over the batch, so host memory latency overlaps: `2 * D`
/// references ahead, find the leaf page-table node functionally and prefetch its
/// bookkeeping; `D` ahead, prefetch the PTE and the simulated L2/LLC sets its line maps
/// to; `D / 2` ahead, read the (now cached) PTE and prefetch the sets of the data line.
/// Purely a host-speed measure: it changes no simulated state. Each core runs its own
/// pipeline over its own stream; a stale node id (after a remap, or a context switch to
/// another address space) names in-bounds storage and only costs a useless prefetch.
#[inline]
pub fn prefetch_ahead<P: MemPort>(kernel: &Kernel, port: &P, c: usize, batch: &[Ref], i: usize, ring: &mut PrefetchRing) {
    const D: usize = PREFETCH_DISTANCE;
    let core = &kernel.contexts[c];
    let sp = &kernel.os.spaces[core.space];
    let pt = &kernel.os.pt;
    if let Some(r) = batch.get(i + 2 * D) {
        ring.find_leaf(i + 2 * D, r.va, pt, sp.root);
    }
    if i < D {
        return; // the stages below need the first stage to have run for their slot
    }
    if let Some(r) = batch.get(i + D) {
        let leaf = ring.leaves[(i + D) % PREFETCH_RING];
        if leaf != NO_NODE && pt.node(leaf).low() == 1 {
            let idx = pt.node(leaf).index(VirtAddr(r.va));
            pt.prefetch_entry(leaf, idx);
            if P::LOCAL {
                port.prefetch(c, pt.node(leaf).entry_addr(idx).line());
            }
        }
    }
    if !P::LOCAL {
        return; // the stages below prefetch the memory side's structures
    }
    if let Some(r) = batch.get(i + D / 2) {
        let leaf = ring.leaves[(i + D / 2) % PREFETCH_RING];
        if leaf != NO_NODE && pt.node(leaf).low() == 1 {
            let va = VirtAddr(r.va);
            let e = pt.entry(leaf, pt.node(leaf).index(va));
            if e & PTE_P != 0 {
                port.prefetch(c, ((e & PTE_PFN_MASK) + va.offset(PageSize::Size4K)) >> 6);
            }
        }
    }
}

/// [`prefetch_ahead`] for a VM: `2D` ahead, find the guest leaf node; `D`
/// ahead, prefetch the guest PTE and, through the host table (functionally), the
/// simulated L2/LLC sets of its host-physical line; `D / 2` ahead, read the guest PTE
/// and find the host leaf node of the data page, prefetching its entry and the sets of
/// that entry's line; `D / 4` ahead, read that host entry and prefetch the data line's
/// sets. Translating for a pipelined run, it leaves the caches' sets alone, and finds the
/// host leaf as a hint at `D / 2` and prefetches its entry at `D / 4` (reads would stall
/// the thread that is the bottleneck in a VM). Changes no simulated state.
#[inline]
pub fn prefetch_ahead_2d<P: MemPort>(kernel: &Kernel, port: &P, c: usize, batch: &[Ref], i: usize, ring: &mut PrefetchRing) {
    const D: usize = PREFETCH_DISTANCE;
    let core = &kernel.contexts[c];
    let vm = &kernel.vms[core.vm];
    let (gsp, gpt) = (&vm.os.spaces[core.space], &vm.os.pt);
    let (hsp, hpt) = (&kernel.os.spaces[vm.space], &kernel.os.pt);
    // (Translating for a pipelined run, the caches are the other thread's business.)
    let sets = |line: u64| {
        if P::LOCAL {
            port.prefetch(c, line);
        }
    };
    // With several VMs the core switches guests: slots filled for another guest hold
    // ids of its tables, so every id is checked against this guest's before use (and
    // slots hold hints: a leaf is checked to be one).
    let valid = |leaf: NodeId| leaf != NO_NODE && gpt.has_node(leaf) && gpt.node(leaf).low() == 1;
    if let Some(r) = batch.get(i + 2 * D) {
        if !gpt.has_node(ring.leaf) {
            ring.region = u64::MAX;
        }
        ring.find_leaf(i + 2 * D, r.va, gpt, gsp.root);
    }
    if i < D {
        return;
    }
    if let Some(r) = batch.get(i + D) {
        let leaf = ring.leaves[(i + D) % PREFETCH_RING];
        if valid(leaf) {
            let idx = gpt.node(leaf).index(VirtAddr(r.va));
            gpt.prefetch_entry(leaf, idx);
            let gpa = VirtAddr(gpt.node(leaf).entry_addr(idx).0);
            let region = (vm.space, gpa.0 >> 21);
            if region != ring.pte_region {
                ring.pte_region = region;
                ring.pte_leaf = hpt.leaf_node(hsp.root, hsp.top, gpa).unwrap_or(NO_NODE);
            }
            if ring.pte_leaf != NO_NODE && hpt.has_node(ring.pte_leaf) {
                let idx = hpt.node(ring.pte_leaf).index(gpa);
                if !P::LOCAL {
                    hpt.prefetch_entry(ring.pte_leaf, idx);
                } else {
                    let h = hpt.entry(ring.pte_leaf, idx);
                    if h & PTE_P != 0 {
                        sets(((h & PTE_PFN_MASK) + gpa.offset(PageSize::Size4K)) >> 6);
                    }
                }
            } else if P::LOCAL {
                if let Some(m) = hpt.translate(hsp.root, hsp.top, gpa) {
                    sets((m.frame.addr().0 + gpa.offset(m.size)) >> 6);
                }
            }
        }
    }
    if let Some(r) = batch.get(i + D / 2) {
        let slot = (i + D / 2) % PREFETCH_RING;
        let leaf = ring.leaves[slot];
        ring.host_leaves[slot] = NO_NODE;
        if valid(leaf) {
            let va = VirtAddr(r.va);
            let e = gpt.entry(leaf, gpt.node(leaf).index(va));
            if e & PTE_P != 0 {
                let gpa = VirtAddr((e & PTE_PFN_MASK) + va.offset(PageSize::Size4K));
                if !P::LOCAL {
                    // Only the host leaf's bookkeeping now; its entry at the next stage.
                    let hleaf = hpt.leaf_hint(hsp.root, gpa);
                    if hleaf != NO_NODE {
                        hpt.prefetch_node(hleaf);
                        ring.host_leaves[slot] = hleaf;
                    }
                } else if let Some(hleaf) = hpt.leaf_node(hsp.root, hsp.top, gpa) {
                    let idx = hpt.node(hleaf).index(gpa);
                    hpt.prefetch_entry(hleaf, idx);
                    sets(hpt.node(hleaf).entry_addr(idx).line());
                    ring.host_leaves[slot] = hleaf;
                }
            }
        }
    }
    if let Some(r) = batch.get(i + D / 4) {
        let (leaf, hleaf) = (ring.leaves[(i + D / 4) % PREFETCH_RING], ring.host_leaves[(i + D / 4) % PREFETCH_RING]);
        if valid(leaf) && hleaf != NO_NODE && hpt.has_node(hleaf) && hpt.node(hleaf).low() == 1 {
            let va = VirtAddr(r.va);
            let e = gpt.entry(leaf, gpt.node(leaf).index(va));
            let gpa = VirtAddr((e & PTE_PFN_MASK) + va.offset(PageSize::Size4K));
            let idx = hpt.node(hleaf).index(gpa);
            if !P::LOCAL {
                hpt.prefetch_entry(hleaf, idx);
            } else {
                let h = hpt.entry(hleaf, idx);
                if h & PTE_P != 0 {
                    sets(((h & PTE_PFN_MASK) + gpa.offset(PageSize::Size4K)) >> 6);
                }
            }
        }
    }
}
