//! The process's allocator: the system's, except that an allocation it cannot satisfy ends the
//! process with one line and exit status 2, not Rust's abort with a backtrace (SIGABRT). The
//! predictable cases (a workload's input larger than the host's memory) are refused before the
//! run, as errors (`xlat_workloads::hostmem`); this is for the rest. One null check per
//! allocation, and nothing allocates per simulated reference.

use std::alloc::{GlobalAlloc, Layout, System};

pub struct OneLineOnOom;

// SAFETY: every method forwards to `System` with the same arguments; on failure it does not
// return at all.
unsafe impl GlobalAlloc for OneLineOnOom {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        checked(unsafe { System.alloc(layout) }, layout.size())
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        checked(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        checked(unsafe { System.realloc(ptr, layout, new_size) }, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[inline(always)]
fn checked(p: *mut u8, size: usize) -> *mut u8 {
    if p.is_null() {
        out_of_memory(size)
    }
    p
}

extern "C" {
    fn write(fd: i32, buf: *const u8, count: usize) -> isize;
    fn _exit(status: i32) -> !;
}

/// Say so and leave, without allocating (there is no memory) and without running exit
/// handlers (they may allocate, and the process's state is not to be trusted).
#[cold]
#[inline(never)]
fn out_of_memory(size: usize) -> ! {
    let mut buf = [0u8; 200];
    let mut n = 0;
    let mut put = |s: &[u8]| {
        let k = s.len().min(buf.len() - n);
        buf[n..n + k].copy_from_slice(&s[..k]);
        n += k;
    };
    put(b"xlat: error: out of host memory: an allocation of ");
    let mb = (size as u64).div_ceil(1 << 20);
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = mb;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    put(&digits[i..]);
    put(b" MB failed; make the workload's input or the simulated machine smaller\n");
    // SAFETY: a valid buffer of n bytes; _exit never returns.
    unsafe {
        write(2, buf.as_ptr(), n);
        _exit(2)
    }
}
