//! DRAM beyond the last-level cache.

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
    pub energy_nj: f64,
    pub reads: u64,
    pub writes: u64,
    pub queue_cycles: u64,
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

    fn is_taken(&self, slot: u64) -> bool {
        let i = slot % Self::SLOTS;
        self.taken[(i / 64) as usize] >> (i % 64) & 1 != 0
    }

    /// Move the window so that it starts at `base`, freeing the slots that leave it.
    fn advance(&mut self, base: u64) {
        if base - self.base >= Self::SLOTS {
            self.taken.fill(0);
        } else {
            for slot in self.base..base {
                let i = slot % Self::SLOTS;
                self.taken[(i / 64) as usize] &= !(1 << (i % 64));
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
            if !self.is_taken(s) {
                let i = s % Self::SLOTS;
                self.taken[(i / 64) as usize] |= 1 << (i % 64);
                return s;
            }
            s += 1;
        }
    }
}

impl Dram {
    pub fn new(latency: u64, bandwidth_gbps: f64, freq_ghz: f64, energy_nj: f64) -> Dram {
        let service_x256 = if bandwidth_gbps > 0.0 { (crate::LINE_BYTES as f64 / bandwidth_gbps * freq_ghz * 256.0).round().max(1.0) as u64 } else { 0 };
        Dram { latency, service_x256, calendar: Calendar::new(), energy_nj, reads: 0, writes: 0, queue_cycles: 0 }
    }

    /// Zero its statistics, keeping its bookings (the end of warm-up).
    pub fn reset_stats(&mut self) {
        (self.reads, self.writes, self.queue_cycles) = (0, 0, 0);
    }

    /// Latency of an access issued at cycle `now`.
    #[inline]
    pub fn access(&mut self, now: u64, write: bool) -> u64 {
        if write {
            self.writes += 1;
        } else {
            self.reads += 1;
        }
        if self.service_x256 == 0 {
            return self.latency;
        }
        let arrival = now.saturating_mul(256) / self.service_x256;
        let slot = self.calendar.book(arrival);
        // (Whole cycles: a wait shorter than one rounds to 0.)
        let wait = ((slot - arrival) * self.service_x256) >> 8;
        self.queue_cycles += wait;
        // Write-backs occupy the channel but nobody waits for them.
        if write {
            0
        } else {
            self.latency + wait
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dram_queue_adds_waiting_time() {
        // 64 B at 32 GB/s and 2 GHz = 4 cycles per line.
        let mut d = Dram::new(100, 32.0, 2.0, 1.0);
        assert_eq!(d.access(0, false), 100);
        assert_eq!(d.access(0, false), 104);
        assert_eq!(d.access(0, false), 108);
        assert_eq!(d.access(1000, false), 100);
        assert_eq!(d.queue_cycles, 12);
        // A request booked far ahead does not hold up one that arrives earlier.
        assert_eq!(d.access(5000, true), 0);
        assert_eq!(d.access(2000, false), 100);
        // Slots taken from an arrival on push it back; earlier free slots do not help it.
        assert_eq!(d.access(5000, false), 104);
        // Old arrivals (beyond the window) are served from its start; the window follows.
        let far = 100 * Calendar::SLOTS * 4;
        assert_eq!(d.access(far, false), 100);
        assert!(d.access(0, false) >= 100);
        let mut free = Dram::new(100, 0.0, 2.0, 1.0);
        assert_eq!(free.access(0, false) + free.access(0, false), 200);
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

    /// Less bandwidth never means less waiting, and waiting stays finite.
    #[test]
    fn queueing_is_monotone_in_bandwidth_and_finite() {
        let mut x = 3u64;
        let reqs: Vec<(u64, bool)> = (0..100_000u64)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (i * 3 + x % 400, x % 4 == 0)
            })
            .collect();
        let mut last = 0;
        for bw in [200.0, 100.0, 50.0, 25.0, 12.5, 6.25] {
            let mut d = Dram::new(100, bw, 3.0, 1.0);
            let total: u64 = reqs.iter().map(|&(t, w)| d.access(t, w)).sum();
            assert!(total >= last, "{bw} GB/s: {total} < {last}");
            assert!(d.queue_cycles < 1 << 40, "{bw} GB/s: {}", d.queue_cycles);
            last = total;
        }
    }
}
