//! xlat-workloads: workload kernels and trace formats.
//!
//! A *kernel* runs a real algorithm (Graph500 BFS, GAP PageRank, HPCC RandomAccess, ...)
//! on real data in the host process and records the simulated virtual address of every
//! access to its big data structures (see [`vas`] for the layout). A *trace* replays
//! references recorded elsewhere (xlat's own format, ChampSim, valgrind lackey).
//! Both are delivered to the engine as [`xlat_core::RefSource`]s.
//!
//! ```no_run
//! let (desc, mut src) = xlat_workloads::open("bfs:scale=16,threads=2", 1).unwrap();
//! let mut batch = Vec::with_capacity(16384);
//! src.next_batch(0, &mut batch).unwrap();
//! # let _ = desc;
//! ```

pub mod helper;
pub mod hostmem;
pub mod kernels;
pub mod mix;
pub mod params;
pub mod pressure;
pub mod recorder;
pub mod reuse;
pub mod rng;
pub mod shootdowns;
mod source;
pub mod trace;
pub mod vas;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use xlat_core::{RefSource, SourceError};

use kernels::Kernel;
use params::{PDef, Params};
use recorder::CountRecorder;

/// A resolved workload: its name and every parameter's value, defaults included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadDesc {
    pub name: String,
    pub params: Vec<(String, String)>,
}

impl WorkloadDesc {
    /// `name:k=v,...`, which `open` parses back to the same workload.
    pub fn spec(&self) -> String {
        let kv: Vec<String> = self.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if kv.is_empty() {
            self.name.clone()
        } else {
            format!("{}:{}", self.name, kv.join(","))
        }
    }
}

/// (What the user typed is shown with control characters escaped, so that every message is
/// one line.)
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("unknown workload '{}' (known: {known})", name.escape_debug())]
    UnknownWorkload { name: String, known: String },
    #[error("workload {workload}: unknown parameter '{}' (allowed: {allowed})", param.escape_debug())]
    UnknownParam { workload: String, param: String, allowed: String },
    #[error("workload {workload}: bad value '{}' for {param}: {why}", value.escape_debug())]
    BadValue { workload: String, param: String, value: String, why: String },
    #[error("bad workload spec '{}': {why}", spec.escape_debug())]
    BadSpec { spec: String, why: String },
    #[error("unknown trace format '{}' (known: native, champsim, lackey)", .0.escape_debug())]
    UnknownFormat(String),
    /// A trace could not be opened or decoded.
    #[error("{0}")]
    Trace(SourceError),
    /// A kernel failed while running natively.
    #[error("workload {name}: {what}")]
    Failed { name: String, what: String },
    /// A kernel's input would not fit in the host's memory (`hostmem`).
    #[error("workload {workload}: its input needs about {} of host memory and this host has {} available; make it smaller{}", hostmem::human(*need), hostmem::human(*have), if *materializable { " (or keep it out of host memory: materialize=no)" } else { "" })]
    HostMemory { workload: String, need: u64, have: u64, materializable: bool },
    /// A shootdown trace's record (its line, from 1; 0: the file as a whole) is wrong.
    #[error("{path}{}: {what}", if *line > 0 { format!(":{line}") } else { String::new() })]
    BadShootdowns { path: String, line: usize, what: String },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    pub name: &'static str,
    pub default: String,
    pub doc: &'static str,
}

#[derive(Clone, Debug)]
pub struct WorkloadInfo {
    pub name: &'static str,
    pub description: &'static str,
    pub params: Vec<ParamInfo>,
    /// Simulated virtual memory the kernel lays out at its default parameters.
    pub footprint_bytes: u64,
}

/// Result of running a kernel without recording.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NativeRun {
    /// References the kernel made (what a recorded run would emit).
    pub refs: u64,
    /// Wall time of the kernel proper (input construction excluded).
    pub seconds: f64,
    /// A digest of the algorithm's result, so runs can be compared and the work cannot be
    /// optimised away.
    pub checksum: u64,
}

fn resolve(spec: &str, seed: u64) -> Result<(&'static kernels::Entry, Params), WorkloadError> {
    let (name, kvs) = params::split_spec(spec)?;
    let entry = kernels::ENTRIES
        .iter()
        .find(|e| e.name == name)
        .ok_or_else(|| WorkloadError::UnknownWorkload { name: name.clone(), known: kernels::ENTRIES.iter().map(|e| e.name).collect::<Vec<_>>().join(", ") })?;
    let p = Params::resolve(entry.name, entry.params, &kvs, seed)?;
    Ok((entry, p))
}

fn desc_of(p: &Params) -> WorkloadDesc {
    WorkloadDesc { name: p.workload.to_string(), params: p.pairs() }
}

/// Every kernel with its parameters and its footprint at the defaults.
pub fn catalog() -> Vec<WorkloadInfo> {
    kernels::ENTRIES
        .iter()
        .map(|e| {
            let params: Vec<ParamInfo> =
                e.params.iter().chain(params::COMMON.iter()).map(|d: &PDef| ParamInfo { name: d.name, default: d.default.to_string(), doc: d.doc }).collect();
            let footprint_bytes =
                Params::resolve(e.name, e.params, &[], 0).and_then(|p| Kernel::new(e.name, &p, false)).map(|k| k.vas().footprint()).unwrap_or(0);
            WorkloadInfo { name: e.name, description: e.description, params, footprint_bytes }
        })
        .collect()
}

/// [`catalog`] as the Markdown of docs/workloads.md's parameter tables.
pub fn catalog_markdown() -> String {
    let mut out = String::new();
    for w in catalog() {
        out += &format!("### `{}`: {} (footprint at defaults: {:.1} MiB)\n\n", w.name, w.description, w.footprint_bytes as f64 / (1 << 20) as f64);
        out += "| param | default | meaning |\n|---|---|---|\n";
        for p in &w.params {
            out += &format!("| `{}` | `{}` | {} |\n", p.name, p.default, p.doc);
        }
        out += "\n";
    }
    out
}

/// Resolve a spec (`name:key=value,...`) without running anything.
pub fn describe(spec: &str, seed: u64) -> Result<WorkloadDesc, WorkloadError> {
    let (e, p) = resolve(spec, seed)?;
    Kernel::new(e.name, &p, false)?;
    Ok(desc_of(&p))
}

/// Refuse a kernel whose input would not fit in the host's memory, before it is built.
fn fits(spec: &str, k: &Kernel) -> Result<(), WorkloadError> {
    let need = k.host_bytes();
    match hostmem::available() {
        Some(have) if need > have => {
            Err(WorkloadError::HostMemory { workload: spec.to_string(), need, have, materializable: k.params().iter().any(|d| d.name == "materialize") })
        }
        _ => Ok(()),
    }
}

/// Start a kernel in its own thread and return its reference streams. `seed` is used
/// unless the spec sets `seed=`.
pub fn open(spec: &str, seed: u64) -> Result<(WorkloadDesc, Box<dyn RefSource>), WorkloadError> {
    open_until(spec, seed, Arc::new(AtomicBool::new(false)))
}

/// [`open`], whose kernel stops (its input construction too) once `stop` is set: its
/// streams then end. For callers that can be interrupted while a kernel builds its input.
pub fn open_until(spec: &str, seed: u64, stop: Arc<AtomicBool>) -> Result<(WorkloadDesc, Box<dyn RefSource>), WorkloadError> {
    let (e, p) = resolve(spec, seed)?;
    let mut k = Kernel::new(e.name, &p, false)?;
    fits(spec, &k)?;
    let regions = k.vas().regions().to_vec();
    let streams = k.threads();
    let src = source::KernelSource::spawn(e.name, streams, regions, p.limit(), stop, move |rec: &mut recorder::BatchRecorder| {
        k.run(rec);
    });
    Ok((desc_of(&p), Box::new(src)))
}

/// Run a kernel in the calling thread without recording (for benchmarks and the
/// real-hardware tools). Large tables are materialised (see each kernel's docs).
pub fn run_native(spec: &str, seed: u64) -> Result<NativeRun, WorkloadError> {
    let (e, p) = resolve(spec, seed)?;
    let mut k = Kernel::new(e.name, &p, true)?;
    fits(spec, &k)?;
    let mut rec = CountRecorder::new(p.limit());
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let start = Instant::now();
        let checksum = k.run(&mut rec);
        let end = Instant::now();
        let t0 = rec.roi_start.unwrap_or(start);
        (checksum, end.duration_since(t0).as_secs_f64())
    }));
    match r {
        Ok((checksum, seconds)) => Ok(NativeRun { refs: rec.refs, seconds, checksum }),
        Err(p) => Err(WorkloadError::Failed { name: e.name.to_string(), what: source::panic_message(&*p) }),
    }
}

/// Open recorded traces, one file per stream. `format` forces `native`, `champsim` or
/// `lackey` (optionally `champsim+fetch` / `lackey+fetch` to also emit instruction
/// fetches); otherwise each file's format is detected from its content and suffix.
pub fn open_trace(paths: &[String], format: Option<&str>) -> Result<(WorkloadDesc, Box<dyn RefSource>), WorkloadError> {
    open_trace_with(paths, format, None)
}

/// As [`open_trace`]; with `page_regions` (an alignment in bytes, 4096 for the pages
/// themselves), a trace without regions of its own gets regions from the pages it touches
/// (read once beforehand: [`trace::TraceSource::regions_from_pages`]), so that it can be
/// prefaulted.
pub fn open_trace_with(paths: &[String], format: Option<&str>, page_regions: Option<u64>) -> Result<(WorkloadDesc, Box<dyn RefSource>), WorkloadError> {
    open_trace_until(paths, format, page_regions, trace::Layout::AS_TRACED, &AtomicBool::new(false))
}

/// As [`open_trace_with`], with the traced executable and its shared objects laid out as
/// `layout` says (`loader.max_page_size`, `loader.library_base`,
/// [`trace::TraceSource::relink`]); making a trace's cached native copy ([`trace::cache`])
/// stops once `stop` is set.
pub fn open_trace_until(
    paths: &[String],
    format: Option<&str>,
    page_regions: Option<u64>,
    layout: trace::Layout,
    stop: &AtomicBool,
) -> Result<(WorkloadDesc, Box<dyn RefSource>), WorkloadError> {
    let fmt = match format {
        None => None,
        Some(f) => Some(trace::FormatSpec::parse(f).ok_or_else(|| WorkloadError::UnknownFormat(f.to_string()))?),
    };
    if page_regions.is_some() {
        // (Before opening: opening a pipe would wait for its writer.)
        trace::readable_twice(paths).map_err(WorkloadError::Trace)?;
    }
    let mut src = trace::TraceSource::open_until(paths, fmt, stop).map_err(WorkloadError::Trace)?;
    src.relink(paths, layout).map_err(WorkloadError::Trace)?;
    if layout.fast_forward {
        src.fast_forward(paths, fmt).map_err(WorkloadError::Trace)?;
    }
    if let Some(align) = page_regions {
        src.regions_from_pages(paths, fmt, align).map_err(WorkloadError::Trace)?;
    }
    let desc = src.desc();
    Ok((desc, Box::new(src)))
}

/// Open a mix of programs (`bfs@0,gups:scale=22@1`, see [`mix::parse`]): one stream per core,
/// each program in its own address space. Program `i` runs with seed `seed + i` unless its
/// spec sets one.
pub fn open_mix(spec: &str, seed: u64) -> Result<(WorkloadDesc, Box<dyn RefSource>), WorkloadError> {
    open_mix_until(spec, seed, Arc::new(AtomicBool::new(false)))
}

/// [`open_mix`], whose kernels stop once `stop` is set (see [`open_until`]).
pub fn open_mix_until(spec: &str, seed: u64, stop: Arc<AtomicBool>) -> Result<(WorkloadDesc, Box<dyn RefSource>), WorkloadError> {
    open_mix_with(spec, seed, stop, None)
}

/// [`open_mix_until`]; with `page_regions` (an alignment, as [`open_trace_with`]), its trace programs without regions get them from
/// their pages (for `--prefault`).
pub fn open_mix_with(spec: &str, seed: u64, stop: Arc<AtomicBool>, page_regions: Option<u64>) -> Result<(WorkloadDesc, Box<dyn RefSource>), WorkloadError> {
    let src = mix::MixSource::open_with(spec, seed, stop, page_regions)?;
    Ok((src.desc(), Box::new(src)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host_bytes(spec: &str) -> u64 {
        let (e, p) = resolve(spec, 1).unwrap();
        Kernel::new(e.name, &p, false).unwrap().host_bytes()
    }

    #[test]
    fn host_memory_estimates_count_what_the_kernels_keep_not_what_they_simulate() {
        // 16 G keys: a word a key for the values, 32 G slots of the hash index.
        assert_eq!(host_bytes("kvstore:keys=16G"), (8u64 << 34) + (8u64 << 35));
        assert_eq!(host_bytes("gups:footprint=1T,materialize=yes"), 1 << 40);
        assert_eq!(host_bytes("gups:footprint=1T"), 0);
        // LibLinear computes its rows' features when read: 1 TB simulated, 28 MB kept.
        assert_eq!(host_bytes("liblinear:features=65536"), (1 << 20) * 28 + 65536 * 8);
        assert_eq!(host_bytes("chase:footprint=64G"), 0);
        let err = fits("kvstore:keys=16G", &Kernel::new("kvstore", &resolve("kvstore:keys=16G", 1).unwrap().1, false).unwrap());
        if hostmem::available().is_some_and(|a| a < 1 << 40) {
            assert!(matches!(err, Err(WorkloadError::HostMemory { materializable: false, .. })), "{err:?}");
        }
    }
}
