//! ChampSim `input_instr` traces: 64-byte little-endian records, one per instruction:
//! `ip` u64, `is_branch` u8, `branch_taken` u8, `destination_registers` [u8; 2],
//! `source_registers` [u8; 4], `destination_memory` [u64; 2], `source_memory` [u64; 4].
//! Zero means "unused". Source memory operands become loads, destination operands stores
//! (duplicates within one instruction dropped, as ChampSim does). ChampSim records carry no
//! access size, so every reference is 8 bytes; with `fetch`, each instruction also emits a
//! 4-byte fetch of `ip`. The first reference of an instruction carries the instructions since
//! the previous reference (inclusive); further references of the same instruction carry 0.
//!
//! Register dependences are kept as ChampSim keeps them: an instruction's destination
//! registers are ready when its loads complete, or, for an instruction without loads, when its
//! source registers are (xlat times other instructions at one cycle). So each register maps to
//! the load it last came from, through any chain of register-to-register instructions, and a
//! load one of whose source registers came from an earlier load depends on that load (the
//! latest of them): a pointer chase serialises, independent loads overlap. A producer more than
//! [`Ref::MAX_PRODUCER`] memory references back is taken as done.

use xlat_core::{Ref, RefKind, SourceError};

use super::{corrupt, Decoder, Input};

const REC: usize = 64;
/// Bits of the largest user virtual address (5-level page tables).
const USER_BITS: u32 = 57;
const CHUNK: usize = 1024;

pub(crate) struct ChampSimDecoder {
    path: String,
    rd: Input,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    offset: u64,
    eof: bool,
    fetch: bool,
    pending: u32,
    /// Memory references emitted so far.
    emitted: u64,
    /// Per register: the number (from 1) of the load its value last came from; 0: none.
    produced_by: [u64; 256],
}

impl ChampSimDecoder {
    pub(crate) fn new(path: &str, rd: Input, fetch: bool) -> ChampSimDecoder {
        ChampSimDecoder {
            path: path.to_string(),
            rd,
            buf: vec![0u8; REC * CHUNK],
            pos: 0,
            len: 0,
            offset: 0,
            eof: false,
            fetch,
            pending: 0,
            emitted: 0,
            produced_by: [0; 256],
        }
    }

    fn refill(&mut self) -> Result<(), SourceError> {
        self.buf.copy_within(self.pos..self.len, 0);
        self.len -= self.pos;
        self.pos = 0;
        while !self.eof && self.len < self.buf.len() {
            match self.rd.read(&mut self.buf[self.len..]) {
                Ok(0) => self.eof = true,
                Ok(k) => self.len += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(corrupt(&self.path, self.offset + self.len as u64, format!("cannot read/decompress ChampSim trace: {e}"))),
            }
        }
        Ok(())
    }
}

#[inline]
fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

impl Decoder for ChampSimDecoder {
    fn fill(&mut self, out: &mut Vec<Ref>, max: usize) -> Result<(), SourceError> {
        let target = out.len() + max;
        // An instruction emits up to 7 references; the caller keeps any overshoot.
        while out.len() < target {
            if self.len - self.pos < REC {
                if !self.eof {
                    self.offset += self.pos as u64;
                    self.refill()?;
                }
                if self.pos == self.len {
                    // (Instructions after the last memory operand count too.)
                    if self.pending > 0 {
                        out.push(Ref::tail(std::mem::take(&mut self.pending)));
                    }
                    return Ok(());
                }
                if self.len - self.pos < REC {
                    return Err(corrupt(&self.path, self.offset + self.pos as u64, format!("truncated ChampSim record ({} of 64 bytes)", self.len - self.pos)));
                }
            }
            let at = self.pos;
            let r = &self.buf[at..at + REC];
            if r[8] > 1 || r[9] > 1 {
                return Err(corrupt(
                    &self.path,
                    self.offset + at as u64,
                    format!(
                        "not a ChampSim record (is_branch={}, branch_taken={}): not a ChampSim trace, or compressed in a format xlat does not read",
                        r[8], r[9]
                    ),
                ));
            }
            // A memory operand beyond the largest user address (57 bits, 5-level tables) is
            // no address: the file is something else read as ChampSim.
            if let Some(a) = [32, 40, 48, 56, 16, 24].into_iter().map(|o| u64_at(r, o)).find(|&a| a >> USER_BITS != 0) {
                return Err(corrupt(
                    &self.path,
                    self.offset + at as u64,
                    format!("memory operand {a:#x} is not a user-space address: not a ChampSim trace (wrong --trace-format, or compressed in a format xlat does not read)"),
                ));
            }
            self.pos += REC;
            self.pending = self.pending.saturating_add(1);
            // The load the instruction's inputs came from last (0: none).
            let (dst_regs, src_regs) = ([r[10], r[11]], [r[12], r[13], r[14], r[15]]);
            let input = src_regs.iter().filter(|&&g| g != 0).map(|&g| self.produced_by[g as usize]).max().unwrap_or(0);
            let mut first = true;
            let emitted = &mut self.emitted;
            // Emit a reference; returns its number.
            let mut emit = |out: &mut Vec<Ref>, va: u64, kind: RefKind, size: u8, pending: &mut u32| -> u64 {
                let d = if first { std::mem::take(pending) } else { 0 };
                first = false;
                *emitted += 1;
                let r = Ref::new(va, kind, size, d, false);
                let back = *emitted - input;
                out.push(if kind == RefKind::Load && input > 0 && back <= u64::from(Ref::MAX_PRODUCER) { r.after(back as u8) } else { r });
                *emitted
            };
            if self.fetch {
                emit(out, u64_at(r, 0), RefKind::Fetch, 4, &mut self.pending);
            }
            let src = [u64_at(r, 32), u64_at(r, 40), u64_at(r, 48), u64_at(r, 56)];
            let mut loaded = 0;
            for (i, &a) in src.iter().enumerate() {
                if a != 0 && !src[..i].contains(&a) {
                    loaded = emit(out, a, RefKind::Load, 8, &mut self.pending);
                }
            }
            let dst = [u64_at(r, 16), u64_at(r, 24)];
            if dst[0] != 0 {
                emit(out, dst[0], RefKind::Store, 8, &mut self.pending);
            }
            if dst[1] != 0 && dst[1] != dst[0] {
                emit(out, dst[1], RefKind::Store, 8, &mut self.pending);
            }
            // Its outputs come from its last load, or from whatever its inputs came from.
            let output = if loaded > 0 { loaded } else { input };
            for g in dst_regs.into_iter().filter(|&g| g != 0) {
                self.produced_by[g as usize] = output;
            }
        }
        Ok(())
    }
}
