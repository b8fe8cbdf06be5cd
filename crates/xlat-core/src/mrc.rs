//! Miss-ratio curves in one pass: Mattson's stack algorithm, per set.
//!
//! An LRU set of `w` ways holds the `w` most recently used keys of the set, whatever `w` is
//! (the inclusion property). So one recency stack per set answers for every associativity
//! at once: a reference to the key at depth `d` of its set's stack (0 = most recent) hits
//! in every cache of more than `d` ways and misses in the others. A [`StackProfile`] keeps
//! the stacks, `cap` deep, and a histogram of depths; `misses(w)` is then exact for every
//! `w <= cap` with the same set count, from one run.
//!
//! Invalidations (shootdowns, flushes) break plain stacks: the invalidated entry leaves a
//! free way behind in every cache that held it. A **hole** keeps its place: at depth `h` it
//! is a free way in each cache of more than `h` ways. A miss fills the topmost hole (the
//! free way of every cache that has one) instead of pushing everything down; a hit at depth
//! `d` under a hole at `h < d` leaves the hole at `d` (caches of more than `d` ways keep
//! their free way; smaller ones missed and filled theirs). The unit tests check this against
//! one LRU model per associativity, invalidations and flushes included.

/// A key a stack holds: a structure's tag, with its context, packed into 128 bits.
pub type StackKey = u128;

/// A free way left by an invalidation (no structure's key is all ones).
const HOLE: StackKey = StackKey::MAX;

/// Per-set recency stacks `cap` deep and a histogram of the depths of demand references.
#[derive(Clone, Debug)]
pub struct StackProfile {
    sets: usize,
    cap: usize,
    /// `sets * cap` keys: set `s`'s stack is `keys[s * cap..][..lens[s]]`, most recent first.
    keys: Vec<StackKey>,
    lens: Vec<u32>,
    /// `hist[d]`: demand references found at depth `d`; `hist[cap]`: deeper, or not found.
    hist: Depths,
    /// One set deeper than [`LINEAR_MAX`] (a large fully-associative structure): the stack
    /// as last-use times in a counting tree instead of a list, O(log n) per reference.
    deep: Option<Box<DeepStack>>,
}

/// Deepest stack kept as a list (a reference scans and shifts it: O(depth)).
const LINEAR_MAX: usize = 256;

/// The deepest curve a profile makes ([`StackProfile::new`]'s `cap`).
pub const MAX_CAP: usize = 1 << 16;

/// Host memory of a profile's stacks kept as lists, in bytes (a deep one-set stack grows
/// with the keys it sees instead).
pub fn list_bytes(sets: usize, cap: usize) -> u64 {
    if sets == 1 && cap > LINEAR_MAX {
        0
    } else {
        (sets as u64) * (cap as u64) * std::mem::size_of::<StackKey>() as u64
    }
}

/// Most host memory the stacks kept as lists of one structure may take.
pub const MAX_LIST_BYTES: u64 = 1 << 30;

/// One recency stack as last-use times: a key's depth is the number of keys and holes used
/// since it (a Fenwick tree counts them). A hole keeps the time of the key it replaced, so it
/// stays where that key was in the order.
#[derive(Clone, Debug)]
struct DeepStack {
    /// Last-use time of every key in the stack.
    last: std::collections::HashMap<StackKey, u64>,
    /// Times of the holes.
    holes: std::collections::BTreeSet<u64>,
    /// Fenwick tree over times: 1 where a key or a hole was last used.
    tree: Vec<u32>,
    /// Keys and holes in the stack.
    marks: u64,
    /// The next time.
    now: u64,
}

impl DeepStack {
    fn new() -> DeepStack {
        DeepStack { last: Default::default(), holes: Default::default(), tree: vec![0; 1 << 12], marks: 0, now: 0 }
    }

    fn add(&mut self, t: u64, v: i32) {
        let mut i = t as usize + 1;
        while i <= self.tree.len() {
            self.tree[i - 1] = self.tree[i - 1].wrapping_add_signed(v);
            i += i & i.wrapping_neg();
        }
        self.marks = self.marks.wrapping_add_signed(v as i64);
    }

    /// Marks at times `<= t`.
    fn prefix(&self, t: u64) -> u64 {
        let (mut i, mut n) = (t as usize + 1, 0u64);
        while i > 0 {
            n += u64::from(self.tree[i - 1]);
            i &= i - 1;
        }
        n
    }

    /// Depth of `key` (`None`: not in the stack).
    fn depth(&self, key: StackKey) -> Option<usize> {
        self.last.get(&key).map(|&t| (self.marks - self.prefix(t)) as usize)
    }

    /// A time for the next use, renumbering the marks when the tree is full.
    fn tick(&mut self) -> u64 {
        if self.now as usize >= self.tree.len() {
            let mut all: Vec<(u64, Option<StackKey>)> = self.last.iter().map(|(&k, &t)| (t, Some(k))).chain(self.holes.iter().map(|&t| (t, None))).collect();
            all.sort_unstable_by_key(|m| m.0);
            let size = (2 * all.len() + 1024).next_power_of_two();
            self.tree = vec![0; size];
            self.holes.clear();
            self.marks = 0;
            for (i, (_, k)) in all.into_iter().enumerate() {
                match k {
                    Some(k) => {
                        self.last.insert(k, i as u64);
                    }
                    None => {
                        self.holes.insert(i as u64);
                    }
                }
                self.add(i as u64, 1);
            }
            self.now = self.marks;
        }
        self.now += 1;
        self.now - 1
    }

    /// `key` becomes the most recent (see [`StackProfile::touch_at`] for the holes' rule).
    fn touch(&mut self, key: StackKey) {
        let t = self.tick();
        match self.last.get(&key).copied() {
            Some(old) => {
                // The topmost hole above the key takes its place.
                if let Some(&h) = self.holes.range(old + 1..).next_back() {
                    self.holes.remove(&h);
                    self.add(h, -1);
                    self.holes.insert(old);
                } else {
                    self.add(old, -1);
                }
            }
            None => {
                // A miss fills the topmost hole, if any.
                if let Some(h) = self.holes.iter().next_back().copied() {
                    self.holes.remove(&h);
                    self.add(h, -1);
                }
            }
        }
        self.last.insert(key, t);
        self.add(t, 1);
    }

    fn remove(&mut self, key: StackKey) {
        if let Some(t) = self.last.remove(&key) {
            self.holes.insert(t);
        }
    }

    fn clear(&mut self) {
        *self = DeepStack::new();
    }
}

/// A histogram of stack depths: `[d]` demand references found at depth `d`, the last entry
/// those deeper than the stacks go (or not in them). A structure of several stacks (a TLB
/// level's arrays) keeps one for all of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Depths(Vec<u64>);

impl Depths {
    /// For stacks `cap` deep.
    pub fn new(cap: usize) -> Depths {
        Depths(vec![0; cap + 1])
    }

    /// The deepest associativity it answers for.
    pub fn cap(&self) -> usize {
        self.0.len() - 1
    }

    /// Count a demand reference at `depth` (`cap` or more: a miss at every associativity).
    #[inline]
    pub fn count(&mut self, depth: usize) {
        let last = self.0.len() - 1;
        self.0[depth.min(last)] += 1;
    }

    /// Demand references counted.
    pub fn accesses(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Misses of an LRU structure of `ways` ways (1..=`cap`) and the same sets.
    pub fn misses(&self, ways: usize) -> u64 {
        assert!((1..=self.cap()).contains(&ways));
        self.0[ways..].iter().sum()
    }

    /// The counts, by depth.
    pub fn counts(&self) -> &[u64] {
        &self.0
    }

    /// Take away an earlier histogram of the same structure (its counts at the end of warm-up).
    pub fn subtract(&mut self, earlier: &Depths) {
        for (a, b) in self.0.iter_mut().zip(&earlier.0) {
            *a -= b;
        }
    }

    /// Add another histogram of the same depth (another core's structure).
    pub fn add(&mut self, other: &Depths) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a += b;
        }
    }
}

impl StackProfile {
    /// `sets` (a power of two) stacks of up to `cap` keys.
    pub fn new(sets: usize, cap: usize) -> StackProfile {
        assert!(sets.is_power_of_two() && cap > 0);
        if sets == 1 && cap > LINEAR_MAX {
            return StackProfile { sets, cap, keys: Vec::new(), lens: vec![0], hist: Depths::new(cap), deep: Some(Box::new(DeepStack::new())) };
        }
        StackProfile { sets, cap, keys: vec![HOLE; sets * cap], lens: vec![0; sets], hist: Depths::new(cap), deep: None }
    }

    pub fn sets(&self) -> usize {
        self.sets
    }

    /// The deepest associativity it answers for.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// The set of index value `n` (a structure's set-index bits before its mask).
    #[inline]
    pub fn set_of(&self, n: u64) -> usize {
        (n as usize) & (self.sets - 1)
    }

    fn stack(&self, set: usize) -> &[StackKey] {
        &self.keys[set * self.cap..][..self.lens[set] as usize]
    }

    /// Depth of `key` in `set`'s stack (`cap` when it is not there).
    #[inline]
    pub fn depth(&self, set: usize, key: StackKey) -> usize {
        if let Some(d) = &self.deep {
            return d.depth(key).map_or(self.cap, |d| d.min(self.cap));
        }
        self.stack(set).iter().position(|&k| k == key).unwrap_or(self.cap)
    }

    /// `key` becomes the most recent of `set` (a hit, or a fill after a miss).
    pub fn touch(&mut self, set: usize, key: StackKey) {
        let d = self.depth(set, key);
        self.touch_at(set, key, d);
    }

    /// [`Self::touch`] of a key known to be at depth `d` (`cap`: not in the stack).
    pub fn touch_at(&mut self, set: usize, key: StackKey, d: usize) {
        if let Some(deep) = &mut self.deep {
            deep.touch(key);
            return;
        }
        let len = self.lens[set] as usize;
        let base = set * self.cap;
        let s = &mut self.keys[base..base + self.cap];
        // The topmost hole above the key (or anywhere, for a key not in the stack).
        let hole = s[..d.min(len)].iter().position(|&k| k == HOLE);
        match (hole, d < len) {
            // Found, under a hole: the hole moves to the key's old place.
            (Some(h), true) => {
                s.copy_within(0..h, 1);
                s[0] = key;
                s[d] = HOLE;
            }
            // Found: everything above it moves down one.
            (None, true) => {
                s.copy_within(0..d, 1);
                s[0] = key;
            }
            // Not found, a hole to fill: everything above the hole moves down one.
            (Some(h), false) => {
                s.copy_within(0..h, 1);
                s[0] = key;
            }
            // Not found, no hole: the stack grows (the deepest key falls off when full).
            (None, false) => {
                let keep = len.min(self.cap - 1);
                s.copy_within(0..keep, 1);
                s[0] = key;
                self.lens[set] = (keep + 1) as u32;
            }
        }
        self.trim(set);
    }

    /// A demand reference to `key`: counted at its depth, then made the most recent. Returns
    /// the depth.
    #[inline]
    pub fn access(&mut self, set: usize, key: StackKey) -> usize {
        let d = self.depth(set, key);
        self.hist.count(d);
        self.touch_at(set, key, d);
        d
    }

    /// `key` was invalidated: its place becomes a hole.
    pub fn remove(&mut self, set: usize, key: StackKey) {
        if let Some(deep) = &mut self.deep {
            deep.remove(key);
            return;
        }
        let d = self.depth(set, key);
        if d < self.cap {
            self.keys[set * self.cap + d] = HOLE;
            self.trim(set);
        }
    }

    /// Invalidate every key `pred` names, in every set.
    pub fn remove_where(&mut self, mut pred: impl FnMut(StackKey) -> bool) {
        if let Some(deep) = &mut self.deep {
            let gone: Vec<StackKey> = deep.last.keys().copied().filter(|&k| pred(k)).collect();
            gone.into_iter().for_each(|k| deep.remove(k));
            return;
        }
        for set in 0..self.sets {
            let len = self.lens[set] as usize;
            for k in &mut self.keys[set * self.cap..][..len] {
                if *k != HOLE && pred(*k) {
                    *k = HOLE;
                }
            }
            self.trim(set);
        }
    }

    /// Every way of `set` emptied.
    pub fn clear_set(&mut self, set: usize) {
        if let Some(deep) = &mut self.deep {
            deep.clear();
        }
        self.lens[set] = 0;
    }

    /// Every way of every set emptied.
    pub fn clear(&mut self) {
        if let Some(deep) = &mut self.deep {
            deep.clear();
        }
        self.lens.fill(0);
    }

    /// Holes at the bottom of a stack are free ways of every cache deep enough to hold them:
    /// the same as no entry at all.
    fn trim(&mut self, set: usize) {
        let base = set * self.cap;
        let mut len = self.lens[set] as usize;
        while len > 0 && self.keys[base + len - 1] == HOLE {
            len -= 1;
        }
        self.lens[set] = len as u32;
    }

    /// The depths of the demand references ([`Self::access`]) so far.
    pub fn depths(&self) -> &Depths {
        &self.hist
    }

    pub fn depths_mut(&mut self) -> &mut Depths {
        &mut self.hist
    }

    /// Misses of an LRU structure of `ways` ways (1..=`cap`) and the same sets.
    pub fn misses(&self, ways: usize) -> u64 {
        self.hist.misses(ways)
    }
}

/// One structure's miss-ratio curve over every core ([`crate::Machine::curves`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Curve {
    /// Its name, as its statistics have it: `tlb.l2`, `pwc.l2`, `cache.l1d`.
    pub structure: String,
    /// (sets, ways) of each array as configured (a TLB level may have several, e.g. one
    /// for 1 GB pages); the curve varies the ways of each, keeping the sets.
    pub arrays: Vec<(usize, usize)>,
    /// Whether every point is what a separate run at that size counts (LRU, and an input that
    /// does not depend on the structure's own size: see docs/performance.md).
    pub exact: bool,
    /// Lookups by stack depth, summed over cores.
    pub depths: Depths,
}

/// Add `d` to the curve named `structure` in `out` (another core's), or start it.
pub fn merge(out: &mut Vec<Curve>, structure: String, arrays: Vec<(usize, usize)>, exact: bool, d: &Depths) {
    match out.iter_mut().find(|c| c.structure == structure) {
        Some(c) => {
            c.depths.add(d);
            c.exact &= exact;
        }
        None => out.push(Curve { structure, arrays, exact, depths: d.clone() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An LRU cache of `ways` ways per set, as plain lists: the reference model.
    struct Lru {
        ways: usize,
        sets: Vec<Vec<StackKey>>,
        misses: u64,
    }

    impl Lru {
        fn access(&mut self, set: usize, key: StackKey) {
            let s = &mut self.sets[set];
            match s.iter().position(|&k| k == key) {
                Some(i) => {
                    s.remove(i);
                }
                None => {
                    self.misses += 1;
                    if s.len() == self.ways {
                        s.pop();
                    }
                }
            }
            s.insert(0, key);
        }
    }

    fn rng(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    /// Every associativity's misses from one stack pass equal a separate LRU model's, with
    /// invalidations of single keys, of key ranges, and whole flushes mixed in.
    #[test]
    fn one_pass_equals_an_lru_model_per_associativity() {
        // (The last two: one set deeper than LINEAR_MAX, kept as a tree of last-use times, and
        // small enough a tree that it renumbers its times many times over.)
        for (sets, cap, keys, seed) in [(1, 8, 12, 1u64), (1, 16, 40, 2), (4, 6, 30, 3), (8, 4, 100, 4), (2, 32, 70, 5), (1, 300, 420, 6), (1, 400, 380, 7)] {
            let mut seed = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            let mut prof = StackProfile::new(sets, cap);
            let mut models: Vec<Lru> = (1..=cap).map(|w| Lru { ways: w, sets: vec![Vec::new(); sets], misses: 0 }).collect();
            for _ in 0..20_000 {
                let r = rng(&mut seed);
                let key = (r >> 8) % keys;
                let set = prof.set_of(key);
                match r % 64 {
                    0..=3 => {
                        prof.remove(set, key as StackKey);
                        for m in &mut models {
                            m.sets[set].retain(|&k| k != key as StackKey);
                        }
                    }
                    4 => {
                        let lo = (r >> 20) % keys;
                        prof.remove_where(|k| k >= lo as StackKey && k < lo as StackKey + 5);
                        for m in &mut models {
                            for s in &mut m.sets {
                                s.retain(|&k| !(k >= lo as StackKey && k < lo as StackKey + 5));
                            }
                        }
                    }
                    5 if r % 7 == 0 => {
                        prof.clear();
                        for m in &mut models {
                            m.sets.iter_mut().for_each(Vec::clear);
                        }
                    }
                    _ => {
                        prof.access(set, key as StackKey);
                        for m in &mut models {
                            m.access(set, key as StackKey);
                        }
                    }
                }
            }
            for m in &models {
                assert_eq!(prof.misses(m.ways), m.misses, "{sets} sets, {} ways", m.ways);
            }
        }
    }

    /// The worked example of Mattson et al.: the stack distances of a short string.
    #[test]
    fn stack_distances_of_a_short_string() {
        let mut p = StackProfile::new(1, 4);
        let depths: Vec<usize> = [1u128, 2, 3, 1, 2, 4, 1, 3].iter().map(|&k| p.access(0, k)).collect();
        assert_eq!(depths, vec![4, 4, 4, 2, 2, 4, 2, 3]);
        // 1 way: every reference misses; 3 ways: the four first uses and the 4's push-out of 3.
        assert_eq!((p.misses(1), p.misses(2), p.misses(3), p.misses(4)), (8, 8, 5, 4));
    }
}
