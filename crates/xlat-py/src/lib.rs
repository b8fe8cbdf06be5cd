//! Thin PyO3 bindings: `xlat._core`. No logic of its own.
use pyo3::prelude::*;

#[pyfunction]
fn version() -> &'static str {
    xlat_core::VERSION
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}
