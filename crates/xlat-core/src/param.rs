//! The values a configuration key can hold: the [`ConfigValue`] trait (parse, show, what a
//! valid value looks like) and the named choices (replacement policies, page policies, the
//! allocator's orders, ...). A floor below the configuration table and the components it
//! configures: it imports nothing of the model, so a component can name its parameters' types
//! without importing the table (`config.rs`), which imports the components.

/// A value type a config key can hold.
pub trait ConfigValue: Sized + Clone {
    fn parse(s: &str) -> Option<Self>;
    fn show(&self) -> String;
    /// What a valid value looks like, for error messages ("an integer", "one of lru|srrip").
    fn expected() -> String;
}

impl ConfigValue for u64 {
    fn parse(s: &str) -> Option<Self> {
        let t = s.trim().replace('_', "");
        if let Some(h) = t.strip_prefix("0x") {
            return u64::from_str_radix(h, 16).ok();
        }
        t.parse().ok().or_else(|| {
            // Accept integral floats ("2048.0") as TOML and Python may produce them.
            t.parse::<f64>().ok().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19).map(|f| f as u64)
        })
    }
    fn show(&self) -> String {
        self.to_string()
    }
    fn expected() -> String {
        "a non-negative integer".into()
    }
}

impl ConfigValue for f64 {
    fn parse(s: &str) -> Option<Self> {
        s.trim().parse().ok().filter(|f: &f64| f.is_finite())
    }
    fn show(&self) -> String {
        format!("{self}")
    }
    fn expected() -> String {
        "a number".into()
    }
}

impl ConfigValue for String {
    fn parse(s: &str) -> Option<Self> {
        Some(s.trim().to_string())
    }
    fn show(&self) -> String {
        self.clone()
    }
    fn expected() -> String {
        "text".into()
    }
}

impl ConfigValue for bool {
    fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Some(true),
            "false" | "0" | "no" | "off" => Some(false),
            _ => None,
        }
    }
    fn show(&self) -> String {
        self.to_string()
    }
    fn expected() -> String {
        "true or false".into()
    }
}

/// A configuration key or value that cannot be used, with the key's name.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
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

/// The largest value of a numeric key.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    Int(u64),
    /// An integer with a lower bound too: (min, max).
    IntRange(u64, u64),
    Real(f64),
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Limit::Int(n) | Limit::IntRange(_, n) => write!(f, "{n}"),
            Limit::Real(x) => write!(f, "{x}"),
        }
    }
}

/// The bounds most numeric keys share. Why they are what they are: sizes and counts stay far
/// above any machine studied and far below what would overflow a size computation or exhaust
/// host memory (a cache or TLB is allocated whole, and its host arrays are indexed with
/// `usize` arithmetic); a latency or cost is charged per event, so with at most 2^32 cycles
/// per event a cycle counter cannot wrap before 2^32 such events; intervals and reference
/// counts are added to a running `u64` clock.
pub mod bound {
    pub const ENTRIES: u64 = 1 << 20;
    pub const WAYS: u64 = 4096;
    pub const PWC: u64 = 4096;
    pub const CACHE_KB: u64 = 1 << 20;
    pub const LATENCY: u64 = 1 << 20;
    pub const COST: u64 = 1 << 32;
    pub const INTERVAL: u64 = 1 << 50;
}

/// One key of a component: its name below the component's mount point, its doc (`{}` stands
/// for the mounted structure's name), its upper bound if numeric, and what it accepts.
pub struct ComponentKey {
    pub suffix: &'static str,
    pub doc: &'static str,
    pub limit: Option<Limit>,
    pub expected: fn() -> String,
}

/// A component's parameters, as the configuration table mounts them: its keys, and each
/// key's value in text form to read and write.
pub trait Component {
    /// Its keys, below its mount point.
    const KEYS: &'static [ComponentKey];
    /// Set key `suffix` (of the full key `key`); `None` if it has no such key.
    fn set(&mut self, suffix: &str, key: &str, value: &str) -> Option<Result<(), ConfigError>>;
    /// The value of key `suffix` in text form; `None` if it has no such key.
    fn get(&self, suffix: &str) -> Option<String>;
    /// Check the values together, where a bound cannot say (a geometry, a power of two, one
    /// key's value given another's); `key(suffix)` is the full key as mounted.
    fn check(&self, key: &dyn Fn(&str) -> String) -> Result<(), ConfigError>;
}

/// The error of key `key`: `why`.
pub fn invalid(key: String, why: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { key, why: why.into() }
}

/// A set-associative structure's geometry: `entries` (0 only if `may_be_zero`) in sets of
/// `ways`, a power-of-two number of sets; the errors name `entries_key` or, for a bad way
/// count, `ways_key`.
pub fn geometry(entries_key: String, ways_key: String, entries: u64, ways: u64, may_be_zero: bool) -> Result<(), ConfigError> {
    if entries == 0 {
        return if may_be_zero { Ok(()) } else { Err(invalid(entries_key, "must be at least 1")) };
    }
    if ways == 0 {
        return Err(invalid(ways_key, format!("must be at least 1 ({entries} entries)")));
    }
    if ways > 4096 {
        return Err(invalid(ways_key, format!("{ways} ways is more than the 4096 supported")));
    }
    if entries % ways != 0 {
        return Err(invalid(entries_key, format!("{entries} entries are not a multiple of {ways} ways")));
    }
    let sets = entries / ways;
    if !sets.is_power_of_two() {
        return Err(invalid(entries_key, format!("{entries} entries / {ways} ways = {sets} sets, not a power of two")));
    }
    Ok(())
}

/// A machine's mounted components, found by type: what a mechanism's constructor asks for
/// (see `mech::mechanisms!`), without naming the configuration that holds them.
pub trait Parts {
    /// The mounted component of type `T` (the first, if several are). A type nothing mounts
    /// is a wiring error of the engine, found by every test that builds a machine.
    fn part<T: 'static>(&self) -> &T;
}

/// Declares a component's parameters once, in the module of the component they configure: a
/// struct whose fields are keys below wherever the configuration table (`config.rs`) mounts
/// it (`cache.l2` + `size_kb` is `cache.l2.size_kb`; a component mounted at the root names
/// whole keys). Each field: its type, its default, its key below the mount point, its upper
/// bound if numeric, and its doc. An optional `check(p, key) { ... }` after the fields checks
/// the values together ([`Component::check`]: `p` the parameters, `key("suffix")` a full key).
macro_rules! component {
    ($(#[$m:meta])* $name:ident { $( $field:ident : $ty:ty = $default:expr ; $suffix:literal ; $limit:expr ; $doc:literal ; )* }) => {
        $crate::param::component! { $(#[$m])* $name { $( $field : $ty = $default ; $suffix ; $limit ; $doc ; )* } check(_p, _key) { Ok(()) } }
    };
    ($(#[$m:meta])* $name:ident { $( $field:ident : $ty:ty = $default:expr ; $suffix:literal ; $limit:expr ; $doc:literal ; )* } check($p:ident, $key:ident) $check:block) => {
        $(#[$m])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name { $( pub $field: $ty, )* }

        impl Default for $name {
            fn default() -> Self { $name { $( $field: $default, )* } }
        }

        impl $crate::param::Component for $name {
            const KEYS: &'static [$crate::param::ComponentKey] = &[$( $crate::param::ComponentKey { suffix: $suffix, doc: $doc, limit: $limit, expected: <$ty as $crate::param::ConfigValue>::expected } ),*];

            fn set(&mut self, suffix: &str, key: &str, value: &str) -> Option<Result<(), $crate::param::ConfigError>> {
                match suffix {
                    $( $suffix => Some(match <$ty as $crate::param::ConfigValue>::parse(value) {
                        Some(v) => { self.$field = v; Ok(()) }
                        None => Err($crate::param::ConfigError::BadValue { key: key.to_string(), value: value.to_string(), expected: <$ty as $crate::param::ConfigValue>::expected() }),
                    }), )*
                    _ => None,
                }
            }

            fn get(&self, suffix: &str) -> Option<String> {
                match suffix { $( $suffix => Some($crate::param::ConfigValue::show(&self.$field)), )* _ => None }
            }

            fn check(&self, key: &dyn Fn(&str) -> String) -> Result<(), $crate::param::ConfigError> {
                let ($p, $key) = (self, key);
                $check
            }
        }
    };
}
pub(crate) use component;

/// Declares a string-valued enum usable as a config value.
macro_rules! config_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub fn name(&self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }
        impl $crate::param::ConfigValue for $name {
            fn parse(s: &str) -> Option<Self> {
                match s.trim() { $($text => Some($name::$variant),)+ _ => None }
            }
            fn show(&self) -> String { self.name().to_string() }
            fn expected() -> String {
                let v: Vec<&str> = vec![$($text),+];
                format!("one of {}", v.join("|"))
            }
        }
        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result { f.write_str(self.name()) }
        }
    };
}
pub(crate) use config_enum;

config_enum!(
    /// How CSALT measures each type's stack distances.
    CsaltProfiler { Atd = "atd", GlobalPos = "global_pos" }
);
config_enum!(
    /// CSALT-CD's L2 weights: as printed in the thesis, or without the doubly counted term.
    CsaltFormula { Printed = "printed", Corrected = "corrected" }
);
config_enum!(
    /// When page-table prioritization is on.
    PtpMode { Always = "always", Detector = "detector" }
);
config_enum!(
    /// How a Promotion Candidate Cache ranks its entries and picks a victim.
    PccPolicy { Lfu = "lfu", Lru = "lru" }
);
config_enum!(
    /// What reading a Promotion Candidate Cache out does to it.
    PccReadout { Invalidate = "invalidate", Flush = "flush" }
);
config_enum!(
    /// How the POM-TLB picks a translation's set (seed 003, Eq. 5.10).
    PomHash { Vpn = "vpn", Literal = "literal" }
);
config_enum!(
    /// How a private TLB picks a translation's set: the low bits of the virtual page number,
    /// or of the page number xor the VM ID (the POM-TLB's hash, which TCAT-cotagless needs).
    TlbSetIndex { Vpn = "vpn", VpnXorVm = "vpn_xor_vm" }
);
config_enum!(
    /// How the OS keeps the TLBs coherent when it changes a mapping (seed 003, §4): IPIs to
    /// every target; KVM's paravirtual flush (preempted vCPUs flush at reschedule); TCAT
    /// through the POM-TLB line's coherence, slaves dropping entries by co-tag or by set; or
    /// the ideal bound, invalidations at no cost.
    ShootdownProtocol { Ipi = "ipi", KvmTlb = "kvm_tlb", TcatCotag = "tcat-cotag", TcatCotagless = "tcat-cotagless", Ideal = "ideal" }
);
config_enum!(
    /// What the translation checker does when a core uses a stale translation.
    OnStale { Fail = "fail", Count = "count" }
);
config_enum!(
    /// Who promotes 4 KB regions to 2 MB pages while a program runs (the PCC paper's
    /// policies): nobody beyond the fault-time policy; the PCC's daemon; HawkEye; Linux's
    /// greedy THP (fault-time huge pages and khugepaged); or the hindsight oracle.
    Promotion { None = "none", Pcc = "pcc", HawkEye = "hawkeye", Thp = "thp", Oracle = "oracle" }
);
config_enum!(
    /// How the PCC daemon picks among the cores' candidate lists.
    PccPromotion { RoundRobin = "round-robin", Highest = "highest" }
);
config_enum!(
    /// Page-table format of an address space.
    PtFormat { Radix4 = "radix4", Radix5 = "radix5", Fpt = "fpt", FptL3L2 = "fpt-l3l2", FptL4L3 = "fpt-l4l3", Fpt5 = "fpt5", Fpt1G = "fpt-1g" }
);

impl PtFormat {
    /// Level of the root: 5 for the five-level formats.
    pub fn top(self) -> u8 {
        if matches!(self, PtFormat::Radix5 | PtFormat::Fpt5) {
            5
        } else {
            4
        }
    }

    /// The page-walk-cache level that caches a flattened root's entries (they are keyed by
    /// the 18 VA bits the root consumes, as entries of one level lower are), if the root is
    /// flattened: its size is `pwc.flat.entries` and it is fully associative.
    pub fn flat_root_pwc_level(self) -> Option<usize> {
        match self {
            PtFormat::Fpt | PtFormat::FptL4L3 => Some(3),
            PtFormat::Fpt5 => Some(4),
            _ => None,
        }
    }
}
config_enum!(
    /// Which of CSALT's two partitions page-table lines belong to.
    CsaltPageTables { Data = "data", Translation = "translation" }
);
config_enum!(
    /// When the LLC is filled: with every line fetched from DRAM (`inclusive`, though not
    /// strictly so unless `cache.llc.inclusive`), or only with lines the L2s evict (`victim`,
    /// as Zen's L3).
    LlcFill { Inclusive = "inclusive", Victim = "victim" }
);
config_enum!(
    /// PT-Baker's helper thread (the PT-Baker thesis, `xlat-workloads/src/helper.rs`): none,
    /// a user-space one that loads a byte of every `stride_pages`-th page (each load walks on
    /// its core, bringing the page's page-table entries and a data line into the caches), or
    /// the kernel one that reads only the pages' page-table entries.
    PtBakerMode { Off = "off", User = "user", UserPrefetch = "user-prefetch", Kernel = "kernel" }
);
config_enum!(
    /// Where PT-Baker's helper runs: on the next core, sharing the LLC with the program
    /// (the thesis's default), or on the SMT sibling of the program's last thread, sharing
    /// its core's private caches too.
    PtBakerPlacement { Core = "core", Smt = "smt" }
);
config_enum!(
    /// Which of the program's regions PT-Baker's helper sweeps: the largest (the thesis sweeps
    /// the one region that causes most TLB misses) or all of them, one after another.
    PtBakerRegions { Largest = "largest", All = "all" }
);
config_enum!(
    /// Memory pressure beside the program (the PT-Baker thesis's stress-ng setups): none, one
    /// cache stressor, or two or three stream stressors, each a program of its own on a core
    /// of its own, sharing the LLC.
    Pressure { None = "none", Cache1 = "cache1", Stream2 = "stream2", Stream3 = "stream3" }
);
config_enum!(
    /// A cache's hardware data prefetcher (`memory/prefetcher.rs`).
    Prefetcher { None = "none", Stride = "stride", Stream = "stream" }
);
config_enum!(
    /// A TLB prefetcher (`mech/tlbpf.rs`): which pages' translations it walks for ahead of use.
    TlbPrefetcher { None = "none", Sequential = "sequential" }
);
config_enum!(
    /// The resource model of a core's MSHRs and walkers (`timing/pool.rs`): fast (per-unit
    /// timelines) or exact (per-cycle counts of every booking).
    PoolModel { Fast = "fast", Exact = "exact" }
);
config_enum!(
    /// Where page-walk reads enter the cache hierarchy.
    WalkerPort { L1d = "l1d", L2 = "l2" }
);
config_enum!(
    /// AMD PTE coalescing of a TLB structure (the coalescing paper): groups of 4 (16 KB,
    /// Zen 2/3) or 8 (32 KB, Zen/Zen+) contiguous, aligned 4 KB pages as one entry;
    /// `inherit` (per structure) follows `tlb.coalescing`.
    Coalescing { None = "none", K16 = "16k", K32 = "32k", Inherit = "inherit" }
);
config_enum!(
    /// Page-size policy of the OS.
    PagePolicy { Never = "never", Ideal = "ideal", Thp = "thp", Madvise = "madvise", FreeBsd = "freebsd" }
);
config_enum!(
    /// Page sizes the hypervisor backs guest-physical memory with (the host side of a VM).
    HostPagePolicy { Never = "never", Ideal = "ideal", Thp = "thp" }
);
config_enum!(
    /// The order in which a CPU's free list hands out a batch of frames it took from the buddy
    /// allocator (ascending addresses).
    PcpOrder { Fifo = "fifo", Lifo = "lifo" }
);
config_enum!(
    /// FreeBSD's reservations, as the coalescing paper names its kernels.
    Reservations { None = "none", Reserv = "reserv", Super = "super" }
);
config_enum!(
    /// Whether pages a file fault maps around the faulting one get their accessed bit at once.
    PresetA { Auto = "auto", On = "on", Off = "off" }
);
config_enum!(
    /// The `max-page-size` a traced executable is relinked with (`as-linked`: as it was built).
    MaxPageSize { AsLinked = "as-linked", K4 = "4k", K16 = "16k", K32 = "32k", M2 = "2m" }
);

impl MaxPageSize {
    /// The size in bytes, or `None` for `as-linked`.
    pub fn bytes(self) -> Option<u64> {
        match self {
            MaxPageSize::AsLinked => None,
            MaxPageSize::K4 => Some(4 << 10),
            MaxPageSize::K16 => Some(16 << 10),
            MaxPageSize::K32 => Some(32 << 10),
            MaxPageSize::M2 => Some(2 << 20),
        }
    }
}

config_enum!(
    /// What a trace's window finds mapped (`loader.fast_forward`).
    FastForward { None = "none", Resident = "resident" }
);

config_enum!(
    /// Where a traced program's shared objects lie (`loader.library_base`).
    LibraryBase { AsTraced = "as-traced", Superpage = "superpage" }
);

impl LibraryBase {
    /// The alignment of a large shared object's base, in bytes (4096: where it was traced).
    pub fn align(self) -> u64 {
        match self {
            LibraryBase::AsTraced => 4096,
            LibraryBase::Superpage => 2 << 20,
        }
    }
}

config_enum!(
    /// Small reservations for files (the coalescing paper's §3.8 proposal).
    SmallReservation { None = "none", K16 = "16k", K32 = "32k", K64 = "64k" }
);

impl SmallReservation {
    /// 4 KB pages per reservation (1 for none).
    pub fn pages(self) -> u64 {
        match self {
            SmallReservation::None => 1,
            SmallReservation::K16 => 4,
            SmallReservation::K32 => 8,
            SmallReservation::K64 => 16,
        }
    }
}

config_enum!(
    /// How `--prefault` leaves each page it maps.
    PrefaultAs { Read = "read", Write = "write" }
);
config_enum!(
    /// Linux THP `defrag`: when a huge-page fault that finds no free 2 MB block compacts.
    ThpDefrag { Always = "always", Madvise = "madvise", Never = "never" }
);

/// A fragmentation scenario of physical memory before the run (`phys.fragmentation`; see
/// `os::frag`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fragmentation {
    None,
    /// Fraction of the free 2 MB blocks that get one pinned page.
    Pinned(f64),
    LowHalf,
    /// Seed of the churn.
    Aged(u64),
}

impl ConfigValue for Fragmentation {
    fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        match s {
            "none" => return Some(Fragmentation::None),
            "lowhalf" => return Some(Fragmentation::LowHalf),
            _ => {}
        }
        if let Some(x) = s.strip_prefix("pinned:") {
            let x = x.trim();
            let f = match x.strip_suffix('%') {
                Some(p) => p.trim().parse::<f64>().ok()? / 100.0,
                None => x.parse::<f64>().ok()?,
            };
            return (f.is_finite() && (0.0..=1.0).contains(&f)).then_some(Fragmentation::Pinned(f));
        }
        if let Some(seed) = s.strip_prefix("aged:") {
            return u64::parse(seed).map(Fragmentation::Aged);
        }
        None
    }
    fn show(&self) -> String {
        self.to_string()
    }
    fn expected() -> String {
        "none, pinned:X (X a fraction 0..1, e.g. pinned:0.9), lowhalf or aged:SEED".into()
    }
}

impl std::fmt::Display for Fragmentation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fragmentation::None => f.write_str("none"),
            Fragmentation::Pinned(x) => write!(f, "pinned:{x}"),
            Fragmentation::LowHalf => f.write_str("lowhalf"),
            Fragmentation::Aged(s) => write!(f, "aged:{s}"),
        }
    }
}
