//! PT-Baker: a helper thread that keeps the page-table entries of a program's big regions warm
//! in the shared caches, so the main thread's page walks find them there instead of in DRAM.
//!
//! ```no_run
//! use xlat_host::bake::{self, Params, Region};
//! let data = vec![0u64; 1 << 27];
//! let region = Region { addr: data.as_ptr() as usize, len: data.len() * 8 };
//! // SAFETY: `data` outlives the baker, which is stopped before `data` is dropped.
//! let baker = unsafe { bake::start(&[region], Params::default()) }.unwrap();
//! // ... the main computation over `data` ...
//! let stats = baker.stop();
//! # let _ = stats;
//! ```
//!
//! Modes: [`Mode::Load`] reads one byte every `stride` bytes of each region (a plain load: the
//! helper core's TLB misses, its walker fetches the PTE line, and the data line comes along),
//! [`Mode::Prefetch`] does the same with a software prefetch, and [`Mode::Mincore`] calls
//! `mincore(2)` over the regions: the kernel reads every PTE of the range to report residency
//! but never touches the data, so no data line is fetched and no page is faulted in (the
//! kernel-assisted mode, without a kernel patch). `nops` is idle work after each touch (after
//! each `mincore` call of [`MINCORE_CHUNK`] pages in that mode), `sleep_us` a sleep after each
//! pass, with the helper's timer slack lowered so that short sleeps last what they say.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::{sys, HostError, Result, PAGE};

/// Pages per `mincore` call in [`Mode::Mincore`]: one leaf page table (2 MB), so the idle work
/// after each call throttles at the same grain as the kernel's own walk.
pub const MINCORE_CHUNK: usize = 512;

/// A region to keep warm: `len` bytes from `addr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub addr: usize,
    pub len: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Load,
    Prefetch,
    Mincore,
}

impl Mode {
    pub fn parse(s: &str) -> Result<Mode> {
        match s {
            "load" => Ok(Mode::Load),
            "prefetch" => Ok(Mode::Prefetch),
            "mincore" => Ok(Mode::Mincore),
            _ => Err(HostError::Invalid(format!("unknown bake mode '{s}' (known: load, prefetch, mincore)"))),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Mode::Load => "load",
            Mode::Prefetch => "prefetch",
            Mode::Mincore => "mincore",
        }
    }
}

/// Where the helper thread runs, relative to the thread that calls [`start`] (the main thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Another core that shares the main thread's last-level cache (not its SMT sibling):
    /// only the L3 is shared, so the main thread's private caches are not polluted.
    SameLlc,
    /// The main thread's SMT sibling (shares the core's L1/L2; TLBs are per thread on Zen).
    Sibling,
    /// This CPU.
    Cpu(usize),
    /// Not pinned.
    Unpinned,
}

impl Placement {
    pub fn parse(s: &str) -> Result<Placement> {
        match s {
            "llc" => Ok(Placement::SameLlc),
            "sibling" => Ok(Placement::Sibling),
            "none" => Ok(Placement::Unpinned),
            _ => s.parse().map(Placement::Cpu).map_err(|_| HostError::Invalid(format!("unknown placement '{s}' (llc, sibling, none or a CPU number)"))),
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub mode: Mode,
    /// Bytes between touches (Load, Prefetch): 8 pages = 32 KB reads each PTE line once.
    pub stride: usize,
    /// Idle instructions (`nop`) after each touch or `mincore` call.
    pub nops: u32,
    /// Sleep after each pass over all regions, in microseconds.
    pub sleep_us: u64,
    pub placement: Placement,
    /// The helper's timer slack in ns (`PR_SET_TIMERSLACK`; Linux's default is 50 µs).
    pub timer_slack_ns: u64,
}

impl Default for Params {
    fn default() -> Params {
        Params { mode: Mode::Load, stride: 8 * PAGE, nops: 0, sleep_us: 0, placement: Placement::SameLlc, timer_slack_ns: 1 }
    }
}

/// What the helper did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stats {
    /// Full passes over all regions.
    pub passes: u64,
    /// Loads or prefetches issued, or pages covered by `mincore`.
    pub touches: u64,
    /// Minor page faults the helper thread itself took while sweeping (RUSAGE_THREAD): a
    /// load of a never-touched page faults it in, `mincore` never does.
    pub minor_faults: u64,
    /// The CPU the helper was pinned to, or -1.
    pub cpu: i64,
    pub seconds: f64,
}

/// A running helper; [`Baker::stop`] ends it (dropping it stops it too).
pub struct Baker {
    stop: Arc<AtomicBool>,
    passes: Arc<AtomicU64>,
    thread: Option<JoinHandle<Stats>>,
    cpu: Option<usize>,
}

/// Starts the helper thread over `regions`.
///
/// # Safety
/// Every region must stay mapped (and readable, for the load and prefetch modes) until the
/// baker is stopped or dropped: the helper reads it from another thread. The helper only
/// reads, and discards what it reads, so concurrent writes by the program are harmless.
pub unsafe fn start(regions: &[Region], params: Params) -> Result<Baker> {
    validate(regions, &params)?;
    let cpu = helper_cpu(params.placement)?;
    let stop = Arc::new(AtomicBool::new(false));
    let passes = Arc::new(AtomicU64::new(0));
    let (regions, st, ps) = (regions.to_vec(), stop.clone(), passes.clone());
    let (tx, rx) = std::sync::mpsc::channel::<Result<()>>();
    let thread = std::thread::Builder::new()
        .name("xlat-bake".into())
        .spawn(move || {
            let setup = (|| {
                if let Some(c) = cpu {
                    sys::pin_to(c)?;
                }
                set_timer_slack(params.timer_slack_ns)
            })();
            let ok = setup.is_ok();
            let _ = tx.send(setup);
            if ok {
                sweep(&regions, &params, &st, &ps, cpu)
            } else {
                Stats::default()
            }
        })
        .map_err(|e| HostError::io("starting the helper thread", e))?;
    // The helper reports whether it could place itself before it starts sweeping.
    match rx.recv() {
        Ok(Ok(())) => Ok(Baker { stop, passes, thread: Some(thread), cpu }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => Err(HostError::Invalid("the helper thread ended before it started".into())),
    }
}

impl Baker {
    /// Passes completed so far.
    pub fn passes(&self) -> u64 {
        self.passes.load(Ordering::Relaxed)
    }
    /// The CPU the helper is pinned to.
    pub fn cpu(&self) -> Option<usize> {
        self.cpu
    }
    /// Stops the helper (it finishes its current region chunk or sleep) and returns its stats.
    pub fn stop(mut self) -> Stats {
        self.halt()
    }
    fn halt(&mut self) -> Stats {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            // The sweep cannot panic (no indexing, no allocation); a panic would still be
            // reported as an empty Stats rather than propagated across an FFI boundary.
            Some(t) => t.join().unwrap_or_default(),
            None => Stats::default(),
        }
    }
}

impl Drop for Baker {
    fn drop(&mut self) {
        self.halt();
    }
}

fn validate(regions: &[Region], p: &Params) -> Result<()> {
    if regions.is_empty() {
        return Err(HostError::Invalid("give at least one region to bake".into()));
    }
    if p.stride == 0 {
        return Err(HostError::Invalid("the stride must be at least 1 byte".into()));
    }
    for r in regions {
        if r.len == 0 || r.addr.checked_add(r.len).is_none() {
            return Err(HostError::Invalid(format!("region {:#x}+{} is empty or wraps around", r.addr, r.len)));
        }
        // mincore fails with ENOMEM on any unmapped page: a cheap check that the region exists.
        if let Err(e) = mincore_resident(*r, &mut Vec::new()) {
            return Err(HostError::Invalid(format!("region {:#x}+{} is not mapped: {e}", r.addr, r.len)));
        }
    }
    Ok(())
}

/// The CPU for the helper, from the sysfs topology around the calling thread's CPU. A caller
/// that pins itself first (as the benchmark does) resolves the placement before pinning:
/// afterwards its own affinity allows only its CPU.
pub fn helper_cpu(p: Placement) -> Result<Option<usize>> {
    let main = sys::current_cpu();
    let allowed = sys::allowed_cpus();
    let siblings = sys::smt_siblings(main);
    match p {
        Placement::Unpinned => Ok(None),
        // Any CPU of the machine: the helper's own pinning reports one it may not use.
        Placement::Cpu(c) if c < configured_cpus() => Ok(Some(c)),
        Placement::Cpu(c) => Err(HostError::Invalid(format!("there is no CPU {c} (this machine has {})", configured_cpus()))),
        Placement::Sibling => siblings
            .into_iter()
            .find(|c| allowed.contains(c))
            .map(Some)
            .ok_or_else(|| HostError::Unsupported(format!("CPU {main} has no SMT sibling this process may use (no SMT here?)"))),
        Placement::SameLlc => sys::llc_domain(main)
            .into_iter()
            .find(|c| *c != main && !siblings.contains(c) && allowed.contains(c))
            .map(Some)
            .ok_or_else(|| HostError::Unsupported(format!("no other core shares CPU {main}'s last-level cache"))),
    }
}

pub(crate) fn configured_cpus() -> usize {
    // SAFETY: sysconf only reads a system constant.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    n.max(1) as usize
}

fn set_timer_slack(ns: u64) -> Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes a value and changes only this thread's timer slack.
    if unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(HostError::last_os("lowering the timer slack"));
    }
    Ok(())
}

fn thread_minor_faults() -> u64 {
    // SAFETY: a zeroed rusage is valid; getrusage fills it for the calling thread only.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_THREAD is Linux's per-thread usage.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) } != 0 {
        return 0;
    }
    u.ru_minflt as u64
}

#[inline(always)]
fn idle(nops: u32) {
    for _ in 0..nops {
        // SAFETY: a nop reads and writes nothing.
        unsafe { std::arch::asm!("nop", options(nomem, nostack, preserves_flags)) };
    }
}

/// Residency of a region's pages (`mincore`), which makes the kernel walk its page tables.
/// `vec` is scratch space, resized as needed.
pub fn mincore_resident(r: Region, vec: &mut Vec<u8>) -> std::io::Result<usize> {
    let start = r.addr / PAGE * PAGE;
    let len = r.addr + r.len - start;
    vec.resize(len.div_ceil(PAGE), 0);
    // SAFETY: mincore only reads the page tables of [start, start+len) and writes one byte per
    // page into `vec`, which has exactly that many; `start` is page aligned as it requires.
    let rc = unsafe { libc::mincore(start as *mut libc::c_void, len, vec.as_mut_ptr()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(vec.iter().filter(|&&b| b & 1 == 1).count())
}

fn sweep(regions: &[Region], p: &Params, stop: &AtomicBool, passes: &AtomicU64, cpu: Option<usize>) -> Stats {
    let t0 = Instant::now();
    let faults0 = thread_minor_faults();
    let mut touches = 0u64;
    let mut n = 0u64;
    let mut vec = Vec::with_capacity(MINCORE_CHUNK);
    'run: while !stop.load(Ordering::Relaxed) {
        for r in regions {
            match p.mode {
                Mode::Load | Mode::Prefetch => {
                    let mut off = 0;
                    while off < r.len {
                        let a = (r.addr + off) as *const u8;
                        if p.mode == Mode::Load {
                            // SAFETY: `start`'s contract keeps the region mapped and readable
                            // while the helper runs, and off < len. The read is volatile so it
                            // happens, and its value is discarded, so a concurrent write by
                            // the program only changes a value nobody uses.
                            unsafe { a.read_volatile() };
                        } else {
                            prefetch(a);
                        }
                        touches += 1;
                        idle(p.nops);
                        off += p.stride;
                        // Stop within ~a millisecond even over huge regions.
                        if touches % 4096 == 0 && stop.load(Ordering::Relaxed) {
                            break 'run;
                        }
                    }
                }
                Mode::Mincore => {
                    let mut off = 0;
                    while off < r.len {
                        let len = (MINCORE_CHUNK * PAGE).min(r.len - off);
                        // A region unmapped under us breaks the contract of `start`; mincore
                        // then reports ENOMEM without harm, and the helper just moves on.
                        let _ = mincore_resident(Region { addr: r.addr + off, len }, &mut vec);
                        touches += len.div_ceil(PAGE) as u64;
                        idle(p.nops);
                        off += len;
                        if stop.load(Ordering::Relaxed) {
                            break 'run;
                        }
                    }
                }
            }
        }
        n += 1;
        passes.store(n, Ordering::Relaxed);
        if p.sleep_us > 0 {
            std::thread::sleep(Duration::from_micros(p.sleep_us));
        }
    }
    Stats { passes: n, touches, minor_faults: thread_minor_faults() - faults0, cpu: cpu.map_or(-1, |c| c as i64), seconds: t0.elapsed().as_secs_f64() }
}

#[inline(always)]
fn prefetch(a: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint: it never faults, even on an unmapped address, and
        // changes no architectural state. (Newer Rust declares it safe; hence the allow.)
        #[allow(unused_unsafe)]
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(a as *const i8)
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = a;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::{Mapping, Pages};

    /// Runs a baker over a fresh, never-touched mapping of `pages` pages until it made
    /// `passes` passes; returns its stats and the pages resident afterwards.
    fn bake_untouched(mode: Mode, pages: usize, passes: u64) -> (Stats, usize) {
        let m = Mapping::new(pages * PAGE, Pages::Base).unwrap();
        let r = Region { addr: m.as_ptr() as usize, len: m.len() };
        assert_eq!(mincore_resident(r, &mut Vec::new()).unwrap(), 0, "a fresh mapping has no page");
        let p = Params { mode, placement: Placement::Unpinned, ..Params::default() };
        // SAFETY: `m` outlives the baker, stopped below.
        let b = unsafe { start(&[r], p) }.unwrap();
        let t = Instant::now();
        while b.passes() < passes && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let s = b.stop();
        assert!(s.passes >= passes, "{s:?}");
        (s, mincore_resident(r, &mut Vec::new()).unwrap())
    }

    #[test]
    fn mincore_mode_walks_without_touching_data() {
        let (s, resident) = bake_untouched(Mode::Mincore, 4096, 3);
        assert!(s.touches >= 3 * 4096);
        assert_eq!(resident, 0, "mincore faulted pages in: {s:?}");
        assert!(s.minor_faults < 8, "the mincore helper took {} minor faults", s.minor_faults);
    }

    #[test]
    fn load_mode_reads_one_byte_per_stride() {
        // 4096 pages, stride 8 pages: 512 loads per pass, each faulting in its page (reading
        // a never-touched anonymous page maps it) on the first pass only.
        let (s, resident) = bake_untouched(Mode::Load, 4096, 2);
        assert!(s.touches >= 2 * 512, "{s:?}");
        assert!(s.minor_faults >= 512, "{s:?}");
        assert_eq!(resident, 512, "one page in eight was read");
    }

    #[test]
    fn prefetch_mode_never_faults() {
        // A prefetch of an unmapped page is dropped, not faulted in.
        let (s, resident) = bake_untouched(Mode::Prefetch, 4096, 2);
        assert!(s.touches >= 2 * 512);
        assert_eq!(resident, 0);
        assert!(s.minor_faults < 8, "{s:?}");
    }

    #[test]
    fn bad_regions_and_placements_are_errors_not_panics() {
        let p = Params { placement: Placement::Unpinned, ..Params::default() };
        // SAFETY: every call below must fail validation before a thread starts.
        unsafe {
            assert!(start(&[], p).is_err());
            assert!(start(&[Region { addr: 4096, len: 4096 }], p).is_err(), "page 1 is never mapped");
            assert!(start(&[Region { addr: usize::MAX - 10, len: 100 }], p).is_err());
            let m = Mapping::new(PAGE, Pages::Base).unwrap();
            let r = Region { addr: m.as_ptr() as usize, len: PAGE };
            assert!(start(&[r], Params { stride: 0, ..p }).is_err());
            assert!(start(&[r], Params { placement: Placement::Cpu(100_000), ..p }).is_err());
        }
        assert!(Mode::parse("walk").is_err());
        assert_eq!(Placement::parse("3").unwrap(), Placement::Cpu(3));
        assert!(Placement::parse("far").is_err());
    }

    #[test]
    fn sleep_throttles_passes() {
        let m = Mapping::new(64 * PAGE, Pages::Base).unwrap();
        let r = Region { addr: m.as_ptr() as usize, len: m.len() };
        let p = Params { mode: Mode::Mincore, sleep_us: 20_000, placement: Placement::Unpinned, ..Params::default() };
        // SAFETY: `m` outlives the baker.
        let b = unsafe { start(&[r], p) }.unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let s = b.stop();
        // 20 ms per pass: about 10 passes in 200 ms, never hundreds.
        assert!(s.passes >= 2 && s.passes <= 15, "{s:?}");
    }
}
