//! The simulated OS: address spaces, demand paging, page-size policies (4 KB only, ideal,
//! Linux THP with khugepaged and compaction, FreeBSD reservations), promotion, demotion
//! and the shootdowns they need. It is the only writer of page tables (hardware sets A/D
//! bits during walks; see `translate::walker`).
//!
//! Every change that can leave a stale translation goes through [`Os::flush`], which queues
//! a [`Shootdown`]; the machine applies the queue (invalidating the TLBs and page-walk
//! caches of every core, and charging the initiator and the remote cores) right after the
//! OS call that produced it, before any other translation happens (`Kernel::os_sync`).
//! Work the OS does on behalf of a core (zeroing a huge page, copying for a collapse or a
//! compaction) accumulates in [`Os::charge`] and is charged the same way.
//!
//! Policies (`os.page_policy`), and where they simplify (docs/model.md, "Where the OS model
//! simplifies"):
//! - `never`: every fault maps one 4 KB page.
//! - `ideal`: a fault in a 2 MB-aligned region that lies wholly inside a workload region maps
//!   a 2 MB page if any aligned free 2 MB block exists (and with `os.huge_1g`, a 1 GB page
//!   for a whole aligned gigabyte).
//! - `thp` / `madvise`: Linux THP `enabled=always` / `madvise`. The fault path maps a 2 MB
//!   page when the region is eligible (inside one VMA, madvised for `madvise`), nothing is
//!   mapped there yet and an aligned free block exists, compacting per `os.thp_defrag`;
//!   else 4 KB. khugepaged wakes every `os.khugepaged_interval_cycles`, scans
//!   `os.khugepaged_pages` pages (512 per region) and collapses regions with at most
//!   `max_ptes_none` holes and a young page into a new 2 MB page (copy, free the old
//!   frames and the level-1 node, shoot down).
//! - `freebsd`: the first fault in a 2 MB region reserves an aligned 2 MB block and maps
//!   only the faulting page, from the reservation at the matching offset; later faults
//!   there use the reservation; when all 512 pages are populated the mapping is promoted
//!   in place (no copy). When a 4 KB allocation fails, the least recently used partially
//!   populated reservation is broken (its unpopulated frames freed).

use crate::arch::addr::{Frame, PageSize, PhysAddr, VirtAddr};
use crate::arch::ctx::Ctx;
use crate::arch::pte::{PTE_A, PTE_D, PTE_NX, PTE_P, PTE_PFN_MASK, PTE_RW, PTE_US};
use crate::error::SimError;
use crate::os::frag;
use crate::os::frag::Fragmentation;
use crate::os::pagecache::{PageCache, PIECE};
use crate::os::phys::{PhysMem, MAX_ORDER, ORDER_2M};
use crate::os::pt::{NodeId, PageTables, ENTRIES};
use crate::os::KernelParams;
use crate::param::{PagePolicy, PrefaultAs, PresetA, PtFormat, ThpDefrag};
use crate::rng::Rng;
use crate::stats::Stats;
use crate::workload::Region;
use std::collections::{BTreeMap, HashMap};

use crate::param::{bound, component, Limit};

component! {
    /// The OS's memory management (`os.*`): page sizes, THP and khugepaged, reservations, file pages, fault and call costs.
    OsParams {
        page_policy: crate::param::PagePolicy = crate::param::PagePolicy::Never; "page_policy"; None; "page sizes the OS maps: never (4 KB only), ideal (every eligible 2 MB region in 2 MB pages), thp (Linux THP enabled=always), madvise (Linux THP enabled=madvise: os.madvise_regions only), freebsd (FreeBSD reservations, promoted in place when full)";
        madvise_regions: String = String::new(); "madvise_regions"; None; "page_policy=madvise: comma-separated names of the workload regions that call madvise(MADV_HUGEPAGE) ('*': all; empty: none, as a program that never calls it)";
        thp_defrag: crate::param::ThpDefrag = crate::param::ThpDefrag::Madvise; "thp_defrag"; None; "Linux THP defrag: a huge-page fault that finds no free 2 MB block compacts memory always, in madvised regions only (madvise, Linux's default) or never";
        khugepaged_pages: u64 = 4096; "khugepaged_pages"; Some(Limit::Int(1 << 30)); "khugepaged pages_to_scan per wake-up, 512 per 2 MB region scanned (Linux default 4096 = 8 regions); 0 turns khugepaged off";
        khugepaged_interval_cycles: u64 = 20_000_000_000; "khugepaged_interval_cycles"; Some(Limit::Int(bound::INTERVAL)); "simulated cycles between khugepaged wake-ups (Linux scan_sleep_millisecs = 10 s, 2e10 cycles at 2 GHz; lower it for short runs)";
        khugepaged_max_ptes_none: u64 = 511; "khugepaged_max_ptes_none"; Some(Limit::Int(511)); "khugepaged collapses a 2 MB region only if at most this many of its 4 KB pages are unmapped (Linux default 511)";
        khugepaged_defrag: bool = true; "khugepaged_defrag"; None; "khugepaged compacts memory when no free 2 MB block exists (Linux khugepaged/defrag, default on)";
        huge_1g: bool = false; "huge_1g"; None; "page_policy=ideal: map the 1 GB-aligned whole gigabytes of a region with 1 GB pages (as hugetlbfs with 1 GB pages)";
        reservations: crate::param::Reservations = crate::param::Reservations::None; "reservations"; None; "the coalescing paper's FreeBSD kernels: reserv (os.page_policy=freebsd with os.reservation_promote=false: reservations, no 2 MB pages) or super (with promotion); none leaves it to os.page_policy (whose never is the paper's noresv). Needs os.page_policy never or freebsd";
        reservation_promote: bool = true; "reservation_promote"; None; "page_policy=freebsd: promote a fully populated reservation to a 2 MB page (false: reservations only, the coalescing paper's 'reserv')";
        reservation_promote_at: u64 = 512; "reservation_promote_at"; Some(Limit::Int(512)); "page_policy=freebsd with os.reservation_promote: a reservation is promoted to a 2 MB page once this many of its 512 pages are populated, the rest zeroed (FreeBSD: 512, all of them; Quicksilver promotes at 64, the threshold the coalescing paper's §3.8 suggests revisiting); below 512 only where the 2 MB region lies inside one workload region";
        page_copy_cycles: u64 = 400; "page_copy_cycles"; Some(Limit::Int(bound::COST)); "cycles to copy or zero one 4 KB page (~200 ns at ~20 GB/s): a 2 MB fault zeroes 511 pages more than a 4 KB one, a collapse or compaction copies";
        call_cycles: u64 = 1000; "call_cycles"; Some(Limit::Int(bound::COST)); "cycles of a system call that changes the program's mappings (munmap, mprotect, move_pages in a trace or kernel: entry, exit and VMA work, ~0.5 us), besides the shootdown it issues and the pages it copies";
        madv_free: bool = true; "madv_free"; None; "the OS honours a program's madvise(MADV_FREE) (OS-call op madv-free, the churn kernel's free=madv_free): clear the range's A and D bits, demote 2 MB pages it covers in part, shoot it down; false ignores the calls, as jemalloc told not to make them (the coalescing paper's nomdv)";
        small_reservation: crate::param::SmallReservation = crate::param::SmallReservation::None; "small_reservation"; None; "page_policy=freebsd: a file page that gets no 2 MB reservation (a file of 2 MB or less, a file's last partial piece) comes from an aligned reservation of this size for its chunk, where the chunk lies whole inside the file (16k, 32k, 64k: the coalescing paper's §3.8 proposal of smaller reservations; none: FreeBSD's single 2 MB size)";
        readahead_pages: u64 = 32; "readahead_pages"; Some(Limit::Int(512)); "a fault on a page of a file that is not in the page cache reads the aligned cluster of this many pages around it (a power of two; Linux's read-around is 128 KB, 32 pages; 1 reads the page alone)";
        fault_around_pages: u64 = 16; "fault_around_pages"; Some(Limit::Int(512)); "a fault on a file page also maps the cached pages of the aligned cluster of this many pages around it that the mapping covers (a power of two; Linux's fault_around_bytes is 64 KB, 16 pages; FreeBSD prefaults a similar window; 1 maps the faulting page alone)";
        preset_a: crate::param::PresetA = crate::param::PresetA::Auto; "preset_a"; None; "pages a file fault maps around the faulting one (os.fault_around_pages) get the accessed bit at once: on, off, or auto (on for the Linux policies, whose x86 fault-around maps pages young; off for page_policy=freebsd, which maps them with A clear, so a group of them cannot coalesce until each page is touched; on is the coalescing paper's §3.8 proposal)";
        prefault_as: crate::param::PrefaultAs = crate::param::PrefaultAs::Read; "prefault_as"; None; "how --prefault maps the footprint, page by page in address order: read (each page as a read fault leaves it: clean and not yet accessed) or write (as a program's initialization loop writing every page leaves it: accessed and dirty, so a coalescing group or a FreeBSD reservation is uniform at once)";
        fault_cycles: u64 = 2000; "fault_cycles"; Some(Limit::Int(bound::COST)); "cycles charged per page fault (Linux minor anonymous fault, ~1 us)";
    }
    check(p, key) {
        if p.khugepaged_interval_cycles == 0 {
            return Err(crate::param::invalid(key("khugepaged_interval_cycles"), "must be at least 1"));
        }
        for (name, v) in [("readahead_pages", p.readahead_pages), ("fault_around_pages", p.fault_around_pages)] {
            if !v.is_power_of_two() {
                return Err(crate::param::invalid(key(name), "must be a power of two between 1 and 512"));
            }
        }
        if p.reservation_promote_at == 0 {
            return Err(crate::param::invalid(key("reservation_promote_at"), "must be between 1 and 512"));
        }
        if p.khugepaged_max_ptes_none > 511 {
            return Err(crate::param::invalid(key("khugepaged_max_ptes_none"), "must be at most 511"));
        }
        if p.madvise_regions.split(',').any(|n| n.trim().is_empty()) && !p.madvise_regions.trim().is_empty() {
            return Err(crate::param::invalid(key("madvise_regions"), "has an empty name in the list"));
        }
        Ok(())
    }
}

const MB2: u64 = 2 << 20;
const GB1: u64 = 1 << 30;

/// One process's view of memory.
pub struct AddressSpace {
    pub root: NodeId,
    /// Level of the root node (4 or 5).
    pub top: u8,
    pub ctx: Ctx,
    pub regions: Vec<Region>,
    pub mapped_bytes: u64,
    pub huge_bytes: u64,
    /// A huge page may only end at or below this address (`phys.fragmentation=lowhalf`);
    /// `u64::MAX` otherwise.
    pub huge_limit: u64,
    /// Per region: it called madvise(MADV_HUGEPAGE) (`os.madvise_regions`).
    madvised: Vec<bool>,
    /// Per region: the page-cache file it maps read-only, if it does.
    files: Vec<Option<u32>>,
    /// Some region maps a file read-only (else faults skip the search for one).
    has_files: bool,
}

/// Translations that must leave every TLB and page-walk cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shootdown {
    pub space: usize,
    /// Virtual ranges `[start, end)`.
    pub ranges: Vec<(u64, u64)>,
    /// Pages the flush covers at the stride of the mappings removed (a 2 MB leaf is one
    /// page, a 2 MB range of 4 KB leaves 512): compared with `os.flush_ceiling_pages`.
    pub pages: u64,
}

/// What a program asks the OS to do to a range of its mappings (an OS-call reference, see
/// [`crate::workload::Ref::os_call`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum OsOp {
    /// munmap: the pages' memory is freed, their emptied page-table nodes too.
    Unmap = 1,
    /// mprotect(PROT_READ): the pages become read-only.
    Protect = 2,
    /// mprotect(PROT_READ | PROT_WRITE): the pages become writable again.
    Unprotect = 3,
    /// move_pages / NUMA balancing: each 4 KB page moves to a new frame.
    Migrate = 4,
    /// Read the page-table entries that map the first page, as a software walk in the
    /// kernel does (PT-Baker's kernel-mode helper): each level's entry line is loaded
    /// through the core's caches, down from the first level whose entry changed since the
    /// context's last walk (`Kernel::read_ptes`); nothing changes.
    ReadPtes = 5,
    /// The thread sleeps (nanosleep): its core idles for `va` cycles; nothing changes.
    Sleep = 6,
    /// madvise(MADV_FREE), as FreeBSD does it for jemalloc: the pages stay mapped but their
    /// A and D bits are cleared (their contents may be dropped under pressure, which is not
    /// modelled), a 2 MB page the range covers only in part is demoted, and the range's
    /// translations are shot down. `os.madv_free=false` ignores it (jemalloc told not to call
    /// it: the coalescing paper's nomdv).
    Free = 7,
}

impl OsOp {
    pub const ALL: [OsOp; 7] = [OsOp::Unmap, OsOp::Protect, OsOp::Unprotect, OsOp::Migrate, OsOp::ReadPtes, OsOp::Sleep, OsOp::Free];

    pub fn from_code(code: u8) -> Option<OsOp> {
        OsOp::ALL.into_iter().find(|o| *o as u8 == code)
    }

    pub fn name(self) -> &'static str {
        match self {
            OsOp::Unmap => "unmap",
            OsOp::Protect => "protect",
            OsOp::Unprotect => "unprotect",
            OsOp::Migrate => "migrate",
            OsOp::ReadPtes => "read-ptes",
            OsOp::Sleep => "sleep",
            OsOp::Free => "madv-free",
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OsCounters {
    pub faults: u64,
    /// Faults that mapped a 2 MB or 1 GB page.
    pub huge_faults: u64,
    /// 4 KB -> 2 MB: collapses, in-place reservation promotions, requested promotions.
    pub promotions: u64,
    pub demotions: u64,
    pub shootdowns: u64,
    pub shootdown_cycles: u64,
    /// Remote cores interrupted by shootdowns.
    pub shootdown_ipis: u64,
    /// Initiators' cycles spent sending interrupts and waiting for acknowledgements.
    pub busy_wait_cycles: u64,
    /// Preempted vCPUs asked to flush their TLB entries when they run (kvm_tlb).
    pub deferred_flushes: u64,
    /// Shootdowns over the flush ceiling, done as a whole-address-space flush.
    pub full_flushes: u64,
    pub reservations: u64,
    pub reservations_broken: u64,
    pub khugepaged_wakeups: u64,
    /// 2 MB regions khugepaged looked at.
    pub khugepaged_scanned: u64,
    pub compactions: u64,
    /// Compaction attempts that found no block (later attempts are deferred, as in Linux).
    pub compaction_failures: u64,
    pub migrated_pages: u64,
    /// A huge page was wanted but no 2 MB block could be had.
    pub huge_alloc_failures: u64,
    pub context_switches: u64,
    /// Changes to its mappings a program asked for (munmap, mprotect, page migration).
    pub calls: u64,
    pub unmapped_pages: u64,
    pub protected_pages: u64,
    /// 4 KB pages whose A and D bits an MADV_FREE cleared.
    pub freed_pages: u64,
    /// MADV_FREE calls in the streams ignored (`os.madv_free=false`).
    pub ignored_calls: u64,
    /// Page-table nodes freed because an unmap emptied them.
    pub freed_pt_nodes: u64,
    /// Entries loaded by software walks (read-ptes calls).
    pub pte_reads: u64,
    /// File pages read into the page cache (each read once, then shared by every mapping).
    pub page_cache_reads: u64,
    /// File pages mapped around a faulting one (`os.fault_around_pages`).
    pub fault_around: u64,
}

impl OsCounters {
    pub fn add(&mut self, o: &OsCounters) {
        let OsCounters {
            faults,
            huge_faults,
            promotions,
            demotions,
            shootdowns,
            shootdown_cycles,
            shootdown_ipis,
            busy_wait_cycles,
            deferred_flushes,
            full_flushes,
            reservations,
            reservations_broken,
            khugepaged_wakeups,
            khugepaged_scanned,
            compactions,
            compaction_failures,
            migrated_pages,
            huge_alloc_failures,
            context_switches,
            calls,
            unmapped_pages,
            protected_pages,
            freed_pages,
            ignored_calls,
            freed_pt_nodes,
            pte_reads,
            page_cache_reads,
            fault_around,
        } = *o;
        self.faults += faults;
        self.huge_faults += huge_faults;
        self.promotions += promotions;
        self.demotions += demotions;
        self.shootdowns += shootdowns;
        self.shootdown_cycles += shootdown_cycles;
        self.shootdown_ipis += shootdown_ipis;
        self.busy_wait_cycles += busy_wait_cycles;
        self.deferred_flushes += deferred_flushes;
        self.full_flushes += full_flushes;
        self.reservations += reservations;
        self.reservations_broken += reservations_broken;
        self.khugepaged_wakeups += khugepaged_wakeups;
        self.khugepaged_scanned += khugepaged_scanned;
        self.compactions += compactions;
        self.compaction_failures += compaction_failures;
        self.migrated_pages += migrated_pages;
        self.huge_alloc_failures += huge_alloc_failures;
        self.context_switches += context_switches;
        self.calls += calls;
        self.unmapped_pages += unmapped_pages;
        self.protected_pages += protected_pages;
        self.freed_pages += freed_pages;
        self.ignored_calls += ignored_calls;
        self.freed_pt_nodes += freed_pt_nodes;
        self.pte_reads += pte_reads;
        self.page_cache_reads += page_cache_reads;
        self.fault_around += fault_around;
    }
}

/// A FreeBSD reservation: an aligned 2 MB block backing one 2 MB virtual region.
struct Reservation {
    base: u64,
    populated: [u64; 8],
    count: u16,
    /// Recency (for breaking the least recently used one under pressure).
    last_use: u64,
}

impl Reservation {
    fn has(&self, i: usize) -> bool {
        self.populated[i / 64] >> (i % 64) & 1 != 0
    }
    fn set(&mut self, i: usize, on: bool) {
        if on {
            self.populated[i / 64] |= 1 << (i % 64);
        } else {
            self.populated[i / 64] &= !(1 << (i % 64));
        }
    }
}

/// Physical memory as the fragmentation scenario left it, before the workload.
#[derive(Clone, Debug, Default)]
pub struct PhysSnapshot {
    pub free_frames: u64,
    pub free_2m_blocks: u64,
    pub free_blocks: [u64; MAX_ORDER as usize + 1],
    /// Unmovable frames the scenario left behind (pinned pages, aged long-lived pages).
    pub pinned_frames: u64,
    /// Frames taken by `phys.available_gb`.
    pub hog_frames: u64,
}

pub struct Os {
    pub phys: PhysMem,
    pub pt: PageTables,
    pub spaces: Vec<AddressSpace>,
    pub counters: OsCounters,
    /// Shootdowns not yet applied to the machine's TLBs.
    pub pending: Vec<Shootdown>,
    /// Cycles of OS work not yet charged to a core.
    pub charge: u64,
    /// A guest's kernel (set by [`crate::os::virt::boot`]): it records the frames its copies
    /// write in `written`, for the host to back then (see [`Kernel::sync`]).
    pub(crate) guest: bool,
    /// Runs of frames (first, count) a copy wrote since the last sync: a promotion's new
    /// block, a migrated page. Kept only in a guest.
    pub(crate) written: Vec<(u64, u64)>,
    pub start: PhysSnapshot,
    top: u8,
    va_bits: u32,
    format: PtFormat,
    phys_gb: u64,
    policy: PagePolicy,
    defrag: ThpDefrag,
    khugepaged_defrag: bool,
    khugepaged_pages: u64,
    max_ptes_none: u64,
    huge_1g: bool,
    resv_promote: bool,
    /// Populated pages at which a reservation is promoted (`os.reservation_promote_at`).
    resv_promote_at: u16,
    /// `os.prefault_as=write`: prefaulted pages are left accessed and dirty.
    prefault_write: bool,
    copy_cycles: u64,
    fragmentation: Fragmentation,
    aged_target: f64,
    available_gb: f64,
    madvise_all: bool,
    madvise_names: Vec<String>,
    reservations: BTreeMap<(usize, u64), Reservation>,
    resv_clock: u64,
    /// Reverse map of movable frames (4 KB data pages): frame -> (space, virtual page).
    /// Kept only when compaction can run (`thp`/`madvise`).
    rmap: Option<HashMap<u32, (u32, u64)>>,
    /// Movable frames per 2 MB physical block (with `rmap`).
    movable_2m: Vec<u16>,
    /// khugepaged's position: space and the next address to scan.
    khugepaged_cursor: (usize, u64),
    /// Compaction deferral after failures, as Linux's defer_compaction: skip the next
    /// 2^shift attempts (shift at most 6), counting them in `compact_skipped`.
    compact_defer_shift: u32,
    compact_skipped: u64,
    /// Layout of every page table this OS builds (`pt.format`).
    layout: crate::os::pt::Layout,
    /// The root slot through which each table maps itself (`pt.recursive_slot`; 0: none).
    recursive_slot: usize,
    /// Files mapped read-only, and their cached pages.
    page_cache: PageCache,
    /// `os.readahead_pages`, `os.fault_around_pages`.
    readahead: u64,
    fault_around: u64,
    /// Pages mapped around a faulting file page are accessed at once (`os.preset_a`).
    preset_a: bool,
    /// Pages per small file reservation (`os.small_reservation`; 1: none).
    small_reservation: u64,
}

impl Os {
    pub fn new(cfg: &KernelParams) -> Os {
        let layout = cfg.pt.layout();
        let (top, va_bits) = if layout.top() == 5 { (5, 56) } else { (4, 47) };
        let phys = PhysMem::new(cfg.phys.size_gb << 30)
            .with_pcp(cfg.system.cores as usize, cfg.phys.pcp_batch, cfg.phys.pcp_high, cfg.phys.pcp_order)
            .with_frame_order(cfg.phys.frame_order);
        let thp = matches!(cfg.page_policy, PagePolicy::Thp | PagePolicy::Madvise);
        let compaction = thp && (cfg.os.thp_defrag != ThpDefrag::Never || cfg.os.khugepaged_defrag);
        let names: Vec<String> = cfg.os.madvise_regions.split(',').map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect();
        let mut pt = PageTables::new();
        pt.set_late_flatten(cfg.pt.late_flatten as u16);
        if let Some(p) = cfg.ech.geometry() {
            pt.enable_ech(p);
        }
        Os {
            movable_2m: if compaction { vec![0; phys.blocks_2m()] } else { Vec::new() },
            phys,
            pt,
            spaces: Vec::new(),
            counters: OsCounters::default(),
            pending: Vec::new(),
            charge: 0,
            guest: false,
            written: Vec::new(),
            start: PhysSnapshot::default(),
            top,
            va_bits,
            format: cfg.pt.format,
            layout,
            recursive_slot: cfg.pt.recursive_slot as usize,
            phys_gb: cfg.phys.size_gb,
            policy: cfg.page_policy,
            defrag: cfg.os.thp_defrag,
            khugepaged_defrag: cfg.os.khugepaged_defrag,
            khugepaged_pages: cfg.os.khugepaged_pages,
            max_ptes_none: cfg.os.khugepaged_max_ptes_none,
            huge_1g: cfg.os.huge_1g,
            resv_promote: cfg.reservation_promote,
            resv_promote_at: cfg.os.reservation_promote_at.clamp(1, ENTRIES as u64) as u16,
            prefault_write: cfg.os.prefault_as == PrefaultAs::Write,
            copy_cycles: cfg.os.page_copy_cycles,
            fragmentation: cfg.phys.fragmentation,
            aged_target: cfg.phys.aged_target,
            available_gb: cfg.phys.available_gb,
            madvise_all: names.iter().any(|n| n == "*"),
            madvise_names: names,
            reservations: BTreeMap::new(),
            resv_clock: 0,
            rmap: compaction.then(HashMap::new),
            khugepaged_cursor: (0, 0),
            compact_defer_shift: 0,
            compact_skipped: 0,
            page_cache: PageCache::default(),
            readahead: cfg.os.readahead_pages,
            fault_around: cfg.os.fault_around_pages,
            preset_a: match cfg.os.preset_a {
                PresetA::On => true,
                PresetA::Off => false,
                PresetA::Auto => cfg.page_policy != PagePolicy::FreeBsd,
            },
            small_reservation: cfg.os.small_reservation.pages(),
        }
    }

    /// The page-size policy in force.
    pub fn policy(&self) -> PagePolicy {
        self.policy
    }

    /// Whether khugepaged runs (a THP policy with a scan budget).
    pub fn khugepaged_enabled(&self) -> bool {
        matches!(self.policy, PagePolicy::Thp | PagePolicy::Madvise) && self.khugepaged_pages > 0
    }

    /// Bring physical memory to the state the fragmentation scenario describes, for
    /// `processes` address spaces of each program, whose regions are `programs`. Call before
    /// creating them.
    pub fn prepare(&mut self, programs: &[&[Region]], processes: usize, seed: u64) -> Result<(), SimError> {
        let mut rng = Rng::new(seed ^ 0xf4a9);
        let mut hog = 0;
        if self.available_gb > 0.0 {
            hog = frag::hog(&mut self.phys, (self.available_gb * (1u64 << 18) as f64) as u64);
        }
        let pinned = match self.fragmentation {
            Fragmentation::None => 0,
            Fragmentation::Pinned(x) => frag::pin_fraction(&mut self.phys, x, &mut rng),
            Fragmentation::Aged(s) => frag::age(&mut self.phys, s, self.aged_target),
            Fragmentation::LowHalf => {
                if programs.iter().all(|r| r.is_empty()) {
                    return Err(SimError::NeedsRegions { what: "phys.fragmentation=lowhalf" });
                }
                // The paper's 50 % scenario fragments data memory only: flattened page-table
                // nodes still get their 2 MB blocks (it reports no allocation failures there).
                let keep: u64 = programs.iter().map(|&regions| (lowhalf_limit(regions).1 + self.flat_nodes_needed(regions)) * processes as u64).sum();
                let free = frag::free_blocks_2m(&self.phys).len() as u64;
                frag::pin_blocks(&mut self.phys, free.saturating_sub(keep), &mut rng)
            }
        };
        self.start = PhysSnapshot {
            free_frames: self.phys.free_frames(),
            free_2m_blocks: self.phys.free_2m_blocks(),
            free_blocks: std::array::from_fn(|o| self.phys.free_blocks(o as u8)),
            pinned_frames: pinned,
            hog_frames: hog,
        };
        Ok(())
    }

    /// Create a process with the given regions; returns its index. PCIDs start at 1.
    pub fn create_space(&mut self, regions: Vec<Region>) -> Result<usize, SimError> {
        let root = self.pt.alloc_root(&mut self.phys, self.layout)?;
        if self.recursive_slot != 0 {
            self.pt.install_recursive(root, self.recursive_slot)?;
        }
        let ctx = self.spaces.len() as Ctx + 1;
        let huge_limit = if self.fragmentation == Fragmentation::LowHalf { lowhalf_limit(&regions).0 } else { u64::MAX };
        let madvised = regions.iter().map(|r| self.madvise_all || self.madvise_names.contains(&r.name)).collect();
        let files: Vec<Option<u32>> = regions
            .iter()
            .map(|r| match r.file {
                Some(f) if !f.writable => Some(self.page_cache.open(&r.name, f.size)),
                _ => None,
            })
            .collect();
        let has_files = files.iter().any(Option::is_some);
        self.spaces.push(AddressSpace { root, top: self.top, ctx, regions, mapped_bytes: 0, huge_bytes: 0, huge_limit, madvised, files, has_files });
        Ok(self.spaces.len() - 1)
    }

    fn check_va(&self, va: VirtAddr) -> Result<(), SimError> {
        if va.0 >> self.va_bits != 0 {
            return Err(SimError::BadAddress { va: va.0, bits: self.va_bits, format: self.format.name() });
        }
        Ok(())
    }

    fn check_space(&self, space: usize) -> Result<(), SimError> {
        if space >= self.spaces.len() {
            return Err(SimError::NoSuchSpace { space, spaces: self.spaces.len() });
        }
        Ok(())
    }

    /// Handle a page fault at `va` on CPU 0 (see [`Os::fault_on`]).
    pub fn fault(&mut self, space: usize, va: VirtAddr, write: bool) -> Result<(), SimError> {
        self.fault_on(0, space, va, write)
    }

    /// Handle a page fault at `va` taken on CPU `cpu`: map it as the page-size policy says.
    /// A write fault maps the page dirty, as Linux's anonymous-fault path does for writable
    /// mappings. Work beyond a plain 4 KB fault (zeroing a huge page, compaction) goes to
    /// [`Os::charge`]; remappings queue shootdowns.
    pub fn fault_on(&mut self, cpu: usize, space: usize, va: VirtAddr, write: bool) -> Result<(), SimError> {
        self.check_va(va)?;
        self.counters.faults += 1;
        self.phys.cpu = cpu;
        self.fault_inner(space, va, write)
    }

    fn fault_inner(&mut self, space: usize, va: VirtAddr, write: bool) -> Result<(), SimError> {
        if self.spaces[space].has_files {
            if let Some(r) = self.file_region(space, va.0) {
                return self.file_fault(space, va, r);
            }
        }
        let dirty = if write { PTE_D } else { 0 };
        let va2m = va.0 & !(MB2 - 1);
        match self.policy {
            PagePolicy::Never => self.map_4k(space, va, dirty),
            PagePolicy::Ideal => {
                let va1g = va.0 & !(GB1 - 1);
                if self.huge_1g && self.layout.holds_1g_leaves() && self.eligible(space, va1g, GB1) && self.none_at(space, va1g, PageSize::Size1G) {
                    if let Some(f) = self.phys.alloc(MAX_ORDER) {
                        return self.map_huge(space, va1g, f, PageSize::Size1G, dirty);
                    }
                }
                if self.eligible(space, va2m, MB2) && self.none_at(space, va2m, PageSize::Size2M) {
                    if let Some(f) = self.phys.alloc(ORDER_2M) {
                        return self.map_huge(space, va2m, f, PageSize::Size2M, dirty);
                    }
                    self.counters.huge_alloc_failures += 1;
                }
                self.map_4k(space, va, dirty)
            }
            PagePolicy::Thp | PagePolicy::Madvise => {
                if self.thp_allowed(space, va2m) && self.none_at(space, va2m, PageSize::Size2M) {
                    let direct = match self.defrag {
                        ThpDefrag::Always => true,
                        ThpDefrag::Madvise => self.madvised(space, va2m),
                        ThpDefrag::Never => false,
                    };
                    if let Some(f) = self.alloc_huge(direct) {
                        return self.map_huge(space, va2m, f, PageSize::Size2M, dirty);
                    }
                    self.counters.huge_alloc_failures += 1;
                }
                self.map_4k(space, va, dirty)
            }
            PagePolicy::FreeBsd => self.freebsd_fault(space, va, dirty),
        }
    }

    /// The region `[va, va + size)` may hold one huge page: it lies inside one region of
    /// the space (any address if the space declares none) and below the lowhalf limit.
    fn eligible(&self, space: usize, va: u64, size: u64) -> bool {
        let sp = &self.spaces[space];
        if va + size > sp.huge_limit || (va + size - 1) >> self.va_bits != 0 {
            return false;
        }
        sp.regions.is_empty() || sp.regions.iter().any(|r| r.start <= va && va + size <= r.end() && self.anonymous_huge(r))
    }

    /// A region whose memory may be mapped with anonymous huge pages: anonymous memory, or a
    /// private writable mapping of a file (its pages are the program's copies), except under
    /// Linux THP, which leaves every file mapping alone (seed 002 §3.2).
    fn anonymous_huge(&self, r: &Region) -> bool {
        match r.file {
            None => true,
            Some(f) => f.writable && !matches!(self.policy, PagePolicy::Thp | PagePolicy::Madvise),
        }
    }

    fn madvised(&self, space: usize, va2m: u64) -> bool {
        let sp = &self.spaces[space];
        sp.regions.iter().zip(&sp.madvised).any(|(r, &m)| m && r.start <= va2m && va2m + MB2 <= r.end())
    }

    /// THP may map this 2 MB region huge (`madvise`: only madvised regions).
    fn thp_allowed(&self, space: usize, va2m: u64) -> bool {
        self.eligible(space, va2m, MB2) && (self.policy != PagePolicy::Madvise || self.madvised(space, va2m))
    }

    /// Nothing is mapped at the entry that would hold a huge leaf of `size` for `va`
    /// (Linux's pmd_none / pud_none).
    fn none_at(&self, space: usize, va: u64, size: PageSize) -> bool {
        let sp = &self.spaces[space];
        self.pt.huge_slot_empty(sp.root, VirtAddr(va), size)
    }

    /// A free 2 MB block, compacting memory for one if `compact` and none is free.
    fn alloc_huge(&mut self, compact: bool) -> Option<Frame> {
        if let Some(f) = self.phys.alloc(ORDER_2M) {
            return Some(f);
        }
        if compact && self.rmap.is_some() {
            return self.compact();
        }
        None
    }

    fn map_huge(&mut self, space: usize, va: u64, frame: Frame, size: PageSize, dirty: u64) -> Result<(), SimError> {
        self.ensure_headroom();
        let sp = &mut self.spaces[space];
        let effect = self.pt.map(&mut self.phys, sp.root, sp.top, VirtAddr(va), frame, size, PTE_RW | PTE_US | dirty)?;
        sp.mapped_bytes += size.bytes();
        sp.huge_bytes += size.bytes();
        self.restructured(space, effect);
        self.counters.huge_faults += 1;
        // Zeroing the page: a 4 KB fault's cost includes one page.
        self.charge += (size.frames() - 1) * self.copy_cycles;
        Ok(())
    }

    /// One 4 KB frame for data; under pressure, break reservations to get one.
    fn alloc_data_frame(&mut self, va: u64) -> Result<Frame, SimError> {
        loop {
            if let Some(f) = self.phys.alloc_page() {
                return Ok(f);
            }
            if !self.break_reservation() {
                return Err(SimError::OutOfMemory { gb: self.phys_gb, va });
            }
        }
    }

    /// Keep a few frames free for the page-table nodes a mapping may need.
    fn ensure_headroom(&mut self) {
        while self.phys.free_frames() + self.phys.pcp_frames() < 8 && self.break_reservation() {}
    }

    /// A mapping changed the shape of the tree (FPT+NF unflattened a node): cached
    /// paging-structure entries for that range are stale.
    fn restructured(&mut self, space: usize, effect: crate::os::pt::MapEffect) {
        if let Some((start, end)) = effect.restructured {
            self.flush(space, vec![(start, end)], (end - start) >> 12);
        }
    }

    fn map_4k(&mut self, space: usize, va: VirtAddr, extra: u64) -> Result<(), SimError> {
        let frame = self.alloc_data_frame(va.0)?;
        self.map_4k_frame(space, va.0 & !0xfff, frame, extra)
    }

    fn map_4k_frame(&mut self, space: usize, page: u64, frame: Frame, extra: u64) -> Result<(), SimError> {
        self.map_leaf_4k(space, page, frame, PTE_RW | PTE_US | extra)?;
        self.rmap_add(frame, space, page);
        Ok(())
    }

    /// Map one 4 KB page with entry bits `flags` (P is added).
    fn map_leaf_4k(&mut self, space: usize, page: u64, frame: Frame, flags: u64) -> Result<(), SimError> {
        self.ensure_headroom();
        let sp = &mut self.spaces[space];
        let effect = self.pt.map(&mut self.phys, sp.root, sp.top, VirtAddr(page), frame, PageSize::Size4K, flags)?;
        sp.mapped_bytes += 4096;
        self.restructured(space, effect);
        Ok(())
    }

    // ---- FreeBSD reservations ------------------------------------------------------------

    fn freebsd_fault(&mut self, space: usize, va: VirtAddr, dirty: u64) -> Result<(), SimError> {
        let va2m = va.0 & !(MB2 - 1);
        let key = (space, va2m >> 21);
        let i = ((va.0 - va2m) >> 12) as usize;
        if !self.reservations.contains_key(&key) {
            // Reserve on the first fault in an empty region (even one the mapping does not
            // wholly cover: FreeBSD bets on growth), if an aligned block is free.
            let in_range = (va2m + MB2 - 1) >> self.va_bits == 0;
            if !(in_range && self.none_at(space, va2m, PageSize::Size2M)) {
                return self.map_4k(space, va, dirty);
            }
            let Some(b) = self.phys.alloc(ORDER_2M) else {
                self.counters.huge_alloc_failures += 1;
                return self.map_4k(space, va, dirty);
            };
            self.reservations.insert(key, Reservation { base: b.0, populated: [0; 8], count: 0, last_use: 0 });
            self.counters.reservations += 1;
        }
        self.resv_clock += 1;
        let clock = self.resv_clock;
        let r = self.reservations.get_mut(&key).expect("reservation exists");
        debug_assert!(!r.has(i), "a populated reservation page faulted again");
        r.set(i, true);
        r.count += 1;
        r.last_use = clock;
        let (frame, count) = (Frame(r.base + i as u64), r.count);
        self.map_4k_frame(space, va.0 & !0xfff, frame, dirty)?;
        if self.resv_promote && count >= self.resv_promote_at {
            // (Early, the rest of the block is zeroed and mapped too: only where the mapping
            // covers the whole 2 MB region.)
            let full = count == ENTRIES as u16;
            if full || self.eligible(space, va2m, MB2) {
                self.promote_reservation(space, va2m, !full);
            }
        }
        Ok(())
    }

    /// Replace the 4 KB mappings of a reservation by one 2 MB mapping of its block, in
    /// place (the frames already sit at their offsets). With `fill`, unpopulated pages are
    /// zeroed first (a requested promotion of a partial reservation).
    fn promote_reservation(&mut self, space: usize, va2m: u64, fill: bool) -> bool {
        let key = (space, va2m >> 21);
        let Some(r) = self.reservations.get(&key) else { return false };
        if r.count as usize != ENTRIES && !fill {
            return false;
        }
        let (base, missing) = (r.base, ENTRIES as u64 - r.count as u64);
        let sp = &self.spaces[space];
        let Some(entries) = self.pt.region_entries(sp.root, sp.top, VirtAddr(va2m)) else { return false };
        let present = entries.iter().filter(|&&e| e & PTE_P != 0);
        let (mut all_a, mut any_d) = (true, false);
        for &e in present {
            all_a &= e & PTE_A != 0;
            any_d |= e & PTE_D != 0;
        }
        let flags = PTE_RW | PTE_US | if all_a && missing == 0 { PTE_A } else { 0 } | if any_d { PTE_D } else { 0 };
        let sp = &self.spaces[space];
        let (root, top) = (sp.root, sp.top);
        if self.pt.collapse_2m(&mut self.phys, root, top, VirtAddr(va2m), Frame(base), flags).is_none() {
            return false;
        }
        self.reservations.remove(&key);
        let sp = &mut self.spaces[space];
        sp.mapped_bytes += missing * 4096;
        sp.huge_bytes += MB2;
        self.charge += missing * self.copy_cycles;
        if missing > 0 {
            self.wrote(base, ENTRIES as u64);
        }
        self.counters.promotions += 1;
        self.flush(space, vec![(va2m, va2m + MB2)], ENTRIES as u64);
        true
    }

    /// Break the least recently used partially populated reservation: its unpopulated
    /// frames go back to the buddy allocator. False if there is none.
    fn break_reservation(&mut self) -> bool {
        let victim = self.reservations.iter().filter(|(_, r)| (r.count as usize) < ENTRIES).min_by_key(|(_, r)| r.last_use).map(|(k, _)| *k);
        let Some(key) = victim else { return false };
        let r = self.reservations.remove(&key).expect("victim exists");
        for i in 0..ENTRIES {
            if !r.has(i) {
                self.phys.free(Frame(r.base + i as u64), 0);
            }
        }
        self.counters.reservations_broken += 1;
        true
    }

    /// Frames held by reservations but not yet populated.
    pub fn reserved_frames(&self) -> u64 {
        self.reservations.values().map(|r| ENTRIES as u64 - r.count as u64).sum()
    }

    // ---- file mappings and the page cache --------------------------------------------------

    /// The region of `space` holding `va` if it maps a file read-only.
    fn file_region(&self, space: usize, va: u64) -> Option<usize> {
        let sp = &self.spaces[space];
        sp.regions.iter().zip(&sp.files).position(|(r, f)| f.is_some() && r.start <= va && va < r.end())
    }

    /// A fault on a page of a file mapped read-only (region `ri`): the page comes from the
    /// page cache (read there first, with its read-around cluster, if missing) and is mapped
    /// with the mapping's rights; the cached pages around it that the mapping covers are
    /// mapped too (fault-around), accessed or not as `os.preset_a` says. Under FreeBSD with
    /// promotion, a whole 2 MB piece of the file that is cached in its reservation and lies in
    /// phase with the mapping becomes one 2 MB mapping. Pages of the mapping beyond the end
    /// of the file are anonymous.
    fn file_fault(&mut self, space: usize, va: VirtAddr, ri: usize) -> Result<(), SimError> {
        let sp = &self.spaces[space];
        let (r, file) = (&sp.regions[ri], sp.files[ri].expect("a file region"));
        let map = r.file.expect("a file region");
        let (start, end) = (r.start, r.end());
        let page = va.0 & !0xfff;
        let index = (page - start + map.offset) >> 12;
        let pages = self.page_cache.pages(file);
        if index >= pages {
            return self.map_4k(space, va, 0);
        }
        let flags = PTE_US | if map.exec { 0 } else { PTE_NX };
        let va2m = page & !(MB2 - 1);
        if self.file_superpage(space, ri, va2m, flags)? {
            return Ok(());
        }
        self.read_cluster(file, index, va.0)?;
        let frame = self.page_cache.frame(file, index).expect("read just now");
        self.map_leaf_4k(space, page, frame, flags)?;
        // Fault-around: the window is aligned in the address space and stays in the mapping
        // and in the 2 MB region (one page-table node), as Linux's do_fault_around.
        let window = self.fault_around * 4096;
        let lo = (page & !(window - 1)).max(start).max(va2m);
        let hi = ((page & !(window - 1)) + window).min(end).min(va2m + MB2);
        let around = flags | if self.preset_a { PTE_A } else { 0 };
        let mut q = lo;
        while q < hi {
            let i = (q - start + map.offset) >> 12;
            if q != page && i < pages && self.translate(space, VirtAddr(q)).is_none() {
                if let Some(f) = self.page_cache.frame(file, i) {
                    self.map_leaf_4k(space, q, f, around)?;
                    self.counters.fault_around += 1;
                }
            }
            q += 4096;
        }
        if self.policy == PagePolicy::FreeBsd && self.resv_promote {
            self.promote_file(space, ri, va2m);
        }
        Ok(())
    }

    /// Read the pages of `file` around `index` into the page cache, if `index` is missing:
    /// the cluster of `os.readahead_pages` centred on it (Linux's mmap read-around), each
    /// page in its own frame, in file order.
    fn read_cluster(&mut self, file: u32, index: u64, va: u64) -> Result<(), SimError> {
        if self.page_cache.frame(file, index).is_some() {
            return Ok(());
        }
        let first = index.saturating_sub(self.readahead / 2);
        let last = (first + self.readahead).min(self.page_cache.pages(file));
        for i in first..last {
            if self.page_cache.frame(file, i).is_none() {
                let f = self.file_frame(file, i, va)?;
                self.page_cache.insert(file, i, f);
                self.counters.page_cache_reads += 1;
            }
        }
        Ok(())
    }

    /// A frame for page `index` of `file`: under FreeBSD from the reservation of its 2 MB
    /// piece when the piece may have one (reserving it first), else from a small reservation
    /// of its chunk (`os.small_reservation`, if on), else from the allocator.
    fn file_frame(&mut self, file: u32, index: u64, va: u64) -> Result<Frame, SimError> {
        if self.policy == PagePolicy::FreeBsd && self.page_cache.reservable(file, index / PIECE) {
            if self.page_cache.reservation(file, index / PIECE).is_none() {
                match self.phys.alloc(ORDER_2M) {
                    Some(b) => {
                        self.page_cache.reserve(file, index / PIECE, b.0);
                        self.counters.reservations += 1;
                    }
                    None => self.counters.huge_alloc_failures += 1,
                }
            }
            if let Some(f) = self.page_cache.take_reserved(file, index) {
                return Ok(f);
            }
        }
        if self.policy == PagePolicy::FreeBsd && self.small_reservation > 1 {
            let (phys, chunk) = (&mut self.phys, self.small_reservation);
            if let Some(f) = self.page_cache.take_small(file, index, chunk, || phys.alloc(chunk.trailing_zeros() as u8)) {
                return Ok(f);
            }
        }
        self.alloc_data_frame(va)
    }

    /// Where region `ri` covers the 2 MB region `va2m` whole, in phase with a 2 MB piece of
    /// its file (file offset ≡ address, mod 2 MB), and that piece is wholly cached in its
    /// reservation: the piece's 2 MB block, as FreeBSD maps a superpage of a file at once.
    fn file_piece(&self, space: usize, ri: usize, va2m: u64) -> Option<u64> {
        let sp = &self.spaces[space];
        let (r, file) = (&sp.regions[ri], sp.files[ri]?);
        let offset = va2m.checked_sub(r.start)? + r.file?.offset;
        if va2m + MB2 > r.end() || offset % MB2 != 0 {
            return None;
        }
        let res = self.page_cache.reservation(file, offset / MB2)?;
        (res.count as u64 == PIECE).then_some(res.base)
    }

    /// FreeBSD's fast path: map a file's complete, in-phase 2 MB piece with one 2 MB leaf when
    /// nothing is mapped in the region yet (another process or mapping brought it in).
    fn file_superpage(&mut self, space: usize, ri: usize, va2m: u64, flags: u64) -> Result<bool, SimError> {
        if self.policy != PagePolicy::FreeBsd || !self.resv_promote || !self.none_at(space, va2m, PageSize::Size2M) {
            return Ok(false);
        }
        let Some(base) = self.file_piece(space, ri, va2m) else { return Ok(false) };
        self.ensure_headroom();
        let sp = &mut self.spaces[space];
        let effect = self.pt.map(&mut self.phys, sp.root, sp.top, VirtAddr(va2m), Frame(base), PageSize::Size2M, flags)?;
        sp.mapped_bytes += MB2;
        sp.huge_bytes += MB2;
        self.restructured(space, effect);
        self.counters.huge_faults += 1;
        Ok(true)
    }

    /// Promote the 2 MB region `va2m` of file region `ri` in place once each of its 512
    /// entries maps its page of a wholly cached, in-phase piece (pmap_promote_pde on a file
    /// mapping; a mapping out of phase, the linker's `maxpagesize` pitfall, never promotes).
    fn promote_file(&mut self, space: usize, ri: usize, va2m: u64) {
        let Some(base) = self.file_piece(space, ri, va2m) else { return };
        let sp = &self.spaces[space];
        let (root, top) = (sp.root, sp.top);
        let Some(entries) = self.pt.region_entries(root, top, VirtAddr(va2m)) else { return };
        let (mut all_a, mut any_d) = (true, false);
        for (i, &e) in entries.iter().enumerate() {
            if e & PTE_P == 0 || (e & PTE_PFN_MASK) >> 12 != base + i as u64 {
                return;
            }
            all_a &= e & PTE_A != 0;
            any_d |= e & PTE_D != 0;
        }
        let flags = (entries[0] & (PTE_RW | PTE_US | PTE_NX)) | if all_a { PTE_A } else { 0 } | if any_d { PTE_D } else { 0 };
        if self.pt.collapse_2m(&mut self.phys, root, top, VirtAddr(va2m), Frame(base), flags).is_none() {
            return;
        }
        self.spaces[space].huge_bytes += MB2;
        self.counters.promotions += 1;
        self.flush(space, vec![(va2m, va2m + MB2)], ENTRIES as u64);
    }

    // ---- reverse map and compaction -------------------------------------------------------

    fn rmap_add(&mut self, frame: Frame, space: usize, page: u64) {
        if let Some(m) = &mut self.rmap {
            m.insert(frame.0 as u32, (space as u32, page));
            self.movable_2m[(frame.0 >> 9) as usize] += 1;
        }
    }

    fn rmap_del(&mut self, frame: Frame) {
        if let Some(m) = &mut self.rmap {
            if m.remove(&(frame.0 as u32)).is_some() {
                self.movable_2m[(frame.0 >> 9) as usize] -= 1;
            }
        }
    }

    /// Direct compaction for one 2 MB block: pick the block whose used frames are all
    /// movable and fewest, migrate them elsewhere (copy, remap, shoot down) and return the
    /// block. Unmovable frames (page-table nodes, pinned pages, huge pages) make a block
    /// unusable, as in Linux. After a failure the next attempts are skipped, 2^n of them
    /// after n failures in a row (n at most 6), as Linux defers compaction.
    fn compact(&mut self) -> Option<Frame> {
        if self.compact_defer_shift > 0 && self.compact_skipped < 1 << self.compact_defer_shift {
            self.compact_skipped += 1;
            return None;
        }
        let got = self.compact_now();
        if got.is_some() {
            self.compact_defer_shift = 0;
        } else {
            self.compact_defer_shift = (self.compact_defer_shift + 1).min(6);
            self.counters.compaction_failures += 1;
        }
        self.compact_skipped = 0;
        got
    }

    fn compact_now(&mut self) -> Option<Frame> {
        self.phys.drain_pcp();
        let whole = (self.phys.total_frames() / 512) as usize;
        let best = (0..whole)
            .filter(|&b| {
                let used = self.phys.used_in_2m(b);
                used > 0 && used == self.movable_2m[b]
            })
            .min_by_key(|&b| (self.phys.used_in_2m(b), b))?;
        let used = self.phys.used_in_2m(best) as u64;
        let free_here = 512 - used;
        if self.phys.free_frames() < free_here + used + 64 {
            return None;
        }
        let base = best as u64 * 512;
        // Isolate the block's free pieces so migration targets come from elsewhere.
        let mut f = base;
        while f < base + 512 {
            match self.phys.is_free_head(Frame(f)) {
                Some(o) => {
                    let ok = self.phys.alloc_at(Frame(f), o);
                    debug_assert!(ok);
                    f += 1 << o;
                }
                None => f += 1,
            }
        }
        let mut ranges: BTreeMap<usize, Vec<(u64, u64)>> = BTreeMap::new();
        for old in base..base + 512 {
            let Some(&(space, page)) = self.rmap.as_ref().and_then(|m| m.get(&(old as u32))) else { continue };
            let new = self.phys.alloc(0).expect("checked free memory above");
            self.move_page(space as usize, page, Frame(old), new);
            ranges.entry(space as usize).or_default().push((page, page + 4096));
        }
        for (space, r) in ranges {
            let pages = r.len() as u64;
            self.flush(space, r, pages);
        }
        self.counters.compactions += 1;
        Some(Frame(base))
    }

    // ---- promotion, demotion, unmapping ----------------------------------------------------

    /// Collapse the 4 KB pages of a 2 MB region into a new 2 MB page (khugepaged, or a
    /// requested promotion): allocate a block (compacting if `compact`), copy the
    /// populated pages and zero the rest, free the old frames and level-1 node, map the
    /// 2 MB leaf (dirty, as Linux's collapse), shoot down. False if no block was found.
    fn collapse(&mut self, space: usize, va2m: u64, compact: bool) -> bool {
        let Some(frame) = self.alloc_huge(compact) else {
            self.counters.huge_alloc_failures += 1;
            return false;
        };
        let sp = &self.spaces[space];
        let (root, top) = (sp.root, sp.top);
        let Some(old) = self.pt.collapse_2m(&mut self.phys, root, top, VirtAddr(va2m), frame, PTE_RW | PTE_US | PTE_D) else {
            self.phys.free(frame, ORDER_2M);
            return false;
        };
        let mut present = 0;
        for e in old {
            if e & PTE_P != 0 {
                let f = Frame((e & PTE_PFN_MASK) >> 12);
                self.rmap_del(f);
                self.phys.free_page(f);
                present += 1;
            }
        }
        let sp = &mut self.spaces[space];
        sp.mapped_bytes += (ENTRIES as u64 - present) * 4096;
        sp.huge_bytes += MB2;
        self.charge += ENTRIES as u64 * self.copy_cycles;
        self.wrote(frame.0, ENTRIES as u64);
        self.counters.promotions += 1;
        self.flush(space, vec![(va2m, va2m + MB2)], ENTRIES as u64);
        true
    }

    /// The hook through which a mechanism (the PCC) asks for a promotion: map the 2 MB
    /// region holding `va` with one 2 MB page. A reservation is promoted in place (its
    /// unpopulated pages zeroed); 4 KB pages are collapsed into a new block (compacting
    /// memory for one under the THP policies, as MADV_COLLAPSE does). Ok(false) when the
    /// region is not eligible (not inside one region of the space, above the lowhalf
    /// limit), already huge, has nothing mapped, or no 2 MB block can be had.
    pub fn request_promotion(&mut self, space: usize, va: VirtAddr) -> Result<bool, SimError> {
        self.check_va(va)?;
        self.check_space(space)?;
        let va2m = va.0 & !(MB2 - 1);
        if !self.eligible(space, va2m, MB2) {
            return Ok(false);
        }
        if self.reservations.contains_key(&(space, va2m >> 21)) {
            return Ok(self.promote_reservation(space, va2m, true));
        }
        let sp = &self.spaces[space];
        let Some(region) = self.pt.region_entries(sp.root, sp.top, VirtAddr(va2m)) else {
            return Ok(false); // nothing mapped through level-1 entries (empty, or huge)
        };
        if self.policy == PagePolicy::FreeBsd {
            // pmap_promote_pde: 512 pages already at their offsets in one aligned block (a
            // demoted superpage) are promoted in place.
            let e = region;
            let base = (e[0] & PTE_PFN_MASK) >> 12;
            let in_place = base % 512 == 0 && e.iter().enumerate().all(|(i, &x)| x & PTE_P != 0 && (x & PTE_PFN_MASK) >> 12 == base + i as u64);
            if in_place {
                self.reservations.insert((space, va2m >> 21), Reservation { base, populated: [u64::MAX; 8], count: ENTRIES as u16, last_use: 0 });
                return Ok(self.promote_reservation(space, va2m, false));
            }
        }
        self.ensure_headroom();
        Ok(self.collapse(space, va2m, true))
    }

    /// Split the 2 MB page holding `va` into 512 4 KB pages (same frames, rights, A/D),
    /// shooting down the 2 MB translation. Ok(false) if `va` is not in a 2 MB page.
    pub fn request_demotion(&mut self, space: usize, va: VirtAddr) -> Result<bool, SimError> {
        self.check_va(va)?;
        self.check_space(space)?;
        let va2m = va.0 & !(MB2 - 1);
        self.ensure_headroom();
        let sp = &self.spaces[space];
        let (root, top) = (sp.root, sp.top);
        let Some((base, _)) = self.pt.split_2m(&mut self.phys, root, top, VirtAddr(va2m))? else { return Ok(false) };
        if !self.cached_page(space, va2m, base) {
            for i in 0..ENTRIES as u64 {
                self.rmap_add(Frame(base.0 + i), space, va2m + i * 4096);
            }
        }
        self.spaces[space].huge_bytes -= MB2;
        self.counters.demotions += 1;
        self.flush(space, vec![(va2m, va2m + MB2)], 1);
        Ok(true)
    }

    /// Demote the 2 MB page holding `va` (as [`Os::request_demotion`]) and give its 2 MB
    /// block back to the allocator, so that another region can be promoted into it: its 512
    /// pages move to 4 KB frames taken elsewhere (copied, as compaction's moves). When fewer
    /// than 512 frames are free, or the page is a reservation's, the split stays in place.
    /// Ok(false) if `va` is not in a 2 MB page.
    pub fn request_demotion_freeing(&mut self, space: usize, va: VirtAddr) -> Result<bool, SimError> {
        if !self.request_demotion(space, va)? {
            return Ok(false);
        }
        let va2m = va.0 & !(MB2 - 1);
        if self.reservations.contains_key(&(space, va2m >> 21)) || self.file_region(space, va2m).is_some() {
            return Ok(true);
        }
        let Some((Frame(base), _)) = self.translate(space, VirtAddr(va2m)) else { return Ok(true) };
        // (Take every new frame first: none can come from the block, which is still in use.)
        let mut new = Vec::with_capacity(ENTRIES);
        while new.len() < ENTRIES {
            match self.phys.alloc_page() {
                Some(f) => new.push(f),
                None => {
                    new.into_iter().for_each(|f| self.phys.free_page(f));
                    return Ok(true);
                }
            }
        }
        for (i, f) in new.into_iter().enumerate() {
            self.move_page(space, va2m + i as u64 * 4096, Frame(base + i as u64), f);
        }
        // (The moves count as `os.migrated_pages`.)
        self.phys.free(Frame(base), ORDER_2M);
        Ok(true)
    }

    /// Make the 4 KB page holding `va` writable or read-only (mprotect of one page): its
    /// leaf's RW bit changes, A and D stay, and the page's translations are shot down. A
    /// 2 MB page holding it is demoted first. Ok(false) if nothing is mapped there (or it is
    /// in a 1 GB page, which this does not split).
    pub fn protect(&mut self, space: usize, va: VirtAddr, writable: bool) -> Result<bool, SimError> {
        self.check_va(va)?;
        self.check_space(space)?;
        match self.translate(space, va) {
            None | Some((_, PageSize::Size1G)) => return Ok(false),
            Some((_, PageSize::Size2M)) => {
                self.request_demotion(space, va)?;
            }
            Some((_, PageSize::Size4K)) => {}
        }
        let page = va.0 & !0xfff;
        self.update_leaf(space, page, PageSize::Size4K, |e| if writable { e | PTE_RW } else { e & !PTE_RW });
        self.flush(space, vec![(page, page + 4096)], 1);
        Ok(true)
    }

    /// Unmap the page holding `va` (of whatever size) and free its memory (a page of a
    /// reservation returns to the reservation). Ok(false) if nothing is mapped there.
    pub fn unmap(&mut self, space: usize, va: VirtAddr) -> Result<bool, SimError> {
        self.check_va(va)?;
        self.check_space(space)?;
        let Some((frame, size)) = self.translate(space, va) else { return Ok(false) };
        let base = va.0 & !(size.bytes() - 1);
        self.unmap_quiet(space, base, frame, size);
        self.flush(space, vec![(base, base + size.bytes())], 1);
        Ok(true)
    }

    // ---- what a program asks of its mappings (munmap, mprotect, migration) ---------------

    /// The program asks for `op` on the 4 KB pages of `[start, end)` of `space` (both 4 KB
    /// aligned): one call, one shootdown of the range at the end (as Linux batches a
    /// munmap's or an mprotect's flush). A 2 MB page the range covers only in part is
    /// demoted first; a 1 GB page only in part is left as it is. Returns the pages changed.
    pub fn call(&mut self, space: usize, op: OsOp, start: u64, end: u64) -> Result<u64, SimError> {
        self.check_va(VirtAddr(start))?;
        self.check_va(VirtAddr(end.saturating_sub(1)))?;
        self.check_space(space)?;
        self.counters.calls += 1;
        let mut changed = 0;
        let mut flushed = 0;
        let mut va = start;
        while va < end {
            let Some((frame, size)) = self.translate(space, VirtAddr(va)) else {
                va = (va | 0xfff) + 1;
                continue;
            };
            let base = va & !(size.bytes() - 1);
            let whole = base >= start && base + size.bytes() <= end;
            if size == PageSize::Size2M && !whole {
                self.request_demotion(space, VirtAddr(va))?;
                continue;
            }
            if !whole {
                va = base + size.bytes();
                continue;
            }
            match op {
                OsOp::Unmap => {
                    self.unmap_quiet(space, base, frame, size);
                    self.counters.unmapped_pages += size.frames();
                }
                OsOp::Protect | OsOp::Unprotect => {
                    // (A huge page the range covers whole keeps its size.)
                    self.update_leaf(space, base, size, |e| if op == OsOp::Unprotect { e | PTE_RW } else { e & !PTE_RW });
                    self.counters.protected_pages += size.frames();
                }
                OsOp::Migrate => {
                    if size == PageSize::Size4K {
                        self.migrate_page(space, base, frame)?;
                    }
                }
                OsOp::Free => {
                    // (A huge page the range covers whole keeps its size, as FreeBSD's
                    // pmap_advise keeps it.)
                    self.update_leaf(space, base, size, |e| e & !(PTE_A | PTE_D));
                    self.counters.freed_pages += size.frames();
                }
                OsOp::ReadPtes | OsOp::Sleep => unreachable!("neither changes a mapping (Kernel::os_call does them)"),
            }
            changed += size.frames();
            flushed += 1;
            va = base + size.bytes();
        }
        if op == OsOp::Unmap {
            self.free_empty_nodes(space, start, end);
        }
        if flushed > 0 {
            self.flush(space, vec![(start, end)], flushed);
        }
        Ok(changed)
    }

    /// The physical addresses of the page-table entries a walk of `va` in `space` reads, root
    /// first (see [`crate::os::pt::PageTables::path`]); returns the node of the last.
    pub fn pte_entries(&self, space: usize, va: VirtAddr, out: &mut Vec<u64>) -> Result<NodeId, SimError> {
        self.check_va(va)?;
        self.check_space(space)?;
        Ok(self.pt.path_with(self.spaces[space].root, va, |pa| out.push(pa.0)))
    }

    /// Unmap one whole page (no shootdown: the caller flushes) and free its memory.
    fn unmap_quiet(&mut self, space: usize, base: u64, frame: Frame, size: PageSize) {
        let cached = self.spaces[space].has_files && self.cached_page(space, base, frame);
        let sp = &mut self.spaces[space];
        self.pt.unmap(sp.root, sp.top, VirtAddr(base), size);
        sp.mapped_bytes -= size.bytes();
        if cached {
            // (The page stays in the page cache.)
            if size != PageSize::Size4K {
                sp.huge_bytes -= size.bytes();
            }
            return;
        }
        match size {
            PageSize::Size4K => {
                let key = (space, base >> 21);
                match self.reservations.get_mut(&key) {
                    Some(r) if r.base == frame.0 & !511 => {
                        r.set((frame.0 & 511) as usize, false);
                        r.count -= 1;
                    }
                    _ => {
                        self.rmap_del(frame);
                        self.phys.free_page(frame);
                    }
                }
            }
            _ => {
                sp.huge_bytes -= size.bytes();
                self.phys.free(frame, if size == PageSize::Size2M { ORDER_2M } else { MAX_ORDER });
            }
        }
    }

    /// `frame`, mapped at `base`, is a page-cache page (a read-only file mapping's, inside
    /// the file): the page cache owns it, so unmapping or migrating the mapping leaves it.
    fn cached_page(&self, space: usize, base: u64, frame: Frame) -> bool {
        let Some(ri) = self.file_region(space, base) else { return false };
        let sp = &self.spaces[space];
        let (r, file) = (&sp.regions[ri], sp.files[ri].expect("a file region"));
        let index = (base - r.start + r.file.expect("a file region").offset) >> 12;
        self.page_cache.frame(file, index) == Some(frame)
            || self.page_cache.reservation(file, index / PIECE).is_some_and(|res| res.base == frame.0 & !(PIECE - 1))
    }

    /// Rewrite the leaf entry mapping `base` as `f` says (no shootdown): mprotect's RW bit,
    /// MADV_FREE's A and D bits.
    fn update_leaf(&mut self, space: usize, base: u64, size: PageSize, f: impl FnOnce(u64) -> u64) {
        let (root, top) = (self.spaces[space].root, self.spaces[space].top);
        if let Some((node, idx)) = self.pt.leaf_location(root, top, VirtAddr(base), size) {
            let e = self.pt.entry(node, idx);
            self.pt.write_entry(node, idx, f(e));
        }
    }

    /// Move the 4 KB page at `base` to a new frame (a NUMA migration): copy it, remap it
    /// with the same bits, free the old frame (no shootdown). False if no frame is free or
    /// the page belongs to a reservation (its frame is part of the reserved block).
    fn migrate_page(&mut self, space: usize, base: u64, old: Frame) -> Result<bool, SimError> {
        if self.reservations.get(&(space, base >> 21)).is_some_and(|r| r.base == old.0 & !511) || self.cached_page(space, base, old) {
            return Ok(false);
        }
        let Some(new) = self.phys.alloc_page() else { return Ok(false) };
        self.move_page(space, base, old, new);
        self.phys.free_page(old);
        Ok(true)
    }

    /// Copy the 4 KB page `page` of `space` from frame `old` to `new` and remap it, with the
    /// same bits (no shootdown; the caller frees `old`): compaction's and migration's move.
    fn move_page(&mut self, space: usize, page: u64, old: Frame, new: Frame) {
        let (root, top) = (self.spaces[space].root, self.spaces[space].top);
        let (node, idx) = self.pt.leaf_location(root, top, VirtAddr(page), PageSize::Size4K).expect("a moved page is mapped");
        let e = self.pt.entry(node, idx);
        debug_assert_eq!((e & PTE_PFN_MASK) >> 12, old.0);
        self.pt.write_entry(node, idx, (e & !PTE_PFN_MASK) | (new.0 << 12));
        self.rmap_del(old);
        self.rmap_add(new, space, page);
        self.charge += self.copy_cycles;
        self.wrote(new.0, 1);
        self.counters.migrated_pages += 1;
    }

    /// A copy or zeroing wrote `count` frames from `first`: in a guest, the host must back
    /// them now (the copying vCPU takes the EPT violations), not at the workload's first
    /// touch.
    fn wrote(&mut self, first: u64, count: u64) {
        if self.guest {
            self.written.push((first, count));
        }
    }

    /// Free the level-1 nodes of the 2 MB regions inside `[start, end)` that an unmap left
    /// empty, as Linux's free_pgtables does for an unmapped range.
    fn free_empty_nodes(&mut self, space: usize, start: u64, end: u64) {
        let (root, top) = (self.spaces[space].root, self.spaces[space].top);
        let mut va = start.next_multiple_of(MB2);
        while va + MB2 <= end {
            if self.pt.free_empty_leaf_node(&mut self.phys, root, top, VirtAddr(va)) {
                self.counters.freed_pt_nodes += 1;
            }
            va += MB2;
        }
    }

    /// Queue a shootdown of `ranges` of `space` (the one way OS changes reach TLBs).
    pub fn flush(&mut self, space: usize, ranges: Vec<(u64, u64)>, pages: u64) {
        self.pending.push(Shootdown { space, ranges, pages });
    }

    // ---- khugepaged ------------------------------------------------------------------------

    /// The 2 MB regions khugepaged considers in `space`, ascending: the eligible ones of its
    /// regions, or (a space without regions, e.g. a trace) those mapped through a level-1
    /// node.
    fn scan_list(&self, space: usize) -> Vec<u64> {
        let sp = &self.spaces[space];
        let mut out = Vec::new();
        if sp.regions.is_empty() {
            self.pt.regions_4k(sp.root, &mut out);
        } else {
            for r in &sp.regions {
                let mut va = r.start.next_multiple_of(MB2);
                while va + MB2 <= r.end() {
                    if self.thp_allowed(space, va) {
                        out.push(va);
                    }
                    va += MB2;
                }
            }
            out.sort_unstable();
            out.dedup();
        }
        out
    }

    /// One khugepaged wake-up: scan up to `os.khugepaged_pages` pages (512 per 2 MB region,
    /// whatever its state), resuming where the last wake-up stopped, and collapse every
    /// region that has a level-1 node with at least one young page and at most
    /// `max_ptes_none` unmapped pages. Costs go to [`Os::charge`].
    pub fn khugepaged(&mut self) {
        if !self.khugepaged_enabled() || self.spaces.is_empty() {
            return;
        }
        self.counters.khugepaged_wakeups += 1;
        let lists: Vec<Vec<u64>> = (0..self.spaces.len()).map(|s| self.scan_list(s)).collect();
        let total: usize = lists.iter().map(|l| l.len()).sum();
        let budget = (self.khugepaged_pages.div_ceil(ENTRIES as u64) as usize).min(total);
        let (mut s, mut va) = self.khugepaged_cursor;
        if s >= lists.len() {
            (s, va) = (0, 0);
        }
        let mut pos = lists[s].partition_point(|&x| x < va);
        for _ in 0..budget {
            while pos >= lists[s].len() {
                s = (s + 1) % lists.len();
                pos = 0;
            }
            let region = lists[s][pos];
            pos += 1;
            self.khugepaged_cursor = (s, region + MB2);
            self.counters.khugepaged_scanned += 1;
            let sp = &self.spaces[s];
            let Some(entries) = self.pt.region_entries(sp.root, sp.top, VirtAddr(region)) else { continue };
            let present = entries.iter().filter(|&&e| e & PTE_P != 0).count() as u64;
            let young = entries.iter().any(|&e| e & (PTE_P | PTE_A) == PTE_P | PTE_A);
            if present > 0 && ENTRIES as u64 - present <= self.max_ptes_none && young {
                self.ensure_headroom();
                self.collapse(s, region, self.khugepaged_defrag);
            }
        }
    }

    // ---- prefault, translate, statistics ---------------------------------------------------

    /// Map every page of every region before the run (as MAP_POPULATE would, and as the
    /// flattening paper's syscall-emulation runs do), through the page-size policy, in address
    /// order. Pages are mapped clean and not accessed, so the first walks set A (and D on
    /// stores) as hardware would; with `os.prefault_as=write`, accessed and dirty, as a
    /// program's initialization writing each page in turn leaves them.
    pub fn prefault(&mut self, space: usize) -> Result<(), SimError> {
        let regions = self.spaces[space].regions.clone();
        for r in regions {
            self.prefault_range(space, r.start, r.end())?;
        }
        Ok(())
    }

    /// Map every page overlapping `[start, end)` of `space` that is not mapped yet, through
    /// the page-size policy (see [`Os::prefault`]).
    pub fn prefault_range(&mut self, space: usize, start: u64, end: u64) -> Result<(), SimError> {
        let mut va = start & !0xfff;
        while va < end {
            self.check_va(VirtAddr(va))?;
            match self.translate(space, VirtAddr(va)) {
                Some((_, size)) => va = (va & !(size.bytes() - 1)) + size.bytes(),
                None if self.prefault_write => self.prefault_written(space, VirtAddr(va))?,
                None => self.fault_inner(space, VirtAddr(va), false)?,
            }
        }
        Ok(())
    }

    /// Map the page holding `va` as a write fault would and mark it accessed and dirty
    /// (`os.prefault_as=write`), before the next fault: a reservation's promotion reads every
    /// PTE's A bit at its last fault. (Out of line: the default prefault loop stays lean.)
    #[cold]
    #[inline(never)]
    fn prefault_written(&mut self, space: usize, va: VirtAddr) -> Result<(), SimError> {
        if self.spaces[space].has_files && self.file_region(space, va.0).is_some() {
            // (Nothing writes a read-only file mapping: its pages are read.)
            return self.fault_inner(space, va, false);
        }
        self.fault_inner(space, va, true)?;
        self.touch_store(space, va);
        Ok(())
    }

    /// The memory this OS's page tables use or map: every page-table node and every mapped
    /// page, as (first byte, bytes), ascending. For a guest OS these are the guest-physical
    /// ranges its host must back.
    pub fn memory_in_use(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        for sp in &self.spaces {
            self.collect_in_use(sp.root, sp.top, &mut out);
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    fn collect_in_use(&self, node: NodeId, level: u8, out: &mut Vec<(u64, u64)>) {
        let n = self.pt.node(node);
        out.push((n.frame.addr().0, n.entry_count() as u64 * 8));
        for i in 0..n.entry_count() {
            match self.pt.classify(node, i) {
                // (The recursive slot's targets are nodes, listed as such.)
                (_, crate::os::pt::EntryKind::NotPresent | crate::os::pt::EntryKind::PageTables) => {}
                // (A 2 MB page in a flattened node appears once per replica; callers dedup.)
                (e, crate::os::pt::EntryKind::Leaf(size)) => out.push((e & PTE_PFN_MASK & !(size.bytes() - 1), size.bytes())),
                (_, crate::os::pt::EntryKind::Pointer(child)) => self.collect_in_use(child, level.saturating_sub(1), out),
            }
        }
    }

    /// The virtual address through which this OS reaches the level-`level` page-table entry
    /// that maps `va` in `space`, through the recursive slot (`pt.recursive_slot`): `None`
    /// without a slot or if the path holds no such entry ([`PageTables::recursive_va`]).
    pub fn page_table_va(&self, space: usize, va: VirtAddr, level: u8) -> Option<VirtAddr> {
        let sp = self.spaces.get(space)?;
        if self.recursive_slot == 0 {
            return None;
        }
        self.pt.recursive_va(sp.root, self.recursive_slot, va, level, self.va_bits + 1)
    }

    /// The glue table L4* of `space`'s flattened root (`pt.recursive_slot` with a flattened
    /// 4-level root): a CR3 value under which hardware without flattening support walks the
    /// same table as an ordinary 4-level one (§3.5, the prototype's shim).
    pub fn legacy_root(&self, space: usize) -> Option<PhysAddr> {
        let sp = self.spaces.get(space)?;
        let root = self.pt.node(sp.root);
        (self.recursive_slot != 0 && root.span == 2 && sp.top == 4).then(|| PhysAddr((root.frame.0 + self.recursive_slot as u64) << 12))
    }

    /// The frame backing `va`, if mapped (functional).
    #[inline]
    pub fn translate(&self, space: usize, va: VirtAddr) -> Option<(Frame, PageSize)> {
        let sp = &self.spaces[space];
        self.pt.translate(sp.root, sp.top, va).map(|m| (m.frame, m.size))
    }

    /// What a store to `va` does to the page tables, without a walk's timing: the leaf's
    /// accessed and dirty bits set (a sampled run's skipped stores, [`crate::sample`]).
    /// Returns false if the page is not mapped (nothing changes).
    pub fn touch_store(&mut self, space: usize, va: VirtAddr) -> bool {
        let sp = &self.spaces[space];
        let (root, top) = (sp.root, sp.top);
        let Some(m) = self.pt.translate(root, top, va) else { return false };
        let Some((node, idx)) = self.pt.leaf_location(root, top, va, m.size) else { return false };
        let bits = crate::arch::pte::PTE_A | crate::arch::pte::PTE_D;
        if self.pt.entry(node, idx) & bits != bits {
            self.pt.set_bits(node, idx, bits);
        }
        true
    }

    /// OS and physical-memory statistics (glossary: `promotions`, `demotions`,
    /// `shootdowns`, `shootdown_cycles`; `os.*` details; `phys.*` free-block histograms at
    /// the start of the run and now).
    pub fn emit(&self, s: &mut Stats) {
        Os::emit_sum(&[self], "", s);
    }

    /// The statistics of [`Os::emit`] summed over several OSes (the guests of every VM),
    /// each name under `prefix` (`host.` for the hypervisor).
    pub fn emit_sum(oses: &[&Os], p: &str, s: &mut Stats) {
        let mut k = OsCounters::default();
        for os in oses {
            k.add(&os.counters);
        }
        let sum = |f: &dyn Fn(&Os) -> u64| oses.iter().map(|os| f(os)).sum::<u64>();
        s.int(format!("{p}promotions"), k.promotions);
        s.int(format!("{p}demotions"), k.demotions);
        s.int(format!("{p}shootdowns"), k.shootdowns);
        s.int(format!("{p}shootdown_cycles"), k.shootdown_cycles);
        s.int(format!("{p}os.huge_faults"), k.huge_faults);
        s.int(format!("{p}os.huge_alloc_failures"), k.huge_alloc_failures);
        s.int(format!("{p}os.shootdown_ipis"), k.shootdown_ipis);
        s.int(format!("{p}busy_wait_cycles"), k.busy_wait_cycles);
        s.int(format!("{p}os.deferred_flushes"), k.deferred_flushes);
        s.int(format!("{p}os.full_flushes"), k.full_flushes);
        s.int(format!("{p}os.reservations"), k.reservations);
        s.int(format!("{p}os.reservations_broken"), k.reservations_broken);
        s.int(format!("{p}os.khugepaged.wakeups"), k.khugepaged_wakeups);
        s.int(format!("{p}os.khugepaged.scanned"), k.khugepaged_scanned);
        s.int(format!("{p}os.compactions"), k.compactions);
        s.int(format!("{p}os.compaction_failures"), k.compaction_failures);
        s.int(format!("{p}os.migrated_pages"), k.migrated_pages);
        s.int(format!("{p}os.context_switches"), k.context_switches);
        s.int(format!("{p}os.calls"), k.calls);
        s.int(format!("{p}os.unmapped_pages"), k.unmapped_pages);
        s.int(format!("{p}os.protected_pages"), k.protected_pages);
        s.int(format!("{p}os.freed_pages"), k.freed_pages);
        s.int(format!("{p}os.ignored_calls"), k.ignored_calls);
        s.int(format!("{p}os.freed_pt_nodes"), k.freed_pt_nodes);
        s.int(format!("{p}os.pte_reads"), k.pte_reads);
        s.int(format!("{p}os.page_cache_reads"), k.page_cache_reads);
        s.int(format!("{p}os.fault_around_pages"), k.fault_around);
        s.int(format!("{p}os.reserved_bytes"), sum(&|os| os.reserved_frames()) << 12);
        for o in 0..=MAX_ORDER {
            s.int(format!("{p}phys.free_blocks.order{o}"), sum(&|os| os.phys.free_blocks(o)));
        }
        s.int(format!("{p}phys.start.free_bytes"), sum(&|os| os.start.free_frames) << 12);
        s.int(format!("{p}phys.start.free_2m_blocks"), sum(&|os| os.start.free_2m_blocks));
        for o in 0..=MAX_ORDER {
            s.int(format!("{p}phys.start.free_blocks.order{o}"), sum(&|os| os.start.free_blocks[o as usize]));
        }
        s.int(format!("{p}phys.pinned_bytes"), sum(&|os| os.start.pinned_frames) << 12);
        s.int(format!("{p}phys.hog_bytes"), sum(&|os| os.start.hog_frames) << 12);
    }
}

impl Os {
    /// How many 2 MB flattened page-table nodes a process with `regions` needs under this
    /// OS's layout (an upper bound: one per region and covered range, plus the root).
    fn flat_nodes_needed(&self, regions: &[Region]) -> u64 {
        use crate::os::pt::Layout;
        let per = |span: u64| regions.iter().map(|r| (r.end() - 1) / span - r.start / span + 1).sum::<u64>();
        match self.layout {
            Layout::Radix4 | Layout::Radix5 => 0,
            Layout::FptL4L3 => 1,
            Layout::Fpt { .. } => 1 + per(1 << 30),
            Layout::FptL3L2 => per(1 << 39),
            Layout::Fpt5 => 1 + per(1 << 39),
            // (Blocks kept free at random are rarely a whole 1 GB: the root usually falls
            // back under fragmentation.)
            Layout::Fpt1G => 512,
        }
    }
}

/// For `lowhalf`: the address below which huge pages may go (the start of the upper half
/// of the eligible 2 MB regions, in address order) and how many regions lie below it.
fn lowhalf_limit(regions: &[Region]) -> (u64, u64) {
    let mut chunks = Vec::new();
    for r in regions {
        let mut va = r.start.next_multiple_of(MB2);
        while va + MB2 <= r.end() {
            chunks.push(va);
            va += MB2;
        }
    }
    chunks.sort_unstable();
    chunks.dedup();
    let lower = chunks.len() / 2;
    (chunks.get(lower).copied().unwrap_or(u64::MAX), lower as u64)
}

/// Page tables, mapped memory and OS statistics of `oses` (summed), under prefix `p`.
pub(crate) fn emit_os(s: &mut Stats, p: &str, oses: &[&Os], top: u8, coalescing: bool) {
    let sum = |f: &dyn Fn(&Os) -> u64| oses.iter().map(|os| f(os)).sum::<u64>();
    if coalescing {
        // (A scan of every leaf node, once per run: the contiguity the allocator made.)
        for (shift, name) in [(2, "16k"), (3, "32k")] {
            let (groups, ok) = oses.iter().map(|os| os.pt.leaf_groups(shift)).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
            s.ratio(format!("{p}pt.coalescable.{name}"), ok, groups);
        }
    }
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
    s.int(format!("{p}pt.late_flattened"), sum(&|os| os.pt.late_flattened));
    let mapped = sum(&|os| os.spaces.iter().map(|sp| sp.mapped_bytes).sum());
    let huge = sum(&|os| os.spaces.iter().map(|sp| sp.huge_bytes).sum());
    s.int(format!("{p}mapped_bytes"), mapped);
    s.ratio(format!("{p}huge_coverage"), huge, mapped);
    s.int(format!("{p}phys.free_bytes"), sum(&|os| os.phys.free_frames()) << 12);
    s.int(format!("{p}phys.free_2m_blocks"), sum(&|os| os.phys.free_2m_blocks()));
    Os::emit_sum(oses, p, s);
}

/// The glossary's entries of what [`emit_os`] emits (with [`Os::emit_sum`]).
pub(crate) const STATS: &[crate::glossary::Entry] = {
    use crate::glossary::{e, Kind::*, Section::*};
    &[
        e(Os, "[host.]pt.nodes", Level, "nodes",
            "Page-table nodes at the end of the run, in every address space (a flattened 2 MB node counts once). In a VM, the guests' tables; `host.`: the EPTs."),
        e(Os, "[host.]pt.nodes.<ptlevel>", Level, "nodes",
            "Nodes whose top level is that level (a flattened L2+L1 node counts at l2, an L4+L3 root at l4). `l5` only with 5-level tables (`pt.format=radix5`; for `host.`, `virt.host_pt.format=radix5`)."),
        e(Os, "[host.]pt_bytes", Level, "bytes", "Bytes of page-table memory at the end of the run (4 KB per node, 2 MB per flattened node, 1 GB for a `fpt-1g` root): the sum of `pt_bytes.<ptlevel>`."),
        e(Os, "[host.]pt_bytes.<ptlevel>", Level, "bytes", "Bytes of the nodes whose top level is that level (`l5` as for `pt.nodes.l5`)."),
        e(Os, "[host.]pt.flat_nodes", Level, "nodes", "Flattened nodes (2 MB, or 1 GB for three merged levels) at the end of the run (`pt.format=fpt*`)."),
        e(Os, "pt.coalescable.16k", Ratio, "fraction",
            "Of the aligned groups of 4 leaf entries that all map 4 KB pages at the end of the run, the share PTE coalescing could cache as one 16 KB entry: frames contiguous and 16 KB-aligned, attributes (A and D included) identical. The contiguity the allocator made, whether or not the TLBs used it (the coalescing paper's T-C measures it through L2 DTLB hits).")
            .only("`tlb.coalescing` (or a `tlb.<level>.coalescing`) other than `none`, natively"),
        e(Os, "pt.coalescable.32k", Ratio, "fraction", "The same for aligned groups of 8 entries (32 KB).")
            .only("`tlb.coalescing` (or a `tlb.<level>.coalescing`) other than `none`, natively"),
        e(Os, "[host.]pt.flatten_fallbacks", Level, "nodes",
            "Flattened nodes the layout asked for that were built as 4 KB levels because no block of their size was free. Since the tables were created (prefaulting and warm-up included)."),
        e(Os, "[host.]pt.late_flattened", Level, "nodes",
            "Fallen-back 4 KB nodes merged with their children into a flattened node later, once they held `pt.late_flatten` entries and a 2 MB block was free. Since the tables were created."),
        e(Os, "[host.]pt.unflattened", Level, "nodes",
            "Flattened L2+L1 nodes turned back into 4 KB levels because they came to hold `pt.nf_threshold` 2 MB pages (FPT+NF). Since the tables were created."),
        e(Os, "[host.]mapped_bytes", Level, "bytes", "Bytes mapped in every address space at the end of the run (in a VM, what the guests' processes mapped; `host.`: the guest-physical memory the host backs)."),
        e(Os, "[host.]huge_coverage", Ratio, "fraction", "Share of `mapped_bytes` mapped by 2 MB or 1 GB pages at the end of the run."),
        e(Os, "[host.]phys.free_bytes", Level, "bytes", "Bytes free in the buddy allocator at the end of the run (frames on per-CPU lists not included)."),
        e(Os, "[host.]phys.free_2m_blocks", Level, "blocks", "Free aligned 2 MB blocks at the end of the run, counting those inside larger free blocks."),
        e(Os, "[host.]phys.free_blocks.order<order>", Level, "blocks", "Free buddy blocks of exactly that order at the end of the run."),
        e(Os, "[host.]phys.start.free_bytes", Level, "bytes", "`phys.free_bytes` after the fragmentation scenario (`phys.fragmentation`, `phys.available_gb`), before the workload mapped anything."),
        e(Os, "[host.]phys.start.free_2m_blocks", Level, "blocks", "`phys.free_2m_blocks` at the start, as `phys.start.free_bytes`."),
        e(Os, "[host.]phys.start.free_blocks.order<order>", Level, "blocks", "`phys.free_blocks.order<order>` at the start, as `phys.start.free_bytes`."),
        e(Os, "[host.]phys.pinned_bytes", Level, "bytes", "Unmovable memory the fragmentation scenario left behind (pinned pages, aged long-lived pages), at the start."),
        e(Os, "[host.]phys.hog_bytes", Level, "bytes", "Memory taken away before the run by `phys.available_gb`."),
        e(Os, "[host.]promotions", Counter, "2 MB regions",
            "2 MB regions whose 4 KB pages were replaced by one 2 MB page: khugepaged collapses, in-place promotions of FreeBSD reservations, and promotions mechanisms requested."),
        e(Os, "[host.]demotions", Counter, "2 MB pages", "2 MB pages split into 512 4 KB pages (requested demotions)."),
        e(Os, "[host.]shootdowns", Counter, "shootdowns",
            "TLB shootdowns the OS carried out, one per change that could leave stale translations (a remapping, a promotion, a compaction's moves in one address space...), whatever the number of cores."),
        e(Os, "[host.]shootdown_cycles", Counter, "cycles",
            "Cycles shootdowns cost: the initiator's (`os.shootdown_initiator_cycles`, or `os.shootdown_local_cycles` when no other core runs the address space, plus any wait for preempted vCPUs; with TCAT, the memory side's cycles to rewrite and flush the POM-TLB lines) plus `os.shootdown_remote_cycles` per interrupted core."),
        e(Os, "[host.]os.huge_faults", Counter, "faults", "Faults that mapped a 2 MB or 1 GB page."),
        e(Os, "[host.]os.huge_alloc_failures", Counter, "events", "A huge page was wanted (by a fault, a reservation, a collapse) but no 2 MB block could be had."),
        e(Os, "[host.]os.shootdown_ipis", Counter, "interrupts", "Remote cores interrupted by shootdowns (cores other than the initiator running the address space)."),
        e(Os, "[host.]busy_wait_cycles", Counter, "cycles",
            "Of `shootdown_cycles`, the initiators' time sending interrupts and waiting for acknowledgements (`os.shootdown_initiator_cycles` - `os.shootdown_local_cycles` per shootdown that interrupted another core) and, with vCPU overcommit and `shootdown.protocol=ipi`, waiting for preempted target vCPUs to run again. 0 with TCAT, whose directory collects the acknowledgements."),
        e(Os, "[host.]os.deferred_flushes", Counter, "vCPUs",
            "Preempted vCPUs a shootdown did not interrupt but asked to flush all their TLB entries when rescheduled (`shootdown.protocol=kvm_tlb`, KVM's paravirtual remote flush)."),
        e(Os, "[host.]os.full_flushes", Counter, "shootdowns", "Shootdowns of more than `os.flush_ceiling_pages` pages, done as a flush of the whole address space."),
        e(Os, "[host.]os.reservations", Counter, "reservations", "FreeBSD reservations (aligned 2 MB blocks set aside at a region's first fault) made (`os.page_policy=freebsd`)."),
        e(Os, "[host.]os.reservations_broken", Counter, "reservations", "Partly populated reservations broken (their unpopulated frames freed) to satisfy a 4 KB allocation."),
        e(Os, "[host.]os.khugepaged.wakeups", Counter, "wake-ups", "khugepaged runs (every `os.khugepaged_interval_cycles` with a THP policy)."),
        e(Os, "[host.]os.khugepaged.scanned", Counter, "regions", "2 MB regions khugepaged looked at (up to `os.khugepaged_pages` / 512 per wake-up)."),
        e(Os, "[host.]os.compactions", Counter, "compactions", "Direct compactions that freed a 2 MB block by migrating its pages."),
        e(Os, "[host.]os.compaction_failures", Counter, "compactions", "Compaction attempts that found no block to free (attempts skipped by the deferral that follows are not counted)."),
        e(Os, "[host.]os.migrated_pages", Counter, "pages", "4 KB pages moved to another frame: by compaction, by the program's migrate calls, or out of a 2 MB block a demotion frees (`pcc.demotion`)."),
        e(Os, "[host.]os.calls", Counter, "calls",
            "Changes to its mappings a program asked for: OS-call records in its stream (munmap, mprotect, page migration; `churn` and traces that carry them), each charged `os.call_cycles` plus its shootdown."),
        e(Os, "[host.]os.unmapped_pages", Counter, "pages", "4 KB pages the programs' unmap calls removed (a 2 MB page counts 512)."),
        e(Os, "[host.]os.protected_pages", Counter, "pages", "4 KB pages whose write permission the programs' protect and unprotect calls changed."),
        e(Os, "[host.]os.freed_pages", Counter, "pages", "4 KB pages whose A and D bits the programs' madv-free calls (madvise MADV_FREE) cleared (a 2 MB page counts 512); 0 with `os.madv_free=false`, which ignores the calls."),
        e(Os, "[host.]os.ignored_calls", Counter, "calls", "madv-free calls in the streams that made no system call because `os.madv_free=false` (jemalloc told not to make them): not in `os.calls`."),
        e(Os, "[host.]os.pte_reads", Counter, "PTE reads",
            "Page-table entries loaded by software walks in the kernel (read-ptes OS calls, as PT-Baker's kernel-mode helper makes): the entries of the levels whose index changed since the context's last walk (all of them at a new pass), each a load through the core's caches as data: once a leaf table is reached, one entry a touch."),
        e(Os, "[host.]os.page_cache_reads", Counter, "pages",
            "File pages read into the page cache: a fault on a page of a read-only file mapping (a region with a file, e.g. a traced program's text from its `.maps`) that is not cached reads its `os.readahead_pages` cluster. Each page is read once and shared by every mapping of the file."),
        e(Os, "[host.]os.fault_around_pages", Counter, "pages",
            "Cached file pages mapped around a faulting one (`os.fault_around_pages`), accessed at once or not as `os.preset_a` says; they are not counted in `faults`."),
        e(Os, "[host.]os.freed_pt_nodes", Counter, "nodes", "Level-1 page-table nodes freed because an unmap call emptied them (their page-walk-cache entries leave with the shootdown)."),
        e(Os, "[host.]os.context_switches", Counter, "switches",
            "Process switches (`os.processes` > 1, every `os.timeslice_cycles`). In a VM they are the guests' (`host.os.context_switches` stays 0; VM switches are `vm_switches`)."),
        e(Os, "[host.]os.reserved_bytes", Level, "bytes", "Bytes held by reservations and not yet populated, at the end of the run."),
    ]
};
