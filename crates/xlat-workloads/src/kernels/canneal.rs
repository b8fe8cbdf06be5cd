//! PARSEC canneal: simulated annealing of a netlist's placement. Each step picks two random
//! elements, computes the change in routing cost (Manhattan distance to every fan-in and
//! fan-out neighbour) if their locations were swapped, and swaps when the cost falls or with
//! probability exp(-delta/T). The netlist is synthetic (random fan-outs, as PARSEC's
//! generated inputs), elements are PARSEC-sized records (96 B: name string, fan-in and
//! fan-out vectors, location pointer), fan lists are arrays of 8-byte element pointers and
//! locations are 8-byte {x, y} records.

use crate::params::{float, size, PDef, Params};
use crate::recorder::{interleave, static_split, Recorder};
use crate::rng::{derive, Rng};
use crate::vas::{Arr, Vas};
use crate::WorkloadError;

use super::KernelImpl;

pub const DESC: &str = "PARSEC canneal: simulated-annealing element swaps over a netlist";
pub const PARAMS: &[PDef] = &[
    size("elements", "2500000", "netlist elements (PARSEC native input: 2.5 M)"),
    size("fanout", "4", "average fan-out per element (uniform in 1..=2*fanout-1)"),
    size("swaps", "15000", "swaps per temperature step (PARSEC native: 15000), split over threads"),
    size("steps", "40", "temperature steps"),
    float("temp", "2000", "start temperature (divided by 1.5 each step, as PARSEC)"),
];

const ELEM: u64 = 96;

/// Instructions per reference, from PARSEC 3.0's canneal (pthreads build) compiled by gcc 12 -O3
/// -march=x86-64-v2: netlist_elem::swap_cost's loops in `objdump -d`, the rest of a move measured
/// with valgrind callgrind (a synthetic netlist of this kernel's shape: 893 instructions a move,
/// these counts 899).
mod cost {
    /// A move's own: annealer_thread::Run's loop (49) and get_random_element with its
    /// Mersenne-Twister draw (111).
    pub const MOVE: u32 = 160;
    /// swap_cost's entry: mov, mov, `fanin.begin` (3 after the tail), `fanin.end` (1); then je,
    /// pxor, movq, xor, movapd, nop and, between fan-in and fan-out, mov, cmp, je, movq, xor, nop
    /// (12, the fan-out's bounds being this kernel's second read); subsd, ret at the end.
    pub const VECTORS: [u32; 2] = [3, 1];
    pub const ENTRY: u32 = 12;
    pub const EXIT: u32 = 2;
    /// A fan-in or fan-out entry, 39: the element pointer (1 after the tail); add, nop, `lock
    /// cmpxchg` (AtomicPtr::Get of `present_loc`: 3); cmp, je, `loc->x` (3); then `loc->y`, the
    /// four distances in doubles and the loop's bounds reloaded (32).
    pub const FAN: [u32; 3] = [1, 3, 3];
    pub const FAN_TAIL: u32 = 32;
    /// accept_move past a non-negative delta: exp (51) and the draw (39).
    pub const METROPOLIS: u32 = 90;
    /// swap_locations: two AtomicPtr swaps (28).
    pub const SWAP: [u32; 2] = [27, 1];
}

pub struct Canneal {
    vas: Vas,
    elems_a: Arr,
    fans_a: Arr,
    locs_a: Arr,
    n: u64,
    fanout: u64,
    swaps: u64,
    steps: u64,
    temp: f64,
    threads: usize,
    seed: u64,
    /// Neighbours (fan-in then fan-out) of element i: `adj[off[i]..off[i+1]]`.
    pub off: Vec<u64>,
    pub adj: Vec<u32>,
    /// Location index of each element; the location grid is `width` wide.
    pub loc: Vec<u32>,
    pub width: u32,
    pub initial_cost: i64,
    pub delta_sum: i64,
    pub accepted: u64,
}

impl KernelImpl for Canneal {
    fn new(p: &Params, _native: bool) -> Result<Self, WorkloadError> {
        let n = p.range("elements", 2, u32::MAX as u64 / 2)?;
        let fanout = p.range("fanout", 1, 1000)?;
        let temp = p.f64("temp");
        if temp <= 0.0 {
            return Err(p.bad("temp", "must be positive"));
        }
        let mut vas = Vas::new();
        let elems_a = vas.array("elements", n, ELEM);
        // Every fan-out edge appears in two lists (fan-out of one, fan-in of the other).
        let fans_a = vas.array("fan_lists", 2 * n * (2 * fanout - 1), 8);
        let width = (n as f64).sqrt().ceil() as u64;
        let locs_a = vas.array("locations", width * width, 8);
        Ok(Canneal {
            vas,
            elems_a,
            fans_a,
            locs_a,
            n,
            fanout,
            swaps: p.u64("swaps"),
            steps: p.u64("steps"),
            temp,
            threads: p.threads(),
            seed: p.seed(),
            off: Vec::new(),
            adj: Vec::new(),
            loc: Vec::new(),
            width: width as u32,
            initial_cost: 0,
            delta_sum: 0,
            accepted: 0,
        })
    }
    fn vas(&self) -> &Vas {
        &self.vas
    }
    fn host_bytes(&self) -> u64 {
        // Offsets, neighbour lists (fan-in and fan-out, 2 x fanout on average) and locations.
        self.n * (8 + 8 * self.fanout + 4)
    }
    fn threads(&self) -> usize {
        self.threads
    }

    fn run<R: Recorder>(&mut self, rec: &mut R) -> u64 {
        let n = self.n as usize;
        let mut rng = Rng::new(derive(self.seed, 0xCA));
        let mut edges: Vec<(u32, u32)> = Vec::new();
        for i in 0..n {
            let k = 1 + rng.below(2 * self.fanout - 1);
            for _ in 0..k {
                let mut j = rng.below(n as u64) as usize;
                if j == i {
                    j = (j + 1) % n;
                }
                edges.push((i as u32, j as u32));
            }
        }
        let mut deg = vec![0u64; n + 1];
        for &(a, b) in &edges {
            deg[a as usize] += 1;
            deg[b as usize] += 1;
        }
        let mut off = vec![0u64; n + 1];
        for i in 0..n {
            off[i + 1] = off[i] + deg[i];
        }
        let mut fill: Vec<u64> = off[..n].to_vec();
        let mut adj = vec![0u32; off[n] as usize];
        for &(a, b) in &edges {
            adj[fill[a as usize] as usize] = b;
            fill[a as usize] += 1;
            adj[fill[b as usize] as usize] = a;
            fill[b as usize] += 1;
        }
        drop(edges);
        let mut locs: Vec<u32> = (0..(self.width * self.width)).collect();
        rng.shuffle(&mut locs);
        locs.truncate(n);
        self.off = off;
        self.adj = adj;
        self.loc = locs;
        self.initial_cost = self.total_cost();
        rec.roi_begin();

        let me = &mut *self;
        let (ea, fa, la, w) = (me.elems_a, me.fans_a, me.locs_a, me.width);
        let (off, adj, loc) = (&me.off, &me.adj, &mut me.loc);
        let mut rngs: Vec<Rng> = (0..me.threads).map(|t| Rng::new(derive(me.seed, 0xCB + t as u64))).collect();
        let split = static_split(me.swaps, me.threads);
        let mut t_now = me.temp;
        let (mut accepted, mut delta_sum) = (0u64, 0i64);
        let dist = |a: u32, b: u32| -> i64 {
            let (ax, ay, bx, by) = ((a % w) as i64, (a / w) as i64, (b % w) as i64, (b / w) as i64);
            (ax - bx).abs() + (ay - by).abs()
        };
        let mut tails = vec![0u32; me.threads];
        for _ in 0..me.steps {
            interleave(rec, &split, 32, |rec, t, lo, hi| {
                let rng = &mut rngs[t];
                let tail = &mut tails[t];
                for _ in lo..hi {
                    *tail += cost::MOVE;
                    let a = rng.below(n as u64) as usize;
                    let mut b = rng.below(n as u64 - 1) as usize;
                    if b >= a {
                        b += 1;
                    }
                    let (la_, lb_) = (loc[a], loc[b]);
                    // swap_cost for a moving to b's place and b to a's (the a-b edge, if
                    // any, keeps its length and is skipped so the cost stays exact).
                    let mut delta = 0i64;
                    for (x, from, to, other) in [(a, la_, lb_, b), (b, lb_, la_, a)] {
                        // Every fan-in/out entry's address comes from the vector's begin.
                        let begin = rec.here();
                        let v = cost::VECTORS;
                        rec.load(ea.at(x as u64) + 32, 16, std::mem::take(tail) + v[0]); // fan-in vector begin/end
                        rec.load(ea.at(x as u64) + 56, 16, v[1]); // fan-out vector begin/end
                        *tail = cost::ENTRY;
                        for e in off[x]..off[x + 1] {
                            let f = adj[e as usize] as usize;
                            let d = cost::FAN;
                            rec.load_from(fa.at(e), 8, std::mem::take(tail) + d[0], begin);
                            rec.load_dep(ea.at(f as u64) + 88, 8, d[1]); // f->present_loc
                            rec.load_dep(la.at(loc[f] as u64), 8, d[2]);
                            *tail = cost::FAN_TAIL;
                            if f == other {
                                continue;
                            }
                            delta += dist(loc[f], to) - dist(loc[f], from);
                        }
                        *tail += cost::EXIT;
                    }
                    let accept = delta < 0 || {
                        *tail += cost::METROPOLIS;
                        let r = rng.f64();
                        (-(delta as f64) / t_now).exp() > r
                    };
                    if accept {
                        rec.store(ea.at(a as u64) + 88, 8, std::mem::take(tail) + cost::SWAP[0]);
                        rec.store(ea.at(b as u64) + 88, 8, cost::SWAP[1]);
                        loc.swap(a, b);
                        accepted += 1;
                        delta_sum += delta;
                    }
                }
            });
            t_now /= 1.5;
            if rec.stopped() {
                break;
            }
        }
        me.accepted = accepted;
        me.delta_sum = delta_sum;
        me.total_cost() as u64
    }
}

impl Canneal {
    /// Sum over every element's neighbour lists of the Manhattan distance (each wire counted
    /// from both ends).
    pub fn total_cost(&self) -> i64 {
        let w = self.width;
        let mut c = 0i64;
        for i in 0..self.loc.len() {
            let a = self.loc[i];
            for e in self.off[i]..self.off[i + 1] {
                let b = self.loc[self.adj[e as usize] as usize];
                c += ((a % w) as i64 - (b % w) as i64).abs() + ((a / w) as i64 - (b / w) as i64).abs();
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::*;

    /// PARSEC canneal's compiled swap_cost and move (see [`cost`]): a move 160 instructions, each
    /// of its two elements' swap_cost 18 and 39 a fan-in or fan-out entry, 28 a swap's
    /// locations, and 90 (exp and a draw) where the delta is not negative. The last move's
    /// closing instructions (0, 2 or 92) come after the last reference.
    #[test]
    fn instructions_are_parsec_cannneals_compiled_loop() {
        use xlat_core::RefKind::{Load, Store};
        let (k, s, _) = run_recorded::<Canneal>("canneal", PARAMS, "elements=5000,swaps=2000,steps=5");
        let moves = 2000 * 5;
        let fans = refs_in(&k.vas, &s, Load, "fan_lists");
        let swaps = refs_in(&k.vas, &s, Store, "elements") / 2;
        assert_eq!(swaps, k.accepted);
        let base = 160 * moves + 2 * 18 * moves + 39 * fans + 28 * swaps;
        let total = instructions(&s);
        // The Metropolis draws (a multiple of 90, at most one a move), less what the last move
        // left after its last reference.
        let ok = [0, 2, 92].iter().any(|&last| (total + last - base) % 90 == 0 && (total + last - base) / 90 <= moves);
        assert!(ok, "{total} against {base}");
    }

    #[test]
    fn incremental_costs_are_exact_and_annealing_helps() {
        let (k, s, _) = run_recorded::<Canneal>("canneal", PARAMS, "elements=5000,swaps=2000,steps=20,threads=2");
        // Locations stay a permutation.
        let mut l = k.loc.clone();
        l.sort_unstable();
        l.dedup();
        assert_eq!(l.len(), 5000);
        // Each accepted delta was exact: total = initial + 2 * sum (wires counted twice).
        assert_eq!(k.total_cost(), k.initial_cost + 2 * k.delta_sum);
        assert!(k.accepted > 1000);
        assert!(k.total_cost() < k.initial_cost * 95 / 100, "{} vs {}", k.total_cost(), k.initial_cost);
        assert_in_regions(&k.vas, &s);
        // A fan list's entries come from its vector's begin (in the element), a neighbour's
        // location from its entry, the location's coordinates from that.
        use xlat_core::RefKind::Load;
        assert_eq!(sources(&k.vas, &s, Load, "fan_lists"), ["elements"]);
        assert_eq!(sources(&k.vas, &s, Load, "elements"), ["", "fan_lists"]);
        assert_eq!(sources(&k.vas, &s, Load, "locations"), ["elements"]);
    }
}
