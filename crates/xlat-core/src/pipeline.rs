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

use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::error::SimError;
use crate::machine::{HostTimes, Machine, RunOptions, Served, GUEST, HOST, NATIVE};
use crate::repl::LineKind;
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
    Hit { delta: u32, kind: RefKind, dependent: bool, l2: bool, line: u64 },
    /// A reference that walks dispatches; the walk wants to start at once or after the L2
    /// TLB's latency.
    Walk { delta: u32, kind: RefKind, dependent: bool, l2: bool },
    /// The walk reads a page-table entry in this line, of the native, host or guest table
    /// (`machine::NATIVE`, `HOST`, `GUEST`), `lat` cycles after its previous step
    /// (page-walk-cache or nested-TLB probes).
    Pte { line: u64, table: u8, lat: u32 },
    /// The walk spends this many cycles without touching memory (more than a `lat` field
    /// holds, before the op whose `lat` they would be).
    Lat(u64),
    /// The OS's fault handler ran for `cost` cycles, `lat` cycles after the walk's previous
    /// step.
    Fault { cost: u64, lat: u32 },
    /// The walk is over `lat` cycles after its last step, and the reference accesses its
    /// data, in this line.
    End { line: u64, lat: u32 },
    /// Warm-up ends here: statistics restart.
    Reset,
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

impl Machine {
    /// Whether this run can be split over two host threads (see the module comment).
    pub(crate) fn pipelinable(&self, opts: &RunOptions) -> bool {
        let threads = match opts.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        threads >= 2 && self.cores.len() == 1 && self.vms.len() <= 1 && !self.config().tlb_perfect && !self.ptp_detector && self.sched.next_event == u64::MAX
    }

    /// [`Machine::run`] on two host threads: this one translates, a second replays the
    /// memory side on a twin machine that holds this one's caches, DRAM and window for the
    /// duration.
    pub(crate) fn run_pipelined(&mut self, src: &mut dyn RefSource, opts: RunOptions, progress: &mut dyn FnMut(u64) -> bool) -> Result<u64, SimError> {
        let mut back = match self.twin.take() {
            Some(b) => b,
            None => {
                // Only its memory side is used: boot the cheapest OS the config allows.
                let mut cfg = self.config().clone();
                cfg.phys_fragmentation = crate::config::Fragmentation::None;
                cfg.phys_available_gb = 0.0;
                cfg.virt_enabled = false;
                Box::new(Machine::new(&cfg, 1, Vec::new(), 0)?)
            }
        };
        back.cores[0].counters = Default::default();
        back.cores[0].vcounters = Default::default();
        self.swap_memory_side(&mut back);
        self.front = true;
        let (full_tx, full_rx) = mpsc::channel::<Vec<Op>>();
        let (empty_tx, empty_rx) = mpsc::channel::<Vec<Op>>();
        for _ in 0..BUFFERS {
            // (A buffer is handed over at the first reference that ends at or past CHUNK; the
            // longest references, 2D walks that fault, record a few dozen ops.)
            empty_tx.send(Vec::with_capacity(CHUNK + 256)).expect("the receiver is alive");
        }
        self.rec = empty_rx.recv().expect("a buffer was just sent");
        let start = Instant::now();
        // (Busy times are taken per buffer, thousands of references: nothing per reference.)
        let mut waited = Duration::ZERO;
        let result = std::thread::scope(|s| {
            let twin = &mut *back;
            let replay = std::thread::Builder::new().name("xlat-replay".into()).spawn_scoped(s, move || {
                let mut busy = Duration::ZERO;
                for mut ops in full_rx {
                    let t = Instant::now();
                    twin.replay(&ops);
                    busy += t.elapsed();
                    ops.clear();
                    // (The translating thread may be done and gone.)
                    let _ = empty_tx.send(ops);
                }
                busy
            });
            let Ok(replay) = replay else {
                return None; // no second thread to be had: run on this one
            };
            let mut flush = |rec: &mut Vec<Op>| {
                let t = Instant::now();
                let next = empty_rx.recv().unwrap_or_default();
                waited += t.elapsed();
                // (A failed send means the replaying thread panicked; the scope re-raises.)
                let _ = full_tx.send(std::mem::replace(rec, next));
            };
            let result = self.run_loop(src, opts, progress, CHUNK, &mut flush);
            flush(&mut self.rec);
            drop(full_tx);
            // A panic of the replaying thread is this thread's: the run's results are not whole.
            let memory = replay.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            Some((result, memory))
        });
        let wall = start.elapsed();
        self.front = false;
        self.rec = Vec::new();
        self.swap_memory_side(&mut back);
        let (k, v) = (back.cores[0].counters.clone(), back.cores[0].vcounters.clone());
        self.cores[0].counters.add(&k);
        self.cores[0].vcounters.add(&v);
        self.twin = Some(back);
        match result {
            Some((r, memory)) => {
                self.host_times =
                    Some(HostTimes { wall_s: wall.as_secs_f64(), translate_s: wall.saturating_sub(waited).as_secs_f64(), memory_s: memory.as_secs_f64() });
                r
            }
            None => self.run_loop(src, opts, progress, usize::MAX, &mut |_| {}),
        }
    }

    /// Exchange the memory side (caches, DRAM, core 0's window) with `other`'s.
    fn swap_memory_side(&mut self, other: &mut Machine) {
        let (a, b) = (&mut self.cores[0], &mut other.cores[0]);
        std::mem::swap(&mut a.l1i, &mut b.l1i);
        std::mem::swap(&mut a.l1d, &mut b.l1d);
        std::mem::swap(&mut a.l2, &mut b.l2);
        a.swap_window(b);
        std::mem::swap(&mut self.llc, &mut other.llc);
        std::mem::swap(&mut self.dram, &mut other.dram);
    }

    /// Do what `ops` record on core 0's memory side, exactly as a one-thread run does it
    /// (`Machine::step`, `Machine::walk_and_fill`, `Machine::walk`, `Machine::walk_table`).
    /// `ops` hold whole references.
    fn replay(&mut self, ops: &[Op]) {
        const C: usize = 0;
        let l2_latency = self.config().tlb_l2_latency;
        // (of the reference that walks)
        let (mut kind, mut issue) = (RefKind::Load, 0);
        let (mut walk_at, mut lat, mut fault_cycles) = (0, 0, 0);
        for (j, &op) in ops.iter().enumerate() {
            // (The LLC's sets only: the private caches' bookkeeping stays in the host's
            // caches, and prefetching it too measured 1.5 % slower.)
            if let Some(&Op::Pte { line, .. } | &Op::Hit { line, .. } | &Op::End { line, .. }) = ops.get(j + AHEAD) {
                self.llc.prefetch_set(line);
            }
            match op {
                Op::Hit { delta, kind, dependent, l2, line } => {
                    let issue = self.cores[C].window.dispatch(delta, dependent);
                    let t = if l2 { issue + l2_latency } else { issue };
                    self.finish_ref(C, kind, line, issue, t);
                }
                Op::Walk { delta, kind: k, dependent, l2 } => {
                    kind = k;
                    issue = self.cores[C].window.dispatch(delta, dependent);
                    walk_at = if l2 { issue + l2_latency } else { issue };
                    (lat, fault_cycles) = (0, 0);
                }
                Op::Lat(n) => lat += n,
                Op::Pte { line, table, lat: l } => {
                    lat += l as u64;
                    let (l, served): (u64, Served) = self.access(C, line, LineKind::PageTable, false, self.port, walk_at + lat);
                    lat += l;
                    match table {
                        NATIVE => self.count_pte::<NATIVE>(C, served),
                        HOST => self.count_pte::<HOST>(C, served),
                        _ => self.count_pte::<GUEST>(C, served),
                    }
                }
                Op::Fault { cost, lat: l } => {
                    lat += l as u64 + cost;
                    fault_cycles += cost;
                }
                Op::End { line, lat: l } => {
                    lat += l as u64;
                    let t = self.walk_timing(C, walk_at, lat, fault_cycles);
                    self.finish_ref(C, kind, line, issue, t);
                }
                Op::Reset => self.reset_stats(),
            }
        }
    }
}
