//! xlat's native trace format (one file per stream).
//!
//! ```text
//! offset  size  field
//! 0       8     magic "XLATTRC\0"
//! 8       2     version (u16 LE), currently 5
//! 10      4     header_len (u32 LE): bytes from offset 0 to the first block
//! 14      4     stream index (u32 LE)
//! 18      4     stream count (u32 LE)
//! 22      4     region count R (u32 LE)
//! 26      ...   R x { name_len u16 LE, name (UTF-8), start u64 LE, len u64 LE }
//! ...     4     desc_len (u32 LE), then desc (UTF-8; e.g. the workload spec)
//! ...           (future versions may add fields here; readers skip to header_len)
//! header_len    blocks, the last one ending with the end marker
//! ```
//!
//! Block (version 5 on):
//!
//! ```text
//! 0       4     payload length P (u32 LE)
//! 4       4     records' length (u32 LE): the payload's bytes once decompressed, 1..=16 MiB
//! 8       4     record count (u32 LE; the end marker is no record)
//! 12      4     CRC-32 (IEEE) of bytes 0..12 of this header, then of the payload
//! 16      P     payload: one zstd frame of whole records
//! ```
//!
//! The writer ends a block once its records reach 256 KiB (about 50,000 references), and
//! each block starts anew (its first address relative to 0), so a block decodes on its own. A
//! reader checks a block's checksum once, before decompressing it: a corrupt block is one error
//! naming its index and byte offset. Versions 1..=4 have no blocks: the header is followed by
//! one zstd stream of records, read unchecked (a flipped bit may decode as other references).
//!
//! Record (inside a block, or the stream): a tag byte — bits 0-1 kind (0 load, 1 store, 2 fetch,
//! 3 OS call), bit 2 dependent, bit 3 "size byte follows" (else size 8), bit 4 "inst_delta
//! varint follows" (else 1), bit 5 (version 3 on, with bit 2) "producer byte follows" (else
//! the producer is the previous memory reference), bit 6 (version 4 on, with kind 0) a software
//! prefetch rather than a load, bit 7 zero — then the address as a
//! zig-zag LEB128 varint of `va - previous va` (wrapping), then the optional size byte, then
//! the optional producer byte (2..=255 memory references back, `Ref::producer`), then the
//! optional LEB128 inst_delta. An OS call (version 2 on; the program changes its mappings, see
//! `xlat_core::os::OsOp`) has bit 3 set and its size byte is the operation (1 unmap,
//! 2 protect, 3 unprotect, 4 migrate, 5 read-ptes, 6 sleep, 7 madv-free), followed by the LEB128 page count (1..=65535) before
//! the optional inst_delta. The tag 0xFF ends the records and is followed by the LEB128 record
//! count, so truncation is always detected. Version policy: the version only grows; a reader
//! accepts every version up to its own and rejects newer ones with a clear error.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;

use xlat_core::{Ref, Region, SourceError};

use super::{corrupt, io_err, read_up_to, Decoder, Input};

pub const MAGIC: &[u8; 8] = b"XLATTRC\0";
pub const VERSION: u16 = 5;
/// The first version whose blocks carry checksums.
pub const CHECKED: u16 = 5;
const END: u8 = 0xFF;
const FIXED: usize = 14;
const MAX_HEADER: u32 = 64 << 20;
const BLOCK_HEAD: usize = 16;
/// Records' bytes at which the writer ends a block: large enough that zstd compresses as well
/// as one stream, small enough to stay in a core's cache while decoded.
const BLOCK: usize = 1 << 18;
/// The largest block a reader accepts (records' bytes): a bound on its buffer.
const MAX_BLOCK: usize = 16 << 20;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NativeHeader {
    pub stream: u32,
    pub streams: u32,
    pub regions: Vec<Region>,
    pub desc: String,
}

impl NativeHeader {
    fn encode(&self, version: u16) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&version.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes()); // patched below
        b.extend_from_slice(&self.stream.to_le_bytes());
        b.extend_from_slice(&self.streams.to_le_bytes());
        b.extend_from_slice(&(self.regions.len() as u32).to_le_bytes());
        for r in &self.regions {
            let name = &r.name.as_bytes()[..r.name.len().min(u16::MAX as usize)];
            b.extend_from_slice(&(name.len() as u16).to_le_bytes());
            b.extend_from_slice(name);
            b.extend_from_slice(&r.start.to_le_bytes());
            b.extend_from_slice(&r.len.to_le_bytes());
        }
        b.extend_from_slice(&(self.desc.len() as u32).to_le_bytes());
        b.extend_from_slice(self.desc.as_bytes());
        let len = b.len() as u32;
        b[10..14].copy_from_slice(&len.to_le_bytes());
        b
    }

    fn decode(path: &str, b: &[u8]) -> Result<NativeHeader, SourceError> {
        let mut at = FIXED;
        let need = |at: usize, n: usize, what: &str| -> Result<(), SourceError> {
            if at + n > b.len() {
                Err(corrupt(path, at as u64, format!("header truncated in {what}")))
            } else {
                Ok(())
            }
        };
        let u32_at = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        let u64_at = |at: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[at..at + 8]);
            u64::from_le_bytes(x)
        };
        need(at, 12, "stream fields")?;
        let stream = u32_at(at);
        let streams = u32_at(at + 4);
        let nreg = u32_at(at + 8) as usize;
        at += 12;
        let mut regions = Vec::new();
        for _ in 0..nreg {
            need(at, 2, "region name length")?;
            let nl = u16::from_le_bytes([b[at], b[at + 1]]) as usize;
            at += 2;
            need(at, nl + 16, "region")?;
            let name = String::from_utf8_lossy(&b[at..at + nl]).into_owned();
            at += nl;
            let start = u64_at(at);
            let len = u64_at(at + 8);
            if start.checked_add(len).is_none() {
                return Err(corrupt(path, at as u64, "region end overflows"));
            }
            at += 16;
            regions.push(Region { name, start, len, file: None });
        }
        need(at, 4, "description length")?;
        let dl = u32_at(at) as usize;
        at += 4;
        need(at, dl, "description")?;
        let desc = String::from_utf8_lossy(&b[at..at + dl]).into_owned();
        Ok(NativeHeader { stream, streams, regions, desc })
    }
}

pub struct NativeWriter {
    out: BufWriter<File>,
    zstd: zstd::bulk::Compressor<'static>,
    /// The records of the block being filled.
    buf: Vec<u8>,
    /// The block's compressed payload (kept: no allocation per block).
    comp: Vec<u8>,
    /// References in the block being filled.
    block_refs: u32,
    prev: u64,
    count: u64,
    path: String,
}

#[inline]
fn put_varint(b: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        b.push(v as u8 | 0x80);
        v >>= 7;
    }
    b.push(v as u8);
}

/// Append the record of `r` to `b`, its address relative to `*prev` (then `r.va`).
fn put_record(b: &mut Vec<u8>, prev: &mut u64, r: &Ref) {
    let size = r.size;
    let mut tag = r.flags & 0b111;
    if r.kind() == xlat_core::RefKind::Prefetch {
        tag |= 1 << 6;
    }
    if size != 8 || r.is_os_call() {
        tag |= 1 << 3;
    }
    if r.inst_delta != 1 {
        tag |= 1 << 4;
    }
    let producer = r.producer();
    if producer > 1 {
        tag |= 1 << 5;
    }
    b.push(tag);
    let d = r.va.wrapping_sub(*prev) as i64;
    put_varint(b, ((d << 1) ^ (d >> 63)) as u64);
    *prev = r.va;
    if size != 8 || r.is_os_call() {
        b.push(size);
    }
    if r.is_os_call() {
        put_varint(b, r.pages() as u64);
    }
    if producer > 1 {
        b.push(producer);
    }
    if r.inst_delta != 1 {
        put_varint(b, r.inst_delta as u64);
    }
}

/// CRC-32 of a block: its header's first 12 bytes (lengths and count), then its payload.
fn block_crc(head: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&head[..12]);
    h.update(payload);
    h.finalize()
}

impl NativeWriter {
    pub fn create(path: &Path, hdr: &NativeHeader) -> Result<NativeWriter, SourceError> {
        let ps = path.to_string_lossy().into_owned();
        let f = File::create(path).map_err(|e| io_err(&ps, e))?;
        let mut out = BufWriter::with_capacity(1 << 16, f);
        out.write_all(&hdr.encode(VERSION)).map_err(|e| io_err(&ps, e))?;
        let zstd = zstd::bulk::Compressor::new(3).map_err(|e| io_err(&ps, e))?;
        Ok(NativeWriter {
            out,
            zstd,
            buf: Vec::with_capacity(BLOCK + 64),
            comp: Vec::with_capacity(zstd::zstd_safe::compress_bound(BLOCK + 64)),
            block_refs: 0,
            prev: 0,
            count: 0,
            path: ps,
        })
    }

    pub fn write(&mut self, refs: &[Ref]) -> Result<(), SourceError> {
        for r in refs {
            put_record(&mut self.buf, &mut self.prev, r);
            self.block_refs += 1;
            self.count += 1;
            if self.buf.len() >= BLOCK {
                self.end_block()?;
            }
        }
        Ok(())
    }

    /// Compress and write the block being filled; the next one starts anew (addresses
    /// relative to 0), so every block decodes on its own.
    fn end_block(&mut self) -> Result<(), SourceError> {
        let io = |e| io_err(&self.path, e);
        let n = self.zstd.compress_to_buffer(&self.buf[..], &mut self.comp).map_err(io)?;
        let mut head = [0u8; BLOCK_HEAD];
        head[0..4].copy_from_slice(&(n as u32).to_le_bytes());
        head[4..8].copy_from_slice(&(self.buf.len() as u32).to_le_bytes());
        head[8..12].copy_from_slice(&self.block_refs.to_le_bytes());
        let crc = block_crc(&head, &self.comp[..n]);
        head[12..16].copy_from_slice(&crc.to_le_bytes());
        self.out.write_all(&head).map_err(io)?;
        self.out.write_all(&self.comp[..n]).map_err(io)?;
        self.buf.clear();
        self.block_refs = 0;
        self.prev = 0;
        Ok(())
    }

    pub fn finish(mut self) -> Result<u64, SourceError> {
        // (The end marker ends the last block, which may hold nothing else.)
        self.buf.push(END);
        put_varint(&mut self.buf, self.count);
        self.end_block()?;
        self.out.flush().map_err(|e| io_err(&self.path, e))?;
        Ok(self.count)
    }
}

/// A file in the layout of versions 1..=4 (one unchecked zstd stream of records), for the
/// tests that older files still read.
#[cfg(test)]
pub(super) fn legacy_bytes(hdr: &NativeHeader, version: u16, refs: &[Ref]) -> Vec<u8> {
    assert!((1..CHECKED).contains(&version));
    let (mut records, mut prev) = (Vec::new(), 0);
    for r in refs {
        put_record(&mut records, &mut prev, r);
    }
    records.push(END);
    put_varint(&mut records, refs.len() as u64);
    let mut b = hdr.encode(version);
    b.extend(zstd::encode_all(&records[..], 3).unwrap());
    b
}

/// Where a decoder's records come from.
enum Body {
    /// Versions 1..=4: one zstd stream of records, no checksums.
    Stream(Box<dyn Read + Send>),
    /// Version 5 on: checked blocks.
    Blocks(Blocks),
}

/// The blocks of a version-5 file, read one at a time.
struct Blocks {
    input: Input,
    zstd: zstd::bulk::Decompressor<'static>,
    /// The current block's payload (kept: no allocation per block).
    comp: Vec<u8>,
    /// Blocks read; the current one is `read - 1`.
    read: u64,
    /// Byte offsets of the current block and of the next.
    at: u64,
    next: u64,
    /// References the current block's header counts, and those decoded before it.
    refs: u32,
    first: u64,
}

impl Blocks {
    fn new(input: Input, header_len: u64) -> std::io::Result<Blocks> {
        Ok(Blocks { input, zstd: zstd::bulk::Decompressor::new()?, comp: Vec::new(), read: 0, at: header_len, next: header_len, refs: 0, first: 0 })
    }

    /// An error in the current block, at its offset.
    fn corrupt(&self, path: &str, what: impl std::fmt::Display) -> SourceError {
        corrupt(path, self.at, format!("block {}: {what}", self.read.saturating_sub(1)))
    }

    /// The current block held the references its header counts (`count`: decoded so far).
    fn check_count(&self, path: &str, count: u64) -> Result<(), SourceError> {
        let held = count - self.first;
        if self.read > 0 && held != u64::from(self.refs) {
            return Err(self.corrupt(path, format_args!("holds {held} records, its header says {}", self.refs)));
        }
        Ok(())
    }

    /// Read, check and decompress the next block into `buf` (grown if a block is larger);
    /// returns its length. `count`: references decoded so far.
    fn load(&mut self, path: &str, buf: &mut Vec<u8>, count: u64) -> Result<usize, SourceError> {
        self.check_count(path, count)?;
        let mut head = [0u8; BLOCK_HEAD];
        let got = read_up_to(&mut self.input, &mut head).map_err(|e| io_err(path, e))?;
        if got == 0 {
            let after = match self.read {
                0 => String::from("the file holds no block"),
                n => format!("the file ends after block {}", n - 1),
            };
            return Err(corrupt(path, self.next, format!("truncated trace: no end marker ({after})")));
        }
        self.at = self.next;
        self.read += 1;
        if got < BLOCK_HEAD {
            return Err(self.corrupt(path, format_args!("truncated block header ({got} of {BLOCK_HEAD} bytes)")));
        }
        let u32_at = |i: usize| u32::from_le_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
        let (plen, raw, refs, crc) = (u32_at(0) as usize, u32_at(4) as usize, u32_at(8), u32_at(12));
        // (A corrupt length is caught here or by the checksum; this bounds the buffer.)
        if plen > zstd::zstd_safe::compress_bound(MAX_BLOCK) {
            return Err(self.corrupt(path, format_args!("implausible payload length {plen}")));
        }
        if self.comp.len() < plen {
            self.comp.resize(plen, 0);
        }
        let payload = &mut self.comp[..plen];
        let got = read_up_to(&mut self.input, payload).map_err(|e| io_err(path, e))?;
        if got < plen {
            return Err(self.corrupt(path, format_args!("truncated: the file ends {got} bytes into its {plen}-byte payload")));
        }
        let sum = block_crc(&head, payload);
        if sum != crc {
            return Err(self.corrupt(path, format_args!("checksum mismatch (stored {crc:#010x}, computed {sum:#010x}): the block is corrupt")));
        }
        if raw == 0 || raw > MAX_BLOCK {
            return Err(self.corrupt(path, format_args!("implausible records' length {raw}")));
        }
        if buf.len() < raw {
            buf.resize(raw, 0);
        }
        let n = self.zstd.decompress_to_buffer(&self.comp[..plen], &mut buf[..raw]).map_err(|e| self.corrupt(path, format_args!("zstd: {e}")))?;
        if n != raw {
            return Err(self.corrupt(path, format_args!("decompresses to {n} bytes, its header says {raw}")));
        }
        self.next = self.at + (BLOCK_HEAD + plen) as u64;
        (self.refs, self.first) = (refs, count);
        Ok(raw)
    }
}

pub(crate) struct NativeDecoder {
    path: String,
    body: Body,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    /// Fewer bytes than this left in `buf` load more: a whole record's worth from a stream,
    /// none from a block (records never straddle blocks).
    low: usize,
    /// Decompressed bytes consumed before `buf[0]` (a stream's).
    base: u64,
    eof: bool,
    ended: bool,
    prev: u64,
    count: u64,
    /// The file's format version (OS calls from 2 on).
    version: u16,
}

/// A stream's decompression buffer.
const BUF: usize = 1 << 18;
/// Longest record: tag + 10-byte varint + size + 3-byte page count + 5-byte varint.
const MAX_REC: usize = 20;

impl NativeDecoder {
    pub(crate) fn open(path: &str, mut input: Input) -> Result<(NativeDecoder, NativeHeader), SourceError> {
        let mut fixed = [0u8; FIXED];
        let got = read_up_to(&mut input, &mut fixed).map_err(|e| io_err(path, e))?;
        if got < 8 || &fixed[..8] != MAGIC {
            return Err(corrupt(path, 0, "not an xlat trace (bad magic)"));
        }
        if got < FIXED {
            return Err(corrupt(path, got as u64, "header truncated"));
        }
        let version = u16::from_le_bytes([fixed[8], fixed[9]]);
        if version == 0 || version > VERSION {
            return Err(corrupt(path, 8, format!("xlat trace version {version} is not supported (this build reads 1..={VERSION})")));
        }
        let hlen = u32::from_le_bytes([fixed[10], fixed[11], fixed[12], fixed[13]]);
        if hlen < FIXED as u32 + 16 || hlen > MAX_HEADER {
            return Err(corrupt(path, 10, format!("implausible header length {hlen}")));
        }
        let mut hb = vec![0u8; hlen as usize];
        hb[..FIXED].copy_from_slice(&fixed);
        let got = read_up_to(&mut input, &mut hb[FIXED..]).map_err(|e| io_err(path, e))?;
        if got < hlen as usize - FIXED {
            return Err(corrupt(path, (FIXED + got) as u64, "header truncated"));
        }
        let hdr = NativeHeader::decode(path, &hb)?;
        let (body, buf, low) = if version >= CHECKED {
            (Body::Blocks(Blocks::new(input, hlen.into()).map_err(|e| io_err(path, e))?), vec![0u8; BLOCK + 64], 1)
        } else {
            let rd = zstd::stream::read::Decoder::new(input).map_err(|e| io_err(path, e))?;
            (Body::Stream(Box::new(rd)), vec![0u8; BUF], MAX_REC)
        };
        let dec = NativeDecoder { path: path.to_string(), body, buf, pos: 0, len: 0, low, base: 0, eof: false, ended: false, prev: 0, count: 0, version };
        Ok((dec, hdr))
    }

    /// Load more records: the next block, or more of the stream.
    fn refill(&mut self) -> Result<(), SourceError> {
        match &mut self.body {
            Body::Blocks(b) => {
                self.len = b.load(&self.path, &mut self.buf, self.count)?;
                self.pos = 0;
                self.prev = 0;
            }
            Body::Stream(rd) => {
                self.buf.copy_within(self.pos..self.len, 0);
                self.base += self.pos as u64;
                self.len -= self.pos;
                self.pos = 0;
                while !self.eof && self.len < BUF {
                    match rd.read(&mut self.buf[self.len..]) {
                        Ok(0) => self.eof = true,
                        Ok(k) => {
                            self.len += k;
                            if self.len >= MAX_REC * 64 {
                                break;
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            return Err(corrupt(&self.path, self.base + self.len as u64, format!("zstd: {e} (decompressed record stream)")));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// A bad record at `at` in `buf`: in a block, named by the block; in a stream, by its
    /// offset in the decompressed records.
    fn err(&self, at: usize, what: &str) -> SourceError {
        match &self.body {
            Body::Blocks(b) => b.corrupt(&self.path, format_args!("{what} (byte {at} of its records)")),
            Body::Stream(_) => corrupt(&self.path, self.base + at as u64, format!("{what} (decompressed record stream)")),
        }
    }
}

#[inline(always)]
fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let x = *b.get(*at)?;
        *at += 1;
        if shift == 63 && x > 1 {
            return None;
        }
        v |= ((x & 0x7F) as u64) << shift;
        if x & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

impl Decoder for NativeDecoder {
    fn fill(&mut self, out: &mut Vec<Ref>, max: usize) -> Result<(), SourceError> {
        if self.ended {
            return Ok(());
        }
        let target = out.len() + max;
        while out.len() < target {
            if self.len - self.pos < self.low && !self.eof {
                self.refill()?;
            }
            if self.pos >= self.len {
                return Err(self.err(self.pos, "truncated trace: no end marker"));
            }
            let b = &self.buf[..self.len];
            let start = self.pos;
            let mut at = start;
            let tag = b[at];
            at += 1;
            if tag == END {
                let n = varint(b, &mut at).ok_or_else(|| self.err(start, "truncated end marker"))?;
                if n != self.count {
                    return Err(self.err(start, &format!("end marker counts {n} records, read {}", self.count)));
                }
                if let Body::Blocks(b) = &self.body {
                    b.check_count(&self.path, self.count)?;
                }
                self.pos = at;
                self.ended = true;
                return Ok(());
            }
            let os_call = tag & 0b11 == 3;
            let far = tag & 0x20 != 0;
            let prefetch = tag & 0x40 != 0;
            if tag & 0x80 != 0
                || prefetch && (self.version < 4 || tag & 0b11 != 0)
                || os_call && (self.version < 2 || tag & 0x2C != 0x08)
                || far && (self.version < 3 || tag & 0x04 == 0)
            {
                return Err(self.err(start, &format!("bad record tag {tag:#04x}")));
            }
            let z = varint(b, &mut at).ok_or_else(|| self.err(start, "truncated or overlong address"))?;
            let d = ((z >> 1) as i64) ^ -((z & 1) as i64);
            let va = self.prev.wrapping_add(d as u64);
            let size = if tag & 0x08 != 0 {
                let s = *b.get(at).ok_or_else(|| self.err(start, "truncated record"))?;
                at += 1;
                if os_call && xlat_core::os::OsOp::from_code(s).is_none() {
                    return Err(self.err(start, &format!("bad OS call operation {s}")));
                }
                if !os_call && (s == 0 || s > 64) {
                    return Err(self.err(start, &format!("bad access size {s}")));
                }
                s
            } else {
                8
            };
            let arg = if os_call {
                let v = varint(b, &mut at).ok_or_else(|| self.err(start, "truncated OS call"))?;
                u16::try_from(v).ok().filter(|&n| n > 0).ok_or_else(|| self.err(start, &format!("bad OS call page count {v}")))?
            } else if far {
                let k = *b.get(at).ok_or_else(|| self.err(start, "truncated record"))?;
                at += 1;
                if k < 2 {
                    return Err(self.err(start, &format!("bad producer distance {k}")));
                }
                u16::from(k)
            } else {
                0
            };
            let delta = if tag & 0x10 != 0 {
                let v = varint(b, &mut at).ok_or_else(|| self.err(start, "truncated instruction delta"))?;
                u32::try_from(v).map_err(|_| self.err(start, "instruction delta too large"))?
            } else {
                1
            };
            self.prev = va;
            self.pos = at;
            self.count += 1;
            out.push(Ref { va, inst_delta: delta, size, flags: tag & 0b111 | if prefetch { Ref::PREFETCH } else { 0 }, arg });
        }
        Ok(())
    }
}
