//! The per-context timing window (interval-style, as in Sniper): turns latencies into cycles.
//! It never decides what hits; the memory side (`memory::hierarchy`) tells it how long each part
//! of a reference took.
//!
//! Instructions dispatch `width` per cycle into a `rob`-entry window and retire in order.
//! A memory reference issues when dispatched (or, if dependent, when its producer, an earlier
//! memory reference up to [`Ref::MAX_PRODUCER`](crate::Ref::MAX_PRODUCER) back, completes),
//! and completes after its translation and data latencies; at most `mshrs`
//! cache misses and `walkers` page walks are in flight on its core ([`Units`], which the
//! memory side keeps per core: SMT contexts share them). Non-memory instructions take one
//! cycle. So independent misses overlap (memory-level parallelism) and pointer chasing
//! does not.
//!
//! The module is named `timing` rather than `core` so it cannot shadow Rust's `core` crate.

/// A pool of `n` identical units (MSHRs, page walkers), granted first come first served by
/// cycle, as hardware grants them. Requests do not reach the pool in time order: references
/// are simulated in program order, and one that waited for its producer books a miss far
/// ahead, after which the next, independent one wants a unit now. So the pool keeps its live
/// bookings (request cycle, start, end), and a request at `t` waits only for the units held by
/// requests made no later than `t`: it starts at the first cycle from `t` on where fewer than
/// `n` of those are busy. A booking made earlier for a request later in time does not hold it
/// back (in time order that request would have come second); it is booked already, so the two
/// overlap and more than `n` units are busy for a while. Checked against a cycle-stepped
/// out-of-order reference (`tests/timing_reference.rs`): within 3 % on a BFS-like stream with
/// 10 MSHRs. (Waiting for every booking in force, later requests' included, ran +12 % there:
/// docs/timing.md.) Requests never come before the dispatch clock of the contexts that share
/// the units, so the bookings that end before it are dropped.
pub struct Units {
    n: u32,
    /// `(cycle, busy units from it until the next step)`, in increasing cycle order, from
    /// `head` on (the steps before it are forgotten, and dropped now and then); none busy before
    /// the first step, and the last step's count is 0. Adjacent counts differ.
    steps: Vec<(u64, u32)>,
    head: usize,
    /// Where the last search for a request's cycle ended.
    hint: usize,
    /// The first step after the start the last [`Units::start`] gave (where its booking goes).
    guess: usize,
    /// `(r, a, b)`: every unit is busy over `[a, b)` for a request at `r`, as a search found.
    /// It stays so for any request at `r` or later: bookings only add to the count, and a later
    /// request counts every booking an earlier one does; and for an earlier one when no
    /// booking of a request later than it falls before `b` (the usual way requests a few
    /// cycles out of order meet: the later one booked the end of the queue). A queue of walks
    /// waiting for a walker is dozens of steps long (bookings of requests a few cycles out of
    /// order overlap a little, so the steps do not merge), and each request would otherwise
    /// scan it from its own cycle.
    busy_span: (u64, u64, u64),
    /// The live bookings (request cycle, start, end) by request cycle: those made for requests
    /// later than a request's cycle are taken out of its count. (Entries that ended before the
    /// floor are dropped now and then.)
    by_req: Vec<(u64, u64, u64)>,
    /// Scratch: the bookings of later requests in force after a request's cycle.
    later: Vec<(u64, u64)>,
    /// `by_req`'s length after its last pruning.
    by_req_live: usize,
}

impl Units {
    /// More steps than this means the floor has not moved for a long time (it cannot happen
    /// with a window of a few hundred references); the oldest are then forgotten.
    const MAX_STEPS: usize = 4096;

    pub fn new(n: u64) -> Units {
        Units {
            n: n.clamp(1, u32::MAX as u64) as u32,
            steps: Vec::new(),
            head: 0,
            hint: 0,
            guess: 0,
            busy_span: (u64::MAX, 0, 0),
            by_req: Vec::new(),
            later: Vec::new(),
            by_req_live: 0,
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
        let floor = floor.min(t);
        self.forget_before(floor);
        // Free counting every booking: free counting fewer (the usual case, at once).
        let i = self.after(self.head, t, false);
        if self.busy_before(i) < self.n {
            self.guess = i;
            return t;
        }
        // The bookings of requests later than `t` still in force after it: from the end of
        // the list, which is in request order (a few, or none: most requests come in order).
        self.later.clear();
        for &(req, s, e) in self.by_req.iter().rev() {
            if req <= t {
                break;
            }
            if e > t {
                self.later.push((s, e));
            }
        }
        // Skip what an earlier search found all busy (see `busy_span`).
        let (req, from, to) = self.busy_span;
        let valid = from <= t && t < to && (req <= t || self.later.iter().all(|&(s, _)| s >= to));
        let x = if valid {
            // (Where the last search ended, as likely as not at `to`.)
            self.hint = self.guess;
            to
        } else {
            t
        };
        let s = if self.later.is_empty() { self.first_free(x) } else { self.first_free_before_later(x) };
        self.busy_span = (t, if x == t { t } else { from }, s);
        s
    }

    /// [`Units::first_free`], not counting the bookings in `later`: the first cycle `s >= t`
    /// where the steps' count minus the later bookings in force is below `n`. That count falls
    /// only at a step or where a later booking starts, so those are the cycles to try; and only
    /// where the steps' count is below `n` plus the number of later bookings, so the runs of
    /// steps above that are skipped as [`Units::first_free`] does.
    fn first_free_before_later(&mut self, t: u64) -> u64 {
        let cap = self.n.saturating_add(self.later.len() as u32);
        let mut i = self.after(self.head, t, false);
        let mut x = t;
        loop {
            if self.busy_before(i) >= cap {
                // (The last step's count is 0, so this ends at the latest there.)
                while self.steps[i].1 >= cap {
                    i += 1;
                }
                x = self.steps[i].0;
                i += 1;
            }
            let later = self.later.iter().filter(|&&(s, e)| s <= x && x < e).count() as u32;
            if self.busy_before(i).saturating_sub(later) < self.n {
                self.guess = i;
                return x;
            }
            // The next cycle to try: the next step, or a later booking's start, after `x`.
            let step = self.steps.get(i).map_or(u64::MAX, |&(c, _)| c);
            let start = self.later.iter().map(|&(s, _)| s).filter(|&s| s > x).min().unwrap_or(u64::MAX);
            x = step.min(start);
            debug_assert!(x != u64::MAX, "the last step's count is 0");
            while i < self.steps.len() && self.steps[i].0 <= x {
                i += 1;
            }
        }
    }

    /// One more unit busy for `dur` cycles from `s` (where [`Units::start`] said, or anywhere:
    /// more than `n` may then be busy at once, which later requests wait out).
    #[inline]
    pub fn book(&mut self, t: u64, s: u64, dur: u64) {
        if dur > 0 {
            self.mark(s, s + dur);
            if self.by_req.last().is_none_or(|b| b.0 <= t) {
                self.by_req.push((t, s, s + dur));
            } else {
                let at = self.by_req.partition_point(|b| b.0 <= t);
                self.by_req.insert(at, (t, s, s + dur));
            }
        }
    }

    /// The index of the first step from `from` on that comes after cycle `c` (or at it, with
    /// `at`). Searched from where the last such search ended: successive requests mostly come
    /// at nearby cycles, so this is a step or two where a binary search would be six.
    #[inline]
    fn after(&mut self, from: usize, c: u64, at: bool) -> usize {
        let before = |x: u64| x < c || !at && x == c;
        let mut i = self.hint.clamp(from, self.steps.len());
        let near = i.saturating_sub(4).max(from);
        while i > near && !before(self.steps[i - 1].0) {
            i -= 1;
        }
        let i = if i == near && i > from && !before(self.steps[i - 1].0) {
            from + self.steps[from..i].partition_point(|s| before(s.0))
        } else {
            self.ahead(i, c, at)
        };
        self.hint = i;
        i
    }

    /// The index of the first step from `i` on that comes after cycle `c` (or at it, with
    /// `at`): a few steps one by one, then by bisection (a booking's end can be dozens of
    /// steps past its start).
    #[inline]
    fn ahead(&self, mut i: usize, c: u64, at: bool) -> usize {
        let before = |x: u64| x < c || !at && x == c;
        let near = (i + 4).min(self.steps.len());
        while i < near && before(self.steps[i].0) {
            i += 1;
        }
        if i == near {
            i += self.steps[i..].partition_point(|s| before(s.0));
        }
        i
    }

    /// The index of the first step at or after cycle `c`: where the last [`Units::start`]
    /// ended when the booking is where it said (the usual case), else by bisection.
    #[inline]
    fn at_or_after(&self, c: u64) -> usize {
        let mut g = self.guess.clamp(self.head, self.steps.len());
        if g > self.head && self.steps[g - 1].0 == c {
            g -= 1;
        }
        if (g == self.head || self.steps[g - 1].0 < c) && self.steps.get(g).is_none_or(|x| x.0 >= c) {
            return g;
        }
        self.head + self.steps[self.head..].partition_point(|x| x.0 < c)
    }

    /// The busy count in force just before step `i`.
    #[inline]
    fn busy_before(&self, i: usize) -> u32 {
        if i == self.head {
            0
        } else {
            self.steps[i - 1].1
        }
    }

    /// The first cycle `s >= t` with fewer than `n` units busy at `s`.
    #[inline]
    fn first_free(&mut self, t: u64) -> u64 {
        let mut i = self.after(self.head, t, false);
        let (mut s, mut busy) = (t, self.busy_before(i));
        // (The last step's count is 0, so the loop ends at the latest there.)
        while busy >= self.n {
            (s, busy) = self.steps[i];
            i += 1;
        }
        self.guess = i;
        s
    }

    /// One more unit busy over `[s, e)`.
    fn mark(&mut self, s: u64, e: u64) {
        let a = self.at_or_after(s);
        let a = self.split(a, s);
        let b = self.ahead(a, e, true);
        let b = self.split(b, e);
        for j in a..b {
            self.steps[j].1 += 1;
        }
        if self.steps[b].1 == self.steps[b - 1].1 {
            self.steps.remove(b);
        }
        if a > self.head && self.steps[a].1 == self.steps[a - 1].1 {
            self.steps.remove(a);
        }
        if self.steps.len() - self.head > Self::MAX_STEPS {
            self.head += 1;
        }
    }

    /// The index of a step at cycle `c`, given `i`, the first step at or after it; made if
    /// there was none (with the count in force).
    fn split(&mut self, i: usize, c: u64) -> usize {
        if self.steps.get(i).is_some_and(|&(x, _)| x == c) {
            return i;
        }
        let busy = self.busy_before(i);
        self.steps.insert(i, (c, busy));
        i
    }

    /// Forget the steps that end at or before `floor`.
    #[inline]
    fn forget_before(&mut self, floor: u64) {
        let len = self.steps.len();
        while len - self.head >= 2 && self.steps[self.head + 1].0 <= floor {
            self.head += 1;
        }
        if len - self.head == 1 && self.steps[self.head].0 <= floor {
            self.head = len;
        }
        // (Drop the bookings that ended once the list has doubled since: amortized.)
        if self.by_req.len() >= 2 * self.by_req_live.max(32) {
            self.by_req.retain(|b| b.2 > floor);
            self.by_req_live = self.by_req.len();
        }
        // (Drop them once they are as many as the live ones: amortized, and no ring.)
        if self.head >= 64 && self.head * 2 >= len {
            self.steps.drain(..self.head);
            self.hint = self.hint.saturating_sub(self.head);
            self.head = 0;
        }
    }

    #[cfg(test)]
    fn live(&self) -> &[(u64, u32)] {
        &self.steps[self.head..]
    }
}

pub struct Window {
    width: u64,
    /// `log2(width)` when the width is a power of two (cycles from `dispatch_x` by a shift,
    /// not a division, on every reference), else `u32::MAX`.
    width_shift: u32,
    rob: u64,
    /// Dispatch clock in 1/width cycles.
    dispatch_x: u64,
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
    /// `store_buffer` entries (0: unlimited).
    pub fn new(width: u64, rob: u64, store_buffer: u64) -> Window {
        Window {
            width,
            width_shift: if width.is_power_of_two() { width.trailing_zeros() } else { u32::MAX },
            rob,
            dispatch_x: 0,
            instr: 0,
            inflight: Ring::new(rob as usize + 1),
            last_retire: 0,
            completes: [0; 256],
            done: 0,
            rob_stall_cycles: 0,
            stores: StoreBuffer::new(store_buffer as usize),
            store_buffer_stall_cycles: 0,
        }
    }

    /// The core's local clock: the cycle at which it dispatches its next instruction.
    #[inline]
    pub fn now(&self) -> u64 {
        self.cycle_of(self.dispatch_x)
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
    /// the memory reference `producer` back (0: none; see [`crate::Ref::producer`]).
    /// Returns the cycle it may issue.
    #[inline]
    pub fn dispatch(&mut self, inst_delta: u32, producer: u8) -> u64 {
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
        let k = u64::from(producer);
        if k > 0 && k <= self.done {
            t = t.max(self.completes[((self.done - k) & 255) as usize]);
        }
        t
    }

    /// The memory reference dispatched last completes at `complete`.
    #[inline]
    pub fn complete(&mut self, complete: u64) {
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn independent_misses_overlap_dependent_ones_do_not() {
        let mut w = Window::new(4, 224, 0);
        for _ in 0..10 {
            let t = w.dispatch(1, 0);
            w.complete(t + 200);
        }
        let overlapped = w.cycles();
        assert!(overlapped < 210, "ten independent 200-cycle misses overlap: {overlapped}");

        let mut w = Window::new(4, 224, 0);
        for _ in 0..10 {
            let t = w.dispatch(1, 1);
            w.complete(t + 200);
        }
        assert_eq!(w.cycles(), 2000, "pointer chasing serialises");
    }

    /// A list walk that also reads each node's payload (`p = p->next; sum += p->val`): the
    /// next `p->next` depends on the `p->next` two references back, not on the payload load.
    /// The hops issue 200 cycles apart, whatever the payloads take (500 or 10 cycles).
    #[test]
    fn a_producer_further_back_is_waited_for_and_nothing_else() {
        let mut w = Window::new(4, 224, 0);
        let mut hops = Vec::new();
        for i in 0..10 {
            let next = w.dispatch(1, if i == 0 { 0 } else { 2 });
            hops.push(next);
            w.complete(next + 200);
            let val = w.dispatch(1, 1);
            assert_eq!(val, next + 200, "the payload waits for its node");
            w.complete(val + if i % 2 == 0 { 500 } else { 10 });
        }
        assert_eq!(hops, (0..10).map(|i| i * 200).collect::<Vec<u64>>());
        // Retirement is in order: the run ends when hop 8's 500-cycle payload completes.
        assert_eq!(w.cycles(), 8 * 200 + 200 + 500);
        // A producer beyond what the window has seen is no constraint.
        let mut w = Window::new(4, 224, 0);
        assert_eq!(w.dispatch(1, 5), 0);
    }

    #[test]
    fn full_rob_stalls_dispatch() {
        // A 200-cycle miss followed by 1000 one-cycle instructions: the ROB (64) fills
        // and dispatch waits for the miss to retire.
        let mut w = Window::new(4, 64, 0);
        let t = w.dispatch(1, 0);
        w.complete(t + 200);
        for _ in 0..1000 {
            let t = w.dispatch(1, 0);
            w.complete(t + 1);
        }
        assert!(w.rob_stall_cycles > 150, "{}", w.rob_stall_cycles);
        assert!(w.cycles() >= 200 + (1000 - 64) / 4);
    }

    /// Stores retire at once into the buffer, commit in order once their lines are there, and
    /// with every entry taken the next waits for the oldest to commit.
    #[test]
    fn a_full_store_buffer_holds_the_next_store() {
        let mut w = Window::new(4, 224, 2);
        // Two store misses whose lines come at 300 and (out of order) 100.
        let t = w.dispatch(1, 0);
        w.complete_store(t, 300);
        let t = w.dispatch(1, 0);
        w.complete_store(t, 100);
        assert_eq!(w.cycles(), 1, "both retired into the buffer");
        // The third waits for the oldest, which commits at 300; the fourth for the second,
        // which commits after it (in order), also at 300.
        let t = w.dispatch(1, 0);
        w.complete_store(t, t + 1);
        assert_eq!(w.cycles(), 300);
        let t = w.dispatch(1, 0);
        w.complete_store(t, t + 1);
        assert_eq!(w.cycles(), 300);
        assert_eq!(w.store_buffer_stall_cycles, 300 - 1, "the fourth waits for nothing the third did not");
        // Unlimited: no store waits.
        let mut w = Window::new(4, 224, 0);
        for _ in 0..100 {
            let t = w.dispatch(1, 0);
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
        // A request at 1050 waits for the one at 1000, whose unit is busy until 1100.
        assert_eq!(u.acquire(1050, 10, 0), 1100);
        // Nothing comes before the floor: what ended before it is gone.
        assert_eq!(u.acquire(2500, 10, 2400), 2500);
        assert_eq!(u.live().len(), 2);
    }

    /// The pool against a reference model (every booking kept; a start is the first of the
    /// request's cycle and the ends after it where fewer than `n` bookings of requests no later
    /// than it are in force), on random requests that run ahead and come back.
    #[test]
    fn units_match_a_list_of_bookings() {
        // (Requests spread over 600 cycles, and over 30 arriving faster than they are served:
        // a deep queue met by requests a few cycles out of order, as walks meet the walkers.)
        for (n, spread, pace) in [(1u64, 600, 40), (2, 600, 40), (3, 600, 40), (10, 600, 40), (1, 30, 8), (2, 30, 8), (10, 30, 2)] {
            let mut u = Units::new(n);
            let mut booked: Vec<(u64, u64, u64)> = Vec::new();
            let mut x = 11u64 + n;
            let mut floor = 0u64;
            for _ in 0..1_500 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                floor += x % pace;
                let t = floor + (x >> 8) % spread;
                let dur = (x >> 20) % 300;
                let prior: Vec<_> = booked.iter().filter(|b| b.0 <= t).collect();
                let busy = |s: u64| prior.iter().filter(|b| b.1 <= s && s < b.2).count() as u64;
                let want = std::iter::once(t).chain(prior.iter().map(|b| b.2).filter(|&e| e > t)).filter(|&s| busy(s) < n).min().unwrap();
                assert_eq!(u.acquire(t, dur, floor), want, "n={n} t={t} dur={dur}");
                if dur > 0 {
                    booked.push((t, want, want + dur));
                }
                booked.retain(|b| b.2 > floor);
            }
        }
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
        let mut w = Window::new(3, 64, 0);
        for _ in 0..30 {
            let t = w.dispatch(1, 0);
            w.complete(t + 1);
        }
        assert_eq!(w.now(), 10);
    }
}
