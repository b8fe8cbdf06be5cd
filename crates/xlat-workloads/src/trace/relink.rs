//! Relinking a traced program: where its code and data would lie had the linker used another
//! `max-page-size` (`loader.max_page_size`, seed 002 §3.5, Fig. 1). `xlat trace` records the
//! executable's loadable segments (`# elf-load` lines in the sidecar); this lays them out as
//! LLD does without `-z separate-code`: the file packed (a segment's content starts right
//! after the previous one's, so a file page may hold the end of one segment and the start of
//! the next), and each segment's address advanced to `align(dot, M) + dot % M`, so that it is
//! congruent to its file offset modulo M. With M = 4 KB every segment after a shared file
//! page lies one page further from its file offset than the one before: out of phase with the
//! file for any coalescing or superpage size. With M ≥ the coalescing size it is in phase.
//!
//! The trace's references to the image move with their segment, and the mappings that
//! followed the image (its brk heap, what the loader put beside it) move up by a multiple of
//! 2 MB to make room; the program's other mappings stay where they were.
//!
//! Shared objects (`# elf-lib` lines) are placed as well as relinked: valgrind's loader packs
//! them 4 KB apart, where Linux (6.18 on the project's host: `/proc/self/maps`) and FreeBSD's
//! rtld (MAP_ALIGNED_SUPER) map an object spanning 2 MB or more at a 2 MB boundary, so that
//! its code, at file offset 0, lies in phase with its file (`loader.library_base`).

use crate::trace::maps::Mapping;
use xlat_core::os::OsOp;
use xlat_core::{FileMap, Ref};

/// ELF segment flags.
const PF_X: u32 = 1;
const PF_W: u32 = 2;

/// Sections inside a packed segment start at this alignment (an assumption: 64 bytes, a
/// cache line, as code and read-only data sections usually ask).
const SECTION_ALIGN: u64 = 64;

/// The sidecar line of one loadable segment of the traced executable:
/// `# elf-load OFFSET VADDR FILESZ MEMSZ FLAGS PATH` (numbers in hexadecimal).
pub const ELF_LOAD: &str = "# elf-load ";

/// The same for a loadable segment of a shared object the program mapped.
pub const ELF_LIB: &str = "# elf-lib ";

/// One PT_LOAD program header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub offset: u64,
    pub vaddr: u64,
    pub filesz: u64,
    pub memsz: u64,
    pub flags: u32,
}

/// The traced executable or a shared object it mapped: its path and loadable segments, in
/// address order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub path: String,
    pub segments: Vec<Segment>,
    /// A shared object (an `# elf-lib` line), not the executable.
    pub shared: bool,
}

impl Image {
    /// Bytes from its first segment's page to its last segment's end: what the loader maps.
    pub fn span(&self) -> u64 {
        match (self.segments.first(), self.segments.last()) {
            (Some(a), Some(b)) => b.vaddr + b.memsz - (a.vaddr & !0xfff),
            _ => 0,
        }
    }
}

/// The `# elf-load` and `# elf-lib` lines of a sidecar, as images (one per path). Else the
/// first bad line's number and what is wrong with it.
pub fn parse(text: &str) -> Result<Vec<Image>, String> {
    let mut out: Vec<Image> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let (prefix, rest, shared) = match (line.strip_prefix(ELF_LOAD), line.strip_prefix(ELF_LIB)) {
            (Some(rest), _) => (ELF_LOAD, rest, false),
            (None, Some(rest)) => (ELF_LIB, rest, true),
            (None, None) => continue,
        };
        let bad = |what: &str| format!("line {}: {what} (expected {prefix}OFFSET VADDR FILESZ MEMSZ FLAGS PATH, hexadecimal)", i + 1);
        let mut f = rest.splitn(6, ' ');
        let mut num = || -> Result<u64, String> {
            let x = f.next().ok_or_else(|| bad("too few fields"))?;
            u64::from_str_radix(x, 16).map_err(|_| bad(&format!("'{x}' is not hexadecimal")))
        };
        let (offset, vaddr, filesz, memsz, flags) = (num()?, num()?, num()?, num()?, num()?);
        let path = f.next().filter(|p| !p.is_empty()).ok_or_else(|| bad("no path"))?.to_string();
        if filesz > memsz || vaddr.checked_add(memsz).is_none() || offset.checked_add(filesz).is_none() {
            return Err(bad("a segment larger in the file than in memory, or past the end of the address space"));
        }
        let seg = Segment { offset, vaddr, filesz, memsz, flags: flags as u32 };
        match out.iter_mut().find(|im| im.path == path) {
            Some(im) => im.segments.push(seg),
            None => out.push(Image { path, segments: vec![seg], shared }),
        }
    }
    for im in &mut out {
        im.segments.sort_by_key(|s| s.vaddr);
        if im.segments.windows(2).any(|w| w[0].vaddr + w[0].memsz > w[1].vaddr) {
            return Err(format!("{}: its loadable segments overlap", im.path));
        }
    }
    Ok(out)
}

fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

/// The segments as LLD lays them out with `max-page-size` `m` (a power of two ≥ 4 KB) and a
/// packed file: the first stays where it is; each next one follows in the file and is
/// placed at `align(dot, m) + dot % m` in memory.
pub fn lld_layout(segs: &[Segment], m: u64) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::with_capacity(segs.len());
    for s in segs {
        let Some(p) = out.last() else {
            out.push(*s);
            continue;
        };
        let dot = align_up(p.vaddr + p.memsz, SECTION_ALIGN);
        let vaddr = align_up(dot, m) + dot % m;
        let packed = align_up(p.offset + p.filesz, SECTION_ALIGN);
        // (Congruent to the address; only a segment with zero-filled memory before it, whose
        // file content ends before its memory does, needs the padding.)
        let offset = packed + (vaddr % m + m - packed % m) % m;
        out.push(Segment { offset, vaddr, ..*s });
    }
    out
}

/// Where a traced program's images lie (`loader.max_page_size`, `loader.library_base`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Relink every image with this max-page-size; `None`: as linked.
    pub max_page: Option<u64>,
    /// Place each shared object spanning 2 MB or more at a multiple of this (4096: where the
    /// trace saw it).
    pub library_align: u64,
    /// Touch the pages resident when the window began before its first reference
    /// (`loader.fast_forward=resident`, [`crate::trace::TraceSource::fast_forward`]).
    pub fast_forward: bool,
}

impl Layout {
    /// The images as linked, where the trace saw them, and nothing touched before the window.
    pub const AS_TRACED: Layout = Layout { max_page: None, library_align: 4096, fast_forward: false };

    /// The base alignment of `image` under this layout.
    pub fn base_align(&self, image: &Image) -> u64 {
        if image.shared && image.span() >= 2 << 20 {
            self.library_align
        } else {
            4096
        }
    }
}

/// The moves of relinked images: references in `[from, to)` shift by `delta`, the ranges
/// sorted and disjoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relink {
    lo: u64,
    hi: u64,
    moves: Vec<(u64, u64, i64)>,
}

impl Relink {
    /// No move.
    pub fn none() -> Relink {
        Relink { lo: 0, hi: 0, moves: Vec::new() }
    }

    fn new(mut moves: Vec<(u64, u64, i64)>) -> Relink {
        moves.retain(|m| m.2 != 0 && m.0 < m.1);
        moves.sort_unstable_by_key(|m| m.0);
        debug_assert!(moves.windows(2).all(|w| w[0].1 <= w[1].0), "overlapping moves: {moves:x?}");
        // (Neighbours that shift alike are one range.)
        let mut out: Vec<(u64, u64, i64)> = Vec::with_capacity(moves.len());
        for m in moves {
            match out.last_mut() {
                Some(l) if l.1 == m.0 && l.2 == m.2 => l.1 = m.1,
                _ => out.push(m),
            }
        }
        let lo = out.first().map_or(0, |m| m.0);
        let hi = out.last().map_or(0, |m| m.1);
        Relink { lo, hi, moves: out }
    }

    /// Whether it moves nothing.
    pub fn is_empty(&self) -> bool {
        self.moves.is_empty()
    }

    /// These moves, then `next`'s (whose ranges are where these left the references), as one:
    /// a program's images are relinked one after another, and its references then move once.
    pub fn then(&self, next: &Relink) -> Relink {
        // This one's ranges and the unmoved gaps between them cover every address.
        let mut pieces = Vec::with_capacity(2 * self.moves.len() + 1);
        let mut at = 0u64;
        for &(a, b, d) in &self.moves {
            if at < a {
                pieces.push((at, a, 0i64));
            }
            pieces.push((a, b, d));
            at = b;
        }
        pieces.push((at, u64::MAX, 0));
        let mut out = Vec::new();
        for (lo, hi, d) in pieces {
            // Where this piece lies after these moves, cut by the next ones'.
            let back = |x: u64| x.wrapping_add_signed(-d);
            let (mut cur, end) = (lo.wrapping_add_signed(d), hi.wrapping_add_signed(d));
            for &(a, b, d2) in &next.moves {
                if b <= cur || a >= end {
                    continue;
                }
                let (s, e) = (a.max(cur), b.min(end));
                out.push((back(cur), back(s), d));
                out.push((back(s), back(e), d + d2));
                cur = e;
            }
            out.push((back(cur), back(end), d));
        }
        Relink::new(out)
    }

    /// Shift every reference into the image to where the relinked image holds it, and every
    /// OS call by where its first page moves (a sleep is left alone: its address is a
    /// duration).
    pub fn apply(&self, refs: &mut [Ref]) {
        if self.moves.is_empty() {
            return;
        }
        // (References alternate between runs into a few ranges, the code's and the data's:
        // the last two ranges found are asked first.)
        let (mut last, mut before) = (self.moves[0], self.moves[0]);
        for r in refs {
            if r.va >= self.lo && r.va < self.hi && !(r.is_os_call() && r.size == OsOp::Sleep as u8) {
                let va = r.va;
                if last.0 <= va && va < last.1 {
                    r.va = va.wrapping_add_signed(last.2);
                    continue;
                }
                if before.0 <= va && va < before.1 {
                    r.va = va.wrapping_add_signed(before.2);
                    std::mem::swap(&mut last, &mut before);
                    continue;
                }
                let i = self.moves.partition_point(|m| m.1 <= va);
                if let Some(&m) = self.moves.get(i) {
                    if m.0 <= va {
                        r.va = va.wrapping_add_signed(m.2);
                        before = last;
                        last = m;
                    }
                }
            }
        }
    }
}

/// Relink `image` with `max-page-size` `layout` (a power of two of at least 4 KB; `None`
/// keeps its segments as linked) and place it at a base that is a multiple of `base_align`
/// too (4096 for any), in a program whose mappings are `maps`: the mappings with the image's
/// replaced by the relinked (or moved) image's, and the brk heap and whatever else followed
/// the image moved up with it; and the moves for its references. Else why it cannot be done
/// (the image is not mapped, or the relinked image would overlap another mapping).
pub fn relink(maps: &[Mapping], image: &Image, layout: Option<u64>, base_align: u64) -> Result<(Vec<Mapping>, Relink), String> {
    let segs = &image.segments;
    let first = segs.first().ok_or_else(|| format!("{}: no loadable segments", image.path))?;
    // The load bias: where the mapping of the first segment's file page starts, less its
    // link-time address.
    let page = |x: u64| x & !0xfff;
    let head = maps
        .iter()
        .filter(|mp| mp.name == image.path && mp.file.is_some_and(|f| f.offset == page(first.offset)))
        .min_by_key(|mp| mp.start)
        .ok_or_else(|| format!("{}: the trace's mappings do not include its first segment", image.path))?;
    let bias = head.start.wrapping_sub(page(first.vaddr));
    // A position-independent image (loaded at a bias) goes where the loader would put one
    // whose segments ask for `m` alignment: at the next multiple of `m` (Linux and FreeBSD
    // align a PIE's base to its largest p_align), or of `base_align` if larger.
    let align = layout.unwrap_or(4096).max(base_align);
    let new_bias = if bias == 0 { 0 } else { align_up(bias, align) };
    if layout.is_none() && new_bias == bias {
        return Ok((maps.to_vec(), Relink::none()));
    }
    let old_lo = head.start;
    let last = segs.last().expect("not empty");
    let old_hi = align_up(bias.wrapping_add(last.vaddr + last.memsz), 4096);
    // (The image's mappings, and the anonymous ones that start inside it: its zero-filled
    // tail, which the sidecar may also show merged with an anonymous mapping after it.)
    let inside = |mp: &Mapping| mp.start < old_hi && old_lo < mp.end && (mp.name == image.path || mp.file.is_none() && old_lo <= mp.start);
    // The image's new mappings and the moves of its references.
    let (placed, mut moves, new_hi) = match layout {
        Some(m) => {
            let new = lld_layout(segs, m);
            let new_last = new.last().expect("not empty");
            let new_hi = align_up(new_bias.wrapping_add(new_last.vaddr + new_last.memsz), 4096);
            let size = new.iter().map(|s| s.offset + s.filesz).max().unwrap_or(0);
            let moves: Vec<(u64, u64, i64)> = segs
                .iter()
                .zip(&new)
                .map(|(o, n)| {
                    (
                        bias.wrapping_add(o.vaddr),
                        bias.wrapping_add(o.vaddr + o.memsz),
                        new_bias.wrapping_add(n.vaddr).wrapping_sub(bias.wrapping_add(o.vaddr)) as i64,
                    )
                })
                .collect();
            let placed: Vec<Mapping> = new
                .iter()
                .map(|n| {
                    let file = FileMap { offset: page(n.offset), size, exec: n.flags & PF_X != 0, writable: n.flags & PF_W != 0 };
                    Mapping {
                        start: page(new_bias.wrapping_add(n.vaddr)),
                        end: align_up(new_bias.wrapping_add(n.vaddr + n.memsz), 4096),
                        name: image.path.clone(),
                        file: Some(file),
                    }
                })
                .collect();
            (placed, moves, new_hi)
        }
        None => {
            // As linked, moved whole: its mappings as the trace saw them, further up.
            let d = new_bias - bias;
            let placed = maps.iter().filter(|mp| inside(mp)).map(|mp| Mapping { start: mp.start + d, end: mp.end + d, ..mp.clone() }).collect();
            (placed, vec![(old_lo, old_hi, d as i64)], old_hi + d)
        }
    };
    // The mappings right after the image (its brk heap, whatever the loader put next to it)
    // make room for a larger one: they move up together by a multiple of 2 MB, which keeps
    // each one's alignment, as far as the first gap that absorbs the move.
    let shift = align_up(new_hi.saturating_sub(old_hi), 2 << 20);
    let mut after: Vec<&Mapping> = maps.iter().filter(|mp| mp.start >= old_hi && !inside(mp)).collect();
    after.sort_by_key(|mp| mp.start);
    let (mut limit, mut moved_end) = (new_hi, old_hi);
    for mp in after {
        if shift == 0 || mp.start >= limit {
            break;
        }
        moved_end = moved_end.max(mp.end);
        limit = limit.max(mp.end + shift);
    }
    if moved_end > old_hi {
        moves.push((old_hi, moved_end, shift as i64));
    }
    let mut out = Vec::new();
    for mp in maps {
        if inside(mp) {
            continue; // the image's, with its zero-filled tail: replaced below
        }
        if mp.start >= old_hi && mp.start < moved_end {
            out.push(Mapping { start: mp.start + shift, end: mp.end + shift, ..mp.clone() });
            continue;
        }
        out.push(mp.clone());
    }
    for n in placed {
        if let Some(c) = out.iter().find(|o| o.start < n.end && n.start < o.end && o.name != image.path) {
            let name = if c.name.is_empty() { "an anonymous mapping" } else { c.name.as_str() };
            let how = match layout {
                Some(m) => format!("relinked with max-page-size {} KB", m >> 10),
                None => format!("placed at a {} KB boundary", align >> 10),
            };
            return Err(format!("{} {how} would overlap {name} at {:#x}-{:#x}", image.path, c.start, c.end));
        }
        out.push(n);
    }
    Ok((out, Relink::new(moves)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use xlat_core::RefKind;

    /// Fig. 1's layout: read-only data (with the ELF header) ending inside file page 6, then
    /// code, then more read-only data.
    fn fig1() -> Vec<Segment> {
        vec![
            Segment { offset: 0, vaddr: 0x20_0000, filesz: 0x6800, memsz: 0x6800, flags: 4 },
            Segment { offset: 0x6800, vaddr: 0x20_6800, filesz: 0x30_0000, memsz: 0x30_0000, flags: 5 },
            Segment { offset: 0x30_6800, vaddr: 0x50_6800, filesz: 0x1000, memsz: 0x1000, flags: 4 },
        ]
    }

    /// §3.5's worked example: with 4 KB the shared file page 6 is mapped at virtual page 6
    /// (as rodata) and 7 (as code), and each later segment slips one more page; with 16 KB
    /// and 2 MB every segment is congruent to its file offset modulo that size.
    #[test]
    fn lld_layout_reproduces_the_phase_shift() {
        let l4 = lld_layout(&fig1(), 4096);
        assert_eq!(l4[1].offset, 0x6800, "packed: the code follows the rodata in file page 6");
        assert_eq!(l4[1].vaddr, 0x20_7800, "and lies at virtual page 7");
        assert_eq!((l4[1].vaddr - l4[1].offset) % 0x4000, 0x1000, "4 KB out of phase mod 16 KB");
        assert_eq!((l4[2].vaddr - l4[2].offset) % 0x4000, 0x2000, "the next segment slips again");
        for m in [0x4000u64, 0x8000, 2 << 20] {
            for s in lld_layout(&fig1(), m) {
                assert_eq!(s.vaddr % m, s.offset % m, "max-page-size {m:#x}");
            }
        }
        let l2m = lld_layout(&fig1(), 2 << 20);
        assert_eq!(l2m[1].vaddr, 0x40_6800, "the next 2 MB boundary: virtual superpage 2 holds file superpage 0's code");
    }

    #[test]
    fn relink_moves_the_image_and_the_heap_after_it() {
        let path = "/bin/prog".to_string();
        let segs = fig1();
        let file = |offset: u64, exec: bool| Some(FileMap { offset, size: 0x30_7800, exec, writable: false });
        let maps = vec![
            Mapping { start: 0x20_0000, end: 0x20_7000, name: path.clone(), file: file(0, false) },
            Mapping { start: 0x20_6000, end: 0x50_7000, name: path.clone(), file: file(0x6000, true) },
            Mapping { start: 0x50_6000, end: 0x50_8000, name: path.clone(), file: file(0x30_6000, false) },
            Mapping { start: 0x50_8000, end: 0x60_0000, name: "[heap]".into(), file: None },
            Mapping { start: 0x7f00_0000_0000, end: 0x7f00_0010_0000, name: String::new(), file: None },
        ];
        let image = Image { path: path.clone(), segments: segs, shared: false };
        let (out, r) = relink(&maps, &image, Some(4096), 4096).unwrap();
        let code: Vec<&Mapping> = out.iter().filter(|m| m.file.is_some_and(|f| f.exec)).collect();
        assert_eq!((code.len(), code[0].start, code[0].file.unwrap().offset), (1, 0x20_7000, 0x6000));
        let heap = out.iter().find(|m| m.name == "[heap]").unwrap();
        assert_eq!(heap.start, 0x70_8000, "2 MB further: the image grew by two pages");
        let mut refs = vec![Ref::load(0x20_6900, 1), Ref::load(0x20_6100, 1), Ref::load(0x50_9000, 1), Ref::load(0x7f00_0000_0000, 1)];
        r.apply(&mut refs);
        let vas: Vec<u64> = refs.iter().map(|r| r.va).collect();
        assert_eq!(vas, vec![0x20_7900, 0x20_6100, 0x70_9000, 0x7f00_0000_0000], "code moves a page, rodata stays, the heap follows");
        // With 2 MB the image grows by 2 MB and more: a library 1 MB past it moves 4 MB up,
        // and the mapping far above stays.
        let mut crowded = maps.clone();
        crowded[3] = Mapping { start: 0x60_0000, end: 0x61_0000, name: "/lib/libc.so".into(), file: None };
        let (out, _) = relink(&crowded, &image, Some(2 << 20), 4096).unwrap();
        let libc = out.iter().find(|m| m.name == "/lib/libc.so").unwrap();
        assert_eq!(libc.start, 0xa0_0000);
        assert!(out.iter().any(|m| m.start == 0x7f00_0000_0000));
    }

    /// A position-independent executable loaded at a bias that is not a multiple of the new
    /// max-page-size moves whole to the next multiple (valgrind loads PIEs at 0x108000).
    #[test]
    fn a_pie_moves_to_an_aligned_base() {
        let path = "/bin/pie".to_string();
        let segs: Vec<Segment> = fig1().into_iter().map(|s| Segment { vaddr: s.vaddr - 0x20_0000, ..s }).collect();
        let file = |offset: u64, exec: bool| Some(FileMap { offset, size: 0x30_7800, exec, writable: false });
        let maps = vec![
            Mapping { start: 0x10_8000, end: 0x10_e000, name: path.clone(), file: file(0, false) },
            Mapping { start: 0x10_e000, end: 0x40_f000, name: path.clone(), file: file(0x6000, true) },
        ];
        let (out, r) = relink(&maps, &Image { path, segments: segs, shared: false }, Some(2 << 20), 4096).unwrap();
        let code = out.iter().find(|m| m.file.is_some_and(|f| f.exec)).unwrap();
        assert_eq!((code.start, code.file.unwrap().offset), (0x40_6000, 0x6000), "base 2 MB, code at the next 2 MB");
        let mut refs = vec![Ref::load(0x10_8010, 1), Ref::load(0x10_e900, 1)];
        r.apply(&mut refs);
        assert_eq!((refs[0].va, refs[1].va), (0x20_0010, 0x40_6900));
    }

    /// A shared object as valgrind's loader packs it (code at file offset 0, its base 0x6d000
    /// past a 2 MB boundary), then a small one right after it.
    fn packed_libraries() -> (Vec<Mapping>, Image, Image) {
        let file = |offset: u64, size: u64, exec: bool| Some(FileMap { offset, size, exec, writable: !exec });
        let big = Image {
            path: "/lib/libbig.so".into(),
            segments: vec![
                Segment { offset: 0, vaddr: 0, filesz: 0x30_0000, memsz: 0x30_0000, flags: 5 },
                Segment { offset: 0x30_0000, vaddr: 0x30_1000, filesz: 0x2000, memsz: 0x3000, flags: 6 },
            ],
            shared: true,
        };
        let small =
            Image { path: "/lib/libsmall.so".into(), segments: vec![Segment { offset: 0, vaddr: 0, filesz: 0x8000, memsz: 0x8000, flags: 5 }], shared: true };
        let maps = vec![
            Mapping { start: 0x806_d000, end: 0x836_d000, name: big.path.clone(), file: file(0, 0x30_2000, true) },
            Mapping { start: 0x836_e000, end: 0x837_1000, name: big.path.clone(), file: file(0x30_0000, 0x30_2000, false) },
            // (Its zero-filled tail, merged with an anonymous mapping after it.)
            Mapping { start: 0x837_0000, end: 0x837_4000, name: String::new(), file: None },
            Mapping { start: 0x838_0000, end: 0x838_8000, name: small.path.clone(), file: file(0, 0x8000, true) },
            Mapping { start: 0x9000_0000, end: 0x9010_0000, name: String::new(), file: None },
        ];
        (maps, big, small)
    }

    /// Placed at a 2 MB boundary as Linux and FreeBSD map it, a large shared object moves
    /// whole (its code then in phase with its file), the one packed after it moves 2 MB up,
    /// and a small one or one already aligned stays.
    #[test]
    fn a_large_library_moves_to_a_superpage_boundary() {
        let (maps, big, small) = packed_libraries();
        let layout = Layout { max_page: None, library_align: 2 << 20, fast_forward: false };
        assert_eq!((layout.base_align(&big), layout.base_align(&small)), (2 << 20, 4096));
        let (out, r) = relink(&maps, &big, None, layout.base_align(&big)).unwrap();
        let code = out.iter().find(|m| m.name == big.path && m.file.is_some_and(|f| f.exec)).unwrap();
        assert_eq!((code.start, code.end, code.file.unwrap().offset), (0x820_0000, 0x850_0000, 0));
        assert_eq!(code.start % (2 << 20), code.file.unwrap().offset % (2 << 20), "in phase");
        let data = out.iter().find(|m| m.name == big.path && !m.file.is_some_and(|f| f.exec)).unwrap();
        assert_eq!((data.start, data.file.unwrap().size), (0x850_1000, 0x30_2000), "its data moves with it, as traced");
        let tail = out.iter().find(|m| m.name.is_empty() && m.start < 0x9000_0000).unwrap();
        assert_eq!((tail.start, tail.end), (0x850_3000, 0x850_7000), "its tail moves with it");
        let lib = out.iter().find(|m| m.name == small.path).unwrap();
        assert_eq!(lib.start, 0x858_0000, "the library after it: 2 MB up");
        let mut refs = vec![
            Ref::load(0x806_d010, 1),
            Ref::load(0x836_e008, 1),
            Ref::load(0x838_1000, 1),
            Ref::load(0x9000_0000, 1),
            Ref::new(0x806_d000, RefKind::Fetch, 8, 1, false),
            Ref::load(0x837_0010, 1),
        ];
        r.apply(&mut refs);
        let vas: Vec<u64> = refs.iter().map(|r| r.va).collect();
        assert_eq!(vas, vec![0x820_0010, 0x850_1008, 0x858_1000, 0x9000_0000, 0x820_0000, 0x850_3010]);
        // Once there, placing it again moves nothing.
        let (again, r2) = relink(&out, &big, None, 2 << 20).unwrap();
        assert!(r2.is_empty());
        assert_eq!(again, out);
    }

    /// Moves composed into one move references as the moves one after another do, against
    /// that reference model, on random stages of disjoint sorted ranges.
    #[test]
    fn composed_moves_move_as_the_stages_do() {
        let mut rng = crate::rng::Rng::new(5);
        for _ in 0..300 {
            let mut composed = Relink::none();
            let mut stages = Vec::new();
            for _ in 0..rng.below(5) {
                let mut at = rng.below(64) << 12;
                let mut moves = Vec::new();
                for _ in 0..rng.below(4) {
                    let len = (1 + rng.below(32)) << 12;
                    let d = (rng.below(64) << 12) as i64 - (16 << 12);
                    moves.push((at, at + len, if at as i64 + d < 0 { 0 } else { d }));
                    at += len + (rng.below(8) << 12);
                }
                let st = Relink::new(moves);
                composed = composed.then(&st);
                stages.push(st);
            }
            let vas: Vec<u64> = (0..200).map(|_| rng.below(512 << 12)).collect();
            let mut one: Vec<Ref> = vas.iter().map(|&va| Ref::load(va, 1)).collect();
            let mut each = one.clone();
            composed.apply(&mut one);
            for st in &stages {
                st.apply(&mut each);
            }
            assert_eq!(one, each, "{stages:x?} as {composed:x?}");
        }
    }

    #[test]
    fn elf_lib_lines_are_shared_objects() {
        let images = parse("# elf-load 0 400000 10 20 5 /bin/x\n# elf-lib 0 0 300000 300000 5 /lib/l.so\n# elf-lib 300000 301000 10 20 6 /lib/l.so\n").unwrap();
        assert_eq!(images.len(), 2);
        assert!(!images[0].shared && images[1].shared);
        assert_eq!(images[1].span(), 0x30_1020);
        assert!(parse("# elf-lib 0 zz 10 20 5 /x\n").unwrap_err().starts_with("line 1: 'zz' is not hexadecimal (expected # elf-lib "));
    }

    #[test]
    fn bad_elf_load_lines_name_the_line() {
        assert_eq!(parse("# elf-load 0 400000 10 20 5 /bin/x\n").unwrap()[0].segments[0].memsz, 0x20);
        for (text, what) in [
            ("# elf-load 0 400000 10\n", "line 1: too few fields"),
            ("\n# elf-load 0 zz 10 20 5 /x\n", "line 2: 'zz' is not hexadecimal"),
            ("# elf-load 0 400000 30 20 5 /x\n", "line 1: a segment larger in the file"),
            ("# elf-load 0 400000 10 20 5\n", "line 1: no path"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.starts_with(what), "{text:?}: {e}");
        }
    }
}
