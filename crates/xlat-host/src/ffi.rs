//! The C ABI of the PT-Baker runtime; `include/xlat_bake.h` declares it. Errors are a NULL or
//! -1 return plus one line from `xlat_bake_last_error()`; nothing unwinds into C.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::bake::{self, Baker, Mode, Params, Placement, Region};

/// `xlat_region`.
#[repr(C)]
pub struct XlatRegion {
    pub addr: *const u8,
    pub len: usize,
}

/// `xlat_bake_params`.
#[repr(C)]
pub struct XlatBakeParams {
    /// 0 load, 1 prefetch, 2 mincore.
    pub mode: c_int,
    pub stride: usize,
    pub nops: u32,
    pub sleep_us: u64,
    /// -1 same LLC, -2 SMT sibling, -3 unpinned, else a CPU number.
    pub cpu: c_int,
    pub timer_slack_ns: u64,
}

/// `xlat_bake_stats`.
#[repr(C)]
pub struct XlatBakeStats {
    pub passes: u64,
    pub touches: u64,
    pub minor_faults: u64,
    pub cpu: i64,
    pub seconds: f64,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(msg: String) {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

/// The last error of this thread, one line; valid until the next failing call on it.
#[no_mangle]
pub extern "C" fn xlat_bake_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// Fills `p` with the defaults (load, 32 KB stride, no idle, no sleep, same LLC, 1 ns slack).
///
/// # Safety
/// `p` is NULL or points to writable `xlat_bake_params`.
#[no_mangle]
pub unsafe extern "C" fn xlat_bake_default_params(p: *mut XlatBakeParams) {
    let d = Params::default();
    // SAFETY: the caller passes NULL or a valid pointer; as_mut checks NULL.
    if let Some(p) = unsafe { p.as_mut() } {
        *p = XlatBakeParams { mode: 0, stride: d.stride, nops: d.nops, sleep_us: d.sleep_us, cpu: -1, timer_slack_ns: d.timer_slack_ns };
    }
}

/// Starts the helper over `n` regions; NULL on error (see `xlat_bake_last_error`).
///
/// # Safety
/// `regions` points to `n` regions; `params` is NULL (defaults) or valid. Every region must
/// stay mapped until `xlat_bake_stop`.
#[no_mangle]
pub unsafe extern "C" fn xlat_bake_start(regions: *const XlatRegion, n: usize, params: *const XlatBakeParams) -> *mut Baker {
    let run = || -> Result<Box<Baker>, String> {
        if regions.is_null() || n == 0 {
            return Err("give at least one region".into());
        }
        // SAFETY: the caller promises `n` valid regions at `regions` (checked non-NULL).
        let rs: Vec<Region> = unsafe { std::slice::from_raw_parts(regions, n) }.iter().map(|r| Region { addr: r.addr as usize, len: r.len }).collect();
        let mut p = Params::default();
        // SAFETY: NULL or a valid pointer, by the contract above.
        if let Some(c) = unsafe { params.as_ref() } {
            p.mode = match c.mode {
                0 => Mode::Load,
                1 => Mode::Prefetch,
                2 => Mode::Mincore,
                m => return Err(format!("unknown mode {m} (0 load, 1 prefetch, 2 mincore)")),
            };
            p.placement = match c.cpu {
                -1 => Placement::SameLlc,
                -2 => Placement::Sibling,
                -3 => Placement::Unpinned,
                c if c >= 0 => Placement::Cpu(c as usize),
                c => return Err(format!("unknown placement {c}")),
            };
            (p.stride, p.nops, p.sleep_us, p.timer_slack_ns) = (c.stride, c.nops, c.sleep_us, c.timer_slack_ns);
        }
        // SAFETY: the region contract is the caller's, passed on.
        unsafe { bake::start(&rs, p) }.map(Box::new).map_err(|e| e.to_string())
    };
    match catch_unwind(AssertUnwindSafe(run)) {
        Ok(Ok(b)) => Box::into_raw(b),
        Ok(Err(e)) => {
            set_error(e);
            std::ptr::null_mut()
        }
        Err(_) => {
            set_error("internal error in xlat_bake_start".into());
            std::ptr::null_mut()
        }
    }
}

/// Stops and frees the helper; writes its stats to `out` unless NULL. 0, or -1 for a NULL baker.
///
/// # Safety
/// `b` is NULL or a value `xlat_bake_start` returned, not stopped before; `out` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn xlat_bake_stop(b: *mut Baker, out: *mut XlatBakeStats) -> c_int {
    if b.is_null() {
        set_error("xlat_bake_stop: NULL baker".into());
        return -1;
    }
    // SAFETY: `b` came from Box::into_raw in xlat_bake_start and is stopped once.
    let baker = unsafe { Box::from_raw(b) };
    let s = catch_unwind(AssertUnwindSafe(|| baker.stop())).unwrap_or_default();
    // SAFETY: NULL or valid, by the contract above.
    if let Some(o) = unsafe { out.as_mut() } {
        *o = XlatBakeStats { passes: s.passes, touches: s.touches, minor_faults: s.minor_faults, cpu: s.cpu, seconds: s.seconds };
    }
    0
}

/// Passes completed so far (0 for NULL).
///
/// # Safety
/// `b` is NULL or a running baker.
#[no_mangle]
pub unsafe extern "C" fn xlat_bake_passes(b: *const Baker) -> u64 {
    // SAFETY: NULL or valid, by the contract above.
    unsafe { b.as_ref() }.map_or(0, |b| b.passes())
}
