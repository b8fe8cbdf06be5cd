//! CSALT (seed 003, §5.1 of the thesis): TLB-aware partitioning of a cache's ways between
//! data lines and TLB-entry lines (the POM-TLB's sets). A cache with K ways gives N ways to
//! data and K − N to TLB entries; every set uses the same N. Lookups search all ways; a
//! data fill evicts the least recently used line among ways `0..N` and a TLB-entry fill
//! among `N..K`, whatever the victims hold (no lines move when N changes).
//!
//! Each cache profiles its accesses per type as LRU stack distances (K + 1 counters per
//! type: hits at each stack position, then misses) and, every `csalt.epoch` accesses,
//! picks the N that maximizes the hits the two types would get (Eq. 5.1; CSALT-CD weighs
//! each type by what a hit of that type saves, Eq. 5.9). Page-table lines count as data:
//! CSALT knows two types.
//!
//! Two profilers (`csalt.profiler`): `atd`, an auxiliary tag directory per type (true LRU,
//! K ways, on every set or a sample of them), which measures what each type would hit with
//! n ways to itself; and `global_pos`, the hit line's position in the real set's LRU order,
//! the thesis's literal hardware (counters only, a heuristic).

use super::{oldest, LineKind, Ptp, ReplacementPolicy, SetView, Stamped};
use crate::param::CsaltProfiler;

use crate::param::{bound, component, Limit};

component! {
    /// CSALT's cache partitioning (`csalt.*`).
    CsaltParams {
        epoch: u64 = 256000; "epoch"; Some(Limit::Int(bound::INTERVAL)); "CSALT: accesses to a cache between its repartitionings (the thesis's 256K, written 256,000 once)";
        profiler: crate::param::CsaltProfiler = crate::param::CsaltProfiler::Atd; "profiler"; None; "CSALT stack-distance profiles: atd (an auxiliary LRU tag directory per type: the hits each type would get with n ways to itself) or global_pos (the hit line's position in the real set's LRU order: the thesis's counters-only hardware, a heuristic)";
        atd_sets: u64 = 0; "atd_sets"; Some(Limit::Int(1 << 24)); "CSALT with csalt.profiler=atd: sets sampled per cache (0: every set)";
        page_tables: crate::param::CsaltPageTables = crate::param::CsaltPageTables::Data; "page_tables"; None; "which CSALT partition page-table lines belong to: data (the thesis: CSALT knows two types, data and POM-TLB entries) or translation (with the POM-TLB's lines; an xlat variant that tests what the data partition costs walks)";
        formula: crate::param::CsaltFormula = crate::param::CsaltFormula::Printed; "formula"; None; "CSALT-CD's L2 weights: printed (Eqs. 5.3-5.8 as the thesis prints them) or corrected (without the leading D_Tr and D_Dat terms they count twice)";
        ptp: bool = false; "ptp"; None; "CSALT with the flattening paper's page-table prioritization in its data ways: a data fill's victim is chosen as policy=ptp chooses it (ptp.*), among the ways CSALT gives data; both mechanisms in one cache (an xlat combination, not in either paper)";
    }
    check(p, key) {
        if p.epoch == 0 {
            return Err(crate::param::invalid(key("epoch"), "must be at least 1"));
        }
        Ok(())
    }
}

/// One type's stack-distance profile: `hits[i]` hits at LRU stack position i (0 = most
/// recent), `hits[K]` misses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    pub counts: Vec<u64>,
}

impl Profile {
    fn new(ways: usize) -> Profile {
        Profile { counts: vec![0; ways + 1] }
    }

    /// Hits a cache with the first `n` positions would get.
    fn hits_within(&self, n: usize) -> u64 {
        self.counts[..n].iter().sum()
    }
}

/// The marginal utility of giving `n` of `ways` ways to data (Eq. 5.1, weighted as Eq. 5.9):
/// `s_dat * Σ_{i<n} D_LRU(i) + s_tr * Σ_{j<K−n} TLB_LRU(j)`.
pub fn utility(data: &Profile, tlb: &Profile, ways: usize, n: usize, s_dat: f64, s_tr: f64) -> f64 {
    s_dat * data.hits_within(n) as f64 + s_tr * tlb.hits_within(ways - n) as f64
}

/// The partition Alg. 1 picks: the `n` in `1..=K−1` of greatest utility (data and TLB
/// entries each keep at least one way); among equals the current one if it is one of them,
/// else the smallest.
pub fn choose(data: &Profile, tlb: &Profile, ways: usize, current: usize, s_dat: f64, s_tr: f64) -> usize {
    let mu: Vec<f64> = (1..ways).map(|n| utility(data, tlb, ways, n, s_dat, s_tr)).collect();
    let best = mu.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if (1..ways).contains(&current) && mu[current - 1] == best {
        return current;
    }
    1 + mu.iter().position(|&m| m == best).unwrap_or(0)
}

/// Auxiliary tag directories: per sampled set and type, K tags in recency order.
struct Atd {
    ways: usize,
    /// Every `stride`-th set is sampled.
    stride: usize,
    /// Per sampled set, per type: tags, most recent first (`u64::MAX`: empty).
    tags: Vec<u64>,
}

impl Atd {
    fn new(sets: usize, ways: usize, sampled: usize) -> Atd {
        let sampled = if sampled == 0 { sets } else { sampled.min(sets) };
        let stride = (sets / sampled).max(1);
        Atd { ways, stride, tags: vec![u64::MAX; sets.div_ceil(stride) * 2 * ways] }
    }

    /// An access to `line` of type `tlb` in `set`: its stack distance (`K` for a miss), or
    /// `None` when the set is not sampled.
    fn access(&mut self, set: usize, line: u64, tlb: bool) -> Option<usize> {
        if set % self.stride != 0 {
            return None;
        }
        let at = ((set / self.stride) * 2 + tlb as usize) * self.ways;
        let stack = &mut self.tags[at..at + self.ways];
        let pos = stack.iter().position(|&t| t == line);
        let end = pos.unwrap_or(self.ways - 1);
        stack.copy_within(0..end, 1);
        stack[0] = line;
        Some(pos.unwrap_or(self.ways))
    }
}

/// The CSALT replacement policy of one cache: true LRU within each type's ways, the
/// profiles, and the partition.
pub struct Csalt {
    lru: Stamped,
    ways: usize,
    /// N: data fills evict among ways `0..N`, TLB-entry fills among `N..K`.
    pub data_ways: usize,
    pub data: Profile,
    pub tlb: Profile,
    atd: Option<Atd>,
    epoch: u64,
    accesses: u64,
    /// The epoch is over: the memory side repartitions (it knows CSALT-CD's weights).
    pub due: bool,
    /// Epochs ended, and those that changed N.
    pub epochs: u64,
    pub changes: u64,
    /// The weights (S_Dat, S_Tr) of the last repartitioning.
    pub weights: (f64, f64),
    /// `csalt.page_tables=translation`: page-table lines count with the POM-TLB's.
    page_tables_translate: bool,
    /// `csalt.ptp`: data fills choose their victim among the data ways as PTP does.
    pub ptp: Option<Ptp>,
}

impl Csalt {
    /// The two types CSALT tells apart: is `kind` on the translation side (POM-TLB entries,
    /// and page-table lines with `csalt.page_tables=translation`)?
    #[inline]
    fn is_tlb(&self, kind: LineKind) -> bool {
        kind == LineKind::TlbEntry || self.page_tables_translate && kind == LineKind::PageTable
    }

    /// Count page-table lines with the POM-TLB's (`csalt.page_tables=translation`).
    pub fn set_page_tables_translate(&mut self, on: bool) {
        self.page_tables_translate = on;
    }

    pub fn new(sets: usize, ways: usize, profiler: CsaltProfiler, atd_sets: usize, epoch: u64) -> Csalt {
        let atd = (profiler == CsaltProfiler::Atd).then(|| Atd::new(sets, ways, atd_sets));
        Csalt {
            lru: Stamped::lru(),
            ways,
            // "Statically partitioned by half" at the start (§5.1.1).
            data_ways: (ways / 2).max(1),
            data: Profile::new(ways),
            tlb: Profile::new(ways),
            atd,
            epoch,
            accesses: 0,
            due: false,
            epochs: 0,
            changes: 0,
            weights: (1.0, 1.0),
            page_tables_translate: false,
            ptp: None,
        }
    }

    /// A demand access to `line` of `kind` in `set`, seen before the lookup changes the set:
    /// `hit_way` is where it hits (`None`: a miss). Counts its stack distance for its type.
    pub fn on_access(&mut self, set: &SetView, set_index: usize, line: u64, kind: LineKind, hit_way: Option<usize>) {
        let tlb = self.is_tlb(kind);
        let pos = match &mut self.atd {
            Some(atd) => atd.access(set_index, line, tlb),
            None => Some(match hit_way {
                // Position in the set's global LRU order: the valid lines more recent than it.
                Some(w) => set.ages.iter().filter(|&&a| a > set.ages[w]).count(),
                None => self.ways,
            }),
        };
        if let Some(p) = pos {
            let prof = if tlb { &mut self.tlb } else { &mut self.data };
            prof.counts[p] += 1;
        }
        self.accesses += 1;
        if self.accesses % self.epoch == 0 {
            self.due = true;
        }
    }

    /// End the epoch: choose N with weights `s_dat` and `s_tr` (1 and 1 for CSALT-D), and
    /// restart the profiles.
    pub fn repartition(&mut self, s_dat: f64, s_tr: f64) {
        let n = choose(&self.data, &self.tlb, self.ways, self.data_ways, s_dat, s_tr);
        self.changes += (n != self.data_ways) as u64;
        self.data_ways = n;
        self.weights = (s_dat, s_tr);
        self.epochs += 1;
        self.due = false;
        self.data.counts.fill(0);
        self.tlb.counts.fill(0);
    }
}

impl ReplacementPolicy for Csalt {
    super::lru_stamps!();
    #[inline]
    fn on_fill(&mut self, set: &mut SetView, way: usize) {
        self.lru.on_fill(set, way)
    }
    /// The least recently used line of the incoming type's way range.
    fn victim(&mut self, set: &mut SetView) -> usize {
        if self.ways < 2 {
            return oldest(set.ages);
        }
        if self.is_tlb(set.incoming) {
            return self.data_ways + oldest(&set.ages[self.data_ways..self.ways]);
        }
        let n = self.data_ways;
        if let Some(w) = self.ptp.as_mut().and_then(|p| p.unprotected_victim(&set.ages[..n], &set.info[..n])) {
            return w;
        }
        oldest(&set.ages[..n])
    }
}

/// What CSALT-CD's weights are computed from: access latencies in cycles and the last
/// epoch's hit rates (§5.1.2; names as the thesis's).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Criticality {
    pub l1t_acc: f64,
    pub l2t_acc: f64,
    pub l3t_acc: f64,
    pub l1d_acc: f64,
    pub l2d_acc: f64,
    pub l3d_acc: f64,
    pub l3d_hit: f64,
    pub l3t_hit: f64,
    pub pw_acc: f64,
    pub dram_acc: f64,
}

impl Criticality {
    /// The private L2's weights (S_Dat, S_Tr): Eqs. 5.3-5.8 as printed, or `corrected`
    /// without the leading term the printed N_Tr and N_Dat count twice.
    pub fn l2_weights(&self, corrected: bool) -> (f64, f64) {
        let k = self;
        let lead = if corrected { 0.0 } else { 1.0 };
        let d_tr = k.l1t_acc + k.l2t_acc + k.l2d_acc;
        let l3d_miss = 1.0 - k.l3d_hit;
        let n_tr = lead * d_tr
            + k.l3d_hit * (d_tr + k.l3d_acc)
            + l3d_miss * k.l3t_hit * (d_tr + k.l3d_acc + k.l3t_acc)
            + l3d_miss * (1.0 - k.l3t_hit) * (d_tr + k.l3d_acc + k.l3t_acc + k.pw_acc);
        let d_dat = k.l1d_acc + k.l2d_acc;
        let n_dat = lead * d_dat + k.l3d_hit * (d_dat + k.l3d_acc) + l3d_miss * (d_dat + k.l3d_acc + k.dram_acc);
        (n_dat / d_dat, n_tr / d_tr)
    }

    /// The LLC's weights: "obtained in a similar manner" (the thesis gives no equations);
    /// the spec's formal analogue of Eqs. 5.3-5.8 one level down.
    pub fn llc_weights(&self) -> (f64, f64) {
        let k = self;
        let d_dat = k.l1d_acc + k.l2d_acc + k.l3d_acc;
        let d_tr = k.l1t_acc + k.l2t_acc + k.l2d_acc + k.l3d_acc;
        let n_dat = d_dat + k.dram_acc;
        let n_tr = d_tr + k.l3t_hit * k.l3t_acc + (1.0 - k.l3t_hit) * (k.l3t_acc + k.pw_acc);
        (n_dat / d_dat, n_tr / d_tr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(c: &[u64]) -> Profile {
        Profile { counts: c.to_vec() }
    }

    /// Fig. 5.2: K = 8, N = M = 4; MU(4) = 34, MU(5) = 30, MU(6) = 40, MU(7) = 50 and the
    /// ones the thesis leaves out, MU(1) = 48, MU(2) = 47, MU(3) = 48: N = 7.
    #[test]
    fn fig_5_2_chooses_seven_data_ways() {
        let d = profile(&[8, 9, 2, 1, 4, 10, 11, 3, 12]);
        let t = profile(&[5, 1, 0, 8, 15, 1, 10, 7, 12]);
        let mu: Vec<f64> = (1..8).map(|n| utility(&d, &t, 8, n, 1.0, 1.0)).collect();
        assert_eq!(mu, [48.0, 47.0, 48.0, 34.0, 30.0, 40.0, 50.0]);
        assert_eq!(choose(&d, &t, 8, 4, 1.0, 1.0), 7);
    }

    /// Ties keep the current partition when it is among the best, else take the smallest.
    #[test]
    fn ties_keep_the_current_partition() {
        let flat = profile(&[0; 5]);
        assert_eq!(choose(&flat, &flat, 4, 2, 1.0, 1.0), 2);
        assert_eq!(choose(&flat, &flat, 4, 3, 1.0, 1.0), 3);
        let d = profile(&[5, 0, 0, 0, 0]);
        assert_eq!(choose(&d, &flat, 4, 2, 1.0, 1.0), 2, "MU(1) = MU(2) = MU(3) = 5: the current, 2");
        let d = profile(&[0, 5, 0, 0, 0]);
        assert_eq!(choose(&d, &flat, 4, 1, 1.0, 1.0), 2, "MU(1) = 0 < MU(2) = MU(3): the smallest best, 2");
    }

    /// The spec's illustrative inputs (Tab. 6.1 latencies, L3D_hit 0.5, L3T_hit 0.97,
    /// L3T_Acc 150, PW_Acc 500, DRAM_Acc 200): D_Tr = 38, N_Tr = 200.5, S_Tr = 5.28;
    /// D_Dat = 16, N_Dat = 174, S_Dat = 10.9 (printed formulas).
    #[test]
    fn cd_weights_of_the_worked_inputs() {
        let k = Criticality {
            l1t_acc: 9.0,
            l2t_acc: 17.0,
            l3t_acc: 150.0,
            l1d_acc: 4.0,
            l2d_acc: 12.0,
            l3d_acc: 42.0,
            l3d_hit: 0.5,
            l3t_hit: 0.97,
            pw_acc: 500.0,
            dram_acc: 200.0,
        };
        let (s_dat, s_tr) = k.l2_weights(false);
        assert!((s_tr - 200.5 / 38.0).abs() < 1e-9, "{s_tr}");
        assert!((s_dat - 174.0 / 16.0).abs() < 1e-9, "{s_dat}");
        let (c_dat, c_tr) = k.l2_weights(true);
        assert!((c_dat - (s_dat - 1.0)).abs() < 1e-9 && (c_tr - (s_tr - 1.0)).abs() < 1e-9, "corrected drops one");
    }

    /// The ATD profiler against a reference model: per type, a recency list of the tags of
    /// each set; the stack distance is the tag's index (K if absent or deeper).
    #[test]
    fn atd_profile_matches_a_reference_model() {
        let (sets, ways) = (16, 4);
        let mut c = Csalt::new(sets, ways, CsaltProfiler::Atd, 0, 1 << 40);
        let mut model: Vec<Vec<Vec<u64>>> = vec![vec![Vec::new(); 2]; sets];
        let mut want = [vec![0u64; ways + 1], vec![0u64; ways + 1]];
        let mut x = 99u64;
        let ages = [0u32; 4];
        let info = [crate::memory::repl::LineInfo::default(); 4];
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let line = x % 97;
            let set = (line as usize) % sets;
            let kind = if x % 3 == 0 { LineKind::TlbEntry } else { LineKind::Data };
            let t = c.is_tlb(kind) as usize;
            let stack = &mut model[set][t];
            let pos = stack.iter().position(|&l| l == line);
            want[t][pos.filter(|&p| p < ways).unwrap_or(ways)] += 1;
            if let Some(p) = pos {
                stack.remove(p);
            }
            stack.insert(0, line);
            let view = SetView { ages: &mut ages.clone(), info: &info, incoming: kind, index: set };
            c.on_access(&view, set, line, kind, None);
        }
        assert_eq!(c.data.counts, want[0]);
        assert_eq!(c.tlb.counts, want[1]);
    }

    /// Victims come from the incoming type's ways only.
    #[test]
    fn fills_evict_within_their_type_s_ways() {
        let mut c = Csalt::new(1, 4, CsaltProfiler::GlobalPos, 0, 1000);
        c.data_ways = 3;
        let info = [crate::memory::repl::LineInfo::default(); 4];
        let mut ages = [4u32, 1, 3, 2];
        let v = c.victim(&mut SetView { ages: &mut ages, info: &info, incoming: LineKind::Data, index: 0 });
        assert_eq!(v, 1, "LRU of ways 0..3");
        let v = c.victim(&mut SetView { ages: &mut ages, info: &info, incoming: LineKind::TlbEntry, index: 0 });
        assert_eq!(v, 3, "the only TLB way");
        let v = c.victim(&mut SetView { ages: &mut ages, info: &info, incoming: LineKind::PageTable, index: 0 });
        assert_eq!(v, 1, "page-table lines are data to CSALT");
        c.set_page_tables_translate(true);
        let v = c.victim(&mut SetView { ages: &mut ages, info: &info, incoming: LineKind::PageTable, index: 0 });
        assert_eq!(v, 3, "with csalt.page_tables=translation, they take the TLB ways");
    }

    /// `csalt.ptp`: a data fill's victim is PTP's among the data ways (the LRU line that is not
    /// a page-table line), a TLB-entry fill's is unchanged.
    #[test]
    fn with_ptp_data_fills_spare_page_table_lines_within_the_data_ways() {
        use crate::memory::repl::LineInfo;
        let mut c = Csalt::new(1, 4, CsaltProfiler::GlobalPos, 0, 1000);
        c.data_ways = 3;
        let mut ptp = Ptp::new(7);
        ptp.set_probability(1.0);
        c.ptp = Some(ptp);
        let pt = LineInfo { kind: LineKind::PageTable, ..LineInfo::default() };
        let data = LineInfo::default();
        // Way 1 is the data ways' LRU line but holds a page-table line; way 3, older still, is
        // the TLB way's.
        let info = [data, pt, data, data];
        let mut ages = [4u32, 1, 3, 0];
        let v = c.victim(&mut SetView { ages: &mut ages, info: &info, incoming: LineKind::Data, index: 0 });
        assert_eq!(v, 2, "the LRU data line, the page-table line spared");
        let v = c.victim(&mut SetView { ages: &mut ages, info: &info, incoming: LineKind::TlbEntry, index: 0 });
        assert_eq!(v, 3, "TLB-entry fills as before");
        // Every data way a page-table line: the LRU one goes.
        let info = [pt, pt, pt, data];
        let v = c.victim(&mut SetView { ages: &mut ages, info: &info, incoming: LineKind::Data, index: 0 });
        assert_eq!(v, 1);
        // Without csalt.ptp, the page-table line is the victim.
        c.ptp = None;
        let info = [data, pt, data, data];
        let v = c.victim(&mut SetView { ages: &mut ages, info: &info, incoming: LineKind::Data, index: 0 });
        assert_eq!(v, 1);
    }
}
