//! The simulated operating systems: physical memory and its fragmentation, real page tables,
//! the kernel's memory management (faults, page sizes, khugepaged, promotion, shootdown
//! queues), processes on cores and timed OS work, and virtual machines with their guest
//! kernels. The hardware reaches it through [`crate::translate::Translator`]: faults, and
//! the shootdowns it queues.

pub mod ech;
pub mod frag;
pub mod kernel;
pub mod pagecache;
pub mod phys;
pub mod pt;
pub mod sched;
pub mod shootdown;
pub mod virt;

pub use kernel::{Os, OsOp};
