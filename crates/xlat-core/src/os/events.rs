//! The kernel's work on the hardware: the timed tasks the run loop finds due (khugepaged,
//! process and VM switches, mechanisms' periodic tasks and what they ask of the OS), faults
//! and EPT violations from the translator's walks, OS calls of the program (mapping changes,
//! a helper's software walk), and the requests a machine exposes (promotion, demotion,
//! unmapping, protection). Each charges its cycles through the memory port and reaches the
//! TLBs through [`Hardware`]; shootdowns are `shootdown.rs`'s.

use crate::arch::addr::VirtAddr;
use crate::arch::clock::Clock;
use crate::arch::ctx::{HwContext, Invalidate, OsRequest, Scope, VPID_SHIFT};
use crate::error::SimError;
use crate::memory::port::MemPort;
use crate::os::sched::{Task, Work};
use crate::os::system::{Hardware, Kernel};
use crate::os::Os;

/// Missed khugepaged wake-ups run at one check, at most.
const MAX_CATCH_UP: u32 = 64;

impl Kernel {
    /// Run the tasks that are due after `done` references: khugepaged, then each core's
    /// process and VM switches, then the mechanisms' tasks.
    pub(crate) fn os_events<H: Hardware, P: MemPort>(&mut self, done: u64, hw: &mut H, port: &mut P) -> Result<(), SimError> {
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
                Work::Khugepaged => self.khugepaged(first, now, t, hw, port),
                Work::Switch(c) => {
                    self.context_switch(c, hw, port);
                    port.now(c) + t.period
                }
                Work::VmSwitch(c) => {
                    self.vm_switch(c, hw, port);
                    port.now(c) + t.period
                }
                Work::Mech(m) => {
                    self.mech_tick(m, hw, port)?;
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
    fn khugepaged<H: Hardware, P: MemPort>(&mut self, first: usize, now: u64, t: Task, hw: &mut H, port: &mut P) -> u64 {
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
                let cost = self.sync(Scope::Guest(vm), Some(first), hw, port);
                stall(port, first, cost);
            }
            self.os.phys.cpu = first;
            self.os.khugepaged();
            let cost = self.os_sync(Some(first), hw, port);
            stall(port, first, cost);
            next += t.period;
        }
        next
    }

    /// The periodic task of mechanism `m` ran: carry out what it asks of the OS.
    fn mech_tick<H: Hardware, P: MemPort>(&mut self, m: usize, hw: &mut H, port: &mut P) -> Result<(), SimError> {
        for req in hw.tick(m) {
            let (core, ctx, va, promote) = match req {
                OsRequest::Promote { core, ctx, va } => (core, ctx, va, true),
                OsRequest::Demote { core, ctx, va } => (core, ctx, va, false),
            };
            let act = |os: &mut crate::os::Os, space: usize| if promote { os.request_promotion(space, va) } else { os.request_demotion_freeing(space, va) };
            let ctx = ctx & crate::arch::ctx::SPACE_MASK;
            if let Some(space) = self.os.spaces.iter().position(|sp| sp.ctx == ctx) {
                self.os_request(core, hw, port, |os| act(os, space))?;
            } else if let Some((vm, space)) = self.vms.iter().enumerate().find_map(|(i, v)| v.os.spaces.iter().position(|sp| sp.ctx == ctx).map(|s| (i, s))) {
                self.check_core(core)?;
                self.vms[vm].os.phys.cpu = core;
                let gb = self.cfg.virt.guest_mem_gb;
                act(&mut self.vms[vm].os, space).map_err(|e| crate::os::virt::guest_error(vm, gb, e))?;
                let cost = self.sync(Scope::Guest(vm), Some(core), hw, port);
                stall(port, core, cost);
            }
        }
        Ok(())
    }

    /// The walk of context `c` found `va` not mapped: the OS of its address space (natively
    /// the OS, in a VM the guest's) maps it. Returns what the handler and its shootdowns cost
    /// the core.
    pub fn fault<H: Hardware, P: MemPort>(&mut self, c: usize, va: VirtAddr, write: bool, hw: &mut H, port: &mut P) -> Result<u64, SimError> {
        let HwContext { space, vm, .. } = self.contexts[c];
        if !self.virt {
            self.os.fault_on(c, space, va, write)?;
            return Ok(self.cfg.os.fault_cycles + self.os_sync(Some(c), hw, port));
        }
        let gb = self.cfg.virt.guest_mem_gb;
        self.vms[vm].os.fault_on(c, space, va, write).map_err(|e| crate::os::virt::guest_error(vm, gb, e))?;
        Ok(self.cfg.os.fault_cycles + self.sync(Scope::Guest(vm), Some(c), hw, port))
    }

    /// Context `c`'s VM touched guest-physical `gpa`, which its host table does not map: the
    /// host maps it (an EPT violation, counted on the core). Returns its cost in cycles.
    pub fn ept_violation<H: Hardware, P: MemPort>(&mut self, c: usize, gpa: VirtAddr, write: bool, hw: &mut H, port: &mut P) -> Result<u64, SimError> {
        let HwContext { core, vm, .. } = self.contexts[c];
        let (hspace, gb) = (self.vms[vm].space, self.cfg.phys.size_gb);
        self.os.fault_on(c, hspace, gpa, write).map_err(|e| crate::os::virt::host_error(vm, gb, gpa.0, e))?;
        let cost = self.cfg.virt.ept_fault_cycles + self.os_sync(Some(c), hw, port);
        hw.ept_violation(core, cost);
        Ok(cost)
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
        let per = self.cfg.system.threads_per_core as usize;
        let v = &self.sched.vcpus;
        if v.k > 1 {
            ctx | (v.slot(v.lane[c]) as crate::arch::ctx::Ctx) << crate::arch::ctx::THREAD_SHIFT
        } else if self.cfg.thread_tagged && per > 1 {
            ctx | ((c % per) as crate::arch::ctx::Ctx) << crate::arch::ctx::THREAD_SHIFT
        } else {
            ctx
        }
    }

    /// Switch core `c` to the next process in its queue (within the VM it runs).
    fn context_switch<H: Hardware, P: MemPort>(&mut self, c: usize, hw: &mut H, port: &mut P) {
        let vm = self.sched.next_process(c);
        let space = self.sched.running(c);
        let (pcid, cost) = (self.cfg.sched.pcid, self.cfg.sched.switch_cycles);
        let ctx = self.ctx_of(vm, space);
        // A CR3 write without PCIDs flushes the linear translations: in a VM, its own.
        let flush = if self.vms.is_empty() { Invalidate::All } else { Invalidate::Vm(ctx >> VPID_SHIFT) };
        let ctx = self.tagged(c, ctx);
        let t = &mut self.contexts[c];
        (t.space, t.ctx) = (space, ctx);
        let core = t.core;
        if !pcid {
            hw.flush_local(core, flush);
        }
        port.stall(c, cost);
        match self.vms.get_mut(vm) {
            Some(v) => v.os.counters.context_switches += 1,
            None => self.os.counters.context_switches += 1,
        }
    }

    /// Switch core `c` to the next VM: it runs the process that VM last ran there.
    fn vm_switch<H: Hardware, P: MemPort>(&mut self, c: usize, hw: &mut H, port: &mut P) {
        let vm = self.sched.next_vm(c);
        let space = self.sched.running(c);
        let ctx = self.tagged(c, self.ctx_of(vm, space));
        let (vpid, cost) = (self.cfg.virt.vpid, self.cfg.virt.switch_cycles);
        let t = &mut self.contexts[c];
        (t.vm, t.space, t.ctx) = (vm, space, ctx);
        let core = t.core;
        hw.vm_switched(core);
        if !vpid {
            hw.flush_local(core, Invalidate::All);
            hw.invalidate_nested(core, Invalidate::All);
        }
        port.stall(c, cost);
    }

    /// After prefaulting: apply the shootdowns (the TLBs are empty anyway) and start the
    /// OS statistics from zero, as the core statistics do.
    pub(crate) fn after_prefault<H: Hardware, P: MemPort>(&mut self, hw: &mut H, port: &mut P) {
        for vm in 0..self.vms.len() {
            self.sync(Scope::Guest(vm), None, hw, port);
            self.vms[vm].os.counters = Default::default();
        }
        self.os_sync(None, hw, port);
        self.os.counters = Default::default();
    }

    /// A mechanism on core `c` asks the OS to promote the 2 MB region of `space` holding
    /// `va` (see [`Os::request_promotion`]); core `c` pays for the work and the shootdown.
    /// These requests go to [`Kernel::os`]: virtualized, the host, so `space` is a VM's
    /// host space (`Vm::space`) and `va` a guest-physical address; a guest OS is reached
    /// through `Kernel::vms[vm].os` and [`Kernel::sync`] with `Scope::Guest(vm)`.
    pub fn request_promotion<H: Hardware, P: MemPort>(&mut self, c: usize, space: usize, va: VirtAddr, hw: &mut H, port: &mut P) -> Result<bool, SimError> {
        self.os_request(c, hw, port, |os| os.request_promotion(space, va))
    }

    /// Demote the 2 MB page of `space` holding `va` (see [`Os::request_demotion`]).
    pub fn request_demotion<H: Hardware, P: MemPort>(&mut self, c: usize, space: usize, va: VirtAddr, hw: &mut H, port: &mut P) -> Result<bool, SimError> {
        self.os_request(c, hw, port, |os| os.request_demotion(space, va))
    }

    /// Unmap the page of `space` holding `va` (see [`Os::unmap`]).
    pub fn unmap<H: Hardware, P: MemPort>(&mut self, c: usize, space: usize, va: VirtAddr, hw: &mut H, port: &mut P) -> Result<bool, SimError> {
        self.os_request(c, hw, port, |os| os.unmap(space, va))
    }

    /// Protect the 4 KB page of `space` holding `va` (see [`Os::protect`]).
    pub fn protect<H: Hardware, P: MemPort>(
        &mut self,
        c: usize,
        space: usize,
        va: VirtAddr,
        writable: bool,
        hw: &mut H,
        port: &mut P,
    ) -> Result<bool, SimError> {
        self.os_request(c, hw, port, |os| os.protect(space, va, writable))
    }

    /// The program on hardware context `c` asks its OS to change its mappings (an OS-call
    /// reference, [`crate::workload::Ref::os_call`]): natively the OS, in a VM the guest's.
    /// The core pays `os.call_cycles`, the OS work and the shootdown, which reaches every
    /// core that runs the address space.
    #[cold]
    #[inline(never)]
    pub fn os_call<H: Hardware, P: MemPort>(&mut self, c: usize, r: crate::workload::Ref, hw: &mut H, port: &mut P) -> Result<(), SimError> {
        let Some(op) = crate::os::OsOp::from_code(r.size) else {
            return Err(SimError::BadOsCall { code: r.size, va: r.va });
        };
        let HwContext { space, vm, core, .. } = self.contexts[c];
        if op == crate::os::OsOp::ReadPtes {
            return self.read_ptes(c, r, hw, port);
        }
        if op == crate::os::OsOp::Sleep {
            // (The cycles travel in the address field.)
            port.os_call(c, r.inst_delta, r.va);
            return Ok(());
        }
        if op == crate::os::OsOp::Free && !self.cfg.os.madv_free {
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
        let cost = self.cfg.os.call_cycles + self.sync(scope, Some(c), hw, port);
        port.os_call(c, r.inst_delta, cost);
        Ok(())
    }

    /// A software walk in the kernel ([`crate::os::OsOp::ReadPtes`]), as PT-Baker's system
    /// call walks (Linux's `mm/pagewalk.c`, depth first): the entries of the levels whose index
    /// changed since this context's last walk, each a dependent load of its cache line through
    /// the core's caches (the kernel's direct map needs no translation), down to the leaf entry,
    /// whose load depends on nothing when it is the only one (the next entry of the leaf table
    /// the walker is in: a pointer increment). A walk of an address at or below the last one
    /// (a new pass) starts again at the root. In a VM the guest kernel walks its own table:
    /// each entry's guest-physical address reaches memory through the host's table (the guest's
    /// direct map is taken to hit in the TLBs, as 1 GB pages do), and an entry on a page the
    /// host has not mapped yet costs an EPT violation first.
    fn read_ptes<H: Hardware, P: MemPort>(&mut self, c: usize, r: crate::workload::Ref, hw: &mut H, port: &mut P) -> Result<(), SimError> {
        let HwContext { space, vm, .. } = self.contexts[c];
        if self.pte_walked.len() <= c {
            self.pte_walked.resize_with(c + 1, Default::default);
        }
        let os = if self.virt { &self.vms[vm].os } else { &self.os };
        let last = &mut self.pte_walked[c];
        // A higher address in the leaf table the last walk ended in: only its leaf entry is
        // new (found without following the tree on the host, as the walker finds it).
        let near = if r.va > last.va && last.space == space && last.vm == vm {
            os.pt.leaf_entry_near(last.node, VirtAddr(last.va), VirtAddr(r.va), last.shape)
        } else {
            None
        };
        let kept = match near {
            Some(entry) => {
                *last.entries.last_mut().expect("a walk reads at least the root's entry") = entry.0;
                last.entries.len() - 1
            }
            None => {
                // (Scratch kept across calls: a helper makes one call per touch.)
                let mut entries = std::mem::take(&mut self.pte_scratch);
                entries.clear();
                let node = match os.pte_entries(space, VirtAddr(r.va), &mut entries) {
                    Ok(node) => node,
                    Err(e) => {
                        self.pte_scratch = entries;
                        return Err(if self.virt { crate::os::virt::guest_error(vm, self.cfg.virt.guest_mem_gb, e) } else { e });
                    }
                };
                // (The leaf entry is read every time.)
                let kept = if r.va > last.va {
                    entries.iter().zip(last.entries.iter()).take_while(|(a, b)| a == b).count().min(entries.len().saturating_sub(1))
                } else {
                    0
                };
                std::mem::swap(&mut last.entries, &mut entries);
                self.pte_scratch = entries;
                (last.space, last.vm, last.node, last.shape) = (space, vm, node, os.pt.shape());
                kept
            }
        };
        last.va = r.va;
        let n = last.entries.len() - kept;
        let mut result = Ok(());
        for i in 0..n {
            // (Taken one at a time, as a guest's entries need `self`.)
            let entry = self.pte_walked[c].entries[kept + i];
            let line = if self.virt {
                match self.host_line(c, entry, hw, port) {
                    Ok(line) => line,
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            } else {
                entry >> 6
            };
            port.dispatch(c, if i == 0 { r.inst_delta } else { 1 }, crate::workload::RefKind::Load, u8::from(i > 0));
            port.data(line);
        }
        let read = if result.is_ok() { n } else { 0 };
        let os = if self.virt { &mut self.vms[vm].os } else { &mut self.os };
        os.counters.pte_reads += read as u64;
        result
    }

    /// The host-physical line of a guest page-table entry at guest-physical `entry` (see
    /// [`Kernel::read_ptes`]).
    fn host_line<H: Hardware, P: MemPort>(&mut self, c: usize, entry: u64, hw: &mut H, port: &mut P) -> Result<u64, SimError> {
        let vm = self.contexts[c].vm;
        let hspace = self.vms[vm].space;
        let gpa = VirtAddr(entry & !63);
        let (frame, size) = match self.os.translate(hspace, gpa) {
            Some(m) => m,
            None => {
                let cost = self.ept_violation(c, gpa, false, hw, port)?;
                stall(port, c, cost);
                self.os.translate(hspace, gpa).expect("the host's fault handler mapped the page")
            }
        };
        Ok((frame.addr().0 + gpa.offset(size)) >> 6)
    }

    /// Core `c` asks the OS (the host's, virtualized) to do `f`; it pays for the work and
    /// the shootdowns.
    fn os_request<H: Hardware, P: MemPort>(
        &mut self,
        c: usize,
        hw: &mut H,
        port: &mut P,
        f: impl FnOnce(&mut Os) -> Result<bool, SimError>,
    ) -> Result<bool, SimError> {
        self.check_core(c)?;
        self.os.phys.cpu = c;
        let done = f(&mut self.os)?;
        let cost = self.os_sync(Some(c), hw, port);
        stall(port, c, cost);
        Ok(done)
    }

    /// Run khugepaged once now, on core `c` (tests, and mechanisms that drive it).
    pub fn run_khugepaged<H: Hardware, P: MemPort>(&mut self, c: usize, hw: &mut H, port: &mut P) -> Result<(), SimError> {
        self.check_core(c)?;
        self.os.phys.cpu = c;
        self.os.khugepaged();
        let cost = self.os_sync(Some(c), hw, port);
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
