//! Shootdowns: how a change the OS made to its page tables reaches every TLB, by the
//! protocol `shootdown.protocol` names (seed 003, §4.8 and §4).
//!
//! - **ipi**: the ranges leave the TLBs and page-walk caches of every core (entries are
//!   tagged by PCID, so cores that ran the process earlier lose theirs too, as Linux's
//!   deferred flush on switch-in would); the initiator pays `os.shootdown_initiator_cycles`
//!   (or `os.shootdown_local_cycles` when no other core runs the address space) and every
//!   other core running it `os.shootdown_remote_cycles`. With vCPU overcommit a preempted
//!   target vCPU takes the interrupt only when it runs again, and the initiator busy-waits
//!   for it: until the target's next slice begins.
//! - **kvm_tlb**: as ipi for the running vCPUs; a preempted one is not interrupted but
//!   flushes all its TLB entries when it is rescheduled (KVM's paravirtual remote flush).
//! - **tcat-cotag**, **tcat-cotagless**: for each page, the hypervisor read-modify-writes and
//!   flushes its POM-TLB home line (both page sizes' lines when the change could have been
//!   to either), and the directory forwards the invalidation to exactly the line's TLB
//!   sharers, which drop entries by co-tag or by set. Without the flush (`tcat.flush=false`)
//!   the old line stays readable. This file is the initiator; the lines, the directory, the
//!   sharers' drops and what the line held are the mechanisms', reached through the
//!   mechanism layer's home-line hooks (`shootdown_lines`, `on_line_rewrite`,
//!   `invalidate_line`, `on_baseline_shootdown`: [`crate::mech::Mechanism`]), never by name.
//!   No interrupts and no busy wait: the initiator pays the memory side's cycles for the
//!   lines. Page-walk caches and mechanisms' structures drop the range on every core, at no
//!   cost (the thesis does not say how MMU caches find their entries). Shootdowns over the
//!   flush ceiling, and the host's (gPA) changes, which TCAT does not cover, fall back to
//!   kvm_tlb in a VM and to ipi natively.
//!
//! - **ideal**: the translations leave every TLB as with ipi, and nobody pays anything (the
//!   seed's Ideal-sim: the bound a protocol can approach).
//!
//! A flush of more pages than `os.flush_ceiling_pages` drops the whole address space.
//! Shootdowns from a guest OS remove its gVA ranges (its context's TLB and PWC entries);
//! shootdowns from the host (a gPA range of a VM changed) remove that range from the nested
//! TLBs and vPWCs and every TLB and guest PWC entry of the VM, as INVEPT does.

use crate::arch::addr::VirtAddr;
use crate::arch::ctx::Scope;
use crate::arch::ctx::{Ctx, Invalidate, SPACE_MASK, VPID_SHIFT};
use crate::memory::port::MemPort;
use crate::os::kernel::Shootdown;
use crate::os::system::{Hardware, Kernel};
use crate::param::ShootdownProtocol;

use crate::param::{bound, component, Limit};

component! {
    /// TLB shootdowns: the protocol and what each costs (`shootdown.protocol`, `os.shootdown_*`, `os.flush_ceiling_pages`).
    ShootdownParams {
        initiator_cycles: u64 = 8000; "os.shootdown_initiator_cycles"; Some(Limit::Int(bound::COST)); "cycles the core changing a mapping spends on an IPI shootdown (send, local flush, wait for acks): ~4 us at 2 GHz; native Skylake measures 7,666-22,922 cycles (the CSALT/TCAT thesis, Tab. 6.3)";
        remote_cycles: u64 = 2000; "os.shootdown_remote_cycles"; Some(Limit::Int(bound::COST)); "cycles each other core running the address space loses to the shootdown interrupt (entry, invalidation, ack; ~1 us, an assumption)";
        local_cycles: u64 = 200; "os.shootdown_local_cycles"; Some(Limit::Int(bound::COST)); "cycles of a shootdown no other core needs (a local INVLPG or flush, ~100 ns)";
        flush_ceiling_pages: u64 = 33; "os.flush_ceiling_pages"; Some(Limit::Int(1 << 30)); "a shootdown of more 4 KB pages than this flushes the address space's whole TLB and PWC contents instead (Linux x86 tlb_single_page_flush_ceiling)";
        protocol: crate::param::ShootdownProtocol = crate::param::ShootdownProtocol::Ipi; "shootdown.protocol"; None; "how TLBs are kept coherent when a mapping changes: ipi (interrupt every core that runs the address space, wait for each; a preempted vCPU acks when it runs again), kvm_tlb (KVM's paravirtual flush: running vCPUs get IPIs, preempted ones flush all their entries when rescheduled), tcat-cotag or tcat-cotagless (TCAT: rewrite and flush the page's POM-TLB line; its TLB sharers drop the entries homed there, or the whole matching set; needs pomtlb.enabled), ideal (the translations go, at no cost to anyone: the seed's Ideal-sim bound)";
    }
}

/// What a shootdown cost whom, for the counters.
#[derive(Default)]
struct Charged {
    /// The initiator's cycles.
    init: u64,
    /// Of them, waiting for others (sending interrupts and waiting for acknowledgements,
    /// and for preempted targets).
    busy: u64,
    /// Interrupts sent.
    ipis: u64,
    /// Preempted vCPUs asked to flush when they run (kvm_tlb).
    deferred: u64,
}

impl Kernel {
    /// Apply the shootdowns the OS queued and charge them, plus the OS work it accumulated
    /// ([`crate::os::Os::charge`]). The remote cores are stalled here; the initiator's cycles
    /// are returned for the caller to charge (as fault latency, or a stall). `None`: work
    /// done before the run (prefaulting), charged to nobody.
    /// Virtualized, `Kernel::os` is the host: see [`Kernel::sync`]. Stalls go
    /// through `port`.
    pub fn os_sync<H: Hardware, P: MemPort>(&mut self, initiator: Option<usize>, hw: &mut H, port: &mut P) -> u64 {
        let scope = if self.vms.is_empty() { Scope::Native } else { Scope::Host };
        self.sync(scope, initiator, hw, port)
    }

    /// [`Kernel::os_sync`] for the OS of `scope` (see the module comment).
    pub fn sync<H: Hardware, P: MemPort>(&mut self, scope: Scope, initiator: Option<usize>, hw: &mut H, port: &mut P) -> u64 {
        let backed = match scope {
            Scope::Guest(vm) => self.back_guest_writes(vm, initiator, hw, port),
            _ => 0,
        };
        let os = match scope {
            Scope::Guest(vm) => &mut self.vms[vm].os,
            _ => &mut self.os,
        };
        let mut cost = backed + std::mem::take(&mut os.charge);
        if os.pending.is_empty() {
            return cost;
        }
        let pending = std::mem::take(&mut os.pending);
        let mut lines = Vec::new();
        for sd in pending {
            let ctx = match scope {
                Scope::Guest(vm) => self.vms[vm].os.spaces[sd.space].ctx,
                _ => self.os.spaces[sd.space].ctx,
            };
            let full = sd.pages > self.cfg.shootdown.flush_ceiling_pages;
            let by_lines = matches!(self.cfg.shootdown.protocol, ShootdownProtocol::TcatCotag | ShootdownProtocol::TcatCotagless);
            // The lines a TCAT shootdown rewrites come from the mechanism that keeps their
            // directory; with none (no machine builds that: TCAT's protocol makes it), the
            // baseline runs.
            lines.clear();
            let k = if self.cfg.shootdown.protocol == ShootdownProtocol::Ideal {
                self.invalidate_everywhere(scope, ctx, &sd, full, hw);
                Charged::default()
            } else if by_lines && !full && scope != Scope::Host && hw.shootdown_lines(&sd.ranges, sd.pages, ctx, &mut lines) {
                self.rewrite_lines(ctx, &sd, &lines, initiator, hw, port)
            } else {
                hw.on_baseline_shootdown();
                self.invalidate_everywhere(scope, ctx, &sd, full, hw);
                let kvm = self.cfg.shootdown.protocol != ShootdownProtocol::Ipi && !self.vms.is_empty();
                self.interrupt(scope, sd.space, initiator, kvm, port)
            };
            let os = match scope {
                Scope::Guest(vm) => &mut self.vms[vm].os.counters,
                _ => &mut self.os.counters,
            };
            if full {
                os.full_flushes += 1;
            }
            os.shootdowns += 1;
            os.shootdown_ipis += k.ipis;
            os.shootdown_cycles += k.init + k.ipis * self.cfg.shootdown.remote_cycles;
            os.busy_wait_cycles += k.busy;
            os.deferred_flushes += k.deferred;
            cost += k.init;
        }
        cost
    }

    /// The guest of `vm` copied into frames the host may not back yet (a promotion's new
    /// block, a migrated page): the host backs them now, each an EPT violation of the
    /// initiator, as the copy's stores take them on hardware. Without this the workload
    /// would take them at its first touch, after the promotion. Returns their cycles. A host
    /// out of memory leaves the page unbacked: the first touch reports it.
    fn back_guest_writes<H: Hardware, P: MemPort>(&mut self, vm: usize, initiator: Option<usize>, hw: &mut H, port: &mut P) -> u64 {
        if self.vms[vm].os.written.is_empty() {
            return 0;
        }
        let written = std::mem::take(&mut self.vms[vm].os.written);
        let hspace = self.vms[vm].space;
        let core = initiator.map(|c| self.contexts[c].core);
        let mut cost = 0;
        for (first, count) in written {
            for f in first..first + count {
                let gpa = VirtAddr(f << 12);
                if self.os.translate(hspace, gpa).is_some() {
                    continue;
                }
                if self.os.fault_on(core.unwrap_or(0), hspace, gpa, true).is_err() {
                    continue;
                }
                let c = self.cfg.virt.ept_fault_cycles + self.sync(Scope::Host, initiator, hw, port);
                if let Some(core) = core {
                    hw.ept_violation(core, c);
                    cost += c;
                }
            }
        }
        cost
    }

    /// The baseline's invalidation: the ranges (or the whole address space, or for the host
    /// the VM) leave every core's TLBs, page-walk caches and mechanisms' structures.
    fn invalidate_everywhere<H: Hardware>(&mut self, scope: Scope, ctx: Ctx, sd: &Shootdown, full: bool, hw: &mut H) {
        if scope == Scope::Host {
            hw.shootdown(Invalidate::Vm(ctx >> VPID_SHIFT));
            if full {
                hw.shootdown_nested(Invalidate::Context(ctx));
            } else {
                for &(start, end) in &sd.ranges {
                    hw.shootdown_nested(Invalidate::Range { ctx, start, end });
                }
            }
        } else if full {
            hw.shootdown(Invalidate::Context(ctx));
        } else {
            for &(start, end) in &sd.ranges {
                hw.shootdown(Invalidate::Range { ctx, start, end });
            }
        }
    }

    /// Interrupt the other contexts that run `space` (ipi; kvm_tlb when `kvm`) and charge
    /// them; returns what the initiator pays.
    fn interrupt<P: MemPort>(&mut self, scope: Scope, space: usize, initiator: Option<usize>, kvm: bool, port: &mut P) -> Charged {
        let cfg = &self.cfg;
        let (init_cycles, local_cycles, remote_cycles) = (cfg.shootdown.initiator_cycles, cfg.shootdown.local_cycles, cfg.shootdown.remote_cycles);
        let host_vm = if scope == Scope::Host { self.vms.iter().position(|v| v.space == space) } else { None };
        let mut k = Charged::default();
        for (i, t) in self.contexts.iter().enumerate() {
            let runs = match scope {
                Scope::Native => t.space == space,
                Scope::Guest(vm) => t.vm == vm && t.space == space,
                Scope::Host => Some(t.vm) == host_vm,
            };
            if runs && Some(i) != initiator {
                k.ipis += 1;
                port.stall(i, remote_cycles);
            }
        }
        // The guest's other vCPUs, preempted: they take the interrupt when they run again
        // (the initiator waiting for them), or with kvm_tlb flush then instead.
        let mut wait = 0;
        if self.sched.vcpus.k > 1 && matches!(scope, Scope::Guest(_)) {
            let now = initiator.map(|c| port.now(c));
            let running = self.sched.vcpus.lane.clone();
            for s in 0..self.sched.vcpus.ended.len() {
                let v = &mut self.sched.vcpus;
                let j = v.context_of(s);
                if running.contains(&s) || v.ended[s] || self.contexts[j].space != space {
                    continue;
                }
                if kvm {
                    v.should_flush[s] = true;
                    k.deferred += 1;
                } else {
                    v.owed[s] += remote_cycles;
                    k.ipis += 1;
                    if let Some(now) = now {
                        wait = wait.max(v.starts_at(s).saturating_sub(now));
                    }
                }
            }
        }
        k.init = if k.ipis > 0 { init_cycles } else { local_cycles } + wait;
        k.busy = if k.ipis > 0 { init_cycles.saturating_sub(local_cycles) } else { 0 } + wait;
        k
    }

    /// TCAT (see the module comment): the initiator rewrites, and flushes unless
    /// `tcat.flush=false`, each of the home `lines` of the shootdown's pages; the directory
    /// forwards each rewrite to the line's TLB sharers, which drop what it names
    /// ([`crate::mech::Mechanism::invalidate_line`]). Only the initiator's cycles are
    /// charged: the memory side's for the rewrite, which depend on how many other cores the
    /// directory reached.
    fn rewrite_lines<H: Hardware, P: MemPort>(
        &mut self,
        ctx: Ctx,
        sd: &Shootdown,
        lines: &[(u64, VirtAddr)],
        initiator: Option<usize>,
        hw: &mut H,
        port: &mut P,
    ) -> Charged {
        let mut k = Charged::default();
        let init_core = initiator.map(|c| self.contexts[c].core);
        let flush = self.cfg.tcat_flush;
        for &(line, va) in lines {
            // (Announced before the write, while the line still holds what an unflushed
            // copy will go on saying.)
            if let Some(c) = initiator {
                hw.on_line_rewrite(line, va, ctx, c, flush);
            }
            let sharers = hw.invalidate_line(line, va, ctx);
            if let Some(c) = initiator {
                let others = (sharers & !init_core.map_or(0, |c| 1u64 << c)).count_ones();
                k.init += port.rewrite_line(c, line, others, flush).unwrap_or(0);
            }
        }
        // Page-walk caches and mechanisms' structures (an L3 TLB's entry, which the rewrite
        // cleared) drop the ranges everywhere.
        for &(start, end) in &sd.ranges {
            let what = Invalidate::Range { ctx: ctx & SPACE_MASK, start, end };
            for c in 0..hw.cores() {
                hw.invalidate_walk_caches(c, what);
            }
        }
        k
    }

    /// Context `c` switched to another vCPU (vCPU overcommit): it fills its TLBs under that
    /// vCPU's tag, takes the shootdown interrupts it missed while preempted, and, if kvm_tlb
    /// asked it to, flushes its TLB entries.
    pub(crate) fn vcpu_switched<H: Hardware, P: MemPort>(&mut self, c: usize, hw: &mut H, port: &mut P) {
        if self.sched.places > 1 {
            // Programs sharing the core: the stream it runs now is another program's, in its
            // own VM (without VPIDs the switch flushes the core's translations, as a VM switch).
            let s = self.sched.vcpus.lane[c];
            let (space, vm) = (self.sched.running(s), self.sched.running_vm(s));
            let ctx = self.ctx_of(vm, space);
            let t = &mut self.contexts[c];
            (t.space, t.vm, t.ctx) = (space, vm, ctx);
            let core = t.core;
            if !self.cfg.virt.vpid {
                hw.flush_local(core, Invalidate::All);
                hw.invalidate_nested(core, Invalidate::All);
            }
        }
        let ctx = self.tagged(c, self.contexts[c].ctx & SPACE_MASK);
        self.contexts[c].ctx = ctx;
        let v = &mut self.sched.vcpus;
        let s = v.lane[c];
        let owed = std::mem::take(&mut v.owed[s]);
        if owed > 0 {
            port.stall(c, owed);
        }
        if std::mem::take(&mut v.should_flush[s]) {
            let core = self.contexts[c].core;
            hw.flush_local(core, Invalidate::Tagged(ctx));
        }
    }
}
