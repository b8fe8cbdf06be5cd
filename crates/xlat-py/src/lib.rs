//! Thin PyO3 bindings: `xlat._core`. No logic of its own.
use pyo3::prelude::*;

mod errors;
mod glossary;
mod host;
mod interrupt;
mod oom;
mod sim;
mod workloads;

#[global_allocator]
static ALLOCATOR: oom::OneLineOnOom = oom::OneLineOnOom;

#[pyfunction]
fn version() -> &'static str {
    xlat_core::VERSION
}

/// Allocate `bytes` and free them: lets the tests see what an allocation the host cannot
/// satisfy does to the process (one line, exit status 2: `oom.rs`).
#[pyfunction]
fn _allocate(bytes: usize) -> bool {
    let Ok(layout) = std::alloc::Layout::from_size_align(bytes.max(1), 64) else { return false };
    // SAFETY: a non-zero size; the block is freed with the layout it was allocated with.
    unsafe {
        // (black_box: an allocation never used may be optimised away.)
        let p = std::hint::black_box(std::alloc::alloc(layout));
        std::alloc::dealloc(p, layout);
    }
    true
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
    m.add_function(wrap_pyfunction!(_allocate, m)?)?;
    sim::register(m)?;
    glossary::register(m)?;
    workloads::register(m)?;
    host::register(m)?;
    Ok(())
}
