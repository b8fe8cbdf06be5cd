//! Elastic cuckoo page tables (ECH; Skarlatos et al., ASPLOS'20), a comparator of the
//! flattening paper: hashed page tables whose lookups are parallel reads instead of a pointer
//! chase. Per address space and page size, a d-ary cuckoo hash table of 64-byte lines, each
//! holding the entries of 8 consecutive pages (a cluster); every way an array of lines in
//! simulated physical memory. Alongside, the cuckoo walk tables (CWTs): per 2 MB and per
//! 1 GB region, which page sizes map it, which the MMU caches in its cuckoo walk caches (the
//! walk itself is in `translate::walker`).
//!
//! The OS keeps its radix tree as its own record of the mappings (as Linux's software walk
//! does); the hashed tables mirror which clusters exist, updated on every map and unmap, so
//! their occupancy, their resizing and the physical lines a walk reads are those of a real
//! elastic cuckoo table. Entries' contents (frames, A/D bits) are read from the radix leaf.
//!
//! Elastic resizing (the ECPT paper's §4): when a table is fuller than its load factor, a
//! table `growth` times larger is allocated and the old one is migrated gradually, a few
//! lines per insertion. Way `w` keeps a pointer below which its old lines have moved: a key
//! whose old position in way `w` is below the pointer lives in the new table's way `w`, so a
//! lookup still reads one line per way.

use crate::arch::addr::Frame;
use crate::os::phys::PhysMem;
use crate::rng::Rng;
use std::collections::HashMap;

use crate::param::{component, Limit};

component! {
    /// Elastic cuckoo page tables (`ech.*`).
    EchParams {
        enabled: bool = false; "enabled"; None; "elastic cuckoo page tables (ECH; Skarlatos et al., ASPLOS'20), a comparator of the flattening paper: per page size a d-ary elastic cuckoo hash table of 8-entry lines, walked by reading every way a page could be in at once; cuckoo walk caches of which page sizes map a region say which tables to read (native, pt.format=radix4; the OS's radix tree stays its own record)";
        ways: u64 = 3; "ways"; Some(Limit::IntRange(1, 8)); "ECH: ways (d) of each hashed table, read in parallel by a walk";
        slots: u64 = 16384; "slots"; Some(Limit::IntRange(64, 1 << 24)); "ECH: lines per way of a new table (a power of two; the ECPT paper's initial 16 K)";
        load_factor: f64 = 0.6; "load_factor"; Some(Limit::Real(1.0)); "ECH: occupancy above which a table grows (elastic resizing; the ECPT paper's 0.6)";
        growth: u64 = 4; "growth"; Some(Limit::IntRange(2, 16)); "ECH: how many times larger a grown table is (a power of two)";
        pmd_cwc_entries: u64 = 16; "pmd_cwc.entries"; Some(Limit::Int(4096)); "ECH: entries of the cuckoo walk cache of 2 MB regions (fully associative; says whether a region holds 4 KB pages or a 2 MB page, and its way)";
        pud_cwc_entries: u64 = 2; "pud_cwc.entries"; Some(Limit::Int(4096)); "ECH: entries of the cuckoo walk cache of 1 GB regions (which page sizes a region holds)";
    }
    check(p, key) {
        if p.enabled {
            if !p.slots.is_power_of_two() || !p.growth.is_power_of_two() {
                return Err(crate::param::invalid(key("slots"), "ech.slots and ech.growth must be powers of two"));
            }
            if p.load_factor <= 0.0 || p.load_factor.is_nan() {
                return Err(crate::param::invalid(key("load_factor"), "must be above 0"));
            }
        }
        Ok(())
    }
}

impl EchParams {
    /// The tables' geometry, if `ech.enabled`.
    pub fn geometry(&self) -> Option<EchGeometry> {
        self.enabled.then_some(EchGeometry {
            ways: self.ways as usize,
            slots: self.slots as usize,
            load_factor: self.load_factor,
            growth: self.growth as usize,
        })
    }
}

/// Parameters (`ech.*`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EchGeometry {
    /// Ways (d): parallel reads per lookup of one table.
    pub ways: usize,
    /// Lines per way of a new table (a power of two).
    pub slots: usize,
    /// Occupancy (of all ways) above which a table starts to grow.
    pub load_factor: f64,
    /// How many times larger a grown table is (a power of two).
    pub growth: usize,
}

/// Displacements an insertion tries before it forces the table to grow.
const MAX_KICKS: usize = 64;
/// Old lines each way migrates per insertion while a table grows.
const MIGRATE_PER_INSERT: usize = 4;
const EMPTY: u64 = u64::MAX;

/// One size of a table: `ways` arrays of `slots` lines.
struct Generation {
    slots: usize,
    keys: Vec<Box<[u64]>>,
    vals: Vec<Box<[u64]>>,
    /// Per way, the 4 KB frames holding its lines, in order, and whether they are one
    /// contiguous block (else single frames).
    frames: Vec<Vec<Frame>>,
    contiguous: Vec<bool>,
}

/// Counters of one table's life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CuckooStats {
    /// Tables grown.
    pub resizes: u64,
    /// Keys displaced by insertions.
    pub kicks: u64,
    /// Ways that got no contiguous block and were placed in scattered 4 KB frames.
    pub scattered_ways: u64,
}

/// An elastic d-ary cuckoo hash table of lines in simulated physical memory, mapping a key to
/// a value (here: a cluster to how many of its pages are mapped, or a region to what maps it).
pub struct Cuckoo {
    ways: usize,
    load_factor: f64,
    growth: usize,
    cur: Generation,
    /// While growing: the old table, and per way the first old line not yet migrated.
    old: Option<(Generation, Vec<usize>)>,
    len: usize,
    rng: Rng,
    pub stats: CuckooStats,
}

/// Where a key lives: its way, and the physical line (address >> 6) it occupies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub way: usize,
    pub line: u64,
}

#[inline]
fn hash(key: u64, way: usize) -> u64 {
    // SplitMix64's finalizer on the key mixed with a per-way seed: independent hashes whose
    // low bits index a way of any power-of-two size (so a line's new position when the table
    // grows is the same hash, masked wider).
    let mut z = key ^ (way as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Generation {
    fn new(phys: &mut PhysMem, ways: usize, slots: usize, stats: &mut CuckooStats) -> Generation {
        let pages = (slots * 64).div_ceil(4096);
        let order = pages.next_power_of_two().trailing_zeros() as u8;
        let (mut frames, mut contiguous) = (Vec::new(), Vec::new());
        for _ in 0..ways {
            match phys.alloc(order) {
                Some(f) => {
                    frames.push((0..1u64 << order).map(|i| Frame(f.0 + i)).collect());
                    contiguous.push(true);
                }
                None => {
                    // ECH needs large contiguous blocks (the flattening paper's objection);
                    // without one the way's lines are spread over single frames, as if the OS
                    // had somewhere to put them, and the count says how often.
                    stats.scattered_ways += 1;
                    frames.push((0..pages).map_while(|_| phys.alloc_page()).collect());
                    contiguous.push(false);
                }
            }
        }
        let keys = (0..ways).map(|_| vec![EMPTY; slots].into_boxed_slice()).collect();
        let vals = (0..ways).map(|_| vec![0; slots].into_boxed_slice()).collect();
        Generation { slots, keys, vals, frames, contiguous }
    }

    fn line(&self, way: usize, slot: usize) -> u64 {
        // (A scattered way short of frames, memory being exhausted, wraps over the frames it got.)
        let f = &self.frames[way];
        let frame = if f.is_empty() { 0 } else { f[(slot >> 6) % f.len()].0 };
        (frame << 6) | (slot as u64 & 63)
    }

    fn free(self, phys: &mut PhysMem) {
        for (f, contiguous) in self.frames.into_iter().zip(self.contiguous) {
            if contiguous {
                phys.free(f[0], f.len().trailing_zeros() as u8);
            } else {
                for frame in f {
                    phys.free_page(frame);
                }
            }
        }
    }

    fn bytes(&self) -> u64 {
        self.frames.iter().map(|f| f.len() as u64 * 4096).sum()
    }
}

impl Cuckoo {
    pub fn new(phys: &mut PhysMem, p: &EchGeometry, seed: u64) -> Cuckoo {
        let mut stats = CuckooStats::default();
        let cur = Generation::new(phys, p.ways, p.slots, &mut stats);
        Cuckoo { ways: p.ways, load_factor: p.load_factor, growth: p.growth, cur, old: None, len: 0, rng: Rng::new(seed), stats }
    }

    /// Keys stored.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn ways(&self) -> usize {
        self.ways
    }

    /// Bytes of simulated memory the table holds (both tables while it grows).
    pub fn bytes(&self) -> u64 {
        self.cur.bytes() + self.old.as_ref().map_or(0, |(g, _)| g.bytes())
    }

    /// Where a lookup of `key` reads in way `w`: (in the new table?, slot).
    #[inline]
    fn position(&self, key: u64, w: usize) -> (bool, usize) {
        let h = hash(key, w);
        if let Some((old, migrated)) = &self.old {
            let s = h as usize & (old.slots - 1);
            if s >= migrated[w] {
                return (false, s);
            }
        }
        (true, h as usize & (self.cur.slots - 1))
    }

    #[inline]
    fn gen(&self, new: bool) -> &Generation {
        if new {
            &self.cur
        } else {
            &self.old.as_ref().expect("an old position only while growing").0
        }
    }

    fn gen_mut(&mut self, new: bool) -> &mut Generation {
        if new {
            &mut self.cur
        } else {
            &mut self.old.as_mut().expect("an old position only while growing").0
        }
    }

    /// The line a lookup of `key` reads in way `w` (whether or not the key is there).
    #[inline]
    pub fn probe_line(&self, key: u64, w: usize) -> u64 {
        let (new, s) = self.position(key, w);
        self.gen(new).line(w, s)
    }

    /// Where `key` is, and its value.
    #[inline]
    pub fn find(&self, key: u64) -> Option<(Slot, u64)> {
        (0..self.ways).find_map(|w| {
            let (new, s) = self.position(key, w);
            let g = self.gen(new);
            (g.keys[w][s] == key).then(|| (Slot { way: w, line: g.line(w, s) }, g.vals[w][s]))
        })
    }

    /// Set `key`'s value (inserting it if absent).
    pub fn set(&mut self, phys: &mut PhysMem, key: u64, val: u64) {
        debug_assert_ne!(key, EMPTY);
        for w in 0..self.ways {
            let (new, s) = self.position(key, w);
            if self.gen(new).keys[w][s] == key {
                self.gen_mut(new).vals[w][s] = val;
                return;
            }
        }
        self.migrate_some(phys);
        self.len += 1;
        if self.old.is_none() && self.len as f64 > self.load_factor * (self.ways * self.cur.slots) as f64 {
            self.grow(phys);
        }
        self.insert(phys, key, val);
    }

    /// Change the value of a key that is there (no memory needed); false if it is not.
    pub fn replace(&mut self, key: u64, val: u64) -> bool {
        for w in 0..self.ways {
            let (new, s) = self.position(key, w);
            let g = self.gen_mut(new);
            if g.keys[w][s] == key {
                g.vals[w][s] = val;
                return true;
            }
        }
        false
    }

    /// Remove `key`; false if it was not there.
    pub fn remove(&mut self, key: u64) -> bool {
        for w in 0..self.ways {
            let (new, s) = self.position(key, w);
            let g = self.gen_mut(new);
            if g.keys[w][s] == key {
                g.keys[w][s] = EMPTY;
                g.vals[w][s] = 0;
                self.len -= 1;
                return true;
            }
        }
        false
    }

    /// Place a key known to be absent (`len` already counts it): a free position in any way,
    /// else displace a random way's occupant and place that one, up to `MAX_KICKS` times;
    /// then grow (or, already growing, finish the migration and grow again) and go on.
    fn insert(&mut self, phys: &mut PhysMem, mut key: u64, mut val: u64) {
        let mut from = usize::MAX;
        loop {
            for _ in 0..MAX_KICKS {
                for w in 0..self.ways {
                    let (new, s) = self.position(key, w);
                    let g = self.gen_mut(new);
                    if g.keys[w][s] == EMPTY {
                        g.keys[w][s] = key;
                        g.vals[w][s] = val;
                        return;
                    }
                }
                let mut w = self.rng.below(self.ways as u64) as usize;
                if w == from {
                    w = (w + 1) % self.ways;
                }
                let (new, s) = self.position(key, w);
                let g = self.gen_mut(new);
                (key, g.keys[w][s]) = (g.keys[w][s], key);
                (val, g.vals[w][s]) = (g.vals[w][s], val);
                from = w;
                self.stats.kicks += 1;
            }
            if self.old.is_some() {
                self.finish_migration(phys);
            }
            self.grow(phys);
        }
    }

    /// Start growing: a table `growth` times larger becomes current; the old one migrates.
    fn grow(&mut self, phys: &mut PhysMem) {
        debug_assert!(self.old.is_none());
        let slots = self.cur.slots * self.growth;
        let new = Generation::new(phys, self.ways, slots, &mut self.stats);
        let old = std::mem::replace(&mut self.cur, new);
        self.old = Some((old, vec![0; self.ways]));
        self.stats.resizes += 1;
    }

    /// Move the next few old lines of each way to the new table; free the old table once all
    /// have moved.
    fn migrate_some(&mut self, phys: &mut PhysMem) {
        if self.old.is_none() {
            return;
        }
        for w in 0..self.ways {
            for _ in 0..MIGRATE_PER_INSERT {
                let Some((old, migrated)) = &mut self.old else { return };
                if migrated[w] == old.slots {
                    break;
                }
                let s = migrated[w];
                let (key, val) = (old.keys[w][s], old.vals[w][s]);
                old.keys[w][s] = EMPTY;
                migrated[w] += 1;
                if key != EMPTY {
                    self.insert(phys, key, val);
                }
            }
        }
        if let Some((old, migrated)) = &self.old {
            if migrated.iter().all(|&m| m == old.slots) {
                let (old, _) = self.old.take().expect("checked");
                old.free(phys);
            }
        }
    }

    fn finish_migration(&mut self, phys: &mut PhysMem) {
        while self.old.is_some() {
            self.migrate_some(phys);
        }
    }

    /// Every (key, value), in no particular order (for checks).
    pub fn entries(&self) -> Vec<(u64, u64)> {
        let gens = std::iter::once(&self.cur).chain(self.old.as_ref().map(|(g, _)| g));
        gens.flat_map(|g| g.keys.iter().zip(&g.vals).flat_map(|(k, v)| k.iter().zip(v.iter()).filter(|(&k, _)| k != EMPTY).map(|(&k, &v)| (k, v)))).collect()
    }
}

/// Page sizes, as ECH's tables are indexed: 0 = 4 KB, 1 = 2 MB, 2 = 1 GB.
pub const SIZES: usize = 3;
/// log2 of each size's page.
const SHIFT: [u32; SIZES] = [12, 21, 30];

/// A cluster key: the 8-page group of `va`'s page of size `size`.
#[inline]
pub fn cluster(va: u64, size: usize) -> u64 {
    va >> (SHIFT[size] + 3)
}

/// What maps a region, as a CWT entry holds it: mapped 4 KB pages (bits 0-20), 2 MB pages
/// (bits 21-31), 1 GB pages (bits 32-33).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegionInfo(pub u64);

impl RegionInfo {
    const FIELD: [(u32, u64); SIZES] = [(0, (1 << 21) - 1), (21, (1 << 11) - 1), (32, 3)];

    pub fn count(self, size: usize) -> u64 {
        let (shift, mask) = Self::FIELD[size];
        (self.0 >> shift) & mask
    }

    fn add(self, size: usize, delta: i64) -> RegionInfo {
        let (shift, _) = Self::FIELD[size];
        RegionInfo((self.0 as i64 + (delta << shift)) as u64)
    }

    /// Page sizes present, a bit each (bit `size`).
    pub fn sizes(self) -> u8 {
        (0..SIZES).filter(|&s| self.count(s) > 0).fold(0, |m, s| m | 1 << s)
    }
}

/// One address space's elastic cuckoo page tables and cuckoo walk tables.
pub struct EchSpace {
    /// Per page size: clusters present, valued by how many of their 8 pages are mapped.
    pub pages: [Cuckoo; SIZES],
    /// CWTs: per 2 MB region (PMD-CWT) and per 1 GB region (PUD-CWT), a [`RegionInfo`].
    pub pmd_cwt: Cuckoo,
    pub pud_cwt: Cuckoo,
}

impl EchSpace {
    pub fn new(phys: &mut PhysMem, p: &EchGeometry, seed: u64) -> EchSpace {
        EchSpace {
            pages: std::array::from_fn(|s| Cuckoo::new(phys, p, seed ^ (s as u64 + 1))),
            pmd_cwt: Cuckoo::new(phys, p, seed ^ 0x10),
            pud_cwt: Cuckoo::new(phys, p, seed ^ 0x20),
        }
    }

    /// A page of `size` at `va` was mapped: its cluster and the CWT entries of its regions
    /// count it (a table may grow).
    pub fn mapped(&mut self, phys: &mut PhysMem, va: u64, size: usize) {
        self.update(Some(phys), va, size, 1);
    }

    /// A page of `size` at `va` was unmapped (no memory is needed).
    pub fn unmapped(&mut self, va: u64, size: usize) {
        self.update(None, va, size, -1);
    }

    fn update(&mut self, mut phys: Option<&mut PhysMem>, va: u64, size: usize, delta: i64) {
        fn put(t: &mut Cuckoo, phys: &mut Option<&mut PhysMem>, key: u64, val: u64) {
            if val == 0 {
                t.remove(key);
            } else if !t.replace(key, val) {
                t.set(phys.as_deref_mut().expect("only a mapping adds a key"), key, val);
            }
        }
        let t = &mut self.pages[size];
        let key = cluster(va, size);
        let n = t.find(key).map_or(0, |(_, v)| v) as i64 + delta;
        debug_assert!((0..=8).contains(&n), "cluster count {n}");
        put(t, &mut phys, key, n.max(0) as u64);
        for (cwt, shift) in [(&mut self.pmd_cwt, 21), (&mut self.pud_cwt, 30)] {
            if SHIFT[size] > shift {
                // A 1 GB page has no PMD-CWT entry: the PUD-CWT says what maps it.
                continue;
            }
            let region = va >> shift;
            let info = RegionInfo(cwt.find(region).map_or(0, |(_, v)| v)).add(size, delta);
            put(cwt, &mut phys, region, info.0);
        }
    }

    /// What maps the 2 MB region of `va` (PMD-CWT) and the 1 GB region (PUD-CWT).
    pub fn pmd_info(&self, va: u64) -> RegionInfo {
        RegionInfo(self.pmd_cwt.find(va >> 21).map_or(0, |(_, v)| v))
    }

    pub fn pud_info(&self, va: u64) -> RegionInfo {
        RegionInfo(self.pud_cwt.find(va >> 30).map_or(0, |(_, v)| v))
    }

    /// Page sizes with any mapping in the address space, a bit each.
    pub fn sizes(&self) -> u8 {
        (0..SIZES).filter(|&s| !self.pages[s].is_empty()).fold(0, |m, s| m | 1 << s)
    }

    pub fn bytes(&self) -> u64 {
        self.pages.iter().chain([&self.pmd_cwt, &self.pud_cwt]).map(Cuckoo::bytes).sum()
    }

    pub fn stats(&self) -> CuckooStats {
        let mut s = CuckooStats::default();
        for t in self.pages.iter().chain([&self.pmd_cwt, &self.pud_cwt]) {
            s.resizes += t.stats.resizes;
            s.kicks += t.stats.kicks;
            s.scattered_ways += t.stats.scattered_ways;
        }
        s
    }
}

/// Every key of a table against a reference map (for tests).
pub fn check_against(t: &Cuckoo, reference: &HashMap<u64, u64>) -> Result<(), String> {
    if t.len() != reference.len() {
        return Err(format!("{} keys, reference {}", t.len(), reference.len()));
    }
    for (&k, &v) in reference {
        match t.find(k) {
            Some((_, got)) if got == v => {}
            other => return Err(format!("key {k}: {other:?}, reference {v}")),
        }
    }
    let mut all = t.entries();
    all.sort_unstable();
    let before = all.len();
    all.dedup_by_key(|e| e.0);
    if all.len() != before || all.len() != reference.len() {
        return Err("a key is stored twice or a stale copy remains".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(slots: usize) -> EchGeometry {
        EchGeometry { ways: 3, slots, load_factor: 0.6, growth: 4 }
    }

    /// The cuckoo table against a `HashMap` on a random stream of sets and removes, small
    /// enough to grow several times: every key findable with its value at every step's end,
    /// each stored once, the old table freed once migrated.
    #[test]
    fn elastic_cuckoo_table_matches_a_map() {
        let mut phys = PhysMem::new(1 << 30);
        let free0 = phys.free_frames();
        let mut t = Cuckoo::new(&mut phys, &params(64), 7);
        let mut reference = HashMap::new();
        let mut rng = Rng::new(3);
        for step in 0..20_000 {
            let key = rng.below(6_000);
            if rng.below(4) == 0 {
                assert_eq!(t.remove(key), reference.remove(&key).is_some(), "step {step}");
            } else {
                let v = rng.below(100);
                t.set(&mut phys, key, v);
                reference.insert(key, v);
            }
            if step % 997 == 0 {
                check_against(&t, &reference).unwrap();
            }
        }
        check_against(&t, &reference).unwrap();
        assert!(t.stats.resizes >= 2, "{:?}", t.stats);
        assert!(t.stats.kicks > 0);
        t.finish_migration(&mut phys);
        check_against(&t, &reference).unwrap();
        assert_eq!(phys.free_frames() + t.bytes() / 4096, free0, "only the current table is held");
    }

    /// A key is read in one line per way, also while the table grows (elastic resizing's
    /// point): the line `find` reports is one of the lines `probe_line` gives.
    #[test]
    fn a_lookup_reads_one_line_per_way_while_growing() {
        let mut phys = PhysMem::new(1 << 30);
        let mut t = Cuckoo::new(&mut phys, &params(64), 1);
        let mut grew_mid_way = false;
        for k in 0..500u64 {
            t.set(&mut phys, k, 1);
            grew_mid_way |= t.old.is_some();
            for j in (0..=k).step_by(7) {
                let (slot, _) = t.find(j).unwrap();
                assert_eq!(t.probe_line(j, slot.way), slot.line);
            }
        }
        assert!(grew_mid_way);
    }

    #[test]
    fn clusters_and_regions_follow_the_mappings() {
        let mut phys = PhysMem::new(1 << 30);
        let mut e = EchSpace::new(&mut phys, &params(64), 5);
        let base = 0x7f00_0000_0000u64;
        for i in 0..10 {
            e.mapped(&mut phys, base + i * 4096, 0);
        }
        e.mapped(&mut phys, base + (4 << 20), 1);
        assert_eq!((e.pages[0].len(), e.pages[1].len()), (2, 1), "pages 0-7 and 8-9; one 2 MB cluster");
        assert_eq!(e.pmd_info(base).count(0), 10);
        assert_eq!(e.pmd_info(base + (4 << 20)).sizes(), 0b10);
        assert_eq!(e.pud_info(base).sizes(), 0b11);
        for i in 0..10 {
            e.unmapped(base + i * 4096, 0);
        }
        assert_eq!((e.pages[0].len(), e.pmd_cwt.len(), e.pud_info(base).sizes()), (0, 1, 0b10));
        assert_eq!(e.sizes(), 0b10);
    }
}
