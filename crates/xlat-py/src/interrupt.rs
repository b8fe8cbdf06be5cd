//! Long calls that Ctrl-C and SIGTERM stop within a fraction of a second.
//!
//! Python runs signal handlers only in its main thread, and only when that thread runs Python
//! (or asks, with `check_signals`). So the work runs on a thread of its own while the calling
//! thread waits with the GIL released, checking for signals every [`POLL`]. On a signal the
//! handler's exception (KeyboardInterrupt, or the CLI's SIGTERM exception) returns at once
//! and `stop` is set: the work checks it where it can (a simulation's run loop, at each
//! progress report) and ends; work that cannot check (a kernel building its input graph)
//! finishes on its own thread and its result is dropped.
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;

use crate::errors::SimulationError;

/// How often the waiting thread checks for signals.
const POLL: Duration = Duration::from_millis(50);

/// A panic's message, as one line for a `SimulationError`.
pub fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    let what = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_else(|| "unknown panic".into());
    format!("internal error (please report it): {what}")
}

/// Run `f(stop)` on its own thread; return its value, or the exception of a signal that
/// arrived meanwhile (after setting `stop`). A panic in `f` is a `SimulationError`.
pub fn interruptible<T: Send + 'static>(py: Python<'_>, f: impl FnOnce(Arc<AtomicBool>) -> PyResult<T> + Send + 'static) -> PyResult<T> {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let flag = Arc::clone(&stop);
    std::thread::Builder::new()
        .name("xlat-work".into())
        .spawn(move || {
            // The receiver may be gone (interrupted): the result is dropped.
            let _ = tx.send(catch_unwind(AssertUnwindSafe(|| f(flag))));
        })
        .map_err(|e| SimulationError::new_err(format!("cannot start a thread: {e}")))?;
    let mut rx = rx;
    loop {
        // (The receiver moves in and out: it may cross threads but not be shared.)
        let (got, back) = py.allow_threads(move || (rx.recv_timeout(POLL), rx));
        rx = back;
        match got {
            Ok(Ok(r)) => return r,
            Ok(Err(p)) => return Err(SimulationError::new_err(panic_message(p))),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    stop.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err(SimulationError::new_err("internal error (please report it): the work thread vanished")),
        }
    }
}
