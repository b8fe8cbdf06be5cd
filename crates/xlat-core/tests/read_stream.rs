//! A read stream through the MSHRs and the DRAM channel: independent 8-byte loads at a 64-byte
//! stride (a new line each), one every third instruction, 4 KB pages, so the 64 loads of a page
//! wait for its walk and then miss together. The 16 MSHRs bound how many misses are in flight,
//! and so how much of the channel the stream can use: here about a quarter of it. A miss goes
//! below the L1D only once it has an MSHR, so the channel sees the misses as the MSHRs let them
//! through and they wait (almost) nothing for it; and a walk's read at the L1D waits for the
//! next MSHR to free, not behind the loads queued for one, so a walk costs about its own reads.
//! (With misses booked on the channel from when they were asked for, each read here waited 28
//! cycles, 7.5 slots, for the channel; with walk reads queued behind the loads for an MSHR, the
//! walks took 7.1 times what their reads cost alone.)

use xlat_core::{Config, Ref, Stats};

mod common;
use common::{region, run, BASE};

const FOOTPRINT: u64 = 32 << 20;

fn stream() -> Vec<Ref> {
    (0..FOOTPRINT / 64).map(|i| Ref::load(BASE + 64 * i, 3)).collect()
}

fn machine(pairs: &[(&str, &str)]) -> Config {
    let base = [
        ("core.freq_ghz", "4"),
        ("core.width", "4"),
        ("core.rob", "352"),
        ("core.mshrs", "16"),
        ("core.walkers", "8"),
        ("walker.port", "l1d"),
        ("dram.banks", "0"),
        ("dram.latency_ns", "50"),
        // 16 misses of about 235 cycles in flight at 4 GHz carry about 17 GB/s: a quarter.
        ("dram.bandwidth_gbps", "70"),
    ];
    Config::from_pairs(base.iter().chain(pairs).copied()).unwrap()
}

fn u(s: &Stats, name: &str) -> u64 {
    s.f(name) as u64
}

#[test]
fn a_read_stream_at_a_quarter_of_the_channel_waits_almost_nothing_for_it() {
    let cfg = machine(&[]);
    let s = run(&cfg, stream(), region(FOOTPRINT), true);
    let reads = u(&s, "dram.reads");
    assert!(reads >= FOOTPRINT / 64, "every line misses to DRAM: {reads}");
    // The channel's share the stream used, from its cycles: about a quarter.
    let gbps = reads as f64 * 64.0 / (u(&s, "cycles") as f64 / cfg.core.freq_ghz);
    assert!((0.15..0.35).contains(&(gbps / cfg.dram.bandwidth_gbps)), "the stream uses {gbps:.1} GB/s of {}", cfg.dram.bandwidth_gbps);
    // One slot is 64 B / 70 GB/s = 3.7 cycles: a read waits less than that on average.
    let wait = u(&s, "dram.queue_cycles") as f64 / reads as f64;
    eprintln!("{gbps:.1} GB/s of {}; a read waits {wait:.2} cycles for the channel", cfg.dram.bandwidth_gbps);
    assert!(wait < 3.7, "a DRAM read waits {wait:.1} cycles for the channel");
}

#[test]
fn a_read_streams_walks_cost_about_their_own_reads() {
    let cfg = machine(&[]);
    let s = run(&cfg, stream(), region(FOOTPRINT), true);
    let walks = u(&s, "walks");
    assert!(walks >= FOOTPRINT / 4096 / 2, "a walk a page (or nearly): {walks}");
    // What the walks' reads cost where they were served, each as if alone.
    let llc = cfg.cache_llc.latency;
    let alone = u(&s, "pte_served.l1") * cfg.cache_l1d.latency
        + u(&s, "pte_served.l2") * cfg.cache_l2.latency
        + u(&s, "pte_served.llc") * llc
        + u(&s, "pte_served.dram") * (llc + cfg.dram_latency_cycles());
    let took = u(&s, "walk_cycles");
    eprintln!("{walks} walks took {took} cycles, their reads alone {alone}");
    // A read that misses the L1D waits for the next MSHR to free (16 in flight, one frees every
    // 15 cycles or so) and for its place in the channel: a quarter more is room for both.
    assert!((took as f64) < 1.25 * alone as f64, "walks took {took} cycles, their reads alone {alone}");
    // The same stream with the walker reading at the L2 (no MSHR to wait for) walks no faster.
    let l2 = run(&machine(&[("walker.port", "l2")]), stream(), region(FOOTPRINT), true);
    assert!(u(&l2, "walk_cycles") as f64 > 0.8 * took as f64, "L2 port: {} against {took}", u(&l2, "walk_cycles"));
}
