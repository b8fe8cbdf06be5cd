//! valgrind lackey `--trace-mem=yes` output: `I  addr,size` (an instruction), ` L addr,size`
//! (load), ` S addr,size` (store), ` M addr,size` (modify = load then store). Addresses are
//! hex, sizes decimal. Valgrind's own `==pid==` / `--pid--` lines are skipped. Each `I` line
//! counts one instruction; with `fetch` it also emits a fetch reference. Accesses wider than
//! 64 bytes are split into 64-byte references. xlat's own valgrind tool adds the system calls
//! that change mappings, ` U addr,len` (munmap, madvise MADV_DONTNEED), ` F addr,len` (madvise
//! MADV_FREE), ` P addr,len` (mprotect, read-only) and ` W addr,len` (mprotect, writable), len in
//! bytes: each becomes OS calls ([`Ref::os_call`]) over the pages it covers, at most
//! [`u16::MAX`] pages a call; and, tracing several windows in one run, `# window` after each
//! window's last line: the decoder stops there ([`LackeyDecoder::window_ended`]).

use std::io::{BufRead, BufReader};

use xlat_core::os::OsOp;
use xlat_core::{Ref, RefKind, SourceError};

use super::{corrupt, Decoder, Input};

pub(crate) struct LackeyDecoder {
    path: String,
    rd: BufReader<Input>,
    line: Vec<u8>,
    offset: u64,
    fetch: bool,
    pending: u32,
    eof: bool,
    /// A `# window` line ended the last fill.
    window_end: bool,
}

const MAX_LINE: usize = 4096;

impl LackeyDecoder {
    pub(crate) fn new(path: &str, rd: Input, fetch: bool) -> LackeyDecoder {
        LackeyDecoder {
            path: path.to_string(),
            rd: BufReader::with_capacity(1 << 16, rd),
            line: Vec::with_capacity(128),
            offset: 0,
            fetch,
            pending: 0,
            eof: false,
            window_end: false,
        }
    }

    /// Whether the last [`Decoder::fill`] stopped at a window's end (`# window`); the next
    /// one reads the next window. The instructions after the window's last access are left
    /// out with the rest of the window (the reader cuts a window at its length).
    pub(crate) fn window_ended(&mut self) -> bool {
        std::mem::take(&mut self.window_end)
    }
}

/// `addr,size`: hex, decimal; a size of at most `digits` digits.
fn parse_access(s: &[u8], digits: usize) -> Option<(u64, u64)> {
    let s = s.trim_ascii();
    let comma = s.iter().position(|&c| c == b',')?;
    let (a, z) = (&s[..comma], &s[comma + 1..]);
    if a.is_empty() || a.len() > 16 || z.is_empty() || z.len() > digits {
        return None;
    }
    let addr = u64::from_str_radix(std::str::from_utf8(a).ok()?, 16).ok()?;
    if !z.iter().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let size: u64 = std::str::from_utf8(z).ok()?.parse().ok()?;
    Some((addr, size))
}

impl LackeyDecoder {
    fn push(&mut self, out: &mut Vec<Ref>, kind: RefKind, addr: u64, size: u64) {
        let mut a = addr;
        let mut left = size.max(1);
        let mut first = true;
        while left > 0 {
            let s = left.min(64);
            let d = if first { std::mem::take(&mut self.pending) } else { 0 };
            first = false;
            out.push(Ref::new(a, kind, s as u8, d, false));
            a = a.wrapping_add(s);
            left -= s;
        }
    }

    /// A system call `op` over the pages of `[addr, addr + len)`, after the instructions
    /// pending; nothing if it covers no page.
    fn os_call(&mut self, out: &mut Vec<Ref>, op: OsOp, addr: u64, len: u64) {
        let first = addr >> 12;
        let mut pages = (addr.saturating_add(len).saturating_add(4095) >> 12).saturating_sub(first);
        let mut va = first << 12;
        while pages > 0 {
            let n = pages.min(u64::from(u16::MAX));
            out.push(Ref::os_call(op, va, n as u16, std::mem::take(&mut self.pending)));
            va += n << 12;
            pages -= n;
        }
    }
}

impl Decoder for LackeyDecoder {
    fn fill(&mut self, out: &mut Vec<Ref>, max: usize) -> Result<(), SourceError> {
        let target = out.len() + max;
        while out.len() < target && !self.eof {
            self.line.clear();
            let n = std::io::Read::take(&mut self.rd, MAX_LINE as u64)
                .read_until(b'\n', &mut self.line)
                .map_err(|e| corrupt(&self.path, self.offset, format!("cannot read lackey trace: {e}")))?;
            if n == 0 {
                self.eof = true;
                // (Instructions after the last data access count too.)
                if self.pending > 0 {
                    out.push(Ref::tail(std::mem::take(&mut self.pending)));
                }
                break;
            }
            let at = self.offset;
            self.offset += n as u64;
            if n == MAX_LINE && self.line.last() != Some(&b'\n') {
                return Err(corrupt(&self.path, at, "line too long for a lackey trace"));
            }
            let l = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
            let l = l.strip_suffix(b"\r").unwrap_or(l);
            if l.is_empty() || l.starts_with(b"==") || l.starts_with(b"--") {
                continue;
            }
            if l == b"# window" {
                self.window_end = true;
                self.pending = 0;
                break;
            }
            let bad = || corrupt(&self.path, at, "not a valgrind lackey line");
            let (kind, rest) = if l.starts_with(b"I ") {
                (b'I', &l[2..])
            } else if l.len() >= 3 && l[0] == b' ' && l[2] == b' ' && matches!(l[1], b'L' | b'S' | b'M' | b'U' | b'F' | b'P' | b'W') {
                (l[1], &l[3..])
            } else {
                return Err(bad());
            };
            // (A system call's length may be GBs; an access is at most a few hundred bytes.)
            let digits = if matches!(kind, b'U' | b'F' | b'P' | b'W') { 20 } else { 8 };
            let (addr, size) = parse_access(rest, digits).ok_or_else(bad)?;
            match kind {
                b'I' => {
                    self.pending = self.pending.saturating_add(1);
                    if self.fetch {
                        self.push(out, RefKind::Fetch, addr, size.min(64));
                    }
                }
                b'L' => self.push(out, RefKind::Load, addr, size),
                b'S' => self.push(out, RefKind::Store, addr, size),
                b'U' => self.os_call(out, OsOp::Unmap, addr, size),
                b'F' => self.os_call(out, OsOp::Free, addr, size),
                b'P' => self.os_call(out, OsOp::Protect, addr, size),
                b'W' => self.os_call(out, OsOp::Unprotect, addr, size),
                _ => {
                    self.push(out, RefKind::Load, addr, size);
                    self.push(out, RefKind::Store, addr, size);
                }
            }
        }
        Ok(())
    }
}
