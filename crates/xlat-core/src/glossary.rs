//! The statistics glossary's vocabulary: what an entry says of a statistic ([`Entry`]: its
//! name pattern, [`Section`], [`Kind`], unit and doc), the [`PLACEHOLDERS`] of name patterns,
//! and the old names still accepted ([`RENAMED`]). Each statistic is described once, where it
//! is declared: a `counters!` struct carries each field's entry (its `STATS`, see
//! [`crate::stats`]), and a module that emits statistics by hand keeps a `STATS` table of
//! [`Entry`]s beside the function that emits them (`emit_tlbs` in `translate/mmu.rs`,
//! `emit_cache`, `emit_os`, each mechanism's file in `mech/`), so that a change to what is
//! emitted and to what it means is one change in one place. A floor: it imports nothing of
//! the model, so every component can describe its statistics with it. The machine gathers the
//! tables ([`crate::machine::glossary`]: every entry, lookup by name, `docs/statistics.md`).
//!
//! A name pattern is the statistic's name with placeholders (`<cache>`, see [`PLACEHOLDERS`])
//! and at most one optional prefix in brackets: `[core<N>.]` for statistics that multi-core
//! runs also report per core, `[host.]` for those a virtualized run also reports for the
//! hypervisor.

/// How a statistic's value is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An integer that accumulates (events, or an amount: cycles, bytes): reported for the
    /// measured part of the run, its value minus its value at the end of warm-up.
    Counter,
    /// An integer that is a state (free memory, entries held, nodes built), or a total kept
    /// since its structure was created: reported as it is at the end of the run.
    Level,
    /// A quotient of two counters; undefined (NaN) when the denominator is 0.
    Ratio,
    /// Another number: a normalized rate, an energy.
    Float,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Level => "level",
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
            Section::Os => "The simulated OS: faults, page-size changes, shootdowns and its memory. Counters cover the measured part of the run (the OS's restart after prefaulting, and their values at the end of warm-up are subtracted); levels (sizes, free memory) are the state at the end of the run, or at its start for `phys.start.*`. In a VM the bare names are the guests' (summed over VMs) and `host.` the hypervisor's.",
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

/// An entry of `section` for the statistics `pattern` names, emitted by every run.
pub(crate) const fn e(section: Section, pattern: &'static str, kind: Kind, unit: &'static str, doc: &'static str) -> Entry {
    Entry { pattern, section, kind, unit, doc, only: "" }
}

impl Entry {
    /// The same entry, emitted only by the configurations `only` describes.
    pub(crate) const fn only(self, only: &'static str) -> Entry {
        Entry { only, ..self }
    }
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
pub(crate) const INTRO: &str = r#"# Statistics

<!-- Generated from the engine's declarations (crates/xlat-core/src/machine/glossary.rs gathers them): do not edit. Regenerate with
     cargo run --release -p xlat-core --example glossary > docs/statistics.md -->

Every run reports a flat table of statistics with hierarchical dotted names. `xlat run` prints a
summary (below); `xlat run --all-stats` prints every statistic, `--json PATH` writes them all
(`stats`), `xlat.simulate(...).stats` holds them in Python, and a sweep stores each as a
`stat.<name>` column. `xlat stats NAME...` prints what statistics mean (`xlat stats` alone, this
whole glossary). Names are a contract with every study and report: new statistics are added,
existing ones are not renamed.

This page is generated from the engine's declarations of its statistics (each described where
the code that emits it declares it, gathered by `crates/xlat-core/src/machine/glossary.rs`); a test
fails when a run reports a statistic no declaration describes, or when this page is out of date.

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

Kinds: a *counter* or a *level* is an integer; a *ratio* is the quotient of two counters, undefined when the
denominator is 0 (NaN in Python, `null` in JSON and Parquet, `-` in tables: a cache nobody
accessed has no miss rate, and 0 would read as "never misses"); a *float* is another number (a rate per kilo-instruction, an energy).
Integers are counters or levels. A *counter* covers the measured part of the run: its value at the
end of warm-up (`--warmup`) is subtracted (the OS's also restart after prefaulting), and the ratios
and floats are computed from the counters so subtracted. A *level* is a state (page-table sizes,
mapped and free memory, entries held) or a total since its structure was created, reported as it
is at the end of the run (at its start for `phys.start.*`).

Placeholders in the names below:

"#;

/// The part of `docs/statistics.md` between the placeholders and the glossary's sections.
pub(crate) const SUMMARY: &str = r#"## The summary of `xlat run`

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

#[cfg(test)]
mod tests {
    use super::*;

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
