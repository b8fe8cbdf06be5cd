//! The machine: cores (timing window, TLBs, page-walk caches, private caches), a shared LLC
//! and DRAM, and the OS. Its event loop advances the core with the smallest local clock,
//! one reference at a time, so shared structures see a deterministic interleaving.

use crate::addr::{PageSize, VirtAddr};
use crate::cache::{Cache, Dram};
use crate::config::{Config, PtFormat, WalkerPort};
use crate::error::SimError;
use crate::os::Os;
use crate::pipeline::Op;
use crate::pt::{leaf_size, NodeId, NO_NODE, PTE_A, PTE_D, PTE_P, PTE_PFN_MASK};
use crate::repl::LineKind;
use crate::sched::Scope;
use crate::stats::{CoreCounters, Stats, VirtCounters};
use crate::timing::Window;
use crate::tlb::{Ctx, Invalidate, Pwc, TlbEntry, TlbLevel};
use crate::workload::{Ref, RefKind, RefSource};

/// Where an access was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Served {
    L1 = 0,
    L2 = 1,
    Llc = 2,
    Dram = 3,
}

impl Served {
    /// Add one to the counter of this level among `[l1, l2, llc, dram]`.
    #[inline(always)]
    fn count(self, [l1, l2, llc, dram]: [&mut u64; 4]) {
        match self {
            Served::L1 => *l1 += 1,
            Served::L2 => *l2 += 1,
            Served::Llc => *llc += 1,
            Served::Dram => *dram += 1,
        }
    }
}

/// Which table a walk reads (`Machine::walk_table`'s parameter).
pub(crate) const NATIVE: u8 = 0;
/// The host's (EPT) table of a VM: gPA -> hPA.
pub(crate) const HOST: u8 = 1;
/// A guest's table: gVA -> gPA, its entries at guest-physical addresses.
pub(crate) const GUEST: u8 = 2;

/// What walking one table found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    /// A present leaf: the entry (with the A/D bits the walk set) and the page size.
    Leaf(u64, PageSize),
    /// A not-present entry: a page fault (native, guest) or an EPT violation (host).
    Missing,
    /// Guest table: the host does not map the guest-physical address of an entry.
    HostMissing(u64),
}

/// Where an access enters the hierarchy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Port {
    L1i,
    L1d,
    L2,
}

/// One core: timing window, TLBs, page-walk caches, private caches.
pub struct Core {
    pub window: Window,
    pub l1i: Cache,
    pub l1d: Cache,
    pub l2: Cache,
    pub itlb: TlbLevel,
    pub dtlb: TlbLevel,
    pub stlb: TlbLevel,
    pub pwc: Pwc,
    /// Host page-walk cache (vPWC, gPA prefixes) for 2D walks; empty natively.
    pub vpwc: Pwc,
    /// Nested TLB (gPA -> hPA) for 2D walks; empty natively.
    pub ntlb: TlbLevel,
    /// Address space this core runs (in a VM: a space of the VM's guest OS).
    pub space: usize,
    /// VM this core runs (0 natively).
    pub vm: usize,
    pub ctx: Ctx,
    pub counters: CoreCounters,
    pub vcounters: VirtCounters,
    /// Instructions and cycles at the last statistics reset.
    base_instr: u64,
    base_cycles: u64,
    /// Page-table prioritization detector: end of the current epoch (in instructions), L2
    /// TLB misses when it began, and whether this core is in a TLB-miss phase.
    ptp_epoch_end: u64,
    ptp_epoch_misses: u64,
    ptp_active: bool,
}

impl Core {
    fn new(cfg: &Config, id: u64, seed: u64) -> Core {
        use PageSize::*;
        let s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(id << 8);
        let dtlb = if cfg.tlb_l1d_unified {
            TlbLevel::new(&[(cfg.tlb_l1d_entries, cfg.tlb_l1d_ways, &[Size4K, Size2M, Size1G])], cfg.tlb_l1d_policy, s + 1)
        } else {
            TlbLevel::new(
                &[
                    (cfg.tlb_l1d_entries, cfg.tlb_l1d_ways, &[Size4K]),
                    (cfg.tlb_l1d_entries_2m, cfg.tlb_l1d_ways_2m, &[Size2M]),
                    (cfg.tlb_l1d_entries_1g, cfg.tlb_l1d_ways_1g, &[Size1G]),
                ],
                cfg.tlb_l1d_policy,
                s + 1,
            )
        };
        let itlb = TlbLevel::new(
            &[(cfg.tlb_l1i_entries, cfg.tlb_l1i_ways, &[Size4K]), (cfg.tlb_l1i_entries_2m, cfg.tlb_l1i_ways_2m, &[Size2M])],
            cfg.tlb_l1i_policy,
            s + 2,
        );
        let stlb = TlbLevel::new(
            &[(cfg.tlb_l2_entries, cfg.tlb_l2_ways, &[Size4K, Size2M]), (cfg.tlb_l2_entries_1g, cfg.tlb_l2_ways_1g, &[Size1G])],
            cfg.tlb_l2_policy,
            s + 3,
        );
        // A PWC table is indexed by the lowest level of the node whose entries it caches
        // (tag = VA >> 12+9(level-1)). A flattened L4+L3 root's entries are keyed by
        // VA[47:30], like L3 entries, in the table the paper sizes separately.
        let mut pwc_entries = [0, 0, cfg.pwc_l2_entries, cfg.pwc_l3_entries, cfg.pwc_l4_entries, cfg.pwc_l5_entries];
        if matches!(cfg.pt_format, PtFormat::Fpt | PtFormat::FptL4L3) {
            pwc_entries[3] = cfg.pwc_flat_entries;
        }
        if cfg.pt_format != PtFormat::Radix5 {
            pwc_entries[5] = 0;
        }
        let v = cfg.virt_enabled;
        let mut vpwc_entries = if v {
            [0, 0, cfg.virt_host_pwc_l2_entries, cfg.virt_host_pwc_l3_entries, cfg.virt_host_pwc_l4_entries, cfg.virt_host_pwc_l5_entries]
        } else {
            [0; 6]
        };
        if v && matches!(cfg.virt_host_pt_format, PtFormat::Fpt | PtFormat::FptL4L3) {
            vpwc_entries[3] = cfg.virt_host_pwc_flat_entries;
        }
        let ntlb_entries = if v { cfg.tlb_nested_entries } else { 0 };
        let ntlb = TlbLevel::new(&[(ntlb_entries, cfg.tlb_nested_ways, &[Size4K, Size2M, Size1G])], crate::config::Policy::Lru, s + 8);
        Core {
            window: Window::new(cfg.core_width, cfg.core_rob, cfg.core_mshrs, cfg.core_walkers),
            l1i: Cache::new(cfg.cache_l1i_size_kb, cfg.cache_l1i_ways, cfg.cache_l1i_latency, cfg.cache_l1i_policy, cfg.cache_l1i_energy_nj, s + 4),
            l1d: Cache::new(cfg.cache_l1d_size_kb, cfg.cache_l1d_ways, cfg.cache_l1d_latency, cfg.cache_l1d_policy, cfg.cache_l1d_energy_nj, s + 5),
            l2: Cache::new(cfg.cache_l2_size_kb, cfg.cache_l2_ways, cfg.cache_l2_latency, cfg.cache_l2_policy, cfg.cache_l2_energy_nj, s + 6),
            itlb,
            dtlb,
            stlb,
            pwc: Pwc::new(pwc_entries, s + 7),
            vpwc: Pwc::new(vpwc_entries, s + 9),
            ntlb,
            space: 0,
            vm: 0,
            ctx: 1,
            counters: CoreCounters::default(),
            vcounters: VirtCounters::default(),
            base_instr: 0,
            base_cycles: 0,
            ptp_epoch_end: cfg.ptp_detector_epoch,
            ptp_epoch_misses: 0,
            ptp_active: false,
        }
    }

    pub fn instructions(&self) -> u64 {
        self.window.instructions() - self.base_instr
    }

    pub fn cycles(&self) -> u64 {
        self.window.cycles() - self.base_cycles
    }

    /// Exchange timing windows (and where statistics last restarted) with `other`.
    pub(crate) fn swap_window(&mut self, other: &mut Core) {
        std::mem::swap(&mut self.window, &mut other.window);
        std::mem::swap(&mut self.base_instr, &mut other.base_instr);
        std::mem::swap(&mut self.base_cycles, &mut other.base_cycles);
    }
}

/// How much to run.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunOptions {
    /// Stop after this many references (after warm-up), summed over cores.
    pub max_refs: Option<u64>,
    /// References simulated before statistics are reset.
    pub warmup: u64,
    /// Host threads: 0 = choose (two when the host has them and the run can be pipelined,
    /// see [`crate::pipeline`]), 1 = one. Statistics are the same either way.
    pub threads: usize,
}

/// How often the progress callback runs, in references.
pub const PROGRESS_EVERY: u64 = 1 << 16;
const BATCH: usize = 4096;
const PREFETCH_DISTANCE: usize = 32;
/// Ring of leaf nodes found by the first prefetch stage; larger than `2 * D`.
const PREFETCH_RING: usize = 128;

/// State of [`Machine::prefetch_ahead`]: the leaf node found for each reference in flight,
/// and the last 2 MB region looked up with its leaf.
struct PrefetchRing {
    leaves: [NodeId; PREFETCH_RING],
    region: u64,
    leaf: NodeId,
    /// Virtualized: the host leaf node that maps each reference's data page.
    host_leaves: [NodeId; PREFETCH_RING],
    /// Virtualized: the last host space and 2 MB guest-physical region whose host leaf
    /// node was looked up for a guest PTE (guest page tables sit in few regions).
    pte_region: (usize, u64),
    pte_leaf: NodeId,
}

impl PrefetchRing {
    fn new() -> PrefetchRing {
        PrefetchRing {
            leaves: [NO_NODE; PREFETCH_RING],
            region: u64::MAX,
            leaf: NO_NODE,
            host_leaves: [NO_NODE; PREFETCH_RING],
            pte_region: (usize::MAX, u64::MAX),
            pte_leaf: NO_NODE,
        }
    }

    /// Slot `i`: the leaf node of `va` in `pt` (a tree at `root`; a hint, see
    /// [`crate::pt::PageTables::leaf_hint`]), prefetching its bookkeeping. References close
    /// together share a leaf node, so the tree is descended only for a new 2 MB region (a
    /// stale answer after a remap only costs a useless host prefetch).
    #[inline]
    fn find_leaf(&mut self, i: usize, va: u64, pt: &crate::pt::PageTables, root: NodeId) {
        let region = va >> 21;
        if region != self.region {
            self.region = region;
            self.leaf = pt.leaf_hint(root, VirtAddr(va));
            if self.leaf != NO_NODE {
                pt.prefetch_node(self.leaf);
            }
        }
        self.leaves[i % PREFETCH_RING] = self.leaf;
    }
}

pub struct Machine {
    cfg: Config,
    pub cores: Vec<Core>,
    pub llc: Cache,
    pub dram: Dram,
    /// The OS natively; virtualized, the host OS (the hypervisor), whose address spaces
    /// are the VMs' guest-physical memories (their page tables are the EPTs).
    pub os: Os,
    /// Virtualized: the VMs, each with its guest OS. Empty natively.
    pub vms: Vec<crate::virt::Vm>,
    /// Processes on cores and the OS's next background event.
    pub sched: crate::sched::Sched,
    dram_latency: u64,
    /// Levels of the native or guest table, and of the host table.
    top: u8,
    host_top: u8,
    /// Virtualized (2D walks).
    pub(crate) virt: bool,
    /// The cores have a nested TLB.
    ntlb: bool,
    /// Where page-walk reads enter the hierarchy.
    pub(crate) port: Port,
    /// Cores that run a stream (the rest idle).
    active: usize,
    /// Page-table prioritization runs a TLB-miss phase detector.
    pub(crate) ptp_detector: bool,
    /// The front half of a pipelined run ([`crate::pipeline`]): references are translated
    /// here, and what the memory side must do with them is recorded in `rec`, not done.
    pub(crate) front: bool,
    pub(crate) rec: Vec<crate::pipeline::Op>,
    /// While recording: cycles the current walk has spent since its last recorded step
    /// (page-walk-cache and nested-TLB probes), carried by its next `Op`.
    rec_lat: u64,
    /// While recording: the reference being translated (instruction delta, kind, whether it
    /// is dependent), for its walk's `Op::Walk`.
    rec_ref: (u32, RefKind, bool),
    /// The machine a pipelined run replays the memory side on, kept between runs.
    pub(crate) twin: Option<Box<Machine>>,
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
    /// Build the machine for a workload with `streams` streams, one process whose regions
    /// are `regions`. The config must have been validated.
    pub fn new(cfg: &Config, streams: usize, regions: Vec<crate::Region>, seed: u64) -> Result<Machine, SimError> {
        if streams == 0 {
            return Err(SimError::NoStreams);
        }
        if streams as u64 > cfg.system_cores {
            return Err(SimError::TooManyStreams { streams, cores: cfg.system_cores });
        }
        let (os, vms, sched) = crate::sched::boot(cfg, streams, regions, seed)?;
        let cores = (0..streams as u64)
            .map(|i| {
                let mut c = Core::new(cfg, i, seed);
                c.space = sched.running(i as usize);
                c.vm = sched.running_vm(i as usize);
                c.ctx = match vms.get(c.vm) {
                    Some(v) => v.os.spaces[c.space].ctx,
                    None => os.spaces[c.space].ctx,
                };
                c
            })
            .collect();
        let levels = |f: PtFormat| if f == PtFormat::Radix5 { 5 } else { 4 };
        let mut m = Machine {
            cores,
            llc: Cache::new(cfg.cache_llc_size_kb, cfg.cache_llc_ways, cfg.cache_llc_latency, cfg.cache_llc_policy, cfg.cache_llc_energy_nj, seed ^ 0x11c),
            dram: Dram::new(cfg.dram_latency_cycles(), cfg.dram_bandwidth_gbps, cfg.core_freq_ghz, cfg.dram_energy_nj),
            os,
            vms,
            sched,
            dram_latency: cfg.dram_latency_cycles(),
            top: levels(cfg.pt_format),
            host_top: levels(cfg.virt_host_pt_format),
            virt: cfg.virt_enabled,
            ntlb: cfg.virt_enabled && cfg.tlb_nested_entries > 0,
            port: match cfg.walker_port {
                WalkerPort::L1d => Port::L1d,
                WalkerPort::L2 => Port::L2,
            },
            active: streams,
            ptp_detector: cfg.ptp_mode == crate::config::PtpMode::Detector
                && (cfg.cache_l2_policy == crate::config::Policy::Ptp || cfg.cache_llc_policy == crate::config::Policy::Ptp),
            cfg: cfg.clone(),
            front: false,
            rec: Vec::new(),
            rec_lat: 0,
            rec_ref: (0, RefKind::Load, false),
            twin: None,
            host_times: None,
        };
        m.steer_ptp();
        Ok(m)
    }

    /// Tell caches whose policy is `ptp` whose page-table lines to protect: everyone's in
    /// `always` mode; in `detector` mode, the cores in a TLB-miss phase (private L2s) and,
    /// for the shared LLC, those cores (per-context) or everyone once any core is.
    fn steer_ptp(&mut self) {
        let p = self.cfg.ptp_probability;
        let always = self.cfg.ptp_mode == crate::config::PtpMode::Always;
        let mut active_mask = 0u64;
        for (i, core) in self.cores.iter_mut().enumerate() {
            let on = always || core.ptp_active;
            core.l2.steer_ptp(p, if on { u64::MAX } else { 0 });
            if on {
                active_mask |= 1 << (i & 63);
            }
        }
        let llc_mask = if always || (!self.cfg.ptp_per_context && active_mask != 0) { u64::MAX } else { active_mask };
        self.llc.steer_ptp(p, llc_mask);
    }

    /// End of a detector epoch on core `c`: is it in a TLB-miss phase?
    #[cold]
    fn ptp_epoch(&mut self, c: usize) {
        let core = &mut self.cores[c];
        let misses = core.counters.l2_tlb_misses;
        // Statistics may have been reset (end of warm-up) since the epoch began.
        let delta = misses.saturating_sub(core.ptp_epoch_misses.min(misses));
        let mpki = delta as f64 * 1000.0 / self.cfg.ptp_detector_epoch as f64;
        let active = mpki >= self.cfg.ptp_detector_mpki;
        core.ptp_epoch_misses = misses;
        core.ptp_epoch_end = core.window.instructions() + self.cfg.ptp_detector_epoch;
        core.counters.ptp_epochs += 1;
        if active {
            core.counters.ptp_active_epochs += 1;
        }
        if active != core.ptp_active {
            core.ptp_active = active;
            self.steer_ptp();
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Map every page of the workload's regions now.
    pub fn prefault(&mut self) -> Result<(), SimError> {
        if self.virt {
            return self.prefault_vms();
        }
        if self.os.spaces.iter().all(|sp| sp.regions.is_empty()) {
            return Err(SimError::NothingToPrefault);
        }
        for s in 0..self.os.spaces.len() {
            self.os.prefault(s)?;
        }
        self.after_prefault();
        Ok(())
    }

    /// Virtualized prefault: every guest maps its processes' regions, then the host backs
    /// every guest-physical page they use (page-table nodes and data), in ascending gPA
    /// order, as if the guest had touched them.
    fn prefault_vms(&mut self) -> Result<(), SimError> {
        if self.vms.iter().all(|v| v.os.spaces.iter().all(|sp| sp.regions.is_empty())) {
            return Err(SimError::NothingToPrefault);
        }
        let (ggb, hgb) = (self.cfg.virt_guest_mem_gb, self.cfg.phys_size_gb);
        for vm in 0..self.vms.len() {
            for s in 0..self.vms[vm].os.spaces.len() {
                self.vms[vm].os.prefault(s).map_err(|e| crate::virt::guest_error(vm, ggb, e))?;
            }
            let space = self.vms[vm].space;
            for (start, len) in self.vms[vm].os.memory_in_use() {
                self.os.prefault_range(space, start, start + len).map_err(|e| crate::virt::host_error(vm, hgb, start, e))?;
            }
        }
        self.after_prefault();
        Ok(())
    }

    /// One access to `line` by core `c`, entering at `port`. Fills every level on the way
    /// back (non-inclusive, non-exclusive; inclusive LLC back-invalidates on eviction).
    /// Returns the load-to-use latency and where it was served.
    #[inline(always)]
    pub(crate) fn access(&mut self, c: usize, line: u64, kind: LineKind, write: bool, port: Port, now: u64) -> (u64, Served) {
        let owner = c as u8;
        let core = &mut self.cores[c];
        let l1 = match port {
            Port::L1d => Some(&mut core.l1d),
            Port::L1i => Some(&mut core.l1i),
            Port::L2 => None,
        };
        if let Some(l1) = l1 {
            if l1.access(line, kind, write) {
                return (l1.latency, Served::L1);
            }
        }
        let (lat, served) = if core.l2.access(line, kind, false) {
            (core.l2.latency, Served::L2)
        } else if self.llc.access(line, kind, false) {
            (self.llc.latency, Served::Llc)
        } else {
            let lat = self.llc.latency + self.dram.access(now, false);
            if let Some(v) = self.llc.fill(line, kind, false, owner) {
                self.evict_from_llc(v.line, v.dirty, now);
            }
            (lat, Served::Dram)
        };
        let core = &mut self.cores[c];
        if served != Served::L2 {
            // The line is now in the LLC; install it in L2.
            if let Some(v) = core.l2.fill(line, kind, write && port == Port::L2, owner) {
                if v.dirty {
                    if let Some(w) = self.llc.write_back(v.line, v.kind, owner) {
                        self.evict_from_llc(w.line, w.dirty, now);
                    }
                }
            }
        }
        let core = &mut self.cores[c];
        let l1 = match port {
            Port::L1d => &mut core.l1d,
            Port::L1i => &mut core.l1i,
            Port::L2 => return (lat, served),
        };
        if let Some(v) = l1.fill(line, kind, write, owner) {
            if v.dirty {
                if let Some(w) = core.l2.write_back(v.line, v.kind, owner) {
                    if w.dirty {
                        if let Some(x) = self.llc.write_back(w.line, w.kind, owner) {
                            self.evict_from_llc(x.line, x.dirty, now);
                        }
                    }
                }
            }
        }
        (lat, served)
    }

    /// A line left the LLC: write it to DRAM if dirty; with an inclusive LLC, remove copies
    /// from every private cache first (their dirty data goes to DRAM too).
    fn evict_from_llc(&mut self, line: u64, mut dirty: bool, now: u64) {
        if self.cfg.cache_llc_inclusive {
            for core in &mut self.cores {
                for cache in [&mut core.l1d, &mut core.l1i, &mut core.l2] {
                    dirty |= cache.invalidate(line).unwrap_or(false);
                }
            }
        }
        if dirty {
            self.dram.access(now, true);
        }
    }

    /// Probe the page-walk cache of table `D` (the vPWC for the host table, the PWC
    /// otherwise) for `va` and count its hits per level; returns where the walk starts.
    #[inline(always)]
    fn pwc_start<const D: u8>(&mut self, c: usize, va: VirtAddr, ctx: Ctx, top: u8, root: NodeId) -> (u8, NodeId) {
        let core = &mut self.cores[c];
        let mut hits = [false; 6];
        let pwc = if D == HOST { &mut core.vpwc } else { &mut core.pwc };
        let start = pwc.lookup(va, ctx, top, &mut hits);
        if D == HOST {
            let k = &mut core.vcounters;
            core.vpwc.tally(
                &hits,
                [
                    (&mut k.vpwc_l2_hits, &mut k.vpwc_l2_misses),
                    (&mut k.vpwc_l3_hits, &mut k.vpwc_l3_misses),
                    (&mut k.vpwc_l4_hits, &mut k.vpwc_l4_misses),
                    (&mut k.vpwc_l5_hits, &mut k.vpwc_l5_misses),
                ],
            );
        } else {
            let k = &mut core.counters;
            core.pwc.tally(
                &hits,
                [
                    (&mut k.pwc_l2_hits, &mut k.pwc_l2_misses),
                    (&mut k.pwc_l3_hits, &mut k.pwc_l3_misses),
                    (&mut k.pwc_l4_hits, &mut k.pwc_l4_misses),
                    (&mut k.pwc_l5_hits, &mut k.pwc_l5_misses),
                ],
            );
        }
        match start {
            Some(h) => (h.level, h.node),
            None => (top, root),
        }
    }

    /// Walk one table (`D`: native, host or guest) for `va` from `node`, a node at `level`,
    /// on core `c`: read each entry through the caches (a guest entry after translating its
    /// guest-physical address through the host, see [`Machine::nested_translate`]), set A
    /// (and D on the leaf for a store) as hardware does, and fill the table's page-walk
    /// cache. Reads are issued at `now + *latency`, which grows by what they cost. `vm` is
    /// the VM whose guest or host table this is (ignored natively).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn walk_table<const D: u8>(
        &mut self,
        c: usize,
        vm: usize,
        va: VirtAddr,
        ctx: Ctx,
        mut level: u8,
        mut node: NodeId,
        write: bool,
        now: u64,
        latency: &mut u64,
    ) -> Result<Found, SimError> {
        loop {
            let pt = if D == GUEST { &self.vms[vm].os.pt } else { &self.os.pt };
            let (idx, entry_level) = pt.index_at(node, level, va);
            let addr = pt.node(node).entry_addr(idx);
            let line = if D == GUEST {
                match self.nested_translate(c, vm, addr.0, false, false, now, latency)? {
                    Some((hpa, _, _)) => hpa >> 6,
                    None => return Ok(Found::HostMissing(addr.0)),
                }
            } else {
                addr.line()
            };
            if self.front {
                let lat = self.take_rec_lat();
                self.rec.push(Op::Pte { line, table: D, lat });
            } else {
                let (lat, served) = self.access(c, line, LineKind::PageTable, false, self.port, now + *latency);
                *latency += lat;
                self.count_pte::<D>(c, served);
            }
            let pt = if D == GUEST { &mut self.vms[vm].os.pt } else { &mut self.os.pt };
            let e = pt.entry(node, idx);
            if e & PTE_P == 0 {
                return Ok(Found::Missing);
            }
            let leaf = leaf_size(entry_level, e);
            // Hardware sets the accessed bit of every entry it uses, and the dirty bit of
            // the leaf when the access is a store.
            let mut set = PTE_A;
            if leaf.is_some() && write {
                set |= PTE_D;
            }
            if e & set != set {
                pt.set_bits(node, idx, set);
            }
            if let Some(size) = leaf {
                return Ok(Found::Leaf(e | set, size));
            }
            let child = pt.node(node).children[idx];
            debug_assert_ne!(child, NO_NODE);
            let core = &mut self.cores[c];
            if D == HOST {
                core.vpwc.fill_missed(va, ctx, entry_level, child);
            } else {
                core.pwc.fill_missed(va, ctx, entry_level, child);
            }
            node = child;
            level = entry_level - 1;
        }
    }

    /// Count a page-table read of table `D` served at `served` (walk steps, and where the
    /// entry came from).
    #[inline(always)]
    pub(crate) fn count_pte<const D: u8>(&mut self, c: usize, served: Served) {
        let core = &mut self.cores[c];
        let k = &mut core.counters;
        k.walk_steps += 1;
        served.count([&mut k.pte_l1, &mut k.pte_l2, &mut k.pte_llc, &mut k.pte_dram]);
        let v = &mut core.vcounters;
        if D == GUEST {
            v.guest_steps += 1;
            served.count([&mut v.pte_guest_l1, &mut v.pte_guest_l2, &mut v.pte_guest_llc, &mut v.pte_guest_dram]);
        } else if D == HOST {
            v.host_steps += 1;
            served.count([&mut v.pte_host_l1, &mut v.pte_host_l2, &mut v.pte_host_llc, &mut v.pte_host_dram]);
        }
    }

    /// A page walk for `va` on core `c` starting at cycle `now`. Reads real entries
    /// through the caches, sets A (and D for a store) bits as hardware does, fills the
    /// page-walk caches, and asks the OS to map the page on a fault (then walks again).
    /// Returns the translation, the cycles the walk took and, of those, the cycles spent
    /// in the OS's fault handler. Virtualized, a 2D walk ([`Machine::walk_2d`]).
    fn walk(&mut self, c: usize, va: VirtAddr, write: bool, now: u64) -> Result<(TlbEntry, PageSize, u64, u64), SimError> {
        if self.virt {
            return self.walk_2d(c, va, write, now);
        }
        let mut latency = 0u64;
        let mut faulted = false;
        let mut fault_cost = 0;
        loop {
            let (ctx, space) = (self.cores[c].ctx, self.cores[c].space);
            let root = self.os.spaces[space].root;
            let (level, node) = self.pwc_start::<NATIVE>(c, va, ctx, self.top, root);
            // After a fault the instruction re-executes and walks again: a second walk.
            self.cores[c].counters.walks += 1;
            latency += self.cfg.pwc_latency;
            if self.front {
                self.rec_lat += self.cfg.pwc_latency;
            }
            if let Found::Leaf(e, size) = self.walk_table::<NATIVE>(c, 0, va, ctx, level, node, write, now, &mut latency)? {
                let frame = (e & PTE_PFN_MASK) >> 12;
                return Ok((TlbEntry { frame, dirty: e & PTE_D != 0 }, size, latency, fault_cost));
            }
            if faulted {
                unreachable!("the OS mapped {:#x} but the walk still faults", va.0);
            }
            faulted = true;
            self.os.fault_on(c, space, va, write)?;
            fault_cost = self.cfg.os_fault_cycles + self.os_sync(Some(c));
            let k = &mut self.cores[c].counters;
            k.faults += 1;
            k.fault_cycles += fault_cost;
            latency += fault_cost;
            if self.front {
                self.rec_fault(fault_cost);
            }
        }
    }

    /// Translate guest-physical `gpa` of VM `vm` for a 2D walk on core `c`: the nested TLB
    /// (for the final data address only with `virt.nested_tlb_data`), else the host vPWC
    /// and a walk of the host (EPT) table, whose result fills the nested TLB. `data`: the
    /// walk's final data address (a store sets the host leaf's D bit). Returns the
    /// host-physical address, the host page size and whether the host leaf is dirty, or
    /// `None` when the host maps nothing there (an EPT violation).
    #[allow(clippy::too_many_arguments)]
    fn nested_translate(
        &mut self,
        c: usize,
        vm: usize,
        gpa: u64,
        write: bool,
        data: bool,
        now: u64,
        latency: &mut u64,
    ) -> Result<Option<(u64, PageSize, bool)>, SimError> {
        let ntlb = self.ntlb && (!data || self.cfg.virt_nested_tlb_data);
        let ctx = self.vms[vm].ctx;
        let g = VirtAddr(gpa);
        // Whether the nested TLB holds no translation of `gpa` (not even a clean one that a
        // store must walk to dirty): its fill then needs no probe.
        let mut ntlb_absent = false;
        if ntlb {
            *latency += self.cfg.tlb_nested_latency;
            if self.front {
                self.rec_lat += self.cfg.tlb_nested_latency;
            }
            let core = &mut self.cores[c];
            match core.ntlb.lookup(g, ctx) {
                Some((e, size)) if !(write && !e.dirty) => {
                    core.vcounters.nested_tlb_hits += 1;
                    return Ok(Some(((e.frame << 12) + g.offset(size), size, e.dirty)));
                }
                found => {
                    ntlb_absent = found.is_none();
                    core.vcounters.nested_tlb_misses += 1
                }
            }
        }
        self.cores[c].vcounters.host_walks += 1;
        let root = self.os.spaces[self.vms[vm].space].root;
        let (level, node) = self.pwc_start::<HOST>(c, g, ctx, self.host_top, root);
        *latency += self.cfg.pwc_latency;
        if self.front {
            self.rec_lat += self.cfg.pwc_latency;
        }
        match self.walk_table::<HOST>(c, vm, g, ctx, level, node, write, now, latency)? {
            Found::Leaf(e, size) => {
                let frame = (e & PTE_PFN_MASK) >> 12;
                let dirty = e & PTE_D != 0;
                if ntlb_absent {
                    self.cores[c].ntlb.insert_absent(g, size, ctx, TlbEntry { frame, dirty });
                } else if ntlb {
                    self.cores[c].ntlb.insert(g, size, ctx, TlbEntry { frame, dirty });
                }
                Ok(Some(((frame << 12) + g.offset(size), size, dirty)))
            }
            _ => Ok(None),
        }
    }

    /// A 2D walk for guest-virtual `va` on core `c` (the flattening paper's Fig. 8a): the
    /// guest PWC picks where the guest walk starts; every guest entry's gPA and the final
    /// data gPA go through [`Machine::nested_translate`]. The TLB entry maps gVA -> hPA at
    /// the smaller of the guest and host page sizes, dirty when both leaves are. A guest
    /// page fault is handled by the guest OS (`os.fault_cycles`), an EPT violation by the
    /// host (`virt.ept_fault_cycles`); then the walk starts again. Returns as
    /// [`Machine::walk`].
    fn walk_2d(&mut self, c: usize, va: VirtAddr, write: bool, now: u64) -> Result<(TlbEntry, PageSize, u64, u64), SimError> {
        let mut latency = 0u64;
        let mut fault_cost = 0;
        let mut faults = 0;
        loop {
            let core = &self.cores[c];
            let (ctx, space, vm) = (core.ctx, core.space, core.vm);
            let root = self.vms[vm].os.spaces[space].root;
            let (level, node) = self.pwc_start::<GUEST>(c, va, ctx, self.top, root);
            self.cores[c].counters.walks += 1;
            latency += self.cfg.pwc_latency;
            if self.front {
                self.rec_lat += self.cfg.pwc_latency;
            }
            // (guest-physical address the host must map, it is the data page)
            let host_missing = match self.walk_table::<GUEST>(c, vm, va, ctx, level, node, write, now, &mut latency)? {
                Found::Leaf(ge, gsize) => {
                    let gpa = (ge & PTE_PFN_MASK) + va.offset(gsize);
                    match self.nested_translate(c, vm, gpa, write, true, now, &mut latency)? {
                        Some((hpa, hsize, hdirty)) => {
                            let size = gsize.min(hsize);
                            let frame = (hpa & !(size.bytes() - 1)) >> 12;
                            let dirty = ge & PTE_D != 0 && hdirty;
                            return Ok((TlbEntry { frame, dirty }, size, latency, fault_cost));
                        }
                        None => Some((gpa, true)),
                    }
                }
                Found::HostMissing(gpa) => Some((gpa, false)),
                Found::Missing => None,
            };
            // Each fault maps one more page (a guest page, or the host page behind a guest
            // page-table node or data page): a handful at most.
            faults += 1;
            if faults > 64 {
                unreachable!("the 2D walk of {:#x} keeps faulting", va.0);
            }
            let cost = match host_missing {
                None => {
                    let gb = self.cfg.virt_guest_mem_gb;
                    self.vms[vm].os.fault_on(c, space, va, write).map_err(|e| crate::virt::guest_error(vm, gb, e))?;
                    let cost = self.cfg.os_fault_cycles + self.sync(Scope::Guest(vm), Some(c));
                    self.cores[c].counters.faults += 1;
                    cost
                }
                Some((gpa, data)) => {
                    let (hspace, gb) = (self.vms[vm].space, self.cfg.phys_size_gb);
                    self.os.fault_on(c, hspace, VirtAddr(gpa), write && data).map_err(|e| crate::virt::host_error(vm, gb, gpa, e))?;
                    let cost = self.cfg.virt_ept_fault_cycles + self.os_sync(Some(c));
                    let v = &mut self.cores[c].vcounters;
                    v.ept_violations += 1;
                    v.ept_fault_cycles += cost;
                    cost
                }
            };
            self.cores[c].counters.fault_cycles += cost;
            fault_cost += cost;
            latency += cost;
            if self.front {
                self.rec_fault(cost);
            }
        }
    }

    /// Translate `va` for core `c` at cycle `t`: L1 TLB, L2 TLB, then a walk. Returns the
    /// page's first frame, its size and the cycle the translation is known.
    #[inline]
    fn translate(&mut self, c: usize, va: VirtAddr, kind: RefKind, t: u64) -> Result<(u64, PageSize, u64), SimError> {
        let write = kind == RefKind::Store;
        let fetch = kind == RefKind::Fetch;
        if self.cfg.tlb_perfect {
            return self.translate_perfect(c, va, write, t);
        }
        let core = &mut self.cores[c];
        let ctx = core.ctx;
        let l1 = if fetch { &mut core.itlb } else { &mut core.dtlb };
        let k = &mut core.counters;
        if fetch {
            k.l1i_tlb_accesses += 1;
        } else {
            k.l1d_tlb_accesses += 1;
        }
        if let Some((e, size)) = l1.lookup(va, ctx) {
            if !(write && !e.dirty) {
                if fetch {
                    k.l1i_tlb_hits += 1;
                } else {
                    k.l1d_tlb_hits += 1;
                    match size {
                        PageSize::Size4K => k.l1d_tlb_hits_4k += 1,
                        PageSize::Size2M => k.l1d_tlb_hits_2m += 1,
                        PageSize::Size1G => k.l1d_tlb_hits_1g += 1,
                    }
                }
                return Ok((e.frame, size, t));
            }
            // A store through a clean translation: the hardware walks to set the PTE's D bit.
            k.dirty_walks += 1;
            return self.walk_and_fill(c, va, write, fetch, t, false);
        }
        if fetch {
            k.l1i_tlb_misses += 1;
        } else {
            k.l1d_tlb_misses += 1;
        }
        k.l2_tlb_accesses += 1;
        let t2 = t + self.cfg.tlb_l2_latency;
        let in_l2 = match core.stlb.lookup(va, ctx) {
            Some((e, size)) => {
                k.l2_tlb_hits += 1;
                if !(write && !e.dirty) {
                    let l1 = if fetch { &mut core.itlb } else { &mut core.dtlb };
                    l1.insert_absent(va, size, ctx, e);
                    return Ok((e.frame, size, t2));
                }
                k.dirty_walks += 1;
                true
            }
            None => {
                k.l2_tlb_misses += 1;
                false
            }
        };
        self.walk_and_fill(c, va, write, fetch, t2, !in_l2)
    }

    /// Walk and fill the TLBs. `missed`: neither TLB level holds `va` (no probe on fill);
    /// otherwise this walk only sets a dirty bit and the fills replace cached copies.
    fn walk_and_fill(&mut self, c: usize, va: VirtAddr, write: bool, fetch: bool, t: u64, missed: bool) -> Result<(u64, PageSize, u64), SimError> {
        if self.front {
            let (delta, kind, dependent) = self.rec_ref;
            self.rec_lat = 0;
            self.rec.push(Op::Walk { delta, kind, dependent, l2: t != 0 });
        }
        let (e, size, lat, fault_cycles) = self.walk(c, va, write, t)?;
        let done = if self.front {
            t // (the walk's `Op::End` follows its translation)
        } else {
            self.walk_timing(c, t, lat, fault_cycles)
        };
        let core = &mut self.cores[c];
        let ctx = core.ctx;
        let l1 = if fetch { &mut core.itlb } else { &mut core.dtlb };
        if missed {
            core.stlb.insert_absent(va, size, ctx, e);
            l1.insert_absent(va, size, ctx, e);
        } else {
            core.stlb.insert(va, size, ctx, e);
            l1.insert(va, size, ctx, e);
        }
        Ok((e.frame, size, done))
    }

    /// The timing of a walk that wanted to start at `t` and took `lat` cycles, `fault_cycles`
    /// of them in the OS: it waits for a free walker. Returns when the walk is done.
    #[inline(always)]
    pub(crate) fn walk_timing(&mut self, c: usize, t: u64, lat: u64, fault_cycles: u64) -> u64 {
        let core = &mut self.cores[c];
        let start = core.window.walkers.acquire(t, lat - fault_cycles);
        let done = start + lat;
        // Walk latency as the papers report it: the walk itself, not the wait for a walker.
        core.counters.record_walk_cycles(lat - fault_cycles);
        core.counters.walker_wait_cycles += start - t;
        if fault_cycles > 0 {
            // A page fault is a precise exception: younger instructions wait for the handler.
            core.window.stall_until(done);
        }
        done
    }

    fn translate_perfect(&mut self, c: usize, va: VirtAddr, write: bool, t: u64) -> Result<(u64, PageSize, u64), SimError> {
        if self.virt {
            return self.translate_perfect_2d(c, va, write, t);
        }
        let space = self.cores[c].space;
        if let Some((frame, size)) = self.os.translate(space, va) {
            return Ok((frame.0, size, t));
        }
        self.os.fault_on(c, space, va, write)?;
        let cost = self.cfg.os_fault_cycles + self.os_sync(Some(c));
        let k = &mut self.cores[c].counters;
        k.faults += 1;
        k.fault_cycles += cost;
        let (frame, size) = self.os.translate(space, va).expect("the fault handler mapped the page");
        self.cores[c].window.stall_until(t + cost);
        Ok((frame.0, size, t + cost))
    }

    /// [`Machine::translate_perfect`] in a VM: gVA -> gPA -> hPA functionally, faulting in
    /// the guest and the host as needed.
    fn translate_perfect_2d(&mut self, c: usize, va: VirtAddr, write: bool, t: u64) -> Result<(u64, PageSize, u64), SimError> {
        let (vm, space) = (self.cores[c].vm, self.cores[c].space);
        let mut cost = 0;
        let (gframe, gsize) = match self.vms[vm].os.translate(space, va) {
            Some(m) => m,
            None => {
                let gb = self.cfg.virt_guest_mem_gb;
                self.vms[vm].os.fault_on(c, space, va, write).map_err(|e| crate::virt::guest_error(vm, gb, e))?;
                cost += self.cfg.os_fault_cycles + self.sync(Scope::Guest(vm), Some(c));
                self.cores[c].counters.faults += 1;
                self.vms[vm].os.translate(space, va).expect("the guest's fault handler mapped the page")
            }
        };
        let gpa = VirtAddr(gframe.addr().0 + va.offset(gsize));
        let hspace = self.vms[vm].space;
        let (hframe, hsize) = match self.os.translate(hspace, gpa) {
            Some(m) => m,
            None => {
                let gb = self.cfg.phys_size_gb;
                self.os.fault_on(c, hspace, gpa, write).map_err(|e| crate::virt::host_error(vm, gb, gpa.0, e))?;
                let ept = self.cfg.virt_ept_fault_cycles + self.os_sync(Some(c));
                let v = &mut self.cores[c].vcounters;
                v.ept_violations += 1;
                v.ept_fault_cycles += ept;
                cost += ept;
                self.os.translate(hspace, gpa).expect("the host's fault handler mapped the page")
            }
        };
        self.cores[c].counters.fault_cycles += cost;
        let size = gsize.min(hsize);
        let hpa = hframe.addr().0 + gpa.offset(hsize);
        if cost > 0 {
            self.cores[c].window.stall_until(t + cost);
        }
        Ok((((hpa & !(size.bytes() - 1)) >> 12), size, t + cost))
    }

    /// Simulate one reference on core `c`.
    #[inline]
    pub fn step(&mut self, c: usize, r: Ref) -> Result<(), SimError> {
        let kind = r.kind();
        let va = VirtAddr(r.va);
        if self.front {
            // Translate only; the memory side replays the rest (`Machine::finish_ref`).
            let mark = self.rec.len();
            self.rec_ref = (r.inst_delta, kind, r.is_dependent());
            // (Dispatch is cycle 0 here: `t` is the L2 TLB's latency or 0.)
            let (frame, size, t) = self.translate(c, va, kind, 0)?;
            let line = ((frame << 12) + va.offset(size)) >> 6;
            if self.rec.len() == mark {
                self.rec.push(Op::Hit { delta: r.inst_delta, kind, dependent: r.is_dependent(), l2: t != 0, line });
            } else {
                let lat = self.take_rec_lat();
                self.rec.push(Op::End { line, lat });
            }
            self.count_ref(c, kind);
            return Ok(());
        }
        let issue = self.cores[c].window.dispatch(r.inst_delta, r.is_dependent());
        let (frame, size, t) = self.translate(c, va, kind, issue)?;
        let pa = (frame << 12) + va.offset(size);
        self.count_ref(c, kind);
        self.finish_ref(c, kind, pa >> 6, issue, t);
        if self.ptp_detector && self.cores[c].window.instructions() >= self.cores[c].ptp_epoch_end {
            self.ptp_epoch(c);
        }
        Ok(())
    }

    /// While recording: the cycles the walk spent since its last recorded step, for the
    /// `lat` field of its next `Op` (or as an `Op::Lat` of their own, should they not fit).
    #[inline(always)]
    fn take_rec_lat(&mut self) -> u32 {
        let n = std::mem::take(&mut self.rec_lat);
        u32::try_from(n).unwrap_or_else(|_| {
            self.rec.push(Op::Lat(n));
            0
        })
    }

    /// While recording: the OS's fault handler ran for `cost` cycles of the walk.
    fn rec_fault(&mut self, cost: u64) {
        let lat = self.take_rec_lat();
        self.rec.push(Op::Fault { cost, lat });
    }

    #[inline(always)]
    fn count_ref(&mut self, c: usize, kind: RefKind) {
        let k = &mut self.cores[c].counters;
        k.refs += 1;
        match kind {
            RefKind::Load => k.loads += 1,
            RefKind::Store => k.stores += 1,
            RefKind::Fetch => k.fetches += 1,
        }
    }

    /// The memory side of a reference of `kind` issued at `issue` and translated at `t`:
    /// its data access to `line` and its completion.
    #[inline(always)]
    pub(crate) fn finish_ref(&mut self, c: usize, kind: RefKind, line: u64, issue: u64, t: u64) {
        let port = if kind == RefKind::Fetch { Port::L1i } else { Port::L1d };
        let write = kind == RefKind::Store;
        let (lat, served) = self.access(c, line, LineKind::Data, write, port, t);
        let core = &mut self.cores[c];
        let k = &mut core.counters;
        k.translation_cycles += t - issue;
        served.count([&mut k.data_l1, &mut k.data_l2, &mut k.data_llc, &mut k.data_dram]);
        let start = if served == Served::L1 { t } else { core.window.mshrs.acquire(t, lat) };
        // Stores retire into the store buffer once translated; their misses do not hold
        // up retirement (but do occupy an MSHR).
        let complete = if write { t + 1 } else { start + lat };
        core.window.complete(complete);
    }

    /// Software pipeline over the batch, so host memory latency overlaps: `2 * D`
    /// references ahead, find the leaf page-table node functionally and prefetch its
    /// bookkeeping; `D` ahead, prefetch the PTE and the simulated L2/LLC sets its line maps
    /// to; `D / 2` ahead, read the (now cached) PTE and prefetch the sets of the data line.
    /// Purely a host-speed measure: it changes no simulated state. Each core runs its own
    /// pipeline over its own stream; a stale node id (after a remap, or a context switch to
    /// another address space) names in-bounds storage and only costs a useless prefetch.
    #[inline]
    fn prefetch_ahead(&self, c: usize, batch: &[Ref], i: usize, ring: &mut PrefetchRing) {
        const D: usize = PREFETCH_DISTANCE;
        let core = &self.cores[c];
        let sp = &self.os.spaces[core.space];
        let pt = &self.os.pt;
        if let Some(r) = batch.get(i + 2 * D) {
            ring.find_leaf(i + 2 * D, r.va, pt, sp.root);
        }
        if i < D {
            return; // the stages below need the first stage to have run for their slot
        }
        if let Some(r) = batch.get(i + D) {
            let leaf = ring.leaves[(i + D) % PREFETCH_RING];
            if leaf != NO_NODE && pt.node(leaf).low() == 1 {
                let idx = pt.node(leaf).index(VirtAddr(r.va));
                pt.prefetch_entry(leaf, idx);
                if !self.front {
                    self.prefetch_sets(c, pt.node(leaf).entry_addr(idx).line());
                }
            }
        }
        if self.front {
            return; // the stages below prefetch the memory side's structures
        }
        if let Some(r) = batch.get(i + D / 2) {
            let leaf = ring.leaves[(i + D / 2) % PREFETCH_RING];
            if leaf != NO_NODE && pt.node(leaf).low() == 1 {
                let va = VirtAddr(r.va);
                let e = pt.entry(leaf, pt.node(leaf).index(va));
                if e & PTE_P != 0 {
                    self.prefetch_sets(c, ((e & crate::pt::PTE_PFN_MASK) + va.offset(PageSize::Size4K)) >> 6);
                }
            }
        }
    }

    /// [`Machine::prefetch_ahead`] for a VM: `2D` ahead, find the guest leaf node; `D`
    /// ahead, prefetch the guest PTE and, through the host table (functionally), the
    /// simulated L2/LLC sets of its host-physical line; `D / 2` ahead, read the guest PTE
    /// and find the host leaf node of the data page, prefetching its entry and the sets of
    /// that entry's line; `D / 4` ahead, read that host entry and prefetch the data line's
    /// sets. Translating for a pipelined run, it leaves the caches' sets alone, and finds the
    /// host leaf as a hint at `D / 2` and prefetches its entry at `D / 4` (reads would stall
    /// the thread that is the bottleneck in a VM). Changes no simulated state.
    #[inline]
    fn prefetch_ahead_2d(&self, c: usize, batch: &[Ref], i: usize, ring: &mut PrefetchRing) {
        const D: usize = PREFETCH_DISTANCE;
        let core = &self.cores[c];
        let vm = &self.vms[core.vm];
        let (gsp, gpt) = (&vm.os.spaces[core.space], &vm.os.pt);
        let (hsp, hpt) = (&self.os.spaces[vm.space], &self.os.pt);
        // (Translating for a pipelined run, the caches are the other thread's business.)
        let sets = |line: u64| {
            if !self.front {
                self.prefetch_sets(c, line);
            }
        };
        // With several VMs the core switches guests: slots filled for another guest hold
        // ids of its tables, so every id is checked against this guest's before use (and
        // slots hold hints: a leaf is checked to be one).
        let valid = |leaf: NodeId| leaf != NO_NODE && gpt.has_node(leaf) && gpt.node(leaf).low() == 1;
        if let Some(r) = batch.get(i + 2 * D) {
            if !gpt.has_node(ring.leaf) {
                ring.region = u64::MAX;
            }
            ring.find_leaf(i + 2 * D, r.va, gpt, gsp.root);
        }
        if i < D {
            return;
        }
        if let Some(r) = batch.get(i + D) {
            let leaf = ring.leaves[(i + D) % PREFETCH_RING];
            if valid(leaf) {
                let idx = gpt.node(leaf).index(VirtAddr(r.va));
                gpt.prefetch_entry(leaf, idx);
                let gpa = VirtAddr(gpt.node(leaf).entry_addr(idx).0);
                let region = (vm.space, gpa.0 >> 21);
                if region != ring.pte_region {
                    ring.pte_region = region;
                    ring.pte_leaf = hpt.leaf_node(hsp.root, hsp.top, gpa).unwrap_or(NO_NODE);
                }
                if ring.pte_leaf != NO_NODE && hpt.has_node(ring.pte_leaf) {
                    let idx = hpt.node(ring.pte_leaf).index(gpa);
                    if self.front {
                        hpt.prefetch_entry(ring.pte_leaf, idx);
                    } else {
                        let h = hpt.entry(ring.pte_leaf, idx);
                        if h & PTE_P != 0 {
                            sets(((h & PTE_PFN_MASK) + gpa.offset(PageSize::Size4K)) >> 6);
                        }
                    }
                } else if !self.front {
                    if let Some(m) = hpt.translate(hsp.root, hsp.top, gpa) {
                        sets((m.frame.addr().0 + gpa.offset(m.size)) >> 6);
                    }
                }
            }
        }
        if let Some(r) = batch.get(i + D / 2) {
            let slot = (i + D / 2) % PREFETCH_RING;
            let leaf = ring.leaves[slot];
            ring.host_leaves[slot] = NO_NODE;
            if valid(leaf) {
                let va = VirtAddr(r.va);
                let e = gpt.entry(leaf, gpt.node(leaf).index(va));
                if e & PTE_P != 0 {
                    let gpa = VirtAddr((e & PTE_PFN_MASK) + va.offset(PageSize::Size4K));
                    if self.front {
                        // Only the host leaf's bookkeeping now; its entry at the next stage.
                        let hleaf = hpt.leaf_hint(hsp.root, gpa);
                        if hleaf != NO_NODE {
                            hpt.prefetch_node(hleaf);
                            ring.host_leaves[slot] = hleaf;
                        }
                    } else if let Some(hleaf) = hpt.leaf_node(hsp.root, hsp.top, gpa) {
                        let idx = hpt.node(hleaf).index(gpa);
                        hpt.prefetch_entry(hleaf, idx);
                        sets(hpt.node(hleaf).entry_addr(idx).line());
                        ring.host_leaves[slot] = hleaf;
                    }
                }
            }
        }
        if let Some(r) = batch.get(i + D / 4) {
            let (leaf, hleaf) = (ring.leaves[(i + D / 4) % PREFETCH_RING], ring.host_leaves[(i + D / 4) % PREFETCH_RING]);
            if valid(leaf) && hleaf != NO_NODE && hpt.has_node(hleaf) && hpt.node(hleaf).low() == 1 {
                let va = VirtAddr(r.va);
                let e = gpt.entry(leaf, gpt.node(leaf).index(va));
                let gpa = VirtAddr((e & PTE_PFN_MASK) + va.offset(PageSize::Size4K));
                let idx = hpt.node(hleaf).index(gpa);
                if self.front {
                    hpt.prefetch_entry(hleaf, idx);
                } else {
                    let h = hpt.entry(hleaf, idx);
                    if h & PTE_P != 0 {
                        sets(((h & PTE_PFN_MASK) + gpa.offset(PageSize::Size4K)) >> 6);
                    }
                }
            }
        }
    }

    /// Ask the host to load the sets of core `c`'s L2 and of the LLC that `line` maps to.
    #[inline(always)]
    pub(crate) fn prefetch_sets(&self, c: usize, line: u64) {
        self.cores[c].l2.prefetch_set(line);
        self.llc.prefetch_set(line);
    }

    /// Zero every statistic, keeping all state (caches, TLBs, page tables): the end of
    /// warm-up.
    pub fn reset_stats(&mut self) {
        for core in &mut self.cores {
            core.counters = CoreCounters::default();
            core.vcounters = VirtCounters::default();
            core.base_instr = core.window.instructions();
            core.base_cycles = core.window.cycles();
            core.window.rob_stall_cycles = 0;
            for cache in [&mut core.l1d, &mut core.l1i, &mut core.l2] {
                cache.counters = Default::default();
            }
        }
        self.llc.counters = Default::default();
        self.os.counters = Default::default();
        for vm in &mut self.vms {
            vm.os.counters = Default::default();
        }
        let (lat, e) = (self.dram_latency, self.dram.energy_nj);
        self.dram = Dram::new(lat, self.cfg.dram_bandwidth_gbps, self.cfg.core_freq_ghz, e);
    }

    /// Run `src` to its end or to `opts.max_refs`. `progress(refs_done)` is called every
    /// [`PROGRESS_EVERY`] references; returning false interrupts the run.
    #[inline(never)] // one call per run; keeps it a unit in profiles
    pub fn run(&mut self, src: &mut dyn RefSource, opts: RunOptions, progress: &mut dyn FnMut(u64) -> bool) -> Result<u64, SimError> {
        self.host_times = None;
        if self.pipelinable(&opts) {
            return self.run_pipelined(src, opts, progress);
        }
        self.run_loop(src, opts, progress, usize::MAX, &mut |_| {})
    }

    /// The event loop of [`Machine::run`]. Translating for a pipelined run, it hands the
    /// recorded ops to `flush` whenever `chunk` of them are ready (whole references).
    pub(crate) fn run_loop(
        &mut self,
        src: &mut dyn RefSource,
        opts: RunOptions,
        progress: &mut dyn FnMut(u64) -> bool,
        chunk: usize,
        flush: &mut dyn FnMut(&mut Vec<crate::pipeline::Op>),
    ) -> Result<u64, SimError> {
        let n = self.active;
        let mut batches: Vec<Vec<Ref>> = (0..n).map(|_| Vec::with_capacity(BATCH)).collect();
        let mut pos = vec![0usize; n];
        let mut ended = vec![false; n];
        let mut done: u64 = 0;
        let mut warm = opts.warmup == 0;
        let limit = opts.max_refs.map(|m| m + opts.warmup).unwrap_or(u64::MAX);
        let mut next_progress = PROGRESS_EVERY;
        // One prefetch pipeline per core: each runs ahead in its own stream.
        let mut rings: Vec<PrefetchRing> = (0..n).map(|_| PrefetchRing::new()).collect();
        'run: while done < limit {
            // The core with the smallest local clock goes next (ties: lowest id).
            let mut c = usize::MAX;
            let mut best = u64::MAX;
            for i in 0..n {
                if !ended[i] && (c == usize::MAX || self.cores[i].window.now() < best) {
                    best = self.cores[i].window.now();
                    c = i;
                }
            }
            if c == usize::MAX {
                break;
            }
            if pos[c] == batches[c].len() {
                src.next_batch(c, &mut batches[c])?;
                pos[c] = 0;
                rings[c].region = u64::MAX;
                if batches[c].is_empty() {
                    ended[c] = true;
                    continue;
                }
            }
            // One core: run the batch in a tight loop. Several: one reference, then re-pick.
            let left = usize::try_from(limit - done).unwrap_or(usize::MAX);
            let end = if n == 1 { batches[c].len().min(pos[c].saturating_add(left)) } else { pos[c] + 1 };
            while pos[c] < end {
                if self.virt {
                    self.prefetch_ahead_2d(c, &batches[c], pos[c], &mut rings[c]);
                } else {
                    self.prefetch_ahead(c, &batches[c], pos[c], &mut rings[c]);
                }
                let r = batches[c][pos[c]];
                pos[c] += 1;
                let mark = self.rec.len();
                if let Err(e) = self.step(c, r) {
                    self.rec.truncate(mark); // (a reference's ops are replayed whole or not at all)
                    return Err(e);
                }
                done += 1;
                if done & (crate::sched::EVENT_CHECK - 1) == 0 && self.sched.next_event != u64::MAX {
                    self.os_events()?;
                }
                if !warm && done == opts.warmup {
                    self.reset_stats();
                    if self.front {
                        self.rec.push(crate::pipeline::Op::Reset);
                    }
                    warm = true;
                }
                if self.rec.len() >= chunk {
                    flush(&mut self.rec);
                }
                if done >= next_progress {
                    next_progress += PROGRESS_EVERY;
                    if !progress(done) {
                        return Err(SimError::Interrupted);
                    }
                }
                if done >= limit {
                    break 'run;
                }
            }
        }
        Ok(done)
    }

    /// Invalidate translations on every core that runs `space` (TLBs and page-walk caches).
    pub fn shootdown(&mut self, what: Invalidate) -> usize {
        let mut n = 0;
        for core in &mut self.cores {
            n += core.itlb.invalidate(what) + core.dtlb.invalidate(what) + core.stlb.invalidate(what);
            n += core.pwc.invalidate(what);
        }
        n
    }

    /// Invalidate host-side translations of VMs (nested TLBs and vPWCs) on every core: the
    /// gPA ranges and contexts of `what` are a VM's (`VPID << 12`).
    pub fn shootdown_nested(&mut self, what: Invalidate) -> usize {
        let mut n = 0;
        for core in &mut self.cores {
            n += core.ntlb.invalidate(what) + core.vpwc.invalidate(what);
        }
        n
    }

    /// All statistics, with the glossary's names. One core: bare names. Several: `coreN.`
    /// per core plus sums (and machine-wide ratios) under the bare names.
    pub fn stats(&self) -> Stats {
        let mut s = Stats::default();
        let multi = self.cores.len() > 1;
        let mut sum = CoreCounters::default();
        let mut vsum = VirtCounters::default();
        let (mut instr, mut cycles, mut rob_stalls) = (0u64, 0u64, 0u64);
        let mut caches = [[0u64; 7]; 3]; // l1i, l1d, l2: accesses, misses per kind..., writebacks
        let mut cache_energy = 0.0;
        for (i, core) in self.cores.iter().enumerate() {
            sum.add(&core.counters);
            vsum.add(&core.vcounters);
            instr += core.instructions();
            cycles = cycles.max(core.cycles());
            rob_stalls += core.window.rob_stall_cycles;
            for (j, cache) in [&core.l1i, &core.l1d, &core.l2].into_iter().enumerate() {
                for kind in 0..3 {
                    caches[j][kind] += cache.counters.accesses[kind];
                    caches[j][3 + kind] += cache.counters.misses[kind];
                }
                caches[j][6] += cache.counters.writebacks;
                cache_energy += (cache.total_accesses() + cache.counters.writebacks) as f64 * cache.energy_nj;
            }
            if multi {
                let p = format!("core{i}.");
                core.counters.emit(&p, &mut s);
                s.int(format!("{p}instructions"), core.instructions());
                s.int(format!("{p}cycles"), core.cycles());
                s.ratio(format!("{p}ipc"), core.instructions(), core.cycles());
                derived(&mut s, &p, &core.counters, core.instructions());
                if self.virt {
                    core.vcounters.emit(&p, &mut s);
                    derived_virt(&mut s, &p, &core.counters, &core.vcounters);
                }
            }
        }
        s.int("instructions", instr);
        s.int("cycles", cycles);
        s.ratio("ipc", instr, cycles);
        sum.emit("", &mut s);
        derived(&mut s, "", &sum, instr);
        if self.virt {
            vsum.emit("", &mut s);
            derived_virt(&mut s, "", &sum, &vsum);
        }
        s.int("rob_stall_cycles", rob_stalls);
        for (j, name) in ["l1i", "l1d", "l2"].iter().enumerate() {
            let c = &caches[j];
            emit_cache(&mut s, name, [c[0], c[1], c[2]], [c[3], c[4], c[5]], c[6]);
        }
        let l = &self.llc.counters;
        emit_cache(&mut s, "llc", l.accesses, l.misses, l.writebacks);
        cache_energy += (self.llc.total_accesses() + l.writebacks) as f64 * self.llc.energy_nj;
        s.int("dram.reads", self.dram.reads);
        s.int("dram.writes", self.dram.writes);
        s.int("dram.queue_cycles", self.dram.queue_cycles);
        let dram_energy = (self.dram.reads + self.dram.writes) as f64 * self.dram.energy_nj;
        s.float("energy_nj.cache", cache_energy);
        s.float("energy_nj.dram", dram_energy);
        s.float("energy_nj.total", cache_energy + dram_energy);
        if self.virt {
            // Bare names: the guests' (the application's) tables and memory; `host.`: the
            // hypervisor's EPTs and the machine's memory.
            let guests: Vec<&Os> = self.vms.iter().map(|v| &v.os).collect();
            emit_os(&mut s, "", &guests, self.top);
            emit_os(&mut s, "host.", &[&self.os], self.host_top);
        } else {
            emit_os(&mut s, "", &[&self.os], self.top);
        }
        s
    }
}

/// Page tables, mapped memory and OS statistics of `oses` (summed), under prefix `p`.
fn emit_os(s: &mut Stats, p: &str, oses: &[&Os], top: u8) {
    let sum = |f: &dyn Fn(&Os) -> u64| oses.iter().map(|os| f(os)).sum::<u64>();
    s.int(format!("{p}pt.nodes"), sum(&|os| os.pt.total_nodes()));
    let mut bytes = 0;
    for level in 1..=top {
        s.int(format!("{p}pt.nodes.l{level}"), sum(&|os| os.pt.nodes_at(level)));
        let b = sum(&|os| os.pt.bytes_at(level));
        s.int(format!("{p}pt_bytes.l{level}"), b);
        bytes += b;
    }
    s.int(format!("{p}pt_bytes"), bytes);
    s.int(format!("{p}pt.flat_nodes"), sum(&|os| os.pt.flat_nodes()));
    s.int(format!("{p}pt.flatten_fallbacks"), sum(&|os| os.pt.flatten_fallbacks));
    s.int(format!("{p}pt.unflattened"), sum(&|os| os.pt.unflattened));
    let mapped = sum(&|os| os.spaces.iter().map(|sp| sp.mapped_bytes).sum());
    let huge = sum(&|os| os.spaces.iter().map(|sp| sp.huge_bytes).sum());
    s.int(format!("{p}mapped_bytes"), mapped);
    s.ratio(format!("{p}huge_coverage"), huge, mapped);
    s.int(format!("{p}phys.free_bytes"), sum(&|os| os.phys.free_frames()) << 12);
    s.int(format!("{p}phys.free_2m_blocks"), sum(&|os| os.phys.free_2m_blocks()));
    Os::emit_sum(oses, p, s);
}

/// Ratios of 2D walks (under `prefix`).
fn derived_virt(s: &mut Stats, p: &str, k: &CoreCounters, v: &VirtCounters) {
    s.ratio(format!("{p}walk_steps_per_walk.guest"), v.guest_steps, k.walks);
    s.ratio(format!("{p}walk_steps_per_walk.host"), v.host_steps, k.walks);
    s.int(format!("{p}nested_tlb.accesses"), v.nested_tlb_hits + v.nested_tlb_misses);
    s.ratio(format!("{p}nested_tlb.hit_rate"), v.nested_tlb_hits, v.nested_tlb_hits + v.nested_tlb_misses);
    s.ratio(format!("{p}walk_steps_per_host_walk"), v.host_steps, v.host_walks);
}

/// Ratios derived from counters (under `prefix`).
fn derived(s: &mut Stats, p: &str, k: &CoreCounters, instr: u64) {
    let kilo = instr as f64 / 1000.0;
    let mpki = |m: u64| if kilo > 0.0 { m as f64 / kilo } else { 0.0 };
    s.float(format!("{p}tlb.l1d.mpki"), mpki(k.l1d_tlb_misses));
    s.float(format!("{p}tlb.l1i.mpki"), mpki(k.l1i_tlb_misses));
    s.float(format!("{p}tlb.l2.mpki"), mpki(k.l2_tlb_misses));
    s.ratio(format!("{p}walk_steps_per_walk"), k.walk_steps, k.walks);
    s.ratio(format!("{p}walk_cycles_per_walk"), k.walk_cycles, k.walks);
}

fn emit_cache(s: &mut Stats, name: &str, acc: [u64; 3], miss: [u64; 3], wb: u64) {
    let (a, m): (u64, u64) = (acc.iter().sum(), miss.iter().sum());
    s.int(format!("cache.{name}.accesses"), a);
    s.int(format!("cache.{name}.hits"), a - m);
    s.int(format!("cache.{name}.misses"), m);
    s.ratio(format!("cache.{name}.miss_rate"), m, a);
    for kind in [LineKind::Data, LineKind::PageTable] {
        let i = kind as usize;
        s.int(format!("cache.{name}.{}.accesses", kind.name()), acc[i]);
        s.int(format!("cache.{name}.{}.misses", kind.name()), miss[i]);
        s.ratio(format!("cache.{name}.{}.miss_rate", kind.name()), miss[i], acc[i]);
    }
    s.int(format!("cache.{name}.writebacks"), wb);
}
