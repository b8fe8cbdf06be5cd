//! The simulated operating systems: physical memory and its fragmentation, real page tables,
//! the kernel's memory management (faults, page sizes, khugepaged, promotion, shootdown
//! queues), processes on cores and timed OS work, and virtual machines with their guest
//! kernels, side by side with the translator ([`Kernel`], `system.rs`): the translator asks
//! it to handle faults, and it reaches the hardware through [`Hardware`].

pub mod ech;
pub mod events;
pub mod frag;
pub mod kernel;
pub mod pagecache;
pub mod phys;
pub mod pt;
pub mod sched;
pub mod shootdown;
pub mod system;
pub mod virt;

pub use kernel::{Os, OsOp};
pub use system::{Hardware, Kernel};

/// What the OS side is built from: its components' parameters, and the page-size policy and
/// reservation rule that the machine resolves from keys of several components (see
/// the configuration's `page_policy`).
#[derive(Clone, Debug)]
pub struct KernelParams {
    pub system: crate::arch::ctx::SystemParams,
    pub os: kernel::OsParams,
    pub sched: sched::SchedParams,
    pub shootdown: shootdown::ShootdownParams,
    pub phys: phys::PhysParams,
    pub pt: pt::PtParams,
    pub ech: ech::EchParams,
    pub virt: virt::VirtParams,
    /// The fault-time page-size policy in force.
    pub page_policy: crate::param::PagePolicy,
    /// Whether a full FreeBSD reservation is promoted to a 2 MB page.
    pub reservation_promote: bool,
    /// TLB and page-walk-cache entries carry the hardware thread (`tlb.thread_tagged`).
    pub thread_tagged: bool,
    /// TCAT's hypervisor flushes the home line after its rewrite (`tcat.flush`).
    pub tcat_flush: bool,
}
