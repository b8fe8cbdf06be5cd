//! What periodic work is counted in: the OS's tasks and the mechanisms' ticks share it.

/// What a task's period is counted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// Simulated cycles: of the core the task belongs to, or the machine's time (the
    /// smallest core clock) for a machine-wide task. Only the memory side knows them, so
    /// such tasks keep a run on one host thread.
    Cycles,
    /// References simulated since the run began (all cores): known to the translating
    /// thread, so a run with only such tasks can still be split over two.
    References,
}
