//! The coalescing paper's §3.1 microbenchmark on the model (`xlat_core::microbench`):
//! `cargo run --release -p xlat-core --example microbench -- TRACE [--mb N] [--op K]
//! [--local K] [--global K] [--trace K] [--protect] [--mincore] [key=value...]`.
//!
//! The region (8 MB by default, 2 MB-aligned) is populated from FreeBSD reservations without
//! promotion, clean and not accessed (the paper's setup after its `madvise`), optionally
//! write-protected; coalescing is 16 KB (Zen 3) unless `tlb.coalescing=...` says otherwise,
//! and the subregion is the coalescing group. Prints the L1 DTLB miss counters after every
//! word, as the paper's four (plus 2 MB and 1 GB), and with `--mincore` each page's state.
//! Example: `cargo run --release -p xlat-core --example microbench -- 'r0: r1: r2: r3'`.
use xlat_core::arch::addr::VirtAddr;
use xlat_core::microbench::{mincore, run, Region as Sub, Repeats, Trace};
use xlat_core::{Config, Machine, Region};

const BASE: u64 = 0x7f00_0000_0000;

fn main() {
    if let Err(e) = real_main() {
        eprintln!("microbench: {e}");
        std::process::exit(2);
    }
}

fn real_main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let text = args.next().ok_or("usage: microbench TRACE [--mb N] [--op K] [--local K] [--global K] [--trace K] [--protect] [--mincore] [key=value...]")?;
    let (mut mb, mut rep, mut protect, mut show) = (8u64, Repeats::default(), false, false);
    let mut pairs =
        vec![("os.page_policy".to_string(), "freebsd".to_string()), ("os.reservation_promote".into(), "false".into()), ("tlb.coalescing".into(), "16k".into())];
    while let Some(a) = args.next() {
        let mut num = |name: &str| -> Result<u64, String> {
            let v = args.next().ok_or(format!("{name} needs a number"))?;
            v.parse::<u64>().ok().filter(|&n| n > 0).ok_or(format!("{name} {v}: not a positive number"))
        };
        match a.as_str() {
            "--mb" => mb = num("--mb")?,
            "--op" => rep.op = num("--op")? as u32,
            "--local" => rep.local = num("--local")? as u32,
            "--global" => rep.global = num("--global")? as u32,
            "--trace" => rep.trace = num("--trace")? as u32,
            "--protect" => protect = true,
            "--mincore" => show = true,
            kv => {
                let (k, v) = kv.split_once('=').ok_or(format!("'{kv}' is neither an option nor key=value"))?;
                pairs.push((k.to_string(), v.to_string()));
            }
        }
    }
    let cfg = Config::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))).map_err(|e| e.to_string())?;
    let group = 1u64 << xlat_core::translate::coalesce::group_shift(cfg.coalescing("l1d")).max(2);
    let trace = Trace::parse(&text, group as u32).map_err(|e| e.to_string())?;
    let pages = mb * 256;
    let mut m = Machine::new(&cfg, 1, vec![Region { name: "region".into(), start: BASE, len: pages * 4096, file: None }], 1).map_err(|e| e.to_string())?;
    m.prefault().map_err(|e| e.to_string())?;
    if protect {
        for p in 0..pages {
            m.protect(0, 0, VirtAddr(BASE + p * 4096), false).map_err(|e| e.to_string())?;
        }
    }
    let r = Sub { base: BASE, pages, group };
    println!("{pages} pages, {} subregions of {group}; L1 DTLB misses by L2 hit/miss and entry size", pages / group);
    for s in run(&mut m, r, &trace, rep).map_err(|e| e.to_string())? {
        let f = |c: [u64; 4]| format!("4k {} coalesced {} 2m {} 1g {}", c[0], c[3], c[1], c[2]);
        println!("word {}: l2_hit {} | l2_miss {}", s.word + 1, f(s.l2_hit), f(s.l2_miss));
    }
    if show {
        for (p, st) in mincore(&m, r).iter().enumerate() {
            let flag = |b: bool, c: char| if b { c } else { '-' };
            println!("page {p}: {}{}{}", flag(st.valid, 'v'), flag(st.accessed, 'a'), flag(st.modified, 'm'));
        }
    }
    Ok(())
}
