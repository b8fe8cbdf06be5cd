//! Simulated physical memory: a binary buddy allocator over 4 KB frames (orders 0 = 4 KB
//! ... 18 = 1 GB), as Linux's. Data frames are never materialised: only their numbers
//! exist. Page-table nodes get frames from here too, so they compete with data for
//! contiguity, and their contents live in `pt`.

use crate::addr::Frame;

/// Largest block order: 2^18 frames = 1 GB.
pub const MAX_ORDER: u8 = 18;
/// Order of a 2 MB block.
pub const ORDER_2M: u8 = 9;
const NOT_FREE: u8 = u8::MAX;

pub struct PhysMem {
    frames: u64,
    /// For the first frame of each free block: its order; `NOT_FREE` elsewhere.
    head_order: Vec<u8>,
    /// LIFO free lists per order. Entries go stale when a block is merged away; they are
    /// skipped on pop (checked against `head_order`) and purged when a list grows.
    free: Vec<Vec<u32>>,
    free_count: [u64; MAX_ORDER as usize + 1],
    free_frames: u64,
}

impl PhysMem {
    /// `bytes` of memory, all free, except the first 1 MB (firmware and legacy regions, as
    /// on a PC; it also keeps frame 0 from ever being handed out).
    pub fn new(bytes: u64) -> PhysMem {
        let frames = bytes >> 12;
        assert!(frames >= 512 && frames <= u32::MAX as u64, "physical memory size validated by Config");
        let mut p = PhysMem {
            frames,
            head_order: vec![NOT_FREE; frames as usize],
            free: vec![Vec::new(); MAX_ORDER as usize + 1],
            free_count: [0; MAX_ORDER as usize + 1],
            free_frames: 0,
        };
        // Carve memory into the largest aligned blocks; push high addresses first so the
        // lowest block is at the top of each LIFO list, as after a fresh boot.
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
            p.push_free(f, o);
        }
        let reserved = p.alloc(8).expect("fresh memory has a 1 MB block");
        debug_assert_eq!(reserved.0, 0);
        p
    }

    pub fn total_frames(&self) -> u64 {
        self.frames
    }

    pub fn free_frames(&self) -> u64 {
        self.free_frames
    }

    /// Free blocks of exactly `order`.
    pub fn free_blocks(&self, order: u8) -> u64 {
        self.free_count[order as usize]
    }

    /// Free, aligned 2 MB blocks available (counting those inside larger free blocks).
    pub fn free_2m_blocks(&self) -> u64 {
        (ORDER_2M..=MAX_ORDER).map(|o| self.free_count[o as usize] << (o - ORDER_2M)).sum()
    }

    fn push_free(&mut self, f: u64, order: u8) {
        self.head_order[f as usize] = order;
        let list = &mut self.free[order as usize];
        list.push(f as u32);
        self.free_count[order as usize] += 1;
        self.free_frames += 1 << order;
        // Purge stale entries when they outnumber live ones, so lists stay small.
        if list.len() > 64 && list.len() as u64 > 2 * self.free_count[order as usize] {
            let ho = &self.head_order;
            list.retain(|&g| ho[g as usize] == order);
        }
    }

    /// Allocate a block of 2^order frames (aligned to its size), or `None` when no block
    /// that large is free. Splits larger blocks as the buddy allocator does, keeping the
    /// lower half and freeing the upper halves.
    pub fn alloc(&mut self, order: u8) -> Option<Frame> {
        for o in order..=MAX_ORDER {
            while let Some(f) = self.free[o as usize].pop() {
                if self.head_order[f as usize] != o {
                    continue; // stale entry
                }
                let f = f as u64;
                self.head_order[f as usize] = NOT_FREE;
                self.free_count[o as usize] -= 1;
                self.free_frames -= 1 << o;
                let mut cur = o;
                while cur > order {
                    cur -= 1;
                    self.push_free(f + (1 << cur), cur);
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
        // Split down towards `frame`, freeing the halves that do not contain it.
        let (mut base, mut cur) = (h, ho);
        while cur > order {
            cur -= 1;
            let upper = base + (1 << cur);
            if f >= upper {
                self.push_free(base, cur);
                base = upper;
            } else {
                self.push_free(upper, cur);
            }
        }
        debug_assert_eq!(base, f);
        true
    }

    /// Return a block, merging it with its free buddies.
    pub fn free(&mut self, frame: Frame, order: u8) {
        let mut f = frame.0;
        let mut o = order;
        debug_assert_eq!(self.head_order[f as usize], NOT_FREE, "double free of frame {f}");
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
        self.push_free(f, o);
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
    }
}
