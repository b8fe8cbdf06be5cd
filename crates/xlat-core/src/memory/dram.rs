//! DRAM beyond the last-level cache.

/// DRAM: a fixed latency plus, optionally, a single queue that serves one 64-byte line
/// per `service` cycles (a bandwidth model: requests that arrive while it is busy wait).
pub struct Dram {
    latency: u64,
    /// Service time per line in 1/256 cycles (0: unlimited bandwidth).
    service_x256: u64,
    busy_until_x256: u64,
    pub energy_nj: f64,
    pub reads: u64,
    pub writes: u64,
    pub queue_cycles: u64,
}

impl Dram {
    pub fn new(latency: u64, bandwidth_gbps: f64, freq_ghz: f64, energy_nj: f64) -> Dram {
        let service_x256 = if bandwidth_gbps > 0.0 { (crate::LINE_BYTES as f64 / bandwidth_gbps * freq_ghz * 256.0).round() as u64 } else { 0 };
        Dram { latency, service_x256, busy_until_x256: 0, energy_nj, reads: 0, writes: 0, queue_cycles: 0 }
    }

    /// Zero its statistics, keeping its queue (the end of warm-up).
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
        let now_x256 = now << 8;
        let start = self.busy_until_x256.max(now_x256);
        self.busy_until_x256 = start + self.service_x256;
        let wait = (start - now_x256) >> 8;
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
        let mut free = Dram::new(100, 0.0, 2.0, 1.0);
        assert_eq!(free.access(0, false) + free.access(0, false), 200);
    }
}
