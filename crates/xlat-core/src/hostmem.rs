//! Host memory for the simulator's big arrays (cache sets, page-table storage).
//!
//! The simulator touches these arrays at random, once per simulated access, so on a host
//! with 4 KB pages nearly every touch is also a *host* TLB miss and page walk (a 2D one in
//! a VM) — the very cost xlat measures. Backing them with transparent huge pages (asked for
//! with `madvise`, which works when THP is in `madvise` or `always` mode) makes the
//! simulator several times faster. Purely a host-speed measure: no simulated state depends
//! on it.

/// Arrays smaller than this are left to the allocator.
const HUGE_THRESHOLD: usize = 1 << 20;

/// A vector of `n` copies of `val`, backed by huge pages where the host allows.
pub fn huge_vec<T: Clone>(n: usize, val: T) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    let bytes = n * std::mem::size_of::<T>();
    if bytes >= HUGE_THRESHOLD {
        advise_huge(v.as_ptr() as *const u8, bytes);
    }
    v.resize(n, val);
    v
}

#[cfg(target_os = "linux")]
fn advise_huge(p: *const u8, bytes: usize) {
    const HUGE: usize = 2 << 20;
    let start = (p as usize + HUGE - 1) & !(HUGE - 1);
    let end = (p as usize + bytes) & !(HUGE - 1);
    if end > start {
        // SAFETY: the range lies inside an allocation we own; MADV_HUGEPAGE only changes how
        // the kernel backs it, and a failure (THP disabled) is harmless.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge(_p: *const u8, _bytes: usize) {}
