//! The Promotion Candidate Cache (seed 001: Manocha et al., *Architectural Support for
//! Optimizing Huge Page Selection Within the OS*, MICRO '23, §3.2; `001_pcc.spec.md` §2):
//! per core, a small fully associative structure beside the walker that counts page walks
//! per 2 MB virtual region, so that the OS can read out a ranked list of the regions a 2 MB
//! page would serve best. Optionally a second one counts walks per 1 GB region. This module
//! is the hardware only; the OS daemon that reads it and promotes is not here.
//!
//! **Structure** ([`CandidateCache`], spec §2.2-2.3): `pcc.entries` entries (128), fully
//! associative, tagged by the region (VA >> 21, or >> 30) and the context (PCID and VPID, so
//! that processes sharing a core do not alias: spec §2.2 [ours]), each with a
//! `pcc.counter_bits` (8) frequency counter. A miss inserts at 0, evicting if full; a hit
//! adds 1, and when a counter reaches 2^bits - 1 every counter is halved (integer division,
//! as the artifact does). Replacement (`pcc.policy`):
//! - `lfu` (default): the artifact's `EVICTION_POLICY 2`. Its entries form a list kept in
//!   frequency order whose tail is evicted. A new entry goes in front of the frequency-0
//!   group; a hit moves the entry in front of the first entry whose count is at most its old
//!   count, then increments it (so to the *back* of its new count's group). Hence the victim
//!   is the oldest insertion among the frequency-0 entries (LRU, the paper's "LFU with LRU as
//!   a tiebreaker"); but among entries of an equal count >= 1 it is the one that reached that
//!   count last. That is the artifact's behaviour, reproduced as is. A halving keeps the list
//!   order. Here the list is an order key per entry (see [`Slot::ord`]), not a linked list.
//! - `lru`: plain recency (the "simpler policy" of §3.2.1).
//!
//! **Read-out** ([`CandidateCache::ranked`], [`Pcc::candidates`]): every entry, highest
//! frequency first (the OS's priority list, §3.3). Ties: with `lfu` the artifact's list
//! order (its dump order), with `lru` the most recently used first. `pcc.readout=invalidate`
//! leaves the PCC as it is (the paper: promoted regions leave through the shootdowns their
//! promotions cause); `flush` empties it (the artifact's simulator).
//!
//! **What feeds it** (spec §2.1, §2.6, §10.1). The walker shows each entry it reads before
//! setting its accessed bit. Choices the paper leaves open, and what this model does:
//! - *Where:* at the walk's "PMD stage" (Fig. 3, steps 5-7). A walk that reads the PMD entry
//!   (level 2) feeds the 2 MB PCC with that entry's A bit as found: clear means the first walk
//!   into the region, a cold miss, which is counted as `filtered` and not inserted. A
//!   walk that starts *below* the PMD, because the page-walk cache held it, feeds the PCC too,
//!   as warm: a PWC caches only entries a walk used, and a walk sets the A bit of each entry it
//!   uses. (The paper's simulator has no PWC; skipping these walks would hide exactly the
//!   hottest regions, whose PMDs stay in the PWC.) The 1 GB PCC is fed the same way at the PUD
//!   stage (level 3; the paper's "PGD", spec §2.1), whichever page size the walk ends at
//!   (option 1 of §3.2.3).
//! - *Which walks:* every walk of the native or guest table that reaches that stage: L2 TLB
//!   misses, walks that only set a dirty bit, and walks that then fault on a not-present PTE
//!   (the hardware cannot know). With prefaulted memory `pcc.lookups` equals `walks`. Host
//!   (EPT) walks never feed it: the PCC nominates the guest's virtual regions (spec §9).
//! - *Walks ending at a 2 MB leaf* (an already-promoted region) count too (§3.2.3, §3.3.3:
//!   such a region, still walking often, is "not well served" by 2 MB and is a demotion or
//!   1 GB candidate). Their entry is marked [`Candidate::huge`] (spec §10.1's optional is-huge
//!   bit) so that the OS can tell them apart; the cold filter applies to the 2 MB leaf's own A
//!   bit. A walk ending at a 1 GB leaf has no PMD and feeds only the 1 GB PCC (marked huge).
//! - *Flattened tables:* with an L2+L1 node (`pt.format=fpt`) there is no PMD entry to check,
//!   so every walk counts as warm (no cold filter); with `fpt-l3l2` the 1 GB PCC has no PUD.
//! - *Walk boundaries* are read off the steps: a leaf or a not-present entry ends a walk, and
//!   levels only fall within one. One case is ambiguous: a guest walk cut short by an EPT
//!   violation on the node below its PMD, and retried from that node (the PWC kept the PMD);
//!   that retry is not counted again.
//!
//! **Invalidation** (§3.3, [`Mechanism::on_invalidate`]): every shootdown or flush reaching
//! a core drops the entries it covers: a range overlapping the region in the same context
//! (in both PCCs: a 4 KB shootdown drops the enclosing 1 GB entry too, the literal reading of
//! "the corresponding region"), a whole context, a VM, or everything. Note that the OS turns a
//! shootdown of more than `os.flush_ceiling_pages` pages (a 2 MB promotion is 512) into a
//! whole-context flush, as Linux does, and a context switch without PCIDs into a full flush:
//! both empty the PCC of that context.

use std::cmp::Reverse;

use crate::arch::addr::{PageSize, VirtAddr};
use crate::arch::ctx::{Ctx, Invalidate};
use crate::arch::pte::{leaf_size, Table, PTE_A, PTE_P};
use crate::mech::{Mechanism, OsRequest, PromotionBudget, WalkStep};
use crate::arch::clock::Clock;
use crate::param::{PccPolicy, PccPromotion, PccReadout, Promotion};
use crate::stats::Stats;

use crate::param::{Limit, component};

component! {
    /// The Promotion Candidate Cache (`pcc.*`).
    PccParams {
        enabled: bool = false; "enabled"; None; "Promotion Candidate Cache (the PCC paper, Manocha et al., MICRO'23): a per-core structure counting page walks per 2 MB region (after a cold-miss filter on the PMD accessed bit), read out by the OS as a ranked list of huge-page candidates; os.promotion=pcc turns it on with the OS daemon that promotes from it, this key alone leaves it to be read by a program";
        entries: u64 = 128; "entries"; Some(Limit::Int(65536)); "2 MB PCC entries per core, fully associative, tagged by VA >> 21 and context (the paper's Tab. 2: 128 entries, 768 B)";
        entries_1g: u64 = 0; "entries_1g"; Some(Limit::Int(65536)); "1 GB PCC entries per core, counting walks per 1 GB region from 4 KB and 2 MB pages (the paper's option 1, §3.2.3; it costs 8 entries, 40 B, and evaluates none; 0: no 1 GB PCC)";
        policy: crate::param::PccPolicy = crate::param::PccPolicy::Lfu; "policy"; None; "PCC replacement: lfu (entries kept in frequency order, the tail evicted: the artifact's EVICTION_POLICY 2) or lru (the policy the paper's text settles on, §3.2.1); read-out is by frequency either way";
        counter_bits: u64 = 8; "counter_bits"; Some(Limit::IntRange(1, 16)); "bits of each PCC frequency counter (Tab. 2: 8); when one reaches 2^bits - 1 every counter is halved";
        readout: crate::param::PccReadout = crate::param::PccReadout::Invalidate; "readout"; None; "what an OS read-out does: invalidate (nothing; promoted regions leave through their shootdowns, the paper's §3.3) or flush (empty the PCC, as the artifact's simulator does)";
        promote_per_read: u64 = 128; "promote_per_read"; Some(Limit::Int(1 << 20)); "2 MB regions the daemon promotes at most per read-out, over all cores' PCCs (the paper's C = the PCC's size, 128, §3.3.1)";
        demotion: bool = false; "demotion"; None; "os.promotion=pcc: PCC-driven demotion (§3.3.3, as the artifact): a region the daemon promoted that reappears in a later read-out with a count above 0 (its 2 MB page still walks) is demoted, once, and its 2 MB block freed for another candidate (its 512 pages move to 4 KB frames)";
        bias: String = String::new(); "bias"; None; "os.promotion=pcc: comma-separated program numbers of a mix (0 = the first) whose candidates the daemon promotes first, until they run out, then the others' (the paper's promotion_bias_process PID list, §3.3.2); empty: no bias";
        promotion: crate::param::PccPromotion = crate::param::PccPromotion::RoundRobin; "promotion"; None; "how the daemon picks among the cores' lists: round-robin (take each list's next in turn, the paper's promotion_policy=0) or highest (the highest count among the lists' heads, promotion_policy=1), §3.3.2";
    }
    check(p, key) {
        for (name, n) in [("entries", p.entries), ("entries_1g", p.entries_1g)] {
            if n > 65536 {
                return Err(crate::param::invalid(key(name), format!("{n} entries is more than the 65536 supported (the paper sweeps 4 to 1024)")));
            }
        }
        if !(1..=16).contains(&p.counter_bits) {
            return Err(crate::param::invalid(key("counter_bits"), "must be between 1 and 16"));
        }
        Ok(())
    }
}

/// One entry of a read-out: the OS's view of a promotion candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The context (VPID << 12 | PCID) whose walks it counted.
    pub ctx: Ctx,
    /// The region: VA >> 21 (2 MB PCC) or VA >> 30 (1 GB PCC).
    pub tag: u64,
    pub freq: u16,
    /// The last walk counted ended at a page of the region's size (already promoted).
    pub huge: bool,
    /// The region size: 2 MB or 1 GB.
    pub size: PageSize,
}

impl Candidate {
    /// The region's first address.
    pub fn start(&self) -> VirtAddr {
        VirtAddr(self.tag << self.size.shift())
    }
}

/// A PCC's counters and its occupancy, under `prefix`.
fn emit_pcc(k: &PccCounters, prefix: &str, occupancy: u64, s: &mut Stats) {
    k.emit(prefix, s);
    s.int(format!("{prefix}occupancy"), occupancy);
}

crate::stats::counters! {
    /// Event counts of one PCC (statistics `pcc.*`, and `pcc.1g.*` for the 1 GB PCC).
    pub struct PccCounters under "[core<N>.]<pcc>." {
        lookups: "lookups" => (Mechanisms, Counter, "lookups",
            "Walks of the native or guest table (never host walks) that reached the PCC's stage: the PMD (level-2) entry for `pcc`, the PUD (level-3) entry for `pcc.1g`, or a level below it after a page-walk-cache hit. Includes walks that only set a dirty bit and walks that then fault. `filtered` + `inserts` + `hits`.")
            .only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
        filtered: "filtered" => (Mechanisms, Counter, "lookups",
            "Lookups the cold-miss filter dropped: the walk found the region's entry (the PMD or PUD entry, or the leaf of a page of the region's size) with its accessed bit clear, so this is the first walk into the region. A flattened L2+L1 node has no PMD entry: its walks are never filtered by `pcc`.")
            .only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
        inserts: "inserts" => (Mechanisms, Counter, "lookups",
            "Lookups past the filter that found no entry for the region (and context) and inserted it with count 0.")
            .only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
        hits: "hits" => (Mechanisms, Counter, "lookups",
            "Lookups past the filter that found the region's entry and added 1 to its count.")
            .only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
        huge_lookups: "huge_lookups" => (Mechanisms, Counter, "lookups",
            "Lookups past the filter by walks that ended at a page of the region's size (an already promoted region, whose entry is then marked huge).")
            .only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
        evictions: "evictions" => (Mechanisms, Counter, "entries",
            "Entries evicted to make room for an insert (`pcc.policy`: lfu or lru).").only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
        decays: "decays" => (Mechanisms, Counter, "halvings",
            "Times every count was halved because one reached 2^`pcc.counter_bits` - 1.").only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
        invalidations: "invalidations" => (Mechanisms, Counter, "entries",
            "Entries dropped by shootdowns and flushes reaching the core (a range overlapping the region, its context, its VM, or everything).")
            .only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
        reads: "reads" => (Mechanisms, Counter, "read-outs",
            "Read-outs of the PCC by the OS (its ranked candidate list).").only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
        flushed: "flushed" => (Mechanisms, Counter, "entries",
            "Entries emptied by read-outs (`pcc.readout=flush`; 0 with `invalidate`).").only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
    }
}

/// A valid entry.
#[derive(Clone, Copy, Debug)]
struct Slot {
    tag: u64,
    /// Order key. `lru`: the time of the last use. `lfu`: the entry's place among the entries
    /// of equal count in the artifact's list (smaller is nearer the head): insertions take
    /// ever smaller keys (in front of the frequency-0 group), hits ever larger ones (behind
    /// their new group); a halving renumbers everyone by list position.
    ord: i64,
    ctx: Ctx,
    freq: u16,
    huge: bool,
}

/// One PCC: fully associative, a frequency counter per entry (see the module doc).
pub struct CandidateCache {
    /// The valid entries, in no particular order (the order is [`Slot::ord`]).
    slots: Vec<Slot>,
    entries: usize,
    /// Counter value that triggers a halving: 2^bits - 1.
    max: u16,
    policy: PccPolicy,
    size: PageSize,
    /// Next order key of a hit (and, with `lru`, of an insertion).
    hi: i64,
    /// Last order key of an insertion with `lfu` (they decrease).
    lo: i64,
    pub counters: PccCounters,
}

impl CandidateCache {
    /// A PCC of `entries` entries over regions of `size` with `counter_bits`-bit counters.
    pub fn new(entries: usize, counter_bits: u32, policy: PccPolicy, size: PageSize) -> CandidateCache {
        assert!(entries > 0, "a PCC needs at least one entry");
        assert!((1..=16).contains(&counter_bits), "PCC counters have 1 to 16 bits");
        CandidateCache {
            slots: Vec::with_capacity(entries),
            entries,
            max: ((1u32 << counter_bits) - 1) as u16,
            policy,
            size,
            hi: 0,
            lo: 0,
            counters: PccCounters::default(),
        }
    }

    pub fn capacity(&self) -> usize {
        self.entries
    }

    pub fn occupancy(&self) -> usize {
        self.slots.len()
    }

    /// The region size it tracks.
    pub fn size(&self) -> PageSize {
        self.size
    }

    /// The count of region `tag` of `ctx`, if it has an entry.
    pub fn freq(&self, ctx: Ctx, tag: u64) -> Option<u16> {
        self.slots.iter().find(|s| s.tag == tag && s.ctx == ctx).map(|s| s.freq)
    }

    /// A walk the cold-miss filter dropped (its region's entry had A clear).
    #[inline]
    pub fn filtered(&mut self) {
        self.counters.lookups += 1;
        self.counters.filtered += 1;
    }

    /// A walk into region `tag` of `ctx` that passed the filter (`huge`: it ended at a page
    /// of the region's size): a hit counts it, a miss inserts the region at 0, evicting the
    /// victim if the PCC is full. Returns whether it hit.
    pub fn touch(&mut self, ctx: Ctx, tag: u64, huge: bool) -> bool {
        let k = &mut self.counters;
        k.lookups += 1;
        k.huge_lookups += huge as u64;
        if let Some(s) = self.slots.iter_mut().find(|s| s.tag == tag && s.ctx == ctx) {
            k.hits += 1;
            s.huge = huge;
            s.freq += 1;
            s.ord = self.hi;
            self.hi += 1;
            if s.freq >= self.max {
                self.decay();
            }
            return true;
        }
        k.inserts += 1;
        if self.slots.len() == self.entries {
            let v = self.victim();
            self.slots.swap_remove(v);
            self.counters.evictions += 1;
        }
        let ord = match self.policy {
            PccPolicy::Lfu => {
                self.lo -= 1;
                self.lo
            }
            PccPolicy::Lru => {
                self.hi += 1;
                self.hi - 1
            }
        };
        self.slots.push(Slot { tag, ord, ctx, freq: 0, huge });
        false
    }

    /// The index of the entry to evict: `lfu`, the tail of the list (the lowest count, the
    /// largest order key among those); `lru`, the least recently used.
    fn victim(&self) -> usize {
        let it = self.slots.iter().enumerate();
        let v = match self.policy {
            PccPolicy::Lfu => it.min_by_key(|(_, s)| (s.freq, Reverse(s.ord))),
            PccPolicy::Lru => it.min_by_key(|(_, s)| s.ord),
        };
        v.expect("a full PCC has entries").0
    }

    /// Halve every counter, keeping the ranking.
    #[cold]
    fn decay(&mut self) {
        self.counters.decays += 1;
        if self.policy == PccPolicy::Lfu {
            // Counts that were different may become equal: fix the list order first.
            self.slots.sort_unstable_by_key(|s| (Reverse(s.freq), s.ord));
            for (i, s) in self.slots.iter_mut().enumerate() {
                s.ord = i as i64;
            }
            self.hi = self.hi.max(self.slots.len() as i64);
        }
        for s in &mut self.slots {
            s.freq /= 2;
        }
    }

    /// Every entry in priority order: highest count first; ties in list order (`lfu`) or most
    /// recently used first (`lru`).
    pub fn ranked(&self) -> Vec<Candidate> {
        let mut v = self.slots.clone();
        match self.policy {
            PccPolicy::Lfu => v.sort_unstable_by_key(|s| (Reverse(s.freq), s.ord)),
            PccPolicy::Lru => v.sort_unstable_by_key(|s| (Reverse(s.freq), Reverse(s.ord))),
        }
        v.iter().map(|s| Candidate { ctx: s.ctx, tag: s.tag, freq: s.freq, huge: s.huge, size: self.size }).collect()
    }

    /// The OS reads the PCC out: [`CandidateCache::ranked`], and with `Flush` the PCC empties.
    pub fn read_out(&mut self, mode: PccReadout) -> Vec<Candidate> {
        let out = self.ranked();
        self.counters.reads += 1;
        if mode == PccReadout::Flush {
            self.counters.flushed += self.slots.len() as u64;
            self.slots.clear();
        }
        out
    }

    /// Drop the entries `what` covers; returns how many went.
    pub fn invalidate(&mut self, what: Invalidate) -> usize {
        let before = self.slots.len();
        let shift = self.size.shift();
        self.slots.retain(|s| !covers(what, s.ctx, s.tag, shift));
        let n = before - self.slots.len();
        self.counters.invalidations += n as u64;
        n
    }
}

/// Whether invalidation `what` reaches region `tag` (of 2^`shift` bytes) of `ctx`.
fn covers(what: Invalidate, ctx: Ctx, tag: u64, shift: u32) -> bool {
    what.covers(ctx, tag, shift)
}

/// What a PCC costs in storage (spec 001 §2.2 and §8.9: the paper's 768 / 40 / 808 B, ~50
/// TLB entries, ~5 %, 64 K). An entry is a region tag (the virtual address bits above the
/// region's offset) and a counter, rounded up to whole bytes; the paper's 40- and 31-bit
/// tags imply a 61-bit virtual address (its §8.10 #5), which `va_bits` makes explicit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PccCost {
    /// Bits and bytes of one 2 MB entry, and of the 2 MB PCC.
    pub entry_bits_2m: u32,
    pub entry_bytes_2m: u64,
    pub bytes_2m: u64,
    /// The same for the 1 GB PCC (0 entries: 0 bytes).
    pub entry_bits_1g: u32,
    pub entry_bytes_1g: u64,
    pub bytes_1g: u64,
    /// Both, per core.
    pub bytes: u64,
    /// TLB entries the same storage would buy (`tlb_entry_bytes` each, whole entries), and
    /// what they add to an L2 TLB of `l2_entries` (a fraction).
    pub tlb_entries: u64,
    pub tlb_gain: f64,
    /// 4 KB pages the 2 MB PCC can nominate at once (entries x 512), and their reach.
    pub pages: u64,
    pub reach_bytes: u64,
}

impl PccCost {
    pub fn new(va_bits: u32, entries: u64, entries_1g: u64, counter_bits: u32, tlb_entry_bytes: u64, l2_entries: u64) -> PccCost {
        let bits = |shift: u32| va_bits.saturating_sub(shift) + counter_bits;
        let (entry_bits_2m, entry_bits_1g) = (bits(21), bits(30));
        let (entry_bytes_2m, entry_bytes_1g) = (u64::from(entry_bits_2m.div_ceil(8)), u64::from(entry_bits_1g.div_ceil(8)));
        let (bytes_2m, bytes_1g) = (entries * entry_bytes_2m, entries_1g * entry_bytes_1g);
        let bytes = bytes_2m + bytes_1g;
        let tlb_entries = bytes / tlb_entry_bytes.max(1);
        PccCost {
            entry_bits_2m,
            entry_bytes_2m,
            bytes_2m,
            entry_bits_1g,
            entry_bytes_1g,
            bytes_1g,
            bytes,
            tlb_entries,
            tlb_gain: if l2_entries > 0 { tlb_entries as f64 / l2_entries as f64 } else { 0.0 },
            pages: entries * 512,
            reach_bytes: entries << 21,
        }
    }
}

/// Walk stages a walk has passed (see [`CorePcc::stage`]).
const PUD_DONE: u8 = 1;
const PMD_DONE: u8 = 2;

/// One core's PCCs, and where its current walk is.
pub struct CorePcc {
    pub pcc: CandidateCache,
    pub pcc_1g: Option<CandidateCache>,
    /// Level of the last native or guest entry the core's walks read (a step at this level or
    /// above starts a new walk).
    last: u8,
    /// Stages the current walk has passed: `PUD_DONE`, `PMD_DONE`.
    stage: u8,
}

impl CorePcc {
    /// The 1 GB stage of a walk: the PUD entry, as found (`a`: its A bit), or implied warm.
    #[inline]
    fn stage_1g(&mut self, ctx: Ctx, va: VirtAddr, a: bool, huge: bool) {
        self.stage |= PUD_DONE;
        if let Some(p) = &mut self.pcc_1g {
            if a {
                p.touch(ctx, va.0 >> 30, huge);
            } else {
                p.filtered();
            }
        }
    }

    /// The 2 MB stage of a walk.
    #[inline]
    fn stage_2m(&mut self, ctx: Ctx, va: VirtAddr, a: bool, huge: bool) {
        self.stage |= PMD_DONE;
        if a {
            self.pcc.touch(ctx, va.0 >> 21, huge);
        } else {
            self.pcc.filtered();
        }
    }
}

/// The PCC mechanism: one 2 MB PCC (and optionally one 1 GB PCC) per core.
pub struct Pcc {
    readout: PccReadout,
    cores: Vec<CorePcc>,
    daemon: Daemon,
}

/// The OS's promotion daemon (spec 001 §3.1-§3.4): every `period` references it reads
/// every core's PCC out and asks the OS to promote up to `per_read` of the candidates, in
/// the order `policy` takes them from the cores' lists. Over the run it asks for at most
/// `budget.limit` distinct regions (`os.promotion_cap`, the utility curve), each once.
/// Regions already huge are not promoted again: with `demotion` (`pcc.demotion`), one it
/// promoted that reappears with a count above 0 is demoted, once (the artifact's rule).
#[derive(Clone, Debug)]
pub struct Daemon {
    pub period: u64,
    pub first: u64,
    pub per_read: usize,
    pub policy: PccPromotion,
    pub budget: PromotionBudget,
    pub demotion: bool,
    /// The biased processes' contexts (`pcc.bias`): their candidates go first.
    pub bias: Vec<Ctx>,
    /// Regions demoted (never promoted again).
    pub demoted: Vec<(Ctx, u64)>,
    /// Read-outs done, promotions and demotions asked for.
    pub reads: u64,
    pub requests: u64,
    pub demotions: u64,
}

/// What a PCC is built from (the `pcc.*` keys).
#[derive(Clone, Copy, Debug)]
pub struct PccSpec {
    pub entries: usize,
    pub entries_1g: usize,
    pub counter_bits: u32,
    pub policy: PccPolicy,
    pub readout: PccReadout,
    /// The daemon: references between read-outs (0: none), before the first, promotions
    /// per read-out, how it takes them from the cores' lists, and whether it demotes.
    pub daemon_refs: u64,
    pub daemon_first_refs: u64,
    pub promote_per_read: usize,
    pub promotion: PccPromotion,
    pub demotion: bool,
    /// The footprint cap: a fraction (1: none) of `footprint_2m` 2 MB regions.
    pub cap: f64,
    pub footprint_2m: u64,
}

impl PccSpec {
    /// The PCC's keys and the promotion daemons', for a footprint of `footprint_2m` 2 MB
    /// regions: a daemon if
    /// `os.promotion=pcc`.
    pub fn of(pcc: &PccParams, promotion: &crate::mech::PromotionParams, footprint_2m: u64) -> PccSpec {
        let (cfg, daemon) = (pcc, promotion.kind == Promotion::Pcc);
        PccSpec {
            entries: cfg.entries as usize,
            entries_1g: cfg.entries_1g as usize,
            counter_bits: cfg.counter_bits as u32,
            policy: cfg.policy,
            readout: cfg.readout,
            daemon_refs: if daemon { promotion.interval } else { 0 },
            daemon_first_refs: promotion.first,
            promote_per_read: cfg.promote_per_read as usize,
            promotion: cfg.promotion,
            demotion: cfg.demotion,
            cap: promotion.cap,
            footprint_2m,
        }
    }
}

/// One read-out's requests: demotions first (their blocks serve the promotions), then
/// promotions, each `(core, candidate)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Picks {
    pub demote: Vec<(usize, Candidate)>,
    pub promote: Vec<(usize, Candidate)>,
}

impl Pcc {
    /// The PCCs, if the keys give cores one (`pcc.enabled` or `os.promotion=pcc`), for a
    /// footprint of `footprint_2m` 2 MB regions.
    pub fn build(pcc: &PccParams, promotion: &crate::mech::PromotionParams, cores: usize, footprint_2m: u64) -> Option<Pcc> {
        (pcc.enabled || promotion.kind == Promotion::Pcc).then(|| Pcc::new(PccSpec::of(pcc, promotion, footprint_2m), cores))
    }

    pub fn new(p: PccSpec, cores: usize) -> Pcc {
        let cores = (0..cores)
            .map(|_| CorePcc {
                pcc: CandidateCache::new(p.entries, p.counter_bits, p.policy, PageSize::Size2M),
                pcc_1g: (p.entries_1g > 0).then(|| CandidateCache::new(p.entries_1g, p.counter_bits, p.policy, PageSize::Size1G)),
                last: 0,
                stage: 0,
            })
            .collect();
        let daemon = Daemon {
            period: p.daemon_refs,
            first: if p.daemon_first_refs > 0 { p.daemon_first_refs } else { p.daemon_refs },
            per_read: p.promote_per_read,
            policy: p.promotion,
            budget: PromotionBudget::new(p.cap, p.footprint_2m),
            demotion: p.demotion,
            bias: Vec::new(),
            demoted: Vec::new(),
            reads: 0,
            requests: 0,
            demotions: 0,
        };
        Pcc { readout: p.readout, cores, daemon }
    }

    /// The daemon's state and counts.
    pub fn daemon(&self) -> &Daemon {
        &self.daemon
    }

    /// One read-out of every core's PCC and what it asks of the OS. Promotions: in the
    /// order the daemon's policy takes them (the biased processes' candidates first, with
    /// `pcc.bias`), at most `per_read`, each region once, none already huge or demoted
    /// before, none beyond the footprint cap. Demotions (with `pcc.demotion`): the huge
    /// entries with a count above 0 of regions it promoted.
    pub fn pick(&mut self) -> Picks {
        let mut picks = Picks::default();
        let mut lists: Vec<Vec<Candidate>> = Vec::with_capacity(self.cores.len());
        for c in 0..self.cores.len() {
            let (huge, small): (Vec<Candidate>, Vec<Candidate>) = self.candidates(c).into_iter().partition(|x| x.huge);
            if self.daemon.demotion {
                for x in huge {
                    let key = (x.ctx, x.tag);
                    if x.freq > 0 && self.daemon.budget.asked(x.ctx, x.tag) && !self.daemon.demoted.contains(&key) {
                        self.daemon.demoted.push(key);
                        picks.demote.push((c, x));
                    }
                }
            }
            lists.push(small);
        }
        // With a bias, two rounds: the biased processes' candidates, then everyone else's.
        let biased = |x: &Candidate, bias: &[Ctx]| bias.contains(&(x.ctx & crate::arch::ctx::SPACE_MASK));
        if self.daemon.bias.is_empty() {
            self.take(&lists, &mut picks.promote);
        } else {
            let bias = std::mem::take(&mut self.daemon.bias);
            let (first, rest): (Vec<Vec<Candidate>>, Vec<Vec<Candidate>>) =
                lists.iter().map(|l| l.iter().partition::<Vec<Candidate>, _>(|x| biased(x, &bias))).unzip();
            self.take(&first, &mut picks.promote);
            self.take(&rest, &mut picks.promote);
            self.daemon.bias = bias;
        }
        picks
    }

    /// Take promotions from the cores' `lists` into `out` as the daemon's policy orders them
    /// (see [`Pcc::pick`]).
    fn take(&mut self, lists: &[Vec<Candidate>], out: &mut Vec<(usize, Candidate)>) {
        let mut heads = vec![0usize; lists.len()];
        let mut turn = 0;
        while out.len() < self.daemon.per_read {
            // The list to take from next: in turn, or the one whose head counts most.
            let pick = match self.daemon.policy {
                PccPromotion::RoundRobin => (0..lists.len()).map(|i| (turn + i) % lists.len()).find(|&c| heads[c] < lists[c].len()),
                PccPromotion::Highest => (0..lists.len()).filter(|&c| heads[c] < lists[c].len()).max_by_key(|&c| (lists[c][heads[c]].freq, Reverse(c))),
            };
            let Some(c) = pick else { break };
            let cand = lists[c][heads[c]];
            heads[c] += 1;
            turn = c + 1;
            let fresh = !out.iter().any(|(_, x)| x.ctx == cand.ctx && x.tag == cand.tag) && !self.daemon.demoted.contains(&(cand.ctx, cand.tag));
            if fresh && self.daemon.budget.take(cand.ctx, cand.tag) {
                out.push((c, cand));
            }
        }
    }

    pub fn cores(&self) -> usize {
        self.cores.len()
    }

    /// Core `c`'s PCCs (for reading state; the OS reads out through [`Pcc::candidates`]).
    pub fn core(&self, c: usize) -> &CorePcc {
        &self.cores[c]
    }

    /// The read-out mode (`pcc.readout`).
    pub fn readout(&self) -> PccReadout {
        self.readout
    }

    /// The OS reads core `c`'s 2 MB PCC: every entry, highest priority first; with
    /// `pcc.readout=flush` the PCC empties.
    pub fn candidates(&mut self, c: usize) -> Vec<Candidate> {
        self.cores[c].pcc.read_out(self.readout)
    }

    /// The same for core `c`'s 1 GB PCC (empty without one).
    pub fn candidates_1g(&mut self, c: usize) -> Vec<Candidate> {
        let mode = self.readout;
        self.cores[c].pcc_1g.as_mut().map(|p| p.read_out(mode)).unwrap_or_default()
    }

    /// Core `c`'s 2 MB PCC in priority order, without reading it out (no side effects).
    pub fn peek(&self, c: usize) -> Vec<Candidate> {
        self.cores[c].pcc.ranked()
    }
}

/// The glossary's entries of the mechanism's statistics: its counters, and the occupancy and
/// the daemon's counts `emit_stats` adds.
pub(crate) const STATS: &[&[crate::glossary::Entry]] = &[PccCounters::STATS, {
    use crate::glossary::{e, Kind::*, Section::*};
    &[
        e(Mechanisms, "[core<N>.]<pcc>.occupancy", Level, "entries", "Valid entries at the end of the run (state: not reset by warm-up).").only("`pcc.enabled=true` (`pcc.1g.*`: and `pcc.entries_1g` > 0)"),
        e(Mechanisms, "pcc.daemon.reads", Counter, "read-outs", "Times the OS's promotion daemon read every core's PCC out (every `os.promotion_interval` references, first after `os.promotion_first`).").only("`os.promotion=pcc`"),
        e(Mechanisms, "pcc.daemon.requests", Counter, "regions", "Promotions the daemon asked the OS for: at most `pcc.promote_per_read` per read-out, each region once, none already huge or demoted, and over the run at most `os.promotion_cap` of the footprint in distinct regions. The OS's `promotions` counts those it carried out.").only("`os.promotion=pcc`"),
        e(Mechanisms, "pcc.daemon.demotions", Counter, "regions", "Demotions the daemon asked the OS for (`pcc.demotion`): regions it promoted that came back in a read-out as huge entries with a count above 0, each once. The OS's `demotions` counts those it carried out; each frees a 2 MB block, its 512 pages moving to 4 KB frames (`os.migrated_pages`).").only("`os.promotion=pcc` and `pcc.demotion=true`"),
    ]
}];

impl Mechanism for Pcc {
    fn hooks(&self) -> crate::mech::Hooks {
        crate::mech::Hooks { walk_step: true, ..Default::default() }
    }

    /// The candidates of the processes with contexts `ctxs` go first (`pcc.bias`).
    fn favour(&mut self, ctxs: &[Ctx]) {
        self.daemon.bias = ctxs.to_vec();
    }

    #[inline]
    fn on_walk_step(&mut self, c: usize, s: &WalkStep) {
        if s.table == Table::Host {
            return;
        }
        let k = &mut self.cores[c];
        let present = s.entry & PTE_P != 0;
        let leaf = present && leaf_size(s.level, s.entry).is_some();
        // A leaf or a not-present entry ends a walk; otherwise, as the levels only fall
        // within one walk, a step at the last one's level or above starts the next walk
        // (which starts where the page-walk cache says).
        if s.level >= k.last {
            k.stage = 0;
        }
        k.last = if present && !leaf { s.level } else { 0 };
        if s.level > 3 || k.stage == PUD_DONE | PMD_DONE {
            return;
        }
        let a = s.entry & PTE_A != 0;
        match s.level {
            3 => {
                // The PUD entry; a 1 GB leaf ends the walk here (no PMD stage).
                if present {
                    k.stage_1g(s.ctx, s.va, a, leaf);
                }
                k.stage |= PUD_DONE | if leaf || !present { PMD_DONE } else { 0 };
            }
            2 => {
                // The walk started below the PUD: the PWC held it, so it was used, A set.
                if k.stage & PUD_DONE == 0 {
                    k.stage_1g(s.ctx, s.va, true, false);
                }
                if present {
                    k.stage_2m(s.ctx, s.va, a, leaf);
                }
                k.stage = PUD_DONE | PMD_DONE;
            }
            _ => {
                // Level 1: the walk started below the PMD (a PWC hit, so warm), or the table
                // has no PMD entry (a flattened L2+L1 node, whose 2 MB pages are replicas).
                if k.stage & PUD_DONE == 0 {
                    k.stage_1g(s.ctx, s.va, true, false);
                }
                if k.stage & PMD_DONE == 0 {
                    let huge = leaf && leaf_size(1, s.entry) == Some(PageSize::Size2M);
                    k.stage_2m(s.ctx, s.va, true, huge);
                }
                k.stage = PUD_DONE | PMD_DONE;
            }
        }
    }

    fn task(&self) -> Option<(Clock, u64, u64)> {
        // (Counted in references, as the paper converts its 30 s: a run keeps two threads.)
        (self.daemon.period > 0).then_some((Clock::References, self.daemon.period, self.daemon.first))
    }

    fn on_tick(&mut self, out: &mut Vec<OsRequest>) {
        let picks = self.pick();
        self.daemon.reads += 1;
        self.daemon.requests += picks.promote.len() as u64;
        self.daemon.demotions += picks.demote.len() as u64;
        out.extend(picks.demote.into_iter().map(|(core, x)| OsRequest::Demote { core, ctx: x.ctx, va: x.start() }));
        out.extend(picks.promote.into_iter().map(|(core, x)| OsRequest::Promote { core, ctx: x.ctx, va: x.start() }));
    }

    fn on_invalidate(&mut self, c: usize, what: Invalidate) -> usize {
        let k = &mut self.cores[c];
        k.pcc.invalidate(what) + k.pcc_1g.as_mut().map_or(0, |p| p.invalidate(what))
    }

    fn emit_stats(&self, s: &mut Stats) {
        let multi = self.cores.len() > 1;
        let (mut sum, mut sum_1g) = (PccCounters::default(), PccCounters::default());
        let (mut occ, mut occ_1g) = (0, 0);
        for (i, k) in self.cores.iter().enumerate() {
            sum.add(&k.pcc.counters);
            occ += k.pcc.occupancy();
            if multi {
                emit_pcc(&k.pcc.counters, &format!("core{i}.pcc."), k.pcc.occupancy() as u64, s);
            }
            if let Some(p) = &k.pcc_1g {
                sum_1g.add(&p.counters);
                occ_1g += p.occupancy();
                if multi {
                    emit_pcc(&p.counters, &format!("core{i}.pcc.1g."), p.occupancy() as u64, s);
                }
            }
        }
        emit_pcc(&sum, "pcc.", occ as u64, s);
        if self.daemon.period > 0 {
            s.int("pcc.daemon.reads", self.daemon.reads);
            s.int("pcc.daemon.requests", self.daemon.requests);
            if self.daemon.demotion {
                s.int("pcc.daemon.demotions", self.daemon.demotions);
            }
        }
        if self.cores.iter().any(|k| k.pcc_1g.is_some()) {
            emit_pcc(&sum_1g, "pcc.1g.", occ_1g as u64, s);
        }
    }

}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::ctx::VPID_SHIFT;
    use crate::arch::pte::PTE_PS;
    use crate::mech::{AnyMech, Mechs};
    use crate::arch::pte::NO_NODE;

    const MB2: u64 = 1 << 21;
    const GB: u64 = 1 << 30;
    const BASE: u64 = 0x7f00_0000_0000;
    /// A present non-leaf entry, with or without its A bit.
    const COLD: u64 = PTE_P;
    const WARM: u64 = PTE_P | PTE_A;

    fn params(entries: usize, policy: PccPolicy) -> PccSpec {
        PccSpec {
            entries,
            entries_1g: 0,
            counter_bits: 8,
            policy,
            readout: PccReadout::Invalidate,
            daemon_refs: 0,
            daemon_first_refs: 0,
            demotion: false,
            promote_per_read: 128,
            promotion: PccPromotion::RoundRobin,
            cap: 1.0,
            footprint_2m: 0,
        }
    }

    fn step(table: Table, ctx: Ctx, va: u64, level: u8, entry: u64) -> WalkStep {
        WalkStep { table, va: VirtAddr(va), ctx, level, entry, node: NO_NODE, index: 0 }
    }

    /// A native walk of `va` in context 1 from the top: L4 and L3 warm, the PMD as given
    /// (`pmd`), then a present 4 KB PTE unless the PMD is a 2 MB leaf or not present.
    fn walk(p: &mut Pcc, c: usize, va: u64, pmd: u64) {
        walk_ctx(p, c, 1, va, pmd)
    }

    fn walk_ctx(p: &mut Pcc, c: usize, ctx: Ctx, va: u64, pmd: u64) {
        for (level, e) in [(4, WARM), (3, WARM), (2, pmd)] {
            p.on_walk_step(c, &step(Table::Native, ctx, va, level, e));
        }
        if pmd & PTE_P != 0 && pmd & PTE_PS == 0 {
            p.on_walk_step(c, &step(Table::Native, ctx, va, 1, WARM));
        }
    }

    /// A walk that the page-walk cache started at the L1 node (it read no PMD).
    fn pwc_walk(p: &mut Pcc, c: usize, va: u64) {
        p.on_walk_step(c, &step(Table::Native, 1, va, 1, WARM));
    }

    /// (tag, freq) of core 0's 2 MB PCC in priority order.
    fn order(p: &Pcc) -> Vec<(u64, u16)> {
        p.peek(0).iter().map(|c| (c.tag, c.freq)).collect()
    }

    fn tag(i: u64) -> u64 {
        (BASE >> 21) + i
    }

    /// Spec §2.3 and §10.3: the first walk into a region (PMD A clear) is filtered; the
    /// second inserts it at 0; k more walks bring it to k, whether they read the PMD or start
    /// below it from the page-walk cache.
    #[test]
    fn a_region_needs_a_filtered_cold_walk_then_an_inserting_walk() {
        let mut p = Pcc::new(params(4, PccPolicy::Lfu), 1);
        walk(&mut p, 0, BASE + 0x1000, COLD);
        assert!(order(&p).is_empty(), "the cold walk is not inserted");
        walk(&mut p, 0, BASE + 0x5000, WARM);
        assert_eq!(order(&p), vec![(tag(0), 0)], "inserted at 0");
        walk(&mut p, 0, BASE + 0x1000, WARM);
        assert_eq!(order(&p), vec![(tag(0), 1)]);
        for _ in 0..5 {
            pwc_walk(&mut p, 0, BASE + 0x9000);
        }
        assert_eq!(order(&p), vec![(tag(0), 6)], "walks starting below the PMD count as warm");
        let k = p.core(0).pcc.counters;
        assert_eq!((k.lookups, k.filtered, k.inserts, k.hits, k.evictions), (8, 1, 1, 6, 0));
        // A walk that faults at the PMD (not present) never reaches the PMD stage.
        walk(&mut p, 0, BASE + MB2, 0);
        assert_eq!(p.core(0).pcc.counters.lookups, 8);
    }

    /// The miniature of spec §10.3 with a 2-entry LFU PCC: C evicts B (count 0 < A's 1);
    /// A reaching 255 halves everyone; A's promotion shootdown drops it; the walks after that
    /// end at a 2 MB leaf, filtered while its A bit is clear, then counted as huge.
    #[test]
    fn the_specs_miniature() {
        let mut p = Pcc::new(params(2, PccPolicy::Lfu), 1);
        let (a, b, c) = (BASE, BASE + MB2, BASE + 2 * MB2);
        walk(&mut p, 0, a, COLD);
        walk(&mut p, 0, a, WARM);
        walk(&mut p, 0, a, WARM);
        walk(&mut p, 0, b, COLD);
        walk(&mut p, 0, b, WARM);
        assert_eq!(order(&p), vec![(tag(0), 1), (tag(1), 0)]);
        walk(&mut p, 0, c, COLD);
        walk(&mut p, 0, c, WARM);
        assert_eq!(order(&p), vec![(tag(0), 1), (tag(2), 0)], "B (count 0) is the victim, not A");
        for _ in 0..253 {
            walk(&mut p, 0, a, WARM);
        }
        assert_eq!(order(&p), vec![(tag(0), 254), (tag(2), 0)]);
        walk(&mut p, 0, a, WARM);
        assert_eq!(order(&p), vec![(tag(0), 127), (tag(2), 0)], "A reached 255: all halved");
        assert_eq!(p.core(0).pcc.counters.decays, 1);
        // Promotion of A: its shootdown (a 2 MB range) drops it.
        assert_eq!(p.on_invalidate(0, Invalidate::Range { ctx: 1, start: a, end: a + MB2 }), 1);
        assert_eq!(order(&p), vec![(tag(2), 0)]);
        walk(&mut p, 0, a + 0x3000, PTE_P | PTE_PS);
        assert_eq!(order(&p), vec![(tag(2), 0)], "a 2 MB leaf with A clear is a cold walk too");
        walk(&mut p, 0, a + 0x3000, WARM | PTE_PS);
        let first = p.peek(0)[0];
        assert_eq!((first.tag, first.freq, first.huge, first.start()), (tag(0), 0, true, VirtAddr(a)), "the newest count-0 entry comes first");
        let k = p.core(0).pcc.counters;
        assert_eq!((k.filtered, k.huge_lookups, k.evictions, k.invalidations), (4, 1, 1, 1));
    }

    /// The halving: when one counter reaches 2^bits - 1 every counter is halved (integer
    /// division), the order kept; with 3-bit counters at 7.
    #[test]
    fn decay_halves_every_counter_when_one_saturates() {
        for policy in [PccPolicy::Lfu, PccPolicy::Lru] {
            let mut q = CandidateCache::new(4, 3, policy, PageSize::Size2M);
            for (t, n) in [(1, 6), (2, 5), (3, 2), (4, 1)] {
                for _ in 0..=n {
                    q.touch(1, t, false);
                }
            }
            let f = |q: &CandidateCache| q.ranked().iter().map(|c| (c.tag, c.freq)).collect::<Vec<_>>();
            assert_eq!(f(&q), vec![(1, 6), (2, 5), (3, 2), (4, 1)]);
            assert_eq!(q.counters.decays, 0);
            q.touch(1, 2, false);
            q.touch(1, 2, false);
            assert_eq!(f(&q), vec![(2, 3), (1, 3), (3, 1), (4, 0)], "{policy}: 2 reached 7; 7 6 2 1 -> 3 3 1 0");
            assert_eq!(q.counters.decays, 1);
        }
    }

    /// Victims: `lfu` evicts the list's tail (the oldest insertion among count-0 entries, or,
    /// with none at 0, the entry that reached the lowest count last: the artifact's order);
    /// `lru` the least recently used whatever its count.
    #[test]
    fn lfu_and_lru_victims() {
        let tags = |q: &CandidateCache| q.ranked().iter().map(|c| (c.tag, c.freq)).collect::<Vec<_>>();
        // A: count 2, used first; then B, C inserted (count 0), D inserted.
        let fill = |policy| {
            let mut q = CandidateCache::new(3, 8, policy, PageSize::Size2M);
            for t in [10, 10, 10, 11, 12] {
                q.touch(1, t, false);
            }
            q
        };
        let mut lfu = fill(PccPolicy::Lfu);
        assert_eq!(tags(&lfu), vec![(10, 2), (12, 0), (11, 0)], "a new entry goes in front of the count-0 group");
        lfu.touch(1, 13, false);
        assert_eq!(tags(&lfu), vec![(10, 2), (13, 0), (12, 0)], "LFU evicts B, the oldest count-0 entry");
        let mut lru = fill(PccPolicy::Lru);
        assert_eq!(tags(&lru), vec![(10, 2), (12, 0), (11, 0)]);
        lru.touch(1, 13, false);
        assert_eq!(tags(&lru), vec![(13, 0), (12, 0), (11, 0)], "LRU evicts A, the least recently used");
        assert_eq!((lfu.counters.evictions, lru.counters.evictions), (1, 1));

        // No count-0 entry: the artifact's list puts the entry that reached a count last at
        // the back of that count's group, so LFU evicts it.
        let mut q = CandidateCache::new(3, 8, PccPolicy::Lfu, PageSize::Size2M);
        for t in [1, 2, 3, 3, 1, 2] {
            q.touch(1, t, false);
        }
        assert_eq!(tags(&q), vec![(3, 1), (1, 1), (2, 1)]);
        q.touch(1, 4, false);
        assert_eq!(tags(&q), vec![(3, 1), (1, 1), (4, 0)], "2, the last to reach count 1, went");
    }

    /// Read-out: count first; ties in the artifact's list order (`lfu`: newest insertion first
    /// at count 0, first arrival first above) or most recent first (`lru`).
    #[test]
    fn read_out_is_by_frequency_then_recency() {
        let seq = [1, 2, 3, 4, 4, 3, 4, 5, 6];
        let run = |policy| {
            let mut q = CandidateCache::new(8, 8, policy, PageSize::Size2M);
            for t in seq {
                q.touch(1, t, false);
            }
            q.ranked().iter().map(|c| (c.tag, c.freq)).collect::<Vec<_>>()
        };
        assert_eq!(run(PccPolicy::Lfu), vec![(4, 2), (3, 1), (6, 0), (5, 0), (2, 0), (1, 0)]);
        assert_eq!(run(PccPolicy::Lru), vec![(4, 2), (3, 1), (6, 0), (5, 0), (2, 0), (1, 0)]);
        let seq = [1, 2, 1, 2];
        let run = |policy| {
            let mut q = CandidateCache::new(8, 8, policy, PageSize::Size2M);
            for t in seq {
                q.touch(1, t, false);
            }
            q.ranked().iter().map(|c| c.tag).collect::<Vec<_>>()
        };
        assert_eq!(run(PccPolicy::Lfu), vec![1, 2], "lfu: 1 reached count 1 first");
        assert_eq!(run(PccPolicy::Lru), vec![2, 1], "lru: 2 was used last");
    }

    /// Entries of different contexts do not alias, and every kind of invalidation drops
    /// what it covers: a range overlapping the region in its context, a context, a VM, all.
    #[test]
    fn invalidation_by_range_context_vm_and_all() {
        let mut p = Pcc::new(params(16, PccPolicy::Lfu), 2);
        let vm1 = 1 << VPID_SHIFT;
        for ctx in [1, 2, vm1 | 1] {
            for i in 0..3 {
                walk_ctx(&mut p, 1, ctx, BASE + i * MB2, WARM);
            }
        }
        walk_ctx(&mut p, 1, 2, BASE, WARM);
        let n = |p: &Pcc| p.core(1).pcc.occupancy();
        assert_eq!(n(&p), 9, "the same regions in three contexts are nine entries");
        assert_eq!(p.core(1).pcc.freq(2, tag(0)), Some(1));
        assert_eq!(p.core(1).pcc.freq(1, tag(0)), Some(0));
        // Another core's invalidation leaves core 1 alone.
        assert_eq!(p.on_invalidate(0, Invalidate::All), 0);
        // One page of region 1 in context 1; a range ending where region 2 starts.
        assert_eq!(p.on_invalidate(1, Invalidate::page(1, VirtAddr(BASE + MB2 + 0x7000))), 1);
        assert_eq!(p.on_invalidate(1, Invalidate::Range { ctx: 2, start: BASE - 0x1000, end: BASE + 2 * MB2 }), 2);
        assert_eq!(p.core(1).pcc.freq(2, tag(2)), Some(0));
        assert_eq!(p.core(1).pcc.freq(1, tag(0)), Some(0));
        assert_eq!(p.on_invalidate(1, Invalidate::Context(1)), 2);
        assert_eq!(p.on_invalidate(1, Invalidate::Vm(1)), 3);
        assert_eq!(n(&p), 1);
        assert_eq!(p.on_invalidate(1, Invalidate::All), 1);
        assert_eq!(p.core(1).pcc.counters.invalidations, 9);
    }

    /// `pcc.readout=invalidate` reads without changing anything; `flush` empties the PCC.
    #[test]
    fn flush_on_read_empties_the_pcc() {
        for mode in [PccReadout::Invalidate, PccReadout::Flush] {
            let mut p = Pcc::new(PccSpec { readout: mode, ..params(8, PccPolicy::Lfu) }, 1);
            for va in [BASE, BASE, BASE + MB2, BASE] {
                walk(&mut p, 0, va, WARM);
            }
            let got: Vec<_> = p.candidates(0).iter().map(|c| (c.ctx, c.tag, c.freq)).collect();
            assert_eq!(got, vec![(1, tag(0), 2), (1, tag(1), 0)]);
            let left = p.peek(0).len();
            let k = p.core(0).pcc.counters;
            match mode {
                PccReadout::Invalidate => assert_eq!((left, k.reads, k.flushed), (2, 1, 0)),
                PccReadout::Flush => assert_eq!((left, k.reads, k.flushed), (0, 1, 2)),
            }
        }
    }

    /// The 1 GB PCC (option 1): fed at the PUD stage by walks ending at 4 KB and 2 MB pages
    /// alike, with its own cold filter on the PUD's A bit, and as warm by walks the
    /// page-walk cache started below the PUD.
    #[test]
    fn the_1g_pcc_counts_walks_per_gigabyte() {
        let mut p = Pcc::new(PccSpec { entries_1g: 8, ..params(8, PccPolicy::Lfu) }, 1);
        let g = |p: &Pcc| p.core(0).pcc_1g.as_ref().unwrap().ranked().iter().map(|c| (c.tag, c.freq, c.huge)).collect::<Vec<_>>();
        // A cold PUD: filtered by the 1 GB PCC (the PMD is warm: the 2 MB PCC counts it).
        for (level, e) in [(4, WARM), (3, COLD), (2, WARM), (1, WARM)] {
            p.on_walk_step(0, &step(Table::Native, 1, BASE, level, e));
        }
        assert!(g(&p).is_empty());
        walk(&mut p, 0, BASE, WARM);
        walk(&mut p, 0, BASE + MB2, WARM | PTE_PS);
        pwc_walk(&mut p, 0, BASE + 5 * MB2);
        // A walk starting at the PMD (the PWC held the PUD).
        p.on_walk_step(0, &step(Table::Native, 1, BASE + 7 * MB2, 2, WARM));
        p.on_walk_step(0, &step(Table::Native, 1, BASE + 7 * MB2, 1, WARM));
        assert_eq!(g(&p), vec![(BASE >> 30, 3, false)]);
        // A 1 GB leaf.
        p.on_walk_step(0, &step(Table::Native, 1, BASE + GB, 4, WARM));
        p.on_walk_step(0, &step(Table::Native, 1, BASE + GB, 3, WARM | PTE_PS));
        assert_eq!(g(&p), vec![(BASE >> 30, 3, false), ((BASE + GB) >> 30, 0, true)]);
        let k1 = p.core(0).pcc_1g.as_ref().unwrap().counters;
        assert_eq!((k1.lookups, k1.filtered, k1.inserts, k1.hits), (6, 1, 2, 3));
        assert_eq!(p.core(0).pcc.counters.lookups, 5, "the 1 GB leaf's walk has no 2 MB stage");
        // A 4 KB shootdown drops the enclosing 1 GB entry too.
        assert_eq!(p.on_invalidate(0, Invalidate::page(1, VirtAddr(BASE + 0x1000))), 2);
        let mut s = Stats::default();
        p.emit_stats(&mut s);
        assert_eq!((s.f("pcc.1g.lookups"), s.f("pcc.1g.occupancy"), s.f("pcc.1g.invalidations")), (6.0, 1.0, 1.0));
    }

    /// Only native and guest tables feed the PCC; a 2D walk's host steps, interleaved with the
    /// guest's, neither count nor break the guest walk apart.
    #[test]
    fn host_table_steps_are_ignored() {
        let mut p = Pcc::new(params(8, PccPolicy::Lfu), 1);
        let ctx = (1 << VPID_SHIFT) | 1;
        for (table, level, e) in [
            (Table::Host, 4, WARM),
            (Table::Host, 1, WARM),
            (Table::Guest, 4, WARM),
            (Table::Host, 2, WARM),
            (Table::Guest, 3, WARM),
            (Table::Host, 4, WARM),
            (Table::Guest, 2, WARM),
            (Table::Host, 1, WARM),
            (Table::Guest, 1, WARM),
            (Table::Host, 3, WARM),
        ] {
            p.on_walk_step(0, &step(table, ctx, BASE, level, e));
        }
        let got: Vec<_> = p.peek(0).iter().map(|c| (c.ctx, c.tag, c.freq)).collect();
        assert_eq!(got, vec![(ctx, tag(0), 0)]);
        assert_eq!(p.core(0).pcc.counters.lookups, 1);
    }

    /// Statistics: sums under `pcc.`, per core under `coreN.pcc.` with several cores; a
    /// snapshot subtracted takes the counters back to 0 and leaves the occupancy, a level.
    #[test]
    fn statistics_sum_over_cores_and_a_snapshot_leaves_levels() {
        let mut mechs = Mechs::new(vec![AnyMech::Pcc(Pcc::new(params(8, PccPolicy::Lru), 2))], 2);
        assert!(mechs.walk_steps);
        for (c, va) in [(0, BASE), (0, BASE), (1, BASE), (1, BASE + MB2), (1, BASE + MB2)] {
            for (level, e) in [(4, WARM), (3, WARM), (2, WARM), (1, WARM)] {
                mechs.on_walk_step(c, &step(Table::Native, 1, va, level, e));
            }
        }
        let mut s = Stats::default();
        mechs.emit_stats(&mut s);
        assert_eq!((s.f("core0.pcc.lookups"), s.f("core1.pcc.lookups"), s.f("pcc.lookups")), (2.0, 3.0, 5.0));
        assert_eq!((s.f("pcc.inserts"), s.f("pcc.hits"), s.f("pcc.occupancy"), s.f("core1.pcc.occupancy")), (3.0, 2.0, 3.0, 2.0));
        assert!(s.get("pcc.1g.lookups").is_none(), "no 1 GB PCC, no pcc.1g.*");
        let warm = crate::stats::Snapshot::of(&s, crate::machine::glossary::is_counter);
        let mut s = Stats::default();
        mechs.emit_stats(&mut s);
        warm.subtract(&mut s);
        assert_eq!((s.f("pcc.lookups"), s.f("core1.pcc.lookups"), s.f("pcc.occupancy")), (0.0, 0.0, 3.0));
        assert_eq!(mechs.pcc().unwrap().peek(1).len(), 2);
    }

    /// The daemon's two ways of taking candidates from the cores' lists (spec 001 §3.3):
    /// round-robin takes each list's next in turn; highest takes the highest count among
    /// the heads. Each region is taken once, and at most `per_read` of them.
    #[test]
    fn the_daemon_picks_round_robin_or_highest() {
        let mut p = Pcc::new(params(8, PccPolicy::Lfu), 2);
        // Core 0: regions 1 (3 walks after insertion), 2 (1); core 1: regions 3 (5), 1 (0).
        for (c, region, walks) in [(0, 1, 3), (0, 2, 1), (1, 3, 5), (1, 1, 0)] {
            for _ in 0..walks + 1 {
                walk(&mut p, c, BASE + region * MB2, WARM);
            }
        }
        let regions = |v: Vec<(usize, Candidate)>| v.iter().map(|(c, x)| (*c, (x.start().0 - BASE) / MB2)).collect::<Vec<_>>();
        assert_eq!(regions(p.pick().promote), vec![(0, 1), (1, 3), (0, 2)], "round-robin, region 1 once");
        p.daemon.policy = PccPromotion::Highest;
        assert_eq!(regions(p.pick().promote), vec![(1, 3), (0, 1), (0, 2)]);
        p.daemon.per_read = 2;
        assert_eq!(regions(p.pick().promote), vec![(1, 3), (0, 1)]);
    }

    /// Process bias (`pcc.bias`, spec 001 §3.3): the biased process's candidates go first,
    /// whatever their counts, until they run out; then the others', in the policy's order.
    #[test]
    fn biased_processes_are_served_first() {
        let mut p = Pcc::new(params(8, PccPolicy::Lfu), 2);
        // Core 0 runs context 1 (regions 1: 5 walks, 2: 4); core 1 context 2 (region 3: 1).
        for (c, ctx, region, walks) in [(0, 1, 1, 5), (0, 1, 2, 4), (1, 2, 3, 1)] {
            for _ in 0..walks + 1 {
                for (level, e) in [(4, WARM), (3, WARM), (2, WARM), (1, WARM)] {
                    p.on_walk_step(c, &step(Table::Native, ctx, BASE + region * MB2, level, e));
                }
            }
        }
        p.daemon.policy = PccPromotion::Highest;
        p.daemon.per_read = 2;
        let regions = |v: Vec<(usize, Candidate)>| v.iter().map(|(_, x)| (x.start().0 - BASE) / MB2).collect::<Vec<_>>();
        assert_eq!(regions(p.pick().promote), vec![1, 2], "by count");
        let mut p2 = Pcc::new(params(8, PccPolicy::Lfu), 2);
        p2.cores = std::mem::take(&mut p.cores);
        p2.daemon.policy = PccPromotion::Highest;
        p2.daemon.per_read = 2;
        p2.favour(&[2]);
        assert_eq!(regions(p2.pick().promote), vec![3, 1], "context 2 first");
    }

    /// The footprint cap (the utility curve): over read-outs the daemon asks for at most
    /// floor(footprint x cap) distinct regions, in time then priority order; asking again
    /// for a region it already asked for (a failed promotion) costs nothing.
    #[test]
    fn the_footprint_cap_counts_distinct_regions_over_read_outs() {
        // 100 regions of footprint at 3 %: 3 regions.
        let mut p = Pcc::new(PccSpec { cap: 0.03, footprint_2m: 100, ..params(8, PccPolicy::Lfu) }, 1);
        assert_eq!(p.daemon.budget.limit, 3);
        for (region, walks) in [(1, 3), (2, 2)] {
            for _ in 0..walks + 1 {
                walk(&mut p, 0, BASE + region * MB2, WARM);
            }
        }
        let regions = |v: Vec<(usize, Candidate)>| v.iter().map(|(_, x)| (x.start().0 - BASE) / MB2).collect::<Vec<_>>();
        assert_eq!(regions(p.pick().promote), vec![1, 2]);
        // The OS promoted neither (the PCC still holds them); two new regions, hotter.
        for (region, walks) in [(3, 9), (4, 8)] {
            for _ in 0..walks + 1 {
                walk(&mut p, 0, BASE + region * MB2, WARM);
            }
        }
        assert_eq!(regions(p.pick().promote), vec![3, 1, 2], "region 4 is beyond the cap; 1 and 2 are asked again");
        assert_eq!(p.daemon.budget.used(), 3);
        // 0.29 x 100 is 29, not 28; a cap of 1 is no cap.
        assert_eq!(PromotionBudget::new(0.29, 100).limit, 29);
        assert_eq!(PromotionBudget::new(1.0, 100).limit, u64::MAX);
        assert_eq!(PromotionBudget::new(0.0, 100).limit, 0);
    }

    /// PCC-driven demotion (spec 001 §3.4, the artifact's rule): a region the daemon promoted
    /// that comes back as a huge entry with a count above 0 is demoted, once, and never
    /// promoted again; a huge entry it did not promote (the fault-time policy's) is left.
    #[test]
    fn a_promoted_region_that_still_walks_is_demoted_once() {
        let mut p = Pcc::new(PccSpec { demotion: true, ..params(8, PccPolicy::Lfu) }, 1);
        let walk_huge = |p: &mut Pcc, va: u64| walk(p, 0, va, WARM | PTE_PS);
        let regions = |v: &[(usize, Candidate)]| v.iter().map(|(_, x)| (x.start().0 - BASE) / MB2).collect::<Vec<_>>();
        walk(&mut p, 0, BASE + MB2, WARM);
        assert_eq!(regions(&p.pick().promote), vec![1]);
        // The promotion's shootdown drops the entry; the 2 MB page walks twice (count 1), and
        // region 2, huge from the start, walks as often.
        p.on_invalidate(0, Invalidate::All);
        for va in [BASE + MB2, BASE + MB2, BASE + 2 * MB2, BASE + 2 * MB2] {
            walk_huge(&mut p, va);
        }
        let picks = p.pick();
        assert_eq!((regions(&picks.demote), regions(&picks.promote)), (vec![1], vec![]));
        // It walks again: not demoted twice, not promoted again.
        walk_huge(&mut p, BASE + MB2);
        let picks = p.pick();
        assert!(picks.demote.is_empty() && picks.promote.is_empty());
        // Back at 4 KB, it is not promoted again.
        p.on_invalidate(0, Invalidate::All);
        walk(&mut p, 0, BASE + MB2, WARM);
        assert!(p.pick().promote.is_empty());
        assert_eq!(p.daemon.demoted.len(), 1);
    }

    /// The paper's storage arithmetic, exactly (spec 001 §8.9, §10.3): 6 B x 128 = 768 B,
    /// 5 B x 8 = 40 B, 808 B per core, 50 16-byte TLB entries (~5 % of a 1024-entry L2),
    /// 64 K pages and 256 MB of reach; and a 48-bit address space's smaller tags.
    #[test]
    fn the_hardware_cost_is_the_papers() {
        let c = PccCost::new(61, 128, 8, 8, 16, 1024);
        assert_eq!((c.entry_bits_2m, c.entry_bytes_2m, c.bytes_2m), (48, 6, 768));
        assert_eq!((c.entry_bits_1g, c.entry_bytes_1g, c.bytes_1g), (39, 5, 40));
        assert_eq!((c.bytes, c.tlb_entries, c.pages, c.reach_bytes), (808, 50, 65536, 256 << 20));
        assert!((c.tlb_gain - 0.0488).abs() < 1e-4, "{}", c.tlb_gain);
        let x86 = PccCost::new(48, 128, 0, 8, 16, 1024);
        assert_eq!((x86.entry_bits_2m, x86.entry_bytes_2m, x86.bytes), (35, 5, 640));
    }

    /// A process's footprint in 2 MB regions: every aligned 2 MB region a workload region
    /// touches, once per workload region.
    #[test]
    fn footprint_in_2m_regions() {
        let r = |start: u64, len: u64| crate::Region { name: String::new(), start, len, file: None };
        assert_eq!(crate::mech::footprint_2m(&[r(0, MB2), r(3 * MB2 + 4096, MB2), r(8 * MB2, 1), r(9 * MB2, 0)]), 1 + 2 + 1);
    }

    /// The keys: off by default, so no mechanism; when enabled, validated.
    #[test]
    fn config_keys_build_and_validate() {
        use crate::config::Config;
        let cfg = Config::default();
        assert!(Pcc::build(&cfg.pcc, &cfg.promotion, 1, 0).is_none());
        assert!(cfg.mechanisms(1, &[], 1).pcc().is_none());
        let cfg =
            Config::from_pairs([("pcc.enabled", "true"), ("pcc.entries_1g", "8"), ("pcc.policy", "lru"), ("pcc.readout", "flush"), ("pcc.counter_bits", "4")])
                .unwrap();
        let m = cfg.mechanisms(2, &[], 1);
        let p = m.pcc().expect("pcc.enabled builds a PCC");
        assert_eq!((p.cores(), p.core(1).pcc.capacity(), p.core(1).pcc_1g.as_ref().unwrap().capacity(), p.readout()), (2, 128, 8, PccReadout::Flush));
        let err = |pairs: &[(&str, &str)]| Config::from_pairs(pairs.iter().copied()).unwrap_err().to_string();
        assert_eq!(err(&[("pcc.enabled", "true"), ("pcc.entries", "0")]), "config key 'pcc.entries': must be at least 1 with a PCC");
        assert!(err(&[("os.promotion", "pcc"), ("os.promotion_interval", "0")]).contains("at least 1 with os.promotion=pcc"));
        assert!(err(&[("pcc.demotion", "true")]).contains("needs os.promotion=pcc"));
        assert!(err(&[("pcc.bias", "0")]).contains("needs os.promotion=pcc"));
        assert!(err(&[("os.promotion", "pcc"), ("pcc.bias", "0,x")]).contains("program numbers"));
        assert_eq!(Config::from_pairs([("os.promotion", "pcc"), ("pcc.bias", " 1, 0 ")]).unwrap().pcc_bias_programs(), Some(vec![1, 0]));
        assert!(err(&[("os.promotion", "thp"), ("os.page_policy", "ideal")]).contains("cannot run with os.page_policy=ideal"));
        // os.promotion=pcc gives cores a PCC and the OS its daemon; pcc.enabled alone, no daemon.
        let daemon =
            |pairs: &[(&str, &str)]| {
            let c = Config::from_pairs(pairs.iter().copied()).unwrap();
            Pcc::build(&c.pcc, &c.promotion, 1, 0).map(|p| (p.daemon().period, p.daemon().first))
        };
        assert_eq!(daemon(&[("os.promotion", "pcc")]), Some((30_000_000, 1_000_000)));
        assert_eq!(daemon(&[("pcc.enabled", "true")]), Some((0, 1_000_000)));
        assert_eq!(Config::from_pairs([("os.promotion", "thp")]).unwrap().page_policy(), crate::param::PagePolicy::Thp);
        assert!(err(&[("pcc.counter_bits", "0")]).contains("between 1 and 16"));
        assert!(err(&[("pcc.counter_bits", "17")]).contains("between 1 and 16"));
        assert!(err(&[("pcc.policy", "fifo")]).contains("one of lfu|lru"));
        assert!(Config::from_pairs([("pcc.entries", "0")]).is_ok(), "a disabled PCC's size does not matter");
    }

    /// The reference model: the artifact's linked list, literally (a `Vec`, head first), for
    /// `lfu`; a recency list for `lru`.
    struct Model {
        list: Vec<(Ctx, u64, u16)>,
        entries: usize,
        max: u16,
        policy: PccPolicy,
        decays: u64,
        evictions: u64,
    }

    impl Model {
        /// The artifact's `insertLFU`: walk from the head while the entry's count is below
        /// the current one's.
        fn insert_lfu(&mut self, e: (Ctx, u64, u16)) {
            let at = self.list.iter().position(|x| e.2 >= x.2).unwrap_or(self.list.len());
            self.list.insert(at, e);
        }

        fn touch(&mut self, ctx: Ctx, tag: u64) -> bool {
            let hit = self.list.iter().position(|x| x.0 == ctx && x.1 == tag);
            let mut saturated = false;
            match (hit, self.policy) {
                (Some(i), PccPolicy::Lfu) => {
                    let e = self.list.remove(i);
                    self.insert_lfu(e);
                    let at = self.list.iter().position(|x| x.0 == ctx && x.1 == tag).unwrap();
                    self.list[at].2 += 1;
                    saturated = self.list[at].2 == self.max;
                }
                (Some(i), PccPolicy::Lru) => {
                    let mut e = self.list.remove(i);
                    e.2 += 1;
                    saturated = e.2 == self.max;
                    self.list.insert(0, e);
                }
                (None, policy) => {
                    if self.list.len() == self.entries {
                        self.list.pop();
                        self.evictions += 1;
                    }
                    match policy {
                        PccPolicy::Lfu => self.insert_lfu((ctx, tag, 0)),
                        PccPolicy::Lru => self.list.insert(0, (ctx, tag, 0)),
                    }
                }
            }
            if saturated {
                self.decays += 1;
                for x in &mut self.list {
                    x.2 /= 2;
                }
            }
            hit.is_some()
        }

        fn ranked(&self) -> Vec<(Ctx, u64, u16)> {
            let mut v = self.list.clone();
            v.sort_by_key(|x| Reverse(x.2)); // stable: list order within a count
            v
        }
    }

    struct XorShift(u64);
    impl XorShift {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// Random touches (a few hot regions, many cold ones, two contexts), invalidations of
    /// every kind and read-outs, against the reference model, for both policies and several
    /// sizes and counter widths: the same hits, victims, halvings and ranking at every step.
    #[test]
    fn matches_a_reference_model() {
        // (seed, policy, entries, counter bits, invalidations per 1000 steps)
        for (seed, policy, entries, bits, inval) in [
            (1, PccPolicy::Lfu, 8, 4, 20),
            (2, PccPolicy::Lru, 8, 4, 20),
            (3, PccPolicy::Lfu, 3, 3, 20),
            (4, PccPolicy::Lru, 5, 2, 20),
            (5, PccPolicy::Lfu, 16, 8, 1),
            (6, PccPolicy::Lru, 16, 8, 1),
        ] {
            let mut rng = XorShift(0x9e37_79b9_7f4a_7c15 ^ seed);
            let mut q = CandidateCache::new(entries, bits, policy, PageSize::Size2M);
            let mut m = Model { list: Vec::new(), entries, max: (1 << bits) - 1, policy, decays: 0, evictions: 0 };
            for i in 0..30_000 {
                let r = rng.below(1000);
                // Skewed: half the touches go to two hot regions of context 1.
                let hot = rng.below(2) == 0;
                let ctx = if hot { 1 } else { 1 + rng.below(2) as Ctx };
                let tag = if hot { rng.below(2) } else { rng.below(24) };
                if r >= inval + 10 {
                    assert_eq!(q.touch(ctx, tag, false), m.touch(ctx, tag), "step {i}: hit or miss");
                } else if r >= 10 {
                    let what = match rng.below(8) {
                        0 => Invalidate::Context(ctx),
                        1 => Invalidate::All,
                        2 => Invalidate::Vm(0),
                        _ => {
                            let start = (tag << 21) + rng.below(1 << 22);
                            Invalidate::Range { ctx, start, end: start + 1 + rng.below(1 << 22) }
                        }
                    };
                    let n = m.list.len();
                    m.list.retain(|&(c, t, _)| !covers(what, c, t, 21));
                    assert_eq!(q.invalidate(what), n - m.list.len(), "step {i}: {what:?}");
                } else {
                    let got: Vec<_> = q.read_out(PccReadout::Invalidate).iter().map(|c| (c.ctx, c.tag, c.freq)).collect();
                    assert_eq!(got, m.ranked(), "step {i}: read-out");
                }
                let got: Vec<_> = q.ranked().iter().map(|c| (c.ctx, c.tag, c.freq)).collect();
                assert_eq!(got, m.ranked(), "step {i} ({policy}, {entries} entries, {bits} bits)");
            }
            assert_eq!((q.counters.decays, q.counters.evictions), (m.decays, m.evictions));
            assert!(m.decays > 2 && m.evictions > 100, "seed {seed}: the run exercised halving ({}) and eviction ({})", m.decays, m.evictions);
        }
    }

    /// The covering rule of a range at the top of the address space does not overflow.
    #[test]
    fn a_range_at_the_top_of_the_address_space() {
        let top = u64::MAX >> 21;
        assert!(covers(Invalidate::Range { ctx: 1, start: u64::MAX - 5, end: u64::MAX }, 1, top, 21));
        assert!(!covers(Invalidate::Range { ctx: 1, start: 0, end: top << 21 }, 1, top, 21));
    }
}
