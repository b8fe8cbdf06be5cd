//! Real-hardware tools for Linux x86-64: the TLB probe (`xlat probe`) and the PT-Baker runtime
//! (`xlat bake`). Everything here runs on the host CPU and measures it; nothing is simulated.
//!
//! - [`mem`]: anonymous mappings with 4 KB pages or transparent huge pages.
//! - [`chase`]: the random-order, one-access-per-page pointer chase and its timing.
//! - [`knee`]: finding the steps of a latency-versus-pages curve (TLB reach, walk plateaus).
//! - [`sys`]: what the machine is: hypervisor, cache and SMT topology, `/proc/self/pagemap`,
//!   performance counters.
//! - [`probe`]: the sweep behind `xlat probe`; [`prefetch_walks`] and [`smt_share`]: its
//!   tests of whether software prefetches walk and whether SMT siblings share TLB entries.
//! - [`bake`]: the PT-Baker helper thread (`start(regions, params)` / `stop()`), and
//!   [`daemon`]: the same from outside an unmodified process (`xlat bake -- PROGRAM`).
//! - [`bench`]: native GUPS, BFS and hash-join kernels timed with and without a baker.
//! - [`ffi`]: the C ABI of the runtime (`include/xlat_bake.h`).

pub mod bake;
pub mod bench;
pub mod chase;
pub mod daemon;
pub mod ffi;
pub mod knee;
pub mod mem;
pub mod prefetch_walks;
pub mod probe;
pub mod rng;
pub mod smt_share;
pub mod sys;

/// Everything that can go wrong; each variant prints as one line.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("{what}: {err}")]
    Os { what: String, err: std::io::Error },
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Permission(String),
    #[error("{0}")]
    Unsupported(String),
}

impl HostError {
    /// The last OS error (`errno`) with what was being done.
    pub fn last_os(what: impl Into<String>) -> HostError {
        HostError::Os { what: what.into(), err: std::io::Error::last_os_error() }
    }
    pub fn io(what: impl Into<String>, err: std::io::Error) -> HostError {
        HostError::Os { what: what.into(), err }
    }
}

pub type Result<T> = std::result::Result<T, HostError>;

/// The base page size this crate measures with (x86-64).
pub const PAGE: usize = 4096;
/// The transparent huge page size on x86-64.
pub const HUGE: usize = 2 << 20;
/// A cache line.
pub const LINE: usize = 64;
