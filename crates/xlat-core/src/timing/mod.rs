//! Time: the per-core timing window that turns latencies into cycles, and the work in flight
//! that later references wait for.

pub mod inflight;
pub mod window;

pub use inflight::{Early, InFlight};
pub use window::{Units, Window};
