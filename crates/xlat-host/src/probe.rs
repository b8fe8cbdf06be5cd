//! The sweep behind `xlat probe`: the pointer chase ([`crate::chase`]) over a range of page
//! counts, with 4 KB pages and with transparent huge pages, several repetitions each. Each
//! size is measured twice, back to back: the chase, one node per page, and its control
//! ([`Chain::build_control`]): as many nodes at the same lines in about 1/64 as many pages. A
//! data cache sees the two alike, so what the chase costs beyond its control is what the TLBs
//! add ([`crate::knee`] finds the steps in that).

use crate::chase::Chain;
use crate::mem::{Mapping, Pages};
use crate::{sys, HostError, Result, PAGE};

#[derive(Clone, Debug)]
pub struct Params {
    pub min_pages: usize,
    pub max_pages: usize,
    /// Sizes per doubling of the page count (log-spaced).
    pub per_octave: u32,
    /// Full sweeps; each size is measured once per sweep, so slow drift (other jobs on the
    /// machine) spreads over every size instead of biasing a few.
    pub reps: u32,
    /// Accesses timed per size (at least four full cycles for the largest sizes).
    pub accesses: u64,
    pub modes: Vec<Pages>,
    pub seed: u64,
}

impl Default for Params {
    fn default() -> Params {
        Params { min_pages: 8, max_pages: 65536, per_octave: 4, reps: 3, accesses: 1_000_000, modes: vec![Pages::Base, Pages::Huge], seed: 1 }
    }
}

/// One measured curve.
#[derive(Clone, Debug)]
pub struct Curve {
    pub mode: Pages,
    pub pages: Vec<usize>,
    /// `ns[rep][i]`: ns per access at `pages[i]` in sweep `rep`.
    pub ns: Vec<Vec<f64>>,
    /// `control[rep][i]`: ns per access of the control chase of `pages[i]` nodes, measured
    /// right after `ns[rep][i]`.
    pub control: Vec<Vec<f64>>,
    /// `misses[rep][i]`: dTLB-load-misses per access ([`sys::Counter::dtlb_load_misses`]),
    /// where `perf_event_open` counts them.
    pub misses: Option<Vec<Vec<f64>>>,
    /// Bytes of the buffer that transparent huge pages backed (from smaps), if known.
    pub huge_bytes: Option<u64>,
    pub bytes: usize,
}

/// Page counts from `min` to `max` (both included), `per_octave` per doubling, distinct.
pub fn sizes(min: usize, max: usize, per_octave: u32) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    let mut k = 0;
    loop {
        let x = (min as f64 * 2f64.powf(k as f64 / per_octave as f64)).round() as usize;
        if x >= max {
            break;
        }
        if out.last() != Some(&x) {
            out.push(x);
        }
        k += 1;
    }
    out.push(max);
    out
}

/// Measures every curve `p` asks for, pinned to the CPU the caller runs on.
pub fn measure(p: &Params) -> Result<Vec<Curve>> {
    if p.min_pages < 2 || p.max_pages < p.min_pages || p.max_pages > 1 << 22 {
        return Err(HostError::Invalid(format!("page range {}..{} is not within 2..4194304 and increasing", p.min_pages, p.max_pages)));
    }
    if p.per_octave == 0 || p.reps == 0 || p.accesses == 0 {
        return Err(HostError::Invalid("sizes per octave, repetitions and accesses must be at least 1".into()));
    }
    // Migrating between CPUs mid-measurement would mix two TLBs' contents: pin for the
    // sweep, then give the caller its affinity back.
    let allowed = sys::allowed_cpus();
    sys::pin_to(sys::current_cpu())?;
    let result = sweep(p);
    sys::set_affinity(&allowed)?;
    result
}

fn sweep(p: &Params) -> Result<Vec<Curve>> {
    let pages = sizes(p.min_pages, p.max_pages, p.per_octave);
    let mut out = Vec::new();
    for &mode in &p.modes {
        let mut map = Mapping::new(p.max_pages * PAGE, mode)?;
        map.prefault();
        let huge_bytes = sys::anon_huge_bytes(map.as_ptr() as usize);
        // Counted where the CPU lets this process count (not in most VMs): timing otherwise.
        let mut counter = sys::Counter::dtlb_load_misses().ok();
        let (mut ns, mut control, mut misses) = (Vec::new(), Vec::new(), Vec::new());
        for rep in 0..p.reps {
            let mut row = Vec::with_capacity(pages.len());
            let mut crow = Vec::with_capacity(pages.len());
            let mut mrow = Vec::with_capacity(pages.len());
            for (i, &n) in pages.iter().enumerate() {
                let seed = p.seed ^ (rep as u64) << 32 ^ i as u64;
                let steps = p.accesses.max(4 * n as u64);
                let (t, m) = Chain::build(&mut map, n, seed)?.measure(steps, counter.as_mut());
                row.push(t);
                mrow.extend(m);
                // Back to back with the same seed (the same lines, the same order), so drift
                // from other jobs on the machine hits both alike.
                crow.push(Chain::build_control(&mut map, n, seed)?.ns_per_access(steps));
            }
            ns.push(row);
            control.push(crow);
            misses.push(mrow);
        }
        let misses = counter.is_some().then_some(misses);
        out.push(Curve { mode, pages: pages.clone(), ns, control, misses, huge_bytes, bytes: map.len() });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_log_spaced_and_cover_the_range() {
        let s = sizes(8, 65536, 4);
        assert_eq!(s.first(), Some(&8));
        assert_eq!(s.last(), Some(&65536));
        assert_eq!(s.len(), 53);
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert!(s.contains(&64) && s.contains(&2048));
        assert_eq!(sizes(8, 8, 4), vec![8]);
        assert_eq!(sizes(2, 4, 8), vec![2, 3, 4]);
    }

    #[test]
    fn a_small_sweep_measures_every_point() {
        let p = Params { min_pages: 8, max_pages: 64, per_octave: 1, reps: 2, accesses: 2000, ..Params::default() };
        let c = measure(&p).unwrap();
        assert_eq!(c.len(), 2);
        for curve in &c {
            assert_eq!(curve.pages, vec![8, 16, 32, 64]);
            assert_eq!(curve.ns.len(), 2);
            assert_eq!(curve.control.len(), 2);
            assert!(curve.ns.iter().chain(&curve.control).flatten().all(|&v| v > 0.0 && v < 10_000.0));
        }
    }

    #[test]
    fn bad_ranges_are_errors() {
        assert!(measure(&Params { min_pages: 1, ..Params::default() }).is_err());
        assert!(measure(&Params { min_pages: 64, max_pages: 8, ..Params::default() }).is_err());
        assert!(measure(&Params { reps: 0, ..Params::default() }).is_err());
    }
}
