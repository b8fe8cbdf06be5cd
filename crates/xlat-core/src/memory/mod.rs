//! The memory side: caches, DRAM, the per-core timing windows, and the port through which
//! the translation side drives them.

pub mod cache;
pub mod dram;
pub mod hierarchy;
pub mod port;
pub mod prefetcher;
pub mod repl;

pub use hierarchy::{Direct, MemorySide, Served};
pub use port::{MemPort, Table};
