//! Graph500 BFS: Kronecker graph (Graph500 generator), 8-byte (int64) vertex ids as in the
//! reference code, top-down level-synchronous BFS from random roots producing the parent
//! ("bfs_tree") array, in one of the reference code's two graph layouts:
//!
//! - `layout=csr` (seq-csr): CSR offsets (`xoff`) and adjacency (`xadj`); a vertex's
//!   neighbours are one sequential run.
//! - `layout=list` (seq-list, the PT-Baker thesis's "list-based" Graph500): the edge list
//!   itself (`IJ`, two ids per edge) and one allocation (`head`) holding `head[n]`, `deg[n]`
//!   and `next[2m]`; a vertex's edges are a linked list threaded through `next` in reverse
//!   edge-list order, so each edge is two dependent random reads over arrays of 2 x edges.
//!   The generator's edge order is random with respect to the vertices: an edge's place in
//!   the list is a hash of its endpoints (two edges may share a place; duplicates and
//!   self-loops are gone, as in the CSR).
//!
//! Also recorded: `parent` and the BFS queue (`queue`, one array; a level is the slice between
//! two marks, as in the reference `vlist`). With threads, each level's frontier slice is split
//! statically and threads claim vertices in a fixed interleaving, appending to the shared queue.

use crate::params::{choice, size, PDef, Params};
use crate::recorder::{interleave, static_split, Pos, Recorder};
use crate::vas::{Arr, Vas};
use crate::WorkloadError;

use super::graph::{build, edge_hash, pick_roots, Csr, GraphSpec};
use super::KernelImpl;

pub const DESC: &str = "Graph500 BFS on a Kronecker graph (A=.57, B=.19, C=.19), CSR or per-vertex lists, parent array";
pub const PARAMS: &[PDef] = &[
    size("scale", "19", "log2 of the vertex count (Graph500 SCALE)"),
    size("degree", "16", "edge factor (Graph500 edgefactor)"),
    size("roots", "1", "BFS runs from distinct random roots (Graph500 runs 64)"),
    super::graph::graph_params("19")[3],
    choice(
        "layout",
        "csr",
        "graph layout: csr (the reference seq-csr) or list (seq-list: per-vertex linked lists through a next array, the PT-Baker thesis's Graph500)",
        &["csr", "list"],
    ),
];

/// Where the graph is: one of the reference code's two layouts.
#[derive(Clone, Copy)]
enum Layout {
    /// seq-csr: offsets `xoff[n + 1]`, adjacency `xadj[2m]`.
    Csr {
        xoff: Arr,
        xadj: Arr,
    },
    List(Lists),
}

/// Where the list layout keeps the graph (the reference seq-list's arrays).
#[derive(Clone, Copy)]
struct Lists {
    /// The edge list, `IJ[2k]`, `IJ[2k + 1]` the ends of edge `k`.
    ij: Arr,
    /// One allocation: `head[n]`, then `deg[n]`, then `next[2m]`.
    head: Arr,
    /// Vertices (`n`) and generated edges (`m`): `next` starts at `2n`, edge slots are `0..m`.
    n: u64,
    m: u64,
}

impl Lists {
    /// The list node of `u`'s edge to `v`: `(k, t)`, edge-list slot `k` and node `t` (2k or
    /// 2k + 1), a pure function of the endpoints so both ends agree on `k`. Which end the
    /// edge list names first is a hash bit, as it is arbitrary in the generator.
    #[inline]
    fn node(&self, seed: u64, u: u32, v: u32) -> (u64, u64) {
        // (Salted: not the same draw as the edge's weight.)
        let h = edge_hash(seed ^ 0x6c69_7374, u, v);
        let k = h % self.m;
        // In the reference, edge (i, j) at k puts j in IJ[2k + 1] on i's list, i in IJ[2k] on j's.
        let u_first = (u < v) == (h >> 63 == 0);
        (k, 2 * k + u_first as u64)
    }
    fn next(&self, t: u64) -> u64 {
        self.head.at(2 * self.n + t)
    }
}

pub struct Bfs {
    vas: Vas,
    layout: Layout,
    parent_a: Arr,
    queue: Arr,
    spec: GraphSpec,
    roots_n: usize,
    threads: usize,
    pub graph: Csr,
    pub roots: Vec<u32>,
    /// Parent of each vertex in the last BFS (-1 = unreached; the root is its own parent).
    pub parent: Vec<i64>,
}

impl KernelImpl for Bfs {
    fn new(p: &Params, _native: bool) -> Result<Self, WorkloadError> {
        let spec = GraphSpec::from_params(p, false)?;
        let n = spec.n();
        let mut vas = Vas::new();
        let layout = if p.str("layout") == "list" {
            let ij = vas.array("IJ", 2 * spec.m(), 8);
            // create_graph_from_edgelist's one malloc: head, deg, next.
            let head = vas.array("head", 2 * n + 2 * spec.m(), 8);
            Layout::List(Lists { ij, head, n, m: spec.m() })
        } else {
            Layout::Csr { xoff: vas.array("xoff", n + 1, 8), xadj: vas.array("xadj", 2 * spec.m(), 8) }
        };
        let parent_a = vas.array("parent", n, 8);
        let queue = vas.array("queue", n, 8);
        Ok(Bfs {
            vas,
            layout,
            parent_a,
            queue,
            spec,
            roots_n: p.range("roots", 1, 1 << 16)? as usize,
            threads: p.threads(),
            graph: Csr::default(),
            roots: Vec::new(),
            parent: Vec::new(),
        })
    }
    fn vas(&self) -> &Vas {
        &self.vas
    }
    fn threads(&self) -> usize {
        self.threads
    }

    fn run<R: Recorder>(&mut self, rec: &mut R) -> u64 {
        let g = match build(&self.spec, false, &|| rec.stopped()) {
            Some(g) => g,
            None => return 0,
        };
        self.roots = pick_roots(&g, self.roots_n, self.spec.seed);
        self.graph = g;
        rec.roi_begin();
        let mut digest = 0u64;
        for i in 0..self.roots.len() {
            let root = self.roots[i];
            let reached = self.bfs(rec, root);
            digest = digest.wrapping_mul(1_000_003).wrapping_add(reached);
            if rec.stopped() {
                break;
            }
        }
        digest
    }
}

/// Instructions per reference, from the reference code's `make_bfs_tree` compiled by gcc 12 (-O3
/// -march=x86-64-v2; Graph500 2.1.4, seq-csr/seq-csr.c and seq-list/seq-list.c). seq-csr: 14 a
/// vertex (`vlist[k]`, both offsets; 3 of them the vertex loop's add, cmp, jne), 7 an edge
/// (`xadj[vo]`, `bfs_tree[j]`: mov, lea, cmpq, jne, add, cmp, jne) and 3 more where the edge reaches
/// a new vertex (the two stores and the queue's add). seq-list: 11 a vertex (`vlist[k]`,
/// `head[parent]`), 13 an edge (`IJ[p / 2]`, read by a mov and a cmove, `bfs_tree[newv]`, `next[p]`)
/// and 4 more for a new vertex. Each reference carries the instructions since the one before it
/// in that order: a loop's closing compare and branch count towards the next iteration's first
/// reference (`tail`, per thread, carried across chunks and levels).
mod cost {
    /// seq-csr: `vlist[k]` after the tail; the two offsets (lea, mov; mov, shl, mov); then cmp,
    /// jle, and before a first edge lea, lea, nop.
    pub const CSR_QUEUE: u32 = 1;
    pub const CSR_OFF: [u32; 2] = [2, 3];
    pub const CSR_VERTEX_TAIL: u32 = 2;
    pub const CSR_EDGES_ENTRY: u32 = 3;
    /// An edge: the `xadj` mov after the tail, then lea, cmpq; its tail jne, add, cmp, jne.
    pub const CSR_ADJ: u32 = 1;
    pub const CSR_PARENT: u32 = 2;
    pub const CSR_EDGE_TAIL: u32 = 4;
    /// A new vertex: jne, mov (`bfs_tree[j] = v`), mov (`vlist[k2++] = j`); the add joins the tail.
    pub const CSR_STORES: [u32; 2] = [2, 1];
    /// The vertex loop's add, cmp, jne.
    pub const CSR_LOOP: u32 = 3;
    /// seq-list: `vlist[k]` after the tail, `head[parent]` (mov, mov), then test, js, and a nop
    /// before a first edge.
    pub const LIST_QUEUE: u32 = 1;
    pub const LIST_HEAD: u32 = 2;
    pub const LIST_VERTEX_TAIL: u32 = 2;
    pub const LIST_EDGES_ENTRY: u32 = 1;
    /// An edge: mov, sar, shl, add, test, mov (`IJ`); cmove, lea, cmpq (`bfs_tree`); js, mov
    /// (`next[p]`); its tail test, jns.
    pub const LIST_IJ: u32 = 6;
    pub const LIST_PARENT: u32 = 3;
    pub const LIST_NEXT: u32 = 2;
    pub const LIST_EDGE_TAIL: u32 = 2;
    /// A new vertex: js, mov (`bfs_tree[newv] = parent`); mov (`next[p]`), lea, mov
    /// (`vlist[newk2++] = newv`); then only a mov before the tail.
    pub const LIST_STORES: [u32; 2] = [2, 3];
    pub const LIST_NEXT_AFTER_STORES: u32 = 1;
    /// The vertex loop's add, cmp, jge, mov, jmp.
    pub const LIST_LOOP: u32 = 5;
}

impl Bfs {
    fn bfs<R: Recorder>(&mut self, rec: &mut R, root: u32) -> u64 {
        let g = &self.graph;
        let n = g.n;
        let (layout, pa, qa, seed) = (self.layout, self.parent_a, self.queue, self.spec.seed);
        let t = self.threads;
        // make_bfs_tree starts by setting every parent to -1.
        let parent = &mut self.parent;
        parent.clear();
        parent.resize(n, -1);
        interleave(rec, &static_split(n as u64, t), 4096, |rec, _t, lo, hi| {
            for v in lo..hi {
                rec.store(pa.at(v), 8, 2);
            }
        });
        let mut queue: Vec<u32> = Vec::with_capacity(n);
        // One vertex's list nodes (slot, node, neighbour), reused from vertex to vertex.
        let mut order: Vec<(u64, u64, u32)> = Vec::new();
        parent[root as usize] = root as i64;
        rec.set_stream(0);
        rec.store(pa.at(root as u64), 8, 2);
        rec.store(qa.at(0), 8, 1);
        queue.push(root);
        let (mut k1, mut k2) = (0usize, 1usize);
        // Instructions since each thread's last reference (see [`cost`]).
        let mut tails = vec![0u32; t];
        while k1 < k2 && !rec.stopped() {
            let ranges: Vec<(u64, u64)> = static_split((k2 - k1) as u64, t).into_iter().map(|(a, b)| (a + k1 as u64, b + k1 as u64)).collect();
            interleave(rec, &ranges, 64, |rec, th, lo, hi| {
                let tail = &mut tails[th];
                for k in lo..hi {
                    let u = queue[k as usize] as usize;
                    let u_at = rec.here();
                    let first = match layout {
                        Layout::List(_) => cost::LIST_QUEUE,
                        Layout::Csr { .. } => cost::CSR_QUEUE,
                    };
                    rec.load(qa.at(k), 8, std::mem::take(tail) + first);
                    match layout {
                        Layout::List(l) => {
                            // p = head[parent]; while (p >= 0) { newv = IJ[p]; ...; p = next[p]; }
                            // Both reads of a node come from the load of the pointer to it.
                            let mut p_at = rec.here();
                            rec.load_dep(l.head.at(u as u64), 8, cost::LIST_HEAD);
                            *tail = cost::LIST_VERTEX_TAIL + if g.degree(u) > 0 { cost::LIST_EDGES_ENTRY } else { 0 };
                            order.clear();
                            order.extend(g.neigh(u).iter().map(|&v| {
                                let (slot, node) = l.node(seed, u as u32, v);
                                (slot, node, v)
                            }));
                            // Newest edge first: head[i] is the last edge inserted.
                            order.sort_unstable_by(|a, b| b.cmp(a));
                            for &(_, node, v) in order.iter() {
                                let v_at = rec.here();
                                rec.load_from(l.ij.at(node), 8, std::mem::take(tail) + cost::LIST_IJ, p_at);
                                let reached = relax(rec, (pa, qa), parent, &mut queue, u, v, v_at, cost::LIST_PARENT, cost::LIST_STORES);
                                let next_at = rec.here();
                                let delta = if reached { cost::LIST_NEXT_AFTER_STORES } else { cost::LIST_NEXT };
                                rec.load_from(l.next(node), 8, delta, p_at);
                                *tail = cost::LIST_EDGE_TAIL;
                                p_at = next_at;
                            }
                            *tail += cost::LIST_LOOP;
                        }
                        Layout::Csr { xoff, xadj } => {
                            let list = rec.here();
                            rec.load_dep(xoff.at(u as u64), 8, cost::CSR_OFF[0]);
                            rec.load_from(xoff.at(u as u64 + 1), 8, cost::CSR_OFF[1], u_at);
                            let (s, e) = (g.off[u], g.off[u + 1]);
                            *tail = cost::CSR_VERTEX_TAIL + if e > s { cost::CSR_EDGES_ENTRY } else { 0 };
                            for ei in s..e {
                                let v = g.adj[ei as usize];
                                let v_at = rec.here();
                                rec.load_from(xadj.at(ei), 8, std::mem::take(tail) + cost::CSR_ADJ, list);
                                relax(rec, (pa, qa), parent, &mut queue, u, v, v_at, cost::CSR_PARENT, cost::CSR_STORES);
                                *tail = cost::CSR_EDGE_TAIL;
                            }
                            *tail += cost::CSR_LOOP;
                        }
                    }
                }
            });
            k1 = k2;
            k2 = queue.len();
        }
        queue.len() as u64
    }
}

/// The edge `u -> v` of a BFS level: reading `parent[v]` (`load` instructions), and if `v` is
/// unreached, making `u` its parent and appending it to the queue (arrays `parent` and `queue`
/// in `arrays`; `stores` instructions); `v` was loaded by the previous reference, at `v_at`.
/// True if `v` was reached.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn relax<R: Recorder>(
    rec: &mut R,
    arrays: (Arr, Arr),
    parent: &mut [i64],
    queue: &mut Vec<u32>,
    u: usize,
    v: u32,
    v_at: Pos,
    load: u32,
    stores: [u32; 2],
) -> bool {
    let (pa, qa) = arrays;
    rec.load_dep(pa.at(v as u64), 8, load);
    if parent[v as usize] < 0 {
        parent[v as usize] = u as i64;
        rec.store_from(pa.at(v as u64), 8, stores[0], v_at);
        rec.store(qa.at(queue.len() as u64), 8, stores[1]);
        queue.push(v);
        return true;
    }
    false
}

/// Graph500's validation rules for a BFS tree; returns a description of the first failure.
pub fn validate_tree(g: &Csr, root: u32, parent: &[i64]) -> Result<u64, String> {
    let n = g.n;
    if parent[root as usize] != root as i64 {
        return Err("root is not its own parent".into());
    }
    // Levels by following parents (detects cycles: a depth beyond n).
    let mut level = vec![-1i64; n];
    level[root as usize] = 0;
    for v in 0..n {
        if parent[v] < 0 || level[v] >= 0 {
            continue;
        }
        let mut path = vec![v];
        let mut x = parent[v] as usize;
        while level[x] < 0 {
            if path.len() > n {
                return Err(format!("cycle in parent pointers at {v}"));
            }
            if parent[x] < 0 {
                return Err(format!("vertex {x} on a tree path is unreached"));
            }
            path.push(x);
            x = parent[x] as usize;
        }
        let mut l = level[x];
        for &y in path.iter().rev() {
            l += 1;
            level[y] = l;
        }
    }
    let mut reached = 0;
    for v in 0..n {
        if parent[v] < 0 {
            continue;
        }
        reached += 1;
        if v != root as usize && !g.has_edge(parent[v] as usize, v as u32) {
            return Err(format!("tree edge {}->{v} is not a graph edge", parent[v]));
        }
        for &w in g.neigh(v) {
            let w = w as usize;
            if parent[w] < 0 {
                return Err(format!("edge {v}-{w} leaves the tree: {w} should be reached"));
            }
            if (level[v] - level[w]).abs() > 1 {
                return Err(format!("edge {v}-{w} spans levels {} and {}", level[v], level[w]));
            }
        }
    }
    Ok(reached)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::*;

    /// The reference code's compiled `make_bfs_tree` (see [`cost`]): seq-csr 14 instructions a
    /// queued vertex, 7 an edge, 3 more a vertex reached; seq-list 11, 13 and 4. Before them,
    /// `parent = -1` (2 a vertex) and the root's two stores (3); the last vertex's closing 7
    /// come after the last reference.
    #[test]
    fn instructions_are_the_reference_codes_compiled_loops() {
        use xlat_core::RefKind::{Load, Store};
        for (layout, edge_array, [vertex, edge, reached]) in [("csr", "xadj", [14, 7, 3]), ("list", "IJ", [11, 13, 4])] {
            let (k, s, _) = run_recorded::<Bfs>("bfs", PARAMS, &format!("scale=11,degree=8,layout={layout}"));
            let n = k.graph.n as u64;
            let queued = refs_in(&k.vas, &s, Load, "queue");
            let edges = refs_in(&k.vas, &s, Load, edge_array);
            let reached_n = refs_in(&k.vas, &s, Store, "parent") - n - 1;
            assert!(queued > 1000 && reached_n + 1 == queued, "{layout}");
            let expect = 2 * n + 3 + vertex * queued + edge * edges + reached * reached_n - 7;
            assert_eq!(instructions(&s), expect, "{layout}");
        }
    }

    #[test]
    fn bfs_tree_is_valid_single_and_multi_thread() {
        for threads in [1, 3] {
            let kv = format!("scale=12,degree=8,threads={threads}");
            let (k, s, _) = run_recorded::<Bfs>("bfs", PARAMS, &kv);
            let reached = validate_tree(&k.graph, k.roots[0], &k.parent).unwrap();
            assert!(reached > 2000, "giant component reached: {reached}");
            assert_in_regions(&k.vas, &s);
            assert_eq!(s.len(), threads);
            let dep = s[0].iter().filter(|r| r.is_dependent()).count();
            assert!(dep > 0);
        }
    }

    #[test]
    fn list_layout_walks_each_vertex_list_newest_edge_first() {
        // The same tree as the CSR layout's, from references into IJ, head and next only.
        for threads in [1, 2] {
            let kv = format!("scale=11,degree=8,threads={threads}");
            let (csr, _, _) = run_recorded::<Bfs>("bfs", PARAMS, &kv);
            let (k, s, _) = run_recorded::<Bfs>("bfs", PARAMS, &format!("{kv},layout=list"));
            assert!(validate_tree(&k.graph, k.roots[0], &k.parent).unwrap() > 1000);
            assert_in_regions(&k.vas, &s);
            assert_eq!(k.parent.iter().filter(|&&p| p >= 0).count(), csr.parent.iter().filter(|&&p| p >= 0).count());
            let names: Vec<&str> = k.vas.regions().iter().map(|r| r.name.as_str()).collect();
            assert_eq!(names, ["IJ", "head", "parent", "queue"]);
        }
        // One edge per list: IJ[t] then next[t], t = 2k or 2k + 1, both ends agreeing on k.
        let (k, s, _) = run_recorded::<Bfs>("bfs", PARAMS, "scale=10,layout=list");
        let Layout::List(l) = k.layout else { panic!("layout=list") };
        let (ij, head) = (&k.vas.regions()[0], &k.vas.regions()[1]);
        let ij_reads = s[0].iter().filter(|r| r.va >= ij.start && r.va < ij.end()).count();
        let next_reads = s[0].iter().filter(|r| r.va >= l.next(0) && r.va < head.end()).count();
        assert!(ij_reads > 1000 && ij_reads == next_reads, "{ij_reads} {next_reads}");
        // The root's list, newest edge (highest slot) first.
        let root = k.roots[0];
        let at = s[0].iter().position(|r| r.va == l.head.at(root as u64)).expect("head[root] read");
        let slots: Vec<u64> = s[0][at..]
            .iter()
            .filter(|r| r.va >= ij.start && r.va < ij.end())
            .take(k.graph.degree(root as usize) as usize)
            .map(|r| (r.va - ij.start) / 16)
            .collect();
        assert!(slots.len() > 1 && slots.windows(2).all(|w| w[0] >= w[1]), "{slots:?}");
        for (u, v) in [(3u32, 9u32), (700, 12)] {
            let ((ku, tu), (kv, tv)) = (l.node(1, u, v), l.node(1, v, u));
            assert_eq!(ku, kv);
            assert!(ku < l.m && tu / 2 == ku && tv / 2 == ku && tu != tv);
        }
    }

    /// A neighbour's id comes from the list (CSR: from its start, loaded from `xoff`; list
    /// layout: from the pointer to the node, in `head` or a node's `next`), and the parent
    /// written is the neighbour's.
    #[test]
    fn every_address_names_the_load_it_comes_from() {
        use xlat_core::RefKind::{Load, Store};
        // (A small graph keeps every list within a producer's reach.)
        let kv = "scale=8,degree=2,threads=2";
        let (k, s, _) = run_recorded::<Bfs>("bfs", PARAMS, kv);
        let hub = k.graph.off.windows(2).map(|w| w[1] - w[0]).max();
        assert!(hub < Some(64), "the largest list has {hub:?} edges");
        let from = |kind, region| sources(&k.vas, &s, kind, region);
        assert_eq!(from(Load, "xoff"), ["queue"]);
        assert_eq!(from(Load, "xadj"), ["xoff"]);
        assert_eq!(from(Load, "parent"), ["xadj"]);
        assert_eq!(from(Store, "parent"), ["", "xadj"]);
        let (k, s, _) = run_recorded::<Bfs>("bfs", PARAMS, &format!("{kv},layout=list"));
        let from = |kind, region| sources(&k.vas, &s, kind, region);
        assert_eq!(from(Load, "IJ"), ["head"]);
        assert_eq!(from(Load, "head"), ["head", "queue"]);
        assert_eq!(from(Store, "parent"), ["", "IJ"]);
        // A node's two reads wait for the same pointer.
        let Layout::List(l) = k.layout else { panic!("layout=list") };
        let ij = &k.vas.regions()[0];
        for st in &s {
            for (n, r) in st.iter().enumerate().filter(|(_, r)| r.va >= ij.start && r.va < ij.end()) {
                let node = (r.va - ij.start) / 8;
                let next = (n..st.len()).find(|&m| st[m].va == l.next(node)).expect("next read");
                assert_eq!(n - usize::from(r.producer()), next - usize::from(st[next].producer()));
            }
        }
    }

    #[test]
    fn validator_rejects_a_broken_tree() {
        let (k, _, _) = run_recorded::<Bfs>("bfs", PARAMS, "scale=10");
        let mut p = k.parent.clone();
        let v = (0..p.len()).find(|&v| p[v] >= 0 && v != k.roots[0] as usize).unwrap();
        p[v] = -1;
        assert!(validate_tree(&k.graph, k.roots[0], &p).is_err());
    }

    #[test]
    fn deterministic_streams() {
        let (_, a, _) = run_recorded::<Bfs>("bfs", PARAMS, "scale=10,threads=2");
        let (_, b, _) = run_recorded::<Bfs>("bfs", PARAMS, "scale=10,threads=2");
        assert_eq!(a, b);
    }
}
