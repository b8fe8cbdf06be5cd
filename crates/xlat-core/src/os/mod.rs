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
