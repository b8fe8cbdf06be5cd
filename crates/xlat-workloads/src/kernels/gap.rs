//! GAP benchmark suite style kernels (PageRank, SSSP, BC, CC) on Kronecker or uniform
//! graphs. Layout follows GAP: 8-byte CSR offsets (`offsets`), 4-byte neighbour ids
//! (`neighbors`; 8-byte `{id, weight}` nodes for SSSP), per-vertex property arrays.
//! Work is split over threads like GAP's OpenMP loops (static partitions of vertex ranges or
//! frontier slices) with a fixed interleaving, so shared updates are deterministic.
//!
//! Instructions per reference are GAP's own loops', compiled by gcc 12 (`-std=c++11 -O3
//! -march=x86-64-v2 -fopenmp`, the loops' outlined OpenMP bodies in `objdump -d`): each kernel's
//! `cost` module gives the counts and the code they come from. A reference carries the
//! instructions since the one before it in the compiled code's order; where what follows a
//! reference depends on a branch (an edge that improves a distance, a vertex reached for the
//! first time), those instructions are carried (`tail`, per thread, across chunks) to the next
//! reference, as the loop's closing compare and branch are to the next iteration's first one.

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
    /// loop counter; `delta` instructions each); returns them and where the start was loaded,
    /// which every neighbour read's address comes from.
    #[inline(always)]
    fn edges<R: Recorder>(&self, rec: &mut R, g: &Csr, u: usize, u_from: Option<Pos>, delta: [u32; 2]) -> (u64, u64, Pos) {
        let start = rec.here();
        let (lo, hi) = (self.offsets.at(u as u64), self.offsets.at(u as u64 + 1));
        rec.load_from_opt(lo, 8, delta[0], u_from);
        rec.load_from_opt(hi, 8, delta[1], u_from);
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

/// GAP's PageRankPull as it was before its Gauss-Seidel rewrite (gapbs 69aea27^, pr.cc: a
/// contributions loop, then the pull), the form this kernel follows.
mod pr_cost {
    /// Contributions, 11 a vertex: `index[n+1]` after the last vertex's add, cmp, jg (4);
    /// `sub index[n]` (1); pxor, sar, `scores[n]` (3); cvtsi2ss, divss, the store (3).
    pub const CONTRIB: [u32; 4] = [4, 1, 3, 3];
    /// The pull: `index[u+1]` (1 after the tail), `index[u]` (1), then cmp, je.
    pub const OFFSETS: [u32; 2] = [1, 1];
    pub const AFTER_OFFSETS: u32 = 2;
    /// Before a first edge: the contributions pointer's reload, pxor, a nop.
    pub const EDGES_ENTRY: u32 = 3;
    /// An edge, 5: movslq (the neighbour) after the tail; add, addss (its contribution); cmp, jne.
    pub const NEIGHBOR: u32 = 1;
    pub const CONTRIBUTION: u32 = 2;
    pub const EDGE_TAIL: u32 = 2;
    /// The score's store: mulss, addss, the old score's load, the store (4; without edges pxor,
    /// jmp, addss, load, store: 5), then subss, add, andps, cvtss2sd, addsd, cmp, jg.
    pub const STORE: u32 = 4;
    pub const STORE_NO_EDGES: u32 = 5;
    pub const VERTEX_TAIL: u32 = 7;
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
            let c = pr_cost::CONTRIB;
            interleave(rec, &ranges, 1024, |rec, _t, lo, hi| {
                for u in lo..hi {
                    let u = u as usize;
                    rec.load(sa.at(u as u64), 8, c[0]);
                    let (s, e, _) = b.edges(rec, g, u, None, [c[1], c[2]]);
                    let deg = e - s;
                    if deg == 0 {
                        dangling += scores[u];
                        contrib[u] = 0.0;
                    } else {
                        contrib[u] = scores[u] / deg as f64;
                    }
                    rec.store(ca.at(u as u64), 8, c[3]);
                }
            });
            let base = (1.0 - d) / n as f64 + d * dangling / n as f64;
            let mut tails = vec![0u32; b.threads];
            interleave(rec, &ranges, 256, |rec, th, lo, hi| {
                let tail = &mut tails[th];
                for u in lo..hi {
                    let u = u as usize;
                    let o = pr_cost::OFFSETS;
                    let (s, e, list) = b.edges(rec, g, u, None, [std::mem::take(tail) + o[0], o[1]]);
                    *tail = pr_cost::AFTER_OFFSETS;
                    let mut sum = 0.0;
                    if e > s {
                        *tail += pr_cost::EDGES_ENTRY;
                    }
                    for ei in s..e {
                        let v = g.adj[ei as usize] as usize;
                        rec.load_from(na.at(ei), 4, std::mem::take(tail) + pr_cost::NEIGHBOR, list);
                        rec.load_dep(ca.at(v as u64), 8, pr_cost::CONTRIBUTION);
                        *tail = pr_cost::EDGE_TAIL;
                        sum += contrib[v];
                    }
                    scores[u] = base + d * sum;
                    let store = if e > s { pr_cost::STORE } else { pr_cost::STORE_NO_EDGES };
                    rec.store(sa.at(u as u64), 8, std::mem::take(tail) + store);
                    *tail = pr_cost::VERTEX_TAIL;
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

/// GAP's DeltaStep (sssp.cc; RelaxEdges inlined into the frontier loop).
mod sssp_cost {
    /// A frontier entry: six loads of loop state and the bin index's imul, movslq (the entry)
    /// after the tail; `dist[u]` (1); then lea, cmp, jl.
    pub const FRONTIER: u32 = 10;
    pub const DIST_U: u32 = 1;
    pub const AFTER_DIST_U: u32 = 3;
    /// A settled vertex skipped: the loop's mov, add, cmp, jae.
    pub const LOOP: u32 = 4;
    /// Its offsets: mov, add, mov, mov, `index[u+1]` (5); `index[u]` (1); then mov, cmp, jne, and
    /// without edges a jmp.
    pub const OFFSETS: [u32; 2] = [5, 1];
    pub const AFTER_OFFSETS: u32 = 3;
    pub const NO_EDGES: u32 = 1;
    /// An edge, 15: the `{v, w}` load after the tail; mov, movslq, mov, shr, `dist[v]` (5); mov,
    /// add, cmp, jle; the loop's add, cmp, je and two reloads (5).
    pub const NEIGHBOR: u32 = 1;
    pub const DIST_V: u32 = 5;
    pub const EDGE_TAIL: u32 = 9;
    /// An edge that improves `dist[v]`: mov, add, cmp, jle, `lock cmpxchg` (5); the bin's index
    /// (a divide) and push_back (23), then the loop's 5.
    pub const RELAX: u32 = 5;
    pub const RELAX_TAIL: u32 = 28;
    /// The last edge leaves the loop without the two reloads, into the frontier loop's 4.
    pub const LAST_EDGE: u32 = 2;
}

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
        let mut tails = vec![0u32; t];
        while !frontier.is_empty() && !rec.stopped() {
            let ranges = static_split(frontier.len() as u64, t);
            let lower = (delta as u64 * curr as u64).min(u32::MAX as u64) as u32;
            interleave(rec, &ranges, 64, |rec, th, lo, hi| {
                let tail = &mut tails[th];
                for i in lo..hi {
                    let u = frontier[i as usize] as usize;
                    let u_at = rec.here();
                    rec.load(fa.at(i), 4, std::mem::take(tail) + sssp_cost::FRONTIER);
                    rec.load_dep(da.at(u as u64), 4, sssp_cost::DIST_U);
                    *tail = sssp_cost::AFTER_DIST_U;
                    let du = dist[u];
                    // Already settled in an earlier bucket: skip (GAP's check).
                    if du < lower {
                        *tail += sssp_cost::LOOP;
                        continue;
                    }
                    let (s, e, list) = b.edges(rec, g, u, Some(u_at), [std::mem::take(tail) + sssp_cost::OFFSETS[0], sssp_cost::OFFSETS[1]]);
                    *tail = sssp_cost::AFTER_OFFSETS;
                    if e == s {
                        *tail += sssp_cost::NO_EDGES;
                    }
                    for ei in s..e {
                        let v = g.adj[ei as usize] as usize;
                        let w = g.wt[ei as usize];
                        let v_at = rec.here();
                        rec.load_from(na.at(ei), 8, std::mem::take(tail) + sssp_cost::NEIGHBOR, list);
                        rec.load_dep(da.at(v as u64), 4, sssp_cost::DIST_V);
                        *tail = sssp_cost::EDGE_TAIL;
                        let nd = du + w;
                        if nd < dist[v] {
                            dist[v] = nd;
                            rec.store_from(da.at(v as u64), 4, sssp_cost::RELAX, v_at);
                            *tail = sssp_cost::RELAX_TAIL;
                            let bin = (nd / delta) as usize;
                            let lb = &mut bins[th];
                            if lb.len() <= bin {
                                lb.resize_with(bin + 1, Vec::new);
                            }
                            lb[bin].push(v as u32);
                        }
                    }
                    *tail += if e > s { sssp_cost::LOOP - sssp_cost::LAST_EDGE } else { sssp_cost::LOOP };
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

/// GAP's Brandes (bc.cc): PBFS's level loop and the dependency accumulation, both OpenMP bodies.
mod bc_cost {
    /// Forward, a queued vertex: two loads of loop state, movslq (the queue entry) after the
    /// tail; add, lea, `index[u+1]` (3); `index[u]` (1); then lea, cmp, jne, and without edges a
    /// jmp.
    pub const QUEUE: u32 = 3;
    pub const OFFSETS: [u32; 2] = [3, 1];
    pub const AFTER_OFFSETS: u32 = 3;
    pub const NO_EDGES: u32 = 1;
    /// An edge, 12: mov, movslq (the neighbour) after the tail; mov, lea, `depths[v]` (3); then
    /// cmp, jne, cmp, je and the loop's add, cmp, je (7).
    pub const NEIGHBOR: u32 = 2;
    pub const DEPTH: u32 = 3;
    pub const EDGE_TAIL: u32 = 7;
    /// A vertex reached first: cmp, jne, `lock cmpxchg` (3); the local queue's push (8); then its
    /// depth again (mov, mov, mov, cmp, jne: 5) before the successor's bitmap word.
    pub const DEPTH_STORE: u32 = 3;
    pub const QUEUE_STORE: u32 = 8;
    pub const RECHECK: u32 = 5;
    /// A successor edge, 30 more: cmp, jne, cmp, je (4, after a depth read) and 14 to load the
    /// bitmap word; mov, or, `lock cmpxchg` (3); jne, mov, movslq, mov, lea, `path_counts[u]`
    /// (6); `path_counts[v]` (1); movq, mov, addsd, movq, `lock cmpxchg` (5); je and the loop's
    /// add, cmp, je (4).
    pub const CHECKS: u32 = 4;
    pub const BITMAP: u32 = 14;
    pub const BITMAP_STORE: u32 = 3;
    pub const PATHS: [u32; 3] = [6, 1, 5];
    pub const SUCCESSOR_TAIL: u32 = 4;
    /// The vertex loop's add, cmp, jb.
    pub const LOOP: u32 = 3;
    /// Backward, a vertex: movslq (the queue entry) after the tail; lea, lea, `index[u+1]` (3);
    /// `index[u]` (1); then lea, cmp, je, and before a first edge mov, pxor, nop (without edges
    /// pxor, jmp).
    pub const BACK_QUEUE: u32 = 1;
    pub const BACK_OFFSETS: [u32; 2] = [3, 1];
    pub const BACK_EDGES_ENTRY: u32 = 6;
    pub const BACK_NO_EDGES: u32 = 5;
    /// An edge, 12: mov, sub, sar, mov, and, shr, the bitmap word (7 after the tail); bt, jae and
    /// the loop's add, cmp, jne (5).
    pub const BACK_BITMAP: u32 = 7;
    pub const BACK_EDGE_TAIL: u32 = 5;
    /// A successor, 11 more: bt, jae, movslq (the neighbour: 3); mov, cvtss2sd, `deltas[v]` (3);
    /// `path_counts[u]`, the divide by `path_counts[v]` (2); addss, cvtss2sd, mulsd, addsd,
    /// cvtsd2ss and the loop's 3 (8).
    pub const BACK_SUCCESSOR: [u32; 3] = [3, 3, 2];
    pub const BACK_SUCCESSOR_TAIL: u32 = 8;
    /// After the edges: lea, the `deltas[u]` store (2); add, addss from `scores[u]` (2); its
    /// store (1); the loop's cmp, jb.
    pub const BACK_END: [u32; 3] = [2, 2, 1];
    pub const BACK_LOOP: u32 = 2;
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
        let mut tails = vec![0u32; t];
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
                interleave(rec, &ranges, 64, |rec, th, lo, hi| {
                    use bc_cost as c;
                    let tail = &mut tails[th];
                    for k in lo..hi {
                        let u = queue[k as usize] as usize;
                        let u_at = rec.here();
                        rec.load(qa.at(k), 4, std::mem::take(tail) + c::QUEUE);
                        let du = depth[u];
                        let (s, e, list) = b.edges(rec, g, u, Some(u_at), c::OFFSETS);
                        *tail = c::AFTER_OFFSETS + if e == s { c::NO_EDGES } else { 0 };
                        for ei in s..e {
                            let v = g.adj[ei as usize] as usize;
                            let v_at = rec.here();
                            rec.load_from(na.at(ei), 4, std::mem::take(tail) + c::NEIGHBOR, list);
                            rec.load_dep(da.at(v as u64), 4, c::DEPTH);
                            *tail = c::EDGE_TAIL;
                            let mut before_bitmap = c::CHECKS;
                            if depth[v] == -1 {
                                depth[v] = du + 1;
                                rec.store_from(da.at(v as u64), 4, c::DEPTH_STORE, v_at);
                                rec.store(qa.at(queue.len() as u64), 4, c::QUEUE_STORE);
                                queue.push(v as u32);
                                before_bitmap = c::RECHECK;
                            }
                            if depth[v] == du + 1 {
                                // (The bitmap word's index comes from the edge's, so from
                                // the list start.)
                                rec.load_from(sua.at(ei / 64), 8, before_bitmap + c::BITMAP, list);
                                rec.store_from(sua.at(ei / 64), 8, c::BITMAP_STORE, list);
                                succ[(ei / 64) as usize] |= 1 << (ei % 64);
                                rec.load_from(pa.at(u as u64), 8, c::PATHS[0], u_at);
                                rec.load_from(pa.at(v as u64), 8, c::PATHS[1], v_at);
                                rec.store_from(pa.at(v as u64), 8, c::PATHS[2], v_at);
                                *tail = c::SUCCESSOR_TAIL;
                                paths[v] += paths[u];
                            }
                        }
                        *tail += c::LOOP;
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
                interleave(rec, &ranges, 64, |rec, th, lo, hi| {
                    use bc_cost as c;
                    let tail = &mut tails[th];
                    for k in lo..hi {
                        let u = queue[k as usize] as usize;
                        let u_at = rec.here();
                        rec.load(qa.at(k), 4, std::mem::take(tail) + c::BACK_QUEUE);
                        let (s, e, list) = b.edges(rec, g, u, Some(u_at), c::BACK_OFFSETS);
                        *tail = if e > s { c::BACK_EDGES_ENTRY } else { c::BACK_NO_EDGES };
                        let mut du = 0.0;
                        for ei in s..e {
                            rec.load_from(sua.at(ei / 64), 8, std::mem::take(tail) + c::BACK_BITMAP, list);
                            *tail = c::BACK_EDGE_TAIL;
                            if succ[(ei / 64) as usize] >> (ei % 64) & 1 == 1 {
                                let v = g.adj[ei as usize] as usize;
                                let v_at = rec.here();
                                let d = c::BACK_SUCCESSOR;
                                rec.load_from(na.at(ei), 4, d[0], list);
                                rec.load_dep(pa.at(v as u64), 8, d[1]);
                                rec.load_from(dla.at(v as u64), 8, d[2], v_at);
                                *tail = c::BACK_SUCCESSOR_TAIL;
                                du += paths[u] / paths[v] * (1.0 + deltas[v]);
                            }
                        }
                        deltas[u] = du;
                        let d = c::BACK_END;
                        rec.store_from(dla.at(u as u64), 8, std::mem::take(tail) + d[0], u_at);
                        rec.load_from(sca.at(u as u64), 8, d[1], u_at);
                        rec.store_from(sca.at(u as u64), 8, d[2], u_at);
                        *tail = c::BACK_LOOP;
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

/// GAP's Afforest (cc.cc): the sampling rounds call Link out of line, the final pass inlines it.
mod cc_cost {
    /// A sampling round's vertex: two loads of loop state and `index[u+1]` (3 after the tail),
    /// `index[u]` (1); mov, sub, sar, cmp, cmova, lea, cmp, je (8); the neighbour at offset r (mov,
    /// mov: 2); mov, call. Without one, the loop's add, add, cmp, jg follow.
    pub const SAMPLE_OFFSETS: [u32; 2] = [3, 1];
    pub const SAMPLE_CHECK: u32 = 8;
    pub const SAMPLE_NEIGHBOR: u32 = 2;
    pub const SAMPLE_CALL: u32 = 2;
    pub const SAMPLE_LOOP: u32 = 4;
    /// Link, called: mov, movslq, movslq, mov, `comp[u]` (5); `comp[v]` (1).
    pub const LINK_ENTRY: [u32; 2] = [5, 1];
    /// Link's loop: cmp, jne (or cmp, je on entry) then cmp, mov, cmovge, sub, movslq, lea, lea,
    /// `comp[high]` (10; inlined, the first also spills a register: 11); cmp, je, cmp, je then
    /// `lock cmpxchg` (5), or movslq, `comp[comp[high]]` (6) and `comp[low]` (1).
    pub const LINK_HIGH: u32 = 10;
    pub const LINK_HIGH_INLINED_FIRST: u32 = 11;
    pub const LINK_CAS: u32 = 5;
    pub const LINK_PARENT: [u32; 2] = [6, 1];
    /// Leaving Link: cmp, je (equal roots, or `comp[high]` was already low) or je after the
    /// compare-and-swap; out of line a ret follows.
    pub const LINK_EXIT: u32 = 2;
    pub const LINK_EXIT_CAS: u32 = 1;
    pub const RET: u32 = 1;
    /// Compress, a vertex: lea, movslq (`comp[n]`: 2 after the tail); mov, `comp[comp[n]]` (2);
    /// cmp, je, then the store (3) and jmp, lea, the reload of `comp[n]`, mov and the next
    /// `comp[comp[n]]` (5); at a root cmp, je and the loop's add, cmp, jle, movslq, jmp (7).
    pub const COMPRESS: [u32; 2] = [2, 2];
    pub const COMPRESS_STORE: u32 = 3;
    pub const COMPRESS_NEXT: u32 = 5;
    pub const COMPRESS_TAIL: u32 = 7;
    /// The final pass, a vertex: mov, mov, `comp[u]` (3 after the tail); cmp, je; in the largest
    /// component the loop's add, add, cmp, jg. Otherwise mov, mov, `index[u+1]` (3), `index[u]`
    /// (1), then mov, sub, sar, cmp, cmova, lea, cmp, je (8) and before a first edge mov, nop.
    pub const FINAL_COMP: u32 = 3;
    pub const FINAL_CHECK: u32 = 2;
    pub const FINAL_LOOP: u32 = 4;
    pub const FINAL_OFFSETS: [u32; 2] = [3, 1];
    pub const FINAL_AFTER_OFFSETS: u32 = 8;
    pub const FINAL_EDGES_ENTRY: u32 = 2;
    /// An edge, 11 where Link finds equal roots: movslq (the neighbour) after the tail; the
    /// reload of `comp[u]` (1); `comp[v]` (1); Link's cmp, je, then the loop's add, cmp, je, mov,
    /// mov and, after the reload, a jmp (6). The last edge leaves by the je into the vertex loop's
    /// mov, add, add, cmp, jg (8 in all).
    pub const FINAL_NEIGHBOR: u32 = 1;
    pub const FINAL_LINK_ENTRY: [u32; 2] = [1, 1];
    pub const FINAL_EDGE_TAIL: u32 = 6;
    pub const FINAL_LAST_EDGE: u32 = 2;
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
        // read before (`*_at`: where each was loaded). `entry` are the instructions of the two
        // first reads, `first_high` of the loop's first; returns those executed after its last
        // reference, on the way out.
        #[allow(clippy::too_many_arguments)]
        fn link<R: Recorder>(rec: &mut R, ca: Arr, comp: &mut [u32], u: u32, v: u32, v_at: Pos, entry: [u32; 2], first_high: u32) -> u32 {
            use cc_cost as c;
            let mut p1_at = rec.here();
            rec.load(ca.at(u as u64), 4, entry[0]);
            let mut p2_at = rec.here();
            rec.load_from(ca.at(v as u64), 4, entry[1], v_at);
            let mut p1 = comp[u as usize];
            let mut p2 = comp[v as usize];
            let mut high_delta = first_high;
            while p1 != p2 {
                let (high, low, high_at, low_at) = if p1 > p2 { (p1, p2, p1_at, p2_at) } else { (p2, p1, p2_at, p1_at) };
                let p_high_at = rec.here();
                rec.load_from(ca.at(high as u64), 4, high_delta, high_at);
                high_delta = c::LINK_HIGH;
                let p_high = comp[high as usize];
                if p_high == low {
                    return c::LINK_EXIT;
                }
                if p_high == high {
                    rec.store_from(ca.at(high as u64), 4, c::LINK_CAS, high_at);
                    comp[high as usize] = low;
                    return c::LINK_EXIT_CAS;
                }
                p1_at = rec.here();
                rec.load_from(ca.at(p_high as u64), 4, c::LINK_PARENT[0], p_high_at);
                p1 = comp[p_high as usize];
                p2_at = rec.here();
                rec.load_from(ca.at(low as u64), 4, c::LINK_PARENT[1], low_at);
                p2 = comp[low as usize];
            }
            c::LINK_EXIT
        }
        let mut tails = vec![0u32; b.threads];
        fn compress<R: Recorder>(rec: &mut R, ca: Arr, comp: &mut [u32], vsplit: &[(u64, u64)], tails: &mut [u32]) {
            use cc_cost as c;
            interleave(rec, vsplit, 1024, |rec, th, lo, hi| {
                let tail = &mut tails[th];
                for v in lo..hi {
                    let v = v as usize;
                    // comp[v] = comp[comp[v]] until a root: each label read's address is
                    // the label read before it.
                    let mut c_at = rec.here();
                    rec.load(ca.at(v as u64), 4, std::mem::take(tail) + c::COMPRESS[0]);
                    let mut delta = c::COMPRESS[1];
                    loop {
                        let cv = comp[v];
                        let cc_at = rec.here();
                        rec.load_from(ca.at(cv as u64), 4, delta, c_at);
                        let cc = comp[cv as usize];
                        if cv == cc {
                            break;
                        }
                        comp[v] = cc;
                        rec.store(ca.at(v as u64), 4, c::COMPRESS_STORE);
                        delta = c::COMPRESS_NEXT;
                        c_at = cc_at;
                    }
                    *tail = c::COMPRESS_TAIL;
                }
            });
        }
        for r in 0..self.rounds {
            interleave(rec, &vsplit, 1024, |rec, th, lo, hi| {
                use cc_cost as c;
                let tail = &mut tails[th];
                for u in lo..hi {
                    let u = u as usize;
                    let o = c::SAMPLE_OFFSETS;
                    let (s, e, list) = b.edges(rec, g, u, None, [std::mem::take(tail) + o[0], o[1]]);
                    *tail = c::SAMPLE_CHECK;
                    if r < e - s {
                        let v = g.adj[(s + r) as usize];
                        let v_at = rec.here();
                        rec.load_from(na.at(s + r), 4, std::mem::take(tail) + c::SAMPLE_NEIGHBOR, list);
                        let entry = [c::SAMPLE_CALL + c::LINK_ENTRY[0], c::LINK_ENTRY[1]];
                        *tail = link(rec, ca, comp, u as u32, v, v_at, entry, c::LINK_HIGH) + c::RET;
                    }
                    *tail += c::SAMPLE_LOOP;
                }
            });
            compress(rec, ca, comp, &vsplit, &mut tails);
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
        interleave(rec, &vsplit, 1024, |rec, th, lo, hi| {
            use cc_cost as c;
            let tail = &mut tails[th];
            for u in lo..hi {
                let u = u as usize;
                rec.load(ca.at(u as u64), 4, std::mem::take(tail) + c::FINAL_COMP);
                *tail = c::FINAL_CHECK;
                if comp[u] == giant {
                    *tail += c::FINAL_LOOP;
                    continue;
                }
                let o = c::FINAL_OFFSETS;
                let (s, e, list) = b.edges(rec, g, u, None, [std::mem::take(tail) + o[0], o[1]]);
                *tail = c::FINAL_AFTER_OFFSETS;
                let rest = (s + rounds).min(e)..e;
                if rest.is_empty() {
                    *tail += c::FINAL_LOOP;
                    continue;
                }
                *tail += c::FINAL_EDGES_ENTRY;
                for ei in rest {
                    let v_at = rec.here();
                    rec.load_from(na.at(ei), 4, std::mem::take(tail) + c::FINAL_NEIGHBOR, list);
                    *tail = link(rec, ca, comp, u as u32, g.adj[ei as usize], v_at, c::FINAL_LINK_ENTRY, c::LINK_HIGH_INLINED_FIRST) + c::FINAL_EDGE_TAIL;
                }
                *tail += c::FINAL_LAST_EDGE;
            }
        });
        compress(rec, ca, comp, &vsplit, &mut tails);
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

    /// GAP's compiled loops (see each kernel's `cost` module), counted from the references a
    /// run makes: PageRank 11 instructions a vertex for the contributions; the pull 18 a vertex
    /// and 5 an edge (16 for a vertex without edges); the last vertex's closing 7 come after the
    /// last reference.
    #[test]
    fn pagerank_instructions_are_gaps_compiled_loop() {
        let (k, s, _) = run_recorded::<PageRank>("pagerank", pr::PARAMS, "scale=11,degree=8");
        let g = &k.graph;
        assert!((0..g.n).any(|u| g.degree(u) == 0), "a vertex without edges");
        let pull: u64 = (0..g.n).map(|u| if g.degree(u) > 0 { 18 + 5 * g.degree(u) } else { 16 }).sum();
        assert_eq!(instructions(&s), 11 * g.n as u64 + pull - 7);
    }

    /// SSSP: a frontier entry 18 where it is settled, else 25 plus 15 an edge and 24 more an edge
    /// that improves a distance; `dist = inf` 2 a vertex, the source's two stores 1 each, the
    /// bins' copies to the frontier 2 each. The last entry's closing instructions (7, 11 or 30)
    /// come after the last reference.
    #[test]
    fn sssp_instructions_are_gaps_compiled_loop() {
        use xlat_core::RefKind::{Load, Store};
        let (k, s, _) = run_recorded::<Sssp>("sssp", sssp::PARAMS, "scale=11,degree=8");
        let (vas, n) = (k.vas(), k.graph.n as u64);
        let entries = refs_in(vas, &s, Load, "frontier");
        let relaxed = refs_in(vas, &s, Load, "offsets") / 2;
        let edges = refs_in(vas, &s, Load, "neighbors");
        let improving = refs_in(vas, &s, Store, "dist") - n - 1;
        let copies = refs_in(vas, &s, Store, "frontier") - 1;
        assert!(entries > relaxed && improving > 1000);
        let expect = 2 * n + 2 + 2 * copies + 18 * (entries - relaxed) + 25 * relaxed + 15 * edges + 24 * improving;
        let last = expect - instructions(&s);
        assert!([7, 11, 30].contains(&last), "{last}");
    }

    /// BC, forward: 13 a queued vertex, 12 an edge, 30 more a successor edge, 12 more a vertex
    /// reached; backward: 18 a vertex, 12 an edge, 11 more a successor; the per-source resets 3
    /// a vertex and the normalisation 4; the last vertex's closing 2 come after the last
    /// reference.
    #[test]
    fn bc_instructions_are_gaps_compiled_loops() {
        use xlat_core::RefKind::{Load, Store};
        let (k, s, _) = run_recorded::<Bc>("bc", bc::PARAMS, "scale=11,degree=8");
        let (vas, n) = (k.vas(), k.graph.n as u64);
        let queued = refs_in(vas, &s, Load, "queue") / 2;
        let forward_edges = refs_in(vas, &s, Load, "depths");
        let successors = refs_in(vas, &s, Store, "succ");
        let reached = refs_in(vas, &s, Store, "depths") - n;
        let backward_edges = refs_in(vas, &s, Load, "succ") - successors;
        let backward_successors = refs_in(vas, &s, Load, "deltas");
        assert!(reached + 1 == queued && backward_successors == successors);
        let forward = 13 * queued + 12 * forward_edges + 30 * successors + 12 * reached;
        let backward = 18 * queued + 12 * backward_edges + 11 * backward_successors;
        assert_eq!(instructions(&s), 3 * n + forward + backward + 4 * n - 2);
    }

    /// CC: the run's references parsed phase by phase (the graph says which vertices link; a
    /// Link's loop shows in its dependent label reads: `comp[high]`, then the compare-and-swap,
    /// or `comp[comp[high]]` and `comp[low]`, or nothing when it is done), each path counted at
    /// GAP's compiled instructions: a sampling round's vertex 16, 27 with Link; a Link iteration
    /// 17 that goes on, 15 + 1 that swaps, 10 + 2 that finds the roots joined (2 without one);
    /// Compress 11 a vertex and 8 a store; the final pass 9 a vertex in the largest component,
    /// 21 another, 9 an edge (Link inlined: 11 to its first `comp[high]`); 3 a sampled label.
    #[test]
    fn cc_instructions_are_gaps_compiled_loops() {
        use xlat_core::RefKind::Store;
        let (k, s, _) = run_recorded::<Cc>("cc", cc::PARAMS, "scale=11,degree=4");
        let (g, s, n, rounds) = (&k.graph, &s[0], k.graph.n, k.rounds);
        let comp = k.vas().regions()[2].clone();
        // A dependent read or write of a label at `i`: one of a Link's loop.
        let in_link = |i: usize| i < s.len() && s[i].va >= comp.start && s[i].va < comp.end() && s[i].producer() != 0;
        // A Link's loop from `i`: where it ends and its instructions (its first `comp[high]`
        // read `first` after the entry's compare).
        let link = |mut i: usize, first: u64| -> (usize, u64) {
            let (mut sum, mut high) = (0, first);
            loop {
                if !in_link(i) {
                    return (i, sum + 2);
                }
                if in_link(i + 1) && s[i + 1].kind() == Store {
                    return (i + 2, sum + high + 5 + 1);
                }
                if in_link(i + 1) {
                    (sum, high, i) = (sum + high + 6 + 1, 10, i + 3);
                    continue;
                }
                return (i + 1, sum + high + 2);
            }
        };
        let compress = |mut i: usize| -> (usize, u64) {
            let mut sum = 0;
            for _ in 0..n {
                i += 2;
                sum += 11;
                while i < s.len() && s[i].kind() == Store {
                    (i, sum) = (i + 2, sum + 8);
                }
            }
            (i, sum)
        };
        let (mut i, mut expect) = (n, n as u64);
        for r in 0..rounds {
            for u in 0..n {
                i += 2;
                expect += 16;
                if r < g.degree(u) {
                    let (next, sum) = link(i + 3, 10);
                    (i, expect) = (next, expect + 11 + sum);
                }
            }
            let (next, sum) = compress(i);
            (i, expect) = (next, expect + sum);
        }
        (i, expect) = (i + 1024, expect + 3 * 1024);
        for u in 0..n {
            i += 1;
            if i < s.len() && s[i].va < comp.start {
                i += 2;
                expect += 21;
                for _ in rounds..g.degree(u).max(rounds) {
                    let (next, sum) = link(i + 3, 11);
                    (i, expect) = (next, expect + 9 + sum);
                }
            } else {
                expect += 9;
            }
        }
        let (end, sum) = compress(i);
        assert_eq!(end, s.len(), "every reference parsed");
        assert_eq!(instructions(std::slice::from_ref(s)), expect + sum - 7);
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
