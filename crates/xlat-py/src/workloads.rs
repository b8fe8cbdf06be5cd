//! Bindings for workload kernels and traces. Thin: every function forwards to
//! `xlat_workloads`, releases the GIL around long work, and maps errors to one-line
//! exceptions (unknown workload/parameter -> WorkloadError; unreadable or corrupt trace ->
//! TraceError; a kernel that failed or a Rust panic -> SimulationError).
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use xlat_core::SourceError;
use xlat_workloads as wl;

use crate::errors::{SimulationError, TraceError, WorkloadError};
use crate::interrupt::interruptible;

fn workload_err(e: wl::WorkloadError) -> PyErr {
    match e {
        wl::WorkloadError::Trace(_) | wl::WorkloadError::UnknownFormat(_) => TraceError::new_err(e.to_string()),
        wl::WorkloadError::Failed { .. } => SimulationError::new_err(e.to_string()),
        _ => WorkloadError::new_err(e.to_string()),
    }
}

fn source_err(e: SourceError) -> PyErr {
    match e {
        SourceError::Workload { .. } => SimulationError::new_err(e.to_string()),
        _ => TraceError::new_err(e.to_string()),
    }
}

/// Run `f` without the GIL and with panics turned into SimulationError.
fn guarded<T: Send>(py: Python<'_>, f: impl FnOnce() -> PyResult<T> + Send) -> PyResult<T> {
    let r = py.allow_threads(|| catch_unwind(AssertUnwindSafe(f)));
    match r {
        Ok(v) => v,
        Err(p) => {
            let what =
                p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_else(|| "unknown panic".into());
            Err(SimulationError::new_err(format!("internal error (please report it): {what}")))
        }
    }
}

/// Every workload kernel: name, description, params [{name, default, doc}], footprint_bytes.
#[pyfunction]
fn workloads(py: Python<'_>) -> PyResult<Py<PyList>> {
    let cat = guarded(py, || Ok(wl::catalog()))?;
    let out = PyList::empty(py);
    for w in cat {
        let d = PyDict::new(py);
        d.set_item("name", w.name)?;
        d.set_item("description", w.description)?;
        let ps = PyList::empty(py);
        for p in &w.params {
            let pd = PyDict::new(py);
            pd.set_item("name", p.name)?;
            pd.set_item("default", &p.default)?;
            pd.set_item("doc", p.doc)?;
            ps.append(pd)?;
        }
        d.set_item("params", ps)?;
        d.set_item("footprint_bytes", w.footprint_bytes)?;
        out.append(d)?;
    }
    Ok(out.unbind())
}

/// Resolve a workload spec: {"name": ..., "params": {key: value, ...}} with every default.
#[pyfunction]
#[pyo3(signature = (spec, seed=1))]
fn workload_params(py: Python<'_>, spec: String, seed: u64) -> PyResult<Py<PyDict>> {
    let desc = guarded(py, || wl::describe(&spec, seed).map_err(workload_err))?;
    let d = PyDict::new(py);
    d.set_item("name", &desc.name)?;
    let ps = PyDict::new(py);
    for (k, v) in &desc.params {
        ps.set_item(k, v)?;
    }
    d.set_item("params", ps)?;
    Ok(d.unbind())
}

/// Run a kernel and record its references to trace files (one per stream: `path` for one
/// stream, `stem.N.ext` for several), in `format`: `native` (the default) or `champsim`
/// (`.xz`/`.gz` names compress). Returns references written.
#[pyfunction]
#[pyo3(signature = (workload, path, refs=None, seed=1, format=None))]
fn record(py: Python<'_>, workload: String, path: String, refs: Option<u64>, seed: u64, format: Option<String>) -> PyResult<u64> {
    let fmt = out_format_of(format.as_deref())?;
    interruptible(py, move |stop| {
        let (desc, mut src) = wl::open_until(&workload, seed, stop.clone()).map_err(workload_err)?;
        wl::trace::record_as(&mut *src, Path::new(&path), fmt, refs, &desc.spec(), &stop).map_err(source_err)
    })
}

/// Convert traces (native, ChampSim, lackey; `fmt` forces one) to native trace files, or to
/// ChampSim's with `out_format="champsim"`.
#[pyfunction]
#[pyo3(signature = (paths, fmt, out, refs=None, desc=None, out_format=None))]
fn convert_trace(
    py: Python<'_>,
    paths: Vec<String>,
    fmt: Option<String>,
    out: String,
    refs: Option<u64>,
    desc: Option<String>,
    out_format: Option<String>,
) -> PyResult<u64> {
    let to = out_format_of(out_format.as_deref())?;
    interruptible(py, move |stop| {
        let spec = match fmt.as_deref() {
            None => None,
            Some(f) => Some(wl::trace::FormatSpec::parse(f).ok_or_else(|| workload_err(wl::WorkloadError::UnknownFormat(f.to_string())))?),
        };
        wl::trace::convert_until(&paths, spec, Path::new(&out), to, refs, desc.as_deref(), &stop).map_err(source_err)
    })
}

/// The trace format xlat writes: native (the default) or ChampSim's.
fn out_format_of(format: Option<&str>) -> PyResult<wl::trace::Format> {
    match format {
        None | Some("native") => Ok(wl::trace::Format::Native),
        Some("champsim") => Ok(wl::trace::Format::ChampSim),
        Some(f) => Err(TraceError::new_err(format!("cannot record format '{f}': xlat records native or champsim traces"))),
    }
}

/// Convert valgrind lackey output (a file or a FIFO) to one native trace described by `desc`
/// (default `lackey:INPUT`); with `fetch`, each instruction is a fetch of its address too;
/// the first `skip` references are left out and at most `refs` written.
#[pyfunction]
#[pyo3(signature = (input, out, desc=None, fetch=false, skip=0, refs=None))]
fn lackey_to_native(py: Python<'_>, input: String, out: String, desc: Option<String>, fetch: bool, skip: u64, refs: Option<u64>) -> PyResult<u64> {
    let opts = wl::trace::LackeyOptions { desc, fetch, skip, max: refs };
    interruptible(py, move |stop| wl::trace::lackey_to_native_until(Path::new(&input), Path::new(&out), &opts, &stop).map_err(source_err))
}

/// As `lackey_to_native` for a log of several windows (xlat's valgrind tool with `--windows`):
/// window `k` to `outs[k]`, `refs` references each; an error unless every window is whole.
#[pyfunction]
#[pyo3(signature = (input, outs, refs, desc=None, fetch=false))]
fn lackey_windows_to_native(py: Python<'_>, input: String, outs: Vec<String>, refs: u64, desc: Option<String>, fetch: bool) -> PyResult<u64> {
    let opts = wl::trace::LackeyOptions { desc, fetch, skip: 0, max: Some(refs) };
    let outs: Vec<std::path::PathBuf> = outs.into_iter().map(Into::into).collect();
    interruptible(py, move |stop| wl::trace::lackey_windows_to_native_until(Path::new(&input), &outs, &opts, &stop).map_err(source_err))
}

/// Turn the trace cache on (native copies of slow traces kept in `dir`) or off (`None`) for
/// this process (`xlat_workloads::trace::cache`).
#[pyfunction]
#[pyo3(signature = (dir=None))]
fn set_trace_cache(dir: Option<String>) {
    wl::trace::cache::set_dir(dir.map(std::path::PathBuf::from));
}

fn entry_dict<'py>(py: Python<'py>, e: &wl::trace::cache::Entry) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("key", &e.key)?;
    d.set_item("copy", e.copy.to_string_lossy().into_owned())?;
    d.set_item("source", &e.source)?;
    d.set_item("format", &e.format)?;
    d.set_item("source_bytes", e.source_bytes)?;
    d.set_item("refs", e.refs)?;
    d.set_item("bytes", e.bytes)?;
    d.set_item("created", e.created)?;
    Ok(d)
}

/// The trace cache's copy of `path` (read as `format`, or as its content says), made now if
/// there is none: `(entry, made)`, or `None` when the cache is off, the file is no regular
/// file, or it is a native trace already.
#[pyfunction]
#[pyo3(signature = (path, format=None))]
fn cache_trace<'py>(py: Python<'py>, path: String, format: Option<String>) -> PyResult<Option<(Bound<'py, PyDict>, bool)>> {
    let got = interruptible(py, move |stop| {
        let spec = match format.as_deref() {
            None => None,
            Some(f) => Some(wl::trace::FormatSpec::parse(f).ok_or_else(|| workload_err(wl::WorkloadError::UnknownFormat(f.to_string())))?),
        };
        wl::trace::cache::ensure(&path, spec, &stop).map_err(source_err)
    })?;
    got.map(|(e, made)| Ok((entry_dict(py, &e)?, made))).transpose()
}

/// The native format version of trace `path` and whether it carries checksums:
/// `(version, checked)`, or `None` for a trace in another format or no regular file.
#[pyfunction]
fn native_trace_version(path: String) -> Option<(u16, bool)> {
    wl::trace::native_version(&path).map(|v| (v, v >= wl::trace::CHECKED))
}

/// Every complete entry of the trace cache in `dir`, oldest first.
#[pyfunction]
fn trace_cache_entries<'py>(py: Python<'py>, dir: String) -> PyResult<Bound<'py, PyList>> {
    let entries = wl::trace::cache::entries(Path::new(&dir)).map_err(source_err)?;
    let out = PyList::empty(py);
    for e in &entries {
        out.append(entry_dict(py, e)?)?;
    }
    Ok(out)
}

/// The cached graphs in `dir` (`xlat_workloads::kernels::graph::cache`): `(name, bytes,
/// created)` tuples, by name.
#[pyfunction]
fn graph_cache_entries(dir: String) -> Vec<(String, u64, u64)> {
    wl::kernels::graph::cache::entries(Path::new(&dir))
}

/// Remove the trace cache's files from `dir`: `(files, bytes)` removed.
#[pyfunction]
fn trace_cache_clear(dir: String) -> PyResult<(u64, u64)> {
    wl::trace::cache::clear(Path::new(&dir)).map_err(source_err)
}

/// Reuse distances of every 4 KB page of a workload or trace (`xlat_workloads::reuse`):
/// columns `{page, accesses, d4k, d2m, d1g}`, NaN where a page or region was used once.
/// `distinct`: stack distances (distinct pages in between) instead of references; `skip`:
/// references left out first, as `xlat run --skip` leaves them.
#[pyfunction]
#[pyo3(signature = (workload=None, trace=None, trace_format=None, refs=0, seed=1, distinct=false, skip=0))]
#[allow(clippy::too_many_arguments)]
fn reuse<'py>(
    py: Python<'py>,
    workload: Option<String>,
    trace: Option<Vec<String>>,
    trace_format: Option<String>,
    refs: u64,
    seed: u64,
    distinct: bool,
    skip: u64,
) -> PyResult<Bound<'py, PyDict>> {
    if distinct && refs == 0 {
        return Err(WorkloadError::new_err("stack distances need a reference limit (--refs)"));
    }
    let how = if distinct { wl::reuse::Distance::Distinct } else { wl::reuse::Distance::Accesses };
    let pages = interruptible(py, move |stop| {
        let (_, mut src) = match (workload, trace) {
            (Some(w), None) => wl::open_until(&w, seed, stop).map_err(workload_err)?,
            (None, Some(t)) => wl::open_trace_with(&t, trace_format.as_deref(), None).map_err(workload_err)?,
            _ => return Err(WorkloadError::new_err("give exactly one of a workload and a trace")),
        };
        wl::reuse::reuse(&mut *src, skip, refs, how).map_err(source_err)
    })?;
    let d = PyDict::new(py);
    let nan = |x: Option<f64>| x.unwrap_or(f64::NAN);
    d.set_item("page", pages.iter().map(|p| p.page).collect::<Vec<_>>())?;
    d.set_item("accesses", pages.iter().map(|p| p.accesses).collect::<Vec<_>>())?;
    d.set_item("d4k", pages.iter().map(|p| nan(p.d4k)).collect::<Vec<_>>())?;
    d.set_item("d2m", pages.iter().map(|p| nan(p.d2m)).collect::<Vec<_>>())?;
    d.set_item("d1g", pages.iter().map(|p| nan(p.d1g)).collect::<Vec<_>>())?;
    Ok(d)
}

/// The programs of a mix spec as written: `[(spec, cores or None)]` (see `xlat_workloads::mix`).
#[pyfunction]
fn mix_programs(spec: &str) -> PyResult<Vec<(String, Option<Vec<usize>>)>> {
    let entries = wl::mix::parse(spec).map_err(workload_err)?;
    Ok(entries.into_iter().map(|e| (e.spec, e.cores)).collect())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(workloads, m)?)?;
    m.add_function(wrap_pyfunction!(mix_programs, m)?)?;
    m.add_function(wrap_pyfunction!(workload_params, m)?)?;
    m.add_function(wrap_pyfunction!(record, m)?)?;
    m.add_function(wrap_pyfunction!(convert_trace, m)?)?;
    m.add_function(wrap_pyfunction!(lackey_to_native, m)?)?;
    m.add_function(wrap_pyfunction!(lackey_windows_to_native, m)?)?;
    m.add_function(wrap_pyfunction!(reuse, m)?)?;
    m.add_function(wrap_pyfunction!(set_trace_cache, m)?)?;
    m.add_function(wrap_pyfunction!(cache_trace, m)?)?;
    m.add_function(wrap_pyfunction!(native_trace_version, m)?)?;
    m.add_function(wrap_pyfunction!(trace_cache_entries, m)?)?;
    m.add_function(wrap_pyfunction!(trace_cache_clear, m)?)?;
    m.add_function(wrap_pyfunction!(graph_cache_entries, m)?)?;
    Ok(())
}
