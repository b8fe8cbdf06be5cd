//! One core's translation hardware: its TLB levels, page-walk caches and, for 2D walks, the
//! host's page-walk cache (vPWC) and the nested TLB; and the context it translates for.

use crate::arch::addr::PageSize;
use crate::arch::ctx::Invalidate;
use crate::memory::repl::Policy;
use crate::param::PtFormat;
use crate::stats::{CoreCounters, EchCounters, Ints, Stats, VirtCounters};
use crate::translate::pwc::Pwc;
use crate::translate::pwc::PwcParams;
use crate::translate::tlb::{L1dTlbParams, L1iTlbParams, L2TlbParams, L2iTlbParams, NestedTlbParams};
use crate::translate::tlb::{TlbLevel, TlbStats};

/// The TLB levels of a core, by their place in [`Mmu::tlbs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum TlbId {
    L1d = 0,
    L1i = 1,
    /// The second level: unified, or the L2 DTLB when there is an L2 ITLB.
    L2 = 2,
    /// The L2 ITLB (`tlb.l2i.entries` > 0; otherwise fetches share the L2 TLB and this
    /// level is empty).
    L2i = 3,
}

/// Number of TLB levels of an [`Mmu`].
pub const TLB_LEVELS: usize = 4;

impl TlbId {
    pub const ALL: [TlbId; TLB_LEVELS] = [TlbId::L1d, TlbId::L1i, TlbId::L2, TlbId::L2i];

    /// The level's name in configuration keys and statistics (`tlb.<name>.*`).
    pub fn name(self) -> &'static str {
        match self {
            TlbId::L1d => "l1d",
            TlbId::L1i => "l1i",
            TlbId::L2 => "l2",
            TlbId::L2i => "l2i",
        }
    }

    /// Whether a machine has this level (and reports its statistics), given whether it has
    /// an L2 ITLB.
    pub fn exists(self, l2i: bool) -> bool {
        self != TlbId::L2i || l2i
    }
}

/// The levels a lookup goes through, first to last: an L1 and the shared second level. (A
/// fixed length, so that the lookup loop unrolls: the translating thread is the busier one
/// of a two-thread run, and a loop over a runtime length measured 10 % slower there.)
pub type TlbPath = [TlbId; PATH_LEN];

pub const PATH_LEN: usize = 2;

pub use crate::arch::ctx::HwContext;

use crate::param::component;

component! {
    /// What every TLB level shares (`tlb.*`): coalescing, set index, thread tags, prefetch walks, the perfect-TLB bound.
    TlbParams {
        coalescing: crate::param::Coalescing = crate::param::Coalescing::None; "coalescing"; None; "PTE coalescing (AMD Zen) in every TLB structure: none, 16k (groups of 4 PTEs, Zen 2/3) or 32k (8 PTEs, Zen/Zen+); per structure tlb.<level>.coalescing";
        set_index: crate::param::TlbSetIndex = crate::param::TlbSetIndex::Vpn; "set_index"; None; "how the L1 and L2 TLBs pick a translation's set: vpn (the page number's low bits) or vpn_xor_vm (the page number xor the VM ID: the POM-TLB's hash, so a POM-TLB set's translations share one private-TLB set, as TCAT-cotagless needs)";
        thread_tagged: bool = false; "thread_tagged"; None; "SMT (system.threads_per_core > 1): TLB and page-walk-cache entries carry the hardware thread that filled them, so a core's threads never use each other's entries, even in one address space (AMD Zen; PT-Baker §4.4.5.1); false: competitively shared, a thread hits what its sibling filled";
        prefetch_walks: bool = true; "prefetch_walks"; None; "a software prefetch that misses the TLBs walks and fills them, as a load does (Zen 3: PT-Baker Fig. 4.3); false: it is dropped";
        perfect: bool = false; "perfect"; None; "every translation hits the L1 TLB: no walks (measures what translation costs)";
    }
    check(p, key) {
        if p.coalescing == crate::param::Coalescing::Inherit {
            return Err(crate::param::invalid(key("coalescing"), "must be none, 16k or 32k (inherit is for the per-structure keys)"));
        }
        Ok(())
    }
}

/// Slots per level of [`Mmu::champsim_fillers`] (direct-mapped by region).
pub const FILLER_SLOTS: usize = 4096;

/// Which TLB levels' statistics a machine reports: the L2 ITLB's if it has one, the
/// coalescing ones if some level coalesces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlbShape {
    pub l2i: bool,
    pub coalescing: bool,
}

/// What a core's translation hardware is built from: its TLB levels', page-walk caches' and
/// cuckoo walk caches' parameters, and the tables it walks.
pub struct MmuParams<'a> {
    pub l1d: &'a L1dTlbParams,
    pub l1i: &'a L1iTlbParams,
    pub l2: &'a L2TlbParams,
    pub l2i: &'a L2iTlbParams,
    pub nested: &'a NestedTlbParams,
    pub set_index: crate::param::TlbSetIndex,
    /// Each level's PTE coalescing, by [`TlbId`] (`inherit` resolved).
    pub coalescing: [crate::param::Coalescing; TLB_LEVELS],
    pub pwc: &'a PwcParams,
    pub host_pwc: &'a PwcParams,
    /// The native or guest table's format, and the host's; virtualized (2D walks).
    pub format: PtFormat,
    pub host_format: PtFormat,
    pub virt: bool,
    pub ech: &'a crate::os::ech::EchParams,
    /// Remember who filled each paging-structure-cache entry (`champsim.pscl_reread` with
    /// `champsim.private_pte_lines`).
    pub champsim_fillers: bool,
}

pub struct Mmu {
    /// The TLB levels, indexed by [`TlbId`].
    pub tlbs: [TlbLevel; TLB_LEVELS],
    /// The path of data references (L1D, L2) and of instruction fetches (L1I, L2).
    pub data_path: TlbPath,
    pub fetch_path: TlbPath,
    pub pwc: Pwc,
    /// The L2 TLB holds the page directory entries in place of `pwc`'s level 2
    /// (`tlb.l2.pdes`, Zen's L2 DTLB): walks of the native or guest table look for them there.
    pub pdes_in_l2: bool,
    /// Host page-walk cache (vPWC, gPA prefixes) for 2D walks; empty natively.
    pub vpwc: Pwc,
    /// Nested TLB (gPA -> hPA) for 2D walks; empty natively.
    pub ntlb: TlbLevel,
    /// The counters of the glossary the translation side produces (references, TLB and
    /// page-walk-cache lookups, walks, faults); the memory side counts the rest.
    pub counters: CoreCounters,
    pub vcounters: VirtCounters,
    /// ECH's cuckoo walk caches (`ech.enabled`): level 2 caches 2 MB regions (keyed like L2
    /// entries, VA >> 21), level 3 1 GB regions; each value is a [`crate::translate::walker`]
    /// region summary. Empty otherwise.
    pub cwc: Pwc,
    pub ech: EchCounters,
    /// ChampSim's paging-structure caches remember who filled them (`champsim.pscl_reread`
    /// with `champsim.private_pte_lines`): per level and region, the address prefix of the
    /// last walk that read an entry there ([`crate::translate::walker`]). Empty otherwise.
    pub champsim_fillers: Vec<(u64, u64)>,
}

impl Mmu {
    /// Core `id`'s translation hardware; `s` seeds its replacement (see
    /// [`crate::memory::hierarchy::core_seed`]).
    pub fn new(p: &MmuParams, s: u64) -> Mmu {
        use PageSize::*;
        let dtlb = if p.l1d.unified {
            TlbLevel::new(&[(p.l1d.entries, p.l1d.ways, &[Size4K, Size2M, Size1G])], p.l1d.policy, s + 1)
        } else {
            TlbLevel::new(
                &[(p.l1d.entries, p.l1d.ways, &[Size4K]), (p.l1d.entries_2m, p.l1d.ways_2m, &[Size2M]), (p.l1d.entries_1g, p.l1d.ways_1g, &[Size1G])],
                p.l1d.policy,
                s + 1,
            )
        };
        let itlb = TlbLevel::new(&[(p.l1i.entries, p.l1i.ways, &[Size4K]), (p.l1i.entries_2m, p.l1i.ways_2m, &[Size2M])], p.l1i.policy, s + 2);
        let stlb = TlbLevel::new(&[(p.l2.entries, p.l2.ways, &[Size4K, Size2M]), (p.l2.entries_1g, p.l2.ways_1g, &[Size1G])], p.l2.policy, s + 3);
        // A PWC table is indexed by the lowest level of the node whose entries it caches
        // (tag = VA >> 12+9(level-1)). A flattened L4+L3 root's entries are keyed by
        // VA[47:30], like L3 entries, in the table the paper sizes separately.
        let mut pwc_entries = [0, 0, p.pwc.l2_entries, p.pwc.l3_entries, p.pwc.l4_entries, p.pwc.l5_entries];
        if p.format != PtFormat::Radix5 {
            pwc_entries[5] = 0;
        }
        let v = p.virt;
        let ways = |w: &PwcParams| [0, 0, w.l2_ways, w.l3_ways, w.l4_ways, w.l5_ways];
        let mut pwc_ways = ways(p.pwc);
        let mut vpwc_ways = ways(p.host_pwc);
        if let Some(l) = p.format.flat_root_pwc_level() {
            (pwc_entries[l], pwc_ways[l]) = (p.pwc.flat_entries, 0);
        }
        let mut vpwc_entries = if v { [0, 0, p.host_pwc.l2_entries, p.host_pwc.l3_entries, p.host_pwc.l4_entries, p.host_pwc.l5_entries] } else { [0; 6] };
        if let (true, Some(l)) = (v, p.host_format.flat_root_pwc_level()) {
            (vpwc_entries[l], vpwc_ways[l]) = (p.host_pwc.flat_entries, 0);
        }
        // Zen's L2 ITLB holds 4 KB and 2 MB pages; a 1 GB code page is cached as the 2 MB
        // piece holding the fetch (seeds/002 T1: "smashed").
        let l2i = TlbLevel::new(&[(p.l2i.entries, p.l2i.ways, &[Size4K, Size2M])], p.l2i.policy, s + 10).smashing_1g();
        let group = |id: TlbId| crate::translate::coalesce::group_shift(p.coalescing[id as usize]);
        let dtlb = dtlb.coalescing(group(TlbId::L1d), (0, 0), p.l1d.policy, s + 11);
        let itlb = itlb.coalescing(group(TlbId::L1i), (0, 0), p.l1i.policy, s + 12);
        let stlb = stlb.coalescing(group(TlbId::L2), (p.l2.entries_coalesced, p.l2.ways_coalesced), p.l2.policy, s + 13);
        let l2i = l2i.coalescing(group(TlbId::L2i), (0, 0), p.l2i.policy, s + 14);
        let ix = p.set_index;
        let (dtlb, itlb, stlb, l2i) = (dtlb.indexed(ix), itlb.indexed(ix), stlb.indexed(ix), l2i.indexed(ix));
        let ntlb_entries = if v { p.nested.entries } else { 0 };
        let ntlb = TlbLevel::new(&[(ntlb_entries, p.nested.ways, &[Size4K, Size2M, Size1G])], Policy::Lru, s + 8);
        Mmu {
            tlbs: [dtlb, itlb, stlb, l2i],
            data_path: [TlbId::L1d, TlbId::L2],
            fetch_path: [TlbId::L1i, if p.l2i.entries > 0 { TlbId::L2i } else { TlbId::L2 }],
            pwc: Pwc::new(pwc_entries, pwc_ways, p.pwc.policy, s + 7),
            pdes_in_l2: p.l2.pdes,
            vpwc: Pwc::new(vpwc_entries, vpwc_ways, p.host_pwc.policy, s + 9),
            ntlb,
            counters: CoreCounters::default(),
            vcounters: VirtCounters::default(),
            cwc: if p.ech.enabled {
                Pwc::new([0, 0, p.ech.pmd_cwc_entries, p.ech.pud_cwc_entries, 0, 0], [0; 6], Policy::Lru, s + 15)
            } else {
                Pwc::new([0; 6], [0; 6], Policy::Lru, 0)
            },
            ech: EchCounters::default(),
            champsim_fillers: if p.champsim_fillers { vec![(u64::MAX, 0); FILLER_SLOTS * 5] } else { Vec::new() },
        }
    }

    /// The TLB level `id`.
    #[inline(always)]
    pub fn tlb(&self, id: TlbId) -> &TlbLevel {
        &self.tlbs[id as usize]
    }

    /// Drop the translations `what` names from the TLBs and the page-walk cache (what
    /// INVLPG, INVPCID and INVVPID reach); returns how many entries went.
    pub fn invalidate(&mut self, what: Invalidate) -> usize {
        // (In the order of the levels: the count is a sum, the order only documents.)
        self.tlbs.iter_mut().map(|t| t.invalidate(what)).sum::<usize>() + self.pwc.invalidate(what) + self.cwc.invalidate(what)
    }

    /// Drop host-side translations of VMs (nested TLB and vPWC): the gPA ranges and contexts
    /// of `what` are a VM's (`VPID << 12`), as INVEPT.
    pub fn invalidate_nested(&mut self, what: Invalidate) -> usize {
        self.ntlb.invalidate(what) + self.vpwc.invalidate(what)
    }
}

/// A core's TLB levels' counters (under `prefix`), by [`TlbId`]: lookups, hits and misses
/// of each, and the L1 DTLB's hits by page size. With PTE coalescing (`coalescing`), also
/// the L1 DTLB's coalesced hits and the coalescing paper's T2 split of L1 TLB misses: by
/// L2 hit or miss, for the L1 DTLB also by the size of the entry it was refilled with.
pub(crate) fn emit_tlbs(s: &mut Stats, p: &str, t: &[TlbStats; TLB_LEVELS], shape: TlbShape) {
    use crate::translate::tlb::GROUP;
    let coalescing = shape.coalescing;
    for id in TlbId::ALL.into_iter().filter(|id| id.exists(shape.l2i)) {
        let (k, name) = (&t[id as usize], id.name());
        s.int(format!("{p}tlb.{name}.accesses"), k.accesses);
        s.int(format!("{p}tlb.{name}.hits"), k.hits);
        s.int(format!("{p}tlb.{name}.misses"), k.misses);
        if id == TlbId::L1d {
            for (i, size) in ["4k", "2m", "1g"].iter().enumerate() {
                s.int(format!("{p}tlb.{name}.hits_{size}"), k.hits_by_size[i]);
            }
        }
        if !coalescing {
            continue;
        }
        match id {
            TlbId::L1d => {
                s.int(format!("{p}tlb.{name}.hits_coalesced"), k.hits_by_size[GROUP]);
                for (j, by) in ["l2_hit", "l2_miss"].iter().enumerate() {
                    for (i, size) in ["4k", "2m", "1g", "coalesced"].iter().enumerate() {
                        s.int(format!("{p}tlb.{name}.misses.{by}.{size}"), k.refills[j][i]);
                    }
                }
            }
            TlbId::L1i => {
                for (j, by) in ["l2_hit", "l2_miss"].iter().enumerate() {
                    s.int(format!("{p}tlb.{name}.misses.{by}"), k.refills[j].iter().sum::<u64>());
                }
            }
            TlbId::L2 | TlbId::L2i => {}
        }
    }
}

/// Add `b`'s TLB counters to `a`'s.
pub(crate) fn add_tlbs(a: &mut [TlbStats; TLB_LEVELS], b: &[TlbStats; TLB_LEVELS]) {
    for (x, y) in a.iter_mut().zip(b) {
        x.accesses += y.accesses;
        x.hits += y.hits;
        x.misses += y.misses;
        for (h, g) in x.hits_by_size.iter_mut().zip(y.hits_by_size) {
            *h += g;
        }
        for (r, q) in x.refills.iter_mut().flatten().zip(y.refills.iter().flatten()) {
            *r += q;
        }
    }
}

/// Ratios of the integers of a core's statistics (under `p`, from [`emit_tlbs`] and
/// [`CoreCounters`]), per thousand of its `instructions`.
pub(crate) fn derived(i: &Ints, s: &mut Stats, p: &str, shape: TlbShape) {
    let kilo = i.get(&format!("{p}instructions")) as f64 / 1000.0;
    let mpki = |m: u64| if kilo > 0.0 { m as f64 / kilo } else { f64::NAN };
    for id in TlbId::ALL.into_iter().filter(|id| id.exists(shape.l2i)) {
        s.float(format!("{p}tlb.{}.mpki", id.name()), mpki(i.get(&format!("{p}tlb.{}.misses", id.name()))));
    }
    let walks = i.get(&format!("{p}walks"));
    s.ratio(format!("{p}walk_steps_per_walk"), i.get(&format!("{p}walk_steps.miss")), walks);
    s.ratio(format!("{p}walk_cycles_per_walk"), i.get(&format!("{p}walk_cycles")), walks + i.get(&format!("{p}tlb.dirty_walks")));
}

/// The glossary's entries of what [`emit_tlbs`] and [`derived`] emit.
pub(crate) const STATS: &[crate::glossary::Entry] = {
    use crate::glossary::{e, Kind::*, Section::*};
    &[
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
        e(Walks, "[core<N>.]walk_steps_per_walk", Ratio, "reads/walk", "`walk_steps.miss` / `walks`: entries a TLB miss's walk reads after the page-walk caches."),
        e(Walks, "[core<N>.]walk_cycles_per_walk", Ratio, "cycles/walk", "`walk_cycles` / (`walks` + `tlb.dirty_walks`): the mean latency of a translation's walk (retries folded in), as `walk_cycles.hist.*` counts them."),
    ]
};
