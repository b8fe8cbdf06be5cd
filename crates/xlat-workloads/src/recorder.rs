//! Where a kernel's memory references go.
//!
//! Kernels are generic over [`Recorder`], so the native run (no recording) monomorphises
//! every `load`/`store` call into a counter increment, and the recorded run into a push into
//! a preallocated batch. Kernels call `set_stream` to say which simulated thread is running
//! and poll `stopped` in their outer loops.

use std::sync::Arc;
use std::time::Instant;
use xlat_core::os::OsOp;
use xlat_core::{Ref, RefKind};

use crate::source::Hub;

/// The position of a reference in its stream (see [`Recorder::here`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pos(u64);

impl Pos {
    /// `r`, made dependent on the reference at `self` when recorded at `at`.
    #[inline(always)]
    fn consumer(self, r: Ref, at: Pos) -> Ref {
        let back = at.0 - self.0;
        debug_assert!(back > 0, "a reference cannot be its own producer");
        if back == 0 || back > u64::from(Ref::MAX_PRODUCER) {
            r
        } else {
            r.after(back as u8)
        }
    }
}

pub trait Recorder {
    fn push(&mut self, r: Ref);

    /// Which simulated thread (stream) the following references belong to.
    fn set_stream(&mut self, stream: usize);

    /// True once the consumer is gone or the reference limit was reached: the kernel should
    /// leave its loops. Cheap enough to call once per inner-loop chunk.
    fn stopped(&self) -> bool;

    /// Marks the end of input construction (graph generation, table fill) and the start of
    /// the measured kernel, so native timings exclude setup.
    fn roi_begin(&mut self) {}

    #[inline(always)]
    fn load(&mut self, va: u64, size: u8, delta: u32) {
        self.push(Ref::new(va, RefKind::Load, size, delta, false))
    }

    /// A load whose address came from the previous load's value (pointer chasing).
    #[inline(always)]
    fn load_dep(&mut self, va: u64, size: u8, delta: u32) {
        self.push(Ref::new(va, RefKind::Load, size, delta, true))
    }

    /// Where the next reference of the current stream will be: keep it before a load whose
    /// value later references take their addresses from, and name it in
    /// [`Recorder::load_from`] / [`Recorder::store_from`].
    fn here(&self) -> Pos;

    /// A load whose address came from the value the load at `from` read (a field of a node
    /// reached through a pointer, every element of a list whose start was loaded). A producer
    /// further back than [`Ref::MAX_PRODUCER`] references completed long ago: the load is
    /// recorded as independent. (No OS call may come between the two.)
    #[inline(always)]
    fn load_from(&mut self, va: u64, size: u8, delta: u32, from: Pos) {
        let r = Ref::new(va, RefKind::Load, size, delta, false);
        let r = from.consumer(r, self.here());
        self.push(r)
    }
    /// A software prefetch of the line of `va` (`prefetcht0`: nothing waits for it).
    #[inline(always)]
    fn prefetch(&mut self, va: u64, delta: u32) {
        self.push(Ref::prefetch(va, delta))
    }

    #[inline(always)]
    fn store(&mut self, va: u64, size: u8, delta: u32) {
        self.push(Ref::new(va, RefKind::Store, size, delta, false))
    }

    /// [`Recorder::load_from`] where there may be no producer (`None`: an address from a
    /// constant or a loop counter, as a tree's root or a vertex a loop visits).
    #[inline(always)]
    fn load_from_opt(&mut self, va: u64, size: u8, delta: u32, from: Option<Pos>) {
        match from {
            Some(p) => self.load_from(va, size, delta, p),
            None => self.load(va, size, delta),
        }
    }

    /// A store whose address came from the previous load's value.
    #[inline(always)]
    fn store_dep(&mut self, va: u64, size: u8, delta: u32) {
        self.push(Ref::new(va, RefKind::Store, size, delta, true))
    }

    /// A store whose address came from the value the load at `from` read (as
    /// [`Recorder::load_from`]): it translates once that load completes.
    #[inline(always)]
    fn store_from(&mut self, va: u64, size: u8, delta: u32, from: Pos) {
        let r = Ref::new(va, RefKind::Store, size, delta, false);
        let r = from.consumer(r, self.here());
        self.push(r)
    }

    /// The program asks the OS to change the mappings of `bytes` from `va` (a system call
    /// after `delta` instructions): one OS-call record per 65,535 pages.
    fn os_call(&mut self, op: OsOp, va: u64, bytes: u64, delta: u32) {
        let (mut va, mut pages) = (va & !0xfff, bytes.div_ceil(4096));
        while pages > 0 {
            let n = pages.min(u16::MAX as u64);
            self.push(Ref::os_call(op, va, n as u16, delta));
            (va, pages) = (va + n * 4096, pages - n);
        }
    }
}

/// The native run: nothing is recorded, only counted.
pub struct CountRecorder {
    pub refs: u64,
    pub limit: u64,
    pub roi_start: Option<Instant>,
}

impl CountRecorder {
    pub fn new(limit: u64) -> CountRecorder {
        CountRecorder { refs: 0, limit: if limit == 0 { u64::MAX } else { limit }, roi_start: None }
    }
}

impl Recorder for CountRecorder {
    #[inline(always)]
    fn push(&mut self, _r: Ref) {
        self.refs += 1;
    }
    #[inline(always)]
    fn set_stream(&mut self, _stream: usize) {}
    #[inline(always)]
    fn stopped(&self) -> bool {
        self.refs >= self.limit
    }
    #[inline(always)]
    fn here(&self) -> Pos {
        Pos(self.refs)
    }
    fn roi_begin(&mut self) {
        self.roi_start = Some(Instant::now());
    }
}

/// Collects everything in memory; for tests only.
#[derive(Default)]
pub struct VecRecorder {
    pub streams: Vec<Vec<Ref>>,
    cur: usize,
}

impl Recorder for VecRecorder {
    fn push(&mut self, r: Ref) {
        if self.streams.len() <= self.cur {
            self.streams.resize_with(self.cur + 1, Vec::new);
        }
        self.streams[self.cur].push(r);
    }
    fn set_stream(&mut self, stream: usize) {
        self.cur = stream;
    }
    fn stopped(&self) -> bool {
        false
    }
    fn here(&self) -> Pos {
        Pos(self.streams.get(self.cur).map_or(0, |s| s.len() as u64))
    }
}

/// Refs per batch handed to the consumer: big enough that the per-batch lock is noise,
/// small enough (256 KiB) to stay in L2.
pub const BATCH: usize = 16 * 1024;

/// The recorded run: fills per-stream batches and hands full ones to the [`Hub`].
pub struct BatchRecorder {
    buf: Vec<Ref>,
    cur: usize,
    parked: Vec<Vec<Ref>>,
    /// References of the current stream in batches already handed over (for `here`), and
    /// of every other stream (parked with its batch).
    done: u64,
    parked_done: Vec<u64>,
    hub: Arc<Hub>,
    stop: bool,
    sent: u64,
    limit: u64,
}

impl BatchRecorder {
    pub(crate) fn new(hub: Arc<Hub>, streams: usize, limit: u64) -> BatchRecorder {
        BatchRecorder {
            buf: Vec::with_capacity(BATCH),
            cur: 0,
            parked: (0..streams).map(|_| Vec::new()).collect(),
            done: 0,
            parked_done: vec![0; streams],
            hub,
            stop: false,
            sent: 0,
            limit: if limit == 0 { u64::MAX } else { limit },
        }
    }

    #[cold]
    #[inline(never)]
    fn flush_cur(&mut self) {
        let full = std::mem::take(&mut self.buf);
        self.done += full.len() as u64;
        self.buf = self.hand_over(self.cur, full);
    }

    /// Send `batch` of `stream` (truncated to the limit); returns an empty buffer to refill.
    fn hand_over(&mut self, stream: usize, mut batch: Vec<Ref>) -> Vec<Ref> {
        if self.stop || self.hub.cancelled() {
            self.stop = true;
            batch.clear();
            if batch.capacity() < BATCH {
                batch.reserve(BATCH);
            }
            return batch;
        }
        let room = self.limit - self.sent;
        if batch.len() as u64 >= room {
            batch.truncate(room as usize);
            self.stop = true;
        }
        self.sent += batch.len() as u64;
        if batch.is_empty() {
            return batch;
        }
        match self.hub.push(stream, batch) {
            Some(fresh) => fresh,
            None => {
                self.stop = true;
                Vec::with_capacity(BATCH)
            }
        }
    }

    /// Flush every stream's partial batch (in stream order, so truncation at the limit is
    /// deterministic).
    pub(crate) fn finish(&mut self) {
        let cur = self.cur;
        self.parked[cur] = std::mem::take(&mut self.buf);
        for s in 0..self.parked.len() {
            let b = std::mem::take(&mut self.parked[s]);
            if !b.is_empty() {
                let _ = self.hand_over(s, b);
            }
        }
    }
}

impl Recorder for BatchRecorder {
    #[inline(always)]
    fn push(&mut self, r: Ref) {
        if self.buf.len() == self.buf.capacity() {
            self.flush_cur();
        }
        self.buf.push(r);
    }

    #[inline]
    fn set_stream(&mut self, stream: usize) {
        if stream != self.cur && stream < self.parked.len() {
            std::mem::swap(&mut self.buf, &mut self.parked[self.cur]);
            self.parked_done[self.cur] = self.done;
            self.cur = stream;
            std::mem::swap(&mut self.buf, &mut self.parked[stream]);
            self.done = self.parked_done[stream];
            if self.buf.capacity() == 0 {
                self.buf.reserve(BATCH);
            }
        }
    }

    #[inline(always)]
    fn stopped(&self) -> bool {
        self.stop || self.hub.cancelled()
    }

    #[inline(always)]
    fn here(&self) -> Pos {
        Pos(self.done + self.buf.len() as u64)
    }
}

/// Split `0..total` into `parts` contiguous ranges (OpenMP `schedule(static)`).
pub fn static_split(total: u64, parts: usize) -> Vec<(u64, u64)> {
    let p = parts.max(1) as u64;
    (0..p).map(|t| (total * t / p, total * (t + 1) / p)).collect()
}

/// Run per-thread ranges interleaved in chunks of `chunk` items, round-robin over threads,
/// as a fair scheduler would. The interleaving is fixed, so the streams (and any shared
/// state the threads update) are deterministic; `f(rec, thread, lo, hi)` does the items.
pub fn interleave<R: Recorder>(rec: &mut R, ranges: &[(u64, u64)], chunk: u64, mut f: impl FnMut(&mut R, usize, u64, u64)) {
    let mut pos: Vec<u64> = ranges.iter().map(|r| r.0).collect();
    let chunk = chunk.max(1);
    loop {
        let mut any = false;
        for (t, &(_, end)) in ranges.iter().enumerate() {
            let lo = pos[t];
            if lo >= end {
                continue;
            }
            any = true;
            let hi = (lo + chunk).min(end);
            rec.set_stream(t);
            f(rec, t, lo, hi);
            pos[t] = hi;
        }
        if !any || rec.stopped() {
            return;
        }
    }
}
