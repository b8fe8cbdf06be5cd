//! The translation invariant (`check.translations`): every translation a core uses must be
//! the one the page tables give now. A shootdown protocol that misses a sharer, a TLB that
//! keeps an entry an invalidation should have dropped, a cached POM-TLB line the hypervisor
//! did not flush: each shows as a reference whose frame differs from a functional walk of the
//! current tables (both dimensions in a VM). Checking every reference suits tests; studies can
//! sample one in N. With `check.on_stale=fail` (the default) the run stops at the first stale
//! use with one line naming it; with `count` it goes on and reports `stale_translation_uses`.

use crate::arch::addr::{PageSize, VirtAddr};
use crate::error::SimError;
use crate::os::Kernel;
use crate::param::OnStale;
use crate::stats::Stats;
use crate::translate::Translator;

use crate::param::{bound, component, Limit};

component! {
    /// The translation checker (`check.*`).
    CheckParams {
        translations: u64 = 0; "translations"; Some(Limit::Int(bound::INTERVAL)); "check every N-th translation a core uses against a functional walk of the current page tables (both dimensions in a VM): 1 checks every reference (tests), larger N samples (studies); 0: off. See check.on_stale";
        on_stale: crate::param::OnStale = crate::param::OnStale::Fail; "on_stale"; None; "when a checked translation is stale: fail (stop the run with one line naming the core, the address and both frames) or count (statistic stale_translation_uses)";
    }
}

/// The checker's state: how often it checks and what it found.
#[derive(Clone, Debug, Default)]
pub struct Checker {
    /// Check one translation in this many (0: off).
    pub every: u64,
    countdown: u64,
    fail: bool,
    pub checked: u64,
    pub stale: u64,
}

impl Checker {
    pub fn new(p: &CheckParams) -> Checker {
        Checker { every: p.translations, countdown: p.translations, fail: p.on_stale == OnStale::Fail, ..Default::default() }
    }

    /// Whether this reference's translation is one to check.
    #[inline]
    pub fn due(&mut self) -> bool {
        self.countdown -= 1;
        if self.countdown == 0 {
            self.countdown = self.every;
            return true;
        }
        false
    }

    pub fn emit(&self, s: &mut Stats) {
        if self.every > 0 {
            s.int("check.translations_checked", self.checked);
            s.int("stale_translation_uses", self.stale);
        }
    }
}

/// The glossary's entries of what [`Checker::emit`] emits.
pub(crate) const STATS: &[crate::glossary::Entry] = {
    use crate::glossary::{e, Kind::*, Section::*};
    &[
        e(Os, "check.translations_checked", Counter, "references", "References whose translation the checker compared with a functional walk of the current page tables.").only("`check.translations` > 0"),
        e(Os, "stale_translation_uses", Counter, "references",
            "Checked references that used a translation the page tables no longer give (a missed shootdown; always 0 unless a protocol is broken on purpose). With `check.on_stale=fail` the first one stops the run.").only("`check.translations` > 0"),
    ]
};

impl Translator {
    /// Context `c` is about to use `frame` (the first 4 KB frame of a page of `size`) for
    /// `va`: compare it with the page tables (see the module comment).
    #[cold]
    pub(crate) fn check_translation(&mut self, kernel: &Kernel, c: usize, va: VirtAddr, frame: u64, size: PageSize) -> Result<(), SimError> {
        self.checker.checked += 1;
        let used = frame + (va.offset(size) >> 12);
        let t = kernel.contexts[c];
        let now = if self.virt {
            kernel.vms[t.vm].os.translate(t.space, va).and_then(|(gf, gs)| {
                let gpa = VirtAddr(gf.addr().0 + va.offset(gs));
                kernel.os.translate(kernel.vms[t.vm].space, gpa).map(|(hf, hs)| hf.0 + (gpa.offset(hs) >> 12))
            })
        } else {
            kernel.os.translate(t.space, va).map(|(f, s)| f.0 + (va.offset(s) >> 12))
        };
        if now == Some(used) {
            return Ok(());
        }
        self.checker.stale += 1;
        if self.checker.fail {
            return Err(SimError::StaleTranslation { core: t.core, va: va.0, used, now });
        }
        Ok(())
    }
}
