//! The page cache: which frame holds each page of each file that a program maps read-only
//! (its text, read-only data, shared libraries). Every mapping of a file, in any address
//! space, maps the same frames; unmapping one leaves the page cached. Under FreeBSD's
//! reservations a file's pages may come from 2 MB reservations of its own, keyed by the file
//! and the 2 MB piece (the VM object and its 2 MB-aligned pindex), which is what makes a
//! file's pages contiguous and aligned for coalescing and promotion (seed 002 §3.3).

use crate::arch::addr::Frame;
use std::collections::HashMap;

/// Pages in a 2 MB piece of a file.
pub const PIECE: u64 = 512;

/// A reservation of an aligned 2 MB block for one 2 MB piece of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PieceReservation {
    /// First frame of the block.
    pub base: u64,
    /// Pages of the piece read into the block so far.
    pub count: u16,
}

/// One file: its size in pages, the frames of its cached pages, its reservations (2 MB ones
/// by piece, small ones, `os.small_reservation`, by chunk).
#[derive(Default)]
struct File {
    pages: u64,
    frames: HashMap<u64, Frame>,
    pieces: HashMap<u64, PieceReservation>,
    chunks: HashMap<u64, PieceReservation>,
}

/// Every file mapped so far, by path.
#[derive(Default)]
pub struct PageCache {
    files: Vec<File>,
    ids: HashMap<String, u32>,
}

impl PageCache {
    /// The file at `path`, `bytes` long (the largest size any mapping of it gives).
    pub fn open(&mut self, path: &str, bytes: u64) -> u32 {
        let pages = bytes.div_ceil(4096);
        let next = self.files.len() as u32;
        let id = *self.ids.entry(path.to_string()).or_insert(next);
        if id == next {
            self.files.push(File::default());
        }
        let f = &mut self.files[id as usize];
        f.pages = f.pages.max(pages);
        id
    }

    /// The file's size in 4 KB pages.
    pub fn pages(&self, file: u32) -> u64 {
        self.files[file as usize].pages
    }

    /// The frame holding page `index` of the file, if it is cached.
    pub fn frame(&self, file: u32, index: u64) -> Option<Frame> {
        self.files[file as usize].frames.get(&index).copied()
    }

    /// Record that `frame` now holds page `index` of the file.
    pub fn insert(&mut self, file: u32, index: u64, frame: Frame) {
        let old = self.files[file as usize].frames.insert(index, frame);
        debug_assert!(old.is_none(), "page {index} of file {file} read twice");
    }

    /// FreeBSD reserves a 2 MB block for a piece of a file only when the file is larger than
    /// 2 MB and the piece is whole (a file's last, partial piece never gets one).
    pub fn reservable(&self, file: u32, piece: u64) -> bool {
        let pages = self.pages(file);
        pages > PIECE && (piece + 1) * PIECE <= pages
    }

    /// The reservation backing a piece, if there is one.
    pub fn reservation(&self, file: u32, piece: u64) -> Option<PieceReservation> {
        self.files[file as usize].pieces.get(&piece).copied()
    }

    /// Back a piece by the block starting at frame `base`.
    pub fn reserve(&mut self, file: u32, piece: u64, base: u64) {
        self.files[file as usize].pieces.insert(piece, PieceReservation { base, count: 0 });
    }

    /// The frame of the piece's reservation for page `index` (counted as populated).
    pub fn take_reserved(&mut self, file: u32, index: u64) -> Option<Frame> {
        let r = self.files[file as usize].pieces.get_mut(&(index / PIECE))?;
        r.count += 1;
        Some(Frame(r.base + index % PIECE))
    }

    /// The frame for page `index` from the small reservation of `chunk` pages holding it
    /// (counted as populated), reserving the chunk's aligned block with `alloc` first if
    /// needed; `None` if the chunk is not whole inside the file or no block is free.
    pub fn take_small(&mut self, file: u32, index: u64, chunk: u64, alloc: impl FnOnce() -> Option<Frame>) -> Option<Frame> {
        let f = &mut self.files[file as usize];
        let c = index / chunk;
        if (c + 1) * chunk > f.pages {
            return None;
        }
        let r = match f.chunks.get_mut(&c) {
            Some(r) => r,
            None => f.chunks.entry(c).or_insert(PieceReservation { base: alloc()?.0, count: 0 }),
        };
        r.count += 1;
        Some(Frame(r.base + index % chunk))
    }

    /// Pages cached over all files.
    pub fn cached_pages(&self) -> u64 {
        self.files.iter().map(|f| f.frames.len() as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_file_per_path_and_the_largest_size() {
        let mut pc = PageCache::default();
        let a = pc.open("/bin/a", 10_000);
        let b = pc.open("/lib/b", 4096);
        assert_ne!(a, b);
        assert_eq!(pc.open("/bin/a", 20_000), a);
        assert_eq!(pc.pages(a), 5);
        assert_eq!(pc.pages(b), 1);
    }

    /// §3.3: files of 2 MB or less never get a reservation, nor does a partial last piece.
    #[test]
    fn only_whole_pieces_of_files_over_2mb_are_reservable() {
        let mut pc = PageCache::default();
        let small = pc.open("small", 2 << 20);
        let odd = pc.open("odd", (5 << 20) + 4096);
        let exact = pc.open("exact", 4 << 20);
        assert!(!pc.reservable(small, 0));
        assert!(pc.reservable(odd, 0) && pc.reservable(odd, 1));
        assert!(!pc.reservable(odd, 2), "the piece holding the last 1 MB + 4 KB");
        assert!(pc.reservable(exact, 0) && pc.reservable(exact, 1));
    }

    /// §3.8's small reservations: a whole 16 KB chunk of a small file gets an aligned block;
    /// the file's last, partial chunk does not.
    #[test]
    fn small_reservations_cover_whole_chunks() {
        let mut pc = PageCache::default();
        let f = pc.open("lib", 10 * 4096);
        assert_eq!(pc.take_small(f, 5, 4, || Some(Frame(64))), Some(Frame(65)));
        assert_eq!(pc.take_small(f, 6, 4, || panic!("reserved already")), Some(Frame(66)));
        assert_eq!(pc.take_small(f, 9, 4, || Some(Frame(128))), None, "pages 8..12 pass the end");
        assert_eq!(pc.take_small(f, 0, 4, || None), None, "no block free");
    }

    #[test]
    fn reserved_frames_sit_at_the_page_offset() {
        let mut pc = PageCache::default();
        let f = pc.open("f", 8 << 20);
        assert_eq!(pc.take_reserved(f, 513), None);
        pc.reserve(f, 1, 4096);
        assert_eq!(pc.take_reserved(f, 513), Some(Frame(4097)));
        assert_eq!(pc.reservation(f, 1), Some(PieceReservation { base: 4096, count: 1 }));
    }
}
