//! Shootdown traces (seed 003, §6.3): page-table changes injected into any workload or trace
//! at given instruction counts, the way the thesis drove its simulator with a record per
//! shootdown taken on the real machine.
//!
//! A shootdown trace is a text file, one record per line (`#` starts a comment):
//!
//! ```text
//! # instructions  stream  op        [va      [pages]]
//! 2000000         0       unmap     0x7f0000400000  1
//! 2500000         3       migrate
//! ```
//!
//! When stream `stream` has executed `instructions` instructions (its references'
//! `inst_delta` summed), it makes the OS call `op` (`unmap`, `protect`, `unprotect`, `madv-free` or
//! `migrate`) on `pages` 4 KB pages (default 1) from `va`. Without a `va` (or with `-`) the
//! call names the page the stream referenced last, a page it has mapped, as a program's
//! munmap or mprotect of memory it uses would. The thesis's records also say how many cores
//! the shootdown reached; here that is the protocol's to find from the TLBs' state, so it is
//! not an input. The injected call adds no instructions: the stream's count stays the
//! program's.

use std::path::Path;

use xlat_core::os::OsOp;
use xlat_core::{Program, Ref, RefSource, Region, SourceError};

use crate::WorkloadError;

/// One record of a shootdown trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub instructions: u64,
    pub stream: usize,
    pub op: OsOp,
    /// `None`: the page the stream referenced last.
    pub va: Option<u64>,
    pub pages: u16,
}

/// The ops a record may name: those that change mappings.
const OPS: [OsOp; 5] = [OsOp::Unmap, OsOp::Protect, OsOp::Unprotect, OsOp::Migrate, OsOp::Free];

/// Parse a shootdown trace's text; `path` names it in errors (`path:line: what`).
pub fn parse(path: &str, text: &str) -> Result<Vec<Event>, WorkloadError> {
    let bad = |line: usize, what: String| WorkloadError::BadShootdowns { path: path.to_string(), line, what };
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if !(3..=5).contains(&f.len()) {
            return Err(bad(n, format!("expected 'instructions stream op [va [pages]]', got {} fields", f.len())));
        }
        let instructions = parse_count(f[0]).ok_or_else(|| bad(n, format!("bad instruction count '{}'", f[0])))?;
        let stream = f[1].parse::<usize>().map_err(|_| bad(n, format!("bad stream '{}' (a number from 0)", f[1])))?;
        let names: Vec<&str> = OPS.iter().map(|o| o.name()).collect();
        let op = OPS.into_iter().find(|o| o.name() == f[2]).ok_or_else(|| bad(n, format!("unknown op '{}' (known: {})", f[2], names.join(", "))))?;
        let va = match f.get(3) {
            None | Some(&"-") => None,
            Some(s) => Some(parse_addr(s).ok_or_else(|| bad(n, format!("bad address '{s}' (hex with 0x, or decimal)")))?),
        };
        let pages = match f.get(4) {
            None => 1,
            Some(s) => match s.parse::<u16>() {
                Ok(p) if p > 0 => p,
                _ => return Err(bad(n, format!("bad page count '{s}' (1 to 65535)"))),
            },
        };
        out.push(Event { instructions, stream, op, va, pages });
    }
    Ok(out)
}

fn parse_count(s: &str) -> Option<u64> {
    s.replace('_', "").parse().ok()
}

fn parse_addr(s: &str) -> Option<u64> {
    let s = s.replace('_', "");
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// A source with a shootdown trace's events injected into its streams.
pub struct WithShootdowns {
    inner: Box<dyn RefSource>,
    /// Per stream, its events in instruction order, and the next one's index.
    events: Vec<Vec<Event>>,
    next: Vec<usize>,
    /// Per stream: instructions so far, and the last memory reference's address.
    instructions: Vec<u64>,
    last_va: Vec<Option<u64>>,
    scratch: Vec<Ref>,
}

impl WithShootdowns {
    /// `inner` with `events` injected; an event for a stream `inner` does not have is an
    /// error naming `path`.
    pub fn new(inner: Box<dyn RefSource>, mut events: Vec<Event>, path: &str) -> Result<WithShootdowns, WorkloadError> {
        let streams = inner.streams();
        if let Some(e) = events.iter().find(|e| e.stream >= streams) {
            let what = format!("stream {} does not exist (the workload has {streams})", e.stream);
            return Err(WorkloadError::BadShootdowns { path: path.to_string(), line: 0, what });
        }
        // (Stable: two records at one count keep their order in the file.)
        events.sort_by_key(|e| e.instructions);
        let mut per = vec![Vec::new(); streams];
        for e in events {
            per[e.stream].push(e);
        }
        Ok(WithShootdowns { inner, events: per, next: vec![0; streams], instructions: vec![0; streams], last_va: vec![None; streams], scratch: Vec::new() })
    }

    /// Open the shootdown trace at `path` and inject it into `inner`.
    pub fn open(inner: Box<dyn RefSource>, path: &Path) -> Result<WithShootdowns, WorkloadError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| WorkloadError::Trace(SourceError::Io { path: name.clone(), what: e.to_string() }))?;
        WithShootdowns::new(inner, parse(&name, &text)?, &name)
    }
}

impl RefSource for WithShootdowns {
    fn streams(&self) -> usize {
        self.inner.streams()
    }

    fn regions(&self) -> Vec<Region> {
        self.inner.regions()
    }

    fn programs(&self) -> Vec<Program> {
        self.inner.programs()
    }

    fn paced(&self) -> bool {
        self.inner.paced()
    }

    fn counted(&self, stream: usize) -> bool {
        self.inner.counted(stream)
    }

    fn observe(&mut self, stream: usize, va: u64) {
        self.inner.observe(stream, va);
    }

    fn next_batch(&mut self, stream: usize, out: &mut Vec<Ref>) -> Result<(), SourceError> {
        self.inner.next_batch(stream, out)?;
        let events = &self.events[stream];
        let mut k = self.next[stream];
        let mut count = self.instructions[stream];
        if k == events.len() {
            // (Past the last event: keep the count and the address, nothing to insert.)
            count += out.iter().map(|r| u64::from(r.inst_delta)).sum::<u64>();
            self.instructions[stream] = count;
            self.last_va[stream] = out.iter().rev().find(|r| !r.is_os_call()).map(|r| r.va).or(self.last_va[stream]);
            return Ok(());
        }
        let mut last = self.last_va[stream];
        std::mem::swap(out, &mut self.scratch);
        out.clear();
        for &r in &self.scratch {
            count += u64::from(r.inst_delta);
            // Events due before this reference's instructions complete are made after the
            // reference before it (or, for the stream's first, before it: with its page).
            while k < events.len() && events[k].instructions < count {
                let e = events[k];
                let va = e.va.or(last).unwrap_or(r.va);
                out.push(Ref::os_call(e.op, va, e.pages, 0));
                k += 1;
            }
            out.push(r);
            if !r.is_os_call() {
                last = Some(r.va);
            }
        }
        // The rest of the due ones (the count reached exactly at the batch's end).
        while k < events.len() && events[k].instructions <= count && !out.is_empty() {
            let e = events[k];
            out.push(Ref::os_call(e.op, e.va.or(last).unwrap_or(0), e.pages, 0));
            k += 1;
        }
        self.next[stream] = k;
        self.instructions[stream] = count;
        self.last_va[stream] = last;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xlat_core::VecSource;

    fn region() -> Vec<Region> {
        vec![Region { name: "heap".into(), start: 0x1000_0000, len: 1 << 20, file: None }]
    }

    fn drain(src: &mut dyn RefSource, stream: usize) -> Vec<Ref> {
        let mut all = Vec::new();
        let mut out = Vec::with_capacity(3);
        loop {
            src.next_batch(stream, &mut out).unwrap();
            if out.is_empty() {
                return all;
            }
            all.extend_from_slice(&out);
        }
    }

    #[test]
    fn parses_records_and_names_bad_lines() {
        let t = "# header\n100 0 unmap 0x7f0000001000 2\n\n 50 1 migrate # the last page\n7_000 0 protect - 3\n";
        let e = parse("sd.txt", t).unwrap();
        assert_eq!(e.len(), 3);
        assert_eq!(e[0], Event { instructions: 100, stream: 0, op: OsOp::Unmap, va: Some(0x7f00_0000_1000), pages: 2 });
        assert_eq!(e[1], Event { instructions: 50, stream: 1, op: OsOp::Migrate, va: None, pages: 1 });
        assert_eq!((e[2].instructions, e[2].va, e[2].pages), (7000, None, 3));
        for (text, want) in [
            ("100 0\n", "sd.txt:1: expected 'instructions stream op [va [pages]]', got 2 fields"),
            ("x 0 unmap\n", "sd.txt:1: bad instruction count 'x'"),
            ("\n1 0 sleep\n", "sd.txt:2: unknown op 'sleep' (known: unmap, protect, unprotect, migrate, madv-free)"),
            ("1 0 unmap 0xzz\n", "sd.txt:1: bad address '0xzz' (hex with 0x, or decimal)"),
            ("1 0 unmap 0x1000 0\n", "sd.txt:1: bad page count '0' (1 to 65535)"),
            ("1 -1 unmap\n", "sd.txt:1: bad stream '-1' (a number from 0)"),
        ] {
            assert_eq!(parse("sd.txt", text).unwrap_err().to_string(), want);
        }
    }

    /// Events go in after the reference that reaches their count, naming the page referenced
    /// last unless they give one; batches split anywhere give the same stream.
    #[test]
    fn injects_at_instruction_counts() {
        let refs: Vec<Ref> = (0..10u64).map(|i| Ref::load(0x1000_0000 + i * 4096, 10)).collect();
        let events = vec![
            Event { instructions: 25, stream: 0, op: OsOp::Unmap, va: None, pages: 1 },
            Event { instructions: 5, stream: 0, op: OsOp::Migrate, va: Some(0x1000_8000), pages: 2 },
            Event { instructions: 100, stream: 0, op: OsOp::Protect, va: None, pages: 1 },
            Event { instructions: 1000, stream: 0, op: OsOp::Protect, va: None, pages: 1 },
        ];
        let mut s = WithShootdowns::new(Box::new(VecSource::new(vec![refs], region())), events, "t").unwrap();
        let got = drain(&mut s, 0);
        let calls: Vec<(usize, u64, u16)> = got.iter().enumerate().filter(|(_, r)| r.is_os_call()).map(|(i, r)| (i, r.va, r.pages())).collect();
        // Count 5 falls within the first reference (instructions 1-10): before it, with the
        // given page. Count 25 within the third (21-30): after the second, naming its page.
        // Count 100 is reached exactly by the tenth: after it. 1000 is never reached.
        assert_eq!(calls, vec![(0, 0x1000_8000, 2), (3, 0x1000_1000, 1), (12, 0x1000_9000, 1)]);
        assert_eq!(got.iter().map(|r| u64::from(r.inst_delta)).sum::<u64>(), 100, "no instructions added");
        assert_eq!(got.len(), 13);
    }

    #[test]
    fn refuses_a_stream_the_workload_lacks() {
        let events = vec![Event { instructions: 1, stream: 2, op: OsOp::Unmap, va: None, pages: 1 }];
        let e = WithShootdowns::new(Box::new(VecSource::new(vec![vec![], vec![]], region())), events, "sd.txt").err().unwrap();
        assert_eq!(e.to_string(), "sd.txt: stream 2 does not exist (the workload has 2)");
    }
}
