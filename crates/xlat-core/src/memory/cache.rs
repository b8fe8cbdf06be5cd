//! Set-associative, physically indexed, write-back caches whose lines know what they hold
//! (data, page-table entries, TLB entries) and which core brought them in.

use crate::assoc::SetAssoc;
use crate::memory::repl::csalt::Csalt;
use crate::memory::repl::Policy;
use crate::memory::repl::{AnyPolicy, LineKind};
use crate::mrc::{StackKey, StackProfile};
use crate::stats::{Ints, Stats};

use crate::param::{bound, component, Limit};

component! {
    /// A cache level: its geometry, timing, replacement and energy (`cache.l1i`, `cache.l1d`,
    /// `cache.l2`, `cache.llc`; each level's own keys, such as its prefetcher, stay beside it).
    CacheParams {
        size_kb: u64 = 32; "size_kb"; Some(Limit::Int(bound::CACHE_KB)); "{} size in KB";
        ways: u64 = 8; "ways"; Some(Limit::Int(bound::WAYS)); "{} associativity";
        latency: u64 = 4; "latency"; Some(Limit::Int(bound::LATENCY)); "{} load-to-use latency of a hit, in cycles";
        policy: crate::memory::repl::Policy = crate::memory::repl::Policy::Lru; "policy"; None; "{} replacement policy";
        energy_nj: f64 = 0.05; "energy_nj"; Some(Limit::Real(1e6)); "{} dynamic energy per access (nJ)";
    }
    check(p, key) {
        crate::param::geometry(key("size_kb"), key("ways"), p.size_kb * 1024 / crate::LINE_BYTES, p.ways, false)?;
        if p.energy_nj < 0.0 {
            return Err(crate::param::invalid(key("energy_nj"), "must not be negative"));
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LineMeta {
    pub dirty: bool,
    /// Brought in by a prefetcher and not yet used by a demand access.
    pub prefetched: bool,
}

/// Counters of one cache, split by line kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheCounters {
    pub accesses: [u64; 3],
    pub misses: [u64; 3],
    pub writebacks: u64,
    /// Lines a prefetcher brought in, and demand hits on them (each line's first).
    pub prefetches: u64,
    pub prefetch_hits: u64,
}

/// A line pushed out of a cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Victim {
    pub line: u64,
    pub dirty: bool,
    pub kind: LineKind,
}

pub struct Cache {
    arr: SetAssoc<u64, LineMeta>,
    pub latency: u64,
    pub energy_nj: f64,
    pub counters: CacheCounters,
    /// Its policy watches every demand access (CSALT, DIP).
    observed: bool,
    /// A prefetcher fills it: demand hits look for prefetched lines.
    prefetched: bool,
    /// Way partitioning: per owner (core), the ways it may fill (bit per way); empty: every
    /// owner fills any way.
    way_masks: Vec<u64>,
    /// The miss-ratio-curve profile, when one was asked for ([`Cache::profile`]).
    prof: Option<Box<CacheProfile>>,
}

/// A cache's one-pass miss-ratio curve ([`crate::mrc`]): a recency stack per set, demand
/// accesses counted at their depth. Exact for an LRU cache whose every insertion is a demand
/// miss's fill; a write-back absorbed from the level above (which marks a present line dirty
/// without refreshing it), a prefetcher's fill or a victim taken make it approximate, and
/// `inexact` says so.
pub struct CacheProfile {
    pub stack: StackProfile,
    pub inexact: bool,
}

impl Cache {
    pub fn new(size_kb: u64, ways: u64, latency: u64, policy: Policy, energy_nj: f64, seed: u64) -> Cache {
        let lines = size_kb * 1024 / crate::LINE_BYTES;
        let observed = matches!(policy, Policy::CsaltD | Policy::CsaltCd | Policy::Dip);
        Cache {
            arr: SetAssoc::new((lines / ways) as usize, ways as usize, policy, seed),
            latency,
            energy_nj,
            counters: CacheCounters::default(),
            observed,
            prefetched: false,
            way_masks: Vec::new(),
            prof: None,
        }
    }

    /// Profile it from now on for its miss-ratio curve, up to `cap` ways per set.
    pub fn profile(&mut self, cap: usize) {
        self.prof = Some(Box::new(CacheProfile { stack: StackProfile::new(self.arr.sets(), cap), inexact: !self.arr.is_lru() || !self.way_masks.is_empty() }));
    }

    /// The profile, if [`Self::profile`] started one.
    pub fn profiled(&self) -> Option<&CacheProfile> {
        self.prof.as_deref()
    }

    pub fn profiled_mut(&mut self) -> Option<&mut CacheProfile> {
        self.prof.as_deref_mut()
    }

    /// (sets, ways).
    pub fn geometry(&self) -> (usize, usize) {
        (self.arr.sets(), self.arr.ways())
    }

    /// A demand access at its depth; a hit refreshes the line (a miss's fill will insert it).
    #[cold]
    #[inline(never)]
    fn profile_access(&mut self, line: u64, hit: bool) {
        let p = self.prof.as_deref_mut().expect("profiled");
        let set = p.stack.set_of(line);
        let d = p.stack.depth(set, StackKey::from(line));
        p.stack.depths_mut().count(d);
        if hit {
            p.stack.touch_at(set, StackKey::from(line), d);
        }
    }

    /// `line` was inserted (`demand`: a demand miss's fill; else the curve is approximate).
    #[cold]
    #[inline(never)]
    fn profile_fill(&mut self, line: u64, demand: bool) {
        let p = self.prof.as_deref_mut().expect("profiled");
        p.inexact |= !demand;
        p.stack.touch(p.stack.set_of(line), StackKey::from(line));
    }

    /// Partition its ways among `owners` owners (cores), `n` ways each: owner `c` fills ways
    /// `c·n .. c·n + n - 1` (modulo the ways, so they overlap when `owners · n` exceeds
    /// them), as Intel's Cache Allocation Technology does; lookups still hit in every way.
    /// `n = 0`: no partitioning.
    pub fn with_ways_per_owner(mut self, owners: usize, n: u64) -> Cache {
        let ways = self.arr.ways() as u64;
        if n > 0 && ways <= 64 {
            self.way_masks = (0..owners as u64).map(|c| (0..n).fold(0u64, |m, i| m | 1 << ((c * n + i) % ways))).collect();
        }
        self
    }

    /// A cache a prefetcher fills (see [`Cache::fill_prefetch`]).
    pub fn with_prefetcher(mut self, on: bool) -> Cache {
        self.prefetched = on;
        self
    }

    /// A cache whose CSALT policy (if it has one) takes parameters `p` (`seed`: PTP's coin,
    /// with `csalt.ptp`).
    pub fn with_csalt(mut self, p: &crate::memory::repl::csalt::CsaltParams, seed: u64) -> Cache {
        let (sets, ways) = (self.arr.sets(), self.arr.ways());
        if let AnyPolicy::Csalt(c) = self.arr.policy_mut() {
            **c = Csalt::new(sets, ways, p.profiler, p.atd_sets as usize, p.epoch);
            c.set_page_tables_translate(p.page_tables == crate::param::CsaltPageTables::Translation);
            c.ptp = p.ptp.then(|| crate::memory::repl::Ptp::new(seed));
        }
        self
    }

    /// Its CSALT policy, if it has one.
    pub fn csalt(&self) -> Option<&Csalt> {
        match self.arr.policy() {
            AnyPolicy::Csalt(c) => Some(c),
            _ => None,
        }
    }

    pub fn csalt_mut(&mut self) -> Option<&mut Csalt> {
        match self.arr.policy_mut() {
            AnyPolicy::Csalt(c) => Some(c),
            _ => None,
        }
    }

    /// A demand access to `line`. Returns whether it hit; a hit that writes marks the line dirty.
    #[inline(always)]
    pub fn access(&mut self, line: u64, kind: LineKind, write: bool) -> bool {
        self.counters.accesses[kind as usize] += 1;
        let set = self.arr.set_of(line);
        if self.observed {
            self.arr.observe(set, line, line, kind);
        }
        let found = self.arr.lookup_inlined(set, line);
        if self.prof.is_some() {
            self.profile_access(line, found.is_some());
        }
        match found {
            Some(slot) => {
                if write {
                    self.arr.val_mut(slot).dirty = true;
                }
                if self.prefetched {
                    let m = self.arr.val_mut(slot);
                    if m.prefetched {
                        m.prefetched = false;
                        self.counters.prefetch_hits += 1;
                    }
                }
                true
            }
            None => {
                self.counters.misses[kind as usize] += 1;
                false
            }
        }
    }

    /// Whether `line` is present (no side effects).
    #[inline]
    pub fn contains(&self, line: u64) -> bool {
        self.arr.probe(self.arr.set_of(line), line).is_some()
    }

    /// Whether `line` is present and dirty (no side effects).
    pub fn is_dirty(&self, line: u64) -> bool {
        self.arr.probe(self.arr.set_of(line), line).is_some_and(|slot| self.arr.val(slot).dirty)
    }

    /// How many lines of each kind it holds (a scan: for statistics, not the hot path).
    pub fn lines_by_kind(&self) -> [u64; 3] {
        let mut n = [0; 3];
        for slot in self.arr.slots() {
            if self.arr.key(slot) != <u64 as crate::assoc::Key>::INVALID {
                n[self.arr.kind(slot) as usize] += 1;
            }
        }
        n
    }

    /// Its capacity in lines.
    pub fn lines(&self) -> u64 {
        (self.arr.sets() * self.arr.ways()) as u64
    }

    /// Ask the host CPU to load the set `line` maps to (see `host::prefetch`).
    #[inline]
    pub fn prefetch_set(&self, line: u64) {
        self.arr.prefetch_set(self.arr.set_of(line));
    }

    /// Configure page-table prioritization, if this cache's policy is `ptp` (or CSALT with
    /// `csalt.ptp`): the probability
    /// of evicting a non-page-table line, and whose page-table lines are protected (bit per
    /// core; 0 = off). No effect on other policies.
    pub fn steer_ptp(&mut self, probability: f64, protect_owners: u64) {
        let p = match self.arr.policy_mut() {
            AnyPolicy::Ptp(p) => p,
            AnyPolicy::Csalt(c) => match c.ptp.as_mut() {
                Some(p) => p,
                None => return,
            },
            _ => return,
        };
        p.set_probability(probability);
        p.set_protected_owners(protect_owners);
    }

    /// Install `line` (absent) and return the victim, if any. (Inlined, as `write_back` and
    /// `install` are, where the hierarchy fills: out of line, the calls cost a tenth of the
    /// memory side's instructions for fills and write-backs.)
    #[inline(always)]
    pub fn fill(&mut self, line: u64, kind: LineKind, dirty: bool, owner: u8) -> Option<Victim> {
        if self.prof.is_some() {
            self.profile_fill(line, true);
        }
        self.install(line, kind, LineMeta { dirty, prefetched: false }, owner)
    }

    /// Install data `line` (absent) for a prefetcher and return the victim, if any.
    pub fn fill_prefetch(&mut self, line: u64, dirty: bool, owner: u8) -> Option<Victim> {
        self.counters.prefetches += 1;
        if self.prof.is_some() {
            self.profile_fill(line, false);
        }
        self.install(line, LineKind::Data, LineMeta { dirty, prefetched: true }, owner)
    }

    #[inline(always)]
    fn install(&mut self, line: u64, kind: LineKind, meta: LineMeta, owner: u8) -> Option<Victim> {
        let set = self.arr.set_of(line);
        let (_, ev) = match self.way_masks.get(owner as usize) {
            None => self.arr.insert_owned(set, line, meta, kind, owner),
            Some(&mask) => self.arr.insert_in_ways(set, line, meta, kind, owner, mask),
        };
        ev.map(|e| Victim { line: e.key, dirty: e.val.dirty, kind: e.kind })
    }

    /// Absorb a write-back from the level above: mark the line dirty, installing it if absent.
    #[inline(always)]
    pub fn write_back(&mut self, line: u64, kind: LineKind, owner: u8) -> Option<Victim> {
        self.counters.writebacks += 1;
        if let Some(p) = &mut self.prof {
            // (A present line is marked dirty without a refresh: no stack says that for
            // every size. The fill below, of an absent one, is counted as a demand fill.)
            p.inexact = true;
        }
        let set = self.arr.set_of(line);
        match self.arr.probe_inlined(set, line) {
            Some(slot) => {
                self.arr.val_mut(slot).dirty = true;
                None
            }
            None => self.fill(line, kind, true, owner),
        }
    }

    /// Take a clean line the level above evicted (a victim cache): install it if absent.
    #[inline]
    pub fn take_victim(&mut self, line: u64, kind: LineKind, owner: u8) -> Option<Victim> {
        if let Some(p) = &mut self.prof {
            p.inexact = true;
        }
        let set = self.arr.set_of(line);
        match self.arr.probe_inlined(set, line) {
            Some(_) => None,
            None => self.fill(line, kind, false, owner),
        }
    }

    /// The owner (core) of `line`, if present: who put it there.
    pub fn owner_of(&self, line: u64) -> Option<u8> {
        self.arr.probe(self.arr.set_of(line), line).map(|slot| self.arr.info(slot).owner)
    }

    /// Remove `line`; returns whether it was dirty, or `None` if absent.
    #[inline]
    pub fn invalidate(&mut self, line: u64) -> Option<bool> {
        let set = self.arr.set_of(line);
        if let Some(p) = &mut self.prof {
            p.stack.remove(p.stack.set_of(line), StackKey::from(line));
        }
        let slot = self.arr.probe(set, line)?;
        self.arr.invalidate_slot(slot).map(|e| e.val.dirty)
    }

    pub fn total_accesses(&self) -> u64 {
        self.counters.accesses.iter().sum::<u64>()
    }

    pub fn total_misses(&self) -> u64 {
        self.counters.misses.iter().sum::<u64>()
    }
}

/// The line kinds a cache's statistics are split by; `tlb_lines`: POM-TLB lines (`tlbe`) too.
fn kinds(tlb_lines: bool) -> &'static [LineKind] {
    if tlb_lines {
        &LineKind::ALL
    } else {
        &[LineKind::Data, LineKind::PageTable]
    }
}

/// A cache's integer statistics, by line kind (see [`kinds`]).
pub(crate) fn emit_cache(s: &mut Stats, name: &str, acc: [u64; 3], miss: [u64; 3], wb: u64, tlb_lines: bool) {
    let (a, m): (u64, u64) = (acc.iter().sum(), miss.iter().sum());
    s.int(format!("cache.{name}.accesses"), a);
    s.int(format!("cache.{name}.hits"), a - m);
    s.int(format!("cache.{name}.misses"), m);
    for &kind in kinds(tlb_lines) {
        let i = kind as usize;
        s.int(format!("cache.{name}.{}.accesses", kind.name()), acc[i]);
        s.int(format!("cache.{name}.{}.misses", kind.name()), miss[i]);
    }
    s.int(format!("cache.{name}.writebacks"), wb);
}

/// A cache's miss rates, from the integers of [`emit_cache`].
pub(crate) fn derived_cache(i: &Ints, s: &mut Stats, name: &str, tlb_lines: bool) {
    s.ratio(format!("cache.{name}.miss_rate"), i.get(&format!("cache.{name}.misses")), i.get(&format!("cache.{name}.accesses")));
    for &kind in kinds(tlb_lines) {
        let (m, a) = (format!("cache.{name}.{}.misses", kind.name()), format!("cache.{name}.{}.accesses", kind.name()));
        s.ratio(format!("cache.{name}.{}.miss_rate", kind.name()), i.get(&m), i.get(&a));
    }
}

/// The glossary's entries of what [`emit_cache`] emits.
pub(crate) const STATS: &[crate::glossary::Entry] = {
    use crate::glossary::{e, Kind::*, Section::*};
    &[
        e(Caches, "cache.<cache>.accesses", Counter, "lookups",
            "Demand lookups: L1I the fetches' data; L1D loads, stores and (with `walker.port=l1d`) PTE reads; L2 the L1 misses (and PTE reads with `walker.port=l2`); LLC the L2 misses of every core."),
        e(Caches, "cache.<cache>.hits", Counter, "lookups", "`accesses` - `misses`."),
        e(Caches, "cache.<cache>.misses", Counter, "lookups", "Lookups that missed; the line is then fetched from the next level and filled on the way back."),
        e(Caches, "cache.<cache>.miss_rate", Ratio, "fraction", "`misses` / `accesses`."),
        e(Caches, "cache.<cache>.<kind>.accesses", Counter, "lookups", "Lookups for lines of that kind: `data` for the references' data, `pt` for page-table entries read by walks."),
        e(Caches, "cache.<cache>.<kind>.misses", Counter, "lookups", "Lookups of that kind that missed."),
        e(Caches, "cache.<cache>.<kind>.miss_rate", Ratio, "fraction", "`<kind>.misses` / `<kind>.accesses`."),
        e(Caches, "cache.<cache>.writebacks", Counter, "lines",
            "Dirty lines written back into this cache by the level above (evicted from an L1 into the L2, from an L2 into the LLC), so always 0 for `l1i` and `l1d`. Dirty lines leaving the LLC are `dram.writes`."),
        e(Caches, "cache.<cache>.tlbe.accesses", Counter, "lookups", "Lookups of lines holding POM-TLB entries (the MMU's reads and fills; never in the L1s, which the MMU's path skips).").only("`pomtlb.enabled=true`"),
        e(Caches, "cache.<cache>.tlbe.misses", Counter, "lookups", "Lookups of POM-TLB lines that missed.").only("`pomtlb.enabled=true`"),
        e(Caches, "cache.<cache>.tlbe.miss_rate", Ratio, "fraction", "`tlbe.misses` / `tlbe.accesses`.").only("`pomtlb.enabled=true`"),
    ]
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_back_marks_and_victims_carry_dirt() {
        // 2 sets x 2 ways.
        let mut c = Cache {
            arr: SetAssoc::new(2, 2, Policy::Lru, 1),
            latency: 4,
            energy_nj: 0.0,
            counters: Default::default(),
            observed: false,
            prefetched: false,
            way_masks: Vec::new(),
            prof: None,
        };
        assert!(!c.access(0, LineKind::Data, false));
        assert!(c.fill(0, LineKind::Data, false, 0).is_none());
        assert!(c.access(0, LineKind::Data, true));
        assert!(c.fill(2, LineKind::PageTable, false, 0).is_none());
        let v = c.fill(4, LineKind::Data, false, 0).unwrap();
        assert_eq!(v, Victim { line: 0, dirty: true, kind: LineKind::Data });
        assert_eq!(c.counters.misses, [1, 0, 0]);
    }
}
