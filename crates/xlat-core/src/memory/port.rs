//! The memory port: how the translation side drives the memory side, one reference at a
//! time. A reference dispatches, may miss the L1 TLBs (the L2 TLB's latency), may walk
//! (reads of page-table entries, fixed delays of page-walk-cache and nested-TLB probes, OS
//! fault handlers), and accesses its data. What a reference does to the caches, DRAM and the
//! timing window follows from this sequence alone, so it can be done at once ([`Direct`]) or
//! recorded and done on another thread (`host::pipeline`), with the same results.

use crate::workload::RefKind;

pub use crate::arch::pte::Table;

/// The memory side as the translation side sees it. Calls come in the order of a
/// reference's life: `dispatch`, then `l2_tlb` if the L1 TLBs missed, `tlb_read`s if an L3
/// TLB is looked up, then (for a walk) `walk_begin`, `delay`/`read_pte`/`fault` in the order
/// their cycles add up, `tlb_write`s, `walk_end`; then `data`; finally, for each TLB
/// prefetch a mechanism asked for, `prefetch_walk_begin`, its `delay`s and reads,
/// `prefetch_walk_end`.
pub trait MemPort {
    /// The memory side's state is on this thread: prefetching it into the host's caches
    /// ahead of use pays.
    const LOCAL: bool;

    /// A reference of `kind` on core `c` dispatches `delta` instructions after the previous
    /// one, waiting for the memory reference `producer` back (0: none, see
    /// [`crate::Ref::producer`]).
    fn dispatch(&mut self, c: usize, delta: u32, kind: RefKind, producer: u8);
    /// The reference dispatched last waits for its producer, and younger references that do
    /// not would start its walk or its line's fill before it issues (see
    /// [`crate::timing::inflight`]). Called only with some, before the reference's `data` or
    /// `dropped` (right after its `dispatch`, or, replayed, before it).
    fn early(&mut self, _e: crate::timing::Early) {}
    /// The L1 TLBs missed: the L2 TLB's lookup latency passes before anything else.
    fn l2_tlb(&mut self);
    /// A page walk begins (at once, or after the L2 TLB).
    fn walk_begin(&mut self);
    /// The walk spends `cycles` without touching memory (page-walk-cache and nested-TLB probes).
    fn delay(&mut self, cycles: u64);
    /// The walk reads a page-table entry of `table` in cache line `line` (physical).
    fn read_pte(&mut self, line: u64, table: Table);
    /// As the walk starts, the MMU prefetches the page-table line `line` (physical) off the
    /// walk's critical path (ASAP); the walk's own read of it, later, finds it in flight.
    fn pte_prefetch(&mut self, line: u64);
    /// The walk reads page-table line `line` at the same time as the other reads of its group
    /// (the ways of a hashed table, probed in parallel; `first` starts a group); it waits for
    /// the slowest of the group's reads that `wait` (the one holding its entry, or all of
    /// them when none does). Each read counts as a walk step.
    fn read_pte_group(&mut self, line: u64, table: Table, first: bool, wait: bool);
    /// The OS's fault handler runs for `cost` cycles within the walk.
    fn fault(&mut self, cost: u64);
    /// The walk is done (it may have waited for a free walker).
    fn walk_end(&mut self);
    /// After the reference's data access, a TLB prefetcher's walk begins: it wants a walker
    /// once the reference's translation is known, and its `delay`s and reads (`read_pte`,
    /// `read_pte_group`, `pte_prefetch`) follow until [`MemPort::prefetch_walk_end`]. It
    /// holds its walker and its reads go through the caches as a demand walk's do, but no
    /// reference waits for it, and it counts apart from demand walks.
    fn prefetch_walk_begin(&mut self);
    /// The prefetch walk is done.
    fn prefetch_walk_end(&mut self);
    /// After the L2 TLB missed, the MMU reads line `line` of a translation structure in
    /// memory (an L3 TLB), entering the caches at L2; with `parallel`, at the same time as
    /// the read before it (translation waits for the slower).
    fn tlb_read(&mut self, line: u64, parallel: bool);
    /// Within a walk, after its reads, the MMU writes a translation into line `line` of a
    /// translation structure in memory (off the critical path).
    fn tlb_write(&mut self, line: u64);
    /// With a perfect TLB: the OS worked `cost` cycles to map the page (a precise exception:
    /// the core stalls until then).
    fn os_delay(&mut self, cost: u64);
    /// The reference accesses its data in cache line `line` (physical) and completes.
    fn data(&mut self, line: u64);
    /// The reference does nothing more: a prefetch dropped at a TLB miss or an unmapped page
    /// retires as it issues, touching no memory.
    fn dropped(&mut self);
    /// Warm-up is over, at this point of the reference stream: the memory side restarts what
    /// its model counts from there ([`crate::memory::MemorySide::on_warmup_end`]).
    fn warmup_end(&mut self);
    /// Core `c` loses `cycles` to OS work outside its references (a shootdown interrupt, a
    /// context switch): its window stalls.
    fn stall(&mut self, c: usize, cycles: u64);
    /// Core `c` dispatches `delta` instructions ending in a system call (an OS call of the
    /// program's, not a memory access) whose OS work occupies it for `cost` cycles once
    /// everything older has retired.
    fn os_call(&mut self, c: usize, delta: u32, cost: u64);
    /// Context `c`'s software read-modify-writes line `line` (a POM-TLB set: TCAT's
    /// initiator), taking it exclusively: the directory invalidates every other cached copy,
    /// forwards the invalidation to `sharers` cores' TLBs and collects their acks; then, with
    /// `flush`, it flushes the line out of every cache (CLFLUSH), writing it back to memory
    /// (without, the line stays modified in the context's L1D). Returns the cycles this takes,
    /// for the caller to charge; a recording port cannot know them, returns `None` and
    /// charges them as a stall when the memory side replays the op.
    fn rewrite_line(&mut self, c: usize, line: u64, sharers: u32, flush: bool) -> Option<u64>;
    /// Whether context `c`'s L1D holds `line` modified: written, and not yet written back
    /// where anyone else, or the MMU, would read it. A recording port cannot know and says
    /// false; the mechanisms that ask run on one thread (`needs_memory_side`).
    fn holds_modified(&self, c: usize, line: u64) -> bool;
    /// Core `c`'s clock, in cycles (OS timers run by the machine's time).
    fn now(&self, c: usize) -> u64;
    /// Instructions core `c` has dispatched (epochs of mechanisms).
    fn instructions(&self, c: usize) -> u64;
    /// A mechanism changes how the memory side behaves.
    fn steer(&mut self, s: Steer);
    /// A recording port: ops recorded and not yet handed over.
    #[inline(always)]
    fn recorded(&self) -> usize {
        0
    }
    /// A recording port: forget the ops after the first `n` (of a reference that failed).
    fn truncate(&mut self, _n: usize) {}
    /// Host-speed hint: core `c` will soon touch cache line `line` (no simulated effect).
    #[inline(always)]
    fn prefetch(&self, _c: usize, _line: u64) {}
}

/// A change to how the memory side behaves, asked for by a mechanism.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Steer {
    /// Caches whose policy is `ptp` evict a non-page-table line with `probability`, and
    /// protect the page-table lines of the cores whose bits are set: `cores` for the private
    /// L2s, `llc` (by owner) for the LLC.
    Ptp { probability: f64, cores: u64, llc: u64 },
}

/// A fake memory side for one-component tests: it writes down a walk's calls and takes no
/// other (the walker never dispatches or touches data: those are the translator's; a
/// mechanism answering from its own structure calls nothing).
#[cfg(test)]
pub(crate) mod fake {
    use super::{MemPort, Steer, Table};
    use crate::workload::RefKind;

    /// What the walker asked of the memory side, in order.
    #[derive(Debug, PartialEq, Eq)]
    pub(crate) enum Call {
        Delay(u64),
        Pte(u64, Table),
        Prefetch(u64),
        Group(u64, bool, bool),
    }

    /// A memory port that only writes down the walk's calls (the walker never dispatches or
    /// touches data: those are the translator's).
    #[derive(Default)]
    pub(crate) struct FakePort(pub(crate) Vec<Call>);

    impl MemPort for FakePort {
        const LOCAL: bool = false;
        fn dispatch(&mut self, _: usize, _: u32, _: RefKind, _: u8) {
            unreachable!()
        }
        fn l2_tlb(&mut self) {
            unreachable!()
        }
        fn walk_begin(&mut self) {
            unreachable!()
        }
        fn delay(&mut self, cycles: u64) {
            self.0.push(Call::Delay(cycles));
        }
        fn read_pte(&mut self, line: u64, table: Table) {
            self.0.push(Call::Pte(line, table));
        }
        fn read_pte_group(&mut self, line: u64, _: Table, first: bool, wait: bool) {
            self.0.push(Call::Group(line, first, wait));
        }
        fn pte_prefetch(&mut self, line: u64) {
            self.0.push(Call::Prefetch(line));
        }
        fn fault(&mut self, _: u64) {
            unreachable!()
        }
        fn walk_end(&mut self) {
            unreachable!()
        }
        fn prefetch_walk_begin(&mut self) {
            unreachable!()
        }
        fn prefetch_walk_end(&mut self) {
            unreachable!()
        }
        fn tlb_read(&mut self, _: u64, _: bool) {
            unreachable!()
        }
        fn tlb_write(&mut self, _: u64) {
            unreachable!()
        }
        fn holds_modified(&self, _: usize, _: u64) -> bool {
            false
        }
        fn rewrite_line(&mut self, _: usize, _: u64, _: u32, _: bool) -> Option<u64> {
            unreachable!()
        }
        fn os_delay(&mut self, _: u64) {
            unreachable!()
        }
        fn data(&mut self, _: u64) {
            unreachable!()
        }
        fn dropped(&mut self) {
            unreachable!()
        }
        fn warmup_end(&mut self) {}
        fn stall(&mut self, _: usize, _: u64) {}
        fn os_call(&mut self, _: usize, _: u32, _: u64) {
            unreachable!()
        }
        fn now(&self, _: usize) -> u64 {
            0
        }
        fn instructions(&self, _: usize) -> u64 {
            0
        }
        fn steer(&mut self, _: Steer) {}
    }
}
