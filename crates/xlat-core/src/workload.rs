//! The contract between whatever produces memory references (a workload kernel, a trace
//! reader) and the engine that consumes them.
//!
//! A reference stream is consumed in batches so that decoding and simulation each run in
//! tight loops; the trait object is called once per batch, never once per reference.

use thiserror::Error;

use crate::param::{component, Limit};

component! {
    /// PT-Baker's helper thread (`ptbaker.*`).
    PtBakerParams {
        mode: crate::param::PtBakerMode = crate::param::PtBakerMode::Off; "mode"; None; "PT-Baker's helper thread, one more thread of the program that sweeps its largest region for as long as the program runs: off, user (a load of the first byte of every stride_pages-th page: it misses its own TLB and walks, bringing the page-table entries into the caches, and a data line with them), user-prefetch (a software prefetch instead of the load: it waits for no data, and walks only if tlb.prefetch_walks) or kernel (a software walk in the kernel reading only the pages' page-table entries, one line per 8 pages at stride 8, no data)";
        placement: crate::param::PtBakerPlacement = crate::param::PtBakerPlacement::Core; "placement"; None; "where the helper runs: core (the next core, sharing the LLC: the thesis's default) or smt (the SMT sibling of the program's last thread: needs system.threads_per_core=2 and a free sibling)";
        stride_pages: u64 = 8; "stride_pages"; Some(Limit::Int(1 << 30)); "pages between the helper's touches (the thesis's 8: one touch per line of page-table entries; 512: one per leaf table)";
        nops: u64 = 0; "nops"; Some(Limit::Int(u32::MAX as u64 - 1)); "idle instructions the helper executes after each touch (the thesis's NOP throttle)";
        sleep_cycles: u64 = 0; "sleep_cycles"; Some(Limit::Int(u32::MAX as u64)); "cycles the helper sleeps after each pass over its region, its core idle (the thesis's sleep throttle)";
        ahead: u64 = 0; "ahead"; Some(Limit::Int(1 << 30)); "an xlat variant: the helper follows the program's first thread, touching the N pages beyond its position (and waiting when that far ahead) instead of sweeping cyclically; 0 = cyclic passes, as the thesis";
        regions: crate::param::PtBakerRegions = crate::param::PtBakerRegions::Largest; "regions"; None; "what the helper sweeps: largest (the program's largest region, as the thesis sweeps one dominant region) or all (every region, one after another)";
    }
    check(p, key) {
        if p.stride_pages == 0 {
            return Err(crate::param::invalid(key("stride_pages"), "must be at least 1"));
        }
        Ok(())
    }
}

component! {
    /// What runs beside the workload (`pressure`).
    WorkloadParams {
        pressure: crate::param::Pressure = crate::param::Pressure::None; "pressure"; None; "memory pressure beside the program, as the thesis's stress-ng runs: none, cache1 (one cache stressor: random reads and writes over a buffer the LLC's size), stream2 or stream3 (two or three STREAM-triad stressors over arrays 4x the LLC); each a program of its own on the next free core, sharing the LLC";
    }
}

component! {
    /// How traced executables and traces are laid out (`loader.*`).
    LoaderParams {
        max_page_size: crate::param::MaxPageSize = crate::param::MaxPageSize::AsLinked; "max_page_size"; None; "lay a traced executable out as LLD would link it with this max-page-size (4k, 16k, 32k, 2m; segments packed in the file, each at align(dot, M) + dot % M): 4k puts every segment after a shared file page out of phase with the file, so that neither coalescing nor superpages can map its code (the coalescing paper's Fig. 1); as-linked keeps the layout the program was built with. Needs a trace from xlat trace (its FILE.maps records the executable's segments); kernels have no image and ignore it";
        library_base: crate::param::LibraryBase = crate::param::LibraryBase::Superpage; "library_base"; None; "where a traced program's shared objects lie: superpage maps each spanning 2 MB or more at a 2 MB boundary, as Linux 6 and FreeBSD's rtld (MAP_ALIGNED_SUPER) do, so that its code, at file offset 0, is in phase with its file; as-traced keeps valgrind's placement, which packs them 4 KB apart. Needs a trace from xlat trace (its FILE.maps records the shared objects' segments); a mix's traces run as traced";
        fast_forward: crate::param::FastForward = crate::param::FastForward::None; "fast_forward"; None; "resident: before a trace's first reference, touch every page xlat trace found resident when the window began (its FILE.maps's # resident lines) in the mappings the trace references (in a code mapping, the pages it had run: # executed), in address order, a store where the mapping is writable and a load elsewhere, so that a window starting in a program's middle finds the pages the program had mapped (the touches count as references of the warm-up, with no instructions); none: every page faults at its first touch in the window. Needs a trace from xlat trace with --skip";
        trace_region_kb: u64 = 4; "trace_region_kb"; Some(Limit::Int(1 << 30)); "--prefault on a trace without regions of its own (ChampSim, lackey): its regions, the runs of pages it touches (or the mappings of its FILE.maps), rounded out to this many KB (a power of two >= 4; 4 keeps them). 2048 puts every touched 2 MB of virtual memory in a region, so that os.page_policy=ideal maps all of them in 2 MB pages, as ChampSim's 2 MB pages do";
    }
    check(p, key) {
        if !p.trace_region_kb.is_power_of_two() || p.trace_region_kb < 4 {
            return Err(crate::param::invalid(key("trace_region_kb"), format!("{} is not a power of two of at least 4", p.trace_region_kb)));
        }
        Ok(())
    }
}

/// Kind of a memory reference, stored in the low two bits of [`Ref::flags`] (a prefetch: a
/// load with [`Ref::PREFETCH`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RefKind {
    Load = 0,
    Store = 1,
    /// Instruction fetch: translated through the ITLB and served by L1I.
    Fetch = 2,
    /// A software prefetch (`prefetcht0`): a load into L1D whose data nothing waits for, so it
    /// retires once translated and its fill has an MSHR. A prefetch that misses the TLBs walks
    /// only on a core whose prefetches start walks (`tlb.prefetch_walks`), and one of an
    /// unmapped page is dropped: prefetches never fault.
    Prefetch = 3,
}

/// One memory reference of one stream (hardware thread).
///
/// 16 bytes, `Copy`, no pointers: batches are plain `Vec<Ref>` that are reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
#[repr(C)]
pub struct Ref {
    /// Virtual address of the access.
    pub va: u64,
    /// Instructions retired since the previous reference of the same stream, counting the
    /// instruction that makes this reference (so back-to-back loads have `inst_delta == 1`,
    /// and a second memory operand of the same instruction has `inst_delta == 0`).
    /// The sum over a stream is its instruction count.
    pub inst_delta: u32,
    /// Access size in bytes (1..=64).
    pub size: u8,
    /// Bits 0-1: [`RefKind`], or 3 for an OS call ([`Ref::os_call`]); bit 2: [`Ref::DEPENDENT`];
    /// bit 3: [`Ref::PREFETCH`].
    pub flags: u8,
    /// An OS call's pages (4 KB each, from `va`: [`Ref::pages`]); a dependent memory
    /// access's producer, in memory references back (0 or 1: the previous one, see
    /// [`Ref::producer`]).
    pub arg: u16,
}

impl Ref {
    /// The address of this reference came from a value an earlier memory reference of the
    /// same stream loaded (pointer chasing): it cannot issue before that one completes. The
    /// producer is the previous memory reference unless [`Ref::after`] names another.
    pub const DEPENDENT: u8 = 1 << 2;
    /// A load that is a software prefetch ([`RefKind::Prefetch`]).
    pub const PREFETCH: u8 = 1 << 3;
    /// The farthest producer a reference may name, in memory references back.
    pub const MAX_PRODUCER: u8 = u8::MAX;
    const KIND_MASK: u8 = 0b11;
    /// The kind bits of an OS call.
    pub const OS_CALL: u8 = 0b11;

    #[inline]
    pub fn new(va: u64, kind: RefKind, size: u8, inst_delta: u32, dependent: bool) -> Ref {
        let kind = if kind == RefKind::Prefetch { Self::PREFETCH } else { kind as u8 };
        Ref { va, inst_delta, size, flags: kind | if dependent { Self::DEPENDENT } else { 0 }, arg: 0 }
    }

    /// This memory access, dependent on the one `k` memory references back (1: the previous;
    /// 1..=[`Ref::MAX_PRODUCER`]; OS calls in between do not count).
    #[inline]
    pub fn after(self, k: u8) -> Ref {
        debug_assert!(k >= 1 && !self.is_os_call());
        // (The previous reference is kept as 0, as `Ref::new` has it: one encoding each.)
        Ref { flags: self.flags | Self::DEPENDENT, arg: if k > 1 { u16::from(k) } else { 0 }, ..self }
    }

    /// How many memory references back the access's producer is: 0 if it depends on none.
    #[inline(always)]
    pub fn producer(&self) -> u8 {
        if self.flags & Self::DEPENDENT == 0 {
            0
        } else {
            (self.arg as u8).max(1)
        }
    }

    /// An OS call's page count.
    #[inline]
    pub fn pages(&self) -> u16 {
        self.arg
    }

    /// Not a memory access: the program asks the OS to change its mappings (`op`, see
    /// [`crate::os::OsOp`]) for `pages` 4 KB pages from `va` (rounded down to its page), a
    /// system call at the end of `inst_delta` instructions. The op is kept in `size`.
    #[inline]
    pub fn os_call(op: crate::os::OsOp, va: u64, pages: u16, inst_delta: u32) -> Ref {
        Ref { va, inst_delta, size: op as u8, flags: Self::OS_CALL, arg: pages }
    }

    /// The `instructions` a stream runs after its last memory reference (a trace's trailing
    /// instructions without memory operands): they dispatch, retire and count as the stream's
    /// instructions. Carried as a zero-cycle sleep, whose wait for everything older to retire
    /// is what the end of a run does anyway. (One page: the native trace format, which `xlat
    /// trace` writes, holds OS calls of at least one.)
    #[inline]
    pub fn tail(instructions: u32) -> Ref {
        Ref::os_call(crate::os::OsOp::Sleep, 0, 1, instructions)
    }

    /// Whether this is an OS call rather than a memory access.
    #[inline(always)]
    pub fn is_os_call(&self) -> bool {
        self.flags & Self::KIND_MASK == Self::OS_CALL
    }

    #[inline]
    pub fn load(va: u64, inst_delta: u32) -> Ref {
        Ref::new(va, RefKind::Load, 8, inst_delta, false)
    }

    /// A software prefetch of the line of `va` ([`RefKind::Prefetch`]).
    #[inline]
    pub fn prefetch(va: u64, inst_delta: u32) -> Ref {
        Ref::new(va, RefKind::Prefetch, 1, inst_delta, false)
    }

    #[inline]
    pub fn store(va: u64, inst_delta: u32) -> Ref {
        Ref::new(va, RefKind::Store, 8, inst_delta, false)
    }

    /// What a memory access does (an OS call reads as a fetch: check [`Ref::is_os_call`]).
    #[inline]
    pub fn kind(&self) -> RefKind {
        match self.flags & (Self::KIND_MASK | Self::PREFETCH) {
            0 => RefKind::Load,
            1 => RefKind::Store,
            Self::PREFETCH => RefKind::Prefetch,
            _ => RefKind::Fetch,
        }
    }

    #[inline]
    pub fn is_dependent(&self) -> bool {
        self.flags & Self::DEPENDENT != 0
    }
}

/// A named virtual-address range a workload uses (its VMA). The OS model uses regions for
/// `--prefault` and for huge-page eligibility; traces may have none (pages are then mapped
/// on first touch only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub name: String,
    pub start: u64,
    pub len: u64,
    /// The file it maps (then `name` is the file's path: regions naming the same file share
    /// its page cache), or `None` for anonymous memory.
    pub file: Option<FileMap>,
}

/// How a region maps a file (a program's text or read-only data, a shared library's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMap {
    /// Offset in the file of the region's first byte (a multiple of 4 KB).
    pub offset: u64,
    /// The file's size in bytes: its page cache ends there (pages of the mapping beyond it
    /// are anonymous, as the zero-filled tail of a data segment), and FreeBSD reserves only
    /// whole 2 MB pieces of files larger than 2 MB.
    pub size: u64,
    /// Mapped executable (code); else its entries carry NX.
    pub exec: bool,
    /// A private writable mapping (a data segment): the program works on its own copies of
    /// the pages, which are anonymous memory except that Linux maps no transparent huge page
    /// in a file's mapping.
    pub writable: bool,
}

impl Region {
    pub fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// One program of a run: what its address space holds and which streams run it. Each program
/// gets its own address space (natively: its own processes; virtualized: its own VM), so
/// programs share the machine (caches, DRAM, physical memory, the OS) and nothing else.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Program {
    /// What to call it in results (a workload spec, a trace's path).
    pub name: String,
    pub regions: Vec<Region>,
    /// The streams it runs, ascending: stream `s` runs on core `s` unless programs share
    /// cores (`slot`).
    pub streams: Vec<usize>,
    /// Programs that share cores (virtualized, each its VM, time-sliced on the cores they
    /// share): this program's place among them, 0 for the first. With `k` places over a
    /// source of `w * k` streams, stream `s` runs on core `s % w`, so the program at place `j`
    /// has streams `c + j * w` for its cores `c`. 0 for every program when none share.
    pub slot: usize,
}

/// Why a reference stream could not deliver its next batch.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SourceError {
    /// A trace file is truncated, corrupt or not in the format it claims; `offset` is the
    /// byte offset (in the decompressed stream) where decoding failed.
    #[error("{path}: {what} at byte offset {offset}")]
    Corrupt { path: String, offset: u64, what: String },
    #[error("{path}: {what}")]
    Io { path: String, what: String },
    #[error("workload {name}: {what}")]
    Workload { name: String, what: String },
}

/// A helper thread among a source's streams ([`RefSource::helper`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Helper {
    /// Its stream: every reference of it but a sleep is a touch.
    pub stream: usize,
    /// Touches per pass over its regions (0: it does not pass over them, it follows a thread).
    pub pass: u64,
}

/// A producer of one or more reference streams (one per simulated hardware thread).
pub trait RefSource: Send {
    /// Number of streams; stream `i` runs on core `i` of the machine.
    fn streams(&self) -> usize;

    /// The virtual-address regions the workload uses (may be empty for traces).
    fn regions(&self) -> Vec<Region>;

    /// The programs its streams belong to. Default: one program that runs every stream.
    /// A stream no program names runs nothing (an idle core).
    fn programs(&self) -> Vec<Program> {
        vec![Program { name: String::new(), regions: self.regions(), streams: (0..self.streams()).collect(), slot: 0 }]
    }

    /// Whether `stream`'s references count toward a run's warm-up and its limit (`--warmup`,
    /// `--refs`, and a warm-up in instructions). A helper thread's or a co-runner's do not:
    /// the run measures the program's own work. Default: every stream counts.
    fn counted(&self, _stream: usize) -> bool {
        true
    }

    /// Whether the source paces some stream by another's progress ([`RefSource::observe`]).
    fn paced(&self) -> bool {
        false
    }

    /// With [`RefSource::paced`]: the engine reports, every few hundred references, the
    /// address `stream` referenced last (simulated time's position in that stream, which its
    /// batches run ahead of).
    fn observe(&mut self, _stream: usize, _va: u64) {}

    /// PT-Baker's helper thread, if the source runs one: the engine counts its touches
    /// (`ptbaker.touches`, `ptbaker.passes`).
    fn helper(&self) -> Option<Helper> {
        None
    }

    /// Replace the contents of `out` with the next references of `stream` (at most
    /// `out.capacity()`, at least one unless the stream has ended). Leaving `out` empty
    /// means the stream has ended, and every later call leaves it empty too.
    fn next_batch(&mut self, stream: usize, out: &mut Vec<Ref>) -> Result<(), SourceError>;
}

/// A source over references held in memory; for tests and small examples.
pub struct VecSource {
    streams: Vec<Vec<Ref>>,
    pos: Vec<usize>,
    regions: Vec<Region>,
    programs: Option<Vec<Program>>,
}

impl VecSource {
    pub fn new(streams: Vec<Vec<Ref>>, regions: Vec<Region>) -> VecSource {
        let pos = vec![0; streams.len()];
        VecSource { streams, pos, regions, programs: None }
    }

    /// A mix: `streams` run by `programs` (each names its streams).
    pub fn with_programs(streams: Vec<Vec<Ref>>, programs: Vec<Program>) -> VecSource {
        let regions = programs.iter().flat_map(|p| p.regions.iter().cloned()).collect();
        VecSource { programs: Some(programs), ..VecSource::new(streams, regions) }
    }

    pub fn single(refs: Vec<Ref>) -> VecSource {
        VecSource::new(vec![refs], Vec::new())
    }
}

impl RefSource for VecSource {
    fn streams(&self) -> usize {
        self.streams.len()
    }

    fn regions(&self) -> Vec<Region> {
        self.regions.clone()
    }

    fn programs(&self) -> Vec<Program> {
        match &self.programs {
            Some(p) => p.clone(),
            None => vec![Program { name: String::new(), regions: self.regions(), streams: (0..self.streams()).collect(), slot: 0 }],
        }
    }

    fn next_batch(&mut self, stream: usize, out: &mut Vec<Ref>) -> Result<(), SourceError> {
        out.clear();
        let s = &self.streams[stream];
        let p = self.pos[stream];
        let n = out.capacity().max(1).min(s.len() - p);
        out.extend_from_slice(&s[p..p + n]);
        self.pos[stream] = p + n;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ref_is_16_bytes_and_packs_flags() {
        assert_eq!(std::mem::size_of::<Ref>(), 16);
        let r = Ref::new(0x1000, RefKind::Store, 8, 3, true);
        assert_eq!(r.kind(), RefKind::Store);
        assert!(r.is_dependent());
        assert_eq!(Ref::load(0, 1).kind(), RefKind::Load);
        assert!(!Ref::load(0, 1).is_dependent());
        assert_eq!((r.producer(), Ref::load(0, 1).producer(), Ref::load(0, 1).after(7).producer()), (1, 0, 7));
        assert_eq!(Ref::os_call(crate::os::OsOp::Unmap, 0, 300, 1).pages(), 300);
        // Every kind survives the packing; a prefetch is neither an OS call nor a fetch.
        for k in [RefKind::Load, RefKind::Store, RefKind::Fetch, RefKind::Prefetch] {
            for dep in [false, true] {
                let r = Ref::new(0x40, k, 8, 1, dep);
                assert_eq!((r.kind(), r.is_dependent(), r.is_os_call()), (k, dep, false));
            }
        }
        assert_eq!(Ref::os_call(crate::os::OsOp::Sleep, 0, 1, 1).kind(), RefKind::Fetch);
    }

    #[test]
    fn vec_source_batches_then_ends() {
        let refs: Vec<Ref> = (0..10).map(|i| Ref::load(i * 64, 1)).collect();
        let mut s = VecSource::single(refs);
        let mut out = Vec::with_capacity(4);
        let mut total = 0;
        loop {
            s.next_batch(0, &mut out).unwrap();
            if out.is_empty() {
                break;
            }
            total += out.len();
        }
        assert_eq!(total, 10);
    }
}
