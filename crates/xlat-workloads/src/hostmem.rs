//! The host memory a workload may use: checked before its input is built, so that a run that
//! cannot fit is refused in one line (naming the need and the limit) instead of dying in the
//! middle of an allocation.

use std::fs;

/// Bytes this process may still allocate: the memory the kernel reports available (page cache
/// it can drop included) plus free swap, capped by the process's address-space and data-size
/// limits (`ulimit -v`, `ulimit -d`). None where none of that can be read (not Linux).
pub fn available() -> Option<u64> {
    let meminfo = fs::read_to_string("/proc/meminfo").ok();
    let status = fs::read_to_string("/proc/self/status").ok();
    let limits = fs::read_to_string("/proc/self/limits").ok();
    let system = kb(meminfo.as_deref(), "MemAvailable:").map(|m| m + kb(meminfo.as_deref(), "SwapFree:").unwrap_or(0));
    // What a limit leaves: the soft limit less what the process already uses of it.
    let left = |name: &str, used: &str| -> Option<u64> {
        // "Max address space   unlimited   unlimited   bytes": the soft limit is the first value.
        let line = limits.as_deref()?.lines().find(|l| l.starts_with(name))?;
        let soft: u64 = line[name.len()..].split_whitespace().next()?.parse().ok()?;
        Some(soft.saturating_sub(kb(status.as_deref(), used).unwrap_or(0)))
    };
    [system, left("Max address space", "VmSize:"), left("Max data size", "VmData:")].into_iter().flatten().min()
}

/// A "Name:  123456 kB" field of a /proc file, in bytes.
fn kb(text: Option<&str>, name: &str) -> Option<u64> {
    let line = text?.lines().find(|l| l.starts_with(name))?;
    let n: u64 = line[name.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(n * 1024)
}

/// "17.2 GB", "512.0 MB".
pub fn human(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.1} GB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MB", bytes as f64 / (1u64 << 20) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_host_has_some_memory_and_sizes_read_as_people_write_them() {
        if cfg!(target_os = "linux") {
            let a = available().expect("Linux has /proc/meminfo");
            assert!(a > 1 << 20, "{a}");
        }
        assert_eq!(human(3 << 29), "1.5 GB");
        assert_eq!(human(512 << 20), "512.0 MB");
    }
}
