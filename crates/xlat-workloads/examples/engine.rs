//! Engine throughput on any workload with the default (skylake-like) config:
//! `cargo run --release -p xlat-workloads --example engine -- SPEC [refs] [warmup] [key=value...]`.
//! For profiling the engine on real kernels (the `speed` example of xlat-core has GUPS only).
//! With `XLAT_DUMP=1` it prints every statistic too (to compare builds). What the config runs
//! beside the program (PT-Baker's helper, stressors: `ptbaker.*`, `pressure`) runs as in `xlat run`.
use std::time::Instant;
use xlat_core::{Config, Machine, RunOptions};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let spec = args.get(1).map(String::as_str).unwrap_or("bfs");
    let refs: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10_000_000);
    let warmup: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(0);
    let pairs: Vec<(String, String)> = args.iter().skip(4).filter_map(|a| a.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let cfg = Config::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))).expect("config");
    let (_desc, src) = xlat_workloads::open(spec, 1).expect("workload");
    let mut src = xlat_workloads::pressure::beside(src, &cfg, 1, Default::default()).expect("helper and stressors");
    let mut m = Machine::new(&cfg, src.streams(), src.regions(), 1).expect("machine");
    m.prefault().expect("prefault");
    let t = Instant::now();
    let done = m.run(src.as_mut(), RunOptions { max_refs: Some(refs), warmup, threads: threads(), ..RunOptions::default() }, &mut |_| true).expect("run");
    let dt = t.elapsed().as_secs_f64();
    let s = m.stats();
    println!("{spec}: {done} refs in {dt:.2}s = {:.2} M refs/s; ipc {:.3} walks {}", done as f64 / dt / 1e6, s.f("ipc"), s.f("walks"));
    if let Some(h) = m.host_times {
        println!("host threads busy: translating {:.2} s, memory side {:.2} s of {:.2} s", h.translate_s, h.memory_s, h.wall_s);
    }
    if std::env::var_os("XLAT_DUMP").is_some() {
        for (k, v) in &s.entries {
            println!("{k} {v:?}");
        }
    }
}

/// Host threads from `XLAT_THREADS` (default 0: the engine chooses).
fn threads() -> usize {
    std::env::var("XLAT_THREADS").ok().and_then(|s| s.parse().ok()).unwrap_or(0)
}
