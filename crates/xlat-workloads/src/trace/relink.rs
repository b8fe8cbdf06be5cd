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

use crate::trace::maps::Mapping;
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

/// One PT_LOAD program header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub offset: u64,
    pub vaddr: u64,
    pub filesz: u64,
    pub memsz: u64,
    pub flags: u32,
}

/// The traced executable: its path and loadable segments, in address order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub path: String,
    pub segments: Vec<Segment>,
}

/// The `# elf-load` lines of a sidecar, as images (one per path). Else the first bad line's
/// number and what is wrong with it.
pub fn parse(text: &str) -> Result<Vec<Image>, String> {
    let mut out: Vec<Image> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.strip_prefix(ELF_LOAD) else { continue };
        let bad = |what: &str| format!("line {}: {what} (expected {ELF_LOAD}OFFSET VADDR FILESZ MEMSZ FLAGS PATH, hexadecimal)", i + 1);
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
            None => out.push(Image { path, segments: vec![seg] }),
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

/// The moves of one relinked image: references in `[from, to)` shift by `delta`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relink {
    lo: u64,
    hi: u64,
    moves: Vec<(u64, u64, i64)>,
}

impl Relink {
    /// Shift every reference into the image to where the relinked image holds it (OS calls
    /// are left alone: a sleep's address is a duration).
    pub fn apply(&self, refs: &mut [Ref]) {
        for r in refs {
            if r.va >= self.lo && r.va < self.hi && !r.is_os_call() {
                if let Some(&(_, _, d)) = self.moves.iter().find(|&&(a, b, _)| a <= r.va && r.va < b) {
                    r.va = r.va.wrapping_add_signed(d);
                }
            }
        }
    }
}

/// Relink `image` with `max-page-size` `m` in a program whose mappings are `maps`: the
/// mappings with the image's mappings replaced by the relinked segments' (and the brk heap
/// that started where the image ended moved with it), and the moves for its references.
/// Else why it cannot be done (the image is not mapped, or the relinked image would overlap
/// another mapping).
pub fn relink(maps: &[Mapping], image: &Image, m: u64) -> Result<(Vec<Mapping>, Relink), String> {
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
    // align a PIE's base to its largest p_align).
    let new_bias = if bias == 0 { 0 } else { align_up(bias, m) };
    let old_lo = head.start;
    let last = segs.last().expect("not empty");
    let old_hi = align_up(bias.wrapping_add(last.vaddr + last.memsz), 4096);
    let new = lld_layout(segs, m);
    let new_last = new.last().expect("not empty");
    let new_hi = align_up(new_bias.wrapping_add(new_last.vaddr + new_last.memsz), 4096);
    let size = new.iter().map(|s| s.offset + s.filesz).max().unwrap_or(0);
    let mut moves: Vec<(u64, u64, i64)> = segs
        .iter()
        .zip(&new)
        .map(|(o, n)| {
            (bias.wrapping_add(o.vaddr), bias.wrapping_add(o.vaddr + o.memsz), new_bias.wrapping_add(n.vaddr).wrapping_sub(bias.wrapping_add(o.vaddr)) as i64)
        })
        .collect();
    let inside = |mp: &Mapping| mp.start < old_hi && old_lo < mp.end && (mp.name == image.path || mp.file.is_none() && old_lo <= mp.start && mp.end <= old_hi);
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
    for n in &new {
        let start = page(new_bias.wrapping_add(n.vaddr));
        let end = align_up(new_bias.wrapping_add(n.vaddr + n.memsz), 4096);
        let file = FileMap { offset: page(n.offset), size, exec: n.flags & PF_X != 0, writable: n.flags & PF_W != 0 };
        if let Some(c) = out.iter().find(|o| o.start < end && start < o.end && o.name != image.path) {
            let name = if c.name.is_empty() { "an anonymous mapping" } else { c.name.as_str() };
            return Err(format!("{} relinked with max-page-size {} KB would overlap {name} at {:#x}-{:#x}", image.path, m >> 10, c.start, c.end));
        }
        out.push(Mapping { start, end, name: image.path.clone(), file: Some(file) });
    }
    let lo = moves.iter().map(|m| m.0).min().unwrap_or(0);
    let hi = moves.iter().map(|m| m.1).max().unwrap_or(0);
    Ok((out, Relink { lo, hi, moves }))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let image = Image { path: path.clone(), segments: segs };
        let (out, r) = relink(&maps, &image, 4096).unwrap();
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
        let (out, _) = relink(&crowded, &image, 2 << 20).unwrap();
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
        let (out, r) = relink(&maps, &Image { path, segments: segs }, 2 << 20).unwrap();
        let code = out.iter().find(|m| m.file.is_some_and(|f| f.exec)).unwrap();
        assert_eq!((code.start, code.file.unwrap().offset), (0x40_6000, 0x6000), "base 2 MB, code at the next 2 MB");
        let mut refs = vec![Ref::load(0x10_8010, 1), Ref::load(0x10_e900, 1)];
        r.apply(&mut refs);
        assert_eq!((refs[0].va, refs[1].va), (0x20_0010, 0x40_6900));
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
