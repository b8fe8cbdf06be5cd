//! What runs beside a program because the machine's config says so: PT-Baker's helper thread
//! (`ptbaker.*`, [`crate::helper`]) and memory pressure (`pressure`), the co-runners of the
//! PT-Baker thesis's stress-ng runs.
//!
//! Each stressor is a program of its own (its own address space) on a core of its own, after
//! the program's cores (and its helper's), sharing the LLC with it:
//!
//! - `cache1`: one cache stressor, read-modify-writes of random 8-byte words over a table the
//!   LLC's size (stress-ng's `cache` stressor thrashes the cache with reads and writes over a
//!   buffer sized to the LLC);
//! - `stream2`, `stream3`: two or three STREAM-triad stressors (`a[j] = b[j] + s * c[j]`) over
//!   arrays of 4 x the LLC each (stress-ng's `stream` stressor sizes its arrays from the LLC
//!   so that they do not fit).
//!
//! Stressors run for as long as the program does: once every stream of the program (its
//! helper included) has ended, they stop and end too.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use xlat_core::config::{Config, Pressure, PtBakerMode, PtBakerPlacement, PtBakerRegions};
use xlat_core::{Program, Ref, RefSource, Region, SourceError};

use crate::helper::{HelperMode, HelperSource};
use crate::WorkloadError;

/// `src` (one program) with what the machine's config runs beside it: PT-Baker's helper and
/// stressors. Returns `src` itself when the config asks for neither.
pub fn beside(src: Box<dyn RefSource>, cfg: &Config, seed: u64, stop: Arc<AtomicBool>) -> Result<Box<dyn RefSource>, WorkloadError> {
    if cfg.ptbaker.mode == PtBakerMode::Off && cfg.workload.pressure == Pressure::None {
        return Ok(src);
    }
    let bad = |why: String| WorkloadError::BadSpec { spec: "the machine's config".into(), why };
    if src.programs().len() != 1 {
        return Err(bad("ptbaker.* and pressure run beside one program, not a mix (add the helper or the stressors to the mix)".into()));
    }
    let per_core = cfg.system.threads_per_core.max(1) as usize;
    let contexts = cfg.system.cores as usize * per_core;
    let mut src = src;
    if cfg.ptbaker.mode != PtBakerMode::Off {
        let n = src.streams();
        let at = match cfg.ptbaker.placement {
            // The first context of the next core.
            PtBakerPlacement::Core => n.div_ceil(per_core) * per_core,
            PtBakerPlacement::Smt if n % per_core == 0 => {
                return Err(bad(format!(
                    "ptbaker.placement=smt: the program's {n} thread(s) fill their cores' {per_core} contexts, leaving no sibling for the helper"
                )))
            }
            PtBakerPlacement::Smt => n,
        };
        if at >= contexts {
            return Err(bad(format!(
                "the helper needs context {at} but the machine has {contexts} (system.cores={}, system.threads_per_core={per_core})",
                cfg.system.cores
            )));
        }
        let mode = match cfg.ptbaker.mode {
            PtBakerMode::Kernel => HelperMode::Pte,
            PtBakerMode::UserPrefetch => HelperMode::Prefetch,
            _ => HelperMode::Touch,
        };
        // (Both within u32: LIMITS.)
        let mut h = HelperSource::new(src, cfg.ptbaker.stride_pages, cfg.ptbaker.nops as u32, cfg.ptbaker.sleep_cycles as u32, mode)
            .with_ahead(cfg.ptbaker.ahead)
            .at(at);
        if cfg.ptbaker.regions == PtBakerRegions::Largest {
            h = h.largest_region();
        }
        src = Box::new(h);
    }
    let llc = cfg.cache_llc.size_kb << 10;
    let specs: Vec<String> = match cfg.workload.pressure {
        Pressure::None => Vec::new(),
        // (Work without end: the stressors stop when the program does.)
        Pressure::Cache1 => vec![format!("gups:footprint={llc},updates=1T,materialize=no")],
        Pressure::Stream2 | Pressure::Stream3 => {
            let k = if cfg.workload.pressure == Pressure::Stream2 { 2 } else { 3 };
            vec![format!("stream:n={},iters=1T", 4 * llc / 8); k]
        }
    };
    if specs.is_empty() {
        return Ok(src);
    }
    let first = src.streams().div_ceil(per_core);
    if first + specs.len() > cfg.system.cores as usize {
        return Err(bad(format!(
            "pressure={} needs {} more core(s) after the program's {first}, but system.cores={}",
            cfg.workload.pressure,
            specs.len(),
            cfg.system.cores
        )));
    }
    let mut runners = Vec::with_capacity(specs.len());
    for (i, spec) in specs.into_iter().enumerate() {
        let flag = Arc::new(AtomicBool::new(stop.load(Ordering::Relaxed)));
        let (_, s) = crate::open_until(&spec, seed.wrapping_add(1000 + i as u64), flag.clone())?;
        runners.push(Runner { name: format!("pressure:{spec}"), src: s, stop: flag, at: (first + i) * per_core });
    }
    Ok(Box::new(Beside::new(src, runners, stop)))
}

struct Runner {
    name: String,
    src: Box<dyn RefSource>,
    /// Stops the stressor's kernel (set once the program has ended, or the run is stopped).
    stop: Arc<AtomicBool>,
    at: usize,
}

/// A program and stressors beside it, each on its own stream.
struct Beside {
    main: Box<dyn RefSource>,
    /// Per stream of `main`: whether it belongs to the program and has not ended yet.
    live: Vec<bool>,
    runners: Vec<Runner>,
    /// The run's own stop flag (a stressor's kernel also stops with it).
    stop: Arc<AtomicBool>,
}

impl Beside {
    fn new(main: Box<dyn RefSource>, runners: Vec<Runner>, stop: Arc<AtomicBool>) -> Beside {
        let mut live = vec![false; main.streams()];
        for p in main.programs() {
            for s in p.streams {
                live[s] = true;
            }
        }
        Beside { main, live, runners, stop }
    }

    fn program_ended(&self) -> bool {
        !self.live.iter().any(|&l| l)
    }
}

impl RefSource for Beside {
    fn streams(&self) -> usize {
        self.runners.iter().map(|r| r.at + 1).max().unwrap_or(0).max(self.main.streams())
    }

    fn regions(&self) -> Vec<Region> {
        self.main.regions()
    }

    fn programs(&self) -> Vec<Program> {
        let mut p = self.main.programs();
        p.extend(self.runners.iter().map(|r| Program { name: r.name.clone(), regions: r.src.regions(), streams: vec![r.at], slot: 0 }));
        p
    }

    fn paced(&self) -> bool {
        self.main.paced()
    }

    fn counted(&self, stream: usize) -> bool {
        // (The run measures the program's work, not the stressors'.)
        stream < self.live.len() && self.main.counted(stream)
    }

    fn helper(&self) -> Option<xlat_core::Helper> {
        self.main.helper()
    }

    fn observe(&mut self, stream: usize, va: u64) {
        if stream < self.live.len() {
            self.main.observe(stream, va);
        }
    }

    fn next_batch(&mut self, stream: usize, out: &mut Vec<Ref>) -> Result<(), SourceError> {
        if stream < self.live.len() {
            self.main.next_batch(stream, out)?;
            if out.is_empty() && std::mem::take(&mut self.live[stream]) && self.program_ended() {
                for r in &self.runners {
                    r.stop.store(true, Ordering::Relaxed);
                }
            }
            return Ok(());
        }
        out.clear();
        let ended = self.program_ended();
        if let Some(r) = self.runners.iter_mut().find(|r| r.at == stream) {
            if self.stop.load(Ordering::Relaxed) {
                r.stop.store(true, Ordering::Relaxed);
            }
            if !ended {
                r.src.next_batch(0, out)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xlat_core::VecSource;

    const PAGE: u64 = 4096;

    fn program(n: usize) -> Box<dyn RefSource> {
        let regions = vec![
            Region { name: "small".into(), start: 0x10_0000, len: 4 * PAGE, file: None },
            Region { name: "big".into(), start: 0x100_0000, len: 64 * PAGE, file: None },
        ];
        Box::new(VecSource::new(vec![(0..n).map(|i| Ref::load(0x10_0000 + i as u64 * 8, 1)).collect()], regions))
    }

    fn cfg(keys: &[(&str, &str)]) -> Config {
        let mut c = Config::default();
        for (k, v) in keys {
            c.set(k, v).unwrap();
        }
        c
    }

    fn drain(src: &mut dyn RefSource, stream: usize) -> Vec<Ref> {
        let mut all = Vec::new();
        let mut out = Vec::with_capacity(64);
        for _ in 0..4 {
            src.next_batch(stream, &mut out).unwrap();
            all.extend_from_slice(&out);
        }
        all
    }

    #[test]
    fn nothing_beside_leaves_the_source_alone() {
        let s = beside(program(3), &cfg(&[]), 1, Arc::default()).unwrap();
        assert_eq!(s.streams(), 1);
    }

    #[test]
    fn the_helper_sweeps_the_largest_region_from_the_next_core_or_the_sibling() {
        let two_way = [("system.cores", "4"), ("system.threads_per_core", "2"), ("ptbaker.mode", "user")];
        let mut s = beside(program(3), &cfg(&two_way), 1, Arc::default()).unwrap();
        assert_eq!(s.programs()[0].streams, vec![0, 2], "the first context of core 1");
        let touches = drain(s.as_mut(), 2);
        assert!(touches.iter().all(|r| (0x100_0000..0x104_0000).contains(&r.va)), "only the big region");
        assert_eq!(touches[1].va - touches[0].va, 8 * PAGE, "every 8th page");
        let smt = beside(program(3), &cfg(&[two_way[0], two_way[1], two_way[2], ("ptbaker.placement", "smt")]), 1, Arc::default()).unwrap();
        assert_eq!(smt.programs()[0].streams, vec![0, 1], "the sibling of context 0");
    }

    #[test]
    fn a_helper_that_does_not_fit_is_refused_in_one_line() {
        let e = beside(program(3), &cfg(&[("system.cores", "1"), ("ptbaker.mode", "kernel")]), 1, Arc::default()).err().unwrap().to_string();
        assert!(e.contains("needs context 1") && !e.contains('\n'), "{e}");
        let e = beside(
            program(3),
            &cfg(&[("system.cores", "2"), ("system.threads_per_core", "2"), ("ptbaker.mode", "user"), ("ptbaker.placement", "smt")]),
            1,
            Arc::default(),
        );
        assert!(e.is_ok(), "context 1 is free");
    }

    #[test]
    fn stressors_run_on_their_own_cores_until_the_program_ends() {
        let keys = [("system.cores", "4"), ("cache.llc.size_kb", "64"), ("pressure", "stream2"), ("ptbaker.mode", "kernel")];
        let mut s = beside(program(3), &cfg(&keys), 1, Arc::default()).unwrap();
        assert_eq!(s.streams(), 4);
        assert_eq!((0..4).map(|i| s.counted(i)).collect::<Vec<_>>(), [true, false, false, false], "only the program's own work is measured");
        let p = s.programs();
        assert_eq!(p.iter().map(|p| p.streams.clone()).collect::<Vec<_>>(), [vec![0, 1], vec![2], vec![3]]);
        assert!(p[1].name.starts_with("pressure:stream:n=32768"), "arrays of 4 x 64 KB: {}", p[1].name);
        let mut out = Vec::with_capacity(64);
        s.next_batch(2, &mut out).unwrap();
        assert!(!out.is_empty(), "the stressor runs while the program does");
        // The program's stream and its helper end: so do the stressors.
        while {
            s.next_batch(0, &mut out).unwrap();
            !out.is_empty()
        } {}
        s.next_batch(1, &mut out).unwrap();
        s.next_batch(1, &mut out).unwrap();
        assert!(out.is_empty(), "the helper ended with the program");
        s.next_batch(2, &mut out).unwrap();
        assert!(out.is_empty());
        s.next_batch(3, &mut out).unwrap();
        assert!(out.is_empty());
        let e = beside(program(3), &cfg(&[("system.cores", "2"), ("pressure", "stream3")]), 1, Arc::default()).err().unwrap().to_string();
        assert!(e.contains("needs 3 more core(s)"), "{e}");
    }
}
