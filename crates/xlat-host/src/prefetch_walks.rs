//! Do software prefetches start page walks on this CPU? (PT-Baker's §4 test, by timing.)
//!
//! A user-level PT-Baker helper that prefetches instead of loading keeps page tables warm only
//! if a prefetch that misses the TLB walks and fills it; some CPUs drop such a prefetch. With
//! performance counters one counts the walks; without them (a VM, as here) the effect on the
//! TLB shows in time. A chase through `a` pages (more than the L1 DTLB holds, well within the
//! L2 DTLB) runs from the L2 DTLB once warm. Between two timed cycles of it, one of four
//! things happens, rounds interleaving them:
//!
//! - **nothing** (the chase's own time from the L2 DTLB);
//! - **own lines**: prefetch `b` lines at other offsets of the chase's own pages: the same cache
//!   pollution as below, no new translations (the control);
//! - **prefetch**: prefetch one line of each of `b` other pages (more than the L2 DTLB holds):
//!   if prefetches walk, their translations push the chase's out and its next cycle walks;
//! - **load**: load one line of each of the same `b` pages: loads certainly walk (the effect a
//!   walking prefetch would have).
//!
//! Prefetches walk if they cost the chase at least half of what the loads cost it, beyond the
//! control; they do not if they cost less than a quarter; anything between, or loads that cost
//! nothing, is inconclusive.

use std::time::Instant;

use crate::chase::Chain;
use crate::mem::{Mapping, Pages};
use crate::rng::Rng;
use crate::{sys, HostError, Result, LINE, PAGE};

/// What the test measured: the chase's ns per access after each kind of interlude (median
/// over rounds), and the verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct PrefetchWalks {
    pub chase_pages: usize,
    pub other_pages: usize,
    pub rounds: u32,
    pub quiet_ns: f64,
    pub own_lines_ns: f64,
    pub prefetch_ns: f64,
    pub load_ns: f64,
    /// `Some(true)`: prefetches walk; `Some(false)`: they do not; `None`: inconclusive.
    pub walks: Option<bool>,
}

impl PrefetchWalks {
    /// What prefetches cost the chase as a share of what loads cost it, beyond the control.
    pub fn share(&self) -> f64 {
        (self.prefetch_ns - self.own_lines_ns) / (self.load_ns - self.own_lines_ns)
    }
}

/// The verdict from the four times (see the module's rule).
pub fn verdict(own_lines_ns: f64, prefetch_ns: f64, load_ns: f64) -> Option<bool> {
    let loads = load_ns - own_lines_ns;
    // Loads of other pages must cost the chase something clear (its walks), or there is no
    // TLB effect to compare with.
    if !(loads > 0.2 * own_lines_ns && loads > 2.0) {
        return None;
    }
    let share = (prefetch_ns - own_lines_ns) / loads;
    if share >= 0.5 {
        Some(true)
    } else if share < 0.25 {
        Some(false)
    } else {
        None
    }
}

#[inline(always)]
fn prefetch(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint and never faults, whatever the address (these are mapped).
    unsafe {
        std::arch::x86_64::_mm_prefetch(addr as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

/// Runs the test: a chase through `chase_pages` pages, `other_pages` other pages, `rounds`
/// rounds of the four interludes, pinned to the CPU the caller runs on.
pub fn measure(chase_pages: usize, other_pages: usize, rounds: u32, seed: u64) -> Result<PrefetchWalks> {
    if chase_pages < 2 || other_pages < 1 || rounds == 0 || chase_pages > 1 << 20 || other_pages > 1 << 22 {
        return Err(HostError::Invalid(format!("prefetch test: {chase_pages} chase pages, {other_pages} other pages and {rounds} rounds")));
    }
    let allowed = sys::allowed_cpus();
    sys::pin_to(sys::current_cpu())?;
    let r = run(chase_pages, other_pages, rounds, seed);
    sys::set_affinity(&allowed)?;
    r
}

fn run(chase_pages: usize, other_pages: usize, rounds: u32, seed: u64) -> Result<PrefetchWalks> {
    let mut a = Mapping::new(chase_pages * PAGE, Pages::Base)?;
    a.prefault();
    let a_base = a.as_ptr() as usize;
    let mut b = Mapping::new(other_pages * PAGE, Pages::Base)?;
    b.prefault();
    let b_base = b.as_ptr() as usize;
    let mut rng = Rng::new(seed ^ 0x5eed);
    // The interludes' addresses: one line of each other page, and as many lines spread over
    // the chase's own pages (a different line each time a page comes round again).
    let others: Vec<usize> = (0..other_pages).map(|p| b_base + p * PAGE + rng.below(PAGE / LINE) * LINE).collect();
    let own: Vec<usize> = (0..other_pages).map(|i| a_base + (i % chase_pages) * PAGE + ((i / chase_pages * 7 + 3) % (PAGE / LINE)) * LINE).collect();
    let mut chain = Chain::build(&mut a, chase_pages, seed)?;
    let cycle = chase_pages as u64;
    let mut times: [Vec<f64>; 4] = Default::default();
    for _ in 0..rounds {
        for (kind, t) in times.iter_mut().enumerate() {
            // Warm: the chase's translations in the L2 DTLB, its lines in the caches.
            chain.walk(2 * cycle);
            match kind {
                1 => own.iter().for_each(|&x| prefetch(x)),
                2 => others.iter().for_each(|&x| prefetch(x)),
                3 => others.iter().for_each(|&x| {
                    // SAFETY: inside `b`, mapped and prefaulted; a volatile read so it happens.
                    std::hint::black_box(unsafe { (x as *const u8).read_volatile() });
                }),
                _ => {}
            }
            let start = Instant::now();
            std::hint::black_box(chain.walk(cycle));
            t.push(start.elapsed().as_nanos() as f64 / cycle as f64);
        }
    }
    let [quiet, own_lines, pre, load] = times.map(|mut v| crate::knee::median(&mut v));
    let _ = b.len();
    Ok(PrefetchWalks {
        chase_pages,
        other_pages,
        rounds,
        quiet_ns: quiet,
        own_lines_ns: own_lines,
        prefetch_ns: pre,
        load_ns: load,
        walks: verdict(own_lines, pre, load),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_compares_prefetches_with_loads_beyond_the_control() {
        // Loads cost 40 ns more than the control: prefetches costing 30 walk, 5 do not, 15
        // cannot tell.
        assert_eq!(verdict(10.0, 40.0, 50.0), Some(true));
        assert_eq!(verdict(10.0, 15.0, 50.0), Some(false));
        assert_eq!(verdict(10.0, 25.0, 50.0), None);
        // Loads that cost the chase nothing clear (no TLB effect): no verdict.
        assert_eq!(verdict(10.0, 10.0, 11.0), None);
    }

    #[test]
    fn it_runs_and_loads_of_other_pages_cost_the_chase_at_least_the_control() {
        let r = measure(256, 4096, 3, 1).unwrap();
        assert!(r.quiet_ns > 0.0 && r.own_lines_ns > 0.0 && r.prefetch_ns > 0.0);
        assert_eq!((r.chase_pages, r.other_pages, r.rounds), (256, 4096, 3));
        assert!(measure(1, 10, 1, 1).is_err() && measure(10, 10, 0, 1).is_err());
    }
}
