//! The machine: the translation side ([`Translator`]: each core's MMU, the walker, the OS
//! and VMs) wired to the memory side ([`MemorySide`]: each core's window and private caches,
//! the LLC, DRAM) through a memory port, and the run loop. The loop advances the core with
//! the smallest local clock, one reference at a time, so shared structures see a
//! deterministic interleaving. On two host threads, one translates and records through a
//! [`crate::host::pipeline::Recorder`] while the other replays on the memory side.

use crate::arch::ctx::{Ctx, Invalidate};
use crate::config::Config;
use crate::error::SimError;
use crate::host::prefetch::{prefetch_ahead, prefetch_ahead_2d, PrefetchRing};
use crate::memory::hierarchy::core_seed;
use crate::memory::{Direct, MemPort, MemorySide};
use crate::os::sched::Scope;
use crate::os::{Hardware, Kernel};
use crate::param::PtFormat;
use crate::stats::Stats;
use crate::timing::{inflight, Early};
use crate::translate::mmu::TlbShape;
use crate::translate::mmu::{HwContext, Mmu};
use crate::translate::walker::WalkParams;
use crate::translate::Translator;
use crate::workload::{Program, Ref, RefSource};

pub mod glossary;
pub mod sample;
pub(crate) mod stats;

/// How much to run.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunOptions {
    /// Stop after this many references (after warm-up), summed over cores.
    pub max_refs: Option<u64>,
    /// References read and dropped before the warm-up (fast-forward, as a sampled run skips:
    /// the OS calls among them applied and their stores' dirty bits set, nothing else
    /// simulated): to start a run in a later phase of a program (a hash join's probe after
    /// its build) at the workload's own speed. Counted as [`RunOptions::max_refs`] is.
    pub skip: u64,
    /// References simulated before statistics are reset.
    pub warmup: u64,
    /// Or instead: instructions (all streams together, counted from the references'
    /// `inst_delta`) simulated before statistics start; 0: warm-up by `warmup`. The
    /// reference that reaches the count is the warm-up's last. With both set, this one counts.
    pub warmup_instructions: u64,
    /// Host threads: 0 = choose (two when the host has them and the run can be pipelined,
    /// see [`crate::host::pipeline`]), 1 = one. Statistics are the same either way.
    pub threads: usize,
    /// Statistics over time: every this many instructions (all cores together, after
    /// warm-up) the machine's statistics are taken, and [`Stats::series`] holds what changed
    /// in each interval. 0: none. Boundaries are found at the run loop's checks, every
    /// [`crate::os::sched::EVENT_CHECK`] references, so an interval may run a little long;
    /// each one's `instructions` says how long. Such runs stay on one host thread.
    pub interval: u64,
}

/// Where the run loop measures the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Measure {
    /// The end of warm-up: the snapshot every report subtracts.
    WarmupEnd,
    /// The end of an interval ([`RunOptions::interval`]), or its start.
    Interval,
}

/// What the end of warm-up records: the counters of the statistics and the miss-ratio curves
/// then (see [`crate::stats::Snapshot`]).
pub(crate) struct Warm {
    stats: crate::stats::Snapshot,
    curves: Vec<crate::mrc::Curve>,
}

impl Warm {
    pub(crate) fn take(cfg: &Config, xl: &Translator, kernel: &Kernel, mem: &MemorySide) -> Warm {
        // (The counters of the integer phase now.)
        let stats = crate::stats::Snapshot::of(&stats::ints(cfg, xl, kernel, mem), glossary::is_counter);
        Warm { stats, curves: curves_of(xl, mem) }
    }
}

/// The miss-ratio curves of both sides, since the machine was built.
fn curves_of(xl: &Translator, mem: &MemorySide) -> Vec<crate::mrc::Curve> {
    let mut c = xl.curves();
    c.extend(mem.curves());
    c
}

/// How often the progress callback runs, in references.
pub const PROGRESS_EVERY: u64 = 1 << 16;
pub(crate) const BATCH: usize = 4096;

pub struct Machine {
    /// The configuration it was built from.
    pub(crate) cfg: Config,
    pub xl: Translator,
    /// The OS side, beside the translator (see [`Kernel`]).
    pub kernel: Kernel,
    pub mem: MemorySide,
    /// Statistics over time of the last run ([`RunOptions::interval`], 0 if none): the
    /// statistics when measurement began (the end of warm-up) and at the end of each
    /// interval.
    interval: u64,
    marks: Vec<Stats>,
    /// What the end of warm-up recorded, which every report subtracts (`None`: nothing to
    /// subtract, statistics since the machine was built).
    pub(crate) warm: Option<Warm>,
    /// Host time of the last run on two threads (see [`HostTimes`]); `None` after a run on
    /// one thread.
    pub host_times: Option<HostTimes>,
}

/// Where the host's time went in a run on two threads: wall time, and how long each thread
/// was busy (not waiting for the other). The busier half limits the run. Host measurements,
/// not statistics: they vary from run to run and are kept out of [`Stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HostTimes {
    pub wall_s: f64,
    /// The translating thread (TLBs, page-walk caches, walks, recording), less its waits
    /// for a free buffer.
    pub translate_s: f64,
    /// The replaying thread (caches, DRAM, timing), less its waits for records.
    pub memory_s: f64,
}

impl Machine {
    /// Build the machine for a workload with `streams` streams, one program whose regions
    /// are `regions`. The config must have been validated.
    pub fn new(cfg: &Config, streams: usize, regions: Vec<crate::Region>, seed: u64) -> Result<Machine, SimError> {
        let program = Program { name: String::new(), regions, streams: (0..streams).collect(), slot: 0 };
        Machine::with_programs(cfg, streams, vec![program], seed)
    }

    /// Build the machine for `streams` streams running `programs`, each in its own address
    /// space (see [`crate::os::sched::boot`]). The config must have been validated.
    pub fn with_programs(cfg: &Config, streams: usize, programs: Vec<Program>, seed: u64) -> Result<Machine, SimError> {
        if streams == 0 || programs.is_empty() {
            return Err(SimError::NoStreams);
        }
        // vCPU overcommit: the streams are vCPUs, `vcpus_per_core` of them time-sliced on each
        // hardware context (see `run_loop`); the machine has one context per core.
        let vcpus = cfg.virt.vcpus_per_core.max(1) as usize;
        // Programs that share cores (`Program::slot`): each core time-slices them, each in a VM
        // of its own, as vCPU overcommit time-slices vCPUs (see `run_loop`): `places` streams
        // per core, stream `s` on core `s % (streams / places)`.
        let places = programs.iter().map(|p| p.slot + 1).max().unwrap_or(1);
        if places > 1 {
            let width = streams / places;
            if width == 0 || streams % places != 0 {
                return Err(SimError::BadMix { why: format!("{streams} streams cannot be {places} programs per core") });
            }
            // (For the messages: the first program placed on another's core, that core, and
            // the program first there.)
            let b = programs.iter().position(|p| p.slot > 0).unwrap_or(0);
            let core = programs[b].streams.first().map_or(0, |&s| s % width);
            let a = programs.iter().position(|q| q.slot == 0 && q.streams.iter().any(|&s| s % width == core)).unwrap_or(0);
            if !cfg.virt.enabled {
                return Err(SimError::BadMix {
                    why: format!("programs {a} and {b} both run on core {core}: programs share a core only in VMs of their own (virt.enabled=true), which the core time-slices"),
                });
            }
            if vcpus > 1 || cfg.system.threads_per_core > 1 || cfg.sched.processes > 1 {
                return Err(SimError::BadMix {
                    why: format!(
                        "programs {a} and {b} share core {core}: VMs time-sliced on a core run one vCPU per core and one process (not virt.vcpus_per_core, system.threads_per_core or os.processes > 1)"
                    ),
                });
            }
            if width as u64 > cfg.system.cores {
                return Err(SimError::BadMix {
                    why: format!("the programs run on {width} cores, but the machine has {} cores (system.cores)", cfg.system.cores),
                });
            }
        }
        let (streams, programs) = if vcpus > 1 {
            if programs.len() > 1 {
                return Err(SimError::BadMix { why: "vCPU overcommit (virt.vcpus_per_core) runs one program".into() });
            }
            let n = streams.div_ceil(vcpus);
            (n, vec![Program { streams: (0..n).collect(), ..programs.into_iter().next().expect("one program") }])
        } else {
            (streams, programs)
        };
        let per = cfg.system.threads_per_core.max(1) as usize;
        let contexts = cfg.system.cores * per as u64;
        // The hardware contexts the streams run on (fewer than the streams where programs
        // share cores: stream `s` on context `s % hw`).
        let hw = streams / places;
        for (p, prog) in programs.iter().enumerate() {
            if let Some(c) = prog
                .streams
                .iter()
                .map(|&s| if places > 1 { s % hw } else { s })
                .find(|&c| c as u64 >= contexts)
                .filter(|_| programs.len() > 1 || streams != prog.streams.len())
            {
                let has = if per == 1 {
                    format!("{} cores (system.cores)", cfg.system.cores)
                } else {
                    format!("{contexts} hardware contexts (system.cores x system.threads_per_core)")
                };
                return Err(SimError::BadMix { why: format!("program {p} runs on core {c}, but the machine has {has}") });
            }
        }
        if hw as u64 > contexts {
            return Err(SimError::TooManyStreams { streams: hw, cores: contexts });
        }
        if programs.len() > 1 && cfg.promotion.kind == crate::param::Promotion::HawkEye {
            return Err(SimError::BadMix { why: "os.promotion=hawkeye models one address space; a mix has one per program".into() });
        }
        // (What footprint-relative limits, such as os.promotion_cap, count: every program's.)
        let footprint_regions: Vec<crate::Region> = programs.iter().flat_map(|p| p.regions.iter().cloned()).collect();
        let kp = cfg.kernel();
        let (os, vms, sched) = crate::os::sched::boot(&kp, streams, &programs, seed)?;
        let mmus = (0..hw.div_ceil(per)).map(|i| Mmu::new(&cfg.mmu(), core_seed(seed, i as u64))).collect();
        // Stream `i` runs on hardware context `i`, on core `i / threads_per_core` (where
        // programs share cores, context `i` starts with stream `i`, its first program's).
        let contexts = (0..hw)
            .map(|i| {
                let (space, vm) = (sched.running(i), sched.running_vm(i));
                let ctx = match vms.get(vm) {
                    Some(v) => v.os.spaces[space].ctx,
                    None => os.spaces[space].ctx,
                };
                // (Thread-tagged TLBs: see `Kernel::tagged`.)
                let thread = if cfg.tlb.thread_tagged && per > 1 { ((i % per) as Ctx) << crate::arch::ctx::THREAD_SHIFT } else { 0 };
                HwContext { core: i / per, space, vm, ctx: ctx | thread }
            })
            .collect();
        let levels = |f: PtFormat| f.top();
        let walk = WalkParams {
            pwc_latency: cfg.walker.pwc_latency,
            nested_latency: cfg.tlb_nested.latency,
            top: levels(cfg.pt.format),
            host_top: levels(cfg.virt.host_pt_format),
            ntlb: cfg.virt.enabled && cfg.tlb_nested.entries > 0,
            nested_tlb_data: cfg.virt.nested_tlb_data,
            coalesce: crate::translate::coalesce::group_sizes(&["l1d", "l1i", "l2", "l2i"].map(|n| cfg.coalescing(n))),
            asap: if cfg.asap.enabled { cfg.asap.levels as u8 } else { 0 },
            ech: cfg.ech.enabled,
            champsim: crate::translate::walker::ChampSimWalks {
                reread: cfg.champsim.pscl_reread,
                private_lines: cfg.champsim.private_pte_lines,
                first_touch: cfg.champsim.first_touch_cycles,
                no_dirty: cfg.champsim.no_dirty_bits,
            },
        };
        // Every program's processes; one program runs in each of `virt.vms` VMs.
        let copies = cfg.sched.processes * if cfg.virt.enabled && programs.len() == 1 { cfg.virt.vms } else { 1 };
        let mut mechs = cfg.mechanisms(hw, &footprint_regions, copies);
        // `pcc.bias`: the contexts of the named programs' address spaces, favoured by the
        // mechanisms that rank processes (the PCC's daemon; `pcc.bias` requires it).
        let favoured = cfg.pcc_bias_programs().unwrap_or_default();
        if !favoured.is_empty() {
            let mut ctxs = Vec::new();
            for n in favoured {
                let Some(&c) = programs.get(n).and_then(|prog| prog.streams.first()) else {
                    return Err(SimError::BadMix { why: format!("pcc.bias names program {n}, but the run has {} program(s)", programs.len()) });
                };
                let vm = sched.running_vm(c);
                for &space in sched.spaces_of(c) {
                    ctxs.push(vms.get(vm).map_or_else(|| os.spaces[space].ctx, |v| v.os.spaces[space].ctx));
                }
            }
            mechs.favour(&ctxs);
        }
        let mut sched = sched;
        for (i, clock, period, first) in mechs.tasks() {
            sched.add(crate::os::sched::Work::Mech(i), clock, period, first);
        }
        let checker = crate::translate::check::Checker::new(&cfg.check);
        let xl = Translator {
            perfect: cfg.tlb.perfect,
            prefetch_walks: cfg.tlb.prefetch_walks,
            tlb_shape: TlbShape { l2i: cfg.tlb_l2i.entries > 0, coalescing: cfg.coalescing_any() },
            lookahead: if cfg.core.inflight { cfg.core.lookahead as usize } else { 0 },
            rob: cfg.core.rob,
            mmus,
            mechs,
            checker,
            walk,
            virt: cfg.virt.enabled,
            helper: None,
            helper_touches: 0,
        };
        let kernel = Kernel::new(&kp, os, vms, sched, contexts);
        Ok(Machine {
            cfg: cfg.clone(),
            xl,
            kernel,
            mem: MemorySide::new(&cfg.memory(), hw, seed),
            interval: 0,
            marks: Vec::new(),
            warm: None,
            host_times: None,
        })
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Map every page of the workload's regions now.
    pub fn prefault(&mut self) -> Result<(), SimError> {
        let kernel = &mut self.kernel;
        if kernel.virt {
            // Every guest maps its processes' regions, then the host backs every
            // guest-physical page they use (page-table nodes and data), in ascending gPA
            // order, as if the guest had touched them.
            if kernel.vms.iter().all(|v| v.os.spaces.iter().all(|sp| sp.regions.is_empty())) {
                return Err(SimError::NothingToPrefault);
            }
            let (ggb, hgb) = (kernel.cfg.virt.guest_mem_gb, kernel.cfg.phys.size_gb);
            for vm in 0..kernel.vms.len() {
                for s in 0..kernel.vms[vm].os.spaces.len() {
                    kernel.vms[vm].os.prefault(s).map_err(|e| crate::os::virt::guest_error(vm, ggb, e))?;
                }
                let space = kernel.vms[vm].space;
                for (start, len) in kernel.vms[vm].os.memory_in_use() {
                    kernel.os.prefault_range(space, start, start + len).map_err(|e| crate::os::virt::host_error(vm, hgb, start, e))?;
                }
            }
        } else {
            if kernel.os.spaces.iter().all(|sp| sp.regions.is_empty()) {
                return Err(SimError::NothingToPrefault);
            }
            for s in 0..kernel.os.spaces.len() {
                kernel.os.prefault(s)?;
            }
        }
        kernel.after_prefault(&mut self.xl, &mut Direct::new(&mut self.mem));
        Ok(())
    }

    /// Simulate one reference on core `c`.
    pub fn step(&mut self, c: usize, r: Ref) -> Result<(), SimError> {
        self.xl.step(c, r, Early::NONE, &mut self.kernel, &mut Direct::new(&mut self.mem))
    }

    /// Profile translation structures from now on for one-pass miss-ratio curves (see
    /// [`Translator::profile`]); [`Self::curves`] has them after the run.
    pub fn profile(&mut self, structures: &[String], cap: usize) -> Result<(), SimError> {
        let (caches, translation): (Vec<String>, Vec<String>) = structures.iter().cloned().partition(|n| n.starts_with("cache."));
        self.xl.profile(&translation, cap)?;
        for name in &caches {
            // (A cache's stacks are lists, one per set: the LLC's can be large.)
            let sets = match name.as_str() {
                "cache.llc" => self.mem.llc.geometry().0,
                "cache.l1d" => self.mem.cores[0].l1d.geometry().0,
                "cache.l1i" => self.mem.cores[0].l1i.geometry().0,
                _ => self.mem.cores[0].l2.geometry().0,
            };
            let bytes = crate::mrc::list_bytes(sets, cap);
            if bytes > crate::mrc::MAX_LIST_BYTES {
                let why = format!(
                    "{sets} sets x {cap} ways of stacks would take {} MB of host memory (at most {} MB): ask for fewer ways",
                    bytes >> 20,
                    crate::mrc::MAX_LIST_BYTES >> 20
                );
                return Err(SimError::BadCurve { name: name.clone(), why });
            }
            if !self.mem.profile(name, cap) {
                let known = crate::translate::CURVES.join(", ");
                return Err(SimError::BadCurve { name: name.clone(), why: format!("known: {known}, pwc") });
            }
        }
        Ok(())
    }

    /// The miss-ratio curves of the structures [`Self::profile`] named, since warm-up:
    /// TLBs, page-walk caches, then data caches.
    pub fn curves(&self) -> Vec<crate::mrc::Curve> {
        let mut c = curves_of(&self.xl, &self.mem);
        if let Some(w) = &self.warm {
            for curve in &mut c {
                if let Some(then) = w.curves.iter().find(|t| t.structure == curve.structure) {
                    curve.depths.subtract(&then.depths);
                }
            }
        }
        c
    }

    /// The end of warm-up (or of a sampled run's warming): from here the statistics count. The
    /// machine records its counters and curves now and subtracts them from every later report;
    /// the model restarts what it counts from here (see [`Translator::on_warmup_end`],
    /// [`MemorySide::on_warmup_end`]). State (caches, TLBs, page tables) is kept.
    pub fn end_warmup(&mut self) {
        self.xl.on_warmup_end();
        self.mem.on_warmup_end();
        self.warm = Some(Warm::take(&self.cfg, &self.xl, &self.kernel, &self.mem));
    }

    /// Run `src` to its end or to `opts.max_refs`. `progress(refs_done)` is called every
    /// [`PROGRESS_EVERY`] references with the references that count toward the limit
    /// ([`RefSource::counted`]); returning false interrupts the run. Returns the references
    /// that count, warm-up included (a helper's or a co-runner's are simulated but not
    /// counted: a sampled run's phases are measured in the program's references).
    #[inline(never)] // one call per run; keeps it a unit in profiles
    pub fn run(&mut self, src: &mut dyn RefSource, opts: RunOptions, progress: &mut dyn FnMut(u64) -> bool) -> Result<u64, SimError> {
        if opts.skip > 0 {
            let mut ahead = sample::Metered::new(src);
            let done = sample::fast_forward(self, &mut ahead, opts.skip)?;
            if done < opts.skip {
                return Err(SimError::SkipTooLong { skip: opts.skip, done });
            }
            return self.run(&mut ahead, RunOptions { skip: 0, ..opts }, progress);
        }
        self.host_times = None;
        (self.interval, self.marks) = (opts.interval, Vec::new());
        if self.pipelinable(&opts) {
            return self.run_pipelined(src, opts, progress);
        }
        self.run_direct(src, opts, progress)
    }

    /// [`Machine::run`] on this thread alone.
    pub(crate) fn run_direct(&mut self, src: &mut dyn RefSource, opts: RunOptions, progress: &mut dyn FnMut(u64) -> bool) -> Result<u64, SimError> {
        let Machine { cfg, xl, kernel, mem, marks, warm, .. } = self;
        let mut measure = |at: Measure, xl: &Translator, kernel: &Kernel, port: &mut Direct| match at {
            Measure::WarmupEnd => *warm = Some(Warm::take(cfg, xl, kernel, port.mem)),
            Measure::Interval => marks.push(stats::report(cfg, xl, kernel, port.mem, warm.as_ref().map(|w| &w.stats))),
        };
        run_loop(xl, kernel, &mut Direct::new(mem), src, opts, progress, usize::MAX, &mut |_| {}, &mut measure)
    }

    /// Invalidate translations `what` names on every core (TLBs and page-walk caches).
    pub fn shootdown(&mut self, what: Invalidate) -> usize {
        self.xl.shootdown(what)
    }

    /// Invalidate host-side translations of VMs (nested TLBs and vPWCs) on every core.
    pub fn shootdown_nested(&mut self, what: Invalidate) -> usize {
        self.xl.shootdown_nested(what)
    }

    /// Apply the shootdowns the OS (the host's, virtualized) queued (see [`Kernel::os_sync`]).
    pub fn os_sync(&mut self, initiator: Option<usize>) -> u64 {
        self.kernel.os_sync(initiator, &mut self.xl, &mut Direct::new(&mut self.mem))
    }

    /// Apply the shootdowns the OS of `scope` queued (see [`Kernel::sync`]).
    pub fn sync(&mut self, scope: Scope, initiator: Option<usize>) -> u64 {
        self.kernel.sync(scope, initiator, &mut self.xl, &mut Direct::new(&mut self.mem))
    }

    /// A mechanism on core `c` asks the OS to promote the 2 MB region of `space` holding
    /// `va` (see [`Kernel::request_promotion`]).
    pub fn request_promotion(&mut self, c: usize, space: usize, va: crate::arch::addr::VirtAddr) -> Result<bool, SimError> {
        self.kernel.request_promotion(c, space, va, &mut self.xl, &mut Direct::new(&mut self.mem))
    }

    /// Demote the 2 MB page of `space` holding `va` (see [`crate::os::Os::request_demotion`]).
    pub fn request_demotion(&mut self, c: usize, space: usize, va: crate::arch::addr::VirtAddr) -> Result<bool, SimError> {
        self.kernel.request_demotion(c, space, va, &mut self.xl, &mut Direct::new(&mut self.mem))
    }

    /// Unmap the page of `space` holding `va` (see [`crate::os::Os::unmap`]).
    pub fn unmap(&mut self, c: usize, space: usize, va: crate::arch::addr::VirtAddr) -> Result<bool, SimError> {
        self.kernel.unmap(c, space, va, &mut self.xl, &mut Direct::new(&mut self.mem))
    }

    /// Make the 4 KB page of `space` holding `va` writable or read-only (see [`crate::os::Os::protect`]).
    pub fn protect(&mut self, c: usize, space: usize, va: crate::arch::addr::VirtAddr, writable: bool) -> Result<bool, SimError> {
        self.kernel.protect(c, space, va, writable, &mut self.xl, &mut Direct::new(&mut self.mem))
    }

    /// Run khugepaged once now, on core `c`.
    pub fn run_khugepaged(&mut self, c: usize) -> Result<(), SimError> {
        self.kernel.run_khugepaged(c, &mut self.xl, &mut Direct::new(&mut self.mem))
    }

    /// All statistics, with the glossary's names. One core: bare names. Several: `coreN.`
    /// per core plus sums (and machine-wide ratios) under the bare names. With
    /// [`RunOptions::interval`], [`Stats::series`] holds each interval's.
    pub fn stats(&self) -> Stats {
        let mut s = stats::report(&self.cfg, &self.xl, &self.kernel, &self.mem, self.warm.as_ref().map(|w| &w.stats));
        if self.interval > 0 && !self.marks.is_empty() {
            // (The first mark is the start of measurement: the end of warm-up.)
            let all: Vec<&Stats> = self.marks.iter().chain([&s]).collect();
            s.series = all.windows(2).map(|w| w[1].since(w[0])).collect();
            // (A run that ended on a boundary has nothing after it.)
            if s.series.last().is_some_and(|l| l.get("instructions").is_some_and(|i| i.as_f64() == 0.0)) {
                s.series.pop();
            }
        }
        s
    }
}

/// The event loop of [`Machine::run`], through `port`. Recording for a pipelined run, it
/// hands the port to `flush` whenever `chunk` ops are ready (whole references).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_loop<P: MemPort>(
    xl: &mut Translator,
    kernel: &mut Kernel,
    port: &mut P,
    src: &mut dyn RefSource,
    opts: RunOptions,
    progress: &mut dyn FnMut(u64) -> bool,
    chunk: usize,
    flush: &mut dyn FnMut(&mut P),
    measure: &mut dyn FnMut(Measure, &Translator, &Kernel, &mut P),
) -> Result<u64, SimError> {
    let n = kernel.contexts.len();
    // The streams: one per hardware context, or with vCPU overcommit `k` per context (context
    // `c` time-slices streams c, c + n, c + 2n, ...), `lane[c]` the one it runs now.
    // (The translator keeps which vCPU each context runs: shootdowns need to know.)
    // (Programs that share cores are time-sliced the same way, `virt.switch_interval_cycles`
    // each: see `Machine::with_programs`.)
    let places = kernel.sched.places;
    let k = if places > 1 { places } else { kernel.cfg.virt.vcpus_per_core.max(1) as usize };
    let total = if k > 1 { src.streams().max(n) } else { n };
    let slice = if places > 1 { kernel.cfg.virt.switch_interval_cycles } else { kernel.cfg.virt.vcpu_slice_cycles };
    kernel.sched.vcpus = crate::os::sched::Vcpus::new(n, k, total, slice);
    for c in 0..n {
        kernel.contexts[c].ctx = kernel.tagged(c, kernel.contexts[c].ctx & crate::arch::ctx::SPACE_MASK);
    }
    let mut batches: Vec<Vec<Ref>> = (0..total).map(|_| Vec::with_capacity(BATCH)).collect();
    let mut pos = vec![0usize; total];
    let paced = src.paced();
    let mut ended = vec![false; n];
    // References simulated, and those that count toward the warm-up and the limit (not a
    // helper's or a co-runner's: `RefSource::counted`).
    let mut done: u64 = 0;
    let mut measured: u64 = 0;
    let counted: Vec<u64> = (0..total).map(|s| u64::from(src.counted(s))).collect();
    xl.helper = src.helper();
    let helper = xl.helper.map_or(usize::MAX, |h| h.stream);
    let by_instructions = opts.warmup_instructions > 0;
    let mut warm = opts.warmup == 0 && !by_instructions;
    // (Warming up by instructions, the limit is known once the warm-up ends.)
    let mut limit = if by_instructions { u64::MAX } else { opts.max_refs.map(|m| m.saturating_add(opts.warmup)).unwrap_or(u64::MAX) };
    let mut warmup_left = opts.warmup_instructions;
    // The references the warm-up took (unknown yet when it counts instructions).
    let mut warm_at = if by_instructions { u64::MAX } else { opts.warmup };
    let mut next_progress = PROGRESS_EVERY;
    // Statistics over time: the next interval ends when the cores' instructions reach this.
    let instructions = |port: &P| (0..n).map(|c| port.instructions(c)).sum::<u64>();
    let mut next_mark = u64::MAX;
    if opts.interval > 0 && warm {
        measure(Measure::Interval, xl, kernel, port);
        next_mark = instructions(port) + opts.interval;
    }
    // How far a dependent reference looks ahead for a younger one that starts its work.
    let lookahead = xl.lookahead;
    let rob = xl.rob;
    // One prefetch pipeline per core: each runs ahead in its own stream.
    let mut rings: Vec<PrefetchRing> = (0..n).map(|_| PrefetchRing::new()).collect();
    'run: while measured < limit {
        // The core with the smallest local clock goes next (ties: lowest id).
        let mut c = usize::MAX;
        let mut best = u64::MAX;
        for (i, &e) in ended.iter().enumerate() {
            if !e && (c == usize::MAX || port.now(i) < best) {
                best = port.now(i);
                c = i;
            }
        }
        if c == usize::MAX {
            break;
        }
        if port.now(c) >= kernel.sched.vcpus.slice_end[c] {
            // The vCPU's time slice is over: the core switches to its next one.
            kernel.sched.vcpus.slice_end[c] = port.now(c) + slice;
            if !next_vcpu(xl, kernel, port, c) {
                continue;
            }
            rings[c].region = u64::MAX;
        }
        let s = kernel.sched.vcpus.lane[c];
        if pos[s] == batches[s].len() {
            src.next_batch(s, &mut batches[s])?;
            pos[s] = 0;
            rings[c].region = u64::MAX;
            if batches[s].is_empty() {
                kernel.sched.vcpus.ended[s] = true;
                // (With overcommit the core goes on with its other vCPUs, if any is left.)
                if k == 1 || !next_vcpu(xl, kernel, port, c) {
                    ended[c] = true;
                }
                continue;
            }
        }
        // One core: run the batch in a tight loop. Several (or vCPU slices): one reference,
        // then re-pick.
        let left = usize::try_from(limit - measured).unwrap_or(usize::MAX);
        let add = counted[s];
        let end = if n == 1 && k == 1 { batches[s].len().min(pos[s].saturating_add(left)) } else { pos[s] + 1 };
        while pos[s] < end {
            if xl.virt {
                prefetch_ahead_2d(kernel, port, c, &batches[s], pos[s], &mut rings[c]);
            } else {
                prefetch_ahead(kernel, port, c, &batches[s], pos[s], &mut rings[c]);
            }
            let r = batches[s][pos[s]];
            // (Within the batch: a dependent reference near its end sees fewer ahead.)
            let early = if lookahead > 0 && r.producer() != 0 { inflight::early(&batches[s][pos[s]..], lookahead, rob) } else { Early::NONE };
            pos[s] += 1;
            let recorded = port.recorded();
            if let Err(e) = xl.step(c, r, early, kernel, port) {
                port.truncate(recorded); // (a reference's ops are replayed whole or not at all)
                return Err(e);
            }
            done += 1;
            measured += add;
            if s == helper && !(r.is_os_call() && r.size == crate::os::OsOp::Sleep as u8) {
                xl.helper_touches += 1;
            }
            if done & (crate::os::sched::EVENT_CHECK - 1) == 0 {
                if paced {
                    for &s in &kernel.sched.vcpus.lane {
                        if let Some(r) = pos[s].checked_sub(1).and_then(|p| batches[s].get(p)) {
                            src.observe(s, r.va);
                        }
                    }
                }
                if kernel.sched.check_due(done) {
                    kernel.os_events(done, xl, port)?;
                }
                if next_mark != u64::MAX && instructions(port) >= next_mark {
                    measure(Measure::Interval, xl, kernel, port);
                    next_mark = instructions(port) + opts.interval;
                }
            }
            // (After warm-up, one predictable branch.)
            if !warm && add == 1 && (if by_instructions { warmup_left <= u64::from(r.inst_delta) } else { measured == opts.warmup }) {
                if by_instructions {
                    limit = opts.max_refs.map_or(u64::MAX, |m| measured.saturating_add(m));
                    warm_at = measured;
                }
                // (The model restarts what counts from here; the statistics are recorded, for
                // every report to subtract.)
                xl.on_warmup_end();
                port.warmup_end();
                measure(Measure::WarmupEnd, xl, kernel, port);
                warm = true;
                if opts.interval > 0 {
                    measure(Measure::Interval, xl, kernel, port);
                    next_mark = instructions(port) + opts.interval;
                }
            }
            if by_instructions && !warm && add == 1 {
                warmup_left -= u64::from(r.inst_delta);
            }
            if port.recorded() >= chunk {
                flush(port);
            }
            if done >= next_progress {
                next_progress += PROGRESS_EVERY;
                if !progress(measured) {
                    return Err(SimError::Interrupted);
                }
            }
            if measured >= limit {
                break 'run;
            }
        }
    }
    // A run that measured nothing must not look like one that measured a quiet workload.
    if measured <= warm_at && opts.max_refs != Some(0) {
        return Err(if by_instructions {
            SimError::WarmupInstructionsTooLong { instructions: opts.warmup_instructions, done: measured }
        } else if opts.warmup > 0 {
            SimError::WarmupTooLong { warmup: opts.warmup, done: measured }
        } else {
            SimError::NoReferences
        });
    }
    Ok(measured)
}

/// vCPU overcommit: context `c` switches to its next vCPU whose stream has not ended
/// (streams c, c + n, c + 2n, ...), paying `virt.switch_cycles`, and what shootdowns left
/// for it (see [`Kernel::vcpu_switched`]). False if none is left but the one it runs,
/// which then runs on if it has not ended.
fn next_vcpu<P: MemPort>(xl: &mut Translator, kernel: &mut Kernel, port: &mut P, c: usize) -> bool {
    let v = &kernel.sched.vcpus;
    let (n, total) = (v.lane.len(), v.ended.len());
    let mine: Vec<usize> = (c..total).step_by(n).collect();
    let at = mine.iter().position(|&s| s == v.lane[c]).unwrap_or(0);
    let next = (1..=mine.len()).map(|i| mine[(at + i) % mine.len()]).find(|&s| !v.ended[s]);
    match next {
        Some(s) if s != v.lane[c] => {
            kernel.sched.vcpus.lane[c] = s;
            port.stall(c, kernel.cfg.virt.switch_cycles);
            let core = kernel.contexts[c].core;
            if kernel.sched.places > 1 {
                xl.mmus[core].vcounters.vm_switches += 1;
            } else {
                xl.mmus[core].vcounters.vcpu_switches += 1;
            }
            kernel.vcpu_switched(c, xl, port);
            true
        }
        Some(_) => true,
        None => false,
    }
}
