//! Anonymous private mappings, with 4 KB pages or transparent huge pages, unmapped on drop.

use crate::{HostError, Result, HUGE, PAGE};

/// How a mapping should be backed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pages {
    /// 4 KB pages: `madvise(MADV_NOHUGEPAGE)`, so THP set to `always` does not interfere.
    Base,
    /// 2 MB transparent huge pages where the kernel gives them: the mapping is 2 MB aligned
    /// and `madvise(MADV_HUGEPAGE)`d before it is touched.
    Huge,
}

impl Pages {
    pub fn name(self) -> &'static str {
        match self {
            Pages::Base => "4K",
            Pages::Huge => "THP",
        }
    }
}

/// An anonymous read-write mapping of `len` bytes, owned: `munmap`ped when dropped.
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
    /// What `mmap` returned (before 2 MB alignment) and its length, for `munmap`.
    raw: *mut u8,
    raw_len: usize,
}

// SAFETY: a Mapping is plain memory owned by one value; moving it between threads is no
// different from moving a Vec.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Maps `len` bytes (rounded up to whole pages; `len` > 0), backed as `pages` asks.
    pub fn new(len: usize, pages: Pages) -> Result<Mapping> {
        if len == 0 {
            return Err(HostError::Invalid("a mapping needs at least one byte".into()));
        }
        let len = len.div_ceil(PAGE) * PAGE;
        // Huge pages need a 2 MB aligned start: over-allocate by 2 MB and align inside.
        let raw_len = if pages == Pages::Huge { len + HUGE } else { len };
        // SAFETY: an anonymous private mapping at an address of the kernel's choice aliases
        // nothing; the result is checked against MAP_FAILED before use.
        let raw = unsafe { libc::mmap(std::ptr::null_mut(), raw_len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
        if raw == libc::MAP_FAILED {
            return Err(HostError::last_os(format!("mmap of {len} bytes")));
        }
        let raw = raw as *mut u8;
        let offset = if pages == Pages::Huge { (HUGE - raw as usize % HUGE) % HUGE } else { 0 };
        // SAFETY: offset < HUGE and raw_len = len + HUGE, so ptr..ptr+len lies inside the mapping.
        let ptr = unsafe { raw.add(offset) };
        let m = Mapping { ptr, len, raw, raw_len };
        let advice = if pages == Pages::Huge { libc::MADV_HUGEPAGE } else { libc::MADV_NOHUGEPAGE };
        // SAFETY: madvise on a range of our own mapping only changes how it is backed. A kernel
        // without THP rejects the advice (EINVAL); the mapping still works with 4 KB pages,
        // which the pagemap check and the curves then show, so the result is ignored.
        unsafe { libc::madvise(m.ptr as *mut libc::c_void, m.len, advice) };
        Ok(m)
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes one byte in every page so that every page is mapped before it is measured.
    pub fn prefault(&mut self) {
        for off in (0..self.len).step_by(PAGE) {
            // SAFETY: off < len, inside our read-write mapping; a volatile write so the store
            // (and with it the page fault) really happens.
            unsafe { self.ptr.add(off).write_volatile(0) };
        }
    }

    /// The mapping as bytes.
    pub fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: ptr..ptr+len is our own mapping, readable and writable, zero-filled by the
        // kernel, and borrowed mutably through &mut self only.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: raw/raw_len are exactly what mmap returned; nothing borrows the memory once
        // the owner is dropped.
        unsafe { libc::munmap(self.raw as *mut libc::c_void, self.raw_len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_mappings_are_2m_aligned_and_writable() {
        let mut m = Mapping::new(3 * HUGE + 5, Pages::Huge).unwrap();
        assert_eq!(m.as_ptr() as usize % HUGE, 0);
        assert_eq!(m.len(), 3 * HUGE + PAGE);
        m.prefault();
        m.bytes()[HUGE] = 7;
        assert_eq!(m.bytes()[HUGE], 7);
    }

    #[test]
    fn empty_mapping_is_an_error() {
        assert!(Mapping::new(0, Pages::Base).is_err());
    }
}
