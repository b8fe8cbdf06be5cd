//! The names of a machine's statistics: each side's counters under the glossary's names,
//! per core (`coreN.`) and summed, with the ratios derived from them (see
//! [`crate::Machine::stats`] and `docs/statistics.md`).

use crate::config::Config;
use crate::memory::cache::derived_cache;
use crate::memory::cache::emit_cache;
use crate::memory::hierarchy::TlbLineCounters;
use crate::memory::repl::LineKind;
use crate::memory::MemorySide;
use crate::os::kernel::emit_os;
use crate::os::{Kernel, Os};
use crate::stats::{derived_virt, emit_virt, CoreCounters, Ints, Snapshot, Stats, VirtCounters, HIDDEN};
use crate::translate::mmu::{add_tlbs, derived as derived_tlbs, emit_tlbs};
use crate::translate::tlb::TlbStats;
use crate::translate::Translator;

/// The statistics of a machine (see [`crate::Machine::stats`]): the integer phase, the
/// snapshot of the end of warm-up (if any) subtracted from its counters, then the derived
/// phase, which computes every float of counters from the integers so subtracted.
pub(super) fn report(cfg: &Config, xl: &Translator, kernel: &Kernel, mem: &MemorySide, warm: Option<&Snapshot>) -> Stats {
    let mut s = ints(cfg, xl, kernel, mem);
    if let Some(w) = warm {
        w.subtract(&mut s);
    }
    let i = Ints::new(&s);
    let d = derived(cfg, &i, xl, kernel, mem);
    s.entries.retain(|(n, _)| !n.starts_with(HIDDEN));
    s.entries.extend(d.entries);
    s
}

/// The integer phase: every integer statistic of the two sides (counters since the machine was
/// built, and levels), under the glossary's names, per core (`coreN.`) and summed; beside them
/// the hidden integers the derived phase needs ([`HIDDEN`]: each context's clock, each core's
/// cache traffic for the energy), and the floats of levels alone (shares of mapped memory and of
/// cache lines, CSALT's weights), which no subtraction changes.
pub(super) fn ints(cfg: &Config, xl: &Translator, kernel: &Kernel, mem: &MemorySide) -> Stats {
    {
        let mut s = Stats::default();
        let virt = xl.virt;
        let multi = xl.mmus.len() > 1;
        let mut sum = CoreCounters::default();
        let mut vsum = VirtCounters::default();
        let mut tsum = [TlbStats::default(); crate::translate::mmu::TLB_LEVELS];
        let (mut instr, mut rob_stalls, mut sb_stalls, mut lq_stalls) = (0u64, 0u64, 0u64, 0u64);
        let mut caches = [[0u64; 9]; 3]; // l1i, l1d, l2: accesses, misses per kind..., writebacks, prefetches, prefetch hits
        for (c, x) in mem.ctxs.iter().enumerate() {
            // (Cycles are a clock: a core's and the machine's are the latest of their
            // contexts', taken after the subtraction, by the derived phase.)
            s.int(format!("{HIDDEN}ctx{c}.cycles"), x.cycles());
        }
        for (i, (mmu, core)) in xl.mmus.iter().zip(&mem.cores).enumerate() {
            // Each side counts its own events of the glossary; together they are the core's
            // (the memory side's, summed over the core's hardware contexts).
            let mut k = mmu.counters;
            let mut v = mmu.vcounters;
            let mut core_instr = 0;
            for x in mem.ctxs.iter().enumerate().filter(|&(c, _)| mem.core_of(c) == i).map(|(_, x)| x) {
                k.add(&x.counters);
                v.add(&x.vcounters);
                core_instr += x.instructions();
                rob_stalls += x.window.rob_stall_cycles;
                lq_stalls += x.window.lq_stall_cycles;
                sb_stalls += x.window.store_buffer_stall_cycles;
            }
            let t = mmu.tlbs.each_ref().map(|l| l.stats);
            sum.add(&k);
            vsum.add(&v);
            add_tlbs(&mut tsum, &t);
            instr += core_instr;
            for (j, cache) in [&core.l1i, &core.l1d, &core.l2].into_iter().enumerate() {
                for kind in 0..3 {
                    caches[j][kind] += cache.counters.accesses[kind];
                    caches[j][3 + kind] += cache.counters.misses[kind];
                }
                caches[j][6] += cache.counters.writebacks;
                caches[j][7] += cache.counters.prefetches;
                caches[j][8] += cache.counters.prefetch_hits;
                s.int(format!("{HIDDEN}core{i}.energy.{j}"), cache.total_accesses() + cache.counters.writebacks);
            }
            if multi {
                emit_part(&mut s, &format!("core{i}."), &k, &v, &t, core_instr, xl);
            }
        }
        // A mix: each program's, summed over its cores (its cycles: its slowest core's). Not
        // where programs share cores: the cores' counts are theirs together.
        if kernel.sched.programs.len() > 1 && kernel.sched.places == 1 {
            for (n, cores) in kernel.sched.programs.iter().enumerate() {
                let (mut k, mut v, mut t) = (CoreCounters::default(), VirtCounters::default(), [TlbStats::default(); crate::translate::mmu::TLB_LEVELS]);
                let mut instr = 0;
                // (Its contexts' memory-side counts, and the translation side's of its cores,
                // which no other program shares: see `sched::boot`.)
                let mut last_core = usize::MAX;
                for &c in cores {
                    let x = &mem.ctxs[c];
                    k.add(&x.counters);
                    v.add(&x.vcounters);
                    instr += x.instructions();
                    let core = kernel.contexts[c].core;
                    if core != last_core {
                        let mmu = &xl.mmus[core];
                        k.add(&mmu.counters);
                        v.add(&mmu.vcounters);
                        add_tlbs(&mut t, &mmu.tlbs.each_ref().map(|l| l.stats));
                        last_core = core;
                    }
                }
                emit_part(&mut s, &format!("prog{n}."), &k, &v, &t, instr, xl);
                if !virt {
                    // (Which huge pages each program holds: the PCC paper's Fig. 9.)
                    let spaces = cores.first().map_or(&[][..], |&c| kernel.sched.spaces_of(c));
                    let (mapped, huge) = spaces.iter().fold((0, 0), |(m, h), &i| (m + kernel.os.spaces[i].mapped_bytes, h + kernel.os.spaces[i].huge_bytes));
                    s.int(format!("prog{n}.mapped_bytes"), mapped);
                    s.ratio(format!("prog{n}.huge_coverage"), huge, mapped);
                }
            }
        }
        s.int("instructions", instr);
        sum.emit("", &mut s);
        emit_tlbs(&mut s, "", &tsum, xl.tlb_shape);
        if virt {
            emit_virt(&mut s, "", &vsum);
        }
        if mem.ctxs.len() > xl.mmus.len() {
            emit_contexts(&mut s, mem);
        }
        s.int("rob_stall_cycles", rob_stalls);
        if cfg.core.lq > 0 {
            s.int("lq_stall_cycles", lq_stalls);
        }
        if xl.helper.is_some() {
            s.int("ptbaker.touches", xl.helper_touches);
        }
        s.int("store_buffer_stall_cycles", sb_stalls);
        let tlb_lines = xl.mechs.caches_translations();
        let prefetcher = [crate::param::Prefetcher::None, cfg.cache_l1d_prefetch.prefetcher, cfg.cache_l2_prefetch.prefetcher];
        for (j, name) in ["l1i", "l1d", "l2"].iter().enumerate() {
            let c = &caches[j];
            emit_cache(&mut s, name, [c[0], c[1], c[2]], [c[3], c[4], c[5]], c[6], tlb_lines);
            if prefetcher[j] != crate::param::Prefetcher::None {
                s.int(format!("cache.{name}.prefetches"), c[7]);
                s.int(format!("cache.{name}.prefetch_hits"), c[8]);
            }
        }
        let (llc, dram) = (&mem.llc, &mem.dram);
        let l = &llc.counters;
        emit_cache(&mut s, "llc", l.accesses, l.misses, l.writebacks, tlb_lines);
        s.int("dram.reads", dram.reads);
        s.int("dram.writes", dram.writes);
        s.int("dram.queue_cycles", dram.queue_cycles);
        if cfg.dram.write_batch > 0 && cfg.dram.bandwidth_gbps > 0.0 {
            s.int("dram.drains", dram.drains());
        }
        if let Some([hits, misses, conflicts, wait]) = dram.row_stats() {
            s.int("dram.row_hits", hits);
            s.int("dram.row_misses", misses);
            s.int("dram.row_conflicts", conflicts);
            s.int("dram.bank_wait_cycles", wait);
        }
        if tlb_lines {
            emit_tlb_lines(&mut s, mem);
        }
        if cfg.asap.enabled {
            let mut a = crate::memory::hierarchy::AsapCounters::default();
            for x in &mem.ctxs {
                a.add(&x.asap);
            }
            a.emit("asap.", &mut s);
        }
        // (A mechanism that asks for TLB prefetches: the memory side counted their walks.)
        if xl.mechs.hooks.tlb_prefetch {
            let mut a = crate::memory::hierarchy::PrefetchWalkCounters::default();
            for x in &mem.ctxs {
                a.add(&x.tlb_prefetch);
            }
            a.emit("tlb.prefetch.", &mut s);
        }
        if cfg.ech.enabled {
            let mut k = crate::stats::EchCounters::default();
            for m in &xl.mmus {
                k.add(&m.ech);
            }
            k.emit("ech.", &mut s);
            let oses: Vec<&Os> = std::iter::once(&kernel.os).chain(kernel.vms.iter().map(|v| &v.os)).collect();
            let spaces = || oses.iter().flat_map(|os| os.pt.ech_spaces());
            s.int("ech.bytes", spaces().map(|e| e.bytes()).sum());
            let st = spaces().map(|e| e.stats()).fold(crate::os::ech::CuckooStats::default(), |a, b| crate::os::ech::CuckooStats {
                resizes: a.resizes + b.resizes,
                kicks: a.kicks + b.kicks,
                scattered_ways: a.scattered_ways + b.scattered_ways,
            });
            s.int("ech.resizes", st.resizes);
            s.int("ech.kicks", st.kicks);
            s.int("ech.scattered_ways", st.scattered_ways);
        }
        emit_csalt(&mut s, mem);
        let (top, host_top) = (xl.walk.top, xl.walk.host_top);
        if virt {
            // Bare names: the guests' (the application's) tables and memory; `host.`: the
            // hypervisor's EPTs and the machine's memory.
            let guests: Vec<&Os> = kernel.vms.iter().map(|v| &v.os).collect();
            emit_os(&mut s, "", &guests, top, false);
            emit_os(&mut s, "host.", &[&kernel.os], host_top, false);
            s.int("virt.guest_pt_host_pte_bytes", guest_pt_host_pte_bytes(kernel));
        } else {
            let coalescing = cfg.coalescing_any();
            emit_os(&mut s, "", &[&kernel.os], top, coalescing);
        }
        xl.mechs.emit_stats(&mut s);
        xl.checker.emit(&mut s);
        if cfg.coherence.enabled {
            s.int("coherence.invalidations", mem.ctxs.iter().map(|x| x.coherence_invalidations).sum::<u64>());
        }
        s
    }
}

/// The derived phase: from the integers `i` of the report (counters since the end of
/// warm-up), the cycles of cores, programs and the machine (the latest of their contexts'
/// clocks), and every float of counters: IPC, MPKI, per-walk figures, miss rates, accuracies,
/// energy.
fn derived(cfg: &Config, i: &Ints, xl: &Translator, kernel: &Kernel, mem: &MemorySide) -> Stats {
    let mut s = Stats::default();
    let ctx_cycles = |c: usize| i.get(&format!("{HIDDEN}ctx{c}.cycles"));
    let part = |s: &mut Stats, p: &str, cycles: u64| {
        s.int(format!("{p}cycles"), cycles);
        s.ratio(format!("{p}ipc"), i.get(&format!("{p}instructions")), cycles);
        derived_tlbs(i, s, p, xl.tlb_shape);
        if xl.virt {
            derived_virt(i, s, p);
        }
    };
    let cores = xl.mmus.len();
    let core_cycles: Vec<u64> = (0..cores).map(|k| (0..mem.ctxs.len()).filter(|&c| mem.core_of(c) == k).map(ctx_cycles).max().unwrap_or(0)).collect();
    if cores > 1 {
        for (k, &cycles) in core_cycles.iter().enumerate() {
            part(&mut s, &format!("core{k}."), cycles);
        }
    }
    if kernel.sched.programs.len() > 1 && kernel.sched.places == 1 {
        for (n, ctxs) in kernel.sched.programs.iter().enumerate() {
            part(&mut s, &format!("prog{n}."), ctxs.iter().map(|&c| ctx_cycles(c)).max().unwrap_or(0));
        }
    }
    part(&mut s, "", core_cycles.iter().copied().max().unwrap_or(0));
    if mem.ctxs.len() > cores {
        for c in 0..mem.ctxs.len() {
            let p = format!("ctx{c}.");
            s.int(format!("{p}cycles"), ctx_cycles(c));
            s.ratio(format!("{p}ipc"), i.get(&format!("{p}instructions")), ctx_cycles(c));
            s.ratio(format!("{p}walk_cycles_per_walk"), i.get(&format!("{p}walk_cycles")), i.get(&format!("{HIDDEN}{p}timed_walks")));
        }
    }
    if let Some(h) = xl.helper {
        let touches = i.get("ptbaker.touches");
        s.float("ptbaker.passes", if h.pass > 0 { touches as f64 / h.pass as f64 } else { 0.0 });
    }
    let tlb_lines = xl.mechs.caches_translations();
    let prefetcher = [crate::param::Prefetcher::None, cfg.cache_l1d_prefetch.prefetcher, cfg.cache_l2_prefetch.prefetcher];
    for (j, name) in ["l1i", "l1d", "l2"].iter().enumerate() {
        derived_cache(i, &mut s, name, tlb_lines);
        if prefetcher[j] != crate::param::Prefetcher::None {
            s.ratio(format!("cache.{name}.prefetch_accuracy"), i.get(&format!("cache.{name}.prefetch_hits")), i.get(&format!("cache.{name}.prefetches")));
        }
    }
    derived_cache(i, &mut s, "llc", tlb_lines);
    // (Summed in the order of the caches, each core's with its own cost per access.)
    let mut cache_energy = 0.0;
    for (k, core) in mem.cores.iter().enumerate() {
        for (j, cache) in [&core.l1i, &core.l1d, &core.l2].into_iter().enumerate() {
            cache_energy += i.get(&format!("{HIDDEN}core{k}.energy.{j}")) as f64 * cache.energy_nj;
        }
    }
    cache_energy += (i.get("cache.llc.accesses") + i.get("cache.llc.writebacks")) as f64 * mem.llc.energy_nj;
    let dram_energy = (i.get("dram.reads") + i.get("dram.writes")) as f64 * mem.dram.energy_nj;
    s.float("energy_nj.cache", cache_energy);
    s.float("energy_nj.dram", dram_energy);
    s.float("energy_nj.total", cache_energy + dram_energy);
    xl.mechs.derive_stats(i, &mut s);
    s
}

/// The glossary's entries of the statistics [`ints`], [`derived`] and [`emit_part`] emit themselves: the
/// machine's instructions, cycles and stalls, DRAM and energy, PT-Baker's helper.
pub(crate) const STATS: &[crate::glossary::Entry] = {
    use crate::glossary::{e, Kind::*, Section::*};
    &[
        e(Core, "[core<N>.]instructions", Counter, "instructions",
            "Instructions dispatched by the timing window: the sum of the references' instruction deltas (`inst_delta`). Bare: summed over cores."),
        e(Core, "[core<N>.]cycles", Counter, "cycles",
            "Cycles to run everything dispatched to retirement (the core's clock, or its last retirement if later). Bare: the slowest core's (the maximum, not a sum)."),
        e(Core, "[core<N>.]ipc", Ratio, "instructions/cycle",
            "`instructions` / `cycles`. Bare: all cores' instructions over the slowest core's cycles. Compare with `tlb.perfect=true` for what translation costs."),
        e(Core, "rob_stall_cycles", Counter, "cycles",
            "Cycles dispatch waited for the reorder buffer (`core.rob` entries) to free an entry, summed over cores (there is no per-core form)."),
        e(Core, "lq_stall_cycles", Counter, "cycles",
            "Cycles dispatch waited for a load-queue entry (`core.lq` entries, each held from a load's dispatch until its data arrives), beyond what it waited for the reorder buffer; summed over cores (there is no per-core form).").only("`core.lq` > 0"),
        e(Core, "store_buffer_stall_cycles", Counter, "cycles",
            "Cycles retirement waited for a store-buffer entry (`core.store_buffer` entries, freed as stores commit in order once their lines are there), beyond what it waited for older instructions anyway; summed over cores (there is no per-core form)."),
        e(Dram, "dram.reads", Counter, "lines", "Lines read from DRAM: the LLC's demand misses (data and PTE reads)."),
        e(Dram, "dram.writes", Counter, "lines",
            "Dirty lines written to DRAM: dirty LLC victims, and with `cache.llc.inclusive=true` dirty private copies back-invalidated with them."),
        e(Dram, "dram.queue_cycles", Counter, "cycles",
            "With `dram.bandwidth_gbps` > 0: cycles requests (reads, and write-backs unless they drain in batches) waited for the channel, summed; 0 with unlimited bandwidth. Only reads' waits delay anything."),
        e(Dram, "dram.drains", Counter, "drains",
            "Write drains: batches of `dram.write_batch` write-backs that took the channel, with two turnarounds of `dram.turnaround_ns`, while reads waited.")
            .only("`dram.write_batch` > 0 and `dram.bandwidth_gbps` > 0"),
        e(Dram, "dram.row_hits", Counter, "accesses", "Accesses (reads and write-backs) that found their row open in their bank: tCAS.").only("`dram.banks` > 0"),
        e(Dram, "dram.row_misses", Counter, "accesses", "Accesses to a bank with no row open (its first): tRCD + tCAS.").only("`dram.banks` > 0"),
        e(Dram, "dram.row_conflicts", Counter, "accesses", "Accesses that found another row open in their bank: tRP + tRCD + tCAS.").only("`dram.banks` > 0"),
        e(Dram, "dram.bank_wait_cycles", Counter, "cycles", "Cycles reads waited for their bank to finish earlier reads or a refresh, summed (write-backs yield to reads: they wait in the write queue and delay no one).").only("`dram.banks` > 0"),
        e(Energy, "energy_nj.cache", Float, "nJ", "Every cache's (lookups + write-backs received) x its `cache.<cache>.energy_nj`, summed."),
        e(Energy, "energy_nj.dram", Float, "nJ", "(`dram.reads` + `dram.writes`) x `dram.energy_nj`."),
        e(Energy, "energy_nj.total", Float, "nJ", "`energy_nj.cache` + `energy_nj.dram`."),
        e(Mechanisms, "ptbaker.touches", Counter, "touches",
            "Touches of PT-Baker's helper thread: its loads or prefetches (`ptbaker.mode=user`, `user-prefetch`) or its software walks (`kernel`: read-ptes calls, which read `os.pte_reads` lines), after warm-up.")
        .only("`ptbaker.mode` other than `off`"),
        e(Mechanisms, "ptbaker.passes", Float, "passes",
            "`ptbaker.touches` over the touches of one pass over the helper's regions: passes it made, the last one partial (0 with `ptbaker.ahead`, which follows a thread instead).")
        .only("`ptbaker.mode` other than `off`"),
    ]
};

/// The same for the caches' prefetchers and coherence (beside each cache's own, [`emit_cache`]).
pub(crate) const CACHE_STATS: &[crate::glossary::Entry] = {
    use crate::glossary::{e, Kind::*, Section::*};
    &[
        e(Caches, "cache.<pfcache>.prefetches", Counter, "lines",
            "Lines the cache's data prefetcher brought in (lines already there are not fetched again). Prefetches are not demand `accesses`; from DRAM they count in `dram.reads`.")
            .only("`cache.<pfcache>.prefetcher` other than `none`"),
        e(Caches, "cache.<pfcache>.prefetch_hits", Counter, "lines",
            "Prefetched lines a demand access then hit (each line's first hit; a hit on a prefetch still in flight waits for it and counts).")
            .only("`cache.<pfcache>.prefetcher` other than `none`"),
        e(Caches, "cache.<pfcache>.prefetch_accuracy", Ratio, "fraction", "`prefetch_hits` / `prefetches`.")
            .only("`cache.<pfcache>.prefetcher` other than `none`"),
        e(Caches, "coherence.invalidations", Counter, "copies",
            "Copies of lines in other cores' L1s and L2s that stores invalidated (a store takes its line exclusively; it waits for the directory's round trip when there were copies).").only("`coherence.enabled=true`"),
    ]
};

/// The same for the programs of a mix (beside the OS's, [`emit_os`]).
pub(crate) const PROGRAM_STATS: &[crate::glossary::Entry] = {
    use crate::glossary::{e, Kind::*, Section::*};
    &[
        e(Os, "prog<N>.mapped_bytes", Level, "bytes", "A mix's program: bytes its address spaces map at the end of the run.").only("a native `--mix`"),
        e(Os, "prog<N>.huge_coverage", Ratio, "fraction", "A mix's program: share of its `mapped_bytes` mapped by 2 MB or 1 GB pages at the end of the run (how a promotion daemon shared the huge pages between programs).").only("a native `--mix`"),
    ]
};

/// The same for virtual machines (beside the VMs' counters, [`VirtCounters`]).
pub(crate) const VIRT_STATS: &[crate::glossary::Entry] = {
    use crate::glossary::{e, Kind::*, Section::*};
    &[
        e(Vms, "virt.guest_pt_host_pte_bytes", Level, "bytes", "Bytes of host (EPT) leaf entries mapping the guests' page tables at the end of the run: 8 per host page that holds a guest page-table node (the flattening paper's 22 KB of host PTEs for graph500's 11 MB guest table).").only("`virt.enabled=true`"),
    ]
};

/// The same for ECH's hashed tables (beside its walks' counters, [`crate::stats::EchCounters`]).
pub(crate) const ECH_STATS: &[crate::glossary::Entry] = {
    use crate::glossary::{e, Kind::*, Section::*};
    &[
        e(Mechanisms, "ech.bytes", Level, "bytes", "ECH: simulated memory of every address space's hashed tables and cuckoo walk tables at the end of the run (both tables of one that is growing), besides the OS's own radix tree (`pt_bytes`).").only("`ech.enabled=true`"),
        e(Mechanisms, "ech.resizes", Level, "tables", "ECH: hashed tables grown (elastic resizing: `ech.growth` times larger once fuller than `ech.load_factor`), since the tables were created.").only("`ech.enabled=true`"),
        e(Mechanisms, "ech.kicks", Level, "keys", "ECH: entries displaced by cuckoo insertions, since the tables were created.").only("`ech.enabled=true`"),
        e(Mechanisms, "ech.scattered_ways", Level, "ways", "ECH: table ways that found no free contiguous block and were placed in single frames (ECH needs large contiguous allocations: the flattening paper's objection to it).").only("`ech.enabled=true`"),
    ]
};

/// The integer statistics of part of the machine (a core, a program's cores) under prefix `p`
/// (its cycles and ratios are derived: see [`derived`]).
fn emit_part(s: &mut Stats, p: &str, k: &CoreCounters, v: &VirtCounters, t: &[TlbStats; crate::translate::mmu::TLB_LEVELS], instr: u64, xl: &Translator) {
    k.emit(p, s);
    emit_tlbs(s, p, t, xl.tlb_shape);
    s.int(format!("{p}instructions"), instr);
    if xl.virt {
        emit_virt(s, p, v);
    }
}

/// CSALT's partitions (data ways now, summed over the cores' L2s), its epochs and the
/// weights of its last choice, for each cache it partitions.
fn emit_csalt(s: &mut Stats, mem: &MemorySide) {
    let l2: Vec<&crate::memory::repl::csalt::Csalt> = mem.cores.iter().filter_map(|c| c.l2.csalt()).collect();
    for (name, parts) in [("l2", l2), ("llc", mem.llc.csalt().into_iter().collect())] {
        if parts.is_empty() {
            continue;
        }
        let n = parts.len() as f64;
        let p = format!("csalt.{name}.");
        // (An integer, summed over the cores' L2s, so that `--interval` series carry it.)
        s.int(format!("{p}data_ways"), parts.iter().map(|c| c.data_ways as u64).sum());
        s.int(format!("{p}epochs"), parts.iter().map(|c| c.epochs).sum());
        s.int(format!("{p}changes"), parts.iter().map(|c| c.changes).sum());
        s.float(format!("{p}s_dat"), parts.iter().map(|c| c.weights.0).sum::<f64>() / n);
        s.float(format!("{p}s_tr"), parts.iter().map(|c| c.weights.1).sum::<f64>() / n);
    }
}

/// The glossary's entries of what [`emit_csalt`] emits.
pub(crate) const CSALT_STATS: &[crate::glossary::Entry] = {
    use crate::glossary::{e, Kind::*, Section::*};
    &[
        e(Mechanisms, "csalt.<pcache>.data_ways", Level, "ways", "CSALT's partition now: ways data lines may fill (page-table lines count as data), the rest for POM-TLB lines; for `l2`, summed over the cores' L2s (divide by the cores for the mean). A level, not a count: an `--interval` series holds its change per interval.").only("`cache.<pcache>.policy` = `csalt-d` or `csalt-cd`"),
        e(Mechanisms, "csalt.<pcache>.epochs", Counter, "epochs", "Epochs ended (every `csalt.epoch` demand accesses to the cache), each a repartitioning.").only("`cache.<pcache>.policy` = `csalt-d` or `csalt-cd`"),
        e(Mechanisms, "csalt.<pcache>.changes", Counter, "epochs", "Epochs whose repartitioning changed the number of data ways.").only("`cache.<pcache>.policy` = `csalt-d` or `csalt-cd`"),
        e(Mechanisms, "csalt.<pcache>.s_dat", Float, "factor", "The data weight S_Dat of the last repartitioning (CSALT-CD, Eqs. 5.6-5.8 for L2, their analogue for the LLC; 1 for CSALT-D); for `l2`, the mean over the cores.").only("`cache.<pcache>.policy` = `csalt-d` or `csalt-cd`"),
        e(Mechanisms, "csalt.<pcache>.s_tr", Float, "factor", "The TLB-entry weight S_Tr of the last repartitioning (CSALT-CD, Eqs. 5.3-5.5 for L2; 1 for CSALT-D).").only("`cache.<pcache>.policy` = `csalt-d` or `csalt-cd`"),
    ]
};

/// The memory side's statistics of an L3 TLB in memory: where its lines were served, the
/// die-stacked DRAM's traffic, and the share of each cache its lines occupy now.
fn emit_tlb_lines(s: &mut Stats, mem: &MemorySide) {
    let mut k = TlbLineCounters::default();
    let (mut tlb, mut lines) = (0, 0);
    for x in &mem.ctxs {
        k.add(&x.tlb_lines);
    }
    for core in &mem.cores {
        tlb += core.l2.lines_by_kind()[LineKind::TlbEntry as usize];
        lines += core.l2.lines();
    }
    k.emit("pomtlb.", s);
    s.int("pomtlb.dram.reads", mem.stacked.reads);
    s.int("pomtlb.dram.writes", mem.stacked.writes);
    s.int("pomtlb.dram.queue_cycles", mem.stacked.queue_cycles);
    let llc_tlb = mem.llc.lines_by_kind()[LineKind::TlbEntry as usize];
    s.ratio("cache.l2.tlb_lines", tlb, lines);
    s.ratio("cache.llc.tlb_lines", llc_tlb, mem.llc.lines());
    // (Integers too, so that `--interval` series carry the occupancy over time.)
    s.int("cache.l2.tlbe.lines", tlb);
    s.int("cache.llc.tlbe.lines", llc_tlb);
}

/// The glossary's entries of what [`emit_tlb_lines`] emits itself (beside [`TlbLineCounters`]).
pub(crate) const TLB_LINE_STATS: &[crate::glossary::Entry] = {
    use crate::glossary::{e, Kind::*, Section::*};
    &[
        e(
            Caches,
            "cache.l2.tlb_lines",
            Ratio,
            "fraction",
            "Share of all cores' L2 lines holding POM-TLB entries at the end of the run (a snapshot; with `--interval`, one per interval).",
        )
        .only("`pomtlb.enabled=true`"),
        e(
            Caches,
            "cache.llc.tlb_lines",
            Ratio,
            "fraction",
            "Share of the LLC's lines holding POM-TLB entries at the end of the run (a snapshot; with `--interval`, one per interval).",
        )
        .only("`pomtlb.enabled=true`"),
        e(
            Caches,
            "cache.l2.tlbe.lines",
            Level,
            "lines",
            "Lines of all cores' L2s holding POM-TLB entries at the end of the run. A level: an `--interval` series holds its change per interval.",
        )
        .only("`pomtlb.enabled=true`"),
        e(
            Caches,
            "cache.llc.tlbe.lines",
            Level,
            "lines",
            "Lines of the LLC holding POM-TLB entries at the end of the run. A level: an `--interval` series holds its change per interval.",
        )
        .only("`pomtlb.enabled=true`"),
        e(Mechanisms, "pomtlb.dram.reads", Counter, "lines", "Reads of the die-stacked DRAM (POM-TLB line misses in the LLC).").only("`pomtlb.enabled=true`"),
        e(Mechanisms, "pomtlb.dram.writes", Counter, "lines", "Write-backs of dirty POM-TLB lines to the die-stacked DRAM.").only("`pomtlb.enabled=true`"),
        e(Mechanisms, "pomtlb.dram.queue_cycles", Counter, "cycles", "Cycles requests waited for the die-stacked DRAM (`pomtlb.bandwidth_gbps` > 0).")
            .only("`pomtlb.enabled=true`"),
    ]
};

/// SMT: what each hardware context did on the memory side (`ctx<N>.`), which a core's
/// statistics sum over its threads (PT-Baker's helper on the main thread's sibling).
fn emit_contexts(s: &mut Stats, mem: &MemorySide) {
    for (c, x) in mem.ctxs.iter().enumerate() {
        let (p, k) = (format!("ctx{c}."), &x.counters);
        s.int(format!("{p}instructions"), x.instructions());
        s.int(format!("{p}walk_cycles"), k.walk_cycles);
        // (Every walk the memory side timed is in one bucket of the histogram.)
        s.int(format!("{HIDDEN}{p}timed_walks"), k.timed_walks());
        for (what, v) in [("l1", k.pte_l1), ("l2", k.pte_l2), ("llc", k.pte_llc), ("dram", k.pte_dram)] {
            s.int(format!("{p}pte_served.{what}"), v);
        }
        for (what, v) in [("l1", k.data_l1), ("l2", k.data_l2), ("llc", k.data_llc), ("dram", k.data_dram)] {
            s.int(format!("{p}data_served.{what}"), v);
        }
    }
}

/// The glossary's entries of what [`emit_contexts`] emits.
pub(crate) const CONTEXT_STATS: &[crate::glossary::Entry] = {
    use crate::glossary::{e, Kind::*, Section::*};
    &[
        e(Core, "ctx<N>.instructions", Counter, "instructions", "Instructions hardware context N dispatched (a core's `instructions` sum its threads').")
            .only("SMT (`system.threads_per_core` > 1)"),
        e(Core, "ctx<N>.cycles", Counter, "cycles", "Hardware context N's clock at the end (its last retirement if later).")
            .only("SMT (`system.threads_per_core` > 1)"),
        e(Core, "ctx<N>.ipc", Ratio, "instructions/cycle", "`ctx<N>.instructions` / `ctx<N>.cycles`.").only("SMT (`system.threads_per_core` > 1)"),
        e(Walks, "ctx<N>.walk_cycles", Counter, "cycles", "`walk_cycles` of hardware context N's walks alone.").only("SMT (`system.threads_per_core` > 1)"),
        e(Walks, "ctx<N>.walk_cycles_per_walk", Ratio, "cycles", "`ctx<N>.walk_cycles` per walk of the context (dirty-bit walks included).")
            .only("SMT (`system.threads_per_core` > 1)"),
        e(
            Served,
            "ctx<N>.pte_served.<where>",
            Counter,
            "PTE reads",
            "`pte_served.<where>` of hardware context N's walks alone (a core's sum its threads': PT-Baker's helper on the sibling walks too).",
        )
        .only("SMT (`system.threads_per_core` > 1)"),
        e(Served, "ctx<N>.data_served.<where>", Counter, "references", "`data_served.<where>` of hardware context N's references alone.")
            .only("SMT (`system.threads_per_core` > 1)"),
    ]
};

/// Bytes of the host (EPT) leaf entries that map the guests' page-table nodes: one 8-byte entry
/// per host page holding any guest node (the flattening paper's §4.1: 22 KB of host PTEs for
/// graph500's 11 MB guest table, with 4 KB host pages).
fn guest_pt_host_pte_bytes(kernel: &Kernel) -> u64 {
    let mut leaves = std::collections::BTreeSet::new();
    let mut nodes = Vec::new();
    for (i, vm) in kernel.vms.iter().enumerate() {
        for sp in &vm.os.spaces {
            nodes.clear();
            vm.os.pt.tree_nodes(sp.root, &mut nodes);
            for &(gpa, bytes) in &nodes {
                for page in (gpa..gpa + bytes).step_by(4096) {
                    if let Some((_, size)) = kernel.os.translate(vm.space, crate::arch::addr::VirtAddr(page)) {
                        leaves.insert((i, page & !(size.bytes() - 1)));
                    }
                }
            }
        }
    }
    leaves.len() as u64 * 8
}
