//! Graph inputs shared by the graph kernels: the Graph500/GAP Kronecker generator
//! (initiator A=0.57, B=0.19, C=0.19, D=0.05), GAP's uniform-random generator, and an
//! undirected CSR without self-loops or duplicate edges (as GAP's builder "squishes" it).

use crate::params::{choice, size, PDef, Params};
use crate::rng::{derive, Rng};
use crate::WorkloadError;
use xlat_core::{huge_vec, prefetch};

/// `graph`, `scale` (with a per-kernel default), `degree` and `order`.
pub const fn graph_params(scale: &'static str) -> [PDef; 4] {
    [
        choice("graph", "kron", "input graph: kron (Kronecker, Graph500 initiator) or uniform (Erdos-Renyi)", &["kron", "uniform"]),
        size("scale", scale, "log2 of the vertex count"),
        size("degree", "16", "edge factor: generated edges = degree x vertices (each stored in both directions)"),
        choice(
            "order",
            "random",
            "vertex order: random (the generators' relabelling) or dbg (degree-based grouping, Faldu et al. IISWC '19, the PCC paper's reordered inputs: vertices in groups of degree d x 32 and up, x 16, ..., below d / 2 for the mean degree d, hottest first, in their old order within a group)",
            &["random", "dbg"],
        ),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphKind {
    Kron,
    Uniform,
}

#[derive(Clone, Copy, Debug)]
pub struct GraphSpec {
    pub kind: GraphKind,
    pub scale: u32,
    pub degree: u64,
    pub seed: u64,
    /// Relabel by degree-based grouping (`order=dbg`).
    pub dbg: bool,
}

impl GraphSpec {
    /// The spec `p` gives; `kind_param`: the kernel takes `graph` (Graph500's BFS is Kronecker
    /// only). Every graph kernel takes `order`.
    pub fn from_params(p: &Params, kind_param: bool) -> Result<GraphSpec, WorkloadError> {
        let scale = p.range("scale", 1, 31)? as u32;
        let degree = p.range("degree", 1, 1024)?;
        let kind = if kind_param && p.str("graph") == "uniform" { GraphKind::Uniform } else { GraphKind::Kron };
        if (degree << scale) > (1u64 << 34) {
            return Err(p.bad("degree", "degree x 2^scale must be at most 2^34 edges"));
        }
        let dbg = p.str("order") == "dbg";
        Ok(GraphSpec { kind, scale, degree, seed: p.seed(), dbg })
    }
    pub fn n(&self) -> u64 {
        1 << self.scale
    }
    /// Generated edges; the CSR holds at most twice this many entries.
    pub fn m(&self) -> u64 {
        self.degree << self.scale
    }
}

/// Undirected graph in CSR form; `adj[off[u]..off[u+1]]` is sorted.
#[derive(Clone, Debug, Default)]
pub struct Csr {
    pub n: usize,
    pub off: Vec<u64>,
    pub adj: Vec<u32>,
    /// Edge weights in 1..=255 parallel to `adj` (empty unless requested); symmetric.
    pub wt: Vec<u32>,
}

impl Csr {
    #[inline]
    pub fn neigh(&self, u: usize) -> &[u32] {
        &self.adj[self.off[u] as usize..self.off[u + 1] as usize]
    }
    #[inline]
    pub fn degree(&self, u: usize) -> u64 {
        self.off[u + 1] - self.off[u]
    }
    pub fn has_edge(&self, u: usize, v: u32) -> bool {
        self.neigh(u).binary_search(&v).is_ok()
    }
}

/// GAP-style weight of the undirected edge {u, v}: uniform in 1..=255, a pure function of
/// the endpoints so both directions agree.
pub fn edge_weight(seed: u64, u: u32, v: u32) -> u32 {
    (edge_hash(seed, u, v) % 255) as u32 + 1
}

/// A random 64-bit value of the undirected edge {u, v}: a pure function of `seed` and the
/// endpoints, the same from either end.
pub fn edge_hash(seed: u64, u: u32, v: u32) -> u64 {
    let (a, b) = if u < v { (u, v) } else { (v, u) };
    let mut s = seed ^ ((a as u64) << 32 | b as u64).wrapping_mul(0x2545_F491_4F6C_DD1D);
    crate::rng::splitmix64(&mut s)
}

/// The Kronecker quadrant a 32-bit draw `r` picks, as (row bit, column bit): [0, a) top-left,
/// [a, b) top-right, [b, c) bottom-left, the rest bottom-right. Without branches: the draws
/// are random, and branches on them mispredicted half the time, which was most of the graph's
/// build time.
#[inline(always)]
fn quadrant(r: u64, a: u64, b: u64, c: u64) -> (u32, u32) {
    let (ge_a, ge_b, ge_c) = ((r >= a) as u32, (r >= b) as u32, (r >= c) as u32);
    (ge_b, ge_a ^ ge_b ^ ge_c)
}

/// How many edges ahead the builder's loops prefetch the random entries they will touch (the
/// builder is bound by random reads of arrays far larger than the host's caches).
const AHEAD: usize = 16;

/// The graph of `spec`, with edge weights if `weighted`; `None` if `stop()` turned true on
/// the way. A large graph comes from the graph cache when it holds it (see [`cache`]), else it
/// is generated and stored there.
pub fn build(spec: &GraphSpec, weighted: bool, stop: &dyn Fn() -> bool) -> Option<Csr> {
    let dir = crate::trace::cache::dir().filter(|_| spec.m() >= cache::MIN_EDGES);
    let mut g = match dir.as_deref().and_then(|d| cache::load(d, spec)) {
        Some(g) => g,
        None => {
            let g = generate(spec, stop)?;
            if let Some(d) = &dir {
                // (A graph that cannot be stored costs the next run its build time, nothing else.)
                let _ = cache::store(d, spec, &g);
            }
            g
        }
    };
    if weighted {
        g.wt = weights(&g, spec.seed);
    }
    Some(g)
}

/// Generate the graph and build its CSR (no weights).
fn generate(spec: &GraphSpec, stop: &dyn Fn() -> bool) -> Option<Csr> {
    let n = spec.n() as usize;
    let m = spec.m() as usize;
    let mut rng = Rng::new(derive(spec.seed, 0x6EA9));
    // Random relabelling of vertices (Graph500 scrambles labels; GAP permutes too) so that
    // high-degree vertices are not clustered at low ids.
    let mut perm: Vec<u32> = huge_vec(n);
    perm.extend(0..n as u32);
    rng.shuffle(&mut perm);
    let mut edges: Vec<(u32, u32)> = huge_vec(m);
    // Quadrant thresholds on 32-bit draws: [0,A) top-left, [A,A+B) top-right, [A+B,A+B+C)
    // bottom-left, rest bottom-right.
    let t_a = (0.57 * 4294967296.0) as u64;
    let t_b = ((0.57 + 0.19) * 4294967296.0) as u64;
    let t_c = ((0.57 + 0.19 + 0.19) * 4294967296.0) as u64;
    // Edges are drawn AHEAD ahead of their relabelling: `perm` is 4 x n bytes read at random,
    // and the prefetch of each drawn edge's two entries overlaps those misses with the next
    // draws (the graph is the same as drawing and relabelling one at a time).
    let mut ring = [(0u32, 0u32); AHEAD];
    for i in 0..m + AHEAD {
        if i % (1 << 20) == 0 && stop() {
            return None;
        }
        if i >= AHEAD {
            let (u, v) = ring[i % AHEAD];
            edges.push((perm[u as usize], perm[v as usize]));
        }
        if i >= m {
            continue;
        }
        let (u, v) = match spec.kind {
            GraphKind::Uniform => (rng.below(n as u64) as u32, rng.below(n as u64) as u32),
            GraphKind::Kron => {
                let (mut u, mut v) = (0u32, 0u32);
                let mut bits = 0u64;
                for lvl in 0..spec.scale {
                    if lvl % 2 == 0 {
                        bits = rng.next_u64();
                    }
                    let (bu, bv) = quadrant(bits & 0xFFFF_FFFF, t_a, t_b, t_c);
                    bits >>= 32;
                    u = (u << 1) | bu;
                    v = (v << 1) | bv;
                }
                (u, v)
            }
        };
        prefetch(&perm[u as usize]);
        prefetch(&perm[v as usize]);
        ring[i % AHEAD] = (u, v);
    }
    drop(perm);
    // Both passes below touch two random entries per edge; each prefetches AHEAD edges on.
    let mut off: Vec<u64> = huge_vec(n + 1);
    off.resize(n + 1, 0);
    for (i, &(u, v)) in edges.iter().enumerate() {
        if let Some(&(pu, pv)) = edges.get(i + AHEAD) {
            prefetch(&off[pu as usize + 1]);
            prefetch(&off[pv as usize + 1]);
        }
        if u != v {
            off[u as usize + 1] += 1;
            off[v as usize + 1] += 1;
        }
    }
    for u in 0..n {
        off[u + 1] += off[u];
    }
    let mut fill: Vec<u64> = huge_vec(n);
    fill.extend_from_slice(&off[..n]);
    let mut adj: Vec<u32> = huge_vec(off[n] as usize);
    adj.resize(off[n] as usize, 0);
    for (i, &(u, v)) in edges.iter().enumerate() {
        // Two stages: the fill cursors 2 x AHEAD on, then the slots they point at AHEAD on.
        if let Some(&(pu, pv)) = edges.get(i + 2 * AHEAD) {
            prefetch(&fill[pu as usize]);
            prefetch(&fill[pv as usize]);
        }
        if let Some(&(pu, pv)) = edges.get(i + AHEAD) {
            prefetch(adj.as_ptr().wrapping_add(fill[pu as usize] as usize));
            prefetch(adj.as_ptr().wrapping_add(fill[pv as usize] as usize));
        }
        if u != v {
            adj[fill[u as usize] as usize] = v;
            fill[u as usize] += 1;
            adj[fill[v as usize] as usize] = u;
            fill[v as usize] += 1;
        }
    }
    drop(edges);
    drop(fill);
    if stop() {
        return None;
    }
    // Sort and deduplicate each list, compacting in place.
    let mut w = 0usize;
    let mut new_off: Vec<u64> = huge_vec(n + 1);
    new_off.resize(n + 1, 0);
    for u in 0..n {
        let (s, e) = (off[u] as usize, off[u + 1] as usize);
        adj[s..e].sort_unstable();
        let start = w;
        let mut last = u32::MAX;
        for i in s..e {
            let x = adj[i];
            if x != last || i == s {
                adj[w] = x;
                w += 1;
                last = x;
            }
        }
        let _ = start;
        new_off[u + 1] = w as u64;
    }
    adj.truncate(w);
    adj.shrink_to_fit();
    let (new_off, adj) = if spec.dbg { relabel(&new_off, &adj, &dbg_order(&new_off)) } else { (new_off, adj) };
    Some(Csr { n, off: new_off, adj, wt: Vec::new() })
}

/// `g`'s edge weights (`edge_weight` of each edge, in `adj`'s order).
fn weights(g: &Csr, seed: u64) -> Vec<u32> {
    let mut wt = Vec::with_capacity(g.adj.len());
    for u in 0..g.n {
        let (s, e) = (g.off[u] as usize, g.off[u + 1] as usize);
        wt.extend(g.adj[s..e].iter().map(|&v| edge_weight(seed, u as u32, v)));
    }
    wt
}

/// Degree-based grouping (Faldu et al., IISWC '19): the new id of each vertex. Groups by
/// degree against the mean degree d: [32d, inf), [16d, 32d), ..., [d, 2d), [d/2, d),
/// [0, d/2); the hottest group first, each group in ascending old id (so that neighbours
/// that were close stay close).
pub fn dbg_order(off: &[u64]) -> Vec<u32> {
    let n = off.len() - 1;
    let mean = off[n] as f64 / n.max(1) as f64;
    // Group 0: degree >= 32 d; group 6: >= d / 2; group 7: the rest.
    let group = |deg: u64| (0..7).find(|&g| deg as f64 >= mean * 32.0 / f64::from(1u32 << g)).unwrap_or(7);
    let mut start = [0usize; 9];
    for u in 0..n {
        start[group(off[u + 1] - off[u]) + 1] += 1;
    }
    for g in 0..8 {
        start[g + 1] += start[g];
    }
    let mut new = vec![0u32; n];
    for (u, id) in new.iter_mut().enumerate() {
        let g = group(off[u + 1] - off[u]);
        *id = start[g] as u32;
        start[g] += 1;
    }
    new
}

/// The CSR with vertex `u` renamed `new[u]` (each list sorted again).
fn relabel(off: &[u64], adj: &[u32], new: &[u32]) -> (Vec<u64>, Vec<u32>) {
    let n = off.len() - 1;
    let mut old_of = vec![0u32; n];
    for (u, &v) in new.iter().enumerate() {
        old_of[v as usize] = u as u32;
    }
    let mut off2 = vec![0u64; n + 1];
    let mut adj2 = Vec::with_capacity(adj.len());
    for v in 0..n {
        let u = old_of[v] as usize;
        let s = adj2.len();
        adj2.extend(adj[off[u] as usize..off[u + 1] as usize].iter().map(|&x| new[x as usize]));
        adj2[s..].sort_unstable();
        off2[v + 1] = adj2.len() as u64;
    }
    (off2, adj2)
}

/// `count` distinct vertices with at least one edge, chosen from the seed (Graph500 and
/// GAP both skip isolated roots).
pub fn pick_roots(g: &Csr, count: usize, seed: u64) -> Vec<u32> {
    let mut rng = Rng::new(derive(seed, 0x5007));
    let mut roots = Vec::new();
    let mut tries = 0;
    while roots.len() < count && tries < 100 * g.n + 1000 {
        tries += 1;
        let v = rng.below(g.n as u64) as u32;
        if g.degree(v as usize) > 0 && !roots.contains(&v) {
            roots.push(v);
        }
    }
    if roots.is_empty() {
        roots.push(0);
    }
    roots
}

/// The graph cache: a large graph is generated once and kept in the trace cache's directory
/// (`XLAT_CACHE_DIR`, `xlat cache`), so later runs and sweep points on the same graph read it
/// (about 2 GB and a second or two at scale 24) instead of building it again (about 45 s).
///
/// A graph is keyed by everything that determines it (generator, scale, degree, seed, order)
/// and by [`GRAPHS`]. It appears under its key only once complete: written to a temporary file
/// in the directory, flushed, and renamed. On load the header must match the spec and the
/// file's size, and the offsets must run from 0 to the edge count and never fall; anything else
/// is not served (the graph is generated instead).
///
/// ```text
/// DIR/graph-<kind>-s<scale>-d<degree>-<seed>-<order>-v<GRAPHS>.csr
///     "XLATCSR1", vertices (u64), entries (u64), offsets (u64 x vertices + 1), neighbours (u32 x entries)
/// ```
pub mod cache {
    use super::{huge_vec, Csr, GraphKind, GraphSpec};
    use std::fs::{self, File};
    use std::io::{BufWriter, Read, Write};
    use std::path::{Path, PathBuf};

    /// The builder's generation: bump it whenever `generate` changes the graph it makes of a
    /// spec, so that graphs made by the older builder are never served again.
    pub const GRAPHS: u32 = 1;
    /// Graphs with fewer generated edges build in about a second and are not cached.
    pub const MIN_EDGES: u64 = 1 << 24;
    pub const EXT: &str = "csr";
    const MAGIC: &[u8; 8] = b"XLATCSR1";

    /// The file name of `spec`'s graph.
    pub fn file_name(spec: &GraphSpec) -> String {
        let kind = match spec.kind {
            GraphKind::Kron => "kron",
            GraphKind::Uniform => "uniform",
        };
        let order = if spec.dbg { "dbg" } else { "random" };
        format!("graph-{kind}-s{}-d{}-{:016x}-{order}-v{GRAPHS}.{EXT}", spec.scale, spec.degree, spec.seed)
    }

    /// Read `len` values of `T` (plain integers) from `f` into a huge-page-backed vector.
    fn read_vec<T: Copy + Default>(f: &mut File, len: usize) -> Option<Vec<T>> {
        let mut v: Vec<T> = huge_vec(len);
        v.resize(len, T::default());
        // SAFETY: T is a plain integer type (u32 or u64): every byte pattern is a valid value,
        // and the slice covers exactly the vector's initialised elements.
        let bytes = unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, len * std::mem::size_of::<T>()) };
        f.read_exact(bytes).ok()?;
        Some(v)
    }

    /// `spec`'s graph from `dir`, if a complete and consistent one is there.
    pub fn load(dir: &Path, spec: &GraphSpec) -> Option<Csr> {
        if cfg!(target_endian = "big") {
            return None;
        }
        let mut f = File::open(dir.join(file_name(spec))).ok()?;
        let mut head = [0u8; 24];
        f.read_exact(&mut head).ok()?;
        let word = |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().expect("8 bytes"));
        let (n, m) = (word(8), word(16));
        let expect = 24u64.checked_add(n.checked_add(1)?.checked_mul(8)?)?.checked_add(m.checked_mul(4)?)?;
        if &head[..8] != MAGIC || n != spec.n() || m > 2 * spec.m() || f.metadata().ok()?.len() != expect {
            return None;
        }
        let off: Vec<u64> = read_vec(&mut f, n as usize + 1)?;
        if off[0] != 0 || off[n as usize] != m || off.windows(2).any(|w| w[0] > w[1]) {
            return None;
        }
        let adj: Vec<u32> = read_vec(&mut f, m as usize)?;
        if adj.iter().any(|&v| u64::from(v) >= n) {
            return None;
        }
        Some(Csr { n: n as usize, off, adj, wt: Vec::new() })
    }

    /// Store `g` as `spec`'s graph in `dir`: complete or not at all.
    pub fn store(dir: &Path, spec: &GraphSpec, g: &Csr) -> std::io::Result<()> {
        if cfg!(target_endian = "big") {
            return Ok(());
        }
        fs::create_dir_all(dir)?;
        let name = file_name(spec);
        let tmp = crate::trace::cache::TempFile(Some(crate::trace::cache::temp_path(dir, &name, EXT)));
        let path: PathBuf = tmp.0.clone().expect("set above");
        let mut w = BufWriter::with_capacity(1 << 22, File::create(&path)?);
        w.write_all(MAGIC)?;
        w.write_all(&(g.n as u64).to_le_bytes())?;
        w.write_all(&(g.adj.len() as u64).to_le_bytes())?;
        // SAFETY: plain integers viewed as their bytes (little-endian, checked above).
        w.write_all(unsafe { std::slice::from_raw_parts(g.off.as_ptr() as *const u8, g.off.len() * 8) })?;
        w.write_all(unsafe { std::slice::from_raw_parts(g.adj.as_ptr() as *const u8, g.adj.len() * 4) })?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        fs::rename(&path, dir.join(name))?;
        drop(tmp);
        Ok(())
    }

    /// The graphs in `dir`: (file name, bytes, modified in seconds since the Unix epoch), by name.
    pub fn entries(dir: &Path) -> Vec<(String, u64, u64)> {
        let mut out: Vec<(String, u64, u64)> = fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|d| {
                let name = d.file_name().to_string_lossy().into_owned();
                let meta = d.metadata().ok()?;
                let made = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
                (name.starts_with("graph-") && name.ends_with(&format!(".{EXT}")) && meta.is_file()).then_some((name, meta.len(), made))
            })
            .collect();
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DBG (`order=dbg`): the same graph renamed, hottest degree groups first, and within a
    /// group the old order kept. A worked example: degrees 1, 9, 2, 0, 8 (mean 4): groups
    /// [8, 16) = {1, 4}, [2, 4) = {2}, [0, 2) = {0, 3}, so vertices 0..5 become 3, 0, 2, 4, 1.
    /// Then a Kronecker graph keeps its edges and its degrees.
    #[test]
    fn dbg_groups_vertices_by_degree_and_keeps_the_graph() {
        let degrees = [1u64, 9, 2, 0, 8];
        let mut off = vec![0u64];
        for d in degrees {
            off.push(off.last().unwrap() + d);
        }
        assert_eq!(dbg_order(&off), vec![3, 0, 2, 4, 1]);

        let spec = GraphSpec { kind: GraphKind::Kron, scale: 12, degree: 16, seed: 3, dbg: false };
        let plain = build(&spec, false, &|| false).unwrap();
        let g = build(&GraphSpec { dbg: true, ..spec }, false, &|| false).unwrap();
        assert_eq!((g.n, g.adj.len()), (plain.n, plain.adj.len()));
        let mut a: Vec<u64> = (0..g.n).map(|u| g.degree(u)).collect();
        let mut b: Vec<u64> = (0..plain.n).map(|u| plain.degree(u)).collect();
        // Hot first: the first vertex's degree is at least 32 x the mean (a Kronecker graph has
        // such hubs), the last ones' below half the mean.
        let mean = g.adj.len() as f64 / g.n as f64;
        assert!(a[0] as f64 >= 32.0 * mean && (a[g.n - 1] as f64) < mean / 2.0, "{} {}", a[0], a[g.n - 1]);
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
        for u in 0..g.n {
            assert!(g.neigh(u).windows(2).all(|w| w[0] < w[1]));
            assert!(g.neigh(u).iter().all(|&v| g.has_edge(v as usize, u as u32)), "symmetric");
        }
    }

    #[test]
    fn quadrants_split_the_draws_at_the_thresholds() {
        let (a, b, c) = (100, 200, 300);
        for (r, want) in [(0, (0, 0)), (99, (0, 0)), (100, (0, 1)), (199, (0, 1)), (200, (1, 0)), (299, (1, 0)), (300, (1, 1)), (u32::MAX as u64, (1, 1))] {
            assert_eq!(quadrant(r, a, b, c), want, "draw {r}");
        }
    }

    #[test]
    fn kron_is_skewed_symmetric_and_clean() {
        let spec = GraphSpec { kind: GraphKind::Kron, scale: 12, degree: 16, seed: 3, dbg: false };
        let g = build(&spec, true, &|| false).unwrap();
        assert_eq!(g.n, 4096);
        let mut maxdeg = 0;
        for u in 0..g.n {
            let nb = g.neigh(u);
            for w in nb.windows(2) {
                assert!(w[0] < w[1], "sorted, no duplicates");
            }
            for (i, &v) in nb.iter().enumerate() {
                assert_ne!(v as usize, u);
                assert!(g.has_edge(v as usize, u as u32));
                let e = g.off[u] as usize + i;
                assert_eq!(g.wt[e], edge_weight(3, v, u as u32));
                assert!((1..=255).contains(&g.wt[e]));
            }
            maxdeg = maxdeg.max(nb.len());
        }
        let avg = g.adj.len() / g.n;
        assert!(maxdeg > 20 * avg, "power-law degrees: max {maxdeg}, avg {avg}");
        let g2 = build(&spec, true, &|| false).unwrap();
        assert_eq!(g.adj, g2.adj);
    }

    #[test]
    fn uniform_has_flat_degrees() {
        let spec = GraphSpec { kind: GraphKind::Uniform, scale: 12, degree: 8, seed: 3, dbg: false };
        let g = build(&spec, false, &|| false).unwrap();
        let maxdeg = (0..g.n).map(|u| g.degree(u)).max().unwrap();
        assert!(maxdeg < 50, "{maxdeg}");
        assert!(g.adj.len() > 2 * 8 * 4096 * 9 / 10);
    }

    /// A directory of its own under the system's temporary directory, removed on drop.
    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new(what: &str) -> Scratch {
            let d = std::env::temp_dir().join(format!("xlat-graph-cache-{what}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            Scratch(d)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn cached_graphs_come_back_whole() {
        let dir = Scratch::new("roundtrip");
        let spec = GraphSpec { kind: GraphKind::Kron, scale: 10, degree: 8, seed: 3, dbg: false };
        let g = generate(&spec, &|| false).unwrap();
        assert!(cache::load(&dir.0, &spec).is_none(), "nothing cached yet");
        cache::store(&dir.0, &spec, &g).unwrap();
        let back = cache::load(&dir.0, &spec).unwrap();
        assert_eq!((back.n, &back.off, &back.adj), (g.n, &g.off, &g.adj));
        // Another seed, order or scale is another graph.
        for other in [GraphSpec { seed: 4, ..spec }, GraphSpec { dbg: true, ..spec }, GraphSpec { scale: 11, ..spec }] {
            assert!(cache::load(&dir.0, &other).is_none());
        }
        let names: Vec<String> = cache::entries(&dir.0).into_iter().map(|e| e.0).collect();
        assert_eq!(names, [cache::file_name(&spec)]);
        // The trace cache's --clear removes graphs too.
        assert_eq!(crate::trace::cache::clear(&dir.0).unwrap().0, 1);
        assert!(cache::entries(&dir.0).is_empty());
    }

    #[test]
    fn damaged_cached_graphs_are_not_served() {
        let dir = Scratch::new("damaged");
        let spec = GraphSpec { kind: GraphKind::Uniform, scale: 9, degree: 4, seed: 1, dbg: false };
        let g = generate(&spec, &|| false).unwrap();
        cache::store(&dir.0, &spec, &g).unwrap();
        let path = dir.0.join(cache::file_name(&spec));
        let whole = std::fs::read(&path).unwrap();
        let damage = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            cache::load(&dir.0, &spec).is_none()
        };
        assert!(damage(&whole[..whole.len() - 4]), "truncated");
        let mut magic = whole.clone();
        magic[0] = b'Y';
        assert!(damage(&magic), "not a graph file");
        let mut off = whole.clone();
        off[24 + 8 * 5] = 0xff; // an offset beyond the edges
        assert!(damage(&off), "offsets out of order");
        let mut adj = whole.clone();
        let last = adj.len() - 1;
        adj[last] = 0xff; // a neighbour beyond the vertices
        assert!(damage(&adj), "a neighbour out of range");
        std::fs::write(&path, &whole).unwrap();
        assert!(cache::load(&dir.0, &spec).is_some());
    }
}
