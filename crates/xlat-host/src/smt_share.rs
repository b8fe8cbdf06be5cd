//! Do SMT siblings share TLB entries? (PT-Baker's Fig. 4.6 test, by timing.)
//!
//! A PT-Baker helper on the main thread's SMT sibling can warm the main thread's TLB only if
//! the two hardware threads share TLB entries. The thesis chases one array of L1 + L2 DTLB
//! reach pages (2,112 on Zen 3) with one thread, then with both siblings on the same array,
//! and counts L2 DTLB misses; without counters the effect shows in time. The main thread
//! chases `pages` pages (as many as its TLBs hold together, so any loss of capacity shows),
//! timed while its sibling does one of four things, rounds interleaving them:
//!
//! - **nothing** (the sibling idle: the chase alone);
//! - **control**: chases 8 pages of its own: the same competition for the core's pipeline and
//!   L1D, no TLB pressure;
//! - **same**: chases the main thread's own pages, from another point of the cycle: if the
//!   threads share entries it needs no new ones and costs what the control costs;
//! - **other**: chases as many other pages: it certainly needs entries of its own (what a
//!   sibling costs the main thread's TLB reach when nothing is shared).
//!
//! Entries are shared if the same pages cost the main thread less than a quarter of what other
//! pages cost it, beyond the control; not shared (tagged by thread, or the capacity split
//! between the threads: timing cannot tell those apart, and neither could the thesis's
//! counters) if they cost at least half; anything between, or other pages that cost nothing,
//! is inconclusive.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::chase::{walk_from, Chain};
use crate::mem::{Mapping, Pages};
use crate::{sys, HostError, Result, PAGE};

/// What the test measured: the main thread's ns per access with its sibling doing each of the
/// four things (median over rounds), and the verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct SmtShare {
    pub cpu: usize,
    pub sibling: usize,
    pub pages: usize,
    pub rounds: u32,
    pub alone_ns: f64,
    pub control_ns: f64,
    pub same_ns: f64,
    pub other_ns: f64,
    /// `Some(true)`: the siblings share entries; `Some(false)`: they do not; `None`:
    /// inconclusive.
    pub shared: Option<bool>,
}

/// The verdict from the three times with a busy sibling (see the module's rule).
pub fn verdict(control_ns: f64, same_ns: f64, other_ns: f64) -> Option<bool> {
    let other = other_ns - control_ns;
    // Other pages must cost the main thread something clear (its walks), or the chase did
    // not fill the TLBs and there is nothing to compare with.
    if !(other > 0.2 * control_ns && other > 2.0) {
        return None;
    }
    let share = (same_ns - control_ns) / other;
    if share < 0.25 {
        Some(true)
    } else if share >= 0.5 {
        Some(false)
    } else {
        None
    }
}

/// What the sibling does while the main thread is timed.
#[derive(Clone, Copy)]
enum Sibling {
    Idle,
    Chase(usize),
}

/// Runs the test on the calling thread's CPU and its first SMT sibling: `pages` pages (L1 +
/// L2 DTLB reach is the thesis's choice), `rounds` rounds. An error of one line where the CPU
/// has no sibling or the threads cannot be pinned.
pub fn measure(pages: usize, rounds: u32, seed: u64) -> Result<SmtShare> {
    if !(16..=1 << 20).contains(&pages) || rounds == 0 {
        return Err(HostError::Invalid(format!("SMT test: {pages} pages (16..1048576) and {rounds} rounds (at least 1)")));
    }
    let cpu = sys::current_cpu();
    let Some(&sibling) = sys::smt_siblings(cpu).first() else {
        return Err(HostError::Unsupported(format!("CPU {cpu} has no SMT sibling: the SMT thread-tag test does not apply")));
    };
    let allowed = sys::allowed_cpus();
    sys::pin_to(cpu)?;
    let r = run(cpu, sibling, pages, rounds, seed);
    sys::set_affinity(&allowed)?;
    r
}

fn run(cpu: usize, sibling: usize, pages: usize, rounds: u32, seed: u64) -> Result<SmtShare> {
    let mut own = Mapping::new(pages * PAGE, Pages::Base)?;
    own.prefault();
    let mut other = Mapping::new(pages * PAGE, Pages::Base)?;
    other.prefault();
    let mut small = Mapping::new(8 * PAGE, Pages::Base)?;
    small.prefault();
    let other_chain = Chain::build(&mut other, pages, seed ^ 0x07e4)?;
    let small_chain = Chain::build(&mut small, 8, seed ^ 0x5a11)?;
    let mut chain = Chain::build(&mut own, pages, seed)?;
    // The sibling's starting nodes: half a cycle away from the main thread on its own pages.
    let same_start = {
        let at = chain.position();
        // SAFETY: `at` is a node of `chain`, whose mapping lives for this function.
        unsafe { walk_from(at, pages as u64 / 2) }
    };
    let starts = [Sibling::Idle, Sibling::Chase(small_chain.position()), Sibling::Chase(same_start), Sibling::Chase(other_chain.position())];
    let steps = (4 * pages as u64).max(100_000);
    let mut times: [Vec<f64>; 4] = Default::default();
    for _ in 0..rounds {
        for (kind, t) in times.iter_mut().enumerate() {
            t.push(timed_beside(&mut chain, steps, sibling, starts[kind])?);
        }
    }
    let [alone, control, same, other_ns] = times.map(|mut v| crate::knee::median(&mut v));
    // (The chains borrow the mappings until here, so every node the sibling read stayed mapped.)
    let _ = (other_chain.pages(), small_chain.pages());
    Ok(SmtShare { cpu, sibling, pages, rounds, alone_ns: alone, control_ns: control, same_ns: same, other_ns, shared: verdict(control, same, other_ns) })
}

/// The main thread's ns per access over `steps` accesses of `chain` while a thread pinned to
/// `sibling` does `what`.
fn timed_beside(chain: &mut Chain, steps: u64, sibling: usize, what: Sibling) -> Result<f64> {
    let Sibling::Chase(start) = what else {
        return Ok(chain.ns_per_access(steps));
    };
    let (stop, ready) = (AtomicBool::new(false), AtomicBool::new(false));
    std::thread::scope(|s| {
        let helper = s.spawn(|| -> Result<()> {
            let pinned = sys::pin_to(sibling);
            ready.store(true, Ordering::Release);
            pinned?;
            let mut p = start;
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: `start` is a node of a chain of `run`, whose mappings outlive this
                // scope; the chains are only read while the scope runs.
                p = unsafe { walk_from(p, 1024) };
            }
            std::hint::black_box(p);
            Ok(())
        });
        while !ready.load(Ordering::Acquire) {
            std::hint::spin_loop();
        }
        let ns = chain.ns_per_access(steps);
        stop.store(true, Ordering::Relaxed);
        helper.join().map_err(|_| HostError::Invalid("the SMT test's sibling thread panicked".into()))??;
        Ok(ns)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_compares_the_shared_pages_with_other_pages_beyond_the_control() {
        // Other pages cost 40 ns more than the control: the same pages costing 5 more are
        // shared entries, 30 more are not, 15 cannot tell.
        assert_eq!(verdict(10.0, 15.0, 50.0), Some(true));
        assert_eq!(verdict(10.0, 40.0, 50.0), Some(false));
        assert_eq!(verdict(10.0, 25.0, 50.0), None);
        // Other pages that cost nothing clear (the TLBs were not full): no verdict.
        assert_eq!(verdict(10.0, 10.0, 11.0), None);
    }

    #[test]
    fn it_runs_where_there_is_a_sibling_and_says_so_in_one_line_where_not() {
        assert!(measure(8, 1, 1).is_err() && measure(64, 0, 1).is_err());
        match measure(256, 2, 1) {
            Ok(r) => {
                assert!(r.alone_ns > 0.0 && r.control_ns > 0.0 && r.same_ns > 0.0 && r.other_ns > 0.0);
                assert_ne!(r.cpu, r.sibling);
            }
            Err(HostError::Unsupported(why)) => assert!(why.contains("no SMT sibling") && !why.contains('\n'), "{why}"),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn the_threaded_measurement_runs_on_any_two_cpus() {
        // Two CPUs that are not siblings (this VM has no SMT): the path the test takes, its
        // sibling thread pinned, stopped and joined for each of the four interludes.
        let cpus = sys::allowed_cpus();
        if cpus.len() < 2 {
            return;
        }
        let allowed = cpus.clone();
        sys::pin_to(cpus[0]).unwrap();
        let r = run(cpus[0], cpus[1], 256, 2, 1);
        sys::set_affinity(&allowed).unwrap();
        let r = r.unwrap();
        assert_eq!((r.cpu, r.sibling, r.pages, r.rounds), (cpus[0], cpus[1], 256, 2));
        assert!([r.alone_ns, r.control_ns, r.same_ns, r.other_ns].iter().all(|&t| t > 0.0 && t < 10_000.0), "{r:?}");
    }
}
