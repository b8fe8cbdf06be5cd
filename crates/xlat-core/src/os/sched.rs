//! Processes on cores: booting them, who runs where, and the timed tasks of the OS and the
//! mechanisms (the kernel runs them when due: `events.rs`).
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
//! - Shootdowns: [`crate::os::Kernel::os_sync`] (`shootdown.rs`) applies what the OS
//!   queued: the ranges leave the TLBs and PWCs of every core (entries are tagged by PCID, so cores that ran the process
//!   earlier lose theirs too, as Linux's deferred flush on switch-in would), the initiator
//!   pays `os.shootdown_initiator_cycles` (or `os.shootdown_local_cycles` when no other
//!   core runs the address space) and every other core running it `os.shootdown_remote_cycles`.
//!   A flush of more pages than `os.flush_ceiling_pages` drops the whole address space.
//! - Virtual machines (`virt.enabled`, see `virt`): each core also time-slices among the
//!   `virt.vms` VMs, `virt.switch_interval_cycles` each, all cores starting with VM 0; a
//!   process slice runs within the VM the core runs. A VM switch costs `virt.switch_cycles`
//!   and, without VPIDs (`virt.vpid=false`), flushes the core's TLBs, PWC, vPWC and nested
//!   TLB. Shootdowns from a guest OS remove its gVA ranges (its context's TLB and PWC
//!   entries); shootdowns from the host (a gPA range of a VM changed) remove that range from
//!   the nested TLBs and vPWCs and every TLB and guest PWC entry of the VM, as INVEPT does.
//! - Timed tasks ([`Task`]): khugepaged runs when the machine's time (the smallest core
//!   clock) passes its next wake-up, on the core with that clock, which pays for it; process
//!   and VM switches by each core's clock; a mechanism's periodic work (such as an OS daemon
//!   reading a hardware structure) by its own clock, which may count references so that
//!   the run keeps two host threads. The run loop checks for due tasks every
//!   [`EVENT_CHECK`] references, never per reference.

pub use crate::arch::clock::Clock;
use crate::error::SimError;
use crate::os::virt::Vm;
use crate::os::KernelParams;
use crate::os::Os;
use crate::workload::{Program, Region};

/// The run loop looks for due OS events every this many references (a power of two).
pub const EVENT_CHECK: u64 = 256;

/// Periodic work of the OS or of a mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// khugepaged scans and collapses (every OS: the host's and the guests').
    Khugepaged,
    /// Core `c` switches to its next process.
    Switch(usize),
    /// Core `c` switches to its next VM.
    VmSwitch(usize),
    /// The mechanism at this place in the list runs its periodic task
    /// ([`crate::mech::Mechanism::on_tick`]).
    Mech(usize),
}

/// A timed task: its work, its clock, its period and when it is next due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    pub work: Work,
    pub clock: Clock,
    pub period: u64,
    pub next: u64,
}

/// Who runs where, and the timed tasks of the OS and the mechanisms.
pub struct Sched {
    /// Per program: the streams (cores) that run it.
    pub programs: Vec<Vec<usize>>,
    /// Per core: the address spaces it time-slices (in a VM: guest spaces, the same in
    /// every VM).
    queues: Vec<Vec<usize>>,
    /// Per core and VM (`c * vms + vm`): the queue position that runs.
    cur: Vec<usize>,
    /// Per core: the VM it runs (0 natively).
    vm: Vec<usize>,
    vms: usize,
    /// Programs per core ([`crate::Program::slot`]): more than 1 where programs in VMs of
    /// their own share cores, which time-slice them as vCPUs (see `run_loop`).
    pub places: usize,
    /// In the order they run when due together: khugepaged, then each core's process and
    /// VM switches, then the mechanisms' tasks.
    pub tasks: Vec<Task>,
    /// The earliest deadline of a task counted in cycles (`u64::MAX`: none), and of one
    /// counted in references.
    pub next_cycles: u64,
    pub next_refs: u64,
    /// The vCPUs each hardware context runs (vCPU overcommit; one each otherwise).
    pub vcpus: Vcpus,
}

/// vCPU overcommit (`virt.vcpus_per_core` = k > 1): hardware context `c` of `n` time-slices
/// the vCPUs (streams) c, c + n, c + 2n, ..., `virt.vcpu_slice_cycles` each; each vCPU has
/// its own VPID, as KVM gives it, so its TLB entries are tagged with its place on the
/// context (the [`crate::arch::ctx::THREAD_SHIFT`] bits). What a shootdown leaves for a
/// preempted vCPU waits here until it runs.
#[derive(Clone, Debug, Default)]
pub struct Vcpus {
    /// vCPUs per context (1: no overcommit), and their time slice.
    pub k: usize,
    pub slice: u64,
    /// Per context: the stream it runs, and the cycle at which that vCPU's slice ends
    /// (`u64::MAX` without overcommit).
    pub lane: Vec<usize>,
    pub slice_end: Vec<u64>,
    /// Per stream: it has ended; kvm_tlb asked it to flush its TLB entries when it next runs
    /// (`should_flush`); cycles it owes for shootdown interrupts it takes when it runs.
    pub ended: Vec<bool>,
    pub should_flush: Vec<bool>,
    pub owed: Vec<u64>,
}

impl Vcpus {
    /// `n` contexts running `total` streams, `k` per context, slices of `slice` cycles.
    pub fn new(n: usize, k: usize, total: usize, slice: u64) -> Vcpus {
        Vcpus {
            k,
            slice,
            lane: (0..n).collect(),
            slice_end: vec![if k > 1 { slice } else { u64::MAX }; n],
            ended: vec![false; total],
            should_flush: vec![false; total],
            owed: vec![0; total],
        }
    }

    /// The vCPU's place on its context (0 for the first of c, c + n, ...): its tag.
    pub fn slot(&self, stream: usize) -> usize {
        stream / self.lane.len()
    }

    /// The context that runs stream `s`.
    pub fn context_of(&self, s: usize) -> usize {
        s % self.lane.len()
    }

    /// The cycle at which preempted stream `s` next runs: when the vCPUs its context runs
    /// before it, in turn, have had their slices.
    pub fn starts_at(&self, s: usize) -> u64 {
        let (n, j) = (self.lane.len(), self.context_of(s));
        let turn: Vec<usize> = (j..self.ended.len()).step_by(n).filter(|&t| !self.ended[t] || t == self.lane[j]).collect();
        let at = turn.iter().position(|&t| t == self.lane[j]).unwrap_or(0);
        let ahead = (1..=turn.len()).position(|i| turn[(at + i) % turn.len()] == s).unwrap_or(0) as u64;
        self.slice_end[j].saturating_add(ahead * self.slice)
    }
}

impl Sched {
    /// The address space core `c` runs now (in a VM: a space of that VM's guest OS).
    pub fn running(&self, c: usize) -> usize {
        self.queues[c][self.cur[c * self.vms + self.vm[c]]]
    }

    /// The address spaces core `c` time-slices (its program's processes).
    pub fn spaces_of(&self, c: usize) -> &[usize] {
        &self.queues[c]
    }

    /// The VM core `c` runs now (0 natively).
    pub fn running_vm(&self, c: usize) -> usize {
        self.vm[c]
    }

    /// Whether a task is counted in cycles (the run needs the memory side's clocks).
    pub fn needs_clocks(&self) -> bool {
        self.next_cycles != u64::MAX
    }

    /// Whether a task is due at the run loop's check after `done` references.
    #[inline(always)]
    pub fn check_due(&self, done: u64) -> bool {
        self.next_cycles != u64::MAX || self.next_refs <= done
    }

    /// Add a task (a mechanism's), due first at `first`.
    pub fn add(&mut self, work: Work, clock: Clock, period: u64, first: u64) {
        self.tasks.push(Task { work, clock, period, next: first });
        self.update_next();
    }

    /// Core `c` moves on to the next process in its queue, within the VM it runs (returned).
    pub fn next_process(&mut self, c: usize) -> usize {
        let (q, vm) = (self.queues[c].len(), self.vm[c]);
        let i = c * self.vms + vm;
        self.cur[i] = (self.cur[i] + 1) % q;
        vm
    }

    /// Core `c` moves on to the next VM (returned).
    pub fn next_vm(&mut self, c: usize) -> usize {
        self.vm[c] = (self.vm[c] + 1) % self.vms;
        self.vm[c]
    }

    /// Recompute the earliest deadlines after tasks ran or were added.
    pub(crate) fn update_next(&mut self) {
        let next = |clock| self.tasks.iter().filter(|t| t.clock == clock).map(|t| t.next).min().unwrap_or(u64::MAX);
        (self.next_cycles, self.next_refs) = (next(Clock::Cycles), next(Clock::References));
    }
}

/// Build the OS for `streams` streams running `programs`: fragment memory, create each
/// program's processes (`os.processes` address spaces each), and place them on the cores
/// that run it. Virtualized: the host OS and the VMs, each with its guest OS and processes:
/// one program runs in `virt.vms` VMs, each core time-slicing them; a mix of programs runs
/// each in a VM of its own, pinned to the program's cores.
pub fn boot(cfg: &KernelParams, streams: usize, programs: &[Program], seed: u64) -> Result<(Os, Vec<Vm>, Sched), SimError> {
    let n = cfg.sched.processes as usize;
    let mix = programs.len() > 1;
    // Which program each stream runs; a stream none names (an idle core) keeps program 0's
    // spaces and never switches.
    let mut prog_of: Vec<Option<usize>> = vec![None; streams];
    for (p, prog) in programs.iter().enumerate() {
        for &c in &prog.streams {
            match prog_of.get(c) {
                None => return Err(SimError::BadMix { why: format!("program {p} runs on stream {c}, but the workload has {streams}") }),
                Some(Some(q)) => return Err(SimError::BadMix { why: format!("programs {q} and {p} both run on core {c}") }),
                Some(None) => prog_of[c] = Some(p),
            }
        }
    }
    // SMT: a core's hardware contexts run one program (its statistics are the core's).
    let per = cfg.system.threads_per_core.max(1) as usize;
    for (core, ctxs) in prog_of.chunks(per).enumerate() {
        let mut on = ctxs.iter().flatten();
        if let Some(&a) = on.next() {
            if let Some(&b) = on.find(|&&b| b != a) {
                return Err(SimError::BadMix { why: format!("programs {a} and {b} share core {core}'s hardware threads: give each program whole cores") });
            }
        }
    }
    let (os, vms, spaces) = if cfg.virt.enabled {
        let vm_regions: Vec<&[Region]> = if mix {
            if cfg.virt.vms != 1 && cfg.virt.vms as usize != programs.len() {
                return Err(SimError::BadMix {
                    why: format!("a virtualized mix runs each program in its own VM: {} programs, but virt.vms={}", programs.len(), cfg.virt.vms),
                });
            }
            programs.iter().map(|p| &p.regions[..]).collect()
        } else {
            vec![&programs[0].regions[..]; cfg.virt.vms as usize]
        };
        let (host, vms) = crate::os::virt::boot(cfg, &vm_regions, seed)?;
        // (Guest spaces are numbered per VM: every VM's processes are 0..n.)
        (host, vms, vec![(0..n).collect::<Vec<_>>(); programs.len()])
    } else {
        let mut os = Os::new(cfg);
        let lists: Vec<&[Region]> = programs.iter().map(|p| &p.regions[..]).collect();
        os.prepare(&lists, n, seed)?;
        let mut spaces = Vec::with_capacity(programs.len());
        for p in programs {
            spaces.push((0..n).map(|_| os.create_space(p.regions.clone())).collect::<Result<Vec<_>, _>>()?);
        }
        (os, Vec::new(), spaces)
    };
    let nvms = vms.len().max(1);
    // Each core time-slices the VMs, unless each program has its own (pinned to its cores).
    let vm_switching = nvms > 1 && !mix;
    let khugepaged = os.khugepaged_enabled() || vms.iter().any(|v| v.os.khugepaged_enabled());
    let timeslice = cfg.sched.timeslice_cycles;
    let mut tasks = Vec::new();
    let every = |work, period| Task { work, clock: Clock::Cycles, period, next: period };
    if khugepaged {
        tasks.push(every(Work::Khugepaged, cfg.os.khugepaged_interval_cycles));
    }
    for (c, p) in prog_of.iter().enumerate() {
        if p.is_none() {
            continue;
        }
        if n > 1 {
            tasks.push(every(Work::Switch(c), timeslice));
        }
        if vm_switching {
            tasks.push(every(Work::VmSwitch(c), cfg.virt.switch_interval_cycles));
        }
    }
    let prog = |c: usize| prog_of[c].unwrap_or(0);
    let mut s = Sched {
        programs: programs.iter().map(|p| p.streams.clone()).collect(),
        queues: (0..streams).map(|c| spaces[prog(c)].clone()).collect(),
        cur: (0..streams * nvms).map(|i| (i / nvms) % n).collect(),
        vm: (0..streams).map(|c| if mix && cfg.virt.enabled { prog(c) } else { 0 }).collect(),
        vms: nvms,
        places: programs.iter().map(|p| p.slot + 1).max().unwrap_or(1),
        tasks,
        next_cycles: u64::MAX,
        next_refs: u64::MAX,
        vcpus: Vcpus::new(streams, 1, streams, u64::MAX),
    };
    s.update_next();
    Ok((os, vms, s))
}

pub use crate::arch::ctx::Scope;

use crate::param::{bound, component, Limit};

component! {
    /// The scheduler (`os.processes`, `os.timeslice_cycles`, `os.pcid`, `os.switch_cycles`).
    SchedParams {
        processes: u64 = 1; "processes"; Some(Limit::Int(256)); "copies of the workload, each in its own address space; every core time-slices its stream among them round-robin";
        timeslice_cycles: u64 = 8_000_000; "timeslice_cycles"; Some(Limit::Int(bound::INTERVAL)); "os.processes > 1: cycles a process runs before the core switches to the next (4 ms at 2 GHz, a tick at HZ=250)";
        pcid: bool = true; "pcid"; None; "TLB and PWC entries are tagged by address space (PCID); false: every context switch flushes them";
        switch_cycles: u64 = 4000; "switch_cycles"; Some(Limit::Int(bound::COST)); "direct cost of a context switch in cycles (~2 us, of the order lmbench lat_ctx reports)";
    }
    check(p, key) {
        if p.processes == 0 || p.processes > 256 {
            return Err(crate::param::invalid(key("processes"), "must be between 1 and 256"));
        }
        if p.timeslice_cycles == 0 {
            return Err(crate::param::invalid(key("timeslice_cycles"), "must be at least 1"));
        }
        Ok(())
    }
}
