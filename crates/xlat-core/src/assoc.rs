//! A set-associative array of (key, value) blocks with a pluggable replacement policy: the
//! storage shared by TLBs and data caches.
//!
//! Each set is one contiguous, 64-byte-aligned block of host memory holding its keys, then
//! the policy's state words, then what each way holds, then the values (structure of
//! arrays inside a set). A lookup compares the keys with vector instructions (`lanes`) and
//! touches only the key lines (only the ways rounded up to a multiple of 4). LRU and FIFO
//! over 2 to 25 ways keep the set's order in one word, so a fill reads its victim off it;
//! other policies search the state words. Each run is `stride` long: the ways rounded up
//! to a power of two (at least 4), the extra lanes holding keys that match nothing and
//! stamps no victim search picks. An LRU or FIFO array also remembers the block it last hit
//! or filled, so the next reference to the same page or line skips the search.

use crate::memory::repl::Policy;
use crate::memory::repl::{oldest, AnyPolicy, LineInfo, LineKind, Order, ReplacementPolicy, SetView, WideOrder};
use std::marker::PhantomData;

/// A key that has a reserved "invalid" value, so a way needs no separate valid bit.
pub trait Key: Copy + Eq {
    const INVALID: Self;

    /// The first lane of `keys` that holds `key`. `keys.len()` is a multiple of 4.
    #[inline]
    fn find(keys: &[Self], key: Self) -> Option<usize> {
        keys.iter().position(|&k| k == key)
    }

    /// [`Key::find`], inlined where it is called.
    #[inline(always)]
    fn find_inlined(keys: &[Self], key: Self) -> Option<usize> {
        Self::find(keys, key)
    }
}

impl Key for u64 {
    const INVALID: u64 = u64::MAX;

    #[inline]
    fn find(keys: &[u64], key: u64) -> Option<usize> {
        crate::host::lanes::find_u64(keys, key)
    }

    #[inline(always)]
    fn find_inlined(keys: &[u64], key: u64) -> Option<usize> {
        crate::host::lanes::find_u64(keys, key)
    }
}

/// The state word of a padding lane: no stamp reaches it, so no victim search picks it.
const PAD_AGE: u32 = u32::MAX;

/// One host cache line; sets are whole numbers of them.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct HostLine([u8; 64]);

pub struct SetAssoc<K: Key, V: Copy + Default> {
    sets: usize,
    /// `sets - 1`: a number's low bits select its set.
    set_mask: usize,
    ways: usize,
    /// Lanes per run (a power of two >= ways) and its log2: slot = set * stride + way.
    stride: usize,
    stride_shift: u32,
    /// Lanes a key search covers: the ways rounded up to a multiple of 4 (<= stride), so a
    /// 12- or 24-way set compares 12 or 24 keys, not 16 or 32.
    searched: usize,
    /// Byte offsets inside a set's block, and the block's size.
    ages_at: usize,
    /// State words per set: `stride`, or 2 for an order word.
    state_words: usize,
    info_at: usize,
    vals_at: usize,
    block: usize,
    mem: crate::host::hostmem::HugeBuf<HostLine>,
    policy: AnyPolicy,
    /// What the hot paths run inline, copied out of `policy`.
    fast: Fast,
    /// For `Fast::OrderedLru`/`OrderedFifo` and `WideLru`/`WideFifo`: the geometry of the
    /// order word.
    order: Order,
    wide: WideOrder,
    /// The block last hit or filled (LRU and FIFO only; `K::INVALID` when none): it is the
    /// most recent of its set, so hitting it again changes no replacement state and needs no
    /// search. Consecutive references to one page or line, and a store after a load, are
    /// common. Any other hit or fill replaces it, an invalidation clears it.
    memo_key: K,
    memo_slot: usize,
    _types: PhantomData<(K, V)>,
}

/// Which replacement the hot paths run without dispatching.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fast {
    /// LRU over an order word (see [`crate::memory::repl::Ordered`]).
    OrderedLru,
    /// FIFO over an order word.
    OrderedFifo,
    /// LRU and FIFO over a wide order word (17-25 ways).
    WideLru,
    WideFifo,
    /// LRU or FIFO over stamps.
    Stamped,
    /// Anything else: dispatched through the policy.
    Other,
}

/// A block pushed out by an insertion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Evicted<K, V> {
    pub key: K,
    pub val: V,
    pub kind: LineKind,
}

fn align_up(n: usize, a: usize) -> usize {
    n.div_ceil(a) * a
}

impl<K: Key, V: Copy + Default> SetAssoc<K, V> {
    /// `sets` must be a power of two and `ways` at most 4096 (checked by config validation).
    pub fn new(sets: usize, ways: usize, policy: Policy, seed: u64) -> Self {
        assert!(sets.is_power_of_two() && ways > 0 && ways <= 4096, "geometry {sets}x{ways} must be validated by the configuration");
        assert!(std::mem::align_of::<K>() <= 8 && std::mem::align_of::<V>() <= 8);
        let policy = AnyPolicy::new(policy, sets, ways, seed);
        // (Unused geometries are placeholders: `fast` says which one the hot paths read.)
        let (mut order, mut wide) = (Order::new(2), WideOrder::new(17));
        let fast = match &policy {
            AnyPolicy::Ordered(p) => {
                order = p.order();
                if p.refreshes_on_hit() {
                    Fast::OrderedLru
                } else {
                    Fast::OrderedFifo
                }
            }
            AnyPolicy::OrderedWide(p) => {
                wide = p.order();
                if p.refreshes_on_hit() {
                    Fast::WideLru
                } else {
                    Fast::WideFifo
                }
            }
            AnyPolicy::Stamped(_) => Fast::Stamped,
            _ => Fast::Other,
        };
        let stride = ways.next_power_of_two().max(4);
        // An order word takes two or four state words; stamps and the other policies one per
        // lane.
        let state_words = match fast {
            Fast::OrderedLru | Fast::OrderedFifo => Order::STATE_WORDS,
            Fast::WideLru | Fast::WideFifo => WideOrder::STATE_WORDS,
            _ => stride,
        };
        let ages_at = align_up(stride * std::mem::size_of::<K>(), 8);
        let info_at = ages_at + state_words * 4;
        let vals_at = align_up(info_at + stride * std::mem::size_of::<LineInfo>(), std::mem::align_of::<V>());
        let block = align_up(vals_at + stride * std::mem::size_of::<V>(), 64);
        let bytes = sets.checked_mul(block).expect("set-associative array size overflows");
        let mem = crate::host::hostmem::HugeBuf::new(bytes / 64, HostLine([0; 64]));
        let mut a = SetAssoc {
            sets,
            set_mask: sets - 1,
            ways,
            stride,
            stride_shift: stride.trailing_zeros(),
            searched: ways.next_multiple_of(4),
            ages_at,
            state_words,
            info_at,
            vals_at,
            block,
            mem,
            policy,
            fast,
            order,
            wide,
            memo_key: K::INVALID,
            memo_slot: 0,
            _types: PhantomData,
        };
        for set in 0..sets {
            a.keys_mut(set).fill(K::INVALID);
            a.vals_mut(set).fill(V::default());
            a.infos_mut(set).fill(LineInfo::default());
            a.ages_mut(set).fill(PAD_AGE);
            let (view, policy) = a.view(set);
            policy.init(view.ages);
        }
        a
    }

    /// Start of `set`'s block. The mask keeps any `set` (even from a bogus slot passed to a
    /// public method) inside the buffer, so the accessors below are sound for every input.
    #[inline]
    fn base(&self, set: usize) -> *const u8 {
        debug_assert!(set < self.sets);
        // SAFETY: set & set_mask < sets, and the buffer holds sets * block bytes.
        unsafe { (self.mem.as_ptr() as *const u8).add((set & self.set_mask) * self.block) }
    }

    #[inline]
    fn base_mut(&mut self, set: usize) -> *mut u8 {
        debug_assert!(set < self.sets);
        // SAFETY: as in `base`.
        unsafe { (self.mem.as_mut_ptr() as *mut u8).add((set & self.set_mask) * self.block) }
    }

    /// `stride` lanes of type `T` at byte `at` of `set`'s block.
    #[inline]
    fn lanes<T>(&self, set: usize, at: usize) -> &[T] {
        // SAFETY: a set's block is 64-byte aligned and holds `stride` keys at 0,
        // `state_words` u32 state words at `ages_at`, `stride` LineInfos at `info_at` and
        // `stride` values at `vals_at`, each offset aligned for its type (see `new`), every
        // lane initialised; callers pass the offset of keys, infos or values with its type.
        unsafe { std::slice::from_raw_parts(self.base(set).add(at) as *const T, self.stride) }
    }

    #[inline]
    fn lanes_mut<T>(&mut self, set: usize, at: usize) -> &mut [T] {
        let stride = self.stride;
        // SAFETY: as in `lanes`; `&mut self` borrows the whole array.
        unsafe { std::slice::from_raw_parts_mut(self.base_mut(set).add(at) as *mut T, stride) }
    }

    #[inline]
    fn keys(&self, set: usize) -> &[K] {
        self.lanes(set, 0)
    }
    #[inline]
    fn keys_mut(&mut self, set: usize) -> &mut [K] {
        self.lanes_mut(set, 0)
    }
    #[inline]
    fn ages(&self, set: usize) -> &[u32] {
        // SAFETY: as in `lanes`, with `state_words` u32 lanes at `ages_at`.
        unsafe { std::slice::from_raw_parts(self.base(set).add(self.ages_at) as *const u32, self.state_words) }
    }
    #[inline]
    fn ages_mut(&mut self, set: usize) -> &mut [u32] {
        let n = self.state_words;
        // SAFETY: as in `ages`.
        unsafe { std::slice::from_raw_parts_mut(self.base_mut(set).add(self.ages_at) as *mut u32, n) }
    }
    #[inline]
    /// What the block in `slot` holds and who brought it in.
    pub fn info(&self, slot: usize) -> LineInfo {
        let (set, way) = self.split(slot);
        self.infos(set)[way]
    }

    fn infos(&self, set: usize) -> &[LineInfo] {
        self.lanes(set, self.info_at)
    }
    #[inline]
    fn infos_mut(&mut self, set: usize) -> &mut [LineInfo] {
        self.lanes_mut(set, self.info_at)
    }
    #[inline]
    fn vals(&self, set: usize) -> &[V] {
        self.lanes(set, self.vals_at)
    }
    #[inline]
    fn vals_mut(&mut self, set: usize) -> &mut [V] {
        self.lanes_mut(set, self.vals_at)
    }

    /// The order word of `set`: its first state words, read as `W` (`u64` for
    /// `Fast::Ordered*`, `u128` for `Fast::Wide*`; only those integer types).
    #[inline]
    fn order_word<W: Copy>(&self, set: usize) -> W {
        debug_assert!(std::mem::size_of::<W>() <= self.state_words * 4);
        // SAFETY: a set with an order word has 2 (u64) or 4 (u128) state words, 8-byte
        // aligned only, hence the unaligned access; any bits are a valid integer.
        unsafe { (self.base(set).add(self.ages_at) as *const W).read_unaligned() }
    }

    #[inline]
    fn set_order_word<W: Copy>(&mut self, set: usize, order: W) {
        debug_assert!(std::mem::size_of::<W>() <= self.state_words * 4);
        // SAFETY: as in `order_word`.
        unsafe { (self.base_mut(set).add(self.ages_at) as *mut W).write_unaligned(order) }
    }

    /// A set's state words and what its ways hold, as policies see them.
    #[inline]
    fn view(&mut self, set: usize) -> (SetView<'_>, &mut AnyPolicy) {
        let ways = self.ways;
        let base = self.base_mut(set);
        // SAFETY: the state words and the infos are disjoint lanes of the set's block.
        let ages = unsafe { std::slice::from_raw_parts_mut(base.add(self.ages_at) as *mut u32, ways.min(self.state_words)) };
        let info = unsafe { std::slice::from_raw_parts(base.add(self.info_at) as *const LineInfo, ways) };
        (SetView { ages, info, incoming: LineKind::Data, index: set }, &mut self.policy)
    }

    #[inline]
    fn split(&self, slot: usize) -> (usize, usize) {
        (slot >> self.stride_shift, slot & (self.stride - 1))
    }

    #[inline]
    pub fn sets(&self) -> usize {
        self.sets
    }

    #[inline]
    pub fn ways(&self) -> usize {
        self.ways
    }

    /// The slot of way `way` of set `set`.
    #[inline]
    pub fn slot(&self, set: usize, way: usize) -> usize {
        (set << self.stride_shift) + way
    }

    /// Set index for a number whose low bits select the set.
    #[inline]
    pub fn set_of(&self, n: u64) -> usize {
        (n as usize) & self.set_mask
    }

    /// Hint the host CPU to load `set`'s block (its first four host lines: the keys, state
    /// words and values of up to 16 ways of 8-byte keys).
    #[inline]
    pub fn prefetch_set(&self, set: usize) {
        let p = (self.mem.as_ptr() as *const u8).wrapping_add(set * self.block);
        // (Unrolled: a loop here costs more than the prefetches, four times per reference.)
        crate::prefetch(p);
        if self.block > 64 {
            crate::prefetch(p.wrapping_add(64));
        }
        if self.block > 128 {
            crate::prefetch(p.wrapping_add(128));
        }
        if self.block > 192 {
            crate::prefetch(p.wrapping_add(192));
        }
    }

    /// Find `key` in `set` without touching replacement state. Returns the slot.
    #[inline]
    pub fn probe(&self, set: usize, key: K) -> Option<usize> {
        self.probe_in::<false>(set, key)
    }

    /// [`Self::probe`] with the key search inlined: for the data caches, whose lookups are
    /// most of the memory side's work (TLBs and page-walk caches keep one shared search).
    #[inline(always)]
    pub fn probe_inlined(&self, set: usize, key: K) -> Option<usize> {
        self.probe_in::<true>(set, key)
    }

    #[inline(always)]
    fn probe_in<const INLINED: bool>(&self, set: usize, key: K) -> Option<usize> {
        if key == self.memo_key && self.memo_slot >> self.stride_shift == set {
            return Some(self.memo_slot);
        }
        self.search::<INLINED>(set, key)
    }

    /// The key search itself (no memo).
    #[inline(always)]
    fn search<const INLINED: bool>(&self, set: usize, key: K) -> Option<usize> {
        // SAFETY: the keys are the first `stride >= searched` lanes of the set's block.
        let keys = unsafe { std::slice::from_raw_parts(self.base(set) as *const K, self.searched) };
        let way = if INLINED { K::find_inlined(keys, key) } else { K::find(keys, key) };
        way.map(|w| (set << self.stride_shift) + w)
    }

    /// Find `key` in `set`; a hit updates the replacement state. Returns the slot.
    #[inline(always)]
    pub fn lookup(&mut self, set: usize, key: K) -> Option<usize> {
        self.lookup_in::<false>(set, key)
    }

    /// [`Self::lookup`] with the key search inlined (see [`Self::probe_inlined`]).
    #[inline(always)]
    pub fn lookup_inlined(&mut self, set: usize, key: K) -> Option<usize> {
        self.lookup_in::<true>(set, key)
    }

    #[inline(always)]
    fn lookup_in<const INLINED: bool>(&mut self, set: usize, key: K) -> Option<usize> {
        if key == self.memo_key && self.memo_slot >> self.stride_shift == set {
            // The most recent block of its set: a hit changes nothing (LRU or FIFO).
            return Some(self.memo_slot);
        }
        let slot = self.search::<INLINED>(set, key)?;
        let way = slot & (self.stride - 1);
        // LRU and FIFO (nearly every structure) inline; the other policies dispatch.
        match self.fast {
            Fast::OrderedLru => {
                let o = self.order_word::<u64>(set);
                self.set_order_word(set, Order::promote(o, way));
                self.remember(key, slot);
                return Some(slot);
            }
            Fast::WideLru => {
                let o = self.order_word::<u128>(set);
                self.set_order_word(set, WideOrder::promote(o, way));
                self.remember(key, slot);
                return Some(slot);
            }
            Fast::OrderedFifo | Fast::WideFifo => {
                self.remember(key, slot);
                return Some(slot);
            }
            _ => {}
        }
        if let AnyPolicy::Stamped(p) = &mut self.policy {
            if let Some(t) = p.hit_stamp() {
                self.ages_mut(set)[way] = t;
                if t >= crate::memory::repl::STAMP_LIMIT {
                    self.renumber();
                }
            }
            self.remember(key, slot);
            return Some(slot);
        }
        self.lookup_other(set, way);
        Some(slot)
    }

    #[inline(never)]
    fn lookup_other(&mut self, set: usize, way: usize) {
        let (mut view, policy) = self.view(set);
        policy.on_hit(&mut view, way);
        if policy.clock_exhausted() {
            self.renumber();
        }
    }

    /// Replace every set's stamps by their ranks (same order, small numbers) and restart the
    /// policy's clock above them: what a 32-bit clock needs every few billion operations.
    #[cold]
    fn renumber(&mut self) {
        let ways = self.ways;
        let mut order: Vec<usize> = Vec::with_capacity(ways);
        let mut valid: Vec<bool> = Vec::with_capacity(ways);
        for set in 0..self.sets {
            valid.clear();
            valid.extend(self.keys(set)[..ways].iter().map(|&k| k != K::INVALID));
            let ages = &mut self.ages_mut(set)[..ways];
            order.clear();
            order.extend(0..ways);
            order.sort_by_key(|&w| ages[w]);
            // Ranks start at 1: stamp 0 is reserved for invalid blocks.
            for (rank, &w) in order.iter().enumerate() {
                ages[w] = if valid[w] { rank as u32 + 1 } else { 0 };
            }
        }
        self.policy.restart_clock(ways as u32 + 1);
    }

    /// Insert `key` (known to be absent) into `set`, evicting if the set is full.
    /// Returns the new slot and the evicted block, if any.
    #[inline]
    pub fn insert(&mut self, set: usize, key: K, val: V, kind: LineKind) -> (usize, Option<Evicted<K, V>>) {
        self.insert_owned(set, key, val, kind, 0)
    }

    /// [`Self::insert`] for a block brought in by core `owner`.
    #[inline]
    pub fn insert_owned(&mut self, set: usize, key: K, val: V, kind: LineKind, owner: u8) -> (usize, Option<Evicted<K, V>>) {
        if matches!(self.fast, Fast::OrderedLru | Fast::OrderedFifo) {
            let o = self.order_word::<u64>(set);
            let way = self.order.victim(o);
            self.set_order_word(set, self.order.refill(o, way));
            return self.fill_way(set, way, key, val, kind, owner);
        }
        self.insert_outlined(set, key, val, kind, owner)
    }

    /// Make `slot` (holding `key`, just hit or filled: the most recent of its set) the memo.
    /// Only LRU and FIFO call it: for them a repeated hit on it changes nothing.
    #[inline(always)]
    fn remember(&mut self, key: K, slot: usize) {
        self.memo_key = key;
        self.memo_slot = slot;
    }

    /// Put the block in `way` of `set`, chosen (and the order word updated) by an LRU or
    /// FIFO fill; it becomes the memo.
    #[inline(always)]
    fn fill_way(&mut self, set: usize, way: usize, key: K, val: V, kind: LineKind, owner: u8) -> (usize, Option<Evicted<K, V>>) {
        let slot = (set << self.stride_shift) + way;
        self.remember(key, slot);
        (slot, self.replace(set, way, key, val, kind, owner))
    }

    /// [`Self::insert_owned`] for every policy but the narrow order word (out of line, so
    /// that the fill inlined into every cache and TLB stays small).
    #[inline(never)]
    fn insert_outlined(&mut self, set: usize, key: K, val: V, kind: LineKind, owner: u8) -> (usize, Option<Evicted<K, V>>) {
        if matches!(self.fast, Fast::WideLru | Fast::WideFifo) {
            let o = self.order_word::<u128>(set);
            let way = self.wide.victim(o);
            self.set_order_word(set, self.wide.refill(o, way));
            return self.fill_way(set, way, key, val, kind, owner);
        }
        if let AnyPolicy::Stamped(p) = &mut self.policy {
            // Invalid blocks have stamp 0 and valid ones at least 1, so one search finds an
            // invalid block or else the oldest: the common case needs no second scan.
            let t = p.fill_stamp();
            let way = oldest(&self.ages(set)[..self.searched]);
            self.ages_mut(set)[way] = t;
            let evicted = self.replace(set, way, key, val, kind, owner);
            if t >= crate::memory::repl::STAMP_LIMIT {
                self.renumber();
            }
            self.remember(key, (set << self.stride_shift) + way);
            return ((set << self.stride_shift) + way, evicted);
        }
        self.insert_other(set, key, val, kind, owner)
    }

    /// [`Self::insert_owned`] evicting only among the ways set in `mask` (way partitioning,
    /// as Intel's CAT: a core fills only its ways, but hits in any). LRU and FIFO only: other
    /// policies pick victims across the whole set (config validation keeps them apart).
    #[inline(never)]
    pub fn insert_in_ways(&mut self, set: usize, key: K, val: V, kind: LineKind, owner: u8, mask: u64) -> (usize, Option<Evicted<K, V>>) {
        let way = match self.fast {
            Fast::OrderedLru | Fast::OrderedFifo => {
                let o = self.order_word::<u64>(set);
                let way = self.order.victim_in(o, mask).expect("a way partition names ways of the set");
                self.set_order_word(set, Order::promote(o, way));
                way
            }
            Fast::WideLru | Fast::WideFifo => {
                let o = self.order_word::<u128>(set);
                let way = self.wide.victim_in(o, mask).expect("a way partition names ways of the set");
                self.set_order_word(set, WideOrder::promote(o, way));
                way
            }
            Fast::Stamped => {
                let AnyPolicy::Stamped(p) = &mut self.policy else { unreachable!("Fast::Stamped is a stamped policy") };
                let t = p.fill_stamp();
                let ages = self.ages(set);
                let way = (0..self.ways).filter(|&w| mask >> w & 1 != 0).min_by_key(|&w| ages[w]).expect("a way partition names ways of the set");
                self.ages_mut(set)[way] = t;
                let filled = self.fill_way(set, way, key, val, kind, owner);
                if t >= crate::memory::repl::STAMP_LIMIT {
                    self.renumber();
                }
                return filled;
            }
            Fast::Other => unreachable!("way partitions need LRU or FIFO (config validation)"),
        };
        self.fill_way(set, way, key, val, kind, owner)
    }

    #[inline(never)]
    fn insert_other(&mut self, set: usize, key: K, val: V, kind: LineKind, owner: u8) -> (usize, Option<Evicted<K, V>>) {
        let way = match self.keys(set)[..self.ways].iter().position(|&k| k == K::INVALID) {
            Some(w) => w,
            None => {
                let (mut view, policy) = self.view(set);
                view.incoming = kind;
                policy.victim(&mut view)
            }
        };
        let evicted = self.replace(set, way, key, val, kind, owner);
        let (mut view, policy) = self.view(set);
        policy.on_fill(&mut view, way);
        if policy.clock_exhausted() {
            self.renumber();
        }
        ((set << self.stride_shift) + way, evicted)
    }

    /// Put a block in `way` of `set` (the policy has been told); returns what it held.
    #[inline]
    fn replace(&mut self, set: usize, way: usize, key: K, val: V, kind: LineKind, owner: u8) -> Option<Evicted<K, V>> {
        let old = self.keys(set)[way];
        let evicted = (old != K::INVALID).then(|| Evicted { key: old, val: self.vals(set)[way], kind: self.infos(set)[way].kind });
        self.keys_mut(set)[way] = key;
        self.vals_mut(set)[way] = val;
        self.infos_mut(set)[way] = LineInfo { kind, owner };
        evicted
    }

    /// Tell the policy that `way` of `set` was just invalidated.
    fn invalidated(&mut self, set: usize, way: usize) {
        self.memo_key = K::INVALID;
        // (Only order words, at most 16 ways, read the mask.)
        let valid = self.keys(set)[..self.ways.min(32)].iter().enumerate().fold(0u32, |m, (w, &k)| m | ((k != K::INVALID) as u32) << w);
        let (mut view, policy) = self.view(set);
        policy.on_invalidate(&mut view, way, valid);
    }

    #[inline]
    pub fn key(&self, slot: usize) -> K {
        let (set, way) = self.split(slot);
        self.keys(set)[way]
    }

    #[inline]
    pub fn val(&self, slot: usize) -> &V {
        let (set, way) = self.split(slot);
        &self.vals(set)[way]
    }

    #[inline]
    pub fn val_mut(&mut self, slot: usize) -> &mut V {
        let (set, way) = self.split(slot);
        &mut self.vals_mut(set)[way]
    }

    #[inline]
    pub fn kind(&self, slot: usize) -> LineKind {
        let (set, way) = self.split(slot);
        self.infos(set)[way].kind
    }

    /// Drop the block in `slot`; returns what it held.
    #[inline]
    pub fn invalidate_slot(&mut self, slot: usize) -> Option<Evicted<K, V>> {
        let (set, way) = self.split(slot);
        let key = self.keys(set)[way];
        if key == K::INVALID {
            return None;
        }
        self.keys_mut(set)[way] = K::INVALID;
        self.invalidated(set, way);
        Some(Evicted { key, val: self.vals(set)[way], kind: self.infos(set)[way].kind })
    }

    /// Drop every block for which `pred(key, value)` holds; returns how many.
    pub fn invalidate_where(&mut self, mut pred: impl FnMut(K, &V) -> bool) -> usize {
        let mut n = 0;
        for set in 0..self.sets {
            for w in 0..self.ways {
                let k = self.keys(set)[w];
                if k != K::INVALID && pred(k, &self.vals(set)[w]) {
                    self.keys_mut(set)[w] = K::INVALID;
                    self.invalidated(set, w);
                    n += 1;
                }
            }
        }
        n
    }

    /// Number of valid blocks.
    pub fn occupancy(&self) -> usize {
        (0..self.sets).map(|s| self.keys(s)[..self.ways].iter().filter(|&&k| k != K::INVALID).count()).sum()
    }

    /// Show a demand access to `key` (physical line `line`, of `kind`) to a policy that
    /// watches accesses (CSALT's profiles, DIP's leader sets), before the lookup.
    pub fn observe(&mut self, set: usize, key: K, line: u64, kind: LineKind) {
        let hit = self.probe(set, key).map(|slot| slot & (self.stride - 1));
        let (view, policy) = self.view(set);
        match policy {
            AnyPolicy::Csalt(c) => c.on_access(&view, set, line, kind, hit),
            AnyPolicy::Dip(d) => d.on_access(set, hit.is_some()),
            _ => {}
        }
    }

    /// Whether its replacement is LRU (one-pass miss-ratio curves are exact only for LRU).
    pub fn is_lru(&self) -> bool {
        match &self.policy {
            AnyPolicy::Ordered(p) => p.refreshes_on_hit(),
            AnyPolicy::OrderedWide(p) => p.refreshes_on_hit(),
            AnyPolicy::Stamped(p) => p.refreshes_on_hit(),
            _ => false,
        }
    }

    pub fn policy(&self) -> &AnyPolicy {
        &self.policy
    }

    /// The replacement policy, for mechanisms that steer it (page-table prioritization).
    pub fn policy_mut(&mut self) -> &mut AnyPolicy {
        &mut self.policy
    }

    #[doc(hidden)]
    pub fn set_clock_for_test(&mut self, at: u32) {
        self.policy.restart_clock(at);
    }

    /// The keys of `set` (invalid ones included), for tests and debugging.
    pub fn set_keys(&self, set: usize) -> Vec<K> {
        self.keys(set)[..self.ways].to_vec()
    }

    /// Every slot that may hold a block (for whole-array walks, not the hot path).
    pub fn slots(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.sets).flat_map(move |s| (0..self.ways).map(move |w| (s << self.stride_shift) + w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fill takes the lowest invalid way first, then the victim, with an order word (4
    /// ways), a wide one (24) and with stamps (32), LRU and FIFO alike.
    #[test]
    fn fills_take_the_lowest_free_way_first() {
        for policy in [Policy::Lru, Policy::Fifo] {
            for ways in [4usize, 24, 32] {
                let mut a: SetAssoc<u64, u8> = SetAssoc::new(1, ways, policy, 1);
                for k in 0..ways as u64 {
                    assert_eq!(a.insert(0, k, 0, LineKind::Data), (k as usize, None), "{policy} {ways}: fills in way order");
                }
                for k in [2u64, 0] {
                    let slot = a.probe(0, k).unwrap();
                    assert_eq!(a.invalidate_slot(slot).unwrap().key, k);
                }
                assert_eq!(a.insert(0, 100, 0, LineKind::Data).0, 0, "{policy} {ways}");
                assert_eq!(a.insert(0, 101, 0, LineKind::Data).0, 2, "{policy} {ways}");
                // Full again: the oldest of the original blocks goes (1, filled second).
                let (slot, ev) = a.insert(0, 102, 0, LineKind::Data);
                assert_eq!((slot, ev.map(|e| e.key)), (1, Some(1)), "{policy} {ways}");
            }
        }
    }

    /// Way partitioning against a model: owners with keys of their own each see an LRU cache
    /// of exactly their ways, whatever the others do, with an order word (8 ways), a wide one
    /// (24) and stamps (32).
    #[test]
    fn a_way_partition_is_an_lru_cache_of_its_own() {
        for ways in [8usize, 24, 32] {
            let n = ways / 4;
            let mut a: SetAssoc<u64, u8> = SetAssoc::new(2, ways, Policy::Lru, 1);
            let mask = |o: u64| (0..n as u64).fold(0u64, |m, i| m | 1 << (o * n as u64 + i));
            // The model: per set and owner, keys from most to least recent.
            let mut model: Vec<Vec<Vec<u64>>> = vec![vec![Vec::new(); 4]; 2];
            let mut x = 0x2545_f491_4f6c_dd1du64;
            for step in 0..20_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let (owner, set) = ((x % 4) as usize, (x >> 8) as usize % 2);
                // Owner o's keys: o * 1000 + a few more than its ways, in its set's parity.
                let key = owner as u64 * 1000 + ((x >> 16) % (n as u64 + 3)) * 2 + set as u64;
                let m = &mut model[set][owner];
                let hit = a.lookup(set, key).is_some();
                assert_eq!(hit, m.contains(&key), "{ways} ways, step {step}: key {key}");
                if let Some(i) = m.iter().position(|&k| k == key) {
                    m.remove(i);
                } else {
                    let (slot, ev) = a.insert_in_ways(set, key, 0, LineKind::Data, owner as u8, mask(owner as u64));
                    assert!(mask(owner as u64) >> (slot & (a.stride - 1)) & 1 != 0, "filled outside its ways");
                    let expect = (m.len() == n).then(|| m.pop().unwrap());
                    assert_eq!(ev.map(|e| e.key), expect, "{ways} ways, step {step}");
                }
                m.insert(0, key);
            }
        }
    }

    /// Renumbering when the stamp clock runs out keeps LRU order.
    #[test]
    fn lru_survives_clock_exhaustion() {
        let mut a: SetAssoc<u64, u8> = SetAssoc::new(1, 4, Policy::Lru, 1);
        for k in 0..4 {
            a.insert(0, k, 0, LineKind::Data);
        }
        a.set_clock_for_test(crate::memory::repl::STAMP_LIMIT - 2);
        a.lookup(0, 0); // 0 becomes most recent: order 1, 2, 3, 0
        a.lookup(0, 2); // renumbering happens around here: order 1, 3, 0, 2
        a.lookup(0, 1); // order 3, 0, 2, 1
        let (_, ev) = a.insert(0, 9, 0, LineKind::Data);
        assert_eq!(ev.unwrap().key, 3);
        let (_, ev) = a.insert(0, 10, 0, LineKind::Data);
        assert_eq!(ev.unwrap().key, 0);
    }
}
