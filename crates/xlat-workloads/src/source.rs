//! Running a kernel in its own host thread and handing its batches to the engine.
//!
//! One producer thread runs the whole kernel (all simulated threads, deterministically
//! interleaved), so the streams never depend on host scheduling. Each stream has a queue of
//! full batches. The producer blocks when the queue it just filled is deep enough, *unless*
//! the consumer is waiting on some other, empty stream: then it keeps going (buffering), so
//! a consumer that reads streams unevenly (the engine advances cores by their local clocks)
//! can never deadlock against a producer that is stuck on a full stream. A hard cap turns
//! pathological imbalance into an error instead of exhausting host memory.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use xlat_core::{Ref, RefSource, Region, SourceError};

use crate::recorder::{BatchRecorder, BATCH};

/// Batches a stream may hold before the producer waits for the consumer.
const DEPTH: usize = 4;
/// Refs buffered across all streams beyond which the source fails (1 GiB of refs).
const CAP_REFS: usize = 1 << 26;

struct HubState {
    queues: Vec<VecDeque<Vec<Ref>>>,
    done: bool,
    error: Option<SourceError>,
    starving: Option<usize>,
    buffered: usize,
    free: Vec<Vec<Ref>>,
}

pub(crate) struct Hub {
    state: Mutex<HubState>,
    prod_cv: Condvar,
    cons_cv: Condvar,
    /// Set from outside (an interrupt): it may be shared by several sources.
    cancel: Arc<AtomicBool>,
    /// Set by this source: dropped, or an error. (Not `cancel`, which would stop the
    /// other sources sharing it: the hindsight oracle opens a workload twice.)
    closed: AtomicBool,
    name: String,
}

impl Hub {
    fn lock(&self) -> MutexGuard<'_, HubState> {
        // A poisoned lock only means a panic elsewhere; the state itself stays consistent
        // because every critical section is a few field updates.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the producer should stop: interrupted, or the source is gone.
    #[inline]
    pub(crate) fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed) || self.closed.load(Ordering::Relaxed)
    }

    /// Queue a full batch; returns an empty buffer to fill next, or None if cancelled.
    pub(crate) fn push(&self, stream: usize, batch: Vec<Ref>) -> Option<Vec<Ref>> {
        let mut st = self.lock();
        if self.cancelled() {
            return None;
        }
        st.buffered += batch.len();
        st.queues[stream].push_back(batch);
        self.cons_cv.notify_all();
        if st.buffered > CAP_REFS && st.error.is_none() {
            st.error = Some(SourceError::Workload {
                name: self.name.clone(),
                what: format!("streams consumed too unevenly: more than {CAP_REFS} references buffered"),
            });
            self.closed.store(true, Ordering::Relaxed);
            self.cons_cv.notify_all();
            return None;
        }
        while !self.cancelled() && st.queues[stream].len() > DEPTH && st.starving.is_none() {
            st = self.prod_cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        if self.cancelled() {
            return None;
        }
        Some(st.free.pop().unwrap_or_else(|| Vec::with_capacity(BATCH)))
    }

    fn finish(&self, error: Option<SourceError>) {
        let mut st = self.lock();
        st.done = true;
        if st.error.is_none() {
            st.error = error;
        }
        self.cons_cv.notify_all();
    }
}

/// Anything the producer thread can run: a kernel with its parameters already validated.
pub(crate) trait Producer: Send + 'static {
    fn produce(&mut self, rec: &mut BatchRecorder);
}

impl<F: FnMut(&mut BatchRecorder) + Send + 'static> Producer for F {
    fn produce(&mut self, rec: &mut BatchRecorder) {
        self(rec)
    }
}

pub(crate) struct KernelSource {
    hub: Arc<Hub>,
    thread: Option<JoinHandle<()>>,
    streams: usize,
    regions: Vec<Region>,
    partial: Vec<Option<(Vec<Ref>, usize)>>,
}

pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "internal error".to_string()
    }
}

impl KernelSource {
    /// Run `producer` on a thread of its own; setting `cancel` (or dropping the source) stops
    /// it at its next check, input construction included, and ends every stream.
    pub(crate) fn spawn(name: &str, streams: usize, regions: Vec<Region>, limit: u64, cancel: Arc<AtomicBool>, mut producer: impl Producer) -> KernelSource {
        let streams = streams.max(1);
        let hub = Arc::new(Hub {
            state: Mutex::new(HubState {
                queues: (0..streams).map(|_| VecDeque::new()).collect(),
                done: false,
                error: None,
                starving: None,
                buffered: 0,
                free: Vec::new(),
            }),
            prod_cv: Condvar::new(),
            cons_cv: Condvar::new(),
            cancel,
            closed: AtomicBool::new(false),
            name: name.to_string(),
        });
        let h2 = hub.clone();
        let nm = name.to_string();
        let thread = std::thread::Builder::new().name(format!("xlat-{name}")).spawn(move || {
            let mut rec = BatchRecorder::new(h2.clone(), streams, limit);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                producer.produce(&mut rec);
                rec.finish();
            }));
            let err = r.err().map(|p| SourceError::Workload { name: nm.clone(), what: format!("kernel failed: {}", panic_message(&*p)) });
            h2.finish(err);
        });
        let thread = match thread {
            Ok(t) => Some(t),
            Err(e) => {
                hub.finish(Some(SourceError::Workload { name: name.to_string(), what: format!("cannot start kernel thread: {e}") }));
                None
            }
        };
        KernelSource { hub, thread, streams, regions, partial: (0..streams).map(|_| None).collect() }
    }
}

fn deliver_partial(slot: &mut Option<(Vec<Ref>, usize)>, out: &mut Vec<Ref>) {
    if let Some((b, pos)) = slot {
        let n = out.capacity().max(1).min(b.len() - *pos);
        out.extend_from_slice(&b[*pos..*pos + n]);
        *pos += n;
        if *pos == b.len() {
            *slot = None;
        }
    }
}

impl RefSource for KernelSource {
    fn streams(&self) -> usize {
        self.streams
    }

    fn regions(&self) -> Vec<Region> {
        self.regions.clone()
    }

    fn next_batch(&mut self, stream: usize, out: &mut Vec<Ref>) -> Result<(), SourceError> {
        out.clear();
        if stream >= self.streams {
            return Err(SourceError::Workload { name: self.hub.name.clone(), what: format!("no stream {stream} (the workload has {})", self.streams) });
        }
        if self.partial[stream].is_some() {
            deliver_partial(&mut self.partial[stream], out);
            return Ok(());
        }
        let hub = self.hub.clone();
        let mut st = hub.lock();
        loop {
            if let Some(mut b) = st.queues[stream].pop_front() {
                st.buffered -= b.len();
                if st.starving == Some(stream) {
                    st.starving = None;
                }
                hub.prod_cv.notify_all();
                if b.len() <= out.capacity().max(1) {
                    std::mem::swap(out, &mut b);
                    // `b` is now the caller's old (cleared) buffer: recycle it.
                    if b.capacity() >= BATCH && st.free.len() < 2 * DEPTH * self.streams {
                        st.free.push(b);
                    }
                } else {
                    drop(st);
                    self.partial[stream] = Some((b, 0));
                    deliver_partial(&mut self.partial[stream], out);
                }
                return Ok(());
            }
            if let Some(e) = &st.error {
                return Err(e.clone());
            }
            if st.done {
                return Ok(());
            }
            st.starving = Some(stream);
            hub.prod_cv.notify_all();
            st = hub.cons_cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for KernelSource {
    fn drop(&mut self) {
        {
            let _st = self.hub.lock();
            self.hub.closed.store(true, Ordering::Relaxed);
            self.hub.prod_cv.notify_all();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
