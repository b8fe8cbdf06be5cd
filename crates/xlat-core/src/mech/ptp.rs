//! The phase detector of page-table prioritization (the flattening paper's PTP, §5): every
//! `ptp.detector_epoch` instructions a core measures its L2 TLB MPKI; while it is at least
//! `ptp.detector_mpki` the core is in a TLB-miss phase, and caches whose policy is `ptp`
//! protect the page-table lines of cores in that phase (in the shared LLC: those cores'
//! lines with `ptp.per_context`, everyone's once any core is in one otherwise).
//! docs/extending.md walks through this file as the example of adding a mechanism.


use crate::mech::Mechanism;
use crate::memory::port::Steer;
use crate::param::{PtpMode};
use crate::stats::CoreCounters;

use crate::param::{Limit, bound, component};

component! {
    /// Page-table prioritization (`ptp.*`) in caches with `policy=ptp`.
    PtpParams {
        mode: crate::param::PtpMode = crate::param::PtpMode::Always; "mode"; None; "caches with policy=ptp: prioritize page-table lines always, or only in TLB-miss phases (detector)";
        probability: f64 = 0.99; "probability"; Some(Limit::Real(1.0)); "probability that a victim is the LRU non-page-table line (the paper's 99 %)";
        detector_mpki: f64 = 5.0; "detector_mpki"; Some(Limit::Real(1e6)); "detector: a core is in a TLB-miss phase when its L2 TLB MPKI over the last epoch is at least this (the paper gives no threshold)";
        detector_epoch: u64 = 100000; "detector_epoch"; Some(Limit::Int(bound::INTERVAL)); "detector: epoch length in instructions";
        per_context: bool = false; "per_context"; None; "shared caches protect only the page-table lines of cores in a TLB-miss phase (else any core's phase protects all)";
    }
    check(p, key) {
        if !(0.0..=1.0).contains(&p.probability) {
            return Err(crate::param::invalid(key("probability"), "must be between 0 and 1"));
        }
        if p.detector_epoch == 0 {
            return Err(crate::param::invalid(key("detector_epoch"), "must be at least 1"));
        }
        Ok(())
    }
}

pub struct PtpDetector {
    epoch: u64,
    mpki: f64,
    probability: f64,
    per_context: bool,
    cores: Vec<CoreState>,
}

#[derive(Clone, Copy)]
struct CoreState {
    /// Instruction count at which the epoch ends.
    end: u64,
    /// L2 TLB misses when it began.
    misses: u64,
    /// In a TLB-miss phase.
    active: bool,
}

impl PtpDetector {
    /// The detector, if `p` asks for one (`ptp.mode=detector`) and a cache has policy `ptp`
    /// (`caches_ptp`).
    pub fn build(p: &PtpParams, caches_ptp: bool, cores: usize) -> Option<PtpDetector> {
        let on = p.mode == PtpMode::Detector && caches_ptp;
        on.then(|| PtpDetector::new(p.detector_epoch, p.detector_mpki, p.probability, p.per_context, cores))
    }

    pub fn new(epoch: u64, mpki: f64, probability: f64, per_context: bool, cores: usize) -> PtpDetector {
        PtpDetector { epoch, mpki, probability, per_context, cores: vec![CoreState { end: epoch, misses: 0, active: false }; cores] }
    }

    /// Whether core `c` is in a TLB-miss phase.
    pub fn active(&self, c: usize) -> bool {
        self.cores[c].active
    }

    /// Which private L2s protect page-table lines (bit per core), and whose lines the LLC protects.
    fn steering(&self) -> Steer {
        let mut cores = 0u64;
        for (i, s) in self.cores.iter().enumerate() {
            if s.active {
                cores |= 1 << (i & 63);
            }
        }
        let llc = if !self.per_context && cores != 0 { u64::MAX } else { cores };
        Steer::Ptp { probability: self.probability, cores, llc }
    }
}

/// The glossary's entries of the mechanism's statistics: none, its epochs are counted by the cores
/// (`ptp.*` in [`crate::stats::CoreCounters`]).
pub(crate) const STATS: &[&[crate::glossary::Entry]] = &[];

impl Mechanism for PtpDetector {
    fn next_epoch(&self, c: usize) -> u64 {
        self.cores[c].end
    }

    fn on_epoch(&mut self, c: usize, instructions: u64, misses: u64, k: &mut CoreCounters) -> Option<Steer> {
        let s = &mut self.cores[c];
        // Statistics may have been reset (end of warm-up) since the epoch began.
        let delta = misses.saturating_sub(s.misses.min(misses));
        let active = delta as f64 * 1000.0 / self.epoch as f64 >= self.mpki;
        s.misses = misses;
        s.end = instructions + self.epoch;
        k.ptp_epochs += 1;
        if active {
            k.ptp_active_epochs += 1;
        }
        if active == s.active {
            return None;
        }
        s.active = active;
        Some(self.steering())
    }

    fn needs_memory_side(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mech::{AnyMech, Mechs};

    /// Through the hook layer: a core whose L2 TLB misses reach the threshold over an epoch
    /// enters a TLB-miss phase, and the LLC then protects everyone's page-table lines (or,
    /// per context, only that core's); a quiet epoch ends the phase.
    #[test]
    fn phases_follow_the_mpki_of_each_epoch() {
        for per_context in [false, true] {
            // Epochs of 1000 instructions; a phase at >= 5 MPKI, so at 5 misses per epoch.
            let mut mechs = Mechs::new(vec![AnyMech::PtpDetector(PtpDetector::new(1000, 5.0, 0.99, per_context, 2))], 2);
            let mut k = [CoreCounters::default(), CoreCounters::default()];
            assert!(mechs.epochs && !mechs.epoch_due(1, 999) && mechs.epoch_due(1, 1000));
            let steer = mechs.on_epoch(1, 1003, 5, &mut k[1]);
            let llc = if per_context { 0b10 } else { u64::MAX };
            assert_eq!(steer, vec![Steer::Ptp { probability: 0.99, cores: 0b10, llc }]);
            // The next epoch ends 1000 instructions after this one did.
            assert!(!mechs.epoch_due(1, 2002) && mechs.epoch_due(1, 2003));
            // Still in the phase: nothing changes. Core 0, quiet, never enters one.
            assert!(mechs.on_epoch(1, 2003, 11, &mut k[1]).is_empty());
            assert!(mechs.on_epoch(0, 1000, 0, &mut k[0]).is_empty());
            // Four misses in an epoch: the phase ends, and nothing is protected.
            assert_eq!(mechs.on_epoch(1, 3003, 15, &mut k[1]), vec![Steer::Ptp { probability: 0.99, cores: 0, llc: 0 }]);
            assert_eq!((k[1].ptp_epochs, k[1].ptp_active_epochs, k[0].ptp_active_epochs), (3, 2, 0));
        }
    }
}
