//! How fast could GUPS be simulated at all on this host, with the engine's model? A
//! lower-bound experiment for the engine's throughput target (docs/performance.md), not
//! part of the engine: `cargo run --release -p xlat-core --example floor -- [refs] [stage]` (20 M
//! references by default; it keeps every step in memory, about 2 GB). With a stage (`caches`,
//! `timing`, `engine` or `threads`: a line of the output below) it translates once and runs
//! that stage once, so that a profiler (callgrind) sees it alone.
//!
//! It simulates GUPS over 8 GB (a load and a store of each random 8-byte word, as the `speed`
//! example) on the `skylake` preset with a flat 50 ns DRAM and no load-queue limit (as `make
//! bench` runs it: `benches/run.py`, `FLAT`) with the leanest exact model we could write, in
//! the engine's two halves:
//!
//! - translation: L1 DTLB (16 sets of 4), L2 TLB (128 of 12), page-walk caches of 4, 4 and
//!   24 entries probed together (the longest hit decides where the walk starts), and a real
//!   4-level table (entries with P, A, D and the child node's number, in 4 KB nodes) that
//!   walks read and set A and D bits in, page-table entries prefetched 32 references ahead;
//!   a store through a clean translation walks again. It counts the engine's walks, dirty-bit
//!   walks and steps exactly (9,992,530, 2,079,289 and 26,979,531 over 20 M references).
//! - memory side: three LRU caches (L1D 32 KB, L2 256 KB and LLC 16 MB, 8-way; non-inclusive
//!   fills and write-backs as `MemorySide::access` does them) kept as bare key arrays, a dirty
//!   mask and the engine's order word (`repl::Order`); LLC sets prefetched ahead; then the same
//!   with the engine's timing (`timing::Window`, a `Pool` for the walkers and MSHRs, `InFlight`
//!   for lines and pages in flight, used as `memory::hierarchy` uses them), then with the
//!   engine's own caches (`cache::Cache`) instead of the lean ones: same decisions, same
//!   cycles. The physical layout is not the engine's (data frames in page order, table
//!   nodes apart), so its cycles differ from the engine's by a few in 100,000.
//!
//! No statistics beyond walks, steps and where accesses were served, no contexts in TLB
//! keys, no line kinds or owners, no policies but LRU. Each half is timed alone (best of
//! three), then both run at once on two threads, as the engine runs them.
use std::time::Instant;
use xlat_core::config::Policy;
use xlat_core::memory::cache::Cache;
use xlat_core::memory::repl::{LineKind, Order, WideOrder};
use xlat_core::param::PoolModel;
use xlat_core::prefetch;
use xlat_core::timing::{InFlight, Pool, Window};

/// One LRU cache: `W` ways per set.
struct Lean<const W: usize> {
    keys: Vec<[u64; W]>,
    order: Vec<u64>,
    dirty: Vec<u32>,
    geometry: Order,
    mask: usize,
}

impl<const W: usize> Lean<W> {
    fn new(sets: usize) -> Self {
        let geometry = Order::new(W);
        Lean { keys: vec![[u64::MAX; W]; sets], order: vec![geometry.empty(); sets], dirty: vec![0; sets], geometry, mask: sets - 1 }
    }

    #[inline(always)]
    fn find(&self, set: usize, line: u64) -> Option<usize> {
        find(&self.keys[set], line)
    }

    /// A demand access: whether it hit (a hit that writes marks the line dirty).
    #[inline(always)]
    fn access(&mut self, line: u64, write: bool) -> bool {
        let set = line as usize & self.mask;
        let Some(way) = self.find(set, line) else { return false };
        self.order[set] = Order::promote(self.order[set], way);
        self.dirty[set] |= (write as u32) << way;
        true
    }

    /// Install an absent line; returns the victim and whether it was dirty.
    #[inline(always)]
    fn fill(&mut self, line: u64, dirty: bool) -> Option<(u64, bool)> {
        let set = line as usize & self.mask;
        let o = self.order[set];
        let way = self.geometry.victim(o);
        self.order[set] = self.geometry.refill(o, way);
        let old = std::mem::replace(&mut self.keys[set][way], line);
        let was_dirty = self.dirty[set] >> way & 1 != 0;
        self.dirty[set] = self.dirty[set] & !(1 << way) | (dirty as u32) << way;
        (old != u64::MAX).then_some((old, was_dirty))
    }

    /// A write-back from the level above: mark dirty, installing the line if absent.
    #[inline(always)]
    fn write_back(&mut self, line: u64) -> Option<(u64, bool)> {
        let set = line as usize & self.mask;
        match self.find(set, line) {
            Some(way) => {
                self.dirty[set] |= 1 << way;
                None
            }
            None => self.fill(line, true),
        }
    }

    fn prefetch(&self, line: u64) {
        let set = line as usize & self.mask;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: prefetching is a hint and never faults.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let p = self.keys.as_ptr().add(set) as *const i8;
            _mm_prefetch(p, _MM_HINT_T0);
            _mm_prefetch(p.wrapping_add(64), _MM_HINT_T0);
            _mm_prefetch(self.order.as_ptr().add(set) as *const i8, _MM_HINT_T0);
            _mm_prefetch(self.dirty.as_ptr().add(set) as *const i8, _MM_HINT_T0);
        }
    }
}

/// Where accesses were served: L1, L2, LLC, DRAM.
struct Hierarchy {
    l1: Lean<8>,
    l2: Lean<8>,
    llc: Lean<8>,
    served: [u64; 4],
    dram_writes: u64,
}

/// Latencies of the `skylake` preset, in cycles, its DRAM made flat as `make bench` runs it (50 ns at 2 GHz beyond the LLC).
const LAT: [u64; 4] = [4, 12, 42, 42 + 100];

/// A three-level hierarchy as the run below drives it.
trait Levels {
    /// One access; returns where it was served (index into `LAT`).
    fn access(&mut self, line: u64, kind: LineKind, write: bool) -> usize;
    fn prefetch(&self, line: u64);
    fn served(&self) -> [u64; 4];
}

impl Levels for Hierarchy {
    #[inline(always)]
    fn access(&mut self, line: u64, _kind: LineKind, write: bool) -> usize {
        if self.l1.access(line, write) {
            self.served[0] += 1;
            return 0;
        }
        let served = if self.l2.access(line, false) {
            1
        } else if self.llc.access(line, false) {
            2
        } else {
            if let Some((_, true)) = self.llc.fill(line, false) {
                self.dram_writes += 1;
            }
            3
        };
        self.served[served] += 1;
        if served != 1 {
            if let Some((v, true)) = self.l2.fill(line, false) {
                if let Some((_, true)) = self.llc.write_back(v) {
                    self.dram_writes += 1;
                }
            }
        }
        if let Some((v, true)) = self.l1.fill(line, write) {
            if let Some((w, true)) = self.l2.write_back(v) {
                if let Some((_, true)) = self.llc.write_back(w) {
                    self.dram_writes += 1;
                }
            }
        }
        served
    }

    fn prefetch(&self, line: u64) {
        self.llc.prefetch(line);
    }

    fn served(&self) -> [u64; 4] {
        self.served
    }
}

/// The same hierarchy of the engine's own caches (`cache::Cache`: set blocks with kinds and
/// owners, per-kind counters, the remembered last block), to tell their cost from the
/// machine's around them.
struct Engine {
    l1: Cache,
    l2: Cache,
    llc: Cache,
    served: [u64; 4],
}

impl Levels for Engine {
    #[inline(always)]
    fn access(&mut self, line: u64, kind: LineKind, write: bool) -> usize {
        if self.l1.access(line, kind, write) {
            self.served[0] += 1;
            return 0;
        }
        let served = if self.l2.access(line, kind, false) {
            1
        } else if self.llc.access(line, kind, false) {
            2
        } else {
            self.llc.fill(line, kind, false, 0);
            3
        };
        self.served[served] += 1;
        if served != 1 {
            if let Some(v) = self.l2.fill(line, kind, false, 0) {
                if v.dirty {
                    self.llc.write_back(v.line, v.kind, 0);
                }
            }
        }
        if let Some(v) = self.l1.fill(line, kind, write, 0) {
            if v.dirty {
                if let Some(w) = self.l2.write_back(v.line, v.kind, 0) {
                    if w.dirty {
                        self.llc.write_back(w.line, w.kind, 0);
                    }
                }
            }
        }
        served
    }

    fn prefetch(&self, line: u64) {
        self.llc.prefetch_set(line);
    }

    fn served(&self) -> [u64; 4] {
        self.served
    }
}

/// One step of the stream: a reference's walk reads (`pte`), or its data access.
#[derive(Clone, Copy)]
enum Step {
    /// A reference that walks is dispatched (`l2`: after an L2 TLB lookup; a store through
    /// a clean L1 entry walks at once to set the D bit). `delta`: its instructions.
    Walk {
        delta: u32,
        l2: bool,
    },
    Pte(u64),
    /// The walk's end and the data access; `bool`: a store.
    Data(u64, bool),
    /// A reference the TLB translates (dispatch and data access).
    Hit {
        line: u64,
        write: bool,
        delta: u32,
        l2: bool,
    },
}

fn line_of(s: Step) -> Option<u64> {
    match s {
        Step::Pte(l) | Step::Data(l, _) | Step::Hit { line: l, .. } => Some(l),
        Step::Walk { .. } => None,
    }
}

/// A small LRU array of `u64` keys and values (a TLB or a page-walk-cache level): `W` ways,
/// order word `Order` (up to 16 ways) or `WideOrder` (the 24-entry PWC level).
struct Assoc<const W: usize> {
    keys: Vec<[u64; W]>,
    vals: Vec<[u64; W]>,
    order: Vec<u128>,
    wide: bool,
    mask: usize,
}

impl<const W: usize> Assoc<W> {
    fn new(sets: usize) -> Self {
        let wide = W > 16;
        let empty = if wide { WideOrder::new(W).empty() } else { Order::new(W).empty() as u128 };
        Assoc { keys: vec![[u64::MAX; W]; sets], vals: vec![[0; W]; sets], order: vec![empty; sets], wide, mask: sets - 1 }
    }

    #[inline(always)]
    fn find(&self, set: usize, key: u64) -> Option<usize> {
        find(&self.keys[set], key)
    }

    /// The value of `key`, refreshing its recency.
    #[inline(always)]
    fn lookup(&mut self, key: u64) -> Option<u64> {
        let set = key as usize & self.mask;
        let way = self.find(set, key)?;
        let o = self.order[set];
        self.order[set] = if self.wide { WideOrder::promote(o, way) } else { Order::promote(o as u64, way) as u128 };
        Some(self.vals[set][way])
    }

    /// Install `key` (absent) over the set's least recent way.
    #[inline(always)]
    fn insert_absent(&mut self, key: u64, val: u64) {
        let set = key as usize & self.mask;
        let o = self.order[set];
        let (way, o) = if self.wide {
            let g = WideOrder::new(W);
            let way = g.victim(o);
            (way, g.refill(o, way))
        } else {
            let g = Order::new(W);
            let way = g.victim(o as u64);
            (way, g.refill(o as u64, way) as u128)
        };
        self.order[set] = o;
        self.keys[set][way] = key;
        self.vals[set][way] = val;
    }

    /// Install or update `key`.
    #[inline(always)]
    fn insert(&mut self, key: u64, val: u64) {
        let set = key as usize & self.mask;
        match self.find(set, key) {
            Some(way) => self.vals[set][way] = val,
            None => self.insert_absent(key, val),
        }
    }
}

/// The first lane of `keys` holding `key` (`W` even).
#[inline(always)]
fn find<const W: usize>(keys: &[u64; W], key: u64) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of x86-64; W is even, so the loads stay inside the set.
    unsafe {
        use std::arch::x86_64::*;
        let (p, k) = (keys.as_ptr() as *const __m128i, _mm_set1_epi64x(key as i64));
        let mut m = 0u32;
        for i in 0..W / 2 {
            let e = _mm_cmpeq_epi32(_mm_loadu_si128(p.add(i)), k);
            let e = _mm_and_si128(e, _mm_shuffle_epi32(e, 0xB1));
            m |= (_mm_movemask_pd(_mm_castsi128_pd(e)) as u32) << (2 * i);
        }
        (m != 0).then(|| m.trailing_zeros() as usize)
    }
    #[cfg(not(target_arch = "x86_64"))]
    keys.iter().position(|&k| k == key)
}

const P: u64 = 1;
const A: u64 = 1 << 5;
const D: u64 = 1 << 6;

/// The translation side of the `skylake` preset for one address space: L1 DTLB (4 KB array,
/// 16 sets of 4), L2 TLB (128 sets of 12), page-walk caches of 4, 4 and 24 entries, and a
/// 4-level table of real entries (P, A, D and the child node's number in the PFN field) in
/// 4 KB nodes allocated as first touched, walked as the engine walks it.
struct Front {
    l1: Assoc<4>,
    l2: Assoc<12>,
    /// PWC levels 4, 3, 2 (prefix of VA bits above 39, 30, 21).
    pwc4: Assoc<4>,
    pwc3: Assoc<4>,
    pwc2: Assoc<24>,
    nodes: Vec<[u64; 512]>,
    /// Walks for TLB misses, and walks to set a clean translation's D bit (the engine's
    /// `walks` and `tlb.dirty_walks`).
    walks: u64,
    dirty_walks: u64,
    steps: u64,
}

impl Front {
    /// Map `[0, bytes)` with 4 KB pages (the root is node 0).
    fn new(bytes: u64) -> Front {
        let mut f = Front {
            l1: Assoc::new(16),
            l2: Assoc::new(128),
            pwc4: Assoc::new(1),
            pwc3: Assoc::new(1),
            pwc2: Assoc::new(1),
            nodes: vec![[0; 512]],
            walks: 0,
            dirty_walks: 0,
            steps: 0,
        };
        for page in 0..bytes >> 12 {
            let mut node = 0usize;
            for level in (2..=4).rev() {
                let idx = (page >> (9 * (level - 1))) as usize & 511;
                if f.nodes[node][idx] & P == 0 {
                    f.nodes.push([0; 512]);
                    f.nodes[node][idx] = (f.nodes.len() as u64 - 1) << 12 | P;
                }
                node = (f.nodes[node][idx] >> 12) as usize;
            }
            // (Data frames: the page number itself, shifted past the table's nodes.)
            f.nodes[node][page as usize & 511] = (page + (1 << 24)) << 12 | P;
        }
        f
    }

    /// The leaf entry's host address for `va` (to prefetch it ahead).
    #[inline(always)]
    fn leaf_entry(&self, va: u64) -> *const u64 {
        let mut node = 0usize;
        for level in (2..=4).rev() {
            node = (self.nodes[node][(va >> (12 + 9 * (level - 1))) as usize & 511] >> 12) as usize;
        }
        &self.nodes[node][(va >> 12) as usize & 511]
    }

    /// Translate `va` (a reference `delta` instructions after the last), appending what the
    /// memory side must do to `out`.
    #[inline(always)]
    fn translate(&mut self, va: u64, write: bool, delta: u32, out: &mut Vec<Step>) {
        let vpn = va >> 12;
        let off = (va & 4095) >> 6;
        let (missed, l2) = match self.l1.lookup(vpn) {
            Some(e) if !write || e & D != 0 => return out.push(Step::Hit { line: (e >> 12 << 6) + off, write, delta, l2: false }),
            Some(_) => (false, false),
            None => match self.l2.lookup(vpn) {
                Some(e) if !write || e & D != 0 => {
                    self.l1.insert_absent(vpn, e);
                    return out.push(Step::Hit { line: (e >> 12 << 6) + off, write, delta, l2: true });
                }
                Some(_) => (false, true),
                None => (true, true),
            },
        };
        out.push(Step::Walk { delta, l2 });
        if missed {
            self.walks += 1;
        } else {
            self.dirty_walks += 1;
        }
        // Probe the page-walk caches; the longest prefix that hits decides where to start.
        let (mut level, mut node) = (4, 0usize);
        if let Some(n) = self.pwc4.lookup(va >> 39) {
            (level, node) = (3, n as usize);
        }
        if let Some(n) = self.pwc3.lookup(va >> 30) {
            (level, node) = (2, n as usize);
        }
        if let Some(n) = self.pwc2.lookup(va >> 21) {
            (level, node) = (1, n as usize);
        }
        let e = loop {
            let idx = (va >> (12 + 9 * (level - 1))) as usize & 511;
            out.push(Step::Pte(((node as u64) << 6) + (idx as u64 >> 3)));
            self.steps += 1;
            let set = if level == 1 && write { A | D } else { A };
            let e = self.nodes[node][idx] | set;
            self.nodes[node][idx] = e;
            if level == 1 {
                break e;
            }
            let child = e >> 12;
            match level {
                4 => self.pwc4.insert_absent(va >> 39, child),
                3 => self.pwc3.insert_absent(va >> 30, child),
                _ => self.pwc2.insert_absent(va >> 21, child),
            }
            (level, node) = (level - 1, child as usize);
        };
        if missed {
            self.l2.insert_absent(vpn, e);
            self.l1.insert_absent(vpn, e);
        } else {
            self.l2.insert(vpn, e);
            self.l1.insert(vpn, e);
        }
        out.push(Step::Data((e >> 12 << 6) + off, write));
    }
}

/// GUPS over 8 GB: a load and a store of each random 8-byte word.
fn gups(refs: u64) -> Vec<(u64, bool)> {
    let mut x = 88172645463325252u64;
    let mut out = Vec::with_capacity(refs as usize);
    for _ in 0..refs / 2 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let va = (x & ((1 << 30) - 1)) * 8;
        out.push((va, false));
        out.push((va, true));
    }
    out
}

/// The instructions from the previous reference: GUPS's load comes 4 after the last store,
/// its store 1 after the load (as the `speed` example's stream).
fn delta(write: bool) -> u32 {
    if write {
        1
    } else {
        4
    }
}

/// Translate every reference; returns the seconds and the memory side's steps.
fn translate_all(f: &mut Front, refs: &[(u64, bool)]) -> (f64, Vec<Step>) {
    let mut out = Vec::with_capacity(refs.len() * 4);
    let t0 = Instant::now();
    for (i, &(va, write)) in refs.iter().enumerate() {
        if let Some(&(ahead, _)) = refs.get(i + 32) {
            prefetch(f.leaf_entry(ahead));
        }
        f.translate(va, write, delta(write), &mut out);
    }
    (t0.elapsed().as_secs_f64(), out)
}

/// The memory side: a hierarchy, and with `timing` the engine's timing: its window (4 wide,
/// 224-entry ROB, 56-entry store buffer), two walkers and ten MSHRs (`timing::Pool`, the
/// default fast model; walk reads that miss the L1D holding one as data misses do), and the
/// lines and pages still in flight (`timing::InFlight`), used as `memory::hierarchy` uses them.
struct Memory<H> {
    h: H,
    timing: bool,
    w: Window,
    walkers: Pool,
    mshrs: Pool,
    fills: InFlight,
    walks: InFlight,
    /// Of the reference that walks: its dispatch, when it wanted a walker, when it got one,
    /// and its walk's latency so far.
    issue: u64,
    t: u64,
    start: u64,
    lat: u64,
}

/// L2 TLB and page-walk-cache latencies of the `skylake` preset.
const L2_TLB: u64 = 9;
const PWC: u64 = 1;

impl<H: Levels> Memory<H> {
    fn new(h: H, timing: bool) -> Self {
        let (fills, walks) = (InFlight::default(), InFlight::default());
        Memory {
            h,
            timing,
            w: Window::new(4, 224, 56, 0),
            walkers: Pool::new(2, PoolModel::Fast),
            mshrs: Pool::new(10, PoolModel::Fast),
            fills,
            walks,
            issue: 0,
            t: 0,
            start: 0,
            lat: 0,
        }
    }

    /// When the line of an access at `t`, served at level `served`, arrives (the engine's
    /// `MemorySide::arrival`).
    #[inline(always)]
    fn arrival(&mut self, line: u64, served: usize, t: u64) -> u64 {
        let lat = LAT[served];
        if let Some(ready) = self.fills.pending(line, t) {
            return ready.max(t + lat);
        }
        if served == 0 {
            return t + lat;
        }
        let start = self.mshrs.start(t, self.w.now());
        self.mshrs.book(t, start, lat);
        self.fills.put(line, t, start + lat);
        start + lat
    }

    fn replay(&mut self, steps: &[Step]) {
        for (i, &s) in steps.iter().enumerate() {
            if let Some(l) = steps.get(i + 8).copied().and_then(line_of) {
                self.h.prefetch(l);
            }
            if !self.timing {
                match s {
                    Step::Pte(l) => _ = self.h.access(l, LineKind::PageTable, false),
                    Step::Data(l, write) | Step::Hit { line: l, write, .. } => _ = self.h.access(l, LineKind::Data, write),
                    Step::Walk { .. } => {}
                }
                continue;
            }
            let (line, write) = match s {
                Step::Walk { delta, l2 } => {
                    self.issue = self.w.dispatch(delta, 0, false);
                    self.t = self.issue + if l2 { L2_TLB } else { 0 };
                    self.start = self.walkers.start(self.t, self.w.now());
                    self.lat = PWC;
                    continue;
                }
                Step::Pte(l) => {
                    let at = self.start + self.lat;
                    let served = self.h.access(l, LineKind::PageTable, false);
                    self.lat = self.arrival(l, served, at) - self.start;
                    continue;
                }
                Step::Data(l, write) => {
                    self.walkers.book(self.t, self.start, self.lat);
                    self.t = self.start + self.lat;
                    self.walks.put(l >> 6, self.issue, self.t);
                    (l, write)
                }
                Step::Hit { line, write, delta, l2 } => {
                    self.issue = self.w.dispatch(delta, 0, false);
                    self.t = self.issue + if l2 { L2_TLB } else { 0 };
                    if let Some(done) = self.walks.pending(line >> 6, self.t) {
                        self.t = done;
                    }
                    (line, write)
                }
            };
            let served = self.h.access(line, LineKind::Data, write);
            let arrival = self.arrival(line, served, self.t);
            if write {
                self.w.complete_store(self.t, arrival);
            } else {
                self.w.complete(arrival);
            }
        }
    }
}

/// Replay `steps`; returns the seconds, where accesses were served and the cycles.
fn run<H: Levels>(steps: &[Step], timing: bool, h: H) -> (f64, [u64; 4], u64) {
    let mut m = Memory::new(h, timing);
    let t0 = Instant::now();
    m.replay(steps);
    (t0.elapsed().as_secs_f64(), m.h.served(), m.w.cycles())
}

/// Both lean halves at once, as the engine runs them: this thread translates 4 K references
/// at a time and a second replays their steps (caches and timing). Returns the seconds and
/// the cycles.
fn pipelined(refs: &[(u64, bool)], lean: impl FnOnce() -> Hierarchy + Send) -> (f64, u64) {
    let mut f = Front::new(8 << 30);
    let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Vec<Step>>(4);
    let (empty_tx, empty_rx) = std::sync::mpsc::channel::<Vec<Step>>();
    for _ in 0..5 {
        empty_tx.send(Vec::with_capacity(4096 * 4)).expect("receiver alive");
    }
    let t0 = Instant::now();
    let cycles = std::thread::scope(|s| {
        let replay = s.spawn(move || {
            let mut m = Memory::new(lean(), true);
            for mut steps in full_rx {
                m.replay(&steps);
                steps.clear();
                let _ = empty_tx.send(steps);
            }
            m.w.cycles()
        });
        for (c, chunk) in refs.chunks(4096).enumerate() {
            let mut out = empty_rx.recv().expect("replay alive");
            for (i, &(va, write)) in chunk.iter().enumerate() {
                if let Some(&(ahead, _)) = refs.get(c * 4096 + i + 32) {
                    prefetch(f.leaf_entry(ahead));
                }
                f.translate(va, write, delta(write), &mut out);
            }
            full_tx.send(out).expect("replay alive");
        }
        drop(full_tx);
        replay.join().expect("replay thread")
    });
    (t0.elapsed().as_secs_f64(), cycles)
}

/// The stages `main` runs, by the name that picks one alone, and its line's label.
const STAGES: [(&str, &str); 4] =
    [("caches", "lean caches"), ("timing", "lean caches + timing"), ("engine", "engine caches + timing"), ("threads", "lean, two threads")];

fn main() {
    let refs: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(20_000_000);
    let only = std::env::args().nth(2);
    if let Some(name) = &only {
        if !STAGES.iter().any(|(n, _)| n == name) {
            eprintln!("floor: no stage {name:?} (caches, timing, engine, threads)");
            std::process::exit(2);
        }
    }
    let label = |name: &str| STAGES.iter().find(|(n, _)| *n == name).map_or("", |(_, l)| *l);
    let wanted = |l: &str| only.as_deref().is_none_or(|o| label(o) == l);
    // Each stage is timed best of three (the host is shared), or once when run alone.
    let rounds = if only.is_some() { 1 } else { 3 };
    let stream = gups(refs);
    // Translation: each round on a fresh table.
    let (mut best, mut steps, mut counts) = (f64::MAX, Vec::new(), (0, 0, 0));
    for _ in 0..rounds {
        let mut f = Front::new(8 << 30);
        let (dt, out) = translate_all(&mut f, &stream);
        if dt < best {
            (best, steps, counts) = (dt, out, (f.walks, f.dirty_walks, f.steps));
        }
    }
    println!(
        "{:<23} {refs} refs in {best:.3} s = {:.1} ns/ref ({:.1} M refs/s); {} walks and {} dirty-bit walks, {} steps",
        "lean translation",
        best * 1e9 / refs as f64,
        refs as f64 / best / 1e6,
        counts.0,
        counts.1,
        counts.2
    );
    let lean = || Hierarchy { l1: Lean::new(64), l2: Lean::new(512), llc: Lean::new(32768), served: [0; 4], dram_writes: 0 };
    let engine = || {
        let c = |kb, ways| Cache::new(kb, ways, 0, Policy::Lru, 0.0, 1);
        Engine { l1: c(32, 8), l2: c(256, 8), llc: c(16384, 8), served: [0; 4] }
    };
    // (What the timed runs found, to check that every model made the same decisions.)
    let mut outcomes = Vec::new();
    for (name, timing) in [("lean caches", false), ("lean caches + timing", true), ("engine caches + timing", true)] {
        if !wanted(name) {
            continue;
        }
        let (mut best, mut last) = (f64::MAX, ([0; 4], 0));
        for _ in 0..rounds {
            let (dt, served, cycles) = if name.starts_with("lean") { run(&steps, timing, lean()) } else { run(&steps, timing, engine()) };
            best = best.min(dt);
            last = (served, cycles);
        }
        let (served, cycles) = last;
        outcomes.push((served, if timing { Some(cycles) } else { None }));
        let total: u64 = served.iter().sum();
        let pct = |i: usize| 100.0 * served[i] as f64 / total as f64;
        println!(
            "{name:<23} {refs} refs in {best:.3} s = {:.1} ns/ref ({:.1} M refs/s); {:.2} accesses/ref, served L1 {:.0} % L2 {:.0} % LLC {:.0} % DRAM {:.0} %{}",
            best * 1e9 / refs as f64,
            refs as f64 / best / 1e6,
            total as f64 / refs as f64,
            pct(0),
            pct(1),
            pct(2),
            pct(3),
            if timing { format!("; {cycles} cycles") } else { String::new() }
        );
    }
    if !wanted("lean, two threads") {
        return;
    }
    let (mut best, mut cycles) = (f64::MAX, 0);
    for _ in 0..rounds {
        let (dt, c) = pipelined(&stream, lean);
        (best, cycles) = (best.min(dt), c);
        if only.is_none() {
            outcomes.push((outcomes[1].0, Some(c)));
        }
    }
    println!(
        "{:<23} {refs} refs in {best:.3} s = {:.1} ns/ref ({:.1} M refs/s); {cycles} cycles",
        "lean, two threads",
        best * 1e9 / refs as f64,
        refs as f64 / best / 1e6
    );
    // The lean caches and the engine's serve every access at the same level, and every timed
    // run takes the same cycles: the lean model simulates the same machine. (A stage run alone
    // has nothing to compare with.)
    if only.is_some() {
        return;
    }
    let (served, cycles) = (outcomes[0].0, outcomes[1].1);
    assert!(outcomes.iter().all(|o| o.0 == served && o.1.is_none_or(|c| Some(c) == cycles)), "the models disagree: {outcomes:?}");
}
