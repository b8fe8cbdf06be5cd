//! Address-space contexts and invalidations: the tags translation structures carry, and which
//! of their entries an invalidation (INVLPG, INVPCID, INVVPID, a shootdown) removes. The one
//! rule every translation structure follows is [`Invalidate::covers`]. Also what the OS and
//! the hardware tell each other about contexts: what a hardware context runs ([`HwContext`],
//! which the OS sets), and what a mechanism asks of the OS ([`OsRequest`]).

use crate::arch::addr::VirtAddr;

use crate::param::{component, Limit};

component! {
    /// The machine's cores and their hardware contexts (`system.*`).
    SystemParams {
        cores: u64 = 1; "cores"; Some(Limit::Int(256)); "cores of the machine; a workload with N streams runs on cores 0..N-1 (hardware contexts, with system.threads_per_core)";
        threads_per_core: u64 = 1; "threads_per_core"; Some(Limit::Int(8)); "hardware contexts (SMT threads) per core: stream i runs on context i, of core i / threads_per_core; a core's contexts share its TLBs, page-walk caches, walkers, MSHRs and private caches, and split its dispatch width and reorder buffer evenly";
    }
    check(p, key) {
        if p.cores == 0 {
            return Err(crate::param::invalid(key("cores"), "must be at least 1"));
        }
        if p.cores > 256 {
            return Err(crate::param::invalid(key("cores"), "at most 256 cores are supported"));
        }
        if p.threads_per_core == 0 {
            return Err(crate::param::invalid(key("threads_per_core"), "must be at least 1"));
        }
        Ok(())
    }
}

/// Address-space context of a translation: PCID in the low 12 bits, VPID above (0 natively).
/// Host-side structures of a VM (nested TLB, vPWC) use the VM's VPID with PCID 0.
pub type Ctx = u32;

/// Bits of a [`Ctx`] below the VPID.
pub const VPID_SHIFT: u32 = 12;

/// With thread-tagged TLBs (`tlb.thread_tagged`, SMT), the hardware thread that filled an
/// entry is kept in the [`Ctx`] bits from here up: the core's other threads never match it.
/// Invalidations name address spaces and VMs, so they ignore these bits.
pub const THREAD_SHIFT: u32 = 28;

/// The bits of a [`Ctx`] that name the address space (PCID and VPID), without the thread.
pub const SPACE_MASK: Ctx = (1 << THREAD_SHIFT) - 1;

/// Which translations an invalidation removes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalidate {
    /// Every page overlapping `[start, end)` of one context (INVLPG / a ranged flush).
    Range { ctx: Ctx, start: u64, end: u64 },
    /// Everything of one context (INVPCID single-context).
    Context(Ctx),
    /// Everything of one VM: contexts whose VPID (the bits above the PCID) is this
    /// (INVVPID single-context, or INVEPT after the host changed the VM's EPT).
    Vm(u32),
    /// Everything (CR3 write without PCID, or INVPCID all).
    All,
    /// What one vCPU filled: entries tagged exactly `ctx`, the bits from [`THREAD_SHIFT`]
    /// included (KVM flushing a rescheduled vCPU's VPID).
    Tagged(Ctx),
}

impl Invalidate {
    pub fn page(ctx: Ctx, va: VirtAddr) -> Invalidate {
        Invalidate::Range { ctx, start: va.0, end: va.0 + 1 }
    }

    /// Whether this invalidation reaches the `2^shift`-byte region number `tag` of context
    /// `ctx` (a page, a page-walk-cache prefix, a mechanism's region). The one rule every
    /// translation structure follows.
    #[inline]
    pub fn covers(&self, ctx: Ctx, tag: u64, shift: u32) -> bool {
        // (Only a vCPU's flush sees the tag's thread bits.)
        let space = ctx & SPACE_MASK;
        match *self {
            Invalidate::All => true,
            Invalidate::Tagged(t) => ctx == t,
            Invalidate::Context(c) => space == c,
            Invalidate::Vm(v) => space >> VPID_SHIFT == v,
            Invalidate::Range { ctx: c, start, end } => {
                // (The region's last byte, not its end, so a region at the top of the address
                // space does not overflow.)
                let first = tag << shift;
                let last = first | ((1u64 << shift) - 1);
                space == c && first < end && last >= start
            }
        }
    }
}

/// Which OS a shootdown queue belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The native OS.
    Native,
    /// The host OS of a virtualized machine (ranges are guest-physical).
    Host,
    /// The guest OS of a VM.
    Guest(usize),
}

/// A hardware context (a hardware thread): the address space it runs, in which VM, under
/// which PCID/VPID, and the core whose MMU translates for it. The OS switches what a context
/// runs; the core's TLBs and page-walk caches stay, tagged by `ctx`. (One context per core:
/// SMT, two on one core, is the next step.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwContext {
    pub core: usize,
    /// Address space (in a VM: a space of the VM's guest OS).
    pub space: usize,
    /// VM (0 natively).
    pub vm: usize,
    pub ctx: Ctx,
}

/// What a mechanism's periodic task asks of the OS (the OS decides, and pays, as for its
/// own work: a promotion copies pages and shoots down the old translations).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OsRequest {
    /// Promote the 2 MB region holding `va` of the address space with context `ctx` (a
    /// guest's, in a VM), on behalf of core `core`.
    Promote { core: usize, ctx: Ctx, va: VirtAddr },
    /// Demote the 2 MB page holding `va` and free its 2 MB block (its 512 pages move to
    /// 4 KB frames), so that another region can be promoted into it.
    Demote { core: usize, ctx: Ctx, va: VirtAddr },
}

impl OsRequest {
    /// The address the request is about.
    pub fn va(&self) -> VirtAddr {
        match *self {
            OsRequest::Promote { va, .. } | OsRequest::Demote { va, .. } => va,
        }
    }
}
