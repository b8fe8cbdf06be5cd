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
use crate::error::SimError;
use crate::os::frag::Fragmentation;
use crate::os::KernelParams;
use crate::os::Os;
use crate::param::{HostPagePolicy, PagePolicy};
use crate::workload::Region;

use crate::param::{bound, component, Limit};

component! {
    /// Virtual machines (`virt.*`): the guests, the host's table, VM switches.
    VirtParams {
        enabled: bool = false; "enabled"; None; "run the workload in virtual machines: a guest OS builds gVA->gPA tables in each VM's guest-physical memory, the host builds gPA->hPA (EPT) tables, and every TLB miss is a 2D walk";
        vms: u64 = 1; "vms"; Some(Limit::Int(256)); "VMs, each running a copy of the workload in its own guest OS (os.processes processes each); every core time-slices its stream among them";
        guest_mem_gb: u64 = 32; "guest_mem_gb"; Some(Limit::Int(4096)); "guest-physical memory of each VM in GB (the guest OS's phys.size_gb; host memory backs only what the guest touches)";
        host_page_policy: crate::param::HostPagePolicy = crate::param::HostPagePolicy::Never; "host_page_policy"; None; "page sizes of the host (EPT) table: never (4 KB), ideal (2 MB wherever a free block exists), thp (Linux THP enabled=always on the host, with khugepaged)";
        host_pt_format: crate::param::PtFormat = crate::param::PtFormat::Radix4; "host_pt.format"; None; "format of the host (EPT) table; the guest's is pt.format";
        vpid: bool = true; "vpid"; None; "TLB and page-walk-cache entries are tagged by VM (VPID); false: every VM switch flushes the TLBs, PWCs, vPWC and nested TLB of the core";
        switch_interval_cycles: u64 = 20_000_000; "switch_interval_cycles"; Some(Limit::Int(bound::INTERVAL)); "virt.vms > 1: cycles a VM runs on a core before the next one (10 ms at 2 GHz, the CSALT thesis's interval)";
        vcpus_per_core: u64 = 1; "vcpus_per_core"; Some(Limit::Int(64)); "vCPU overcommit: each core time-slices this many vCPUs of the VM (streams c, c + cores, c + 2 x cores, ... of a workload with that many threads), virt.vcpu_slice_cycles each, a switch costing virt.switch_cycles; a vCPU whose stream ends leaves its core to the others (1: one vCPU per core)";
        vcpu_slice_cycles: u64 = 8_000_000; "vcpu_slice_cycles"; Some(Limit::Int(bound::INTERVAL)); "virt.vcpus_per_core > 1: cycles a vCPU runs before the core switches to the next (4 ms at 2 GHz, a host scheduler's slice; an assumption)";
        switch_cycles: u64 = 8000; "switch_cycles"; Some(Limit::Int(bound::COST)); "direct cost of switching a core to another VM (VM exit, host scheduler switch between vCPU threads, VMCS load, VM entry; ~4 us at 2 GHz, an assumption)";
        ept_fault_cycles: u64 = 5000; "ept_fault_cycles"; Some(Limit::Int(bound::COST)); "cycles per EPT violation (a guest-physical page the host has not mapped yet): VM exit, KVM's fault path, VM entry (~2.5 us, an assumption); host page zeroing is charged as for os.page_copy_cycles";
        nested_tlb_data: bool = true; "nested_tlb_data"; None; "the nested TLB also caches the final data gPA->hPA translation, not only those of guest page-table entries (the flattening paper leaves this open)";
    }
    check(p, key) {
        if p.vcpus_per_core == 0 || p.vcpu_slice_cycles == 0 {
            return Err(crate::param::invalid(key("vcpus_per_core"), "virt.vcpus_per_core and virt.vcpu_slice_cycles must be at least 1"));
        }
        if p.vms == 0 || p.vms > 256 {
            return Err(crate::param::invalid(key("vms"), "must be between 1 and 256"));
        }
        if !p.enabled {
            if p.vms > 1 {
                return Err(crate::param::invalid(key("vms"), "more than one VM needs virt.enabled=true"));
            }
            return Ok(());
        }
        if p.guest_mem_gb == 0 || p.guest_mem_gb > 4096 {
            return Err(crate::param::invalid(key("guest_mem_gb"), "must be between 1 and 4096"));
        }
        if p.switch_interval_cycles == 0 {
            return Err(crate::param::invalid(key("switch_interval_cycles"), "must be at least 1"));
        }
        Ok(())
    }
}

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
pub fn guest_config(cfg: &KernelParams) -> KernelParams {
    let mut g = cfg.clone();
    g.phys.size_gb = cfg.virt.guest_mem_gb;
    g.phys.available_gb = cfg.phys.available_gb.min(cfg.virt.guest_mem_gb as f64);
    g
}

/// The configuration of the host OS: its page-size policy is `virt.host_page_policy`, its
/// table format `virt.host_pt.format`; its memory (`phys.size_gb`) starts unfragmented (the
/// fragmentation scenario describes the guest's memory, which the application sees).
pub fn host_config(cfg: &KernelParams) -> KernelParams {
    let mut h = cfg.clone();
    h.pt.format = cfg.virt.host_pt_format;
    h.os.page_policy = match cfg.virt.host_page_policy {
        HostPagePolicy::Never => PagePolicy::Never,
        HostPagePolicy::Ideal => PagePolicy::Ideal,
        HostPagePolicy::Thp => PagePolicy::Thp,
    };
    // (os.promotion and os.reservations describe the guest's OS.)
    h.page_policy = h.os.page_policy;
    h.reservation_promote = h.os.reservation_promote;
    h.os.reservations = crate::param::Reservations::None;
    h.os.huge_1g = false;
    h.phys.fragmentation = Fragmentation::None;
    h.phys.available_gb = 0.0;
    h.os.madvise_regions = String::new();
    h
}

/// Build the host and one VM per entry of `vm_regions`, each with `os.processes` guest
/// processes whose regions are that entry.
pub fn boot(cfg: &KernelParams, vm_regions: &[&[Region]], seed: u64) -> Result<(Os, Vec<Vm>), SimError> {
    let mut host = Os::new(&host_config(cfg));
    host.prepare(&[], 0, seed)?;
    let gcfg = guest_config(cfg);
    let guest_bytes = cfg.virt.guest_mem_gb << 30;
    let processes = cfg.sched.processes as usize;
    let mut vms = Vec::with_capacity(vm_regions.len());
    for (v, &regions) in vm_regions.iter().enumerate() {
        let vpid = (v as Ctx + 1) << VPID_SHIFT;
        let mut os = Os::new(&gcfg);
        os.guest = true;
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
