//! A trace's mappings sidecar: `TRACE.maps`, the traced program's `/proc/PID/maps` lines
//! (`xlat trace` samples the file while the program runs and keeps every mapping it saw).
//! With `--prefault`, a trace's regions are the mappings it touched, so a region ends where
//! the program's mapping ends rather than where its touched pages happen to stop.

use std::collections::HashMap;
use xlat_core::{FileMap, Region};

/// One mapping: `[start, end)`, its name (the mapped file, `[heap]`, `[stack]`, or empty for
/// anonymous memory) and, for a private mapping of a file, how it maps the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub name: String,
    pub file: Option<FileMap>,
}

/// The sidecar of the trace file `trace`.
pub fn sidecar_path(trace: &str) -> String {
    format!("{trace}.maps")
}

/// The sidecar line recording a mapped file's size (`xlat trace` adds one per file it could
/// read): `# file-size BYTES PATH`.
pub const FILE_SIZE: &str = "# file-size ";

/// The sidecar line recording a run of pages resident when the trace's window began
/// (`xlat trace` reads `/proc/PID/pagemap`): `# resident START END` (hexadecimal, [START, END)).
pub const RESIDENT: &str = "# resident ";

/// The sidecar line recording a run of code pages the program had run before the trace's
/// window began (xlat's valgrind tool, `--executed`): `# executed START END` (as `# resident`).
pub const EXECUTED: &str = "# executed ";

/// The `prefix` lines of a sidecar ([`RESIDENT`], [`EXECUTED`]) as byte ranges, in the file's
/// order. Else the first bad line's number and what is wrong with it.
pub fn page_runs(text: &str, prefix: &str) -> Result<Vec<(u64, u64)>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.strip_prefix(prefix) else { continue };
        let bad = |what: &str| format!("line {}: {what} (expected {prefix}START END, hexadecimal)", i + 1);
        let mut f = rest.split(' ');
        let mut num = || -> Result<u64, String> {
            let x = f.next().ok_or_else(|| bad("too few fields"))?;
            u64::from_str_radix(x, 16).map_err(|_| bad(&format!("'{x}' is not hexadecimal")))
        };
        let (a, b) = (num()?, num()?);
        if a >= b || a % 4096 != 0 || b % 4096 != 0 {
            return Err(bad("the range is empty or not page-aligned"));
        }
        out.push((a, b));
    }
    Ok(out)
}

/// Parse `/proc/PID/maps` text: `START-END PERMS OFFSET DEV INODE [PATH]` per line, blank
/// lines and `#` comments allowed. A mapping of a file (a path, a nonzero inode) is
/// file-backed; its file's size comes from a `# file-size BYTES PATH` line, or else is where
/// the furthest mapping of the file ends in it. Else the first bad line's number and what is
/// wrong with it.
pub fn parse(text: &str) -> Result<Vec<Mapping>, String> {
    let mut out = Vec::new();
    let mut sizes: HashMap<String, u64> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let bad = |what: &str| format!("line {}: {what} (expected START-END PERMS OFFSET DEV INODE [PATH], as in /proc/PID/maps)", i + 1);
        if let Some(rest) = line.strip_prefix(FILE_SIZE) {
            let (bytes, path) = rest.split_once(' ').ok_or_else(|| bad("a file-size line without a path"))?;
            let bytes = bytes.parse::<u64>().map_err(|_| bad(&format!("'{bytes}' is not a file size")))?;
            sizes.insert(path.to_string(), bytes);
            continue;
        }
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let range = fields.next().ok_or_else(|| bad("empty"))?;
        let (s, e) = range.split_once('-').ok_or_else(|| bad("no START-END range"))?;
        let hex = |x: &str| u64::from_str_radix(x, 16).map_err(|_| bad(&format!("'{x}' is not a hexadecimal address")));
        let (start, end) = (hex(s)?, hex(e)?);
        if start >= end || start % 4096 != 0 || end % 4096 != 0 {
            return Err(bad("the range is empty or not page-aligned"));
        }
        let head: Vec<&str> = fields.by_ref().take(4).collect();
        let [perms, offset, _dev, inode] = head[..] else { return Err(bad("fewer than five fields")) };
        let name = fields.collect::<Vec<_>>().join(" ");
        let offset = hex(offset)?;
        let file = (name.starts_with('/') && inode != "0" && offset % 4096 == 0).then(|| FileMap {
            offset,
            size: 0,
            exec: perms.as_bytes().get(2) == Some(&b'x'),
            writable: perms.as_bytes().get(1) == Some(&b'w'),
        });
        out.push(Mapping { start, end, name, file });
    }
    // (A file's mappings end at or before its end, rounded up to a page.)
    let mut extent: HashMap<String, u64> = HashMap::new();
    for m in &out {
        if let Some(f) = m.file {
            let e = extent.entry(m.name.clone()).or_default();
            *e = (*e).max(f.offset + (m.end - m.start));
        }
    }
    for m in &mut out {
        if let Some(f) = m.file.as_mut() {
            f.size = sizes.get(&m.name).copied().unwrap_or(extent[&m.name]);
        }
    }
    Ok(out)
}

/// Every mapping as a region (overlapping mappings, e.g. a heap seen at two sizes, become
/// one): a trace's regions when it is not prefaulted, so that the OS knows its file
/// mappings and where huge pages may go.
pub fn all_regions(maps: Vec<Mapping>) -> Vec<Region> {
    merge(maps).into_iter().enumerate().map(|(k, m)| region(k, m)).collect()
}

fn region(k: usize, m: Mapping) -> Region {
    let name = if m.name.is_empty() { format!("anon{k}") } else { m.name };
    Region { name, start: m.start, len: m.end - m.start, file: m.file }
}

fn merge(mut maps: Vec<Mapping>) -> Vec<Mapping> {
    maps.sort_by_key(|m| (m.start, m.end));
    let mut merged: Vec<Mapping> = Vec::new();
    for m in maps {
        match merged.last_mut() {
            Some(l) if m.start < l.end => {
                l.end = l.end.max(m.end);
                if l.name.is_empty() {
                    l.name = m.name;
                    l.file = m.file;
                }
            }
            _ => merged.push(m),
        }
    }
    merged
}

/// Regions for a trace that touched `pages` (4 KB page numbers, sorted, distinct): every
/// mapping that holds a touched page (overlapping mappings, e.g. a heap seen at two sizes,
/// become one); touched pages outside every mapping (one mapped and unmapped between two
/// samples) get regions of their own from `uncovered`.
pub fn regions(maps: Vec<Mapping>, pages: &[u64], uncovered: impl FnOnce(Vec<u64>) -> Vec<Region>) -> Vec<Region> {
    let merged = merge(maps);
    let mut out = Vec::new();
    let mut outside = Vec::new();
    let mut next = 0; // pages are sorted: each mapping's pages follow the previous one's
    for (k, m) in merged.iter().enumerate() {
        let (lo, hi) = (m.start >> 12, m.end >> 12);
        let mut touched = false;
        while next < pages.len() && pages[next] < hi {
            if pages[next] >= lo {
                touched = true;
            } else {
                outside.push(pages[next]);
            }
            next += 1;
        }
        if touched {
            out.push(region(k, m.clone()));
        }
    }
    outside.extend_from_slice(&pages[next..]);
    if !outside.is_empty() {
        // (regions_of_pages names them pagesN; they lie between or beyond the mappings.)
        let extra: Vec<Region> = uncovered(outside);
        out.extend(extra.into_iter().filter(|r| !out_overlaps(&merged, r)));
        out.sort_by_key(|r| r.start);
    }
    out
}

/// Whether `r` overlaps a mapping (a run of uncovered pages merged across a gap may reach
/// into one; it is then left out, its pages kept by the mapping's region or dropped with it).
fn out_overlaps(maps: &[Mapping], r: &Region) -> bool {
    maps.iter().any(|m| m.start < r.start + r.len && r.start < m.end)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon
00e03000-00e24000 rw-p 00000000 00:00 0           [heap]
00e24000-011f7000 rw-p 00000000 00:00 0           [heap]
7f0000000000-7f0000100000 rw-p 00000000 00:00 0
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0   [stack]
";

    #[test]
    fn parses_proc_maps_lines() {
        let m = parse(MAPS).unwrap();
        assert_eq!(m.len(), 5);
        let text = FileMap { offset: 0, size: 0x52000, exec: true, writable: false };
        assert_eq!(m[0], Mapping { start: 0x400000, end: 0x452000, name: "/usr/bin/dbus-daemon".into(), file: Some(text) });
        assert_eq!(m[1].file, None, "the heap is anonymous");
        assert_eq!(m[3].name, "");
        assert_eq!(m[4].name, "[stack]");
    }

    #[test]
    fn bad_lines_name_the_line() {
        for (text, what) in [
            ("zz-1000 r--p 0 0:0 0\n", "line 1: 'zz' is not a hexadecimal"),
            ("\n1000 r--p 0 0:0 0\n", "line 2: no START-END"),
            ("2000-1000 r--p 0 0:0 0\n", "line 1: the range is empty"),
            ("1000-2001 r--p 0 0:0 0\n", "line 1: the range is empty or not page-aligned"),
            ("1000-2000 r--p 0\n", "line 1: fewer than five fields"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.starts_with(what), "{text:?}: {e}");
        }
    }

    /// A program's image: read-only data, code, RELRO and data of one file, each mapping at
    /// its offset; the file's size from its `# file-size` line (else where its furthest
    /// mapping ends); a deleted file or one without an inode is anonymous.
    #[test]
    fn file_mappings_know_their_file() {
        let text = "\
55d0a0000000-55d0a0002000 r--p 00000000 08:02 42 /usr/bin/xz
55d0a0002000-55d0a0019000 r-xp 00002000 08:02 42 /usr/bin/xz
55d0a001a000-55d0a001c000 rw-p 0001a000 08:02 42 /usr/bin/xz
7f0000000000-7f0000001000 r--p 00000000 00:00 0 /memfd:x
7f0000001000-7f0000002000 r--p 00000000 08:02 43 /usr/lib/libz.so
# file-size 111000 /usr/bin/xz
";
        let m = parse(text).unwrap();
        let f = |i: usize| m[i].file.unwrap();
        assert_eq!((f(0).offset, f(0).exec, f(0).writable, f(0).size), (0, false, false, 111_000));
        assert_eq!((f(1).offset, f(1).exec, f(1).writable), (0x2000, true, false));
        assert_eq!((f(2).offset, f(2).exec, f(2).writable), (0x1a000, false, true));
        assert_eq!(m[3].file, None, "no inode");
        assert_eq!(f(4).size, 4096, "no size line: the mapped extent");
        let r = all_regions(m);
        assert_eq!(r.len(), 5);
        assert_eq!(r[1].file, Some(f_of(text, 1)));
        assert!(parse("# file-size many /x\n").unwrap_err().contains("'many' is not a file size"));
    }

    fn f_of(text: &str, i: usize) -> FileMap {
        parse(text).unwrap()[i].file.unwrap()
    }

    /// A mapping the trace never touched is left out; two samples of a growing heap become
    /// one region; a page outside every mapping still gets a region.
    #[test]
    fn regions_are_the_touched_mappings() {
        let mut maps = parse(MAPS).unwrap();
        maps.push(Mapping { start: 0xe03000, end: 0x1000000, name: "[heap]".into(), file: None }); // an earlier sample
        let pages = vec![0x400, 0xe10, 0x1100, 0x7ffc00000, 0x9000000];
        let r = regions(maps, &pages, crate::trace::regions_of_pages);
        let spans: Vec<(&str, u64, u64)> = r.iter().map(|r| (r.name.as_str(), r.start, r.len)).collect();
        let want: Vec<(&str, u64, u64)> = vec![
            ("/usr/bin/dbus-daemon", 0x40_0000, 0x5_2000),
            ("[heap]", 0xe0_3000, 0x11f_7000 - 0xe0_3000),
            ("pages0", 0x900_0000 << 12, 4096),
            ("[stack]", 0x7ffc_0000_0000, 0x2_1000),
        ];
        assert_eq!(spans, want);
    }
}
