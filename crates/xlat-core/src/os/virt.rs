//! The hypervisor: virtual machines, each with a guest OS, and the host OS that backs their
//! guest-physical memory with extended page tables (EPT).
//!
//! - A VM's guest OS is an ordinary [`Os`] whose "physical" memory is the VM's
//!   guest-physical memory (`virt.guest_mem_gb`): its buddy allocator hands out guest frames,
//!   and its page tables (gVA -> gPA, format `pt.format`) live in those frames, so reading a
//!   guest entry means translating the entry's gPA first.
//! - The host is an [`Os`] too, over the machine's memory (`phys.size_gb`), with one
//!   address space per VM whose "virtual" addresses are the VM's guest-physical addresses:
//!   that space's page table is the VM's EPT (gPA -> hPA, format `virt.host_pt.format`). An
//!   EPT violation (a guest frame the host has not backed yet) is a demand fault of the host
//!   OS, which maps 4 KB or 2 MB host pages as `virt.host_page_policy` says (`thp`: Linux
//!   THP on the host, khugepaged included).
//! - Contexts: a VM's VPID is its index + 1; its guest processes' contexts are
//!   `VPID << 12 | PCID` (TLB and guest page-walk-cache entries), its host-side structures
//!   (nested TLB, vPWC) use `VPID << 12`. Natively the VPID is 0.
//! - Scheduling (see `sched`): every core time-slices its stream among the VMs, all cores
//!   starting with VM 0 (a VM's vCPUs run together, as in the CSALT thesis's two VMs switched
//!   every 10 ms); within a VM among its guest processes.
//!
//! The 2D walk itself is the walker's (`Walker::walk_2d` in `translate::walker`): the guest
//! table is walked with the same routine as a native one, each entry's gPA translated
//! through the nested TLB, the host vPWC and a walk of the host table before it is read.

use crate::arch::ctx::{Ctx, VPID_SHIFT};
use crate::config::Config;
use crate::error::SimError;
use crate::os::frag::Fragmentation;
use crate::os::Os;
use crate::param::{HostPagePolicy, PagePolicy};
use crate::workload::Region;

/// One virtual machine.
pub struct Vm {
    /// The guest OS: its physical memory is this VM's guest-physical memory.
    pub os: Os,
    /// This VM's address space in the host OS (its EPT).
    pub space: usize,
    /// `VPID << 12`: the context of the VM's nested-TLB and host vPWC entries.
    pub ctx: Ctx,
}

/// The configuration the guest OS of every VM runs with: the machine's OS keys over
/// `virt.guest_mem_gb` of guest-physical memory.
pub fn guest_config(cfg: &Config) -> Config {
    let mut g = cfg.clone();
    g.phys_size_gb = cfg.virt_guest_mem_gb;
    g.phys_available_gb = cfg.phys_available_gb.min(cfg.virt_guest_mem_gb as f64);
    g
}

/// The configuration of the host OS: its page-size policy is `virt.host_page_policy`, its
/// table format `virt.host_pt.format`; its memory (`phys.size_gb`) starts unfragmented (the
/// fragmentation scenario describes the guest's memory, which the application sees).
pub fn host_config(cfg: &Config) -> Config {
    let mut h = cfg.clone();
    h.pt_format = cfg.virt_host_pt_format;
    h.os_page_policy = match cfg.virt_host_page_policy {
        HostPagePolicy::Never => PagePolicy::Never,
        HostPagePolicy::Ideal => PagePolicy::Ideal,
        HostPagePolicy::Thp => PagePolicy::Thp,
    };
    // (os.promotion and os.reservations describe the guest's OS.)
    h.os_promotion = crate::param::Promotion::None;
    h.os_reservations = crate::param::Reservations::None;
    h.os_huge_1g = false;
    h.phys_fragmentation = Fragmentation::None;
    h.phys_available_gb = 0.0;
    h.os_madvise_regions = String::new();
    h
}

/// Build the host and one VM per entry of `vm_regions`, each with `os.processes` guest
/// processes whose regions are that entry.
pub fn boot(cfg: &Config, vm_regions: &[&[Region]], seed: u64) -> Result<(Os, Vec<Vm>), SimError> {
    let mut host = Os::new(&host_config(cfg));
    host.prepare(&[], 0, seed)?;
    let gcfg = guest_config(cfg);
    let guest_bytes = cfg.virt_guest_mem_gb << 30;
    let processes = cfg.os_processes as usize;
    let mut vms = Vec::with_capacity(vm_regions.len());
    for (v, &regions) in vm_regions.iter().enumerate() {
        let vpid = (v as Ctx + 1) << VPID_SHIFT;
        let mut os = Os::new(&gcfg);
        // VM 0's guest memory is fragmented from the run's seed, as a native run's would be.
        os.prepare(&[regions], processes, seed ^ (v as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))?;
        for p in 0..processes {
            let s = os.create_space(regions.to_vec())?;
            os.spaces[s].ctx = vpid | (p as Ctx + 1);
        }
        let space = host.create_space(vec![Region { name: "guest-memory".into(), start: 0, len: guest_bytes, file: None }])?;
        host.spaces[space].ctx = vpid;
        vms.push(Vm { os, space, ctx: vpid });
    }
    Ok((host, vms))
}

/// Errors of a guest OS, told as the VM's (its memory is `virt.guest_mem_gb`, not
/// `phys.size_gb`).
pub(crate) fn guest_error(vm: usize, gb: u64, e: SimError) -> SimError {
    match e {
        SimError::OutOfMemory { va, .. } => SimError::GuestOutOfMemory { vm, gb, va },
        SimError::PageTable(crate::os::pt::PtError::OutOfMemory { .. }) => SimError::GuestOutOfMemory { vm, gb, va: 0 },
        e => e,
    }
}

/// Errors of the host OS while backing a VM's memory.
pub(crate) fn host_error(vm: usize, gb: u64, gpa: u64, e: SimError) -> SimError {
    match e {
        SimError::OutOfMemory { .. } | SimError::PageTable(crate::os::pt::PtError::OutOfMemory { .. }) => SimError::HostOutOfMemory { vm, gb, gpa },
        e => e,
    }
}
