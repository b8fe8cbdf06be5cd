//! The exceptions `xlat._core` raises. Every error crosses into Python as one of these with
//! a one-line message; the CLI prints that line and exits with status 2.
use pyo3::create_exception;
use pyo3::exceptions::PyException;

create_exception!(_core, XlatError, PyException, "Base class of every xlat error.");
create_exception!(_core, ConfigError, XlatError, "Unknown config key or impossible value.");
create_exception!(_core, WorkloadError, XlatError, "Unknown workload or parameter.");
create_exception!(_core, TraceError, XlatError, "A trace file is missing, truncated, corrupt or of the wrong format.");
create_exception!(_core, SimulationError, XlatError, "The simulation could not complete (including internal errors).");
create_exception!(_core, HostError, XlatError, "A real-hardware tool (probe, bake) could not do its work on this machine.");
