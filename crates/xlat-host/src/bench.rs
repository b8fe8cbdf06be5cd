//! Native kernels for the PT-Baker benchmark: GUPS, BFS and a hash join, each with one big
//! region that takes most of its TLB misses, timed with and without a baker, rounds alternated
//! (A/B/A/B, every other round in reverse order) so slow drift on a shared machine hits every
//! configuration alike.

use std::time::Instant;

use crate::bake::{self, Params, Placement, Region};
use crate::mem::{Mapping, Pages};
use crate::rng::Rng;
use crate::{sys, HostError, Result};

/// Problem sizes: `quick` for tests (milliseconds), else the benchmark's (about a second per run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    Quick,
    Full,
}

/// A kernel set up once, run many times.
trait Kernel {
    /// The region the baker keeps warm.
    fn region(&self) -> Region;
    /// The timed part; returns a checksum so the work cannot be optimised away.
    fn run(&mut self) -> u64;
}

fn u64s(map: &mut Mapping) -> &mut [u64] {
    let b = map.bytes();
    // SAFETY: the mapping is page aligned (so 8-byte aligned), its length a multiple of 4096,
    // and the byte slice is borrowed mutably for the returned slice's lifetime.
    unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr() as *mut u64, b.len() / 8) }
}

fn u32s(map: &mut Mapping) -> &mut [u32] {
    let b = map.bytes();
    // SAFETY: as for u64s, with 4-byte elements.
    unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr() as *mut u32, b.len() / 4) }
}

fn region(m: &Mapping) -> Region {
    Region { addr: m.as_ptr() as usize, len: m.len() }
}

/// HPCC RandomAccess: `table[r & mask] ^= r` for a random stream r.
struct Gups {
    table: Mapping,
    updates: u64,
    seed: u64,
}

impl Gups {
    fn new(size: Size) -> Result<Gups> {
        let (log, updates) = if size == Size::Quick { (20, 1 << 16) } else { (26, 1 << 22) };
        let mut table = Mapping::new(8 << log, Pages::Base)?;
        for (i, v) in u64s(&mut table).iter_mut().enumerate() {
            *v = i as u64;
        }
        Ok(Gups { table, updates, seed: 1 })
    }
}

impl Kernel for Gups {
    fn region(&self) -> Region {
        region(&self.table)
    }
    fn run(&mut self) -> u64 {
        self.seed += 1;
        let mut rng = Rng::new(self.seed);
        let t = u64s(&mut self.table);
        let mask = t.len() as u64 - 1;
        for _ in 0..self.updates {
            let r = rng.next_u64();
            t[(r & mask) as usize] ^= r;
        }
        t[0]
    }
}

/// Top-down BFS over a random graph (8 out-edges per vertex, CSR), from a new root each run.
struct Bfs {
    offsets: Vec<u32>,
    adj: Mapping,
    parent: Vec<u32>,
    queue: Vec<u32>,
    root: u32,
}

impl Bfs {
    fn new(size: Size) -> Result<Bfs> {
        let n: usize = if size == Size::Quick { 1 << 12 } else { 1 << 22 };
        let deg = 8;
        let mut adj = Mapping::new(n * deg * 4, Pages::Base)?;
        let mut rng = Rng::new(7);
        for v in u32s(&mut adj).iter_mut() {
            *v = rng.below(n) as u32;
        }
        let offsets = (0..=n).map(|v| (v * deg) as u32).collect();
        Ok(Bfs { offsets, adj, parent: vec![u32::MAX; n], queue: Vec::with_capacity(n), root: 0 })
    }
}

impl Kernel for Bfs {
    fn region(&self) -> Region {
        region(&self.adj)
    }
    fn run(&mut self) -> u64 {
        let n = self.parent.len();
        self.root = (self.root + 1) % n as u32;
        self.parent.fill(u32::MAX);
        self.queue.clear();
        self.parent[self.root as usize] = self.root;
        self.queue.push(self.root);
        let adj = u32s(&mut self.adj);
        let mut head = 0;
        while head < self.queue.len() {
            let v = self.queue[head] as usize;
            head += 1;
            for &w in &adj[self.offsets[v] as usize..self.offsets[v + 1] as usize] {
                if self.parent[w as usize] == u32::MAX {
                    self.parent[w as usize] = v as u32;
                    self.queue.push(w);
                }
            }
        }
        self.queue.len() as u64
    }
}

/// Hash join: a linear-probing table of (key, value) built from R, probed with keys of S.
struct HashJoin {
    table: Mapping,
    probes: u64,
    seed: u64,
    keys: u64,
}

const EMPTY: u64 = 0;

fn slot(key: u64, mask: u64) -> u64 {
    key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 17 & mask
}

impl HashJoin {
    fn new(size: Size) -> Result<HashJoin> {
        let (log, probes) = if size == Size::Quick { (14, 1 << 14) } else { (24, 1 << 22) };
        let slots = 1u64 << log;
        let keys = slots / 2;
        let mut table = Mapping::new((slots * 16) as usize, Pages::Base)?;
        let t = u64s(&mut table);
        for k in 1..=keys {
            let mut s = slot(k, slots - 1);
            while t[2 * s as usize] != EMPTY {
                s = (s + 1) & (slots - 1);
            }
            t[2 * s as usize] = k;
            t[2 * s as usize + 1] = k * 3;
        }
        Ok(HashJoin { table, probes, seed: 1, keys })
    }
}

impl Kernel for HashJoin {
    fn region(&self) -> Region {
        region(&self.table)
    }
    fn run(&mut self) -> u64 {
        self.seed += 1;
        let mut rng = Rng::new(self.seed);
        let t = u64s(&mut self.table);
        let mask = (t.len() / 2) as u64 - 1;
        let mut sum = 0u64;
        for _ in 0..self.probes {
            // Half the probe keys match a build key.
            let k = 1 + rng.below(2 * self.keys as usize) as u64;
            let mut s = slot(k, mask);
            loop {
                let key = t[2 * s as usize];
                if key == k {
                    sum = sum.wrapping_add(t[2 * s as usize + 1]);
                    break;
                }
                if key == EMPTY {
                    break;
                }
                s = (s + 1) & mask;
            }
        }
        sum
    }
}

pub const KERNELS: &[&str] = &["gups", "bfs", "hashjoin"];

/// Runs `kernel` `rounds` times under each configuration (None: no baker) and returns the
/// seconds of each run, `times[config][round]`. The main thread is pinned to its CPU for the
/// duration so that "same LLC" places the helper on another core.
pub fn run(kernel: &str, size: Size, configs: &[Option<Params>], rounds: u32) -> Result<Vec<Vec<f64>>> {
    let mut k: Box<dyn Kernel> = match kernel {
        "gups" => Box::new(Gups::new(size)?),
        "bfs" => Box::new(Bfs::new(size)?),
        "hashjoin" => Box::new(HashJoin::new(size)?),
        _ => return Err(HostError::Invalid(format!("unknown kernel '{kernel}' (known: {})", KERNELS.join(", ")))),
    };
    // Place the helpers before pinning this thread (afterwards only its CPU is allowed).
    let configs: Vec<Option<Params>> = configs
        .iter()
        .map(|c| c.map(|p| bake::helper_cpu(p.placement).map(|cpu| Params { placement: cpu.map_or(Placement::Unpinned, Placement::Cpu), ..p })).transpose())
        .collect::<Result<_>>()?;
    let allowed = sys::allowed_cpus();
    sys::pin_to(sys::current_cpu())?;
    let result = (|| {
        let mut times = vec![Vec::with_capacity(rounds as usize); configs.len()];
        // One untimed run: page tables built, caches in their steady state.
        std::hint::black_box(k.run());
        for round in 0..rounds {
            let order: Vec<usize> = if round % 2 == 0 { (0..configs.len()).collect() } else { (0..configs.len()).rev().collect() };
            for c in order {
                let baker = match configs[c] {
                    // SAFETY: the region is the kernel's own mapping, which outlives the
                    // baker: it is stopped right after the timed run, below.
                    Some(p) => Some(unsafe { bake::start(&[k.region()], p) }?),
                    None => None,
                };
                let t = Instant::now();
                std::hint::black_box(k.run());
                times[c].push(t.elapsed().as_secs_f64());
                if let Some(b) = baker {
                    b.stop();
                }
            }
        }
        Ok(times)
    })();
    sys::set_affinity(&allowed)?;
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bake::Mode;

    #[test]
    fn every_kernel_runs_under_every_mode() {
        let configs: Vec<Option<Params>> = std::iter::once(None)
            .chain([Mode::Load, Mode::Prefetch, Mode::Mincore].map(|mode| Some(Params { mode, placement: Placement::Unpinned, ..Params::default() })))
            .collect();
        for k in KERNELS {
            let t = run(k, Size::Quick, &configs, 2).unwrap();
            assert_eq!(t.len(), 4);
            assert!(t.iter().all(|r| r.len() == 2 && r.iter().all(|&s| s > 0.0)), "{k}: {t:?}");
        }
        assert!(run("sort", Size::Quick, &configs, 1).is_err());
    }

    #[test]
    fn kernels_compute_what_they_should() {
        let mut b = Bfs::new(Size::Quick).unwrap();
        // A random 8-out-regular graph on 4096 vertices: nearly every vertex is reachable.
        assert!(b.run() > 4000);
        let mut h = HashJoin::new(Size::Quick).unwrap();
        let keys = h.keys;
        assert_eq!(keys, 1 << 13);
        // Half the probes hit, each adding 3 × key: the sum is far from zero.
        assert!(h.run() > 0);
        let mut g = Gups::new(Size::Quick).unwrap();
        let before: u64 = u64s(&mut g.table).iter().fold(0, |a, &v| a ^ v);
        g.run();
        let after: u64 = u64s(&mut g.table).iter().fold(0, |a, &v| a ^ v);
        assert_ne!(before, after);
    }
}
