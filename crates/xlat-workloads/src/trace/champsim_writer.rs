//! Writing ChampSim `input_instr` traces (the layout the reader in `champsim.rs` documents),
//! so that one kernel can run in both simulators.
//!
//! Each instruction of the stream becomes one 64-byte record: a reference with
//! `inst_delta = d` is preceded by `d - 1` records without memory operands, and references
//! with `inst_delta = 0` join the instruction before them (loads as source operands, up to 4;
//! stores as destination operands, up to 2; more start another instruction). Instruction
//! addresses cycle through 4 KB of code (a taken branch closes each lap), so ChampSim's
//! instruction side stays warm and out of the comparison. Instruction fetches and OS calls
//! have no ChampSim record: their instructions are written without operands. A software
//! prefetch has none either (ChampSim's format cannot say one): it is written as a load.
//!
//! Dependences become registers, the only way ChampSim has to say them: an instruction with
//! loads writes one register, taken in turn from a pool of 23 general registers (ChampSim's
//! stack pointer, flags and instruction pointer left out), and a load that depends on an earlier
//! load reads that load's register, if no later instruction has taken it since (23
//! instructions with loads). The reader turns them back into the same producers.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use xlat_core::{Ref, RefKind, SourceError};

use super::io_err;

/// Where the records go: a file, compressed as its name says (`.xz`, `.gz`) or raw.
enum Sink {
    Raw(BufWriter<File>),
    Xz(xz2::write::XzEncoder<BufWriter<File>>),
    Gz(flate2::write::GzEncoder<BufWriter<File>>),
}

impl Sink {
    fn create(path: &Path) -> std::io::Result<Sink> {
        let f = BufWriter::with_capacity(1 << 16, File::create(path)?);
        let name = path.to_string_lossy().to_ascii_lowercase();
        Ok(if name.ends_with(".xz") {
            Sink::Xz(xz2::write::XzEncoder::new(f, 1))
        } else if name.ends_with(".gz") {
            Sink::Gz(flate2::write::GzEncoder::new(f, flate2::Compression::default()))
        } else {
            Sink::Raw(f)
        })
    }

    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Raw(w) => w.write_all(b),
            Sink::Xz(w) => w.write_all(b),
            Sink::Gz(w) => w.write_all(b),
        }
    }

    fn finish(self) -> std::io::Result<()> {
        match self {
            Sink::Raw(mut w) => w.flush(),
            Sink::Xz(w) => w.finish()?.flush(),
            Sink::Gz(w) => w.finish()?.flush(),
        }
    }
}

/// The registers instructions with loads write, in turn (ChampSim's 6, 25 and 26 are the
/// stack pointer, the flags and the instruction pointer).
const POOL: [u8; 23] = [1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24];
const CODE_BASE: u64 = 0x40_0000;
const CODE_INSTRUCTIONS: u64 = 1024;

/// One instruction being assembled.
#[derive(Default)]
struct Record {
    loads: Vec<u64>,
    stores: Vec<u64>,
    srcs: Vec<u8>,
    dst: u8,
}

pub struct ChampSimWriter {
    out: Sink,
    path: String,
    cur: Option<Record>,
    /// Instructions written.
    instructions: u64,
    /// Memory references written (loads and stores: what the reader numbers).
    refs: u64,
    /// Per reference number modulo 256: the register its instruction wrote (0: none) and that
    /// instruction's number.
    reg_of: [(u8, u64); 256],
    /// Per register: the number of the last instruction that wrote it.
    owner: [u64; 256],
    next_reg: usize,
    buf: Vec<u8>,
}

impl ChampSimWriter {
    /// Create `path` (xz- or gzip-compressed if its name ends in `.xz` or `.gz`).
    pub fn create(path: &Path) -> Result<ChampSimWriter, SourceError> {
        let ps = path.to_string_lossy().into_owned();
        let out = Sink::create(path).map_err(|e| io_err(&ps, e))?;
        Ok(ChampSimWriter {
            out,
            path: ps,
            cur: None,
            instructions: 0,
            refs: 0,
            reg_of: [(0, u64::MAX); 256],
            owner: [u64::MAX; 256],
            next_reg: 0,
            buf: Vec::with_capacity(64 << 10),
        })
    }

    /// Write `refs` (see the module comment).
    pub fn write(&mut self, refs: &[Ref]) -> Result<(), SourceError> {
        for r in refs {
            let memory = !r.is_os_call() && r.kind() != RefKind::Fetch;
            if r.inst_delta > 0 || !memory {
                self.flush()?;
                let plain = if memory { r.inst_delta - 1 } else { r.inst_delta };
                for _ in 0..plain {
                    self.emit(&Record::default())?;
                }
            }
            if !memory {
                continue;
            }
            let full = self.cur.as_ref().is_some_and(|c| if r.kind() == RefKind::Store { c.stores.len() == 2 } else { c.loads.len() == 4 });
            if full {
                self.flush()?;
            }
            self.refs += 1;
            let n = self.refs;
            let this = self.instructions;
            let (owner, reg_of) = (&self.owner, &self.reg_of);
            let cur = self.cur.get_or_insert_with(Record::default);
            if r.kind() == RefKind::Store {
                cur.stores.push(r.va);
                continue;
            }
            cur.loads.push(r.va);
            // The producer's register, if an earlier instruction wrote it and no later one has
            // taken it since (a producer in this very instruction has no register to name).
            let k = u64::from(r.producer());
            if k > 0 && k < n {
                let (reg, at) = reg_of[((n - k) & 255) as usize];
                if reg != 0 && at < this && owner[reg as usize] == at && !cur.srcs.contains(&reg) && cur.srcs.len() < 4 {
                    cur.srcs.push(reg);
                }
            }
            if cur.dst == 0 {
                cur.dst = POOL[self.next_reg];
                self.next_reg = (self.next_reg + 1) % POOL.len();
            }
            // (The reader takes an instruction's last load as its register's producer.)
            self.reg_of[(n & 255) as usize] = (cur.dst, this);
            self.owner[cur.dst as usize] = this;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SourceError> {
        if let Some(c) = self.cur.take() {
            self.emit(&c)?;
        }
        Ok(())
    }

    fn emit(&mut self, c: &Record) -> Result<(), SourceError> {
        let lap = self.instructions % CODE_INSTRUCTIONS;
        let mut rec = [0u8; 64];
        rec[..8].copy_from_slice(&(CODE_BASE + 4 * lap).to_le_bytes());
        if lap == CODE_INSTRUCTIONS - 1 {
            (rec[8], rec[9]) = (1, 1);
        }
        rec[10] = c.dst;
        rec[12..12 + c.srcs.len()].copy_from_slice(&c.srcs);
        for (i, &a) in c.stores.iter().enumerate() {
            rec[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
        }
        for (i, &a) in c.loads.iter().enumerate() {
            rec[32 + 8 * i..40 + 8 * i].copy_from_slice(&a.to_le_bytes());
        }
        self.buf.extend_from_slice(&rec);
        self.instructions += 1;
        if self.buf.len() >= 64 << 10 {
            self.out.write_all(&self.buf).map_err(|e| io_err(&self.path, e))?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Write what is left and close the file; returns the instructions written.
    pub fn finish(mut self) -> Result<u64, SourceError> {
        self.flush()?;
        self.out.write_all(&self.buf).map_err(|e| io_err(&self.path, e))?;
        self.out.finish().map_err(|e| io_err(&self.path, e))?;
        Ok(self.instructions)
    }
}
