//! The machine's OS side, beside the translator: the native OS (virtualized, the host), the
//! VMs with their guest OSes, the scheduler and what each hardware context runs. Faults come
//! to it from the translator; its timed work comes from the run loop. It reaches the
//! hardware only through [`Hardware`] (TLBs, page-walk caches and mechanisms' structures to
//! invalidate, the home-line hooks of TCAT's shootdowns, the mechanisms' periodic tasks) and
//! the memory port (cycles to charge, lines to read), so it imports nothing of translation.

use crate::arch::addr::VirtAddr;
use crate::arch::ctx::{Ctx, HwContext, Invalidate, OsRequest};
use crate::os::sched::Sched;
use crate::os::virt::Vm;
use crate::os::Os;

/// What the OS needs of the hardware that caches its translations (the translator implements
/// it): invalidations by core, the mechanisms' home-line hooks for TCAT's shootdowns, their
/// periodic tasks, and the two counters OS work adds to a core's.
pub trait Hardware {
    /// Cores (each with its TLBs and page-walk caches).
    fn cores(&self) -> usize;
    /// Invalidate what `what` names on core `core`: its TLBs and page-walk caches and every
    /// mechanism's structures. Returns how many entries went.
    fn invalidate(&mut self, core: usize, what: Invalidate) -> usize;
    /// Core `core` flushes `what` because its tags are about to be reused (a CR3 write
    /// without PCIDs, a VM switch without VPIDs).
    fn flush_local(&mut self, core: usize, what: Invalidate) -> usize;
    /// Invalidate host-side translations of VMs (nested TLB and vPWC) on core `core`.
    fn invalidate_nested(&mut self, core: usize, what: Invalidate) -> usize;
    /// Core `core`'s page-walk caches and mechanisms' structures drop `what` (not its TLBs:
    /// TCAT's rewrite of their home lines reached those).
    fn invalidate_walk_caches(&mut self, core: usize, what: Invalidate);
    /// The home lines a TCAT shootdown of `ranges` rewrites, from the mechanism that keeps
    /// their directory; false if none does (the baseline protocol runs).
    fn shootdown_lines(&self, ranges: &[(u64, u64)], pages: u64, ctx: Ctx, out: &mut Vec<(u64, VirtAddr)>) -> bool;
    /// A shootdown by the baseline protocol is about to run.
    fn on_baseline_shootdown(&mut self);
    /// Context `holder` is about to rewrite (and flush, if `flush`) home line `line`.
    fn on_line_rewrite(&mut self, line: u64, va: VirtAddr, ctx: Ctx, holder: usize, flush: bool);
    /// The directory forwards a rewrite of `line` to its TLB sharers, which drop what it
    /// names; returns the cores it reached (a bit each).
    fn invalidate_line(&mut self, line: u64, va: VirtAddr, ctx: Ctx) -> u64;
    /// Mechanism `m`'s periodic task runs: what it asks of the OS.
    fn tick(&mut self, m: usize) -> Vec<OsRequest>;
    /// Core `core` switched VMs (counted as the core's).
    fn vm_switched(&mut self, core: usize);
    /// Core `core` took an EPT violation that cost `cycles` (counted as the core's).
    fn ept_violation(&mut self, core: usize, cycles: u64);

    /// [`Hardware::invalidate`] on every core.
    fn shootdown(&mut self, what: Invalidate) -> usize {
        (0..self.cores()).map(|c| self.invalidate(c, what)).sum()
    }

    /// [`Hardware::invalidate_nested`] on every core.
    fn shootdown_nested(&mut self, what: Invalidate) -> usize {
        (0..self.cores()).map(|c| self.invalidate_nested(c, what)).sum()
    }
}

/// The OS side of a machine.
pub struct Kernel {
    pub(crate) cfg: crate::os::KernelParams,
    /// The OS natively; virtualized, the host OS (the hypervisor), whose address spaces
    /// are the VMs' guest-physical memories (their page tables are the EPTs).
    pub os: Os,
    /// Virtualized: the VMs, each with its guest OS. Empty natively.
    pub vms: Vec<Vm>,
    /// Processes on cores and the OS's next background event.
    pub sched: Sched,
    /// The hardware contexts, one per stream of the workload: what each runs (which the
    /// scheduler switches) and on which core's MMU.
    pub contexts: Vec<HwContext>,
    /// Virtualized (2D walks).
    pub(crate) virt: bool,
    /// Scratch for a kernel software walk's entries (`OsOp::ReadPtes`).
    pub(crate) pte_scratch: Vec<u64>,
    /// Per hardware context, its last kernel software walk: the kernel's walker keeps the
    /// upper levels' entries while it goes through one leaf table (PT-Baker's Algorithm 3),
    /// so a walk of a higher address reads only the entries that differ from the last one's.
    pub(crate) pte_walked: Vec<SoftWalk>,
}

/// A kernel software walk ([`crate::os::OsOp::ReadPtes`]): the address, the entries it read,
/// root first, and where it ended, so that the next walk in the same leaf table need not
/// follow the tree on the host (the simulated walker does not either: it is in that table).
pub(crate) struct SoftWalk {
    pub va: u64,
    pub entries: Vec<u64>,
    pub space: usize,
    pub vm: usize,
    /// The node of the last entry, and the page tables' shape then.
    pub node: crate::os::pt::NodeId,
    pub shape: u64,
}

impl Default for SoftWalk {
    /// No walk yet: no node, so the next walk starts at the root.
    fn default() -> SoftWalk {
        SoftWalk { va: 0, entries: Vec::new(), space: 0, vm: 0, node: crate::os::pt::NO_NODE, shape: 0 }
    }
}

impl Kernel {
    pub fn new(cfg: &crate::os::KernelParams, os: Os, vms: Vec<Vm>, sched: Sched, contexts: Vec<HwContext>) -> Kernel {
        Kernel { cfg: cfg.clone(), os, vms, sched, contexts, virt: cfg.virt.enabled, pte_scratch: Vec::new(), pte_walked: Vec::new() }
    }

    /// Whether context `c`'s address space maps `va` (in a VM: the guest maps it, and the
    /// host the guest-physical page), so that a walk for it would not fault.
    pub fn mapped(&self, c: usize, va: VirtAddr) -> bool {
        let HwContext { space, vm, .. } = self.contexts[c];
        if !self.virt {
            return self.os.translate(space, va).is_some();
        }
        let Some((gframe, gsize)) = self.vms[vm].os.translate(space, va) else {
            return false;
        };
        self.os.translate(self.vms[vm].space, VirtAddr(gframe.addr().0 + va.offset(gsize))).is_some()
    }
}
