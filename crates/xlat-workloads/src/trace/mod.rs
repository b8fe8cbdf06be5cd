//! Trace formats: xlat's native format, ChampSim `input_instr` records, valgrind lackey.
//!
//! Every reader streams through its file (never loading it whole) and reports a bad file
//! as one [`SourceError::Corrupt`] naming the file and the byte offset, never a panic.

pub mod cache;
mod champsim;
mod champsim_writer;
mod lackey;
pub mod maps;
mod native;
pub mod relink;

use std::fs::File;
use std::io::{BufReader, Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use xlat_core::{Ref, RefSource, Region, SourceError};

pub use champsim_writer::ChampSimWriter;
pub use native::{NativeHeader, NativeWriter, CHECKED, MAGIC, VERSION};
pub use relink::Layout;

use crate::recorder::BATCH;
use crate::WorkloadDesc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Native,
    ChampSim,
    Lackey,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Native => "native",
            Format::ChampSim => "champsim",
            Format::Lackey => "lackey",
        }
    }
}

/// A forced format, optionally with `+fetch` (emit instruction-fetch references for
/// ChampSim's `ip` / lackey's `I` lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormatSpec {
    pub format: Format,
    pub fetch: bool,
}

impl FormatSpec {
    pub fn parse(s: &str) -> Option<FormatSpec> {
        let s = s.trim().to_ascii_lowercase();
        let (base, fetch) = match s.strip_suffix("+fetch") {
            Some(b) => (b.to_string(), true),
            None => (s, false),
        };
        let format = match base.as_str() {
            "native" | "xlat" => Format::Native,
            "champsim" => Format::ChampSim,
            "lackey" | "valgrind" => Format::Lackey,
            _ => return None,
        };
        Some(FormatSpec { format, fetch })
    }
}

/// One stream's decoder.
pub(crate) trait Decoder: Send {
    /// Append about `max` (>= 1) references to `out` (a decoder may overshoot by the few
    /// references of one instruction/line); appending none means the end.
    fn fill(&mut self, out: &mut Vec<Ref>, max: usize) -> Result<(), SourceError>;
}

pub(crate) type Input = Box<dyn Read + Send>;

pub(crate) fn io_err(path: &str, e: std::io::Error) -> SourceError {
    SourceError::Io { path: path.to_string(), what: e.to_string() }
}

pub(crate) fn corrupt(path: &str, offset: u64, what: impl Into<String>) -> SourceError {
    SourceError::Corrupt { path: path.to_string(), offset, what: what.into() }
}

/// Read up to `n` bytes (fewer only at end of input), retrying short reads (pipes/FIFOs).
pub(crate) fn read_up_to(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Peek the first bytes of `r` without losing them.
fn peek(mut r: Input, n: usize) -> std::io::Result<(Vec<u8>, Input)> {
    let mut head = vec![0u8; n];
    let got = read_up_to(&mut r, &mut head)?;
    head.truncate(got);
    let rest: Input = Box::new(Cursor::new(head.clone()).chain(r));
    Ok((head, rest))
}

const XZ_MAGIC: &[u8] = &[0xFD, b'7', b'z', b'X', b'Z', 0x00];
const GZ_MAGIC: &[u8] = &[0x1F, 0x8B];
const ZSTD_MAGIC: &[u8] = &[0x28, 0xB5, 0x2F, 0xFD];

/// Wrap `r` in a decompressor if its content starts with an xz, gzip or zstd header (the
/// file's name plays no part). Returns the codec's name ("" for none).
fn decompress(path: &str, r: Input) -> Result<(Input, &'static str), SourceError> {
    let (head, r) = peek(r, 6).map_err(|e| io_err(path, e))?;
    if head.starts_with(XZ_MAGIC) {
        Ok((Box::new(xz2::read::XzDecoder::new_multi_decoder(r)), "xz"))
    } else if head.starts_with(GZ_MAGIC) {
        Ok((Box::new(flate2::read::MultiGzDecoder::new(r)), "gzip"))
    } else if head.starts_with(ZSTD_MAGIC) {
        let d = zstd::stream::read::Decoder::new(r).map_err(|e| io_err(path, e))?;
        Ok((Box::new(d), "zstd"))
    } else {
        Ok((r, ""))
    }
}

fn looks_like_lackey(head: &[u8]) -> bool {
    [&b"I  "[..], b" L ", b" S ", b" M ", b"==", b"--"].iter().any(|p| head.starts_with(p))
}

/// Mostly printable text: not a binary (ChampSim) trace.
fn looks_like_text(head: &[u8]) -> bool {
    !head.is_empty() && head.iter().all(|&b| b == b'\n' || b == b'\r' || b == b'\t' || (0x20..0x7f).contains(&b))
}

fn format_from_suffix(path: &str) -> Option<Format> {
    let p = path.to_ascii_lowercase();
    let p = p.trim_end_matches(".xz").trim_end_matches(".gz").trim_end_matches(".zst");
    if p.ends_with(".xtr") || p.ends_with(".xlat") {
        Some(Format::Native)
    } else if p.ends_with(".lackey") || p.ends_with(".log") || p.ends_with(".txt") {
        Some(Format::Lackey)
    } else if p.ends_with(".champsim") || p.ends_with(".champsimtrace") || p.ends_with(".trace") {
        Some(Format::ChampSim)
    } else {
        None
    }
}

/// An opened stream: its decoder, the format it was read as, and the header of a native trace.
pub(crate) type Opened = (Box<dyn Decoder>, Format, Option<NativeHeader>);

/// Open one stream. The format comes from the content: a native trace by its magic (also
/// inside gzip, xz or zstd), a lackey log by its text, anything else binary is ChampSim (which
/// has no magic). A forced format that the content contradicts is an error naming what the
/// file is, rather than garbage decoded as addresses.
pub(crate) fn open_decoder(path: &str, input: Input, forced: Option<FormatSpec>) -> Result<Opened, SourceError> {
    let fetch = forced.is_some_and(|f| f.fetch);
    let (head, input) = peek(input, MAGIC.len()).map_err(|e| io_err(path, e))?;
    // A native trace compresses its records itself: its magic comes first, uncompressed.
    let (input, codec) = if head.starts_with(MAGIC) { (input, "") } else { decompress(path, input)? };
    let (head, input) = peek(input, 64).map_err(|e| corrupt(path, 0, format!("cannot decompress ({codec}): {e}")))?;
    let detected = if head.starts_with(MAGIC) {
        Format::Native
    } else if looks_like_lackey(&head) {
        Format::Lackey
    } else if head.is_empty() {
        format_from_suffix(path).unwrap_or(Format::ChampSim)
    } else if looks_like_text(&head) {
        // Text that is not lackey's is no trace we know; the suffix may still say lackey
        // (and the lackey reader then names the first bad line).
        match format_from_suffix(path) {
            Some(Format::Lackey) => Format::Lackey,
            _ => return Err(corrupt(path, 0, "is text but not a valgrind lackey log (--trace-format lackey|champsim|native)")),
        }
    } else {
        Format::ChampSim
    };
    let fmt = match forced {
        None => detected,
        Some(f) if f.format == detected || head.is_empty() => f.format,
        // ChampSim has no magic: any binary content may be one, so only a native magic or
        // lackey text contradicts a forced format.
        Some(f) if detected == Format::ChampSim && f.format == Format::Lackey => {
            let what = if codec.is_empty() { String::from("binary data") } else { format!("{codec}-compressed binary data") };
            return Err(corrupt(path, 0, format!("--trace-format lackey, but the file is {what}, not a text log (a ChampSim trace? drop --trace-format)")));
        }
        Some(f) if detected == Format::ChampSim => f.format,
        Some(f) => {
            // (Lackey is told by its first bytes or, for other text, by the file's suffix.)
            let is = if detected == Format::Native { "is an xlat native trace" } else { "looks like a valgrind lackey log" };
            return Err(corrupt(path, 0, format!("--trace-format {}, but the file {is} (drop --trace-format to read it as it is)", f.format.name())));
        }
    };
    match fmt {
        Format::Native => {
            let (dec, hdr) = native::NativeDecoder::open(path, input).map_err(|e| match e {
                SourceError::Corrupt { offset: 0, .. } => {
                    corrupt(path, 0, "--trace-format native, but the file does not start with the xlat trace magic (a ChampSim trace? drop --trace-format)")
                }
                other => other,
            })?;
            Ok((Box::new(dec), Format::Native, Some(hdr)))
        }
        Format::Lackey => Ok((Box::new(lackey::LackeyDecoder::new(path, input, fetch)), fmt, None)),
        Format::ChampSim => Ok((Box::new(champsim::ChampSimDecoder::new(path, input, fetch)), Format::ChampSim, None)),
    }
}

/// The native format version of trace `path` (also inside gzip, xz or zstd), or `None` for a
/// trace in another format, a file that cannot be read (opening it says why) or one that is
/// not a regular file (a pipe read here would lose its first bytes). Versions before
/// [`CHECKED`] carry no checksums.
pub fn native_version(path: &str) -> Option<u16> {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let input = open_file(path).ok()?;
    let (head, input) = peek(input, MAGIC.len()).ok()?;
    let mut input = if head.starts_with(MAGIC) { input } else { decompress(path, input).ok()?.0 };
    let mut head = [0u8; 10];
    let got = read_up_to(&mut input, &mut head).ok()?;
    (got == head.len() && head.starts_with(MAGIC)).then(|| u16::from_le_bytes([head[8], head[9]]))
}

pub(crate) fn open_file(path: &str) -> Result<Input, SourceError> {
    let f = File::open(path).map_err(|e| io_err(path, e))?;
    // A device (/dev/zero, /dev/urandom) never ends and holds no trace; a pipe (`<(xzcat ...)`)
    // ends when its writer does, and a regular file at its size.
    match kind(&f) {
        Kind::Directory => Err(SourceError::Io { path: path.to_string(), what: "is a directory".into() }),
        Kind::Device => Err(SourceError::Io { path: path.to_string(), what: "is a device, not a trace file".into() }),
        Kind::Fifo => Ok(Box::new(BufReader::with_capacity(1 << 16, PacedFifo { f, short: false }))),
        Kind::Other => Ok(Box::new(BufReader::with_capacity(1 << 16, f))),
    }
}

/// A FIFO read in large pieces. valgrind's lackey (`xlat trace`) writes each memory access
/// with a write(2) of its own, and a reader that keeps up is woken for every one: the
/// wake-ups, not the tracing, then set the pace (node's start-up, 691 M references: 13 min
/// 47 s through the FIFO against 5 min 24 s for lackey writing to /dev/null). After a read
/// that found the pipe all but empty, the reader lets it fill for a millisecond (64 KB, the
/// pipe's size, is 3,000 lackey lines: about 1.4 ms of lackey's output), so a read takes
/// thousands of lines. A fast writer keeps the pipe full and is never waited for.
struct PacedFifo {
    f: File,
    /// The last read filled less than a quarter of its buffer.
    short: bool,
}

impl Read for PacedFifo {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.short {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let n = self.f.read(buf)?;
        self.short = n < buf.len() / 4;
        Ok(n)
    }
}

/// What a trace path opened, as far as reading it goes.
enum Kind {
    Directory,
    /// A character or block device.
    Device,
    /// A pipe or FIFO.
    Fifo,
    Other,
}

#[cfg(unix)]
fn kind(f: &File) -> Kind {
    use std::os::unix::fs::FileTypeExt;
    match f.metadata().map(|m| m.file_type()) {
        Ok(t) if t.is_dir() => Kind::Directory,
        Ok(t) if t.is_char_device() || t.is_block_device() => Kind::Device,
        Ok(t) if t.is_fifo() => Kind::Fifo,
        _ => Kind::Other,
    }
}

#[cfg(not(unix))]
fn kind(f: &File) -> Kind {
    if f.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        Kind::Directory
    } else {
        Kind::Other
    }
}

/// Recorded traces as a [`RefSource`]: stream `i` reads `paths[i]`.
pub struct TraceSource {
    decs: Vec<Box<dyn Decoder>>,
    /// Stream `i`'s native copy in the trace cache, where it reads one.
    copies: Vec<Option<PathBuf>>,
    /// References decoded beyond what the last batch could hold.
    carry: Vec<Vec<Ref>>,
    pending_err: Vec<Option<SourceError>>,
    done: Vec<bool>,
    regions: Vec<Region>,
    /// The regions are every mapping of the traces' sidecars (`FILE.maps`), not yet narrowed
    /// to the mappings the trace touches.
    sidecar_regions: bool,
    /// The sidecars' mappings and executable images (relinked by [`TraceSource::relink`]).
    sidecar: Option<Sidecar>,
    /// Where references into relinked images move (every image's moves as one).
    moves: relink::Relink,
    desc: WorkloadDesc,
}

impl TraceSource {
    /// Open `paths`, one per stream; a trace in another format than native reads its cached
    /// native copy when the trace cache is on ([`cache::set_dir`]), made now if there is none.
    pub fn open(paths: &[String], forced: Option<FormatSpec>) -> Result<TraceSource, SourceError> {
        Self::open_until(paths, forced, &AtomicBool::new(false))
    }

    /// As [`TraceSource::open`]; making a cached copy stops once `stop` is set.
    pub fn open_until(paths: &[String], forced: Option<FormatSpec>, stop: &AtomicBool) -> Result<TraceSource, SourceError> {
        Self::open_inner(paths, forced, cache::dir().as_deref(), stop)
    }

    /// As [`TraceSource::open`], reading every file itself (never the trace cache).
    pub fn open_direct(paths: &[String], forced: Option<FormatSpec>) -> Result<TraceSource, SourceError> {
        Self::open_inner(paths, forced, None, &AtomicBool::new(false))
    }

    fn open_inner(paths: &[String], forced: Option<FormatSpec>, cache_dir: Option<&Path>, stop: &AtomicBool) -> Result<TraceSource, SourceError> {
        if paths.is_empty() {
            return Err(SourceError::Io { path: String::new(), what: "no trace files given".into() });
        }
        let mut decs = Vec::new();
        let mut copies = Vec::new();
        let mut regions: Vec<Region> = Vec::new();
        let mut formats = Vec::new();
        let mut workload = String::new();
        for p in paths {
            let input = open_file(p)?;
            let (mut d, f, hdr) = open_decoder(p, input, forced)?;
            let mut copy = None;
            let regular = std::fs::metadata(p).map(|m| m.is_file()).unwrap_or(false);
            if let (Some(dir), true, false) = (cache_dir, regular, f == Format::Native) {
                // (The copy is read as native, under the original's name and format: its
                // references, and so the run's description and statistics, are the same.)
                let spec = FormatSpec { format: f, fetch: forced.is_some_and(|s| s.fetch) };
                let (entry, _) = cache::native_copy(dir, p, spec, stop)?;
                let cp = entry.copy.to_string_lossy().into_owned();
                d = open_decoder(&cp, open_file(&cp)?, Some(FormatSpec { format: Format::Native, fetch: false }))?.0;
                copy = Some(entry.copy);
            }
            if let Some(h) = hdr {
                for r in h.regions {
                    if !regions.contains(&r) {
                        regions.push(r);
                    }
                }
                if workload.is_empty() {
                    workload = h.desc;
                }
            }
            decs.push(d);
            copies.push(copy);
            formats.push(f.name());
        }
        formats.dedup();
        // A trace without regions of its own takes its sidecars' mappings: the OS then knows
        // which are files (mapped through the page cache) and where huge pages may go.
        let sidecar = sidecar_mappings(paths)?;
        let mut sidecar_regions = false;
        if regions.is_empty() {
            if let Some(side) = &sidecar {
                regions = maps::all_regions(side.mappings.clone());
                sidecar_regions = true;
            }
        }
        let mut params = vec![("format".to_string(), formats.join("+")), ("paths".to_string(), paths.join(";"))];
        if forced.is_some_and(|f| f.fetch) {
            params.push(("fetch".into(), "true".into()));
        }
        if !workload.is_empty() {
            params.push(("workload".into(), workload));
        }
        let n = decs.len();
        Ok(TraceSource {
            decs,
            copies,
            carry: vec![Vec::new(); n],
            pending_err: vec![None; n],
            done: vec![false; n],
            regions,
            sidecar_regions,
            sidecar,
            moves: relink::Relink::none(),
            desc: WorkloadDesc { name: "trace".into(), params },
        })
    }

    pub fn desc(&self) -> WorkloadDesc {
        self.desc.clone()
    }

    /// Lay the traced executable and its shared objects out as `layout` says
    /// (`loader.max_page_size`, `loader.library_base`, [`relink`]): their mappings, the
    /// regions and, from now on, the references into them move. Call before
    /// [`TraceSource::regions_from_pages`]. An error if relinking was asked for and the trace
    /// has no sidecar recording the executable's segments, or the new layout would overlap
    /// another mapping. A trace without `# elf-lib` lines (from before them) keeps its shared
    /// objects where it saw them.
    pub fn relink(&mut self, paths: &[String], layout: relink::Layout) -> Result<(), SourceError> {
        let side = maps::sidecar_path(&paths[0]);
        let none = |what: &str| SourceError::Io {
            path: side.clone(),
            what: format!("loader.max_page_size needs {what}: trace the program with this version of xlat trace"),
        };
        let Some(sc) = self.sidecar.as_mut() else {
            return if layout.max_page.is_some() { Err(none("the trace's mappings")) } else { Ok(()) };
        };
        if layout.max_page.is_some() && !sc.images.iter().any(|im| !im.shared) {
            return Err(none("the executable's loadable segments (# elf-load lines)"));
        }
        let mut moved_any = false;
        for im in &sc.images {
            let base = layout.base_align(im);
            if layout.max_page.is_none() && base <= 4096 {
                continue;
            }
            let (moved, r) = relink::relink(&sc.mappings, im, layout.max_page, base).map_err(|what| SourceError::Io { path: side.clone(), what })?;
            sc.mappings = moved;
            if !r.is_empty() {
                self.moves = self.moves.then(&r);
                moved_any = true;
            }
        }
        if self.sidecar_regions && moved_any {
            self.regions = maps::all_regions(sc.mappings.clone());
        }
        Ok(())
    }

    /// Give a trace without regions (ChampSim, lackey) regions from its pages, so that it can
    /// be prefaulted: each file is read once more beforehand (so it must be a regular file,
    /// not a pipe), and every run of touched 4 KB pages becomes a region, runs less than
    /// [`REGION_GAP`] apart merged (as a program's mappings lie: a heap, a stack, libraries).
    /// Where a trace file has a mappings sidecar (`FILE.maps`, written by `xlat trace`), the
    /// regions are instead the mappings it touched ([`maps::regions`]). Either way the regions
    /// are then rounded out to `align` bytes ([`round_out`]; 4096 keeps them). A trace with
    /// regions of its own (native, from `xlat record`) keeps them.
    pub fn regions_from_pages(&mut self, paths: &[String], forced: Option<FormatSpec>, align: u64) -> Result<(), SourceError> {
        if !self.regions.is_empty() && !self.sidecar_regions {
            return Ok(());
        }
        let pages = self.pages_touched(paths, forced, true)?;
        self.regions = round_out(
            match &self.sidecar {
                None => regions_of_pages(pages),
                Some(sc) => maps::regions(sc.mappings.clone(), &pages, regions_of_pages),
            },
            align,
        );
        self.sidecar_regions = false;
        Ok(())
    }

    /// The 4 KB pages the traces reference (OS calls aside), ascending, each once: where the
    /// relinked images hold them with `moved`, else where the trace saw them. Reads each file
    /// once more (so it must be a regular file).
    fn pages_touched(&self, paths: &[String], forced: Option<FormatSpec>, moved: bool) -> Result<Vec<u64>, SourceError> {
        readable_twice(paths)?;
        let mut pages: Vec<u64> = Vec::new();
        for (i, p) in paths.iter().enumerate() {
            // (The cached copy holds the same references, faster.)
            let (mut dec, _, _) = match self.copies.get(i).and_then(Option::as_ref) {
                Some(c) => {
                    let c = c.to_string_lossy().into_owned();
                    open_decoder(&c, open_file(&c)?, None)?
                }
                None => open_decoder(p, open_file(p)?, forced)?,
            };
            let mut buf = Vec::with_capacity(BATCH);
            let mut last = u64::MAX;
            loop {
                buf.clear();
                dec.fill(&mut buf, BATCH)?;
                if buf.is_empty() {
                    break;
                }
                if moved {
                    self.moves.apply(&mut buf);
                }
                for r in buf.iter().filter(|r| !r.is_os_call()) {
                    let page = r.va >> 12;
                    if page != last {
                        pages.push(page);
                        last = page;
                    }
                }
                if pages.len() > 1 << 22 {
                    pages.sort_unstable();
                    pages.dedup();
                }
            }
        }
        pages.sort_unstable();
        pages.dedup();
        Ok(pages)
    }

    /// Fast-forward (`loader.fast_forward=resident`): before the trace's first reference,
    /// touch every page the sidecar records as resident when the window began (`# resident`),
    /// in the mappings the trace references, in address order: a store where the mapping is
    /// writable (anonymous memory, a data segment), a load elsewhere (code, read-only data),
    /// no instruction between them. So a window that starts in a program's middle finds the
    /// pages the program had mapped, placed by the OS in address order as a prefault places
    /// them, instead of faulting each at its first touch in the window. In a code mapping,
    /// where the sidecar records the code run before the window (`# executed`), only those of
    /// its pages are touched: residency there includes fault-around's neighbours, mapped but
    /// never run, and touching them would set accessed bits the program never set (and make
    /// code groups coalescable that were not). Reads the trace once more. An error if the
    /// sidecar records no resident pages.
    pub fn fast_forward(&mut self, paths: &[String], forced: Option<FormatSpec>) -> Result<(), SourceError> {
        if self.sidecar.as_ref().is_none_or(|sc| sc.resident.is_empty()) {
            let what = "loader.fast_forward=resident needs the pages resident when the window began (# resident lines): \
                        trace the program with this version of xlat trace";
            return Err(SourceError::Io { path: maps::sidecar_path(&paths[0]), what: what.into() });
        }
        let pages = self.pages_touched(paths, forced, false)?;
        let sc = self.sidecar.as_ref().expect("checked");
        let mut touches: Vec<Ref> = Vec::new();
        for m in &sc.traced {
            let i = pages.partition_point(|&p| p < m.start >> 12);
            if pages.get(i).is_none_or(|&p| p >= m.end >> 12) {
                continue; // a mapping the trace does not reference (valgrind's own, say)
            }
            let store = m.file.is_none_or(|f| f.writable);
            let code = m.file.is_some_and(|f| f.exec) && !sc.executed.is_empty();
            for &(a, b) in if code { &sc.executed } else { &sc.resident } {
                let mut va = a.max(m.start);
                while va < b.min(m.end) {
                    touches.push(if store { Ref::store(va, 0) } else { Ref::load(va, 0) });
                    va += 4096;
                }
            }
        }
        touches.sort_by_key(|r| r.va);
        touches.dedup_by_key(|r| r.va);
        // (Delivered first, and moved with the trace's references by relinking.)
        self.carry[0].splice(0..0, touches);
        Ok(())
    }
}

/// What the sidecars of a trace's files say (`FILE.maps`, written by `xlat trace`).
struct Sidecar {
    mappings: Vec<maps::Mapping>,
    /// The mappings where the trace saw them (`mappings` moves with relinking).
    traced: Vec<maps::Mapping>,
    /// The executable's and shared objects' loadable segments.
    images: Vec<relink::Image>,
    /// The pages resident when the window began (`# resident`), where the trace saw them.
    resident: Vec<(u64, u64)>,
    /// The code pages run before the window began (`# executed`), where the trace saw them.
    executed: Vec<(u64, u64)>,
}

/// The mappings and executable images in the sidecars of `paths`, or `None` if no trace has
/// one.
fn sidecar_mappings(paths: &[String]) -> Result<Option<Sidecar>, SourceError> {
    let mut mappings = Vec::new();
    let mut images = Vec::new();
    let mut resident = Vec::new();
    let mut executed = Vec::new();
    let mut sidecars = 0;
    for p in paths {
        let side = maps::sidecar_path(p);
        let text = match std::fs::read_to_string(&side) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(SourceError::Io { path: side, what: e.to_string() }),
        };
        mappings.extend(maps::parse(&text).map_err(|what| SourceError::Io { path: side.clone(), what })?);
        images.extend(relink::parse(&text).map_err(|what| SourceError::Io { path: side.clone(), what })?);
        resident.extend(maps::page_runs(&text, maps::RESIDENT).map_err(|what| SourceError::Io { path: side.clone(), what })?);
        executed.extend(maps::page_runs(&text, maps::EXECUTED).map_err(|what| SourceError::Io { path: side, what })?);
        sidecars += 1;
    }
    images.dedup();
    let traced = mappings.clone();
    Ok((sidecars > 0).then_some(Sidecar { mappings, traced, images, resident, executed }))
}

/// Every path is a regular file, which can be read twice (a pipe cannot): else the error
/// naming the first that is not.
pub fn readable_twice(paths: &[String]) -> Result<(), SourceError> {
    match paths.iter().find(|p| !std::fs::metadata(p).map(|m| m.is_file()).unwrap_or(false)) {
        Some(p) if std::fs::metadata(p).is_ok() => {
            Err(SourceError::Io { path: p.clone(), what: "prefaulting a trace reads it twice, so it must be a regular file (not a pipe)".into() })
        }
        // (A missing file: the open says so, as without prefaulting.)
        _ => Ok(()),
    }
}

/// Pages closer than this (bytes) fall in one region when regions come from a trace's pages.
pub const REGION_GAP: u64 = 2 << 20;

/// Regions covering `pages` (4 KB page numbers, in any order, repeats allowed): one per run
/// of pages, runs less than [`REGION_GAP`] apart merged.
pub fn regions_of_pages(mut pages: Vec<u64>) -> Vec<Region> {
    pages.sort_unstable();
    pages.dedup();
    let mut out: Vec<Region> = Vec::new();
    for p in pages {
        let (start, end) = (p << 12, (p + 1) << 12);
        match out.last_mut() {
            Some(r) if start - r.end() < REGION_GAP => r.len = end - r.start,
            _ => out.push(Region { name: format!("pages{}", out.len()), start, len: 4096, file: None }),
        }
    }
    out
}

/// `regions` (sorted by start, disjoint) each rounded out to `align` bytes (a power of two),
/// those that then overlap merged under the first one's name: with 2 MB, every touched 2 MB
/// of virtual memory lies in a region, so an OS that maps 2 MB pages where a region holds a
/// whole aligned 2 MB (`os.page_policy`) maps every one of them, as ChampSim's 2 MB pages do.
pub fn round_out(regions: Vec<Region>, align: u64) -> Vec<Region> {
    let mut out: Vec<Region> = Vec::with_capacity(regions.len());
    for mut r in regions {
        let (start, end) = (r.start & !(align - 1), (r.end() + align - 1) & !(align - 1));
        match out.last_mut() {
            Some(l) if start <= l.end() => l.len = end.max(l.end()) - l.start,
            _ => {
                (r.start, r.len) = (start, end - start);
                out.push(r);
            }
        }
    }
    out
}

impl RefSource for TraceSource {
    fn streams(&self) -> usize {
        self.decs.len()
    }
    fn regions(&self) -> Vec<Region> {
        self.regions.clone()
    }
    fn next_batch(&mut self, stream: usize, out: &mut Vec<Ref>) -> Result<(), SourceError> {
        let r = self.next_raw(stream, out);
        self.moves.apply(out);
        r
    }
}

impl TraceSource {
    /// The next batch of `stream` as the trace holds it (before any relinking).
    fn next_raw(&mut self, stream: usize, out: &mut Vec<Ref>) -> Result<(), SourceError> {
        out.clear();
        if stream >= self.decs.len() {
            return Err(SourceError::Io { path: String::new(), what: format!("no trace stream {stream}") });
        }
        let cap = out.capacity().max(1);
        let carry = &mut self.carry[stream];
        if !carry.is_empty() {
            let k = carry.len().min(cap);
            out.extend(carry.drain(..k));
        }
        if out.is_empty() {
            if let Some(e) = self.pending_err[stream].take() {
                return Err(e);
            }
        }
        if self.done[stream] || out.len() >= cap {
            return Ok(());
        }
        let r = self.decs[stream].fill(out, cap - out.len());
        if out.len() > cap {
            self.carry[stream].extend_from_slice(&out[cap..]);
            out.truncate(cap);
        }
        match r {
            Err(e) => {
                self.done[stream] = true;
                // Deliver what decoded cleanly first; the error comes with the next call.
                if out.is_empty() {
                    return Err(e);
                }
                self.pending_err[stream] = Some(e);
                Ok(())
            }
            Ok(()) => {
                if out.is_empty() {
                    self.done[stream] = true;
                }
                Ok(())
            }
        }
    }
}

/// File names for `n` streams recorded to `path`: `path` itself for one stream, else
/// `stem.0.ext`, `stem.1.ext`, ... beside it.
pub fn stream_paths(path: &Path, n: usize) -> Vec<PathBuf> {
    if n <= 1 {
        return vec![path.to_path_buf()];
    }
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let ext = path.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
    (0..n).map(|i| path.with_file_name(format!("{stem}.{i}{ext}"))).collect()
}

/// Record `src` to native trace files (see [`stream_paths`]); stops after `max_refs` in total,
/// shared equally among the streams (read round-robin, one batch at a time). Returns
/// references written.
pub fn record(src: &mut dyn RefSource, path: &Path, max_refs: Option<u64>) -> Result<u64, SourceError> {
    record_with_desc(src, path, max_refs, "")
}

/// As [`record`], storing `desc` (e.g. the workload spec) in each file's header.
pub fn record_with_desc(src: &mut dyn RefSource, path: &Path, max_refs: Option<u64>, desc: &str) -> Result<u64, SourceError> {
    record_until(src, path, max_refs, desc, &AtomicBool::new(false))
}

fn interrupted(path: &Path) -> SourceError {
    SourceError::Io { path: path.to_string_lossy().into_owned(), what: "interrupted".into() }
}

/// As [`record_with_desc`], stopping with an "interrupted" error (the files incomplete) once
/// `stop` is set; it is checked once per batch.
pub fn record_until(src: &mut dyn RefSource, path: &Path, max_refs: Option<u64>, desc: &str, stop: &AtomicBool) -> Result<u64, SourceError> {
    record_as(src, path, Format::Native, max_refs, desc, stop)
}

/// A trace file being written.
enum Writer {
    Native(NativeWriter),
    ChampSim(Box<ChampSimWriter>),
}

impl Writer {
    fn write(&mut self, refs: &[Ref]) -> Result<(), SourceError> {
        match self {
            Writer::Native(w) => w.write(refs),
            Writer::ChampSim(w) => w.write(refs),
        }
    }

    fn finish(self) -> Result<u64, SourceError> {
        match self {
            Writer::Native(w) => w.finish(),
            Writer::ChampSim(w) => w.finish(),
        }
    }
}

/// As [`record_until`], in `format`: native, or ChampSim (`input_instr` records, see
/// [`ChampSimWriter`]: no regions, no description, no OS calls). Lackey is read-only.
pub fn record_as(src: &mut dyn RefSource, path: &Path, format: Format, max_refs: Option<u64>, desc: &str, stop: &AtomicBool) -> Result<u64, SourceError> {
    let n = src.streams();
    let paths = stream_paths(path, n);
    let regions = src.regions();
    let mut writers = Vec::with_capacity(n);
    for (i, p) in paths.iter().enumerate() {
        writers.push(match format {
            Format::ChampSim => Writer::ChampSim(Box::new(ChampSimWriter::create(p)?)),
            Format::Native => {
                let hdr = NativeHeader { stream: i as u32, streams: n as u32, regions: regions.clone(), desc: desc.to_string() };
                Writer::Native(NativeWriter::create(p, &hdr)?)
            }
            Format::Lackey => {
                return Err(SourceError::Io { path: p.to_string_lossy().into_owned(), what: "xlat reads lackey logs but does not write them".into() })
            }
        });
    }
    // Each stream gets an equal share of `max_refs` (the first ones one more when it does not
    // divide), so a limited recording of a multi-threaded kernel keeps every thread.
    let mut left: Vec<u64> = match max_refs {
        Some(m) => (0..n as u64).map(|i| m / n as u64 + u64::from(i < m % n as u64)).collect(),
        None => vec![u64::MAX; n],
    };
    let mut buf: Vec<Ref> = Vec::with_capacity(BATCH);
    let mut total = 0;
    while left.iter().any(|&l| l > 0) {
        if stop.load(Ordering::Relaxed) {
            return Err(interrupted(path));
        }
        for s in 0..n {
            if left[s] == 0 {
                continue;
            }
            src.next_batch(s, &mut buf)?;
            if buf.is_empty() {
                left[s] = 0;
                continue;
            }
            let take = (buf.len() as u64).min(left[s]) as usize;
            writers[s].write(&buf[..take])?;
            left[s] -= take as u64;
            total += take as u64;
        }
    }
    for w in writers {
        w.finish()?;
    }
    Ok(total)
}

/// Convert valgrind lackey output (`--trace-mem=yes`) to one native trace. `input` may be a
/// FIFO, so a program can be traced and converted on the fly:
/// `valgrind --tool=lackey --trace-mem=yes --log-file=FIFO prog`.
pub fn lackey_to_native(input: &Path, out: &Path) -> Result<u64, SourceError> {
    lackey_to_native_until(input, out, &LackeyOptions::default(), &AtomicBool::new(false))
}

/// What [`lackey_to_native_until`] keeps of a lackey log.
#[derive(Clone, Debug, Default)]
pub struct LackeyOptions {
    /// The trace's description (default `lackey:INPUT`), e.g. the traced program and its
    /// arguments.
    pub desc: Option<String>,
    /// Each instruction is also a fetch of its address.
    pub fetch: bool,
    /// References left out at the start (a program's start-up), before any is written.
    pub skip: u64,
    /// References written at most (then the conversion stops).
    pub max: Option<u64>,
}

/// As [`lackey_to_native`], with `opts`, stopping once `stop` is set (checked once per
/// batch). Returns the references written.
pub fn lackey_to_native_until(input: &Path, out: &Path, opts: &LackeyOptions, stop: &AtomicBool) -> Result<u64, SourceError> {
    let p = input.to_string_lossy().into_owned();
    let r = open_file(&p)?;
    let (r, _) = decompress(&p, r)?;
    let mut dec = lackey::LackeyDecoder::new(&p, r, opts.fetch);
    let desc = opts.desc.clone().unwrap_or_else(|| format!("lackey:{p}"));
    let hdr = NativeHeader { stream: 0, streams: 1, regions: Vec::new(), desc };
    let mut w = NativeWriter::create(out, &hdr)?;
    let mut buf = Vec::with_capacity(BATCH);
    let mut skip = opts.skip;
    // (A window's end ends a trace of one window too.)
    let (total, _) = copy_window(&mut dec, &mut w, &mut buf, &mut skip, opts.max.unwrap_or(u64::MAX), true, stop, out)?;
    w.finish()?;
    Ok(total)
}

/// As [`lackey_to_native_until`] for a log of several windows, each ended by a `# window`
/// line (xlat's valgrind tool with `--windows`): window `k` to `outs[k]`, its first
/// `opts.max` references (the tool writes whole the event that completes a window, so a
/// window may hold a few more, left out), `opts.skip` left out of the first. Each file's
/// description is `opts.desc` with the window's number. An error if the log ends before the
/// last window is whole, or a window holds fewer than `opts.max` references.
pub fn lackey_windows_to_native_until(input: &Path, outs: &[PathBuf], opts: &LackeyOptions, stop: &AtomicBool) -> Result<u64, SourceError> {
    let p = input.to_string_lossy().into_owned();
    let Some(max) = opts.max else {
        return Err(SourceError::Io { path: p, what: "a trace of windows needs their length".into() });
    };
    let r = open_file(&p)?;
    let (r, _) = decompress(&p, r)?;
    let mut dec = lackey::LackeyDecoder::new(&p, r, opts.fetch);
    let desc = opts.desc.clone().unwrap_or_else(|| format!("lackey:{p}"));
    let mut buf = Vec::with_capacity(BATCH);
    let mut skip = opts.skip;
    let mut total = 0;
    for (k, out) in outs.iter().enumerate() {
        let hdr = NativeHeader { stream: 0, streams: 1, regions: Vec::new(), desc: format!("{desc} (window {k} of {})", outs.len()) };
        let mut w = NativeWriter::create(out, &hdr)?;
        let (got, ended) = copy_window(&mut dec, &mut w, &mut buf, &mut skip, max, false, stop, out)?;
        if !ended {
            let what = format!("the log ended in window {k} of {}, after {got} of its references", outs.len());
            return Err(SourceError::Io { path: p, what });
        }
        if got < max {
            return Err(SourceError::Io { path: p, what: format!("window {k} holds {got} references, not {max}") });
        }
        w.finish()?;
        total += got;
    }
    Ok(total)
}

/// Copy a window of references from `dec` to `w`, the first `*skip` left out and at most `max`
/// written, until a `# window` line, the log's end or (with `until_max`) the `max`-th:
/// returns the references written and whether a `# window` line ended it.
#[allow(clippy::too_many_arguments)]
fn copy_window(
    dec: &mut lackey::LackeyDecoder,
    w: &mut NativeWriter,
    buf: &mut Vec<Ref>,
    skip: &mut u64,
    max: u64,
    until_max: bool,
    stop: &AtomicBool,
    out: &Path,
) -> Result<(u64, bool), SourceError> {
    let mut got = 0;
    while !(until_max && got == max) {
        if stop.load(Ordering::Relaxed) {
            return Err(interrupted(out));
        }
        buf.clear();
        dec.fill(buf, BATCH)?;
        let from = ((*skip).min(buf.len() as u64)) as usize;
        *skip -= from as u64;
        let take = ((buf.len() - from) as u64).min(max - got) as usize;
        w.write(&buf[from..from + take])?;
        got += take as u64;
        if dec.window_ended() {
            return Ok((got, true));
        }
        if buf.is_empty() {
            break;
        }
    }
    Ok((got, false))
}

/// Convert any readable traces to native files (one per input stream, as [`record`]).
pub fn convert(paths: &[String], format: Option<FormatSpec>, out: &Path, max_refs: Option<u64>) -> Result<u64, SourceError> {
    convert_until(paths, format, out, Format::Native, max_refs, None, &AtomicBool::new(false))
}

/// As [`convert`], writing `out_format` (native or ChampSim, as [`record_as`]), with `desc` as
/// the new files' description (default: the inputs' own), stopping once `stop` is set
/// (checked once per batch).
pub fn convert_until(
    paths: &[String],
    format: Option<FormatSpec>,
    out: &Path,
    out_format: Format,
    max_refs: Option<u64>,
    desc: Option<&str>,
    stop: &AtomicBool,
) -> Result<u64, SourceError> {
    let mut src = TraceSource::open_direct(paths, format)?;
    let desc = desc.map(str::to_string).unwrap_or_else(|| src.desc().spec());
    record_as(&mut src, out, out_format, max_refs, &desc, stop)
}

/// Decode an in-memory trace completely; for fuzzing and tests. Returns the reference count.
pub fn decode_bytes(format: Option<FormatSpec>, data: &[u8]) -> Result<u64, SourceError> {
    let input: Input = Box::new(Cursor::new(data.to_vec()));
    let (mut dec, _, _) = open_decoder("<bytes>", input, format)?;
    let mut buf = Vec::with_capacity(4096);
    let mut total = 0;
    loop {
        buf.clear();
        dec.fill(&mut buf, 4096)?;
        if buf.is_empty() {
            return Ok(total);
        }
        total += buf.len() as u64;
    }
}

/// Decode a whole in-memory trace into references; for tests.
pub fn decode_all(format: Option<FormatSpec>, data: &[u8]) -> Result<Vec<Ref>, SourceError> {
    let input: Input = Box::new(Cursor::new(data.to_vec()));
    let (mut dec, _, _) = open_decoder("<bytes>", input, format)?;
    let mut all = Vec::new();
    loop {
        let before = all.len();
        dec.fill(&mut all, 4096)?;
        if all.len() == before {
            return Ok(all);
        }
    }
}

#[cfg(test)]
mod tests;
