//! Processes on cores, and the OS's hooks into the machine.
//!
//! - Booting: physical memory is fragmented as `phys.fragmentation` says, then
//!   `os.processes` copies of the workload get one address space each.
//! - Scheduling: every core that runs a stream time-slices it among the processes,
//!   round-robin, `os.timeslice_cycles` each: in its slice a process consumes the next
//!   references of the core's stream, in its own address space (own PCID, page tables and
//!   frames). So N processes are N copies of the workload, each running 1/N of the
//!   references. Core `i` starts with process `i mod N`. A switch costs
//!   `os.switch_cycles`; without PCIDs (`os.pcid=false`) it flushes the core's TLBs and
//!   page-walk caches, as a CR3 write does.
//! - Shootdowns: [`Machine::os_sync`] applies what the OS queued: the ranges leave the TLBs
//!   and PWCs of every core (entries are tagged by PCID, so cores that ran the process
//!   earlier lose theirs too, as Linux's deferred flush on switch-in would), the initiator
//!   pays `os.shootdown_initiator_cycles` (or `os.shootdown_local_cycles` when no other
//!   core runs the address space) and every other core running it `os.shootdown_remote_cycles`.
//!   A flush of more pages than `os.flush_ceiling_pages` drops the whole address space.
//! - Background work (khugepaged) runs when the machine's time (the smallest core clock)
//!   passes its next wake-up, on the core with that clock, which pays for it. The run loop
//!   checks for due events every [`EVENT_CHECK`] references, never per reference.

use crate::addr::VirtAddr;
use crate::config::Config;
use crate::error::SimError;
use crate::machine::Machine;
use crate::os::Os;
use crate::tlb::Invalidate;
use crate::workload::Region;

/// The run loop looks for due OS events every this many references (a power of two).
pub const EVENT_CHECK: u64 = 256;
/// Missed khugepaged wake-ups run at one check, at most.
const MAX_CATCH_UP: u32 = 64;

/// Who runs where, and when the OS next has something to do.
pub struct Sched {
    /// Per core: the address spaces it time-slices, and which one runs.
    queues: Vec<Vec<usize>>,
    cur: Vec<usize>,
    next_switch: Vec<u64>,
    khugepaged_next: u64,
    /// The earliest of the above (`u64::MAX`: nothing ever happens).
    pub next_event: u64,
    timeslice: u64,
    khugepaged_interval: u64,
}

impl Sched {
    /// The address space core `c` runs now.
    pub fn running(&self, c: usize) -> usize {
        self.queues[c][self.cur[c]]
    }

    fn update_next(&mut self) {
        self.next_event = self.next_switch.iter().copied().fold(self.khugepaged_next, u64::min);
    }
}

/// Build the OS for a workload with `streams` streams and its `regions`: fragment memory,
/// create the processes, and place them on cores.
pub fn boot(cfg: &Config, streams: usize, regions: Vec<Region>, seed: u64) -> Result<(Os, Sched), SimError> {
    let mut os = Os::new(cfg);
    let n = cfg.os_processes as usize;
    os.prepare(&regions, n, seed)?;
    let spaces = (0..n).map(|_| os.create_space(regions.clone())).collect::<Result<Vec<_>, _>>()?;
    let timeslice = cfg.os_timeslice_cycles;
    let mut s = Sched {
        queues: vec![spaces; streams],
        cur: (0..streams).map(|i| i % n).collect(),
        next_switch: vec![if n > 1 { timeslice } else { u64::MAX }; streams],
        khugepaged_next: if os.khugepaged_enabled() { cfg.os_khugepaged_interval_cycles } else { u64::MAX },
        next_event: u64::MAX,
        timeslice,
        khugepaged_interval: cfg.os_khugepaged_interval_cycles,
    };
    s.update_next();
    Ok((os, s))
}

impl Machine {
    /// Apply the shootdowns the OS queued and charge them, plus the OS work it accumulated
    /// ([`Os::charge`]). The remote cores are stalled here; the initiator's cycles are
    /// returned for the caller to charge (as fault latency, or a stall). `None`: work done
    /// before the run (prefaulting), charged to nobody.
    pub fn os_sync(&mut self, initiator: Option<usize>) -> u64 {
        let mut cost = std::mem::take(&mut self.os.charge);
        if self.os.pending.is_empty() {
            return cost;
        }
        let cfg = self.config();
        let (ceiling, init_cycles, local_cycles, remote_cycles) =
            (cfg.os_flush_ceiling_pages, cfg.os_shootdown_initiator_cycles, cfg.os_shootdown_local_cycles, cfg.os_shootdown_remote_cycles);
        for sd in std::mem::take(&mut self.os.pending) {
            let ctx = self.os.spaces[sd.space].ctx;
            if sd.pages > ceiling {
                self.shootdown(Invalidate::Context(ctx));
                self.os.counters.full_flushes += 1;
            } else {
                for &(start, end) in &sd.ranges {
                    self.shootdown(Invalidate::Range { ctx, start, end });
                }
            }
            let mut remotes = 0;
            for (i, core) in self.cores.iter_mut().enumerate() {
                if core.space == sd.space && Some(i) != initiator {
                    remotes += 1;
                    let t = core.window.now() + remote_cycles;
                    core.window.stall_until(t);
                }
            }
            let init = if remotes > 0 { init_cycles } else { local_cycles };
            let k = &mut self.os.counters;
            k.shootdowns += 1;
            k.shootdown_ipis += remotes;
            k.shootdown_cycles += init + remotes * remote_cycles;
            cost += init;
        }
        cost
    }

    /// Stall core `c` for `cycles` of OS work.
    fn stall(&mut self, c: usize, cycles: u64) {
        if cycles > 0 {
            let w = &mut self.cores[c].window;
            let t = w.now() + cycles;
            w.stall_until(t);
        }
    }

    /// Run what is due: khugepaged, then context switches.
    pub(crate) fn os_events(&mut self) -> Result<(), SimError> {
        let (mut first, mut now) = (0, u64::MAX);
        for (i, core) in self.cores.iter().enumerate() {
            if core.window.now() < now {
                (first, now) = (i, core.window.now());
            }
        }
        // Catch up on the wake-ups that fell due since the last check (at most
        // MAX_CATCH_UP; beyond that the schedule restarts from now).
        let mut runs = 0;
        while self.sched.khugepaged_next <= now {
            if runs == MAX_CATCH_UP {
                self.sched.khugepaged_next = now + self.sched.khugepaged_interval;
                break;
            }
            runs += 1;
            self.os.phys.cpu = first;
            self.os.khugepaged();
            let cost = self.os_sync(Some(first));
            self.stall(first, cost);
            self.sched.khugepaged_next += self.sched.khugepaged_interval;
        }
        for c in 0..self.cores.len() {
            if self.cores[c].window.now() >= self.sched.next_switch[c] {
                self.context_switch(c);
            }
        }
        self.sched.update_next();
        Ok(())
    }

    /// Switch core `c` to the next process in its queue.
    fn context_switch(&mut self, c: usize) {
        let q = self.sched.queues[c].len();
        self.sched.cur[c] = (self.sched.cur[c] + 1) % q;
        let space = self.sched.running(c);
        let (pcid, cost, slice) = (self.config().os_pcid, self.config().os_switch_cycles, self.sched.timeslice);
        let ctx = self.os.spaces[space].ctx;
        let core = &mut self.cores[c];
        core.space = space;
        core.ctx = ctx;
        if !pcid {
            core.itlb.invalidate(Invalidate::All);
            core.dtlb.invalidate(Invalidate::All);
            core.stlb.invalidate(Invalidate::All);
            core.pwc.invalidate(Invalidate::All);
        }
        let t = core.window.now() + cost;
        core.window.stall_until(t);
        self.sched.next_switch[c] = core.window.now() + slice;
        self.os.counters.context_switches += 1;
    }

    /// After prefaulting: apply the shootdowns (the TLBs are empty anyway) and start the
    /// OS statistics from zero, as the core statistics do.
    pub(crate) fn after_prefault(&mut self) {
        self.os_sync(None);
        self.os.counters = Default::default();
    }

    /// A mechanism on core `c` asks the OS to promote the 2 MB region of `space` holding
    /// `va` (see [`Os::request_promotion`]); core `c` pays for the work and the shootdown.
    pub fn request_promotion(&mut self, c: usize, space: usize, va: VirtAddr) -> Result<bool, SimError> {
        self.check_core(c)?;
        self.os.phys.cpu = c;
        let done = self.os.request_promotion(space, va)?;
        let cost = self.os_sync(Some(c));
        self.stall(c, cost);
        Ok(done)
    }

    /// Demote the 2 MB page of `space` holding `va` (see [`Os::request_demotion`]).
    pub fn request_demotion(&mut self, c: usize, space: usize, va: VirtAddr) -> Result<bool, SimError> {
        self.check_core(c)?;
        self.os.phys.cpu = c;
        let done = self.os.request_demotion(space, va)?;
        let cost = self.os_sync(Some(c));
        self.stall(c, cost);
        Ok(done)
    }

    /// Unmap the page of `space` holding `va` (see [`Os::unmap`]).
    pub fn unmap(&mut self, c: usize, space: usize, va: VirtAddr) -> Result<bool, SimError> {
        self.check_core(c)?;
        self.os.phys.cpu = c;
        let done = self.os.unmap(space, va)?;
        let cost = self.os_sync(Some(c));
        self.stall(c, cost);
        Ok(done)
    }

    /// Run khugepaged once now, on core `c` (tests, and mechanisms that drive it).
    pub fn run_khugepaged(&mut self, c: usize) -> Result<(), SimError> {
        self.check_core(c)?;
        self.os.phys.cpu = c;
        self.os.khugepaged();
        let cost = self.os_sync(Some(c));
        self.stall(c, cost);
        Ok(())
    }

    fn check_core(&self, c: usize) -> Result<(), SimError> {
        if c >= self.cores.len() {
            return Err(SimError::NoSuchCore { core: c, cores: self.cores.len() });
        }
        Ok(())
    }
}
