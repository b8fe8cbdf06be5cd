//! GAP benchmark suite style kernels (PageRank, SSSP, BC, CC) on Kronecker or uniform
//! graphs. Layout follows GAP: 8-byte CSR offsets (`offsets`), 4-byte neighbour ids
//! (`neighbors`; 8-byte `{id, weight}` nodes for SSSP), per-vertex property arrays.
//! Work is split over threads like GAP's OpenMP loops (static partitions of vertex ranges or
//! frontier slices) with a fixed interleaving, so shared updates are deterministic.

use crate::params::{float, size, PDef, Params};
use crate::recorder::{interleave, static_split, Pos, Recorder};
use crate::vas::{Arr, Vas};
use crate::WorkloadError;

use super::graph::{build, graph_params, pick_roots, Csr, GraphSpec};
use super::KernelImpl;

struct Base {
    vas: Vas,
    offsets: Arr,
    neighbors: Arr,
    spec: GraphSpec,
    threads: usize,
}

impl Base {
    fn new(p: &Params, neighbor_bytes: u64) -> Result<Base, WorkloadError> {
        let spec = GraphSpec::from_params(p, true)?;
        let mut vas = Vas::new();
        let offsets = vas.array("offsets", spec.n() + 1, 8);
        let neighbors = vas.array("neighbors", 2 * spec.m(), neighbor_bytes);
        Ok(Base { vas, offsets, neighbors, spec, threads: p.threads() })
    }

    /// Reads `u`'s neighbour-list bounds (its id came from the load at `u_from`, or from a
    /// loop counter); returns them and where the start was loaded, which every neighbour
    /// read's address comes from.
    #[inline(always)]
    fn edges<R: Recorder>(&self, rec: &mut R, g: &Csr, u: usize, u_from: Option<Pos>) -> (u64, u64, Pos) {
        let start = rec.here();
        let (lo, hi) = (self.offsets.at(u as u64), self.offsets.at(u as u64 + 1));
        rec.load_from_opt(lo, 8, 2, u_from);
        rec.load_from_opt(hi, 8, 1, u_from);
        (g.off[u], g.off[u + 1], start)
    }
}

// ---------------------------------------------------------------- PageRank

pub mod pr {
    use super::*;
    const G: [PDef; 4] = graph_params("19");
    pub const DESC: &str = "GAP PageRank (pull direction) on a Kronecker or uniform graph";
    pub const PARAMS: &[PDef] =
        &[G[0], G[1], G[2], G[3], size("iters", "1", "PageRank iterations (each repeats the same access pattern)"), float("damping", "0.85", "damping factor")];
}

pub struct PageRank {
    b: Base,
    scores_a: Arr,
    contrib_a: Arr,
    iters: u64,
    damping: f64,
    pub graph: Csr,
    pub scores: Vec<f64>,
}

impl KernelImpl for PageRank {
    fn new(p: &Params, _native: bool) -> Result<Self, WorkloadError> {
        let mut b = Base::new(p, 4)?;
        let n = b.spec.n();
        let scores_a = b.vas.array("scores", n, 8);
        let contrib_a = b.vas.array("contrib", n, 8);
        let damping = p.f64("damping");
        if !(0.0..1.0).contains(&damping) {
            return Err(p.bad("damping", "must be in [0, 1)"));
        }
        Ok(PageRank { b, scores_a, contrib_a, iters: p.u64("iters"), damping, graph: Csr::default(), scores: Vec::new() })
    }
    fn vas(&self) -> &Vas {
        &self.b.vas
    }
    fn threads(&self) -> usize {
        self.b.threads
    }

    fn run<R: Recorder>(&mut self, rec: &mut R) -> u64 {
        self.graph = match build(&self.b.spec, false, &|| rec.stopped()) {
            Some(g) => g,
            None => return 0,
        };
        rec.roi_begin();
        let g = &self.graph;
        let n = g.n;
        let b = &self.b;
        let (sa, ca, na) = (self.scores_a, self.contrib_a, b.neighbors);
        let d = self.damping;
        let scores = &mut self.scores;
        *scores = vec![1.0 / n as f64; n];
        let mut contrib = vec![0.0f64; n];
        let ranges = static_split(n as u64, b.threads);
        for _ in 0..self.iters {
            // Vertices without edges would leak rank; spread it evenly so scores stay a
            // probability distribution.
            let mut dangling = 0.0;
            interleave(rec, &ranges, 1024, |rec, _t, lo, hi| {
                for u in lo..hi {
                    let u = u as usize;
                    rec.load(sa.at(u as u64), 8, 2);
                    let (s, e, _) = b.edges(rec, g, u, None);
                    let deg = e - s;
                    if deg == 0 {
                        dangling += scores[u];
                        contrib[u] = 0.0;
                    } else {
                        contrib[u] = scores[u] / deg as f64;
                    }
                    rec.store(ca.at(u as u64), 8, 4);
                }
            });
            let base = (1.0 - d) / n as f64 + d * dangling / n as f64;
            interleave(rec, &ranges, 256, |rec, _t, lo, hi| {
                for u in lo..hi {
                    let u = u as usize;
                    let (s, e, list) = b.edges(rec, g, u, None);
                    let mut sum = 0.0;
                    for ei in s..e {
                        let v = g.adj[ei as usize] as usize;
                        rec.load_from(na.at(ei), 4, 2, list);
                        rec.load_dep(ca.at(v as u64), 8, 1);
                        sum += contrib[v];
                    }
                    scores[u] = base + d * sum;
                    rec.store(sa.at(u as u64), 8, 3);
                }
            });
            if rec.stopped() {
                break;
            }
        }
        scores.iter().fold(0u64, |h, x| h.wrapping_mul(31).wrapping_add(x.to_bits()))
    }
}

// ---------------------------------------------------------------- SSSP

pub mod sssp {
    use super::*;
    const G: [PDef; 4] = graph_params("19");
    pub const DESC: &str = "GAP delta-stepping single-source shortest paths (weights 1..255)";
    pub const PARAMS: &[PDef] =
        &[G[0], G[1], G[2], G[3], size("delta", "2", "bucket width of delta-stepping"), size("roots", "1", "sources (each a full SSSP)")];
}

pub const INF: u32 = u32::MAX;

pub struct Sssp {
    b: Base,
    dist_a: Arr,
    frontier_a: Arr,
    delta: u32,
    roots_n: usize,
    pub graph: Csr,
    pub roots: Vec<u32>,
    pub dist: Vec<u32>,
}

impl KernelImpl for Sssp {
    fn new(p: &Params, _native: bool) -> Result<Self, WorkloadError> {
        let mut b = Base::new(p, 8)?;
        let n = b.spec.n();
        let dist_a = b.vas.array("dist", n, 4);
        let frontier_a = b.vas.array("frontier", 2 * b.spec.m(), 4);
        Ok(Sssp {
            b,
            dist_a,
            frontier_a,
            delta: p.range("delta", 1, 1 << 20)? as u32,
            roots_n: p.range("roots", 1, 1 << 16)? as usize,
            graph: Csr::default(),
            roots: Vec::new(),
            dist: Vec::new(),
        })
    }
    fn vas(&self) -> &Vas {
        &self.b.vas
    }
    fn threads(&self) -> usize {
        self.b.threads
    }

    fn run<R: Recorder>(&mut self, rec: &mut R) -> u64 {
        self.graph = match build(&self.b.spec, true, &|| rec.stopped()) {
            Some(g) => g,
            None => return 0,
        };
        self.roots = pick_roots(&self.graph, self.roots_n, self.b.spec.seed);
        rec.roi_begin();
        let mut digest = 0u64;
        for i in 0..self.roots.len() {
            let r = self.roots[i];
            self.delta_step(rec, r);
            digest = self.dist.iter().fold(digest, |h, &x| h.wrapping_mul(31).wrapping_add(x as u64));
            if rec.stopped() {
                break;
            }
        }
        digest
    }
}

impl Sssp {
    fn delta_step<R: Recorder>(&mut self, rec: &mut R, src: u32) {
        let g = &self.graph;
        let b = &self.b;
        let (da, fa, na) = (self.dist_a, self.frontier_a, b.neighbors);
        let delta = self.delta;
        let t = b.threads;
        let dist = &mut self.dist;
        dist.clear();
        dist.resize(g.n, INF);
        interleave(rec, &static_split(g.n as u64, t), 4096, |rec, _t, lo, hi| {
            for v in lo..hi {
                rec.store(da.at(v), 4, 2);
            }
        });
        dist[src as usize] = 0;
        let mut frontier: Vec<u32> = vec![src];
        rec.set_stream(0);
        rec.store(da.at(src as u64), 4, 1);
        rec.store(fa.at(0), 4, 1);
        // Thread-local bins (small, hot: not recorded), as in GAP.
        let mut bins: Vec<Vec<Vec<u32>>> = vec![Vec::new(); t];
        let mut curr: usize = 0;
        while !frontier.is_empty() && !rec.stopped() {
            let ranges = static_split(frontier.len() as u64, t);
            let lower = (delta as u64 * curr as u64).min(u32::MAX as u64) as u32;
            interleave(rec, &ranges, 64, |rec, th, lo, hi| {
                for i in lo..hi {
                    let u = frontier[i as usize] as usize;
                    let u_at = rec.here();
                    rec.load(fa.at(i), 4, 2);
                    rec.load_dep(da.at(u as u64), 4, 1);
                    let du = dist[u];
                    // Already settled in an earlier bucket: skip (GAP's check).
                    if du < lower {
                        continue;
                    }
                    let (s, e, list) = b.edges(rec, g, u, Some(u_at));
                    for ei in s..e {
                        let v = g.adj[ei as usize] as usize;
                        let w = g.wt[ei as usize];
                        let v_at = rec.here();
                        rec.load_from(na.at(ei), 8, 2, list);
                        rec.load_dep(da.at(v as u64), 4, 2);
                        let nd = du + w;
                        if nd < dist[v] {
                            dist[v] = nd;
                            rec.store_from(da.at(v as u64), 4, 2, v_at);
                            let bin = (nd / delta) as usize;
                            let lb = &mut bins[th];
                            if lb.len() <= bin {
                                lb.resize_with(bin + 1, Vec::new);
                            }
                            lb[bin].push(v as u32);
                        }
                    }
                }
            });
            // Next bucket: the smallest non-empty one at or after the current.
            let next = bins.iter().filter_map(|lb| (curr..lb.len()).find(|&i| !lb[i].is_empty())).min();
            frontier.clear();
            let Some(next) = next else { break };
            curr = next;
            for (th, lb) in bins.iter_mut().enumerate() {
                if let Some(bin) = lb.get_mut(next) {
                    rec.set_stream(th);
                    for &v in bin.iter() {
                        rec.store(fa.at(frontier.len() as u64), 4, 2);
                        frontier.push(v);
                    }
                    bin.clear();
                }
            }
        }
    }
}

// ---------------------------------------------------------------- BC

pub mod bc {
    use super::*;
    const G: [PDef; 4] = graph_params("19");
    pub const DESC: &str = "GAP betweenness centrality (Brandes, BFS-based) from random sources";
    pub const PARAMS: &[PDef] = &[G[0], G[1], G[2], G[3], size("sources", "1", "BFS sources whose dependencies are accumulated")];
}

pub struct Bc {
    b: Base,
    depth_a: Arr,
    paths_a: Arr,
    deltas_a: Arr,
    scores_a: Arr,
    succ_a: Arr,
    queue_a: Arr,
    sources_n: usize,
    pub graph: Csr,
    pub sources: Vec<u32>,
    pub scores: Vec<f64>,
}

impl KernelImpl for Bc {
    fn new(p: &Params, _native: bool) -> Result<Self, WorkloadError> {
        let mut b = Base::new(p, 4)?;
        let n = b.spec.n();
        let depth_a = b.vas.array("depths", n, 4);
        let paths_a = b.vas.array("path_counts", n, 8);
        let deltas_a = b.vas.array("deltas", n, 8);
        let scores_a = b.vas.array("scores", n, 8);
        let succ_a = b.vas.array("succ", (2 * b.spec.m()).div_ceil(64), 8);
        let queue_a = b.vas.array("queue", n, 4);
        Ok(Bc {
            b,
            depth_a,
            paths_a,
            deltas_a,
            scores_a,
            succ_a,
            queue_a,
            sources_n: p.range("sources", 1, 1 << 16)? as usize,
            graph: Csr::default(),
            sources: Vec::new(),
            scores: Vec::new(),
        })
    }
    fn vas(&self) -> &Vas {
        &self.b.vas
    }
    fn threads(&self) -> usize {
        self.b.threads
    }

    fn run<R: Recorder>(&mut self, rec: &mut R) -> u64 {
        self.graph = match build(&self.b.spec, false, &|| rec.stopped()) {
            Some(g) => g,
            None => return 0,
        };
        self.sources = pick_roots(&self.graph, self.sources_n, self.b.spec.seed);
        rec.roi_begin();
        let g = &self.graph;
        let n = g.n;
        let b = &self.b;
        let t = b.threads;
        let (da, pa, dla, sca, sua, qa, na) = (self.depth_a, self.paths_a, self.deltas_a, self.scores_a, self.succ_a, self.queue_a, b.neighbors);
        let scores = &mut self.scores;
        *scores = vec![0.0; n];
        let mut depth = vec![-1i32; n];
        let mut paths = vec![0.0f64; n];
        let mut deltas = vec![0.0f64; n];
        let mut succ = vec![0u64; g.adj.len().div_ceil(64)];
        let mut queue: Vec<u32> = Vec::with_capacity(n);
        let vsplit = static_split(n as u64, t);
        for &src in &self.sources {
            if rec.stopped() {
                break;
            }
            // Reset per-source state (GAP re-initialises these arrays each iteration).
            depth.fill(-1);
            paths.fill(0.0);
            deltas.fill(0.0);
            succ.fill(0);
            interleave(rec, &vsplit, 4096, |rec, _t, lo, hi| {
                for v in lo..hi {
                    rec.store(da.at(v), 4, 1);
                    rec.store(pa.at(v), 8, 1);
                    rec.store(dla.at(v), 8, 1);
                }
            });
            queue.clear();
            depth[src as usize] = 0;
            paths[src as usize] = 1.0;
            queue.push(src);
            let mut marks = vec![0usize, 1];
            // Forward: level-synchronous BFS counting shortest paths and marking successor
            // edges in a bitmap.
            while *marks.last().unwrap_or(&0) > marks[marks.len() - 2] && !rec.stopped() {
                let (k1, k2) = (marks[marks.len() - 2], marks[marks.len() - 1]);
                let ranges: Vec<(u64, u64)> = static_split((k2 - k1) as u64, t).into_iter().map(|(a, c)| (a + k1 as u64, c + k1 as u64)).collect();
                interleave(rec, &ranges, 64, |rec, _t, lo, hi| {
                    for k in lo..hi {
                        let u = queue[k as usize] as usize;
                        let u_at = rec.here();
                        rec.load(qa.at(k), 4, 2);
                        let du = depth[u];
                        let (s, e, list) = b.edges(rec, g, u, Some(u_at));
                        for ei in s..e {
                            let v = g.adj[ei as usize] as usize;
                            let v_at = rec.here();
                            rec.load_from(na.at(ei), 4, 2, list);
                            rec.load_dep(da.at(v as u64), 4, 1);
                            if depth[v] == -1 {
                                depth[v] = du + 1;
                                rec.store_from(da.at(v as u64), 4, 2, v_at);
                                rec.store(qa.at(queue.len() as u64), 4, 1);
                                queue.push(v as u32);
                            }
                            if depth[v] == du + 1 {
                                // (The bitmap word's index comes from the edge's, so from
                                // the list start.)
                                rec.load_from(sua.at(ei / 64), 8, 2, list);
                                rec.store_from(sua.at(ei / 64), 8, 0, list);
                                succ[(ei / 64) as usize] |= 1 << (ei % 64);
                                rec.load_from(pa.at(u as u64), 8, 1, u_at);
                                rec.load_from(pa.at(v as u64), 8, 1, v_at);
                                rec.store_from(pa.at(v as u64), 8, 2, v_at);
                                paths[v] += paths[u];
                            }
                        }
                    }
                });
                marks.push(queue.len());
            }
            // Backward: dependencies level by level from the deepest.
            for lvl in (0..marks.len() - 1).rev() {
                let (k1, k2) = (marks[lvl], marks[lvl + 1]);
                if k1 >= k2 {
                    continue;
                }
                let ranges: Vec<(u64, u64)> = static_split((k2 - k1) as u64, t).into_iter().map(|(a, c)| (a + k1 as u64, c + k1 as u64)).collect();
                interleave(rec, &ranges, 64, |rec, _t, lo, hi| {
                    for k in lo..hi {
                        let u = queue[k as usize] as usize;
                        let u_at = rec.here();
                        rec.load(qa.at(k), 4, 2);
                        let (s, e, list) = b.edges(rec, g, u, Some(u_at));
                        let mut du = 0.0;
                        for ei in s..e {
                            rec.load_from(sua.at(ei / 64), 8, 3, list);
                            if succ[(ei / 64) as usize] >> (ei % 64) & 1 == 1 {
                                let v = g.adj[ei as usize] as usize;
                                let v_at = rec.here();
                                rec.load_from(na.at(ei), 4, 1, list);
                                rec.load_dep(pa.at(v as u64), 8, 1);
                                rec.load_from(dla.at(v as u64), 8, 1, v_at);
                                du += paths[u] / paths[v] * (1.0 + deltas[v]);
                            }
                        }
                        deltas[u] = du;
                        rec.store_from(dla.at(u as u64), 8, 4, u_at);
                        rec.load_from(sca.at(u as u64), 8, 1, u_at);
                        rec.store_from(sca.at(u as u64), 8, 1, u_at);
                        scores[u] += du;
                    }
                });
            }
        }
        // GAP normalises by the largest score.
        let max = scores.iter().cloned().fold(0.0f64, f64::max);
        interleave(rec, &vsplit, 4096, |rec, _t, lo, hi| {
            for u in lo..hi {
                rec.load(sca.at(u), 8, 2);
                rec.store(sca.at(u), 8, 2);
            }
        });
        if max > 0.0 {
            for s in scores.iter_mut() {
                *s /= max;
            }
        }
        scores.iter().fold(0u64, |h, x| h.wrapping_mul(31).wrapping_add(x.to_bits()))
    }
}

// ---------------------------------------------------------------- CC

pub mod cc {
    use super::*;
    const G: [PDef; 4] = graph_params("20");
    pub const DESC: &str = "GAP connected components (Afforest: neighbour sampling, then finish)";
    pub const PARAMS: &[PDef] = &[G[0], G[1], G[2], G[3], size("rounds", "2", "Afforest neighbour-sampling rounds")];
}

pub struct Cc {
    b: Base,
    comp_a: Arr,
    rounds: u64,
    pub graph: Csr,
    pub comp: Vec<u32>,
}

impl KernelImpl for Cc {
    fn new(p: &Params, _native: bool) -> Result<Self, WorkloadError> {
        let mut b = Base::new(p, 4)?;
        let comp_a = b.vas.array("comp", b.spec.n(), 4);
        Ok(Cc { b, comp_a, rounds: p.range("rounds", 0, 64)?, graph: Csr::default(), comp: Vec::new() })
    }
    fn vas(&self) -> &Vas {
        &self.b.vas
    }
    fn threads(&self) -> usize {
        self.b.threads
    }

    fn run<R: Recorder>(&mut self, rec: &mut R) -> u64 {
        self.graph = match build(&self.b.spec, false, &|| rec.stopped()) {
            Some(g) => g,
            None => return 0,
        };
        rec.roi_begin();
        let g = &self.graph;
        let n = g.n;
        let b = &self.b;
        let (ca, na) = (self.comp_a, b.neighbors);
        let comp = &mut self.comp;
        *comp = (0..n as u32).collect();
        let vsplit = static_split(n as u64, b.threads);
        interleave(rec, &vsplit, 4096, |rec, _t, lo, hi| {
            for v in lo..hi {
                rec.store(ca.at(v), 4, 1);
            }
        });
        // Link(u, v): hook the higher root under the lower (GAP's afforest Link). `u` is a
        // loop counter, `v` was loaded at `v_at`; every label read after comes from a label
        // read before (`*_at`: where each was loaded).
        fn link<R: Recorder>(rec: &mut R, ca: Arr, comp: &mut [u32], u: u32, v: u32, v_at: Pos) {
            let mut p1_at = rec.here();
            rec.load(ca.at(u as u64), 4, 1);
            let mut p2_at = rec.here();
            rec.load_from(ca.at(v as u64), 4, 1, v_at);
            let mut p1 = comp[u as usize];
            let mut p2 = comp[v as usize];
            while p1 != p2 {
                let (high, low, high_at, low_at) = if p1 > p2 { (p1, p2, p1_at, p2_at) } else { (p2, p1, p2_at, p1_at) };
                let p_high_at = rec.here();
                rec.load_from(ca.at(high as u64), 4, 2, high_at);
                let p_high = comp[high as usize];
                if p_high == low {
                    break;
                }
                if p_high == high {
                    rec.store_from(ca.at(high as u64), 4, 1, high_at);
                    comp[high as usize] = low;
                    break;
                }
                p1_at = rec.here();
                rec.load_from(ca.at(p_high as u64), 4, 1, p_high_at);
                p1 = comp[p_high as usize];
                p2_at = rec.here();
                rec.load_from(ca.at(low as u64), 4, 1, low_at);
                p2 = comp[low as usize];
            }
        }
        fn compress<R: Recorder>(rec: &mut R, ca: Arr, comp: &mut [u32], vsplit: &[(u64, u64)]) {
            interleave(rec, vsplit, 1024, |rec, _t, lo, hi| {
                for v in lo..hi {
                    let v = v as usize;
                    // comp[v] = comp[comp[v]] until a root: each label read's address is
                    // the label read before it.
                    let mut c_at = rec.here();
                    rec.load(ca.at(v as u64), 4, 2);
                    loop {
                        let c = comp[v];
                        let cc_at = rec.here();
                        rec.load_from(ca.at(c as u64), 4, 1, c_at);
                        let cc = comp[c as usize];
                        if c == cc {
                            break;
                        }
                        comp[v] = cc;
                        rec.store(ca.at(v as u64), 4, 1);
                        c_at = cc_at;
                    }
                }
            });
        }
        for r in 0..self.rounds {
            interleave(rec, &vsplit, 1024, |rec, _t, lo, hi| {
                for u in lo..hi {
                    let u = u as usize;
                    let (s, e, list) = b.edges(rec, g, u, None);
                    if r < e - s {
                        let v = g.adj[(s + r) as usize];
                        let v_at = rec.here();
                        rec.load_from(na.at(s + r), 4, 1, list);
                        link(rec, ca, comp, u as u32, v, v_at);
                    }
                }
            });
            compress(rec, ca, comp, &vsplit);
            if rec.stopped() {
                return 0;
            }
        }
        // The most frequent label in a fixed sample is (w.h.p.) the giant component, whose
        // vertices can skip their remaining edges.
        let mut rng = crate::rng::Rng::new(crate::rng::derive(b.spec.seed, 0xCC));
        let mut sample: Vec<u32> = (0..1024.min(n))
            .map(|_| {
                let v = rng.below(n as u64);
                rec.set_stream(0);
                rec.load(ca.at(v), 4, 3);
                comp[v as usize]
            })
            .collect();
        sample.sort_unstable();
        let mut best = (0usize, sample.first().copied().unwrap_or(0));
        let mut i = 0;
        while i < sample.len() {
            let j = sample[i..].iter().position(|&x| x != sample[i]).map_or(sample.len(), |p| i + p);
            if j - i > best.0 {
                best = (j - i, sample[i]);
            }
            i = j;
        }
        let giant = best.1;
        let rounds = self.rounds;
        interleave(rec, &vsplit, 1024, |rec, _t, lo, hi| {
            for u in lo..hi {
                let u = u as usize;
                rec.load(ca.at(u as u64), 4, 2);
                if comp[u] == giant {
                    continue;
                }
                let (s, e, list) = b.edges(rec, g, u, None);
                for ei in (s + rounds).min(e)..e {
                    let v_at = rec.here();
                    rec.load_from(na.at(ei), 4, 1, list);
                    link(rec, ca, comp, u as u32, g.adj[ei as usize], v_at);
                }
            }
        });
        compress(rec, ca, comp, &vsplit);
        let mut labels: Vec<u32> = comp.clone();
        labels.sort_unstable();
        labels.dedup();
        labels.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::*;

    #[test]
    fn pagerank_sums_to_one_and_matches_reference() {
        for graph in ["kron", "uniform"] {
            let kv = format!("graph={graph},scale=11,degree=8,iters=5,threads=2");
            let (k, s, _) = run_recorded::<PageRank>("pagerank", pr::PARAMS, &kv);
            let sum: f64 = k.scores.iter().sum();
            assert!((sum - 1.0).abs() < 1e-9, "{graph}: sum {sum}");
            // Independent power iteration.
            let g = &k.graph;
            let n = g.n;
            let mut r = vec![1.0 / n as f64; n];
            for _ in 0..5 {
                let dang: f64 = (0..n).filter(|&u| g.degree(u) == 0).map(|u| r[u]).sum();
                let mut nr = vec![(0.15 + 0.85 * dang) / n as f64; n];
                for (u, &ru) in r.iter().enumerate() {
                    for &v in g.neigh(u) {
                        nr[v as usize] += 0.85 * ru / g.degree(u) as f64;
                    }
                }
                r = nr;
            }
            assert_eq!(r.len(), k.scores.len());
            for (u, (&ru, &ku)) in r.iter().zip(&k.scores).enumerate() {
                assert!((ru - ku).abs() < 1e-12, "{graph} u={u}");
            }
            assert_in_regions(k.vas(), &s);
        }
    }

    /// What each array's addresses come from: neighbour reads from the list start
    /// (`offsets[u]`), per-neighbour reads and writes from the neighbour's id, per-vertex
    /// reads from the queue or frontier entry that named the vertex; loop-counter addresses
    /// from nothing. (A uniform graph keeps every list within a producer's reach.)
    #[test]
    fn every_address_names_the_load_it_comes_from() {
        use xlat_core::RefKind::{Load, Store};
        let kv = "graph=uniform,scale=10,degree=8,threads=2";
        let (k, s, _) = run_recorded::<PageRank>("pagerank", pr::PARAMS, kv);
        let from = |kind, region| sources(k.vas(), &s, kind, region);
        assert_eq!(from(Load, "offsets"), [""]);
        assert_eq!(from(Load, "neighbors"), ["offsets"]);
        assert_eq!(from(Load, "contrib"), ["neighbors"]);
        assert_eq!(from(Store, "scores"), [""]);

        let (k, s, _) = run_recorded::<Sssp>("sssp", sssp::PARAMS, kv);
        let from = |kind, region| sources(k.vas(), &s, kind, region);
        assert_eq!(from(Load, "offsets"), ["frontier"]);
        assert_eq!(from(Load, "neighbors"), ["offsets"]);
        assert_eq!(from(Load, "dist"), ["frontier", "neighbors"]);
        assert_eq!(from(Store, "dist"), ["", "neighbors"], "initialisation, then relaxations");

        let (k, s, _) = run_recorded::<Bc>("bc", bc::PARAMS, kv);
        let from = |kind, region| sources(k.vas(), &s, kind, region);
        assert_eq!(from(Load, "offsets"), ["queue"]);
        assert_eq!(from(Load, "neighbors"), ["offsets"]);
        assert_eq!(from(Load, "depths"), ["neighbors"]);
        assert_eq!(from(Store, "depths"), ["", "neighbors"]);
        assert_eq!(from(Load, "succ"), ["offsets"]);
        assert_eq!(from(Load, "path_counts"), ["neighbors", "queue"]);
        assert_eq!(from(Load, "deltas"), ["neighbors"]);
        assert_eq!(from(Store, "deltas"), ["", "queue"]);

        let (k, s, _) = run_recorded::<Cc>("cc", cc::PARAMS, kv);
        let from = |kind, region| sources(k.vas(), &s, kind, region);
        assert_eq!(from(Load, "neighbors"), ["offsets"]);
        assert_eq!(from(Load, "comp"), ["", "comp", "neighbors"]);
        assert_eq!(from(Store, "comp"), ["", "comp"]);
    }

    #[test]
    fn sssp_distances_are_shortest() {
        for graph in ["kron", "uniform"] {
            let kv = format!("graph={graph},scale=11,degree=8,threads=2,delta=3");
            let (k, s, _) = run_recorded::<Sssp>("sssp", sssp::PARAMS, &kv);
            let g = &k.graph;
            let d = &k.dist;
            let src = k.roots[0] as usize;
            assert_eq!(d[src], 0);
            // Triangle inequality on every edge, and every reached vertex has a tight edge.
            for u in 0..g.n {
                for (i, &v) in g.neigh(u).iter().enumerate() {
                    let w = g.wt[g.off[u] as usize + i];
                    if d[u] != INF {
                        assert!(d[v as usize] <= d[u] + w, "{graph}: edge {u}->{v}");
                    }
                }
                if u != src && d[u] != INF {
                    let tight = g.neigh(u).iter().enumerate().any(|(i, &v)| d[v as usize] != INF && d[v as usize] + g.wt[g.off[u] as usize + i] == d[u]);
                    assert!(tight, "{graph}: vertex {u} has no tight edge");
                }
            }
            // Dijkstra agrees.
            let mut dj = vec![INF; g.n];
            let mut heap = std::collections::BinaryHeap::new();
            dj[src] = 0;
            heap.push(std::cmp::Reverse((0u32, src)));
            while let Some(std::cmp::Reverse((du, u))) = heap.pop() {
                if du > dj[u] {
                    continue;
                }
                for (i, &v) in g.neigh(u).iter().enumerate() {
                    let nd = du + g.wt[g.off[u] as usize + i];
                    if nd < dj[v as usize] {
                        dj[v as usize] = nd;
                        heap.push(std::cmp::Reverse((nd, v as usize)));
                    }
                }
            }
            assert_eq!(&dj, d);
            assert!(d.iter().filter(|&&x| x != INF).count() > 1000);
            assert_in_regions(k.vas(), &s);
        }
    }

    #[test]
    fn bc_matches_reference_brandes() {
        let (k, s, _) = run_recorded::<Bc>("bc", bc::PARAMS, "scale=10,degree=8,sources=3,threads=2");
        let g = &k.graph;
        let n = g.n;
        let mut bc = vec![0.0f64; n];
        for &src in &k.sources {
            let src = src as usize;
            let mut dist = vec![-1i64; n];
            let mut sigma = vec![0.0f64; n];
            let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
            let mut order = Vec::new();
            let mut q = std::collections::VecDeque::new();
            dist[src] = 0;
            sigma[src] = 1.0;
            q.push_back(src);
            while let Some(u) = q.pop_front() {
                order.push(u);
                for &v in g.neigh(u) {
                    let v = v as usize;
                    if dist[v] < 0 {
                        dist[v] = dist[u] + 1;
                        q.push_back(v);
                    }
                    if dist[v] == dist[u] + 1 {
                        sigma[v] += sigma[u];
                        preds[v].push(u);
                    }
                }
            }
            let mut delta = vec![0.0f64; n];
            for &w in order.iter().rev() {
                for &v in &preds[w] {
                    delta[v] += sigma[v] / sigma[w] * (1.0 + delta[w]);
                }
                if w != src {
                    bc[w] += delta[w];
                }
            }
            // GAP's accumulation includes the source's own dependency.
            bc[src] += delta[src];
        }
        let max = bc.iter().cloned().fold(0.0, f64::max);
        assert_eq!(bc.len(), k.scores.len());
        for (u, (&b, &score)) in bc.iter().zip(&k.scores).enumerate() {
            let expect = b / max;
            assert!((expect - score).abs() < 1e-9 * expect.max(1.0), "u={u}: {expect} vs {score}");
        }
        assert!(k.scores.contains(&1.0));
        assert_in_regions(k.vas(), &s);
    }

    #[test]
    fn cc_labels_match_union_find() {
        for graph in ["kron", "uniform"] {
            let kv = format!("graph={graph},scale=11,degree=2,threads=2");
            let (k, s, ncomp) = run_recorded::<Cc>("cc", cc::PARAMS, &kv);
            let g = &k.graph;
            let mut uf: Vec<usize> = (0..g.n).collect();
            fn find(uf: &mut [usize], mut x: usize) -> usize {
                while uf[x] != x {
                    uf[x] = uf[uf[x]];
                    x = uf[x];
                }
                x
            }
            for u in 0..g.n {
                for &v in g.neigh(u) {
                    assert_eq!(k.comp[u], k.comp[v as usize], "{graph}: edge {u}-{v} split");
                    let (a, b) = (find(&mut uf, u), find(&mut uf, v as usize));
                    uf[a] = b;
                }
            }
            let mut roots: Vec<usize> = (0..g.n).map(|u| find(&mut uf, u)).collect();
            roots.sort_unstable();
            roots.dedup();
            assert_eq!(roots.len() as u64, ncomp, "{graph}: component count");
            assert!(ncomp > 1);
            assert_in_regions(k.vas(), &s);
        }
    }
}
