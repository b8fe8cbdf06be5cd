//! What machine the probe runs on: hypervisor, caches and SMT from sysfs, physical frames from
//! `/proc/self/pagemap`, transparent huge pages from `/proc/self/smaps`, performance counters.

use std::fs;
use std::io::{Read, Seek, SeekFrom};

use crate::{HostError, Result, LINE, PAGE};

/// Running under a hypervisor, as the CPU reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hypervisor {
    /// CPUID leaf 1, ECX bit 31 (Linux shows it as the `hypervisor` flag of /proc/cpuinfo).
    pub present: bool,
    /// The vendor signature of CPUID leaf 0x40000000 ("KVMKVMKVM", "Microsoft Hv", ...).
    pub vendor: Option<String>,
}

/// Asks the CPU whether it runs in a virtual machine, and whose.
pub fn hypervisor() -> Hypervisor {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        // SAFETY: CPUID exists on every x86-64 CPU and only reads identification registers;
        // leaf 1 is always defined. (Newer Rust declares __cpuid safe; hence the allow.)
        #[allow(unused_unsafe)]
        let present = unsafe { __cpuid(1) }.ecx >> 31 & 1 == 1;
        let vendor = if present {
            // SAFETY: as above; with the hypervisor bit set, leaf 0x40000000 is the
            // hypervisor's own identification leaf (reserved by Intel and AMD for this use).
            #[allow(unused_unsafe)]
            let r = unsafe { __cpuid(0x4000_0000) };
            let bytes: Vec<u8> = [r.ebx, r.ecx, r.edx].iter().flat_map(|v| v.to_le_bytes()).collect();
            let s: String = String::from_utf8_lossy(&bytes).trim_matches(char::from(0)).trim().to_string();
            (!s.is_empty()).then_some(s)
        } else {
            None
        };
        Hypervisor { present, vendor }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let present =
            fs::read_to_string("/proc/cpuinfo").is_ok_and(|t| t.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor")));
        Hypervisor { present, vendor: None }
    }
}

/// One data or unified cache of a CPU, from /sys/devices/system/cpu/cpuN/cache/indexK.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cache {
    pub level: u32,
    pub kind: String,
    pub bytes: u64,
    /// The CPUs that share it.
    pub shared_with: Vec<usize>,
}

impl Cache {
    /// Lines it holds: the pages a one-line-per-page chase can keep in it.
    pub fn lines(&self) -> u64 {
        self.bytes / LINE as u64
    }
}

/// The data and unified caches of `cpu` (empty when sysfs does not say).
pub fn caches(cpu: usize) -> Vec<Cache> {
    let mut out = Vec::new();
    for k in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cache/index{k}");
        let read = |f: &str| fs::read_to_string(format!("{dir}/{f}")).map(|s| s.trim().to_string());
        let (Ok(level), Ok(kind), Ok(size)) = (read("level"), read("type"), read("size")) else { continue };
        if kind == "Instruction" {
            continue;
        }
        let Some(bytes) = parse_size(&size) else { continue };
        let shared_with = read("shared_cpu_list").ok().and_then(|l| parse_cpu_list(&l)).unwrap_or_default();
        out.push(Cache { level: level.parse().unwrap_or(0), kind, bytes, shared_with });
    }
    out
}

/// "32K", "1024K", "32M", "512" (bytes) as sysfs writes cache sizes.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 1 << 10),
        b'M' => (&s[..s.len() - 1], 1 << 20),
        b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mult)
}

/// A sysfs CPU list such as "0-3,8,10-11".
pub fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                if b < a {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// The other hardware threads of `cpu`'s core (its SMT siblings; empty without SMT).
pub fn smt_siblings(cpu: usize) -> Vec<usize> {
    fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"))
        .ok()
        .and_then(|l| parse_cpu_list(&l))
        .unwrap_or_default()
        .into_iter()
        .filter(|&c| c != cpu)
        .collect()
}

/// The CPUs sharing `cpu`'s last-level cache (an L3 domain, a CCX on AMD), `cpu` included.
pub fn llc_domain(cpu: usize) -> Vec<usize> {
    caches(cpu).into_iter().max_by_key(|c| c.level).map(|c| c.shared_with).filter(|l| !l.is_empty()).unwrap_or_else(|| vec![cpu])
}

/// The CPUs this thread may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain bits, valid zeroed; sched_getaffinity writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is this thread; the size passed is the set's own.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return vec![current_cpu()];
    }
    // SAFETY: CPU_ISSET only reads the set, for indices below CPU_SETSIZE.
    (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect()
}

/// The CPU this thread runs on now.
pub fn current_cpu() -> usize {
    // SAFETY: sched_getcpu takes no arguments and returns -1 on error.
    let c = unsafe { libc::sched_getcpu() };
    c.max(0) as usize
}

/// Pins the calling thread to one CPU.
pub fn pin_to(cpu: usize) -> Result<()> {
    set_affinity(&[cpu])
}

/// Lets the calling thread run on exactly `cpus`.
pub fn set_affinity(cpus: &[usize]) -> Result<()> {
    if let Some(&c) = cpus.iter().find(|&&c| c >= libc::CPU_SETSIZE as usize) {
        return Err(HostError::Invalid(format!("CPU {c} is out of range")));
    }
    // SAFETY: a zeroed cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        // SAFETY: CPU_SET writes bit c < CPU_SETSIZE (checked above) of our own set.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: pid 0 is this thread; the set is initialised and its size is passed.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(HostError::last_os(format!("setting the CPU affinity to {cpus:?}")));
    }
    Ok(())
}

/// Physical frame numbers of the pages of `[addr, addr + len)` of process `pid` ("self" or a
/// number), from its pagemap: `None` for a page not present. Without CAP_SYS_ADMIN the kernel
/// hides frame numbers (reports 0): that is a [`HostError::Permission`].
pub fn frames(pid: &str, addr: usize, len: usize) -> Result<Vec<Option<u64>>> {
    let path = format!("/proc/{pid}/pagemap");
    let entries = read_pagemap(&path, addr, len)?;
    let mut out = Vec::with_capacity(entries.len());
    let mut any_present = false;
    let mut any_pfn = false;
    for e in entries {
        let present = e >> 63 & 1 == 1;
        let pfn = e & ((1 << 55) - 1);
        any_present |= present;
        any_pfn |= pfn != 0;
        out.push(present.then_some(pfn));
    }
    if any_present && !any_pfn {
        return Err(HostError::Permission(format!("{path} hides physical frame numbers (they need CAP_SYS_ADMIN)")));
    }
    Ok(out)
}

/// The raw 64-bit pagemap entries of the pages of `[addr, addr + len)`.
pub fn read_pagemap(path: &str, addr: usize, len: usize) -> Result<Vec<u64>> {
    let first = addr / PAGE;
    let n = (addr + len).div_ceil(PAGE) - first;
    let mut f = fs::File::open(path).map_err(|e| open_error(path, e))?;
    f.seek(SeekFrom::Start(first as u64 * 8)).map_err(|e| HostError::io(path, e))?;
    let mut buf = vec![0u8; n * 8];
    f.read_exact(&mut buf).map_err(|e| open_error(path, e))?;
    Ok(buf.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8-byte chunk"))).collect())
}

fn open_error(path: &str, e: std::io::Error) -> HostError {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => HostError::Permission(format!("{path}: permission denied (ptrace access to the process is needed)")),
        _ => HostError::io(path, e),
    }
}

/// How physically contiguous a buffer is, the question behind PTE coalescing (AMD Zen merges
/// up to four 4 KB translations into one TLB entry when an aligned group of four virtual pages
/// maps to four consecutive, equally aligned frames).
#[derive(Clone, Debug, PartialEq)]
pub struct Contiguity {
    pub pages: usize,
    /// Virtual neighbours that are physical neighbours too, as a fraction of the pairs.
    pub adjacent: f64,
    /// Aligned groups of 4 pages (16 KB) that map to 4 consecutive frames aligned the same way.
    pub groups4: f64,
    /// The same for aligned groups of 8 pages (32 KB).
    pub groups8: f64,
    /// The longest run of consecutive frames, in pages.
    pub longest_run: usize,
}

/// The contiguity of a list of frames (`None`: not present).
pub fn contiguity(frames: &[Option<u64>], first_vpn: usize) -> Contiguity {
    let n = frames.len();
    let next = |i: usize| matches!((frames[i], frames[i + 1]), (Some(a), Some(b)) if b == a + 1);
    let pairs = n.saturating_sub(1);
    let adjacent = if pairs == 0 { 0.0 } else { (0..pairs).filter(|&i| next(i)).count() as f64 / pairs as f64 };
    let groups = |k: usize| {
        let (mut total, mut good) = (0usize, 0usize);
        let mut i = (k - first_vpn % k) % k;
        while i + k <= n {
            total += 1;
            if let Some(f) = frames[i] {
                if f % k as u64 == (first_vpn + i) as u64 % k as u64 && (i..i + k - 1).all(next) {
                    good += 1;
                }
            }
            i += k;
        }
        if total == 0 {
            0.0
        } else {
            good as f64 / total as f64
        }
    };
    let (mut longest, mut run) = (0, 0);
    for (i, f) in frames.iter().enumerate() {
        run = if f.is_none() {
            0
        } else if i > 0 && next(i - 1) {
            run + 1
        } else {
            1
        };
        longest = longest.max(run);
    }
    Contiguity { pages: n, adjacent, groups4: groups(4), groups8: groups(8), longest_run: longest }
}

/// Bytes of `[addr, addr+len)`'s mapping backed by transparent huge pages (`AnonHugePages` of
/// the VMA that contains `addr` in /proc/self/smaps), or None if smaps cannot say.
pub fn anon_huge_bytes(addr: usize) -> Option<u64> {
    let text = fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = false;
    for line in text.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((a, b)) = range.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                    inside = a <= addr && addr < b;
                    continue;
                }
            }
        }
        if inside {
            if let Some(v) = line.strip_prefix("AnonHugePages:") {
                return v.trim().trim_end_matches("kB").trim().parse::<u64>().ok().map(|k| k * 1024);
            }
        }
    }
    None
}

/// Opens one hardware event for this thread on any CPU, disabled, user space only, or says
/// why it cannot be counted (one line).
fn open_event(kind: u32, config: u64) -> std::result::Result<i32, String> {
    // perf_event_attr in its first published layout (PERF_ATTR_SIZE_VER0, 64 bytes): type,
    // size, config, then fields the kernel reads as zero, and the flag word's bit 0
    // (disabled), bit 5 (exclude_kernel), bit 6 (exclude_hv).
    #[repr(C)]
    struct Attr {
        kind: u32,
        size: u32,
        config: u64,
        sample_period: u64,
        sample_type: u64,
        read_format: u64,
        flags: u64,
        wakeup_events: u32,
        bp_type: u32,
        config1: u64,
    }
    let attr =
        Attr { kind, size: 64, config, sample_period: 0, sample_type: 0, read_format: 0, flags: 1 | 1 << 5 | 1 << 6, wakeup_events: 0, bp_type: 0, config1: 0 };
    // SAFETY: the attribute struct lives across the call and its size field says how much the
    // kernel may read; pid 0 / cpu -1 is this thread on any CPU; no group, no flags.
    let fd = unsafe { libc::syscall(libc::SYS_perf_event_open, &attr as *const Attr, 0, -1, -1, 0) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        let paranoid = fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").map(|s| s.trim().to_string()).unwrap_or_else(|_| "?".into());
        return Err(match e.raw_os_error() {
            Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) => "the CPU (or the hypervisor) exposes no hardware performance counters".into(),
            Some(libc::EACCES) | Some(libc::EPERM) => format!("not permitted (kernel.perf_event_paranoid = {paranoid})"),
            _ => format!("perf_event_open: {e}"),
        });
    }
    Ok(fd as i32)
}

/// Whether this process may count hardware events with `perf_event_open`: Ok, or why not.
pub fn perf_counters() -> std::result::Result<(), String> {
    // The hardware cycle counter (PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES): if even that
    // cannot be opened, nothing can.
    let fd = open_event(0, 0)?;
    // SAFETY: fd is the descriptor the kernel just returned to us, closed once.
    unsafe { libc::close(fd) };
    Ok(())
}

/// One hardware event counted for the calling thread, in user space: started, stopped and
/// read around the code it measures. Closed on drop.
pub struct Counter {
    fd: i32,
}

// ioctls of a perf event descriptor (linux/perf_event.h: _IO('$', 0), _IO('$', 1), _IO('$', 3)).
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
const PERF_EVENT_IOC_RESET: libc::c_ulong = 0x2403;

impl Counter {
    /// The kernel's generic `dTLB-load-misses` event (PERF_TYPE_HW_CACHE: DTLB, read, miss).
    /// What it counts is the CPU's mapping of it: on AMD Zen the loads that miss the L1 DTLB,
    /// on Intel the loads whose translation misses every TLB level and walks.
    pub fn dtlb_load_misses() -> std::result::Result<Counter, String> {
        const HW_CACHE: u32 = 3;
        const DTLB: u64 = 3;
        const OP_READ: u64 = 0;
        const RESULT_MISS: u64 = 1;
        open_event(HW_CACHE, DTLB | OP_READ << 8 | RESULT_MISS << 16).map(|fd| Counter { fd })
    }

    /// Zero the count and start counting.
    pub fn start(&mut self) {
        // SAFETY: ioctls on our own perf descriptor, no argument.
        unsafe {
            libc::ioctl(self.fd, PERF_EVENT_IOC_RESET as _, 0);
            libc::ioctl(self.fd, PERF_EVENT_IOC_ENABLE as _, 0);
        }
    }

    /// Stop counting; the events since [`Counter::start`] (0 if the read fails).
    pub fn stop(&mut self) -> u64 {
        let mut v: u64 = 0;
        // SAFETY: an ioctl on our own descriptor, then a read of 8 bytes into a u64 we own.
        let n = unsafe {
            libc::ioctl(self.fd, PERF_EVENT_IOC_DISABLE as _, 0);
            libc::read(self.fd, &mut v as *mut u64 as *mut libc::c_void, 8)
        };
        if n == 8 {
            v
        } else {
            0
        }
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe { libc::close(self.fd) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_cpu_lists_parse() {
        assert_eq!(parse_size("32K"), Some(32 << 10));
        assert_eq!(parse_size("32M\n"), Some(32 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("K"), None);
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn contiguity_of_known_frames() {
        // Virtual pages 8..24: the first 8 map to frames 100..108 (aligned like their pages,
        // 100 % 4 == 8 % 4), then scattered frames, then one page missing.
        let mut f: Vec<Option<u64>> = (0..8).map(|i| Some(104 + i)).collect();
        f.extend([Some(7), Some(3), Some(50), Some(51), Some(52), Some(53), Some(9), None]);
        let c = contiguity(&f, 8);
        assert_eq!(c.pages, 16);
        assert_eq!(c.longest_run, 8);
        // Groups of 4: [0..4) and [4..8) good; [8..12) no; [12..16) no (has None).
        assert_eq!(c.groups4, 0.5);
        assert_eq!(c.groups8, 0.5);
        // Adjacent pairs: 7 in the first run, 50-51-52-53 gives 3, of 15.
        assert!((c.adjacent - 10.0 / 15.0).abs() < 1e-12);
        // Frames 52..56 for virtual 10..14 are contiguous but misaligned for a 4-group start.
        let g = contiguity(&[Some(50), Some(51), Some(52), Some(53)], 2);
        assert_eq!(g.groups4, 0.0, "no aligned 4-group inside");
    }

    #[test]
    fn pagemap_of_our_own_buffer_reads_or_says_why_not() {
        let mut m = crate::mem::Mapping::new(64 * PAGE, crate::mem::Pages::Base).unwrap();
        m.prefault();
        match frames("self", m.as_ptr() as usize, m.len()) {
            Ok(f) => {
                assert_eq!(f.len(), 64);
                assert!(f.iter().all(|x| x.is_some()), "prefaulted pages are present");
            }
            Err(HostError::Permission(msg)) => assert!(msg.contains("CAP_SYS_ADMIN"), "{msg}"),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn this_machine_describes_itself() {
        let cpu = current_cpu();
        assert!(allowed_cpus().contains(&cpu));
        assert!(llc_domain(cpu).contains(&cpu));
        assert!(!smt_siblings(cpu).contains(&cpu));
        // Either works or gives a reason; never panics.
        if let Err(why) = perf_counters() {
            assert!(!why.is_empty());
        }
        match Counter::dtlb_load_misses() {
            // Where the CPU counts them: a chase past every TLB misses on most accesses, one
            // within the L1 DTLB on almost none.
            Ok(mut c) => {
                let mut per = |pages: usize| {
                    let mut m = crate::mem::Mapping::new(pages * crate::PAGE, crate::mem::Pages::Base).unwrap();
                    m.prefault();
                    let mut chain = crate::chase::Chain::build(&mut m, pages, 1).unwrap();
                    chain.walk(4 * pages as u64);
                    c.start();
                    chain.walk(8 * pages as u64);
                    c.stop() as f64 / (8 * pages) as f64
                };
                let (few, many) = (per(8), per(65536));
                assert!(few < 0.1 && many > 0.5, "dTLB-load-misses per access: {few} at 8 pages, {many} at 65,536");
            }
            Err(why) => assert!(!why.is_empty() && !why.contains('\n'), "{why}"),
        }
        let _ = hypervisor();
    }
}
