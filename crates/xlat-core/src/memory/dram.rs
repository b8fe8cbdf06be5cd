//! DRAM beyond the last-level cache.

use std::collections::VecDeque;

use crate::param::{component, Limit};

component! {
    /// DRAM (`dram.*`): latency, bandwidth, banks, refresh, write drains, energy.
    DramParams {
        latency_ns: f64 = 50.0; "latency_ns"; Some(Limit::Real(1e6)); "DRAM access latency beyond the LLC, in ns";
        bandwidth_gbps: f64 = 0.0; "bandwidth_gbps"; Some(Limit::Real(1e6)); "DRAM bandwidth in GB/s for the queue model (0: unlimited)";
        banks: u64 = 0; "banks"; Some(Limit::Int(1 << 16)); "DRAM banks with row buffers, bank groups and ranks counted in (a power of two; ChampSim's DDR4 default: 32): each keeps its last row open and serves one access at a time, lines interleaved over the banks; dram.latency_ns is then the part of an access outside the bank (0: no banks, every access takes dram.latency_ns)";
        row_kb: u64 = 8; "row_kb"; Some(Limit::Int(1 << 10)); "dram.banks > 0: bytes per row of one bank, in KB (a power of two; ChampSim's DDR4 default: 1024 columns x 8 B = 8)";
        trp_ns: f64 = 15.0; "trp_ns"; Some(Limit::Real(1e6)); "dram.banks > 0: precharge time, closing the open row (ChampSim's DDR4-3200: 24 cycles at 1600 MHz)";
        trcd_ns: f64 = 15.0; "trcd_ns"; Some(Limit::Real(1e6)); "dram.banks > 0: activate time, opening a row (ChampSim's DDR4-3200: 24 cycles at 1600 MHz)";
        tcas_ns: f64 = 15.0; "tcas_ns"; Some(Limit::Real(1e6)); "dram.banks > 0: column access time, reading from the open row (ChampSim's DDR4-3200: 24 cycles at 1600 MHz)";
        trefi_ns: f64 = 0.0; "trefi_ns"; Some(Limit::Real(1e9)); "dram.banks > 0: refresh interval: every bank refreshes at once every this many ns, unavailable for dram.trfc_ns (DDR4: 7800; ChampSim's default: 32 ms / 8192 = 3906; 0: no refresh)";
        trfc_ns: f64 = 350.0; "trfc_ns"; Some(Limit::Real(1e6)); "dram.banks > 0 and dram.trefi_ns > 0: refresh time, every bank unavailable (DDR4 8 Gb: 350; ChampSim's 16 GB channel: 368)";
        write_batch: u64 = 0; "write_batch"; Some(Limit::Int(1 << 16)); "dram.bandwidth_gbps > 0 (without a bandwidth limit there is no channel to drain on, and none is modelled): write-backs wait in the controller's write queues and drain in batches of this many (over all channels: each channel's batch times the channels), the channel turning around twice a drain; reads arriving during a drain wait for it (0: no drains: each write-back takes a free slot of the channel when it leaves the LLC)";
        turnaround_ns: f64 = 0.0; "turnaround_ns"; Some(Limit::Real(1e6)); "dram.write_batch > 0: ns the data bus idles at a switch between reading and writing, the mean of the two directions, twice a drain (DDR4: tWTR + tCL from writing to reading, about 2 clocks back, some 10 ns; ChampSim's controller: tRAS both ways)";
        energy_nj: f64 = 15.0; "energy_nj"; Some(Limit::Real(1e6)); "DRAM dynamic energy per 64 B access (nJ)";
    }
    check(p, key) {
        for (name, v) in [
            ("energy_nj", p.energy_nj),
            ("latency_ns", p.latency_ns),
            ("bandwidth_gbps", p.bandwidth_gbps),
            ("trp_ns", p.trp_ns),
            ("trcd_ns", p.trcd_ns),
            ("tcas_ns", p.tcas_ns),
            ("trefi_ns", p.trefi_ns),
            ("trfc_ns", p.trfc_ns),
            ("turnaround_ns", p.turnaround_ns),
        ] {
            if v < 0.0 {
                return Err(crate::param::invalid(key(name), "must not be negative"));
            }
        }
        if !p.banks.is_power_of_two() && p.banks != 0 {
            return Err(crate::param::invalid(key("banks"), format!("{} is not a power of two (0: no banks)", p.banks)));
        }
        if p.trefi_ns > 0.0 && p.trefi_ns <= p.trfc_ns + p.trp_ns + p.trcd_ns + p.tcas_ns {
            return Err(crate::param::invalid(key("trefi_ns"), format!("{} ns leaves no time between refreshes of dram.trfc_ns = {} ns for a row conflict", p.trefi_ns, p.trfc_ns)));
        }
        if !p.row_kb.is_power_of_two() {
            return Err(crate::param::invalid(key("row_kb"), format!("{} is not a power of two", p.row_kb)));
        }
        Ok(())
    }
}

impl DramParams {
    /// The latency in cycles of a core clocked at `ghz`.
    pub fn latency_cycles(&self, ghz: f64) -> u64 {
        (self.latency_ns * ghz).round() as u64
    }

    /// The write drains in cycles at `ghz` (`dram.write_batch` > 0), or None.
    pub fn drain_timing(&self, ghz: f64) -> Option<DrainTiming> {
        (self.write_batch > 0).then(|| DrainTiming { batch: self.write_batch, turnaround: (self.turnaround_ns * ghz).round() as u64 })
    }

    /// The banks in cycles at `ghz` (`dram.banks` > 0), or None.
    pub fn bank_timing(&self, ghz: f64) -> Option<BankTiming> {
        let cycles = |ns: f64| (ns * ghz).round() as u64;
        (self.banks > 0).then(|| BankTiming {
            banks: self.banks,
            row_lines: self.row_kb * 1024 / crate::LINE_BYTES,
            trp: cycles(self.trp_ns),
            trcd: cycles(self.trcd_ns),
            tcas: cycles(self.tcas_ns),
            trefi: cycles(self.trefi_ns),
            trfc: cycles(self.trfc_ns),
        })
    }
}

/// DRAM: a fixed latency plus, optionally, a bandwidth limit: one 64-byte line per `service`
/// cycles. Requests do not arrive in time order (an out-of-order window issues a walk's reads
/// and a later reference's misses at times that interleave, and write-backs are timed when
/// their victim leaves), so the channel is a calendar of service slots rather than one queue:
/// a request takes the first free slot at or after its arrival, and waits only if the slots
/// from its arrival on are taken. (A single "busy until" queue made every request wait behind
/// the latest one booked, however much earlier it arrived, and ran away.)
pub struct Dram {
    latency: u64,
    /// Service time per line in 1/256 cycles (0: unlimited bandwidth).
    service_x256: u64,
    calendar: Calendar,
    /// Write-backs drained in batches (`dram.write_batch` > 0, with a bandwidth limit).
    drains: Option<Drains>,
    /// Banks and their row buffers (`dram.banks` > 0); None: every access takes `latency`.
    banks: Option<Box<Banks>>,
    pub energy_nj: f64,
    pub reads: u64,
    pub writes: u64,
    pub queue_cycles: u64,
}

/// Write drains: a memory controller holds write-backs in its write queue while it reads, and
/// when the queue fills to its high watermark it turns the data bus around, writes a batch,
/// and turns it back (ChampSim's `swap_write_mode`, DRAMSim's and Ramulator's write-drain
/// modes alike). Reads wait for the whole drain, and each switch of direction leaves the bus
/// idle (`turnaround`: the write-to-read and read-to-write times of the DDR standard). So a
/// batch takes its writes' slots of the channel and the turnarounds' as one run from the
/// arrival of the write that fills it, and reads arriving then wait behind it. Counted over
/// all channels together: the writes of a drain are every channel's batch, and the slots the
/// turnarounds leave idle are each channel's for as long as the two switches take, which sums
/// to the two switches' length over the whole bandwidth (C channels of one C-th of it). This
/// is the loaded regime, where reads keep the controller in read mode until a queue is full;
/// a controller that also drains whenever it has no read to do does so at no read's cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DrainTiming {
    /// Write-backs per drain, over all channels (each channel's batch, times the channels).
    pub batch: u64,
    /// Cycles the data bus idles at one switch between reading and writing.
    pub turnaround: u64,
}

struct Drains {
    timing: DrainTiming,
    /// The write-backs waiting in the write queues.
    pending: u64,
    /// Slots a drain's two switches take, in 1/256 slots.
    idle_x256: u64,
    /// Drains done.
    drains: u64,
}

/// Timing of a DRAM with banks and row buffers, in core cycles (`dram.*`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BankTiming {
    /// Banks (a power of two; bank groups and ranks counted in).
    pub banks: u64,
    /// 64-byte lines per row of one bank (a power of two).
    pub row_lines: u64,
    /// Precharge, activate and column-access times.
    pub trp: u64,
    pub trcd: u64,
    pub tcas: u64,
    /// Refresh: every bank is unavailable for `trfc` cycles every `trefi` (0: no refresh).
    pub trefi: u64,
    pub trfc: u64,
}

impl BankTiming {
    /// The first cycle from `s` on from which `len` cycles fall outside every refresh, the
    /// `trfc` cycles from each multiple of `trefi` (but 0). (The configuration's validation keeps a row
    /// conflict shorter than the time between refreshes, so one always fits.)
    #[inline]
    fn clear_of_refresh(&self, mut s: u64, len: u64) -> u64 {
        if self.trefi == 0 {
            return s;
        }
        loop {
            let window = s / self.trefi * self.trefi;
            if window > 0 && s < window + self.trfc {
                s = window + self.trfc;
            } else if s + len > window + self.trefi {
                s = window + self.trefi + self.trfc;
            } else {
                return s;
            }
        }
    }
}

/// The banks of a DRAM: each keeps its last row open (open-page policy) and serves one access
/// at a time. Lines are interleaved over the banks (consecutive lines in consecutive banks),
/// then over a row's columns, as ChampSim's default address mapping does; the row is what is
/// left above. The bank number is XORed with the row's bits folded to its width (permutation
/// interleaving, as memory controllers and ChampSim's mapping do), so that lines at the same
/// offset of different rows, such as the same entry of many page-table pages, spread over
/// the banks instead of all queueing at one. An access takes the bank for tCAS when its row
/// is open, tRCD + tCAS when the bank is precharged, tRP + tRCD + tCAS when another row is.
///
/// Accesses arrive out of time order (see [`Dram`]), so a bank keeps its bookings as intervals
/// and an access takes the first gap long enough at or after its arrival, as the channel's
/// calendar does with slots. Reads go first, as a memory controller's scheduler puts them
/// (write-backs wait in its write queue and drain when reads leave the bank idle): a read
/// sees only the reads booked before it, and a write-back booked where the read lands moves
/// to the first gap after it. Which row is open follows the order accesses are simulated in,
/// not their time order: the one approximation of this model.
struct Banks {
    timing: BankTiming,
    /// Line -> row: `line >> row_shift`.
    row_shift: u32,
    /// Open row per bank (`u64::MAX`: precharged).
    open: Vec<u64>,
    /// Per bank: booked intervals, sorted and disjoint; those that ended before the floor (see
    /// [`Dram::access`]) are forgotten.
    busy: Vec<VecDeque<Booking>>,
    /// Scratch: the lengths of the write-backs a read moves.
    moved: Vec<u64>,
    row_hits: u64,
    row_misses: u64,
    row_conflicts: u64,
    bank_wait_cycles: u64,
}

impl Banks {
    fn new(timing: BankTiming) -> Banks {
        let n = timing.banks as usize;
        Banks {
            timing,
            row_shift: timing.banks.trailing_zeros() + timing.row_lines.trailing_zeros(),
            open: vec![u64::MAX; n],
            busy: vec![VecDeque::new(); n],
            moved: Vec::new(),
            row_hits: 0,
            row_misses: 0,
            row_conflicts: 0,
            bank_wait_cycles: 0,
        }
    }

    /// Access `line` arriving at cycle `arrival`, when no access arrives before `floor`:
    /// returns (cycles until its data leaves the bank, counted from `arrival`).
    fn access(&mut self, floor: u64, line: u64, arrival: u64, write: bool) -> u64 {
        let t = &self.timing;
        let row = line >> self.row_shift;
        let bank = ((line ^ fold(row, t.banks)) & (t.banks - 1)) as usize;
        let open = std::mem::replace(&mut self.open[bank], row);
        let occupy = if open == row {
            self.row_hits += 1;
            t.tcas
        } else if open == u64::MAX {
            self.row_misses += 1;
            t.trcd + t.tcas
        } else {
            self.row_conflicts += 1;
            t.trp + t.trcd + t.tcas
        };
        let busy = &mut self.busy[bank];
        while busy.front().is_some_and(|b| b.end <= floor) {
            busy.pop_front();
        }
        let from = arrival.max(floor);
        let start = if write {
            book_write(busy, t, from, occupy)
        } else {
            let (start, _) = first_gap(busy, t, from, occupy, true);
            // The write-backs in the read's way move behind it, earliest first.
            let first = busy.partition_point(|b| b.end <= start);
            let mut last = first;
            while last < busy.len() && busy[last].start < start + occupy {
                last += 1;
            }
            let moved = &mut self.moved;
            moved.clear();
            moved.extend(busy.drain(first..last).map(|b| b.end - b.start));
            busy.insert(first, Booking { start, end: start + occupy, write: false });
            for &len in moved.iter() {
                book_write(busy, t, start + occupy, len);
            }
            self.bank_wait_cycles += start - from;
            start
        };
        start + occupy - arrival
    }
}

/// `row`'s bits XORed together in chunks of log2(`banks`) bits: the permutation that spreads
/// one column's lines of many rows over the banks.
fn fold(row: u64, banks: u64) -> u64 {
    let bits = banks.trailing_zeros();
    if bits == 0 {
        return 0;
    }
    let (mut x, mut f) = (row, 0);
    while x != 0 {
        f ^= x;
        x >>= bits;
    }
    f
}

/// One access's time in a bank: [start, end).
#[derive(Clone, Copy, Debug)]
struct Booking {
    start: u64,
    end: u64,
    write: bool,
}

/// The first cycle at or after `from` from which `len` cycles overlap no refresh and no
/// booking of `busy` (with `reads_only`, no read: a read does not wait for write-backs), and
/// the index of the first booking after it.
fn first_gap(busy: &VecDeque<Booking>, t: &BankTiming, from: u64, len: u64, reads_only: bool) -> (u64, usize) {
    let mut start = t.clear_of_refresh(from, len);
    // (Ends are sorted too: the bookings are disjoint.)
    let mut i = busy.partition_point(|b| b.end <= start);
    while i < busy.len() && busy[i].start < start + len {
        if !(reads_only && busy[i].write) {
            start = t.clear_of_refresh(start.max(busy[i].end), len);
        }
        i += 1;
    }
    (start, i)
}

/// Book a write-back of `len` cycles in the first gap of `busy` at or after `from`; returns
/// its start.
fn book_write(busy: &mut VecDeque<Booking>, t: &BankTiming, from: u64, len: u64) -> u64 {
    let (start, i) = first_gap(busy, t, from, len, false);
    busy.insert(i, Booking { start, end: start + len, write: true });
    start
}

/// Which service slots are taken, over a window of [`Calendar::SLOTS`] slots that follows the
/// latest arrivals. A request older than the window is served as if it arrived at its start.
struct Calendar {
    /// The window's first slot.
    base: u64,
    /// Bit `i % SLOTS` set: slot `i` is taken (for `base <= i < base + SLOTS`).
    taken: Vec<u64>,
}

impl Calendar {
    /// 2^16 slots: at 64 B per 2-20 cycles, some 100 K to 1 M cycles, far more than requests
    /// arrive out of order.
    const SLOTS: u64 = 1 << 16;

    fn new() -> Calendar {
        Calendar { base: 0, taken: vec![0; (Self::SLOTS / 64) as usize] }
    }

    /// Move the window so that it starts at `base`, freeing the slots that leave it (a word
    /// at a time: the window moves by as many slots as the run has cycles).
    fn advance(&mut self, base: u64) {
        if base - self.base >= Self::SLOTS {
            self.taken.fill(0);
        } else {
            let mut s = self.base;
            while s < base {
                let i = s % Self::SLOTS;
                let bit = i % 64;
                let n = (64 - bit).min(base - s);
                let mask = if n == 64 { u64::MAX } else { ((1 << n) - 1) << bit };
                self.taken[(i / 64) as usize] &= !mask;
                s += n;
            }
        }
        self.base = base;
    }

    /// Take the first free slot at or after `slot`; returns it.
    fn book(&mut self, slot: u64) -> u64 {
        let mut s = slot.max(self.base);
        loop {
            // Keep the slot in the back half of the window's reach: arrivals run ahead.
            if s >= self.base + Self::SLOTS {
                self.advance(s - Self::SLOTS / 2);
            }
            let i = s % Self::SLOTS;
            // The first free slot from `s` to the end of its word (the bits shifted in count
            // as free, so a full word skips to the next), but not past the window's end: the
            // bits beyond it are the window's first slots, which the window must move past
            // before they can stand for later ones.
            let free = !(self.taken[(i / 64) as usize] >> (i % 64));
            let skip = u64::from(free.trailing_zeros()).min(self.base + Self::SLOTS - s);
            if skip < 64 - i % 64 && s + skip < self.base + Self::SLOTS {
                let i = i + skip;
                self.taken[(i / 64) as usize] |= 1 << (i % 64);
                return s + skip;
            }
            s += skip;
        }
    }
}

impl Dram {
    /// A DRAM of `latency` cycles (with `banks`, the part of every access outside the bank:
    /// controller, interconnect, the burst) and `bandwidth_gbps` (0: unlimited).
    pub fn new(latency: u64, bandwidth_gbps: f64, freq_ghz: f64, energy_nj: f64, banks: Option<BankTiming>) -> Dram {
        let service_x256 = if bandwidth_gbps > 0.0 { (crate::LINE_BYTES as f64 / bandwidth_gbps * freq_ghz * 256.0).round().max(1.0) as u64 } else { 0 };
        let banks = banks.map(|b| Box::new(Banks::new(b)));
        Dram { latency, service_x256, calendar: Calendar::new(), drains: None, banks, energy_nj, reads: 0, writes: 0, queue_cycles: 0 }
    }

    /// Drain write-backs in batches (see [`DrainTiming`]); only with a bandwidth limit (without
    /// one there is no channel to drain on).
    pub fn with_drains(mut self, drains: Option<DrainTiming>) -> Dram {
        self.drains = drains.filter(|d| d.batch > 0 && self.service_x256 > 0).map(|timing| Drains {
            timing,
            pending: 0,
            idle_x256: 2 * timing.turnaround * 256 * 256 / self.service_x256,
            drains: 0,
        });
        self
    }

    /// Write drains done (0 without drains).
    pub fn drains(&self) -> u64 {
        self.drains.as_ref().map_or(0, |d| d.drains)
    }

    /// Row-buffer statistics (hits, misses to a precharged bank, conflicts, cycles waited
    /// for a busy bank); None without banks.
    pub fn row_stats(&self) -> Option<[u64; 4]> {
        self.banks.as_ref().map(|b| [b.row_hits, b.row_misses, b.row_conflicts, b.bank_wait_cycles])
    }

    /// Latency of an access to `line` issued at cycle `now`, when no access comes before
    /// `floor` (the dispatch clock of the context furthest behind: the engine runs it next, and
    /// a reference's accesses come no sooner than its dispatch). The banks forget the bookings
    /// that ended before it. (An access that comes before it all the same is served from it.
    /// A floor that followed the latest arrival instead, a fixed span behind it, pushed the
    /// accesses of cores behind by more than the span forward to it, which put them further
    /// behind, and eight cores saturating a bank ran away: walks of 100,000 cycles.)
    #[inline]
    pub fn access(&mut self, floor: u64, now: u64, line: u64, write: bool) -> u64 {
        if write {
            self.writes += 1;
        } else {
            self.reads += 1;
        }
        // With banks, the line leaves its bank `in_bank` cycles after `now`, then takes the
        // channel; without, it takes the channel at once.
        let in_bank = match &mut self.banks {
            Some(b) => b.access(floor, line, now, write),
            None => 0,
        };
        if self.service_x256 == 0 {
            return self.latency + in_bank;
        }
        let ready = now + in_bank;
        let arrival = ready.saturating_mul(256) / self.service_x256;
        if write {
            if let Some(d) = &mut self.drains {
                // Queued until the batch is full; then the batch and the two switches take the
                // channel, a slot after another, from this write on.
                d.pending += 1;
                if d.pending >= d.timing.batch {
                    d.pending = 0;
                    d.drains += 1;
                    let slots = d.timing.batch + d.idle_x256.div_ceil(256);
                    let mut at = arrival;
                    for _ in 0..slots {
                        at = self.calendar.book(at) + 1;
                    }
                }
                return 0;
            }
        }
        let slot = self.calendar.book(arrival);
        // (Whole cycles: a wait shorter than one rounds to 0.)
        let wait = ((slot - arrival) * self.service_x256) >> 8;
        self.queue_cycles += wait;
        // Write-backs occupy the banks and the channel but nobody waits for them.
        if write {
            0
        } else {
            self.latency + in_bank + wait
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dram_queue_adds_waiting_time() {
        // 64 B at 32 GB/s and 2 GHz = 4 cycles per line.
        let mut d = Dram::new(100, 32.0, 2.0, 1.0, None);
        assert_eq!(d.access(0, 0, 0, false), 100);
        assert_eq!(d.access(0, 0, 0, false), 104);
        assert_eq!(d.access(0, 0, 0, false), 108);
        assert_eq!(d.access(0, 1000, 0, false), 100);
        assert_eq!(d.queue_cycles, 12);
        // A request booked far ahead does not hold up one that arrives earlier.
        assert_eq!(d.access(0, 5000, 0, true), 0);
        assert_eq!(d.access(0, 2000, 0, false), 100);
        // Slots taken from an arrival on push it back; earlier free slots do not help it.
        assert_eq!(d.access(0, 5000, 0, false), 104);
        // Old arrivals (beyond the window) are served from its start; the window follows.
        let far = 100 * Calendar::SLOTS * 4;
        assert_eq!(d.access(0, far, 0, false), 100);
        assert!(d.access(0, 0, 0, false) >= 100);
        let mut free = Dram::new(100, 0.0, 2.0, 1.0, None);
        assert_eq!(free.access(0, 0, 0, false) + free.access(0, 0, 0, false), 200);
    }

    /// Write drains (ChampSim's write mode, as every controller with a write queue): the
    /// write-backs of a batch take no slot until the batch is full, then take the channel with
    /// the two turnarounds as one run, and a read arriving then waits for all of it.
    #[test]
    fn writes_drain_in_batches_and_reads_wait_for_a_drain() {
        // 4 cycles a line; batches of 4; each switch of direction 8 cycles, 2 slots.
        let mut d = Dram::new(100, 32.0, 2.0, 1.0, None).with_drains(Some(DrainTiming { batch: 4, turnaround: 8 }));
        for _ in 0..3 {
            assert_eq!(d.access(0, 0, 0, true), 0);
        }
        // Three write-backs queued: the channel is free for a read.
        assert_eq!(d.access(0, 0, 0, false), 100);
        assert_eq!(d.drains(), 0);
        // The fourth fills the batch: 4 writes and 4 idle slots from slot 0 on (the read has
        // slot 0), so slots 1 to 8; the next read takes slot 9, 36 cycles on.
        assert_eq!(d.access(0, 0, 0, true), 0);
        assert_eq!(d.drains(), 1);
        assert_eq!(d.access(0, 0, 0, false), 136);
        // After the drain, the channel is free again.
        assert_eq!(d.access(0, 400, 0, false), 100);
        // Without drains the same writes take a slot each when they come, and no turnaround.
        let mut plain = Dram::new(100, 32.0, 2.0, 1.0, None).with_drains(None);
        for _ in 0..4 {
            assert_eq!(plain.access(0, 0, 0, true), 0);
        }
        assert_eq!(plain.access(0, 0, 0, false), 116);
        // A batch without a bandwidth limit: no channel, no drains.
        let mut free = Dram::new(100, 0.0, 2.0, 1.0, None).with_drains(Some(DrainTiming { batch: 1, turnaround: 8 }));
        free.access(0, 0, 0, true);
        assert_eq!(free.access(0, 0, 0, false), 100);
        assert_eq!(free.drains(), 0);
    }

    /// Drains neither lose nor invent channel time: on random reads and write-backs, the slots
    /// taken are the reads' plus, per full batch, its writes and its idle slots; the write-backs
    /// of a batch not yet full take none.
    #[test]
    fn drains_take_the_batches_and_their_turnarounds_and_nothing_else() {
        let mut x = 12345u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for (batch, turnaround) in [(1, 0), (3, 4), (8, 33), (19, 10)] {
            // 4 cycles a slot: the idle slots of a drain are ceil(2 x turnaround / 4).
            let mut d = Dram::new(0, 32.0, 2.0, 1.0, None).with_drains(Some(DrainTiming { batch, turnaround }));
            let idle = (2 * turnaround).div_ceil(4);
            let (mut reads, mut writes) = (0u64, 0u64);
            for i in 0..2000u64 {
                let write = next() % 3 == 0;
                d.access(0, i * 3 + next() % 40, 0, write);
                if write {
                    writes += 1;
                } else {
                    reads += 1;
                }
            }
            let taken: u64 = d.calendar.taken.iter().map(|w| u64::from(w.count_ones())).sum();
            assert_eq!(d.drains(), writes / batch);
            assert_eq!(taken, reads + writes / batch * (batch + idle), "batch {batch}, turnaround {turnaround}");
        }
    }

    /// The turnarounds are counted over all channels: at a given bandwidth, the channel time a
    /// drain leaves idle is two switches' length, so a drain's run is its writes' slots plus
    /// 2 x turnaround / slot time.
    #[test]
    fn a_drains_idle_slots_are_two_turnarounds() {
        // 64 B at 16 GB/s and 1 GHz: 4 cycles a line; turnarounds of 10 cycles: 20 cycles, 5 slots.
        let mut d = Dram::new(0, 16.0, 1.0, 1.0, None).with_drains(Some(DrainTiming { batch: 2, turnaround: 10 }));
        assert_eq!(d.access(0, 0, 0, true), 0);
        assert_eq!(d.access(0, 0, 0, true), 0);
        // Slots 0..7 (2 writes and 5 idle) are taken: a read at 0 starts at slot 7, cycle 28.
        assert_eq!(d.access(0, 0, 0, false), 28);
    }

    /// The calendar against a reference model (a set of taken slots, first free at or after
    /// the arrival), on random arrivals that run ahead with jitter.
    #[test]
    fn calendar_books_the_first_free_slot() {
        let mut c = Calendar::new();
        let mut taken = std::collections::BTreeSet::new();
        let mut x = 7u64;
        let mut t = 0u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            t += x % 4; // (about 2/3 load: runs of taken slots stay short)
            let arrival = t.saturating_sub(x % 500);
            let mut want = arrival.max(c.base);
            while taken.contains(&want) {
                want += 1;
            }
            let got = c.book(arrival);
            assert_eq!(got, want);
            taken.insert(got);
            // (The model forgets what the window has left behind.)
            if taken.first().is_some_and(|&s| s < c.base) {
                taken.retain(|&s| s >= c.base);
            }
        }
    }

    /// Bursts of arrivals at the same slot just before the window's end: their slots run past
    /// it, where the window must move before booking (the reference model as above).
    #[test]
    fn calendar_books_past_the_window_end() {
        let mut c = Calendar::new();
        let mut taken = std::collections::BTreeSet::new();
        // (A window that starts mid-word, as windows moved by arrivals do.)
        taken.insert(c.book(Calendar::SLOTS + 12_345));
        assert_eq!(c.base % 64, 12_345 % 64);
        for round in 0..40u64 {
            let end = c.base + Calendar::SLOTS;
            for k in 0..150u64 {
                let arrival = end - 1 - (round * 7 + k) % 90;
                let mut want = arrival.max(c.base);
                while taken.contains(&want) {
                    want += 1;
                }
                let got = c.book(arrival);
                assert_eq!(got, want, "round {round}, booking {k}");
                taken.insert(got);
                taken.retain(|&s| s >= c.base);
            }
        }
    }

    /// Less bandwidth never means less waiting, and waiting stays finite.
    #[test]
    fn queueing_is_monotone_in_bandwidth_and_finite() {
        let mut x = 3u64;
        // (20 K requests: at the narrowest channel the queue grows to most of them, and a booking
        // scans it slot by slot.)
        let reqs: Vec<(u64, bool)> = (0..20_000u64)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (i * 3 + x % 400, x % 4 == 0)
            })
            .collect();
        let mut last = 0;
        for bw in [200.0, 100.0, 50.0, 25.0, 12.5, 6.25] {
            let mut d = Dram::new(100, bw, 3.0, 1.0, None);
            let total: u64 = reqs.iter().map(|&(t, w)| d.access(0, t, 0, w)).sum();
            assert!(total >= last, "{bw} GB/s: {total} < {last}");
            assert!(d.queue_cycles < 1 << 40, "{bw} GB/s: {}", d.queue_cycles);
            last = total;
        }
    }

    fn timing() -> BankTiming {
        // 2 banks, 4 lines per row: line = row << 3 | column << 1 | bank.
        BankTiming { banks: 2, row_lines: 4, trp: 10, trcd: 20, tcas: 30, trefi: 0, trfc: 0 }
    }

    #[test]
    fn row_buffer_hits_misses_and_conflicts() {
        let mut d = Dram::new(5, 0.0, 1.0, 1.0, Some(timing()));
        assert_eq!(d.access(0, 0, 0, false), 5 + 20 + 30); // bank 0 precharged: tRCD + tCAS
        assert_eq!(d.access(0, 1000, 2, false), 5 + 30); // row 0 open: tCAS
        assert_eq!(d.access(0, 2000, 6, false), 5 + 30); // (column 3 of row 0)
                                                         // (Row 1's bank bit is flipped: its first line, 8, is in bank 1, and 9 in bank 0.)
        assert_eq!(d.access(0, 3000, 9, false), 5 + 10 + 20 + 30); // row 1: tRP + tRCD + tCAS
        assert_eq!(d.access(0, 4000, 1, false), 5 + 20 + 30); // bank 1 was never opened
        assert_eq!(d.row_stats(), Some([2, 2, 1, 0]));
        assert_eq!(d.access(0, 5000, 11, false), 5 + 30, "row 11 is still open");
        assert_eq!(Dram::new(5, 0.0, 1.0, 1.0, None).row_stats(), None);
    }

    #[test]
    fn a_busy_bank_delays_the_next_access_and_no_other_bank() {
        let mut d = Dram::new(0, 0.0, 1.0, 1.0, Some(timing()));
        assert_eq!(d.access(0, 0, 0, false), 50);
        assert_eq!(d.access(0, 0, 2, false), 50 + 30, "waits for bank 0, then hits its row");
        assert_eq!(d.access(0, 0, 1, false), 50, "bank 1 is free");
        assert_eq!(d.row_stats().unwrap()[3], 50);
        // A write-back takes the bank too, though nobody waits for it, and reads go first:
        // it moves behind a read that needs its time, and takes the time after that read.
        d.access(0, 200, 4, true); // [200, 230)
        assert_eq!(d.access(0, 200, 6, false), 30, "the write-back moves to [230, 260)");
        assert_eq!(d.access(0, 230, 2, false), 30, "and again, to [260, 290)");
        assert_eq!(d.access(0, 240, 0, false), 20 + 30, "a read waits for a read");
        d.access(0, 400, 4, true); // [400, 430)
        assert_eq!(d.access(0, 395, 0, false), 30, "a write-back that arrived first delays no read");
        assert_eq!(d.row_stats().unwrap()[3], 50 + 20, "the waits of reads");
        // An access timed earlier than one booked already fits in the gap before it.
        assert_eq!(d.access(0, 10_000, 0, false), 30);
        assert_eq!(d.access(0, 9_000, 2, false), 30);
        assert_eq!(d.access(0, 9_990, 4, false), 10 + 30 + 30, "no gap of 30 cycles before 10,030");
    }

    /// Every 1,000 cycles every bank refreshes for 100: an access arriving during a refresh
    /// starts when it ends, one that would run into the next refresh starts after it, and one
    /// between refreshes does not wait.
    #[test]
    fn refreshes_hold_every_bank() {
        let t = BankTiming { banks: 2, row_lines: 4, trp: 10, trcd: 20, tcas: 30, trefi: 1000, trfc: 100 };
        let mut d = Dram::new(0, 0.0, 1.0, 1.0, Some(t));
        assert_eq!(d.access(0, 0, 0, false), 50, "no refresh at cycle 0");
        assert_eq!(d.access(0, 1020, 1, false), 80 + 50, "bank 1 waits for the refresh to end at 1,100");
        assert_eq!(d.access(0, 1980, 2, false), 120 + 30, "a row hit of 30 cycles cannot end after 2,000: it starts at 2,100");
        assert_eq!(d.access(0, 2500, 0, false), 30, "between refreshes, no wait");
        assert_eq!(d.row_stats().unwrap()[3], 80 + 120);
        assert_eq!(t.clear_of_refresh(999, 1), 999);
        assert_eq!(t.clear_of_refresh(999, 2), 1100);
    }

    /// The same line of 32 rows in 32 banks: the row's bits permute the bank, so none waits.
    #[test]
    fn one_column_of_many_rows_spreads_over_the_banks() {
        let t = BankTiming { banks: 32, row_lines: 128, trp: 60, trcd: 60, tcas: 60, trefi: 0, trfc: 0 };
        let mut d = Dram::new(0, 0.0, 1.0, 1.0, Some(t));
        for row in 0..32u64 {
            assert_eq!(d.access(0, 0, row << 12 | 6, false), 120, "row {row}");
        }
        assert_eq!(d.row_stats(), Some([0, 32, 0, 0]));
        // Row 32 folds onto row 1's bank.
        assert_eq!(d.access(0, 0, 32 << 12 | 6, false), 120 + 180);
    }

    /// The banks against a reference model: every busy cycle of every bank in a map to the
    /// booking that holds it, and refreshes; a read starts at the first cycle from its arrival on with its
    /// whole occupancy free of reads, the write-backs there move to the first free stretch
    /// after it (earliest first), and a write-back takes the first free stretch from its
    /// arrival on.
    #[test]
    fn banks_book_the_first_gap_that_fits() {
        use std::collections::HashMap;
        let t = BankTiming { banks: 4, row_lines: 2, trp: 1, trcd: 2, tcas: 3, trefi: 97, trfc: 7 };
        let mut b = Banks::new(t);
        // (bank, cycle) -> booking; booking -> (start, occupancy, write).
        let mut cycles: HashMap<(usize, u64), usize> = HashMap::new();
        let mut bookings: Vec<(u64, u64, bool)> = Vec::new();
        let mut open = [u64::MAX; 4];
        let mut x = 11u64;
        let mut now = 0u64;
        // (Refreshes: every bank busy for 7 cycles from each multiple of 97 but 0.)
        let first_free = |cycles: &HashMap<(usize, u64), usize>, bookings: &[(u64, u64, bool)], bank, from, len, reads_only: bool| {
            let taken = |c| c >= 97 && c % 97 < 7 || cycles.get(&(bank, c)).is_some_and(|&i: &usize| !(reads_only && bookings[i].2));
            (from..).find(|&s| !(s..s + len).any(taken)).unwrap()
        };
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            now += 2 + x % 4; // (each bank about 40 % busy: queues stay short)
            let arrival = now.saturating_sub(x % 40);
            let line = (x >> 20) % 64;
            let write = x >> 40 & 3 == 0;
            let row = line >> 3;
            let bank = ((line ^ row ^ row >> 2) % 4) as usize;
            let occupy = if open[bank] == row {
                3
            } else if open[bank] == u64::MAX {
                5
            } else {
                6
            };
            open[bank] = row;
            let start = first_free(&cycles, &bookings, bank, arrival, occupy, !write);
            let mut moved: Vec<usize> = (start..start + occupy).filter_map(|c| cycles.remove(&(bank, c))).collect();
            moved.sort_by_key(|&i| bookings[i].0);
            moved.dedup();
            for &i in &moved {
                let (s, len, _) = bookings[i];
                (s..s + len).for_each(|c| _ = cycles.remove(&(bank, c)));
            }
            bookings.push((start, occupy, write));
            cycles.extend((start..start + occupy).map(|c| ((bank, c), bookings.len() - 1)));
            for i in moved {
                let s = first_free(&cycles, &bookings, bank, start + occupy, bookings[i].1, false);
                bookings[i].0 = s;
                cycles.extend((s..s + bookings[i].1).map(|c| ((bank, c), i)));
            }
            assert_eq!(b.access(now.saturating_sub(40), line, arrival, write), start + occupy - arrival);
        }
    }

    /// Two cores far apart in time, the one ahead simulated first each round (as bookings
    /// reach a bank out of time order): the one behind waits for nothing but its own bank
    /// time, however far ahead the other books, as long as the floor is the clock of the core
    /// behind.
    #[test]
    fn a_core_far_behind_is_not_pushed_forward() {
        let t = BankTiming { banks: 32, row_lines: 128, trp: 60, trcd: 60, tcas: 60, trefi: 0, trfc: 0 };
        let mut d = Dram::new(10, 0.0, 4.0, 1.0, Some(t));
        for i in 0..200u64 {
            let behind = i * 1_000;
            // (Row 0's lines 1 to 31 are banks 1 to 31; the core behind reads line 0, bank 0.)
            d.access(behind, behind + 100_000, 1 + i % 31, false);
            let open = if i == 0 { 60 } else { 0 };
            assert_eq!(d.access(behind, behind, 0, false), 10 + open + 60, "round {i}");
        }
        assert_eq!(d.row_stats().unwrap()[3], 0, "no bank waits");
    }

    /// With banks, waiting stays finite and grows as the channel narrows.
    #[test]
    fn banks_and_channel_stay_finite() {
        let mut x = 5u64;
        let reqs: Vec<(u64, u64, bool)> = (0..100_000u64)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // (A request every 20 cycles on average, at 4 GHz 12.8 GB/s: the banks about
                // a third busy, the narrowest channel below full.)
                (i * 20 + x % 400, x >> 30, x % 4 == 0)
            })
            .collect();
        let t = BankTiming { banks: 32, row_lines: 128, trp: 60, trcd: 60, tcas: 60, trefi: 0, trfc: 0 };
        let mut last = 0;
        for bw in [0.0, 200.0, 50.0, 25.6, 16.0] {
            let mut d = Dram::new(10, bw, 4.0, 1.0, Some(t));
            // (Reads only: a write-back's latency is reported without a channel, not with one.)
            let total: u64 = reqs.iter().map(|&(now, line, w)| d.access(0, now, line, w) * u64::from(!w)).sum();
            assert!(total >= last && total < 1 << 40, "{bw} GB/s: {total}");
            last = total;
        }
    }
}
