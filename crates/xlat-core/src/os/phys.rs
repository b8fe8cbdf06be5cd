//! Simulated physical memory: a binary buddy allocator over 4 KB frames (orders 0 = 4 KB
//! ... 18 = 1 GB), as Linux's. Data frames are never materialised: only their numbers
//! exist. Page-table nodes get frames from here too, so they compete with data for
//! contiguity, and their contents live in `pt`.

use crate::arch::addr::Frame;
use crate::param::{ConfigValue, PcpOrder};
use crate::rng::Rng;
use std::collections::VecDeque;
use std::fmt;

use crate::param::{component, Limit};

component! {
    /// Physical memory (`phys.*`): its size and state before the run, the frame allocator.
    PhysParams {
        size_gb: u64 = 64; "size_gb"; Some(Limit::Int(4096)); "simulated physical memory in GB";
        fragmentation: crate::param::Fragmentation = crate::param::Fragmentation::None; "fragmentation"; None; "state of physical memory before the run: none, pinned:X (one unmovable page in X of the free 2 MB blocks, the PCC paper's method), lowhalf (2 MB pages only for the lower half of each address space, the flattening paper's 50 %), aged:SEED (allocate/free churn down to phys.aged_target)";
        frame_order: crate::os::phys::FrameOrder = crate::os::phys::FrameOrder::Ascending; "frame_order"; None; "order in which 4 KB frames are handed out, to data and page tables alike (in a VM, guest and host): ascending (a buddy allocator on fresh memory) or shuffled:SEED (uniformly at random over all of memory, as ChampSim's virtual memory; leaves few 2 MB blocks whole)";
        aged_target: f64 = 0.2; "aged_target"; Some(Limit::Real(1.0)); "fragmentation=aged: fraction of the free 2 MB blocks still whole after aging";
        available_gb: f64 = 0.0; "available_gb"; Some(Limit::Real(4096.0)); "before fragmenting, take memory away (as memhog) until this many GB are free; the PCC artifact leaves footprint + 3 GB (0: keep all)";
        pcp_batch: u64 = 63; "pcp_batch"; Some(Limit::Int(1 << 20)); "4 KB frames a CPU's free list takes from or returns to the buddy allocator at once (Linux pcp batch; 0: no per-CPU lists)";
        pcp_order: crate::param::PcpOrder = crate::param::PcpOrder::Fifo; "pcp_order"; None; "order in which a CPU's free list hands out the frames of a batch it took from the buddy allocator (in ascending order): fifo (Linux's per-CPU lists: the first taken first, so pages faulted in address order get ascending frames, contiguous by chance) or lifo (a stack, as FreeBSD's per-domain page cache buckets: the last taken first, descending frames that no coalescing group can use; the coalescing paper's FreeBSD without reservations)";
        pcp_high: u64 = 378; "pcp_high"; Some(Limit::Int(1 << 20)); "a CPU's free list longer than this returns a batch to the buddy allocator (Linux pcp high = 6 x batch)";
    }
    check(p, key) {
        if p.size_gb == 0 {
            return Err(crate::param::invalid(key("size_gb"), "must be at least 1"));
        }
        if p.size_gb > 4096 {
            return Err(crate::param::invalid(key("size_gb"), "at most 4096 GB of physical memory is supported"));
        }
        if !(0.0..=1.0).contains(&p.aged_target) {
            return Err(crate::param::invalid(key("aged_target"), "must be between 0 and 1"));
        }
        if !(p.available_gb >= 0.0 && p.available_gb <= p.size_gb as f64) {
            return Err(crate::param::invalid(key("available_gb"), "must be between 0 and phys.size_gb"));
        }
        if p.pcp_high < p.pcp_batch {
            return Err(crate::param::invalid(key("pcp_high"), "must be at least phys.pcp_batch"));
        }
        Ok(())
    }
}

/// Largest block order: 2^18 frames = 1 GB.
pub const MAX_ORDER: u8 = 18;
/// Order of a 2 MB block.
pub const ORDER_2M: u8 = 9;
const NOT_FREE: u8 = u8::MAX;

/// Linux's default per-CPU list batch for a large zone (`zone_batchsize`: a quarter of
/// 1 MB, rounded to 2^n - 1).
pub const LINUX_PCP_BATCH: u64 = 63;

pub struct PhysMem {
    frames: u64,
    /// For the first frame of each free block: its order; `NOT_FREE` elsewhere.
    head_order: Vec<u8>,
    /// Free lists per order; the back is the head (allocated next), the front the tail.
    /// Entries go stale when a block is merged away; they are skipped on pop (checked
    /// against `head_order`) and purged when a list grows.
    free: Vec<VecDeque<u32>>,
    free_count: [u64; MAX_ORDER as usize + 1],
    free_frames: u64,
    /// Frames the buddy allocator has handed out, per 2 MB block (pages sitting on a
    /// per-CPU list count as handed out, as in Linux).
    used_2m: Vec<u16>,
    /// Per-CPU lists of free 4 KB frames (Linux's pcp lists); back = head.
    pcp: Vec<VecDeque<u32>>,
    pcp_batch: usize,
    pcp_high: usize,
    /// `phys.pcp_order=lifo`: a refill's frames are handed out last taken first.
    pcp_lifo: bool,
    /// The CPU whose per-CPU list order-0 allocations and frees use.
    pub cpu: usize,
    /// `phys.frame_order=shuffled:SEED`: 4 KB frames are drawn at random from all of memory.
    shuffle: Option<Rng>,
}

/// The order in which 4 KB frames are handed out (`phys.frame_order`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameOrder {
    /// As a buddy allocator on a freshly booted machine: ascending from the lowest free block.
    Ascending,
    /// Uniformly at random over the free frames of all of memory, from a seed, as ChampSim's
    /// virtual memory hands out its shuffled page list (`virtual_memory.randomization`):
    /// neighbouring pages land in unrelated cache sets and DRAM rows. Scatters 4 KB pages
    /// over every 2 MB block, so few stay whole for huge pages.
    Shuffled(u64),
}

impl ConfigValue for FrameOrder {
    fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        if s == "ascending" {
            return Some(FrameOrder::Ascending);
        }
        u64::parse(s.strip_prefix("shuffled:")?).map(FrameOrder::Shuffled)
    }
    fn show(&self) -> String {
        self.to_string()
    }
    fn expected() -> String {
        "ascending or shuffled:SEED (e.g. shuffled:1)".into()
    }
}

impl fmt::Display for FrameOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameOrder::Ascending => f.write_str("ascending"),
            FrameOrder::Shuffled(s) => write!(f, "shuffled:{s}"),
        }
    }
}

/// Random draws before a shuffled allocation gives up and takes the buddy allocator's next
/// frame (only when memory is nearly full: with half of it free, 40 misses in a row happen
/// once in 10^12 draws).
const SHUFFLE_TRIES: u32 = 40;

impl PhysMem {
    /// `bytes` of memory, all free, except the first 1 MB (firmware and legacy regions, as
    /// on a PC; it also keeps frame 0 from ever being handed out). No per-CPU lists: see
    /// [`PhysMem::with_pcp`].
    pub fn new(bytes: u64) -> PhysMem {
        let frames = bytes >> 12;
        assert!(frames >= 512 && frames <= u32::MAX as u64, "physical memory size validated by the configuration");
        let mut p = PhysMem {
            frames,
            head_order: vec![NOT_FREE; frames as usize],
            free: vec![VecDeque::new(); MAX_ORDER as usize + 1],
            free_count: [0; MAX_ORDER as usize + 1],
            free_frames: 0,
            used_2m: vec![0; frames.div_ceil(512) as usize],
            pcp: Vec::new(),
            pcp_batch: 0,
            pcp_high: 0,
            pcp_lifo: false,
            cpu: 0,
            shuffle: None,
        };
        // Every block starts allocated; freeing them below builds the lists.
        for (b, u) in p.used_2m.iter_mut().enumerate() {
            *u = (frames - b as u64 * 512).min(512) as u16;
        }
        // Carve memory into the largest aligned blocks; push high addresses first so the
        // lowest block is at the head of each list, as after a fresh boot.
        let mut blocks = Vec::new();
        let mut f = 0u64;
        while f < frames {
            let mut o = MAX_ORDER;
            while f % (1 << o) != 0 || f + (1 << o) > frames {
                o -= 1;
            }
            blocks.push((f, o));
            f += 1 << o;
        }
        for &(f, o) in blocks.iter().rev() {
            p.account(f, o, false);
            p.push_free(f, o, false);
        }
        let reserved = p.alloc(8).expect("fresh memory has a 1 MB block");
        debug_assert_eq!(reserved.0, 0);
        p
    }

    /// Give each of `cpus` CPUs a per-CPU list of 4 KB frames, as Linux does: an empty list
    /// is refilled with `batch` frames taken from the buddy allocator one by one (so they
    /// are handed out in ascending order from a fresh block), a freed frame goes to the
    /// head of the list (the next allocation reuses it), and a list longer than `high`
    /// returns `batch` frames from its tail. `batch == 0` turns the lists off.
    pub fn with_pcp(mut self, cpus: usize, batch: u64, high: u64, order: PcpOrder) -> PhysMem {
        self.pcp = vec![VecDeque::new(); cpus.max(1)];
        self.pcp_lifo = order == PcpOrder::Lifo;
        self.pcp_batch = batch as usize;
        self.pcp_high = (high as usize).max(batch as usize);
        self
    }

    /// Hand out 4 KB frames in `order` (see [`FrameOrder`]). Shuffled frames bypass the
    /// per-CPU lists, whose point is to hand out neighbours.
    pub fn with_frame_order(mut self, order: FrameOrder) -> PhysMem {
        self.shuffle = match order {
            FrameOrder::Ascending => None,
            FrameOrder::Shuffled(seed) => Some(Rng::new(seed)),
        };
        self
    }

    pub fn total_frames(&self) -> u64 {
        self.frames
    }

    /// Frames free in the buddy allocator (not counting those on per-CPU lists).
    pub fn free_frames(&self) -> u64 {
        self.free_frames
    }

    /// Frames sitting on per-CPU lists (free, but not in the buddy allocator).
    pub fn pcp_frames(&self) -> u64 {
        self.pcp.iter().map(|l| l.len() as u64).sum()
    }

    /// Free blocks of exactly `order`.
    pub fn free_blocks(&self, order: u8) -> u64 {
        self.free_count[order as usize]
    }

    /// Free, aligned 2 MB blocks available (counting those inside larger free blocks).
    pub fn free_2m_blocks(&self) -> u64 {
        (ORDER_2M..=MAX_ORDER).map(|o| self.free_count[o as usize] << (o - ORDER_2M)).sum()
    }

    /// Number of 2 MB blocks (the last may be partial).
    pub fn blocks_2m(&self) -> usize {
        self.used_2m.len()
    }

    /// Frames of 2 MB block `b` handed out by the buddy allocator.
    #[inline]
    pub fn used_in_2m(&self, b: usize) -> u16 {
        self.used_2m[b]
    }

    /// Whether `frame` is the first frame of a free buddy block (of any order).
    pub fn is_free_head(&self, frame: Frame) -> Option<u8> {
        let o = self.head_order[frame.0 as usize];
        (o != NOT_FREE).then_some(o)
    }

    #[inline]
    fn account(&mut self, f: u64, order: u8, used: bool) {
        if order >= ORDER_2M {
            for b in (f >> 9)..((f + (1 << order)) >> 9) {
                self.used_2m[b as usize] = if used { 512 } else { 0 };
            }
        } else {
            let u = &mut self.used_2m[(f >> 9) as usize];
            if used {
                *u += 1 << order;
            } else {
                *u -= 1 << order;
            }
        }
    }

    /// Put a free block on its list: at the head, or at the tail when `tail`. The caller
    /// keeps `used_2m` right.
    fn push_free(&mut self, f: u64, order: u8, tail: bool) {
        self.head_order[f as usize] = order;
        let list = &mut self.free[order as usize];
        if tail {
            list.push_front(f as u32);
        } else {
            list.push_back(f as u32);
        }
        self.free_count[order as usize] += 1;
        self.free_frames += 1 << order;
        // Purge stale entries when they outnumber live ones, so lists stay small.
        if list.len() > 64 && list.len() as u64 > 2 * self.free_count[order as usize] {
            let ho = &self.head_order;
            list.retain(|&g| ho[g as usize] == order);
        }
    }

    /// Allocate a block of 2^order frames (aligned to its size) from the buddy allocator,
    /// or `None` when no block that large is free. Takes the head of the smallest list
    /// that has a block and splits it as Linux's `expand` does: the lower half is kept,
    /// the upper halves go to the heads of their lists.
    pub fn alloc(&mut self, order: u8) -> Option<Frame> {
        for o in order..=MAX_ORDER {
            while let Some(f) = self.free[o as usize].pop_back() {
                if self.head_order[f as usize] != o {
                    continue; // stale entry
                }
                let f = f as u64;
                self.head_order[f as usize] = NOT_FREE;
                self.free_count[o as usize] -= 1;
                self.free_frames -= 1 << o;
                self.account(f, o, true);
                let mut cur = o;
                while cur > order {
                    cur -= 1;
                    self.push_free(f + (1 << cur), cur, false);
                    self.account(f + (1 << cur), cur, false);
                }
                return Some(Frame(f));
            }
        }
        None
    }

    /// Allocate one specific block if it is entirely free (used to place pinned pages
    /// and reservations). Returns false if any part of it is in use.
    pub fn alloc_at(&mut self, frame: Frame, order: u8) -> bool {
        // Find the free block that contains `frame`, if any.
        let f = frame.0;
        if f % (1 << order) != 0 || f + (1 << order) > self.frames {
            return false;
        }
        let mut o = order;
        let (mut head, mut ho) = (None, 0);
        while o <= MAX_ORDER {
            let h = f & !((1u64 << o) - 1);
            if self.head_order[h as usize] == o {
                head = Some(h);
                ho = o;
                break;
            }
            o += 1;
        }
        let Some(h) = head else { return false };
        self.head_order[h as usize] = NOT_FREE;
        self.free_count[ho as usize] -= 1;
        self.free_frames -= 1 << ho;
        self.account(h, ho, true);
        // Split down towards `frame`, freeing the halves that do not contain it.
        let (mut base, mut cur) = (h, ho);
        while cur > order {
            cur -= 1;
            let upper = base + (1 << cur);
            let (keep, give) = if f >= upper { (upper, base) } else { (base, upper) };
            self.push_free(give, cur, false);
            self.account(give, cur, false);
            base = keep;
        }
        debug_assert_eq!(base, f);
        true
    }

    /// Return a block to the buddy allocator, merging it with its free buddies. As Linux's
    /// `__free_one_page`, the merged block goes to the tail of its list when the buddy of
    /// the next-larger block is free (it is likely to merge further soon, so it should not
    /// be handed out first), and to the head otherwise.
    pub fn free(&mut self, frame: Frame, order: u8) {
        let mut f = frame.0;
        let mut o = order;
        debug_assert_eq!(self.head_order[f as usize], NOT_FREE, "double free of frame {f}");
        self.account(f, o, false);
        while o < MAX_ORDER {
            let buddy = f ^ (1 << o);
            if buddy + (1 << o) > self.frames || self.head_order[buddy as usize] != o {
                break;
            }
            self.head_order[buddy as usize] = NOT_FREE;
            self.free_count[o as usize] -= 1;
            self.free_frames -= 1 << o;
            f = f.min(buddy);
            o += 1;
        }
        let mut tail = false;
        if o + 2 < MAX_ORDER {
            let higher_buddy = (f & !((1u64 << (o + 1)) - 1)) ^ (1 << (o + 1));
            tail = higher_buddy + (1 << (o + 1)) <= self.frames && self.head_order[higher_buddy as usize] == o + 1;
        }
        self.push_free(f, o, tail);
    }

    /// Allocate one 4 KB frame for CPU `self.cpu`, through its per-CPU list when lists are
    /// on. When the buddy allocator is empty, the other CPUs' lists are drained first (as
    /// Linux's slow path does).
    pub fn alloc_page(&mut self) -> Option<Frame> {
        if let Some(mut rng) = self.shuffle.take() {
            let frames = self.frames;
            let hit = (0..SHUFFLE_TRIES).map(|_| Frame(rng.below(frames))).find(|&f| self.alloc_at(f, 0));
            self.shuffle = Some(rng);
            return hit.or_else(|| self.alloc(0));
        }
        if self.pcp_batch == 0 {
            return self.alloc(0);
        }
        let cpu = self.cpu.min(self.pcp.len() - 1);
        if self.pcp[cpu].is_empty() {
            // rmqueue_bulk: the first frame taken ends up at the head (lifo: at the tail, as
            // a stack of them).
            for _ in 0..self.pcp_batch {
                match self.alloc(0) {
                    Some(f) if self.pcp_lifo => self.pcp[cpu].push_back(f.0 as u32),
                    Some(f) => self.pcp[cpu].push_front(f.0 as u32),
                    None => break,
                }
            }
            if self.pcp[cpu].is_empty() {
                self.drain_pcp();
                return self.alloc(0);
            }
        }
        self.pcp[cpu].pop_back().map(|f| Frame(f as u64))
    }

    /// Free one 4 KB frame to CPU `self.cpu`'s list (or straight to the buddy allocator).
    pub fn free_page(&mut self, frame: Frame) {
        if self.pcp_batch == 0 || self.shuffle.is_some() {
            return self.free(frame, 0);
        }
        let cpu = self.cpu.min(self.pcp.len() - 1);
        self.pcp[cpu].push_back(frame.0 as u32);
        if self.pcp[cpu].len() > self.pcp_high {
            // free_pcppages_bulk takes the coldest frames, from the tail.
            for _ in 0..self.pcp_batch {
                let Some(f) = self.pcp[cpu].pop_front() else { break };
                self.free(Frame(f as u64), 0);
            }
        }
    }

    /// Return every per-CPU list to the buddy allocator (before compaction, or when an
    /// allocation would otherwise fail).
    pub fn drain_pcp(&mut self) {
        for cpu in 0..self.pcp.len() {
            while let Some(f) = self.pcp[cpu].pop_front() {
                self.free(Frame(f as u64), 0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_merges_back() {
        let mut p = PhysMem::new(64 << 20);
        let total = p.free_frames();
        assert_eq!(total, (64 << 8) - 256);
        let a = p.alloc(0).unwrap();
        let b = p.alloc(0).unwrap();
        assert_eq!(b.0, a.0 + 1, "a fresh buddy allocator hands out neighbours");
        let c = p.alloc(ORDER_2M).unwrap();
        assert_eq!(c.0 % 512, 0);
        p.free(a, 0);
        p.free(b, 0);
        p.free(c, ORDER_2M);
        assert_eq!(p.free_frames(), total);
        assert_eq!(p.free_2m_blocks(), 31, "everything merged back except the 1 MB reserve's block");
    }

    #[test]
    fn exhaustion_is_none_not_panic() {
        let mut p = PhysMem::new(2 << 20);
        let mut n = 0;
        while p.alloc(0).is_some() {
            n += 1;
        }
        assert_eq!(n, 512 - 256);
        assert!(p.alloc(0).is_none());
    }

    #[test]
    fn alloc_at_takes_exactly_that_block() {
        let mut p = PhysMem::new(16 << 20);
        assert!(p.alloc_at(Frame(1000), 0));
        assert!(!p.alloc_at(Frame(1000), 0));
        assert!(!p.alloc_at(Frame(512), ORDER_2M), "block containing frame 1000 is no longer whole");
        assert!(p.alloc_at(Frame(1024), ORDER_2M));
        let before = p.free_frames();
        p.free(Frame(1000), 0);
        assert_eq!(p.free_frames(), before + 1);
    }

    /// Shuffled frames: the same seed gives the same frames, neighbours are not handed out
    /// together, every frame still comes out once, and a nearly full memory is used up to
    /// the last frame (the fallback after random misses) and then reports exhaustion.
    #[test]
    fn shuffled_frames_are_seeded_distinct_and_exhaust_cleanly() {
        let take = |seed, n| {
            let mut p = PhysMem::new(64 << 20).with_pcp(1, 63, 378, PcpOrder::Fifo).with_frame_order(FrameOrder::Shuffled(seed));
            (0..n).map(|_| p.alloc_page().unwrap().0).collect::<Vec<_>>()
        };
        let a = take(1, 100);
        assert_eq!(a, take(1, 100), "a seed fixes the order");
        assert_ne!(a, take(2, 100));
        let neighbours = a.windows(2).filter(|w| w[1] == w[0] + 1).count();
        assert!(neighbours < 3, "{neighbours} of 99 consecutive allocations were neighbours");
        let spread = a.iter().map(|f| f >> 9).collect::<std::collections::BTreeSet<_>>().len();
        assert!(spread > 25, "100 frames fell in only {spread} of 32 2 MB blocks");

        let mut p = PhysMem::new(2 << 20).with_frame_order(FrameOrder::Shuffled(7));
        let mut seen = vec![false; 512];
        let mut n = 0;
        while let Some(f) = p.alloc_page() {
            assert!(f.0 >= 256 && !seen[f.0 as usize], "frame {} handed out twice or reserved", f.0);
            seen[f.0 as usize] = true;
            n += 1;
        }
        assert_eq!(n, 256, "every free frame, then None");
        for f in 256..512 {
            p.free_page(Frame(f));
        }
        assert_eq!(p.free_frames(), 256, "frees go straight back to the buddy allocator");
        assert_eq!(p.free_blocks(8), 1, "and merge");
    }

    #[test]
    fn frame_order_parses_and_shows() {
        assert_eq!(FrameOrder::parse("ascending"), Some(FrameOrder::Ascending));
        assert_eq!(FrameOrder::parse(" shuffled:42 "), Some(FrameOrder::Shuffled(42)));
        for bad in ["shuffled", "shuffled:", "shuffled:x", "random", ""] {
            assert_eq!(FrameOrder::parse(bad), None, "{bad:?}");
        }
        assert_eq!(FrameOrder::Shuffled(42).show(), "shuffled:42");
    }

    /// Random alloc/free against a model that tracks owned frames: no frame is handed out
    /// twice and all memory comes back.
    #[test]
    fn random_churn_never_double_allocates() {
        let mut p = PhysMem::new(32 << 20);
        let total = p.free_frames();
        let mut owned = vec![false; p.total_frames() as usize];
        let mut held: Vec<(Frame, u8)> = Vec::new();
        let mut x = 12345u64;
        for _ in 0..20000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x % 3 != 0 || held.is_empty() {
                let order = (x >> 8) as u8 % 10;
                if let Some(f) = p.alloc(order) {
                    for g in f.0..f.0 + (1 << order) {
                        assert!(!owned[g as usize], "frame {g} handed out twice");
                        owned[g as usize] = true;
                    }
                    held.push((f, order));
                }
            } else {
                let (f, o) = held.swap_remove((x >> 16) as usize % held.len());
                for g in f.0..f.0 + (1 << o) {
                    owned[g as usize] = false;
                }
                p.free(f, o);
            }
        }
        for (f, o) in held {
            p.free(f, o);
        }
        assert_eq!(p.free_frames(), total);
        check_used(&p);
    }

    /// `used_2m` agrees with the free lists: per block, 512 minus its free frames.
    fn check_used(p: &PhysMem) {
        let mut free = vec![0u64; p.blocks_2m()];
        let mut f = 0u64;
        while f < p.total_frames() {
            match p.is_free_head(Frame(f)) {
                Some(o) => {
                    for g in f..f + (1 << o) {
                        free[(g >> 9) as usize] += 1;
                    }
                    f += 1 << o;
                }
                None => f += 1,
            }
        }
        for (b, &nfree) in free.iter().enumerate() {
            let size = (p.total_frames() - b as u64 * 512).min(512);
            assert_eq!(p.used_in_2m(b) as u64, size - nfree, "block {b}");
        }
    }

    #[test]
    fn used_counts_follow_every_operation() {
        let mut p = PhysMem::new(32 << 20).with_pcp(2, 7, 20, PcpOrder::Fifo);
        check_used(&p);
        let mut held = Vec::new();
        let mut x = 99u64;
        for i in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            p.cpu = (x >> 40) as usize % 2;
            match x % 5 {
                0 | 1 => held.extend(p.alloc_page().map(|f| (f, 0u8))),
                2 => held.extend(p.alloc((x >> 8) as u8 % 11).map(|f| (f, (x >> 8) as u8 % 11))),
                _ if !held.is_empty() => {
                    let (f, o) = held.swap_remove((x >> 16) as usize % held.len());
                    if o == 0 && x & 1 == 0 {
                        p.free_page(f);
                    } else {
                        p.free(f, o);
                    }
                }
                _ => {}
            }
            if i % 500 == 0 {
                // Taking a specific frame may fail (it may be in use); either way the counts must agree.
                let _ = p.alloc_at(Frame(4096 + (x >> 20) % 2048), 0);
            }
        }
        p.drain_pcp();
        check_used(&p);
    }

    #[test]
    fn a_lifo_per_cpu_list_hands_a_batch_out_descending() {
        // FreeBSD's page cache as a stack: the batch's last frame goes first, so pages faulted
        // in address order get descending frames and no two neighbours are contiguous upward.
        let mut p = PhysMem::new(64 << 20).with_pcp(1, 63, 378, PcpOrder::Lifo);
        let a: Vec<u64> = (0..63).map(|_| p.alloc_page().unwrap().0).collect();
        assert!(a.windows(2).all(|w| w[1] + 1 == w[0]), "descending: {a:?}");
        assert_eq!(p.pcp_frames(), 0);
        // The next batch is the next 63 frames, again last first.
        assert_eq!(p.alloc_page().unwrap().0, a[0] + 63);
    }

    #[test]
    fn per_cpu_lists_hand_out_ascending_frames_and_reuse_the_last_freed() {
        let mut p = PhysMem::new(64 << 20).with_pcp(2, 63, 378, PcpOrder::Fifo);
        let a: Vec<u64> = (0..10).map(|_| p.alloc_page().unwrap().0).collect();
        assert!(a.windows(2).all(|w| w[1] == w[0] + 1), "a fresh batch is contiguous: {a:?}");
        assert_eq!(p.pcp_frames(), 53);
        // Another CPU refills its own batch from the next frames.
        p.cpu = 1;
        let b = p.alloc_page().unwrap().0;
        assert_eq!(b, a[0] + 63);
        // A freed frame is the next one handed out on that CPU (LIFO, cache-hot).
        p.cpu = 0;
        p.free_page(Frame(a[3]));
        assert_eq!(p.alloc_page().unwrap().0, a[3]);
        // Past `high`, a batch goes back to the buddy allocator.
        let extra: Vec<Frame> = (0..400).map(|i| Frame(8192 + i)).collect();
        for &f in &extra {
            assert!(p.alloc_at(f, 0));
        }
        let before = p.free_frames();
        for f in extra {
            p.free_page(f);
        }
        assert!(p.free_frames() > before, "the list spilled to the buddy allocator");
        assert!(p.pcp_frames() <= 378 + 62, "CPU 0 holds at most `high`, CPU 1 its batch");
    }

    #[test]
    fn a_block_likely_to_merge_goes_to_the_tail() {
        let mut p = PhysMem::new(16 << 20);
        // Frames 256..264 (the first after the 1 MB reserve), handed out in order.
        let f: Vec<Frame> = (0..8).map(|_| p.alloc(0).unwrap()).collect();
        assert_eq!((f[0].0, f[7].0), (256, 263));
        // 261: its buddy 260 and the order-1 buddy 262-263 are in use: head of the list.
        p.free(f[5], 0);
        // 258 and 259 merge into an order-1 block; then 256, whose buddy 257 is in use but
        // whose order-1 buddy (258-259) is free, is likely to merge soon: tail.
        p.free(f[2], 0);
        p.free(f[3], 0);
        p.free(f[0], 0);
        assert_eq!(p.alloc(0).unwrap(), f[5], "the head is handed out first");
        assert_eq!(p.alloc(0).unwrap(), f[0]);
        check_used(&p);
    }
}
