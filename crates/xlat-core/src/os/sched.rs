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
//! - Shootdowns: [`Translator::os_sync`] applies what the OS queued: the ranges leave the TLBs
//!   and PWCs of every core (entries are tagged by PCID, so cores that ran the process
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

use crate::arch::addr::VirtAddr;
pub use crate::arch::clock::Clock;
use crate::arch::ctx::{Invalidate, VPID_SHIFT};
use crate::config::Config;
use crate::error::SimError;
use crate::memory::port::MemPort;
use crate::os::virt::Vm;
use crate::os::Os;
use crate::translate::mmu::HwContext;
use crate::translate::Translator;
use crate::workload::{Program, Region};

/// The run loop looks for due OS events every this many references (a power of two).
pub const EVENT_CHECK: u64 = 256;
/// Missed khugepaged wake-ups run at one check, at most.
const MAX_CATCH_UP: u32 = 64;

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

    fn update_next(&mut self) {
        let next = |clock| self.tasks.iter().filter(|t| t.clock == clock).map(|t| t.next).min().unwrap_or(u64::MAX);
        (self.next_cycles, self.next_refs) = (next(Clock::Cycles), next(Clock::References));
    }
}

/// Build the OS for `streams` streams running `programs`: fragment memory, create each
/// program's processes (`os.processes` address spaces each), and place them on the cores
/// that run it. Virtualized: the host OS and the VMs, each with its guest OS and processes:
/// one program runs in `virt.vms` VMs, each core time-slicing them; a mix of programs runs
/// each in a VM of its own, pinned to the program's cores.
pub fn boot(cfg: &Config, streams: usize, programs: &[Program], seed: u64) -> Result<(Os, Vec<Vm>, Sched), SimError> {
    let n = cfg.os_processes as usize;
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
    let per = cfg.system_threads_per_core.max(1) as usize;
    for (core, ctxs) in prog_of.chunks(per).enumerate() {
        let mut on = ctxs.iter().flatten();
        if let Some(&a) = on.next() {
            if let Some(&b) = on.find(|&&b| b != a) {
                return Err(SimError::BadMix { why: format!("programs {a} and {b} share core {core}'s hardware threads: give each program whole cores") });
            }
        }
    }
    let (os, vms, spaces) = if cfg.virt_enabled {
        let vm_regions: Vec<&[Region]> = if mix {
            if cfg.virt_vms != 1 && cfg.virt_vms as usize != programs.len() {
                return Err(SimError::BadMix {
                    why: format!("a virtualized mix runs each program in its own VM: {} programs, but virt.vms={}", programs.len(), cfg.virt_vms),
                });
            }
            programs.iter().map(|p| &p.regions[..]).collect()
        } else {
            vec![&programs[0].regions[..]; cfg.virt_vms as usize]
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
    let timeslice = cfg.os_timeslice_cycles;
    let mut tasks = Vec::new();
    let every = |work, period| Task { work, clock: Clock::Cycles, period, next: period };
    if khugepaged {
        tasks.push(every(Work::Khugepaged, cfg.os_khugepaged_interval_cycles));
    }
    for (c, p) in prog_of.iter().enumerate() {
        if p.is_none() {
            continue;
        }
        if n > 1 {
            tasks.push(every(Work::Switch(c), timeslice));
        }
        if vm_switching {
            tasks.push(every(Work::VmSwitch(c), cfg.virt_switch_interval_cycles));
        }
    }
    let prog = |c: usize| prog_of[c].unwrap_or(0);
    let mut s = Sched {
        programs: programs.iter().map(|p| p.streams.clone()).collect(),
        queues: (0..streams).map(|c| spaces[prog(c)].clone()).collect(),
        cur: (0..streams * nvms).map(|i| (i / nvms) % n).collect(),
        vm: (0..streams).map(|c| if mix && cfg.virt_enabled { prog(c) } else { 0 }).collect(),
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

impl Translator {
    /// Run the tasks that are due after `done` references: khugepaged, then each core's
    /// process and VM switches, then the mechanisms' tasks.
    pub(crate) fn os_events<P: MemPort>(&mut self, done: u64, port: &mut P) -> Result<(), SimError> {
        // The machine's time (the smallest core clock) and the core that has it, which
        // runs (and pays for) machine-wide work.
        let (mut first, mut now) = (0, u64::MAX);
        if self.sched.needs_clocks() {
            for i in 0..self.contexts.len() {
                if port.now(i) < now {
                    (first, now) = (i, port.now(i));
                }
            }
        }
        for i in 0..self.sched.tasks.len() {
            let t = self.sched.tasks[i];
            let clock = match (t.clock, t.work) {
                (Clock::References, _) => done,
                (Clock::Cycles, Work::Switch(c) | Work::VmSwitch(c)) => port.now(c),
                (Clock::Cycles, _) => now,
            };
            if clock < t.next {
                continue;
            }
            let next = match t.work {
                Work::Khugepaged => self.khugepaged(first, now, t, port),
                Work::Switch(c) => {
                    self.context_switch(c, port);
                    port.now(c) + t.period
                }
                Work::VmSwitch(c) => {
                    self.vm_switch(c, port);
                    port.now(c) + t.period
                }
                Work::Mech(m) => {
                    self.mech_tick(m, port)?;
                    t.next + t.period
                }
            };
            self.sched.tasks[i].next = next;
        }
        self.sched.update_next();
        Ok(())
    }

    /// khugepaged's wake-ups that fell due by `now` (at most [`MAX_CATCH_UP`]; beyond that
    /// the schedule restarts from now), on core `first`; returns the next wake-up.
    fn khugepaged<P: MemPort>(&mut self, first: usize, now: u64, t: Task, port: &mut P) -> u64 {
        let mut next = t.next;
        let mut runs = 0;
        while next <= now {
            if runs == MAX_CATCH_UP {
                return now + t.period;
            }
            runs += 1;
            for vm in 0..self.vms.len() {
                self.vms[vm].os.phys.cpu = first;
                self.vms[vm].os.khugepaged();
                let cost = self.sync(Scope::Guest(vm), Some(first), port);
                stall(port, first, cost);
            }
            self.os.phys.cpu = first;
            self.os.khugepaged();
            let cost = self.os_sync(Some(first), port);
            stall(port, first, cost);
            next += t.period;
        }
        next
    }

    /// The periodic task of mechanism `m` ran: carry out what it asks of the OS.
    fn mech_tick<P: MemPort>(&mut self, m: usize, port: &mut P) -> Result<(), SimError> {
        for req in self.mechs.on_tick(m) {
            let (core, ctx, va, promote) = match req {
                crate::mech::OsRequest::Promote { core, ctx, va } => (core, ctx, va, true),
                crate::mech::OsRequest::Demote { core, ctx, va } => (core, ctx, va, false),
            };
            let act = |os: &mut crate::os::Os, space: usize| if promote { os.request_promotion(space, va) } else { os.request_demotion_freeing(space, va) };
            let ctx = ctx & crate::arch::ctx::SPACE_MASK;
            if let Some(space) = self.os.spaces.iter().position(|sp| sp.ctx == ctx) {
                self.os_request(core, port, |os| act(os, space))?;
            } else if let Some((vm, space)) = self.vms.iter().enumerate().find_map(|(i, v)| v.os.spaces.iter().position(|sp| sp.ctx == ctx).map(|s| (i, s))) {
                self.check_core(core)?;
                self.vms[vm].os.phys.cpu = core;
                let gb = self.cfg.virt_guest_mem_gb;
                act(&mut self.vms[vm].os, space).map_err(|e| crate::os::virt::guest_error(vm, gb, e))?;
                let cost = self.sync(Scope::Guest(vm), Some(core), port);
                stall(port, core, cost);
            }
        }
        Ok(())
    }

    /// The context of address space `space` (of VM `vm` when virtualized).
    pub(crate) fn ctx_of(&self, vm: usize, space: usize) -> crate::arch::ctx::Ctx {
        match self.vms.get(vm) {
            Some(v) => v.os.spaces[space].ctx,
            None => self.os.spaces[space].ctx,
        }
    }

    /// The context tag hardware context `c` fills its TLB entries with for address-space
    /// context `ctx`: with thread-tagged TLBs (SMT), its thread on the core in the bits from
    /// [`crate::arch::ctx::THREAD_SHIFT`] up; with vCPU overcommit, there, the place of
    /// the vCPU it runs (each vCPU has its own VPID).
    pub(crate) fn tagged(&self, c: usize, ctx: crate::arch::ctx::Ctx) -> crate::arch::ctx::Ctx {
        let per = self.cfg.system_threads_per_core as usize;
        let v = &self.sched.vcpus;
        if v.k > 1 {
            ctx | (v.slot(v.lane[c]) as crate::arch::ctx::Ctx) << crate::arch::ctx::THREAD_SHIFT
        } else if self.cfg.tlb_thread_tagged && per > 1 {
            ctx | ((c % per) as crate::arch::ctx::Ctx) << crate::arch::ctx::THREAD_SHIFT
        } else {
            ctx
        }
    }

    /// Switch core `c` to the next process in its queue (within the VM it runs).
    fn context_switch<P: MemPort>(&mut self, c: usize, port: &mut P) {
        let q = self.sched.queues[c].len();
        let vm = self.sched.vm[c];
        let i = c * self.sched.vms + vm;
        self.sched.cur[i] = (self.sched.cur[i] + 1) % q;
        let space = self.sched.running(c);
        let (pcid, cost) = (self.cfg.os_pcid, self.cfg.os_switch_cycles);
        let ctx = self.ctx_of(vm, space);
        // A CR3 write without PCIDs flushes the linear translations: in a VM, its own.
        let flush = if self.vms.is_empty() { Invalidate::All } else { Invalidate::Vm(ctx >> VPID_SHIFT) };
        let ctx = self.tagged(c, ctx);
        let t = &mut self.contexts[c];
        (t.space, t.ctx) = (space, ctx);
        let core = t.core;
        if !pcid {
            self.flush_local(core, flush);
        }
        port.stall(c, cost);
        match self.vms.get_mut(vm) {
            Some(v) => v.os.counters.context_switches += 1,
            None => self.os.counters.context_switches += 1,
        }
    }

    /// Switch core `c` to the next VM: it runs the process that VM last ran there.
    fn vm_switch<P: MemPort>(&mut self, c: usize, port: &mut P) {
        let vm = (self.sched.vm[c] + 1) % self.sched.vms;
        self.sched.vm[c] = vm;
        let space = self.sched.running(c);
        let ctx = self.tagged(c, self.ctx_of(vm, space));
        let (vpid, cost) = (self.cfg.virt_vpid, self.cfg.virt_switch_cycles);
        let t = &mut self.contexts[c];
        (t.vm, t.space, t.ctx) = (vm, space, ctx);
        let core = t.core;
        self.mmus[core].vcounters.vm_switches += 1;
        if !vpid {
            self.flush_local(core, Invalidate::All);
            self.mmus[core].invalidate_nested(Invalidate::All);
        }
        port.stall(c, cost);
    }

    /// After prefaulting: apply the shootdowns (the TLBs are empty anyway) and start the
    /// OS statistics from zero, as the core statistics do.
    pub(crate) fn after_prefault<P: MemPort>(&mut self, port: &mut P) {
        for vm in 0..self.vms.len() {
            self.sync(Scope::Guest(vm), None, port);
            self.vms[vm].os.counters = Default::default();
        }
        self.os_sync(None, port);
        self.os.counters = Default::default();
    }

    /// A mechanism on core `c` asks the OS to promote the 2 MB region of `space` holding
    /// `va` (see [`Os::request_promotion`]); core `c` pays for the work and the shootdown.
    /// These requests go to [`Translator::os`]: virtualized, the host, so `space` is a VM's
    /// host space (`Vm::space`) and `va` a guest-physical address; a guest OS is reached
    /// through `Translator::vms[vm].os` and [`Translator::sync`] with `Scope::Guest(vm)`.
    pub fn request_promotion<P: MemPort>(&mut self, c: usize, space: usize, va: VirtAddr, port: &mut P) -> Result<bool, SimError> {
        self.os_request(c, port, |os| os.request_promotion(space, va))
    }

    /// Demote the 2 MB page of `space` holding `va` (see [`Os::request_demotion`]).
    pub fn request_demotion<P: MemPort>(&mut self, c: usize, space: usize, va: VirtAddr, port: &mut P) -> Result<bool, SimError> {
        self.os_request(c, port, |os| os.request_demotion(space, va))
    }

    /// Unmap the page of `space` holding `va` (see [`Os::unmap`]).
    pub fn unmap<P: MemPort>(&mut self, c: usize, space: usize, va: VirtAddr, port: &mut P) -> Result<bool, SimError> {
        self.os_request(c, port, |os| os.unmap(space, va))
    }

    /// Protect the 4 KB page of `space` holding `va` (see [`Os::protect`]).
    pub fn protect<P: MemPort>(&mut self, c: usize, space: usize, va: VirtAddr, writable: bool, port: &mut P) -> Result<bool, SimError> {
        self.os_request(c, port, |os| os.protect(space, va, writable))
    }

    /// The program on hardware context `c` asks its OS to change its mappings (an OS-call
    /// reference, [`crate::workload::Ref::os_call`]): natively the OS, in a VM the guest's.
    /// The core pays `os.call_cycles`, the OS work and the shootdown, which reaches every
    /// core that runs the address space.
    #[cold]
    #[inline(never)]
    pub fn os_call<P: MemPort>(&mut self, c: usize, r: crate::workload::Ref, port: &mut P) -> Result<(), SimError> {
        let Some(op) = crate::os::OsOp::from_code(r.size) else {
            return Err(SimError::BadOsCall { code: r.size, va: r.va });
        };
        let HwContext { space, vm, core, .. } = self.contexts[c];
        if op == crate::os::OsOp::ReadPtes {
            return self.read_ptes(c, r, port);
        }
        if op == crate::os::OsOp::Sleep {
            // (The cycles travel in the address field.)
            port.os_call(c, r.inst_delta, r.va);
            return Ok(());
        }
        if op == crate::os::OsOp::Free && !self.cfg.os_madv_free {
            // (jemalloc told not to call it: its bookkeeping runs, no system call.)
            let os = if self.virt { &mut self.vms[vm].os } else { &mut self.os };
            os.counters.ignored_calls += 1;
            port.os_call(c, r.inst_delta, 0);
            return Ok(());
        }
        let start = r.va & !0xfff;
        let end = start.saturating_add(r.pages() as u64 * 4096);
        let scope = if self.virt { Scope::Guest(vm) } else { Scope::Native };
        let os = if self.virt { &mut self.vms[vm].os } else { &mut self.os };
        os.phys.cpu = core;
        os.call(space, op, start, end)?;
        let cost = self.cfg.os_call_cycles + self.sync(scope, Some(c), port);
        port.os_call(c, r.inst_delta, cost);
        Ok(())
    }

    /// A software walk in the kernel ([`crate::os::OsOp::ReadPtes`]): one dependent load of
    /// each level's entry line, through the core's caches (the kernel's direct map needs no
    /// translation). In a VM the guest kernel walks its own table: each entry's guest-physical
    /// address reaches memory through the host's table (the guest's direct map is taken to hit
    /// in the TLBs, as 1 GB pages do), and an entry on a page the host has not mapped yet costs
    /// an EPT violation first.
    fn read_ptes<P: MemPort>(&mut self, c: usize, r: crate::workload::Ref, port: &mut P) -> Result<(), SimError> {
        let HwContext { space, vm, .. } = self.contexts[c];
        // (A scratch list kept across calls: a helper makes one call per touch.)
        let mut lines = std::mem::take(&mut self.pte_lines);
        lines.clear();
        let found = if self.virt { self.guest_pte_lines(c, VirtAddr(r.va), &mut lines, port) } else { self.os.pte_lines(space, VirtAddr(r.va), &mut lines) };
        if found.is_ok() {
            let os = if self.virt { &mut self.vms[vm].os } else { &mut self.os };
            os.counters.pte_reads += lines.len() as u64;
            for (i, &line) in lines.iter().enumerate() {
                port.dispatch(c, if i == 0 { r.inst_delta } else { 1 }, crate::workload::RefKind::Load, u8::from(i > 0));
                port.data(line);
            }
        }
        self.pte_lines = lines;
        found
    }

    /// The host-physical lines of a guest table's entries for `va` (see [`Translator::read_ptes`]).
    fn guest_pte_lines<P: MemPort>(&mut self, c: usize, va: VirtAddr, lines: &mut Vec<u64>, port: &mut P) -> Result<(), SimError> {
        let HwContext { space, vm, .. } = self.contexts[c];
        let gb = self.cfg.virt_guest_mem_gb;
        self.vms[vm].os.pte_lines(space, va, lines).map_err(|e| crate::os::virt::guest_error(vm, gb, e))?;
        let hspace = self.vms[vm].space;
        for line in lines.iter_mut() {
            let gpa = VirtAddr(*line << 6);
            let (frame, size) = match self.os.translate(hspace, gpa) {
                Some(m) => m,
                None => {
                    let cost = self.ept_violation(c, gpa, false, port)?;
                    stall(port, c, cost);
                    self.os.translate(hspace, gpa).expect("the host's fault handler mapped the page")
                }
            };
            *line = (frame.addr().0 + gpa.offset(size)) >> 6;
        }
        Ok(())
    }

    /// Core `c` asks the OS (the host's, virtualized) to do `f`; it pays for the work and
    /// the shootdowns.
    fn os_request<P: MemPort>(&mut self, c: usize, port: &mut P, f: impl FnOnce(&mut Os) -> Result<bool, SimError>) -> Result<bool, SimError> {
        self.check_core(c)?;
        self.os.phys.cpu = c;
        let done = f(&mut self.os)?;
        let cost = self.os_sync(Some(c), port);
        stall(port, c, cost);
        Ok(done)
    }

    /// Run khugepaged once now, on core `c` (tests, and mechanisms that drive it).
    pub fn run_khugepaged<P: MemPort>(&mut self, c: usize, port: &mut P) -> Result<(), SimError> {
        self.check_core(c)?;
        self.os.phys.cpu = c;
        self.os.khugepaged();
        let cost = self.os_sync(Some(c), port);
        stall(port, c, cost);
        Ok(())
    }

    /// `c` names a hardware context (a core, without SMT).
    fn check_core(&self, c: usize) -> Result<(), SimError> {
        if c >= self.contexts.len() {
            return Err(SimError::NoSuchCore { core: c, cores: self.contexts.len() });
        }
        Ok(())
    }
}

/// Stall core `c` for `cycles` of OS work.
fn stall<P: MemPort>(port: &mut P, c: usize, cycles: u64) {
    if cycles > 0 {
        port.stall(c, cycles);
    }
}
