//! Statistics: counters with hierarchical dotted names (the glossary, docs/statistics.md, is
//! the contract with every study: extend it, never rename silently).

/// A statistic's value: counters stay integers in JSON, ratios are floats.
#[derive(Clone, Copy, Debug)]
pub enum StatValue {
    Int(u64),
    Float(f64),
}

/// Bit-for-bit equality: two runs agree when every statistic is the same bits, an undefined
/// ratio (NaN) included.
impl PartialEq for StatValue {
    fn eq(&self, other: &StatValue) -> bool {
        match (self, other) {
            (StatValue::Int(a), StatValue::Int(b)) => a == b,
            (StatValue::Float(a), StatValue::Float(b)) => a.to_bits() == b.to_bits(),
            _ => false,
        }
    }
}

impl StatValue {
    pub fn as_f64(self) -> f64 {
        match self {
            StatValue::Int(i) => i as f64,
            StatValue::Float(f) => f,
        }
    }
}

/// An ordered list of named statistics.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    pub entries: Vec<(String, StatValue)>,
    /// Statistics over time (a run with an interval): per interval, the change of every
    /// integer statistic (counts, cycles, bytes; a level that fell, such as free memory, has
    /// a negative change, as a float). Ratios are left to the reader, who has their
    /// numerators and denominators.
    pub series: Vec<Stats>,
}

impl Stats {
    pub fn int(&mut self, name: impl Into<String>, v: u64) {
        self.entries.push((name.into(), StatValue::Int(v)));
    }

    /// A float statistic; anything not finite is stored as NaN, "undefined" (`null` in JSON
    /// and Parquet), never as a number a reader could take for a measurement.
    pub fn float(&mut self, name: impl Into<String>, v: f64) {
        self.entries.push((name.into(), StatValue::Float(if v.is_finite() { v } else { f64::NAN })));
    }

    /// `num / den`, or NaN (undefined) when `den` is 0: a miss rate of a cache nobody
    /// accessed is no rate at all, and 0 would read as "never misses".
    pub fn ratio(&mut self, name: impl Into<String>, num: u64, den: u64) {
        self.float(name, if den == 0 { f64::NAN } else { num as f64 / den as f64 });
    }

    /// The statistic called `name` (or an old name of it, see [`crate::glossary::RENAMED`]).
    pub fn get(&self, name: &str) -> Option<StatValue> {
        let name = crate::glossary::canonical(name);
        self.entries.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    /// The change of every integer statistic since `earlier` (absent there: since 0).
    pub fn since(&self, earlier: &Stats) -> Stats {
        let entries = self
            .entries
            .iter()
            .filter_map(|(name, v)| match v {
                StatValue::Int(now) => {
                    let then = match earlier.get(name) {
                        Some(StatValue::Int(t)) => t,
                        _ => 0,
                    };
                    // (A level such as free memory may fall: its change is then negative.)
                    let change = if *now >= then { StatValue::Int(now - then) } else { StatValue::Float(-((then - now) as f64)) };
                    Some((name.clone(), change))
                }
                StatValue::Float(_) => None,
            })
            .collect();
        Stats { entries, series: Vec::new() }
    }

    /// Value as f64; panics if absent (for tests).
    pub fn f(&self, name: &str) -> f64 {
        self.get(name).unwrap_or_else(|| panic!("no statistic named {name}")).as_f64()
    }
}

/// Buckets of the walk-latency histogram: `walk_cycles.hist.lt<N>` counts walks shorter
/// than N cycles (and at least the previous bound); the last bucket is open-ended.
pub const WALK_HIST_BOUNDS: [u64; 9] = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096];

/// Declares a struct of u64 counters with their statistic names (after the prefix
/// `emit` is given).
macro_rules! counters {
    ($(#[$m:meta])* pub struct $name:ident { $( $(#[$fm:meta])* $field:ident : $stat:literal, )* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name { $( $(#[$fm])* pub $field: u64, )* }
        impl $name {
            pub fn add(&mut self, o: &$name) { $( self.$field += o.$field; )* }
            pub fn emit(&self, prefix: &str, out: &mut $crate::stats::Stats) { $( out.int(format!("{prefix}{}", $stat), self.$field); )* }
        }
    };
}
pub(crate) use counters;

counters! {
    /// Per-core event counts.
    pub struct CoreCounters {
        refs: "refs",
        loads: "loads",
        stores: "stores",
        fetches: "fetches",
        prefetches: "prefetches",
        prefetches_dropped: "prefetches.dropped",
        dirty_walks: "tlb.dirty_walks",
        walks: "walks",
        walk_retries: "walks.retries",
        walk_steps: "walk_steps",
        miss_walk_steps: "walk_steps.miss",
        walk_cycles: "walk_cycles",
        walker_wait_cycles: "walker_wait_cycles",
        translation_cycles: "translation_cycles",
        walk_merges: "inflight.walk_merges",
        walk_merge_cycles: "inflight.walk_merge_cycles",
        fill_merges: "inflight.fill_merges",
        fill_merge_cycles: "inflight.fill_merge_cycles",
        early_walks: "inflight.early_walks",
        early_walk_cycles: "inflight.early_walk_cycles",
        early_fills: "inflight.early_fills",
        early_fill_cycles: "inflight.early_fill_cycles",
        pwc_l5_hits: "pwc.l5.hits",
        pwc_l5_misses: "pwc.l5.misses",
        pwc_l4_hits: "pwc.l4.hits",
        pwc_l4_misses: "pwc.l4.misses",
        pwc_l3_hits: "pwc.l3.hits",
        pwc_l3_misses: "pwc.l3.misses",
        pwc_l2_hits: "pwc.l2.hits",
        pwc_l2_misses: "pwc.l2.misses",
        pte_l1: "pte_served.l1",
        pte_l2: "pte_served.l2",
        pte_llc: "pte_served.llc",
        pte_dram: "pte_served.dram",
        data_l1: "data_served.l1",
        data_l2: "data_served.l2",
        data_llc: "data_served.llc",
        data_dram: "data_served.dram",
        faults: "faults",
        fault_cycles: "fault_cycles",
        ptp_epochs: "ptp.epochs",
        ptp_active_epochs: "ptp.active_epochs",
        hist_0: "walk_cycles.hist.lt16",
        hist_1: "walk_cycles.hist.lt32",
        hist_2: "walk_cycles.hist.lt64",
        hist_3: "walk_cycles.hist.lt128",
        hist_4: "walk_cycles.hist.lt256",
        hist_5: "walk_cycles.hist.lt512",
        hist_6: "walk_cycles.hist.lt1024",
        hist_7: "walk_cycles.hist.lt2048",
        hist_8: "walk_cycles.hist.lt4096",
        hist_9: "walk_cycles.hist.ge4096",
    }
}

counters! {
    /// Per-core events of ECH walks (statistics `ech.*`, with `ech.enabled`).
    pub struct EchCounters {
        pmd_cwc_hits: "pmd_cwc.hits",
        pmd_cwc_misses: "pmd_cwc.misses",
        pud_cwc_hits: "pud_cwc.hits",
        pud_cwc_misses: "pud_cwc.misses",
        cwt_reads: "cwt_reads",
        table_reads: "table_reads",
        stale_cwc: "stale_cwc",
    }
}

counters! {
    /// Per-core events of 2D (nested) walks and VMs; emitted only with virt.enabled.
    pub struct VirtCounters {
        guest_steps: "walk_steps.guest",
        host_steps: "walk_steps.host",
        miss_guest_steps: "walk_steps.miss.guest",
        miss_host_steps: "walk_steps.miss.host",
        pte_guest_l1: "pte_served.guest.l1",
        pte_guest_l2: "pte_served.guest.l2",
        pte_guest_llc: "pte_served.guest.llc",
        pte_guest_dram: "pte_served.guest.dram",
        pte_host_l1: "pte_served.host.l1",
        pte_host_l2: "pte_served.host.l2",
        pte_host_llc: "pte_served.host.llc",
        pte_host_dram: "pte_served.host.dram",
        nested_tlb_hits: "tlb.nested.hits",
        nested_tlb_misses: "tlb.nested.misses",
        host_walks: "host_walks",
        vpwc_l5_hits: "virt.host_pwc.l5.hits",
        vpwc_l5_misses: "virt.host_pwc.l5.misses",
        vpwc_l4_hits: "virt.host_pwc.l4.hits",
        vpwc_l4_misses: "virt.host_pwc.l4.misses",
        vpwc_l3_hits: "virt.host_pwc.l3.hits",
        vpwc_l3_misses: "virt.host_pwc.l3.misses",
        vpwc_l2_hits: "virt.host_pwc.l2.hits",
        vpwc_l2_misses: "virt.host_pwc.l2.misses",
        ept_violations: "ept_violations",
        ept_fault_cycles: "ept_fault_cycles",
        vm_switches: "vm_switches",
        vcpu_switches: "vcpu_switches",
    }
}

impl CoreCounters {
    #[inline]
    /// Walks whose cycles were recorded (the histogram's total).
    pub fn timed_walks(&self) -> u64 {
        [self.hist_0, self.hist_1, self.hist_2, self.hist_3, self.hist_4, self.hist_5, self.hist_6, self.hist_7, self.hist_8, self.hist_9].iter().sum()
    }

    pub fn record_walk_cycles(&mut self, c: u64) {
        self.walk_cycles += c;
        // (A match: indexing an array of ten field references builds the array per call.)
        match WALK_HIST_BOUNDS.iter().position(|&lim| c < lim).unwrap_or(WALK_HIST_BOUNDS.len()) {
            0 => self.hist_0 += 1,
            1 => self.hist_1 += 1,
            2 => self.hist_2 += 1,
            3 => self.hist_3 += 1,
            4 => self.hist_4 += 1,
            5 => self.hist_5 += 1,
            6 => self.hist_6 += 1,
            7 => self.hist_7 += 1,
            8 => self.hist_8 += 1,
            _ => self.hist_9 += 1,
        }
    }
}

/// Ratios of 2D walks (under `prefix`).
pub(crate) fn derived_virt(s: &mut Stats, p: &str, k: &CoreCounters, v: &VirtCounters) {
    s.ratio(format!("{p}walk_steps_per_walk.guest"), v.miss_guest_steps, k.walks);
    s.ratio(format!("{p}walk_steps_per_walk.host"), v.miss_host_steps, k.walks);
    s.int(format!("{p}tlb.nested.accesses"), v.nested_tlb_hits + v.nested_tlb_misses);
    s.ratio(format!("{p}tlb.nested.hit_rate"), v.nested_tlb_hits, v.nested_tlb_hits + v.nested_tlb_misses);
    s.ratio(format!("{p}walk_steps_per_host_walk"), v.host_steps, v.host_walks);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_by_bound() {
        let mut c = CoreCounters::default();
        for cyc in [0, 15, 16, 100, 5000] {
            c.record_walk_cycles(cyc);
        }
        assert_eq!((c.hist_0, c.hist_1, c.hist_3, c.hist_9), (2, 1, 1, 1));
        assert_eq!(c.walk_cycles, 5131);
        let mut s = Stats::default();
        c.emit("core0.", &mut s);
        assert_eq!(s.f("core0.walk_cycles.hist.lt16"), 2.0);
    }
}
