//! Bindings for workload kernels and traces (owned by the workloads work).
use pyo3::prelude::*;

pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
