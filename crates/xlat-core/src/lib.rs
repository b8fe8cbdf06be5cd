//! xlat-core: the engine. Pure simulation: no files, no Python; a second host thread only
//! to run one core's memory side beside its translation (`host::pipeline`), same results.
//!
//! Folders follow the data path (`docs/architecture.md`): a reference goes through the
//! TLBs, the page-walk caches and a walker that reads real page-table entries (built by the
//! simulated OS in simulated physical memory) through the same caches as data
//! (`translate/`), reaches the caches, DRAM and the timing window through a memory port
//! (`memory/`, `timing/`), and may be observed or steered by mechanisms (`mech/`);
//! `machine.rs` wires them; `host/` holds what makes it fast, none of it part of the model.

pub mod arch;
pub mod assoc;
pub mod config;
pub mod error;
pub mod glossary;
mod host;
pub mod machine;
pub mod mech;
pub mod memory;
pub mod microbench;
pub mod mrc;
pub mod os;
pub mod param;
pub mod rng;
pub mod stats;
pub mod timing;
pub mod translate;
pub mod workload;

pub use config::{Config, ConfigError};
pub use error::SimError;
pub use host::hostmem::huge_vec;
pub use machine::{sample, Machine, RunOptions};
pub use stats::{StatValue, Stats};
pub use workload::{FileMap, Helper, Program, Ref, RefKind, RefSource, Region, SourceError, VecSource};

/// Version of the engine, reported in every result.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Cache line size in bytes; fixed, as in every machine the seeds evaluate.
pub const LINE_BYTES: u64 = 64;

/// Run one simulation: build the machine for `src`, optionally prefault its regions, run,
/// and return the statistics. `progress(refs_done)` returning false interrupts the run.
/// `os.promotion=oracle` needs a first run's profile: use [`simulate_with`].
pub fn simulate(
    cfg: &Config,
    src: &mut dyn RefSource,
    opts: RunOptions,
    prefault: bool,
    seed: u64,
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<Stats, SimError> {
    simulate_with(cfg, src, None, opts, prefault, seed, progress)
}

/// [`simulate`], with the walk profile of a first run of the same workload (made by
/// [`profile_walks`]) for the hindsight oracle (`os.promotion=oracle`), which needs it.
pub fn simulate_with(
    cfg: &Config,
    src: &mut dyn RefSource,
    profile: Option<&mech::oracle::WalkProfile>,
    opts: RunOptions,
    prefault: bool,
    seed: u64,
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<Stats, SimError> {
    if cfg.promotion.kind == config::Promotion::Oracle && profile.is_none() {
        return Err(SimError::OracleNeedsProfile);
    }
    Ok(run_machine(cfg, src, profile, None, opts, prefault, seed, progress)?.stats())
}

/// [`simulate`], profiling `structures` (see [`translate::CURVES`]) for one-pass
/// miss-ratio curves up to `cap` ways ([`mrc`]): the run's statistics and the curves.
#[allow(clippy::too_many_arguments)]
pub fn simulate_curves(
    cfg: &Config,
    src: &mut dyn RefSource,
    structures: &[String],
    cap: usize,
    opts: RunOptions,
    prefault: bool,
    seed: u64,
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<(Stats, Vec<mrc::Curve>), SimError> {
    if cfg.promotion.kind == config::Promotion::Oracle {
        return Err(SimError::OracleNeedsProfile);
    }
    let m = run_machine(cfg, src, None, Some((structures, cap)), opts, prefault, seed, progress)?;
    Ok((m.stats(), m.curves()))
}

/// A sampled run of `src` (see [`sample`]): each measured unit's statistics, and how many
/// references were skipped and simulated.
pub fn simulate_sampled(
    cfg: &Config,
    src: &mut dyn RefSource,
    s: sample::Sample,
    opts: RunOptions,
    prefault: bool,
    seed: u64,
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<sample::Sampled, SimError> {
    s.check()?;
    if cfg.promotion.kind == config::Promotion::Oracle {
        return Err(SimError::OracleNeedsProfile);
    }
    let mut m = Machine::with_programs(cfg, src.streams(), src.programs(), seed)?;
    if prefault {
        m.prefault()?;
    }
    sample::run(&mut m, src, s, opts, progress)
}

/// The first run of the hindsight oracle (`os.promotion=oracle`): `cfg`'s machine without
/// promotion, counting each 2 MB region's 4 KB walks (see [`mech::oracle`]).
pub fn profile_walks(
    cfg: &Config,
    src: &mut dyn RefSource,
    opts: RunOptions,
    prefault: bool,
    seed: u64,
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<mech::oracle::WalkProfile, SimError> {
    // (The oracle without a profile watches and never promotes.)
    let mut watching = cfg.clone();
    watching.promotion.kind = config::Promotion::Oracle;
    let m = run_machine(&watching, src, None, None, opts, prefault, seed, progress)?;
    Ok(m.xl.mechs.hindsight().expect("os.promotion=oracle builds the oracle"))
}

/// Build the machine for `src` (its oracle acting on `profile`, if given), prefault, run.
#[allow(clippy::too_many_arguments)]
fn run_machine(
    cfg: &Config,
    src: &mut dyn RefSource,
    profile: Option<&mech::oracle::WalkProfile>,
    curves: Option<(&[String], usize)>,
    opts: RunOptions,
    prefault: bool,
    seed: u64,
    progress: &mut dyn FnMut(u64) -> bool,
) -> Result<Machine, SimError> {
    let mut m = Machine::with_programs(cfg, src.streams(), src.programs(), seed)?;
    if let Some(p) = profile {
        m.xl.mechs.act_on(p);
    }
    // (Before prefaulting: the stacks see whatever the structures see.)
    if let Some((structures, cap)) = curves {
        m.profile(structures, cap)?;
    }
    if prefault {
        m.prefault()?;
    }
    m.run(src, opts, progress)?;
    Ok(m)
}

/// Hint the host CPU to load the cache line at `p`. The simulator is bound by host memory
/// latency on TLB-thrashing workloads (every simulated walk reads page-table storage at
/// random), so the run loop prefetches a few references ahead; the graph kernels' builder does
/// the same for its random reads.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
