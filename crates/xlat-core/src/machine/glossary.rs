//! Every statistic the engine reports: the components' glossary tables gathered (see
//! [`crate::glossary`] for what an entry says), looked up by name, and written out as
//! `docs/statistics.md` ([`markdown`]; regenerate with
//! `cargo run --release -p xlat-core --example glossary > docs/statistics.md`).
//! `tests/glossary.rs` fails when the document is stale, when a run emits a name no entry
//! matches, or when an entry matches nothing any run emits.

use crate::glossary::{canonical, Entry, Section, INTRO, PLACEHOLDERS, RENAMED, SUMMARY};
use std::sync::LazyLock;

/// Every statistic the engine reports, gathered from the tables of the components that emit
/// them: sections in [`Section::ALL`] order, and within a section in the order of the tables
/// below, each table in its own order.
static ENTRIES: LazyLock<Vec<Entry>> = LazyLock::new(|| {
    use crate::machine::stats as machine;
    use crate::memory::hierarchy::{AsapCounters, PrefetchWalkCounters, TlbLineCounters};
    use crate::stats::{CoreCounters, EchCounters, VirtCounters};
    let tables: &[&[Entry]] = &[
        machine::STATS,
        CoreCounters::STATS,
        crate::translate::mmu::STATS,
        machine::CONTEXT_STATS,
        crate::memory::cache::STATS,
        machine::CACHE_STATS,
        crate::os::kernel::STATS,
        machine::PROGRAM_STATS,
        crate::translate::check::STATS,
        VirtCounters::STATS,
        crate::stats::DERIVED_VIRT_STATS,
        machine::VIRT_STATS,
    ];
    let after_mechanisms: &[&[Entry]] = &[
        PrefetchWalkCounters::STATS,
        TlbLineCounters::STATS,
        machine::TLB_LINE_STATS,
        AsapCounters::STATS,
        EchCounters::STATS,
        machine::ECH_STATS,
        machine::CSALT_STATS,
    ];
    let mut all: Vec<Entry> = tables.iter().copied().flatten().chain(crate::mech::stats()).chain(after_mechanisms.iter().copied().flatten()).copied().collect();
    // (Stable: each section keeps the order above.)
    all.sort_by_key(|e| e.section);
    all
});

/// Every entry of the glossary.
pub fn entries() -> &'static [Entry] {
    &ENTRIES
}

/// The entry whose pattern matches `name` (a concrete statistic name such as
/// `core1.cache.llc.pt.misses`, or an old name of one), if any.
pub fn lookup(name: &str) -> Option<&'static Entry> {
    let name = canonical(name);
    entries().iter().find(|e| e.matches(&name))
}

/// Whether the integer statistic `name` is a counter (not a level). A hidden integer (see
/// [`crate::stats::HIDDEN`]) is; a name the glossary does not know is taken for one, so that warm-up counts
/// cannot leak (`tests/glossary.rs` fails on such a name anyway). The answers are kept: the
/// glossary's lookup scans every entry, and a sampled run takes a snapshot per unit.
pub(crate) fn is_counter(name: &str) -> bool {
    use std::sync::{LazyLock, Mutex};
    static KNOWN: LazyLock<Mutex<std::collections::HashMap<String, bool>>> = LazyLock::new(Default::default);
    if name.starts_with(crate::stats::HIDDEN) {
        return true;
    }
    let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&c) = known.get(name) {
        return c;
    }
    let c = lookup(name).is_none_or(|e| e.kind == crate::glossary::Kind::Counter);
    known.insert(name.to_string(), c);
    c
}

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
    s.push_str(&format!("## All statistics ({} entries)\n", entries().len()));
    for sec in Section::ALL {
        s.push_str(&format!("\n### {}\n\n{}\n\n", sec.title(), sec.intro()));
        s.push_str("| statistic | kind | unit | meaning |\n|---|---|---|---|\n");
        for e in entries().iter().filter(|e| e.section == sec) {
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
    /// unambiguous), and every entry says what it counts.
    #[test]
    fn entries_are_unambiguous() {
        for e in entries() {
            for name in e.expand() {
                let hits: Vec<_> = entries().iter().filter(|x| x.matches(&name)).map(|x| x.pattern).collect();
                assert_eq!(hits, vec![e.pattern], "{name}");
            }
            assert!(!e.doc.is_empty() && !e.unit.is_empty(), "{}", e.pattern);
        }
    }
}
