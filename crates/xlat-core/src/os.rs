//! The simulated OS: address spaces, demand paging and prefaulting. It is the only writer
//! of page tables (hardware sets A/D bits during walks; see `machine`).

use crate::addr::{Frame, PageSize, VirtAddr};
use crate::config::{Config, PtFormat};
use crate::error::SimError;
use crate::phys::PhysMem;
use crate::pt::{NodeId, PageTables, PTE_D, PTE_RW, PTE_US};
use crate::tlb::Ctx;
use crate::workload::Region;

/// One process's view of memory.
pub struct AddressSpace {
    pub root: NodeId,
    /// Level of the root node (4 or 5).
    pub top: u8,
    pub ctx: Ctx,
    pub regions: Vec<Region>,
    pub mapped_bytes: u64,
    pub huge_bytes: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OsCounters {
    pub faults: u64,
}

pub struct Os {
    pub phys: PhysMem,
    pub pt: PageTables,
    pub spaces: Vec<AddressSpace>,
    pub counters: OsCounters,
    top: u8,
    va_bits: u32,
    format: PtFormat,
    phys_gb: u64,
}

impl Os {
    pub fn new(cfg: &Config) -> Os {
        let (top, va_bits) = match cfg.pt_format {
            PtFormat::Radix4 => (4, 47),
            PtFormat::Radix5 => (5, 56),
        };
        Os {
            phys: PhysMem::new(cfg.phys_size_gb << 30),
            pt: PageTables::new(),
            spaces: Vec::new(),
            counters: OsCounters::default(),
            top,
            va_bits,
            format: cfg.pt_format,
            phys_gb: cfg.phys_size_gb,
        }
    }

    /// Create a process with the given regions; returns its index. PCIDs start at 1.
    pub fn create_space(&mut self, regions: Vec<Region>) -> Result<usize, SimError> {
        let root = self.pt.alloc_node(&mut self.phys, self.top)?;
        let ctx = self.spaces.len() as Ctx + 1;
        self.spaces.push(AddressSpace { root, top: self.top, ctx, regions, mapped_bytes: 0, huge_bytes: 0 });
        Ok(self.spaces.len() - 1)
    }

    /// Handle a page fault at `va`: map a fresh zeroed 4 KB frame. A write fault maps the
    /// page dirty, as Linux's anonymous-fault path does for writable mappings.
    pub fn fault(&mut self, space: usize, va: VirtAddr, write: bool) -> Result<(), SimError> {
        if va.0 >> self.va_bits != 0 {
            return Err(SimError::BadAddress { va: va.0, bits: self.va_bits, format: self.format.name() });
        }
        self.counters.faults += 1;
        self.map_4k(space, va, if write { PTE_D } else { 0 })
    }

    fn map_4k(&mut self, space: usize, va: VirtAddr, extra: u64) -> Result<(), SimError> {
        let frame = self.phys.alloc(0).ok_or(SimError::OutOfMemory { gb: self.phys_gb, va: va.0 })?;
        let sp = &mut self.spaces[space];
        let page = VirtAddr(va.0 & !0xfff);
        self.pt.map(&mut self.phys, sp.root, sp.top, page, frame, PageSize::Size4K, PTE_RW | PTE_US | extra)?;
        sp.mapped_bytes += 4096;
        Ok(())
    }

    /// Map every page of every region before the run (as MAP_POPULATE would, and as the
    /// flattening paper's syscall-emulation runs do). Pages are mapped clean and not
    /// accessed, so the first walks set A (and D on stores) as hardware would.
    pub fn prefault(&mut self, space: usize) -> Result<(), SimError> {
        let regions = self.spaces[space].regions.clone();
        for r in regions {
            let mut va = r.start & !0xfff;
            while va < r.end() {
                if va >> self.va_bits != 0 {
                    return Err(SimError::BadAddress { va, bits: self.va_bits, format: self.format.name() });
                }
                let sp = &self.spaces[space];
                if self.pt.translate(sp.root, sp.top, VirtAddr(va)).is_none() {
                    self.map_4k(space, VirtAddr(va), 0)?;
                }
                va += 4096;
            }
        }
        Ok(())
    }

    /// The frame backing `va`, if mapped (functional).
    pub fn translate(&self, space: usize, va: VirtAddr) -> Option<(Frame, PageSize)> {
        let sp = &self.spaces[space];
        self.pt.translate(sp.root, sp.top, va).map(|m| (m.frame, m.size))
    }
}
