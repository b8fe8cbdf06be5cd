//! xlat-core: the engine. Pure simulation: no files, no threads, no Python.
//!
//! See `shared/design/ARCHITECTURE.md` §2-§5 for the shape: a reference goes through the
//! TLBs, the page-walk caches and a walker that reads real page-table entries (built by the
//! simulated OS in simulated physical memory) through the same caches as data.

pub mod config;
pub mod workload;

pub use config::{Config, ConfigError};
pub use workload::{Ref, RefKind, RefSource, Region, SourceError, VecSource};

/// Version of the engine, reported in every result.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Cache line size in bytes; fixed, as in every machine the seeds evaluate.
pub const LINE_BYTES: u64 = 64;
