//! valgrind lackey `--trace-mem=yes` output: `I  addr,size` (an instruction), ` L addr,size`
//! (load), ` S addr,size` (store), ` M addr,size` (modify = load then store). Addresses are
//! hex, sizes decimal. Valgrind's own `==pid==` / `--pid--` lines are skipped. Each `I` line
//! counts one instruction; with `fetch` it also emits a fetch reference. Accesses wider than
//! 64 bytes are split into 64-byte references.

use std::io::{BufRead, BufReader};

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
        }
    }
}

fn parse_access(s: &[u8]) -> Option<(u64, u64)> {
    let s = s.trim_ascii();
    let comma = s.iter().position(|&c| c == b',')?;
    let (a, z) = (&s[..comma], &s[comma + 1..]);
    if a.is_empty() || a.len() > 16 || z.is_empty() || z.len() > 8 {
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
            let bad = || corrupt(&self.path, at, "not a valgrind lackey line");
            let (kind, rest) = if l.starts_with(b"I ") {
                (b'I', &l[2..])
            } else if l.len() >= 3 && l[0] == b' ' && l[2] == b' ' && matches!(l[1], b'L' | b'S' | b'M') {
                (l[1], &l[3..])
            } else {
                return Err(bad());
            };
            let (addr, size) = parse_access(rest).ok_or_else(bad)?;
            match kind {
                b'I' => {
                    self.pending = self.pending.saturating_add(1);
                    if self.fetch {
                        self.push(out, RefKind::Fetch, addr, size.min(64));
                    }
                }
                b'L' => self.push(out, RefKind::Load, addr, size),
                b'S' => self.push(out, RefKind::Store, addr, size),
                _ => {
                    self.push(out, RefKind::Load, addr, size);
                    self.push(out, RefKind::Store, addr, size);
                }
            }
        }
        Ok(())
    }
}
