//! The memory side of the machine: each core's timing window and private caches (L1I, L1D,
//! L2), the shared LLC and DRAM. It knows nothing of translation: it serves accesses to
//! physical lines, of data or page-table entries, and turns their latencies into cycles.
//! [`Direct`] is the memory port that does each reference's accesses at once.

use crate::memory::cache::{Cache, CacheParams, Victim};
use crate::memory::dram::Dram;
use crate::memory::port::{MemPort, Steer, Table};
use crate::memory::prefetcher::Prefetch;
use crate::memory::repl::csalt::Criticality;
use crate::memory::repl::LineKind;
use crate::memory::repl::Policy;
use crate::param::{CsaltFormula, LlcFill, Prefetcher, WalkerPort};
use crate::stats::{CoreCounters, VirtCounters};
use crate::timing::{Early, InFlight, Pool, Window};
use crate::workload::RefKind;

use crate::param::{component, Limit};

component! {
    /// The LLC's own keys beside its geometry (`cache.llc.*`): way partitioning, inclusion, fill.
    LlcParams {
        ways_per_core: u64 = 0; "ways_per_core"; Some(Limit::Int(64)); "way partitioning of the LLC (as Intel's Cache Allocation Technology): core c fills only ways c*n .. c*n+n-1, modulo the ways (they overlap when cores x n exceeds them), and hits in any; with n = ways / cores and programs that share no memory, each core has an LLC of its own. LRU or FIFO only; 0: shared";
        inclusive: bool = false; "inclusive"; None; "LLC evictions back-invalidate private caches";
        fill: crate::param::LlcFill = crate::param::LlcFill::Inclusive; "fill"; None; "what fills the LLC: every line fetched from DRAM (inclusive), or only lines evicted from an L2, clean or dirty (victim, as Zen's L3: an LLC hit moves the line to the L2, so the two hold different lines, unless another core's L2 put it there: a line likely shared stays, as in AMD's mostly exclusive L3; and a line another core's L2 holds is served from there, through the L3's shadow tags, at the LLC's latency)";
    }
    check(p, key) {
        if p.fill == LlcFill::Victim && p.inclusive {
            return Err(crate::param::invalid(key("fill"), "a victim LLC cannot be inclusive (cache.llc.inclusive=true): it holds only what the L2s evicted"));
        }
        Ok(())
    }
}

component! {
    /// Coherence of the private caches (`coherence.*`).
    CoherenceParams {
        enabled: bool = false; "enabled"; None; "coherence of the private caches (a directory at the LLC, MESI-like): a store invalidates the line's copies in the other cores' L1s and L2s and, when there were any, waits for the directory's round trip (2 x cache.llc.latency); false: stores leave other cores' copies alone (no data is modelled, only where lines are). TCAT needs it";
    }
}

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

/// Where an access enters the hierarchy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    L1i,
    L1d,
    L2,
}

/// One hardware context's share of the memory side: its instruction window and what it
/// counts. A core runs one context, or several (SMT, `system.threads_per_core`) that share
/// its [`CoreMem`].
pub struct ContextMem {
    pub window: Window,
    /// The counters of the glossary this side produces (walk reads and where they were
    /// served, walk cycles, data accesses); the translation side counts the rest.
    pub counters: CoreCounters,
    pub vcounters: VirtCounters,
    /// Where an L3 TLB's lines were served (with `pomtlb.enabled`).
    pub tlb_lines: TlbLineCounters,
    /// Copies of lines in other cores' private caches its stores invalidated
    /// (`coherence.enabled`).
    pub coherence_invalidations: u64,
    /// ASAP's prefetches (with `asap.enabled`).
    pub asap: AsapCounters,
    /// A TLB prefetcher's walks (`tlb.prefetcher`).
    pub tlb_prefetch: PrefetchWalkCounters,
    /// Walks after an L3 TLB lookup (its misses, as the memory side sees them: CSALT-CD),
    /// since the end of warm-up.
    lookup_walks: u64,
    /// `tlb_lines.reads` at the end of warm-up: CSALT-CD's lookups count from there.
    lookup_reads_origin: u64,
}

impl ContextMem {
    fn new(p: &MemoryParams) -> ContextMem {
        // SMT: the contexts of a core split its dispatch width, reorder buffer and store
        // buffer evenly (as Intel's cores partition the ROB and store buffer statically).
        let n = p.threads_per_core.max(1);
        ContextMem {
            window: Window::new((p.core.width / n).max(1), (p.core.rob / n).max(1), p.core.store_buffer.div_ceil(n), p.core.lq.div_ceil(n)),
            counters: CoreCounters::default(),
            vcounters: VirtCounters::default(),
            tlb_lines: TlbLineCounters::default(),
            coherence_invalidations: 0,
            asap: AsapCounters::default(),
            tlb_prefetch: PrefetchWalkCounters::default(),
            lookup_walks: 0,
            lookup_reads_origin: 0,
        }
    }

    /// Instructions dispatched since the machine was built.
    pub fn instructions(&self) -> u64 {
        self.window.instructions()
    }

    /// The context's clock: cycles since the machine was built to run what it dispatched to
    /// retirement.
    pub fn cycles(&self) -> u64 {
        self.window.cycles()
    }
}

/// One core's share of the memory side: its private caches, MSHRs and page walkers, and
/// what is in flight there, shared by its hardware contexts.
pub struct CoreMem {
    pub l1i: Cache,
    pub l1d: Cache,
    pub l2: Cache,
    /// L1D misses in flight (`core.mshrs`) and page walks (`core.walkers`).
    pub mshrs: Pool,
    pub walkers: Pool,
    /// Lines on their way to this core (by line), and walks not yet done (by 4 KB page of
    /// the translated address's frame): see [`InFlight`].
    fills: InFlight,
    walks: InFlight,
    /// Data prefetchers (`cache.l1d.prefetcher`, `cache.l2.prefetcher`).
    pf_l1d: Prefetch,
    pf_l2: Prefetch,
}

impl CoreMem {
    fn new(p: &MemoryParams, s: u64) -> CoreMem {
        CoreMem {
            l1i: Cache::new(p.l1i.size_kb, p.l1i.ways, p.l1i.latency, p.l1i.policy, p.l1i.energy_nj, s + 4),
            l1d: Cache::new(p.l1d.size_kb, p.l1d.ways, p.l1d.latency, p.l1d.policy, p.l1d.energy_nj, s + 5)
                .with_prefetcher(p.l1d_prefetch.prefetcher != Prefetcher::None),
            l2: Cache::new(p.l2.size_kb, p.l2.ways, p.l2.latency, p.l2.policy, p.l2.energy_nj, s + 6)
                .with_csalt(p.csalt, s + 6)
                .with_prefetcher(p.l2_prefetch.prefetcher != Prefetcher::None),
            mshrs: Pool::new(p.core.mshrs, p.pools),
            walkers: Pool::new(p.core.walkers, p.pools),
            fills: InFlight::default(),
            walks: InFlight::default(),
            pf_l1d: Prefetch::new(p.l1d_prefetch.prefetcher, p.l1d_prefetch.degree),
            pf_l2: Prefetch::new(p.l2_prefetch.prefetcher, p.l2_prefetch.degree),
        }
    }
}

crate::stats::counters! {
    /// The memory side's share of an L3 TLB in memory (the POM-TLB): its lines' trips
    /// through the caches (statistics `pomtlb.*`).
    pub struct TlbLineCounters under "pomtlb." {
        reads: "line_reads" => (Mechanisms, Counter, "lines",
            "POM-TLB lines read by lookups, counted by the memory side: two per lookup.").only("`pomtlb.enabled=true`"),
        served_l2: "served.l2" => (Mechanisms, Counter, "lines",
            "Line reads served by the core's L2 cache (the MMU's path skips the L1D).").only("`pomtlb.enabled=true`"),
        served_llc: "served.llc" => (Mechanisms, Counter, "lines", "Line reads served by the LLC.").only("`pomtlb.enabled=true`"),
        served_dram: "served.dram" => (Mechanisms, Counter, "lines",
            "Line reads served by the die-stacked DRAM that holds the POM-TLB (`pomtlb.latency`).").only("`pomtlb.enabled=true`"),
        lookup_cycles: "lookup_cycles" => (Mechanisms, Counter, "cycles",
            "Cycles lookups added to translation: per lookup, the slower of its two parallel line reads.").only("`pomtlb.enabled=true`"),
        writes: "line_writes" => (Mechanisms, Counter, "lines",
            "POM-TLB lines written by fills (stores through L2, write-allocate).").only("`pomtlb.enabled=true`"),
    }
}

crate::stats::counters! {
    /// ASAP's page-table prefetches and where they were served (statistics `asap.*`).
    pub struct AsapCounters under "asap." {
        prefetches: "prefetches" => (Mechanisms, Counter, "lines",
            "Page-table lines ASAP prefetched as walks started: the entries of the last `asap.levels` levels below each walk's first node (the walk reads them later, finding them in flight or arrived). Each is a cache access of kind `pt`, but not a walk step.")
            .only("`asap.enabled=true`"),
        served_l1: "served.l1" as "served.<where>" => (Mechanisms, Counter, "lines",
            "Where ASAP's prefetches were served (`l1` when the walk would have hit there anyway).").only("`asap.enabled=true`"),
        served_l2: "served.l2",
        served_llc: "served.llc",
        served_dram: "served.dram",
    }
}

crate::stats::counters! {
    /// A TLB prefetcher's walks, their reads and where those were served (statistics
    /// `tlb.prefetch.*`, beside the prefetcher's own).
    pub struct PrefetchWalkCounters under "tlb.prefetch." {
        walks: "walks" => (Tlbs, Counter, "walks",
            "Prefetch walks: walks for requested pages, on a walker of the core once the triggering reference's translation was known; no reference waits for them. Not in `walks`; their page-walk-cache lookups count in `pwc.*`, their reads in `tlb.prefetch.steps`, not `walk_steps`.")
            .only("`tlb.prefetcher` other than `none`"),
        steps: "steps" => (Tlbs, Counter, "entries",
            "Page-table entries prefetch walks read, each a cache access of kind `pt` entering at `walker.port`.").only("`tlb.prefetcher` other than `none`"),
        served_l1: "served.l1" as "served.<where>" => (Tlbs, Counter, "entries",
            "Where prefetch walks' reads were served.").only("`tlb.prefetcher` other than `none`"),
        served_l2: "served.l2",
        served_llc: "served.llc",
        served_dram: "served.dram",
        walk_cycles: "walk_cycles" => (Tlbs, Counter, "cycles",
            "Cycles prefetch walks held their walkers (from getting one to their last read).").only("`tlb.prefetcher` other than `none`"),
        walker_wait_cycles: "walker_wait_cycles" => (Tlbs, Counter, "cycles",
            "Cycles prefetch walks waited for a free walker.").only("`tlb.prefetcher` other than `none`"),
    }
}

/// What the memory side is built from: the cores' windows and pools, the caches, DRAM, and
/// what it needs to know of the translation side (where walks enter, the TLBs' latencies
/// for CSALT-CD's estimate, the POM-TLB's die-stacked DRAM and address range).
pub struct MemoryParams<'a> {
    pub threads_per_core: u64,
    pub core: &'a crate::timing::window::CoreParams,
    pub pools: crate::param::PoolModel,
    pub l1i: &'a CacheParams,
    pub l1d: &'a CacheParams,
    pub l2: &'a CacheParams,
    pub llc: &'a CacheParams,
    pub l1d_prefetch: &'a crate::memory::prefetcher::CachePrefetchParams,
    pub l2_prefetch: &'a crate::memory::prefetcher::CachePrefetchParams,
    pub llc_keys: &'a LlcParams,
    pub coherence: bool,
    pub csalt: &'a crate::memory::repl::csalt::CsaltParams,
    pub dram: &'a crate::memory::dram::DramParams,
    pub pom: StackedDram,
    pub walker_port: WalkerPort,
    pub l1_tlb_latency: u64,
    pub l2_tlb_latency: u64,
    /// Page-table prioritization from the start (`ptp.mode=always`), and its probability.
    pub ptp_always: bool,
    pub ptp_probability: f64,
}

/// The POM-TLB's die-stacked DRAM: its latency and bandwidth, and the first line of the
/// POM-TLB's range (`u64::MAX`: no POM-TLB).
#[derive(Clone, Copy, Debug)]
pub struct StackedDram {
    pub latency: u64,
    pub bandwidth_gbps: f64,
    pub first_line: u64,
}

pub struct MemorySide {
    /// Per hardware context (a stream), and per core.
    pub ctxs: Vec<ContextMem>,
    pub cores: Vec<CoreMem>,
    /// The core each context runs on, and whether that is ever another than its own number
    /// (SMT): without SMT, the hot paths skip the lookup.
    core_of: Vec<usize>,
    smt: bool,
    /// Contexts per core (`system.threads_per_core`): core `k` runs contexts `k * per ..`.
    per: usize,
    pub llc: Cache,
    pub dram: Dram,
    /// The die-stacked DRAM of an L3 TLB in memory: it serves every line from `tlb_lo` up.
    pub stacked: Dram,
    /// No request comes before this cycle: the dispatch clock, before its dispatch, of the
    /// context the engine runs, which is the one furthest behind (see [`Dram::access`]).
    floor: u64,
    tlb_lo: u64,
    /// Some cache partitions its ways with CSALT: its epochs end on the memory side.
    partitioned: bool,
    /// CSALT-CD's estimators (with `csalt-cd` on some cache).
    cd: Option<Box<CdEstimator>>,
    /// Where page-walk reads enter the hierarchy.
    walk_entry: Entry,
    llc_inclusive: bool,
    /// `cache.llc.fill=victim`: only L2 evictions fill the LLC.
    llc_victim: bool,
    l2_tlb_latency: u64,
    /// `core.inflight`.
    inflight: bool,
    /// Some private cache has a prefetcher.
    prefetching: bool,
    /// `coherence.enabled`: stores invalidate other cores' copies.
    coherence: bool,
}

/// When an access is asked for, and whether a miss in the L1 must first get an MSHR
/// ([`MemorySide::access_from`]).
#[derive(Clone, Copy)]
enum Ask {
    /// At this cycle; a miss goes below the L1 at once.
    At(u64),
    /// At this cycle; a miss goes below the L1 once it has an MSHR.
    Mshr(u64),
}

impl MemorySide {
    /// The memory side of `contexts` hardware contexts, `system.threads_per_core` to a core
    /// (context `i` on core `i / threads_per_core`); core `i`'s structures are seeded from
    /// `seed` and `i` as [`core_seed`] says.
    pub fn new(p: &MemoryParams, contexts: usize, seed: u64) -> MemorySide {
        let per = p.threads_per_core.max(1) as usize;
        let cores = contexts.div_ceil(per);
        let mut m = MemorySide {
            ctxs: (0..contexts).map(|_| ContextMem::new(p)).collect(),
            core_of: (0..contexts).map(|i| i / per).collect(),
            smt: per > 1,
            per,
            cores: (0..cores as u64).map(|i| CoreMem::new(p, core_seed(seed, i))).collect(),
            llc: Cache::new(p.llc.size_kb, p.llc.ways, p.llc.latency, p.llc.policy, p.llc.energy_nj, seed ^ 0x11c)
                .with_csalt(p.csalt, seed ^ 0x11c)
                .with_ways_per_owner(cores, p.llc_keys.ways_per_core),
            dram: Dram::new(
                p.dram.latency_cycles(p.core.freq_ghz),
                p.dram.bandwidth_gbps,
                p.core.freq_ghz,
                p.dram.energy_nj,
                p.dram.bank_timing(p.core.freq_ghz),
            )
            .with_drains(p.dram.drain_timing(p.core.freq_ghz)),
            stacked: Dram::new(p.pom.latency, p.pom.bandwidth_gbps, p.core.freq_ghz, 0.0, None),
            floor: 0,
            tlb_lo: p.pom.first_line,
            partitioned: [p.l2.policy, p.llc.policy].iter().any(|p| matches!(p, Policy::CsaltD | Policy::CsaltCd)),
            cd: [p.l2.policy, p.llc.policy].contains(&Policy::CsaltCd).then(|| Box::new(CdEstimator::new(p, cores))),
            walk_entry: match p.walker_port {
                WalkerPort::L1d => Entry::L1d,
                WalkerPort::L2 => Entry::L2,
            },
            llc_inclusive: p.llc_keys.inclusive,
            llc_victim: p.llc_keys.fill == LlcFill::Victim,
            l2_tlb_latency: p.l2_tlb_latency,
            inflight: p.core.inflight,
            prefetching: p.l1d_prefetch.prefetcher != Prefetcher::None || p.l2_prefetch.prefetcher != Prefetcher::None,
            coherence: p.coherence,
        };
        // Caches with policy `ptp` protect every core's page-table lines from the start
        // (`ptp.mode=always`), or none until the phase detector finds a TLB-miss phase.
        let all = if p.ptp_always { u64::MAX } else { 0 };
        m.steer(Steer::Ptp { probability: p.ptp_probability, cores: all, llc: all });
        m
    }

    /// One access to `line` by core `c`, entering at `entry`. Fills every level on the way
    /// back (non-inclusive, non-exclusive; inclusive LLC back-invalidates on eviction).
    /// Returns the load-to-use latency and where it was served.
    #[inline(always)]
    pub fn access(&mut self, c: usize, line: u64, kind: LineKind, write: bool, entry: Entry, now: u64) -> (u64, Served) {
        let (lat, served, _) = self.access_from(c, line, kind, write, entry, Ask::At(now));
        (lat, served)
    }

    /// [`MemorySide::access`], asked for at `ask`'s cycle; with [`Ask::Mshr`] an L1 miss leaves
    /// the L1 only once it has an MSHR: the levels below, and the DRAM's banks and channel, see
    /// it from that cycle, which is returned (the asking cycle for a hit, a miss with
    /// [`Ask::At`], or a line whose fill is in flight, which merges into that fill and takes
    /// none). (Booked from when it was asked for, a burst of misses that waits for MSHRs took
    /// the DRAM channel all at once, waited for it as if nothing held the misses back, and then
    /// waited for the MSHRs again. The in-flight lookup here and in `arrival` is one slot read.)
    #[inline(always)]
    fn access_from(&mut self, c: usize, line: u64, kind: LineKind, write: bool, entry: Entry, ask: Ask) -> (u64, Served, u64) {
        let (now, mshr) = match ask {
            Ask::At(t) => (t, false),
            Ask::Mshr(t) => (t, true),
        };
        let k = self.core_of(c);
        let owner = k as u8;
        // A store takes the line exclusively: the other cores' copies go first.
        let ownership = if write && self.coherence { self.invalidate_copies(c, k, line) } else { 0 };
        let core = &mut self.cores[k];
        let l1 = match entry {
            Entry::L1d => Some(&mut core.l1d),
            Entry::L1i => Some(&mut core.l1i),
            Entry::L2 => None,
        };
        if let Some(l1) = l1 {
            if l1.access(line, kind, write) {
                return (l1.latency + ownership, Served::L1, now);
            }
        }
        let now = if mshr && !(self.inflight && self.cores[k].fills.pending(line, now).is_some()) {
            let floor = self.pool_floor(c);
            if kind == LineKind::PageTable {
                self.cores[k].mshrs.start_ahead(now, floor)
            } else {
                self.cores[k].mshrs.start(now, floor)
            }
        } else {
            now
        };
        let core = &mut self.cores[k];
        // (Only the MMU writes at L2: the L3 TLB's fills.)
        let (lat, served) = if core.l2.access(line, kind, write && entry == Entry::L2) {
            (core.l2.latency, Served::L2)
        } else if self.llc.access(line, kind, false) || self.llc_victim && self.in_another_l2(k, line) {
            (self.llc.latency, Served::Llc)
        } else {
            let dram = if line >= self.tlb_lo { &mut self.stacked } else { &mut self.dram };
            let lat = self.llc.latency + dram.access(self.floor, now, line, false);
            if !self.llc_victim {
                if let Some(v) = self.llc.fill(line, kind, false, owner) {
                    self.evict_from_llc(v.line, v.dirty, now);
                }
            }
            (lat, Served::Dram)
        };
        if self.partitioned {
            self.end_epochs(k);
        }
        let lat = lat + ownership;
        if served != Served::L2 {
            // The line is now in the LLC; install it in L2. (A victim LLC hands its copy
            // over: it holds only lines no L2 holds, and the L2 takes its dirt.)
            let moved_dirty = self.llc_victim && served == Served::Llc && self.take_from_llc(line, owner);
            let v = self.cores[k].l2.fill(line, kind, moved_dirty || write && entry == Entry::L2, owner);
            self.l2_victim(v, owner, now);
        }
        let core = &mut self.cores[k];
        let l1 = match entry {
            Entry::L1d => &mut core.l1d,
            Entry::L1i => &mut core.l1i,
            Entry::L2 => return (lat, served, now),
        };
        let v = l1.fill(line, kind, write, owner);
        self.l1_victim(k, v, owner, now);
        (lat, served, now)
    }

    /// Coherence (`coherence.enabled`): context `c` on core `k` stores to `line`, so every other
    /// core's L1 and L2 copy goes (their dirt written back to the LLC's level: no data is
    /// modelled). Returns the cycles the store waits for the directory's invalidations and
    /// acknowledgements: a round trip at the LLC's latency when there were copies.
    #[inline(never)]
    fn invalidate_copies(&mut self, c: usize, k: usize, line: u64) -> u64 {
        let mut copies = 0;
        for core in self.cores.iter_mut().enumerate().filter(|&(i, _)| i != k).map(|(_, core)| core) {
            for cache in [&mut core.l1d, &mut core.l1i, &mut core.l2] {
                copies += u64::from(cache.invalidate(line).is_some());
            }
        }
        if copies == 0 {
            return 0;
        }
        self.ctxs[c].coherence_invalidations += copies;
        2 * self.llc.latency
    }

    /// With a victim LLC, whether another core than `k` holds `line` in its L2: a miss in the
    /// LLC is then served from there (Zen's L3 keeps shadow tags of the L2s and transfers the
    /// line core to core), at the LLC's latency, not from DRAM. (An inclusive-fill LLC holds
    /// such lines itself.)
    #[inline(never)]
    fn in_another_l2(&self, k: usize, line: u64) -> bool {
        self.cores.iter().enumerate().any(|(i, c)| i != k && c.l2.contains(line))
    }

    /// A victim LLC hands `line` up to core `owner`'s L2: it leaves the LLC, unless another
    /// core put it there (the line is likely shared: AMD's "mostly exclusive" L3 then keeps a
    /// copy, behaving inclusively for data several cores access). Returns whether the L2
    /// takes the line's dirt with it.
    #[inline(never)]
    fn take_from_llc(&mut self, line: u64, owner: u8) -> bool {
        if self.llc.owner_of(line).is_some_and(|o| o != owner) {
            return false;
        }
        self.llc.invalidate(line).unwrap_or(false)
    }

    /// A line left core `k`'s L1: a dirty one is written back to its L2.
    #[inline(always)]
    fn l1_victim(&mut self, k: usize, v: Option<Victim>, owner: u8, now: u64) {
        if let Some(v) = v {
            if v.dirty {
                let w = self.cores[k].l2.write_back(v.line, v.kind, owner);
                self.l2_victim(w, owner, now);
            }
        }
    }

    /// A line left an L2: a dirty one is written back to the LLC, and a victim LLC takes a
    /// clean one too.
    #[inline(always)]
    fn l2_victim(&mut self, v: Option<Victim>, owner: u8, now: u64) {
        if let Some(v) = v {
            if v.dirty {
                if let Some(w) = self.llc.write_back(v.line, v.kind, owner) {
                    self.evict_from_llc(w.line, w.dirty, now);
                }
            } else if self.llc_victim {
                self.clean_victim(v, owner, now);
            }
        }
    }

    /// A clean line left an L2 for a victim LLC (out of line: most machines have none).
    #[inline(never)]
    fn clean_victim(&mut self, v: Victim, owner: u8, now: u64) {
        if let Some(w) = self.llc.take_victim(v.line, v.kind, owner) {
            self.evict_from_llc(w.line, w.dirty, now);
        }
    }

    /// After a demand data access to `line` by core `c` at `t`, served by `served`: train the
    /// L1D prefetcher (every access) and the L2's (accesses that missed the L1D), and bring
    /// in what they name.
    #[inline(never)]
    fn prefetch_after(&mut self, c: usize, line: u64, served: Served, t: u64) {
        let k = self.core_of(c);
        for l in self.cores[k].pf_l1d.train(line) {
            // (A stream's next line is mostly there already: asked before the call.)
            if !self.cores[k].l1d.contains(l) {
                self.prefetch_line(k, l, Entry::L1d, t);
            }
        }
        if served != Served::L1 {
            for l in self.cores[k].pf_l2.train(line) {
                self.prefetch_line(k, l, Entry::L2, t);
            }
        }
    }

    /// Prefetch data `line` into core `k`'s L1D (which the caller found without it) or L2
    /// (unless it is there) at `t`: from L2, the LLC or DRAM, filling each level on the way back as a demand miss would,
    /// without counting as a demand access. With in-flight state, demand accesses that need
    /// the line before it lands wait for it.
    fn prefetch_line(&mut self, k: usize, line: u64, into: Entry, t: u64) {
        let owner = k as u8;
        let core = &self.cores[k];
        // (`prefetch_after` asked the L1D for a line bound there.)
        debug_assert!(into == Entry::L2 || !core.l1d.contains(line));
        let in_l2 = core.l2.contains(line);
        if in_l2 && into == Entry::L2 {
            return;
        }
        let mut moved_dirty = false;
        let lat = if in_l2 {
            core.l2.latency
        } else if self.llc.contains(line) {
            if self.llc_victim {
                moved_dirty = self.take_from_llc(line, owner);
            }
            self.llc.latency
        } else {
            let dram = if line >= self.tlb_lo { &mut self.stacked } else { &mut self.dram };
            let lat = self.llc.latency + dram.access(self.floor, t, line, false);
            if !self.llc_victim {
                if let Some(v) = self.llc.fill(line, LineKind::Data, false, owner) {
                    self.evict_from_llc(v.line, v.dirty, t);
                }
            }
            lat
        };
        if !in_l2 {
            let l2 = &mut self.cores[k].l2;
            let v = if into == Entry::L2 { l2.fill_prefetch(line, moved_dirty, owner) } else { l2.fill(line, LineKind::Data, moved_dirty, owner) };
            self.l2_victim(v, owner, t);
        }
        if into == Entry::L1d {
            let v = self.cores[k].l1d.fill_prefetch(line, false, owner);
            self.l1_victim(k, v, owner, t);
        }
        if self.inflight {
            self.cores[k].fills.put(line, t, t + lat);
        }
    }

    /// A line left the LLC: write it to DRAM if dirty; with an inclusive LLC, remove copies
    /// from every private cache first (their dirty data goes to DRAM too).
    fn evict_from_llc(&mut self, line: u64, mut dirty: bool, now: u64) {
        if self.llc_inclusive {
            for core in &mut self.cores {
                for cache in [&mut core.l1d, &mut core.l1i, &mut core.l2] {
                    dirty |= cache.invalidate(line).unwrap_or(false);
                }
            }
        }
        if dirty {
            let dram = if line >= self.tlb_lo { &mut self.stacked } else { &mut self.dram };
            dram.access(self.floor, now, line, true);
        }
    }

    /// End the CSALT epochs of core `c`'s L2 and of the LLC that are due: repartition them,
    /// with CSALT-CD's weights from what the memory side measured since their last epoch.
    #[cold]
    fn end_epochs(&mut self, c: usize) {
        let l2_due = self.cores[c].l2.csalt().is_some_and(|p| p.due);
        let llc_due = self.llc.csalt().is_some_and(|p| p.due);
        if !(l2_due || llc_due) {
            return;
        }
        let totals = self.cd.is_some().then(|| self.cd_totals());
        if l2_due {
            let w = match (&mut self.cd, totals) {
                (Some(cd), Some(t)) => cd.weights(Some(c), t),
                _ => (1.0, 1.0),
            };
            self.cores[c].l2.csalt_mut().expect("due").repartition(w.0, w.1);
        }
        if llc_due {
            let w = match (&mut self.cd, totals) {
                (Some(cd), Some(t)) => cd.weights(None, t),
                _ => (1.0, 1.0),
            };
            self.llc.csalt_mut().expect("due").repartition(w.0, w.1);
        }
    }

    /// The running totals CSALT-CD's estimators difference.
    fn cd_totals(&self) -> CdTotals {
        let mut t = CdTotals {
            llc_accesses: self.llc.total_accesses(),
            llc_misses: self.llc.total_misses(),
            dram_reads: self.dram.reads,
            dram_queue: self.dram.queue_cycles,
            ..CdTotals::default()
        };
        for x in &self.ctxs {
            t.lookups += (x.tlb_lines.reads - x.lookup_reads_origin) / 2;
            t.lookup_walks += x.lookup_walks;
            t.walk_cycles += x.counters.walk_cycles;
            t.walks += x.counters.timed_walks();
        }
        t
    }

    /// Core `c`'s MMU reads `line` of an L3 TLB at cycle `at` (through L2, the LLC, then the
    /// die-stacked DRAM): returns its latency.
    pub fn read_tlb_line(&mut self, c: usize, line: u64, at: u64) -> u64 {
        let (lat, served) = self.access(c, line, LineKind::TlbEntry, false, Entry::L2, at);
        let k = &mut self.ctxs[c].tlb_lines;
        k.reads += 1;
        let mut unused = 0;
        served.count([&mut unused, &mut k.served_l2, &mut k.served_llc, &mut k.served_dram]);
        lat
    }

    /// Context `c` read-modify-writes `line` at cycle `at` and, with `flush`, flushes it
    /// (see [`MemPort::rewrite_line`]): returns the cycles. The read and the store go through
    /// its L1D; taking the line exclusively invalidates the other cores' copies, and when
    /// there were any (or TLB sharers) the directory, at the LLC, forwards invalidations and
    /// returns the acks (a round trip at the LLC's latency); the flush then removes the line
    /// from every cache and writes it back to memory (the die-stacked DRAM for a POM-TLB
    /// line). Without the flush the modified line stays in the L1D, and the core's L2 and the
    /// LLC keep their (old) copies: caches are not inclusive of the L1D's dirt.
    pub fn rewrite(&mut self, c: usize, line: u64, sharers: u32, flush: bool, at: u64) -> u64 {
        let (mut t, _) = self.access(c, line, LineKind::TlbEntry, true, Entry::L1d, at);
        let k = self.core_of(c);
        let mut copies = false;
        for (i, core) in self.cores.iter_mut().enumerate().filter(|&(i, _)| flush || i != k) {
            for cache in [&mut core.l1d, &mut core.l1i, &mut core.l2] {
                let had = cache.invalidate(line).is_some();
                copies |= had && i != k;
            }
        }
        if copies || sharers > 0 {
            t += 2 * self.llc.latency;
        }
        if !flush {
            return t;
        }
        self.llc.invalidate(line);
        let dram = if line >= self.tlb_lo { &mut self.stacked } else { &mut self.dram };
        t + dram.access(self.floor, at + t, line, true)
    }

    /// Core `c`'s MMU writes a translation into `line` of an L3 TLB at cycle `at` (a store
    /// through L2: write-allocate).
    pub fn write_tlb_line(&mut self, c: usize, line: u64, at: u64) {
        self.access(c, line, LineKind::TlbEntry, true, Entry::L2, at);
        self.ctxs[c].tlb_lines.writes += 1;
    }

    /// A page walk on core `c` reads the entry in `line` of `table` at cycle `at`: returns
    /// its latency, counting the step and where it was served.
    #[inline(always)]
    pub fn read_pte(&mut self, c: usize, line: u64, table: Table, at: u64) -> u64 {
        // Walk reads that enter at the L1D miss through its MSHRs, as data misses do.
        let mshr = self.walk_entry == Entry::L1d;
        let ask = if mshr { Ask::Mshr(at) } else { Ask::At(at) };
        let (lat, served, below) = self.access_from(c, line, LineKind::PageTable, false, self.walk_entry, ask);
        let lat = self.arrival(c, line, served, at, lat, mshr.then_some(below)).1 - at;
        let x = &mut self.ctxs[c];
        let k = &mut x.counters;
        k.walk_steps += 1;
        served.count([&mut k.pte_l1, &mut k.pte_l2, &mut k.pte_llc, &mut k.pte_dram]);
        let v = &mut x.vcounters;
        match table {
            Table::Native => {}
            Table::Guest => {
                v.guest_steps += 1;
                served.count([&mut v.pte_guest_l1, &mut v.pte_guest_l2, &mut v.pte_guest_llc, &mut v.pte_guest_dram]);
            }
            Table::Host => {
                v.host_steps += 1;
                served.count([&mut v.pte_host_l1, &mut v.pte_host_l2, &mut v.pte_host_llc, &mut v.pte_host_dram]);
            }
        }
        lat
    }

    /// A TLB prefetcher's walk on core `c` reads page-table line `line` at cycle `at`, as a
    /// demand walk's read ([`MemorySide::read_pte`]) but counted apart. Returns its latency.
    #[cold]
    #[inline(never)]
    pub fn read_pte_prefetch(&mut self, c: usize, line: u64, at: u64) -> u64 {
        let mshr = self.walk_entry == Entry::L1d;
        let ask = if mshr { Ask::Mshr(at) } else { Ask::At(at) };
        let (lat, served, below) = self.access_from(c, line, LineKind::PageTable, false, self.walk_entry, ask);
        let lat = self.arrival(c, line, served, at, lat, mshr.then_some(below)).1 - at;
        let k = &mut self.ctxs[c].tlb_prefetch;
        k.steps += 1;
        served.count([&mut k.served_l1, &mut k.served_l2, &mut k.served_llc, &mut k.served_dram]);
        lat
    }

    /// A TLB prefetcher's walk on core `c` that wanted a walker at `t`, got one at `start` and
    /// took `lat` cycles holds it meanwhile, as a demand walk does ([`MemorySide::walk_done`]);
    /// nothing waits for it.
    #[cold]
    #[inline(never)]
    pub fn prefetch_walk_done(&mut self, c: usize, t: u64, start: u64, lat: u64) {
        let k = self.core_of(c);
        self.cores[k].walkers.book(t, start, lat);
        let x = &mut self.ctxs[c].tlb_prefetch;
        x.walks += 1;
        x.walk_cycles += lat;
        x.walker_wait_cycles += start - t;
    }

    /// Core `c`'s MMU prefetches page-table `line` at cycle `at` (ASAP): an access like a walk
    /// read, entering where walk reads do, that leaves the line in flight for the walk.
    pub fn pte_prefetch(&mut self, c: usize, line: u64, at: u64) {
        let (lat, served) = self.access(c, line, LineKind::PageTable, false, self.walk_entry, at);
        self.arrival(c, line, served, at, lat, None);
        let k = &mut self.ctxs[c].asap;
        k.prefetches += 1;
        served.count([&mut k.served_l1, &mut k.served_l2, &mut k.served_llc, &mut k.served_dram]);
    }

    /// When a walk on core `c` that wants to start at `t` gets a walker: the first cycle one
    /// is free (its reads are timed from there; its own length, which it books with
    /// [`MemorySide::walk_done`], is known only at its end).
    #[inline(always)]
    pub fn walk_start(&mut self, c: usize, t: u64) -> u64 {
        let k = self.core_of(c);
        let floor = self.pool_floor(c);
        let core = &mut self.cores[k];
        core.walkers.start(t, floor)
    }

    /// No request reaches the walkers and MSHRs of context `c`'s core before this cycle: the
    /// dispatch clock of `c`, or with SMT the earliest of its core's contexts' (the engine runs
    /// the context furthest behind, but a reference's dispatch moves its clock, past its
    /// sibling's when it waited for the reorder buffer, before it asks for a unit; a pool that
    /// forgot the cycles up to the running context's clock would find every unit free at the
    /// sibling's next request).
    #[inline(always)]
    fn pool_floor(&self, c: usize) -> u64 {
        if self.smt {
            let k = self.core_of[c];
            self.ctxs[k * self.per..((k + 1) * self.per).min(self.ctxs.len())].iter().map(|x| x.window.now()).min().unwrap_or(0)
        } else {
            self.ctxs[c].window.now()
        }
    }

    /// The timing of a walk on core `c` that wanted to start at `t`, started at `start`
    /// ([`MemorySide::walk_start`]) and took `lat` cycles, `fault_cycles` of them in the OS: it
    /// holds its walker meanwhile. Returns when it is done.
    #[inline(always)]
    pub fn walk_done(&mut self, c: usize, t: u64, start: u64, lat: u64, fault_cycles: u64) -> u64 {
        let k = self.core_of(c);
        let core = &mut self.cores[k];
        core.walkers.book(t, start, lat - fault_cycles);
        let done = start + lat;
        let x = &mut self.ctxs[c];
        // Walk latency as the papers report it: the walk itself, not the wait for a walker.
        x.counters.record_walk_cycles(lat - fault_cycles);
        x.counters.walker_wait_cycles += start - t;
        if fault_cycles > 0 {
            // A page fault is a precise exception: younger instructions wait for the handler.
            x.window.stall_until(done);
        }
        done
    }

    /// The data access of a reference of `kind` on core `c`, issued at `issue` and
    /// translated at `t`, to `line`, which the caches are asked for at `ask` (`t`, or earlier
    /// when a younger reference asked first: [`crate::timing::inflight`]); and its completion.
    #[inline(always)]
    pub fn finish_ref(&mut self, c: usize, kind: RefKind, line: u64, issue: u64, t: u64, ask: u64) {
        let entry = if kind == RefKind::Fetch { Entry::L1i } else { Entry::L1d };
        let write = kind == RefKind::Store;
        let (lat, served, below) = self.access_from(c, line, LineKind::Data, write, entry, Ask::Mshr(ask));
        let (sent, mut arrival) = self.arrival(c, line, served, ask, lat, Some(below));
        if ask < t {
            // It has the line no sooner than an L1 hit after its own translation.
            arrival = arrival.max(t + self.cores[self.core_of(c)].l1d.latency);
        }
        if self.prefetching && entry == Entry::L1d && kind != RefKind::Prefetch {
            self.prefetch_after(c, line, served, ask);
        }
        let x = &mut self.ctxs[c];
        let k = &mut x.counters;
        k.translation_cycles += t - issue;
        served.count([&mut k.data_l1, &mut k.data_l2, &mut k.data_llc, &mut k.data_dram]);
        // Stores retire into the store buffer once translated; their misses occupy an MSHR
        // and their entry, not the reorder buffer.
        // A software prefetch's fill holds an MSHR, but nothing waits for its line: it
        // completes once translated and its fill sent, which, with every MSHR busy, waits for
        // one, as a load's does (fill buffers on Intel, miss address buffers on AMD). (Were it
        // to complete before, a helper prefetching faster than the MSHRs fill lines would book
        // them ever further ahead of its dispatch.)
        if write {
            x.window.complete_store(t, arrival);
        } else if kind == RefKind::Prefetch {
            x.window.complete(t.max(sent));
        } else {
            x.window.complete(arrival);
        }
    }

    /// When the line of an access by core `c` at `t`, served by `served` in `lat` cycles,
    /// arrives, and from when it waits for nothing but the line: with a fill of the line still
    /// in flight, when that fill lands (the access merges into its MSHR; from `t`); otherwise
    /// at once on an L1 hit, and after a fill of its own on a miss, which holds an MSHR from
    /// `mshr`, the cycle it got one ([`MemorySide::access_from`]), when given, and is
    /// remembered as in flight.
    #[inline(always)]
    fn arrival(&mut self, c: usize, line: u64, served: Served, t: u64, lat: u64, mshr: Option<u64>) -> (u64, u64) {
        let k = self.core_of(c);
        if self.inflight {
            if let Some(ready) = self.cores[k].fills.pending(line, t) {
                let done = ready.max(t + lat);
                let k = &mut self.ctxs[c].counters;
                k.fill_merges += 1;
                k.fill_merge_cycles += done - (t + lat);
                return (t, done);
            }
        }
        if served == Served::L1 {
            return (t, t + lat);
        }
        let start = match mshr {
            Some(start) => {
                self.cores[k].mshrs.book(t, start, lat);
                start
            }
            None => t,
        };
        if self.inflight {
            self.cores[k].fills.put(line, t, start + lat);
        }
        (start, start + lat)
    }

    /// When core `c` has the translation of a reference to the 4 KB physical page `page`,
    /// issued at `start`, whose lookup ended at `t`: a reference that walked leaves its walk
    /// in flight from `start` to `t`; one that hit in a TLB while a walk of the page was
    /// still in flight waits for that walk (the TLB's miss handling merges misses to one
    /// page).
    #[inline(always)]
    pub fn translated(&mut self, c: usize, page: u64, start: u64, t: u64, walked: bool) -> u64 {
        let k = self.core_of(c);
        let core = &mut self.cores[k];
        if walked {
            core.walks.put(page, start, t);
            return t;
        }
        match core.walks.pending(page, t) {
            Some(done) => {
                let k = &mut self.ctxs[c].counters;
                k.walk_merges += 1;
                k.walk_merge_cycles += done - t;
                done
            }
            None => t,
        }
    }

    /// Context `c` stalls for `cycles` from its present clock.
    pub fn stall(&mut self, c: usize, cycles: u64) {
        let w = &mut self.ctxs[c].window;
        let t = w.now() + cycles;
        w.stall_until(t);
    }

    /// The core context `c` runs on.
    #[inline(always)]
    pub fn core_of(&self, c: usize) -> usize {
        if self.smt {
            self.core_of[c]
        } else {
            c
        }
    }

    /// Ask the host to load the sets of context `c`'s L2 and of the LLC that `line` maps to.
    #[inline(always)]
    pub fn prefetch_sets(&self, c: usize, line: u64) {
        self.cores[self.core_of(c)].l2.prefetch_set(line);
        self.llc.prefetch_set(line);
    }

    /// Apply a mechanism's steering.
    pub fn steer(&mut self, s: Steer) {
        match s {
            Steer::Ptp { probability, cores, llc } => {
                // Private L2s protect their own core's lines, or none; the LLC by owner.
                for (i, core) in self.cores.iter_mut().enumerate() {
                    let on = cores & (1 << (i & 63)) != 0;
                    core.l2.steer_ptp(probability, if on { u64::MAX } else { 0 });
                }
                self.llc.steer_ptp(probability, llc);
            }
        }
    }

    /// Zero every statistic of the memory side, keeping its state (the end of warm-up).
    /// Profile the caches named (`cache.l1d`, `cache.l1i`, `cache.l2` on every core,
    /// `cache.llc`) from now on for one-pass miss-ratio curves up to `cap` ways; false for a
    /// name that is none of them.
    pub fn profile(&mut self, name: &str, cap: usize) -> bool {
        match name {
            "cache.llc" => self.llc.profile(cap),
            "cache.l1d" | "cache.l1i" | "cache.l2" => {
                for core in &mut self.cores {
                    match name {
                        "cache.l1d" => core.l1d.profile(cap),
                        "cache.l1i" => core.l1i.profile(cap),
                        _ => core.l2.profile(cap),
                    }
                }
            }
            _ => return false,
        }
        true
    }

    /// The caches' miss-ratio curves (see [`Self::profile`]), summed over cores.
    pub fn curves(&self) -> Vec<crate::mrc::Curve> {
        let mut out = Vec::new();
        for core in &self.cores {
            for (name, c) in [("cache.l1d", &core.l1d), ("cache.l1i", &core.l1i), ("cache.l2", &core.l2)] {
                if let Some(p) = c.profiled() {
                    crate::mrc::merge(&mut out, name.to_string(), vec![c.geometry()], !p.inexact, p.stack.depths());
                }
            }
        }
        if let Some(p) = self.llc.profiled() {
            crate::mrc::merge(&mut out, "cache.llc".to_string(), vec![self.llc.geometry()], !p.inexact, p.stack.depths());
        }
        out
    }

    /// The end of warm-up, at this point of the reference stream: CSALT-CD's estimators
    /// measure from here (their lookups and lookup walks count from 0, and the epoch in
    /// progress differences the totals now). Statistics are not touched: the machine
    /// subtracts a snapshot of them.
    pub fn on_warmup_end(&mut self) {
        for x in &mut self.ctxs {
            x.lookup_walks = 0;
            x.lookup_reads_origin = x.tlb_lines.reads;
        }
        if self.cd.is_some() {
            let now = self.cd_totals();
            if let Some(cd) = &mut self.cd {
                cd.base.fill(now);
            }
        }
    }
}

/// Running totals of what CSALT-CD's estimators read (§5.1.2: ordinary performance
/// counters).
#[derive(Clone, Copy, Debug, Default)]
struct CdTotals {
    llc_accesses: u64,
    llc_misses: u64,
    lookups: u64,
    lookup_walks: u64,
    walk_cycles: u64,
    walks: u64,
    dram_reads: u64,
    dram_queue: u64,
}

/// CSALT-CD's estimators: the fixed latencies, and per partitioned cache the totals at its
/// last epoch end and the last inputs (kept when an epoch saw no event of a kind).
struct CdEstimator {
    corrected: bool,
    inputs: Criticality,
    /// Per core's L2, then the LLC.
    base: Vec<CdTotals>,
    last: Vec<Criticality>,
}

impl CdEstimator {
    fn new(p: &MemoryParams, cores: usize) -> CdEstimator {
        let dram = p.dram.latency_cycles(p.core.freq_ghz) as f64;
        let inputs = Criticality {
            l1t_acc: p.l1_tlb_latency as f64,
            l2t_acc: p.l2_tlb_latency as f64,
            l3t_acc: p.pom.latency as f64,
            l1d_acc: p.l1d.latency as f64,
            l2d_acc: p.l2.latency as f64,
            l3d_acc: p.llc.latency as f64,
            // Until an epoch has measured them: even odds, a walk of four DRAM reads.
            l3d_hit: 0.5,
            l3t_hit: 0.5,
            pw_acc: 4.0 * dram,
            dram_acc: dram,
        };
        CdEstimator { corrected: p.csalt.formula == CsaltFormula::Corrected, inputs, base: vec![CdTotals::default(); cores + 1], last: vec![inputs; cores + 1] }
    }

    /// The weights (S_Dat, S_Tr) for core `c`'s L2 (`None`: the LLC) from what changed since
    /// its last epoch end, `now` being the current totals.
    fn weights(&mut self, c: Option<usize>, now: CdTotals) -> (f64, f64) {
        let i = c.unwrap_or(self.base.len() - 1);
        let b = std::mem::replace(&mut self.base[i], now);
        let k = &mut self.last[i];
        let ratio = |num: u64, den: u64| (den > 0).then(|| num as f64 / den as f64);
        let d = |a: u64, b: u64| a.saturating_sub(b);
        if let Some(miss) = ratio(d(now.llc_misses, b.llc_misses), d(now.llc_accesses, b.llc_accesses)) {
            k.l3d_hit = 1.0 - miss;
        }
        if let Some(miss) = ratio(d(now.lookup_walks, b.lookup_walks), d(now.lookups, b.lookups)) {
            k.l3t_hit = (1.0 - miss).max(0.0);
        }
        if let Some(w) = ratio(d(now.walk_cycles, b.walk_cycles), d(now.walks, b.walks)) {
            k.pw_acc = w;
        }
        if let Some(q) = ratio(d(now.dram_queue, b.dram_queue), d(now.dram_reads, b.dram_reads)) {
            k.dram_acc = self.inputs.dram_acc + q;
        }
        match c {
            Some(_) => k.l2_weights(self.corrected),
            None => k.llc_weights(),
        }
    }
}

/// The seed of core `i`'s structures, from the machine's `seed`.
pub fn core_seed(seed: u64, i: u64) -> u64 {
    seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(i << 8)
}

/// The memory port that does each reference's accesses at once, on the memory side it
/// borrows; it keeps the reference in flight (when it issued, when it is translated, its
/// walk's cycles).
pub struct Direct<'a> {
    pub mem: &'a mut MemorySide,
    c: usize,
    kind: RefKind,
    issue: u64,
    /// When the translation is known (so far).
    t: u64,
    /// When the walk got its walker; its cycles so far, and of those the OS's.
    walk_start: u64,
    lat: u64,
    fault_cycles: u64,
    /// When the current group of parallel L3 TLB reads began.
    tlb_start: u64,
    /// When the walk's current group of parallel page-table reads was issued, and the
    /// latency it waits for so far ([`MemPort::read_pte_group`]).
    group_at: u64,
    group_lat: u64,
    /// The reference looked an L3 TLB up.
    looked_up: bool,
    /// The reference walked.
    walked: bool,
    /// Younger references that would start its walk or its fill first, if it waits for a
    /// producer (`MemPort::early`).
    early: Early,
    /// Its translation's lookup latency before a walk (the TLBs it missed).
    lookup: u64,
    /// When its walk asked for a walker, when the walk's page was first asked for (its
    /// issue, or a younger reference's), and when the walk was done.
    walk_want: u64,
    walk_from: u64,
    walk_done: u64,
    /// A TLB prefetcher's walk is under way ([`MemPort::prefetch_walk_begin`]): its reads
    /// count apart, and it wanted its walker at `prefetch_want`.
    prefetching: bool,
    prefetch_want: u64,
}

impl<'a> Direct<'a> {
    pub fn new(mem: &'a mut MemorySide) -> Direct<'a> {
        Direct {
            mem,
            c: 0,
            kind: RefKind::Load,
            issue: 0,
            t: 0,
            walk_start: 0,
            lat: 0,
            fault_cycles: 0,
            tlb_start: 0,
            group_at: 0,
            group_lat: 0,
            looked_up: false,
            walked: false,
            early: Early::NONE,
            lookup: 0,
            walk_want: 0,
            walk_from: 0,
            walk_done: 0,
            prefetching: false,
            prefetch_want: 0,
        }
    }
}

impl Direct<'_> {
    /// The walk of a reference with younger references that may start its work
    /// ([`MemPort::early`]): when it asks for a walker. Notes its lookup latency and when its
    /// page was first asked for.
    #[cold]
    #[inline(never)]
    fn early_walk(&mut self) -> u64 {
        self.lookup = self.t - self.issue;
        self.walk_from = self.issue;
        let y = self.mem.ctxs[self.c].window.younger_issue(self.early.page_delta, self.early.page_back);
        if y >= self.issue {
            return self.t;
        }
        // The younger reference misses the same TLBs and walks, as long after its issue.
        self.walk_from = y;
        let want = y + self.lookup;
        let k = &mut self.mem.ctxs[self.c].counters;
        k.early_walks += 1;
        k.early_walk_cycles += self.t - want;
        want
    }

    /// For a reference with younger references that may start its work, translated at `own`
    /// (by its own lookups) and at `self.t` (with any walk it waited for): when its line is
    /// asked for. Clears them.
    #[cold]
    #[inline(never)]
    fn early_ask(&mut self, own: u64) -> u64 {
        let e = std::mem::replace(&mut self.early, Early::NONE);
        if !self.walked {
            self.lookup = own - self.issue;
        }
        let mut ask = self.t;
        if e.line_delta != u32::MAX && matches!(self.kind, RefKind::Load | RefKind::Store) {
            let y = self.mem.ctxs[self.c].window.younger_issue(e.line_delta, e.line_back);
            if y < self.issue {
                // The younger reference asks for the line once it has the translation: after
                // the same lookups, and not before a walk this one waited for.
                let held = if self.walked {
                    self.walk_done
                } else if self.t > own {
                    self.t
                } else {
                    0
                };
                ask = self.t.min(held.max(y + self.lookup));
                if ask < self.t {
                    let k = &mut self.mem.ctxs[self.c].counters;
                    k.early_fills += 1;
                    k.early_fill_cycles += self.t - ask;
                }
            }
        }
        ask
    }
}

impl MemPort for Direct<'_> {
    const LOCAL: bool = true;

    #[inline(always)]
    fn dispatch(&mut self, c: usize, delta: u32, kind: RefKind, producer: u8) {
        self.c = c;
        self.kind = kind;
        self.looked_up = false;
        self.walked = false;
        self.mem.floor = self.mem.ctxs[c].window.now();
        self.issue = self.mem.ctxs[c].window.dispatch(delta, producer, matches!(kind, RefKind::Load | RefKind::Prefetch));
        self.t = self.issue;
        self.walk_start = self.issue;
    }

    fn early(&mut self, e: Early) {
        // (Cleared by the reference's `data` or `dropped`, so that the hot path pays one
        // comparison, not a store.)
        self.early = e;
    }

    #[inline(always)]
    fn l2_tlb(&mut self) {
        self.t += self.mem.l2_tlb_latency;
    }

    #[inline(always)]
    fn walk_begin(&mut self) {
        (self.lat, self.fault_cycles) = (0, 0);
        self.walk_want = if self.early.is_none() { self.t } else { self.early_walk() };
        self.walk_start = self.mem.walk_start(self.c, self.walk_want);
        if self.looked_up {
            self.mem.ctxs[self.c].lookup_walks += 1;
        }
    }

    #[inline(always)]
    fn delay(&mut self, cycles: u64) {
        self.lat += cycles;
    }

    #[inline(always)]
    fn read_pte(&mut self, line: u64, table: Table) {
        if self.prefetching {
            self.lat += self.mem.read_pte_prefetch(self.c, line, self.walk_start + self.lat);
            return;
        }
        self.lat += self.mem.read_pte(self.c, line, table, self.walk_start + self.lat);
    }

    fn pte_prefetch(&mut self, line: u64) {
        self.mem.pte_prefetch(self.c, line, self.walk_start + self.lat);
    }

    fn read_pte_group(&mut self, line: u64, table: Table, first: bool, wait: bool) {
        if first {
            (self.group_at, self.group_lat) = (self.walk_start + self.lat, 0);
        }
        let lat =
            if self.prefetching { self.mem.read_pte_prefetch(self.c, line, self.group_at) } else { self.mem.read_pte(self.c, line, table, self.group_at) };
        if wait && lat > self.group_lat {
            self.lat += lat - self.group_lat;
            self.group_lat = lat;
        }
    }

    #[inline(always)]
    fn fault(&mut self, cost: u64) {
        self.lat += cost;
        self.fault_cycles += cost;
    }

    #[inline(always)]
    fn walk_end(&mut self) {
        self.walk_done = self.mem.walk_done(self.c, self.walk_want, self.walk_start, self.lat, self.fault_cycles);
        // (Started by a younger reference, the walk may be done before this one looked up.)
        self.t = self.t.max(self.walk_done);
        self.walked = true;
    }

    fn prefetch_walk_begin(&mut self) {
        // (After the reference's data access: its own walk's state is no longer needed.)
        (self.lat, self.fault_cycles, self.prefetching) = (0, 0, true);
        self.prefetch_want = self.t;
        self.walk_start = self.mem.walk_start(self.c, self.t);
    }

    fn prefetch_walk_end(&mut self) {
        self.prefetching = false;
        self.mem.prefetch_walk_done(self.c, self.prefetch_want, self.walk_start, self.lat);
    }

    fn tlb_read(&mut self, line: u64, parallel: bool) {
        if !parallel {
            self.tlb_start = self.t;
        }
        self.looked_up = true;
        let lat = self.mem.read_tlb_line(self.c, line, self.tlb_start);
        let t = self.t.max(self.tlb_start + lat);
        self.mem.ctxs[self.c].tlb_lines.lookup_cycles += t - self.t;
        self.t = t;
    }

    fn tlb_write(&mut self, line: u64) {
        self.mem.write_tlb_line(self.c, line, self.walk_start + self.lat);
    }

    fn os_delay(&mut self, cost: u64) {
        self.t += cost;
        self.mem.ctxs[self.c].window.stall_until(self.t);
    }

    #[inline(always)]
    fn data(&mut self, line: u64) {
        let own = self.t;
        if self.mem.inflight {
            // (A walk a younger reference started was in flight from that one's issue.)
            let from = if self.walked && !self.early.is_none() { self.walk_from } else { self.issue };
            self.t = self.mem.translated(self.c, line >> 6, from, self.t, self.walked);
        }
        let ask = if self.early.is_none() { self.t } else { self.early_ask(own) };
        self.mem.finish_ref(self.c, self.kind, line, self.issue, self.t, ask);
    }

    fn dropped(&mut self) {
        self.early = Early::NONE;
        self.mem.ctxs[self.c].window.complete(self.t);
    }

    fn warmup_end(&mut self) {
        self.mem.on_warmup_end();
    }

    fn stall(&mut self, c: usize, cycles: u64) {
        self.mem.stall(c, cycles);
    }

    fn rewrite_line(&mut self, c: usize, line: u64, sharers: u32, flush: bool) -> Option<u64> {
        let at = self.mem.ctxs[c].window.now();
        Some(self.mem.rewrite(c, line, sharers, flush, at))
    }

    fn holds_modified(&self, c: usize, line: u64) -> bool {
        self.mem.cores[self.mem.core_of(c)].l1d.is_dirty(line)
    }

    fn os_call(&mut self, c: usize, delta: u32, cost: u64) {
        let w = &mut self.mem.ctxs[c].window;
        let t = w.dispatch(delta, 0, false);
        w.stall_until(t + cost);
    }

    #[inline(always)]
    fn now(&self, c: usize) -> u64 {
        self.mem.ctxs[c].window.now()
    }

    #[inline(always)]
    fn instructions(&self, c: usize) -> u64 {
        self.mem.ctxs[c].window.instructions()
    }

    fn steer(&mut self, s: Steer) {
        self.mem.steer(s);
    }

    #[inline(always)]
    fn prefetch(&self, c: usize, line: u64) {
        self.mem.prefetch_sets(c, line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_smt_cores_pools_keep_what_the_sibling_behind_may_still_wait_for() {
        // Two contexts on a core with two walkers. Context 1 holds both for 20,000 cycles from
        // 0; context 0, whose clock is ahead at 10,000, asks for one there; then context 1 asks
        // at 100 and waits until 20,000. (Had the pool forgotten the cycles before context 0's
        // clock, it would find both walkers free at 100.)
        let cfg = crate::config::Config::from_pairs([("system.threads_per_core", "2"), ("core.walkers", "2")]).unwrap();
        let mut m = MemorySide::new(&cfg.memory(), 2, 1);
        for _ in 0..2 {
            let s = m.walk_start(1, 0);
            m.walk_done(1, 0, s, 20_000, 0);
        }
        m.ctxs[0].window.stall_until(10_000);
        assert_eq!(m.ctxs[0].window.now(), 10_000);
        assert_eq!(m.walk_start(0, 10_000), 20_000);
        assert_eq!(m.walk_start(1, 100), 20_000);
    }
}
