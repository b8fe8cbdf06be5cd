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

/// A pool of `n` identical units (MSHRs, page walkers), booked as a calendar: how many are
/// busy over time, as a step function. Requests do not arrive in time order (a reference that
/// waited for its producer books a miss far ahead; the next, independent one wants a unit
/// now), so a request takes a unit at the first cycle from its own on where fewer than `n` are
/// busy, even when a booking made earlier (by a request later in time) then overlaps it: more
/// than `n` are busy for a while, and the requests that come in that stretch wait it out. In
/// time order the later request would have waited instead; it cannot, being booked already,
/// so its wait falls on those that come after it. (Requiring a unit free for the request's
/// whole duration made an earlier request wait behind every later booking, and a perfect TLB
/// slower than page walks: docs/timing.md.) Requests never come before the dispatch clock of the
/// contexts that share the units, so the steps behind it are dropped.
pub struct Units {
    n: u32,
    /// `(cycle, busy units from it until the next step)`, in increasing cycle order, from
    /// `head` on (the steps before it are forgotten, and dropped now and then); none busy before
    /// the first step, and the last step's count is 0. Adjacent counts differ.
    steps: Vec<(u64, u32)>,
    head: usize,
    /// Where the last search ended.
    hint: usize,
}

impl Units {
    /// More steps than this means the floor has not moved for a long time (it cannot happen
    /// with a window of a few hundred references); the oldest are then forgotten.
    const MAX_STEPS: usize = 4096;

    pub fn new(n: u64) -> Units {
        Units { n: n.clamp(1, u32::MAX as u64) as u32, steps: Vec::new(), head: 0, hint: 0 }
    }

    /// Reserve a unit for an operation that wants to start at `t` and lasts `dur` cycles, when
    /// no request will come before `floor`. Returns the cycle it actually starts (later than
    /// `t` if `n` units are busy at `t`).
    #[inline]
    pub fn acquire(&mut self, t: u64, dur: u64, floor: u64) -> u64 {
        let start = self.start(t, floor);
        self.book(start, dur);
        start
    }

    /// When an operation that wants to start at `t` would start, without booking it (a walk
    /// learns its start before its reads, its length after).
    #[inline]
    pub fn start(&mut self, t: u64, floor: u64) -> u64 {
        self.forget_before(floor.min(t));
        self.first_free(t)
    }

    /// One more unit busy for `dur` cycles from `s` (where [`Units::start`] said, or anywhere:
    /// more than `n` may then be busy at once, which later requests wait out).
    #[inline]
    pub fn book(&mut self, s: u64, dur: u64) {
        if dur > 0 {
            self.mark(s, s + dur);
        }
    }

    /// The index of the first step from `from` on that comes after cycle `c` (or at it, with
    /// `at`). Searched from where the last search ended: successive requests come at nearby
    /// cycles, so this is a step or two where a binary search would be six.
    #[inline]
    fn after(&mut self, from: usize, c: u64, at: bool) -> usize {
        let before = |x: u64| x < c || !at && x == c;
        let mut i = self.hint.clamp(from, self.steps.len());
        while i > from && !before(self.steps[i - 1].0) {
            i -= 1;
        }
        while i < self.steps.len() && before(self.steps[i].0) {
            i += 1;
        }
        self.hint = i;
        i
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
        s
    }

    /// One more unit busy over `[s, e)`.
    fn mark(&mut self, s: u64, e: u64) {
        let a = self.split(self.head, s);
        let b = self.split(a, e);
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

    /// The index of a step at cycle `c` (from `from` on), made if there was none (with the
    /// count in force).
    fn split(&mut self, from: usize, c: u64) -> usize {
        let i = self.after(from, c, true);
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

    /// A request takes a unit where one is free at its own cycle, before or across later
    /// bookings; while more than `n` are then busy, the requests that come wait.
    #[test]
    fn units_start_where_a_unit_is_free() {
        let mut u = Units::new(1);
        assert_eq!(u.acquire(1000, 100, 0), 1000);
        assert_eq!(u.acquire(0, 100, 0), 0, "free before 1000");
        assert_eq!(u.acquire(50, 901, 0), 100, "free at 100, though it overlaps the booking at 1000");
        // Busy [100, 1001) and, twice over, [1000, 1001); once over to 1100.
        assert_eq!(u.acquire(60, 10, 0), 1100, "waits for every unit booked from 100 on to end");
        assert_eq!(u.acquire(1000, 10, 0), 1110);
        // Nothing comes before the floor: what ended before it is gone.
        assert_eq!(u.acquire(2500, 10, 2400), 2500);
        assert_eq!(u.live().len(), 2);
    }

    /// The calendar against a reference model (every booking kept; a start is the first of
    /// the request's cycle and the ends after it where fewer than `n` bookings are in force),
    /// on random requests that run ahead and come back.
    #[test]
    fn units_match_a_list_of_bookings() {
        for n in [1u64, 2, 3, 10] {
            let mut u = Units::new(n);
            let mut booked: Vec<(u64, u64)> = Vec::new();
            let mut x = 11u64 + n;
            let mut floor = 0u64;
            for _ in 0..1_500 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                floor += x % 40;
                let t = floor + (x >> 8) % 600;
                let dur = (x >> 20) % 300;
                let busy = |s: u64| booked.iter().filter(|b| b.0 <= s && s < b.1).count() as u64;
                let want = std::iter::once(t).chain(booked.iter().map(|b| b.1).filter(|&e| e > t)).filter(|&s| busy(s) < n).min().unwrap();
                assert_eq!(u.acquire(t, dur, floor), want, "n={n} t={t} dur={dur}");
                if dur > 0 {
                    booked.push((want, want + dur));
                }
                booked.retain(|b| b.1 > floor);
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
