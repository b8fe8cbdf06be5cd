//! The per-context timing window (interval-style, as in Sniper): turns latencies into cycles.
//! It never decides what hits; the memory side (`memory::hierarchy`) tells it how long each part
//! of a reference took.
//!
//! Instructions dispatch `width` per cycle into a `rob`-entry window and retire in order; a
//! load also takes a load-queue entry from dispatch until its data arrives (`lq` entries, 0:
//! unlimited), so loads beyond the queue wait to dispatch, and everything behind them.
//! A memory reference issues when dispatched (or, if dependent, when its producer, an earlier
//! memory reference up to [`Ref::MAX_PRODUCER`](crate::Ref::MAX_PRODUCER) back, completes),
//! and completes after its translation and data latencies; at most `mshrs`
//! cache misses and `walkers` page walks are in flight on its core ([`Units`], which the
//! memory side keeps per core: SMT contexts share them). Non-memory instructions take one
//! cycle. So independent misses overlap (memory-level parallelism) and pointer chasing
//! does not.
//!
//! The module is named `timing` rather than `core` so it cannot shadow Rust's `core` crate.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::param::{component, Limit};

component! {
    /// A core's out-of-order window and its resources (`core.*`).
    CoreParams {
        freq_ghz: f64 = 2.0; "freq_ghz"; Some(Limit::Real(1000.0)); "core clock in GHz (converts DRAM nanoseconds to cycles)";
        width: u64 = 4; "width"; Some(Limit::Int(1024)); "instructions dispatched per cycle";
        rob: u64 = 224; "rob"; Some(Limit::Int(1 << 16)); "reorder-buffer entries: how far dispatch may run ahead of the oldest unfinished instruction";
        mshrs: u64 = 10; "mshrs"; Some(Limit::Int(4096)); "L1D misses in flight at once";
        store_buffer: u64 = 56; "store_buffer"; Some(Limit::Int(4096)); "store-buffer entries: a store retires into one once translated and holds it until it commits, in order, with its line there; a full buffer holds the next store's retirement (0: unlimited)";
        walkers: u64 = 2; "walkers"; Some(Limit::Int(4096)); "page walks in flight at once";
        lq: u64 = 0; "lq"; Some(Limit::Int(1 << 16)); "load-queue entries: a load holds one from dispatch until its data arrives, and a load finding none free waits to dispatch, with everything behind it (0: unlimited)";
        inflight: bool = true; "inflight"; None; "in-flight state: a reference waits for work in flight that it needs (the fill of its line: an MSHR merge; the walk of its 4 KB page: a TLB-miss merge) (false: caches and TLBs serve a line or translation the moment its access is simulated; for ablation)";
        lookahead: u64 = 0; "lookahead"; Some(Limit::Int(256)); "references a dependent reference (one that waits for its producer) looks ahead, within the reorder buffer, for a younger one that does not wait for it and accesses its 4 KB page (any load or store) or its line (a load): that one issues first, and starts the walk or the fill the dependent one merges into; 8 finds every case in the calibration traces (0: off, the default: the kernels record every reference's producer, which leaves it nothing to find; docs/timing.md)";
    }
    check(p, key) {
        for (name, v) in [("width", p.width), ("rob", p.rob), ("mshrs", p.mshrs), ("walkers", p.walkers)] {
            if v == 0 {
                return Err(crate::param::invalid(key(name), "must be at least 1"));
            }
        }
        // (A clock below 10 MHz rounds every DRAM latency to no cycles.)
        if p.freq_ghz.is_nan() || p.freq_ghz < 0.01 {
            return Err(crate::param::invalid(key("freq_ghz"), "must be at least 0.01 (10 MHz)"));
        }
        Ok(())
    }
}

/// A pool of `n` identical units (MSHRs, page walkers), granted first come first served by
/// cycle, as hardware grants them. Requests do not reach the pool in time order: references
/// are simulated in program order, and one that waited for its producer books a miss far
/// ahead, after which the next, independent one wants a unit now. So the pool keeps its live
/// bookings (request cycle, start, end), and a request at `t` waits only for the units held by
/// requests made no later than `t`: it starts at the first cycle from `t` on where fewer than
/// `n` of those are busy. A booking made earlier for a request later in time does not hold it
/// back (in time order that request came second). It is booked already, so the two overlap
/// and more than `n` units are busy for a while; the cycles over `n` are the later request's
/// wait, which it cannot take any more (its reference is timed), so they are booked again as
/// its work from its booking's end, where units are free ([`Units::book`]): the pool never does
/// more than `n` units' work a cycle, and a request after both waits as in time order.
/// Checked against a cycle-stepped out-of-order reference (`tests/timing_reference.rs`):
/// within 3 % on a BFS-like stream with 10 MSHRs. (Waiting for every booking in force, later
/// requests' included, ran +12 % there: docs/timing.md.) Requests never come before the
/// dispatch clock of the contexts that share the units, so the bookings that end before it
/// are dropped.
pub struct Units {
    n: u32,
    /// Busy units per cycle, for the cycles `[base, top)`: cycle `x` is cell `x & mask`. Every
    /// other cell is 0, and so is every cycle from `top` on. (Per cycle rather than per change:
    /// a booking is a few hundred cycles, so marking it is one vectorized loop, and the count
    /// at a request's cycle is one load, where a list of changes needs searches. Sixteen bits
    /// suffice: a count saturates at 65,535 bookings in force at once, far above any pool's
    /// `n` (at most 4,096) plus the later requests' bookings a request leaves out.)
    counts: Vec<u16>,
    mask: u64,
    base: u64,
    top: u64,
    /// The live bookings' ends, in order, from `ends_head` on: the only cycles after a
    /// request's own where the count can fall, so the only ones a search tries. Kept from the
    /// first request that must wait on (`searched`): a pool that never fills, as the MSHRs on
    /// most workloads, never needs them.
    ends: Vec<u64>,
    ends_head: usize,
    searched: bool,
    /// `(r, a, b)`: every unit is busy over `[a, b)` for a request at `r`, as a search found.
    /// It stays so for any request at `r` or later: bookings only add to the count, and a later
    /// request counts every booking an earlier one does; and for an earlier one when no
    /// booking of a request later than it falls before `b` (the usual way requests a few
    /// cycles out of order meet: the later one booked the end of the queue). A queue of walks
    /// waiting for a walker is thousands of cycles long, and each request would otherwise
    /// scan it from its own cycle.
    busy_span: (u64, u64, u64),
    /// The live bookings (request cycle, start, end) by request cycle: those made for requests
    /// later than a request's cycle are taken out of its count. (Entries that ended before the
    /// floor are dropped now and then.)
    by_req: Vec<(u64, u64, u64)>,
    /// Scratch: the starts and ends of the bookings of later requests in force after a
    /// request's cycle (apart, so that counting those in force at a cycle is a few vector
    /// compares: a queue of walks holds dozens).
    later_starts: Vec<u32>,
    later_ends: Vec<u32>,
    /// The request cycle `later_starts` and `later_ends` count from, and the first of those
    /// starts (before it, none counts: the usual case, as a later request's booking mostly
    /// starts after the units an earlier one waits for are free).
    later_base: u64,
    later_first: u32,
    /// `by_req`'s length after its last pruning.
    by_req_live: usize,
    /// Scratch: the ends of the bookings running at a request that goes ahead of the queue
    /// ([`Units::start_ahead`]).
    running: Vec<u64>,
}

impl Units {
    /// The cycles the counts first cover; they grow to cover the furthest booking.
    const FIRST_CAP: usize = 1 << 14;
    /// Bookings further than this past the floor mean the floor has not moved for a long time
    /// (it cannot happen with a window of a few hundred references and a store buffer); the
    /// oldest cycles are then forgotten (a request there finds every unit free), so host
    /// memory stays bounded (8 MB of counts).
    const MAX_CAP: u64 = 1 << 22;

    pub fn new(n: u64) -> Units {
        Units {
            n: n.clamp(1, u32::MAX as u64) as u32,
            counts: vec![0; Self::FIRST_CAP],
            mask: Self::FIRST_CAP as u64 - 1,
            base: 0,
            top: 0,
            ends: Vec::new(),
            ends_head: 0,
            searched: false,
            busy_span: (u64::MAX, 0, 0),
            by_req: Vec::new(),
            later_starts: Vec::new(),
            later_ends: Vec::new(),
            later_base: 0,
            later_first: u32::MAX,
            by_req_live: 0,
            running: Vec::new(),
        }
    }

    /// Reserve a unit for an operation that wants to start at `t` and lasts `dur` cycles, when
    /// no request will come before `floor`. Returns the cycle it actually starts (later than
    /// `t` if `n` units are busy at `t`).
    #[inline]
    pub fn acquire(&mut self, t: u64, dur: u64, floor: u64) -> u64 {
        let start = self.start(t, floor);
        self.book(t, start, dur);
        start
    }

    /// When an operation that wants to start at `t` would start, without booking it (a walk
    /// learns its start before its reads, its length after).
    #[inline]
    pub fn start(&mut self, t: u64, floor: u64) -> u64 {
        self.forget_before(floor.min(t));
        // Free counting every booking: free counting fewer (the usual case, at once).
        if self.busy(t) < self.n {
            return t;
        }
        if !self.searched {
            self.searched = true;
            let base = self.base;
            self.ends.extend(self.by_req.iter().map(|b| b.2).filter(|&e| e > base));
            self.ends.sort_unstable();
        }
        // The bookings of requests later than `t` still in force after it: from the end of
        // the list, which is in request order (a few, or none: most requests come in order).
        self.later_starts.clear();
        self.later_ends.clear();
        self.later_base = t;
        self.later_first = u32::MAX;
        for &(req, s, e) in self.by_req.iter().rev() {
            if req <= t {
                break;
            }
            if e > t {
                // (As cycles after `t`, in 32 bits: four to a compare. No booking is 2^32
                // cycles out: the counts forget what is MAX_CAP behind the furthest.)
                let ds = (s - t).min(u64::from(u32::MAX)) as u32;
                self.later_first = self.later_first.min(ds);
                self.later_starts.push(ds);
                self.later_ends.push((e - t).min(u64::from(u32::MAX)) as u32);
            }
        }
        // Skip what an earlier search found all busy (see `busy_span`): from it if `t` is in
        // it, else (a request a few cycles before the last, as a store's walk to set a D bit
        // comes before the walk of the load ahead of it) when the search gets there.
        let (req, from, to) = self.busy_span;
        let holds = req <= t || self.later_starts.iter().all(|&s| u64::from(s) >= to.saturating_sub(t));
        let valid = holds && from <= t && t < to;
        let x = if valid { to } else { t };
        let skip = if holds && t < from { (from, to) } else { (0, 0) };
        let s = self.first_free(x, skip);
        self.busy_span = (t, if x == t { t } else { from }, s);
        s
    }

    /// When a request at `t` that goes ahead of the requests waiting for a unit would start:
    /// at `t` if a unit is free then, else when the first of the units running at `t` frees
    /// (the bookings of requests no later than `t` that started by then). A page walk's read
    /// at the L1D's MSHRs is such a request: the walker has a port of its own into the L1D,
    /// and the cache arbitrates between its ports a cycle at a time (ChampSim rotates its
    /// upper levels every cycle), so a walk read waits for the next MSHR to free, not behind
    /// every load that waits for one. Book it with [`Units::book`]: the cycles it puts over
    /// `n` go to the requests it passed, as their work, where units are free.
    pub fn start_ahead(&mut self, t: u64, floor: u64) -> u64 {
        self.forget_before(floor.min(t));
        // (Every booking counted is a superset of those running: free then, free now.)
        if self.busy(t) < self.n {
            return t;
        }
        self.running.clear();
        self.running.extend(self.by_req.iter().filter(|b| b.0 <= t && b.1 <= t && b.2 > t).map(|b| b.2));
        let n = self.n as usize;
        if self.running.len() < n {
            return t;
        }
        // With k running, the count falls below n at the (k - n + 1)-th end.
        let k = self.running.len() - n;
        *self.running.select_nth_unstable(k).1
    }

    /// One more unit busy for `dur` cycles from `s` (where [`Units::start`] said, or anywhere),
    /// for a request at `t`. Where that makes more than `n` busy, bookings of later requests
    /// overlap it (booked first, as they were simulated first): in time order they would have
    /// waited. What they cannot have done then, the cycles over `n`, is done later, where a
    /// unit is free ([`Units::displace`]), so the pool does no more work a cycle than its `n`
    /// units can.
    #[inline]
    pub fn book(&mut self, t: u64, s: u64, dur: u64) {
        if dur > 0 {
            let over = self.mark(s, s + dur);
            self.record(t, s, s + dur);
            if over > 0 {
                self.displace(t, s, s + dur, over);
            }
        }
    }

    /// Keep the booking `[s, e)` of a request at `t` (its cycles are counted already).
    #[inline]
    fn record(&mut self, t: u64, s: u64, e: u64) {
        if self.searched {
            // (From the back: a new booking mostly ends last. A displaced one ends far out.)
            let at = place_from_back(&self.ends[self.ends_head..], |&x| x <= e);
            self.ends.insert(self.ends_head + at, e);
        }
        // (From the end: a request out of order is mostly a few bookings behind; behind a
        // queue of walks, dozens.)
        let at = place_from_back(&self.by_req, |b| b.0 <= t);
        self.by_req.insert(at, (t, s, e));
    }

    /// The booking `[s, e)` for a request at `t` made more than `n` units busy over `over` of
    /// its cycles. Those cycles are the wait of the latest request after `t` with a booking
    /// over `[s, e)` (of those that came after it in time, the last waits): they are booked as
    /// that request's work from its booking's end, one unit at a time, in the first cycles
    /// with fewer than `n` busy (from `e`, as this request's, if no later request's booking
    /// overlaps). (Not cold: on BFS's MSHRs 43 % of bookings come here.)
    #[inline(never)]
    fn displace(&mut self, t: u64, s: u64, e: u64, mut over: u64) {
        let n = self.n.min(u32::from(u16::MAX)) as u16;
        let (mut req, mut x) = (t, e);
        for &(r, bs, be) in self.by_req.iter().rev() {
            if r <= t {
                break;
            }
            if bs < e && be > s {
                (req, x) = (r, be);
                break;
            }
        }
        // The free cycles from `x` on until `over` are taken, a booking a run of them; none is
        // busy from `top` on. (A contiguous stretch of cells at a time: one, or two where the
        // ring wraps; a queue of walks keeps every walker busy for thousands of cycles.)
        let mut from = None;
        while over > 0 {
            if x >= self.top {
                from.get_or_insert(x);
                self.mark(x, x + over);
                x += over;
                break;
            }
            let i = (x & self.mask) as usize;
            let len = (self.top - x).min(self.counts.len() as u64 - i as u64) as usize;
            let cells = &mut self.counts[i..i + len];
            let full = first(cells, |c| c < n);
            if full > 0 {
                if let Some(f) = from.take() {
                    self.record(req, f, x);
                }
                x += full as u64;
                continue;
            }
            let free = first(cells, |c| c >= n).min(over as usize);
            cells[..free].iter_mut().for_each(|c| *c += 1);
            from.get_or_insert(x);
            over -= free as u64;
            x += free as u64;
        }
        if let Some(f) = from {
            self.record(req, f, x);
        }
    }

    /// The units busy at cycle `x` (none before the floor: forgotten).
    #[inline]
    fn busy(&self, x: u64) -> u32 {
        if x >= self.top || x < self.base {
            0
        } else {
            u32::from(self.counts[(x & self.mask) as usize])
        }
    }

    /// The first cycle `s >= t` with fewer than `n` units busy, not counting the bookings in
    /// `later`: `t`, or the first booking's end after it where that holds, skipping
    /// `[skip.0, skip.1)`, known to be all busy (and trying `skip.1` itself).
    #[inline]
    fn first_free(&self, t: u64, skip: (u64, u64)) -> u64 {
        // The units busy at `x` not counting the later requests' bookings.
        let own = |x: u64| {
            let dx = x.saturating_sub(self.later_base).min(u64::from(u32::MAX)) as u32;
            let later: u32 = if dx < self.later_first {
                0
            } else {
                self.later_starts.iter().zip(&self.later_ends).map(|(&s, &e)| u32::from(s <= dx) & u32::from(dx < e)).sum()
            };
            self.busy(x).saturating_sub(later)
        };
        let busy = own(t);
        if busy < self.n {
            return t;
        }
        // Only an end of a booking counted can bring the count down, by one: with `busy` in
        // force at a cycle, the next `busy - n` ends cannot free a unit, and are passed
        // without a look (a queue of walks dozens deep for two walkers passes most).
        let mut pass = (busy - self.n) as usize;
        let live = &self.ends[self.ends_head..];
        let mut i = live.partition_point(|&e| e <= t) + pass;
        while i < live.len() {
            let e = live[i];
            if skip.0 <= e && e < skip.1 {
                let busy = own(skip.1);
                if busy < self.n {
                    return skip.1;
                }
                pass = (busy - self.n) as usize;
                i += live[i..].partition_point(|&e| e <= skip.1) + pass;
                continue;
            }
            let busy = own(e);
            if busy < self.n {
                return e;
            }
            pass = (busy - self.n) as usize;
            i += 1 + pass;
        }
        // (Not reached: every unit is free at the last end. Nothing is busy from `top` on.)
        self.top.max(t)
    }

    /// One unit more busy over `[s, e)` from the floor on, widening the counts to reach `e`;
    /// returns how many of its cycles then have more than `n` busy (0 if it is all before the
    /// floor). (The marking loop keeps only the largest count, one vector operation more; most
    /// bookings make none over `n`, and the few that do are counted in a second pass.)
    #[inline]
    fn mark(&mut self, s: u64, e: u64) -> u64 {
        let x = s.max(self.base);
        if x >= e {
            return 0;
        }
        if e - self.base > self.counts.len() as u64 {
            self.grow(e);
        }
        self.top = self.top.max(e);
        let n = self.n.min(u32::from(u16::MAX)) as u16;
        let mut most = 0u16;
        self.each_run(x, e, |run| {
            for c in run.iter_mut() {
                *c = c.saturating_add(1);
                most = most.max(*c);
            }
        });
        if most <= n {
            return 0;
        }
        let mut over = 0u64;
        // (Summed in 16 bits, a chunk at a time, so that it stays one vector add a cell.)
        self.each_run(x, e, |run| {
            for chunk in run.chunks(1 << 15) {
                over += u64::from(chunk.iter().map(|&c| u16::from(c > n)).sum::<u16>());
            }
        });
        over
    }

    /// Apply `f` to the cells of the cycles `[a, b)` (within the ring's reach), one contiguous
    /// run at a time: one, or two where the ring wraps.
    #[inline]
    fn each_run(&mut self, mut a: u64, b: u64, mut f: impl FnMut(&mut [u16])) {
        while a < b {
            let i = (a & self.mask) as usize;
            let len = (b - a).min(self.counts.len() as u64 - i as u64) as usize;
            f(&mut self.counts[i..i + len]);
            a += len as u64;
        }
    }

    /// Cover the cycles up to `e`: twice the cycles until they do, up to [`Units::MAX_CAP`];
    /// beyond that, forget the cycles before `e - MAX_CAP`.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, e: u64) {
        let want = e - self.base;
        if want > Self::MAX_CAP {
            self.forget_before(e - Self::MAX_CAP);
            if e - self.base <= self.counts.len() as u64 {
                return;
            }
        }
        let cap = (e - self.base).next_power_of_two().max(self.counts.len() as u64 * 2);
        let mut counts = vec![0; cap as usize];
        let mask = cap - 1;
        for x in self.base..self.top {
            counts[(x & mask) as usize] = self.counts[(x & self.mask) as usize];
        }
        (self.counts, self.mask) = (counts, mask);
    }

    /// Forget the cycles before `floor` (no request comes before it).
    #[inline]
    fn forget_before(&mut self, floor: u64) {
        if floor <= self.base {
            return;
        }
        // Their cells become the cycles after the last one covered: clear them.
        let end = floor.min(self.top);
        if end > self.base {
            if end - self.base >= self.counts.len() as u64 {
                self.counts.fill(0);
            } else {
                self.each_run(self.base, end, |run| run.fill(0));
            }
        }
        self.base = floor;
        self.top = self.top.max(floor);
        while self.ends_head < self.ends.len() && self.ends[self.ends_head] <= floor {
            self.ends_head += 1;
        }
        // (Drop the ends passed once they are as many as the live ones: amortized.)
        if self.ends_head >= 64 && self.ends_head * 2 >= self.ends.len() {
            self.ends.drain(..self.ends_head);
            self.ends_head = 0;
        }
        // (Drop the bookings that ended once the list has doubled since: amortized.)
        if self.by_req.len() >= 2 * self.by_req_live.max(32) {
            self.by_req.retain(|b| b.2 > floor);
            self.by_req_live = self.by_req.len();
        }
    }
}

/// Where a new element goes in `v`, sorted so that `before` holds for a first part: after the
/// last element for which it holds. Looked for from the back (a new element mostly goes last),
/// by binary search past eight steps.
#[inline]
fn place_from_back<T>(v: &[T], before: impl Fn(&T) -> bool) -> usize {
    let mut at = v.len();
    for _ in 0..8 {
        if at == 0 || before(&v[at - 1]) {
            return at;
        }
        at -= 1;
    }
    v[..at].partition_point(before)
}

/// The index of the first cell for which `f` holds, or the length: sixteen cells at a time,
/// which the compiler checks at once.
#[inline]
fn first(cells: &[u16], f: impl Fn(u16) -> bool) -> usize {
    let mut i = 0;
    for chunk in cells.chunks_exact(16) {
        if chunk.iter().fold(false, |any, &c| any | f(c)) {
            break;
        }
        i += 16;
    }
    i + cells[i..].iter().position(|&c| f(c)).unwrap_or(cells.len() - i)
}

pub struct Window {
    width: u64,
    /// `log2(width)` when the width is a power of two (cycles from `dispatch_x` by a shift,
    /// not a division, on every reference), else `u32::MAX`.
    width_shift: u32,
    rob: u64,
    /// Dispatch clock in 1/width cycles.
    dispatch_x: u64,
    /// The cycle of `dispatch_x` (`now()`), kept as it changes: the run loop asks every core's
    /// clock at every reference, and a division by a width of 6 is not free.
    now: u64,
    /// Index of the last instruction dispatched.
    instr: u64,
    /// Memory references in the window: (instruction index, retire cycle), oldest first.
    inflight: Ring,
    last_retire: u64,
    /// Completion cycles of the last 256 memory references, by their count modulo 256 (the
    /// producers a dependent reference may name).
    completes: [u64; 256],
    /// Memory references completed.
    done: u64,
    /// Cycles dispatch waited for a full ROB.
    pub rob_stall_cycles: u64,
    /// The load queue: when its loads' data arrive.
    lq: LoadQueue,
    /// Whether the reference dispatched last is a load (it holds a load-queue entry).
    load: bool,
    /// Cycles dispatch waited for a load-queue entry (beyond a full ROB).
    pub lq_stall_cycles: u64,
    /// The store buffer (empty when unlimited): the cycles its stores commit, oldest first.
    stores: StoreBuffer,
    /// Cycles retirement waited for a store-buffer entry (beyond the older instructions).
    pub store_buffer_stall_cycles: u64,
}

/// The store buffer: a store retires into it once translated and holds its entry until it
/// commits, in program order (x86 stores become visible in order) and not before its line
/// is there; with every entry taken, the next store retires when the oldest commits. Without
/// it, store misses (which do not hold up retirement) would book MSHRs ever further ahead of
/// the loads, without bound, on a stream of stores.
struct StoreBuffer {
    /// Commit cycles, a ring of `entries` (0: unlimited, nothing kept).
    commits: Vec<u64>,
    head: usize,
    len: usize,
    /// The latest commit: the next store commits no earlier.
    last: u64,
}

impl StoreBuffer {
    fn new(entries: usize) -> StoreBuffer {
        StoreBuffer { commits: vec![0; entries], head: 0, len: 0, last: 0 }
    }

    /// A store translated at `t` whose line is there at `arrival`: returns the cycle it
    /// retires (into the buffer), at least `t + 1`.
    #[inline]
    fn retire(&mut self, t: u64, arrival: u64) -> u64 {
        let n = self.commits.len();
        if n == 0 {
            return t + 1;
        }
        let mut retire = t + 1;
        if self.len == n {
            retire = retire.max(self.commits[self.head]);
            self.head = (self.head + 1) % n;
            self.len -= 1;
        }
        self.last = self.last.max(arrival).max(retire);
        self.commits[(self.head + self.len) % n] = self.last;
        self.len += 1;
        retire
    }
}

/// The load queue: a load holds an entry from its dispatch until its data arrives, as
/// ChampSim frees them (out of order), so a load finding every entry held dispatches when the
/// first of them is freed. Holds the arrival cycles of the loads in flight, earliest on top.
struct LoadQueue {
    /// Entries (0: unlimited, nothing kept).
    entries: usize,
    held: BinaryHeap<Reverse<u64>>,
}

impl LoadQueue {
    fn new(entries: usize) -> LoadQueue {
        LoadQueue { entries, held: BinaryHeap::with_capacity(entries + 1) }
    }

    /// The first cycle from `t` on when a load finds a free entry.
    #[inline]
    fn admit(&mut self, mut t: u64) -> u64 {
        while let Some(&Reverse(free)) = self.held.peek() {
            if free > t && self.held.len() < self.entries {
                break;
            }
            t = t.max(free);
            self.held.pop();
        }
        t
    }

    /// A load dispatched last holds its entry until `arrival`.
    #[inline]
    fn hold(&mut self, arrival: u64) {
        self.held.push(Reverse(arrival));
    }
}

/// A FIFO of (instruction index, retire cycle): a power-of-two ring with masked indices,
/// sized for the ROB. It holds more only when many references share instructions
/// (`inst_delta` 0), and then doubles.
struct Ring {
    buf: Vec<(u64, u64)>,
    mask: usize,
    head: usize,
    len: usize,
}

impl Ring {
    fn new(capacity: usize) -> Ring {
        let n = capacity.next_power_of_two();
        Ring { buf: vec![(0, 0); n], mask: n - 1, head: 0, len: 0 }
    }

    #[inline]
    fn front(&self) -> Option<(u64, u64)> {
        (self.len > 0).then(|| self.buf[self.head])
    }

    /// The `i`th oldest entry (`i < len`).
    #[inline]
    fn get(&self, i: usize) -> (u64, u64) {
        self.buf[(self.head + i) & self.mask]
    }

    #[inline]
    fn pop_front(&mut self) {
        self.head = (self.head + 1) & self.mask;
        self.len -= 1;
    }

    #[inline]
    fn push_back(&mut self, v: (u64, u64)) {
        if self.len == self.buf.len() {
            self.grow();
        }
        self.buf[(self.head + self.len) & self.mask] = v;
        self.len += 1;
    }

    #[cold]
    fn grow(&mut self) {
        let mut buf = Vec::with_capacity(self.buf.len() * 2);
        buf.extend((0..self.len).map(|i| self.buf[(self.head + i) & self.mask]));
        buf.resize(self.buf.len() * 2, (0, 0));
        self.buf = buf;
        self.mask = self.buf.len() - 1;
        self.head = 0;
    }
}

impl Window {
    /// A window of `rob` instructions dispatched `width` a cycle, with a store buffer of
    /// `store_buffer` entries and a load queue of `lq` (0: unlimited).
    pub fn new(width: u64, rob: u64, store_buffer: u64, lq: u64) -> Window {
        Window {
            width,
            width_shift: if width.is_power_of_two() { width.trailing_zeros() } else { u32::MAX },
            rob,
            dispatch_x: 0,
            now: 0,
            instr: 0,
            inflight: Ring::new(rob as usize + 1),
            last_retire: 0,
            completes: [0; 256],
            done: 0,
            rob_stall_cycles: 0,
            lq: LoadQueue::new(lq as usize),
            load: false,
            lq_stall_cycles: 0,
            stores: StoreBuffer::new(store_buffer as usize),
            store_buffer_stall_cycles: 0,
        }
    }

    /// The core's local clock: the cycle at which it dispatches its next instruction.
    #[inline]
    pub fn now(&self) -> u64 {
        debug_assert_eq!(self.now, self.cycle_of(self.dispatch_x));
        self.now
    }

    #[inline]
    fn cycle_of(&self, x: u64) -> u64 {
        if self.width_shift != u32::MAX {
            x >> self.width_shift
        } else {
            x / self.width
        }
    }

    /// Dispatch the next reference, `inst_delta` instructions after the previous one (0: a
    /// second memory operand of the same instruction, as in a read-modify-write), dependent on
    /// the memory reference `producer` back (0: none; see [`crate::Ref::producer`]); a `load`
    /// takes a load-queue entry. Returns the cycle it may issue.
    #[inline]
    pub fn dispatch(&mut self, inst_delta: u32, producer: u8, load: bool) -> u64 {
        let delta = inst_delta as u64;
        self.instr += delta;
        self.dispatch_x += delta;
        // The window holds `rob` instructions: this one enters when the one `rob` older
        // has retired. Only memory references can retire late; others retire on time.
        let oldest_allowed = self.instr.saturating_sub(self.rob);
        let mut free_at = 0;
        while let Some((idx, retire)) = self.inflight.front() {
            if idx > oldest_allowed {
                break;
            }
            free_at = free_at.max(retire);
            self.inflight.pop_front();
        }
        let mut t = self.cycle_of(self.dispatch_x);
        if free_at > t {
            self.rob_stall_cycles += free_at - t;
            t = free_at;
            self.dispatch_x = t * self.width;
        }
        self.load = load && self.lq.entries > 0;
        if self.load {
            let admitted = self.lq.admit(t);
            if admitted > t {
                self.lq_stall_cycles += admitted - t;
                t = admitted;
                self.dispatch_x = t * self.width;
            }
        }
        self.now = t;
        let k = u64::from(producer);
        if k > 0 && k <= self.done {
            t = t.max(self.completes[((self.done - k) & 255) as usize]);
        }
        t
    }

    /// When a younger reference, `delta` instructions after the one dispatched last (and not
    /// yet completed) and within the reorder buffer of it, could issue: at its dispatch,
    /// which waits for the instruction `rob` older than it to retire, and not before its
    /// producer, `back` memory references before the one dispatched last (0: none),
    /// completes. (Its load-queue entry is not considered.) See [`crate::timing::inflight`].
    /// Beyond the reorder buffer (an SMT context's share of it), `u64::MAX`: it dispatches
    /// only once the one dispatched last retires.
    pub fn younger_issue(&self, delta: u32, back: u8) -> u64 {
        if u64::from(delta) >= self.rob {
            return u64::MAX;
        }
        let mut t = self.cycle_of(self.dispatch_x + u64::from(delta));
        let oldest = (self.instr + u64::from(delta)).saturating_sub(self.rob);
        for i in 0..self.inflight.len {
            let (idx, retire) = self.inflight.get(i);
            if idx > oldest {
                break;
            }
            t = t.max(retire);
        }
        let k = u64::from(back);
        if k > 0 && k <= self.done {
            t = t.max(self.completes[((self.done - k) & 255) as usize]);
        }
        t
    }

    /// The memory reference dispatched last completes at `complete`.
    #[inline]
    pub fn complete(&mut self, complete: u64) {
        if self.load {
            self.lq.hold(complete);
        }
        self.completes[(self.done & 255) as usize] = complete;
        self.done += 1;
        self.last_retire = self.last_retire.max(complete);
        self.inflight.push_back((self.instr, self.last_retire));
    }

    /// The store dispatched last was translated at `t` and has its line at `arrival`: it
    /// completes when it retires into the store buffer.
    #[inline]
    pub fn complete_store(&mut self, t: u64, arrival: u64) {
        let retire = self.stores.retire(t, arrival);
        // (Only what in-order retirement does not wait for anyway.)
        self.store_buffer_stall_cycles += retire.saturating_sub(self.last_retire.max(t + 1));
        self.complete(retire);
    }

    /// Instructions dispatched so far.
    pub fn instructions(&self) -> u64 {
        self.instr
    }

    /// Cycles to run everything dispatched so far to retirement.
    pub fn cycles(&self) -> u64 {
        self.now().max(self.last_retire)
    }

    /// Stall dispatch until `t` (a page fault or a context switch occupies the core).
    pub fn stall_until(&mut self, t: u64) {
        let t = t.max(self.last_retire);
        if t * self.width > self.dispatch_x {
            self.dispatch_x = t * self.width;
            self.now = t;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn independent_misses_overlap_dependent_ones_do_not() {
        let mut w = Window::new(4, 224, 0, 0);
        for _ in 0..10 {
            let t = w.dispatch(1, 0, false);
            w.complete(t + 200);
        }
        let overlapped = w.cycles();
        assert!(overlapped < 210, "ten independent 200-cycle misses overlap: {overlapped}");

        let mut w = Window::new(4, 224, 0, 0);
        for _ in 0..10 {
            let t = w.dispatch(1, 1, false);
            w.complete(t + 200);
        }
        assert_eq!(w.cycles(), 2000, "pointer chasing serialises");
    }

    /// A list walk that also reads each node's payload (`p = p->next; sum += p->val`): the
    /// next `p->next` depends on the `p->next` two references back, not on the payload load.
    /// The hops issue 200 cycles apart, whatever the payloads take (500 or 10 cycles).
    #[test]
    fn a_producer_further_back_is_waited_for_and_nothing_else() {
        let mut w = Window::new(4, 224, 0, 0);
        let mut hops = Vec::new();
        for i in 0..10 {
            let next = w.dispatch(1, if i == 0 { 0 } else { 2 }, false);
            hops.push(next);
            w.complete(next + 200);
            let val = w.dispatch(1, 1, false);
            assert_eq!(val, next + 200, "the payload waits for its node");
            w.complete(val + if i % 2 == 0 { 500 } else { 10 });
        }
        assert_eq!(hops, (0..10).map(|i| i * 200).collect::<Vec<u64>>());
        // Retirement is in order: the run ends when hop 8's 500-cycle payload completes.
        assert_eq!(w.cycles(), 8 * 200 + 200 + 500);
        // A producer beyond what the window has seen is no constraint.
        let mut w = Window::new(4, 224, 0, 0);
        assert_eq!(w.dispatch(1, 5, false), 0);
    }

    /// A load takes a load-queue entry from dispatch until its data arrives; entries free out
    /// of order, and a load finding none free dispatches when the first is freed, with what
    /// follows it. Stores take none.
    #[test]
    fn a_full_load_queue_stalls_dispatch() {
        let mut w = Window::new(1, 224, 0, 2);
        let a = w.dispatch(1, 0, true);
        w.complete(a + 500);
        let b = w.dispatch(1, 0, true);
        w.complete(b + 100);
        assert_eq!((a, b), (1, 2));
        let s = w.dispatch(1, 0, false);
        w.complete(s + 1);
        assert_eq!(s, 3, "a store needs no entry");
        let c = w.dispatch(1, 0, true);
        assert_eq!(c, 102, "the second load's entry frees first, at 102");
        w.complete(c + 100);
        assert_eq!(w.dispatch(1, 0, false), 103, "and what follows waits with it");
        assert_eq!(w.dispatch(1, 0, true), 202, "the third load's entry frees at 202, before the first's at 501");
        assert_eq!(w.lq_stall_cycles, (102 - 4) + (202 - 104));
        // Without a load queue nothing waits.
        let mut w = Window::new(1, 224, 0, 0);
        for i in 1..=100 {
            let t = w.dispatch(1, 0, true);
            assert_eq!(t, i);
            w.complete(t + 10_000);
        }
    }

    #[test]
    fn a_younger_reference_issues_at_its_dispatch_once_the_rob_and_its_producer_allow() {
        // Width 4, ROB 8. A load that takes 100 cycles; a second that depends on it.
        let mut w = Window::new(4, 8, 0, 0);
        let t = w.dispatch(1, 0, true);
        w.complete(t + 100);
        assert_eq!(w.dispatch(1, 1, true), 100);
        // Two instructions after the second: dispatched in cycle 1, free to issue then.
        assert_eq!(w.younger_issue(2, 0), 1);
        // Seven after: it needs the first load's ROB entry, free when that load retires.
        assert_eq!(w.younger_issue(7, 0), 100);
        // Or it waits for the first load's data.
        assert_eq!(w.younger_issue(2, 1), 100);
        // Eight after is beyond the reorder buffer: not before the second load retires.
        assert_eq!(w.younger_issue(8, 0), u64::MAX);
    }

    #[test]
    fn full_rob_stalls_dispatch() {
        // A 200-cycle miss followed by 1000 one-cycle instructions: the ROB (64) fills
        // and dispatch waits for the miss to retire.
        let mut w = Window::new(4, 64, 0, 0);
        let t = w.dispatch(1, 0, false);
        w.complete(t + 200);
        for _ in 0..1000 {
            let t = w.dispatch(1, 0, false);
            w.complete(t + 1);
        }
        assert!(w.rob_stall_cycles > 150, "{}", w.rob_stall_cycles);
        assert!(w.cycles() >= 200 + (1000 - 64) / 4);
    }

    /// Stores retire at once into the buffer, commit in order once their lines are there, and
    /// with every entry taken the next waits for the oldest to commit.
    #[test]
    fn a_full_store_buffer_holds_the_next_store() {
        let mut w = Window::new(4, 224, 2, 0);
        // Two store misses whose lines come at 300 and (out of order) 100.
        let t = w.dispatch(1, 0, false);
        w.complete_store(t, 300);
        let t = w.dispatch(1, 0, false);
        w.complete_store(t, 100);
        assert_eq!(w.cycles(), 1, "both retired into the buffer");
        // The third waits for the oldest, which commits at 300; the fourth for the second,
        // which commits after it (in order), also at 300.
        let t = w.dispatch(1, 0, false);
        w.complete_store(t, t + 1);
        assert_eq!(w.cycles(), 300);
        let t = w.dispatch(1, 0, false);
        w.complete_store(t, t + 1);
        assert_eq!(w.cycles(), 300);
        assert_eq!(w.store_buffer_stall_cycles, 300 - 1, "the fourth waits for nothing the third did not");
        // Unlimited: no store waits.
        let mut w = Window::new(4, 224, 0, 0);
        for _ in 0..100 {
            let t = w.dispatch(1, 0, false);
            w.complete_store(t, t + 10_000);
        }
        assert_eq!((w.cycles(), w.store_buffer_stall_cycles), (26, 0));
    }

    #[test]
    fn units_limit_concurrency() {
        let mut u = Units::new(2);
        assert_eq!(u.acquire(0, 100, 0), 0);
        assert_eq!(u.acquire(0, 100, 0), 0);
        assert_eq!(u.acquire(0, 100, 0), 100);
        assert_eq!(u.acquire(150, 10, 0), 150);
    }

    /// A request waits for the units held by requests no later than its own cycle, and for
    /// nothing booked for later requests.
    #[test]
    fn units_are_granted_first_come_first_served_by_cycle() {
        let mut u = Units::new(1);
        assert_eq!(u.acquire(1000, 100, 0), 1000);
        assert_eq!(u.acquire(0, 100, 0), 0, "the booking at 1000 is a later request's");
        assert_eq!(u.acquire(50, 901, 0), 100, "waits for the request at 0, not the one at 1000");
        // That booking, to 1001, overlaps the one for 1000 by a cycle: in time order the
        // request at 1000 waited for it and ended at 1101, and a request at 1050 waits for that.
        assert_eq!(u.acquire(1050, 10, 0), 1101);
        // Nothing comes before the floor: what ended before it is gone.
        assert_eq!(u.acquire(2500, 10, 2400), 2500);
        assert_eq!((u.base, u.busy(2400), u.busy(2505), u.busy(2510)), (2400, 0, 1, 0));
    }

    /// A worked example with one unit: a request at 60 is booked first, over 60..80; one at
    /// 50, simulated after it, takes the unit at 50 to 150. In time order the one at 60 waited
    /// for it and ran over 150..170, and that is what the pool holds; a request at 55 comes
    /// before it and so runs at 150, pushing it to 170..180; a request at 100 waits for all.
    #[test]
    fn units_book_a_later_requests_wait_as_in_time_order() {
        let mut u = Units::new(1);
        assert_eq!(u.acquire(60, 20, 0), 60);
        assert_eq!(u.acquire(50, 100, 0), 50, "the booking at 60 is a later request's");
        assert_eq!((u.busy(79), u.busy(149), u.busy(150), u.busy(169), u.busy(170)), (2, 1, 1, 1, 0));
        assert_eq!(u.acquire(55, 10, 0), 150, "waits for 50, not for 60's work");
        assert_eq!((u.busy(150), u.busy(170), u.busy(179), u.busy(180)), (2, 1, 1, 0));
        assert_eq!(u.acquire(100, 10, 0), 180);
    }

    /// The pool against a reference model (every booking kept; a start is the first of the
    /// request's cycle and the ends after it where fewer than `n` bookings of requests no later
    /// than it are in force; the cycles a booking makes over `n` are booked as the work of the
    /// latest later request with a booking over it, from that booking's end where fewer than
    /// `n` are busy), on random requests that run ahead and come back.
    #[test]
    fn a_request_ahead_of_the_queue_takes_the_next_unit_to_free() {
        let mut u = Units::new(2);
        assert_eq!(u.acquire(0, 100, 0), 0);
        assert_eq!(u.acquire(0, 50, 0), 0);
        // A request at 10 queues for the first unit to free, at 50.
        assert_eq!(u.acquire(10, 100, 0), 50);
        // One at 20 that goes ahead of the queue takes that unit too: the queued request has
        // not started by 20.
        assert_eq!(u.start(20, 0), 100);
        assert_eq!(u.start_ahead(20, 0), 50);
        u.book(20, 50, 30);
        // The 30 cycles it put over two units are done where one is free, from 100: an
        // ordinary request at 60 waits until 130; one ahead of the queue until the second of
        // the three running at 60 ends, at 100.
        assert_eq!(u.start(60, 0), 130);
        assert_eq!(u.start_ahead(60, 0), 100);
        // With a unit free, at once.
        assert_eq!(u.start_ahead(200, 0), 200);
    }

    #[test]
    fn units_match_a_list_of_bookings() {
        // (Requests spread over 600 cycles, and over 30 arriving faster than they are served:
        // a deep queue met by requests a few cycles out of order, as walks meet the walkers.)
        // (And bookings tens of thousands of cycles long and ahead, past the counts' first
        // reach, which then grow; at a pace the pool keeps up with, as a pool that cannot
        // queues displaced work without end and at last forgets the oldest.)
        for (n, spread, pace, long) in [
            (1u64, 600, 300, 300),
            (2, 600, 150, 300),
            (3, 600, 100, 300),
            (10, 600, 40, 300),
            (1, 30, 240, 300),
            (2, 30, 120, 300),
            (10, 30, 24, 300),
            (2, 40_000, 20_000, 30_000),
        ] {
            let mut u = Units::new(n);
            let mut booked: Vec<(u64, u64, u64)> = Vec::new();
            let mut x = 11u64 + n;
            let mut floor = 0u64;
            let mut displaced = 0u64;
            for _ in 0..1_500 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                floor += x % pace;
                let t = floor + (x >> 8) % spread;
                let dur = (x >> 20) % long;
                let prior: Vec<_> = booked.iter().filter(|b| b.0 <= t).collect();
                let busy = |s: u64| prior.iter().filter(|b| b.1 <= s && s < b.2).count() as u64;
                let want = std::iter::once(t).chain(prior.iter().map(|b| b.2).filter(|&e| e > t)).filter(|&s| busy(s) < n).min().unwrap();
                // A request ahead of the queue: when the units running at t (started by then)
                // are down to n - 1.
                let mut running: Vec<u64> = prior.iter().filter(|b| b.1 <= t && t < b.2).map(|b| b.2).collect();
                running.sort_unstable();
                let ahead = if (running.len() as u64) < n { t } else { running[running.len() - n as usize] };
                assert_eq!(u.start_ahead(t, floor), ahead, "n={n} t={t}: ahead of the queue");
                assert!(ahead <= want);
                assert_eq!(u.acquire(t, dur, floor), want, "n={n} t={t} dur={dur}");
                if dur > 0 {
                    let (s, e) = (want, want + dur);
                    booked.push((t, s, e));
                    // The cycles of [s, e) from the floor on with more than n in force ...
                    let in_force = |booked: &[(u64, u64, u64)], x: u64| booked.iter().filter(|b| b.1 <= x && x < b.2).count() as u64;
                    let next_edge = |booked: &[(u64, u64, u64)], x: u64| booked.iter().flat_map(|b| [b.1, b.2]).filter(|&y| y > x).min().unwrap_or(u64::MAX);
                    let (mut x, mut over) = (s.max(floor), 0);
                    while x < e {
                        let next = next_edge(&booked, x).min(e);
                        if in_force(&booked, x) > n {
                            over += next - x;
                        }
                        x = next;
                    }
                    displaced += over;
                    // ... are the work of the latest request after t with a booking over them
                    // (the last to come waits), done from that booking's end, in the first
                    // cycles with fewer than n in force (one booking a run of them).
                    let (req, mut x) = booked.iter().filter(|b| b.0 > t && b.1 < e && b.2 > s).max_by_key(|b| b.0).map_or((t, e), |b| (b.0, b.2));
                    let mut run: Option<(u64, u64)> = None;
                    while over > 0 {
                        let next = next_edge(&booked, x);
                        if in_force(&booked, x) < n {
                            let len = (next - x).min(over);
                            run = Some(run.map_or((x, x + len), |r| (r.0, x + len)));
                            over -= len;
                            x += len;
                        } else {
                            booked.extend(run.take().map(|r| (req, r.0, r.1)));
                            x = next;
                        }
                    }
                    booked.extend(run.map(|r| (req, r.0, r.1)));
                }
                booked.retain(|b| b.2 > floor);
                for x in [t, want + dur / 2, want + dur, want + 2 * dur] {
                    let model = booked.iter().filter(|b| b.1 <= x && x < b.2).count() as u32;
                    assert_eq!(u.busy(x), model, "units busy at {x}, n={n} t={t} dur={dur}");
                }
            }
            assert!(displaced > 0, "n={n}: no booking was displaced, so none was checked");
        }
    }

    /// A booking millions of cycles past the floor forgets the oldest cycles rather than
    /// cover them all: the counts stay within their bound, and a request there finds the
    /// units free.
    #[test]
    fn units_far_ahead_stay_bounded() {
        let mut u = Units::new(1);
        assert_eq!(u.acquire(0, 100, 0), 0);
        assert_eq!(u.acquire(1 << 40, 100, 0), 1 << 40);
        assert!(u.counts.len() as u64 <= Units::MAX_CAP);
        assert_eq!(u.acquire(50, 10, 0), 50);
        assert_eq!(u.acquire((1 << 40) + 50, 10, 0), (1 << 40) + 100);
    }

    /// The in-flight ring keeps FIFO order across wrap-around and growth (many references
    /// of one instruction), and odd widths divide instead of shifting.
    #[test]
    fn ring_and_odd_width_match_a_plain_queue() {
        let mut r = Ring::new(4);
        let mut q = std::collections::VecDeque::new();
        for i in 0..100u64 {
            r.push_back((i, i * 3));
            q.push_back((i, i * 3));
            if i % 3 == 0 {
                r.pop_front();
                q.pop_front();
            }
            assert_eq!(r.front(), q.front().copied());
            assert_eq!(r.len, q.len());
        }
        let mut w = Window::new(3, 64, 0, 0);
        for _ in 0..30 {
            let t = w.dispatch(1, 0, false);
            w.complete(t + 1);
        }
        assert_eq!(w.now(), 10);
    }
}
