//! Time: the per-core timing window that turns latencies into cycles.

pub mod window;

pub use window::{Units, Window};
