//! Shootdown protocols (seed 003, §4): IPIs, KVM's paravirtual flush and TCAT, on small
//! machines whose every step is derived by hand in the comments.

use xlat_core::arch::addr::VirtAddr;
use xlat_core::os::OsOp;
use xlat_core::translate::mmu::TlbId;
use xlat_core::{Config, Machine, Ref, RunOptions, Stats, VecSource};

mod common;
use common::{region, BASE};

const MB: u64 = 1 << 20;

fn cfg(pairs: &[(&str, &str)]) -> Config {
    // (Every translation used is checked against the page tables.)
    let mut all = vec![("virt.enabled", "true"), ("virt.guest_mem_gb", "2"), ("phys.size_gb", "8"), ("system.cores", "2"), ("check.translations", "1")];
    all.extend_from_slice(pairs);
    Config::from_pairs(all).unwrap()
}

fn tcat(protocol: &'static str) -> Config {
    cfg(&[
        ("pomtlb.enabled", "true"),
        ("pomtlb.size_mb", "1"),
        ("coherence.enabled", "true"),
        ("shootdown.protocol", protocol),
        ("tlb.set_index", "vpn_xor_vm"),
    ])
}

/// Whether core `c`'s L1D or L2 TLB translates `va` in the context it runs.
fn cached(m: &Machine, c: usize, va: u64) -> bool {
    let ctx = m.kernel.contexts[c].ctx;
    let mmu = &m.xl.mmus[c];
    [TlbId::L1d, TlbId::L2]
        .iter()
        .any(|&id| mmu.tlb(id).entries().iter().any(|(k, _)| k.ctx == ctx && k.vpn() == va >> 12 && k.size() == xlat_core::arch::addr::PageSize::Size4K))
}

/// The walk-through of Fig. 5.4. T1 is in the TLBs of CPU0 and CPU1 (both walked it, so
/// both read its POM-TLB line A and are its sharers). A vCPU on CPU0 changes T1 (an mprotect
/// of the page). The VMM rewrites A and flushes it: the directory forwards the invalidation
/// to CPU1 and, by self-snoop, to CPU0, each drops T1, and A leaves every cache. T2, homed
/// in another line and another TLB set, stays; the next use of T1 walks again.
#[test]
fn fig_5_4_walkthrough() {
    let c = tcat("tcat-cotag");
    let mut m = Machine::new(&c, 2, region(16 * MB), 1).unwrap();
    let (t1, t2) = (BASE + 5 * 4096, BASE + 9 * 4096);
    for core in 0..2 {
        for va in [t1, t2] {
            m.step(core, Ref::store(va, 1)).unwrap();
        }
    }
    assert!(cached(&m, 0, t1) && cached(&m, 1, t1) && cached(&m, 1, t2));
    let t = m.xl.mechs.tcat().unwrap();
    let a = t.home(VirtAddr(t1), xlat_core::arch::addr::PageSize::Size4K, m.kernel.contexts[0].ctx);
    assert_eq!(t.sharers(a), 0b11, "both cores filled T1 from its line");
    let before = m.stats();
    m.step(0, Ref::os_call(OsOp::Protect, t1, 1, 1)).unwrap();
    let s = m.stats();
    let d = |k: &str| s.f(k) - before.f(k);
    assert_eq!(d("shootdowns"), 1.0);
    // One 4 KB page changed: one line (the 4 KB array's); two messages (CPU1, and CPU0 by
    // self-snoop); T1 leaves each core's L1D and L2 TLB: four entries.
    assert_eq!((d("tcat.lines"), d("tcat.messages"), d("tcat.invalidations")), (1.0, 2.0, 4.0));
    assert_eq!((d("os.shootdown_ipis"), d("busy_wait_cycles")), (0.0, 0.0), "no interrupts, no busy wait");
    assert!(d("shootdown_cycles") > 0.0, "the initiator paid for the rewrite and the flush");
    assert!(!cached(&m, 0, t1) && !cached(&m, 1, t1));
    assert!(cached(&m, 0, t2) && cached(&m, 1, t2), "T2 lives elsewhere");
    assert_eq!(m.xl.mechs.tcat().unwrap().sharers(a), 0, "the acks cleared the sharers");
    for k in 0..2 {
        assert!(!m.mem.cores[k].l1d.contains(a) && !m.mem.cores[k].l2.contains(a), "A left core {k}'s caches");
    }
    assert!(!m.mem.llc.contains(a), "A left the LLC: the POM-TLB in DRAM holds the cleared entry");
    let walks = s.f("walks");
    m.step(1, Ref::load(t1, 1)).unwrap();
    assert_eq!(m.stats().f("walks"), walks + 1.0, "T1 is walked again (the POM-TLB misses too)");
    assert_eq!(m.xl.mechs.tcat().unwrap().sharers(a), 0b10, "and CPU1 is a sharer again");
}

/// Co-tagless drops the whole private-TLB set of the line (Eq. 5.11-5.12): T3, 128 pages
/// from T1, shares its set in the 128-set L2 TLB and the 16-set L1 TLB (the hash's low bits
/// are the same) and goes too; with co-tags it stays.
#[test]
fn cotagless_drops_the_set_cotag_the_entry() {
    for (protocol, t3_stays) in [("tcat-cotag", true), ("tcat-cotagless", false)] {
        let mut m = Machine::new(&tcat(protocol), 2, region(16 * MB), 1).unwrap();
        let (t1, t3) = (BASE + 5 * 4096, BASE + (5 + 128) * 4096);
        for va in [t1, t3] {
            m.step(1, Ref::load(va, 1)).unwrap();
        }
        m.step(0, Ref::os_call(OsOp::Protect, t1, 1, 1)).unwrap();
        assert!(!cached(&m, 1, t1), "{protocol}");
        assert_eq!(cached(&m, 1, t3), t3_stays, "{protocol}");
    }
}

/// 2:1 overcommit, two cores, four vCPUs (streams 0-3; core 0 runs 0 then 2, core 1 runs 1
/// then 3). vCPU 0 unmaps a page at its first reference: vCPU 1 runs (an IPI), 2 and 3 are
/// preempted. With ipi they take the interrupt when they run, and vCPU 0 busy-waits until
/// then: beyond the IPI's own cycles, more than the rest of a slice. kvm_tlb interrupts
/// vCPU 1 only and asks 2 and 3 to flush when they run.
#[test]
fn kvm_tlb_does_not_wait_for_preempted_vcpus() {
    let run = |protocol: &str| -> (Stats, Config) {
        let c = cfg(&[("virt.vcpus_per_core", "2"), ("virt.vcpu_slice_cycles", "200000"), ("shootdown.protocol", protocol)]);
        let streams: Vec<Vec<Ref>> = (0..4u64)
            .map(|s| {
                let mut v = Vec::new();
                if s == 0 {
                    v.push(Ref::os_call(OsOp::Unmap, BASE + 4 * MB, 1, 1));
                }
                v.extend((0..3000u64).map(|i| Ref::load(BASE + ((i * 37 + s * 1000) % 1024) * 4096, 4)));
                v
            })
            .collect();
        let mut src = VecSource::new(streams, region(16 * MB));
        (xlat_core::simulate(&c, &mut src, RunOptions::default(), true, 1, &mut |_| true).unwrap(), c)
    };
    let (ipi, c) = run("ipi");
    let (kvm, _) = run("kvm_tlb");
    let (ideal, _) = run("ideal");
    let ipi_cycles = (c.shootdown.initiator_cycles - c.shootdown.local_cycles) as f64;
    assert_eq!((ipi.f("shootdowns"), ipi.f("os.shootdown_ipis"), ipi.f("os.deferred_flushes")), (1.0, 3.0, 0.0));
    assert!(ipi.f("busy_wait_cycles") > ipi_cycles + 100_000.0, "ipi waits for the preempted vCPUs: {}", ipi.f("busy_wait_cycles"));
    assert_eq!((kvm.f("shootdowns"), kvm.f("os.shootdown_ipis"), kvm.f("os.deferred_flushes")), (1.0, 1.0, 2.0));
    assert_eq!(kvm.f("busy_wait_cycles"), ipi_cycles, "kvm_tlb waits for the running vCPU only");
    assert!(kvm.f("vcpu_switches") > 0.0);
    assert_eq!((ideal.f("shootdowns"), ideal.f("shootdown_cycles"), ideal.f("os.shootdown_ipis")), (1.0, 0.0, 0.0), "ideal: free");
    assert!(ideal.f("cycles") < kvm.f("cycles") && kvm.f("cycles") < ipi.f("cycles"));
}

/// Each vCPU has its own VPID: a vCPU that follows another on a core does not hit the
/// entries its predecessor filled.
#[test]
fn vcpus_do_not_share_tlb_entries() {
    let c = cfg(&[("system.cores", "1"), ("virt.vcpus_per_core", "2"), ("virt.vcpu_slice_cycles", "1000")]);
    // Both vCPUs touch the same 8 pages over and over: each misses them once per page, in its
    // own entries, whatever the other did.
    let streams: Vec<Vec<Ref>> = (0..2).map(|_| (0..4000u64).map(|i| Ref::load(BASE + (i % 8) * 4096, 4)).collect()).collect();
    let mut src = VecSource::new(streams, region(16 * MB));
    let s = xlat_core::simulate(&c, &mut src, RunOptions::default(), true, 1, &mut |_| true).unwrap();
    assert!(s.f("vcpu_switches") >= 2.0);
    assert_eq!(s.f("tlb.l2.misses"), 16.0, "8 pages x 2 vCPUs");
}

/// The configuration names what TCAT relies on.
#[test]
fn tcat_needs_its_pom_tlb_and_the_shared_index() {
    let err = |pairs: &[(&str, &str)]| Config::from_pairs(pairs.iter().copied()).unwrap_err().to_string();
    assert!(err(&[("shootdown.protocol", "tcat-cotag")]).contains("pomtlb.enabled=true"));
    assert!(err(&[("shootdown.protocol", "tcat-cotag"), ("pomtlb.enabled", "true")]).contains("coherence.enabled=true"));
    let on = [("pomtlb.enabled", "true"), ("coherence.enabled", "true")];
    assert!(err(&[on[0], on[1], ("shootdown.protocol", "tcat-cotagless")]).contains("tlb.set_index=vpn_xor_vm"));
    assert!(err(&[("shootdown.protocol", "kvm_tlb")]).contains("virt.enabled=true"));
    assert!(err(&[("shootdown.protocol", "tcat")]).contains("tcat-cotag"), "the choices are listed");
}

/// The checker catches a stale translation the moment a core uses it: here a guest unmaps a
/// page behind the machine's back (no shootdown), and the next load of it through the TLB
/// fails the run with one line; counting instead, the run goes on.
#[test]
fn the_checker_catches_a_missed_shootdown() {
    for on_stale in ["fail", "count"] {
        let c = cfg(&[("check.on_stale", on_stale)]);
        let mut m = Machine::new(&c, 2, region(16 * MB), 1).unwrap();
        let va = BASE + 7 * 4096;
        m.step(0, Ref::load(va, 1)).unwrap();
        let space = m.kernel.contexts[0].space;
        assert!(m.kernel.vms[0].os.unmap(space, VirtAddr(va)).unwrap());
        m.kernel.vms[0].os.pending.clear();
        let r = m.step(0, Ref::load(va, 1));
        if on_stale == "fail" {
            let e = r.unwrap_err().to_string();
            assert!(e.starts_with("core 0 used a stale translation of 0x7f0000007000") && e.ends_with("no mapping"), "{e}");
        } else {
            r.unwrap();
            assert_eq!(m.stats().f("stale_translation_uses"), 1.0);
        }
    }
}

/// Coherence of the private caches: a store takes its line from the other cores' caches, and
/// waits for the directory's round trip when there were copies; without coherence the copy
/// stays.
#[test]
fn a_store_invalidates_the_other_cores_copies() {
    for on in [true, false] {
        let c = Config::from_pairs([("system.cores", "2"), ("coherence.enabled", if on { "true" } else { "false" })]).unwrap();
        let mut m = Machine::new(&c, 2, region(16 * MB), 1).unwrap();
        let va = BASE + 64;
        m.step(0, Ref::load(va, 1)).unwrap();
        m.step(1, Ref::load(va, 1)).unwrap();
        let line = m.kernel.os.translate(0, VirtAddr(va)).map(|(f, _)| (f.0 << 6) + 1).unwrap();
        assert!(m.mem.cores[0].l1d.contains(line) && m.mem.cores[1].l1d.contains(line));
        m.step(1, Ref::store(va, 1)).unwrap();
        assert_eq!(m.mem.cores[0].l1d.contains(line) || m.mem.cores[0].l2.contains(line), !on, "coherence {on}");
        assert!(m.mem.cores[1].l1d.contains(line));
        if on {
            assert_eq!(m.stats().f("coherence.invalidations"), 2.0, "core 0's L1D and L2 copies");
        }
    }
}

/// Without the xlat_inv filter (`tcat.fill_invalidates=true`), a walk's fill of a POM-TLB line
/// invalidates the line's other sharers: T2, 16384 pages (the 1 MB POM-TLB's sets) from T1,
/// shares T1's line, and core 1's walk of it drops core 0's T1. With the filter, T1 stays.
#[test]
fn fill_writes_invalidate_only_without_the_filter() {
    for fill_invalidates in [false, true] {
        let c = cfg(&[
            ("pomtlb.enabled", "true"),
            ("pomtlb.size_mb", "1"),
            ("coherence.enabled", "true"),
            ("shootdown.protocol", "tcat-cotag"),
            ("tcat.fill_invalidates", if fill_invalidates { "true" } else { "false" }),
        ]);
        let mut m = Machine::new(&c, 2, region(128 * MB), 1).unwrap();
        let (t1, t2) = (BASE + 5 * 4096, BASE + (5 + 16384) * 4096);
        m.step(0, Ref::load(t1, 1)).unwrap();
        m.step(1, Ref::load(t1, 1)).unwrap();
        m.step(1, Ref::load(t2, 1)).unwrap();
        assert_eq!(cached(&m, 0, t1), !fill_invalidates, "fill_invalidates {fill_invalidates}");
        assert!(cached(&m, 1, t2));
        let dropped = m.stats().f("tcat.fill_invalidations");
        assert_eq!(dropped, if fill_invalidates { 2.0 } else { 0.0 }, "T1 in core 0's L1 and L2 TLBs");
    }
}

/// A two-core machine of `c` with `tcat.flush=flush`, where both cores loaded T1 and CPU0's
/// vCPU then migrated T1's page: returns it and T1.
fn migrated(mut c: Config, flush: bool) -> (Machine, u64) {
    c.set("tcat.flush", if flush { "true" } else { "false" }).unwrap();
    let mut m = Machine::new(&c, 2, region(16 * MB), 1).unwrap();
    let t1 = BASE + 5 * 4096;
    for core in 0..2 {
        m.step(core, Ref::load(t1, 1)).unwrap();
    }
    m.step(0, Ref::os_call(OsOp::Migrate, t1, 1, 1)).unwrap();
    (m, t1)
}

/// §5.2.5.1, why the flush is needed. T1 is in both cores' TLBs and in the POM-TLB. CPU0's
/// vCPU migrates T1's page (a new frame) and the VMM rewrites T1's line A, clearing T1, but
/// does not flush it: the cleared line is modified in CPU0's L1D only, which the MMU's path
/// never reads. The directory did reach CPU1, whose T1 goes, so CPU1's next load of T1 misses
/// its TLBs and reads A through its L2 and the LLC: the old copy, T1 still valid. CPU1 fills
/// its TLBs with the old frame and the checker catches the use. With the flush, the same
/// load misses the POM-TLB everywhere and walks to the new frame.
#[test]
fn without_the_flush_a_stale_translation_comes_back() {
    for flush in [true, false] {
        let mut c = tcat("tcat-cotag");
        c.set("check.on_stale", "count").unwrap();
        let (mut m, t1) = migrated(c, flush);
        let ctx = m.kernel.contexts[0].ctx;
        let a = m.xl.mechs.tcat().unwrap().home(VirtAddr(t1), xlat_core::arch::addr::PageSize::Size4K, ctx);
        assert!(!cached(&m, 0, t1) && !cached(&m, 1, t1), "flush {flush}: the directory reached both TLBs");
        assert_eq!(m.mem.cores[0].l1d.is_dirty(a), !flush, "flush {flush}: A is modified in CPU0's L1D only without it");
        assert_eq!(m.mem.llc.contains(a) || m.mem.cores[0].l2.contains(a), !flush, "flush {flush}: old copies stay below it");
        let before = m.stats();
        m.step(1, Ref::load(t1, 1)).unwrap();
        let s = m.stats();
        let d = |k: &str| s.f(k) - before.f(k);
        if flush {
            assert_eq!((d("walks"), d("pomtlb.stale_hits"), s.f("stale_translation_uses")), (1.0, 0.0, 0.0));
        } else {
            assert_eq!((d("walks"), d("pomtlb.stale_hits"), s.f("stale_translation_uses")), (0.0, 1.0, 1.0), "CPU1 used the old frame");
        }
    }
    // Failing on the first stale use, the run stops with one line.
    let (mut m, t1) = migrated(tcat("tcat-cotag"), false);
    let e = m.step(1, Ref::load(t1, 1)).unwrap_err().to_string();
    assert!(e.starts_with("core 1 used a stale translation of 0x7f0000005000"), "{e}");
}

/// The unflushed window ends when CPU0's L1D writes A back (here pushed out by a 64 KB
/// stream, twice the L1D): the write-back reaches the copies the MMU reads, and CPU1 walks.
#[test]
fn the_stale_window_closes_at_the_write_back() {
    let (mut m, t1) = migrated(tcat("tcat-cotag"), false);
    assert_eq!(m.xl.mechs.pomtlb().unwrap().unflushed().len(), 1, "T1's old entry is kept aside");
    for i in 0..1024u64 {
        m.step(0, Ref::load(BASE + 8 * MB + i * 64, 1)).unwrap();
    }
    let before = m.stats();
    m.step(1, Ref::load(t1, 1)).unwrap();
    let s = m.stats();
    assert_eq!((s.f("walks") - before.f("walks"), s.f("pomtlb.stale_hits"), s.f("stale_translation_uses")), (1.0, 0.0, 0.0));
    assert!(m.xl.mechs.pomtlb().unwrap().unflushed().is_empty());
}
