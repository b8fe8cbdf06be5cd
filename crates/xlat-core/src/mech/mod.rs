//! Mechanisms: structures and policies that observe the walker, the TLBs and the caches and
//! steer them, attached to a machine as a list chosen by its configuration. Each implements
//! the hooks of [`Mechanism`] it needs; the others are no-ops. Dispatch is static (a `match`
//! over [`AnyMech`]), and a machine with no mechanism pays a predictable branch per hook
//! point, nothing more. `docs/extending.md` walks through adding one, with the PTP phase
//! detector ([`ptp`]) as the example.

use crate::arch::addr::{PageSize, VirtAddr};
use crate::arch::clock::Clock;
use crate::arch::ctx::{Ctx, Invalidate};
use crate::arch::pte::{NodeId, Table};
use crate::memory::port::{MemPort, Steer};
use crate::param::Parts;
use crate::stats::{CoreCounters, Ints, Stats};
use crate::translate::mmu::{Mmu, TlbId};
use crate::translate::tlb::{TlbEntry, TlbKey};

pub use crate::arch::ctx::OsRequest;

use crate::param::{bound, component, Limit};

component! {
    /// The promotion daemons (`os.promotion*`): which one runs, how often, and its footprint cap.
    PromotionParams {
        kind: crate::param::Promotion = crate::param::Promotion::None; "promotion"; None; "who promotes regions to 2 MB pages as the program runs (the PCC paper's comparison): none (the fault-time os.page_policy only), pcc (the PCC, read by an OS daemon every os.promotion_interval references), hawkeye (HawkEye's access-coverage daemon), thp (Linux's greedy THP: os.page_policy=thp, huge pages at fault time and khugepaged) or oracle (ours: with hindsight, the regions with the most 4 KB walks in a first run without promotion, promoted at the daemon's first read; the run is made twice)";
        interval: u64 = 30_000_000; "promotion_interval"; Some(Limit::Int(bound::INTERVAL)); "references between a promotion daemon's reads (pcc: PCC read-outs; hawkeye: its sleep after each window): the paper's 30 s, converted to accesses at the application's access rate (§4)";
        first: u64 = 1_000_000; "promotion_first"; Some(Limit::Int(bound::INTERVAL)); "references before the first read of the pcc and oracle daemons (the artifact reads at 1 s, then every 30 s)";
        cap: f64 = 1.0; "promotion_cap"; Some(Limit::Real(1.0)); "footprint cap of the promotion daemons (pcc, hawkeye, oracle): the fraction of the footprint, counted in 2 MB regions, they may ask the OS to promote over the whole run; each region counts once, in the order they ask (time, then priority). The paper's utility-curve point N % is N / 100, its budget floor(footprint regions x N / 100) as the artifact's list builder; 1: no cap (the paper's ~100 %)";
    }
    check(p, key) {
        if matches!(p.kind, crate::param::Promotion::Pcc | crate::param::Promotion::HawkEye | crate::param::Promotion::Oracle) && p.interval == 0 {
            return Err(crate::param::invalid(key("promotion_interval"), format!("must be at least 1 with os.promotion={}", p.kind)));
        }
        if !(0.0..=1.0).contains(&p.cap) {
            return Err(crate::param::invalid(key("promotion_cap"), "must be between 0 and 1 (a fraction of the footprint)"));
        }
        Ok(())
    }
}

/// The footprint cap of a promotion daemon (`os.promotion_cap`, the paper's utility curve,
/// spec 001 §7.3): over the whole run it may ask for at most `limit` distinct 2 MB regions,
/// taken in the order it asks (time, then its priority order). Asking again for a region
/// already asked for (a promotion the OS could not carry out, say) costs nothing more.
#[derive(Clone, Debug)]
pub struct PromotionBudget {
    pub limit: u64,
    asked: std::collections::HashSet<(Ctx, u64)>,
}

impl PromotionBudget {
    /// The budget of `cap` (a fraction; 1 = no cap) of a footprint of `footprint_2m` 2 MB
    /// regions: floor(footprint x cap), as the artifact's list builder.
    pub fn new(cap: f64, footprint_2m: u64) -> PromotionBudget {
        // (The epsilon keeps 0.29 x 100 at 29 rather than 28.999...)
        let limit = if cap >= 1.0 { u64::MAX } else { (footprint_2m as f64 * cap + 1e-9).floor() as u64 };
        PromotionBudget { limit, asked: Default::default() }
    }

    /// Whether the daemon may ask for region `tag` (VA >> 21) of context `ctx`; if so it
    /// counts against the budget.
    pub fn take(&mut self, ctx: Ctx, tag: u64) -> bool {
        if self.asked.contains(&(ctx, tag)) {
            return true;
        }
        if self.asked.len() as u64 >= self.limit {
            return false;
        }
        self.asked.insert((ctx, tag));
        true
    }

    /// Whether region `tag` of `ctx` was asked for.
    pub fn asked(&self, ctx: Ctx, tag: u64) -> bool {
        self.asked.contains(&(ctx, tag))
    }

    /// Distinct regions asked for so far.
    pub fn used(&self) -> u64 {
        self.asked.len() as u64
    }
}

/// The footprint of a process with `regions`, in 2 MB regions (each 2 MB-aligned region a
/// workload region touches counts once).
pub fn footprint_2m(regions: &[crate::Region]) -> u64 {
    regions.iter().filter(|r| r.len > 0).map(|r| ((r.start + r.len - 1) >> 21) - (r.start >> 21) + 1).sum()
}

/// Where the translation a core's TLBs were filled with came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FillFrom {
    /// A deeper TLB level hit (the levels above it are refilled).
    Level,
    /// A translation level between the L2 TLB and the walk (an L3 TLB).
    L3,
    /// A page walk.
    Walk,
}

/// What became of a TLB prefetch a mechanism asked for ([`Mechanism::on_prefetch_walk`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefetched {
    /// A TLB level of the core already held the page's translation: no walk.
    Cached,
    /// The walk found the page not mapped (a prefetch never faults): nothing to fill.
    Unmapped,
    /// The walk translated it to `e`, a page of `size`.
    Walked(TlbEntry, PageSize),
}

/// Which of the per-reference hooks a mechanism implements: the translator calls a hook
/// only if some mechanism listens, so the others cost one predictable branch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hooks {
    /// Every reference, before its translation ([`Mechanism::on_reference`]).
    pub reference: bool,
    pub walk_step: bool,
    pub l2_tlb_miss: bool,
    pub walk_end: bool,
    pub tlb_fill: bool,
    pub tlb_evict: bool,
    /// The mechanism asks for TLB prefetches ([`Mechanism::prefetch_request`]).
    pub tlb_prefetch: bool,
    /// Every walk's write of its translation into memory ([`Mechanism::on_walk_write`]).
    pub walk_write: bool,
}

impl Hooks {
    fn or(self, o: Hooks) -> Hooks {
        Hooks {
            reference: self.reference | o.reference,
            walk_step: self.walk_step | o.walk_step,
            l2_tlb_miss: self.l2_tlb_miss | o.l2_tlb_miss,
            walk_end: self.walk_end | o.walk_end,
            tlb_fill: self.tlb_fill | o.tlb_fill,
            tlb_evict: self.tlb_evict | o.tlb_evict,
            tlb_prefetch: self.tlb_prefetch | o.tlb_prefetch,
            walk_write: self.walk_write | o.walk_write,
        }
    }
}

/// One entry a walk read, as mechanisms see it ([`Mechanism::on_walk_step`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkStep {
    pub table: Table,
    /// The address being translated (guest-physical for a host table).
    pub va: VirtAddr,
    /// The context the walk translates for (a VM's host-side context for a host table).
    pub ctx: Ctx,
    /// Level of the entry (1 = a 4 KB leaf's; a flattened node's entries have the lower of
    /// its two levels).
    pub level: u8,
    /// The entry as the walk found it, before the walker set its accessed bit.
    pub entry: u64,
    pub node: NodeId,
    pub index: usize,
}

/// The hooks a mechanism may implement. Defaults do nothing.
pub trait Mechanism {
    /// The per-reference hooks it implements (see [`Hooks`]).
    fn hooks(&self) -> Hooks {
        Hooks::default()
    }

    /// Core `c` references `va` of context `ctx` (every reference, before it is translated).
    #[inline(always)]
    fn on_reference(&mut self, _c: usize, _va: VirtAddr, _ctx: Ctx) {}

    /// A walk on core `c` read an entry, shown as it was before the walker set its
    /// accessed bit (see [`WalkStep`]).
    #[inline(always)]
    fn on_walk_step(&mut self, _c: usize, _step: &WalkStep) {}

    /// Core `c`'s L2 TLB missed `va` of context `ctx` (a store if `write`): a translation
    /// level between the L2 TLB and the walk (an L3 TLB) may answer, telling `port` what its
    /// lookup reads. `None` walks.
    #[inline(always)]
    fn on_l2_tlb_miss<P: MemPort>(&mut self, _c: usize, _va: VirtAddr, _ctx: Ctx, _write: bool, _port: &mut P) -> Option<(TlbEntry, PageSize)> {
        None
    }

    /// A walk on core `c` translated `va` of context `ctx` to `e`, a page of `size` (before
    /// the TLBs are filled); what it writes goes through `port`.
    #[inline(always)]
    fn on_walk_end<P: MemPort>(&mut self, _c: usize, _va: VirtAddr, _ctx: Ctx, _e: TlbEntry, _size: PageSize, _port: &mut P) {}

    /// Core `c`'s TLBs were filled with the translation of `va` in context `ctx`, a page of
    /// `size`, from `from` (once per translation, whatever the levels filled).
    #[inline(always)]
    fn on_tlb_fill(&mut self, _c: usize, _va: VirtAddr, _size: PageSize, _ctx: Ctx, _from: FillFrom) {}

    /// A fill of core `c`'s TLB level `level` pushed out `key`'s translation `e` (an
    /// eviction, not an invalidation).
    #[inline(always)]
    fn on_tlb_evict(&mut self, _c: usize, _level: TlbId, _key: TlbKey, _e: TlbEntry) {}

    /// The next page whose translation core `c` should prefetch, if any: once a reference's
    /// data access is issued, the translator asks until `None`, and walks for each page
    /// (see [`Mechanism::on_prefetch_walk`]). A prefetcher queues its requests from the
    /// hooks that train it (`on_l2_tlb_miss`, say); the walks are the translator's, so that
    /// they take a walker and read through the memory port as demand walks do.
    #[inline(always)]
    fn prefetch_request(&mut self, _c: usize) -> Option<VirtAddr> {
        None
    }

    /// The prefetch of `va` in context `ctx` that core `c`'s mechanisms asked for is done
    /// (every mechanism hears of every prefetch; a prefetcher keeps what it asked for).
    #[inline(always)]
    fn on_prefetch_walk(&mut self, _c: usize, _va: VirtAddr, _ctx: Ctx, _result: Prefetched) {}

    /// Instruction count at which core `c`'s next epoch ends (`u64::MAX`: no epochs).
    fn next_epoch(&self, _c: usize) -> u64 {
        u64::MAX
    }

    /// Core `c` reached `instructions` (at least [`Mechanism::next_epoch`]): end the epoch,
    /// given the misses of its L2 TLB so far and its translation counters; may steer the
    /// memory side.
    fn on_epoch(&mut self, _c: usize, _instructions: u64, _l2_tlb_misses: u64, _k: &mut CoreCounters) -> Option<Steer> {
        None
    }

    /// Translations `what` names were invalidated on core `c` (a shootdown, a flush): a
    /// structure that caches anything derived from them drops it. Returns how many entries
    /// went.
    fn on_invalidate(&mut self, _c: usize, _what: Invalidate) -> usize {
        0
    }

    /// Core `c` flushed translations `what` names because their tags are about to be reused
    /// (a CR3 write without PCIDs, a VM switch without VPIDs), not because the page tables
    /// changed. A per-core structure tagged like the TLBs drops them as an invalidation; a
    /// structure tagged by the real process and VM keeps them.
    fn on_flush(&mut self, c: usize, what: Invalidate) -> usize {
        self.on_invalidate(c, what)
    }

    // Translation coherence through home lines (TCAT, `shootdown.protocol=tcat-*`). A
    // mechanism may give every translation a home line in memory and know which cores' TLBs
    // were filled from it (its directory of TLB sharers); a shootdown is then a rewrite of
    // those lines by the initiator, whose write the directory forwards to exactly the
    // sharers. The OS runs the initiator's side (which protocol, the rewrites and what they
    // cost, `os/shootdown.rs`); the directory and the sharers' drops are the mechanism's, and
    // what the line holds is the L3 TLB's (the POM-TLB): three parties, so three hooks rather
    // than one, and the OS never needs to know which mechanism plays which part.

    /// A shootdown of `ranges` (`pages` pages, so the page sizes the change may have been to)
    /// in context `ctx` is to be carried as rewrites of home lines: add each line to rewrite,
    /// with the page it names, to `out`. `false`: the mechanism does not carry shootdowns (and
    /// adds nothing).
    fn shootdown_lines(&self, _ranges: &[(u64, u64)], _pages: u64, _ctx: Ctx, _out: &mut Vec<(u64, VirtAddr)>) -> bool {
        false
    }

    /// Context `holder` is about to rewrite home line `line`, clearing the translation of `va`
    /// in context `ctx`, and flushes it after if `flush`: a structure whose entries live in
    /// the line (the POM-TLB) reacts to what its copies will still say.
    fn on_line_rewrite(&mut self, _line: u64, _va: VirtAddr, _ctx: Ctx, _holder: usize, _flush: bool) {}

    /// The rewrite of home line `line` (naming `va` of `ctx`) reaches its TLB sharers: each
    /// drops from its TLBs (in `mmus`, by core) the entries the line names, and acknowledges.
    /// Returns the cores reached (a mask; 0 from a mechanism without home lines).
    fn invalidate_line(&mut self, _line: u64, _va: VirtAddr, _ctx: Ctx, _mmus: &mut [Mmu]) -> u64 {
        0
    }

    /// A shootdown went the baseline's way (interrupts and flushes), not through
    /// [`Mechanism::shootdown_lines`]: a mechanism that carries shootdowns counts what it left.
    fn on_baseline_shootdown(&mut self) {}

    /// A walk on core `c` wrote `va`'s translation (a page of `size`, context `ctx`) into
    /// memory: its home line, where [`Mechanism::on_walk_end`] installed it in an L3 TLB. A
    /// mechanism that tracks the line's TLB sharers may invalidate the others' entries (in
    /// `mmus`, by core), as a plain coherence protocol would.
    #[inline(always)]
    fn on_walk_write(&mut self, _c: usize, _va: VirtAddr, _size: PageSize, _ctx: Ctx, _mmus: &mut [Mmu]) {}

    /// The mechanism steers the memory side from the translation side's events, so both
    /// halves must run on one host thread.
    fn needs_memory_side(&self) -> bool {
        false
    }

    /// The mechanism keeps translations as cache lines (`LineKind::TlbEntry`: an L3 TLB in
    /// memory), so the machine's statistics split each cache's traffic by what a line holds and
    /// report where those lines were served.
    fn caches_translations(&self) -> bool {
        false
    }

    /// The processes with contexts `ctxs` are to be favoured (`pcc.bias`: the address spaces
    /// of the programs named): a policy that ranks processes puts theirs first.
    fn favour(&mut self, _ctxs: &[Ctx]) {}

    /// What a mechanism that acts in hindsight learnt from a run (the oracle's walks per
    /// region), to act on in the next run of the same input ([`Mechanism::act_on`]).
    fn hindsight(&self) -> Option<oracle::WalkProfile> {
        None
    }

    /// Act on `profile`, a first run's [`Mechanism::hindsight`], from now on.
    fn act_on(&mut self, _profile: &oracle::WalkProfile) {}

    /// A periodic task (an OS daemon reading the mechanism's structures, say): its clock,
    /// its period and when it is first due.
    fn task(&self) -> Option<(Clock, u64, u64)> {
        None
    }

    /// The periodic task runs: add what the OS should do to `out`.
    fn on_tick(&mut self, _out: &mut Vec<OsRequest>) {}

    /// Add the mechanism's integer statistics (under its own prefix): counters and levels
    /// (see [`crate::glossary::Kind`]).
    fn emit_stats(&self, _s: &mut Stats) {}

    /// Add the mechanism's floats, computed from the integers `i` of the report (its counters
    /// minus their values at the end of warm-up: see [`crate::stats::Snapshot`]).
    fn derive_stats(&self, _i: &Ints, _s: &mut Stats) {}

    /// The end of warm-up: restart model state that counts from it. Statistics are not
    /// reset (the machine subtracts a snapshot), so this is for what steers the model.
    fn on_warmup_end(&mut self) {}
}

/// Every mechanism xlat has, one line each: its module, its variant of [`AnyMech`] holding its
/// type, and how it is built from its own parameters (`None`: it is off, not in the list,
/// and costs nothing). `m.part()` is the mounted component of the type the constructor asks
/// for (the keys its file declares with `component!` and `config.rs` mounts), so a line names
/// no key. The list's order is the order [`Mechs::build`] builds the list in, so the order in
/// which the hooks reach them (the first answer of `on_l2_tlb_miss` wins). Adding a mechanism
/// is its file in `mech/`, one line here and, if it has keys, one line of the mount table:
/// the macro declares the module, the variant, its arm in every hook's `match`, and its place
/// in `build`.
macro_rules! mechanisms {
    ($($(#[$doc:meta])* $module:ident: $variant:ident($ty:ty) = |$m:ident| $make:expr;)*) => {
        $(pub mod $module;)*

        /// Every mechanism xlat has, as one type (static dispatch).
        pub enum AnyMech {
            $($(#[$doc])* $variant($ty),)*
        }

        /// Each mechanism `build` may add, in the list's order.
        fn configured<P: Parts>(env: &Env<P>, list: &mut Vec<AnyMech>) {
            $(
                let $m = env;
                if let Some(x) = $make {
                    list.push(AnyMech::$variant(x));
                }
            )*
        }

        /// The glossary's entries of every mechanism's statistics (each module's `STATS`), in the
        /// list's order.
        pub(crate) fn stats() -> impl Iterator<Item = &'static crate::glossary::Entry> {
            [$($module::STATS),*].into_iter().flatten().flat_map(|t| t.iter())
        }

        /// Dispatch `$e` on the mechanism `$self` holds, with `$x` bound to it.
        macro_rules! each {
            ($self:expr, $x:ident => $e:expr) => {
                match $self {
                    $(AnyMech::$variant($x) => $e,)*
                }
            };
        }
    };
}

mechanisms! {
    ptp: PtpDetector(ptp::PtpDetector) = |m| ptp::PtpDetector::build(m.part(), m.ptp_caches, m.cores);
    pcc: Pcc(pcc::Pcc) = |m| pcc::Pcc::build(m.part(), m.part(), m.cores, m.footprint);
    /// (Its prefetch buffer is looked up with the L2 TLB, so it answers before the PDC.)
    tlbpf: TlbPrefetch(tlbpf::Sequential) = |m| tlbpf::Sequential::build(m.part(), m.cores);
    /// (On chip, it answers before a translation level in memory is read.)
    pdc: Pdc(pdc::Pdc) = |m| pdc::Pdc::build(m.part(), m.cores);
    /// (Boxed, as the larger ones below: their arrays' headers would make every variant large.)
    pomtlb: PomTlb(Box<pomtlb::PomTlb>) = |m| pomtlb::PomTlb::build(m.part()).map(Box::new);
    hawkeye: HawkEye(Box<hawkeye::HawkEye>) = |m| hawkeye::HawkEye::build(m.part(), m.part(), m.regions).map(Box::new);
    tcat: Tcat(Box<tcat::Tcat>) = |m| tcat::Tcat::build(m.part(), m.shootdown, m.part(), m.tlb_group_shift).map(Box::new);
    oracle: Oracle(Box<oracle::Oracle>) = |m| oracle::Oracle::build(m.part(), m.footprint).map(Box::new);
}

/// What a mechanism's constructor in the [`mechanisms!`] list is given: the machine's
/// components' parameters (its configuration), and what the machine knows beyond them.
pub struct Env<'a, P: Parts> {
    pub parts: &'a P,
    /// Cores of the machine.
    pub cores: usize,
    /// The workload's regions, and its footprint in 2 MB regions over all its copies (the
    /// promotion daemons' cap).
    pub regions: &'a [crate::Region],
    pub footprint: u64,
    /// A cache has the `ptp` policy (the PTP detector steers it).
    pub ptp_caches: bool,
    /// The OS's shootdown protocol (TCAT's two are mechanisms).
    pub shootdown: crate::param::ShootdownProtocol,
    /// log2 of the pages of the largest coalesced TLB entry (0: no TLB coalesces).
    pub tlb_group_shift: u32,
}

impl<P: Parts> Env<'_, P> {
    /// The mounted component of type `T`.
    pub fn part<T: 'static>(&self) -> &T {
        self.parts.part()
    }
}

impl Mechanism for AnyMech {
    fn hooks(&self) -> Hooks {
        each!(self, m => m.hooks())
    }
    #[inline(always)]
    fn on_reference(&mut self, c: usize, va: VirtAddr, ctx: Ctx) {
        each!(self, m => m.on_reference(c, va, ctx))
    }
    #[inline(always)]
    fn on_walk_step(&mut self, c: usize, step: &WalkStep) {
        each!(self, m => m.on_walk_step(c, step))
    }
    #[inline(always)]
    fn on_l2_tlb_miss<P: MemPort>(&mut self, c: usize, va: VirtAddr, ctx: Ctx, write: bool, port: &mut P) -> Option<(TlbEntry, PageSize)> {
        each!(self, m => m.on_l2_tlb_miss(c, va, ctx, write, port))
    }
    #[inline(always)]
    fn on_walk_end<P: MemPort>(&mut self, c: usize, va: VirtAddr, ctx: Ctx, e: TlbEntry, size: PageSize, port: &mut P) {
        each!(self, m => m.on_walk_end(c, va, ctx, e, size, port))
    }
    #[inline(always)]
    fn on_tlb_fill(&mut self, c: usize, va: VirtAddr, size: PageSize, ctx: Ctx, from: FillFrom) {
        each!(self, m => m.on_tlb_fill(c, va, size, ctx, from))
    }
    #[inline(always)]
    fn on_tlb_evict(&mut self, c: usize, level: TlbId, key: TlbKey, e: TlbEntry) {
        each!(self, m => m.on_tlb_evict(c, level, key, e))
    }
    #[inline(always)]
    fn prefetch_request(&mut self, c: usize) -> Option<VirtAddr> {
        each!(self, m => m.prefetch_request(c))
    }
    #[inline(always)]
    fn on_prefetch_walk(&mut self, c: usize, va: VirtAddr, ctx: Ctx, result: Prefetched) {
        each!(self, m => m.on_prefetch_walk(c, va, ctx, result))
    }
    fn next_epoch(&self, c: usize) -> u64 {
        each!(self, m => m.next_epoch(c))
    }
    fn on_epoch(&mut self, c: usize, instructions: u64, l2_tlb_misses: u64, k: &mut CoreCounters) -> Option<Steer> {
        each!(self, m => m.on_epoch(c, instructions, l2_tlb_misses, k))
    }
    fn on_invalidate(&mut self, c: usize, what: Invalidate) -> usize {
        each!(self, m => m.on_invalidate(c, what))
    }
    fn on_flush(&mut self, c: usize, what: Invalidate) -> usize {
        each!(self, m => m.on_flush(c, what))
    }
    fn shootdown_lines(&self, ranges: &[(u64, u64)], pages: u64, ctx: Ctx, out: &mut Vec<(u64, VirtAddr)>) -> bool {
        each!(self, m => m.shootdown_lines(ranges, pages, ctx, out))
    }
    fn on_line_rewrite(&mut self, line: u64, va: VirtAddr, ctx: Ctx, holder: usize, flush: bool) {
        each!(self, m => m.on_line_rewrite(line, va, ctx, holder, flush))
    }
    fn invalidate_line(&mut self, line: u64, va: VirtAddr, ctx: Ctx, mmus: &mut [Mmu]) -> u64 {
        each!(self, m => m.invalidate_line(line, va, ctx, mmus))
    }
    fn on_baseline_shootdown(&mut self) {
        each!(self, m => m.on_baseline_shootdown())
    }
    #[inline(always)]
    fn on_walk_write(&mut self, c: usize, va: VirtAddr, size: PageSize, ctx: Ctx, mmus: &mut [Mmu]) {
        each!(self, m => m.on_walk_write(c, va, size, ctx, mmus))
    }
    fn needs_memory_side(&self) -> bool {
        each!(self, m => m.needs_memory_side())
    }
    fn caches_translations(&self) -> bool {
        each!(self, m => m.caches_translations())
    }
    fn favour(&mut self, ctxs: &[Ctx]) {
        each!(self, m => m.favour(ctxs))
    }
    fn hindsight(&self) -> Option<oracle::WalkProfile> {
        each!(self, m => m.hindsight())
    }
    fn act_on(&mut self, profile: &oracle::WalkProfile) {
        each!(self, m => m.act_on(profile))
    }
    fn task(&self) -> Option<(Clock, u64, u64)> {
        each!(self, m => m.task())
    }
    fn on_tick(&mut self, out: &mut Vec<OsRequest>) {
        each!(self, m => m.on_tick(out))
    }
    fn emit_stats(&self, s: &mut Stats) {
        each!(self, m => m.emit_stats(s))
    }
    fn derive_stats(&self, i: &Ints, s: &mut Stats) {
        each!(self, m => m.derive_stats(i, s))
    }
    fn on_warmup_end(&mut self) {
        each!(self, m => m.on_warmup_end())
    }
}

/// The mechanisms of a machine, and for each hook point whether any of them listens, so
/// that a machine without mechanisms skips the point with one predictable branch.
pub struct Mechs {
    list: Vec<AnyMech>,
    /// Per core: the earliest instruction count at which a mechanism's epoch ends.
    next_epoch: Vec<u64>,
    /// Some mechanism has epochs.
    pub epochs: bool,
    /// Some mechanism watches walk steps.
    pub walk_steps: bool,
    /// Which per-reference hooks some mechanism listens to.
    pub hooks: Hooks,
    /// Per core: its L2 TLB's misses at the end of warm-up. Epochs see the misses since then
    /// (see [`Mechs::l2_tlb_misses`]).
    misses_origin: Vec<u64>,
}

impl Mechs {
    /// The mechanisms `env`'s parameters enable (see `Config::mechanisms`).
    pub fn build<P: Parts>(env: &Env<P>) -> Mechs {
        let mut list = Vec::new();
        configured(env, &mut list);
        Mechs::new(list, env.cores)
    }

    /// A machine of `cores` cores running the mechanisms of `list`.
    pub fn new(list: Vec<AnyMech>, cores: usize) -> Mechs {
        let mut m = Mechs { list, next_epoch: vec![u64::MAX; cores], epochs: false, walk_steps: false, hooks: Hooks::default(), misses_origin: Vec::new() };
        for c in 0..cores {
            m.next_epoch[c] = m.list.iter().map(|x| x.next_epoch(c)).min().unwrap_or(u64::MAX);
        }
        m.epochs = m.next_epoch.iter().any(|&e| e != u64::MAX);
        m.hooks = m.list.iter().fold(Hooks::default(), |h, x| h.or(x.hooks()));
        m.walk_steps = m.hooks.walk_step;
        m
    }

    /// Whether some mechanism needs both halves of the machine on one thread.
    pub fn needs_memory_side(&self) -> bool {
        self.list.iter().any(|m| m.needs_memory_side())
    }

    /// Whether some mechanism keeps translations as cache lines
    /// ([`Mechanism::caches_translations`]).
    pub fn caches_translations(&self) -> bool {
        self.list.iter().any(|m| m.caches_translations())
    }

    /// Every reference (call only if `hooks.reference`).
    #[inline(always)]
    pub fn on_reference(&mut self, c: usize, va: VirtAddr, ctx: Ctx) {
        for m in &mut self.list {
            m.on_reference(c, va, ctx);
        }
    }

    #[inline(always)]
    pub fn on_walk_step(&mut self, c: usize, step: &WalkStep) {
        if self.walk_steps {
            for m in &mut self.list {
                m.on_walk_step(c, step);
            }
        }
    }

    /// The first answer of a translation level between the L2 TLB and the walk.
    #[inline(always)]
    pub fn on_l2_tlb_miss<P: MemPort>(&mut self, c: usize, va: VirtAddr, ctx: Ctx, write: bool, port: &mut P) -> Option<(TlbEntry, PageSize)> {
        for m in &mut self.list {
            if let Some(t) = m.on_l2_tlb_miss(c, va, ctx, write, port) {
                return Some(t);
            }
        }
        None
    }

    #[inline(always)]
    pub fn on_walk_end<P: MemPort>(&mut self, c: usize, va: VirtAddr, ctx: Ctx, e: TlbEntry, size: PageSize, port: &mut P) {
        for m in &mut self.list {
            m.on_walk_end(c, va, ctx, e, size, port);
        }
    }

    /// Core `c`'s TLBs were filled (call only if `hooks.tlb_fill`).
    #[inline(always)]
    pub fn on_tlb_fill(&mut self, c: usize, va: VirtAddr, size: PageSize, ctx: Ctx, from: FillFrom) {
        for m in &mut self.list {
            m.on_tlb_fill(c, va, size, ctx, from);
        }
    }

    /// A TLB level of core `c` evicted an entry (call only if `hooks.tlb_evict`).
    #[inline(always)]
    pub fn on_tlb_evict(&mut self, c: usize, level: TlbId, key: TlbKey, e: TlbEntry) {
        for m in &mut self.list {
            m.on_tlb_evict(c, level, key, e);
        }
    }

    /// The next TLB prefetch some mechanism asks core `c` to make (call only if
    /// `hooks.tlb_prefetch`).
    #[inline]
    pub fn prefetch_request(&mut self, c: usize) -> Option<VirtAddr> {
        self.list.iter_mut().find_map(|m| m.prefetch_request(c))
    }

    /// A TLB prefetch of core `c` is done.
    pub fn on_prefetch_walk(&mut self, c: usize, va: VirtAddr, ctx: Ctx, result: Prefetched) {
        for m in &mut self.list {
            m.on_prefetch_walk(c, va, ctx, result);
        }
    }

    /// Whether core `c`, at `instructions`, has reached an epoch's end.
    #[inline(always)]
    pub fn epoch_due(&self, c: usize, instructions: u64) -> bool {
        instructions >= self.next_epoch[c]
    }

    /// End the epochs due on core `c`; returns the memory side's new steering, if any.
    #[cold]
    pub fn on_epoch(&mut self, c: usize, instructions: u64, l2_tlb_misses: u64, k: &mut CoreCounters) -> Vec<Steer> {
        let mut out = Vec::new();
        let mut next = u64::MAX;
        for m in &mut self.list {
            if instructions >= m.next_epoch(c) {
                out.extend(m.on_epoch(c, instructions, l2_tlb_misses, k));
            }
            next = next.min(m.next_epoch(c));
        }
        self.next_epoch[c] = next;
        out
    }

    /// Invalidate what `what` names in every mechanism's structures of core `c`.
    pub fn on_invalidate(&mut self, c: usize, what: Invalidate) -> usize {
        self.list.iter_mut().map(|m| m.on_invalidate(c, what)).sum()
    }

    /// Flush what `what` names from core `c`'s view (see [`Mechanism::on_flush`]).
    pub fn on_flush(&mut self, c: usize, what: Invalidate) -> usize {
        self.list.iter_mut().map(|m| m.on_flush(c, what)).sum()
    }

    /// The home lines a shootdown is carried as, from the first mechanism that carries it
    /// ([`Mechanism::shootdown_lines`]); `false`: none does.
    pub fn shootdown_lines(&self, ranges: &[(u64, u64)], pages: u64, ctx: Ctx, out: &mut Vec<(u64, VirtAddr)>) -> bool {
        self.list.iter().any(|m| m.shootdown_lines(ranges, pages, ctx, out))
    }

    /// Home line `line` is about to be rewritten ([`Mechanism::on_line_rewrite`]).
    pub fn on_line_rewrite(&mut self, line: u64, va: VirtAddr, ctx: Ctx, holder: usize, flush: bool) {
        for m in &mut self.list {
            m.on_line_rewrite(line, va, ctx, holder, flush);
        }
    }

    /// The rewrite of `line` reaches its TLB sharers ([`Mechanism::invalidate_line`]):
    /// returns the cores reached.
    pub fn invalidate_line(&mut self, line: u64, va: VirtAddr, ctx: Ctx, mmus: &mut [Mmu]) -> u64 {
        self.list.iter_mut().fold(0, |cores, m| cores | m.invalidate_line(line, va, ctx, mmus))
    }

    /// A shootdown went the baseline's way ([`Mechanism::on_baseline_shootdown`]).
    pub fn on_baseline_shootdown(&mut self) {
        for m in &mut self.list {
            m.on_baseline_shootdown();
        }
    }

    /// A walk on core `c` wrote its translation into memory (call only if `hooks.walk_write`;
    /// a configuration that asks for it, so off the common path).
    #[cold]
    pub fn on_walk_write(&mut self, c: usize, va: VirtAddr, size: PageSize, ctx: Ctx, mmus: &mut [Mmu]) {
        for m in &mut self.list {
            m.on_walk_write(c, va, size, ctx, mmus);
        }
    }

    pub fn emit_stats(&self, s: &mut Stats) {
        for m in &self.list {
            m.emit_stats(s);
        }
    }

    pub fn derive_stats(&self, i: &Ints, s: &mut Stats) {
        for m in &self.list {
            m.derive_stats(i, s);
        }
    }

    /// The end of warm-up ([`Mechanism::on_warmup_end`]); the epochs' L2 TLB misses count
    /// from here.
    pub fn on_warmup_end(&mut self, mmus: &[Mmu]) {
        self.misses_origin = mmus.iter().map(|m| m.tlb(TlbId::L2).stats.misses).collect();
        for m in &mut self.list {
            m.on_warmup_end();
        }
    }

    /// The L2 TLB misses of core `core` (whose MMU is `mmu`) since the end of warm-up: what an
    /// epoch's detector differences (a PTP epoch that spans the end of warm-up sees fewer
    /// misses at its end than at its start, and counts none).
    pub fn l2_tlb_misses(&self, core: usize, mmu: &Mmu) -> u64 {
        mmu.tlb(TlbId::L2).stats.misses - self.misses_origin.get(core).copied().unwrap_or(0)
    }

    /// Favour the processes with contexts `ctxs` ([`Mechanism::favour`]).
    pub fn favour(&mut self, ctxs: &[Ctx]) {
        for m in &mut self.list {
            m.favour(ctxs);
        }
    }

    /// What the mechanisms that act in hindsight learnt ([`Mechanism::hindsight`]; one
    /// mechanism has any).
    pub fn hindsight(&self) -> Option<oracle::WalkProfile> {
        self.list.iter().find_map(|m| m.hindsight())
    }

    /// Give a first run's hindsight to the mechanisms that act on it.
    pub fn act_on(&mut self, profile: &oracle::WalkProfile) {
        for m in &mut self.list {
            m.act_on(profile);
        }
    }

    /// The periodic tasks of the mechanisms: (place in the list, clock, period, first due).
    pub fn tasks(&self) -> Vec<(usize, Clock, u64, u64)> {
        self.list.iter().enumerate().filter_map(|(i, m)| m.task().map(|(c, p, f)| (i, c, p, f))).collect()
    }

    /// Run the periodic task of the mechanism at place `i`; returns its requests to the OS.
    pub fn on_tick(&mut self, i: usize) -> Vec<OsRequest> {
        let mut out = Vec::new();
        self.list[i].on_tick(&mut out);
        out
    }

    /// A mechanism by its place in the list (tests, and studies that read its state).
    pub fn get(&self, i: usize) -> Option<&AnyMech> {
        self.list.get(i)
    }

    /// The Promotion Candidate Cache, if the machine has one (`pcc.enabled`).
    pub fn pcc(&self) -> Option<&pcc::Pcc> {
        self.list.iter().find_map(|m| match m {
            AnyMech::Pcc(p) => Some(p),
            _ => None,
        })
    }

    /// The same, to read it out ([`pcc::Pcc::candidates`]).
    pub fn pcc_mut(&mut self) -> Option<&mut pcc::Pcc> {
        self.list.iter_mut().find_map(|m| match m {
            AnyMech::Pcc(p) => Some(p),
            _ => None,
        })
    }

    /// HawkEye, if the machine has it (`hawkeye.enabled`).
    pub fn hawkeye(&self) -> Option<&hawkeye::HawkEye> {
        self.list.iter().find_map(|m| match m {
            AnyMech::HawkEye(h) => Some(&**h),
            _ => None,
        })
    }

    /// TCAT, if the machine keeps TLBs coherent with it (`shootdown.protocol=tcat-*`): tests and
    /// studies read its directory; the engine reaches it through the home-line hooks.
    pub fn tcat(&self) -> Option<&tcat::Tcat> {
        self.list.iter().find_map(|m| match m {
            AnyMech::Tcat(t) => Some(&**t),
            _ => None,
        })
    }

    /// The POM-TLB, if the machine has one (`pomtlb.enabled`).
    pub fn pomtlb(&self) -> Option<&pomtlb::PomTlb> {
        self.list.iter().find_map(|m| match m {
            AnyMech::PomTlb(p) => Some(&**p),
            _ => None,
        })
    }
}
