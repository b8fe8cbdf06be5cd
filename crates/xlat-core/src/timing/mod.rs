//! Time: the per-core timing window that turns latencies into cycles, the pools of units
//! (MSHRs, walkers) references wait for, and the work in flight that later references wait for.

pub mod inflight;
pub mod pool;
pub mod schedule;
pub mod window;

pub use inflight::{Early, InFlight};
pub use pool::Pool;
pub use window::{Units, Window};
