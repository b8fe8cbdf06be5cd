//! Thin PyO3 bindings: `xlat._core`. No logic of its own.
use pyo3::prelude::*;

mod errors;
mod glossary;
mod host;
mod interrupt;
mod sim;
mod workloads;

#[pyfunction]
fn version() -> &'static str {
    xlat_core::VERSION
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("XlatError", py.get_type::<errors::XlatError>())?;
    m.add("ConfigError", py.get_type::<errors::ConfigError>())?;
    m.add("WorkloadError", py.get_type::<errors::WorkloadError>())?;
    m.add("TraceError", py.get_type::<errors::TraceError>())?;
    m.add("SimulationError", py.get_type::<errors::SimulationError>())?;
    m.add("HostError", py.get_type::<errors::HostError>())?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    sim::register(m)?;
    glossary::register(m)?;
    workloads::register(m)?;
    host::register(m)?;
    Ok(())
}
