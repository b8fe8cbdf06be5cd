//! The page walker: one loop that walks a native, guest or host (EPT) table, generic over
//! the memory port its reads go through. It reads real entries of the OS's page tables,
//! sets accessed (and, on a store's leaf, dirty) bits as hardware does, starts below the
//! longest page-walk-cache hit and fills the page-walk caches. A 2D walk runs the guest
//! table's loop with every guest entry's address, and the final data address, translated
//! through the nested TLB or a walk of the host table. The walker knows the memory port, the
//! page tables and the core's MMU, not the machine: a fault is returned to the caller, which
//! asks the OS to map the page and walks again.

use crate::arch::addr::{PageSize, VirtAddr};
use crate::arch::ctx::Ctx;
use crate::arch::pte::{PTE_A, PTE_D, PTE_P, PTE_PFN_MASK};
use crate::mech::{Mechs, WalkStep};
use crate::memory::port::{MemPort, Table};
use crate::os::pt::{leaf_size, NodeId, PageTables, NO_NODE};
use crate::translate::mmu::{Mmu, TlbId, FILLER_SLOTS};
use crate::translate::tlb::TlbEntry;

use crate::param::{bound, component, Limit};

component! {
    /// The page walker: its page-walk-cache lookup and where its reads enter the caches (`pwc.latency`, `walker.port`).
    WalkerParams {
        pwc_latency: u64 = 1; "pwc.latency"; Some(Limit::Int(bound::LATENCY)); "page-walk cache lookup cycles (all levels in parallel)";
        port: crate::param::WalkerPort = crate::param::WalkerPort::L1d; "walker.port"; None; "cache level where page-walk reads enter (l1d as on Intel, l2 as on AMD)";
    }
}

component! {
    /// ASAP's page-table prefetch (`asap.*`).
    AsapParams {
        enabled: bool = false; "enabled"; None; "ASAP (Margaritov et al., MICRO'19), a comparator of the flattening paper: the OS lays each region's page-table nodes out contiguously in virtual-address order, so on an L2 TLB miss the MMU computes the addresses of the last levels' entries and prefetches their lines while the walk starts (native radix tables)";
        levels: u64 = 2; "levels"; Some(Limit::IntRange(1, 3)); "page-table levels ASAP prefetches, from the leaves up: 1 = the PTE, 2 = the PTE and the PMD entry";
    }
    check(p, key) {
        if p.levels == 0 {
            return Err(crate::param::invalid(key("levels"), "must be at least 1"));
        }
        Ok(())
    }
}

component! {
    /// ChampSim's walk behaviours, for validation only (`champsim.*`).
    ChampsimParams {
        pscl_reread: bool = false; "pscl_reread"; None; "validation only (docs/timing.md): after a page-walk-cache hit, read one more entry, as ChampSim's walker does (native radix tables)";
        private_pte_lines: bool = false; "private_pte_lines"; None; "validation only (docs/timing.md): every page-table entry in a page of its own, as ChampSim's virtual memory places them, so neighbouring pages' entries never share a cache line (native radix tables)";
        no_dirty_bits: bool = false; "no_dirty_bits"; None; "validation only (docs/timing.md): a walk marks the leaf dirty for a load too, so a store never walks again to set the dirty bit, as ChampSim, which keeps no dirty bits, never does (native radix tables)";
        first_touch_cycles: u64 = 0; "first_touch_cycles"; Some(Limit::Int(1 << 20)); "validation only (docs/timing.md): cycles the walk spends on each first use of a page-table entry and of a data page, as ChampSim charges its minor-fault penalty inside the walk; 0 = off (native radix tables)";
    }
}

/// Which table a walk loop reads (its const parameter; see [`Table`]).
const NATIVE: u8 = Table::Native as u8;
const HOST: u8 = Table::Host as u8;
const GUEST: u8 = Table::Guest as u8;

/// What the walker needs of the configuration.
#[derive(Clone, Copy, Debug)]
pub struct WalkParams {
    /// Page-walk-cache lookup cycles (all levels in parallel), per walk of a table.
    pub pwc_latency: u64,
    /// Nested TLB lookup cycles.
    pub nested_latency: u64,
    /// Levels of the native or guest table, and of the host table.
    pub top: u8,
    pub host_top: u8,
    /// The cores have a nested TLB, and it caches the final data translation too.
    pub ntlb: bool,
    pub nested_tlb_data: bool,
    /// The coalescing group sizes native walks check (0: none; see
    /// [`crate::translate::coalesce`]).
    pub coalesce: crate::arch::coalesce::GroupSizes,
    /// ASAP: page-table levels whose entries a native walk prefetches as it starts (0: off).
    pub asap: u8,
    /// Native walks read the elastic cuckoo page tables ([`crate::os::ech`]) instead.
    pub ech: bool,
    /// ChampSim's walk behaviours, to compare timing alone with it (validation only).
    pub champsim: ChampSimWalks,
}

/// ChampSim's page-walk behaviours (`champsim.*` keys), which xlat reproduces only to compare
/// its timing with ChampSim's on the same traces (docs/timing.md, "Calibration"); native radix
/// tables only. All off by default: they are not how hardware walks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChampSimWalks {
    /// After a page-walk-cache hit, read one more entry: ChampSim's paging-structure cache
    /// holds the address of the entry its filler read, and the walk reads that page at its own
    /// index before its own entry (`ptw.cc`, `handle_read`, `handle_fill`).
    pub reread: bool,
    /// Each entry in a page of its own: ChampSim's virtual memory gives every (level, address
    /// prefix) a fresh page (`vmem.cc`, `get_pte_pa`), so neighbouring pages' PTEs never share
    /// a cache line. The lines are spread by a hash over a physical range above memory.
    pub private_lines: bool,
    /// Cycles each first use of a page-table entry (its accessed bit still clear) adds to the
    /// walk, and once more for the data page at its leaf: ChampSim's minor-fault penalty, which
    /// it charges for each new page-table entry and each new page inside the walk.
    pub first_touch: u64,
    /// The leaf marked dirty by every walk, a load's too, so a store never walks again to set
    /// the dirty bit: ChampSim keeps no dirty bits, and its stores never walk on a TLB hit.
    pub no_dirty: bool,
}

/// Where ChampSim keeps the level-`level` entry for `va` ([`ChampSimWalks::private_lines`]):
/// a page of its own per (level, prefix above the entry's index bits), hashed into 2^32 pages
/// at 1 PB, at entry `index` within it.
#[cold]
fn champsim_entry_addr(level: u8, va: VirtAddr, index: u64) -> u64 {
    champsim_page_entry(level, champsim_key(level, va), index)
}

/// The prefix of `va` that names its level-`level` entry's page in ChampSim's layout.
fn champsim_key(level: u8, va: VirtAddr) -> u64 {
    va.0 >> (12 + 9 * (level as u32 - 1))
}

/// Entry `index` of the page ChampSim gives the level-`level` entries of prefix `key`.
fn champsim_page_entry(level: u8, key: u64, index: u64) -> u64 {
    let mut z = key ^ ((level as u64) << 56) ^ 0x9e37_79b9_7f4a_7c15;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (1 << 50) | ((z & 0xffff_ffff) << 12) | ((index & 511) << 3)
}

/// The slot of [`Mmu::champsim_fillers`] for the level-`level` entries of `va`'s region (the
/// span one level-`level` node maps), and the region (the slot's tag).
fn filler_slot(level: u8, va: VirtAddr) -> (usize, u64) {
    let region = va.0 >> (12 + 9 * level as u32);
    ((level as usize - 1) * FILLER_SLOTS + (region.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52) as usize, region)
}

/// The distinct lines an ECH walk reads (at most 3 sizes, a stale round and 2 walk tables, of 8 ways each).
struct Lines {
    buf: [u64; 64],
    n: usize,
}

impl Default for Lines {
    fn default() -> Lines {
        Lines { buf: [0; 64], n: 0 }
    }
}

impl Lines {
    fn has(&self, line: u64) -> bool {
        self.buf[..self.n].contains(&line)
    }

    fn push(&mut self, line: u64) {
        if !self.has(line) && self.n < self.buf.len() {
            self.buf[self.n] = line;
            self.n += 1;
        }
    }
}

/// The index of a page size in ECH's per-size tables.
fn size_index(size: PageSize) -> usize {
    match size {
        PageSize::Size4K => 0,
        PageSize::Size2M => 1,
        PageSize::Size1G => 2,
    }
}

/// What one walk found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Walked {
    /// The translation, at this page size (2D: the smaller of the guest and host pages).
    Leaf(TlbEntry, PageSize),
    /// A not-present entry of the native or guest table: a page fault.
    Fault,
    /// The host does not map guest-physical `gpa`: an EPT violation, on the data page
    /// (`data`) or on a guest page-table node.
    HostFault { gpa: u64, data: bool },
}

/// What walking one table found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    /// A present leaf: the entry (with the A/D bits the walk set), the page size, and for a
    /// native 4 KB leaf the coalescable group it is in ([`TlbEntry::group`]).
    Leaf(u64, PageSize, u8),
    /// A not-present entry.
    Missing,
    /// Guest table: the host does not map the guest-physical address of an entry.
    HostMissing(u64),
}

/// A VM's host table, for the nested translations of a 2D walk.
pub struct HostTable<'a> {
    pub pt: &'a mut PageTables,
    pub root: NodeId,
    /// The VM's host-side context (its VPID, PCID 0).
    pub ctx: Ctx,
}

/// A walk for hardware context `ctx` on core `c`'s MMU, its reads going through `port`,
/// its steps shown to `mechs`.
pub struct Walker<'a, P: MemPort> {
    pub mmu: &'a mut Mmu,
    pub ctx: Ctx,
    pub port: &'a mut P,
    pub mechs: &'a mut Mechs,
    pub p: &'a WalkParams,
    pub c: usize,
    /// The walk is a TLB miss's (not a dirty-bit walk, not a retry after a fault): its reads
    /// count in `walk_steps.miss`.
    pub miss: bool,
}

impl<P: MemPort> Walker<'_, P> {
    /// Walk the native table at `root` for `va`.
    #[inline]
    pub fn walk(&mut self, pt: &mut PageTables, root: NodeId, va: VirtAddr, write: bool) -> Walked {
        if self.p.ech {
            return self.walk_ech(pt, root, va, write);
        }
        let ctx = self.ctx;
        let (level, node) = self.pwc_start::<NATIVE>(va, ctx, self.p.top, root);
        if self.p.asap > 0 {
            self.asap_prefetch(pt, va, level, node);
        }
        self.port.delay(self.p.pwc_latency);
        if self.p.champsim.reread && level < self.p.top {
            self.champsim_reread(pt, va, level, node);
        }
        match self.walk_table::<NATIVE>(pt, va, ctx, level, node, write, |_, a| Some(a >> 6)) {
            Found::Leaf(e, size, group) => Walked::Leaf(TlbEntry { frame: (e & PTE_PFN_MASK) >> 12, dirty: e & PTE_D != 0, group }, size),
            _ => Walked::Fault,
        }
    }

    /// A 2D walk for guest-virtual `va` (the flattening paper's Fig. 8a): the guest PWC
    /// picks where the guest walk starts; every guest entry's gPA and the final data gPA go
    /// through [`Walker::nested_translate`]. The entry maps gVA -> hPA at the smaller of the
    /// guest and host page sizes, dirty when both leaves are.
    pub fn walk_2d(&mut self, gpt: &mut PageTables, groot: NodeId, host: &mut HostTable, va: VirtAddr, write: bool) -> Walked {
        let ctx = self.ctx;
        let (level, node) = self.pwc_start::<GUEST>(va, ctx, self.p.top, groot);
        self.port.delay(self.p.pwc_latency);
        let found =
            self.walk_table::<GUEST>(gpt, va, ctx, level, node, write, |w, gpa| w.nested_translate(host, gpa, false, false).map(|(hpa, _, _)| hpa >> 6));
        match found {
            Found::Leaf(ge, gsize, ..) => {
                let gpa = (ge & PTE_PFN_MASK) + va.offset(gsize);
                match self.nested_translate(host, gpa, write, true) {
                    Some((hpa, hsize, hdirty)) => {
                        let size = gsize.min(hsize);
                        let frame = (hpa & !(size.bytes() - 1)) >> 12;
                        Walked::Leaf(TlbEntry::page(frame, ge & PTE_D != 0 && hdirty), size)
                    }
                    None => Walked::HostFault { gpa, data: true },
                }
            }
            Found::HostMissing(gpa) => Walked::HostFault { gpa, data: false },
            Found::Missing => Walked::Fault,
        }
    }

    /// Translate guest-physical `gpa` for a 2D walk: the nested TLB (for the final data
    /// address only with `virt.nested_tlb_data`), else the vPWC and a walk of the host table,
    /// whose result fills the nested TLB. `data`: the walk's final data address (a store
    /// sets the host leaf's D bit). Returns the host-physical address, the host page size
    /// and whether the host leaf is dirty, or `None` when the host maps nothing there.
    fn nested_translate(&mut self, host: &mut HostTable, gpa: u64, write: bool, data: bool) -> Option<(u64, PageSize, bool)> {
        let ntlb = self.p.ntlb && (!data || self.p.nested_tlb_data);
        let ctx = host.ctx;
        let g = VirtAddr(gpa);
        // Whether the nested TLB holds no translation of `gpa` (not even a clean one that a
        // store must walk to dirty): its fill then needs no probe.
        let mut ntlb_absent = false;
        if ntlb {
            self.port.delay(self.p.nested_latency);
            match self.mmu.ntlb.lookup(g, ctx) {
                Some((e, size)) if !write || e.dirty => {
                    self.mmu.vcounters.nested_tlb_hits += 1;
                    return Some(((e.frame << 12) + g.offset(size), size, e.dirty));
                }
                found => {
                    ntlb_absent = found.is_none();
                    self.mmu.vcounters.nested_tlb_misses += 1
                }
            }
        }
        self.mmu.vcounters.host_walks += 1;
        let (level, node) = self.pwc_start::<HOST>(g, ctx, self.p.host_top, host.root);
        self.port.delay(self.p.pwc_latency);
        match self.walk_table::<HOST>(host.pt, g, ctx, level, node, write, |_, a| Some(a >> 6)) {
            Found::Leaf(e, size, ..) => {
                let e = TlbEntry::page((e & PTE_PFN_MASK) >> 12, e & PTE_D != 0);
                if ntlb_absent {
                    self.mmu.ntlb.insert_absent(g, size, ctx, e);
                } else if ntlb {
                    self.mmu.ntlb.insert(g, size, ctx, e);
                }
                Some(((e.frame << 12) + g.offset(size), size, e.dirty))
            }
            _ => None,
        }
    }

    /// A walk of the elastic cuckoo page tables (ECH; the ECPT paper's §5): the cuckoo walk
    /// caches say which page sizes map the VA's 2 MB region (PMD-CWC; for a 2 MB page, its
    /// way too) or 1 GB region (PUD-CWC); without either, every size the process maps is
    /// possible. The walk reads, all at once, one line per way of each possible size's table
    /// (one line where the way is known), and for each cache that missed the lines its cuckoo
    /// walk table entry can be in, whose contents fill the cache; it waits for the line that
    /// holds the translation (all table reads on a fault). A cache entry gone stale (a page
    /// size appeared, or the cuckoo moved an entry) costs a second round over every way of
    /// the right size. The entry itself (frame, A/D bits) is the OS's radix leaf.
    #[inline(never)]
    fn walk_ech(&mut self, pt: &mut PageTables, root: NodeId, va: VirtAddr, write: bool) -> Walked {
        use crate::os::ech::{cluster, SIZES};
        let ctx = self.ctx;
        let leaf = pt.leaf_entry(root, va);
        let Some(ech) = pt.ech(root) else { return Walked::Fault };
        let ways = ech.pages[0].ways();
        let mut hits = [false; 6];
        let cached = self.mmu.cwc.lookup(va, ctx, 3, &mut hits);
        let k = &mut self.mmu.ech;
        *if hits[2] { &mut k.pmd_cwc_hits } else { &mut k.pmd_cwc_misses } += 1;
        *if hits[3] { &mut k.pud_cwc_hits } else { &mut k.pud_cwc_misses } += 1;
        self.port.delay(self.p.pwc_latency);
        // What to read: (size bits, known way per size + 1).
        let (sizes, known) = match cached {
            // (A 2 MB region's entry names its 2 MB page's way, a 1 GB region's its 1 GB page's.)
            Some(h) if h.level == 1 => (h.node as u8 & 7, [0, (h.node >> 4) as usize & 15, 0]),
            Some(h) => (h.node as u8 & 7, [0, 0, (h.node >> 4) as usize & 15]),
            None => (ech.sizes(), [0; SIZES]),
        };
        let mut lines = Lines::default();
        for (s, &way) in known.iter().enumerate() {
            if sizes & (1 << s) == 0 {
                continue;
            }
            let key = cluster(va.0, s);
            match way {
                0 => (0..ways).for_each(|w| lines.push(ech.pages[s].probe_line(key, w))),
                w => lines.push(ech.pages[s].probe_line(key, w - 1)),
            }
        }
        let target = leaf.and_then(|(_, _, _, size)| {
            let s = size_index(size);
            ech.pages[s].find(cluster(va.0, s)).map(|(slot, _)| (s, slot.line))
        });
        if let Some((s, line)) = target {
            if !lines.has(line) {
                // The cache said otherwise: the hardware misses, drops the region's entries
                // and reads every way of the right size.
                self.mmu.ech.stale_cwc += 1;
                self.mmu.cwc.invalidate(crate::arch::ctx::Invalidate::Range { ctx, start: va.0 & !((1 << 30) - 1), end: (va.0 | ((1 << 30) - 1)) + 1 });
                (0..ways).for_each(|w| lines.push(ech.pages[s].probe_line(cluster(va.0, s), w)));
            }
        }
        let probes = lines.n;
        // (A 1 GB region holding only 1 GB pages has no 2 MB regions' entries to fetch.)
        let only_1g = hits[3] && sizes & 0b011 == 0;
        let fetch_pmd = !(hits[2] || only_1g);
        if fetch_pmd {
            (0..ways).for_each(|w| lines.push(ech.pmd_cwt.probe_line(va.0 >> 21, w)));
        }
        if !hits[3] {
            (0..ways).for_each(|w| lines.push(ech.pud_cwt.probe_line(va.0 >> 30, w)));
        }
        let n = lines.n;
        let k = &mut self.mmu.ech;
        k.table_reads += probes as u64;
        k.cwt_reads += (n - probes) as u64;
        if self.miss {
            self.mmu.counters.miss_walk_steps += n as u64;
        }
        for (i, &line) in lines.buf[..n].iter().enumerate() {
            let wait = match target {
                Some((_, t)) => line == t,
                None => i < probes,
            };
            self.port.read_pte_group(line, Table::Native, i == 0, wait);
        }
        // The caches that missed are filled from the walk tables.
        if fetch_pmd {
            let info = ech.pmd_info(va.0);
            if info.0 != 0 {
                let way = if info.count(1) > 0 { ech.pages[1].find(cluster(va.0, 1)).map_or(0, |(s, _)| s.way + 1) } else { 0 };
                self.mmu.cwc.fill(va, ctx, 2, info.sizes() as u32 | (way as u32) << 4);
            }
        }
        if !hits[3] {
            let info = ech.pud_info(va.0);
            if info.0 != 0 {
                let way = if info.count(2) > 0 { ech.pages[2].find(cluster(va.0, 2)).map_or(0, |(s, _)| s.way + 1) } else { 0 };
                self.mmu.cwc.fill(va, ctx, 3, info.sizes() as u32 | (way as u32) << 4);
            }
        }
        let Some((node, idx, e, size)) = leaf else { return Walked::Fault };
        let set = if write { PTE_A | PTE_D } else { PTE_A };
        if e & set != set {
            pt.set_bits(node, idx, set);
        }
        Walked::Leaf(TlbEntry { frame: (e & PTE_PFN_MASK) >> 12, dirty: (e | set) & PTE_D != 0, group: 0 }, size)
    }

    /// ASAP: with the page-table nodes laid out contiguously in virtual-address order (ASAP's
    /// OS support), the MMU computes where the entries of the last `asap` levels for `va` are
    /// and prefetches their lines as the walk starts, in parallel with the page-walk-cache
    /// probe and with each other; the walk then reads them as usual, finding them in flight or
    /// arrived. Only entries below the walk's first node are worth it (that one is read at
    /// once), and only those that exist (the computed address of a missing node holds nothing).
    #[cold]
    fn asap_prefetch(&mut self, pt: &PageTables, va: VirtAddr, mut level: u8, mut node: NodeId) {
        let first = level;
        loop {
            let (idx, entry_level) = pt.index_at(node, level, va);
            if entry_level < first && entry_level <= self.p.asap {
                self.port.pte_prefetch(pt.node(node).entry_addr(idx).0 >> 6);
            }
            let e = pt.entry(node, idx);
            if entry_level <= 1 || e & PTE_P == 0 || leaf_size(entry_level, e).is_some() {
                return;
            }
            node = pt.node(node).children.get(idx);
            level = entry_level - 1;
        }
    }

    /// ChampSim's extra read after a page-walk-cache hit ([`ChampSimWalks::reread`]): its
    /// paging-structure cache holds the address of the entry the walk that filled it read at
    /// that level, and the walk reads the page of that address at its own index there
    /// (`ptw.cc`, `handle_read`) before reading its own entry (`handle_fill`). In a radix table
    /// the two are one entry (the filler shared the node); in ChampSim's layout of a page per
    /// entry ([`ChampSimWalks::private_lines`]) the first is in the filler's page.
    #[cold]
    fn champsim_reread(&mut self, pt: &PageTables, va: VirtAddr, level: u8, node: NodeId) {
        let idx = (va.0 >> (12 + 9 * (level as u32 - 1))) & 511;
        let addr = if self.p.champsim.private_lines {
            let (slot, region) = filler_slot(level, va);
            let filler = self.mmu.champsim_fillers.get(slot).filter(|f| f.0 == region);
            champsim_page_entry(level, filler.map_or_else(|| champsim_key(level, va), |f| f.1), idx)
        } else {
            pt.node(node).entry_addr(idx as usize).0
        };
        self.port.read_pte(addr >> 6, Table::Native);
        if self.miss {
            self.mmu.counters.miss_walk_steps += 1;
        }
    }

    /// Cache the page directory entry for `va` (pointing to the leaf table `child`) in the L2
    /// TLB (`tlb.l2.pdes`); a translation it pushes out is an L2 TLB eviction like any other.
    #[inline(never)]
    fn fill_pde(&mut self, va: VirtAddr, ctx: Ctx, child: NodeId) {
        let l2 = &mut self.mmu.tlbs[TlbId::L2 as usize];
        l2.fill_pde(va, ctx, child as u64);
        if self.mechs.hooks.tlb_evict {
            if let Some((key, e)) = l2.take_evicted() {
                self.mechs.on_tlb_evict(self.c, TlbId::L2, key, e);
            }
        }
    }

    /// Probe the page-walk cache of table `D` (the vPWC for the host table, the PWC
    /// otherwise) for `va` and count its hits per level; returns where the walk starts.
    #[inline(always)]
    fn pwc_start<const D: u8>(&mut self, va: VirtAddr, ctx: Ctx, top: u8, root: NodeId) -> (u8, NodeId) {
        let mmu = &mut *self.mmu;
        let mut hits = [false; 6];
        let pwc = if D == HOST { &mut mmu.vpwc } else { &mut mmu.pwc };
        let start = pwc.lookup(va, ctx, top, &mut hits);
        if D == HOST {
            let k = &mut mmu.vcounters;
            mmu.vpwc.tally(
                &hits,
                [
                    (&mut k.vpwc_l2_hits, &mut k.vpwc_l2_misses),
                    (&mut k.vpwc_l3_hits, &mut k.vpwc_l3_misses),
                    (&mut k.vpwc_l4_hits, &mut k.vpwc_l4_misses),
                    (&mut k.vpwc_l5_hits, &mut k.vpwc_l5_misses),
                ],
            );
        } else {
            let k = &mut mmu.counters;
            mmu.pwc.tally(
                &hits,
                [
                    (&mut k.pwc_l2_hits, &mut k.pwc_l2_misses),
                    (&mut k.pwc_l3_hits, &mut k.pwc_l3_misses),
                    (&mut k.pwc_l4_hits, &mut k.pwc_l4_misses),
                    (&mut k.pwc_l5_hits, &mut k.pwc_l5_misses),
                ],
            );
            if mmu.pdes_in_l2 && top >= 2 {
                // (Looked up beside the PWC's levels, in the same cycles; counted as its level
                // 2, which pwc.l2.entries = 0 leaves empty.)
                if let Some(node) = mmu.tlbs[TlbId::L2 as usize].lookup_pde(va, ctx) {
                    k.pwc_l2_hits += 1;
                    return (1, node as NodeId);
                }
                k.pwc_l2_misses += 1;
            }
        }
        match start {
            Some(h) => (h.level, h.node),
            None => (top, root),
        }
    }

    /// Walk table `D` (`pt`) for `va` from `node`, a node at `level`: read each entry
    /// through the port (at the physical line `line_of(walker, entry address)` gives; for a
    /// guest table, after translating the entry's guest-physical address), set A (and D on
    /// the leaf for a store), and fill the table's page-walk cache.
    #[inline]
    #[allow(clippy::too_many_arguments)] // (the walk's state, passed by value in registers)
    fn walk_table<const D: u8>(
        &mut self,
        pt: &mut PageTables,
        va: VirtAddr,
        ctx: Ctx,
        mut level: u8,
        mut node: NodeId,
        write: bool,
        mut line_of: impl FnMut(&mut Self, u64) -> Option<u64>,
    ) -> Found {
        let table = match D {
            NATIVE => Table::Native,
            HOST => Table::Host,
            _ => Table::Guest,
        };
        loop {
            let (idx, entry_level) = pt.index_at(node, level, va);
            let mut addr = pt.node(node).entry_addr(idx).0;
            if D == NATIVE && self.p.champsim.private_lines {
                addr = champsim_entry_addr(entry_level, va, idx as u64);
                // This walk is now the filler of the level's paging-structure-cache entry.
                let (slot, region) = filler_slot(entry_level, va);
                if let Some(f) = self.mmu.champsim_fillers.get_mut(slot) {
                    *f = (region, champsim_key(entry_level, va));
                }
            }
            let Some(line) = line_of(self, addr) else {
                return Found::HostMissing(addr);
            };
            self.port.read_pte(line, table);
            if self.miss {
                self.mmu.counters.miss_walk_steps += 1;
                match D {
                    GUEST => self.mmu.vcounters.miss_guest_steps += 1,
                    HOST => self.mmu.vcounters.miss_host_steps += 1,
                    _ => {}
                }
            }
            let e = pt.entry(node, idx);
            // (The step is built only when some mechanism listens: nothing per step otherwise.)
            if self.mechs.walk_steps {
                self.mechs.on_walk_step(self.c, &WalkStep { table, va, ctx, level: entry_level, entry: e, node, index: idx });
            }
            if e & PTE_P == 0 {
                return Found::Missing;
            }
            let leaf = leaf_size(entry_level, e);
            // Hardware sets the accessed bit of every entry it uses, and the dirty bit of
            // the leaf when the access is a store.
            let mut set = PTE_A;
            if leaf.is_some() && (write || D == NATIVE && self.p.champsim.no_dirty) {
                set |= PTE_D;
            }
            if e & set != set {
                if D == NATIVE && self.p.champsim.first_touch > 0 && e & PTE_A == 0 {
                    // (The leaf's first use is also its data page's: ChampSim charges both.)
                    self.port.delay(self.p.champsim.first_touch * if leaf.is_some() { 2 } else { 1 });
                }
                pt.set_bits(node, idx, set);
            }
            if let Some(size) = leaf {
                // PTE coalescing (native tables) looks at the leaf's neighbours in its line,
                // as they are now that this walk set its A (and D) bits.
                let mut group = 0;
                if D == NATIVE && self.p.coalesce != 0 && size == PageSize::Size4K {
                    group = crate::translate::coalesce::largest_in(pt, node, idx, self.p.coalesce);
                }
                return Found::Leaf(e | set, size, group);
            }
            let child = pt.node(node).children.get(idx);
            debug_assert_ne!(child, NO_NODE);
            if D == HOST {
                self.mmu.vpwc.fill_missed(va, ctx, entry_level, child);
            } else {
                self.mmu.pwc.fill_missed(va, ctx, entry_level, child);
                if entry_level == 2 && self.mmu.pdes_in_l2 {
                    self.fill_pde(va, ctx, child);
                }
            }
            node = child;
            level = entry_level - 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::addr::Frame;
    use crate::arch::pte::PTE_RW;
    use crate::config::Config;
    use crate::memory::port::fake::{Call, FakePort};
    use crate::os::phys::PhysMem;

    /// A 4-level table mapping `pages` (4 KB each) to frames 0x1234, 0x1235, ...
    fn table_mapping(pages: &[VirtAddr]) -> (PageTables, NodeId) {
        let mut phys = PhysMem::new(1 << 30);
        let mut pt = PageTables::new();
        let root = pt.alloc_node(&mut phys, 4).unwrap();
        for (i, &page) in pages.iter().enumerate() {
            let _ = pt.map(&mut phys, root, 4, page, Frame(0x1234 + i as u64), PageSize::Size4K, PTE_RW).unwrap();
        }
        (pt, root)
    }

    /// The walker's parameters in these tests: a 3-cycle PWC probe, 4 levels, ASAP's `asap`.
    fn params(asap: u8) -> WalkParams {
        WalkParams {
            pwc_latency: 3,
            nested_latency: 1,
            top: 4,
            host_top: 4,
            ntlb: false,
            nested_tlb_data: false,
            coalesce: 0,
            asap,
            ech: false,
            champsim: ChampSimWalks::default(),
        }
    }

    /// The line of the entry for `va` at each level of the 4-level table at `root`, top first.
    fn entry_lines(pt: &PageTables, root: NodeId, va: VirtAddr) -> Vec<u64> {
        let (mut node, mut out) = (root, Vec::new());
        for level in (1..=4).rev() {
            let idx = va.index(level);
            out.push(pt.node(node).entry_addr(idx).0 >> 6);
            if level > 1 {
                node = pt.node(node).children.get(idx);
            }
        }
        out
    }

    /// A native walk between a fake memory port and a real table: a cold walk reads the four
    /// entries of the path, top first, after one page-walk-cache probe, and sets their A
    /// bits (and the leaf's D bit for a store); the page-walk cache then lets a walk of the
    /// next page read its L1 entry only; an unmapped page's walk stops at the first
    /// not-present entry and reports a fault.
    #[test]
    fn walks_read_the_path_through_the_port() {
        let va = VirtAddr(0x7f12_3456_7000);
        let (mut pt, root) = table_mapping(&[va, VirtAddr(va.0 + 4096)]);
        let cfg = Config::default();
        let mut mmu = Mmu::new(&cfg.mmu(), 1);
        let mut mechs = Mechs::new(Vec::new(), 1);
        let p = params(0);
        let mut port = FakePort::default();
        let mut w = Walker { mmu: &mut mmu, ctx: 1, port: &mut port, mechs: &mut mechs, p: &p, c: 0, miss: true };

        assert_eq!(w.walk(&mut pt, root, VirtAddr(va.0 + 0x10), true), Walked::Leaf(TlbEntry::page(0x1234, true), PageSize::Size4K));
        let mut want = vec![Call::Delay(3)];
        want.extend(entry_lines(&pt, root, va).into_iter().map(|l| Call::Pte(l, Table::Native)));
        assert_eq!(w.port.0, want);
        let m = pt.translate(root, 4, va).unwrap();
        assert_eq!(m.entry & (PTE_A | PTE_D), PTE_A | PTE_D, "the store's walk set the leaf's A and D bits");

        w.port.0.clear();
        let next = VirtAddr(va.0 + 4096);
        assert_eq!(w.walk(&mut pt, root, next, false), Walked::Leaf(TlbEntry::page(0x1235, false), PageSize::Size4K));
        assert_eq!(w.port.0, vec![Call::Delay(3), Call::Pte(entry_lines(&pt, root, next)[3], Table::Native)]);
        assert_eq!(pt.translate(root, 4, next).unwrap().entry & (PTE_A | PTE_D), PTE_A, "a load sets A only");

        // Another 1 GB region: the L4 entry is present (the PWC has it), the L3 entry not.
        w.port.0.clear();
        assert_eq!(w.walk(&mut pt, root, VirtAddr(va.0 + (1 << 30)), false), Walked::Fault);
        assert_eq!(w.port.0.len(), 2, "a PWC probe and the one L3 read: {:?}", w.port.0);
        // (Every level is probed on every walk: the second walk hits L4, L3 and L2; the third L4.)
        assert_eq!((w.mmu.counters.pwc_l2_hits, w.mmu.counters.pwc_l4_hits), (1, 2));
        // The reads of TLB-miss walks: four, one and one.
        assert_eq!(w.mmu.counters.miss_walk_steps, 6);

        // As ChampSim, with no dirty bits: a load's walk marks the leaf dirty, so a store
        // through its TLB entry need not walk again.
        let mut p = params(0);
        p.champsim.no_dirty = true;
        let w = &mut Walker { mmu: &mut mmu, ctx: 1, port: &mut port, mechs: &mut mechs, p: &p, c: 0, miss: true };
        let third = VirtAddr(va.0 + 2 * 4096);
        let (mut pt, root) = table_mapping(&[third]);
        assert_eq!(w.walk(&mut pt, root, third, false), Walked::Leaf(TlbEntry::page(0x1234, true), PageSize::Size4K));
        assert_eq!(pt.translate(root, 4, third).unwrap().entry & (PTE_A | PTE_D), PTE_A | PTE_D, "the load's walk set D too");
    }

    /// Zen's L2 DTLB holds the page directory entries (`tlb.l2.pdes`): after a cold walk,
    /// the next page of the 2 MB region walks from the leaf table (a `pwc.l2` hit counted
    /// with no PWC level 2); translations filled into the same set push the entry out (one
    /// array, one replacement), and so does an invalidation of a page of the region (INVLPG
    /// drops the paging-structure entries that cover the address).
    #[test]
    fn the_l2_tlb_may_hold_the_page_directory_entries() {
        use crate::arch::ctx::Invalidate;
        let va = VirtAddr(0x7f12_3456_7000);
        let pages: Vec<VirtAddr> = (0..4).map(|i| VirtAddr(va.0 + i * 4096)).collect();
        let (mut pt, root) = table_mapping(&pages);
        let mut cfg = Config::default();
        for (k, v) in [("tlb.l2.pdes", "true"), ("pwc.l2.entries", "0"), ("tlb.l2.entries", "2"), ("tlb.l2.ways", "2"), ("tlb.l2.entries_1g", "0")] {
            cfg.set(k, v).unwrap();
        }
        cfg.validate().unwrap();
        let mut mmu = Mmu::new(&cfg.mmu(), 1);
        let mut mechs = Mechs::new(Vec::new(), 1);
        let p = params(0);
        let mut port = FakePort::default();
        let mut w = Walker { mmu: &mut mmu, ctx: 1, port: &mut port, mechs: &mut mechs, p: &p, c: 0, miss: true };
        let leaf_only = |pt: &PageTables, page: VirtAddr| vec![Call::Delay(3), Call::Pte(entry_lines(pt, root, page)[3], Table::Native)];
        let from_pde = |pt: &PageTables, page: VirtAddr| {
            let l = entry_lines(pt, root, page);
            vec![Call::Delay(3), Call::Pte(l[2], Table::Native), Call::Pte(l[3], Table::Native)]
        };

        w.walk(&mut pt, root, pages[0], false);
        assert_eq!(w.port.0.len(), 5, "a cold walk reads the four levels: {:?}", w.port.0);
        assert_eq!(w.mmu.tlb(TlbId::L2).occupancy(), 1, "the PDE is in the L2 TLB");
        assert!(w.mmu.tlb(TlbId::L2).entries().is_empty(), "and is no translation");
        w.port.0.clear();
        w.walk(&mut pt, root, pages[1], false);
        assert_eq!(w.port.0, leaf_only(&pt, pages[1]));
        assert_eq!((w.mmu.counters.pwc_l2_hits, w.mmu.counters.pwc_l2_misses), (1, 1));

        // Two translations fill the L2 TLB's one set: the PDE, least recently used, goes.
        for &page in &pages[..2] {
            w.mmu.tlbs[TlbId::L2 as usize].insert(page, PageSize::Size4K, 1, TlbEntry::page(1, false));
        }
        w.port.0.clear();
        w.walk(&mut pt, root, pages[2], false);
        assert_eq!(w.port.0, from_pde(&pt, pages[2]), "the PWC's level 3 hit, the PDE read again");

        // INVLPG of a page of the region drops its PDE (and the PWC's entries above it).
        w.mmu.invalidate(Invalidate::page(1, pages[0]));
        w.port.0.clear();
        w.walk(&mut pt, root, pages[3], false);
        assert_eq!(w.port.0.len(), 5, "the four levels again: {:?}", w.port.0);
        assert_eq!(w.mmu.counters.pwc_l2_misses, 3);

        // Both in one place: a PWC level 2 beside the L2 TLB's PDEs is refused.
        cfg.set("pwc.l2.entries", "24").unwrap();
        assert!(cfg.validate().unwrap_err().to_string().contains("pwc.l2.entries"));
    }

    /// ASAP: a cold walk prefetches the PMD and PTE lines before its page-walk-cache probe,
    /// then reads the whole path; a walk starting at the PD node (the PWC holds the PDPT
    /// entry) prefetches only the PTE; one starting at the leaf node prefetches nothing; with
    /// one level, only the PTE; nothing is prefetched below a missing entry.
    #[test]
    fn asap_prefetches_the_last_levels_below_the_walks_start() {
        let va = VirtAddr(0x7f12_3456_7000);
        let far = VirtAddr(va.0 + (4 << 20)); // another 2 MB region of the same 1 GB one
        let (mut pt, root) = table_mapping(&[va, VirtAddr(va.0 + 4096), far]);
        let cfg = Config::default();
        let mut mmu = Mmu::new(&cfg.mmu(), 1);
        let mut mechs = Mechs::new(Vec::new(), 1);
        let mut p = params(2);
        let mut port = FakePort::default();
        let mut w = Walker { mmu: &mut mmu, ctx: 1, port: &mut port, mechs: &mut mechs, p: &p, c: 0, miss: true };

        let path = entry_lines(&pt, root, va);
        w.walk(&mut pt, root, va, false);
        let mut want = vec![Call::Prefetch(path[2]), Call::Prefetch(path[3]), Call::Delay(3)];
        want.extend(path.iter().map(|&l| Call::Pte(l, Table::Native)));
        assert_eq!(w.port.0, want);

        // The PWC now holds this 2 MB region's PD entry: the next page's walk reads its PTE
        // first, and prefetches nothing.
        w.port.0.clear();
        let next = VirtAddr(va.0 + 4096);
        w.walk(&mut pt, root, next, false);
        assert_eq!(w.port.0, vec![Call::Delay(3), Call::Pte(entry_lines(&pt, root, next)[3], Table::Native)]);

        // Another 2 MB region: the walk starts at the PD node (the PDPT entry is cached) and
        // prefetches the PTE line only.
        w.port.0.clear();
        let far_path = entry_lines(&pt, root, far);
        w.walk(&mut pt, root, far, false);
        assert_eq!(w.port.0, vec![Call::Prefetch(far_path[3]), Call::Delay(3), Call::Pte(far_path[2], Table::Native), Call::Pte(far_path[3], Table::Native)]);

        // An unmapped 1 GB region: the prefetch stops at the missing entry.
        w.port.0.clear();
        assert_eq!(w.walk(&mut pt, root, VirtAddr(va.0 + (1 << 30)), false), Walked::Fault);
        assert!(!w.port.0.iter().any(|c| matches!(c, Call::Prefetch(_))), "{:?}", w.port.0);

        // One level: the PTE only.
        p.asap = 1;
        let mut mmu = Mmu::new(&cfg.mmu(), 1);
        let mut port = FakePort::default();
        let mut w = Walker { mmu: &mut mmu, ctx: 1, port: &mut port, mechs: &mut mechs, p: &p, c: 0, miss: true };
        w.walk(&mut pt, root, va, false);
        assert_eq!(w.port.0[..2], [Call::Prefetch(path[3]), Call::Delay(3)]);
    }

    /// ChampSim's walk behaviours (validation only): with `reread`, a walk starting below a
    /// page-walk-cache hit first reads the node it starts at once more, at the index of the
    /// hit's own level; with `private_lines`, the leaf entries of neighbouring pages fall in
    /// different lines (they share one without it), above all of memory; with `first_touch`,
    /// the first walk through each entry spends the penalty per entry whose accessed bit it
    /// sets, twice at the leaf (the PTE and the page), and the next walk nothing.
    #[test]
    fn champsim_walk_behaviours_are_opt_in_and_do_what_champsim_does() {
        // (The first of eight PTEs in a line, so that its neighbour shares it.)
        let va = VirtAddr(0x7f12_3450_0000);
        let next = VirtAddr(va.0 + 4096);
        let (mut pt, root) = table_mapping(&[va, next]);
        let cfg = Config::default();
        let mut mechs = Mechs::new(Vec::new(), 1);

        let mut p = params(0);
        p.champsim.reread = true;
        let mut mmu = Mmu::new(&cfg.mmu(), 1);
        let mut port = FakePort::default();
        let mut w = Walker { mmu: &mut mmu, ctx: 1, port: &mut port, mechs: &mut mechs, p: &p, c: 0, miss: true };
        w.walk(&mut pt, root, va, false);
        assert_eq!(w.port.0.len(), 5, "a cold walk starts at the root: no re-read");
        w.port.0.clear();
        w.walk(&mut pt, root, next, false);
        // The PWC's L2 entry points at the leaf node, which the walk reads twice at its own
        // index: once where the cache's entry points (the node its filler read, this one),
        // then as its own step.
        let leaf = entry_lines(&pt, root, next)[3];
        assert_eq!(w.port.0, vec![Call::Delay(3), Call::Pte(leaf, Table::Native), Call::Pte(leaf, Table::Native)]);
        assert_eq!(w.mmu.counters.miss_walk_steps, 4 + 2);

        let lines = |p: &WalkParams, pt: &mut PageTables| {
            let mut mmu = Mmu::new(&cfg.mmu(), 1);
            let mut mechs = Mechs::new(Vec::new(), 1);
            let mut port = FakePort::default();
            let mut w = Walker { mmu: &mut mmu, ctx: 1, port: &mut port, mechs: &mut mechs, p, c: 0, miss: true };
            w.walk(pt, root, va, false);
            w.walk(pt, root, next, false);
            port.0.iter().filter_map(|c| if let Call::Pte(l, _) = c { Some(*l) } else { None }).collect::<Vec<_>>()
        };
        let shared = lines(&params(0), &mut pt);
        assert_eq!(shared[3], shared[4], "radix: neighbouring PTEs share a line");
        let mut p = params(0);
        p.champsim.private_lines = true;
        let private = lines(&p, &mut pt);
        assert_ne!(private[3], private[4], "ChampSim: each PTE in a page of its own");
        assert!(private.iter().all(|&l| l >> (50 - 6) == 1), "above memory: {private:x?}");

        // Both: the re-read is in the page of the walk that filled the cache's entry (the
        // first walk, `va`), at the second walk's own index; then the second walk's own entry.
        let cfg2 = Config::from_pairs([("champsim.pscl_reread", "true"), ("champsim.private_pte_lines", "true")]).unwrap();
        let mut p = params(0);
        (p.champsim.reread, p.champsim.private_lines) = (true, true);
        let mut mmu = Mmu::new(&cfg2.mmu(), 1);
        let mut mechs = Mechs::new(Vec::new(), 1);
        let mut port = FakePort::default();
        let mut w = Walker { mmu: &mut mmu, ctx: 1, port: &mut port, mechs: &mut mechs, p: &p, c: 0, miss: true };
        w.walk(&mut pt, root, va, false);
        w.port.0.clear();
        w.walk(&mut pt, root, next, false);
        let in_fillers_page = champsim_page_entry(1, champsim_key(1, va), next.index(1) as u64) >> 6;
        let own = champsim_entry_addr(1, next, next.index(1) as u64) >> 6;
        assert_ne!(in_fillers_page, own);
        assert_eq!(w.port.0, vec![Call::Delay(3), Call::Pte(in_fillers_page, Table::Native), Call::Pte(own, Table::Native)]);

        let (mut pt, root) = table_mapping(&[va, next]);
        let mut p = params(0);
        p.champsim.first_touch = 200;
        let mut mmu = Mmu::new(&cfg.mmu(), 1);
        let mut port = FakePort::default();
        let mut w = Walker { mmu: &mut mmu, ctx: 1, port: &mut port, mechs: &mut mechs, p: &p, c: 0, miss: true };
        let delays = |calls: &[Call]| calls.iter().map(|c| if let Call::Delay(d) = c { *d } else { 0 }).sum::<u64>();
        w.walk(&mut pt, root, va, false);
        assert_eq!(delays(&w.port.0), 3 + 200 * (3 + 2), "four new entries, the leaf twice");
        w.port.0.clear();
        w.walk(&mut pt, root, next, false);
        assert_eq!(delays(&w.port.0), 3 + 400, "a new page in a known region: its PTE and the page");
        w.port.0.clear();
        w.walk(&mut pt, root, va, false);
        assert_eq!(delays(&w.port.0), 3, "nothing new");
    }
}
