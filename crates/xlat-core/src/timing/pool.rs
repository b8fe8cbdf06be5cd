//! A pool of identical units (a core's MSHRs, its page walkers) under either resource model
//! (`timing.pools`): [`Schedule`], fast, the default; or [`Units`], exact, the reference the
//! fast one is checked against (`calibration/pools.py`, `tests/timing_reference.rs`).

use super::schedule::Schedule;
use super::window::Units;
use crate::param::PoolModel;

use crate::param::component;

component! {
    /// The resource model of the cores' MSHR and walker pools (`timing.*`).
    PoolParams {
        pools: crate::param::PoolModel = crate::param::PoolModel::Fast; "pools"; None; "resource model of each core's MSHRs and page walkers, both granting units first come first served by request cycle: fast (the schedule of the requests seen so far, in request order; a request that comes after a later one is served in its place and those after it again) or exact (busy units counted per cycle over every booking; a later request's lost wait booked where a unit is free): docs/timing.md, \"Two resource models\"";
    }
}

pub enum Pool {
    Fast(Schedule),
    Exact(Units),
}

impl Pool {
    /// Units up to which the fast model serves a pool. It copies the units' free cycles for
    /// each request, so a pool of thousands (an MSHR count meaning "unlimited") would cost that
    /// many words a request; such a pool never fills, and the exact one, whose cost is the
    /// bookings' length, books it (both start every request at its own cycle there).
    const FAST_UP_TO: u64 = 256;

    pub fn new(n: u64, model: PoolModel) -> Pool {
        match model {
            PoolModel::Fast if n <= Self::FAST_UP_TO => Pool::Fast(Schedule::new(n)),
            PoolModel::Fast | PoolModel::Exact => Pool::Exact(Units::new(n)),
        }
    }

    /// When an operation that wants to start at `t` would start, without booking it; no
    /// request comes before `floor`.
    #[inline]
    pub fn start(&mut self, t: u64, floor: u64) -> u64 {
        match self {
            Pool::Fast(p) => p.start(t, floor),
            Pool::Exact(p) => p.start(t, floor),
        }
    }

    /// When a request at `t` that goes ahead of those waiting for a unit would start: when the
    /// first unit running at `t` frees (a page walk's read at the L1D's MSHRs).
    #[inline]
    pub fn start_ahead(&mut self, t: u64, floor: u64) -> u64 {
        match self {
            Pool::Fast(p) => p.start_ahead(t, floor),
            Pool::Exact(p) => p.start_ahead(t, floor),
        }
    }

    /// One unit busy for `dur` cycles from `s` (where `start` or `start_ahead` said), for a
    /// request at `t`.
    #[inline]
    pub fn book(&mut self, t: u64, s: u64, dur: u64) {
        match self {
            Pool::Fast(p) => p.book(t, s, dur),
            Pool::Exact(p) => p.book(t, s, dur),
        }
    }
}
