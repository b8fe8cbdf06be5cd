//! Machine configuration: the mount table. Each component declares its own parameters
//! (`component!`, in its module: a key's type, default, bound and doc), and this table mounts
//! each at its prefix, so that every key is a dotted name (`cache.l2.size_kb`). Presets (TOML
//! in `configs/`) and `--set key=value` both land here, so unknown keys and impossible values
//! are caught in one place, with the key's name in the error; the checks between components
//! (`Config::validate`) live here too. Only this table and the machine see the whole
//! [`Config`]: every component is built from its own parameters.

pub use crate::memory::repl::Policy;
pub use crate::os::frag::Fragmentation;
pub use crate::os::phys::FrameOrder;
pub use crate::param::*;

/// Declares the configuration: the components, each mounted at a prefix (`""`: its keys are
/// whole keys) under a name for its docs' `{}`.
macro_rules! config {
    ( $( $mfield:ident : $mty:ty = $mdefault:expr ; $prefix:literal ; $name:literal ; )* ) => {
        /// Every knob of a simulated machine, as the components it configures: field `f` is
        /// the component mounted at its prefix (see [`MOUNTS`]).
        #[derive(Clone, Debug, PartialEq)]
        pub struct Config { $( pub $mfield: $mty, )* }

        impl Default for Config {
            fn default() -> Self { Config { $( $mfield: $mdefault, )* } }
        }

        /// Documentation of one config key.
        #[derive(Clone, Debug)]
        pub struct KeyInfo {
            pub key: &'static str,
            pub default: String,
            pub doc: &'static str,
            pub expected: String,
            /// The largest value accepted, for numeric keys (see [`limit`]).
            pub max: Option<String>,
        }

        /// The mount table: (prefix, the structure's name in docs, its keys), in the order
        /// `xlat config show` lists them.
        pub const MOUNTS: &[(&str, &str, &[ComponentKey])] = &[$( ($prefix, $name, <$mty as Component>::KEYS) ),*];

        impl Parts for Config {
            fn part<T: 'static>(&self) -> &T {
                $( if let Some(x) = (&self.$mfield as &dyn std::any::Any).downcast_ref::<T>() {
                    return x;
                } )*
                panic!("no component of type {} is mounted", std::any::type_name::<T>())
            }
        }

        impl Config {
            /// Each component's values together ([`Component::check`]), in the mount table's
            /// order.
            fn check_components(&self) -> Result<(), ConfigError> {
                $( self.$mfield.check(&|s: &str| if $prefix.is_empty() { s.to_string() } else { format!("{}.{}", $prefix, s) })?; )*
                Ok(())
            }

            /// Set one key from its text form.
            pub fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
                $( if let Some(r) = below(key, $prefix).and_then(|s| self.$mfield.set(s, key, value)) {
                    return r;
                } )*
                match crate::glossary::canonical(key) {
                    std::borrow::Cow::Owned(one) => self.set(&one, value),
                    _ => Err(unknown_key(key)),
                }
            }

            /// The value of one key in text form.
            pub fn get(&self, key: &str) -> Option<String> {
                $( if let Some(v) = below(key, $prefix).and_then(|s| self.$mfield.get(s)) {
                    return Some(v);
                } )*
                match crate::glossary::canonical(key) {
                    std::borrow::Cow::Owned(one) => self.get(&one),
                    _ => None,
                }
            }
        }
    };
}

/// The part of `key` below mount point `prefix` (all of it at the root).
fn below<'k>(key: &'k str, prefix: &str) -> Option<&'k str> {
    if prefix.is_empty() {
        Some(key)
    } else {
        key.strip_prefix(prefix)?.strip_prefix('.')
    }
}

/// A key, its doc, what it accepts and its bound.
type KeyRow = (&'static str, &'static str, String, Option<Limit>);

/// Every key with its doc, expected values and bound, in the order `xlat config show` prints
/// them: the mount table's order, each component's keys in their declaration order.
fn key_table() -> &'static [KeyRow] {
    static TABLE: std::sync::LazyLock<Vec<KeyRow>> = std::sync::LazyLock::new(|| {
        let mut t = Vec::new();
        for (prefix, name, keys) in MOUNTS {
            for c in keys.iter() {
                let key: &'static str = if prefix.is_empty() { c.suffix } else { Box::leak(format!("{prefix}.{}", c.suffix).into_boxed_str()) };
                let doc: &'static str = if c.doc.contains("{}") { Box::leak(c.doc.replace("{}", name).into_boxed_str()) } else { c.doc };
                t.push((key, doc, (c.expected)(), c.limit));
            }
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

    /// Every key with its current value, in `xlat config show` order.
    pub fn entries(&self) -> Vec<(&'static str, String)> {
        key_table().iter().map(|e| (e.0, self.get(e.0).unwrap_or_default())).collect()
    }

    pub fn schema() -> Vec<KeyInfo> {
        let d = Config::default();
        key_table()
            .iter()
            .map(|(key, doc, expected, lim)| KeyInfo {
                key,
                default: d.get(key).unwrap_or_default(),
                doc,
                expected: expected.clone(),
                max: lim.map(|l| l.to_string()),
            })
            .collect()
    }
}

/// The upper bound of `key`, if it is numeric.
pub fn limit(key: &str) -> Option<Limit> {
    key_table().iter().find(|e| e.0 == key).and_then(|e| e.3)
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

pub use crate::arch::ctx::SystemParams;
pub use crate::mech::hawkeye::HawkEyeParams;
pub use crate::mech::pcc::PccParams;
pub use crate::mech::pdc::PdcParams;
pub use crate::mech::pomtlb::PomTlbParams;
pub use crate::mech::ptp::PtpParams;
pub use crate::mech::tcat::TcatParams;
pub use crate::mech::tlbpf::TlbPrefetchParams;
pub use crate::mech::PromotionParams;
pub use crate::memory::cache::CacheParams;
pub use crate::memory::dram::DramParams;
pub use crate::memory::hierarchy::CoherenceParams;
pub use crate::memory::hierarchy::LlcParams;
pub use crate::memory::prefetcher::CachePrefetchParams;
pub use crate::memory::repl::csalt::CsaltParams;
pub use crate::os::ech::EchParams;
pub use crate::os::kernel::OsParams;
pub use crate::os::phys::PhysParams;
pub use crate::os::pt::PtParams;
pub use crate::os::sched::SchedParams;
pub use crate::os::shootdown::ShootdownParams;
pub use crate::os::virt::VirtParams;
pub use crate::timing::pool::PoolParams;
pub use crate::timing::window::CoreParams;
pub use crate::translate::check::CheckParams;
pub use crate::translate::mmu::TlbParams;
pub use crate::translate::pwc::PwcParams;
pub use crate::translate::tlb::L1dTlbParams;
pub use crate::translate::tlb::L1iTlbParams;
pub use crate::translate::tlb::L2TlbParams;
pub use crate::translate::tlb::L2iTlbParams;
pub use crate::translate::tlb::NestedTlbParams;
pub use crate::translate::walker::AsapParams;
pub use crate::translate::walker::ChampsimParams;
pub use crate::translate::walker::WalkerParams;
pub use crate::workload::LoaderParams;
pub use crate::workload::PtBakerParams;
pub use crate::workload::WorkloadParams;

config! {
    system: SystemParams = SystemParams::default(); "system"; "";
    core: CoreParams = CoreParams::default(); "core"; "";
    timing: PoolParams = PoolParams::default(); "timing"; "";
    tlb_l1d: L1dTlbParams = L1dTlbParams::default(); "tlb.l1d"; "L1 DTLB";
    tlb_l1i: L1iTlbParams = L1iTlbParams::default(); "tlb.l1i"; "L1 ITLB";
    tlb_l2: L2TlbParams = L2TlbParams::default(); "tlb.l2"; "L2 TLB";
    tlb_pdc: PdcParams = PdcParams::default(); "tlb.pdc"; "PDC";
    tlb_l2i: L2iTlbParams = L2iTlbParams::default(); "tlb.l2i"; "L2 ITLB";
    tlb: TlbParams = TlbParams::default(); "tlb"; "";
    tlb_prefetch: TlbPrefetchParams = TlbPrefetchParams::default(); "tlb"; "";
    tlb_nested: NestedTlbParams = NestedTlbParams::default(); "tlb.nested"; "nested TLB";
    pwc: PwcParams = PwcParams::default(); "pwc"; "page-walk cache";
    walker: WalkerParams = WalkerParams::default(); ""; "";
    cache_l1i: CacheParams = CacheParams { size_kb: 32, ways: 8, latency: 4, policy: Policy::Lru, energy_nj: 0.05 }; "cache.l1i"; "L1 instruction cache";
    cache_l1d: CacheParams = CacheParams { size_kb: 32, ways: 8, latency: 4, policy: Policy::Lru, energy_nj: 0.05 }; "cache.l1d"; "L1 data cache";
    cache_l2: CacheParams = CacheParams { size_kb: 256, ways: 8, latency: 12, policy: Policy::Lru, energy_nj: 0.12 }; "cache.l2"; "private L2 cache";
    cache_llc: CacheParams = CacheParams { size_kb: 16384, ways: 8, latency: 42, policy: Policy::Lru, energy_nj: 0.6 }; "cache.llc"; "shared last-level cache";
    cache_l1d_prefetch: CachePrefetchParams = CachePrefetchParams { prefetcher: Prefetcher::None, degree: 2 }; "cache.l1d"; "L1D";
    cache_l2_prefetch: CachePrefetchParams = CachePrefetchParams { prefetcher: Prefetcher::None, degree: 4 }; "cache.l2"; "L2";
    llc: LlcParams = LlcParams::default(); "cache.llc"; "";
    coherence: CoherenceParams = CoherenceParams::default(); "coherence"; "";
    ptbaker: PtBakerParams = PtBakerParams::default(); "ptbaker"; "";
    workload: WorkloadParams = WorkloadParams::default(); ""; "";
    ptp: PtpParams = PtpParams::default(); "ptp"; "";
    asap: AsapParams = AsapParams::default(); "asap"; "";
    champsim: ChampsimParams = ChampsimParams::default(); "champsim"; "";
    ech: EchParams = EchParams::default(); "ech"; "";
    pcc: PccParams = PccParams::default(); "pcc"; "";
    hawkeye: HawkEyeParams = HawkEyeParams::default(); "hawkeye"; "";
    csalt: CsaltParams = CsaltParams::default(); "csalt"; "";
    pomtlb: PomTlbParams = PomTlbParams::default(); "pomtlb"; "";
    dram: DramParams = DramParams::default(); "dram"; "";
    pt: PtParams = PtParams::default(); "pt"; "";
    os: OsParams = OsParams::default(); "os"; "";
    promotion: PromotionParams = PromotionParams::default(); "os"; "";
    sched: SchedParams = SchedParams::default(); "os"; "";
    shootdown: ShootdownParams = ShootdownParams::default(); ""; "";
    check: CheckParams = CheckParams::default(); "check"; "";
    tcat: TcatParams = TcatParams::default(); "tcat"; "";
    loader: LoaderParams = LoaderParams::default(); "loader"; "";
    phys: PhysParams = PhysParams::default(); "phys"; "";
    virt: VirtParams = VirtParams::default(); "virt"; "";
    virt_host_pwc: PwcParams = PwcParams::default(); "virt.host_pwc"; "host page-walk cache (vPWC, of guest-physical prefixes in 2D walks)";
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
            "l1d" => self.tlb_l1d.coalescing,
            "l1i" => self.tlb_l1i.coalescing,
            "l2" => self.tlb_l2.coalescing,
            "l2i" if self.tlb_l2i.entries > 0 => self.tlb_l2i.coalescing,
            _ => Coalescing::None,
        };
        if own == Coalescing::Inherit {
            self.tlb.coalescing
        } else {
            own
        }
    }

    /// What each core's translation hardware is built from.
    pub fn mmu(&self) -> crate::translate::mmu::MmuParams<'_> {
        crate::translate::mmu::MmuParams {
            l1d: &self.tlb_l1d,
            l1i: &self.tlb_l1i,
            l2: &self.tlb_l2,
            l2i: &self.tlb_l2i,
            nested: &self.tlb_nested,
            set_index: self.tlb.set_index,
            coalescing: ["l1d", "l1i", "l2", "l2i"].map(|n| self.coalescing(n)),
            pwc: &self.pwc,
            host_pwc: &self.virt_host_pwc,
            format: self.pt.format,
            host_format: self.virt.host_pt_format,
            virt: self.virt.enabled,
            ech: &self.ech,
            champsim_fillers: self.champsim.pscl_reread && self.champsim.private_pte_lines,
        }
    }

    /// What the memory side is built from.
    pub fn memory(&self) -> crate::memory::hierarchy::MemoryParams<'_> {
        crate::memory::hierarchy::MemoryParams {
            threads_per_core: self.system.threads_per_core,
            core: &self.core,
            pools: self.timing.pools,
            l1i: &self.cache_l1i,
            l1d: &self.cache_l1d,
            l2: &self.cache_l2,
            llc: &self.cache_llc,
            l1d_prefetch: &self.cache_l1d_prefetch,
            l2_prefetch: &self.cache_l2_prefetch,
            llc_keys: &self.llc,
            coherence: self.coherence.enabled,
            csalt: &self.csalt,
            dram: &self.dram,
            pom: crate::memory::hierarchy::StackedDram {
                latency: self.pomtlb.latency,
                bandwidth_gbps: self.pomtlb.bandwidth_gbps,
                first_line: if self.pomtlb.enabled { (self.pomtlb.base_gb << 30) / crate::LINE_BYTES } else { u64::MAX },
            },
            walker_port: self.walker.port,
            l1_tlb_latency: self.tlb_l1d.latency,
            l2_tlb_latency: self.tlb_l2.latency,
            ptp_always: self.ptp.mode == PtpMode::Always,
            ptp_probability: self.ptp.probability,
        }
    }

    /// The mechanisms of a machine of `cores` cores that runs `copies` copies of `regions`
    /// (their footprint sets the promotion daemons' cap).
    pub fn mechanisms(&self, cores: usize, regions: &[crate::Region], copies: u64) -> crate::mech::Mechs {
        crate::mech::Mechs::build(&crate::mech::Env {
            parts: self,
            cores,
            regions,
            footprint: crate::mech::footprint_2m(regions) * copies,
            ptp_caches: self.ptp_caches(),
            shootdown: self.shootdown.protocol,
            tlb_group_shift: self.coalescing_group_shift(),
        })
    }

    /// What the OS side is built from: its components', and the rules that read keys of
    /// several (the page-size policy in force, the reservations' promotion).
    pub fn kernel(&self) -> crate::os::KernelParams {
        crate::os::KernelParams {
            system: self.system.clone(),
            os: self.os.clone(),
            sched: self.sched.clone(),
            shootdown: self.shootdown.clone(),
            phys: self.phys.clone(),
            pt: self.pt.clone(),
            ech: self.ech.clone(),
            virt: self.virt.clone(),
            page_policy: self.page_policy(),
            reservation_promote: self.reservation_promote(),
            thread_tagged: self.tlb.thread_tagged,
            tcat_flush: self.tcat.flush,
        }
    }

    /// Some TLB level coalesces PTEs.
    pub fn coalescing_any(&self) -> bool {
        self.coalescing_group_shift() > 0
    }

    /// log2 of the pages of the largest coalesced group any TLB level holds (0: none).
    pub fn coalescing_group_shift(&self) -> u32 {
        ["l1d", "l1i", "l2", "l2i"]
            .iter()
            .map(|n| match self.coalescing(n) {
                Coalescing::K16 => 2,
                Coalescing::K32 => 3,
                Coalescing::None | Coalescing::Inherit => 0,
            })
            .max()
            .unwrap_or(0)
    }

    /// Whether the L2 or the LLC partitions as CSALT does.
    fn csalt_caches(&self) -> bool {
        [self.cache_l2.policy, self.cache_llc.policy].iter().any(|p| matches!(p, Policy::CsaltD | Policy::CsaltCd))
    }

    /// Whether a cache prioritizes page-table lines as PTP does: policy `ptp`, or CSALT with
    /// `csalt.ptp` in its data ways.
    fn ptp_caches(&self) -> bool {
        self.cache_l2.policy == Policy::Ptp || self.cache_llc.policy == Policy::Ptp || self.csalt.ptp && self.csalt_caches()
    }

    /// Check the values: each within its bound, each component's together (its `check`), and
    /// the rules between components.
    pub fn validate(&self) -> Result<(), ConfigError> {
        fn invalid(key: &str, why: String) -> ConfigError {
            ConfigError::Invalid { key: key.into(), why }
        }
        // Bounds first: every later check may then multiply and add without overflowing.
        self.check_limits()?;
        self.check_components()?;
        for (key, p) in [("cache.l1i.policy", self.cache_l1i.policy), ("cache.l1d.policy", self.cache_l1d.policy)] {
            if p == Policy::Ptp {
                return Err(invalid(key, "ptp applies to L2 and the LLC (the paper leaves L1 alone)".into()));
            }
            if matches!(p, Policy::CsaltD | Policy::CsaltCd | Policy::Dip) {
                return Err(invalid(key, format!("{} applies to L2 and the LLC (CSALT leaves L1 alone)", p.name())));
            }
        }
        if self.tlb_l2.pdes && self.pwc.l2_entries > 0 {
            return Err(invalid(
                "pwc.l2.entries",
                "with tlb.l2.pdes=true the L2 TLB holds the page directory entries: set pwc.l2.entries = 0 (one place for them)".into(),
            ));
        }
        for (key, p) in [("cache.l2.policy", self.cache_l2.policy), ("cache.llc.policy", self.cache_llc.policy)] {
            if matches!(p, Policy::CsaltD | Policy::CsaltCd) && !self.pomtlb.enabled {
                return Err(invalid(key, "CSALT partitions between data and POM-TLB lines: it needs pomtlb.enabled=true".into()));
            }
        }
        if self.csalt.ptp && !self.csalt_caches() {
            return Err(invalid(
                "csalt.ptp",
                "prioritizes page-table lines within CSALT's data ways: it needs cache.l2.policy or cache.llc.policy = csalt-d or csalt-cd (for PTP alone, policy=ptp)".into(),
            ));
        }
        let champsim = [
            ("champsim.pscl_reread", self.champsim.pscl_reread),
            ("champsim.private_pte_lines", self.champsim.private_pte_lines),
            ("champsim.first_touch_cycles", self.champsim.first_touch_cycles > 0),
            ("champsim.no_dirty_bits", self.champsim.no_dirty_bits),
        ];
        if let Some((key, _)) = champsim.iter().find(|(_, on)| *on) {
            if self.virt.enabled || !matches!(self.pt.format, PtFormat::Radix4 | PtFormat::Radix5) {
                return Err(invalid(
                    key,
                    "ChampSim's walk behaviours are modelled on native radix page tables (pt.format=radix4 or radix5, virt.enabled=false)".into(),
                ));
            }
        }
        if self.asap.enabled && (self.virt.enabled || !matches!(self.pt.format, PtFormat::Radix4 | PtFormat::Radix5)) {
            return Err(invalid("asap.enabled", "ASAP is modelled on native radix page tables (pt.format=radix4 or radix5, virt.enabled=false)".into()));
        }
        if self.ech.enabled {
            if self.virt.enabled || self.pt.format != PtFormat::Radix4 {
                return Err(invalid("ech.enabled", "ECH replaces a native 4-level table (pt.format=radix4, virt.enabled=false)".into()));
            }
            if self.asap.enabled || self.pomtlb.enabled || self.coalescing_any() {
                return Err(invalid("ech.enabled", "ECH is a page-table organization of its own: not with ASAP, the POM-TLB or PTE coalescing".into()));
            }
        }
        if self.virt.vcpus_per_core > 1 && (!self.virt.enabled || self.system.threads_per_core > 1 || self.virt.vms > 1) {
            return Err(invalid("virt.vcpus_per_core", "vCPU overcommit needs virt.enabled=true, one VM (virt.vms=1) and system.threads_per_core=1".into()));
        }
        if self.system.threads_per_core > 1 && self.ptp.mode == PtpMode::Detector && self.ptp_caches() {
            return Err(invalid("ptp.mode", "the TLB-miss phase detector is per core: it needs system.threads_per_core=1".into()));
        }
        if self.llc.ways_per_core > 0 {
            if self.llc.ways_per_core > self.cache_llc.ways {
                return Err(invalid("cache.llc.ways_per_core", format!("{} is more than the LLC's {} ways", self.llc.ways_per_core, self.cache_llc.ways)));
            }
            if self.cache_llc.ways > 64 {
                return Err(invalid("cache.llc.ways_per_core", format!("way partitioning supports LLCs of at most 64 ways, not {}", self.cache_llc.ways)));
            }
            if !matches!(self.cache_llc.policy, Policy::Lru | Policy::Fifo) {
                return Err(invalid("cache.llc.ways_per_core", format!("way partitioning needs cache.llc.policy lru or fifo, not {}", self.cache_llc.policy)));
            }
        }
        if self.ptbaker.mode != PtBakerMode::Off && self.ptbaker.placement == PtBakerPlacement::Smt && self.system.threads_per_core < 2 {
            return Err(invalid("ptbaker.placement", "smt needs system.threads_per_core=2 (a sibling for the helper)".into()));
        }
        if self.virt.enabled && self.coalescing_any() {
            return Err(invalid("tlb.coalescing", "PTE coalescing is modelled on native walks only, not with virt.enabled".into()));
        }
        if self.pcc_on() && self.pcc.entries == 0 {
            return Err(invalid("pcc.entries", "must be at least 1 with a PCC".into()));
        }
        if self.pomtlb.enabled && (self.pomtlb.base_gb < self.phys.size_gb || self.pomtlb.base_gb > 1 << 20) {
            return Err(invalid("pomtlb.base_gb", format!("must lie above physical memory ({} GB) and below 1 PB", self.phys.size_gb)));
        }
        if self.pt.format != PtFormat::Radix5 && self.pwc.l5_entries > 0 {
            return Err(invalid("pwc.l5.entries", "only pt.format=radix5 has L5 entries; set it or 0 entries".into()));
        }
        self.validate_os()
    }

    /// Every numeric key within its bound ([`limit`]), and the whole machine within host memory.
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

    /// Cache lines and TLB entries the machine allocates (within the bounds this cannot
    /// overflow: 256 cores x about 2^24 entries each).
    fn host_entries(&self) -> u64 {
        let lines = |kb: u64| kb * 1024 / crate::LINE_BYTES;
        let per_core = self.tlb_l1d.entries
            + self.tlb_l1d.entries_2m
            + self.tlb_l1d.entries_1g
            + self.tlb_l1i.entries
            + self.tlb_l1i.entries_2m
            + self.tlb_l2.entries
            + self.tlb_l2.entries_1g
            + self.tlb_pdc.entries
            + self.tlb_nested.entries
            + lines(self.cache_l1i.size_kb)
            + lines(self.cache_l1d.size_kb)
            + lines(self.cache_l2.size_kb);
        self.system.cores * per_core + lines(self.cache_llc.size_kb)
    }

    /// The rules between the OS's components and others.
    fn validate_os(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: &str| ConfigError::Invalid { key: key.into(), why: why.into() };
        if self.sched.processes * self.system.cores > 4095 {
            return Err(invalid("os.processes", "processes x cores must fit the 4095 PCIDs"));
        }
        if self.os.reservations != Reservations::None
            && (!matches!(self.os.page_policy, PagePolicy::Never | PagePolicy::FreeBsd) || self.promotion.kind == Promotion::Thp)
        {
            return Err(invalid(
                "os.reservations",
                &format!(
                    "{} is FreeBSD's reservation allocator, which sets the fault-time policy: it cannot run with os.page_policy={} or os.promotion=thp",
                    self.os.reservations, self.os.page_policy
                ),
            ));
        }
        match self.promotion.kind {
            Promotion::None => {}
            Promotion::Thp => {
                if !matches!(self.os.page_policy, PagePolicy::Never | PagePolicy::Thp) {
                    return Err(invalid(
                        "os.promotion",
                        &format!("thp is Linux's greedy THP, which sets the fault-time policy: it cannot run with os.page_policy={}", self.os.page_policy),
                    ));
                }
            }
            Promotion::Pcc | Promotion::HawkEye | Promotion::Oracle => {}
        }
        if self.promotion.kind == Promotion::HawkEye && self.hawkeye.window_refs == 0 {
            return Err(invalid("hawkeye.window_refs", "must be at least 1 with os.promotion=hawkeye"));
        }
        if self.promotion.kind == Promotion::HawkEye && (self.sched.processes > 1 || self.virt.enabled) {
            return Err(invalid("os.promotion", "hawkeye models one address space: needs os.processes=1 and virt.enabled=false"));
        }
        if !self.pcc.bias.trim().is_empty() {
            if self.promotion.kind != Promotion::Pcc {
                return Err(invalid("pcc.bias", &format!("is a policy of the PCC's daemon: needs os.promotion=pcc, not {}", self.promotion.kind)));
            }
            if self.pcc_bias_programs().is_none() {
                return Err(invalid("pcc.bias", &format!("'{}': expected program numbers separated by commas, as 0,2", self.pcc.bias)));
            }
        }
        if self.pcc.demotion && self.promotion.kind != Promotion::Pcc {
            return Err(invalid("pcc.demotion", &format!("is done by the PCC's daemon: needs os.promotion=pcc, not {}", self.promotion.kind)));
        }
        self.validate_shootdown()?;
        self.validate_virt()
    }

    /// The shootdown protocol and what it relies on.
    fn validate_shootdown(&self) -> Result<(), ConfigError> {
        let invalid = |why: &str| ConfigError::Invalid { key: "shootdown.protocol".into(), why: why.into() };
        let cotagless = self.shootdown.protocol == ShootdownProtocol::TcatCotagless;
        match self.shootdown.protocol {
            ShootdownProtocol::Ipi | ShootdownProtocol::Ideal => Ok(()),
            ShootdownProtocol::KvmTlb if !self.virt.enabled => Err(invalid("kvm_tlb is a hypervisor's protocol: needs virt.enabled=true")),
            ShootdownProtocol::KvmTlb => Ok(()),
            _ if !self.pomtlb.enabled => Err(invalid("TCAT keeps translations coherent through their POM-TLB lines: needs pomtlb.enabled=true")),
            _ if !self.coherence.enabled => Err(invalid("TCAT runs on the caches' coherence: needs coherence.enabled=true")),
            _ if self.system.cores > 64 => Err(invalid("TCAT's directory tracks at most 64 cores' TLBs")),
            _ if cotagless && self.coalescing_any() => Err(invalid(
                "tcat-cotagless with coalesced TLB entries is not modelled: a coalesced entry sits in its group's set, not in the set a POM-TLB line names (tcat-cotag drops it)",
            )),
            _ if self.pomtlb.hash != PomHash::Vpn => Err(invalid("TCAT needs one POM-TLB line per page: pomtlb.hash=vpn")),
            _ if cotagless && self.tlb.set_index != TlbSetIndex::VpnXorVm => Err(invalid(
                "tcat-cotagless drops the private-TLB set a POM-TLB line names, so the TLBs must index by the same hash: set tlb.set_index=vpn_xor_vm",
            )),
            _ => Ok(()),
        }
    }

    /// The virtualization rules between components.
    fn validate_virt(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: String| ConfigError::Invalid { key: key.into(), why };
        if !self.virt.enabled {
            return Ok(());
        }
        if self.virt.host_pt_format != PtFormat::Radix5 && self.virt_host_pwc.l5_entries > 0 {
            return Err(invalid("virt.host_pwc.l5.entries", "only a radix5 host table has L5 entries; set virt.host_pt.format=radix5 or 0 entries".into()));
        }
        if self.tlb_nested.entries > 0 {
            let (e, w) = (self.tlb_nested.entries, self.tlb_nested.ways);
            if w == 0 || w > 4096 || e % w != 0 || !(e / w).is_power_of_two() {
                return Err(invalid("tlb.nested.entries", format!("{e} entries / {w} ways is not a power-of-two number of sets (ways at most 4096)")));
            }
        }
        Ok(())
    }

    /// The fault-time page-size policy in force: `os.page_policy`, or thp when
    /// `os.promotion=thp` (Linux's greedy THP) asks for it.
    pub fn page_policy(&self) -> PagePolicy {
        if self.promotion.kind == Promotion::Thp {
            PagePolicy::Thp
        } else if self.os.reservations != Reservations::None {
            PagePolicy::FreeBsd
        } else {
            self.os.page_policy
        }
    }

    /// Whether a full FreeBSD reservation is promoted to a 2 MB page: `os.reservations`
    /// (reserv: no, super: yes), or `os.reservation_promote` when it is none.
    pub fn reservation_promote(&self) -> bool {
        match self.os.reservations {
            Reservations::None => self.os.reservation_promote,
            Reservations::Reserv => false,
            Reservations::Super => true,
        }
    }

    /// The programs `pcc.bias` names (empty: none); None if it does not parse.
    pub fn pcc_bias_programs(&self) -> Option<Vec<usize>> {
        self.pcc.bias.split(',').map(str::trim).filter(|x| !x.is_empty()).map(|x| x.parse().ok()).collect()
    }

    /// Whether cores have a Promotion Candidate Cache (`pcc.enabled`, or `os.promotion=pcc`).
    pub fn pcc_on(&self) -> bool {
        self.pcc.enabled || self.promotion.kind == Promotion::Pcc
    }

    /// DRAM latency in core cycles.
    pub fn dram_latency_cycles(&self) -> u64 {
        self.dram.latency_cycles(self.core.freq_ghz)
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
        assert_eq!(Config::from_pairs([("phys.frame_order", "shuffled:1")]).unwrap().phys.frame_order, FrameOrder::Shuffled(1));
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
            assert_eq!(numeric, k.max.is_some(), "{}: numeric keys need a limit in their component, others none", k.key);
        }
    }

    /// A component checks its own values and names the key as mounted: the same check of
    /// `PwcParams` speaks of `pwc.*` or `virt.host_pwc.*`, of `CacheParams` of each level.
    #[test]
    fn a_component_checks_its_values_under_its_mount() {
        let key = |pairs: &[(&str, &str)]| match Config::from_pairs(pairs.iter().copied()) {
            Err(ConfigError::Invalid { key, .. }) => key,
            other => panic!("{pairs:?}: {other:?}"),
        };
        assert_eq!(key(&[("pwc.l3.entries", "3"), ("pwc.l3.ways", "2")]), "pwc.l3.entries");
        assert_eq!(key(&[("virt.host_pwc.l3.entries", "3"), ("virt.host_pwc.l3.ways", "2")]), "virt.host_pwc.l3.entries");
        assert_eq!(key(&[("cache.l2.ways", "0")]), "cache.l2.ways");
        assert_eq!(key(&[("cache.llc.size_kb", "3000")]), "cache.llc.size_kb");
        assert_eq!(key(&[("tlb.l2i.entries", "24"), ("tlb.l2i.ways", "5")]), "tlb.l2i.entries");
        assert_eq!(key(&[("os.shootdown_local_cycles", "1"), ("virt.vms", "2")]), "virt.vms");
        assert_eq!(key(&[("dram.banks", "3")]), "dram.banks");
        assert!(Config::from_pairs([("tlb.l2i.entries", "24"), ("tlb.l2i.ways", "3")]).is_ok());
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
