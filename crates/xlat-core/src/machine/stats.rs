//! The names of a machine's statistics: each side's counters under the glossary's names,
//! per core (`coreN.`) and summed, with the ratios derived from them (see
//! [`crate::Machine::stats`] and `docs/statistics.md`).

use crate::memory::cache::emit_cache;
use crate::memory::hierarchy::TlbLineCounters;
use crate::memory::repl::LineKind;
use crate::memory::MemorySide;
use crate::os::kernel::emit_os;
use crate::os::{Kernel, Os};
use crate::stats::{derived_virt, CoreCounters, Stats, VirtCounters};
use crate::translate::mmu::{add_tlbs, derived, emit_tlbs};
use crate::translate::tlb::TlbStats;
use crate::translate::Translator;

/// The statistics of a machine's two sides (see [`Machine::stats`]).
pub(super) fn stats_of(xl: &Translator, kernel: &Kernel, mem: &MemorySide) -> Stats {
    {
        let mut s = Stats::default();
        let virt = xl.virt;
        let multi = xl.mmus.len() > 1;
        let mut sum = CoreCounters::default();
        let mut vsum = VirtCounters::default();
        let mut tsum = [TlbStats::default(); crate::translate::mmu::TLB_LEVELS];
        let (mut instr, mut cycles, mut rob_stalls, mut sb_stalls, mut lq_stalls) = (0u64, 0u64, 0u64, 0u64, 0u64);
        let mut caches = [[0u64; 9]; 3]; // l1i, l1d, l2: accesses, misses per kind..., writebacks, prefetches, prefetch hits
        let mut cache_energy = 0.0;
        for (i, (mmu, core)) in xl.mmus.iter().zip(&mem.cores).enumerate() {
            // Each side counts its own events of the glossary; together they are the core's
            // (the memory side's, summed over the core's hardware contexts).
            let mut k = mmu.counters;
            let mut v = mmu.vcounters;
            let (mut core_instr, mut core_cycles) = (0, 0);
            for x in mem.ctxs.iter().enumerate().filter(|&(c, _)| mem.core_of(c) == i).map(|(_, x)| x) {
                k.add(&x.counters);
                v.add(&x.vcounters);
                core_instr += x.instructions();
                core_cycles = core_cycles.max(x.cycles());
                rob_stalls += x.window.rob_stall_cycles;
                lq_stalls += x.window.lq_stall_cycles;
                sb_stalls += x.window.store_buffer_stall_cycles;
            }
            let t = mmu.tlbs.each_ref().map(|l| l.stats);
            sum.add(&k);
            vsum.add(&v);
            add_tlbs(&mut tsum, &t);
            instr += core_instr;
            cycles = cycles.max(core_cycles);
            for (j, cache) in [&core.l1i, &core.l1d, &core.l2].into_iter().enumerate() {
                for kind in 0..3 {
                    caches[j][kind] += cache.counters.accesses[kind];
                    caches[j][3 + kind] += cache.counters.misses[kind];
                }
                caches[j][6] += cache.counters.writebacks;
                caches[j][7] += cache.counters.prefetches;
                caches[j][8] += cache.counters.prefetch_hits;
                cache_energy += (cache.total_accesses() + cache.counters.writebacks) as f64 * cache.energy_nj;
            }
            if multi {
                emit_part(&mut s, &format!("core{i}."), &k, &v, &t, core_instr, core_cycles, xl);
            }
        }
        // A mix: each program's, summed over its cores (its cycles: its slowest core's). Not
        // where programs share cores: the cores' counts are theirs together.
        if kernel.sched.programs.len() > 1 && kernel.sched.places == 1 {
            for (n, cores) in kernel.sched.programs.iter().enumerate() {
                let (mut k, mut v, mut t) = (CoreCounters::default(), VirtCounters::default(), [TlbStats::default(); crate::translate::mmu::TLB_LEVELS]);
                let (mut instr, mut cycles) = (0, 0);
                // (Its contexts' memory-side counts, and the translation side's of its cores,
                // which no other program shares: see `sched::boot`.)
                let mut last_core = usize::MAX;
                for &c in cores {
                    let x = &mem.ctxs[c];
                    k.add(&x.counters);
                    v.add(&x.vcounters);
                    instr += x.instructions();
                    cycles = cycles.max(x.cycles());
                    let core = kernel.contexts[c].core;
                    if core != last_core {
                        let mmu = &xl.mmus[core];
                        k.add(&mmu.counters);
                        v.add(&mmu.vcounters);
                        add_tlbs(&mut t, &mmu.tlbs.each_ref().map(|l| l.stats));
                        last_core = core;
                    }
                }
                emit_part(&mut s, &format!("prog{n}."), &k, &v, &t, instr, cycles, xl);
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
        s.int("cycles", cycles);
        s.ratio("ipc", instr, cycles);
        sum.emit("", &mut s);
        emit_tlbs(&mut s, "", &tsum, &xl.cfg);
        derived(&mut s, "", &sum, &tsum, instr, &xl.cfg);
        if virt {
            vsum.emit("", &mut s);
            derived_virt(&mut s, "", &sum, &vsum);
        }
        if mem.ctxs.len() > xl.mmus.len() {
            emit_contexts(&mut s, mem);
        }
        s.int("rob_stall_cycles", rob_stalls);
        if xl.cfg.core.lq > 0 {
            s.int("lq_stall_cycles", lq_stalls);
        }
        if let Some(h) = xl.helper {
            s.int("ptbaker.touches", xl.helper_touches);
            s.float("ptbaker.passes", if h.pass > 0 { xl.helper_touches as f64 / h.pass as f64 } else { 0.0 });
        }
        s.int("store_buffer_stall_cycles", sb_stalls);
        let tlb_lines = xl.mechs.caches_translations();
        let prefetcher = [crate::param::Prefetcher::None, xl.cfg.cache_l1d_prefetch.prefetcher, xl.cfg.cache_l2_prefetch.prefetcher];
        for (j, name) in ["l1i", "l1d", "l2"].iter().enumerate() {
            let c = &caches[j];
            emit_cache(&mut s, name, [c[0], c[1], c[2]], [c[3], c[4], c[5]], c[6], tlb_lines);
            if prefetcher[j] != crate::param::Prefetcher::None {
                s.int(format!("cache.{name}.prefetches"), c[7]);
                s.int(format!("cache.{name}.prefetch_hits"), c[8]);
                s.ratio(format!("cache.{name}.prefetch_accuracy"), c[8], c[7]);
            }
        }
        let (llc, dram) = (&mem.llc, &mem.dram);
        let l = &llc.counters;
        emit_cache(&mut s, "llc", l.accesses, l.misses, l.writebacks, tlb_lines);
        cache_energy += (llc.total_accesses() + l.writebacks) as f64 * llc.energy_nj;
        s.int("dram.reads", dram.reads);
        s.int("dram.writes", dram.writes);
        s.int("dram.queue_cycles", dram.queue_cycles);
        if xl.cfg.dram.write_batch > 0 && xl.cfg.dram.bandwidth_gbps > 0.0 {
            s.int("dram.drains", dram.drains());
        }
        if let Some([hits, misses, conflicts, wait]) = dram.row_stats() {
            s.int("dram.row_hits", hits);
            s.int("dram.row_misses", misses);
            s.int("dram.row_conflicts", conflicts);
            s.int("dram.bank_wait_cycles", wait);
        }
        let dram_energy = (dram.reads + dram.writes) as f64 * dram.energy_nj;
        s.float("energy_nj.cache", cache_energy);
        s.float("energy_nj.dram", dram_energy);
        s.float("energy_nj.total", cache_energy + dram_energy);
        if tlb_lines {
            emit_tlb_lines(&mut s, mem);
        }
        if xl.cfg.asap.enabled {
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
        if xl.cfg.ech.enabled {
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
            let coalescing = crate::translate::coalesce::group_sizes(&xl.cfg) != 0;
            emit_os(&mut s, "", &[&kernel.os], top, coalescing);
        }
        xl.mechs.emit_stats(&mut s);
        xl.checker.emit(&mut s);
        if xl.cfg.coherence.enabled {
            s.int("coherence.invalidations", mem.ctxs.iter().map(|x| x.coherence_invalidations).sum::<u64>());
        }
        s
    }
}

/// The statistics of part of the machine (a core, a program's cores) under prefix `p`.
#[allow(clippy::too_many_arguments)]
fn emit_part(
    s: &mut Stats,
    p: &str,
    k: &CoreCounters,
    v: &VirtCounters,
    t: &[TlbStats; crate::translate::mmu::TLB_LEVELS],
    instr: u64,
    cycles: u64,
    xl: &Translator,
) {
    k.emit(p, s);
    emit_tlbs(s, p, t, &xl.cfg);
    s.int(format!("{p}instructions"), instr);
    s.int(format!("{p}cycles"), cycles);
    s.ratio(format!("{p}ipc"), instr, cycles);
    derived(s, p, k, t, instr, &xl.cfg);
    if xl.virt {
        v.emit(p, s);
        derived_virt(s, p, k, v);
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

/// SMT: what each hardware context did on the memory side (`ctx<N>.`), which a core's
/// statistics sum over its threads (PT-Baker's helper on the main thread's sibling).
fn emit_contexts(s: &mut Stats, mem: &MemorySide) {
    for (c, x) in mem.ctxs.iter().enumerate() {
        let (p, k) = (format!("ctx{c}."), &x.counters);
        s.int(format!("{p}instructions"), x.instructions());
        s.int(format!("{p}cycles"), x.cycles());
        s.ratio(format!("{p}ipc"), x.instructions(), x.cycles());
        s.int(format!("{p}walk_cycles"), k.walk_cycles);
        // (Every walk the memory side timed is in one bucket of the histogram.)
        let timed = [k.hist_0, k.hist_1, k.hist_2, k.hist_3, k.hist_4, k.hist_5, k.hist_6, k.hist_7, k.hist_8, k.hist_9].iter().sum();
        s.ratio(format!("{p}walk_cycles_per_walk"), k.walk_cycles, timed);
        for (what, v) in [("l1", k.pte_l1), ("l2", k.pte_l2), ("llc", k.pte_llc), ("dram", k.pte_dram)] {
            s.int(format!("{p}pte_served.{what}"), v);
        }
        for (what, v) in [("l1", k.data_l1), ("l2", k.data_l2), ("llc", k.data_llc), ("dram", k.data_dram)] {
            s.int(format!("{p}data_served.{what}"), v);
        }
    }
}

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
