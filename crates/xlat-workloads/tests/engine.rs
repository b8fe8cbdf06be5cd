//! Workloads and traces through the engine, end to end.

use std::io::Write;
use xlat_core::{Config, Machine, RunOptions, Stats};

fn simulate(src: &mut dyn xlat_core::RefSource, prefault: bool) -> Stats {
    xlat_core::simulate(&Config::default(), src, RunOptions::default(), prefault, 1, &mut |_| true).unwrap()
}

/// Recording a kernel and replaying the trace gives exactly the statistics of running the
/// kernel directly (the trace carries the regions too, so prefaulting matches).
#[test]
fn record_then_replay_equals_running_the_kernel() {
    let dir = tempdir();
    for spec in ["gups:footprint=256M,limit=200000", "bfs:scale=12,limit=150000"] {
        let (_, mut direct) = xlat_workloads::open(spec, 3).unwrap();
        let want = simulate(direct.as_mut(), true);
        let path = dir.join("w.xtr");
        let (_, mut src) = xlat_workloads::open(spec, 3).unwrap();
        let n = xlat_workloads::trace::record(src.as_mut(), &path, None).unwrap();
        assert_eq!(n as f64, want.f("refs"));
        let (_, mut replay) = xlat_workloads::open_trace(&[path.to_string_lossy().into_owned()], None).unwrap();
        let got = simulate(replay.as_mut(), true);
        assert_eq!(got, want, "{spec}: replayed trace differs from the kernel");
    }
}

/// A ChampSim trace (64-byte `input_instr` records) runs end to end.
#[test]
fn champsim_trace_runs() {
    let dir = tempdir();
    let path = dir.join("t.champsim");
    let mut f = std::fs::File::create(&path).unwrap();
    for i in 0..5000u64 {
        let mut rec = [0u8; 64];
        rec[0..8].copy_from_slice(&(0x40_0000 + 4 * i).to_le_bytes()); // ip
                                                                       // one source memory operand (offset 32: 2 dest addrs then 4 source addrs)
        let src_addr = 0x7f00_0000_0000u64 + (i * 4096 * 7) % (64 << 20);
        rec[32..40].copy_from_slice(&src_addr.to_le_bytes());
        if i % 3 == 0 {
            rec[16..24].copy_from_slice(&(src_addr + 8).to_le_bytes()); // a store too
        }
        f.write_all(&rec).unwrap();
    }
    drop(f);
    let (_, mut src) = xlat_workloads::open_trace(&[path.to_string_lossy().into_owned()], Some("champsim")).unwrap();
    let s = simulate(src.as_mut(), false);
    assert_eq!(s.f("loads"), 5000.0);
    assert_eq!(s.f("stores"), 1667.0);
    assert!(s.f("walks") > 1000.0 && s.f("faults") > 1000.0);
}

/// A pointer chase in ChampSim records (`mov r1 <- [r1]` over a random cycle of 64 MB, one
/// node per page) is as slow as the `chase` kernel's own references, which mark each load
/// dependent on the previous one: the reader keeps the register dependence. The same records
/// without registers are independent loads, which overlap.
#[test]
fn a_champsim_pointer_chase_serialises_like_the_kernel() {
    let dir = tempdir();
    let nodes = 16384u64;
    // A random cycle: node i's successor.
    let mut order: Vec<u64> = (0..nodes).collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in (1..order.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let base = 0x7f00_0000_0000u64;
    let write = |name: &str, regs: bool| {
        let path = dir.join(name);
        let mut f = std::fs::File::create(&path).unwrap();
        // Two laps: the first maps the pages (traces carry no regions to prefault) and warms up.
        for &n in order.iter().chain(&order) {
            let mut rec = [0u8; 64];
            rec[0..8].copy_from_slice(&0x40_0000u64.to_le_bytes());
            if regs {
                (rec[10], rec[12]) = (1, 1);
            }
            rec[32..40].copy_from_slice(&(base + n * 4096).to_le_bytes());
            f.write_all(&rec).unwrap();
        }
        path.to_string_lossy().into_owned()
    };
    let warm = RunOptions { warmup: nodes, ..RunOptions::default() };
    let run = |src: &mut dyn xlat_core::RefSource| xlat_core::simulate(&Config::default(), src, warm, false, 1, &mut |_| true).unwrap();
    let open = |path: String| xlat_workloads::open_trace(&[path], Some("champsim")).unwrap().1;
    let chased = run(open(write("chase.champsim", true)).as_mut());
    let free = run(open(write("free.champsim", false)).as_mut());
    assert_eq!(chased.f("loads"), nodes as f64);
    assert!(chased.f("cycles") > 5.0 * free.f("cycles"), "chase {} vs independent {} cycles", chased.f("cycles"), free.f("cycles"));
    // The same chase as references that say so themselves.
    let refs: Vec<xlat_core::Ref> =
        order.iter().chain(&order).enumerate().map(|(i, &n)| xlat_core::Ref::new(base + n * 4096, xlat_core::RefKind::Load, 8, 1, i > 0)).collect();
    let kernel = run(&mut xlat_core::VecSource::new(vec![refs], vec![]));
    assert_eq!(chased.f("cycles"), kernel.f("cycles"));
}

/// A ChampSim trace carries no regions; prefaulting it maps the runs of pages it touches (read
/// once beforehand), so the run takes no demand faults. Without, every page faults once.
#[test]
fn a_trace_without_regions_prefaults_the_pages_it_touches() {
    let dir = tempdir();
    let path = dir.join("t.champsim");
    let mut f = std::fs::File::create(&path).unwrap();
    // Two areas 1 GB apart: 300 pages, then 200 pages every other page.
    let vas = (0..300u64).map(|i| 0x7f00_0000_0000 + i * 4096).chain((0..200u64).map(|i| 0x7f40_0000_0000 + i * 8192));
    for va in vas {
        let mut rec = [0u8; 64];
        rec[32..40].copy_from_slice(&va.to_le_bytes());
        f.write_all(&rec).unwrap();
    }
    drop(f);
    let p = vec![path.to_string_lossy().into_owned()];
    let (_, mut src) = xlat_workloads::open_trace_with(&p, Some("champsim"), Some(4096)).unwrap();
    let regions = src.regions();
    assert_eq!(regions.iter().map(|r| (r.start, r.len)).collect::<Vec<_>>(), vec![(0x7f00_0000_0000, 300 * 4096), (0x7f40_0000_0000, 399 * 4096)]);
    let s = simulate(src.as_mut(), true);
    assert_eq!((s.f("loads"), s.f("faults")), (500.0, 0.0));
    // (Opened without, it has nothing to prefault: an error, not a silent no-op.)
    let (_, mut lazy) = xlat_workloads::open_trace(&p, Some("champsim")).unwrap();
    assert_eq!(simulate(lazy.as_mut(), false).f("faults"), 500.0);
}

/// A kernel recorded as a ChampSim trace reads back as the same references (addresses, kinds,
/// instructions) with the same producers where registers can say them: for the pointer chase,
/// all of them, so the replay takes exactly the kernel's cycles.
#[test]
fn a_kernel_recorded_for_champsim_reads_back_the_same() {
    use xlat_workloads::trace::{record_as, Format};
    let dir = tempdir();
    for spec in ["chase:footprint=16M,limit=40000", "bfs:scale=12,limit=40000"] {
        let (_, mut src) = xlat_workloads::open(spec, 3).unwrap();
        let path = dir.join("k.champsim.xz");
        record_as(src.as_mut(), &path, Format::ChampSim, None, "", &std::sync::atomic::AtomicBool::new(false)).unwrap();
        let (_, mut kernel) = xlat_workloads::open(spec, 3).unwrap();
        let (_, mut replay) = xlat_workloads::open_trace(&[path.to_string_lossy().into_owned()], Some("champsim")).unwrap();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for (src, all) in [(kernel.as_mut(), &mut a), (replay.as_mut(), &mut b)] {
            let mut buf = Vec::with_capacity(4096);
            loop {
                src.next_batch(0, &mut buf).unwrap();
                if buf.is_empty() {
                    break;
                }
                all.extend(buf.iter().map(|r| (r.va, r.kind(), r.inst_delta, r.producer())));
            }
        }
        assert_eq!(a.len(), b.len(), "{spec}");
        let same = |f: fn(&(u64, xlat_core::RefKind, u32, u8)) -> u64| a.iter().map(f).eq(b.iter().map(f));
        assert!(same(|r| r.0) && same(|r| r.1 as u64) && same(|r| u64::from(r.2)), "{spec}: addresses, kinds, instructions");
        // (A producer before the first reference is none.)
        let kept = a.iter().zip(&b).filter(|(x, y)| x.3 > 0 && x.3 == y.3).count();
        let dependent = a.iter().enumerate().filter(|(i, x)| x.3 > 0 && usize::from(x.3) <= *i).count();
        assert!(b.iter().zip(&a).all(|(y, x)| y.3 == 0 || y.3 == x.3), "{spec}: no producer invented");
        if spec.starts_with("chase") {
            assert_eq!(kept, dependent, "every hop of the chase keeps its producer");
            let run = |src: &mut dyn xlat_core::RefSource| simulate(src, false).f("cycles");
            let (_, mut k) = xlat_workloads::open(spec, 3).unwrap();
            let (_, mut r) = xlat_workloads::open_trace(&[path.to_string_lossy().into_owned()], Some("champsim")).unwrap();
            assert_eq!(run(k.as_mut()), run(r.as_mut()));
        }
    }
}

/// A valgrind lackey trace runs end to end; `I` lines count as instructions.
#[test]
fn lackey_trace_runs() {
    let dir = tempdir();
    let path = dir.join("t.lackey");
    let mut f = std::fs::File::create(&path).unwrap();
    writeln!(f, "==1== Lackey, an example Valgrind tool").unwrap();
    for i in 0..3000u64 {
        writeln!(f, "I  {:08x},4", 0x40_0000 + 4 * i).unwrap();
        writeln!(f, " L {:012x},8", 0x5000_0000u64 + i * 4096).unwrap();
        if i % 2 == 0 {
            writeln!(f, "I  {:08x},3", 0x41_0000 + 4 * i).unwrap();
            writeln!(f, " M {:012x},8", 0x6000_0000u64 + i * 64).unwrap();
        }
    }
    drop(f);
    let (_, mut src) = xlat_workloads::open_trace(&[path.to_string_lossy().into_owned()], Some("lackey")).unwrap();
    let s = simulate(src.as_mut(), false);
    assert_eq!(s.f("loads"), 3000.0 + 1500.0);
    assert_eq!(s.f("stores"), 1500.0);
    assert_eq!(s.f("instructions"), 4500.0);
    assert!(s.f("faults") >= 3000.0);
}

fn tempdir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("xlat-engine-test-{}-{:?}", std::process::id(), std::thread::current().id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A limited recording of a multi-threaded kernel gives every thread its share.
#[test]
fn limited_recording_keeps_every_stream() {
    let dir = tempdir();
    let path = dir.join("mt.xtr");
    let (_, mut src) = xlat_workloads::open("gups:footprint=64M,threads=2", 1).unwrap();
    let n = xlat_workloads::trace::record(src.as_mut(), &path, Some(5001)).unwrap();
    assert_eq!(n, 5001);
    let paths: Vec<String> = xlat_workloads::trace::stream_paths(&path, 2).iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let (_, mut replay) = xlat_workloads::open_trace(&paths, None).unwrap();
    let mut counts = [0usize; 2];
    let mut b = Vec::with_capacity(1024);
    for (s, c) in counts.iter_mut().enumerate() {
        loop {
            replay.next_batch(s, &mut b).unwrap();
            if b.is_empty() {
                break;
            }
            *c += b.len();
        }
    }
    assert_eq!(counts, [2501, 2500]);
}

/// Eight cores that share one banked DRAM channel (the CSALT thesis's DDR4-2133) and saturate
/// it: their accesses reach the banks out of time order by more than any fixed span, and a
/// core behind must not be pushed forward to the latest arrival (it then fell further behind,
/// and walks took 100,000 cycles and more). A walk costs a few of its reads, each a DRAM
/// access queued behind at most the other cores' misses.
#[test]
fn saturating_cores_on_banked_dram_stay_bounded() {
    let cfg = Config::from_pairs([
        ("system.cores", "8"),
        ("core.freq_ghz", "4"),
        ("dram.banks", "16"),
        ("dram.trp_ns", "13.13"),
        ("dram.trcd_ns", "13.13"),
        ("dram.tcas_ns", "13.13"),
        ("dram.latency_ns", "3.75"),
        ("dram.bandwidth_gbps", "17.064"),
        ("dram.trefi_ns", "7800"),
        ("dram.trfc_ns", "260"),
    ])
    .unwrap();
    // (The PARSEC-size netlist: its threads' first swaps are where the cores fell apart.)
    let (_, mut src) = xlat_workloads::open("canneal:threads=8", 1).unwrap();
    let mut m = Machine::new(&cfg, src.streams(), src.regions(), 1).unwrap();
    m.prefault().unwrap();
    m.run(src.as_mut(), RunOptions { max_refs: Some(5_000), ..RunOptions::default() }, &mut |_| true).unwrap();
    let s = m.stats();
    for c in 0..8 {
        let per_walk = s.f(&format!("core{c}.walk_cycles_per_walk"));
        assert!(per_walk > 0.0 && per_walk < 5_000.0, "core {c}: {per_walk} cycles a walk");
    }
}
