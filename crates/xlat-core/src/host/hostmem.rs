//! Host memory for the simulator's big arrays (cache sets, page-table storage).
//!
//! The simulator touches these arrays at random, once per simulated access, so on a host
//! with 4 KB pages nearly every touch is also a *host* TLB miss and page walk (a 2D one in
//! a VM) — the very cost xlat measures. Big arrays are therefore allocated 2 MB-aligned and
//! backed by transparent huge pages (asked for with `madvise`, which works when THP is in
//! `madvise` or `always` mode). Purely a host-speed measure: no simulated state depends on it.

use std::alloc::{alloc, alloc_zeroed, dealloc, handle_alloc_error, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Arrays smaller than this are left to the allocator's normal alignment.
const HUGE_THRESHOLD: usize = 1 << 20;
const HUGE_PAGE: usize = 2 << 20;

/// A fixed-size, heap-allocated array of `Copy` values, huge-page backed when large.
pub struct HugeBuf<T: Copy> {
    ptr: NonNull<T>,
    len: usize,
    layout: Layout,
}

// SAFETY: HugeBuf owns its elements like a Box<[T]>.
unsafe impl<T: Copy + Send> Send for HugeBuf<T> {}
unsafe impl<T: Copy + Sync> Sync for HugeBuf<T> {}

impl<T: Copy> HugeBuf<T> {
    /// `n` copies of `val`.
    ///
    /// Panics (never overruns) if `n` elements do not fit the address space; the sizes come
    /// from configurations whose limits (`config::LIMITS`) keep them far below that.
    pub fn new(n: usize, val: T) -> HugeBuf<T> {
        let bytes = n.checked_mul(std::mem::size_of::<T>()).expect("array size overflows").max(1);
        let align = if bytes >= HUGE_THRESHOLD { HUGE_PAGE } else { std::mem::align_of::<T>() };
        let layout = Layout::from_size_align(bytes, align.max(std::mem::align_of::<T>())).expect("array size overflows");
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc(layout) } as *mut T;
        let Some(ptr) = NonNull::new(raw) else { handle_alloc_error(layout) };
        if align == HUGE_PAGE {
            advise_huge(raw as *mut u8, bytes);
        }
        for i in 0..n {
            // SAFETY: i < n and the allocation holds n elements.
            unsafe { raw.add(i).write(val) };
        }
        HugeBuf { ptr, len: n, layout }
    }
}

impl HugeBuf<u64> {
    /// `n` zeros in memory the host maps on first touch (the allocator's zeroed pages, no
    /// huge-page advice): an array that is mostly never touched, such as a 1 GB page-table
    /// node's entries, costs only the pages used.
    pub fn zeroed(n: usize) -> HugeBuf<u64> {
        let bytes = n.checked_mul(8).expect("array size overflows").max(1);
        let layout = Layout::from_size_align(bytes, 8).expect("array size overflows");
        // SAFETY: the layout has a non-zero size; zero bits are a valid u64.
        let raw = unsafe { alloc_zeroed(layout) } as *mut u64;
        let Some(ptr) = NonNull::new(raw) else { handle_alloc_error(layout) };
        HugeBuf { ptr, len: n, layout }
    }
}

impl<T: Copy> Deref for HugeBuf<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: ptr holds len initialised elements for the lifetime of self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> DerefMut for HugeBuf<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as above, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> Drop for HugeBuf<T> {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with exactly this layout; T: Copy needs no drop.
        unsafe { dealloc(self.ptr.as_ptr() as *mut u8, self.layout) };
    }
}

/// An empty `Vec` with room for `cap` elements, its memory asked for huge pages before it is
/// first touched: for big arrays read at random outside the simulation proper (a graph
/// kernel's builder, say). The whole 2 MB pages inside the allocation are advised; the
/// allocator's alignment decides the rest.
pub fn huge_vec<T>(cap: usize) -> Vec<T> {
    let v = Vec::with_capacity(cap);
    let bytes = cap.saturating_mul(std::mem::size_of::<T>());
    if bytes >= HUGE_THRESHOLD {
        let start = (v.as_ptr() as usize).next_multiple_of(HUGE_PAGE);
        let end = (v.as_ptr() as usize + bytes) & !(HUGE_PAGE - 1);
        if end > start {
            advise_huge(start as *mut u8, end - start);
        }
    }
    v
}

#[cfg(target_os = "linux")]
fn advise_huge(p: *mut u8, bytes: usize) {
    let len = bytes.div_ceil(HUGE_PAGE) * HUGE_PAGE;
    // SAFETY: p is 2 MB-aligned and the allocation covers `bytes`; the advice only changes
    // how the kernel backs the pages (rounding up to a whole huge page stays within the
    // mapping the allocator made for this aligned request, and a failure is harmless).
    unsafe {
        libc::madvise(p as *mut libc::c_void, len.min(bytes), libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge(_p: *mut u8, _bytes: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_vecs_are_ordinary_vecs() {
        let mut v: Vec<u64> = huge_vec(3 << 20);
        assert!(v.is_empty() && v.capacity() >= 3 << 20);
        v.resize(3 << 20, 5);
        v[(3 << 20) - 1] = 6;
        assert_eq!(v.iter().sum::<u64>(), 5 * (3 << 20) + 1);
        let small: Vec<u8> = huge_vec(10);
        assert!(small.capacity() >= 10);
    }

    #[test]
    fn small_and_huge_buffers_hold_their_values() {
        let mut a = HugeBuf::new(10, 7u32);
        a[3] = 1;
        assert_eq!(a.iter().sum::<u32>(), 64);
        let b = HugeBuf::new(1 << 20, 1u64);
        assert_eq!(b.as_ptr() as usize % HUGE_PAGE, 0);
        assert_eq!(b.len(), 1 << 20);
        assert!(b.iter().all(|&x| x == 1));
    }

    #[test]
    fn zeroed_buffers_read_zero_and_take_writes() {
        let mut z = HugeBuf::zeroed(1 << 27);
        assert_eq!((z[0], z[(1 << 27) - 1]), (0, 0));
        z[12345] = 9;
        assert_eq!(z.iter().step_by(4096).sum::<u64>(), 0);
        assert_eq!(z[12345], 9);
    }

    #[test]
    #[should_panic(expected = "array size overflows")]
    fn a_size_that_overflows_panics_instead_of_overrunning() {
        let _ = HugeBuf::new(usize::MAX / 4 + 1, 0u64);
    }
}
