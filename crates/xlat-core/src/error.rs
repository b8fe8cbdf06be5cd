//! Why a simulation could not complete.
use crate::os::pt::PtError;
use crate::workload::SourceError;
use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum SimError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error("{0} (raise phys.size_gb)")]
    PageTable(#[from] PtError),
    #[error("simulated physical memory ({gb} GB) is exhausted mapping virtual address {va:#x}; raise phys.size_gb")]
    OutOfMemory { gb: u64, va: u64 },
    #[error("virtual address {va:#x} is outside the {bits}-bit user address space of pt.format={format}")]
    BadAddress { va: u64, bits: u32, format: &'static str },
    #[error("the workload has {streams} streams but the machine has {cores} cores (system.cores)")]
    TooManyStreams { streams: usize, cores: u64 },
    #[error("OS call with unknown operation {code} at {va:#x} (known: 1 unmap, 2 protect, 3 unprotect, 4 migrate, 5 read-ptes, 6 sleep)")]
    BadOsCall { code: u8, va: u64 },
    #[error("bad mix: {why}")]
    BadMix { why: String },
    #[error("bad sampling: {0}")]
    BadSample(String),
    #[error("no miss-ratio curve for '{name}': {why}")]
    BadCurve { name: String, why: String },
    #[error("the workload has no streams")]
    NoStreams,
    #[error("--prefault needs a workload that declares its memory regions")]
    NothingToPrefault,
    #[error("{what} needs a workload that declares its memory regions (traces do not)")]
    NeedsRegions { what: &'static str },
    #[error("address space {space} does not exist (the machine has {spaces})")]
    NoSuchSpace { space: usize, spaces: usize },
    #[error("core {core} does not exist (the machine runs {cores})")]
    NoSuchCore { core: usize, cores: usize },
    #[error("VM {vm}'s guest-physical memory ({gb} GB) is exhausted (guest-virtual address {va:#x}); raise virt.guest_mem_gb")]
    GuestOutOfMemory { vm: usize, gb: u64, va: u64 },
    #[error("host memory ({gb} GB) is exhausted backing guest-physical address {gpa:#x} of VM {vm}; raise phys.size_gb or lower virt.vms")]
    HostOutOfMemory { vm: usize, gb: u64, gpa: u64 },
    #[error("core {core} used a stale translation of {va:#x}: frame {used:#x}, where the page tables now give {}", now.map_or("no mapping".to_string(), |f| format!("frame {f:#x}")))]
    StaleTranslation { core: usize, va: u64, used: u64, now: Option<u64> },
    #[error("interrupted")]
    Interrupted,
    #[error("os.promotion=oracle ranks regions by a first run's walks: run it through xlat run, xlat.simulate or a sweep, which make both runs")]
    OracleNeedsProfile,
    #[error("the warm-up ({warmup} references) is not shorter than the workload, which ended after {done}: nothing was measured (lower the warm-up or enlarge the workload)")]
    WarmupTooLong { warmup: u64, done: u64 },
    #[error("the workload ended after {done} of the {skip} references to skip: nothing was simulated (skip fewer)")]
    SkipTooLong { skip: u64, done: u64 },
    #[error("the warm-up ({instructions} instructions) is not shorter than the workload, which ended after {done} references: nothing was measured (lower the warm-up or enlarge the workload)")]
    WarmupInstructionsTooLong { instructions: u64, done: u64 },
    #[error("nothing to simulate: the workload or trace has no references")]
    NoReferences,
}
