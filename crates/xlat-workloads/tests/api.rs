use std::time::{Duration, Instant};

use xlat_core::{Ref, RefSource};
use xlat_workloads::*;

fn drain(src: &mut dyn RefSource, stream: usize) -> Vec<Ref> {
    let mut all = Vec::new();
    let mut b = Vec::with_capacity(4096);
    loop {
        src.next_batch(stream, &mut b).unwrap();
        if b.is_empty() {
            return all;
        }
        all.extend_from_slice(&b);
    }
}

#[test]
fn catalog_lists_every_kernel_with_defaults_and_footprints() {
    let c = catalog();
    let names: Vec<&str> = c.iter().map(|w| w.name).collect();
    for n in ["gups", "random", "chase", "stream", "bfs", "pagerank", "sssp", "bc", "cc", "hashjoin", "xsbench", "kvstore", "canneal", "btree", "tlbthrash"] {
        assert!(names.contains(&n), "{n} missing");
    }
    for w in &c {
        assert!(w.params.iter().any(|p| p.name == "seed"));
        assert!(w.params.iter().any(|p| p.name == "threads"));
        // (The TLB-thrash microbenchmark is sized in pages around the TLBs' reach.)
        let least = if w.name == "tlbthrash" { 4 << 20 } else { 64 << 20 };
        assert!(w.footprint_bytes >= least, "{}: {} bytes", w.name, w.footprint_bytes);
        assert!(w.footprint_bytes <= 16 << 30, "{}: {} bytes", w.name, w.footprint_bytes);
        assert!(!w.description.is_empty());
    }
    let g = c.iter().find(|w| w.name == "gups").unwrap();
    assert_eq!(g.footprint_bytes, 8 << 30);
}

#[test]
fn errors_are_one_line_and_list_alternatives() {
    let e = open("bfz", 0).err().unwrap().to_string();
    assert!(e.starts_with("unknown workload 'bfz' (known: gups, random,"), "{e}");
    let e = open("bfs:scael=3", 0).err().unwrap().to_string();
    assert!(e.contains("unknown parameter 'scael'") && e.contains("scale"), "{e}");
    let e = open("gups:footprint=lots", 0).err().unwrap().to_string();
    assert!(e.contains("footprint"), "{e}");
    // What the user typed, control characters and all, is shown escaped: still one line.
    for spec in ["0\n0", "bfs:sc\nale=3", "gups:footprint=1\r\nG"] {
        let e = open(spec, 0).err().unwrap().to_string();
        assert!(!e.contains(['\n', '\r']), "{spec:?}: {e}");
    }
    let e = open("bfs:scale=40", 0).err().unwrap().to_string();
    assert!(e.contains("between"), "{e}");
    let e = open("pagerank:graph=road", 0).err().unwrap().to_string();
    assert!(e.contains("kron|uniform"), "{e}");
    for s in ["", "gups:x", "gups:=3"] {
        assert!(!open(s, 0).err().unwrap().to_string().contains('\n'));
    }
}

#[test]
fn describe_resolves_defaults_and_seed() {
    let d = describe("gups:footprint=1G", 42).unwrap();
    assert_eq!(d.name, "gups");
    let get = |k: &str| d.params.iter().find(|p| p.0 == k).unwrap().1.clone();
    assert_eq!(get("footprint"), "1G");
    assert_eq!(get("seed"), "42");
    assert_eq!(get("updates"), "16M");
    let d2 = describe("gups:seed=7", 42).unwrap();
    assert!(d2.params.contains(&("seed".into(), "7".into())));
    // The spec string round-trips.
    assert_eq!(describe(&d.spec(), 0).unwrap(), d);
}

#[test]
fn seeds_change_streams_and_repeat_exactly() {
    let a = drain(&mut *open("random:footprint=1G,reads=50000", 1).unwrap().1, 0);
    let b = drain(&mut *open("random:footprint=1G,reads=50000", 1).unwrap().1, 0);
    let c = drain(&mut *open("random:footprint=1G,reads=50000", 2).unwrap().1, 0);
    assert_eq!(a.len(), 50000);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn limit_stops_exactly_and_regions_are_declared() {
    let (_, mut s) = open("stream:n=1M,limit=100001", 0).unwrap();
    assert_eq!(drain(&mut *s, 0).len(), 100001);
    let r = s.regions();
    assert_eq!(r.len(), 3);
    assert_eq!(r[0].start, 0x7f00_0000_0000);
}

#[test]
fn uneven_consumption_of_streams_does_not_deadlock() {
    // Read stream 1 to the end before touching stream 0: the producer must keep going.
    let (_, mut s) = open("bfs:scale=14,threads=2", 3).unwrap();
    let one = drain(&mut *s, 1);
    let zero = drain(&mut *s, 0);
    assert!(one.len() > 100_000 && zero.len() > 100_000);
    let (_, mut s) = open("random:footprint=1G,reads=2M,threads=3", 3).unwrap();
    let two = drain(&mut *s, 2);
    assert_eq!(two.len() as u64, 2_097_152 - 2 * 2_097_152 / 3);
}

#[test]
fn dropping_a_source_stops_its_kernel_promptly() {
    let (_, mut s) = open("gups", 0).unwrap();
    let mut b = Vec::with_capacity(1000);
    s.next_batch(0, &mut b).unwrap();
    assert_eq!(b.len(), 1000);
    let t = Instant::now();
    drop(s);
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    // Also during input construction (a big graph).
    let (_, s) = open("bfs:scale=24", 0).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let t = Instant::now();
    drop(s);
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

#[test]
fn out_of_range_stream_is_an_error_not_a_panic() {
    let (_, mut s) = open("chase:footprint=1M,loads=10", 0).unwrap();
    let mut b = Vec::with_capacity(16);
    assert!(s.next_batch(5, &mut b).is_err());
}

#[test]
fn native_run_counts_the_same_references() {
    let spec = "hashjoin:build=50000,probe=100000";
    let n = run_native(spec, 9).unwrap();
    let (_, mut s) = open(spec, 9).unwrap();
    assert_eq!(drain(&mut *s, 0).len() as u64, n.refs);
    let m = run_native(spec, 9).unwrap();
    assert_eq!(n.checksum, m.checksum);
    assert!(n.seconds > 0.0);
    assert!(run_native("nope", 0).is_err());
}

#[test]
fn every_kernel_runs_small_and_stays_in_its_regions() {
    let small = [
        "gups:footprint=16M,updates=64K,threads=2",
        "random:footprint=16M,reads=64K",
        "chase:footprint=4M,loads=64K",
        "stream:n=64K",
        "bfs:scale=11",
        "pagerank:scale=11,graph=uniform",
        "sssp:scale=11",
        "bc:scale=11",
        "cc:scale=11",
        "hashjoin:build=16K,probe=32K",
        "xsbench:isotopes=40,gridpoints=200,lookups=2K",
        "kvstore:keys=64K,ops=64K,index=btree",
        "canneal:elements=10K,swaps=1K,steps=4",
        "btree:n=64K,lookups=8K",
        "liblinear:instances=4K,epochs=1,threads=2",
    ];
    for spec in small {
        let (_, mut s) = open(spec, 1).unwrap();
        let regions = s.regions();
        let mut total = 0;
        let mut instrs = 0u64;
        for st in 0..s.streams() {
            for r in drain(&mut *s, st) {
                assert!(regions.iter().any(|g| r.va >= g.start && r.va < g.end()), "{spec}: {:#x}", r.va);
                total += 1;
                instrs += r.inst_delta as u64;
            }
        }
        assert!(total > 1000, "{spec}: {total}");
        let ipr = instrs as f64 / total as f64;
        assert!((0.5..40.0).contains(&ipr), "{spec}: {ipr} instructions per reference");
    }
}

#[test]
fn docs_workloads_md_has_the_catalog() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/workloads.md")).unwrap_or_default();
    assert!(
        doc.contains(&xlat_workloads::catalog_markdown()),
        "docs/workloads.md's parameter tables are not the catalog: regenerate them with\n    cargo run --release -p xlat-workloads --example catalog"
    );
}
