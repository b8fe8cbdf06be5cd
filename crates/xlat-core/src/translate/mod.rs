//! The translation side: each core's MMU (TLB levels, page-walk caches), the walker, and the
//! OS that owns the page tables and handles faults. A reference is looked up in the L1 and
//! L2 TLBs; on a miss the walker reads the page tables through the memory port; on a fault
//! the OS maps the page and the walk starts again. Everything that takes time is told to the
//! memory port, which may do it at once or record it for another thread.

pub mod check;
pub mod coalesce;
pub mod mmu;
pub mod pwc;
pub mod tlb;
pub mod walker;

use crate::arch::addr::{PageSize, VirtAddr};
use crate::arch::ctx::{Ctx, Invalidate, OsRequest};
use crate::error::SimError;
use crate::mech::{FillFrom, Mechs};
use crate::memory::port::MemPort;
use crate::os::{Hardware, Kernel};
use crate::timing::Early;
use crate::translate::mmu::{HwContext, Mmu};
use crate::translate::tlb::TlbEntry;
use crate::translate::walker::{HostTable, WalkParams, Walked, Walker};
use crate::workload::{Ref, RefKind};

pub struct Translator {
    /// Every translation hits the L1 TLB (`tlb.perfect`).
    pub(crate) perfect: bool,
    /// A software prefetch that misses the TLBs walks (`tlb.prefetch_walks`).
    pub(crate) prefetch_walks: bool,
    /// Which TLB statistics the machine reports.
    pub(crate) tlb_shape: crate::translate::mmu::TlbShape,
    /// References a dependent reference looks ahead for one that starts its walk or fill
    /// first (`core.lookahead`; 0 without in-flight state), within a reorder buffer of `rob`
    /// entries.
    pub(crate) lookahead: usize,
    pub(crate) rob: u64,
    /// Per core.
    pub mmus: Vec<Mmu>,
    pub mechs: Mechs,
    /// The translation invariant's checker (`check.translations`).
    pub checker: check::Checker,
    pub(crate) walk: WalkParams,
    /// Virtualized (2D walks).
    pub(crate) virt: bool,
    /// PT-Baker's helper thread of the run, if any, and its touches since warm-up.
    pub(crate) helper: Option<crate::workload::Helper>,
    pub(crate) helper_touches: u64,
}

/// Tell the mechanisms what the last fill of core `c`'s TLB level `id` pushed out, if anything.
#[inline(never)]
fn evicted(mechs: &mut Mechs, c: usize, id: crate::translate::mmu::TlbId, lvl: &mut crate::translate::tlb::TlbLevel) {
    if let Some((key, e)) = lvl.take_evicted() {
        mechs.on_tlb_evict(c, id, key, e);
    }
}

impl Translator {
    pub(crate) fn perfect(&self) -> bool {
        self.perfect
    }

    /// Simulate one reference of hardware context `c`: dispatch, translation, data access,
    /// through `port` (whose core indices are the contexts', one per core for now). `early`:
    /// the younger references that would start its walk or fill first, if it waits for a
    /// producer (see [`crate::timing::inflight`]).
    #[inline]
    pub fn step<P: MemPort>(&mut self, c: usize, r: Ref, early: Early, kernel: &mut Kernel, port: &mut P) -> Result<(), SimError> {
        if r.is_os_call() {
            return kernel.os_call(c, r, self, port);
        }
        let (kind, va, core) = (r.kind(), VirtAddr(r.va), kernel.contexts[c].core);
        port.dispatch(c, r.inst_delta, kind, r.producer());
        if !early.is_none() {
            port.early(early);
        }
        if self.mechs.hooks.reference {
            self.mechs.on_reference(core, va, kernel.contexts[c].ctx);
        }
        let Some((frame, size)) = self.translate(c, va, kind, kernel, port)? else {
            // A prefetch that would have had to walk where prefetches do not, or to fault.
            self.mmus[core].counters.prefetches_dropped += 1;
            port.dropped();
            return Ok(());
        };
        if self.checker.every != 0 && self.checker.due() {
            self.check_translation(kernel, c, va, frame, size)?;
        }
        let k = &mut self.mmus[core].counters;
        k.refs += 1;
        match kind {
            RefKind::Load => k.loads += 1,
            RefKind::Store => k.stores += 1,
            RefKind::Fetch => k.fetches += 1,
            RefKind::Prefetch => k.prefetches += 1,
        }
        port.data(((frame << 12) + va.offset(size)) >> 6);
        if self.mechs.hooks.tlb_prefetch {
            self.tlb_prefetches(c, kernel, port);
        }
        if self.mechs.epochs && self.mechs.epoch_due(c, port.instructions(c)) {
            let l2_misses = self.mechs.l2_tlb_misses(core, &self.mmus[core]);
            let mmu = &mut self.mmus[core];
            for s in self.mechs.on_epoch(c, port.instructions(c), l2_misses, &mut mmu.counters) {
                port.steer(s);
            }
        }
        Ok(())
    }

    /// Translate `va` for core `c`: look it up along the core's TLB path (L1 then L2), then
    /// walk. Returns the page's first frame and its size; nothing for a prefetch that is
    /// dropped instead ([`RefKind::Prefetch`]).
    #[inline]
    fn translate<P: MemPort>(&mut self, c: usize, va: VirtAddr, kind: RefKind, kernel: &mut Kernel, port: &mut P) -> Result<Option<(u64, PageSize)>, SimError> {
        let write = kind == RefKind::Store;
        if self.perfect {
            if kind == RefKind::Prefetch && !kernel.mapped(c, va) {
                return Ok(None);
            }
            return self.translate_perfect(c, va, write, kernel, port).map(Some);
        }
        let HwContext { core, ctx, .. } = kernel.contexts[c];
        let mmu = &mut self.mmus[core];
        let path = if kind == RefKind::Fetch { mmu.fetch_path } else { mmu.data_path };
        // Whether some level holds a translation of the page (a clean one a store cannot
        // use): the fills after the walk must then replace it rather than add one.
        let mut present = false;
        // The levels that missed (all of them unless one held a clean translation).
        let mut missed = path.len();
        for d in 0..path.len() {
            if d == 1 {
                port.l2_tlb();
            }
            let lvl = &mut mmu.tlbs[path[d] as usize];
            lvl.stats.accesses += 1;
            match lvl.lookup(va, ctx) {
                Some((e, size)) if !write || e.dirty => {
                    lvl.stats.hit(e, size);
                    // Inclusion: the levels above, which missed, get the translation.
                    for &id in &path[..d] {
                        let up = &mut mmu.tlbs[id as usize];
                        let code = up.insert_absent(va, size, ctx, e);
                        up.stats.refills[0][code] += 1;
                        if self.mechs.hooks.tlb_evict {
                            evicted(&mut self.mechs, core, id, up);
                        }
                    }
                    if d > 0 && self.mechs.hooks.tlb_fill {
                        self.mechs.on_tlb_fill(core, va, size, ctx, FillFrom::Level);
                    }
                    return Ok(Some((e.frame, size)));
                }
                Some(_) => {
                    // A store through a clean translation: the hardware walks to set the
                    // PTE's D bit. (The first level's lookup counts neither as a hit nor as a
                    // miss then; deeper ones count a hit.)
                    if d > 0 {
                        lvl.stats.hits += 1;
                    }
                    mmu.counters.dirty_walks += 1;
                    present = true;
                    missed = d;
                    break;
                }
                None => lvl.stats.misses += 1,
            }
        }
        // A translation level between the L2 TLB and the walk (an L3 TLB) may answer. (A
        // store through a clean translation walks to set the D bit.)
        if self.mechs.hooks.l2_tlb_miss && !present {
            if let Some((e, size)) = self.mechs.on_l2_tlb_miss(core, va, ctx, write, port) {
                // (Refills of levels the L2 TLB could not serve: counted as L2 misses.)
                let mmu = &mut self.mmus[core];
                for &id in path.iter().rev() {
                    let lvl = &mut mmu.tlbs[id as usize];
                    let code = lvl.insert_absent(va, size, ctx, e);
                    lvl.stats.refills[1][code] += 1;
                    if self.mechs.hooks.tlb_evict {
                        evicted(&mut self.mechs, core, id, lvl);
                    }
                }
                if self.mechs.hooks.tlb_fill {
                    self.mechs.on_tlb_fill(core, va, size, ctx, FillFrom::L3);
                }
                return Ok(Some((e.frame, size)));
            }
        }
        // A prefetch walks only where prefetches start walks, and never to fault.
        if kind == RefKind::Prefetch && !(self.prefetch_walks && kernel.mapped(c, va)) {
            return Ok(None);
        }
        port.walk_begin();
        let (e, size) = self.walk(c, va, write, present, kernel, port)?;
        if self.mechs.hooks.walk_end {
            self.mechs.on_walk_end(core, va, ctx, e, size, port);
            if self.mechs.hooks.walk_write {
                self.mechs.on_walk_write(core, va, size, ctx, &mut self.mmus);
            }
        }
        port.walk_end();
        // Fill every level of the path, last first.
        let mmu = &mut self.mmus[core];
        for (i, &id) in path.iter().enumerate().rev() {
            let lvl = &mut mmu.tlbs[id as usize];
            let code = if present { lvl.insert(va, size, ctx, e) } else { lvl.insert_absent(va, size, ctx, e) };
            if i < missed {
                lvl.stats.refills[1][code] += 1;
            }
            if self.mechs.hooks.tlb_evict {
                evicted(&mut self.mechs, core, id, lvl);
            }
        }
        if self.mechs.hooks.tlb_fill {
            self.mechs.on_tlb_fill(core, va, size, ctx, FillFrom::Walk);
        }
        Ok(Some((e.frame, size)))
    }

    /// Walk for the pages core `c`'s mechanisms ask to prefetch (after a reference's data
    /// access) and hand each result back to them. A page a TLB level of the core holds is
    /// not walked. The walk is a demand walk's, for a load: it reads through the port (which
    /// counts it apart and lets no reference wait for it), fills the page-walk caches, and
    /// sets accessed bits, as x86 hardware does before it caches a translation anywhere; a
    /// page it finds not mapped is dropped (a prefetch never faults: the OS is not called).
    #[inline(never)]
    fn tlb_prefetches<P: MemPort>(&mut self, c: usize, kernel: &mut Kernel, port: &mut P) {
        use crate::mech::Prefetched;
        let HwContext { core, ctx, .. } = kernel.contexts[c];
        while let Some(va) = self.mechs.prefetch_request(core) {
            let mmu = &mut self.mmus[core];
            let result = if mmu.tlbs.iter().any(|t| t.holds_page(va, ctx)) {
                Prefetched::Cached
            } else {
                port.prefetch_walk_begin();
                let walked = self.walk_once(kernel.contexts[c], va, false, false, kernel, port);
                port.prefetch_walk_end();
                match walked {
                    Walked::Leaf(e, size) => Prefetched::Walked(e, size),
                    Walked::Fault | Walked::HostFault { .. } => Prefetched::Unmapped,
                }
            };
            self.mechs.on_prefetch_walk(core, va, ctx, result);
        }
    }

    /// One walk of `va` by context `x`'s core: natively, or in 2D through its VM's table and
    /// the host's. `miss`: the walk answers a TLB miss (not a retry, nor a dirty-bit walk).
    #[inline(always)]
    fn walk_once<P: MemPort>(&mut self, x: HwContext, va: VirtAddr, write: bool, miss: bool, kernel: &mut Kernel, port: &mut P) -> Walked {
        let HwContext { core, space, vm, ctx } = x;
        let mut w = Walker { mmu: &mut self.mmus[core], ctx, port, mechs: &mut self.mechs, p: &self.walk, c: core, miss };
        if self.virt {
            let v = &mut kernel.vms[vm];
            let mut host = HostTable { pt: &mut kernel.os.pt, root: kernel.os.spaces[v.space].root, ctx: v.ctx };
            w.walk_2d(&mut v.os.pt, v.os.spaces[space].root, &mut host, va, write)
        } else {
            w.walk(&mut kernel.os.pt, kernel.os.spaces[space].root, va, write)
        }
    }

    /// A page walk for `va` on core `c`, natively or 2D; on a fault the OS (the guest's, or
    /// the host's for an EPT violation) maps the page, the port is told what it cost, and
    /// the walk starts again (the instruction re-executes: a second walk). A walk to set a
    /// clean translation's dirty bit (`dirty_bit`) counts as `tlb.dirty_walks` (in
    /// `translate`), any other as one of `walks`; each retry as `walks.retries`.
    fn walk<P: MemPort>(
        &mut self,
        c: usize,
        va: VirtAddr,
        write: bool,
        dirty_bit: bool,
        kernel: &mut Kernel,
        port: &mut P,
    ) -> Result<(TlbEntry, PageSize), SimError> {
        // Each fault maps one more page (natively the page; in a VM a guest page, or the
        // host page behind a guest page-table node or data page): a handful at most.
        for attempt in 0..64 {
            let core = kernel.contexts[c].core;
            let miss = attempt == 0 && !dirty_bit;
            let n = &mut self.mmus[core].counters;
            if miss {
                n.walks += 1;
            } else if attempt > 0 {
                n.walk_retries += 1;
            }
            let walked = self.walk_once(kernel.contexts[c], va, write, miss, kernel, port);
            let cost = match walked {
                Walked::Leaf(e, size) => return Ok((e, size)),
                Walked::Fault => {
                    let cost = kernel.fault(c, va, write, self, port)?;
                    self.mmus[core].counters.faults += 1;
                    cost
                }
                Walked::HostFault { gpa, data } => kernel.ept_violation(c, VirtAddr(gpa), write && data, self, port)?,
            };
            self.mmus[core].counters.fault_cycles += cost;
            port.fault(cost);
        }
        unreachable!("the walk of {:#x} keeps faulting after the OS mapped its pages", va.0)
    }

    /// A perfect TLB: translate functionally, faulting in the OS (the guest's and the
    /// host's in a VM) as needed; the core stalls for the handlers.
    fn translate_perfect<P: MemPort>(&mut self, c: usize, va: VirtAddr, write: bool, kernel: &mut Kernel, port: &mut P) -> Result<(u64, PageSize), SimError> {
        let HwContext { core, space, vm, .. } = kernel.contexts[c];
        if !self.virt {
            if let Some((frame, size)) = kernel.os.translate(space, va) {
                return Ok((frame.0, size));
            }
            let cost = kernel.fault(c, va, write, self, port)?;
            let n = &mut self.mmus[core].counters;
            n.faults += 1;
            n.fault_cycles += cost;
            let (frame, size) = kernel.os.translate(space, va).expect("the fault handler mapped the page");
            port.os_delay(cost);
            return Ok((frame.0, size));
        }
        let mut cost = 0;
        let (gframe, gsize) = match kernel.vms[vm].os.translate(space, va) {
            Some(m) => m,
            None => {
                cost += kernel.fault(c, va, write, self, port)?;
                self.mmus[core].counters.faults += 1;
                kernel.vms[vm].os.translate(space, va).expect("the guest's fault handler mapped the page")
            }
        };
        let gpa = VirtAddr(gframe.addr().0 + va.offset(gsize));
        let hspace = kernel.vms[vm].space;
        let (hframe, hsize) = match kernel.os.translate(hspace, gpa) {
            Some(m) => m,
            None => {
                cost += kernel.ept_violation(c, gpa, write, self, port)?;
                kernel.os.translate(hspace, gpa).expect("the host's fault handler mapped the page")
            }
        };
        self.mmus[core].counters.fault_cycles += cost;
        let size = gsize.min(hsize);
        let hpa = hframe.addr().0 + gpa.offset(hsize);
        if cost > 0 {
            port.os_delay(cost);
        }
        Ok(((hpa & !(size.bytes() - 1)) >> 12, size))
    }
}

pub use crate::mrc::Curve;

/// The structures [`Translator::profile`] knows.
pub const CURVES: &[&str] =
    &["tlb.l1d", "tlb.l1i", "tlb.l2", "tlb.l2i", "pwc.l2", "pwc.l3", "pwc.l4", "pwc.l5", "cache.l1d", "cache.l1i", "cache.l2", "cache.llc"];

impl Translator {
    /// Profile `structures` (names from [`CURVES`]; `pwc` for every page-walk-cache level
    /// the machine has) on every core from now on, for miss-ratio curves up to `cap` ways
    /// ([`crate::mrc`]). A structure the machine does not have is an error.
    pub fn profile(&mut self, structures: &[String], cap: usize) -> Result<(), SimError> {
        let bad = |name: &str, why: String| SimError::BadCurve { name: name.to_string(), why };
        if !(1..=crate::mrc::MAX_CAP).contains(&cap) {
            return Err(bad("", format!("ways up to {cap}: give 1 to {}", crate::mrc::MAX_CAP)));
        }
        for name in structures {
            let mmu0 = &self.mmus[0];
            if name == "pwc" {
                if !(2..=5).any(|l| mmu0.pwc.geometry(l).is_some()) {
                    return Err(bad(name, "this machine has no page-walk cache".into()));
                }
                for mmu in &mut self.mmus {
                    (2..=5).for_each(|l| mmu.pwc.profile(l, cap));
                }
            } else if let Some(l) = name.strip_prefix("pwc.l").and_then(|l| l.parse::<u8>().ok()).filter(|l| (2..=5).contains(l)) {
                if mmu0.pwc.geometry(l).is_none() {
                    return Err(bad(name, format!("this machine's page-walk cache has no level {l} (pwc.l{l}.entries = 0)")));
                }
                for mmu in &mut self.mmus {
                    mmu.pwc.profile(l, cap);
                }
            } else if let Some(id) = mmu::TlbId::ALL.into_iter().find(|t| name.strip_prefix("tlb.") == Some(t.name())) {
                if mmu0.tlbs[id as usize].geometry().is_empty() {
                    return Err(bad(name, "this machine has no such TLB level".into()));
                }
                for mmu in &mut self.mmus {
                    mmu.tlbs[id as usize].profile(cap);
                }
            } else {
                return Err(bad(name, format!("known: {}, pwc", CURVES.join(", "))));
            }
        }
        Ok(())
    }

    /// The miss-ratio curves of the structures being profiled, summed over cores: TLB levels,
    /// then page-walk-cache levels from the lowest.
    pub fn curves(&self) -> Vec<Curve> {
        let mut out: Vec<Curve> = Vec::new();
        let mut add =
            |structure: String, arrays: Vec<(usize, usize)>, exact: bool, d: &crate::mrc::Depths| crate::mrc::merge(&mut out, structure, arrays, exact, d);
        for mmu in &self.mmus {
            for id in mmu::TlbId::ALL {
                let t = &mmu.tlbs[id as usize];
                if let Some(p) = t.profiled() {
                    add(format!("tlb.{}", id.name()), t.geometry(), t.is_lru(), &p.depths);
                }
            }
            if let Some(p) = mmu.pwc.profiled() {
                // (Exact for the lowest level the machine has, profiled or not.)
                let lowest = (2..=5u8).find(|&l| mmu.pwc.geometry(l).is_some());
                for l in 2..=5u8 {
                    if let (Some(st), Some(g)) = (&p.levels[l as usize], mmu.pwc.geometry(l)) {
                        add(format!("pwc.l{l}"), vec![g], Some(l) == lowest && mmu.pwc.is_lru(l), st.depths());
                    }
                }
            }
        }
        out
    }

    /// The end of warm-up on the translation side: what the mechanisms' model counts from
    /// there (see [`Mechs::on_warmup_end`]). Statistics are not touched: the machine subtracts
    /// a snapshot of them.
    pub fn on_warmup_end(&mut self) {
        self.mechs.on_warmup_end(&self.mmus);
    }

    /// Invalidate the translations `what` names on core `c`: in its TLBs and page-walk cache
    /// (what INVLPG, INVPCID, INVVPID and a CR3 write reach) and in every mechanism's
    /// structures. Returns how many entries went.
    pub fn invalidate(&mut self, c: usize, what: Invalidate) -> usize {
        self.mmus[c].invalidate(what) + self.mechs.on_invalidate(c, what)
    }

    /// Core `c` flushes `what` from its TLBs and page-walk caches because their tags are
    /// about to be reused (a CR3 write without PCIDs, a VM switch without VPIDs).
    pub fn flush_local(&mut self, c: usize, what: Invalidate) -> usize {
        self.mmus[c].invalidate(what) + self.mechs.on_flush(c, what)
    }
}

/// The translator as the OS sees it: what caches translations, by core, and the mechanisms'
/// hooks for TCAT's home lines and periodic tasks.
impl Hardware for Translator {
    fn cores(&self) -> usize {
        self.mmus.len()
    }
    fn invalidate(&mut self, core: usize, what: Invalidate) -> usize {
        Translator::invalidate(self, core, what)
    }
    fn flush_local(&mut self, core: usize, what: Invalidate) -> usize {
        Translator::flush_local(self, core, what)
    }
    fn invalidate_nested(&mut self, core: usize, what: Invalidate) -> usize {
        self.mmus[core].invalidate_nested(what)
    }
    fn invalidate_walk_caches(&mut self, core: usize, what: Invalidate) {
        self.mmus[core].pwc.invalidate(what);
        self.mechs.on_invalidate(core, what);
    }
    fn shootdown_lines(&self, ranges: &[(u64, u64)], pages: u64, ctx: Ctx, out: &mut Vec<(u64, VirtAddr)>) -> bool {
        self.mechs.shootdown_lines(ranges, pages, ctx, out)
    }
    fn on_baseline_shootdown(&mut self) {
        self.mechs.on_baseline_shootdown();
    }
    fn on_line_rewrite(&mut self, line: u64, va: VirtAddr, ctx: Ctx, holder: usize, flush: bool) {
        self.mechs.on_line_rewrite(line, va, ctx, holder, flush);
    }
    fn invalidate_line(&mut self, line: u64, va: VirtAddr, ctx: Ctx) -> u64 {
        self.mechs.invalidate_line(line, va, ctx, &mut self.mmus)
    }
    fn tick(&mut self, m: usize) -> Vec<OsRequest> {
        self.mechs.on_tick(m)
    }
    fn vm_switched(&mut self, core: usize) {
        self.mmus[core].vcounters.vm_switches += 1;
    }
    fn ept_violation(&mut self, core: usize, cycles: u64) {
        let v = &mut self.mmus[core].vcounters;
        v.ept_violations += 1;
        v.ept_fault_cycles += cycles;
    }
}
