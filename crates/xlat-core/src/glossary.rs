//! The statistics glossary: every statistic the engine reports, declared once, with what it
//! counts. [`crate::machine::Machine::stats`] emits the names (from the `counters!` structs of
//! [`crate::stats`], the helpers there, the OS and the mechanisms); this table documents
//! them. `docs/statistics.md` is generated from it ([`markdown`]; regenerate with
//! `cargo run --release -p xlat-core --example glossary > docs/statistics.md`), and
//! `tests/glossary.rs` fails when the document is stale, when a run emits a name no entry
//! matches, or when an entry matches nothing any run emits.
//!
//! A name pattern is the statistic's name with placeholders (`<cache>`, see [`PLACEHOLDERS`])
//! and at most one optional prefix in brackets: `[core<N>.]` for statistics that multi-core
//! runs also report per core, `[host.]` for those a virtualized run also reports for the
//! hypervisor. [`lookup`] finds the entry of a concrete name.

/// How a statistic's value is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An integer count (or an integer amount: cycles, bytes).
    Counter,
    /// A quotient of two counters; undefined (NaN) when the denominator is 0.
    Ratio,
    /// Another number: a normalized rate, an energy.
    Float,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Ratio => "ratio",
            Kind::Float => "float",
        }
    }
}

/// The glossary's sections, in document order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Section {
    Core,
    Tlbs,
    Pwcs,
    Walks,
    Served,
    Caches,
    Dram,
    Energy,
    Os,
    Vms,
    Mechanisms,
}

impl Section {
    pub const ALL: [Section; 11] = [
        Section::Core,
        Section::Tlbs,
        Section::Pwcs,
        Section::Walks,
        Section::Served,
        Section::Caches,
        Section::Dram,
        Section::Energy,
        Section::Os,
        Section::Vms,
        Section::Mechanisms,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Section::Core => "References and IPC",
            Section::Tlbs => "TLBs",
            Section::Pwcs => "Page-walk caches",
            Section::Walks => "Page walks",
            Section::Served => "Where PTEs and data were served",
            Section::Caches => "Caches",
            Section::Dram => "DRAM",
            Section::Energy => "Energy",
            Section::Os => "OS, page tables and physical memory",
            Section::Vms => "Virtual machines",
            Section::Mechanisms => "Mechanisms",
        }
    }

    /// A sentence or two introducing the section in the document.
    pub fn intro(self) -> &'static str {
        match self {
            Section::Core => "What ran, and how fast. The timing window (`core.*`) turns latencies into cycles; the translation side counts references as they complete.",
            Section::Tlbs => "Lookups of each core's TLB levels by the translation side. Loads and stores go through the L1 DTLB, fetches through the L1 ITLB, and both on to the shared L2 TLB (fetches to the L2 ITLB instead when `tlb.l2i.entries` > 0). With `tlb.perfect=true` nothing is looked up and every count here is 0.",
            Section::Pwcs => "The page-walk caches of the native (or, in a VM, the guest) table: one table per level, each caching that level's entries (the pointers to the nodes one level down), tagged by the virtual-address prefix the entry translates. Every walk probes every level that has entries, in parallel, and starts below the deepest hit. A level with 0 entries is not counted at all (its hits and misses stay 0).",
            Section::Walks => "Walks of the native (or, in a VM, the 2D) page table. The translation side counts walks; the memory side counts their reads and cycles.",
            Section::Served => "Which level of the cache hierarchy supplied each page-table read and each data access (the memory side counts them). Each group sums to its total: `pte_served.*` to `walk_steps`, `data_served.*` to `refs`.",
            Section::Caches => "Demand lookups of the caches (private ones summed over cores), split by what the line holds. Fills and write-backs are not lookups.",
            Section::Dram => "Traffic beyond the last-level cache.",
            Section::Energy => "Dynamic energy from per-access costs (`cache.<cache>.energy_nj`, `dram.energy_nj`); no static energy.",
            Section::Os => "The simulated OS: faults, page-size changes, shootdowns and its memory. Counters cover the measured part of the run (they restart after prefaulting and at the end of warm-up); sizes are the state at the end of the run, or at its start for `phys.start.*`. In a VM the bare names are the guests' (summed over VMs) and `host.` the hypervisor's.",
            Section::Vms => "Only with `virt.enabled=true`: 2D walks (guest table entries and the final data address translated through the nested TLB or a walk of the host table), the host's page-walk cache (vPWC), EPT violations and VM switches. The guests' page tables and OS are in the OS section under the bare names, the host's under `host.`.",
            Section::Mechanisms => "Structures and policies attached by configuration (`crates/xlat-core/src/mech`). A mechanism's statistics are under its own prefix; they are emitted (or non-zero) only when the mechanism is configured.",
        }
    }
}

/// A placeholder of name patterns: the values it stands for, or any decimal number when
/// `values` is empty.
#[derive(Clone, Copy, Debug)]
pub struct Placeholder {
    pub name: &'static str,
    pub values: &'static [&'static str],
    pub doc: &'static str,
}

/// Every placeholder used in the glossary's patterns.
pub const PLACEHOLDERS: &[Placeholder] = &[
    Placeholder { name: "N", values: &[], doc: "a core number, in the `core<N>.` prefix of multi-core runs (a program number where `prog<N>.` stands for it)" },
    Placeholder { name: "cache", values: &["l1i", "l1d", "l2", "llc"], doc: "a cache: the private L1I, L1D and L2 (summed over cores) or the shared LLC" },
    Placeholder { name: "pcache", values: &["l2", "llc"], doc: "a cache CSALT can partition: the private L2s or the shared LLC" },
    Placeholder { name: "pfcache", values: &["l1d", "l2"], doc: "a cache with a data prefetcher: the private L1Ds or L2s (summed over cores)" },
    Placeholder { name: "kind", values: &["data", "pt"], doc: "what a cache line holds: data, or page-table entries (`pt`)" },
    Placeholder { name: "level", values: &["l2", "l3", "l4", "l5"], doc: "a page-walk-cache level, named after the page-table level whose entries it caches" },
    Placeholder {
        name: "ptlevel",
        values: &["l1", "l2", "l3", "l4", "l5"],
        doc: "a page-table level (l1 holds 4 KB leaves; l5 exists with 5-level tables only)",
    },
    Placeholder {
        name: "where",
        values: &["l1", "l2", "llc", "dram"],
        doc: "where an access was served: its L1 (L1D, or L1I for fetches), the core's L2, the LLC, or DRAM",
    },
    Placeholder {
        name: "tlbsize",
        values: &["4k", "2m", "1g", "coalesced"],
        doc: "what a TLB entry maps: a 4 KB, 2 MB or 1 GB page, or a coalesced group of 4 KB pages (`tlb.coalescing`: 16 KB or 32 KB)",
    },
    Placeholder { name: "cwc", values: &["pmd_cwc", "pud_cwc"], doc: "an ECH cuckoo walk cache: of 2 MB regions (`pmd_cwc`) or of 1 GB regions (`pud_cwc`)" },
    Placeholder { name: "side", values: &["guest", "host"], doc: "the two tables of a 2D walk: the guest's page table and the host's (EPT)" },
    Placeholder {
        name: "pcc",
        values: &["pcc", "pcc.1g"],
        doc: "a Promotion Candidate Cache: `pcc` counts walks per 2 MB region, `pcc.1g` per 1 GB region (with `pcc.entries_1g` > 0)",
    },
    Placeholder {
        name: "bucket",
        values: &["lt16", "lt32", "lt64", "lt128", "lt256", "lt512", "lt1024", "lt2048", "lt4096", "ge4096"],
        doc: "a walk-latency bucket: `ltX` is below X cycles (and at least the previous bound), `ge4096` 4096 or more",
    },
    Placeholder {
        name: "order",
        values: &["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17", "18"],
        doc: "a buddy-allocator order: blocks of 4 KB x 2^order (9 is 2 MB, 18 is 1 GB)",
    },
];

/// One statistic (or family of statistics) of the glossary.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// The name pattern (see the module documentation).
    pub pattern: &'static str,
    pub section: Section,
    pub kind: Kind,
    pub unit: &'static str,
    /// What is counted, exactly: which events, which side of the engine counts them.
    pub doc: &'static str,
    /// The configurations that emit it, when not every run does ("" = every run).
    pub only: &'static str,
}

const fn e(section: Section, pattern: &'static str, kind: Kind, unit: &'static str, doc: &'static str) -> Entry {
    Entry { pattern, section, kind, unit, doc, only: "" }
}

impl Entry {
    /// The same entry, emitted only by the configurations `only` describes.
    const fn only(self, only: &'static str) -> Entry {
        Entry { only, ..self }
    }
}

use Kind::{Counter, Float, Ratio};
use Section::*;

/// Every statistic the engine reports. Order: sections in [`Section::ALL`] order, and within
/// a section as the document lists them.
pub static ENTRIES: &[Entry] = &[
    // ---- references and IPC ----------------------------------------------------------------
    e(Core, "[core<N>.]instructions", Counter, "instructions",
        "Instructions dispatched by the timing window: the sum of the references' instruction deltas (`inst_delta`). Bare: summed over cores."),
    e(Core, "[core<N>.]cycles", Counter, "cycles",
        "Cycles to run everything dispatched to retirement (the core's clock, or its last retirement if later). Bare: the slowest core's (the maximum, not a sum)."),
    e(Core, "[core<N>.]ipc", Ratio, "instructions/cycle",
        "`instructions` / `cycles`. Bare: all cores' instructions over the slowest core's cycles. Compare with `tlb.perfect=true` for what translation costs."),
    e(Core, "[core<N>.]refs", Counter, "references",
        "Memory references simulated (loads + stores + fetches + prefetches), counted by the translation side once a reference is translated."),
    e(Core, "[core<N>.]loads", Counter, "references", "References that are loads."),
    e(Core, "[core<N>.]stores", Counter, "references", "References that are stores."),
    e(Core, "[core<N>.]fetches", Counter, "references", "References that are instruction fetches (they use the L1 ITLB and the L1I)."),
    e(Core, "[core<N>.]prefetches", Counter, "references",
        "References that are software prefetches (`prefetcht0`: loads into the L1D that retire once translated and their fills have an MSHR; PT-Baker's `ptbaker.mode=user-prefetch`), those dropped not included."),
    e(Core, "[core<N>.]prefetches.dropped", Counter, "references",
        "Software prefetches dropped without touching memory (not in `refs` or `prefetches`): they missed the TLBs where prefetches start no walks (`tlb.prefetch_walks=false`), or their page is not mapped (a prefetch never faults)."),
    e(Core, "ctx<N>.instructions", Counter, "instructions", "Instructions hardware context N dispatched (a core's `instructions` sum its threads').")
        .only("SMT (`system.threads_per_core` > 1)"),
    e(Core, "ctx<N>.cycles", Counter, "cycles", "Hardware context N's clock at the end (its last retirement if later).").only("SMT (`system.threads_per_core` > 1)"),
    e(Core, "ctx<N>.ipc", Ratio, "instructions/cycle", "`ctx<N>.instructions` / `ctx<N>.cycles`.").only("SMT (`system.threads_per_core` > 1)"),
    e(Core, "rob_stall_cycles", Counter, "cycles",
        "Cycles dispatch waited for the reorder buffer (`core.rob` entries) to free an entry, summed over cores (there is no per-core form)."),
    e(Core, "lq_stall_cycles", Counter, "cycles",
        "Cycles dispatch waited for a load-queue entry (`core.lq` entries, each held from a load's dispatch until its data arrives), beyond what it waited for the reorder buffer; summed over cores (there is no per-core form).").only("`core.lq` > 0"),
    e(Core, "store_buffer_stall_cycles", Counter, "cycles",
        "Cycles retirement waited for a store-buffer entry (`core.store_buffer` entries, freed as stores commit in order once their lines are there), beyond what it waited for older instructions anyway; summed over cores (there is no per-core form)."),
    e(Core, "[core<N>.]translation_cycles", Counter, "cycles",
        "Summed over references: cycles from a reference's issue to its translation being known: the L2 TLB latency after an L1 TLB miss, waiting for a walker, the walk, fault handling (with `tlb.perfect=true`, only the OS's fault work). An L1 TLB hit adds 0. Counted by the memory side."),
    e(Core, "[core<N>.]inflight.walk_merges", Counter, "references",
        "References that found their translation in a TLB while the walk that put it there was still in flight, and waited for that walk (a TLB-miss merge; matched by 4 KB physical page). With `core.inflight=false`, 0."),
    e(Core, "[core<N>.]inflight.walk_merge_cycles", Counter, "cycles",
        "Cycles those references waited for the walk in flight (part of `translation_cycles`)."),
    e(Core, "[core<N>.]inflight.fill_merges", Counter, "accesses",
        "Data accesses and page-walk reads whose line was still on its way to the core from an earlier miss: they wait for that fill instead of hitting at once or missing again (an MSHR merge). With `core.inflight=false`, 0."),
    e(Core, "[core<N>.]inflight.fill_merge_cycles", Counter, "cycles",
        "Cycles those accesses waited beyond the latency of the level that served them."),
    e(Core, "[core<N>.]inflight.early_walks", Counter, "walks",
        "Walks of references that waited for a producer (a pointer chase) which a younger reference to the same 4 KB page, not waiting for it, started first: the walk starts when that one would have issued and the dependent reference merges into it (`core.lookahead` references ahead). With `core.lookahead=0` or `core.inflight=false`, 0."),
    e(Core, "[core<N>.]inflight.early_walk_cycles", Counter, "cycles",
        "Summed over those walks: how much sooner they asked for a walker than the dependent reference would have."),
    e(Core, "[core<N>.]inflight.early_fills", Counter, "accesses",
        "Data accesses of references that waited for a producer whose line a younger reference, not waiting for it, asked the caches for first (as `inflight.early_walks`, for the line)."),
    e(Core, "[core<N>.]inflight.early_fill_cycles", Counter, "cycles",
        "Summed over those accesses: how much sooner the line was asked for."),
    // ---- TLBs ------------------------------------------------------------------------------
    e(Tlbs, "[core<N>.]tlb.l1d.accesses", Counter, "lookups",
        "L1 DTLB lookups: one per load and store. Includes stores that find only a clean entry, which count neither as a hit nor as a miss (they walk to set the dirty bit: `tlb.dirty_walks`), so hits + misses can be less than accesses."),
    e(Tlbs, "[core<N>.]tlb.l1d.hits", Counter, "lookups",
        "L1 DTLB lookups that found a usable translation (for a store, a dirty one). Also by page size: `hits_4k`, `hits_2m`, `hits_1g` (and, with PTE coalescing, `hits_coalesced`)."),
    e(Tlbs, "[core<N>.]tlb.l1d.hits_4k", Counter, "lookups", "L1 DTLB hits on a 4 KB entry."),
    e(Tlbs, "[core<N>.]tlb.l1d.hits_2m", Counter, "lookups", "L1 DTLB hits on a 2 MB entry."),
    e(Tlbs, "[core<N>.]tlb.l1d.hits_1g", Counter, "lookups", "L1 DTLB hits on a 1 GB entry."),
    e(Tlbs, "[core<N>.]tlb.l1d.hits_coalesced", Counter, "lookups",
        "L1 DTLB hits on a coalesced entry (PTE coalescing: a group of 4 or 8 contiguous, aligned 4 KB pages). With coalescing, `hits_4k` counts hits on single 4 KB pages only.")
        .only("`tlb.coalescing` (or a `tlb.<level>.coalescing`) other than `none`"),
    e(Tlbs, "[core<N>.]tlb.l1d.misses", Counter, "lookups", "L1 DTLB lookups that found no entry for the page; each goes on to the L2 TLB."),
    e(Tlbs, "[core<N>.]tlb.l1d.misses.l2_hit.<tlbsize>", Counter, "lookups",
        "L1 DTLB misses the L2 TLB answered, by the size of the entry the L1 DTLB was refilled with: the coalescing paper's T2 `ls_l1_d_tlb_miss.tlb_reload_<size>_l2_hit` (its \"L2 DTLB hits\"). A coalesced L2 entry refills an L1 DTLB that does not coalesce (or coalesces larger groups) with a 4 KB entry.")
        .only("`tlb.coalescing` (or a `tlb.<level>.coalescing`) other than `none`"),
    e(Tlbs, "[core<N>.]tlb.l1d.misses.l2_miss.<tlbsize>", Counter, "lookups",
        "L1 DTLB misses that needed a page walk (an L2 TLB miss, or a store that found only a clean L2 entry), by the size of the entry the walk refilled the L1 DTLB with: T2's `tlb_reload_<size>_l2_miss` (its \"L2 DTLB misses\"); `coalesced` counts walks that created a coalesced entry. `l2_hit.*` + `l2_miss.*` = `tlb.l1d.misses`.")
        .only("`tlb.coalescing` (or a `tlb.<level>.coalescing`) other than `none`"),
    e(Tlbs, "[core<N>.]tlb.l1d.mpki", Float, "per 1000 instructions", "`tlb.l1d.misses` per thousand `instructions` (undefined without instructions)."),
    e(Tlbs, "[core<N>.]tlb.l1i.accesses", Counter, "lookups", "L1 ITLB lookups: one per fetch. None is a store, so (unlike the L1 DTLB's) hits + misses = accesses."),
    e(Tlbs, "[core<N>.]tlb.l1i.hits", Counter, "lookups", "L1 ITLB lookups that found the translation."),
    e(Tlbs, "[core<N>.]tlb.l1i.misses", Counter, "lookups", "L1 ITLB lookups that found no entry for the page; each goes on to the L2 TLB."),
    e(Tlbs, "[core<N>.]tlb.l1i.misses.l2_hit", Counter, "lookups",
        "L1 ITLB misses the L2 TLB (the L2 ITLB if there is one) answered: the coalescing paper's T2 `bp_l1_tlb_miss_l2_tlb_hit` (no size split, as on the hardware).")
        .only("`tlb.coalescing` (or a `tlb.<level>.coalescing`) other than `none`"),
    e(Tlbs, "[core<N>.]tlb.l1i.misses.l2_miss", Counter, "lookups",
        "L1 ITLB misses that needed a page walk: T2's `bp_l1_tlb_miss_l2_tlb_miss`. `l2_hit` + `l2_miss` = `tlb.l1i.misses`.")
        .only("`tlb.coalescing` (or a `tlb.<level>.coalescing`) other than `none`"),
    e(Tlbs, "[core<N>.]tlb.l1i.mpki", Float, "per 1000 instructions", "`tlb.l1i.misses` per thousand `instructions` (all instructions, not only fetches)."),
    e(Tlbs, "[core<N>.]tlb.l2.accesses", Counter, "lookups",
        "L2 TLB lookups: one per L1 TLB miss (data and instruction; data only with an L2 ITLB, `tlb.l2i.entries` > 0); each pays `tlb.l2.latency`. Stores that found a clean L1 entry walk without looking here."),
    e(Tlbs, "[core<N>.]tlb.l2.hits", Counter, "lookups",
        "L2 TLB lookups that found an entry for the page, including stores that found a clean one and walk to set the dirty bit (unlike the L1 levels, so hits + misses = accesses). A usable hit fills the L1 level."),
    e(Tlbs, "[core<N>.]tlb.l2.misses", Counter, "lookups", "L2 TLB lookups that found no entry: each starts a page walk."),
    e(Tlbs, "[core<N>.]tlb.l2.mpki", Float, "per 1000 instructions", "`tlb.l2.misses` per thousand `instructions`."),
    e(Tlbs, "[core<N>.]tlb.l2i.accesses", Counter, "lookups",
        "L2 ITLB lookups: one per L1 ITLB miss; each pays `tlb.l2.latency`. (Without an L2 ITLB these are L2 TLB lookups.)")
        .only("`tlb.l2i.entries` > 0"),
    e(Tlbs, "[core<N>.]tlb.l2i.hits", Counter, "lookups", "L2 ITLB lookups that found the translation; each fills the L1 ITLB (a 1 GB code page is held as the 2 MB piece fetched from).")
        .only("`tlb.l2i.entries` > 0"),
    e(Tlbs, "[core<N>.]tlb.l2i.misses", Counter, "lookups", "L2 ITLB lookups that found no entry: each starts a page walk.").only("`tlb.l2i.entries` > 0"),
    e(Tlbs, "[core<N>.]tlb.l2i.mpki", Float, "per 1000 instructions", "`tlb.l2i.misses` per thousand `instructions`.").only("`tlb.l2i.entries` > 0"),
    e(Tlbs, "[core<N>.]tlb.dirty_walks", Counter, "walks",
        "Walks started only to set a page's dirty bit: a store whose first TLB entry found (L1, or L2 after an L1 miss) was clean. Not in `walks`."),
    // ---- page-walk caches ------------------------------------------------------------------
    e(Tlbs, "tlb.pdc.lookups", Counter, "lookups", "L1 DTLB misses the L2 DTLB did not serve, looked up in the cores' Page Directory Caches (summed over cores).").only("`tlb.pdc.entries` > 0"),
    e(Tlbs, "tlb.pdc.hits", Counter, "lookups", "Of `tlb.pdc.lookups`, those a PDC translated (a 1 GB page the L1 DTLB had evicted; a store needs a dirty entry).").only("`tlb.pdc.entries` > 0"),
    e(Tlbs, "tlb.pdc.fills", Counter, "entries", "1 GB translations the L1 DTLBs evicted into their PDCs.").only("`tlb.pdc.entries` > 0"),
    e(Tlbs, "tlb.pdc.hit_rate", Ratio, "fraction", "`tlb.pdc.hits` / `tlb.pdc.lookups`.").only("`tlb.pdc.entries` > 0"),
    e(Tlbs, "tlb.prefetch.requests", Counter, "pages", "Pages whose translations the TLB prefetcher asked for (the sequential one: the 4 KB page after each L2 TLB miss's, unless its prefetch buffer held it), summed over cores: `tlb.prefetch.cached` + `tlb.prefetch.walks`.").only("`tlb.prefetcher` other than `none`"),
    e(Tlbs, "tlb.prefetch.cached", Counter, "pages", "Requests for a page a TLB level of the core already held: no walk.").only("`tlb.prefetcher` other than `none`"),
    e(Tlbs, "tlb.prefetch.walks", Counter, "walks", "Prefetch walks: walks for requested pages, on a walker of the core once the triggering reference's translation was known; no reference waits for them. Not in `walks`; their page-walk-cache lookups count in `pwc.*`, their reads in `tlb.prefetch.steps`, not `walk_steps`.").only("`tlb.prefetcher` other than `none`"),
    e(Tlbs, "tlb.prefetch.unmapped", Counter, "walks", "Prefetch walks that found the page not mapped: dropped (a prefetch never faults).").only("`tlb.prefetcher` other than `none`"),
    e(Tlbs, "tlb.prefetch.fills", Counter, "entries", "Translations prefetch walks put into the prefetch buffers (`tlb.prefetch.walks` - `tlb.prefetch.unmapped`).").only("`tlb.prefetcher` other than `none`"),
    e(Tlbs, "tlb.prefetch.hits", Counter, "lookups", "L2 TLB misses a prefetch buffer translated (the useful prefetches): the translation moves into the TLBs and no walk runs (a store needs a dirty one). The L2 TLB's `misses` still count them.").only("`tlb.prefetcher` other than `none`"),
    e(Tlbs, "tlb.prefetch.accuracy", Ratio, "fraction", "`tlb.prefetch.hits` / `tlb.prefetch.fills`.").only("`tlb.prefetcher` other than `none`"),
    e(Tlbs, "tlb.prefetch.steps", Counter, "entries", "Page-table entries prefetch walks read, each a cache access of kind `pt` entering at `walker.port`.").only("`tlb.prefetcher` other than `none`"),
    e(Tlbs, "tlb.prefetch.served.<where>", Counter, "entries", "Where prefetch walks' reads were served.").only("`tlb.prefetcher` other than `none`"),
    e(Tlbs, "tlb.prefetch.walk_cycles", Counter, "cycles", "Cycles prefetch walks held their walkers (from getting one to their last read).").only("`tlb.prefetcher` other than `none`"),
    e(Tlbs, "tlb.prefetch.walker_wait_cycles", Counter, "cycles", "Cycles prefetch walks waited for a free walker.").only("`tlb.prefetcher` other than `none`"),
    e(Pwcs, "[core<N>.]pwc.<level>.hits", Counter, "lookups",
        "Walks whose probe of this page-walk-cache level matched (a walk probes every level; `l4` caches L4 entries, tagged by the virtual address above bit 39, `l3` L3 entries, above bit 30, `l2` L2 entries, above bit 21, `l5` L5 entries, above bit 48; with `pt.format=fpt` or `fpt-l4l3`, `l3` is the table of the flattened root's entries, `pwc.flat.entries`, and with `fpt5` `l4` is). 0 when the level has no entries (`l5`: except with `pt.format=radix5` and `pwc.l5.entries` > 0)."),
    e(Pwcs, "[core<N>.]pwc.<level>.misses", Counter, "lookups",
        "Walks whose probe of this level missed. For a level that has entries, hits + misses = `walks` + `tlb.dirty_walks` + `walks.retries` (every walk probes)."),
    // ---- walks -----------------------------------------------------------------------------
    e(Walks, "[core<N>.]walks", Counter, "walks",
        "Page walks caused by TLB misses: one per translation that missed every TLB level (and an L3 TLB, if any). Walks that only set a dirty bit are `tlb.dirty_walks` and walks again after a page fault are `walks.retries`, apart. In a VM a 2D walk counts once; its host walks are `host_walks`."),
    e(Walks, "[core<N>.]walks.retries", Counter, "walks",
        "Walks run again after the walk before them faulted and the OS mapped the page (or, in a VM, after an EPT violation): each fault's retry."),
    e(Walks, "[core<N>.]walk_steps", Counter, "PTE reads",
        "Page-table entries read by walks (after the page-walk caches), counted by the memory side as they are read. In a VM, guest and host entries (`walk_steps.guest` + `walk_steps.host`)."),
    e(Walks, "[core<N>.]walk_steps.miss", Counter, "PTE reads",
        "The part of `walk_steps` read by TLB-miss walks (`walks`): not by dirty-bit walks or retries after faults. Counted by the translation side."),
    e(Walks, "[core<N>.]walk_steps_per_walk", Ratio, "reads/walk", "`walk_steps.miss` / `walks`: entries a TLB miss's walk reads after the page-walk caches."),
    e(Walks, "[core<N>.]walk_cycles", Counter, "cycles",
        "Latency of walks, counted by the memory side: page-walk-cache (and nested-TLB) probe latencies plus each entry read's latency, in order. One translation's walk includes its retries after faults but excludes the fault handler's cycles (`fault_cycles`) and the wait for a free walker (`walker_wait_cycles`)."),
    e(Walks, "[core<N>.]walk_cycles_per_walk", Ratio, "cycles/walk", "`walk_cycles` / (`walks` + `tlb.dirty_walks`): the mean latency of a translation's walk (retries folded in), as `walk_cycles.hist.*` counts them."),
    e(Walks, "[core<N>.]walk_cycles.hist.<bucket>", Counter, "translations",
        "Histogram of walk latency: translations that walked whose walk took `walk_cycles` in the bucket. One count per translation (its retries after a fault fold into it), so the buckets add up to `walks` + `tlb.dirty_walks`."),
    e(Walks, "[core<N>.]walker_wait_cycles", Counter, "cycles",
        "Cycles walks waited for a free page walker (`core.walkers` in flight per core), counted by the memory side; not part of `walk_cycles`."),
    // ---- where served ----------------------------------------------------------------------
    e(Walks, "ctx<N>.walk_cycles", Counter, "cycles", "`walk_cycles` of hardware context N's walks alone.").only("SMT (`system.threads_per_core` > 1)"),
    e(Walks, "ctx<N>.walk_cycles_per_walk", Ratio, "cycles", "`ctx<N>.walk_cycles` per walk of the context (dirty-bit walks included).")
        .only("SMT (`system.threads_per_core` > 1)"),
    e(Served, "[core<N>.]pte_served.<where>", Counter, "PTE reads",
        "Page-table-entry reads by walks served at that level. Reads enter at `walker.port` (`l1d`: the L1D; `l2`: the L2, so `pte_served.l1` stays 0). In a VM, guest and host reads (see `pte_served.<side>.*`)."),
    e(Served, "[core<N>.]data_served.<where>", Counter, "accesses",
        "The references' data accesses (one per reference, after its translation) served at that level: loads and stores enter at the L1D, fetches at the L1I."),
    // ---- caches ----------------------------------------------------------------------------
    e(Served, "ctx<N>.pte_served.<where>", Counter, "PTE reads",
        "`pte_served.<where>` of hardware context N's walks alone (a core's sum its threads': PT-Baker's helper on the sibling walks too).")
    .only("SMT (`system.threads_per_core` > 1)"),
    e(Served, "ctx<N>.data_served.<where>", Counter, "references", "`data_served.<where>` of hardware context N's references alone.")
        .only("SMT (`system.threads_per_core` > 1)"),
    e(Caches, "cache.<cache>.accesses", Counter, "lookups",
        "Demand lookups: L1I the fetches' data; L1D loads, stores and (with `walker.port=l1d`) PTE reads; L2 the L1 misses (and PTE reads with `walker.port=l2`); LLC the L2 misses of every core."),
    e(Caches, "cache.<cache>.hits", Counter, "lookups", "`accesses` - `misses`."),
    e(Caches, "cache.<cache>.misses", Counter, "lookups", "Lookups that missed; the line is then fetched from the next level and filled on the way back."),
    e(Caches, "cache.<cache>.miss_rate", Ratio, "fraction", "`misses` / `accesses`."),
    e(Caches, "cache.<cache>.<kind>.accesses", Counter, "lookups", "Lookups for lines of that kind: `data` for the references' data, `pt` for page-table entries read by walks."),
    e(Caches, "cache.<cache>.<kind>.misses", Counter, "lookups", "Lookups of that kind that missed."),
    e(Caches, "cache.<cache>.<kind>.miss_rate", Ratio, "fraction", "`<kind>.misses` / `<kind>.accesses`."),
    e(Caches, "cache.<cache>.writebacks", Counter, "lines",
        "Dirty lines written back into this cache by the level above (evicted from an L1 into the L2, from an L2 into the LLC), so always 0 for `l1i` and `l1d`. Dirty lines leaving the LLC are `dram.writes`."),
    e(Caches, "cache.<pfcache>.prefetches", Counter, "lines",
        "Lines the cache's data prefetcher brought in (lines already there are not fetched again). Prefetches are not demand `accesses`; from DRAM they count in `dram.reads`.")
        .only("`cache.<pfcache>.prefetcher` other than `none`"),
    e(Caches, "cache.<pfcache>.prefetch_hits", Counter, "lines",
        "Prefetched lines a demand access then hit (each line's first hit; a hit on a prefetch still in flight waits for it and counts).")
        .only("`cache.<pfcache>.prefetcher` other than `none`"),
    e(Caches, "cache.<pfcache>.prefetch_accuracy", Ratio, "fraction", "`prefetch_hits` / `prefetches`.")
        .only("`cache.<pfcache>.prefetcher` other than `none`"),
    // ---- DRAM ------------------------------------------------------------------------------
    e(Caches, "coherence.invalidations", Counter, "copies",
        "Copies of lines in other cores' L1s and L2s that stores invalidated (a store takes its line exclusively; it waits for the directory's round trip when there were copies).").only("`coherence.enabled=true`"),
    e(Caches, "cache.l2.tlb_lines", Ratio, "fraction", "Share of all cores' L2 lines holding POM-TLB entries at the end of the run (a snapshot; with `--interval`, one per interval).").only("`pomtlb.enabled=true`"),
    e(Caches, "cache.llc.tlb_lines", Ratio, "fraction", "Share of the LLC's lines holding POM-TLB entries at the end of the run (a snapshot; with `--interval`, one per interval).").only("`pomtlb.enabled=true`"),
    e(Caches, "cache.l2.tlbe.lines", Counter, "lines", "Lines of all cores' L2s holding POM-TLB entries at the end of the run. A level: an `--interval` series holds its change per interval.").only("`pomtlb.enabled=true`"),
    e(Caches, "cache.llc.tlbe.lines", Counter, "lines", "Lines of the LLC holding POM-TLB entries at the end of the run. A level: an `--interval` series holds its change per interval.").only("`pomtlb.enabled=true`"),
    e(Caches, "cache.<cache>.tlbe.accesses", Counter, "lookups", "Lookups of lines holding POM-TLB entries (the MMU's reads and fills; never in the L1s, which the MMU's path skips).").only("`pomtlb.enabled=true`"),
    e(Caches, "cache.<cache>.tlbe.misses", Counter, "lookups", "Lookups of POM-TLB lines that missed.").only("`pomtlb.enabled=true`"),
    e(Caches, "cache.<cache>.tlbe.miss_rate", Ratio, "fraction", "`tlbe.misses` / `tlbe.accesses`.").only("`pomtlb.enabled=true`"),
    e(Dram, "dram.reads", Counter, "lines", "Lines read from DRAM: the LLC's demand misses (data and PTE reads)."),
    e(Dram, "dram.writes", Counter, "lines",
        "Dirty lines written to DRAM: dirty LLC victims, and with `cache.llc.inclusive=true` dirty private copies back-invalidated with them."),
    e(Dram, "dram.queue_cycles", Counter, "cycles",
        "With `dram.bandwidth_gbps` > 0: cycles requests (reads, and write-backs unless they drain in batches) waited for the channel, summed; 0 with unlimited bandwidth. Only reads' waits delay anything."),
    e(Dram, "dram.drains", Counter, "drains",
        "Write drains: batches of `dram.write_batch` write-backs that took the channel, with two turnarounds of `dram.turnaround_ns`, while reads waited.")
        .only("`dram.write_batch` > 0 and `dram.bandwidth_gbps` > 0"),
    e(Dram, "dram.row_hits", Counter, "accesses", "Accesses (reads and write-backs) that found their row open in their bank: tCAS.").only("`dram.banks` > 0"),
    e(Dram, "dram.row_misses", Counter, "accesses", "Accesses to a bank with no row open (its first): tRCD + tCAS.").only("`dram.banks` > 0"),
    e(Dram, "dram.row_conflicts", Counter, "accesses", "Accesses that found another row open in their bank: tRP + tRCD + tCAS.").only("`dram.banks` > 0"),
    e(Dram, "dram.bank_wait_cycles", Counter, "cycles", "Cycles reads waited for their bank to finish earlier reads or a refresh, summed (write-backs yield to reads: they wait in the write queue and delay no one).").only("`dram.banks` > 0"),
    // ---- energy ----------------------------------------------------------------------------
    e(Energy, "energy_nj.cache", Float, "nJ", "Every cache's (lookups + write-backs received) x its `cache.<cache>.energy_nj`, summed."),
    e(Energy, "energy_nj.dram", Float, "nJ", "(`dram.reads` + `dram.writes`) x `dram.energy_nj`."),
    e(Energy, "energy_nj.total", Float, "nJ", "`energy_nj.cache` + `energy_nj.dram`."),
    // ---- OS, page tables and physical memory -----------------------------------------------
    e(Os, "[core<N>.]faults", Counter, "faults",
        "Page faults taken by the core's references: a walk (or, with `tlb.perfect=true`, the functional lookup) found a not-present entry and the OS mapped the page. In a VM, the guests' faults (EPT violations are `ept_violations`)."),
    e(Os, "[core<N>.]fault_cycles", Counter, "cycles",
        "Cycles of fault handling charged to the faulting core: `os.fault_cycles` per fault (`virt.ept_fault_cycles` per EPT violation, so `ept_fault_cycles` is included) plus the OS work it caused (zeroing a huge page, compaction) and its share of the shootdowns it issued. The core's younger instructions wait for it."),
    e(Os, "[host.]pt.nodes", Counter, "nodes",
        "Page-table nodes at the end of the run, in every address space (a flattened 2 MB node counts once). In a VM, the guests' tables; `host.`: the EPTs."),
    e(Os, "[host.]pt.nodes.<ptlevel>", Counter, "nodes",
        "Nodes whose top level is that level (a flattened L2+L1 node counts at l2, an L4+L3 root at l4). `l5` only with 5-level tables (`pt.format=radix5`; for `host.`, `virt.host_pt.format=radix5`).")
    ,
    e(Os, "[host.]pt_bytes", Counter, "bytes", "Bytes of page-table memory at the end of the run (4 KB per node, 2 MB per flattened node, 1 GB for a `fpt-1g` root): the sum of `pt_bytes.<ptlevel>`."),
    e(Os, "[host.]pt_bytes.<ptlevel>", Counter, "bytes", "Bytes of the nodes whose top level is that level (`l5` as for `pt.nodes.l5`)."),
    e(Os, "[host.]pt.flat_nodes", Counter, "nodes", "Flattened nodes (2 MB, or 1 GB for three merged levels) at the end of the run (`pt.format=fpt*`)."),
    e(Os, "pt.coalescable.16k", Ratio, "fraction",
        "Of the aligned groups of 4 leaf entries that all map 4 KB pages at the end of the run, the share PTE coalescing could cache as one 16 KB entry: frames contiguous and 16 KB-aligned, attributes (A and D included) identical. The contiguity the allocator made, whether or not the TLBs used it (the coalescing paper's T-C measures it through L2 DTLB hits).")
        .only("`tlb.coalescing` (or a `tlb.<level>.coalescing`) other than `none`, natively"),
    e(Os, "pt.coalescable.32k", Ratio, "fraction", "The same for aligned groups of 8 entries (32 KB).")
        .only("`tlb.coalescing` (or a `tlb.<level>.coalescing`) other than `none`, natively"),
    e(Os, "[host.]pt.flatten_fallbacks", Counter, "nodes",
        "Flattened nodes the layout asked for that were built as 4 KB levels because no block of their size was free. Since the tables were created (prefaulting and warm-up included)."),
    e(Os, "[host.]pt.late_flattened", Counter, "nodes",
        "Fallen-back 4 KB nodes merged with their children into a flattened node later, once they held `pt.late_flatten` entries and a 2 MB block was free. Since the tables were created."),
    e(Os, "[host.]pt.unflattened", Counter, "nodes",
        "Flattened L2+L1 nodes turned back into 4 KB levels because they came to hold `pt.nf_threshold` 2 MB pages (FPT+NF). Since the tables were created."),
    e(Os, "[host.]mapped_bytes", Counter, "bytes", "Bytes mapped in every address space at the end of the run (in a VM, what the guests' processes mapped; `host.`: the guest-physical memory the host backs)."),
    e(Os, "[host.]huge_coverage", Ratio, "fraction", "Share of `mapped_bytes` mapped by 2 MB or 1 GB pages at the end of the run."),
    e(Os, "prog<N>.mapped_bytes", Counter, "bytes", "A mix's program: bytes its address spaces map at the end of the run.").only("a native `--mix`"),
    e(Os, "prog<N>.huge_coverage", Ratio, "fraction", "A mix's program: share of its `mapped_bytes` mapped by 2 MB or 1 GB pages at the end of the run (how a promotion daemon shared the huge pages between programs).").only("a native `--mix`"),
    e(Os, "[host.]phys.free_bytes", Counter, "bytes", "Bytes free in the buddy allocator at the end of the run (frames on per-CPU lists not included)."),
    e(Os, "[host.]phys.free_2m_blocks", Counter, "blocks", "Free aligned 2 MB blocks at the end of the run, counting those inside larger free blocks."),
    e(Os, "[host.]phys.free_blocks.order<order>", Counter, "blocks", "Free buddy blocks of exactly that order at the end of the run."),
    e(Os, "[host.]phys.start.free_bytes", Counter, "bytes", "`phys.free_bytes` after the fragmentation scenario (`phys.fragmentation`, `phys.available_gb`), before the workload mapped anything."),
    e(Os, "[host.]phys.start.free_2m_blocks", Counter, "blocks", "`phys.free_2m_blocks` at the start, as `phys.start.free_bytes`."),
    e(Os, "[host.]phys.start.free_blocks.order<order>", Counter, "blocks", "`phys.free_blocks.order<order>` at the start, as `phys.start.free_bytes`."),
    e(Os, "[host.]phys.pinned_bytes", Counter, "bytes", "Unmovable memory the fragmentation scenario left behind (pinned pages, aged long-lived pages), at the start."),
    e(Os, "[host.]phys.hog_bytes", Counter, "bytes", "Memory taken away before the run by `phys.available_gb`."),
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
    e(Os, "check.translations_checked", Counter, "references", "References whose translation the checker compared with a functional walk of the current page tables.").only("`check.translations` > 0"),
    e(Os, "stale_translation_uses", Counter, "references",
        "Checked references that used a translation the page tables no longer give (a missed shootdown; always 0 unless a protocol is broken on purpose). With `check.on_stale=fail` the first one stops the run.").only("`check.translations` > 0"),
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
        "Page-table entries loaded by software walks in the kernel (read-ptes OS calls, as PT-Baker's kernel-mode helper makes): one dependent load per level, through the core's caches as data."),
    e(Os, "[host.]os.page_cache_reads", Counter, "pages",
        "File pages read into the page cache: a fault on a page of a read-only file mapping (a region with a file, e.g. a traced program's text from its `.maps`) that is not cached reads its `os.readahead_pages` cluster. Each page is read once and shared by every mapping of the file."),
    e(Os, "[host.]os.fault_around_pages", Counter, "pages",
        "Cached file pages mapped around a faulting one (`os.fault_around_pages`), accessed at once or not as `os.preset_a` says; they are not counted in `faults`."),
    e(Os, "[host.]os.freed_pt_nodes", Counter, "nodes", "Level-1 page-table nodes freed because an unmap call emptied them (their page-walk-cache entries leave with the shootdown)."),
    e(Os, "[host.]os.context_switches", Counter, "switches",
        "Process switches (`os.processes` > 1, every `os.timeslice_cycles`). In a VM they are the guests' (`host.os.context_switches` stays 0; VM switches are `vm_switches`)."),
    e(Os, "[host.]os.reserved_bytes", Counter, "bytes", "Bytes held by reservations and not yet populated, at the end of the run."),
    // ---- virtual machines ------------------------------------------------------------------
    e(Vms, "[core<N>.]walk_steps.<side>", Counter, "PTE reads", "`walk_steps` split by table: guest entries, and host (EPT) entries read by host walks.").only("`virt.enabled=true`"),
    e(Vms, "[core<N>.]walk_steps_per_walk.<side>", Ratio, "reads/walk", "`walk_steps.miss.<side>` / `walks`: guest or host entries a TLB miss's 2D walk reads.").only("`virt.enabled=true`"),
    e(Vms, "[core<N>.]walk_steps.miss.<side>", Counter, "PTE reads", "The part of `walk_steps.<side>` read by TLB-miss walks (`walk_steps.miss` split by table).").only("`virt.enabled=true`"),
    e(Vms, "[core<N>.]pte_served.<side>.<where>", Counter, "PTE reads", "`pte_served.<where>` split by table.").only("`virt.enabled=true`"),
    e(Vms, "virt.guest_pt_host_pte_bytes", Counter, "bytes", "Bytes of host (EPT) leaf entries mapping the guests' page tables at the end of the run: 8 per host page that holds a guest page-table node (the flattening paper's 22 KB of host PTEs for graph500's 11 MB guest table).").only("`virt.enabled=true`"),
    e(Vms, "[core<N>.]tlb.nested.hits", Counter, "lookups",
        "Nested TLB lookups (a guest entry's gPA, and the final data gPA with `virt.nested_tlb_data`) that found a usable gPA -> hPA translation.")
    .only("`virt.enabled=true`"),
    e(Vms, "[core<N>.]tlb.nested.misses", Counter, "lookups",
        "Nested TLB lookups that did not: no entry, or a clean one for the final address of a store. Each leads to a host walk.")
    .only("`virt.enabled=true`"),
    e(Vms, "[core<N>.]tlb.nested.accesses", Counter, "lookups", "`tlb.nested.hits` + `tlb.nested.misses` (0 with `tlb.nested.entries=0`).").only("`virt.enabled=true`"),
    e(Vms, "[core<N>.]tlb.nested.hit_rate", Ratio, "fraction", "`tlb.nested.hits` / `tlb.nested.accesses`.").only("`virt.enabled=true`"),
    e(Vms, "[core<N>.]host_walks", Counter, "walks",
        "Walks of the host (EPT) table within 2D walks: one per guest-physical address the nested TLB did not translate (guest entries and the final data address).")
    .only("`virt.enabled=true`"),
    e(Vms, "[core<N>.]walk_steps_per_host_walk", Ratio, "reads/walk", "`walk_steps.host` / `host_walks`.").only("`virt.enabled=true`"),
    e(Vms, "[core<N>.]virt.host_pwc.<level>.hits", Counter, "lookups",
        "Host walks whose probe of the host page-walk cache (vPWC, tagged by gPA prefixes; `virt.host_pwc.*`) matched at that level; as `pwc.<level>.hits`.")
    .only("`virt.enabled=true`"),
    e(Vms, "[core<N>.]virt.host_pwc.<level>.misses", Counter, "lookups", "Host walks whose vPWC probe at that level missed; for a level that has entries, hits + misses = `host_walks`.")
        .only("`virt.enabled=true`"),
    e(Vms, "[core<N>.]ept_violations", Counter, "faults",
        "EPT violations: a 2D walk needed a guest-physical page (of a guest table node or of data) the host had not mapped yet, and the host mapped it.")
    .only("`virt.enabled=true`"),
    e(Vms, "[core<N>.]ept_fault_cycles", Counter, "cycles", "Cycles of EPT-violation handling (`virt.ept_fault_cycles` each, plus the host's work and shootdowns they caused); part of `fault_cycles`.")
        .only("`virt.enabled=true`"),
    e(Vms, "[core<N>.]vcpu_switches", Counter, "switches", "Switches of the core to another vCPU of the VM (vCPU overcommit, `virt.vcpus_per_core` > 1: every `virt.vcpu_slice_cycles`, or when a vCPU's stream ends).").only("`virt.enabled=true`"),
    e(Vms, "[core<N>.]vm_switches", Counter, "switches", "Switches of the core to another VM (`virt.vms` > 1, or a mix whose programs share cores; every `virt.switch_interval_cycles`).").only("`virt.enabled=true`"),
    // ---- mechanisms (each mechanism's `emit_stats`, under its own prefix) --------------------
    e(Mechanisms, "ptbaker.touches", Counter, "touches",
        "Touches of PT-Baker's helper thread: its loads or prefetches (`ptbaker.mode=user`, `user-prefetch`) or its software walks (`kernel`: read-ptes calls, which read `os.pte_reads` lines), after warm-up.")
    .only("`ptbaker.mode` other than `off`"),
    e(Mechanisms, "ptbaker.passes", Float, "passes",
        "`ptbaker.touches` over the touches of one pass over the helper's regions: passes it made, the last one partial (0 with `ptbaker.ahead`, which follows a thread instead).")
    .only("`ptbaker.mode` other than `off`"),
    e(Mechanisms, "[core<N>.]ptp.epochs", Counter, "epochs",
        "Epochs of the PTP phase detector that ended on the core (every `ptp.detector_epoch` instructions; `ptp.mode=detector` with a cache whose policy is `ptp`, else 0)."),
    e(Mechanisms, "[core<N>.]ptp.active_epochs", Counter, "epochs",
        "Of those, epochs whose L2 TLB MPKI reached `ptp.detector_mpki`: the core was in a TLB-miss phase and the `ptp` caches protected its page-table lines."),
    e(Mechanisms, "[core<N>.]<pcc>.lookups", Counter, "lookups",
        "Walks of the native or guest table (never host walks) that reached the PCC's stage: the PMD (level-2) entry for `pcc`, the PUD (level-3) entry for `pcc.1g`, or a level below it after a page-walk-cache hit. Includes walks that only set a dirty bit and walks that then fault. `filtered` + `inserts` + `hits`.")
    .only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
    e(Mechanisms, "[core<N>.]<pcc>.filtered", Counter, "lookups",
        "Lookups the cold-miss filter dropped: the walk found the region's entry (the PMD or PUD entry, or the leaf of a page of the region's size) with its accessed bit clear, so this is the first walk into the region. A flattened L2+L1 node has no PMD entry: its walks are never filtered by `pcc`.")
    .only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
    e(Mechanisms, "[core<N>.]<pcc>.inserts", Counter, "lookups", "Lookups past the filter that found no entry for the region (and context) and inserted it with count 0.").only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
    e(Mechanisms, "[core<N>.]<pcc>.hits", Counter, "lookups", "Lookups past the filter that found the region's entry and added 1 to its count.").only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
    e(Mechanisms, "[core<N>.]<pcc>.huge_lookups", Counter, "lookups",
        "Lookups past the filter by walks that ended at a page of the region's size (an already promoted region, whose entry is then marked huge).")
    .only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
    e(Mechanisms, "[core<N>.]<pcc>.evictions", Counter, "entries", "Entries evicted to make room for an insert (`pcc.policy`: lfu or lru).").only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
    e(Mechanisms, "[core<N>.]<pcc>.decays", Counter, "halvings", "Times every count was halved because one reached 2^`pcc.counter_bits` - 1.").only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
    e(Mechanisms, "[core<N>.]<pcc>.invalidations", Counter, "entries",
        "Entries dropped by shootdowns and flushes reaching the core (a range overlapping the region, its context, its VM, or everything).")
    .only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
    e(Mechanisms, "[core<N>.]<pcc>.reads", Counter, "read-outs", "Read-outs of the PCC by the OS (its ranked candidate list).").only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
    e(Mechanisms, "[core<N>.]<pcc>.flushed", Counter, "entries", "Entries emptied by read-outs (`pcc.readout=flush`; 0 with `invalidate`).").only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
    e(Mechanisms, "[core<N>.]<pcc>.occupancy", Counter, "entries", "Valid entries at the end of the run (state: not reset by warm-up).").only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
    e(Mechanisms, "pcc.daemon.reads", Counter, "read-outs", "Times the OS's promotion daemon read every core's PCC out (every `os.promotion_interval` references, first after `os.promotion_first`).").only("`os.promotion=pcc`"),
    e(Mechanisms, "pcc.daemon.requests", Counter, "regions", "Promotions the daemon asked the OS for: at most `pcc.promote_per_read` per read-out, each region once, none already huge or demoted, and over the run at most `os.promotion_cap` of the footprint in distinct regions. The OS's `promotions` counts those it carried out.").only("`os.promotion=pcc`"),
    e(Mechanisms, "pcc.daemon.demotions", Counter, "regions", "Demotions the daemon asked the OS for (`pcc.demotion`): regions it promoted that came back in a read-out as huge entries with a count above 0, each once. The OS's `demotions` counts those it carried out; each frees a 2 MB block, its 512 pages moving to 4 KB frames (`os.migrated_pages`).").only("`os.promotion=pcc` and `pcc.demotion=true`"),
    e(Mechanisms, "hawkeye.windows", Counter, "windows", "HawkEye's measurement windows ended (every `hawkeye.window_refs` + `os.promotion_interval` references, first after `hawkeye.window_refs`).").only("`os.promotion=hawkeye`"),
    e(Mechanisms, "hawkeye.requests", Counter, "regions", "Promotions HawkEye asked the OS for: at most `hawkeye.promote_per_interval` per window, each region once over the run, and at most `os.promotion_cap` of the footprint. The OS's `promotions` counts those it carried out.").only("`os.promotion=hawkeye`"),
    e(Mechanisms, "oracle.profile_walks", Counter, "walks", "Walks that ended at a 4 KB page in the hindsight oracle's first run (the same machine without promotion), over every region: what its ranking counts (L2 TLB misses and the walks that only set a dirty bit, so it can exceed that run's `walks`).").only("`os.promotion=oracle`"),
    e(Mechanisms, "oracle.profile_regions", Counter, "regions", "2 MB regions with at least one such walk: the oracle's ranked list.").only("`os.promotion=oracle`"),
    e(Mechanisms, "oracle.requests", Counter, "regions", "Promotions the oracle asked the OS for at its one read (`os.promotion_first`): the regions with the most walks, up to `os.promotion_cap` of the footprint. The OS's `promotions` counts those it carried out.").only("`os.promotion=oracle`"),
    e(Mechanisms, "asap.prefetches", Counter, "lines", "Page-table lines ASAP prefetched as walks started: the entries of the last `asap.levels` levels below each walk's first node (the walk reads them later, finding them in flight or arrived). Each is a cache access of kind `pt`, but not a walk step.").only("`asap.enabled=true`"),
    e(Mechanisms, "ech.table_reads", Counter, "lines", "ECH: lines of the hashed page tables walks read (one per way of each page size the cuckoo walk caches left possible, one where they named the way). Each is a walk step, issued in parallel with the walk's other reads.").only("`ech.enabled=true`"),
    e(Mechanisms, "ech.cwt_reads", Counter, "lines", "ECH: lines of the cuckoo walk tables walks read to fill a cuckoo walk cache that missed (one per way; in parallel with the table reads, not waited for). Also walk steps.").only("`ech.enabled=true`"),
    e(Mechanisms, "ech.<cwc>.hits", Counter, "lookups", "ECH: walks whose probe of the cuckoo walk cache of 2 MB regions (`pmd_cwc`) or 1 GB regions (`pud_cwc`) found the region.").only("`ech.enabled=true`"),
    e(Mechanisms, "ech.<cwc>.misses", Counter, "lookups", "ECH: walks whose probe of that cuckoo walk cache missed.").only("`ech.enabled=true`"),
    e(Mechanisms, "ech.stale_cwc", Counter, "walks", "ECH: walks whose cuckoo walk cache entry no longer matched the tables (a page size appeared in the region, or the cuckoo moved the entry): the region's entries are dropped and every way of the right size read.").only("`ech.enabled=true`"),
    e(Mechanisms, "ech.bytes", Counter, "bytes", "ECH: simulated memory of every address space's hashed tables and cuckoo walk tables at the end of the run (both tables of one that is growing), besides the OS's own radix tree (`pt_bytes`).").only("`ech.enabled=true`"),
    e(Mechanisms, "ech.resizes", Counter, "tables", "ECH: hashed tables grown (elastic resizing: `ech.growth` times larger once fuller than `ech.load_factor`), since the tables were created.").only("`ech.enabled=true`"),
    e(Mechanisms, "ech.kicks", Counter, "keys", "ECH: entries displaced by cuckoo insertions, since the tables were created.").only("`ech.enabled=true`"),
    e(Mechanisms, "ech.scattered_ways", Counter, "ways", "ECH: table ways that found no free contiguous block and were placed in single frames (ECH needs large contiguous allocations: the flattening paper's objection to it).").only("`ech.enabled=true`"),
    e(Mechanisms, "asap.served.<where>", Counter, "lines", "Where ASAP's prefetches were served (`l1` when the walk would have hit there anyway).").only("`asap.enabled=true`"),
    e(Mechanisms, "pomtlb.lookups", Counter, "lookups", "L2 TLB misses that looked the POM-TLB up (not stores through a clean L1/L2 entry, which walk at once): `hits` + `misses`. Every lookup reads two lines, one per array.").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "pomtlb.hits", Counter, "lookups", "Lookups that found the translation (a store needs a dirty one); the L1 and L2 TLBs are filled and no walk runs.").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "pomtlb.hits_2m", Counter, "lookups", "Hits in the 2 MB array (a 1 GB page is held as the 2 MB piece touched).").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "pomtlb.misses", Counter, "lookups", "Lookups that walked: no entry, or a store found a clean one.").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "pomtlb.dirty_walks", Counter, "lookups", "Misses of stores that found a clean entry and walked to set the PTE's D bit (included in `misses`).").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "pomtlb.hit_rate", Ratio, "fraction", "`hits` / `lookups`.").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "pomtlb.fills", Counter, "translations", "Translations written after walks (each a write of its set's line through the L2 cache).").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "pomtlb.evictions", Counter, "entries", "Valid entries a fill replaced (LRU within the 4-entry set).").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "pomtlb.invalidations", Counter, "entries", "Entries dropped by shootdowns and flushes.").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "pomtlb.stale_hits", Counter, "lookups",
        "Hits (in `hits`) on an old entry of a line TCAT's initiator rewrote without flushing it (`tcat.flush=false`, the §5.2.5.1 counterexample): until the initiator's L1D writes the line back, the copies the MMU reads still hold the translation the rewrite cleared. 0 otherwise.").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "pomtlb.occupancy", Counter, "entries", "Valid entries of the 4 KB array at the end of the run (state: not reset by warm-up).").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "pomtlb.occupancy_2m", Counter, "entries", "Valid entries of the 2 MB array at the end of the run.").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "pomtlb.line_reads", Counter, "lines", "POM-TLB lines read by lookups, counted by the memory side: two per lookup.").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "pomtlb.served.l2", Counter, "lines", "Line reads served by the core's L2 cache (the MMU's path skips the L1D).").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "pomtlb.served.llc", Counter, "lines", "Line reads served by the LLC.").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "pomtlb.served.dram", Counter, "lines", "Line reads served by the die-stacked DRAM that holds the POM-TLB (`pomtlb.latency`).").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "pomtlb.lookup_cycles", Counter, "cycles", "Cycles lookups added to translation: per lookup, the slower of its two parallel line reads.").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "pomtlb.line_writes", Counter, "lines", "POM-TLB lines written by fills (stores through L2, write-allocate).").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "pomtlb.dram.reads", Counter, "lines", "Reads of the die-stacked DRAM (POM-TLB line misses in the LLC).").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "pomtlb.dram.writes", Counter, "lines", "Write-backs of dirty POM-TLB lines to the die-stacked DRAM.").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "tcat.lines", Counter, "lines",
        "POM-TLB lines the hypervisor read-modify-wrote and flushed for guest page-table updates (TCAT's initiator: one per page, per page size its mapping may have had).").only("`shootdown.protocol=tcat-cotag|tcat-cotagless`"),
    e(Mechanisms, "tcat.messages", Counter, "messages",
        "Invalidations the directory forwarded to the TLB sharers of those lines (the initiator's own core by self-snoop included).").only("`shootdown.protocol=tcat-cotag|tcat-cotagless`"),
    e(Mechanisms, "tcat.spurious", Counter, "messages", "Of `tcat.messages`, those that found no entry to drop (sharers are sticky; TLB evictions are silent).").only("`shootdown.protocol=tcat-cotag|tcat-cotagless`"),
    e(Mechanisms, "tcat.invalidations", Counter, "entries", "TLB entries the sharers dropped: those homed in the line (co-tag), or the whole private-TLB set it selects (co-tagless).").only("`shootdown.protocol=tcat-cotag|tcat-cotagless`"),
    e(Mechanisms, "tcat.fill_invalidations", Counter, "entries",
        "TLB entries other cores dropped because a walk's fill wrote their POM-TLB line (`tcat.fill_invalidates=true`, a plain protocol without the xlat_inv filter; 0 otherwise).").only("`shootdown.protocol=tcat-cotag|tcat-cotagless`"),
    e(Mechanisms, "tcat.fallbacks", Counter, "shootdowns",
        "Shootdowns left to the baseline protocol (kvm_tlb in a VM, ipi natively): over `os.flush_ceiling_pages` pages, or the host's gPA changes, which TCAT does not cover.").only("`shootdown.protocol=tcat-cotag|tcat-cotagless`"),
    e(Mechanisms, "pomtlb.dram.queue_cycles", Counter, "cycles", "Cycles requests waited for the die-stacked DRAM (`pomtlb.bandwidth_gbps` > 0).").only("`pomtlb.enabled=true`"),
    e(Mechanisms, "csalt.<pcache>.data_ways", Counter, "ways", "CSALT's partition now: ways data lines may fill (page-table lines count as data), the rest for POM-TLB lines; for `l2`, summed over the cores' L2s (divide by the cores for the mean). A level, not a count: an `--interval` series holds its change per interval.").only("`cache.<pcache>.policy` = `csalt-d` or `csalt-cd`"),
    e(Mechanisms, "csalt.<pcache>.epochs", Counter, "epochs", "Epochs ended (every `csalt.epoch` demand accesses to the cache), each a repartitioning.").only("`cache.<pcache>.policy` = `csalt-d` or `csalt-cd`"),
    e(Mechanisms, "csalt.<pcache>.changes", Counter, "epochs", "Epochs whose repartitioning changed the number of data ways.").only("`cache.<pcache>.policy` = `csalt-d` or `csalt-cd`"),
    e(Mechanisms, "csalt.<pcache>.s_dat", Float, "factor", "The data weight S_Dat of the last repartitioning (CSALT-CD, Eqs. 5.6-5.8 for L2, their analogue for the LLC; 1 for CSALT-D); for `l2`, the mean over the cores.").only("`cache.<pcache>.policy` = `csalt-d` or `csalt-cd`"),
    e(Mechanisms, "csalt.<pcache>.s_tr", Float, "factor", "The TLB-entry weight S_Tr of the last repartitioning (CSALT-CD, Eqs. 5.3-5.5 for L2; 1 for CSALT-D).").only("`cache.<pcache>.policy` = `csalt-d` or `csalt-cd`"),
];

/// Every entry of the glossary.
pub fn entries() -> &'static [Entry] {
    ENTRIES
}

/// The entry whose pattern matches `name` (a concrete statistic name such as
/// `core1.cache.llc.pt.misses`, or an old name of one), if any.
pub fn lookup(name: &str) -> Option<&'static Entry> {
    let name = canonical(name);
    ENTRIES.iter().find(|e| e.matches(&name))
}

/// Structures once named two ways: each now has one name, in configuration keys and
/// statistics alike (`tlb.nested.entries`, `tlb.nested.hits`), and the old name, as a dotted
/// prefix, is still accepted wherever a key or a statistic is looked up by name.
pub const RENAMED: &[(&str, &str)] = &[("nested_tlb.", "tlb.nested."), ("vpwc.", "virt.host_pwc.")];

/// `name` with an old structure name (see [`RENAMED`]) replaced by the one name, where it
/// starts a dotted component (`core2.vpwc.l2.hits` is `core2.virt.host_pwc.l2.hits`).
pub fn canonical(name: &str) -> std::borrow::Cow<'_, str> {
    for (old, new) in RENAMED {
        if let Some(at) = name.match_indices(old).map(|(i, _)| i).find(|&i| i == 0 || name.as_bytes()[i - 1] == b'.') {
            return format!("{}{new}{}", &name[..at], &name[at + old.len()..]).into();
        }
    }
    name.into()
}

/// The placeholder called `name` (without the angle brackets).
pub fn placeholder(name: &str) -> Option<&'static Placeholder> {
    PLACEHOLDERS.iter().find(|p| p.name == name)
}

/// A pattern's optional bracketed prefix (if any) and the rest.
fn split_optional(pattern: &str) -> (Option<&str>, &str) {
    match pattern.strip_prefix('[') {
        Some(rest) => {
            let close = rest.find(']').unwrap_or_else(|| panic!("glossary pattern {pattern}: '[' without ']'"));
            (Some(&rest[..close]), &rest[close + 1..])
        }
        None => (None, pattern),
    }
}

/// Whether `name` is `p` followed by `tail` (both without optional parts).
fn matches_seq(p: &str, tail: &str, name: &str) -> bool {
    if p.is_empty() {
        return if tail.is_empty() { name.is_empty() } else { matches_seq(tail, "", name) };
    }
    if let Some(after) = p.strip_prefix('<') {
        let end = after.find('>').unwrap_or_else(|| panic!("glossary pattern: '<' without '>' in {p}"));
        let (ph, rest) = (&after[..end], &after[end + 1..]);
        let ph = placeholder(ph).unwrap_or_else(|| panic!("glossary pattern: no placeholder <{ph}>"));
        if ph.values.is_empty() {
            // A decimal number without leading zeros.
            let digits = name.bytes().take_while(u8::is_ascii_digit).count();
            let max = if name.starts_with('0') { digits.min(1) } else { digits };
            return (1..=max).any(|n| matches_seq(rest, tail, &name[n..]));
        }
        return ph.values.iter().any(|v| name.strip_prefix(v).is_some_and(|r| matches_seq(rest, tail, r)));
    }
    let lit = p.find('<').unwrap_or(p.len());
    name.strip_prefix(&p[..lit]).is_some_and(|r| matches_seq(&p[lit..], tail, r))
}

/// Every value of the pattern `p` (without optional parts), `<N>` standing for 0.
fn expand_seq(p: &str, out: &mut Vec<String>) {
    let Some(start) = p.find('<') else {
        out.push(p.to_string());
        return;
    };
    let end = start + p[start..].find('>').expect("'<' without '>'");
    let ph = placeholder(&p[start + 1..end]).expect("known placeholder");
    let values: &[&str] = if ph.values.is_empty() { &["0"] } else { ph.values };
    let mut rest = Vec::new();
    expand_seq(&p[end + 1..], &mut rest);
    for v in values {
        for r in &rest {
            out.push(format!("{}{v}{r}", &p[..start]));
        }
    }
}

impl Entry {
    /// Whether the concrete statistic name `name` is one of this entry's.
    pub fn matches(&self, name: &str) -> bool {
        let (opt, rest) = split_optional(self.pattern);
        // A mix's programs report what cores do: `prog<N>.` goes wherever `core<N>.` may.
        let as_core = name.strip_prefix("prog").map(|r| format!("core{r}"));
        let prefixed = |n: &str| opt.is_some_and(|o| o.starts_with("core") && matches_seq(o, rest, n));
        opt.is_some_and(|o| matches_seq(o, rest, name)) || as_core.is_some_and(|n| prefixed(&n)) || matches_seq(rest, "", name)
    }

    /// The pattern's forms: with its optional prefix and without (or just the pattern).
    pub fn forms(&self) -> Vec<String> {
        match split_optional(self.pattern) {
            (Some(o), rest) => vec![format!("{o}{rest}"), rest.to_string()],
            (None, rest) => vec![rest.to_string()],
        }
    }

    /// Every concrete name of the entry, with core 0 standing for `core<N>.`.
    pub fn expand(&self) -> Vec<String> {
        let mut out = Vec::new();
        for f in self.forms() {
            expand_seq(&f, &mut out);
        }
        out
    }
}

/// The introduction of `docs/statistics.md`.
const INTRO: &str = r#"# Statistics

<!-- Generated from crates/xlat-core/src/glossary.rs: do not edit. Regenerate with
     cargo run --release -p xlat-core --example glossary > docs/statistics.md -->

Every run reports a flat table of statistics with hierarchical dotted names. `xlat run` prints a
summary (below); `xlat run --all-stats` prints every statistic, `--json PATH` writes them all
(`stats`), `xlat.simulate(...).stats` holds them in Python, and a sweep stores each as a
`stat.<name>` column. `xlat stats NAME...` prints what statistics mean (`xlat stats` alone, this
whole glossary). Names are a contract with every study and report: new statistics are added,
existing ones are not renamed.

This page is generated from the glossary the engine declares
(`crates/xlat-core/src/glossary.rs`); a test fails when a run reports a statistic the glossary
does not describe, or when this page is out of date.

## Names

- **Bare names** (`walks`, `cache.llc.misses`) are machine totals: counters summed over cores,
  ratios computed from the sums (`ipc` is all instructions over the slowest core's cycles).
- **`core<N>.`**: with two or more cores, the statistics marked `[core<N>.]` below are also
  reported for each core (`core0.walks`, `core1.ipc`). A one-core run has the bare names only.
- **`prog<N>.`**: a mix of programs (`--mix`) also reports the same statistics for each program,
  summed over the cores it runs on (`prog0.ipc`, `prog1.tlb.l2.mpki`); its `cycles` are its
  slowest core's. Program numbers follow the order of the mix. Not where programs share cores
  (time-sliced as VMs): the cores' statistics are then theirs together.
- **`host.`**: in a virtual machine (`virt.enabled=true`), page-table, memory and OS statistics
  under their bare names are the guests' (summed over VMs: what the application sees), and those
  marked `[host.]` are also reported for the hypervisor (its EPTs and the machine's physical
  memory) under `host.`.

Kinds: a *counter* is an integer; a *ratio* is the quotient of two counters, undefined when the
denominator is 0 (NaN in Python, `null` in JSON and Parquet, `-` in tables: a cache nobody
accessed has no miss rate, and 0 would read as "never misses"); a *float* is another number (a rate per kilo-instruction, an energy).
Counters cover the measured part of the run: they restart at the end of warm-up (`--warmup`), and
the OS's after prefaulting. Statistics that describe state (page-table sizes, mapped and free
memory) are taken at the end of the run, or at its start for `phys.start.*`.

Placeholders in the names below:

"#;

/// The part of `docs/statistics.md` between the placeholders and the glossary's sections.
const SUMMARY: &str = r#"## The summary of `xlat run`

| line | statistics | meaning |
|---|---|---|
| IPC | `ipc` = `instructions` / `cycles` | the timing window's result; compare with `--set tlb.perfect=true` for what translation costs |
| L1 DTLB / L2 TLB misses (MPKI) | `tlb.l1d.misses`, `tlb.l2.misses`, `tlb.*.mpki` | misses per kilo-instruction |
| page walks | `walks` | walks caused by TLB misses (walks that only set a dirty bit are `tlb.dirty_walks`, retries after faults `walks.retries`) |
| PTE reads per walk | `walk_steps_per_walk` = `walk_steps.miss` / `walks` | page-table entries a TLB miss's walk reads after the page-walk caches |
| cycles per walk | `walk_cycles_per_walk` | walk latency; `walk_cycles.hist.*` is its histogram |
| PWC hits per walk | `pwc.<level>.hits` / (`walks` + `tlb.dirty_walks` + `walks.retries`) | which page-walk-cache levels hit |
| PTE reads served by | `pte_served.<where>` | where each page-table read was found (the PT-Baker thesis's key measurement); `data_served.*` the same for data |
| L1D / L2 / LLC miss rate | `cache.<cache>.misses` / `cache.<cache>.accesses` | split by line kind in `cache.<cache>.data.*` and `cache.<cache>.pt.*` (page-table lines) |
| page faults | `faults` | demand faults (guest faults in a VM) |
| page-table memory | `pt_bytes` | what the OS built; per level `pt_bytes.<ptlevel>`, `pt.nodes.<ptlevel>`; `pt.flat_nodes`, `pt.flatten_fallbacks`, `pt.unflattened`, `pt.late_flattened` for flattened tables |
| huge-page coverage | `huge_coverage` | fraction of mapped bytes in 2 MB or 1 GB pages, with `promotions` and `demotions` |
| TLB shootdowns | `shootdowns`, `shootdown_cycles` | shown when there were any |
| free 2 MB blocks | `phys.start.free_2m_blocks`, `phys.free_2m_blocks` | physical contiguity before and after the run |

In a VM the summary adds guest/host reads per walk (`walk_steps.guest`, `walk_steps.host`), nested
TLB hits (`tlb.nested.*`), EPT violations, VM switches and the host's tables and coverage; see
[model.md](model.md#virtual-machines-cratesxlat-coresrcosvirtrs).

"#;

/// `text` for a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// `docs/statistics.md`: the introduction on naming, then each section's statistics as a table.
pub fn markdown() -> String {
    let mut s = String::from(INTRO);
    s.push_str("| placeholder | values | stands for |\n|---|---|---|\n");
    for p in PLACEHOLDERS {
        let values = if p.values.is_empty() { "0, 1, 2, ...".to_string() } else { p.values.join(", ") };
        s.push_str(&format!("| `<{}>` | {} | {} |\n", p.name, cell(&values), cell(p.doc)));
    }
    s.push('\n');
    let renamed: Vec<String> = RENAMED.iter().map(|(old, new)| format!("`{old}*` is `{new}*`")).collect();
    s.push_str(&format!(
        "Each structure has one name, in statistics as in configuration keys. Older names are still accepted wherever a statistic or a key is looked up by name: {}.\n\n",
        renamed.join(", ")
    ));
    s.push_str(SUMMARY);
    s.push_str(&format!("## All statistics ({} entries)\n", ENTRIES.len()));
    for sec in Section::ALL {
        s.push_str(&format!("\n### {}\n\n{}\n\n", sec.title(), sec.intro()));
        s.push_str("| statistic | kind | unit | meaning |\n|---|---|---|---|\n");
        for e in ENTRIES.iter().filter(|e| e.section == sec) {
            let only = if e.only.is_empty() { String::new() } else { format!(" *Only with {}.*", e.only) };
            s.push_str(&format!("| `{}` | {} | {} | {}{} |\n", e.pattern, e.kind.name(), cell(e.unit), cell(e.doc), cell(&only)));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_their_forms_and_nothing_else() {
        assert_eq!(lookup("cache.llc.pt.misses").map(|e| e.pattern), Some("cache.<cache>.<kind>.misses"));
        assert_eq!(lookup("core12.pte_served.host.dram").map(|e| e.pattern), Some("[core<N>.]pte_served.<side>.<where>"));
        assert_eq!(lookup("core0.ipc").map(|e| e.pattern), Some("[core<N>.]ipc"));
        assert!(lookup("core01.walks").is_none(), "no leading zeros");
        assert_eq!(lookup("prog3.walks").map(|e| e.pattern), Some("[core<N>.]walks"));
        assert!(lookup("prog0.cache.l1d.accesses").is_none(), "programs have what cores have");
        assert!(lookup("core.walks").is_none());
        assert!(lookup("host.walks").is_none(), "walks has no host. form");
        assert!(lookup("core0.cache.l1d.accesses").is_none(), "caches have no per-core form");
        assert_eq!(lookup("host.pt.nodes.l3").map(|e| e.pattern), Some("[host.]pt.nodes.<ptlevel>"));
        assert_eq!(lookup("walk_cycles.hist.ge4096").map(|e| e.pattern), Some("[core<N>.]walk_cycles.hist.<bucket>"));
        assert!(lookup("walk_cycles.hist.ge").is_none());
        assert!(lookup("phys.free_blocks.order19").is_none());
    }

    /// Every concrete name of an entry is matched by that entry and no other (lookup is
    /// unambiguous), and every entry is in a known section order.
    #[test]
    fn entries_are_unambiguous_and_in_section_order() {
        for (i, e) in ENTRIES.iter().enumerate() {
            for name in e.expand() {
                let hits: Vec<_> = ENTRIES.iter().filter(|x| x.matches(&name)).map(|x| x.pattern).collect();
                assert_eq!(hits, vec![e.pattern], "{name}");
            }
            if i > 0 {
                assert!(ENTRIES[i - 1].section <= e.section, "{} is out of its section's place", e.pattern);
            }
            assert!(!e.doc.is_empty() && !e.unit.is_empty(), "{}", e.pattern);
        }
    }

    /// The placeholders that mirror engine constants agree with them.
    #[test]
    fn placeholders_follow_the_engine() {
        let orders: Vec<String> = (0..=crate::os::phys::MAX_ORDER).map(|o| o.to_string()).collect();
        assert_eq!(placeholder("order").unwrap().values, orders);
        let mut buckets: Vec<String> = crate::stats::WALK_HIST_BOUNDS.iter().map(|b| format!("lt{b}")).collect();
        buckets.push(format!("ge{}", crate::stats::WALK_HIST_BOUNDS.last().unwrap()));
        assert_eq!(placeholder("bucket").unwrap().values, buckets);
    }
}
