//! Machine configuration: one flat table of dotted keys, each with a type, a default and a
//! doc line. Presets (TOML in `configs/`) and `--set key=value` both land here, so unknown
//! keys and impossible values are caught in one place, with the key's name in the error.

use std::fmt;
use thiserror::Error;

pub use crate::memory::repl::Policy;
pub use crate::os::frag::Fragmentation;
pub use crate::os::phys::FrameOrder;
pub use crate::param::*;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
// What the user typed (a key, a value) is shown with control characters escaped, so that the
// message stays one line whatever was typed.
pub enum ConfigError {
    #[error("unknown config key '{}'{hint}", key.escape_debug())]
    UnknownKey { key: String, hint: String },
    #[error("config key '{}': '{}' is not {expected}", key.escape_debug(), value.escape_debug())]
    BadValue { key: String, value: String, expected: String },
    #[error("config key '{}': {why}", key.escape_debug())]
    Invalid { key: String, why: String },
}

/// One key of a component: its name below the component's mount point, its doc (`{}` stands
/// for the mounted structure's name), its upper bound if numeric, and what it accepts.
pub struct ComponentKey {
    pub suffix: &'static str,
    pub doc: &'static str,
    pub limit: Option<Limit>,
    pub expected: fn() -> String,
}

/// Declares a component's parameters once: a struct whose fields are keys below wherever the
/// configuration mounts it (`cache.l2` + `size_kb` is `cache.l2.size_kb`).
macro_rules! component {
    ($(#[$m:meta])* $name:ident { $( $field:ident : $ty:ty ; $suffix:literal ; $limit:expr ; $doc:literal ; )* }) => {
        $(#[$m])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name { $( pub $field: $ty, )* }

        impl $name {
            /// Its keys, below a mount point.
            pub const KEYS: &'static [ComponentKey] = &[$( ComponentKey { suffix: $suffix, doc: $doc, limit: $limit, expected: <$ty as ConfigValue>::expected } ),*];

            /// Set key `suffix` (of the full key `key`); `None` if it has no such key.
            fn set(&mut self, suffix: &str, key: &str, value: &str) -> Option<Result<(), ConfigError>> {
                match suffix {
                    $( $suffix => Some(match <$ty as ConfigValue>::parse(value) {
                        Some(v) => { self.$field = v; Ok(()) }
                        None => Err(ConfigError::BadValue { key: key.to_string(), value: value.to_string(), expected: <$ty as ConfigValue>::expected() }),
                    }), )*
                    _ => None,
                }
            }

            fn get(&self, suffix: &str) -> Option<String> {
                match suffix { $( $suffix => Some(self.$field.show()), )* _ => None }
            }
        }
    };
}

/// Declares the configuration: one line per key, then the components mounted at a prefix.
macro_rules! config {
    (
        $( $field:ident : $ty:ty = $default:expr ; $key:literal ; $doc:literal ; )*
        @mounts {
            $( $mfield:ident : $mty:ident = $mdefault:expr ; $prefix:literal ; $name:literal ; )*
        }
    ) => {
        /// Every knob of a simulated machine. Field `a_b_c` is config key `a.b.c`; a
        /// component's field `a_b.c` is key `a.b.c`.
        #[derive(Clone, Debug, PartialEq)]
        pub struct Config { $( pub $field: $ty, )* $( pub $mfield: $mty, )* }

        impl Default for Config {
            fn default() -> Self { Config { $( $field: $default, )* $( $mfield: $mdefault, )* } }
        }

        /// Documentation of one config key.
        #[derive(Clone, Debug)]
        pub struct KeyInfo {
            pub key: &'static str,
            pub default: String,
            pub doc: &'static str,
            pub expected: String,
            /// The largest value accepted, for numeric keys (see [`LIMITS`]).
            pub max: Option<String>,
        }

        /// The components' mount points: (prefix, the structure's name in docs, its keys).
        const MOUNTS: &[(&str, &str, &[ComponentKey])] = &[$( ($prefix, $name, $mty::KEYS) ),*];

        /// Every key with its doc, expected values and bound, in the order `xlat config show`
        /// prints them: declaration order, each component's keys after the last key of its
        /// section declared before it.
        fn key_table() -> &'static [(&'static str, &'static str, String, Option<Limit>)] {
            static TABLE: std::sync::LazyLock<Vec<(&'static str, &'static str, String, Option<Limit>)>> = std::sync::LazyLock::new(|| {
                let mut t: Vec<(&'static str, &'static str, String, Option<Limit>)> =
                    vec![$( ($key, $doc, <$ty as ConfigValue>::expected(), limit($key)), )*];
                for (prefix, name, keys) in MOUNTS {
                    let section = |k: &str| k.split('.').next().unwrap_or("").to_string();
                    let at = t.iter().rposition(|e| section(e.0) == section(prefix)).map_or(t.len(), |i| i + 1);
                    let mounted = keys.iter().map(|c| {
                        let key: &'static str = Box::leak(format!("{prefix}.{}", c.suffix).into_boxed_str());
                        let doc: &'static str = Box::leak(c.doc.replace("{}", name).into_boxed_str());
                        (key, doc, (c.expected)(), c.limit)
                    });
                    t.splice(at..at, mounted.collect::<Vec<_>>());
                }
                t
            });
            &TABLE
        }

        impl Config {
            /// Every key, in `xlat config show` order.
            pub fn keys() -> Vec<&'static str> {
                key_table().iter().map(|e| e.0).collect()
            }

            /// Set one key from its text form.
            pub fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
                match key {
                    $( $key => {
                        self.$field = <$ty as ConfigValue>::parse(value).ok_or_else(|| ConfigError::BadValue {
                            key: key.to_string(), value: value.to_string(), expected: <$ty as ConfigValue>::expected(),
                        })?;
                        Ok(())
                    } )*
                    _ => {
                        $( if let Some(r) = key.strip_prefix(concat!($prefix, ".")).and_then(|s| self.$mfield.set(s, key, value)) {
                            return r;
                        } )*
                        match crate::glossary::canonical(key) {
                            std::borrow::Cow::Owned(one) => self.set(&one, value),
                            _ => Err(unknown_key(key)),
                        }
                    }
                }
            }

            /// The value of one key in text form.
            pub fn get(&self, key: &str) -> Option<String> {
                match key {
                    $( $key => Some(self.$field.show()), )*
                    _ => {
                        $( if let Some(v) = key.strip_prefix(concat!($prefix, ".")).and_then(|s| self.$mfield.get(s)) {
                            return Some(v);
                        } )*
                        match crate::glossary::canonical(key) {
                            std::borrow::Cow::Owned(one) => self.get(&one),
                            _ => None,
                        }
                    }
                }
            }

            /// Every key with its current value, in `xlat config show` order.
            pub fn entries(&self) -> Vec<(&'static str, String)> {
                key_table().iter().map(|e| (e.0, self.get(e.0).unwrap_or_default())).collect()
            }

            pub fn schema() -> Vec<KeyInfo> {
                let d = Config::default();
                key_table()
                    .iter()
                    .map(|(key, doc, expected, lim)| KeyInfo {
                        key, default: d.get(key).unwrap_or_default(), doc, expected: expected.clone(), max: lim.map(|l| l.to_string()),
                    })
                    .collect()
            }
        }
    };
}

/// The largest value of a numeric key.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    Int(u64),
    /// An integer with a lower bound too: (min, max).
    IntRange(u64, u64),
    Real(f64),
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Int(n) | Limit::IntRange(_, n) => write!(f, "{n}"),
            Limit::Real(x) => write!(f, "{x}"),
        }
    }
}

// Why the limits are what they are: sizes and counts stay far above any machine studied and
// far below what would overflow a size computation or exhaust host memory (a cache or TLB is
// allocated whole, and its host arrays are indexed with `usize` arithmetic); a latency or cost
// is charged per event, so with at most 2^32 cycles per event a cycle counter cannot wrap
// before 2^32 such events; intervals and reference counts are added to a running `u64` clock.
const ENTRIES: u64 = 1 << 20;
const WAYS: u64 = 4096;
const PWC: u64 = 4096;
const CACHE_KB: u64 = 1 << 20;
const LATENCY: u64 = 1 << 20;
const COST: u64 = 1 << 32;
const INTERVAL: u64 = 1 << 50;

/// Upper bounds of every numeric key, checked before anything is built (a test checks that
/// every integer and number key has one). `xlat config show` prints them.
pub const LIMITS: &[(&str, Limit)] = &[
    ("system.cores", Limit::Int(256)),
    ("core.freq_ghz", Limit::Real(1000.0)),
    ("core.width", Limit::Int(1024)),
    ("core.rob", Limit::Int(1 << 16)),
    ("core.mshrs", Limit::Int(4096)),
    ("core.store_buffer", Limit::Int(4096)),
    ("system.threads_per_core", Limit::Int(8)),
    ("core.walkers", Limit::Int(4096)),
    ("core.lq", Limit::Int(1 << 16)),
    ("core.lookahead", Limit::Int(256)),
    ("tlb.prefetch_buffer", Limit::Int(4096)),
    ("ptbaker.stride_pages", Limit::Int(1 << 30)),
    ("ptbaker.nops", Limit::Int(u32::MAX as u64 - 1)),
    ("ptbaker.sleep_cycles", Limit::Int(u32::MAX as u64)),
    ("ptbaker.ahead", Limit::Int(1 << 30)),
    ("tlb.l1d.entries", Limit::Int(ENTRIES)),
    ("tlb.l1d.ways", Limit::Int(WAYS)),
    ("tlb.l1d.entries_2m", Limit::Int(ENTRIES)),
    ("tlb.l1d.ways_2m", Limit::Int(WAYS)),
    ("tlb.l1d.entries_1g", Limit::Int(ENTRIES)),
    ("tlb.l1d.ways_1g", Limit::Int(WAYS)),
    ("tlb.l1d.latency", Limit::Int(LATENCY)),
    ("tlb.l1i.entries", Limit::Int(ENTRIES)),
    ("tlb.l1i.ways", Limit::Int(WAYS)),
    ("tlb.l1i.entries_2m", Limit::Int(ENTRIES)),
    ("tlb.l1i.ways_2m", Limit::Int(WAYS)),
    ("tlb.l1i.latency", Limit::Int(LATENCY)),
    ("tlb.l2.entries", Limit::Int(ENTRIES)),
    ("tlb.l2.ways", Limit::Int(WAYS)),
    ("tlb.l2.entries_1g", Limit::Int(ENTRIES)),
    ("tlb.l2.ways_1g", Limit::Int(WAYS)),
    ("tlb.l2.latency", Limit::Int(LATENCY)),
    ("tlb.l2.entries_coalesced", Limit::Int(ENTRIES)),
    ("tlb.l2.ways_coalesced", Limit::Int(WAYS)),
    ("tlb.l2i.entries", Limit::Int(ENTRIES)),
    ("tlb.l2i.ways", Limit::Int(WAYS)),
    ("check.translations", Limit::Int(INTERVAL)),
    ("tlb.pdc.entries", Limit::Int(ENTRIES)),
    ("tlb.pdc.ways", Limit::Int(ENTRIES)),
    ("tlb.nested.entries", Limit::Int(ENTRIES)),
    ("tlb.nested.ways", Limit::Int(WAYS)),
    ("tlb.nested.latency", Limit::Int(LATENCY)),
    ("pwc.latency", Limit::Int(LATENCY)),
    ("cache.l1d.prefetch_degree", Limit::Int(16)),
    ("cache.l2.prefetch_degree", Limit::Int(16)),
    ("cache.llc.ways_per_core", Limit::Int(64)),
    ("ptp.probability", Limit::Real(1.0)),
    ("ptp.detector_mpki", Limit::Real(1e6)),
    ("ptp.detector_epoch", Limit::Int(INTERVAL)),
    ("asap.levels", Limit::IntRange(1, 3)),
    ("ech.ways", Limit::IntRange(1, 8)),
    ("ech.slots", Limit::IntRange(64, 1 << 24)),
    ("ech.load_factor", Limit::Real(1.0)),
    ("ech.growth", Limit::IntRange(2, 16)),
    ("ech.pmd_cwc.entries", Limit::Int(4096)),
    ("ech.pud_cwc.entries", Limit::Int(4096)),
    ("champsim.first_touch_cycles", Limit::Int(1 << 20)),
    ("pcc.entries", Limit::Int(65536)),
    ("pcc.entries_1g", Limit::Int(65536)),
    ("pcc.counter_bits", Limit::IntRange(1, 16)),
    ("pcc.promote_per_read", Limit::Int(1 << 20)),
    ("csalt.epoch", Limit::Int(INTERVAL)),
    ("csalt.atd_sets", Limit::Int(1 << 24)),
    ("pomtlb.size_mb", Limit::Int(1024)),
    ("pomtlb.large_size_mb", Limit::Int(1024)),
    ("pomtlb.ways", Limit::IntRange(1, 4)),
    ("pomtlb.latency", Limit::Int(LATENCY)),
    ("pomtlb.bandwidth_gbps", Limit::Real(1e6)),
    ("pomtlb.base_gb", Limit::Int(1 << 20)),
    ("os.promotion_cap", Limit::Real(1.0)),
    ("hawkeye.window_refs", Limit::Int(INTERVAL)),
    ("os.promotion_interval", Limit::Int(INTERVAL)),
    ("os.promotion_first", Limit::Int(INTERVAL)),
    ("hawkeye.promote_per_interval", Limit::Int(1 << 20)),
    ("dram.latency_ns", Limit::Real(1e6)),
    ("dram.bandwidth_gbps", Limit::Real(1e6)),
    ("dram.banks", Limit::Int(1 << 16)),
    ("loader.trace_region_kb", Limit::Int(1 << 30)),
    ("dram.row_kb", Limit::Int(1 << 10)),
    ("dram.trp_ns", Limit::Real(1e6)),
    ("dram.trefi_ns", Limit::Real(1e9)),
    ("dram.trfc_ns", Limit::Real(1e6)),
    ("dram.write_batch", Limit::Int(1 << 16)),
    ("dram.turnaround_ns", Limit::Real(1e6)),
    ("dram.trcd_ns", Limit::Real(1e6)),
    ("dram.tcas_ns", Limit::Real(1e6)),
    ("dram.energy_nj", Limit::Real(1e6)),
    ("pt.nf_threshold", Limit::Int(512)),
    ("pt.late_flatten", Limit::Int(512)),
    ("pt.recursive_slot", Limit::Int(511)),
    ("os.khugepaged_pages", Limit::Int(1 << 30)),
    ("os.khugepaged_interval_cycles", Limit::Int(INTERVAL)),
    ("os.khugepaged_max_ptes_none", Limit::Int(511)),
    ("os.reservation_promote_at", Limit::Int(512)),
    ("os.readahead_pages", Limit::Int(512)),
    ("os.fault_around_pages", Limit::Int(512)),
    ("os.page_copy_cycles", Limit::Int(COST)),
    ("os.shootdown_initiator_cycles", Limit::Int(COST)),
    ("os.shootdown_remote_cycles", Limit::Int(COST)),
    ("os.shootdown_local_cycles", Limit::Int(COST)),
    ("os.call_cycles", Limit::Int(COST)),
    ("os.flush_ceiling_pages", Limit::Int(1 << 30)),
    ("os.processes", Limit::Int(256)),
    ("os.timeslice_cycles", Limit::Int(INTERVAL)),
    ("os.switch_cycles", Limit::Int(COST)),
    ("os.fault_cycles", Limit::Int(COST)),
    ("phys.size_gb", Limit::Int(4096)),
    ("phys.aged_target", Limit::Real(1.0)),
    ("phys.available_gb", Limit::Real(4096.0)),
    ("phys.pcp_batch", Limit::Int(1 << 20)),
    ("phys.pcp_high", Limit::Int(1 << 20)),
    ("virt.vms", Limit::Int(256)),
    ("virt.guest_mem_gb", Limit::Int(4096)),
    ("virt.switch_interval_cycles", Limit::Int(INTERVAL)),
    ("virt.switch_cycles", Limit::Int(COST)),
    ("virt.vcpus_per_core", Limit::Int(64)),
    ("virt.vcpu_slice_cycles", Limit::Int(INTERVAL)),
    ("virt.ept_fault_cycles", Limit::Int(COST)),
];

/// The upper bound of `key`, if it is numeric.
pub fn limit(key: &str) -> Option<Limit> {
    if let Some(&(_, l)) = LIMITS.iter().find(|(k, _)| *k == key) {
        return Some(l);
    }
    MOUNTS.iter().find_map(|(prefix, _, keys)| {
        let suffix = key.strip_prefix(prefix)?.strip_prefix('.')?;
        keys.iter().find(|c| c.suffix == suffix)?.limit
    })
}

/// Host memory the caches and TLBs of a machine may take, at most; a machine that would need
/// more is refused with one line instead of exhausting the host.
const HOST_BYTES_MAX: u64 = 16 << 30;
/// Host bytes per cache line or TLB entry, rounded up over every structure's layout (tag,
/// replacement state, line info and value, in 64-byte-aligned sets).
const HOST_BYTES_PER_ENTRY: u64 = 64;

fn unknown_key(key: &str) -> ConfigError {
    // Suggest the keys that share the longest dotted prefix with the unknown one.
    let parts: Vec<&str> = key.split('.').collect();
    for n in (1..parts.len()).rev() {
        let prefix = format!("{}.", parts[..n].join("."));
        let near: Vec<&str> = Config::keys().into_iter().filter(|k| k.starts_with(&prefix)).collect();
        if !near.is_empty() {
            return ConfigError::UnknownKey { key: key.into(), hint: format!(" (keys under '{}': {})", &prefix[..prefix.len() - 1], near.join(", ")) };
        }
    }
    // (In the keys' order, each once: a section's keys are not all together.)
    let mut sections: Vec<&str> = Vec::new();
    for k in Config::keys() {
        let s = k.split('.').next().unwrap_or(k);
        if !sections.contains(&s) {
            sections.push(s);
        }
    }
    ConfigError::UnknownKey { key: key.into(), hint: format!(" (sections: {})", sections.join(", ")) }
}

component! {
    /// A cache level: its geometry, timing, replacement and energy (`cache.l1i`, `cache.l1d`,
    /// `cache.l2`, `cache.llc`; each level's own keys, such as its prefetcher, stay beside it).
    CacheParams {
        size_kb: u64; "size_kb"; Some(Limit::Int(CACHE_KB)); "{} size in KB";
        ways: u64; "ways"; Some(Limit::Int(WAYS)); "{} associativity";
        latency: u64; "latency"; Some(Limit::Int(LATENCY)); "{} load-to-use latency of a hit, in cycles";
        policy: Policy; "policy"; None; "{} replacement policy";
        energy_nj: f64; "energy_nj"; Some(Limit::Real(1e6)); "{} dynamic energy per access (nJ)";
    }
}

component! {
    /// A page-walk cache: entries per level of the prefixes it caches (`pwc` for the native or
    /// guest walk, `virt.host_pwc` for the host dimension of 2D walks).
    PwcParams {
        l5_entries: u64; "l5.entries"; Some(Limit::Int(PWC)); "{} entries for L5 prefixes (address bits 56:48; 5-level tables only)";
        l4_entries: u64; "l4.entries"; Some(Limit::Int(PWC)); "{} entries for L4 prefixes (bits 47:39, pointing to an L3 node)";
        l3_entries: u64; "l3.entries"; Some(Limit::Int(PWC)); "{} entries for L3 prefixes (bits 47:30, pointing to an L2 node)";
        l2_entries: u64; "l2.entries"; Some(Limit::Int(PWC)); "{} entries for L2 prefixes (bits 47:21, pointing to an L1 node)";
        l5_ways: u64; "l5.ways"; Some(Limit::Int(PWC)); "{} associativity of the L5 prefix table (0: fully associative)";
        l4_ways: u64; "l4.ways"; Some(Limit::Int(PWC)); "{} associativity of the L4 prefix table (0: fully associative)";
        l3_ways: u64; "l3.ways"; Some(Limit::Int(PWC)); "{} associativity of the L3 prefix table (0: fully associative; a flattened root's table always is)";
        l2_ways: u64; "l2.ways"; Some(Limit::Int(PWC)); "{} associativity of the L2 prefix table (0: fully associative, as Intel's; ChampSim's are set-associative, indexed by the low bits of the prefix)";
        flat_entries: u64; "flat.entries"; Some(Limit::Int(PWC)); "{} entries for the 18-bit prefix (bits 47:30) of a flattened L4+L3 root (format fpt or fpt-l4l3; the flattening paper's FPT uses the 24-entry structure)";
        policy: Policy; "policy"; None; "{} replacement policy, every level (lru, fifo, random, srrip or nru; Intel's and ChampSim's are LRU)";
    }
}

config! {
    system_cores: u64 = 1; "system.cores"; "cores of the machine; a workload with N streams runs on cores 0..N-1 (hardware contexts, with system.threads_per_core)";
    system_threads_per_core: u64 = 1; "system.threads_per_core"; "hardware contexts (SMT threads) per core: stream i runs on context i, of core i / threads_per_core; a core's contexts share its TLBs, page-walk caches, walkers, MSHRs and private caches, and split its dispatch width and reorder buffer evenly";
    core_freq_ghz: f64 = 2.0; "core.freq_ghz"; "core clock in GHz (converts DRAM nanoseconds to cycles)";
    core_width: u64 = 4; "core.width"; "instructions dispatched per cycle";
    core_rob: u64 = 224; "core.rob"; "reorder-buffer entries: how far dispatch may run ahead of the oldest unfinished instruction";
    core_mshrs: u64 = 10; "core.mshrs"; "L1D misses in flight at once";
    core_store_buffer: u64 = 56; "core.store_buffer"; "store-buffer entries: a store retires into one once translated and holds it until it commits, in order, with its line there; a full buffer holds the next store's retirement (0: unlimited)";
    core_walkers: u64 = 2; "core.walkers"; "page walks in flight at once";
    core_lq: u64 = 0; "core.lq"; "load-queue entries: a load holds one from dispatch until its data arrives, and a load finding none free waits to dispatch, with everything behind it (0: unlimited)";
    timing_pools: PoolModel = PoolModel::Fast; "timing.pools"; "resource model of each core's MSHRs and page walkers, both granting units first come first served by request cycle: fast (the schedule of the requests seen so far, in request order; a request that comes after a later one is served in its place and those after it again) or exact (busy units counted per cycle over every booking; a later request's lost wait booked where a unit is free): docs/timing.md, \"Two resource models\"";
    core_inflight: bool = true; "core.inflight"; "in-flight state: a reference waits for work in flight that it needs (the fill of its line: an MSHR merge; the walk of its 4 KB page: a TLB-miss merge) (false: caches and TLBs serve a line or translation the moment its access is simulated; for ablation)";
    core_lookahead: u64 = 0; "core.lookahead"; "references a dependent reference (one that waits for its producer) looks ahead, within the reorder buffer, for a younger one that does not wait for it and accesses its 4 KB page (any load or store) or its line (a load): that one issues first, and starts the walk or the fill the dependent one merges into; 8 finds every case in the calibration traces (0: off, the default: the kernels record every reference's producer, which leaves it nothing to find; docs/timing.md)";
    tlb_l1d_entries: u64 = 64; "tlb.l1d.entries"; "L1 DTLB entries for 4 KB pages (all sizes if tlb.l1d.unified)";
    tlb_l1d_ways: u64 = 4; "tlb.l1d.ways"; "associativity of the 4 KB L1 DTLB array";
    tlb_l1d_entries_2m: u64 = 32; "tlb.l1d.entries_2m"; "L1 DTLB entries for 2 MB pages (0: none)";
    tlb_l1d_ways_2m: u64 = 4; "tlb.l1d.ways_2m"; "associativity of the 2 MB L1 DTLB array";
    tlb_l1d_entries_1g: u64 = 4; "tlb.l1d.entries_1g"; "L1 DTLB entries for 1 GB pages (0: none)";
    tlb_l1d_ways_1g: u64 = 4; "tlb.l1d.ways_1g"; "associativity of the 1 GB L1 DTLB array";
    tlb_l1d_unified: bool = false; "tlb.l1d.unified"; "one L1 DTLB array holds every page size (Zen 3), sized by entries/ways";
    tlb_l1d_latency: u64 = 1; "tlb.l1d.latency"; "L1 DTLB lookup cycles (overlapped with the L1D tag check)";
    tlb_l1d_policy: Policy = Policy::Lru; "tlb.l1d.policy"; "L1 DTLB replacement policy";
    tlb_l1i_entries: u64 = 128; "tlb.l1i.entries"; "L1 ITLB entries for 4 KB pages";
    tlb_l1i_ways: u64 = 8; "tlb.l1i.ways"; "associativity of the 4 KB L1 ITLB array";
    tlb_l1i_entries_2m: u64 = 8; "tlb.l1i.entries_2m"; "L1 ITLB entries for 2 MB pages (0: none)";
    tlb_l1i_ways_2m: u64 = 8; "tlb.l1i.ways_2m"; "associativity of the 2 MB L1 ITLB array";
    tlb_l1i_latency: u64 = 1; "tlb.l1i.latency"; "L1 ITLB lookup cycles";
    tlb_l1i_policy: Policy = Policy::Lru; "tlb.l1i.policy"; "L1 ITLB replacement policy";
    tlb_l2_entries: u64 = 1536; "tlb.l2.entries"; "unified L2 TLB entries (4 KB and 2 MB pages)";
    tlb_l2_ways: u64 = 12; "tlb.l2.ways"; "L2 TLB associativity";
    tlb_l2_entries_1g: u64 = 16; "tlb.l2.entries_1g"; "separate L2 TLB array for 1 GB pages (0: 1 GB pages are not held in L2)";
    tlb_l2_ways_1g: u64 = 4; "tlb.l2.ways_1g"; "associativity of the 1 GB L2 TLB array";
    tlb_l2_entries_coalesced: u64 = 0; "tlb.l2.entries_coalesced"; "with PTE coalescing: L2 TLB entries set aside for coalesced entries, in an array of their own (0: they share the 4 KB array; Zen's split is undocumented)";
    tlb_l2_ways_coalesced: u64 = 2; "tlb.l2.ways_coalesced"; "associativity of the L2 TLB's array of coalesced entries";
    tlb_l2_latency: u64 = 9; "tlb.l2.latency"; "L2 TLB lookup cycles, paid on every L1 TLB miss";
    tlb_l2_policy: Policy = Policy::Lru; "tlb.l2.policy"; "L2 TLB replacement policy";
    tlb_pdc_entries: u64 = 0; "tlb.pdc.entries"; "Page Directory Cache entries per core (AMD Zen 3: 64): a victim cache of the 1 GB translations the L1 DTLB evicts, looked up with the L2 DTLB (which then needs no 1 GB array: tlb.l2.entries_1g=0); 0: none";
    tlb_pdc_ways: u64 = 64; "tlb.pdc.ways"; "Page Directory Cache associativity (entries or more: fully associative)";
    tlb_l2i_entries: u64 = 0; "tlb.l2i.entries"; "separate L2 ITLB entries: 4 KB and 2 MB pages, 1 GB code pages cached as 2 MB pieces (Zen: 512). With it the L2 TLB holds data only; 0: fetches share the L2 TLB";
    tlb_l2i_ways: u64 = 8; "tlb.l2i.ways"; "L2 ITLB associativity (a lookup costs tlb.l2.latency)";
    tlb_l2i_policy: Policy = Policy::Lru; "tlb.l2i.policy"; "L2 ITLB replacement policy";
    tlb_l2i_coalescing: Coalescing = Coalescing::Inherit; "tlb.l2i.coalescing"; "PTE coalescing in the L2 ITLB: none|16k|32k, or inherit (tlb.coalescing)";
    tlb_coalescing: Coalescing = Coalescing::None; "tlb.coalescing"; "PTE coalescing (AMD Zen) in every TLB structure: none, 16k (groups of 4 PTEs, Zen 2/3) or 32k (8 PTEs, Zen/Zen+); per structure tlb.<level>.coalescing";
    tlb_l1d_coalescing: Coalescing = Coalescing::Inherit; "tlb.l1d.coalescing"; "PTE coalescing in the L1 DTLB: none|16k|32k, or inherit (tlb.coalescing)";
    tlb_l1i_coalescing: Coalescing = Coalescing::Inherit; "tlb.l1i.coalescing"; "PTE coalescing in the L1 ITLB: none|16k|32k, or inherit (tlb.coalescing)";
    tlb_l2_coalescing: Coalescing = Coalescing::Inherit; "tlb.l2.coalescing"; "PTE coalescing in the L2 TLB: none|16k|32k, or inherit (tlb.coalescing)";
    tlb_set_index: TlbSetIndex = TlbSetIndex::Vpn; "tlb.set_index"; "how the L1 and L2 TLBs pick a translation's set: vpn (the page number's low bits) or vpn_xor_vm (the page number xor the VM ID: the POM-TLB's hash, so a POM-TLB set's translations share one private-TLB set, as TCAT-cotagless needs)";
    tlb_thread_tagged: bool = false; "tlb.thread_tagged"; "SMT (system.threads_per_core > 1): TLB and page-walk-cache entries carry the hardware thread that filled them, so a core's threads never use each other's entries, even in one address space (AMD Zen; PT-Baker §4.4.5.1); false: competitively shared, a thread hits what its sibling filled";
    tlb_prefetch_walks: bool = true; "tlb.prefetch_walks"; "a software prefetch that misses the TLBs walks and fills them, as a load does (Zen 3: PT-Baker Fig. 4.3); false: it is dropped";
    tlb_prefetcher: TlbPrefetcher = TlbPrefetcher::None; "tlb.prefetcher"; "TLB prefetcher: none, or sequential (Kandiraju and Sivasubramaniam's SP: each L2 TLB miss prefetches the translation of the next 4 KB page). A prefetch walks as a demand walk does, on a walker of the core, its reads through the caches, after the miss's own translation is known; the translation goes to a prefetch buffer of tlb.prefetch_buffer entries beside the L2 TLB, looked up on its misses";
    tlb_prefetch_buffer: u64 = 16; "tlb.prefetch_buffer"; "entries of the TLB prefetcher's prefetch buffer, per core (fully associative, FIFO; a hit moves the translation into the TLBs)";
    tlb_perfect: bool = false; "tlb.perfect"; "every translation hits the L1 TLB: no walks (measures what translation costs)";
    pwc_latency: u64 = 1; "pwc.latency"; "page-walk cache lookup cycles (all levels in parallel)";
    walker_port: WalkerPort = WalkerPort::L1d; "walker.port"; "cache level where page-walk reads enter (l1d as on Intel, l2 as on AMD)";
    cache_l1d_prefetcher: Prefetcher = Prefetcher::None; "cache.l1d.prefetcher"; "L1D data prefetcher, trained on demand loads and stores: none, stride (a repeated line stride within a 4 KB page; IP-less) or stream (ascending or descending lines of a page); prefetches stay within the 4 KB page, so they need no translation";
    cache_l1d_prefetch_degree: u64 = 2; "cache.l1d.prefetch_degree"; "lines an L1D prefetcher fetches ahead once it has seen a pattern twice";
    cache_l2_prefetcher: Prefetcher = Prefetcher::None; "cache.l2.prefetcher"; "L2 data prefetcher, trained on demand data accesses that miss the L1D: none, stride or stream (see cache.l1d.prefetcher); it fills L2 and, from DRAM, the LLC";
    cache_l2_prefetch_degree: u64 = 4; "cache.l2.prefetch_degree"; "lines an L2 prefetcher fetches ahead once it has seen a pattern twice";
    cache_llc_ways_per_core: u64 = 0; "cache.llc.ways_per_core"; "way partitioning of the LLC (as Intel's Cache Allocation Technology): core c fills only ways c*n .. c*n+n-1, modulo the ways (they overlap when cores x n exceeds them), and hits in any; with n = ways / cores and programs that share no memory, each core has an LLC of its own. LRU or FIFO only; 0: shared";
    cache_llc_inclusive: bool = false; "cache.llc.inclusive"; "LLC evictions back-invalidate private caches";
    cache_llc_fill: LlcFill = LlcFill::Inclusive; "cache.llc.fill"; "what fills the LLC: every line fetched from DRAM (inclusive), or only lines evicted from an L2, clean or dirty (victim, as Zen's L3: an LLC hit moves the line to the L2, so the two hold different lines, unless another core's L2 put it there: a line likely shared stays, as in AMD's mostly exclusive L3; and a line another core's L2 holds is served from there, through the L3's shadow tags, at the LLC's latency)";
    ptbaker_mode: PtBakerMode = PtBakerMode::Off; "ptbaker.mode"; "PT-Baker's helper thread, one more thread of the program that sweeps its largest region for as long as the program runs: off, user (a load of the first byte of every stride_pages-th page: it misses its own TLB and walks, bringing the page-table entries into the caches, and a data line with them), user-prefetch (a software prefetch instead of the load: it waits for no data, and walks only if tlb.prefetch_walks) or kernel (a software walk in the kernel reading only the pages' page-table entries, one line per 8 pages at stride 8, no data)";
    ptbaker_placement: PtBakerPlacement = PtBakerPlacement::Core; "ptbaker.placement"; "where the helper runs: core (the next core, sharing the LLC: the thesis's default) or smt (the SMT sibling of the program's last thread: needs system.threads_per_core=2 and a free sibling)";
    ptbaker_stride_pages: u64 = 8; "ptbaker.stride_pages"; "pages between the helper's touches (the thesis's 8: one touch per line of page-table entries; 512: one per leaf table)";
    ptbaker_nops: u64 = 0; "ptbaker.nops"; "idle instructions the helper executes after each touch (the thesis's NOP throttle)";
    ptbaker_sleep_cycles: u64 = 0; "ptbaker.sleep_cycles"; "cycles the helper sleeps after each pass over its region, its core idle (the thesis's sleep throttle)";
    ptbaker_ahead: u64 = 0; "ptbaker.ahead"; "an xlat variant: the helper follows the program's first thread, touching the N pages beyond its position (and waiting when that far ahead) instead of sweeping cyclically; 0 = cyclic passes, as the thesis";
    ptbaker_regions: PtBakerRegions = PtBakerRegions::Largest; "ptbaker.regions"; "what the helper sweeps: largest (the program's largest region, as the thesis sweeps one dominant region) or all (every region, one after another)";
    pressure: Pressure = Pressure::None; "pressure"; "memory pressure beside the program, as the thesis's stress-ng runs: none, cache1 (one cache stressor: random reads and writes over a buffer the LLC's size), stream2 or stream3 (two or three STREAM-triad stressors over arrays 4x the LLC); each a program of its own on the next free core, sharing the LLC";
    ptp_mode: PtpMode = PtpMode::Always; "ptp.mode"; "caches with policy=ptp: prioritize page-table lines always, or only in TLB-miss phases (detector)";
    ptp_probability: f64 = 0.99; "ptp.probability"; "probability that a victim is the LRU non-page-table line (the paper's 99 %)";
    ptp_detector_mpki: f64 = 5.0; "ptp.detector_mpki"; "detector: a core is in a TLB-miss phase when its L2 TLB MPKI over the last epoch is at least this (the paper gives no threshold)";
    ptp_detector_epoch: u64 = 100000; "ptp.detector_epoch"; "detector: epoch length in instructions";
    ptp_per_context: bool = false; "ptp.per_context"; "shared caches protect only the page-table lines of cores in a TLB-miss phase (else any core's phase protects all)";
    asap_enabled: bool = false; "asap.enabled"; "ASAP (Margaritov et al., MICRO'19), a comparator of the flattening paper: the OS lays each region's page-table nodes out contiguously in virtual-address order, so on an L2 TLB miss the MMU computes the addresses of the last levels' entries and prefetches their lines while the walk starts (native radix tables)";
    champsim_pscl_reread: bool = false; "champsim.pscl_reread"; "validation only (docs/timing.md): after a page-walk-cache hit, read one more entry, as ChampSim's walker does (native radix tables)";
    champsim_private_pte_lines: bool = false; "champsim.private_pte_lines"; "validation only (docs/timing.md): every page-table entry in a page of its own, as ChampSim's virtual memory places them, so neighbouring pages' entries never share a cache line (native radix tables)";
    champsim_no_dirty_bits: bool = false; "champsim.no_dirty_bits"; "validation only (docs/timing.md): a walk marks the leaf dirty for a load too, so a store never walks again to set the dirty bit, as ChampSim, which keeps no dirty bits, never does (native radix tables)";
    champsim_first_touch_cycles: u64 = 0; "champsim.first_touch_cycles"; "validation only (docs/timing.md): cycles the walk spends on each first use of a page-table entry and of a data page, as ChampSim charges its minor-fault penalty inside the walk; 0 = off (native radix tables)";
    ech_enabled: bool = false; "ech.enabled"; "elastic cuckoo page tables (ECH; Skarlatos et al., ASPLOS'20), a comparator of the flattening paper: per page size a d-ary elastic cuckoo hash table of 8-entry lines, walked by reading every way a page could be in at once; cuckoo walk caches of which page sizes map a region say which tables to read (native, pt.format=radix4; the OS's radix tree stays its own record)";
    ech_ways: u64 = 3; "ech.ways"; "ECH: ways (d) of each hashed table, read in parallel by a walk";
    ech_slots: u64 = 16384; "ech.slots"; "ECH: lines per way of a new table (a power of two; the ECPT paper's initial 16 K)";
    ech_load_factor: f64 = 0.6; "ech.load_factor"; "ECH: occupancy above which a table grows (elastic resizing; the ECPT paper's 0.6)";
    ech_growth: u64 = 4; "ech.growth"; "ECH: how many times larger a grown table is (a power of two)";
    ech_pmd_cwc_entries: u64 = 16; "ech.pmd_cwc.entries"; "ECH: entries of the cuckoo walk cache of 2 MB regions (fully associative; says whether a region holds 4 KB pages or a 2 MB page, and its way)";
    ech_pud_cwc_entries: u64 = 2; "ech.pud_cwc.entries"; "ECH: entries of the cuckoo walk cache of 1 GB regions (which page sizes a region holds)";
    asap_levels: u64 = 2; "asap.levels"; "page-table levels ASAP prefetches, from the leaves up: 1 = the PTE, 2 = the PTE and the PMD entry";
    pcc_enabled: bool = false; "pcc.enabled"; "Promotion Candidate Cache (the PCC paper, Manocha et al., MICRO'23): a per-core structure counting page walks per 2 MB region (after a cold-miss filter on the PMD accessed bit), read out by the OS as a ranked list of huge-page candidates; os.promotion=pcc turns it on with the OS daemon that promotes from it, this key alone leaves it to be read by a program";
    pcc_entries: u64 = 128; "pcc.entries"; "2 MB PCC entries per core, fully associative, tagged by VA >> 21 and context (the paper's Tab. 2: 128 entries, 768 B)";
    pcc_entries_1g: u64 = 0; "pcc.entries_1g"; "1 GB PCC entries per core, counting walks per 1 GB region from 4 KB and 2 MB pages (the paper's option 1, §3.2.3; it costs 8 entries, 40 B, and evaluates none; 0: no 1 GB PCC)";
    pcc_policy: PccPolicy = PccPolicy::Lfu; "pcc.policy"; "PCC replacement: lfu (entries kept in frequency order, the tail evicted: the artifact's EVICTION_POLICY 2) or lru (the policy the paper's text settles on, §3.2.1); read-out is by frequency either way";
    pcc_counter_bits: u64 = 8; "pcc.counter_bits"; "bits of each PCC frequency counter (Tab. 2: 8); when one reaches 2^bits - 1 every counter is halved";
    pcc_readout: PccReadout = PccReadout::Invalidate; "pcc.readout"; "what an OS read-out does: invalidate (nothing; promoted regions leave through their shootdowns, the paper's §3.3) or flush (empty the PCC, as the artifact's simulator does)";
    pcc_promote_per_read: u64 = 128; "pcc.promote_per_read"; "2 MB regions the daemon promotes at most per read-out, over all cores' PCCs (the paper's C = the PCC's size, 128, §3.3.1)";
    pcc_demotion: bool = false; "pcc.demotion"; "os.promotion=pcc: PCC-driven demotion (§3.3.3, as the artifact): a region the daemon promoted that reappears in a later read-out with a count above 0 (its 2 MB page still walks) is demoted, once, and its 2 MB block freed for another candidate (its 512 pages move to 4 KB frames)";
    pcc_bias: String = String::new(); "pcc.bias"; "os.promotion=pcc: comma-separated program numbers of a mix (0 = the first) whose candidates the daemon promotes first, until they run out, then the others' (the paper's promotion_bias_process PID list, §3.3.2); empty: no bias";
    pcc_promotion: PccPromotion = PccPromotion::RoundRobin; "pcc.promotion"; "how the daemon picks among the cores' lists: round-robin (take each list's next in turn, the paper's promotion_policy=0) or highest (the highest count among the lists' heads, promotion_policy=1), §3.3.2";
    os_promotion: Promotion = Promotion::None; "os.promotion"; "who promotes regions to 2 MB pages as the program runs (the PCC paper's comparison): none (the fault-time os.page_policy only), pcc (the PCC, read by an OS daemon every os.promotion_interval references), hawkeye (HawkEye's access-coverage daemon), thp (Linux's greedy THP: os.page_policy=thp, huge pages at fault time and khugepaged) or oracle (ours: with hindsight, the regions with the most 4 KB walks in a first run without promotion, promoted at the daemon's first read; the run is made twice)";
    os_promotion_interval: u64 = 30_000_000; "os.promotion_interval"; "references between a promotion daemon's reads (pcc: PCC read-outs; hawkeye: its sleep after each window): the paper's 30 s, converted to accesses at the application's access rate (§4)";
    os_promotion_first: u64 = 1_000_000; "os.promotion_first"; "references before the first read of the pcc and oracle daemons (the artifact reads at 1 s, then every 30 s)";
    os_promotion_cap: f64 = 1.0; "os.promotion_cap"; "footprint cap of the promotion daemons (pcc, hawkeye, oracle): the fraction of the footprint, counted in 2 MB regions, they may ask the OS to promote over the whole run; each region counts once, in the order they ask (time, then priority). The paper's utility-curve point N % is N / 100, its budget floor(footprint regions x N / 100) as the artifact's list builder; 1: no cap (the paper's ~100 %)";
    hawkeye_window_refs: u64 = 1_000_000; "hawkeye.window_refs"; "os.promotion=hawkeye: references in HawkEye's measurement window (the paper's 1 s, as accesses per second x 1); it then sleeps os.promotion_interval references";
    hawkeye_promote_per_interval: u64 = 8; "hawkeye.promote_per_interval"; "2 MB regions HawkEye promotes at most per window (khugepaged's 4096 pages scanned = 8 regions)";
    csalt_epoch: u64 = 256000; "csalt.epoch"; "CSALT: accesses to a cache between its repartitionings (the thesis's 256K, written 256,000 once)";
    csalt_profiler: CsaltProfiler = CsaltProfiler::Atd; "csalt.profiler"; "CSALT stack-distance profiles: atd (an auxiliary LRU tag directory per type: the hits each type would get with n ways to itself) or global_pos (the hit line's position in the real set's LRU order: the thesis's counters-only hardware, a heuristic)";
    csalt_atd_sets: u64 = 0; "csalt.atd_sets"; "CSALT with csalt.profiler=atd: sets sampled per cache (0: every set)";
    csalt_page_tables: CsaltPageTables = CsaltPageTables::Data; "csalt.page_tables"; "which CSALT partition page-table lines belong to: data (the thesis: CSALT knows two types, data and POM-TLB entries) or translation (with the POM-TLB's lines; an xlat variant that tests what the data partition costs walks)";
    csalt_formula: CsaltFormula = CsaltFormula::Printed; "csalt.formula"; "CSALT-CD's L2 weights: printed (Eqs. 5.3-5.8 as the thesis prints them) or corrected (without the leading D_Tr and D_Dat terms they count twice)";
    pomtlb_enabled: bool = false; "pomtlb.enabled"; "POM-TLB (Ryoo et al. ISCA'17, the L3 TLB of the CSALT thesis, Marathe 2018): a shared translation array in die-stacked DRAM, looked up on an L2 TLB miss through the L2 cache and the LLC as lines of kind TLB entry, filled after each walk";
    pomtlb_size_mb: u64 = 16; "pomtlb.size_mb"; "POM-TLB array for 4 KB pages, in MB of memory (16-byte entries, one 64-byte line per set; the thesis's 16 MB)";
    pomtlb_large_size_mb: u64 = 1; "pomtlb.large_size_mb"; "POM-TLB array for 2 MB pages, in MB (the thesis does not say how the 16 MB is split; 1 MB holds 65,536 2 MB translations)";
    pomtlb_ways: u64 = 4; "pomtlb.ways"; "POM-TLB entries per set; sets are one 64-byte line, so at most 4 (the thesis's 4-way)";
    pomtlb_latency: u64 = 132; "pomtlb.latency"; "die-stacked DRAM latency beyond the LLC, in core cycles (Tab. 6.1: 11-11-11 at a 1 GHz bus, a row miss tRP+tRCD+tCAS = 33 ns = 132 cycles at 4 GHz)";
    pomtlb_bandwidth_gbps: f64 = 0.0; "pomtlb.bandwidth_gbps"; "die-stacked DRAM bandwidth for the queue model (Tab. 6.1: 128 bits at DDR 2 GHz = 32 GB/s; 0: unlimited, the default, because the one-queue model makes reads issued earlier wait behind fills issued later)";
    pomtlb_base_gb: u64 = 16384; "pomtlb.base_gb"; "physical address of the POM-TLB in GB (BASE_ADDR_POM-TLB, Eq. 5.10): above every frame the OS allocates; the 2 MB array follows the 4 KB one";
    pomtlb_hash: PomHash = PomHash::Vpn; "pomtlb.hash"; "POM-TLB set index: vpn ((VPN xor VM ID) mod sets, one set per page, the reading TCAT needs) or literal (Eq. 5.10 as printed: (VA xor VM ID) >> 6 on the page-aligned VA)";
    dram_latency_ns: f64 = 50.0; "dram.latency_ns"; "DRAM access latency beyond the LLC, in ns";
    dram_bandwidth_gbps: f64 = 0.0; "dram.bandwidth_gbps"; "DRAM bandwidth in GB/s for the queue model (0: unlimited)";
    dram_banks: u64 = 0; "dram.banks"; "DRAM banks with row buffers, bank groups and ranks counted in (a power of two; ChampSim's DDR4 default: 32): each keeps its last row open and serves one access at a time, lines interleaved over the banks; dram.latency_ns is then the part of an access outside the bank (0: no banks, every access takes dram.latency_ns)";
    dram_row_kb: u64 = 8; "dram.row_kb"; "dram.banks > 0: bytes per row of one bank, in KB (a power of two; ChampSim's DDR4 default: 1024 columns x 8 B = 8)";
    dram_trp_ns: f64 = 15.0; "dram.trp_ns"; "dram.banks > 0: precharge time, closing the open row (ChampSim's DDR4-3200: 24 cycles at 1600 MHz)";
    dram_trcd_ns: f64 = 15.0; "dram.trcd_ns"; "dram.banks > 0: activate time, opening a row (ChampSim's DDR4-3200: 24 cycles at 1600 MHz)";
    dram_tcas_ns: f64 = 15.0; "dram.tcas_ns"; "dram.banks > 0: column access time, reading from the open row (ChampSim's DDR4-3200: 24 cycles at 1600 MHz)";
    dram_trefi_ns: f64 = 0.0; "dram.trefi_ns"; "dram.banks > 0: refresh interval: every bank refreshes at once every this many ns, unavailable for dram.trfc_ns (DDR4: 7800; ChampSim's default: 32 ms / 8192 = 3906; 0: no refresh)";
    dram_trfc_ns: f64 = 350.0; "dram.trfc_ns"; "dram.banks > 0 and dram.trefi_ns > 0: refresh time, every bank unavailable (DDR4 8 Gb: 350; ChampSim's 16 GB channel: 368)";
    dram_write_batch: u64 = 0; "dram.write_batch"; "dram.bandwidth_gbps > 0 (without a bandwidth limit there is no channel to drain on, and none is modelled): write-backs wait in the controller's write queues and drain in batches of this many (over all channels: each channel's batch times the channels), the channel turning around twice a drain; reads arriving during a drain wait for it (0: no drains: each write-back takes a free slot of the channel when it leaves the LLC)";
    dram_turnaround_ns: f64 = 0.0; "dram.turnaround_ns"; "dram.write_batch > 0: ns the data bus idles at a switch between reading and writing, the mean of the two directions, twice a drain (DDR4: tWTR + tCL from writing to reading, about 2 clocks back, some 10 ns; ChampSim's controller: tRAS both ways)";
    dram_energy_nj: f64 = 15.0; "dram.energy_nj"; "DRAM dynamic energy per 64 B access (nJ)";
    pt_format: PtFormat = PtFormat::Radix4; "pt.format"; "page-table format: radix4, radix5, fpt (L4+L3 and L2+L1 flattened into 2 MB nodes, with the FPT+NF rule), fpt-l3l2 (the paper's Linux prototype), fpt-l4l3 (flattened root only), fpt5 (five levels as L5+L4, L3+L2 and L1), fpt-1g (one 1 GB L4+L3+L2 root node and L1)";
    pt_nf_threshold: u64 = 32; "pt.nf_threshold"; "pt.format=fpt: a 1 GB region whose flattened L2+L1 node comes to hold this many 2 MB pages is unflattened below the root (FPT+NF; the paper's 32; 0: never)";
    pt_late_flatten: u64 = 0; "pt.late_flatten"; "late flattening (flattening paper §6.2): a node built as 4 KB because no 2 MB block was free is merged with its children into a flattened node (copy, re-point the parent, free the old nodes) once it holds this many entries and a block is free, retried as the region grows (0: never; roots are never merged late)";
    pt_recursive_slot: u64 = 0; "pt.recursive_slot"; "the OS maps each page table into itself through this root slot (flattening paper §3.5): a 4 KB root's entry points back at the root, a flattened root's sub-table becomes the glue table L4* (256-511, the kernel half, so no user address collides; 0: none)";
    os_page_policy: PagePolicy = PagePolicy::Never; "os.page_policy"; "page sizes the OS maps: never (4 KB only), ideal (every eligible 2 MB region in 2 MB pages), thp (Linux THP enabled=always), madvise (Linux THP enabled=madvise: os.madvise_regions only), freebsd (FreeBSD reservations, promoted in place when full)";
    os_madvise_regions: String = String::new(); "os.madvise_regions"; "page_policy=madvise: comma-separated names of the workload regions that call madvise(MADV_HUGEPAGE) ('*': all; empty: none, as a program that never calls it)";
    os_thp_defrag: ThpDefrag = ThpDefrag::Madvise; "os.thp_defrag"; "Linux THP defrag: a huge-page fault that finds no free 2 MB block compacts memory always, in madvised regions only (madvise, Linux's default) or never";
    os_khugepaged_pages: u64 = 4096; "os.khugepaged_pages"; "khugepaged pages_to_scan per wake-up, 512 per 2 MB region scanned (Linux default 4096 = 8 regions); 0 turns khugepaged off";
    os_khugepaged_interval_cycles: u64 = 20_000_000_000; "os.khugepaged_interval_cycles"; "simulated cycles between khugepaged wake-ups (Linux scan_sleep_millisecs = 10 s, 2e10 cycles at 2 GHz; lower it for short runs)";
    os_khugepaged_max_ptes_none: u64 = 511; "os.khugepaged_max_ptes_none"; "khugepaged collapses a 2 MB region only if at most this many of its 4 KB pages are unmapped (Linux default 511)";
    os_khugepaged_defrag: bool = true; "os.khugepaged_defrag"; "khugepaged compacts memory when no free 2 MB block exists (Linux khugepaged/defrag, default on)";
    os_huge_1g: bool = false; "os.huge_1g"; "page_policy=ideal: map the 1 GB-aligned whole gigabytes of a region with 1 GB pages (as hugetlbfs with 1 GB pages)";
    os_reservations: Reservations = Reservations::None; "os.reservations"; "the coalescing paper's FreeBSD kernels: reserv (os.page_policy=freebsd with os.reservation_promote=false: reservations, no 2 MB pages) or super (with promotion); none leaves it to os.page_policy (whose never is the paper's noresv). Needs os.page_policy never or freebsd";
    os_reservation_promote: bool = true; "os.reservation_promote"; "page_policy=freebsd: promote a fully populated reservation to a 2 MB page (false: reservations only, the coalescing paper's 'reserv')";
    os_reservation_promote_at: u64 = 512; "os.reservation_promote_at"; "page_policy=freebsd with os.reservation_promote: a reservation is promoted to a 2 MB page once this many of its 512 pages are populated, the rest zeroed (FreeBSD: 512, all of them; Quicksilver promotes at 64, the threshold the coalescing paper's §3.8 suggests revisiting); below 512 only where the 2 MB region lies inside one workload region";
    os_page_copy_cycles: u64 = 400; "os.page_copy_cycles"; "cycles to copy or zero one 4 KB page (~200 ns at ~20 GB/s): a 2 MB fault zeroes 511 pages more than a 4 KB one, a collapse or compaction copies";
    os_shootdown_initiator_cycles: u64 = 8000; "os.shootdown_initiator_cycles"; "cycles the core changing a mapping spends on an IPI shootdown (send, local flush, wait for acks): ~4 us at 2 GHz; native Skylake measures 7,666-22,922 cycles (the CSALT/TCAT thesis, Tab. 6.3)";
    os_shootdown_remote_cycles: u64 = 2000; "os.shootdown_remote_cycles"; "cycles each other core running the address space loses to the shootdown interrupt (entry, invalidation, ack; ~1 us, an assumption)";
    os_call_cycles: u64 = 1000; "os.call_cycles"; "cycles of a system call that changes the program's mappings (munmap, mprotect, move_pages in a trace or kernel: entry, exit and VMA work, ~0.5 us), besides the shootdown it issues and the pages it copies";
    os_shootdown_local_cycles: u64 = 200; "os.shootdown_local_cycles"; "cycles of a shootdown no other core needs (a local INVLPG or flush, ~100 ns)";
    check_translations: u64 = 0; "check.translations"; "check every N-th translation a core uses against a functional walk of the current page tables (both dimensions in a VM): 1 checks every reference (tests), larger N samples (studies); 0: off. See check.on_stale";
    check_on_stale: OnStale = OnStale::Fail; "check.on_stale"; "when a checked translation is stale: fail (stop the run with one line naming the core, the address and both frames) or count (statistic stale_translation_uses)";
    coherence_enabled: bool = false; "coherence.enabled"; "coherence of the private caches (a directory at the LLC, MESI-like): a store invalidates the line's copies in the other cores' L1s and L2s and, when there were any, waits for the directory's round trip (2 x cache.llc.latency); false: stores leave other cores' copies alone (no data is modelled, only where lines are). TCAT needs it";
    tcat_fill_invalidates: bool = false; "tcat.fill_invalidates"; "TCAT: the MMU's write of a walk's translation into its POM-TLB line also invalidates the line's other TLB sharers, as a plain coherence protocol would (false: such writes carry no xlat_inv flag and TLBs ignore them, the seed's recommended default; true measures what that filter saves)";
    tcat_flush: bool = true; "tcat.flush"; "TCAT: the hypervisor flushes (CLFLUSH) the POM-TLB line after its read-modify-write, as the thesis requires (false shows its §5.2.5.1 counterexample: the cleared line stays modified in the initiator's L1D, which the MMU never reads, and until it is written back every L3 TLB lookup of the line finds the old, valid translation; pomtlb.stale_hits counts them, the translation checker catches their use)";
    shootdown_protocol: ShootdownProtocol = ShootdownProtocol::Ipi; "shootdown.protocol"; "how TLBs are kept coherent when a mapping changes: ipi (interrupt every core that runs the address space, wait for each; a preempted vCPU acks when it runs again), kvm_tlb (KVM's paravirtual flush: running vCPUs get IPIs, preempted ones flush all their entries when rescheduled), tcat-cotag or tcat-cotagless (TCAT: rewrite and flush the page's POM-TLB line; its TLB sharers drop the entries homed there, or the whole matching set; needs pomtlb.enabled), ideal (the translations go, at no cost to anyone: the seed's Ideal-sim bound)";
    os_flush_ceiling_pages: u64 = 33; "os.flush_ceiling_pages"; "a shootdown of more 4 KB pages than this flushes the address space's whole TLB and PWC contents instead (Linux x86 tlb_single_page_flush_ceiling)";
    os_processes: u64 = 1; "os.processes"; "copies of the workload, each in its own address space; every core time-slices its stream among them round-robin";
    os_timeslice_cycles: u64 = 8_000_000; "os.timeslice_cycles"; "os.processes > 1: cycles a process runs before the core switches to the next (4 ms at 2 GHz, a tick at HZ=250)";
    os_pcid: bool = true; "os.pcid"; "TLB and PWC entries are tagged by address space (PCID); false: every context switch flushes them";
    os_switch_cycles: u64 = 4000; "os.switch_cycles"; "direct cost of a context switch in cycles (~2 us, of the order lmbench lat_ctx reports)";
    os_madv_free: bool = true; "os.madv_free"; "the OS honours a program's madvise(MADV_FREE) (OS-call op madv-free, the churn kernel's free=madv_free): clear the range's A and D bits, demote 2 MB pages it covers in part, shoot it down; false ignores the calls, as jemalloc told not to make them (the coalescing paper's nomdv)";
    loader_max_page_size: MaxPageSize = MaxPageSize::AsLinked; "loader.max_page_size"; "lay a traced executable out as LLD would link it with this max-page-size (4k, 16k, 32k, 2m; segments packed in the file, each at align(dot, M) + dot % M): 4k puts every segment after a shared file page out of phase with the file, so that neither coalescing nor superpages can map its code (the coalescing paper's Fig. 1); as-linked keeps the layout the program was built with. Needs a trace from xlat trace (its FILE.maps records the executable's segments); kernels have no image and ignore it";
    os_small_reservation: SmallReservation = SmallReservation::None; "os.small_reservation"; "page_policy=freebsd: a file page that gets no 2 MB reservation (a file of 2 MB or less, a file's last partial piece) comes from an aligned reservation of this size for its chunk, where the chunk lies whole inside the file (16k, 32k, 64k: the coalescing paper's §3.8 proposal of smaller reservations; none: FreeBSD's single 2 MB size)";
    os_readahead_pages: u64 = 32; "os.readahead_pages"; "a fault on a page of a file that is not in the page cache reads the aligned cluster of this many pages around it (a power of two; Linux's read-around is 128 KB, 32 pages; 1 reads the page alone)";
    os_fault_around_pages: u64 = 16; "os.fault_around_pages"; "a fault on a file page also maps the cached pages of the aligned cluster of this many pages around it that the mapping covers (a power of two; Linux's fault_around_bytes is 64 KB, 16 pages; FreeBSD prefaults a similar window; 1 maps the faulting page alone)";
    os_preset_a: PresetA = PresetA::Auto; "os.preset_a"; "pages a file fault maps around the faulting one (os.fault_around_pages) get the accessed bit at once: on, off, or auto (on for the Linux policies, whose x86 fault-around maps pages young; off for page_policy=freebsd, which maps them with A clear, so a group of them cannot coalesce until each page is touched; on is the coalescing paper's §3.8 proposal)";
    loader_trace_region_kb: u64 = 4; "loader.trace_region_kb"; "--prefault on a trace without regions of its own (ChampSim, lackey): its regions, the runs of pages it touches (or the mappings of its FILE.maps), rounded out to this many KB (a power of two >= 4; 4 keeps them). 2048 puts every touched 2 MB of virtual memory in a region, so that os.page_policy=ideal maps all of them in 2 MB pages, as ChampSim's 2 MB pages do";
    os_prefault_as: PrefaultAs = PrefaultAs::Read; "os.prefault_as"; "how --prefault maps the footprint, page by page in address order: read (each page as a read fault leaves it: clean and not yet accessed) or write (as a program's initialization loop writing every page leaves it: accessed and dirty, so a coalescing group or a FreeBSD reservation is uniform at once)";
    os_fault_cycles: u64 = 2000; "os.fault_cycles"; "cycles charged per page fault (Linux minor anonymous fault, ~1 us)";
    phys_size_gb: u64 = 64; "phys.size_gb"; "simulated physical memory in GB";
    phys_fragmentation: Fragmentation = Fragmentation::None; "phys.fragmentation"; "state of physical memory before the run: none, pinned:X (one unmovable page in X of the free 2 MB blocks, the PCC paper's method), lowhalf (2 MB pages only for the lower half of each address space, the flattening paper's 50 %), aged:SEED (allocate/free churn down to phys.aged_target)";
    phys_frame_order: FrameOrder = FrameOrder::Ascending; "phys.frame_order"; "order in which 4 KB frames are handed out, to data and page tables alike (in a VM, guest and host): ascending (a buddy allocator on fresh memory) or shuffled:SEED (uniformly at random over all of memory, as ChampSim's virtual memory; leaves few 2 MB blocks whole)";
    phys_aged_target: f64 = 0.2; "phys.aged_target"; "fragmentation=aged: fraction of the free 2 MB blocks still whole after aging";
    phys_available_gb: f64 = 0.0; "phys.available_gb"; "before fragmenting, take memory away (as memhog) until this many GB are free; the PCC artifact leaves footprint + 3 GB (0: keep all)";
    phys_pcp_batch: u64 = 63; "phys.pcp_batch"; "4 KB frames a CPU's free list takes from or returns to the buddy allocator at once (Linux pcp batch; 0: no per-CPU lists)";
    phys_pcp_order: PcpOrder = PcpOrder::Fifo; "phys.pcp_order"; "order in which a CPU's free list hands out the frames of a batch it took from the buddy allocator (in ascending order): fifo (Linux's per-CPU lists: the first taken first, so pages faulted in address order get ascending frames, contiguous by chance) or lifo (a stack, as FreeBSD's per-domain page cache buckets: the last taken first, descending frames that no coalescing group can use; the coalescing paper's FreeBSD without reservations)";
    phys_pcp_high: u64 = 378; "phys.pcp_high"; "a CPU's free list longer than this returns a batch to the buddy allocator (Linux pcp high = 6 x batch)";
    virt_enabled: bool = false; "virt.enabled"; "run the workload in virtual machines: a guest OS builds gVA->gPA tables in each VM's guest-physical memory, the host builds gPA->hPA (EPT) tables, and every TLB miss is a 2D walk";
    virt_vms: u64 = 1; "virt.vms"; "VMs, each running a copy of the workload in its own guest OS (os.processes processes each); every core time-slices its stream among them";
    virt_guest_mem_gb: u64 = 32; "virt.guest_mem_gb"; "guest-physical memory of each VM in GB (the guest OS's phys.size_gb; host memory backs only what the guest touches)";
    virt_host_page_policy: HostPagePolicy = HostPagePolicy::Never; "virt.host_page_policy"; "page sizes of the host (EPT) table: never (4 KB), ideal (2 MB wherever a free block exists), thp (Linux THP enabled=always on the host, with khugepaged)";
    virt_host_pt_format: PtFormat = PtFormat::Radix4; "virt.host_pt.format"; "format of the host (EPT) table; the guest's is pt.format";
    virt_vpid: bool = true; "virt.vpid"; "TLB and page-walk-cache entries are tagged by VM (VPID); false: every VM switch flushes the TLBs, PWCs, vPWC and nested TLB of the core";
    virt_switch_interval_cycles: u64 = 20_000_000; "virt.switch_interval_cycles"; "virt.vms > 1: cycles a VM runs on a core before the next one (10 ms at 2 GHz, the CSALT thesis's interval)";
    virt_vcpus_per_core: u64 = 1; "virt.vcpus_per_core"; "vCPU overcommit: each core time-slices this many vCPUs of the VM (streams c, c + cores, c + 2 x cores, ... of a workload with that many threads), virt.vcpu_slice_cycles each, a switch costing virt.switch_cycles; a vCPU whose stream ends leaves its core to the others (1: one vCPU per core)";
    virt_vcpu_slice_cycles: u64 = 8_000_000; "virt.vcpu_slice_cycles"; "virt.vcpus_per_core > 1: cycles a vCPU runs before the core switches to the next (4 ms at 2 GHz, a host scheduler's slice; an assumption)";
    virt_switch_cycles: u64 = 8000; "virt.switch_cycles"; "direct cost of switching a core to another VM (VM exit, host scheduler switch between vCPU threads, VMCS load, VM entry; ~4 us at 2 GHz, an assumption)";
    virt_ept_fault_cycles: u64 = 5000; "virt.ept_fault_cycles"; "cycles per EPT violation (a guest-physical page the host has not mapped yet): VM exit, KVM's fault path, VM entry (~2.5 us, an assumption); host page zeroing is charged as for os.page_copy_cycles";
    virt_nested_tlb_data: bool = true; "virt.nested_tlb_data"; "the nested TLB also caches the final data gPA->hPA translation, not only those of guest page-table entries (the flattening paper leaves this open)";
    tlb_nested_entries: u64 = 16; "tlb.nested.entries"; "nested TLB entries caching gPA->hPA translations for 2D walks (flattening paper Tab. 1: 16, fully associative; 0: none)";
    tlb_nested_ways: u64 = 16; "tlb.nested.ways"; "nested TLB associativity (entries = fully associative)";
    tlb_nested_latency: u64 = 1; "tlb.nested.latency"; "nested TLB lookup cycles (Tab. 1: 1)";
    @mounts {
        cache_l1i: CacheParams = CacheParams { size_kb: 32, ways: 8, latency: 4, policy: Policy::Lru, energy_nj: 0.05 }; "cache.l1i"; "L1 instruction cache";
        cache_l1d: CacheParams = CacheParams { size_kb: 32, ways: 8, latency: 4, policy: Policy::Lru, energy_nj: 0.05 }; "cache.l1d"; "L1 data cache";
        cache_l2: CacheParams = CacheParams { size_kb: 256, ways: 8, latency: 12, policy: Policy::Lru, energy_nj: 0.12 }; "cache.l2"; "private L2 cache";
        cache_llc: CacheParams = CacheParams { size_kb: 16384, ways: 8, latency: 42, policy: Policy::Lru, energy_nj: 0.6 }; "cache.llc"; "shared last-level cache";
        pwc: PwcParams = PwcParams { l5_entries: 0, l4_entries: 4, l3_entries: 4, l2_entries: 24, l5_ways: 0, l4_ways: 0, l3_ways: 0, l2_ways: 0, flat_entries: 24, policy: Policy::Lru }; "pwc"; "page-walk cache";
        virt_host_pwc: PwcParams = PwcParams { l5_entries: 0, l4_entries: 4, l3_entries: 4, l2_entries: 24, l5_ways: 0, l4_ways: 0, l3_ways: 0, l2_ways: 0, flat_entries: 24, policy: Policy::Lru }; "virt.host_pwc"; "host page-walk cache (vPWC, of guest-physical prefixes in 2D walks)";
    }
}

impl Config {
    /// Build from (key, value) pairs applied in order over the defaults, then validate.
    pub fn from_pairs<'a, I: IntoIterator<Item = (&'a str, &'a str)>>(pairs: I) -> Result<Config, ConfigError> {
        let mut c = Config::default();
        for (k, v) in pairs {
            c.set(k, v)?;
        }
        c.validate()?;
        Ok(c)
    }

    /// The PTE coalescing of TLB level `name` (`l1d`, `l1i`, `l2`): its own key, or
    /// `tlb.coalescing` when that is `inherit`.
    pub fn coalescing(&self, name: &str) -> Coalescing {
        let own = match name {
            "l1d" => self.tlb_l1d_coalescing,
            "l1i" => self.tlb_l1i_coalescing,
            "l2" => self.tlb_l2_coalescing,
            "l2i" if self.tlb_l2i_entries > 0 => self.tlb_l2i_coalescing,
            _ => Coalescing::None,
        };
        if own == Coalescing::Inherit {
            self.tlb_coalescing
        } else {
            own
        }
    }

    /// ECH's table parameters, if `ech.enabled`.
    pub fn ech_params(&self) -> Option<crate::os::ech::EchParams> {
        self.ech_enabled.then_some(crate::os::ech::EchParams {
            ways: self.ech_ways as usize,
            slots: self.ech_slots as usize,
            load_factor: self.ech_load_factor,
            growth: self.ech_growth as usize,
        })
    }

    /// Some TLB level coalesces PTEs.
    pub fn coalescing_any(&self) -> bool {
        ["l1d", "l1i", "l2", "l2i"].iter().any(|n| !matches!(self.coalescing(n), Coalescing::None | Coalescing::Inherit))
    }

    /// Check the values together: geometries must be buildable.
    pub fn validate(&self) -> Result<(), ConfigError> {
        fn invalid(key: &str, why: String) -> ConfigError {
            ConfigError::Invalid { key: key.into(), why }
        }
        // Bounds first: every later check may then multiply and add without overflowing.
        self.check_limits()?;
        fn geometry(key: &str, entries: u64, ways: u64, may_be_zero: bool) -> Result<(), ConfigError> {
            if entries == 0 {
                return if may_be_zero { Ok(()) } else { Err(invalid(key, "must be at least 1".into())) };
            }
            // (A bad way count is the ways key's fault: "tlb.l2.entries" -> "tlb.l2.ways".)
            if ways == 0 {
                return Err(invalid(&key.replace("entries", "ways"), format!("must be at least 1 ({entries} entries)")));
            }
            if ways > 4096 {
                return Err(invalid(&key.replace("entries", "ways"), format!("{ways} ways is more than the 4096 supported")));
            }
            if entries % ways != 0 {
                return Err(invalid(key, format!("{entries} entries are not a multiple of {ways} ways")));
            }
            let sets = entries / ways;
            if !sets.is_power_of_two() {
                return Err(invalid(key, format!("{entries} entries / {ways} ways = {sets} sets, not a power of two")));
            }
            Ok(())
        }
        geometry("tlb.l1d.entries", self.tlb_l1d_entries, self.tlb_l1d_ways, false)?;
        if !self.tlb_l1d_unified {
            geometry("tlb.l1d.entries_2m", self.tlb_l1d_entries_2m, self.tlb_l1d_ways_2m, true)?;
            geometry("tlb.l1d.entries_1g", self.tlb_l1d_entries_1g, self.tlb_l1d_ways_1g, true)?;
        }
        geometry("tlb.l1i.entries", self.tlb_l1i_entries, self.tlb_l1i_ways, false)?;
        geometry("tlb.l1i.entries_2m", self.tlb_l1i_entries_2m, self.tlb_l1i_ways_2m, true)?;
        geometry("tlb.l2.entries", self.tlb_l2_entries, self.tlb_l2_ways, false)?;
        geometry("tlb.l2.entries_1g", self.tlb_l2_entries_1g, self.tlb_l2_ways_1g, true)?;
        geometry("tlb.l2i.entries", self.tlb_l2i_entries, self.tlb_l2i_ways, true)?;
        // (More ways than entries: fully associative.)
        geometry("tlb.pdc.entries", self.tlb_pdc_entries, self.tlb_pdc_ways.min(self.tlb_pdc_entries), true)?;
        geometry("tlb.l2.entries_coalesced", self.tlb_l2_entries_coalesced, self.tlb_l2_ways_coalesced, true)?;
        for (key, kb, ways) in [
            ("cache.l1i.size_kb", self.cache_l1i.size_kb, self.cache_l1i.ways),
            ("cache.l1d.size_kb", self.cache_l1d.size_kb, self.cache_l1d.ways),
            ("cache.l2.size_kb", self.cache_l2.size_kb, self.cache_l2.ways),
            ("cache.llc.size_kb", self.cache_llc.size_kb, self.cache_llc.ways),
        ] {
            geometry(key, kb * 1024 / crate::LINE_BYTES, ways, false)?;
        }
        for (key, v) in [
            ("system.cores", self.system_cores),
            ("core.width", self.core_width),
            ("core.rob", self.core_rob),
            ("core.mshrs", self.core_mshrs),
            ("core.walkers", self.core_walkers),
            ("phys.size_gb", self.phys_size_gb),
        ] {
            if v == 0 {
                return Err(invalid(key, "must be at least 1".into()));
            }
        }
        if self.system_cores > 256 {
            return Err(invalid("system.cores", "at most 256 cores are supported".into()));
        }
        if self.phys_size_gb > 4096 {
            return Err(invalid("phys.size_gb", "at most 4096 GB of physical memory is supported".into()));
        }
        if !(0.0..=1.0).contains(&self.ptp_probability) {
            return Err(invalid("ptp.probability", "must be between 0 and 1".into()));
        }
        if self.ptp_detector_epoch == 0 {
            return Err(invalid("ptp.detector_epoch", "must be at least 1".into()));
        }
        if self.tlb_prefetcher != TlbPrefetcher::None && self.tlb_prefetch_buffer == 0 {
            return Err(invalid("tlb.prefetch_buffer", "must be at least 1 with a TLB prefetcher (its prefetches go there)".into()));
        }
        for (key, p) in [("cache.l1i.policy", self.cache_l1i.policy), ("cache.l1d.policy", self.cache_l1d.policy)] {
            if p == Policy::Ptp {
                return Err(invalid(key, "ptp applies to L2 and the LLC (the paper leaves L1 alone)".into()));
            }
            if matches!(p, Policy::CsaltD | Policy::CsaltCd | Policy::Dip) {
                return Err(invalid(key, format!("{} applies to L2 and the LLC (CSALT leaves L1 alone)", p.name())));
            }
        }
        for (key, p) in [
            ("tlb.l1d.policy", self.tlb_l1d_policy),
            ("tlb.l1i.policy", self.tlb_l1i_policy),
            ("tlb.l2.policy", self.tlb_l2_policy),
            ("tlb.l2i.policy", self.tlb_l2i_policy),
        ] {
            if matches!(p, Policy::Ptp | Policy::CsaltD | Policy::CsaltCd | Policy::Dip) {
                return Err(invalid(key, format!("{} is a cache policy, not a TLB policy", p.name())));
            }
        }
        for (key, p) in [("pwc.policy", self.pwc.policy), ("virt.host_pwc.policy", self.virt_host_pwc.policy)] {
            if matches!(p, Policy::Ptp | Policy::CsaltD | Policy::CsaltCd | Policy::Dip) {
                return Err(invalid(key, format!("{} is a cache policy, not a page-walk-cache policy", p.name())));
            }
        }
        if self.csalt_epoch == 0 {
            return Err(invalid("csalt.epoch", "must be at least 1".into()));
        }
        for (key, p) in [("cache.l2.policy", self.cache_l2.policy), ("cache.llc.policy", self.cache_llc.policy)] {
            if matches!(p, Policy::CsaltD | Policy::CsaltCd) && !self.pomtlb_enabled {
                return Err(invalid(key, "CSALT partitions between data and POM-TLB lines: it needs pomtlb.enabled=true".into()));
            }
        }
        let champsim = [
            ("champsim.pscl_reread", self.champsim_pscl_reread),
            ("champsim.private_pte_lines", self.champsim_private_pte_lines),
            ("champsim.first_touch_cycles", self.champsim_first_touch_cycles > 0),
            ("champsim.no_dirty_bits", self.champsim_no_dirty_bits),
        ];
        if let Some((key, _)) = champsim.iter().find(|(_, on)| *on) {
            if self.virt_enabled || !matches!(self.pt_format, PtFormat::Radix4 | PtFormat::Radix5) {
                return Err(invalid(
                    key,
                    "ChampSim's walk behaviours are modelled on native radix page tables (pt.format=radix4 or radix5, virt.enabled=false)".into(),
                ));
            }
        }
        if self.asap_enabled && (self.virt_enabled || !matches!(self.pt_format, PtFormat::Radix4 | PtFormat::Radix5)) {
            return Err(invalid("asap.enabled", "ASAP is modelled on native radix page tables (pt.format=radix4 or radix5, virt.enabled=false)".into()));
        }
        if self.ech_enabled {
            if self.virt_enabled || self.pt_format != PtFormat::Radix4 {
                return Err(invalid("ech.enabled", "ECH replaces a native 4-level table (pt.format=radix4, virt.enabled=false)".into()));
            }
            if self.asap_enabled || self.pomtlb_enabled || self.coalescing_any() {
                return Err(invalid("ech.enabled", "ECH is a page-table organization of its own: not with ASAP, the POM-TLB or PTE coalescing".into()));
            }
            if !self.ech_slots.is_power_of_two() || !self.ech_growth.is_power_of_two() {
                return Err(invalid("ech.slots", "ech.slots and ech.growth must be powers of two".into()));
            }
            if self.ech_load_factor <= 0.0 || self.ech_load_factor.is_nan() {
                return Err(invalid("ech.load_factor", "must be above 0".into()));
            }
        }
        if self.asap_levels == 0 {
            return Err(invalid("asap.levels", "must be at least 1".into()));
        }
        if self.virt_vcpus_per_core == 0 || self.virt_vcpu_slice_cycles == 0 {
            return Err(invalid("virt.vcpus_per_core", "virt.vcpus_per_core and virt.vcpu_slice_cycles must be at least 1".into()));
        }
        if self.virt_vcpus_per_core > 1 && (!self.virt_enabled || self.system_threads_per_core > 1 || self.virt_vms > 1) {
            return Err(invalid("virt.vcpus_per_core", "vCPU overcommit needs virt.enabled=true, one VM (virt.vms=1) and system.threads_per_core=1".into()));
        }
        if self.system_threads_per_core == 0 {
            return Err(invalid("system.threads_per_core", "must be at least 1".into()));
        }
        if self.system_threads_per_core > 1 && self.ptp_mode == PtpMode::Detector && [self.cache_l2.policy, self.cache_llc.policy].contains(&Policy::Ptp) {
            return Err(invalid("ptp.mode", "the TLB-miss phase detector is per core: it needs system.threads_per_core=1".into()));
        }
        if self.cache_llc_ways_per_core > 0 {
            if self.cache_llc_ways_per_core > self.cache_llc.ways {
                return Err(invalid(
                    "cache.llc.ways_per_core",
                    format!("{} is more than the LLC's {} ways", self.cache_llc_ways_per_core, self.cache_llc.ways),
                ));
            }
            if self.cache_llc.ways > 64 {
                return Err(invalid("cache.llc.ways_per_core", format!("way partitioning supports LLCs of at most 64 ways, not {}", self.cache_llc.ways)));
            }
            if !matches!(self.cache_llc.policy, Policy::Lru | Policy::Fifo) {
                return Err(invalid("cache.llc.ways_per_core", format!("way partitioning needs cache.llc.policy lru or fifo, not {}", self.cache_llc.policy)));
            }
        }
        if self.ptbaker_stride_pages == 0 {
            return Err(invalid("ptbaker.stride_pages", "must be at least 1".into()));
        }
        if self.ptbaker_mode != PtBakerMode::Off && self.ptbaker_placement == PtBakerPlacement::Smt && self.system_threads_per_core < 2 {
            return Err(invalid("ptbaker.placement", "smt needs system.threads_per_core=2 (a sibling for the helper)".into()));
        }
        if self.cache_llc_fill == LlcFill::Victim && self.cache_llc_inclusive {
            return Err(invalid("cache.llc.fill", "a victim LLC cannot be inclusive (cache.llc.inclusive=true): it holds only what the L2s evicted".into()));
        }
        if self.tlb_coalescing == Coalescing::Inherit {
            return Err(invalid("tlb.coalescing", "must be none, 16k or 32k (inherit is for the per-structure keys)".into()));
        }
        if self.virt_enabled && self.coalescing_any() {
            return Err(invalid("tlb.coalescing", "PTE coalescing is modelled on native walks only, not with virt.enabled".into()));
        }
        if self.pcc_on() && self.pcc_entries == 0 {
            return Err(invalid("pcc.entries", "must be at least 1 with a PCC".into()));
        }
        for (key, n) in [("pcc.entries", self.pcc_entries), ("pcc.entries_1g", self.pcc_entries_1g)] {
            if n > 65536 {
                return Err(invalid(key, format!("{n} entries is more than the 65536 supported (the paper sweeps 4 to 1024)")));
            }
        }
        if !(1..=16).contains(&self.pcc_counter_bits) {
            return Err(invalid("pcc.counter_bits", "must be between 1 and 16".into()));
        }
        if self.pomtlb_enabled {
            for (key, mb) in [("pomtlb.size_mb", self.pomtlb_size_mb), ("pomtlb.large_size_mb", self.pomtlb_large_size_mb)] {
                if mb == 0 || !mb.is_power_of_two() || mb > 1024 {
                    return Err(invalid(key, format!("{mb} MB: must be a power of two between 1 and 1024")));
                }
            }
            if !(1..=4).contains(&self.pomtlb_ways) {
                return Err(invalid("pomtlb.ways", "must be between 1 and 4 (16-byte entries, a set is one 64-byte line)".into()));
            }
            if self.pomtlb_base_gb < self.phys_size_gb || self.pomtlb_base_gb > 1 << 20 {
                return Err(invalid("pomtlb.base_gb", format!("must lie above physical memory ({} GB) and below 1 PB", self.phys_size_gb)));
            }
            if self.pomtlb_latency > 1 << 20 {
                return Err(invalid("pomtlb.latency", "must be at most 2^20 cycles".into()));
            }
            if !(self.pomtlb_bandwidth_gbps >= 0.0 && self.pomtlb_bandwidth_gbps.is_finite()) {
                return Err(invalid("pomtlb.bandwidth_gbps", "must be a finite number, 0 or more".into()));
            }
        }
        // (A clock below 10 MHz rounds every DRAM latency to no cycles.)
        if self.core_freq_ghz.is_nan() || self.core_freq_ghz < 0.01 {
            return Err(invalid("core.freq_ghz", "must be at least 0.01 (10 MHz)".into()));
        }
        for (key, n, w) in [
            ("pwc.l2.entries", self.pwc.l2_entries, self.pwc.l2_ways),
            ("pwc.l3.entries", self.pwc.l3_entries, self.pwc.l3_ways),
            ("pwc.l4.entries", self.pwc.l4_entries, self.pwc.l4_ways),
            ("pwc.l5.entries", self.pwc.l5_entries, self.pwc.l5_ways),
            ("virt.host_pwc.l2.entries", self.virt_host_pwc.l2_entries, self.virt_host_pwc.l2_ways),
            ("virt.host_pwc.l3.entries", self.virt_host_pwc.l3_entries, self.virt_host_pwc.l3_ways),
            ("virt.host_pwc.l4.entries", self.virt_host_pwc.l4_entries, self.virt_host_pwc.l4_ways),
            ("virt.host_pwc.l5.entries", self.virt_host_pwc.l5_entries, self.virt_host_pwc.l5_ways),
        ] {
            // (0 ways: fully associative.)
            geometry(key, n, if w == 0 { n } else { w }, true)?;
        }
        if self.pt_recursive_slot != 0 && self.pt_recursive_slot < 256 {
            return Err(invalid("pt.recursive_slot", "must be 0 (none) or a kernel-half slot, 256-511".into()));
        }
        if self.pt_recursive_slot != 0 && self.pt_format == PtFormat::Fpt1G {
            return Err(invalid("pt.recursive_slot", "a 1 GB root (pt.format=fpt-1g) has no 4 KB sub-tables to recurse through".into()));
        }
        if self.pt_nf_threshold > 512 {
            return Err(invalid("pt.nf_threshold", "a 1 GB region holds at most 512 2 MB pages".into()));
        }
        geometry("pwc.flat.entries", self.pwc.flat_entries, self.pwc.flat_entries, true)?;
        geometry("virt.host_pwc.flat.entries", self.virt_host_pwc.flat_entries, self.virt_host_pwc.flat_entries, true)?;
        if self.pt_format != PtFormat::Radix5 && self.pwc.l5_entries > 0 {
            return Err(invalid("pwc.l5.entries", "only pt.format=radix5 has L5 entries; set it or 0 entries".into()));
        }
        for (key, v) in [
            ("cache.l1i.energy_nj", self.cache_l1i.energy_nj),
            ("cache.l1d.energy_nj", self.cache_l1d.energy_nj),
            ("cache.l2.energy_nj", self.cache_l2.energy_nj),
            ("cache.llc.energy_nj", self.cache_llc.energy_nj),
            ("dram.energy_nj", self.dram_energy_nj),
            ("dram.latency_ns", self.dram_latency_ns),
            ("dram.bandwidth_gbps", self.dram_bandwidth_gbps),
            ("dram.trp_ns", self.dram_trp_ns),
            ("dram.trcd_ns", self.dram_trcd_ns),
            ("dram.tcas_ns", self.dram_tcas_ns),
            ("dram.trefi_ns", self.dram_trefi_ns),
            ("dram.trfc_ns", self.dram_trfc_ns),
            ("dram.turnaround_ns", self.dram_turnaround_ns),
        ] {
            if v < 0.0 {
                return Err(invalid(key, "must not be negative".into()));
            }
        }
        if !self.dram_banks.is_power_of_two() && self.dram_banks != 0 {
            return Err(invalid("dram.banks", format!("{} is not a power of two (0: no banks)", self.dram_banks)));
        }
        if self.dram_trefi_ns > 0.0 && self.dram_trefi_ns <= self.dram_trfc_ns + self.dram_trp_ns + self.dram_trcd_ns + self.dram_tcas_ns {
            return Err(invalid(
                "dram.trefi_ns",
                format!("{} ns leaves no time between refreshes of dram.trfc_ns = {} ns for a row conflict", self.dram_trefi_ns, self.dram_trfc_ns),
            ));
        }
        if !self.loader_trace_region_kb.is_power_of_two() || self.loader_trace_region_kb < 4 {
            return Err(invalid("loader.trace_region_kb", format!("{} is not a power of two of at least 4", self.loader_trace_region_kb)));
        }
        if !self.dram_row_kb.is_power_of_two() {
            return Err(invalid("dram.row_kb", format!("{} is not a power of two", self.dram_row_kb)));
        }
        self.validate_os()
    }

    /// Every numeric key within its [`LIMITS`], and the whole machine within host memory.
    fn check_limits(&self) -> Result<(), ConfigError> {
        for &(key, _, _, lim) in key_table() {
            let (Some(lim), Some(text)) = (lim, self.get(key)) else { continue };
            let why = match lim {
                Limit::Int(max) => u64::parse(&text).is_none_or(|v| v > max).then(|| format!("{text} is more than the {max} supported")),
                Limit::IntRange(min, max) => u64::parse(&text).is_none_or(|v| v < min || v > max).then(|| format!("must be between {min} and {max}")),
                Limit::Real(max) => f64::parse(&text).is_none_or(|v| v > max).then(|| format!("{text} is more than the {max} supported")),
            };
            if let Some(why) = why {
                return Err(ConfigError::Invalid { key: key.into(), why });
            }
        }
        let bytes = self.host_entries().saturating_mul(HOST_BYTES_PER_ENTRY);
        if bytes > HOST_BYTES_MAX {
            let gb = bytes.div_ceil(1 << 30);
            return Err(ConfigError::Invalid {
                key: "system.cores".into(),
                why: format!(
                    "this machine's caches and TLBs would take about {gb} GB of host memory, more than the {} GB supported (fewer cores or smaller structures)",
                    HOST_BYTES_MAX >> 30
                ),
            });
        }
        Ok(())
    }

    /// Cache lines and TLB entries the machine allocates (within [`LIMITS`] this cannot
    /// overflow: 256 cores x about 2^24 entries each).
    fn host_entries(&self) -> u64 {
        let lines = |kb: u64| kb * 1024 / crate::LINE_BYTES;
        let per_core = self.tlb_l1d_entries
            + self.tlb_l1d_entries_2m
            + self.tlb_l1d_entries_1g
            + self.tlb_l1i_entries
            + self.tlb_l1i_entries_2m
            + self.tlb_l2_entries
            + self.tlb_l2_entries_1g
            + self.tlb_pdc_entries
            + self.tlb_nested_entries
            + lines(self.cache_l1i.size_kb)
            + lines(self.cache_l1d.size_kb)
            + lines(self.cache_l2.size_kb);
        self.system_cores * per_core + lines(self.cache_llc.size_kb)
    }

    /// The OS and physical-memory keys.
    fn validate_os(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: &str| ConfigError::Invalid { key: key.into(), why: why.into() };
        if self.os_processes == 0 || self.os_processes > 256 {
            return Err(invalid("os.processes", "must be between 1 and 256"));
        }
        if self.os_processes * self.system_cores > 4095 {
            return Err(invalid("os.processes", "processes x cores must fit the 4095 PCIDs"));
        }
        if self.os_timeslice_cycles == 0 {
            return Err(invalid("os.timeslice_cycles", "must be at least 1"));
        }
        if self.os_khugepaged_interval_cycles == 0 {
            return Err(invalid("os.khugepaged_interval_cycles", "must be at least 1"));
        }
        for (key, v) in [("os.readahead_pages", self.os_readahead_pages), ("os.fault_around_pages", self.os_fault_around_pages)] {
            if !v.is_power_of_two() {
                return Err(invalid(key, "must be a power of two between 1 and 512"));
            }
        }
        if self.os_reservation_promote_at == 0 {
            return Err(invalid("os.reservation_promote_at", "must be between 1 and 512"));
        }
        if self.os_khugepaged_max_ptes_none > 511 {
            return Err(invalid("os.khugepaged_max_ptes_none", "must be at most 511"));
        }
        if self.os_reservations != Reservations::None
            && (!matches!(self.os_page_policy, PagePolicy::Never | PagePolicy::FreeBsd) || self.os_promotion == Promotion::Thp)
        {
            return Err(invalid(
                "os.reservations",
                &format!(
                    "{} is FreeBSD's reservation allocator, which sets the fault-time policy: it cannot run with os.page_policy={} or os.promotion=thp",
                    self.os_reservations, self.os_page_policy
                ),
            ));
        }
        match self.os_promotion {
            Promotion::None => {}
            Promotion::Thp => {
                if !matches!(self.os_page_policy, PagePolicy::Never | PagePolicy::Thp) {
                    return Err(invalid(
                        "os.promotion",
                        &format!("thp is Linux's greedy THP, which sets the fault-time policy: it cannot run with os.page_policy={}", self.os_page_policy),
                    ));
                }
            }
            Promotion::Pcc | Promotion::HawkEye | Promotion::Oracle => {
                if self.os_promotion_interval == 0 {
                    return Err(invalid("os.promotion_interval", &format!("must be at least 1 with os.promotion={}", self.os_promotion)));
                }
            }
        }
        if self.os_promotion == Promotion::HawkEye && self.hawkeye_window_refs == 0 {
            return Err(invalid("hawkeye.window_refs", "must be at least 1 with os.promotion=hawkeye"));
        }
        if self.os_promotion == Promotion::HawkEye && (self.os_processes > 1 || self.virt_enabled) {
            return Err(invalid("os.promotion", "hawkeye models one address space: needs os.processes=1 and virt.enabled=false"));
        }
        if !self.pcc_bias.trim().is_empty() {
            if self.os_promotion != Promotion::Pcc {
                return Err(invalid("pcc.bias", &format!("is a policy of the PCC's daemon: needs os.promotion=pcc, not {}", self.os_promotion)));
            }
            if self.pcc_bias_programs().is_none() {
                return Err(invalid("pcc.bias", &format!("'{}': expected program numbers separated by commas, as 0,2", self.pcc_bias)));
            }
        }
        if self.pcc_demotion && self.os_promotion != Promotion::Pcc {
            return Err(invalid("pcc.demotion", &format!("is done by the PCC's daemon: needs os.promotion=pcc, not {}", self.os_promotion)));
        }
        if !(0.0..=1.0).contains(&self.os_promotion_cap) {
            return Err(invalid("os.promotion_cap", "must be between 0 and 1 (a fraction of the footprint)"));
        }
        if !(0.0..=1.0).contains(&self.phys_aged_target) {
            return Err(invalid("phys.aged_target", "must be between 0 and 1"));
        }
        if !(self.phys_available_gb >= 0.0 && self.phys_available_gb <= self.phys_size_gb as f64) {
            return Err(invalid("phys.available_gb", "must be between 0 and phys.size_gb"));
        }
        if self.phys_pcp_high < self.phys_pcp_batch {
            return Err(invalid("phys.pcp_high", "must be at least phys.pcp_batch"));
        }
        if self.os_madvise_regions.split(',').any(|n| n.trim().is_empty()) && !self.os_madvise_regions.trim().is_empty() {
            return Err(invalid("os.madvise_regions", "has an empty name in the list"));
        }
        self.validate_shootdown()?;
        self.validate_virt()
    }

    /// The shootdown protocol and what it relies on.
    fn validate_shootdown(&self) -> Result<(), ConfigError> {
        let invalid = |why: &str| ConfigError::Invalid { key: "shootdown.protocol".into(), why: why.into() };
        let cotagless = self.shootdown_protocol == ShootdownProtocol::TcatCotagless;
        match self.shootdown_protocol {
            ShootdownProtocol::Ipi | ShootdownProtocol::Ideal => Ok(()),
            ShootdownProtocol::KvmTlb if !self.virt_enabled => Err(invalid("kvm_tlb is a hypervisor's protocol: needs virt.enabled=true")),
            ShootdownProtocol::KvmTlb => Ok(()),
            _ if !self.pomtlb_enabled => Err(invalid("TCAT keeps translations coherent through their POM-TLB lines: needs pomtlb.enabled=true")),
            _ if !self.coherence_enabled => Err(invalid("TCAT runs on the caches' coherence: needs coherence.enabled=true")),
            _ if self.system_cores > 64 => Err(invalid("TCAT's directory tracks at most 64 cores' TLBs")),
            _ if self.coalescing_any() => Err(invalid("TCAT with coalesced TLB entries is not modelled (a group's pages have several POM-TLB lines)")),
            _ if self.pomtlb_hash != PomHash::Vpn => Err(invalid("TCAT needs one POM-TLB line per page: pomtlb.hash=vpn")),
            _ if cotagless && self.tlb_set_index != TlbSetIndex::VpnXorVm => Err(invalid(
                "tcat-cotagless drops the private-TLB set a POM-TLB line names, so the TLBs must index by the same hash: set tlb.set_index=vpn_xor_vm",
            )),
            _ => Ok(()),
        }
    }

    /// The virtualization keys.
    fn validate_virt(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: String| ConfigError::Invalid { key: key.into(), why };
        if self.virt_vms == 0 || self.virt_vms > 256 {
            return Err(invalid("virt.vms", "must be between 1 and 256".into()));
        }
        if !self.virt_enabled {
            if self.virt_vms > 1 {
                return Err(invalid("virt.vms", "more than one VM needs virt.enabled=true".into()));
            }
            return Ok(());
        }
        if self.virt_guest_mem_gb == 0 || self.virt_guest_mem_gb > 4096 {
            return Err(invalid("virt.guest_mem_gb", "must be between 1 and 4096".into()));
        }
        if self.virt_switch_interval_cycles == 0 {
            return Err(invalid("virt.switch_interval_cycles", "must be at least 1".into()));
        }
        if self.virt_host_pt_format != PtFormat::Radix5 && self.virt_host_pwc.l5_entries > 0 {
            return Err(invalid("virt.host_pwc.l5.entries", "only a radix5 host table has L5 entries; set virt.host_pt.format=radix5 or 0 entries".into()));
        }
        if self.tlb_nested_entries > 0 {
            let (e, w) = (self.tlb_nested_entries, self.tlb_nested_ways);
            if w == 0 || w > 4096 || e % w != 0 || !(e / w).is_power_of_two() {
                return Err(invalid("tlb.nested.entries", format!("{e} entries / {w} ways is not a power-of-two number of sets (ways at most 4096)")));
            }
        }
        Ok(())
    }

    /// The fault-time page-size policy in force: `os.page_policy`, or thp when
    /// `os.promotion=thp` (Linux's greedy THP) asks for it.
    pub fn page_policy(&self) -> PagePolicy {
        if self.os_promotion == Promotion::Thp {
            PagePolicy::Thp
        } else if self.os_reservations != Reservations::None {
            PagePolicy::FreeBsd
        } else {
            self.os_page_policy
        }
    }

    /// Whether a full FreeBSD reservation is promoted to a 2 MB page: `os.reservations`
    /// (reserv: no, super: yes), or `os.reservation_promote` when it is none.
    pub fn reservation_promote(&self) -> bool {
        match self.os_reservations {
            Reservations::None => self.os_reservation_promote,
            Reservations::Reserv => false,
            Reservations::Super => true,
        }
    }

    /// The programs `pcc.bias` names (empty: none); None if it does not parse.
    pub fn pcc_bias_programs(&self) -> Option<Vec<usize>> {
        self.pcc_bias.split(',').map(str::trim).filter(|x| !x.is_empty()).map(|x| x.parse().ok()).collect()
    }

    /// Whether cores have a Promotion Candidate Cache (`pcc.enabled`, or `os.promotion=pcc`).
    pub fn pcc_on(&self) -> bool {
        self.pcc_enabled || self.os_promotion == Promotion::Pcc
    }

    /// The page-table layout `pt.format` selects.
    pub fn pt_layout(&self) -> crate::os::pt::Layout {
        use crate::os::pt::Layout;
        match self.pt_format {
            PtFormat::Radix4 => Layout::Radix4,
            PtFormat::Radix5 => Layout::Radix5,
            PtFormat::Fpt => Layout::Fpt { nf: self.pt_nf_threshold as u16 },
            PtFormat::FptL3L2 => Layout::FptL3L2,
            PtFormat::FptL4L3 => Layout::FptL4L3,
            PtFormat::Fpt5 => Layout::Fpt5,
            PtFormat::Fpt1G => Layout::Fpt1G,
        }
    }

    /// DRAM latency in core cycles.
    pub fn dram_latency_cycles(&self) -> u64 {
        (self.dram_latency_ns * self.core_freq_ghz).round() as u64
    }

    /// The DRAM's write drains in core cycles (`dram.write_batch` > 0), or None.
    pub fn dram_drain_timing(&self) -> Option<crate::memory::dram::DrainTiming> {
        (self.dram_write_batch > 0).then(|| crate::memory::dram::DrainTiming {
            batch: self.dram_write_batch,
            turnaround: (self.dram_turnaround_ns * self.core_freq_ghz).round() as u64,
        })
    }

    /// The DRAM's banks in core cycles (`dram.banks` > 0), or None.
    pub fn dram_bank_timing(&self) -> Option<crate::memory::dram::BankTiming> {
        let cycles = |ns: f64| (ns * self.core_freq_ghz).round() as u64;
        (self.dram_banks > 0).then(|| crate::memory::dram::BankTiming {
            banks: self.dram_banks,
            row_lines: self.dram_row_kb * 1024 / crate::LINE_BYTES,
            trp: cycles(self.dram_trp_ns),
            trcd: cycles(self.dram_trcd_ns),
            tcas: cycles(self.dram_tcas_ns),
            trefi: cycles(self.dram_trefi_ns),
            trfc: cycles(self.dram_trfc_ns),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid_and_round_trips() {
        let c = Config::default();
        c.validate().unwrap();
        let pairs = c.entries();
        let owned: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        let back = Config::from_pairs(owned.iter().map(|(k, v)| (k.as_str(), v.as_str()))).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn unknown_key_names_its_neighbours() {
        let e = Config::default().set("tlb.l2.entires", "5").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("tlb.l2.entires"), "{msg}");
        assert!(msg.contains("tlb.l2.entries"), "{msg}");
        let e = Config::default().set("nosuch", "5").unwrap_err().to_string();
        assert!(e.contains("sections: system, core, timing, tlb"), "{e}");
        let listed: Vec<&str> = e.split("sections: ").nth(1).unwrap().trim_end_matches(')').split(", ").collect();
        assert!(listed.iter().all(|s| listed.iter().filter(|t| *t == s).count() == 1), "each section once: {e}");
    }

    #[test]
    fn what_the_user_typed_stays_on_one_line() {
        // (Found by make fuzz: a key of "\n" broke the one-line error.)
        let e = Config::default().set("\n", "0").unwrap_err().to_string();
        assert!(e.starts_with("unknown config key '\\n'") && !e.contains('\n'), "{e}");
        let e = Config::default().set("core.rob", "1\n2").unwrap_err().to_string();
        assert!(e.contains("'1\\n2'") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn impossible_geometries_are_errors() {
        let e = Config::from_pairs([("tlb.l2.entries", "0")]).unwrap_err().to_string();
        assert_eq!(e, "config key 'tlb.l2.entries': must be at least 1");
        let e = Config::from_pairs([("tlb.l2.entries", "1000")]).unwrap_err().to_string();
        assert!(e.contains("not a multiple"), "{e}");
        let e = Config::from_pairs([("tlb.l2.entries", "1200"), ("tlb.l2.ways", "12")]).unwrap_err().to_string();
        assert!(e.contains("100 sets, not a power of two"), "{e}");
        let e = Config::from_pairs([("cache.llc.policy", "plru")]).unwrap_err().to_string();
        assert_eq!(e, "config key 'cache.llc.policy': 'plru' is not one of lru|srrip|random|ptp|dip|nru|fifo|csalt-d|csalt-cd");
        assert!(Config::from_pairs([("pwc.l5.entries", "2")]).is_err());
        // Set-associative PWC levels: entries a multiple of the ways, a power-of-two sets.
        assert!(Config::from_pairs([("pwc.l2.entries", "32"), ("pwc.l2.ways", "8")]).is_ok());
        assert!(Config::from_pairs([("pwc.l2.entries", "32"), ("pwc.l2.ways", "5")]).is_err());
        assert!(Config::from_pairs([("virt.host_pwc.l3.entries", "24"), ("virt.host_pwc.l3.ways", "2")]).is_err());
        assert!(Config::from_pairs([("pwc.l5.entries", "2"), ("pt.format", "radix5")]).is_ok());
        // A PWC policy ranks by use; the cache policies that rank by what a line holds do not apply.
        assert_eq!(Config::from_pairs([("pwc.policy", "fifo")]).unwrap().pwc.policy, Policy::Fifo);
        assert!(Config::from_pairs([("virt.host_pwc.policy", "srrip")]).is_ok());
        let e = Config::from_pairs([("pwc.policy", "ptp")]).unwrap_err().to_string();
        assert!(e.contains("pwc.policy") && e.contains("not a page-walk-cache policy"), "{e}");
    }

    /// ChampSim's walk behaviours are validation knobs for native radix tables: each one names
    /// itself when set on a machine it does not describe.
    #[test]
    fn os_reservations_names_the_papers_freebsd_kernels() {
        let c = |pairs: &[(&str, &str)]| Config::from_pairs(pairs.iter().copied());
        let reserv = c(&[("os.reservations", "reserv")]).unwrap();
        assert_eq!((reserv.page_policy(), reserv.reservation_promote()), (PagePolicy::FreeBsd, false));
        let sup = c(&[("os.reservations", "super"), ("os.page_policy", "freebsd")]).unwrap();
        assert_eq!((sup.page_policy(), sup.reservation_promote()), (PagePolicy::FreeBsd, true));
        let none = c(&[("os.page_policy", "freebsd"), ("os.reservation_promote", "false")]).unwrap();
        assert_eq!((none.page_policy(), none.reservation_promote()), (PagePolicy::FreeBsd, false));
        for bad in [&[("os.reservations", "super"), ("os.page_policy", "thp")][..], &[("os.reservations", "reserv"), ("os.promotion", "thp")]] {
            let e = c(bad).unwrap_err().to_string();
            assert!(e.contains("os.reservations") && !e.contains('\n'), "{e}");
        }
    }

    /// A refresh interval must leave room for a row conflict after each refresh.
    #[test]
    fn refresh_interval_leaves_time_between_refreshes() {
        assert!(Config::from_pairs([("dram.trefi_ns", "3906.25"), ("dram.trfc_ns", "368")]).is_ok());
        // (A preset's drains with the bandwidth limit taken off, as the benchmarks and the
        // flat-DRAM runs of the READMEs do: no channel, so nothing drains.)
        assert!(Config::from_pairs([("dram.write_batch", "8"), ("dram.bandwidth_gbps", "0")]).is_ok());
        let e = Config::from_pairs([("dram.trefi_ns", "390")]).unwrap_err().to_string();
        assert!(e.starts_with("config key 'dram.trefi_ns'") && !e.contains('\n'), "{e}");
        assert!(Config::from_pairs([("dram.trefi_ns", "0"), ("dram.trfc_ns", "1e5")]).is_ok(), "no refresh: tRFC unused");
    }

    #[test]
    fn champsim_walk_knobs_need_native_radix_tables() {
        for (key, on) in [
            ("champsim.pscl_reread", "true"),
            ("champsim.private_pte_lines", "true"),
            ("champsim.first_touch_cycles", "200"),
            ("champsim.no_dirty_bits", "true"),
        ] {
            assert!(Config::from_pairs([(key, on)]).is_ok(), "{key}");
            let e = Config::from_pairs([(key, on), ("pt.format", "fpt")]).unwrap_err().to_string();
            assert!(e.starts_with(&format!("config key '{key}'")), "{e}");
            assert!(Config::from_pairs([(key, on), ("virt.enabled", "true")]).is_err(), "{key}");
        }
        assert_eq!(Config::from_pairs([("phys.frame_order", "shuffled:1")]).unwrap().phys_frame_order, FrameOrder::Shuffled(1));
        let e = Config::from_pairs([("phys.frame_order", "random")]).unwrap_err().to_string();
        assert!(e.contains("ascending or shuffled:SEED"), "{e}");
    }

    #[test]
    fn values_parse_leniently_but_exactly() {
        assert_eq!(u64::parse("1_536"), Some(1536));
        assert_eq!(u64::parse("2048.0"), Some(2048));
        assert_eq!(u64::parse("2048.5"), None);
        assert_eq!(u64::parse("-1"), None);
        assert_eq!(bool::parse("on"), Some(true));
    }

    #[test]
    fn every_numeric_key_has_a_limit_and_the_defaults_are_within() {
        for k in Config::schema() {
            let numeric = k.expected == u64::expected() || k.expected == f64::expected();
            assert_eq!(numeric, k.max.is_some(), "{}: numeric keys need an entry in LIMITS, others none", k.key);
        }
        for (key, _) in LIMITS {
            assert!(Config::keys().contains(key), "LIMITS names '{key}', which is not a key");
        }
    }

    #[test]
    fn values_beyond_their_limit_are_one_error_naming_the_key() {
        let e = Config::from_pairs([("tlb.l1d.entries", "9223372036854775808")]).unwrap_err().to_string();
        assert_eq!(e, "config key 'tlb.l1d.entries': 9223372036854775808 is more than the 1048576 supported");
        let e = Config::from_pairs([("os.fault_cycles", "18446744073709551615")]).unwrap_err().to_string();
        assert!(e.contains("os.fault_cycles") && e.contains("4294967296"), "{e}");
        let e = Config::from_pairs([("cache.llc.size_kb", "18446744073709551615")]).unwrap_err().to_string();
        assert!(e.contains("cache.llc.size_kb"), "{e}");
        let e = Config::from_pairs([("core.freq_ghz", "1e300")]).unwrap_err().to_string();
        assert!(e.contains("core.freq_ghz"), "{e}");
        // Each key at its limit is accepted on its own (geometry permitting)...
        assert!(Config::from_pairs([("os.fault_cycles", "4294967296")]).is_ok());
        assert!(Config::from_pairs([("tlb.l2.entries", "1048576"), ("tlb.l2.ways", "16")]).is_ok());
        // ...but not a machine whose structures together would exhaust host memory.
        let e = Config::from_pairs([("system.cores", "256"), ("cache.l2.size_kb", "1048576")]).unwrap_err().to_string();
        assert!(e.contains("GB of host memory"), "{e}");
    }
}
