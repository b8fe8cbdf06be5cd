//! PT-Baker from outside: keeps the page tables of another process's largest anonymous
//! mappings warm without changing the program or the kernel. Reading `/proc/PID/pagemap` makes
//! the kernel walk the target's page tables (it reads every PTE of the range to report it), so
//! the PTE lines are brought into the caches the target's own walks use, while the target's
//! data and mappings are left exactly as they were: the daemon only reads.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::bake::{Region, MINCORE_CHUNK};
use crate::{sys, HostError, Result, PAGE};

#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// How many of the largest anonymous mappings to keep warm.
    pub regions: usize,
    /// Mappings smaller than this are left alone.
    pub min_bytes: usize,
    /// Re-read `/proc/PID/maps` (and reopen its pagemap) this often: mappings grow and move,
    /// and a program started a moment ago may not have reached `exec` yet.
    pub refresh: Duration,
    /// Sleep after each pass.
    pub sleep_us: u64,
    /// Pin the daemon to this CPU.
    pub cpu: Option<usize>,
}

impl Default for Params {
    fn default() -> Params {
        Params { regions: 1, min_bytes: 8 << 20, refresh: Duration::from_millis(200), sleep_us: 0, cpu: None }
    }
}

/// The anonymous mappings of a `/proc/PID/maps` text (no file, or `[heap]`, or `[anon:...]`;
/// not the stack or the kernel's special mappings), largest first.
pub fn anonymous_mappings(maps: &str) -> Vec<Region> {
    let mut out: Vec<Region> = maps
        .lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let (range, perms) = (f.next()?, f.next()?);
            let inode = f.nth(2)?;
            let path = f.next().unwrap_or("");
            let anon = inode == "0" && (path.is_empty() || path == "[heap]" || path.starts_with("[anon:"));
            if !anon || !perms.starts_with("rw") {
                return None;
            }
            let (a, b) = range.split_once('-')?;
            let (a, b) = (usize::from_str_radix(a, 16).ok()?, usize::from_str_radix(b, 16).ok()?);
            (b > a).then_some(Region { addr: a, len: b - a })
        })
        .collect();
    out.sort_by(|x, y| y.len.cmp(&x.len).then(x.addr.cmp(&y.addr)));
    out
}

/// What the daemon did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    pub passes: u64,
    /// Pagemap entries read (pages whose PTE the kernel walked to).
    pub pages: u64,
    /// The regions of the last refresh that found any.
    pub regions: Vec<Region>,
    pub seconds: f64,
}

pub struct Daemon {
    stop: Arc<AtomicBool>,
    passes: Arc<AtomicU64>,
    thread: Option<JoinHandle<Stats>>,
}

/// Starts keeping process `pid`'s page tables warm. Fails with one line when `/proc/PID` cannot
/// be read (no such process, or ptrace access denied: pagemap needs PTRACE_MODE_READ).
pub fn start(pid: u32, p: Params) -> Result<Daemon> {
    if p.regions == 0 {
        return Err(HostError::Invalid("keep at least one region warm".into()));
    }
    if let Some(c) = p.cpu.filter(|&c| c >= crate::bake::configured_cpus()) {
        return Err(HostError::Invalid(format!("there is no CPU {c} (this machine has {})", crate::bake::configured_cpus())));
    }
    let maps_path = format!("/proc/{pid}/maps");
    let pm_path = format!("/proc/{pid}/pagemap");
    std::fs::read_to_string(&maps_path).map_err(|e| denied(&maps_path, e))?;
    let pagemap = File::open(&pm_path).map_err(|e| denied(&pm_path, e))?;
    // A first read proves the access (open can succeed where reading is refused).
    pagemap.read_at(&mut [0u8; 8], 0).map_err(|e| denied(&pm_path, e))?;
    let stop = Arc::new(AtomicBool::new(false));
    let passes = Arc::new(AtomicU64::new(0));
    let (st, ps) = (stop.clone(), passes.clone());
    let thread = std::thread::Builder::new()
        .name("xlat-bake-daemon".into())
        .spawn(move || {
            if let Some(c) = p.cpu {
                let _ = sys::pin_to(c);
            }
            drop(pagemap);
            run(&maps_path, &pm_path, &p, &st, &ps)
        })
        .map_err(|e| HostError::io("starting the daemon thread", e))?;
    Ok(Daemon { stop, passes, thread: Some(thread) })
}

fn denied(path: &str, e: std::io::Error) -> HostError {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => HostError::Permission(format!(
            "{path}: permission denied (reading another process's page map needs ptrace access: same user and kernel.yama.ptrace_scope allowing it, or CAP_SYS_PTRACE)"
        )),
        _ if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ESRCH) => HostError::Invalid(format!("{path}: no such process")),
        _ => HostError::io(path, e),
    }
}

fn run(maps_path: &str, pm_path: &str, p: &Params, stop: &AtomicBool, passes: &AtomicU64) -> Stats {
    let t0 = Instant::now();
    let mut pagemap: Option<File> = None;
    let mut regions: Vec<Region> = Vec::new();
    let mut refreshed: Option<Instant> = None;
    let mut buf = vec![0u8; MINCORE_CHUNK * 8];
    let mut stats = Stats::default();
    while !stop.load(Ordering::Relaxed) {
        if refreshed.is_none_or(|t| t.elapsed() >= p.refresh) {
            // The target has exited (or is exiting) when its maps can no longer be read.
            let Ok(text) = std::fs::read_to_string(maps_path) else { break };
            // Reopened at each refresh: a pagemap file is bound to the address space it was
            // opened on, and a freshly started target replaces its own at exec.
            let Ok(f) = File::open(pm_path) else { break };
            pagemap = Some(f);
            regions = anonymous_mappings(&text).into_iter().filter(|r| r.len >= p.min_bytes).take(p.regions).collect();
            if !regions.is_empty() {
                stats.regions = regions.clone();
            }
            refreshed = Some(Instant::now());
        }
        let Some(pagemap) = pagemap.as_ref() else { break };
        for r in &regions {
            let (first, last) = (r.addr / PAGE, (r.addr + r.len).div_ceil(PAGE));
            let mut vpn = first;
            while vpn < last && !stop.load(Ordering::Relaxed) {
                let n = (last - vpn).min(MINCORE_CHUNK);
                // One read per leaf page table: the kernel walks to it and reads its PTEs.
                match pagemap.read_at(&mut buf[..n * 8], vpn as u64 * 8) {
                    Ok(got) if got > 0 => stats.pages += got as u64 / 8,
                    // Unmapped meanwhile, or the address space is gone (exec, exit): the
                    // next refresh sees it.
                    _ => break,
                }
                vpn += n;
            }
        }
        stats.passes += 1;
        passes.store(stats.passes, Ordering::Relaxed);
        if p.sleep_us > 0 {
            std::thread::sleep(Duration::from_micros(p.sleep_us));
        } else if regions.is_empty() {
            // Nothing big enough yet: wait for the target to allocate.
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    stats.seconds = t0.elapsed().as_secs_f64();
    stats
}

impl Daemon {
    pub fn passes(&self) -> u64 {
        self.passes.load(Ordering::Relaxed)
    }
    /// True once the daemon stopped by itself (the target exited).
    pub fn finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }
    pub fn stop(mut self) -> Stats {
        self.halt()
    }
    fn halt(&mut self) -> Stats {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().map(|t| t.join().unwrap_or_default()).unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.halt();
    }
}

/// The cost per page of the calls that make the kernel walk page tables without touching data,
/// over `pages` prefaulted pages of this process: (name, ns per page), cheapest first.
pub fn call_costs(pages: usize) -> Result<Vec<(&'static str, f64)>> {
    let mut m = crate::mem::Mapping::new(pages * PAGE, crate::mem::Pages::Base)?;
    m.prefault();
    let r = Region { addr: m.as_ptr() as usize, len: m.len() };
    let pagemap = File::open("/proc/self/pagemap").map_err(|e| denied("/proc/self/pagemap", e))?;
    let mut vec = Vec::new();
    let mut buf = vec![0u8; MINCORE_CHUNK * 8];
    let time = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
        f()?; // warm
        let reps = 5;
        let t = Instant::now();
        for _ in 0..reps {
            f()?;
        }
        Ok(t.elapsed().as_nanos() as f64 / (reps * pages) as f64)
    };
    let mincore_whole = time(&mut || crate::bake::mincore_resident(r, &mut vec).map(|_| ()).map_err(|e| HostError::io("mincore", e)))?;
    let mincore_chunks = time(&mut || {
        for off in (0..r.len).step_by(MINCORE_CHUNK * PAGE) {
            let len = (MINCORE_CHUNK * PAGE).min(r.len - off);
            crate::bake::mincore_resident(Region { addr: r.addr + off, len }, &mut vec).map_err(|e| HostError::io("mincore", e))?;
        }
        Ok(())
    })?;
    let pagemap_chunks = time(&mut || {
        let (first, last) = (r.addr / PAGE, (r.addr + r.len) / PAGE);
        let mut vpn = first;
        while vpn < last {
            let n = (last - vpn).min(MINCORE_CHUNK);
            pagemap.read_at(&mut buf[..n * 8], vpn as u64 * 8).map_err(|e| HostError::io("/proc/self/pagemap", e))?;
            vpn += n;
        }
        Ok(())
    })?;
    let mut out = vec![("mincore, whole region", mincore_whole), ("mincore, 2 MB per call", mincore_chunks), ("pagemap read, 2 MB per call", pagemap_chunks)];
    out.sort_by(|a, b| a.1.total_cmp(&b.1));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anonymous_mappings_are_found_largest_first() {
        let maps = "\
55d0c0000000-55d0c0021000 r-xp 00000000 08:01 1234 /usr/bin/prog
55d0c1000000-55d0c1400000 rw-p 00000000 00:00 0 [heap]
7f0000000000-7f0040000000 rw-p 00000000 00:00 0
7f1000000000-7f1000100000 rw-p 00000000 00:00 0 [anon:arena]
7f2000000000-7f2080000000 r--p 00000000 00:00 0
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]
7f3000000000-7f3000001000 rw-p 00000000 08:01 99 /tmp/shared";
        let r = anonymous_mappings(maps);
        assert_eq!(
            r,
            vec![
                Region { addr: 0x7f00_0000_0000, len: 0x4000_0000 },
                Region { addr: 0x55d0_c100_0000, len: 0x40_0000 },
                Region { addr: 0x7f10_0000_0000, len: 0x10_0000 },
            ]
        );
        assert!(anonymous_mappings("garbage\n\n").is_empty());
    }

    #[test]
    fn the_daemon_walks_a_child_without_touching_it_and_ends_with_it() {
        // A child that maps 64 MB, touches nothing, and sleeps: the daemon must find the
        // mapping, read its page map, fault nothing in, and stop when the child exits.
        let mut child = std::process::Command::new("python3")
            .args(["-c", "import mmap,time; m=mmap.mmap(-1, 64<<20, flags=mmap.MAP_PRIVATE|mmap.MAP_ANONYMOUS); time.sleep(1.0)"])
            .spawn()
            .expect("python3 runs");
        std::thread::sleep(Duration::from_millis(300));
        let d = start(child.id(), Params { min_bytes: 32 << 20, refresh: Duration::from_millis(50), ..Params::default() }).unwrap();
        let t = Instant::now();
        while d.passes() < 3 && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let rss_during = std::fs::read_to_string(format!("/proc/{}/smaps_rollup", child.id())).unwrap_or_default();
        let _ = child.wait();
        let t = Instant::now();
        while !d.finished() && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(d.finished(), "the daemon outlived its target");
        let s = d.stop();
        assert!(s.passes >= 3 && s.pages >= 3 * 16384, "{s:?}");
        // The target's RSS stayed small: 64 MB were never brought in.
        let rss_kb: u64 =
            rss_during.lines().find_map(|l| l.strip_prefix("Rss:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap_or(0);
        assert!(rss_kb < 32 << 10, "target RSS {rss_kb} kB");
    }

    #[test]
    fn no_such_process_is_one_clear_error() {
        let e = start(u32::MAX - 1, Params::default()).err().expect("fails").to_string();
        assert!(e.contains("no such process"), "{e}");
    }

    #[test]
    fn call_costs_are_measured() {
        let c = call_costs(2048).unwrap();
        assert_eq!(c.len(), 3);
        assert!(c.iter().all(|(_, ns)| *ns > 0.0 && *ns < 100_000.0), "{c:?}");
    }
}
