//! Engine throughput on a synthetic GUPS-like stream (no workloads crate needed):
//! `cargo run --release -p xlat-core --example speed -- [refs] [footprint_gb] [key=value...]`.
//! `XLAT_THREADS=1` keeps it to one host thread. With `XLAT_DUMP=1` it prints every statistic too (to compare builds: an optimization
//! must leave them bit-identical).
use std::time::Instant;
use xlat_core::{Config, Ref, RefSource, Region, RunOptions, SourceError};

struct Gups {
    x: u64,
    left: u64,
    base: u64,
    words: u64,
}

impl RefSource for Gups {
    fn streams(&self) -> usize {
        1
    }
    fn regions(&self) -> Vec<Region> {
        vec![Region { name: "table".into(), start: self.base, len: self.words * 8, file: None }]
    }
    fn next_batch(&mut self, _s: usize, out: &mut Vec<Ref>) -> Result<(), SourceError> {
        out.clear();
        while out.len() < out.capacity() && self.left > 0 {
            self.x ^= self.x << 13;
            self.x ^= self.x >> 7;
            self.x ^= self.x << 17;
            let va = self.base + (self.x & (self.words - 1)) * 8;
            out.push(Ref::load(va, 4));
            out.push(Ref::store(va, 1));
            self.left -= 2;
        }
        Ok(())
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let refs: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(20_000_000);
    let gb: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(8);
    let pairs: Vec<(String, String)> = args.iter().skip(3).filter_map(|a| a.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let cfg = Config::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))).expect("config");
    let mut src = Gups { x: 88172645463325252, left: refs, base: 0x7f00_0000_0000, words: gb << 27 };
    let t = Instant::now();
    let mut m = xlat_core::Machine::new(&cfg, 1, src.regions(), 1).unwrap();
    m.prefault().unwrap();
    let tp = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let threads = std::env::var("XLAT_THREADS").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    m.run(&mut src, RunOptions { threads, ..RunOptions::default() }, &mut |_| true).unwrap();
    let dt = t.elapsed().as_secs_f64();
    let s = m.stats();
    println!(
        "prefault {:.2}s; {} refs in {:.2}s = {:.2} M refs/s; ipc {:.3} walks {} steps/walk {:.2}",
        tp,
        refs,
        dt,
        refs as f64 / dt / 1e6,
        s.f("ipc"),
        s.f("walks"),
        s.f("walk_steps_per_walk")
    );
    if let Some(h) = m.host_times {
        // Two host threads: which half limits the run.
        println!("host threads busy: translating {:.2} s, memory side {:.2} s of {:.2} s", h.translate_s, h.memory_s, h.wall_s);
    }
    if std::env::var_os("XLAT_DUMP").is_some() {
        for (k, v) in &s.entries {
            println!("{k} {v:?}");
        }
    }
}
