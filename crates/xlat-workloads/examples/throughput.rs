//! Quick release-mode throughput check: `cargo run --release -p xlat-workloads --example throughput
//! [-- SPEC...]`; each spec's line also says how many instructions its references carry apiece.
use std::time::Instant;

fn consume(spec: &str) -> (u64, f64, u64) {
    let (_, mut s) = xlat_workloads::open(spec, 1).unwrap();
    let mut b = Vec::with_capacity(16384);
    let t = Instant::now();
    let (mut n, mut x, mut instructions) = (0u64, 0u64, 0u64);
    for st in 0..s.streams() {
        loop {
            s.next_batch(st, &mut b).unwrap();
            if b.is_empty() {
                break;
            }
            n += b.len() as u64;
            x ^= b[b.len() - 1].va;
            instructions += b.iter().map(|r| u64::from(r.inst_delta)).sum::<u64>();
        }
    }
    std::hint::black_box(x);
    (n, t.elapsed().as_secs_f64(), instructions)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let specs: Vec<String> = if args.is_empty() { vec!["gups:updates=32M".into(), "random:reads=64M".into()] } else { args };
    for spec in &specs {
        let (n, s, instructions) = consume(spec);
        let (rate, per_ref) = (n as f64 / s / 1e6, instructions as f64 / n as f64);
        println!("{spec:40} generate+consume: {n:>11} refs in {s:6.3} s = {rate:7.1} M refs/s, {per_ref:6.2} instructions/ref");
    }
    let dir = std::env::temp_dir().join(format!("xlat-tp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("gups.xtr");
    let (_, mut src) = xlat_workloads::open("gups:updates=16M", 1).unwrap();
    let t = Instant::now();
    let n = xlat_workloads::trace::record(&mut *src, &p, None).unwrap();
    let ws = t.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(&p).unwrap().len();
    println!("record gups: {n} refs in {ws:.3} s = {:.1} M refs/s, {:.2} bytes/ref", n as f64 / ws / 1e6, bytes as f64 / n as f64);
    let p2 = dir.join("stream.xtr");
    let (_, mut src) = xlat_workloads::open("stream:n=8M,iters=2", 1).unwrap();
    xlat_workloads::trace::record(&mut *src, &p2, None).unwrap();
    for path in [&p, &p2] {
        let (_, mut tr) = xlat_workloads::open_trace(&[path.to_string_lossy().into()], None).unwrap();
        let mut b = Vec::with_capacity(16384);
        let t = Instant::now();
        let mut m = 0u64;
        loop {
            tr.next_batch(0, &mut b).unwrap();
            if b.is_empty() {
                break;
            }
            m += b.len() as u64;
        }
        let s = t.elapsed().as_secs_f64();
        let bytes = std::fs::metadata(path).unwrap().len();
        println!(
            "decode native {:?}: {m} refs in {s:.3} s = {:.1} M refs/s ({:.3} bytes/ref)",
            path.file_name().unwrap(),
            m as f64 / s / 1e6,
            bytes as f64 / m as f64
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
