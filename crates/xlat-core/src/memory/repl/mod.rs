//! Replacement policies, shared by caches, TLBs and page-walk caches.
//!
//! A policy is a small trait (ChampSim-style plug-in) that sees one set at a time
//! ([`SetView`]): one 32-bit state word per block, stored with the set's tags in one
//! contiguous block of host memory, and what each block holds. Containers pick invalid
//! ways themselves and ask the policy only to rank valid ones. The enum [`AnyPolicy`]
//! dispatches statically, so the hot path has no virtual calls; LRU and FIFO over 2-25 ways
//! ([`Ordered`], [`OrderedWide`]: nearly every structure) keep a set's order in one word
//! instead, which the containers update inline.

pub mod csalt;

/// What a cache line holds; policies such as page-table prioritization look at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum LineKind {
    #[default]
    Data = 0,
    PageTable = 1,
    TlbEntry = 2,
}

impl LineKind {
    pub const ALL: [LineKind; 3] = [LineKind::Data, LineKind::PageTable, LineKind::TlbEntry];
    pub fn name(self) -> &'static str {
        match self {
            LineKind::Data => "data",
            LineKind::PageTable => "pt",
            LineKind::TlbEntry => "tlbe",
        }
    }
}

/// What a block holds and who brought it in: what page-table-aware policies look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(C)]
pub struct LineInfo {
    pub kind: LineKind,
    /// Which core (context) brought the block in.
    pub owner: u8,
}

/// One set as a policy sees it: a 32-bit state word per way (LRU/FIFO time stamp, larger =
/// more recent, 0 = invalid; or SRRIP's re-reference prediction) and what each way holds.
/// Both slices are the set's `ways` long.
pub struct SetView<'a> {
    pub ages: &'a mut [u32],
    pub info: &'a [LineInfo],
    /// In [`ReplacementPolicy::victim`]: the kind of the block about to be filled
    /// (partitioning policies evict within its ways).
    pub incoming: LineKind,
    /// The set's number (set-dueling policies tell leader sets from followers).
    pub index: usize,
}

/// The interface every replacement policy implements.
pub trait ReplacementPolicy {
    /// Prepare the state of a fresh (all-invalid) set.
    fn init(&self, ages: &mut [u32]);
    /// Block `way` was hit.
    fn on_hit(&mut self, set: &mut SetView, way: usize);
    /// Block `way` was just filled.
    fn on_fill(&mut self, set: &mut SetView, way: usize);
    /// Pick the way to evict from a full set.
    fn victim(&mut self, set: &mut SetView) -> usize;
    /// Block `way` was invalidated; bit `w` of `valid` is set for each way still valid.
    fn on_invalidate(&mut self, set: &mut SetView, way: usize, _valid: u32) {
        set.ages[way] = 0;
    }
    /// Stamp-based policies: the clock is about to wrap and the owner must renumber every
    /// set's stamps (preserving their order) and call [`Self::restart_clock`].
    fn clock_exhausted(&self) -> bool {
        false
    }
    fn restart_clock(&mut self, _at: u32) {}
}

/// The hooks of a policy that keeps true-LRU stamps in its field `lru` (a [`Stamped`]) and
/// decides only its victims (PTP, DIP, CSALT): they delegate init, hits and the clock.
macro_rules! lru_stamps {
    () => {
        fn init(&self, ages: &mut [u32]) {
            self.lru.init(ages)
        }
        #[inline]
        fn on_hit(&mut self, set: &mut SetView, way: usize) {
            self.lru.on_hit(set, way)
        }
        fn clock_exhausted(&self) -> bool {
            self.lru.clock_exhausted()
        }
        fn restart_clock(&mut self, at: u32) {
            self.lru.restart_clock(at)
        }
    };
}
pub(crate) use lru_stamps;

/// The way with the smallest stamp (the least recently used / first in; the lowest way
/// among equals): the victim search that runs on every fill of every structure.
#[inline]
pub(crate) fn oldest(ages: &[u32]) -> usize {
    crate::host::lanes::argmin_u32(ages)
}

/// A time source for stamps. Stamps are 32-bit; before the clock wraps, the owner renumbers
/// every set (see [`ReplacementPolicy::clock_exhausted`]).
#[derive(Default)]
pub struct Clock(u32);

impl Clock {
    #[inline]
    fn tick(&mut self) -> u32 {
        self.0 += 1;
        self.0
    }
}

/// Time-stamp policies: the victim is the block with the oldest stamp. True LRU refreshes
/// the stamp on every hit; FIFO only on fill. A hit or fill is O(1).
#[derive(Default)]
pub struct Stamped {
    clock: Clock,
    refresh_on_hit: bool,
}

impl Stamped {
    /// Whether hits move a way to the front (LRU) or not (FIFO).
    pub fn refreshes_on_hit(&self) -> bool {
        self.refresh_on_hit
    }

    pub fn lru() -> Stamped {
        Stamped { clock: Clock::default(), refresh_on_hit: true }
    }

    pub fn fifo() -> Stamped {
        Stamped { clock: Clock::default(), refresh_on_hit: false }
    }

    /// The stamp a hit gives its block (LRU), or `None` when hits change nothing (FIFO).
    /// Callers renumber when it reaches [`STAMP_LIMIT`].
    #[inline]
    pub fn hit_stamp(&mut self) -> Option<u32> {
        self.refresh_on_hit.then(|| self.clock.tick())
    }

    /// The stamp of a newly filled block.
    #[inline]
    pub fn fill_stamp(&mut self) -> u32 {
        self.clock.tick()
    }
}

impl ReplacementPolicy for Stamped {
    fn init(&self, ages: &mut [u32]) {
        ages.fill(0);
    }
    #[inline]
    fn on_hit(&mut self, set: &mut SetView, way: usize) {
        if self.refresh_on_hit {
            set.ages[way] = self.clock.tick();
        }
    }
    #[inline]
    fn on_fill(&mut self, set: &mut SetView, way: usize) {
        set.ages[way] = self.clock.tick();
    }
    #[inline]
    fn victim(&mut self, set: &mut SetView) -> usize {
        oldest(set.ages)
    }
    fn clock_exhausted(&self) -> bool {
        self.clock.0 >= STAMP_LIMIT
    }
    fn restart_clock(&mut self, at: u32) {
        self.clock.0 = at;
    }
}

/// LRU and FIFO without stamps: a set keeps its recency order in one word (its first state
/// words), way numbers in fields from the most recent (field 0) to the next victim (field
/// `ways - 1`); fields past `ways` hold all ones, which names no way. A hit (LRU) or a fill
/// moves a way to the front with a few shifts and the victim is read off the end, so neither
/// searches the set (no stamps, no clock to renumber). Same choices as [`Stamped`]: invalid
/// ways wait at the end in descending order, so the lowest invalid way is filled first, as
/// stamp 0 with a first-lane tie-break gives. Two sizes: [`Order`] (a `u64` of 4-bit fields,
/// 2-16 ways: nearly every structure) and [`WideOrder`] (a `u128` of 5-bit fields, 17-25
/// ways: 24-entry page-walk caches). Containers run the hot operations inline; [`Ordered`]
/// and [`OrderedWide`] are their policy-trait faces.
macro_rules! order_word {
    ($order:ident, $policy:ident, $word:ty, $bits:expr, $min:expr, $max:expr, $words:expr) => {
        /// The order-word operations for one geometry (see the macro's comment).
        #[derive(Clone, Copy, Debug)]
        pub struct $order {
            ways: usize,
            /// Bit position of the victim's field.
            victim_at: u32,
            /// The fields past `ways`, all ones.
            unused: $word,
        }

        impl $order {
            /// State words (u32) the order word takes.
            pub const STATE_WORDS: usize = $words;
            /// A 1 at the bottom of every field.
            const ONES: $word = {
                let mut o: $word = 0;
                let mut i = 0;
                while i < $max {
                    o |= 1 << ($bits * i);
                    i += 1;
                }
                o
            };
            /// Every bit of every field.
            const ALL: $word = Self::ONES * ((1 << $bits) - 1);

            /// Whether `ways` suits this word.
            pub fn fits(ways: usize) -> bool {
                ($min..=$max).contains(&ways)
            }

            pub fn new(ways: usize) -> $order {
                assert!(Self::fits(ways));
                let unused = if ways == $max { 0 } else { Self::ALL & (<$word>::MAX << ($bits * ways)) };
                $order { ways, victim_at: $bits * (ways as u32 - 1), unused }
            }

            /// The word of an empty set: descending from the front, so way 0 is the first
            /// victim.
            pub fn empty(&self) -> $word {
                (0..self.ways).fold(self.unused, |o, w| o | ((self.ways - 1 - w) as $word) << ($bits * w))
            }

            /// `order` with `way` moved to the front.
            #[inline]
            pub fn promote(order: $word, way: usize) -> $word {
                // The first field equal to `way` is the first zero field of x (no borrow
                // reaches it from below, so the flag on its top bit is exact).
                let x = order ^ (way as $word).wrapping_mul(Self::ONES);
                let zero = x.wrapping_sub(Self::ONES) & !x & (Self::ONES << ($bits - 1));
                debug_assert!(zero != 0, "way {way} is not in the order word {order:#x}");
                let at = zero.trailing_zeros() - ($bits - 1);
                let below = order & ((1 << at) - 1);
                let above = order & ((<$word>::MAX << at) << $bits);
                above | below << $bits | way as $word
            }

            /// The victim's way.
            #[inline]
            pub fn victim(&self, order: $word) -> usize {
                (order >> self.victim_at) as usize & ((1 << $bits) - 1)
            }

            /// The least recent way among those set in `mask` (way partitioning); `None` if
            /// the mask names none of the set's ways.
            pub fn victim_in(&self, order: $word, mask: u64) -> Option<usize> {
                let field = (1 << $bits) - 1;
                (0..self.ways).rev().map(|i| (order >> ($bits * i)) as usize & field).find(|&w| mask >> w & 1 != 0)
            }

            /// `order` after filling its victim `way` (now the most recent).
            #[inline]
            pub fn refill(&self, order: $word, way: usize) -> $word {
                (order << $bits) & Self::ALL & !self.unused | self.unused | way as $word
            }

            /// `order` after invalidations: the valid ways (bit `w` of `valid`) in their
            /// order, then the invalid ones, lowest last.
            pub fn invalidated(&self, order: $word, valid: u32) -> $word {
                let field = (1 << $bits) - 1;
                let ranked = (0..self.ways).map(|i| (order >> ($bits * i)) as usize & field);
                let ways = ranked.filter(|&w| valid >> w & 1 != 0).chain((0..self.ways).rev().filter(|&w| valid >> w & 1 == 0));
                ways.enumerate().fold(self.unused, |o, (i, w)| o | (w as $word) << ($bits * i))
            }
        }

        /// LRU or FIFO over an order word, as a [`ReplacementPolicy`].
        #[derive(Clone, Copy)]
        pub struct $policy {
            refresh_on_hit: bool,
            order: $order,
        }

        impl $policy {
            fn get(ages: &[u32]) -> $word {
                (0..$words).fold(0, |o, i| o | (ages[i] as $word) << (32 * i))
            }

            fn put(ages: &mut [u32], order: $word) {
                for (i, a) in ages[..$words].iter_mut().enumerate() {
                    *a = (order >> (32 * i)) as u32;
                }
            }

            /// Whether hits move a way to the front (LRU) or not (FIFO).
            pub fn refreshes_on_hit(&self) -> bool {
                self.refresh_on_hit
            }

            pub fn order(&self) -> $order {
                self.order
            }
        }

        impl ReplacementPolicy for $policy {
            fn init(&self, ages: &mut [u32]) {
                Self::put(ages, self.order.empty());
            }
            fn on_hit(&mut self, set: &mut SetView, way: usize) {
                if self.refresh_on_hit {
                    Self::put(set.ages, $order::promote(Self::get(set.ages), way));
                }
            }
            fn on_fill(&mut self, set: &mut SetView, way: usize) {
                Self::put(set.ages, $order::promote(Self::get(set.ages), way));
            }
            fn victim(&mut self, set: &mut SetView) -> usize {
                self.order.victim(Self::get(set.ages))
            }
            fn on_invalidate(&mut self, set: &mut SetView, _way: usize, valid: u32) {
                Self::put(set.ages, self.order.invalidated(Self::get(set.ages), valid));
            }
        }
    };
}

order_word!(Order, Ordered, u64, 4, 2, 16, 2);
order_word!(WideOrder, OrderedWide, u128, 5, 17, 25, 4);

/// Stamps beyond this trigger a renumbering (leaves room for a set's worth of ticks).
pub const STAMP_LIMIT: u32 = u32::MAX - 8192;

/// Static RRIP (Jaleel et al., ISCA 2010) with 2-bit re-reference predictions: insert at
/// "long" (2), promote to 0 on a hit, evict the first way predicted "distant" (3), ageing
/// the whole set until one is.
pub struct Srrip;

impl Srrip {
    const DISTANT: u32 = 3;
}

impl ReplacementPolicy for Srrip {
    fn init(&self, ages: &mut [u32]) {
        ages.fill(Self::DISTANT);
    }
    #[inline]
    fn on_hit(&mut self, set: &mut SetView, way: usize) {
        set.ages[way] = 0;
    }
    #[inline]
    fn on_fill(&mut self, set: &mut SetView, way: usize) {
        set.ages[way] = Self::DISTANT - 1;
    }
    fn victim(&mut self, set: &mut SetView) -> usize {
        loop {
            if let Some(w) = set.ages.iter().position(|&a| a >= Self::DISTANT) {
                return w;
            }
            for a in set.ages.iter_mut() {
                *a += 1;
            }
        }
    }
}

/// Uniform random victim from a seeded xorshift generator (deterministic per seed).
pub struct Random {
    state: u64,
}

impl ReplacementPolicy for Random {
    fn init(&self, _ages: &mut [u32]) {}
    #[inline]
    fn on_hit(&mut self, _set: &mut SetView, _way: usize) {}
    #[inline]
    fn on_fill(&mut self, _set: &mut SetView, _way: usize) {}
    #[inline]
    fn victim(&mut self, set: &mut SetView) -> usize {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        (self.state % set.ages.len() as u64) as usize
    }
}

/// Page-table prioritization (the flattening paper, §5/§6.1): LRU, except that while it is
/// active a victim is, with probability `p` (0.99 in the paper), the LRU line among those
/// that are *not* protected page-table lines; otherwise, or when every line is protected,
/// the LRU line of the set. Which page-table lines are protected: all of them when active
/// globally, or only those whose owner's bit is set in `protect_owners` (per-context
/// priority in a shared cache, so one core's data cannot push out another's page table
/// while that core is in a TLB-miss phase).
pub struct Ptp {
    lru: Stamped,
    rng: u64,
    /// `p` scaled to 2^32.
    threshold: u64,
    /// Bit `c` set: page-table lines owned by core `c` are protected.
    protect_owners: u64,
}

impl Ptp {
    pub fn new(seed: u64) -> Ptp {
        Ptp { lru: Stamped::lru(), rng: seed | 1, threshold: (0.99 * 4294967296.0) as u64, protect_owners: u64::MAX }
    }

    pub fn set_probability(&mut self, p: f64) {
        self.threshold = (p.clamp(0.0, 1.0) * 4294967296.0) as u64;
    }

    /// Bit `c`: protect page-table lines owned by core `c`. 0 switches prioritization off.
    pub fn set_protected_owners(&mut self, mask: u64) {
        self.protect_owners = mask;
    }

    #[inline]
    fn protected(&self, w: &LineInfo) -> bool {
        w.kind == LineKind::PageTable && (self.protect_owners >> (w.owner & 63)) & 1 != 0
    }
}

impl ReplacementPolicy for Ptp {
    lru_stamps!();
    #[inline]
    fn on_fill(&mut self, set: &mut SetView, way: usize) {
        self.lru.on_fill(set, way)
    }
    fn victim(&mut self, set: &mut SetView) -> usize {
        self.unprotected_victim(set.ages, set.info).unwrap_or_else(|| oldest(set.ages))
    }
}

impl Ptp {
    /// PTP's choice among the ways `ages` and `info` describe (a whole set, or a partition's
    /// ways of it): with the probability, the LRU line that is not a protected page-table line;
    /// `None` otherwise, or when every line is protected (the caller takes the LRU line).
    #[inline]
    pub fn unprotected_victim(&mut self, ages: &[u32], info: &[LineInfo]) -> Option<usize> {
        if self.protect_owners == 0 {
            return None;
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        if (self.rng & 0xffff_ffff) >= self.threshold {
            return None;
        }
        let mut best: Option<usize> = None;
        for (i, w) in info.iter().enumerate() {
            if !self.protected(w) && best.is_none_or(|b| ages[i] < ages[b]) {
                best = Some(i);
            }
        }
        best
    }
}

/// DIP (Qureshi et al., ISCA'07; the CSALT thesis's comparator): set dueling between LRU
/// insertion and BIP, which inserts at the LRU position except once in 32 fills. 32 leader
/// sets of each kind vote with their misses on a 10-bit counter; the followers insert as the
/// leaders that miss less.
pub struct Dip {
    lru: Stamped,
    rng: u64,
    /// Sets per dueling group: set `i` leads for LRU if `i % group == 0`, for BIP if 1.
    group: usize,
    psel: u32,
}

impl Dip {
    const PSEL_MAX: u32 = 1023;

    pub fn new(sets: usize, seed: u64) -> Dip {
        Dip { lru: Stamped::lru(), rng: seed | 1, group: (sets / 32).max(2), psel: Self::PSEL_MAX / 2 + 1 }
    }

    /// A demand access to set `set` missed or not: leader sets' misses move the vote.
    pub fn on_access(&mut self, set: usize, hit: bool) {
        if hit {
            return;
        }
        match set % self.group {
            0 => self.psel = (self.psel + 1).min(Self::PSEL_MAX),
            1 => self.psel = self.psel.saturating_sub(1),
            _ => {}
        }
    }

    /// Whether fills of `set` insert as BIP.
    pub fn bimodal(&self, set: usize) -> bool {
        match set % self.group {
            0 => false,
            1 => true,
            _ => self.psel > Self::PSEL_MAX / 2,
        }
    }
}

impl ReplacementPolicy for Dip {
    lru_stamps!();
    fn on_fill(&mut self, set: &mut SetView, way: usize) {
        self.lru.on_fill(set, way);
        if self.bimodal(set.index) {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            if self.rng % 32 != 0 {
                // The LRU position: below every valid stamp (1 is the lowest a valid block has).
                set.ages[way] = 1;
            }
        }
    }
    fn victim(&mut self, set: &mut SetView) -> usize {
        oldest(set.ages)
    }
}

/// Every replacement policy but the four `AnyPolicy` makes by hand (LRU and FIFO, run
/// inline over an order word or stamps; CSALT-D and CSALT-CD, one type for two names), one line
/// each: its `Policy` variant, its name in the configuration, the type that implements it (with
/// its module, for a policy in a file of its own under `memory/repl/`) and how it is made from
/// the structure's sets, ways and seed. The line is all there is to register a policy: the list
/// makes the module, the `AnyPolicy` variant, its arm in `AnyPolicy::new` and in `dispatch!`,
/// and `Policy`, the value every `*.policy` key accepts. A callback: `policy_list!(m)` hands
/// the lines to macro `m`.
macro_rules! policy_list {
    ($m:path) => {
        $m! {
            Srrip = "srrip": Srrip = |_sets, _ways, _seed| Srrip;
            Random = "random": Random = |_sets, _ways, seed| Random { state: seed | 1 };
            Ptp = "ptp": Ptp = |_sets, _ways, seed| Ptp::new(seed);
            Dip = "dip": Dip = |sets, _ways, seed| Dip::new(sets, seed);
            Nru = "nru": Nru in nru = |_sets, _ways, _seed| nru::Nru;
        }
    };
}

/// `Policy`, the value every `*.policy` key takes: the list's policies and the four
/// `AnyPolicy` makes by hand (the types on the list's lines are not looked at here).
macro_rules! policy_names {
    ($($variant:ident = $name:literal: $ty:ident $(in $module:ident)? = |$sets:ident, $ways:ident, $seed:ident| $make:expr;)*) => {
        crate::param::config_enum!(
            /// Replacement policy of a set-associative structure.
            Policy { Lru = "lru", $($variant = $name,)* Fifo = "fifo", CsaltD = "csalt-d", CsaltCd = "csalt-cd" }
        );
    };
}
policy_list!(policy_names);

/// `AnyPolicy`, its constructor and its dispatch from [`policy_list!`]'s lines.
macro_rules! any_policy {
    ($($variant:ident = $name:literal: $ty:ident $(in $module:ident)? = |$sets:ident, $ways:ident, $seed:ident| $make:expr;)*) => {
        $($(pub mod $module;)?)*

        /// Every policy, chosen by config, dispatched by `match`.
        pub enum AnyPolicy {
            /// LRU and FIFO for sets of 2 to 16 ways.
            Ordered(Ordered),
            /// LRU and FIFO for sets of 17 to 25 ways.
            OrderedWide(OrderedWide),
            /// LRU and FIFO for other sets.
            Stamped(Stamped),
            /// (Boxed: its profiles would make every variant large.)
            Csalt(Box<csalt::Csalt>),
            $($variant($($module::)? $ty),)*
        }

        impl AnyPolicy {
            /// The policy for `sets` sets of `ways` ways. (CSALT is made by its cache, which
            /// knows its parameters: here it starts as its defaults.)
            pub fn new(policy: Policy, sets: usize, ways: usize, seed: u64) -> AnyPolicy {
                match policy {
                    Policy::Lru | Policy::Fifo if Order::fits(ways) => {
                        AnyPolicy::Ordered(Ordered { refresh_on_hit: policy == Policy::Lru, order: Order::new(ways) })
                    }
                    Policy::Lru | Policy::Fifo if WideOrder::fits(ways) => {
                        AnyPolicy::OrderedWide(OrderedWide { refresh_on_hit: policy == Policy::Lru, order: WideOrder::new(ways) })
                    }
                    Policy::Lru => AnyPolicy::Stamped(Stamped::lru()),
                    Policy::Fifo => AnyPolicy::Stamped(Stamped::fifo()),
                    Policy::CsaltD | Policy::CsaltCd => {
                        AnyPolicy::Csalt(Box::new(csalt::Csalt::new(sets, ways, crate::param::CsaltProfiler::Atd, 0, 256_000)))
                    }
                    $(Policy::$variant => {
                        let ($sets, $ways, $seed) = (sets, ways, seed);
                        AnyPolicy::$variant($make)
                    })*
                }
            }
        }

        macro_rules! dispatch {
            ($self:ident, $p:ident => $e:expr) => {
                match $self {
                    AnyPolicy::Ordered($p) => $e,
                    AnyPolicy::OrderedWide($p) => $e,
                    AnyPolicy::Stamped($p) => $e,
                    AnyPolicy::Csalt($p) => $e,
                    $(AnyPolicy::$variant($p) => $e,)*
                }
            };
        }
    };
}

policy_list!(any_policy);

impl ReplacementPolicy for AnyPolicy {
    fn init(&self, ages: &mut [u32]) {
        dispatch!(self, p => p.init(ages))
    }
    #[inline]
    fn on_hit(&mut self, set: &mut SetView, way: usize) {
        dispatch!(self, p => p.on_hit(set, way))
    }
    #[inline]
    fn on_fill(&mut self, set: &mut SetView, way: usize) {
        dispatch!(self, p => p.on_fill(set, way))
    }
    #[inline]
    fn victim(&mut self, set: &mut SetView) -> usize {
        dispatch!(self, p => p.victim(set))
    }
    fn on_invalidate(&mut self, set: &mut SetView, way: usize, valid: u32) {
        dispatch!(self, p => p.on_invalidate(set, way, valid))
    }
    #[inline]
    fn clock_exhausted(&self) -> bool {
        dispatch!(self, p => p.clock_exhausted())
    }
    fn restart_clock(&mut self, at: u32) {
        dispatch!(self, p => p.restart_clock(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order word of a 4-way set (read the hex right to left: the lowest nibble is the
    /// most recent way, the fourth the victim): fills take the victim, hits move a way to the
    /// front, invalidated ways go to the back with the lowest last, so it is filled next.
    #[test]
    fn order_word_worked_example() {
        let o = Order::new(4);
        let mut w = o.empty();
        assert_eq!(w, 0xffff_ffff_ffff_0123, "empty: way 0 is the first victim");
        for expect in [0, 1, 2, 3] {
            let v = o.victim(w);
            assert_eq!(v, expect);
            w = o.refill(w, v);
        }
        assert_eq!(w & 0xffff, 0x0123, "full: 3 most recent, 0 the victim");
        w = Order::promote(w, 1);
        assert_eq!(w & 0xffff, 0x0231, "hit on 1");
        w = Order::promote(w, 1);
        assert_eq!(w & 0xffff, 0x0231, "hit on the most recent: no change");
        // Ways 3 and 2 invalidated: valid 1 and 0 keep their order, then 3, then 2 (victim).
        w = o.invalidated(w, 0b0011);
        assert_eq!(w & 0xffff, 0x2301);
        assert_eq!(o.victim(w), 2);
        assert_eq!(w >> 16, 0xffff_ffff_ffff, "unused nibbles stay 0xF");
        // 16 ways use every nibble.
        let o16 = Order::new(16);
        assert_eq!(o16.empty(), 0x0123_4567_89ab_cdef);
        assert_eq!(Order::promote(o16.empty(), 0), 0x1234_5678_9abc_def0);
    }

    /// A loop over 6 lines per 4-way set thrashes LRU (no hits) while BIP keeps 3 of them:
    /// the LRU leaders miss more, the vote moves to BIP, and the followers then hit.
    #[test]
    fn dip_duels_its_way_to_bip_on_a_thrashing_loop() {
        let (sets, ways) = (256, 4);
        let mut arr: crate::assoc::SetAssoc<u64, u32> = crate::assoc::SetAssoc::new(sets, ways, Policy::Dip, 7);
        let mut follower_hits = [0u64; 2];
        for round in 0..40 {
            for i in 0..6u64 {
                for set in 0..sets as u64 {
                    let key = set + (i << 20);
                    let s = arr.set_of(key);
                    arr.observe(s, key, key, LineKind::Data);
                    let hit = arr.lookup(s, key).is_some();
                    if !hit {
                        arr.insert(s, key, 0, LineKind::Data);
                    }
                    if s % (sets / 32) > 1 {
                        follower_hits[(round >= 20) as usize] += hit as u64;
                    }
                }
            }
        }
        let AnyPolicy::Dip(d) = arr.policy() else { panic!("a DIP array") };
        assert!(d.bimodal(2), "the followers insert as BIP");
        assert!(follower_hits[1] > 20 * 6 * (sets as u64 - 64) / 4, "followers hit over a quarter of the time: {follower_hits:?}");
    }

    /// The wide word (5-bit fields) behaves the same: 17 ways, then 25 (every field).
    #[test]
    fn wide_order_word() {
        let o = WideOrder::new(17);
        let mut w = o.empty();
        for expect in 0..17 {
            let v = o.victim(w);
            assert_eq!(v, expect, "an empty set fills in way order");
            w = o.refill(w, v);
        }
        assert_eq!(w & 31, 16, "the last filled is the most recent");
        assert_eq!(o.victim(w), 0);
        w = WideOrder::promote(w, 0);
        assert_eq!((w & 31, o.victim(w)), (0, 1), "a hit on the victim makes 1 the next");
        assert_eq!(w >> 85, (1u128 << 40) - 1, "unused fields stay all ones");
        let o25 = WideOrder::new(25);
        let w = o25.refill(o25.empty(), o25.victim(o25.empty()));
        assert_eq!((w & 31, o25.victim(w)), (0, 1));
        assert_eq!(w >> 125, 0, "no bits above the 25 fields");
    }
}
