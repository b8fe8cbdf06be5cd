//! Two host threads for one simulated core. What a reference's translation does (TLB and
//! page-walk-cache lookups and fills, which page-table entries the walk reads, A/D bits,
//! page faults) depends neither on what the caches hold nor on time; and its memory side
//! (the walk's and the data's trips through the caches and DRAM, the timing window) changes
//! nothing translation sees. So one thread translates and records what the memory side
//! must do as [`Op`]s, and a second thread replays them, in order, against the caches, DRAM
//! and window. Each side counts its own statistics, and they add up to exactly those of a
//! one-thread run: the same configuration gives the same numbers on one host thread or two.
//!
//! Only runs where nothing couples the halves are split: one core (natively or in one VM),
//! a real TLB, no PTP phase detector (it steers the caches by TLB-miss counts) and no OS
//! events at cycle counts (context switches, khugepaged), which need the memory side's
//! clock.

use std::cell::Cell;
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use crate::error::SimError;
use crate::machine::{HostTimes, Machine, Measure, RunOptions, Warm};
use crate::memory::port::Steer;
use crate::memory::{Direct, MemPort, MemorySide, Table};
use crate::os::Kernel;
use crate::translate::Translator;
use crate::workload::{RefKind, RefSource};

/// What the memory side does for a reference, as the translating thread records it: one
/// `Hit`, or a walk: `Walk`, then its `Pte` reads and `Fault`s in the order the one-thread
/// walk adds their latencies (each read is issued when the ones before it are done), then
/// `End`. 16 bytes each, and as few as the memory side needs: a GUPS reference averages
/// under 3 (they were 5.5 as one op per event: both threads spent a fifth of their time
/// writing, handing over and dispatching them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// A reference the TLBs translate: it dispatches (its instruction delta, kind, and
    /// whether it waits for the previous one), the L1 TLB or the L2 TLB (its latency later)
    /// translates it, and it accesses its data, in this line.
    Hit { delta: u32, kind: RefKind, producer: u8, l2: bool, line: u64 },
    /// A reference that walks dispatches; the walk wants to start at once or after the L2
    /// TLB's latency.
    Walk { delta: u32, kind: RefKind, producer: u8, l2: bool },
    /// The walk reads a page-table entry in this line, of the native, host or guest table,
    /// `lat` cycles after its previous step (page-walk-cache or nested-TLB probes).
    Pte { line: u64, table: Table, lat: u32 },
    /// The walk reads page-table line `line` in a group of parallel reads (ECH's ways);
    /// `first` starts the group, `lat` cycles after the walk's previous step.
    PteGroup { line: u64, table: Table, first: bool, wait: bool, lat: u32 },
    /// The walk prefetches the page-table line `line` (ASAP), `lat` cycles after its previous
    /// step.
    PtePrefetch { line: u64, lat: u32 },
    /// The walk spends this many cycles without touching memory (more than a `lat` field
    /// holds, before the op whose `lat` they would be).
    Lat(u64),
    /// The OS's fault handler ran for `cost` cycles, `lat` cycles after the walk's previous
    /// step.
    Fault { cost: u64, lat: u32 },
    /// The walk is over `lat` cycles after its last step, and the reference accesses its
    /// data, in this line.
    End { line: u64, lat: u32 },
    /// OS work between references (a mechanism's periodic task asked for a promotion, say)
    /// stalls the core this many cycles.
    Stall(u64),
    /// A reference that looks an L3 TLB up dispatches (it missed the L1 TLBs); its reads,
    /// its walk if any (`Begin`) and its data (`End`, or `Data`) follow.
    Dispatch { delta: u32, kind: RefKind, producer: u8, l2: bool },
    /// It reads this line of the L3 TLB, in parallel with the previous read or not.
    TlbRead { line: u64, parallel: bool },
    /// After its reads the L3 TLB missed, and the walk begins.
    Begin,
    /// The walk writes a translation into this line of the L3 TLB, `lat` cycles after its
    /// previous step.
    TlbWrite { line: u64, lat: u32 },
    /// The L3 TLB translated it: it accesses its data, in this line.
    Data(u64),
    /// An OS call: `delta` instructions end in a system call whose OS work takes `cost`
    /// cycles.
    OsCall { delta: u32, cost: u64 },
    /// The OS read-modify-wrote and flushed this line (TCAT), with TLB sharers on this many
    /// other cores; the core stalls for it.
    RewriteLine { line: u64, sharers: u32, flush: bool },
    /// The reference dispatched last does nothing more (a dropped prefetch).
    Dropped,
    /// After the reference's data access, a TLB prefetcher's walk begins; its `Pte`,
    /// `PteGroup` and `PtePrefetch` reads follow, then `PrefetchEnd`.
    PrefetchWalk,
    /// The prefetch walk is over `lat` cycles after its last step.
    PrefetchEnd { lat: u32 },
    /// Warm-up ends here: the memory side restarts what its model counts from this point
    /// ([`MemorySide::on_warmup_end`]), and the translating thread, which waits for it, takes
    /// the memory side's part of the snapshot of the statistics.
    WarmupEnd,
    /// The next reference waits for its producer, and these younger references would start
    /// its walk or its fill first (`MemPort::early`); its `Hit`, `Walk` or `Dispatch` follows.
    Early(crate::timing::Early),
}

const _: () = assert!(std::mem::size_of::<Op>() == 16);

/// Ops per buffer handed from one thread to the other (256 KB, several thousand references):
/// big enough that the hand-over (and waking a waiting thread) costs little: 4 K ops lost
/// 9 % in a VM, where the replay waits more.
const CHUNK: usize = 16384;
/// Buffers in flight: how far translation may run ahead.
const BUFFERS: usize = 4;
/// How many ops ahead the replay asks the host to load the simulated LLC sets it will touch
/// (the one-thread run prefetches from the page tables instead): about three GUPS
/// references; 6 to 12 measure the same, 16 less.
const AHEAD: usize = 8;

/// The memory port of the translating thread: it records what the memory side must do as
/// [`Op`]s, fused as few as possible (a TLB hit is one op; a walk's probe delays ride on its
/// next read, its end on the data access).
pub(crate) struct Recorder {
    pub ops: Vec<Op>,
    /// The reference being translated: instruction delta, kind, dependence, and whether it
    /// missed the L1 TLBs.
    delta: u32,
    kind: RefKind,
    producer: u8,
    l2: bool,
    /// It walks.
    walking: bool,
    /// Its dispatch is recorded (it looked an L3 TLB up).
    dispatched: bool,
    /// Cycles the walk has spent since its last recorded step, carried by its next op.
    lat: u64,
}

impl Recorder {
    pub fn new(ops: Vec<Op>) -> Recorder {
        Recorder { ops, delta: 0, kind: RefKind::Load, producer: 0, l2: false, walking: false, dispatched: false, lat: 0 }
    }

    /// The cycles since the walk's last recorded step, for the `lat` field of its next op
    /// (or as an `Op::Lat` of their own, should they not fit).
    #[inline(always)]
    fn take_lat(&mut self) -> u32 {
        let n = std::mem::take(&mut self.lat);
        u32::try_from(n).unwrap_or_else(|_| {
            self.ops.push(Op::Lat(n));
            0
        })
    }
}

impl MemPort for Recorder {
    const LOCAL: bool = false;

    #[inline(always)]
    fn dispatch(&mut self, _c: usize, delta: u32, kind: RefKind, producer: u8) {
        (self.delta, self.kind, self.producer, self.l2, self.walking, self.dispatched) = (delta, kind, producer, false, false, false);
    }

    fn early(&mut self, e: crate::timing::Early) {
        self.ops.push(Op::Early(e));
    }

    #[inline(always)]
    fn l2_tlb(&mut self) {
        self.l2 = true;
    }

    #[inline(always)]
    fn walk_begin(&mut self) {
        self.walking = true;
        self.lat = 0;
        if self.dispatched {
            self.ops.push(Op::Begin);
        } else {
            self.ops.push(Op::Walk { delta: self.delta, kind: self.kind, producer: self.producer, l2: self.l2 });
        }
    }

    #[inline(always)]
    fn delay(&mut self, cycles: u64) {
        self.lat += cycles;
    }

    #[inline(always)]
    fn read_pte(&mut self, line: u64, table: Table) {
        let lat = self.take_lat();
        self.ops.push(Op::Pte { line, table, lat });
    }

    fn fault(&mut self, cost: u64) {
        let lat = self.take_lat();
        self.ops.push(Op::Fault { cost, lat });
    }

    fn pte_prefetch(&mut self, line: u64) {
        let lat = self.take_lat();
        self.ops.push(Op::PtePrefetch { line, lat });
    }

    fn read_pte_group(&mut self, line: u64, table: Table, first: bool, wait: bool) {
        let lat = self.take_lat();
        self.ops.push(Op::PteGroup { line, table, first, wait, lat });
    }

    #[inline(always)]
    fn walk_end(&mut self) {
        // (The walk's `Op::End` rides on its data access.)
    }

    fn prefetch_walk_begin(&mut self) {
        self.lat = 0;
        self.ops.push(Op::PrefetchWalk);
    }

    fn prefetch_walk_end(&mut self) {
        let lat = self.take_lat();
        self.ops.push(Op::PrefetchEnd { lat });
    }

    fn tlb_read(&mut self, line: u64, parallel: bool) {
        if !self.dispatched {
            self.dispatched = true;
            self.ops.push(Op::Dispatch { delta: self.delta, kind: self.kind, producer: self.producer, l2: self.l2 });
        }
        self.ops.push(Op::TlbRead { line, parallel });
    }

    fn tlb_write(&mut self, line: u64) {
        let lat = self.take_lat();
        self.ops.push(Op::TlbWrite { line, lat });
    }

    fn os_delay(&mut self, _cost: u64) {
        unreachable!("a run with a perfect TLB is not pipelined (Machine::pipelinable)");
    }

    #[inline(always)]
    fn data(&mut self, line: u64) {
        if self.walking {
            let lat = self.take_lat();
            self.ops.push(Op::End { line, lat });
        } else if self.dispatched {
            self.ops.push(Op::Data(line));
        } else {
            self.ops.push(Op::Hit { delta: self.delta, kind: self.kind, producer: self.producer, l2: self.l2, line });
        }
    }

    fn dropped(&mut self) {
        if !self.dispatched {
            self.ops.push(Op::Dispatch { delta: self.delta, kind: self.kind, producer: self.producer, l2: self.l2 });
        }
        self.ops.push(Op::Dropped);
    }

    fn warmup_end(&mut self) {
        self.ops.push(Op::WarmupEnd);
    }

    fn stall(&mut self, c: usize, cycles: u64) {
        // (Only a machine of one core is pipelined.)
        debug_assert_eq!(c, 0);
        self.ops.push(Op::Stall(cycles));
    }

    fn os_call(&mut self, c: usize, delta: u32, cost: u64) {
        debug_assert_eq!(c, 0);
        self.ops.push(Op::OsCall { delta, cost });
    }

    fn rewrite_line(&mut self, c: usize, line: u64, sharers: u32, flush: bool) -> Option<u64> {
        debug_assert_eq!(c, 0);
        self.ops.push(Op::RewriteLine { line, sharers, flush });
        None
    }

    fn holds_modified(&self, _c: usize, _line: u64) -> bool {
        false
    }

    fn now(&self, _c: usize) -> u64 {
        // (Clocks are the other thread's; a one-core run picks its core without them, and
        // runs with OS timers are not pipelined.)
        0
    }

    fn instructions(&self, _c: usize) -> u64 {
        0
    }

    fn steer(&mut self, _s: Steer) {
        unreachable!("a run whose mechanisms steer the memory side is not pipelined (Machine::pipelinable)");
    }

    #[inline(always)]
    fn recorded(&self) -> usize {
        self.ops.len()
    }

    fn truncate(&mut self, n: usize) {
        self.ops.truncate(n);
    }
}

/// Do what `ops` record on the memory side, through the same port a one-thread run uses.
/// `ops` hold whole references. Returns whether warm-up ended in them.
pub(crate) fn replay(mem: &mut MemorySide, ops: &[Op]) -> bool {
    const C: usize = 0;
    let mut warmed = false;
    let mut port = Direct::new(mem);
    for (j, &op) in ops.iter().enumerate() {
        // (The LLC's sets only: the private caches' bookkeeping stays in the host's caches,
        // and prefetching it too measured 1.5 % slower.)
        if let Some(&Op::Pte { line, .. } | &Op::Hit { line, .. } | &Op::End { line, .. }) = ops.get(j + AHEAD) {
            port.mem.llc.prefetch_set(line);
        }
        match op {
            Op::Hit { delta, kind, producer, l2, line } => {
                port.dispatch(C, delta, kind, producer);
                if l2 {
                    port.l2_tlb();
                }
                port.data(line);
            }
            Op::Walk { delta, kind, producer, l2 } => {
                port.dispatch(C, delta, kind, producer);
                if l2 {
                    port.l2_tlb();
                }
                port.walk_begin();
            }
            Op::Lat(n) => port.delay(n),
            Op::Pte { line, table, lat } => {
                port.delay(lat as u64);
                port.read_pte(line, table);
            }
            Op::Fault { cost, lat } => {
                port.delay(lat as u64);
                port.fault(cost);
            }
            Op::PtePrefetch { line, lat } => {
                port.delay(lat as u64);
                port.pte_prefetch(line);
            }
            Op::PteGroup { line, table, first, wait, lat } => {
                port.delay(lat as u64);
                port.read_pte_group(line, table, first, wait);
            }
            Op::End { line, lat } => {
                port.delay(lat as u64);
                port.walk_end();
                port.data(line);
            }
            Op::Dispatch { delta, kind, producer, l2 } => {
                port.dispatch(C, delta, kind, producer);
                if l2 {
                    port.l2_tlb();
                }
            }
            Op::TlbRead { line, parallel } => port.tlb_read(line, parallel),
            Op::Begin => port.walk_begin(),
            Op::TlbWrite { line, lat } => {
                port.delay(lat as u64);
                port.tlb_write(line);
            }
            Op::Data(line) => port.data(line),
            Op::Stall(cycles) => port.stall(C, cycles),
            Op::OsCall { delta, cost } => port.os_call(C, delta, cost),
            Op::RewriteLine { line, sharers, flush } => {
                let cycles = port.rewrite_line(C, line, sharers, flush).unwrap_or(0);
                port.stall(C, cycles);
            }
            Op::Dropped => port.dropped(),
            Op::PrefetchWalk => port.prefetch_walk_begin(),
            Op::PrefetchEnd { lat } => {
                port.delay(lat as u64);
                port.prefetch_walk_end();
            }
            Op::WarmupEnd => {
                port.warmup_end();
                warmed = true;
            }
            // (Before the reference's dispatch: the port keeps it until the reference is done.)
            Op::Early(e) => port.early(e),
        }
    }
    warmed
}

impl Machine {
    /// Whether this run can be split over two host threads (see the module comment).
    pub(crate) fn pipelinable(&self, opts: &RunOptions) -> bool {
        let threads = match opts.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        threads >= 2
            && opts.interval == 0
            && self.kernel.contexts.len() == 1
            && self.kernel.cfg.virt.vcpus_per_core <= 1
            && self.kernel.vms.len() <= 1
            && !self.xl.perfect()
            && !self.xl.mechs.needs_memory_side()
            && !self.kernel.sched.needs_clocks()
    }

    /// [`Machine::run`] on two host threads: this one translates, recording through a
    /// [`Recorder`]; a second replays the records on the memory side.
    pub(crate) fn run_pipelined(&mut self, src: &mut dyn RefSource, opts: RunOptions, progress: &mut dyn FnMut(u64) -> bool) -> Result<u64, SimError> {
        let (full_tx, full_rx) = mpsc::channel::<Vec<Op>>();
        let (empty_tx, empty_rx) = mpsc::channel::<Vec<Op>>();
        for _ in 0..BUFFERS {
            // (A buffer is handed over at the first reference that ends at or past CHUNK; the
            // longest references, 2D walks that fault, record a few dozen ops.)
            empty_tx.send(Vec::with_capacity(CHUNK + 256)).expect("the receiver is alive");
        }
        let mut rec = Recorder::new(empty_rx.recv().expect("a buffer was just sent"));
        let start = Instant::now();
        // (Busy times are taken per buffer, thousands of references: nothing per reference.)
        let waited = Cell::new(Duration::ZERO);
        let Machine { cfg, xl, kernel, mem, .. } = self;
        // (The replaying thread holds the memory side while it replays a buffer; the
        // translating thread takes it only at the end of warm-up, to read its statistics.)
        let mem = Mutex::new(mem);
        let (warm_tx, warm_rx) = mpsc::channel::<()>();
        let mut warm = None;
        let result = std::thread::scope(|s| {
            let shared = &mem;
            let replay = std::thread::Builder::new().name("xlat-replay".into()).spawn_scoped(s, move || {
                let mut busy = Duration::ZERO;
                for mut ops in full_rx {
                    let t = Instant::now();
                    let warmed = replay(&mut shared.lock().expect("only this thread replays"), &ops);
                    busy += t.elapsed();
                    ops.clear();
                    // (The translating thread may be done and gone.)
                    let _ = empty_tx.send(ops);
                    if warmed {
                        let _ = warm_tx.send(());
                    }
                }
                busy
            });
            let Ok(replay) = replay else {
                return None; // no second thread to be had: run on this one
            };
            let send = |rec: &mut Recorder| {
                let t = Instant::now();
                let next = empty_rx.recv().unwrap_or_default();
                waited.set(waited.get() + t.elapsed());
                // (A failed send means the replaying thread panicked; the scope re-raises.)
                let _ = full_tx.send(std::mem::replace(&mut rec.ops, next));
            };
            let mut flush = |rec: &mut Recorder| send(rec);
            // The end of warm-up: the translation side's and the kernel's statistics are those
            // of this point; the memory side's are once the replaying thread has reached it (it
            // then waits for the next buffer, which this thread sends only after).
            let mut measure = |at: Measure, xl: &Translator, kernel: &Kernel, rec: &mut Recorder| {
                debug_assert!(at == Measure::WarmupEnd, "a run with intervals stays on one thread");
                send(rec);
                let t = Instant::now();
                if warm_rx.recv().is_ok() {
                    warm = Some(Warm::take(cfg, xl, kernel, &mem.lock().expect("the replaying thread waits")));
                }
                waited.set(waited.get() + t.elapsed());
            };
            let result = crate::machine::run_loop(xl, kernel, &mut rec, src, opts, progress, CHUNK, &mut flush, &mut measure);
            send(&mut rec);
            drop(full_tx);
            // A panic of the replaying thread is this thread's: the run's results are not whole.
            let memory = replay.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            Some((result, memory))
        });
        let wall = start.elapsed();
        match result {
            Some((r, memory)) => {
                self.host_times = Some(HostTimes {
                    wall_s: wall.as_secs_f64(),
                    translate_s: wall.saturating_sub(waited.get()).as_secs_f64(),
                    memory_s: memory.as_secs_f64(),
                });
                if warm.is_some() {
                    self.warm = warm;
                }
                r
            }
            None => self.run_direct(src, opts, progress),
        }
    }
}
