//! XSBench (event-based lookups, unionized energy grid): for random (energy, material)
//! pairs, binary-search the unionized energy grid once, then for each nuclide of the
//! material read its lower grid index from the index grid and interpolate five cross
//! sections between two neighbouring nuclide grid points. Materials and their probabilities
//! follow XSBench (12 materials, fuel first); nuclide lists are drawn from the seed.

use crate::params::{size, PDef, Params};
use crate::recorder::{interleave, static_split, Recorder};
use crate::rng::{derive, Rng};
use crate::vas::{Arr, Vas};
use crate::WorkloadError;

use super::KernelImpl;

pub const DESC: &str = "XSBench macroscopic cross-section lookups on a unionized energy grid";
pub const PARAMS: &[PDef] = &[
    size("isotopes", "68", "nuclides (XSBench 'small' = 68, 'large' = 355)"),
    size("gridpoints", "11303", "energy grid points per nuclide"),
    size("lookups", "300K", "cross-section lookups (split over threads)"),
];

const MATERIALS: usize = 12;
/// XSBench's material sampling distribution.
const DIST: [f64; MATERIALS] = [0.140, 0.052, 0.275, 0.134, 0.154, 0.064, 0.066, 0.055, 0.008, 0.015, 0.025, 0.013];
/// Nuclides per material other than fuel (fuel gets `isotopes - 34`, as XSBench).
const OTHER_NUCS: [usize; MATERIALS - 1] = [5, 4, 4, 27, 21, 21, 21, 21, 21, 9, 9];
/// A nuclide grid point: energy + five cross sections.
const POINT: u64 = 48;

/// Instructions per reference, from XSBench's event-based unionized-grid lookup (openmp-threading,
/// Simulation.c: the lookup loop's OpenMP body and calculate_macro_xs, with grid_search and
/// calculate_micro_xs inlined) compiled by gcc 12 -O3 -march=x86-64-v2 -fopenmp. valgrind
/// callgrind counts 1,307 instructions a lookup for `-s small -g 2000` (1,309 for `-g 1000`); these
/// counts make 1,307 (1,306).
mod cost {
    /// A lookup's own: the LCG seed's fast-forward to lookup `i` (7 a bit of `2 i`, 3 more a set
    /// bit; [`fast_forward`]), then 115: two LCG draws, pick_mat's compares, the call, its
    /// prologue and the verification's max over the five results.
    pub const LOOKUP: u32 = 115;
    /// A grid-search probe: sar, lea, the load (3 after the tail); then comisd, ja and cmp, je,
    /// mov, jmp (the upper half: 6) or mov, mov, sub, cmp, jg (the lower: 7).
    pub const PROBE: u32 = 3;
    pub const UPPER: u32 = 6;
    pub const LOWER: u32 = 7;
    /// Between the search and the first nuclide: the material's nuclide count and the loop's
    /// set-up.
    pub const NUCLIDES: u32 = 28;
    /// A nuclide, 56: its concentration and id (1 each after the tail); mov, imul, movddup, cmp,
    /// jne, mov, add, the index-grid entry (8); lea, lea, shl, mov, test, jne, lea, lea, cmp,
    /// cmove, the upper point's energy (11); its cross sections (1); then the interpolation into
    /// the five sums (stored each time) and the loop's cmp, je (34). In this kernel's order:
    /// `mats[j]`, the index grid, the two grid points, `concs[j]`.
    pub const NUCLIDE: [u32; 5] = [1, 1, 8, 11, 1];
    pub const NUCLIDE_TAIL: u32 = 34;

    /// fast_forward_LCG(seed, 2 i)'s loop: test, je, lea, imul, imul, shr, jne a bit, and imul,
    /// imul, add for a set one.
    pub fn fast_forward(i: u64) -> u32 {
        let n = 2 * i;
        7 * (64 - n.leading_zeros()) + 3 * n.count_ones()
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Xs(pub [f64; 5]);

pub struct XsBench {
    vas: Vas,
    grid_a: Arr,
    union_a: Arr,
    index_a: Arr,
    mats_a: Arr,
    concs_a: Arr,
    iso: usize,
    gp: usize,
    lookups: u64,
    threads: usize,
    seed: u64,
    /// Per nuclide, `gp` points: energy then 5 cross sections.
    pub energy: Vec<f64>,
    pub xs: Vec<[f64; 5]>,
    pub union_e: Vec<f64>,
    pub mats: Vec<Vec<u32>>,
    pub concs: Vec<Vec<f64>>,
    pub results: Vec<Xs>,
}

impl KernelImpl for XsBench {
    fn new(p: &Params, _native: bool) -> Result<Self, WorkloadError> {
        let iso = p.range("isotopes", 35, 10_000)? as usize;
        let gp = p.range("gridpoints", 2, 1 << 24)? as usize;
        let nu = (iso * gp) as u64;
        if nu * iso as u64 > 1 << 34 {
            return Err(p.bad("gridpoints", "index grid (isotopes^2 x gridpoints) over 2^34 entries"));
        }
        let mut vas = Vas::new();
        let grid_a = vas.array("nuclide_grids", nu, POINT);
        let union_a = vas.array("unionized_energy", nu, 8);
        let index_a = vas.array("index_grid", nu * iso as u64, 4);
        let mats_a = vas.array("mats", (iso + 200) as u64, 4);
        let concs_a = vas.array("concs", (iso + 200) as u64, 8);
        Ok(XsBench {
            vas,
            grid_a,
            union_a,
            index_a,
            mats_a,
            concs_a,
            iso,
            gp,
            lookups: p.u64("lookups"),
            threads: p.threads(),
            seed: p.seed(),
            energy: Vec::new(),
            xs: Vec::new(),
            union_e: Vec::new(),
            mats: Vec::new(),
            concs: Vec::new(),
            results: Vec::new(),
        })
    }
    fn vas(&self) -> &Vas {
        &self.vas
    }
    fn threads(&self) -> usize {
        self.threads
    }

    fn run<R: Recorder>(&mut self, rec: &mut R) -> u64 {
        let (iso, gp) = (self.iso, self.gp);
        let mut rng = Rng::new(derive(self.seed, 0x85));
        self.energy = (0..iso * gp).map(|_| rng.f64()).collect();
        self.xs = (0..iso * gp).map(|_| [rng.f64(), rng.f64(), rng.f64(), rng.f64(), rng.f64()]).collect();
        for n in 0..iso {
            // Sort each nuclide's grid by energy, keeping xs with their energies.
            let mut pts: Vec<(f64, [f64; 5])> = (0..gp).map(|i| (self.energy[n * gp + i], self.xs[n * gp + i])).collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            for (i, (e, x)) in pts.into_iter().enumerate() {
                self.energy[n * gp + i] = e;
                self.xs[n * gp + i] = x;
            }
        }
        if rec.stopped() {
            return 0;
        }
        let mut u: Vec<f64> = self.energy.clone();
        u.sort_by(|a, b| a.total_cmp(b));
        // The index grid (union energy x nuclide -> the nuclide's lower grid point) is read
        // where `index_a` lies but not stored: each entry is computed when a lookup reads it
        // ([`XsBench::low`]), the same value XSBench's build stores. Stored, at 355 isotopes
        // it is 5.7 GB of host memory and 1.4 G steps to build, 20-35 s of every run.
        self.union_e = u;
        // Materials: fuel = the first `iso - 34` nuclides, the others random distinct.
        let mut mats = vec![(0..(iso - 34) as u32).collect::<Vec<u32>>()];
        for &k in OTHER_NUCS.iter() {
            let mut all: Vec<u32> = (0..iso as u32).collect();
            rng.shuffle(&mut all);
            all.truncate(k);
            mats.push(all);
        }
        self.concs = mats.iter().map(|m| m.iter().map(|_| rng.f64()).collect()).collect();
        self.mats = mats;
        rec.roi_begin();

        let mut mat_off = [0u64; MATERIALS];
        for m in 1..MATERIALS {
            mat_off[m] = mat_off[m - 1] + self.mats[m - 1].len() as u64;
        }
        let me = &*self;
        let mut rngs: Vec<Rng> = (0..me.threads).map(|t| Rng::new(derive(me.seed, 0x86 + t as u64))).collect();
        let mut results = vec![Xs::default(); me.lookups as usize];
        let mut tails = vec![0u32; me.threads];
        interleave(rec, &static_split(me.lookups, me.threads), 64, |rec, t, lo, hi| {
            let rng = &mut rngs[t];
            let tail = &mut tails[t];
            for l in lo..hi {
                *tail += cost::LOOKUP + cost::fast_forward(l);
                let e = rng.f64();
                let r = rng.f64();
                let mut mat = MATERIALS - 1;
                let mut acc = 0.0;
                for (m, p) in DIST.iter().enumerate() {
                    acc += p;
                    if r < acc {
                        mat = m;
                        break;
                    }
                }
                results[l as usize] = me.macro_xs(rec, e, mat, mat_off[mat], tail);
            }
        });
        let digest = results.iter().fold(0u64, |h, x| x.0.iter().fold(h, |h, v| h.wrapping_mul(31).wrapping_add(v.to_bits())));
        self.results = results;
        digest
    }
}

impl XsBench {
    /// Unionized-grid lookup of material `mat` at energy `e`, recording every access; `tail`
    /// holds the instructions since the last reference, in and out.
    fn macro_xs<R: Recorder>(&self, rec: &mut R, e: f64, mat: usize, mat_off: u64, tail: &mut u32) -> Xs {
        let iso = self.iso as u64;
        // grid_search: largest i with union[i] <= e (0 if none), within [0, len-2].
        let (mut lo, mut hi) = (0usize, self.union_e.len() - 1);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            rec.load(self.union_a.at(mid as u64), 8, std::mem::take(tail) + cost::PROBE);
            if self.union_e[mid] > e {
                hi = mid;
                *tail = cost::UPPER;
            } else {
                lo = mid;
                *tail = cost::LOWER;
            }
        }
        *tail += cost::NUCLIDES;
        let idx = lo as u64;
        let mut out = [0.0; 5];
        let d = cost::NUCLIDE;
        for (j, &nuc) in self.mats[mat].iter().enumerate() {
            rec.load(self.mats_a.at(mat_off + j as u64), 4, std::mem::take(tail) + d[0]);
            let nuc = nuc as u64;
            let entry = rec.here();
            rec.load_dep(self.index_a.at(idx * iso + nuc), 4, d[1]);
            let low = self.low(nuc as usize, self.union_e[lo]) as u64;
            let p = nuc * self.gp as u64 + low;
            // (Both grid points' addresses come from the index entry.)
            rec.load_dep(self.grid_a.at(p), POINT as u8, d[2]);
            rec.load_from(self.grid_a.at(p + 1), POINT as u8, d[3], entry);
            rec.load(self.concs_a.at(mat_off + j as u64), 8, d[4]);
            *tail = cost::NUCLIDE_TAIL;
            let x = self.interpolate(p as usize, e);
            let c = self.concs[mat][j];
            for k in 0..5 {
                out[k] += x[k] * c;
            }
        }
        Xs(out)
    }

    /// The index grid's entry for nuclide `nuc` at union energy `e`: its last grid point at
    /// or below `e` (0 if none), clamped so that the point after it exists.
    fn low(&self, nuc: usize, e: f64) -> usize {
        let g = &self.energy[nuc * self.gp..(nuc + 1) * self.gp];
        g.partition_point(|&x| x <= e).saturating_sub(1).min(self.gp - 2)
    }

    fn interpolate(&self, p: usize, e: f64) -> [f64; 5] {
        let (el, eh) = (self.energy[p], self.energy[p + 1]);
        let (xl, xh) = (self.xs[p], self.xs[p + 1]);
        let f = if eh > el { (eh - e) / (eh - el) } else { 0.0 };
        let mut x = [0.0; 5];
        for k in 0..5 {
            x[k] = xh[k] - f * (xh[k] - xl[k]);
        }
        x
    }

    /// The nuclide-grid method (a binary search in each nuclide's own grid): must agree with
    /// the unionized lookup exactly.
    pub fn macro_xs_nuclide_grid(&self, e: f64, mat: usize) -> Xs {
        let gp = self.gp;
        let mut out = [0.0; 5];
        for (j, &nuc) in self.mats[mat].iter().enumerate() {
            let low = self.low(nuc as usize, e);
            let x = self.interpolate(nuc as usize * gp + low, e);
            for k in 0..5 {
                out[k] += x[k] * self.concs[mat][j];
            }
        }
        Xs(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::testutil::*;
    use crate::recorder::VecRecorder;

    /// XSBench's compiled lookup (see [`cost`]), from the references: a lookup 115 instructions
    /// plus the LCG fast-forward to its index, a grid-search probe 9 or 10 (the upper or the
    /// lower half: the next probe's place, or for the last the index the nuclides read, says
    /// which), 28 into the nuclides, 56 a nuclide. The last nuclide's closing 34 come after the
    /// last reference.
    #[test]
    fn instructions_are_xsbenchs_compiled_lookup() {
        let (k, s, _) = run_recorded::<XsBench>("xsbench", PARAMS, "isotopes=40,gridpoints=300,lookups=500");
        let (s, iso) = (&s[0], k.iso as u64);
        let probe = |i: usize| (s[i].va >= k.union_a.base && s[i].va < k.union_a.base + 8 * k.union_e.len() as u64).then(|| (s[i].va - k.union_a.base) / 8);
        let (mut expect, mut i) = (0u64, 0usize);
        for l in 0..500 {
            expect += 115 + u64::from(cost::fast_forward(l)) + 28;
            let mut mids = Vec::new();
            while let Some(mid) = probe(i) {
                mids.push(mid);
                i += 1;
            }
            // The nuclides' first index-grid entry is idx * isotopes + nuclide.
            let idx = (s[i + 1].va - k.index_a.base) / 4 / iso;
            mids.push(idx);
            for w in mids.windows(2) {
                // lo = mid (the lower half) leaves every later probe and the result at or above it.
                expect += if w[1] >= w[0] { 10 } else { 9 };
            }
            while i < s.len() && probe(i).is_none() {
                (i, expect) = (i + 5, expect + 56);
            }
        }
        assert_eq!(i, s.len());
        assert_eq!(instructions(std::slice::from_ref(s)), expect - 34);
    }

    #[test]
    fn unionized_lookup_equals_nuclide_grid_search() {
        let (k, s, _) = run_recorded::<XsBench>("xsbench", PARAMS, "isotopes=40,gridpoints=500,lookups=2000,threads=2");
        assert_eq!(k.mats[0].len(), 6);
        assert_eq!(k.results.len(), 2000);
        assert!(k.results.iter().all(|x| x.0[0] != 0.0));
        assert_in_regions(&k.vas, &s);
        let mut rng = Rng::new(77);
        let mut mat_off = [0u64; MATERIALS];
        for m in 1..MATERIALS {
            mat_off[m] = mat_off[m - 1] + k.mats[m - 1].len() as u64;
        }
        let mut rec = VecRecorder::default();
        for i in 0..3000 {
            let e = if i < 2 { [0.0, 1.0 - 1e-12][i] } else { rng.f64() };
            let m = i % MATERIALS;
            assert_eq!(k.macro_xs(&mut rec, e, m, mat_off[m], &mut 0), k.macro_xs_nuclide_grid(e, m), "e={e} mat={m}");
        }
    }

    /// The index grid computed per entry equals the one XSBench builds and stores: every
    /// nuclide's pointer walked forward over the sorted union energies.
    #[test]
    fn index_entries_equal_xsbenchs_built_grid() {
        let (k, _, _) = run_recorded::<XsBench>("xsbench", PARAMS, "isotopes=36,gridpoints=300,lookups=10");
        let (iso, gp) = (k.iso, k.gp);
        let mut ptr = vec![0usize; iso];
        for &e in &k.union_e {
            for n in 0..iso {
                let g = &k.energy[n * gp..(n + 1) * gp];
                while ptr[n] + 1 < gp && g[ptr[n] + 1] <= e {
                    ptr[n] += 1;
                }
                assert_eq!(k.low(n, e), ptr[n].min(gp - 2), "nuclide {n} at {e}");
            }
        }
    }
}
