//! Bindings for configuration and simulation.
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use xlat_core::{Config, RunOptions, SimError, StatValue};

use crate::errors::{ConfigError, SimulationError, TraceError, WorkloadError, XlatError};
use crate::interrupt::{interruptible, panic_message};

/// Every config key: (key, default, expected values, doc); a numeric key's doc ends with its
/// upper bound.
#[pyfunction]
fn config_keys() -> Vec<(String, String, String, String)> {
    Config::schema()
        .into_iter()
        .map(|k| {
            let doc = match &k.max {
                Some(m) => format!("{} (at most {m})", k.doc),
                None => k.doc.to_string(),
            };
            (k.key.to_string(), k.default, k.expected, doc)
        })
        .collect()
}

fn build_config(pairs: &[(String, String)]) -> PyResult<Config> {
    Config::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))).map_err(|e| ConfigError::new_err(e.to_string()))
}

/// Apply `pairs` over the engine defaults, validate, and return every key's value.
#[pyfunction]
fn resolve_config(pairs: Vec<(String, String)>) -> PyResult<Vec<(String, String)>> {
    let c = build_config(&pairs)?;
    Ok(c.entries().into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn workload_err(e: xlat_workloads::WorkloadError) -> PyErr {
    match e {
        xlat_workloads::WorkloadError::Trace(_) | xlat_workloads::WorkloadError::UnknownFormat(_) | xlat_workloads::WorkloadError::BadShootdowns { .. } => {
            TraceError::new_err(e.to_string())
        }
        _ => WorkloadError::new_err(e.to_string()),
    }
}

fn sim_err(e: SimError) -> PyErr {
    match e {
        SimError::Source(s) => TraceError::new_err(s.to_string()),
        other => SimulationError::new_err(other.to_string()),
    }
}

/// Statistics as a dict, name -> int (a count) or float (a ratio, or a negative change).
fn stats_dict<'py>(py: Python<'py>, entries: Vec<(String, StatValue)>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, v) in entries {
        match v {
            StatValue::Int(i) => d.set_item(name, i)?,
            StatValue::Float(f) => d.set_item(name, f)?,
        }
    }
    Ok(d)
}

/// Run one simulation. Exactly one of `workload` (a spec such as `bfs:scale=16`), `trace`
/// (paths, one per stream) and `mix` (programs on cores, `bfs@0,gups@1`) must be given. Returns `{"stats", "series",
/// "workload"}`; `series` holds, per `interval` instructions (0: none, an empty list), the
/// change of every integer statistic. `shootdowns`: a shootdown trace to inject
/// (`xlat_workloads::shootdowns`).
#[pyfunction]
#[pyo3(signature = (config, workload=None, trace=None, trace_format=None, refs=None, warmup=0, seed=1, prefault=false, progress=None, threads=0, interval=0, mix=None, shootdowns=None, warmup_instructions=0, curves=None, curve_ways=64, sample=None, skip=0))]
#[allow(clippy::too_many_arguments)]
fn simulate<'py>(
    py: Python<'py>,
    config: Vec<(String, String)>,
    workload: Option<String>,
    trace: Option<Vec<String>>,
    trace_format: Option<String>,
    refs: Option<u64>,
    warmup: u64,
    seed: u64,
    prefault: bool,
    progress: Option<PyObject>,
    threads: usize,
    interval: u64,
    mix: Option<String>,
    shootdowns: Option<String>,
    warmup_instructions: u64,
    curves: Option<Vec<String>>,
    curve_ways: usize,
    sample: Option<(u64, u64, u64)>,
    skip: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let cfg = build_config(&config)?;
    if [workload.is_some(), trace.is_some(), mix.is_some()].iter().filter(|&&b| b).count() != 1 {
        return Err(XlatError::new_err("give exactly one of a workload, a trace and a mix"));
    }
    let opts = RunOptions { max_refs: refs, skip, warmup, warmup_instructions, threads, interval };
    // (A warm-up in instructions has no known length in references: the total is unknown.)
    let total = if warmup_instructions > 0 { None } else { refs.map(|r| r.saturating_add(warmup)) };
    // Opening the workload (a kernel may build its input for many seconds) and the run both
    // happen on a thread that Ctrl-C and SIGTERM stop (see `interrupt`).
    let (desc, stats, made_curves, sampled) = interruptible(py, move |stop| {
        let open = || -> PyResult<(xlat_workloads::WorkloadDesc, Box<dyn xlat_core::RefSource>)> {
            // (Regions from a trace's pages, for --prefault: loader.trace_region_kb.)
            let page_regions = prefault.then_some(cfg.loader.trace_region_kb * 1024);
            let (desc, mut src) = match (&workload, &trace, &mix) {
                // (An interrupt stops the kernels at once, while they build their input too.)
                (Some(w), None, None) => xlat_workloads::open_until(w, seed, stop.clone()).map_err(workload_err)?,
                (None, Some(t), None) => {
                    let layout = xlat_workloads::trace::Layout {
                        max_page: cfg.loader.max_page_size.bytes(),
                        library_align: cfg.loader.library_base.align(),
                        fast_forward: cfg.loader.fast_forward == xlat_core::param::FastForward::Resident,
                    };
                    xlat_workloads::open_trace_until(t, trace_format.as_deref(), page_regions, layout, &stop).map_err(workload_err)?
                }
                (None, None, Some(_)) if cfg.loader.max_page_size.bytes().is_some() => {
                    return Err(XlatError::new_err("loader.max_page_size relinks a --trace run's program; a mix's traces run as linked"));
                }
                (None, None, Some(m)) => xlat_workloads::open_mix_with(m, seed, stop.clone(), page_regions).map_err(workload_err)?,
                _ => unreachable!("checked above"),
            };
            if let Some(path) = &shootdowns {
                src = Box::new(xlat_workloads::shootdowns::WithShootdowns::open(src, std::path::Path::new(path)).map_err(workload_err)?);
            }
            // PT-Baker's helper and memory pressure, when the config asks for them.
            let src = xlat_workloads::pressure::beside(src, &cfg, seed, stop.clone()).map_err(workload_err)?;
            Ok((desc, src))
        };
        let (desc, mut src) = open()?;
        let mut failed: Option<PyErr> = None;
        let mut last = Instant::now();
        let mut report = |done: u64| -> bool {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            // Take the GIL a few times a second at most, and only to report progress.
            let Some(cb) = &progress else { return true };
            if last.elapsed() < Duration::from_millis(200) {
                return true;
            }
            last = Instant::now();
            Python::with_gil(|py| match cb.call1(py, (done, total)) {
                Ok(_) => true,
                Err(e) => {
                    failed = Some(e);
                    false
                }
            })
        };
        // The hindsight oracle ranks regions by a first run of the same workload.
        let mut made_curves = Vec::new();
        let mut sampled = None;
        let result = if let Some((period, warm, unit)) = sample {
            // (A sampled run: its units' statistics, summed and estimated in Python.)
            let s = xlat_core::sample::Sample { period, warm, unit };
            xlat_core::simulate_sampled(&cfg, src.as_mut(), s, opts, prefault, seed, &mut report).map(|r| {
                let total = r.units.iter().fold(xlat_core::Stats::default(), |acc, u| add_counts(&acc, u));
                sampled = Some(r);
                total
            })
        } else if let Some(names) = &curves {
            // (One-pass miss-ratio curves of the structures named: `xlat mrc`.)
            xlat_core::simulate_curves(&cfg, src.as_mut(), names, curve_ways, opts, prefault, seed, &mut report).map(|(s, c)| {
                made_curves = c;
                s
            })
        } else if cfg.promotion.kind == xlat_core::config::Promotion::Oracle {
            match xlat_core::profile_walks(&cfg, src.as_mut(), opts, prefault, seed, &mut report) {
                Ok(profile) => {
                    drop(src);
                    src = open()?.1;
                    xlat_core::simulate_with(&cfg, src.as_mut(), Some(&profile), opts, prefault, seed, &mut report)
                }
                Err(e) => Err(e),
            }
        } else {
            xlat_core::simulate(&cfg, src.as_mut(), opts, prefault, seed, &mut report)
        };
        drop(src);
        match result {
            Err(SimError::Interrupted) => Err(failed.unwrap_or_else(|| SimulationError::new_err("interrupted"))),
            // An address no user program has, read from a trace: name the trace and the
            // likely cause (the reader caught the grossly wrong ones with their byte offsets).
            Err(e @ SimError::BadAddress { .. }) if desc.name == "trace" => {
                let param = |k: &str| desc.params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap_or_default();
                Err(TraceError::new_err(format!("{}: {e} (read as {}: is that its format? see --trace-format)", param("paths"), param("format"))))
            }
            Err(e) => Err(sim_err(e)),
            Ok(s) => Ok((desc, s, made_curves, sampled)),
        }
    })?;
    let out = PyDict::new(py);
    let series = stats.series.into_iter().map(|iv| stats_dict(py, iv.entries)).collect::<PyResult<Vec<_>>>()?;
    out.set_item("stats", stats_dict(py, stats.entries)?)?;
    out.set_item("series", series)?;
    let wl = PyDict::new(py);
    wl.set_item("name", &desc.name)?;
    let params = PyDict::new(py);
    for (k, v) in &desc.params {
        params.set_item(k, v)?;
    }
    wl.set_item("params", params)?;
    out.set_item("workload", wl)?;
    if let Some(r) = sampled {
        let d = PyDict::new(py);
        let units = r.units.into_iter().map(|u| stats_dict(py, u.entries)).collect::<PyResult<Vec<_>>>()?;
        d.set_item("units", units)?;
        d.set_item("skipped", r.skipped)?;
        d.set_item("simulated", r.simulated)?;
        d.set_item("last", stats_dict(py, r.last.entries)?)?;
        out.set_item("sample", d)?;
    }
    if !made_curves.is_empty() {
        let list = PyList::empty(py);
        for c in &made_curves {
            let d = PyDict::new(py);
            d.set_item("structure", &c.structure)?;
            d.set_item("arrays", c.arrays.clone())?;
            d.set_item("exact", c.exact)?;
            d.set_item("depths", c.depths.counts().to_vec())?;
            list.append(d)?;
        }
        out.set_item("curves", list)?;
    }
    Ok(out)
}

/// `a` plus `b`, counter by counter (integer statistics; floats are left out).
fn add_counts(a: &xlat_core::Stats, b: &xlat_core::Stats) -> xlat_core::Stats {
    use xlat_core::StatValue;
    let mut out = xlat_core::Stats::default();
    for (name, v) in &b.entries {
        if let StatValue::Int(x) = v {
            let prev = match a.get(name) {
                Some(StatValue::Int(p)) => p,
                _ => 0,
            };
            out.int(name.clone(), prev + x);
        }
    }
    out
}

/// Run a kernel natively (no recording, no simulation): `{"refs", "seconds", "checksum"}`.
/// `make bench` compares the engine against this.
#[pyfunction]
#[pyo3(signature = (workload, seed=1))]
fn run_native<'py>(py: Python<'py>, workload: String, seed: u64) -> PyResult<Bound<'py, PyDict>> {
    let r = py.allow_threads(|| catch_unwind(AssertUnwindSafe(|| xlat_workloads::run_native(&workload, seed))));
    let r = r.map_err(|p| SimulationError::new_err(panic_message(p)))?.map_err(workload_err)?;
    let d = PyDict::new(py);
    d.set_item("refs", r.refs)?;
    d.set_item("seconds", r.seconds)?;
    d.set_item("checksum", r.checksum)?;
    Ok(d)
}

/// Pull up to `refs` references from a workload or trace without simulating them:
/// `(references, seconds)`. Measures how fast references are produced or decoded.
#[pyfunction]
#[pyo3(signature = (workload=None, trace=None, refs=None, seed=1))]
fn drain(py: Python<'_>, workload: Option<String>, trace: Option<Vec<String>>, refs: Option<u64>, seed: u64) -> PyResult<(u64, f64)> {
    let (_, mut src) = match (workload, trace) {
        (Some(w), None) => xlat_workloads::open(&w, seed).map_err(workload_err)?,
        (None, Some(t)) => xlat_workloads::open_trace(&t, None).map_err(workload_err)?,
        _ => return Err(XlatError::new_err("give exactly one of a workload and a trace")),
    };
    let limit = refs.unwrap_or(u64::MAX);
    let r = py.allow_threads(|| {
        catch_unwind(AssertUnwindSafe(|| -> Result<(u64, f64), xlat_core::SourceError> {
            let start = Instant::now();
            let mut buf = Vec::with_capacity(1 << 14);
            let (mut n, mut live) = (0u64, vec![true; src.streams()]);
            while n < limit && live.iter().any(|&l| l) {
                for (s, alive) in live.iter_mut().enumerate() {
                    if *alive {
                        src.next_batch(s, &mut buf)?;
                        *alive = !buf.is_empty();
                        n += buf.len() as u64;
                    }
                }
            }
            Ok((n.min(limit), start.elapsed().as_secs_f64()))
        }))
    });
    r.map_err(|p| SimulationError::new_err(panic_message(p)))?.map_err(|e| TraceError::new_err(e.to_string()))
}

/// The storage a PCC costs (`xlat_core::mech::pcc::PccCost`) for the PCC keys of `config`,
/// with `va_bits`-bit virtual addresses and `tlb_entry_bytes`-byte TLB entries.
#[pyfunction]
#[pyo3(signature = (config, va_bits=61, tlb_entry_bytes=16))]
fn pcc_cost(py: Python<'_>, config: Vec<(String, String)>, va_bits: u32, tlb_entry_bytes: u64) -> PyResult<Bound<'_, PyDict>> {
    let c = build_config(&config)?;
    if !(31..=64).contains(&va_bits) {
        return Err(XlatError::new_err(format!("--va-bits {va_bits}: must be between 31 and 64")));
    }
    let k = xlat_core::mech::pcc::PccCost::new(va_bits, c.pcc.entries, c.pcc.entries_1g, c.pcc.counter_bits as u32, tlb_entry_bytes, c.tlb_l2.entries);
    let d = PyDict::new(py);
    d.set_item("entries", c.pcc.entries)?;
    d.set_item("entries_1g", c.pcc.entries_1g)?;
    d.set_item("entry_bits_2m", k.entry_bits_2m)?;
    d.set_item("entry_bytes_2m", k.entry_bytes_2m)?;
    d.set_item("bytes_2m", k.bytes_2m)?;
    d.set_item("entry_bits_1g", k.entry_bits_1g)?;
    d.set_item("entry_bytes_1g", k.entry_bytes_1g)?;
    d.set_item("bytes_1g", k.bytes_1g)?;
    d.set_item("bytes", k.bytes)?;
    d.set_item("tlb_entries", k.tlb_entries)?;
    d.set_item("l2_entries", c.tlb_l2.entries)?;
    d.set_item("tlb_gain", k.tlb_gain)?;
    d.set_item("pages", k.pages)?;
    d.set_item("reach_bytes", k.reach_bytes)?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(pcc_cost, m)?)?;
    m.add_function(wrap_pyfunction!(run_native, m)?)?;
    m.add_function(wrap_pyfunction!(drain, m)?)?;
    m.add_function(wrap_pyfunction!(config_keys, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_config, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    Ok(())
}
