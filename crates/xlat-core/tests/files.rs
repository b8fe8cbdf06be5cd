//! File mappings and the page cache: shared frames, read-around and fault-around with or
//! without the accessed bit, FreeBSD's reservations for files (only whole 2 MB pieces of
//! files over 2 MB), in-phase promotion and the linker's `maxpagesize` pitfall (seed 002
//! §3.3, §3.5, Fig. 1), and Linux's THP leaving file mappings alone (§3.2).

use xlat_core::arch::addr::{PageSize, VirtAddr};
use xlat_core::arch::pte::{PTE_A, PTE_NX, PTE_RW};
use xlat_core::os::Os;
use xlat_core::{Config, FileMap, Ref, RefKind, Region, RunOptions, VecSource};

const MB: u64 = 1 << 20;
/// Where the program's image starts (2 MB-aligned, like a non-PIE executable at 0x400000).
const TEXT: u64 = 0x4000_0000;

fn os(pairs: &[(&str, &str)]) -> Os {
    let mut os = Os::new(&Config::from_pairs(pairs.iter().copied()).unwrap().kernel());
    os.prepare(&[], 1, 1).unwrap();
    os
}

/// A read-only mapping of `len` bytes of the file `path` (`size` bytes) from `offset`.
fn text(path: &str, start: u64, len: u64, offset: u64, size: u64) -> Region {
    Region { name: path.into(), start, len, file: Some(FileMap { offset, size, exec: true, writable: false }) }
}

fn frame(os: &Os, space: usize, va: u64) -> u64 {
    os.translate(space, VirtAddr(va)).expect("mapped").0 .0
}

fn entry(os: &Os, space: usize, va: u64) -> u64 {
    let sp = &os.spaces[space];
    os.pt.translate(sp.root, sp.top, VirtAddr(va)).expect("mapped").entry
}

/// Two processes mapping one file share its frames; unmapping in one leaves the page cached
/// (no frame is freed) and still mapped in the other.
#[test]
fn the_page_cache_is_shared_and_outlives_a_mapping() {
    let mut os = os(&[]);
    let r = text("/bin/prog", TEXT, 64 * 4096, 0, 64 * 4096);
    let a = os.create_space(vec![r.clone()]).unwrap();
    let b = os.create_space(vec![r]).unwrap();
    os.fault(a, VirtAddr(TEXT + 5 * 4096), false).unwrap();
    os.fault(b, VirtAddr(TEXT + 5 * 4096), false).unwrap();
    assert_eq!(frame(&os, a, TEXT + 5 * 4096), frame(&os, b, TEXT + 5 * 4096));
    assert_eq!(os.counters.page_cache_reads, 32, "one read-around cluster, read once");
    let free = os.phys.free_frames() + os.phys.pcp_frames();
    assert!(os.unmap(a, VirtAddr(TEXT + 5 * 4096)).unwrap());
    assert_eq!(os.phys.free_frames() + os.phys.pcp_frames(), free, "the page stays cached");
    assert!(os.translate(b, VirtAddr(TEXT + 5 * 4096)).is_some());
    os.fault(a, VirtAddr(TEXT + 5 * 4096), false).unwrap();
    assert_eq!(frame(&os, a, TEXT + 5 * 4096), frame(&os, b, TEXT + 5 * 4096), "mapped again from the cache");
    assert_eq!(os.counters.page_cache_reads, 32);
}

/// A fault maps the cached pages of its aligned 16-page window (inside the mapping), read
/// only, code without NX; Linux (x86) maps them young, FreeBSD old, and `os.preset_a=on`
/// young under FreeBSD too (§3.8's proposal).
#[test]
fn fault_around_maps_the_window_young_on_linux_and_old_on_freebsd() {
    for (policy, preset, young) in [("never", "auto", true), ("freebsd", "auto", false), ("freebsd", "on", true), ("thp", "off", false)] {
        let mut os = os(&[("os.page_policy", policy), ("os.preset_a", preset)]);
        // The mapping starts 3 pages into a 16-page window: the window is clipped to it.
        let start = TEXT + 3 * 4096;
        let s = os.create_space(vec![text("/bin/prog", start, 100 * 4096, 0, 100 * 4096)]).unwrap();
        os.fault(s, VirtAddr(start + 4 * 4096), false).unwrap();
        assert_eq!(os.counters.fault_around, 12, "{policy}: pages 3..16 of the window but the faulting one");
        assert!(os.translate(s, VirtAddr(start + 13 * 4096)).is_none(), "{policy}: the next window is not mapped");
        let faulting = entry(&os, s, start + 4 * 4096);
        assert_eq!(faulting & (PTE_RW | PTE_NX | PTE_A), 0, "{policy}: read-only code, A left to the walk");
        let neighbour = entry(&os, s, start + 5 * 4096);
        assert_eq!(neighbour & PTE_A != 0, young, "{policy} preset_a={preset}");
    }
}

/// Read-only data carries NX; pages of a mapping past the end of its file are anonymous.
#[test]
fn rodata_is_nx_and_the_tail_past_the_file_is_anonymous() {
    let mut os = os(&[]);
    let mut r = text("/bin/prog", TEXT, 8 * 4096, 0, 2 * 4096 + 100);
    r.file.as_mut().unwrap().exec = false;
    let s = os.create_space(vec![r]).unwrap();
    os.fault(s, VirtAddr(TEXT), false).unwrap();
    assert_ne!(entry(&os, s, TEXT) & PTE_NX, 0);
    assert_eq!(os.counters.page_cache_reads, 3, "the file's three pages");
    os.fault(s, VirtAddr(TEXT + 5 * 4096), true).unwrap();
    assert_ne!(entry(&os, s, TEXT + 5 * 4096) & PTE_RW, 0, "past the file: anonymous memory");
}

/// FreeBSD backs each whole 2 MB piece of a file over 2 MB with a reservation: the file's
/// pages sit at their offsets in an aligned block. A file of 2 MB or less, and the partial
/// last piece, get frames from the allocator.
#[test]
fn freebsd_reserves_whole_pieces_of_large_files_only() {
    let mut os = os(&[("os.page_policy", "freebsd"), ("os.reservation_promote", "false")]);
    let size = 5 * MB;
    let s = os.create_space(vec![text("/bin/big", TEXT, size, 0, size), text("/lib/small", TEXT + 64 * MB, MB, 0, MB)]).unwrap();
    let mut base = [None; 2];
    for page in [0u64, 1, 40, 511, 600, 1000, 1100] {
        if os.translate(s, VirtAddr(TEXT + page * 4096)).is_none() {
            os.fault(s, VirtAddr(TEXT + page * 4096), false).unwrap();
        }
        let f = frame(&os, s, TEXT + page * 4096);
        if page < 1024 {
            assert_eq!(f % 512, page % 512, "page {page} sits at its offset");
            let b = base[page as usize / 512].get_or_insert(f - page % 512);
            assert_eq!(f - page % 512, *b, "page {page}: one block per piece");
        }
    }
    assert_eq!(os.counters.reservations, 2, "pieces 0 and 1; piece 2 (1 MB) is partial");
    os.fault(s, VirtAddr(TEXT + 64 * MB), false).unwrap();
    assert_eq!(os.counters.reservations, 2, "a 1 MB library gets none");
}

/// §3.5, Fig. 1: with the file's pages contiguous and aligned, a mapping whose addresses
/// are in phase with the file offsets (mod 16 KB) is coalescable; one shifted by 4 KB, as
/// `maxpagesize` = 4 KB lays out the code after a shared boundary page, never is.
#[test]
fn the_maxpagesize_phase_shift_kills_coalescing() {
    for (shift, want) in [(0u64, 1.0), (4096, 0.0), (16384, 1.0)] {
        let cfg = Config::from_pairs([
            ("tlb.coalescing", "16k"),
            ("os.page_policy", "freebsd"),
            ("os.reservation_promote", "false"),
            ("os.preset_a", "on"),
            ("check.translations", "1"),
        ])
        .unwrap();
        let size = 4 * MB;
        let start = TEXT + 6 * 4096 + shift; // the code segment's first page in the file is page 6
        let regions = vec![text("/bin/clang", start, size - 6 * 4096, 6 * 4096, size)];
        let fetches: Vec<Ref> = (0..3).flat_map(|_| (0..(size / 4096 - 6)).map(|p| Ref::new(start + p * 4096, RefKind::Fetch, 4, 1, false))).collect();
        let mut src = VecSource::new(vec![fetches], regions);
        let stats = xlat_core::simulate(&cfg, &mut src, RunOptions::default(), false, 1, &mut |_| true).unwrap();
        let share = stats.get("pt.coalescable.16k").unwrap().as_f64();
        assert!((share - want).abs() < 0.01, "shift {shift}: {share}");
    }
}

/// FreeBSD promotes a wholly cached, in-phase 2 MB piece of a file once all its pages are
/// mapped, and maps it whole at once in a second process; a mapping out of phase never is.
#[test]
fn freebsd_promotes_in_phase_file_pieces_and_shares_them() {
    for (shift, promoted) in [(0u64, true), (4096, false)] {
        let mut os = os(&[("os.page_policy", "freebsd")]);
        let r = text("/bin/big", TEXT + shift, 4 * MB, 0, 4 * MB);
        let a = os.create_space(vec![r.clone()]).unwrap();
        os.prefault(a).unwrap();
        let size = os.translate(a, VirtAddr(TEXT + MB)).unwrap().1;
        assert_eq!(size == PageSize::Size2M, promoted, "shift {shift}");
        let b = os.create_space(vec![r]).unwrap();
        let faults = os.counters.huge_faults;
        os.fault(b, VirtAddr(TEXT + shift + 4096), false).unwrap();
        assert_eq!(os.counters.huge_faults - faults, promoted as u64, "shift {shift}: the second process");
    }
}

/// Linux THP maps anonymous memory huge, but neither a read-only file mapping nor the
/// private writable mapping of a data segment.
#[test]
fn thp_leaves_file_mappings_alone() {
    let mut os = os(&[("os.page_policy", "thp")]);
    let data =
        Region { name: "/bin/prog".into(), start: TEXT + 8 * MB, len: 4 * MB, file: Some(FileMap { offset: 0, size: 4 * MB, exec: false, writable: true }) };
    let heap = Region { name: "heap".into(), start: TEXT + 16 * MB, len: 4 * MB, file: None };
    let s = os.create_space(vec![text("/bin/prog", TEXT, 4 * MB, 0, 4 * MB), data, heap]).unwrap();
    for (va, want) in [(TEXT, PageSize::Size4K), (TEXT + 8 * MB, PageSize::Size4K), (TEXT + 16 * MB, PageSize::Size2M)] {
        os.fault(s, VirtAddr(va), true).unwrap();
        assert_eq!(os.translate(s, VirtAddr(va)).unwrap().1, want, "{va:#x}");
    }
}

/// The exact 4 KB frame mapping `va`, whatever the size of the page holding it.
fn frame4k(os: &Os, space: usize, va: u64) -> Option<u64> {
    let (f, size) = os.translate(space, VirtAddr(va))?;
    Some(f.0 + ((va & (size.bytes() - 1)) >> 12))
}

/// Random faults, unmaps, protects, MADV_FREEs and migrations in two processes that map one
/// file and a heap each, under every policy: the processes always map a file page to the same
/// frame, and no frame ever backs two anonymous pages or an anonymous page and a file page.
#[test]
fn random_operations_keep_the_page_cache_and_anonymous_memory_apart() {
    use xlat_core::os::OsOp;
    for policy in ["never", "thp", "freebsd"] {
        let mut os = os(&[("os.page_policy", policy)]);
        let file = text("/bin/big", TEXT, 6 * MB, 0, 6 * MB);
        let heap = Region { name: "heap".into(), start: TEXT + 16 * MB, len: 4 * MB, file: None };
        let spaces = [os.create_space(vec![file.clone(), heap.clone()]).unwrap(), os.create_space(vec![file, heap]).unwrap()];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..4000 {
            let s = spaces[next(2) as usize];
            let base = if next(2) == 0 { TEXT } else { TEXT + 16 * MB };
            let pages = if base == TEXT { 1536 } else { 1024 };
            let va = base + next(pages) * 4096;
            match next(8) {
                0..=3 => {
                    if os.translate(s, VirtAddr(va)).is_none() {
                        os.fault(s, VirtAddr(va), next(2) == 0).unwrap();
                    }
                }
                4 => {
                    os.unmap(s, VirtAddr(va)).unwrap();
                }
                5 => {
                    os.call(s, OsOp::Free, va, va + 4 * 4096).unwrap();
                }
                6 => {
                    os.call(s, OsOp::Migrate, va, va + 2 * 4096).unwrap();
                }
                _ => {
                    os.call(s, OsOp::Protect, va, va + 4096).unwrap();
                }
            }
            os.pending.clear();
        }
        let mut owner = std::collections::HashMap::new();
        for p in 0..1536 {
            let va = TEXT + p * 4096;
            let (a, b) = (frame4k(&os, spaces[0], va), frame4k(&os, spaces[1], va));
            if let (Some(a), Some(b)) = (a, b) {
                assert_eq!(a, b, "{policy}: file page {p} in two frames");
            }
            for f in [a, b].into_iter().flatten() {
                owner.insert(f, ("file", p));
            }
        }
        for &s in &spaces {
            for p in 0..1024 {
                if let Some(f) = frame4k(&os, s, TEXT + 16 * MB + p * 4096) {
                    let old = owner.insert(f, ("heap", s as u64 * 4096 + p));
                    assert!(old.is_none(), "{policy}: frame {f:#x} backs heap page {p} of space {s} and {old:?}");
                }
            }
        }
    }
}

/// §3.8's small reservations: a 1 MB library (no 2 MB reservation under FreeBSD) gets its
/// 16 KB chunks in aligned 16 KB blocks, so each group of 4 pages is contiguous and aligned
/// wherever its mapping is in phase; without them, FreeBSD's last-frame-first page cache makes
/// no group contiguous.
#[test]
fn small_reservations_make_small_files_coalescable() {
    for (small, want) in [("16k", true), ("none", false)] {
        let mut os = os(&[("os.page_policy", "freebsd"), ("os.small_reservation", small), ("phys.pcp_order", "lifo")]);
        let s = os.create_space(vec![text("/lib/small.so", TEXT, MB, 0, MB)]).unwrap();
        os.prefault(s).unwrap();
        let aligned = (0..64u64).all(|g| {
            (0..4).all(|i| frame(&os, s, TEXT + (4 * g + i) * 4096) == frame(&os, s, TEXT + 4 * g * 4096) + i) && frame(&os, s, TEXT + 4 * g * 4096) % 4 == 0
        });
        assert_eq!(aligned, want, "os.small_reservation={small}");
        assert_eq!(os.counters.reservations, 0, "no 2 MB reservation for a 1 MB file");
    }
}
