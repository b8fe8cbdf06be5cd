//! The fast resource model (`timing.pools=fast`, the default): a pool of `n` units (MSHRs,
//! page walkers) as the schedule first come first served by request cycle would give the
//! requests seen so far.
//!
//! Requests do not reach a pool in time order: references are simulated in program order, and
//! one that waited for its producer books far ahead, after which the next, independent one asks
//! for a unit now. The schedule keeps the live requests in request-cycle order, each with the
//! units' free cycles before it (`n` numbers), and a request is served in that order by the unit
//! that frees first: an n-server queue, as hardware grants units. A request that comes after a
//! later one is put in its place and the requests after it are served again, so their units
//! free later (their starts, reported already, stay: what they lose is booked as the pool's
//! work, as the exact pool books it). A request that goes ahead of the queue (a page walk's read
//! at the L1D's MSHRs) is put before the requests still waiting at its cycle.
//!
//! The units' free cycles before each request (`n` numbers, in order: which unit is which does
//! not matter) are a window into a log that only grows: a request in time order that ends after
//! every unit frees, the usual case, slides the window by one, appending its end, and costs no
//! copy; any other appends a new window. One out of order costs that for each request after it. The exact pool ([`Units`](super::Units)) instead counts busy units
//! per cycle over every booking, and books a later request's lost wait where fewer than `n` are
//! busy; the two differ where several requests are out of order at once (docs/timing.md, "Two
//! resource models"; `calibration/pools.py` compares them).

/// A request in the schedule: served in `key` order (its request cycle, or for one that went
/// ahead of the queue, that of the request it went ahead of), from `from` on, for `dur` cycles;
/// it runs from `start`; the units' free cycles before it are `log[at..at + n]`.
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u64,
    from: u64,
    dur: u64,
    start: u64,
    at: usize,
}

impl Entry {
    #[inline]
    fn end(&self) -> u64 {
        self.start + self.dur
    }
}

/// The units' free cycles, in order (which unit is which does not matter): a request served
/// next takes the first, from the later of its own cycle and that; returns its start.
#[inline]
fn serve(free: &mut [u64], from: u64, dur: u64) -> u64 {
    let start = from.max(free[0]);
    let end = start + dur;
    // (Its end goes in order, mostly last: the units before it move down one. When it is
    // last, one block move: a compare and a move a unit cost more over 10 MSHRs.)
    let last = free.len() - 1;
    if last >= 4 && end >= free[last] {
        free.copy_within(1.., 0);
        free[last] = end;
        return start;
    }
    let mut j = 0;
    while j + 1 < free.len() && free[j + 1] <= end {
        free[j] = free[j + 1];
        j += 1;
    }
    free[j] = end;
    start
}

pub struct Schedule {
    n: usize,
    /// The live requests in service order, from `head` on.
    entries: Vec<Entry>,
    head: usize,
    /// Windows of `n` free cycles, each in order: an entry's before it (`Entry::at`), and
    /// `after`. A window, once written, never changes (later ones are appended), so windows
    /// overlap: a request that slides one appends a single cycle.
    log: Vec<u64>,
    /// The units' free cycles after every request: `log[after..after + n]`.
    after: usize,
    /// The longest request kept: one that started that long before a cycle has ended by then.
    longest: u64,
    /// Scratch: free cycles while serving again.
    free: Vec<u64>,
}

impl Schedule {
    /// Requests forgotten at a time, once this many have come and ended before the floor.
    const PRUNE: usize = 32;

    pub fn new(n: u64) -> Schedule {
        let n = n.clamp(1, 1 << 16) as usize;
        Schedule { n, entries: Vec::new(), head: 0, log: vec![0; n], after: 0, longest: 0, free: vec![0; n] }
    }

    /// Where a request at `t` is served: after every request no later than it.
    #[inline]
    fn place_of(&self, t: u64) -> usize {
        // (From the back: a request mostly comes last, or a few places before.)
        let mut p = self.entries.len();
        while p > self.head && self.entries[p - 1].key > t {
            p -= 1;
            if self.entries.len() - p > 8 {
                return self.head + self.entries[self.head..p].partition_point(|x| x.key <= t);
            }
        }
        p
    }

    /// When the first unit is free for the request at `p`.
    #[inline]
    fn first_free(&self, p: usize) -> u64 {
        if p == self.entries.len() {
            self.log[self.after]
        } else {
            self.log[self.entries[p].at]
        }
    }

    /// Serve a request from `from` for `dur` cycles after every request (in time order, the
    /// usual case): it takes the unit that frees first, and the window of free cycles after
    /// it is appended, or, when it ends last of all and `after` is the log's last window,
    /// slides by one. Returns its start.
    #[inline]
    fn serve_last(&mut self, from: u64, dur: u64) -> u64 {
        let (w, n) = (self.after, self.n);
        let start = from.max(self.log[w]);
        let end = start + dur;
        if w + n == self.log.len() && end >= self.log[w + n - 1] {
            self.log.push(end);
            self.after = w + 1;
            return start;
        }
        // The new window: the free cycles up to its end, its end, the rest.
        let mut j = w + 1;
        while j < w + n && self.log[j] <= end {
            j += 1;
        }
        self.after = self.log.len();
        self.log.reserve(n);
        self.log.extend_from_within(w + 1..j);
        self.log.push(end);
        self.log.extend_from_within(j..w + n);
        start
    }

    /// The cycle an operation that wants to start at `t` would start: served after every
    /// request no later than `t`, by the unit that frees first.
    #[inline]
    pub fn start(&mut self, t: u64, floor: u64) -> u64 {
        self.forget_before(floor);
        t.max(self.first_free(self.place_of(t)))
    }

    /// When a request at `t` that goes ahead of the requests waiting for a unit would start
    /// ([`Units::start_ahead`](super::Units::start_ahead)): at `t` if a unit is free for it
    /// then, else when the first of the requests running at `t` (served before it, started by
    /// then) ends.
    pub fn start_ahead(&mut self, t: u64, floor: u64) -> u64 {
        self.forget_before(floor);
        let p = self.place_of(t);
        if self.first_free(p) <= t {
            return t;
        }
        // Every unit is busy at `t` (a request served before it starts at its own cycle, no
        // later than `t`, or when a unit frees): the first of those running then to end.
        let mut first = u64::MAX;
        for x in self.entries[self.head..p].iter().rev() {
            if x.start + self.longest <= t {
                break;
            }
            if x.start <= t && x.end() > t {
                first = first.min(x.end());
            }
        }
        // (None found, if the queue at `t` waits behind a request that went ahead of it from
        // later on: it goes where the queue would.)
        if first == u64::MAX {
            self.first_free(p)
        } else {
            first.max(t)
        }
    }

    /// One unit busy for `dur` cycles from `s` for a request at `t`: `s` as [`Schedule::start`]
    /// said, or earlier (a request that goes ahead of the queue: it is served before the
    /// requests that have not started by `s`). The requests served after it are served again.
    pub fn book(&mut self, t: u64, s: u64, dur: u64) {
        if dur == 0 {
            return;
        }
        self.longest = self.longest.max(dur);
        let mut p = self.place_of(t);
        let (mut key, mut from) = (t, t);
        if s < self.first_free(p) {
            // Ahead of the queue: from `s`, before the requests served before it that had not
            // started by then.
            let q = self.head + self.entries[self.head..p].partition_point(|x| x.start < s);
            if q < p {
                p = q;
                key = self.entries[q].key;
            }
            from = s;
        }
        let n = self.n;
        if p == self.entries.len() {
            // (In time order, the usual case: served last.)
            let at = self.after;
            let start = self.serve_last(from, dur);
            self.entries.push(Entry { key, from, dur, start, at });
            return;
        }
        // Served before the request at `p`, from the free cycles before that one; those after
        // it are served again, each with its new free cycles appended.
        let at = self.entries[p].at;
        self.free.clear();
        self.free.extend_from_slice(&self.log[at..at + n]);
        self.entries.insert(p, Entry { key, from, dur, start: 0, at });
        let first = &mut self.entries[p];
        first.start = serve(&mut self.free, first.from, first.dur);
        for x in &mut self.entries[p + 1..] {
            x.at = self.log.len();
            self.log.extend_from_slice(&self.free);
            x.start = serve(&mut self.free, x.from, x.dur);
        }
        self.after = self.log.len();
        self.log.extend_from_slice(&self.free);
    }

    /// Forget the requests that came and ended before `floor`, from the first, once there are
    /// many: no request comes before the floor, so none is served before them again, and none
    /// runs at a request's cycle. (Mostly in order: a look at one entry tells whether a batch
    /// can go; that look is inlined into every ask, the forgetting is not.)
    #[inline(always)]
    fn forget_before(&mut self, floor: u64) {
        if self.entries.len() - self.head > 2 * Self::PRUNE && Self::done(&self.entries[self.head + Self::PRUNE], floor) {
            self.forget(floor);
        }
    }

    /// Whether request `x` came and ended before `floor`.
    #[inline(always)]
    fn done(x: &Entry, floor: u64) -> bool {
        x.key < floor && x.end() <= floor
    }

    #[inline(never)]
    fn forget(&mut self, floor: u64) {
        while self.head < self.entries.len() && Self::done(&self.entries[self.head], floor) {
            self.head += 1;
        }
        // (Drop them once they are as many as the live ones, and the log before every live
        // window: amortized.)
        if self.head * 2 >= self.entries.len() {
            self.entries.drain(..self.head);
            self.head = 0;
            let lo = self.entries.iter().map(|x| x.at).fold(self.after, usize::min);
            self.log.drain(..lo);
            self.after -= lo;
            for x in &mut self.entries {
                x.at -= lo;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` units given `(cycle, duration)` requests, each booked where it would start.
    fn booked(n: u64, reqs: &[(u64, u64)]) -> Schedule {
        let mut p = Schedule::new(n);
        for &(t, dur) in reqs {
            let s = p.start(t, 0);
            p.book(t, s, dur);
        }
        p
    }

    #[test]
    fn in_time_order_a_request_takes_the_unit_that_frees_first() {
        let mut p = booked(2, &[(0, 100), (10, 50), (20, 30), (30, 10)]);
        // 0..100 and 10..60 on the two units; the third waits for 60 (60..90), the fourth
        // for 90 (90..100).
        assert_eq!(p.start(40, 0), 100);
        assert_eq!(p.start(100, 0), 100);
        assert_eq!(p.start(35, 0), 100);
    }

    #[test]
    fn a_request_out_of_order_is_served_in_its_place() {
        // One unit: a request at 60 is booked first over 60..80; one at 50, simulated after
        // it, takes the unit at 50 (in time order it came first), and the one at 60 is served
        // after it, 150..170.
        let mut p = Schedule::new(1);
        p.book(60, 60, 20);
        assert_eq!(p.start(50, 0), 50);
        p.book(50, 50, 100);
        // A request at 55 comes after the one at 50 and before the one at 60: 150..160; the
        // one at 60 then runs 160..180, and a request at 100 waits until 180.
        assert_eq!(p.start(55, 0), 150);
        p.book(55, 150, 10);
        assert_eq!(p.start(100, 0), 180);
    }

    #[test]
    fn a_request_ahead_of_the_queue_takes_the_next_unit_to_free() {
        // Two units busy 0..100 and 0..200 with work queued behind each; a request going
        // ahead waits for the first running booking to end, not for the queue.
        let mut p = booked(2, &[(0, 100), (0, 200), (1, 100), (2, 100)]);
        assert_eq!(p.start(5, 0), 200);
        assert_eq!(p.start_ahead(5, 0), 100);
        p.book(5, 100, 10);
        // It took the unit at 100 before the queued requests: they run 110..210 and 200..300.
        assert_eq!(p.start(6, 0), 210);
    }

    /// The reference: every request so far sorted by request cycle (stable) and served first
    /// come first served by `n` units, each request by the unit that frees first.
    fn fcfs(n: usize, reqs: &[(u64, u64)]) -> Vec<u64> {
        let mut order: Vec<usize> = (0..reqs.len()).collect();
        order.sort_by_key(|&i| reqs[i].0);
        let mut free = vec![0u64; n];
        let mut start = vec![0; reqs.len()];
        for i in order {
            let (t, dur) = reqs[i];
            let u = (0..n).min_by_key(|&u| free[u]).unwrap();
            start[i] = t.max(free[u]);
            free[u] = start[i] + dur;
        }
        start
    }

    #[test]
    fn the_schedule_is_first_come_first_served_over_the_requests_so_far() {
        // Requests a few cycles to hundreds out of order, faster than the units serve them (a
        // queue) and slower (mostly free), against the reference: a request after all those
        // before it in time starts where the reference starts it, given every request so far.
        for (n, spread, pace, long) in
            [(1u64, 600, 300, 300), (2, 30, 120, 300), (2, 600, 150, 300), (10, 30, 24, 300), (10, 600, 40, 300), (3, 40_000, 20_000, 30_000)]
        {
            let mut p = Schedule::new(n);
            let mut reqs: Vec<(u64, u64)> = Vec::new();
            let (mut x, mut floor) = (11u64 + n, 0u64);
            for i in 0..2_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                floor += x % pace;
                let t = floor + (x >> 8) % spread;
                let dur = 1 + (x >> 20) % long;
                let s = p.start(t, floor);
                p.book(t, s, dur);
                reqs.push((t, dur));
                if reqs.iter().all(|r| r.0 <= t) {
                    let want = fcfs(n as usize, &reqs)[i];
                    assert_eq!(s, want, "n {n}, request {i} at {t}: started at {s}, first come first served {want}");
                }
            }
            // And one after all of them: it sees every request served in time order.
            let t = reqs.iter().map(|r| r.0).max().unwrap_or(0) + 1;
            reqs.push((t, 1));
            let want = *fcfs(n as usize, &reqs).last().unwrap();
            assert_eq!(p.start(t, floor), want, "n {n}: a last request at {t}");
        }
    }
}
