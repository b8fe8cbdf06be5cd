//! Bindings for the real-hardware tools (`xlat_host`): the probe's measurements and knee
//! finder, machine facts, and the PT-Baker runtime. Errors become `HostError` (one line).
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use xlat_host::bake::{self, Mode, Placement, Region};
use xlat_host::mem::{Mapping, Pages};
use xlat_host::{bench, daemon, knee, probe, sys};

use crate::errors::HostError;

fn host_err(e: xlat_host::HostError) -> PyErr {
    HostError::new_err(e.to_string())
}

fn pages_mode(s: &str) -> PyResult<Pages> {
    match s {
        "4k" => Ok(Pages::Base),
        "thp" => Ok(Pages::Huge),
        _ => Err(HostError::new_err(format!("unknown page mode '{s}' (4k or thp)"))),
    }
}

/// Measures the chase: one dict per mode {mode, pages, ns[rep][i], control[rep][i] (the control
/// chase: as many nodes in ~1/64 the pages), misses[rep][i] (dTLB-load misses per access, or
/// None without counters), huge_bytes, bytes}.
#[pyfunction]
fn probe_measure(py: Python<'_>, min_pages: usize, max_pages: usize, per_octave: u32, reps: u32, accesses: u64, modes: Vec<String>) -> PyResult<Py<PyList>> {
    let modes = modes.iter().map(|m| pages_mode(m)).collect::<PyResult<Vec<_>>>()?;
    let p = probe::Params { min_pages, max_pages, per_octave, reps, accesses, modes, seed: 1 };
    let curves = py.allow_threads(|| probe::measure(&p)).map_err(host_err)?;
    let out = PyList::empty(py);
    for c in curves {
        let d = PyDict::new(py);
        d.set_item("mode", if c.mode == Pages::Base { "4k" } else { "thp" })?;
        d.set_item("pages", c.pages)?;
        d.set_item("ns", c.ns)?;
        d.set_item("control", c.control)?;
        d.set_item("misses", c.misses)?;
        d.set_item("huge_bytes", c.huge_bytes)?;
        d.set_item("bytes", c.bytes)?;
        out.append(d)?;
    }
    Ok(out.unbind())
}

/// Whether SMT siblings share TLB entries (xlat_host::smt_share): {cpu, sibling, pages,
/// rounds, alone_ns, control_ns, same_ns, other_ns, shared (True, False or None:
/// inconclusive)}; HostError where the CPU has no sibling.
#[pyfunction]
#[pyo3(signature = (pages=2112, rounds=15, seed=1))]
fn probe_smt_share(py: Python<'_>, pages: usize, rounds: u32, seed: u64) -> PyResult<Py<PyDict>> {
    let r = py.allow_threads(|| xlat_host::smt_share::measure(pages, rounds, seed)).map_err(host_err)?;
    let d = PyDict::new(py);
    d.set_item("cpu", r.cpu)?;
    d.set_item("sibling", r.sibling)?;
    d.set_item("pages", r.pages)?;
    d.set_item("rounds", r.rounds)?;
    d.set_item("alone_ns", r.alone_ns)?;
    d.set_item("control_ns", r.control_ns)?;
    d.set_item("same_ns", r.same_ns)?;
    d.set_item("other_ns", r.other_ns)?;
    d.set_item("shared", r.shared)?;
    Ok(d.unbind())
}

/// Whether software prefetches start page walks (xlat_host::prefetch_walks): {chase_pages,
/// other_pages, rounds, quiet_ns, own_lines_ns, prefetch_ns, load_ns, walks (True, False or
/// None: inconclusive)}.
#[pyfunction]
#[pyo3(signature = (chase_pages=512, other_pages=8192, rounds=31, seed=1))]
fn probe_prefetch_walks(py: Python<'_>, chase_pages: usize, other_pages: usize, rounds: u32, seed: u64) -> PyResult<Py<PyDict>> {
    let r = py.allow_threads(|| xlat_host::prefetch_walks::measure(chase_pages, other_pages, rounds, seed)).map_err(host_err)?;
    let d = PyDict::new(py);
    d.set_item("chase_pages", r.chase_pages)?;
    d.set_item("other_pages", r.other_pages)?;
    d.set_item("rounds", r.rounds)?;
    d.set_item("quiet_ns", r.quiet_ns)?;
    d.set_item("own_lines_ns", r.own_lines_ns)?;
    d.set_item("prefetch_ns", r.prefetch_ns)?;
    d.set_item("load_ns", r.load_ns)?;
    d.set_item("walks", r.walks)?;
    Ok(d.unbind())
}

/// The steps of a curve (see xlat_host::knee), found in ys minus the control chase's curve
/// where one is given: [{knee, top, fits, overflows, before, after, reach}].
#[pyfunction]
#[pyo3(signature = (xs, ys, control=None, min_step=0.8, width=0.25))]
fn probe_steps(py: Python<'_>, xs: Vec<f64>, ys: Vec<f64>, control: Option<Vec<f64>>, min_step: f64, width: f64) -> PyResult<Py<PyList>> {
    let out = PyList::empty(py);
    for s in knee::steps(&xs, &ys, control.as_deref(), knee::Params { min_step, width }) {
        let d = PyDict::new(py);
        d.set_item("knee", s.knee)?;
        d.set_item("top", s.top)?;
        d.set_item("fits", s.fits)?;
        d.set_item("overflows", s.overflows)?;
        d.set_item("before", s.before)?;
        d.set_item("after", s.after)?;
        d.set_item("reach", s.reach)?;
        out.append(d)?;
    }
    Ok(out.unbind())
}

/// What this machine is: hypervisor, caches, SMT siblings, LLC domain, perf counters.
#[pyfunction]
fn machine(py: Python<'_>) -> PyResult<Py<PyDict>> {
    let d = PyDict::new(py);
    let hv = sys::hypervisor();
    let cpu = sys::current_cpu();
    d.set_item("hypervisor", hv.present)?;
    d.set_item("hypervisor_vendor", hv.vendor)?;
    d.set_item("cpu", cpu)?;
    let caches = PyList::empty(py);
    for c in sys::caches(cpu) {
        let cd = PyDict::new(py);
        cd.set_item("level", c.level)?;
        cd.set_item("type", c.kind)?;
        cd.set_item("bytes", c.bytes)?;
        cd.set_item("shared_with", c.shared_with)?;
        caches.append(cd)?;
    }
    d.set_item("caches", caches)?;
    d.set_item("smt_siblings", sys::smt_siblings(cpu))?;
    d.set_item("llc_domain", sys::llc_domain(cpu))?;
    d.set_item("perf_unavailable", sys::perf_counters().err())?;
    Ok(d.unbind())
}

/// Physical contiguity of a fresh buffer of `pages` pages ("4k" or "thp"); HostError when
/// pagemap hides frame numbers.
#[pyfunction]
fn contiguity(py: Python<'_>, pages: usize, mode: &str) -> PyResult<Py<PyDict>> {
    let mode = pages_mode(mode)?;
    let c = py
        .allow_threads(|| {
            let mut m = Mapping::new(pages * xlat_host::PAGE, mode)?;
            m.prefault();
            let f = sys::frames("self", m.as_ptr() as usize, m.len())?;
            Ok::<_, xlat_host::HostError>(sys::contiguity(&f, m.as_ptr() as usize / xlat_host::PAGE))
        })
        .map_err(host_err)?;
    let d = PyDict::new(py);
    d.set_item("pages", c.pages)?;
    d.set_item("adjacent", c.adjacent)?;
    d.set_item("groups4", c.groups4)?;
    d.set_item("groups8", c.groups8)?;
    d.set_item("longest_run", c.longest_run)?;
    Ok(d.unbind())
}

/// A running PT-Baker helper (from `bake_start`); `stop()` ends it and returns its stats.
#[pyclass(module = "xlat._core")]
struct Baker(Mutex<Option<bake::Baker>>);

#[pymethods]
impl Baker {
    /// Passes over the regions so far.
    fn passes(&self) -> u64 {
        self.0.lock().map(|b| b.as_ref().map_or(0, |b| b.passes())).unwrap_or(0)
    }
    /// The helper's CPU, or None when unpinned.
    fn cpu(&self) -> Option<usize> {
        self.0.lock().ok().and_then(|b| b.as_ref().and_then(|b| b.cpu()))
    }
    /// Stops the helper: {passes, touches, minor_faults, cpu, seconds}; None if stopped before.
    fn stop(&self, py: Python<'_>) -> PyResult<Option<Py<PyDict>>> {
        let taken = self.0.lock().ok().and_then(|mut b| b.take());
        let Some(b) = taken else { return Ok(None) };
        let s = py.allow_threads(|| b.stop());
        let d = PyDict::new(py);
        d.set_item("passes", s.passes)?;
        d.set_item("touches", s.touches)?;
        d.set_item("minor_faults", s.minor_faults)?;
        d.set_item("cpu", s.cpu)?;
        d.set_item("seconds", s.seconds)?;
        Ok(Some(d.unbind()))
    }
}

/// Starts a helper over `regions` [(address, length)]. The caller (xlat.host.bake) keeps the
/// objects that own the memory alive until `stop()`.
#[pyfunction]
#[pyo3(signature = (regions, mode="load", stride=32768, nops=0, sleep_us=0, placement="llc", timer_slack_ns=1))]
fn bake_start(regions: Vec<(usize, usize)>, mode: &str, stride: usize, nops: u32, sleep_us: u64, placement: &str, timer_slack_ns: u64) -> PyResult<Baker> {
    let p = bake::Params {
        mode: Mode::parse(mode).map_err(host_err)?,
        stride,
        nops,
        sleep_us,
        placement: Placement::parse(placement).map_err(host_err)?,
        timer_slack_ns,
    };
    let rs: Vec<Region> = regions.into_iter().map(|(addr, len)| Region { addr, len }).collect();
    // SAFETY: start checks that every region is mapped now; the Python wrapper holds the
    // objects owning the memory until stop(), which is the contract of bake::start.
    let b = unsafe { bake::start(&rs, p) }.map_err(host_err)?;
    Ok(Baker(Mutex::new(Some(b))))
}

/// `xlat bake -- PROGRAM`: the daemon keeping process `pid`'s page tables warm from outside.
#[pyclass(module = "xlat._core")]
struct Daemon(Mutex<Option<daemon::Daemon>>);

#[pymethods]
impl Daemon {
    fn passes(&self) -> u64 {
        self.0.lock().map(|d| d.as_ref().map_or(0, |d| d.passes())).unwrap_or(0)
    }
    /// Stops it: {passes, pages, regions [(addr, len)], seconds}; None if stopped before.
    fn stop(&self, py: Python<'_>) -> PyResult<Option<Py<PyDict>>> {
        let taken = self.0.lock().ok().and_then(|mut d| d.take());
        let Some(d) = taken else { return Ok(None) };
        let s = py.allow_threads(|| d.stop());
        let out = PyDict::new(py);
        out.set_item("passes", s.passes)?;
        out.set_item("pages", s.pages)?;
        out.set_item("regions", s.regions.iter().map(|r| (r.addr, r.len)).collect::<Vec<_>>())?;
        out.set_item("seconds", s.seconds)?;
        Ok(Some(out.unbind()))
    }
}

#[pyfunction]
#[pyo3(signature = (pid, regions=1, min_bytes=8<<20, refresh_ms=200, sleep_us=0, cpu=None))]
fn bake_daemon(pid: u32, regions: usize, min_bytes: usize, refresh_ms: u64, sleep_us: u64, cpu: Option<usize>) -> PyResult<Daemon> {
    let p = daemon::Params { regions, min_bytes, refresh: std::time::Duration::from_millis(refresh_ms), sleep_us, cpu };
    Ok(Daemon(Mutex::new(Some(daemon::start(pid, p).map_err(host_err)?))))
}

/// ns per page of the calls that make the kernel walk page tables: [(name, ns)], cheapest first.
#[pyfunction]
fn bake_call_costs(py: Python<'_>, pages: usize) -> PyResult<Vec<(String, f64)>> {
    let c = py.allow_threads(|| daemon::call_costs(pages)).map_err(host_err)?;
    Ok(c.into_iter().map(|(n, v)| (n.to_string(), v)).collect())
}

/// The benchmark: seconds of each run of `kernel`, `[config][round]`, configs "none" then `modes`.
#[pyfunction]
#[pyo3(signature = (kernel, modes, rounds, quick=false, placement="llc", sleep_us=0))]
fn bake_bench(py: Python<'_>, kernel: String, modes: Vec<String>, rounds: u32, quick: bool, placement: &str, sleep_us: u64) -> PyResult<Vec<Vec<f64>>> {
    let placement = Placement::parse(placement).map_err(host_err)?;
    let mut configs = vec![None];
    for m in &modes {
        configs.push(Some(bake::Params { mode: Mode::parse(m).map_err(host_err)?, placement, sleep_us, ..bake::Params::default() }));
    }
    let size = if quick { bench::Size::Quick } else { bench::Size::Full };
    py.allow_threads(|| bench::run(&kernel, size, &configs, rounds)).map_err(host_err)
}

/// Writes the probe's chase over `pages` pages (the same layout and order as the measured one)
/// as a native trace of `refs` dependent loads, for the simulator. Returns references written.
#[pyfunction]
fn probe_trace(py: Python<'_>, path: String, pages: usize, refs: u64) -> PyResult<u64> {
    use xlat_core::{Ref, RefKind, Region as SimRegion};
    use xlat_workloads::trace::{NativeHeader, NativeWriter};
    if pages < 2 {
        return Err(HostError::new_err("a chase needs at least 2 pages"));
    }
    py.allow_threads(|| {
        // Where the simulated process has the buffer (any page-aligned address would do).
        const BASE: u64 = 0x10_0000_0000;
        let (offsets, next) = xlat_host::chase::layout(pages, 1);
        let region = SimRegion { name: "chase".into(), start: BASE, len: (pages * xlat_host::PAGE) as u64, file: None };
        let hdr = NativeHeader { stream: 0, streams: 1, regions: vec![region], desc: format!("xlat probe chase, {pages} pages") };
        let err = |e: xlat_core::SourceError| HostError::new_err(e.to_string());
        let mut w = NativeWriter::create(std::path::Path::new(&path), &hdr).map_err(err)?;
        let mut batch = Vec::with_capacity(4096);
        let mut p = 0usize;
        for _ in 0..refs {
            p = next[p];
            // `p = *p`: a dependent 8-byte load, two instructions per step (load, loop).
            batch.push(Ref::new(BASE + offsets[p] as u64, RefKind::Load, 8, 2, true));
            if batch.len() == batch.capacity() {
                w.write(&batch).map_err(err)?;
                batch.clear();
            }
        }
        w.write(&batch).map_err(err)?;
        w.finish().map_err(err)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(probe_trace, m)?)?;
    m.add_function(wrap_pyfunction!(bake_bench, m)?)?;
    m.add_function(wrap_pyfunction!(bake_daemon, m)?)?;
    m.add_function(wrap_pyfunction!(bake_call_costs, m)?)?;
    m.add_class::<Daemon>()?;
    m.add_function(wrap_pyfunction!(probe_measure, m)?)?;
    m.add_function(wrap_pyfunction!(probe_steps, m)?)?;
    m.add_function(wrap_pyfunction!(probe_prefetch_walks, m)?)?;
    m.add_function(wrap_pyfunction!(probe_smt_share, m)?)?;
    m.add_function(wrap_pyfunction!(machine, m)?)?;
    m.add_function(wrap_pyfunction!(contiguity, m)?)?;
    m.add_function(wrap_pyfunction!(bake_start, m)?)?;
    m.add_class::<Baker>()?;
    Ok(())
}
