//! Statistics: counters with hierarchical dotted names, and the `counters!` macro that declares
//! a struct of them together with each one's glossary entry (see [`crate::glossary`]; the names
//! are the contract with every study: extend them, never rename silently). A report is integers
//! first (counters and levels, see [`crate::glossary::Kind`]); once the [`Snapshot`] of the end
//! of warm-up is subtracted from the counters, the floats are derived from them ([`Ints`]).

/// A statistic's value: counters stay integers in JSON, ratios are floats.
#[derive(Clone, Copy, Debug)]
pub enum StatValue {
    Int(u64),
    Float(f64),
}

/// Bit-for-bit equality: two runs agree when every statistic is the same bits, an undefined
/// ratio (NaN) included.
impl PartialEq for StatValue {
    fn eq(&self, other: &StatValue) -> bool {
        match (self, other) {
            (StatValue::Int(a), StatValue::Int(b)) => a == b,
            (StatValue::Float(a), StatValue::Float(b)) => a.to_bits() == b.to_bits(),
            _ => false,
        }
    }
}

impl StatValue {
    pub fn as_f64(self) -> f64 {
        match self {
            StatValue::Int(i) => i as f64,
            StatValue::Float(f) => f,
        }
    }
}

/// An ordered list of named statistics.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    pub entries: Vec<(String, StatValue)>,
    /// Statistics over time (a run with an interval): per interval, the change of every
    /// integer statistic (counts, cycles, bytes; a level that fell, such as free memory, has
    /// a negative change, as a float). Ratios are left to the reader, who has their
    /// numerators and denominators.
    pub series: Vec<Stats>,
}

impl Stats {
    pub fn int(&mut self, name: impl Into<String>, v: u64) {
        self.entries.push((name.into(), StatValue::Int(v)));
    }

    /// A float statistic; anything not finite is stored as NaN, "undefined" (`null` in JSON
    /// and Parquet), never as a number a reader could take for a measurement.
    pub fn float(&mut self, name: impl Into<String>, v: f64) {
        self.entries.push((name.into(), StatValue::Float(if v.is_finite() { v } else { f64::NAN })));
    }

    /// `num / den`, or NaN (undefined) when `den` is 0: a miss rate of a cache nobody
    /// accessed is no rate at all, and 0 would read as "never misses".
    pub fn ratio(&mut self, name: impl Into<String>, num: u64, den: u64) {
        self.float(name, if den == 0 { f64::NAN } else { num as f64 / den as f64 });
    }

    /// The statistic called `name` (or an old name of it, see [`crate::glossary::RENAMED`]).
    pub fn get(&self, name: &str) -> Option<StatValue> {
        let name = crate::glossary::canonical(name);
        self.entries.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    /// The change of every integer statistic since `earlier` (absent there: since 0).
    pub fn since(&self, earlier: &Stats) -> Stats {
        let entries = self
            .entries
            .iter()
            .filter_map(|(name, v)| match v {
                StatValue::Int(now) => {
                    let then = match earlier.get(name) {
                        Some(StatValue::Int(t)) => t,
                        _ => 0,
                    };
                    // (A level such as free memory may fall: its change is then negative.)
                    let change = if *now >= then { StatValue::Int(now - then) } else { StatValue::Float(-((then - now) as f64)) };
                    Some((name.clone(), change))
                }
                StatValue::Float(_) => None,
            })
            .collect();
        Stats { entries, series: Vec::new() }
    }

    /// Value as f64; panics if absent (for tests).
    pub fn f(&self, name: &str) -> f64 {
        self.get(name).unwrap_or_else(|| panic!("no statistic named {name}")).as_f64()
    }
}

/// The prefix of an integer an emitter's integer phase hands to its derived phase without
/// reporting it (a per-core share of a machine-wide float, say): subtracted as a counter, then
/// dropped from the report.
pub(crate) const HIDDEN: &str = "~";

/// The integer statistics of a report by name, for the derived phase of the emitters: each
/// float is computed from the integers after the warm-up snapshot was subtracted, so that a
/// ratio is one of the measured part of the run. Built once per report.
pub struct Ints<'a>(std::collections::HashMap<&'a str, u64>);

impl<'a> Ints<'a> {
    pub fn new(s: &'a Stats) -> Ints<'a> {
        Ints(s.entries.iter().filter_map(|(n, v)| if let StatValue::Int(i) = v { Some((n.as_str(), *i)) } else { None }).collect())
    }

    /// The integer statistic `name`; a derived value asks only for what its integer phase
    /// emitted, so a missing one is a bug of the emitter.
    pub fn get(&self, name: &str) -> u64 {
        *self.0.get(name).unwrap_or_else(|| panic!("derived from {name}, which the integer phase did not emit"))
    }
}

/// The counters of a machine at the end of warm-up: every report subtracts them, so that the
/// statistics cover the measured part of the run while no structure resets anything. Levels
/// (the glossary's [`crate::glossary::Kind::Level`]: a state, or a total since a structure was
/// created) are not kept: they are reported as they are.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    counters: std::collections::HashMap<String, u64>,
}

impl Snapshot {
    /// The counters among the integer statistics `ints` (a report's integer phase), as
    /// `is_counter` (the glossary) tells them from levels.
    pub(crate) fn of(ints: &Stats, is_counter: impl Fn(&str) -> bool) -> Snapshot {
        let counters = ints.entries.iter().filter_map(|(n, v)| match v {
            StatValue::Int(i) if is_counter(n) => Some((n.clone(), *i)),
            _ => None,
        });
        Snapshot { counters: counters.collect() }
    }

    /// Subtract the snapshot from the counters of `s` (the integer phase of a later report).
    pub(crate) fn subtract(&self, s: &mut Stats) {
        for (name, v) in &mut s.entries {
            if let (StatValue::Int(now), Some(then)) = (v, self.counters.get(name.as_str())) {
                debug_assert!(*now >= *then, "{name} fell since warm-up: a level, not a counter");
                *now = now.saturating_sub(*then);
            }
        }
    }
}

/// Buckets of the walk-latency histogram: `walk_cycles.hist.lt<N>` counts walks shorter
/// than N cycles (and at least the previous bound); the last bucket is open-ended.
pub const WALK_HIST_BOUNDS: [u64; 9] = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096];

/// Declares a struct of u64 counters with their statistic names and their glossary entries.
///
/// `pub struct Name under "PREFIX" { field: "name" => (Section, Kind, "unit", "doc"), ... }`:
/// `emit(prefix, ..)` reports each field as `{prefix}name`, and `Name::STATS` holds a
/// [`crate::glossary::Entry`] per documented field, its pattern `PREFIX` + `name` (PREFIX is
/// the pattern of the prefixes `emit` is given, such as `[core<N>.]`). A family of fields
/// shares one entry: its first field names the family's pattern (`"pwc.l5.hits" as
/// "pwc.<level>.hits" => ...`) and the others carry no entry. `.only("...")` after the
/// entry says which configurations emit it. The doc is also the field's documentation.
macro_rules! counters {
    (@pattern $stat:literal) => { $stat };
    (@pattern $stat:literal $pattern:literal) => { $pattern };
    ($(#[$m:meta])* pub struct $name:ident under $prefix:literal {
        $( $(#[$fm:meta])* $field:ident : $stat:literal
            $( $(as $pattern:literal)? => ($section:ident, $kind:ident, $unit:literal, $doc:literal) $(.only($only:literal))? )?, )*
    }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name { $( $(#[$fm])* $(#[doc = $doc])? pub $field: u64, )* }
        impl $name {
            pub fn add(&mut self, o: &$name) { $( self.$field += o.$field; )* }
            pub fn emit(&self, prefix: &str, out: &mut $crate::stats::Stats) { $( out.int(format!("{prefix}{}", $stat), self.$field); )* }
            /// The glossary's entries of these counters.
            pub const STATS: &'static [$crate::glossary::Entry] = &[$($(
                $crate::glossary::e(
                    $crate::glossary::Section::$section,
                    concat!($prefix, $crate::stats::counters!(@pattern $stat $($pattern)?)),
                    $crate::glossary::Kind::$kind,
                    $unit,
                    $doc,
                )$(.only($only))?,
            )?)*];
        }
    };
}
pub(crate) use counters;

counters! {
    /// Per-core event counts.
    pub struct CoreCounters under "[core<N>.]" {
        refs: "refs" => (Core, Counter, "references",
            "Memory references simulated (loads + stores + fetches + prefetches), counted by the translation side once a reference is translated."),
        loads: "loads" => (Core, Counter, "references", "References that are loads."),
        stores: "stores" => (Core, Counter, "references", "References that are stores."),
        fetches: "fetches" => (Core, Counter, "references", "References that are instruction fetches (they use the L1 ITLB and the L1I)."),
        prefetches: "prefetches" => (Core, Counter, "references",
            "References that are software prefetches (`prefetcht0`: loads into the L1D that retire once translated and their fills have an MSHR; PT-Baker's `ptbaker.mode=user-prefetch`), those dropped not included."),
        prefetches_dropped: "prefetches.dropped" => (Core, Counter, "references",
            "Software prefetches dropped without touching memory (not in `refs` or `prefetches`): they missed the TLBs where prefetches start no walks (`tlb.prefetch_walks=false`), or their page is not mapped (a prefetch never faults)."),
        dirty_walks: "tlb.dirty_walks" => (Tlbs, Counter, "walks",
            "Walks started only to set a page's dirty bit: a store whose first TLB entry found (L1, or L2 after an L1 miss) was clean. Not in `walks`."),
        walks: "walks" => (Walks, Counter, "walks",
            "Page walks caused by TLB misses: one per translation that missed every TLB level (and an L3 TLB, if any). Walks that only set a dirty bit are `tlb.dirty_walks` and walks again after a page fault are `walks.retries`, apart. In a VM a 2D walk counts once; its host walks are `host_walks`."),
        walk_retries: "walks.retries" => (Walks, Counter, "walks",
            "Walks run again after the walk before them faulted and the OS mapped the page (or, in a VM, after an EPT violation): each fault's retry."),
        walk_steps: "walk_steps" => (Walks, Counter, "PTE reads",
            "Page-table entries read by walks (after the page-walk caches), counted by the memory side as they are read. In a VM, guest and host entries (`walk_steps.guest` + `walk_steps.host`)."),
        miss_walk_steps: "walk_steps.miss" => (Walks, Counter, "PTE reads",
            "The part of `walk_steps` read by TLB-miss walks (`walks`): not by dirty-bit walks or retries after faults. Counted by the translation side."),
        walk_cycles: "walk_cycles" => (Walks, Counter, "cycles",
            "Latency of walks, counted by the memory side: page-walk-cache (and nested-TLB) probe latencies plus each entry read's latency, in order. One translation's walk includes its retries after faults but excludes the fault handler's cycles (`fault_cycles`) and the wait for a free walker (`walker_wait_cycles`)."),
        walker_wait_cycles: "walker_wait_cycles" => (Walks, Counter, "cycles",
            "Cycles walks waited for a free page walker (`core.walkers` in flight per core), counted by the memory side; not part of `walk_cycles`."),
        translation_cycles: "translation_cycles" => (Core, Counter, "cycles",
            "Summed over references: cycles from a reference's issue to its translation being known: the L2 TLB latency after an L1 TLB miss, waiting for a walker, the walk, fault handling (with `tlb.perfect=true`, only the OS's fault work). An L1 TLB hit adds 0. Counted by the memory side."),
        walk_merges: "inflight.walk_merges" => (Core, Counter, "references",
            "References that found their translation in a TLB while the walk that put it there was still in flight, and waited for that walk (a TLB-miss merge; matched by 4 KB physical page). With `core.inflight=false`, 0."),
        walk_merge_cycles: "inflight.walk_merge_cycles" => (Core, Counter, "cycles",
            "Cycles those references waited for the walk in flight (part of `translation_cycles`)."),
        fill_merges: "inflight.fill_merges" => (Core, Counter, "accesses",
            "Data accesses and page-walk reads whose line was still on its way to the core from an earlier miss: they wait for that fill instead of hitting at once or missing again (an MSHR merge). With `core.inflight=false`, 0."),
        fill_merge_cycles: "inflight.fill_merge_cycles" => (Core, Counter, "cycles",
            "Cycles those accesses waited beyond the latency of the level that served them."),
        early_walks: "inflight.early_walks" => (Core, Counter, "walks",
            "Walks of references that waited for a producer (a pointer chase) which a younger reference to the same 4 KB page, not waiting for it, started first: the walk starts when that one would have issued and the dependent reference merges into it (`core.lookahead` references ahead). With `core.lookahead=0` or `core.inflight=false`, 0."),
        early_walk_cycles: "inflight.early_walk_cycles" => (Core, Counter, "cycles",
            "Summed over those walks: how much sooner they asked for a walker than the dependent reference would have."),
        early_fills: "inflight.early_fills" => (Core, Counter, "accesses",
            "Data accesses of references that waited for a producer whose line a younger reference, not waiting for it, asked the caches for first (as `inflight.early_walks`, for the line)."),
        early_fill_cycles: "inflight.early_fill_cycles" => (Core, Counter, "cycles", "Summed over those accesses: how much sooner the line was asked for."),
        pwc_l5_hits: "pwc.l5.hits" as "pwc.<level>.hits" => (Pwcs, Counter, "lookups",
            "Walks whose probe of this page-walk-cache level matched (a walk probes every level; `l4` caches L4 entries, tagged by the virtual address above bit 39, `l3` L3 entries, above bit 30, `l2` L2 entries, above bit 21, `l5` L5 entries, above bit 48; with `pt.format=fpt` or `fpt-l4l3`, `l3` is the table of the flattened root's entries, `pwc.flat.entries`, and with `fpt5` `l4` is). 0 when the level has no entries (`l5`: except with `pt.format=radix5` and `pwc.l5.entries` > 0)."),
        pwc_l5_misses: "pwc.l5.misses" as "pwc.<level>.misses" => (Pwcs, Counter, "lookups",
            "Walks whose probe of this level missed. For a level that has entries, hits + misses = `walks` + `tlb.dirty_walks` + `walks.retries` (every walk probes)."),
        pwc_l4_hits: "pwc.l4.hits",
        pwc_l4_misses: "pwc.l4.misses",
        pwc_l3_hits: "pwc.l3.hits",
        pwc_l3_misses: "pwc.l3.misses",
        pwc_l2_hits: "pwc.l2.hits",
        pwc_l2_misses: "pwc.l2.misses",
        pte_l1: "pte_served.l1" as "pte_served.<where>" => (Served, Counter, "PTE reads",
            "Page-table-entry reads by walks served at that level. Reads enter at `walker.port` (`l1d`: the L1D; `l2`: the L2, so `pte_served.l1` stays 0). In a VM, guest and host reads (see `pte_served.<side>.*`)."),
        pte_l2: "pte_served.l2",
        pte_llc: "pte_served.llc",
        pte_dram: "pte_served.dram",
        data_l1: "data_served.l1" as "data_served.<where>" => (Served, Counter, "accesses",
            "The references' data accesses (one per reference, after its translation) served at that level: loads and stores enter at the L1D, fetches at the L1I."),
        data_l2: "data_served.l2",
        data_llc: "data_served.llc",
        data_dram: "data_served.dram",
        faults: "faults" => (Os, Counter, "faults",
            "Page faults taken by the core's references: a walk (or, with `tlb.perfect=true`, the functional lookup) found a not-present entry and the OS mapped the page. In a VM, the guests' faults (EPT violations are `ept_violations`)."),
        fault_cycles: "fault_cycles" => (Os, Counter, "cycles",
            "Cycles of fault handling charged to the faulting core: `os.fault_cycles` per fault (`virt.ept_fault_cycles` per EPT violation, so `ept_fault_cycles` is included) plus the OS work it caused (zeroing a huge page, compaction) and its share of the shootdowns it issued. The core's younger instructions wait for it."),
        ptp_epochs: "ptp.epochs" => (Mechanisms, Counter, "epochs",
            "Epochs of the PTP phase detector that ended on the core (every `ptp.detector_epoch` instructions; `ptp.mode=detector` with a cache whose policy is `ptp`, else 0)."),
        ptp_active_epochs: "ptp.active_epochs" => (Mechanisms, Counter, "epochs",
            "Of those, epochs whose L2 TLB MPKI reached `ptp.detector_mpki`: the core was in a TLB-miss phase and the `ptp` caches protected its page-table lines."),
        hist_0: "walk_cycles.hist.lt16" as "walk_cycles.hist.<bucket>" => (Walks, Counter, "translations",
            "Histogram of walk latency: translations that walked whose walk took `walk_cycles` in the bucket. One count per translation (its retries after a fault fold into it), so the buckets add up to `walks` + `tlb.dirty_walks`."),
        hist_1: "walk_cycles.hist.lt32",
        hist_2: "walk_cycles.hist.lt64",
        hist_3: "walk_cycles.hist.lt128",
        hist_4: "walk_cycles.hist.lt256",
        hist_5: "walk_cycles.hist.lt512",
        hist_6: "walk_cycles.hist.lt1024",
        hist_7: "walk_cycles.hist.lt2048",
        hist_8: "walk_cycles.hist.lt4096",
        hist_9: "walk_cycles.hist.ge4096",
    }
}

counters! {
    /// Per-core events of ECH walks (statistics `ech.*`, with `ech.enabled`).
    pub struct EchCounters under "ech." {
        pmd_cwc_hits: "pmd_cwc.hits" as "<cwc>.hits" => (Mechanisms, Counter, "lookups",
            "ECH: walks whose probe of the cuckoo walk cache of 2 MB regions (`pmd_cwc`) or 1 GB regions (`pud_cwc`) found the region.")
            .only("`ech.enabled=true`"),
        pmd_cwc_misses: "pmd_cwc.misses" as "<cwc>.misses" => (Mechanisms, Counter, "lookups",
            "ECH: walks whose probe of that cuckoo walk cache missed.").only("`ech.enabled=true`"),
        pud_cwc_hits: "pud_cwc.hits",
        pud_cwc_misses: "pud_cwc.misses",
        cwt_reads: "cwt_reads" => (Mechanisms, Counter, "lines",
            "ECH: lines of the cuckoo walk tables walks read to fill a cuckoo walk cache that missed (one per way; in parallel with the table reads, not waited for). Also walk steps.")
            .only("`ech.enabled=true`"),
        table_reads: "table_reads" => (Mechanisms, Counter, "lines",
            "ECH: lines of the hashed page tables walks read (one per way of each page size the cuckoo walk caches left possible, one where they named the way). Each is a walk step, issued in parallel with the walk's other reads.")
            .only("`ech.enabled=true`"),
        stale_cwc: "stale_cwc" => (Mechanisms, Counter, "walks",
            "ECH: walks whose cuckoo walk cache entry no longer matched the tables (a page size appeared in the region, or the cuckoo moved the entry): the region's entries are dropped and every way of the right size read.")
            .only("`ech.enabled=true`"),
    }
}

counters! {
    /// Per-core events of 2D (nested) walks and VMs; emitted only with virt.enabled.
    pub struct VirtCounters under "[core<N>.]" {
        guest_steps: "walk_steps.guest" as "walk_steps.<side>" => (Vms, Counter, "PTE reads",
            "`walk_steps` split by table: guest entries, and host (EPT) entries read by host walks.").only("`virt.enabled=true`"),
        host_steps: "walk_steps.host",
        miss_guest_steps: "walk_steps.miss.guest" as "walk_steps.miss.<side>" => (Vms, Counter, "PTE reads",
            "The part of `walk_steps.<side>` read by TLB-miss walks (`walk_steps.miss` split by table).").only("`virt.enabled=true`"),
        miss_host_steps: "walk_steps.miss.host",
        pte_guest_l1: "pte_served.guest.l1" as "pte_served.<side>.<where>" => (Vms, Counter, "PTE reads",
            "`pte_served.<where>` split by table.").only("`virt.enabled=true`"),
        pte_guest_l2: "pte_served.guest.l2",
        pte_guest_llc: "pte_served.guest.llc",
        pte_guest_dram: "pte_served.guest.dram",
        pte_host_l1: "pte_served.host.l1",
        pte_host_l2: "pte_served.host.l2",
        pte_host_llc: "pte_served.host.llc",
        pte_host_dram: "pte_served.host.dram",
        nested_tlb_hits: "tlb.nested.hits" => (Vms, Counter, "lookups",
            "Nested TLB lookups (a guest entry's gPA, and the final data gPA with `virt.nested_tlb_data`) that found a usable gPA -> hPA translation.")
            .only("`virt.enabled=true`"),
        nested_tlb_misses: "tlb.nested.misses" => (Vms, Counter, "lookups",
            "Nested TLB lookups that did not: no entry, or a clean one for the final address of a store. Each leads to a host walk.")
            .only("`virt.enabled=true`"),
        host_walks: "host_walks" => (Vms, Counter, "walks",
            "Walks of the host (EPT) table within 2D walks: one per guest-physical address the nested TLB did not translate (guest entries and the final data address).")
            .only("`virt.enabled=true`"),
        vpwc_l5_hits: "virt.host_pwc.l5.hits" as "virt.host_pwc.<level>.hits" => (Vms, Counter, "lookups",
            "Host walks whose probe of the host page-walk cache (vPWC, tagged by gPA prefixes; `virt.host_pwc.*`) matched at that level; as `pwc.<level>.hits`.")
            .only("`virt.enabled=true`"),
        vpwc_l5_misses: "virt.host_pwc.l5.misses" as "virt.host_pwc.<level>.misses" => (Vms, Counter, "lookups",
            "Host walks whose vPWC probe at that level missed; for a level that has entries, hits + misses = `host_walks`.").only("`virt.enabled=true`"),
        vpwc_l4_hits: "virt.host_pwc.l4.hits",
        vpwc_l4_misses: "virt.host_pwc.l4.misses",
        vpwc_l3_hits: "virt.host_pwc.l3.hits",
        vpwc_l3_misses: "virt.host_pwc.l3.misses",
        vpwc_l2_hits: "virt.host_pwc.l2.hits",
        vpwc_l2_misses: "virt.host_pwc.l2.misses",
        ept_violations: "ept_violations" => (Vms, Counter, "faults",
            "EPT violations: a 2D walk needed a guest-physical page (of a guest table node or of data) the host had not mapped yet, and the host mapped it.")
            .only("`virt.enabled=true`"),
        ept_fault_cycles: "ept_fault_cycles" => (Vms, Counter, "cycles",
            "Cycles of EPT-violation handling (`virt.ept_fault_cycles` each, plus the host's work and shootdowns they caused); part of `fault_cycles`.")
            .only("`virt.enabled=true`"),
        vm_switches: "vm_switches" => (Vms, Counter, "switches",
            "Switches of the core to another VM (`virt.vms` > 1, or a mix whose programs share cores; every `virt.switch_interval_cycles`).")
            .only("`virt.enabled=true`"),
        vcpu_switches: "vcpu_switches" => (Vms, Counter, "switches",
            "Switches of the core to another vCPU of the VM (vCPU overcommit, `virt.vcpus_per_core` > 1: every `virt.vcpu_slice_cycles`, or when a vCPU's stream ends).")
            .only("`virt.enabled=true`"),
    }
}

impl CoreCounters {
    #[inline]
    /// Walks whose cycles were recorded (the histogram's total).
    pub fn timed_walks(&self) -> u64 {
        [self.hist_0, self.hist_1, self.hist_2, self.hist_3, self.hist_4, self.hist_5, self.hist_6, self.hist_7, self.hist_8, self.hist_9].iter().sum()
    }

    pub fn record_walk_cycles(&mut self, c: u64) {
        self.walk_cycles += c;
        // (A match: indexing an array of ten field references builds the array per call.)
        match WALK_HIST_BOUNDS.iter().position(|&lim| c < lim).unwrap_or(WALK_HIST_BOUNDS.len()) {
            0 => self.hist_0 += 1,
            1 => self.hist_1 += 1,
            2 => self.hist_2 += 1,
            3 => self.hist_3 += 1,
            4 => self.hist_4 += 1,
            5 => self.hist_5 += 1,
            6 => self.hist_6 += 1,
            7 => self.hist_7 += 1,
            8 => self.hist_8 += 1,
            _ => self.hist_9 += 1,
        }
    }
}

/// The integer statistics of 2D walks beside [`VirtCounters`] (under `p`).
pub(crate) fn emit_virt(s: &mut Stats, p: &str, v: &VirtCounters) {
    v.emit(p, s);
    s.int(format!("{p}tlb.nested.accesses"), v.nested_tlb_hits + v.nested_tlb_misses);
}

/// Ratios of 2D walks (under `p`), from the integers of [`emit_virt`] and the core's.
pub(crate) fn derived_virt(i: &Ints, s: &mut Stats, p: &str) {
    let walks = i.get(&format!("{p}walks"));
    s.ratio(format!("{p}walk_steps_per_walk.guest"), i.get(&format!("{p}walk_steps.miss.guest")), walks);
    s.ratio(format!("{p}walk_steps_per_walk.host"), i.get(&format!("{p}walk_steps.miss.host")), walks);
    s.ratio(format!("{p}tlb.nested.hit_rate"), i.get(&format!("{p}tlb.nested.hits")), i.get(&format!("{p}tlb.nested.accesses")));
    s.ratio(format!("{p}walk_steps_per_host_walk"), i.get(&format!("{p}walk_steps.host")), i.get(&format!("{p}host_walks")));
}

/// The glossary's entries of what [`emit_virt`] and [`derived_virt`] emit.
pub(crate) const DERIVED_VIRT_STATS: &[crate::glossary::Entry] = {
    use crate::glossary::{e, Kind::*, Section::*};
    &[
        e(
            Vms,
            "[core<N>.]walk_steps_per_walk.<side>",
            Ratio,
            "reads/walk",
            "`walk_steps.miss.<side>` / `walks`: guest or host entries a TLB miss's 2D walk reads.",
        )
        .only("`virt.enabled=true`"),
        e(Vms, "[core<N>.]tlb.nested.accesses", Counter, "lookups", "`tlb.nested.hits` + `tlb.nested.misses` (0 with `tlb.nested.entries=0`).")
            .only("`virt.enabled=true`"),
        e(Vms, "[core<N>.]tlb.nested.hit_rate", Ratio, "fraction", "`tlb.nested.hits` / `tlb.nested.accesses`.").only("`virt.enabled=true`"),
        e(Vms, "[core<N>.]walk_steps_per_host_walk", Ratio, "reads/walk", "`walk_steps.host` / `host_walks`.").only("`virt.enabled=true`"),
    ]
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_by_bound() {
        let mut c = CoreCounters::default();
        for cyc in [0, 15, 16, 100, 5000] {
            c.record_walk_cycles(cyc);
        }
        assert_eq!((c.hist_0, c.hist_1, c.hist_3, c.hist_9), (2, 1, 1, 1));
        assert_eq!(c.walk_cycles, 5131);
        let mut s = Stats::default();
        c.emit("core0.", &mut s);
        assert_eq!(s.f("core0.walk_cycles.hist.lt16"), 2.0);
    }
}
